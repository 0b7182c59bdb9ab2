//! The deployments a striped counter can span: independent MongoDB
//! deployments (replica sets, clusters), each named (`eu`, `us`), and the
//! health a process records of each, as the Java client records its
//! instances' (`docs/design/striped-counters.md`, "Taking").
//!
//! A deployment that fails a take (a database error, or no answer within
//! its share of the take's deadline) is **set aside**: takes go to lanes of
//! the others until its backoff passes (doubling from [`FIRST_BACKOFF`] up
//! to [`LONGEST_BACKOFF`], reset by a success). A deployment set aside is
//! still used when no other is left: the health record orders the tries,
//! it never refuses one.
//!
//! Clones share the health records: one process keeps one record per
//! deployment, whatever the counter.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::Database;
use serde::Serialize;

use crate::config::DEFAULT_SERVER_SELECTION_TIMEOUT;

/// The backoff of a deployment set aside for the first time.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest backoff.
pub const LONGEST_BACKOFF: Duration = Duration::from_secs(10);

/// What makes a deployment's name: 1 to 32 of `a-z`, `0-9`, `_`, `-`,
/// starting with a letter.
pub fn check_deployment_name(name: &str) -> Result<(), String> {
    let well_formed = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a deployment name: 1 to 32 of a-z, 0-9, '_' and '-', \
             starting with a letter"
        ))
    }
}

/// One named deployment: the database holding idmint's collections there.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// Its name, as maps and messages say it.
    pub name: String,
    /// The database there.
    pub database: Database,
}

/// The deployments a process reaches, the first its preferred one, with
/// the deadline of a take across them and their health. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Deployments {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    list: Vec<Deployment>,
    deadline: Duration,
    health: Mutex<Vec<Health>>,
}

/// What a process knows of one deployment's health.
#[derive(Debug, Clone, Copy, Default)]
struct Health {
    /// Set aside until then (none: healthy).
    aside_until: Option<Instant>,
    /// The backoff it was last set aside for.
    backoff: Option<Duration>,
    /// How many takes it failed in a row.
    failures: u64,
}

/// A deployment's health as `counter show` and the monitor say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthReport {
    /// The deployment.
    pub name: String,
    /// Whether takes go to it now.
    pub healthy: bool,
    /// How many takes it failed in a row.
    pub failures: u64,
    /// For how many milliseconds more it is set aside.
    pub aside_ms: u64,
}

impl Deployments {
    /// The deployments `list` (names distinct and well formed; the first is
    /// the preferred one), with the default deadline.
    pub fn new(list: Vec<Deployment>) -> Result<Self, String> {
        if list.is_empty() {
            return Err("no deployment given".to_string());
        }
        for (index, deployment) in list.iter().enumerate() {
            check_deployment_name(&deployment.name)?;
            if list[..index]
                .iter()
                .any(|other| other.name == deployment.name)
            {
                return Err(format!("deployment {:?} is named twice", deployment.name));
            }
        }
        let health = Mutex::new(vec![Health::default(); list.len()]);
        Ok(Self {
            inner: Arc::new(Inner {
                list,
                deadline: DEFAULT_SERVER_SELECTION_TIMEOUT,
                health,
            }),
        })
    }

    /// The same deployments, a take across them given up after `deadline`.
    pub fn deadline(self, deadline: Duration) -> Self {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            list: shared.list.clone(),
            deadline: shared.deadline,
            health: Mutex::new(shared.health.lock().unwrap().clone()),
        });
        Self {
            inner: Arc::new(Inner { deadline, ..inner }),
        }
    }

    /// How long a take across the deployments may take in all.
    pub fn take_deadline(&self) -> Duration {
        self.inner.deadline
    }

    /// The deployments, the preferred first.
    pub fn list(&self) -> &[Deployment] {
        &self.inner.list
    }

    /// The preferred deployment.
    pub fn preferred(&self) -> &Deployment {
        &self.inner.list[0]
    }

    /// Deployment `name`, if given.
    pub fn get(&self, name: &str) -> Option<&Deployment> {
        self.inner.list.iter().find(|d| d.name == name)
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.inner.list.iter().position(|d| d.name == name)
    }

    /// Whether takes go to deployment `name` now (not set aside).
    pub fn is_healthy(&self, name: &str, now: Instant) -> bool {
        self.index(name).is_none_or(|index| {
            self.inner.health.lock().unwrap()[index]
                .aside_until
                .is_none_or(|until| until <= now)
        })
    }

    /// When deployment `name` is set aside until (`None`: healthy).
    pub(crate) fn aside_until(&self, name: &str) -> Option<Instant> {
        let index = self.index(name)?;
        self.inner.health.lock().unwrap()[index].aside_until
    }

    /// Records a take deployment `name` answered.
    pub(crate) fn succeeded(&self, name: &str) {
        if let Some(index) = self.index(name) {
            self.inner.health.lock().unwrap()[index] = Health::default();
        }
    }

    /// Records a take deployment `name` failed at `now`: it is set aside
    /// for twice its last backoff (the first: [`FIRST_BACKOFF`]), at most
    /// [`LONGEST_BACKOFF`].
    pub(crate) fn failed(&self, name: &str, now: Instant) {
        if let Some(index) = self.index(name) {
            let mut health = self.inner.health.lock().unwrap();
            let record = &mut health[index];
            let backoff = record
                .backoff
                .map_or(FIRST_BACKOFF, |last| (last * 2).min(LONGEST_BACKOFF));
            record.backoff = Some(backoff);
            record.aside_until = Some(now + backoff);
            record.failures += 1;
        }
    }

    /// Each deployment's health at `now`.
    pub fn health(&self, now: Instant) -> Vec<HealthReport> {
        let health = self.inner.health.lock().unwrap();
        self.inner
            .list
            .iter()
            .zip(health.iter())
            .map(|(deployment, record)| {
                let aside = record
                    .aside_until
                    .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
                HealthReport {
                    name: deployment.name.clone(),
                    healthy: aside.is_zero(),
                    failures: record.failures,
                    aside_ms: aside.as_millis() as u64,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn deployments(names: &[&str]) -> Result<Deployments, String> {
        let client = mongodb::Client::with_uri_str("mongodb://127.0.0.1:1")
            .await
            .unwrap();
        Deployments::new(
            names
                .iter()
                .map(|name| Deployment {
                    name: name.to_string(),
                    database: client.database("idmint"),
                })
                .collect(),
        )
    }

    #[tokio::test]
    async fn names_are_checked_and_distinct() {
        assert!(deployments(&["eu", "us-east_1"]).await.is_ok());
        let twice = deployments(&["eu", "eu"]).await.unwrap_err();
        assert!(twice.contains("named twice"), "{twice}");
        for bad in ["", "EU", "1eu", "e u", &"a".repeat(33)] {
            let error = deployments(&[bad]).await.unwrap_err();
            assert!(error.contains("is not a deployment name"), "{bad}: {error}");
        }
        assert_eq!(deployments(&[]).await.unwrap_err(), "no deployment given");
    }

    #[tokio::test]
    async fn a_failure_sets_aside_with_a_doubling_backoff_a_success_resets() {
        let deployments = deployments(&["eu", "us"]).await.unwrap();
        let now = Instant::now();
        assert!(deployments.is_healthy("us", now));
        deployments.failed("us", now);
        assert!(!deployments.is_healthy("us", now));
        assert!(deployments.is_healthy("eu", now));
        assert!(deployments.is_healthy("us", now + FIRST_BACKOFF));
        deployments.failed("us", now);
        assert_eq!(deployments.aside_until("us"), Some(now + FIRST_BACKOFF * 2));
        for _ in 0..10 {
            deployments.failed("us", now);
        }
        assert_eq!(deployments.aside_until("us"), Some(now + LONGEST_BACKOFF));
        let report = &deployments.health(now)[1];
        assert_eq!((report.healthy, report.failures), (false, 12));
        // Clones share the record.
        deployments.clone().succeeded("us");
        assert!(deployments.is_healthy("us", now));
        assert_eq!(deployments.health(now)[1].failures, 0);
    }
}
