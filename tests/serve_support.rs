//! Helpers of the service's tests: a TCP proxy in front of the test
//! database that can stop forwarding (a network partition, or a primary
//! that cannot reach a majority, as the driver sees them: connections stay
//! open and nothing answers).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A proxy to `upstream` that forwards both ways until frozen; while
/// frozen, what arrives is held (connections stay open), and forwarded
/// again once thawed.
pub(crate) struct Proxy {
    /// Where clients connect.
    pub address: SocketAddr,
    frozen: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (frozen, watching) = watch::channel(false);
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, watching.clone()));
                tokio::spawn(pump(server_read, client_write, watching.clone()));
            }
        });
        Self {
            address,
            frozen,
            task,
        }
    }

    /// Stops forwarding (connections stay open).
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Forwards again, what was held first.
    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }

    /// A connection string to the test database through this proxy (the
    /// one server directly: a replica set's members would be reached by
    /// the names they report, around the proxy).
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut frozen: watch::Receiver<bool>) {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        if frozen.wait_for(|frozen| !*frozen).await.is_err() {
            return;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// The address of the shared test server (`mongodb://HOST:PORT/...`).
pub(crate) fn test_server_address() -> SocketAddr {
    let uri = crate::harness::uri();
    let rest = uri
        .strip_prefix("mongodb://")
        .expect("a mongodb:// connection string");
    let host = rest.split(['/', '?', ',']).next().unwrap();
    let host = host.rsplit('@').next().unwrap();
    use std::net::ToSocketAddrs;
    host.to_socket_addrs()
        .expect("the test server's address")
        .next()
        .unwrap()
}
