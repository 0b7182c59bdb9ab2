//! How a striped snowflake counter's take gets its IDs
//! (`snowflake_lanes.rs` says what a lane is to it): from the worker id
//! its handle leases in one lane. When that lane is sealed by a change of
//! stripes, its deployment fails, or its lease is lost, the handle lets
//! the lease go and leases a worker id of another lane (a deployment that
//! failed is set aside, as for values), within the take's deadline.

use std::time::{Duration, Instant};

use super::arithmetic::lane_id;
use super::error::StripingError;
use super::lane::live_snowflake_lane;
use super::snowflake_lanes::{Holder, SnowflakeLanes};
use super::taker::{StripedCounter, Target, ATTEMPTS};
use crate::mongo::describe_error;
use crate::parts::Stamp;
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::kinds::snowflake::{LaneGate, SnowflakeCounter};

impl StripedCounter {
    /// `count` IDs from the worker id this handle leases in one lane (see
    /// the module docs), in the order issued.
    pub(super) async fn take_snowflake(
        &self,
        count: u64,
        lanes: &SnowflakeLanes,
    ) -> Result<Vec<Stamp>, SequenceError> {
        // IDs come from memory, with no await that waits: without this, a
        // task taking in a loop would never yield, and a task it woke (one
        // waiting for the lease being taken) could wait on its worker's
        // queue until the lease stalls.
        tokio::task::consume_budget().await;
        let deadline = self.take_deadline();
        let past = || deadline.is_some_and(|deadline| Instant::now() >= deadline);
        let mut pause = Duration::from_millis(1);
        let mut tried: Vec<String> = Vec::new();
        let mut failures: Vec<String> = Vec::new();
        let mut attempts = 0;
        while attempts < ATTEMPTS {
            attempts += 1;
            let holder = match lanes.held() {
                Some(holder) => Some(holder),
                None => {
                    let _leasing = lanes.leasing.lock().await;
                    match lanes.held() {
                        // Another taker leased meanwhile.
                        Some(holder) => Some(holder),
                        None => self
                            .lease_a_lane(lanes, &mut tried, &mut failures, deadline)
                            .await?
                            .map(|holder| lanes.hold(holder)),
                    }
                }
            };
            let Some(holder) = holder else {
                if past() {
                    return Err(self.given_up(&failures, deadline));
                }
                let map = self.map();
                if !map.live && self.waits_for_change(&map) {
                    // Not a try: the change may yet be finished.
                    attempts -= 1;
                }
                if self.untried(&self.map(), &tried) == 0 {
                    tried.clear();
                }
                self.pause(&mut pause, deadline).await;
                continue;
            };
            match holder.counter.take(count as usize).await {
                Ok(ids) => {
                    return Ok(ids
                        .into_iter()
                        .map(|id| {
                            Stamp::snowflake(id, &lanes.layout)
                                .expect("the generator issues 63-bit IDs")
                        })
                        .collect())
                }
                Err(error) => {
                    lanes.let_go(&holder);
                    let sealed = matches!(error, SequenceError::Striped { .. });
                    if sealed {
                        // A change of stripes sealed the lane: the map moved on.
                        self.reload(deadline).await?;
                    } else {
                        self.set_aside(holder.deployment.as_deref(), &error, &mut failures);
                        if self.spanning().is_none() {
                            return Err(error);
                        }
                    }
                    if past() {
                        return Err(self.given_up(&failures, deadline));
                    }
                }
            }
        }
        Err(self.given_up(&failures, deadline))
    }

    /// The error of a take that got no lease: no live lane (a change of
    /// stripes under way, or stopped half way), or no deployment that
    /// leased one.
    fn given_up(&self, failures: &[String], deadline: Option<Instant>) -> SequenceError {
        let map = self.map();
        if !map.live {
            return self.changing(&map);
        }
        if failures.is_empty() {
            return striping(self.name(), StripingError::Changing { attempts: ATTEMPTS });
        }
        self.unreachable(failures, deadline)
    }

    /// Leases a worker id of a lane of the map as it is now, in a
    /// deployment not `tried` yet; none when this try failed (and was
    /// recorded) and the next one is to be made.
    async fn lease_a_lane(
        &self,
        lanes: &SnowflakeLanes,
        tried: &mut Vec<String>,
        failures: &mut Vec<String>,
        deadline: Option<Instant>,
    ) -> Result<Option<Holder>, SequenceError> {
        let map = self.map();
        if !map.live {
            // The caller pauses, and says so when its time is up.
            self.finish_if_stalled(&map);
            self.reload(deadline).await?;
            return Ok(None);
        }
        let Some(Target {
            residue,
            deployment,
            database,
        }) = self.pick(&map, tried)?
        else {
            return Err(self.unreachable(failures, deadline));
        };
        // Live, and of the generation this map says: a holder under a map
        // read before a change issues above no floor but its own
        // generation's.
        let mut live =
            live_snowflake_lane(&lane_id(self.name(), residue), map.generation, map.base);
        super::lane::of_counter(&mut live, map.incarnation.as_ref());
        let gate = LaneGate {
            live,
            residue,
            modulus: map.modulus,
            floor: map.base,
        };
        let start = SnowflakeCounter::start_in_lane(
            &database,
            self.name().clone(),
            lanes.layout,
            lanes.options.clone(),
            gate,
        );
        let started = match deadline {
            None => start.await,
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), start).await {
                Ok(started) => started,
                Err(_) => {
                    failures.push(format!(
                        "{}: no lease within the deadline",
                        deployment.as_deref().unwrap_or_default()
                    ));
                    return Ok(None);
                }
            },
        };
        match started {
            Ok(counter) => Ok(Some(Holder {
                counter,
                deployment,
            })),
            // Sealed or of another generation: the map moved on.
            Err(SequenceError::Striped { .. }) => {
                self.reload(deadline).await?;
                Ok(None)
            }
            Err(error) if self.spanning().is_some() => {
                self.set_aside(deployment.as_deref(), &error, failures);
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// Records that `deployment` failed with `error`, and sets it aside.
    fn set_aside(
        &self,
        deployment: Option<&str>,
        error: &SequenceError,
        failures: &mut Vec<String>,
    ) {
        let deployment = deployment.unwrap_or_default();
        let why = match error {
            SequenceError::Database { source, .. } => describe_error(source),
            other => other.to_string(),
        };
        failures.push(format!("{deployment}: {why}"));
        if let Some(deployments) = self.spanning() {
            deployments.failed(deployment, Instant::now());
        }
    }
}
