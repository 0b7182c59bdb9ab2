//! The listeners: accepting connections and serving each with hyper's
//! HTTP/1 server, which axum's own `serve` does without a timer (so with no
//! header-read timeout), a connection cap or a shutdown deadline.
//!
//! - **Connection cap.** At most `max_connections` connections are served at
//!   once. One more takes the slot of the connection blocked longest (at
//!   least 250 ms) on a client that does not read, which is closed (shed,
//!   counted); with none, it is answered `503` with the JSON error body and
//!   closed, so that a client (or its load balancer) learns at once to go
//!   elsewhere.
//! - **Header-read and idle timeout.** hyper's header-read timeout runs from
//!   when a connection is ready for a request (connected, or its previous
//!   answer sent) until the request's header is complete: a connection that
//!   sends nothing, or dribbles its header, is closed at `header_timeout`.
//! - **Write timeout.** A write that finds the client's window full (a
//!   client that does not read, or pipelines requests and never reads their
//!   answers) starts a clock; if no write makes progress within
//!   `write_timeout` the connection is closed, its slot freed. Without it
//!   such a client holds a slot forever, needing no token: `/healthz` and
//!   the 401 and 404 answers are enough to fill its window.
//! - **Connection buffer.** hyper reads a pipelined request only when the
//!   answers before it fit in the connection's buffer (`connection_buffer`
//!   bytes, as is the read-ahead of requests), and the socket's send buffer
//!   is set to the same (the kernel doubles it; left alone, Linux grows it
//!   to 4 MiB for a client that does not read, some 25,000 `/healthz`
//!   answers, seconds of work before the write timeout can even start).
//!   So what one connection can make the server do and hold for a client
//!   that does not read is a few times `connection_buffer`.
//! - **Shutdown deadline.** When told to stop, a listener stops accepting,
//!   asks each connection to finish its request in flight and close, and
//!   waits at most `shutdown_timeout`; the connections left then (a client
//!   that pipelines requests and never reads its answers, a request stuck on
//!   the database) are cut, their requests abandoned, so that the counters
//!   can be closed cleanly in any case.
//! - Connections whose writes find the client's window full (clients that
//!   do not read) are counted, for `/metrics`, and so are those closed at
//!   the write timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Sleep;

use super::stalls::{Stall, Stalls};
use super::state::AppState;

/// How one listener serves its connections.
pub(crate) struct ConnectionOptions {
    /// The listener's name, for the log: `api` or `admin`.
    pub name: &'static str,
    /// The most connections served at once.
    pub max_connections: usize,
    /// The header-read (and idle) timeout.
    pub header_timeout: Duration,
    /// How long a write may stay blocked on a client that does not read.
    pub write_timeout: Duration,
    /// The most a connection buffers of requests read ahead and of answers
    /// not yet written, each.
    pub connection_buffer: usize,
    /// How long shutdown waits for the connections.
    pub shutdown_timeout: Duration,
    /// The server, whose metrics count this listener's connections.
    pub state: Option<Arc<AppState>>,
}

/// Accepts connections on `listener` and serves each with `router` until
/// `stop` turns true; then shuts the connections down within the deadline
/// (see the module docs).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: Router,
    options: ConnectionOptions,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(options.max_connections));
    let stalls = Arc::new(Stalls::default());
    let mut connections = JoinSet::new();
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stop| *stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = Duration::from_millis(5);
                stream
            }
            Err(error) => {
                // Out of file descriptors, most likely: wait a little rather
                // than spin, and keep serving the connections open.
                tracing::warn!(listener = options.name, %error, "cannot accept a connection");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(options.connection_buffer);
        let serve = Served {
            router: router.clone(),
            state: options.state.clone(),
            stop: stop.clone(),
            timing: Timing {
                header_timeout: options.header_timeout,
                write_timeout: options.write_timeout,
                connection_buffer: options.connection_buffer,
            },
            stall: stalls.register(),
        };
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                connections.spawn(serve.run(stream, permit));
            }
            // Every slot taken: the connection blocked longest on a client
            // that does not read gives its slot up, if there is one.
            Err(_) if stalls.shed_oldest(SHED_AFTER) => {
                if let Some(state) = &options.state {
                    state.metrics.connection_shed();
                }
                let permits = permits.clone();
                let state = options.state.clone();
                connections.spawn(async move {
                    match tokio::time::timeout(SHED_WAIT, permits.acquire_owned()).await {
                        Ok(Ok(permit)) => serve.run(stream, permit).await,
                        _ => {
                            if let Some(state) = &state {
                                state.metrics.connection_refused();
                            }
                            refuse(stream).await
                        }
                    }
                });
            }
            Err(_) => {
                if let Some(state) = &options.state {
                    state.metrics.connection_refused();
                }
                connections.spawn(refuse(stream));
            }
        }
    }
    // No new connections from here; each one open finishes its request in
    // flight and closes (it watches `stop` too).
    drop(listener);
    let drained = tokio::time::timeout(options.shutdown_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        let left = connections.len();
        tracing::warn!(
            listener = options.name,
            connections = left,
            deadline_secs = options.shutdown_timeout.as_secs_f64(),
            "connections still open at the shutdown deadline: cut, their requests abandoned"
        );
        if let Some(state) = &options.state {
            state.metrics.connections_abandoned(left as u64);
        }
        connections.shutdown().await;
    }
}

/// How long a connection must have been blocked on a client that does not
/// read before a new one may take its slot: a client that reads a little
/// late is not cut for it.
const SHED_AFTER: Duration = Duration::from_millis(250);

/// How long a connection let in by shedding another waits for its slot
/// (the shed one frees it as soon as its task runs).
const SHED_WAIT: Duration = Duration::from_secs(1);

/// A connection to serve once it has a slot: what it is served with.
struct Served {
    router: Router,
    state: Option<Arc<AppState>>,
    stop: watch::Receiver<bool>,
    timing: Timing,
    stall: Stall,
}

impl Served {
    /// Serves `stream` in its slot (`permit`, freed when it ends).
    async fn run(self, stream: TcpStream, permit: OwnedSemaphorePermit) {
        let Served {
            router,
            state,
            stop,
            timing,
            stall,
        } = self;
        let _open = state
            .as_ref()
            .map(|state| state.metrics.connection_opened());
        let shed = stall.shed_signal();
        let watch = WriteWatch {
            timeout: timing.write_timeout,
            blocked: state.as_ref().map(|state| state.metrics.write_blocked()),
            timed_out: state.as_ref().map(|state| state.metrics.write_timed_out()),
            stall,
        };
        serve_connection(stream, router, &timing, watch, stop, shed).await;
        drop(permit);
    }
}

/// How one connection is timed and buffered.
#[derive(Clone, Copy)]
struct Timing {
    header_timeout: Duration,
    write_timeout: Duration,
    connection_buffer: usize,
}

/// Serves one connection until it ends, or until `stop` turns true, when it
/// finishes the request in flight and closes.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    timing: &Timing,
    watch: WriteWatch,
    mut stop: watch::Receiver<bool>,
    shed: Arc<Notify>,
) {
    let io = TokioIo::new(Watched::new(stream, watch));
    let service = TowerToHyperService::new(router);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timing.header_timeout)
        .max_buf_size(timing.connection_buffer);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended");
            }
            return;
        }
        // Dropped, closed: its slot went to a new connection.
        _ = shed.notified() => {
            tracing::debug!("a connection blocked on a client that does not read was shed");
            return;
        }
        _ = stop.wait_for(|stop| *stop) => {}
    }
    connection.as_mut().graceful_shutdown();
    if let Err(error) = connection.await {
        tracing::debug!(%error, "connection ended at shutdown");
    }
}

/// The answer to a connection over the cap.
const REFUSED_BODY: &str = r#"{"error":"overloaded","message":"the server is at its connection limit; retry with backoff"}"#;

/// Answers a connection over the cap with 503 and closes it, within a
/// second.
async fn refuse(mut stream: TcpStream) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{REFUSED_BODY}",
        REFUSED_BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent, so that closing does not reset the
        // connection before it has read the answer.
        let mut sink = [0u8; 4096];
        let mut read = 0;
        while read < 64 << 10 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => read += n,
            }
        }
        Ok::<_, io::Error>(())
    })
    .await;
}

/// How a connection's writes are watched: the gauge of connections blocked
/// on a write, the counter of those closed at the write timeout, and the
/// timeout.
struct WriteWatch {
    timeout: Duration,
    blocked: Option<Gauge>,
    timed_out: Option<Counter>,
    /// Its place among the listener's blocked connections.
    stall: Stall,
}

/// A connection's stream that notes, in a gauge, whether its last write
/// found the client's window full (the client is not reading), and fails a
/// write that stays blocked past the write timeout, which closes the
/// connection.
struct Watched {
    stream: TcpStream,
    watch: WriteWatch,
    /// Set while writes are blocked: when the write timeout runs out.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Watched {
    fn new(stream: TcpStream, watch: WriteWatch) -> Self {
        Self {
            stream,
            watch,
            stalled: None,
        }
    }

    /// Notes the outcome of a write: progress clears the clock, a blocked
    /// write starts it (or finds it run out: an error, which makes hyper
    /// close the connection).
    fn note<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        let blocked = poll.is_pending();
        if blocked != self.stalled.is_some() {
            if let Some(gauge) = &self.watch.blocked {
                if blocked {
                    gauge.inc();
                } else {
                    gauge.dec();
                }
            }
        }
        if !blocked {
            self.stalled = None;
            self.watch.stall.moved();
            return poll;
        }
        self.watch.stall.blocked();
        let timeout = self.watch.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        // Polling the clock registers this task to be woken when it runs
        // out, so that the write is tried (and failed) then.
        if stalled.as_mut().poll(cx).is_ready() {
            if let Some(timed_out) = &self.watch.timed_out {
                timed_out.inc();
            }
            tracing::debug!(
                timeout_secs = timeout.as_secs_f64(),
                "an answer could not be written within the write timeout: connection closed"
            );
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not read its answer within the write timeout",
            )));
        }
        poll
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if self.stalled.is_some() {
            if let Some(gauge) = &self.watch.blocked {
                gauge.dec();
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.note(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.note(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
