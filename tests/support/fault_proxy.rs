//! A TCP proxy between the tests' processes and the server, for network
//! faults the tests make real rather than likely:
//!
//! - [`FaultProxy::partition`]: it stops forwarding in both directions while
//!   every connection stays open, as in a network partition (what was sent
//!   is dropped; nothing is closed, so the driver is left waiting);
//! - [`FaultProxy::cut_at_random`]: each new connection is cut (both
//!   sockets shut) after a random number of bytes, counted in both
//!   directions, so a cut falls anywhere: inside a request (the write is
//!   not applied), or inside its answer (the write was applied and its
//!   answer is lost). The points come from a seeded generator; the seed is
//!   printed so that a failure can be replayed (`IDMINT_FAULT_SEED`). The
//!   same seed gives the same budget to the n-th connection accepted; which
//!   process opens it depends on scheduling;
//! - [`FaultProxy::hold_answers`]: requests still reach the server, which
//!   applies them, but its answers are held until released, so that a
//!   client is certain to be waiting on a write already applied;
//! - [`FaultProxy::freeze`]: nothing is forwarded either way, as with a
//!   primary that cannot reach a majority, until [`FaultProxy::thaw`]
//!   forwards what was held and all that follows.
//!
//! Clients reach the server through [`FaultProxy::uri`], which sets
//! `directConnection=true`: otherwise the driver would learn the server's
//! own address from the replica set and go around the proxy.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::server::uri;

/// The seed of a fault test: `IDMINT_FAULT_SEED` to replay one, else a
/// fresh one. Printed either way.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("IDMINT_FAULT_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            let mut bytes = [0u8; 8];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut random| random.read_exact(&mut bytes))
                .expect("read /dev/urandom");
            u64::from_le_bytes(bytes)
        });
    println!("{test}: fault seed {seed} (replay with IDMINT_FAULT_SEED={seed})");
    seed
}

/// SplitMix64: small, seeded, good enough to place cuts.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }
}

#[derive(Debug)]
struct Cuts {
    rng: Rng,
    /// Budgets are drawn from 1..=max_bytes.
    max_bytes: u64,
}

struct State {
    upstream: SocketAddr,
    partitioned: AtomicBool,
    stopped: AtomicBool,
    cuts: Mutex<Option<Cuts>>,
    /// Both sockets of every connection, to shut them when the proxy goes.
    open: Mutex<Vec<TcpStream>>,
    accepted: AtomicU64,
    cut: AtomicU64,
    /// What is held; signalled on release.
    holding: Mutex<Holding>,
    released: Condvar,
    /// Bytes of answers held since answers were first held.
    held: AtomicU64,
}

/// Which directions are held: their bytes wait, unforwarded, until released.
#[derive(Debug, Default)]
struct Holding {
    requests: bool,
    answers: bool,
}

impl Holding {
    fn holds(&self, answers: bool) -> bool {
        if answers {
            self.answers
        } else {
            self.requests
        }
    }
}

/// The proxy (see the module docs). Dropping it closes every connection.
pub struct FaultProxy {
    address: SocketAddr,
    state: Arc<State>,
}

impl FaultProxy {
    /// A proxy to the shared test server, forwarding faithfully until told
    /// otherwise.
    pub fn start() -> Self {
        Self::to(server_address(uri()))
    }

    /// A proxy to `upstream` (an `idmint serve`, say), forwarding
    /// faithfully until told otherwise.
    pub fn to(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let address = listener.local_addr().unwrap();
        let state = Arc::new(State {
            upstream,
            partitioned: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            cuts: Mutex::new(None),
            open: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
            cut: AtomicU64::new(0),
            holding: Mutex::new(Holding::default()),
            released: Condvar::new(),
            held: AtomicU64::new(0),
        });
        let accepting = state.clone();
        std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || accept(listener, accepting))
            .expect("start the proxy");
        Self { address, state }
    }

    /// The proxy's address (for a client of another protocol than
    /// MongoDB's: HTTP to `idmint serve`).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The connection string through the proxy.
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address)
    }

    /// From now on nothing is forwarded, in either direction, on any
    /// connection, old or new; every connection stays open.
    pub fn partition(&self) {
        self.state.partitioned.store(true, Ordering::SeqCst);
    }

    /// From now on each new connection is cut after a random number of
    /// bytes, 1 to `max_bytes`, drawn from `seed`.
    pub fn cut_at_random(&self, seed: u64, max_bytes: u64) {
        *self.state.cuts.lock().unwrap() = Some(Cuts {
            rng: Rng::new(seed),
            max_bytes,
        });
    }

    /// From now on the server's answers are held (read and counted, not
    /// passed on) until [`FaultProxy::release_answers`]; requests still go
    /// through.
    pub fn hold_answers(&self) {
        self.state.holding.lock().unwrap().answers = true;
    }

    /// Passes on the answers held, and those to come.
    pub fn release_answers(&self) {
        self.state.holding.lock().unwrap().answers = false;
        self.state.released.notify_all();
    }

    /// From now on nothing is forwarded, in either direction, on any
    /// connection; what arrives is held (every connection stays open)
    /// until [`FaultProxy::thaw`].
    pub fn freeze(&self) {
        *self.state.holding.lock().unwrap() = Holding {
            requests: true,
            answers: true,
        };
    }

    /// Forwards again both ways, what was held first.
    pub fn thaw(&self) {
        *self.state.holding.lock().unwrap() = Holding::default();
        self.state.released.notify_all();
    }

    /// Bytes of answers held so far (released or not).
    pub fn held_answer_bytes(&self) -> u64 {
        self.state.held.load(Ordering::SeqCst)
    }

    /// How many connections were accepted, and how many of them were cut.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.state.accepted.load(Ordering::SeqCst),
            self.state.cut.load(Ordering::SeqCst),
        )
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        self.thaw();
        for stream in self.state.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Wake the accept loop so that it sees `stopped`.
        let _ = TcpStream::connect(self.address);
    }
}

/// `host:port` of the first host of a `mongodb://` URI.
fn server_address(uri: &str) -> SocketAddr {
    let rest = uri.strip_prefix("mongodb://").expect("a mongodb:// URI");
    let hosts = rest.split(['/', '?']).next().unwrap();
    let host = hosts.rsplit('@').next().unwrap().split(',').next().unwrap();
    use std::net::ToSocketAddrs;
    host.to_socket_addrs()
        .expect("resolve the server")
        .next()
        .expect("the server has an address")
}

fn accept(listener: TcpListener, state: Arc<State>) {
    for client in listener.incoming() {
        if state.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        state.accepted.fetch_add(1, Ordering::SeqCst);
        let Ok(server) = TcpStream::connect(state.upstream) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let budget = state
            .cuts
            .lock()
            .unwrap()
            .as_mut()
            .map_or(i64::MAX, |cuts| cuts.rng.between(1, cuts.max_bytes) as i64);
        let connection = Arc::new(Connection {
            client: client.try_clone().unwrap(),
            server: server.try_clone().unwrap(),
            budget: AtomicI64::new(budget),
            closed: AtomicBool::new(false),
        });
        {
            let mut open = state.open.lock().unwrap();
            open.push(client.try_clone().unwrap());
            open.push(server.try_clone().unwrap());
        }
        let upward = (
            client.try_clone().unwrap(),
            server.try_clone().unwrap(),
            false,
        );
        for (from, to, answers) in [upward, (server, client, true)] {
            let (state, connection) = (state.clone(), connection.clone());
            std::thread::spawn(move || pump(from, to, answers, &state, &connection));
        }
    }
}

struct Connection {
    client: TcpStream,
    server: TcpStream,
    /// Bytes left before the cut, both directions together.
    budget: AtomicI64,
    closed: AtomicBool,
}

impl Connection {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
    }
}

/// Copies `from` to `to` until either closes, the budget runs out (then it
/// cuts both), or forever dropping what it reads once partitioned; what
/// it reads waits while its direction (the server's `answers`, or the
/// requests) is held.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    answers: bool,
    state: &State,
    connection: &Connection,
) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => {
                connection.close();
                return;
            }
            Ok(read) => read,
        };
        {
            let mut holding = state.holding.lock().unwrap();
            if answers && holding.answers {
                state.held.fetch_add(read as u64, Ordering::SeqCst);
            }
            while holding.holds(answers) {
                holding = state.released.wait(holding).unwrap();
            }
        }
        if state.partitioned.load(Ordering::SeqCst) {
            // Dropped on the floor, as packets in a partition; the
            // connections stay open.
            continue;
        }
        let before = connection.budget.fetch_sub(read as i64, Ordering::SeqCst);
        let allowed = before.clamp(0, read as i64) as usize;
        if allowed > 0 && to.write_all(&buffer[..allowed]).is_err() {
            connection.close();
            return;
        }
        if allowed < read {
            if !connection.closed.swap(true, Ordering::SeqCst) {
                state.cut.fetch_add(1, Ordering::SeqCst);
            }
            connection.close();
            return;
        }
    }
}
