//! Deployments of a test: named sites (`eu`, `us`, `ap`), each a server
//! and a database, connected as [`Deployments`], given to `idmint` as
//! `--uri NAME=URI`, and counters opened across them.

use std::time::Duration;

use mongodb::Database;

use idmint::config::ConnectOptions;
use idmint::sequence::striping::{Deployment, Deployments, StripeMap};
use idmint::sequence::{OpenOptions, Sequence};

use super::{counter_name, database_name, idmint_on, OwnedServer, ServerConfig};

/// The deadline of a take across deployments in these tests.
pub const DEADLINE: Duration = Duration::from_secs(2);

/// Whether `value` is one of `map`'s lanes in deployment `deployment`.
pub fn in_deployment(map: &StripeMap, deployment: &str, value: u64) -> bool {
    value > map.base && map.deployment_of((value - map.base - 1) % map.modulus) == Some(deployment)
}

/// One deployment of a test: a name, a connection string, a database.
#[derive(Clone)]
pub struct Site {
    pub name: &'static str,
    pub uri: String,
    pub database: String,
}

impl Site {
    /// Deployment `name` at `uri`, in `test`'s database (`_name` added
    /// when `own_database`: two sites of one server).
    pub fn new(name: &'static str, uri: &str, test: &str, own_database: bool) -> Self {
        let database = if own_database {
            database_name(&format!("{test}_{name}"))
        } else {
            database_name(test)
        };
        Self {
            name,
            uri: uri.to_string(),
            database,
        }
    }

    /// `eu` and `us` as two databases of the shared test server.
    pub fn shared_pair(test: &str) -> [Site; 2] {
        [
            Site::new("eu", super::uri(), test, true),
            Site::new("us", super::uri(), test, true),
        ]
    }

    /// `NAME=URI` as `--uri` takes it.
    pub fn flag(&self) -> String {
        format!("{}={}", self.name, self.uri)
    }
}

/// The deployments `sites`, the first preferred, connected with a short
/// server-selection timeout, a take across them given up after `deadline`.
pub async fn connect(sites: &[Site], deadline: Duration) -> Deployments {
    let mut list = Vec::new();
    for site in sites {
        let database = ConnectOptions::new(&site.uri)
            .database(&site.database)
            .server_selection_timeout(DEADLINE)
            .connect()
            .await
            .unwrap();
        database.drop().await.ok();
        list.push(Deployment {
            name: site.name.to_string(),
            database,
        });
    }
    Deployments::new(list).unwrap().deadline(deadline)
}

/// Counter `name` opened across `deployments`, and its map.
pub async fn open_across(deployments: &Deployments, name: &str) -> (Sequence, StripeMap) {
    open_across_with(deployments, name, OpenOptions::default()).await
}

/// Counter `name` opened across `deployments` as `options` say
/// otherwise, and its map.
pub async fn open_across_with(
    deployments: &Deployments,
    name: &str,
    mut options: OpenOptions,
) -> (Sequence, StripeMap) {
    options.deployments = Some(deployments.clone());
    let preferred = &deployments.preferred().database;
    let (sequence, state) = Sequence::open(preferred, counter_name(name), &options)
        .await
        .unwrap();
    (sequence, state.striped.unwrap())
}

pub fn database_of(deployments: &Deployments, name: &str) -> Database {
    deployments.get(name).unwrap().database.clone()
}

/// The flags that give `sites` to a command: `--uri NAME=URI` each, and
/// `deadline` as its take deadline.
pub fn across_flags(sites: &[Site], deadline: Duration) -> Vec<String> {
    let mut flags = Vec::new();
    for site in sites {
        flags.extend(["--uri".to_string(), site.flag()]);
    }
    flags.extend([
        "--server-timeout".to_string(),
        deadline.as_secs_f64().to_string(),
    ]);
    flags
}

/// `idmint ARGS` across `sites`, which share one database name (`--db` is
/// one for every connection string).
pub fn idmint_across(sites: &[Site], args: &[&str]) -> std::process::Command {
    idmint_across_within(sites, args, DEADLINE)
}

/// `idmint ARGS` across `sites`, its takes' deadline `deadline`.
pub fn idmint_across_within(
    sites: &[Site],
    args: &[&str],
    deadline: Duration,
) -> std::process::Command {
    let mut command = idmint_on(&sites[0].uri, &sites[0].database);
    command.args(args).args(across_flags(sites, deadline));
    command
}

/// `count` servers of the test's own, as `eu`, `us` and `ap`, in `test`'s
/// database; each fsyncs every commit, so that what it acknowledged
/// survives `kill -9`, as a real deployment's journal makes it.
pub fn own_servers(test: &str, count: usize) -> (Vec<OwnedServer>, Vec<Site>) {
    const NAMES: [&str; 3] = ["eu", "us", "ap"];
    let servers: Vec<OwnedServer> = (0..count)
        .map(|_| {
            OwnedServer::start(ServerConfig {
                sync_on_commit: true,
                ..ServerConfig::default()
            })
        })
        .collect();
    let sites = servers
        .iter()
        .zip(NAMES)
        .map(|(server, name)| Site::new(name, &server.uri, test, false))
        .collect();
    (servers, sites)
}
