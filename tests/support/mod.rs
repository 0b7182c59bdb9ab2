//! What the integration tests share, one file per job; every test talks to
//! a real MongoDB wire-protocol server:
//!
//! - [`server`]: the shared test server, and servers of a test's own;
//! - [`database`]: each test's own database, and what tests read of one;
//! - [`counters`] and [`locks`]: counters and locks as tests make and read
//!   them;
//! - [`process`]: running `idmint` (exit codes, stdout, stderr);
//! - [`faketime`]: a process whose wall clock the test sets;
//! - [`fixtures`]: the workspace's files and the fixture policies;
//! - [`fault_proxy`]: a TCP proxy that freezes, partitions and cuts;
//! - [`service`]: a running `idmint serve` and an HTTP client of it;
//! - [`mongosh`]: scripts run by mongosh after the installed functions;
//! - [`twin`]: the stored functions held equal to the host, and
//!   [`stripe_documents`]: the maps and lanes such tests seed;
//! - [`takers`]: tasks taking from a counter, and what their values must
//!   be;
//! - [`wait`]: waiting for an event, always with a deadline.
//!
//! What almost every test uses is re-exported here.

pub mod clients;
pub mod clock_server;
pub mod counters;
pub mod database;
pub mod faketime;
pub mod fault_proxy;
pub mod fixtures;
pub mod locks;
pub mod mongosh;
pub mod process;
pub mod server;
pub mod service;
pub mod sites;
pub mod stripe_documents;
pub mod takers;
pub mod twin;
pub mod wait;

pub use clock_server::FakeClockServer;
pub use counters::{
    counter_doc, counter_document, counter_field, counter_name, create, period_value_pairs,
    replace_counter, snowflake_layout, worker_leases,
};
pub use database::{
    assert_durable, database, database_handle, database_name, documents, monitored_database,
    CommandLog,
};
pub use faketime::fake_clock;
pub use fixtures::{fixture_policy, replace_file, workspace_root};
pub use locks::{held, lock_name};
pub use process::{
    assert_exit, idmint, idmint_on, printed_values, run, run_at_once, stderr, stdout, Seq,
};
pub use server::{uri, AuthServer, OwnedServer, ServerConfig};
