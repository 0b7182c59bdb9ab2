//! Raising the ceiling of a lane of a counter across deployments
//! (`counting.rs`'s [`CEILING`]): first recorded in the copy of the map of
//! another deployment the counter spans (`$max` of `ceilings.<deployment>`,
//! durable), the healthy ones first, until one acknowledges; only then
//! raised in the lane (`$max`, durable). So everything a lane hands out is
//! at or below a ceiling a deployment other than its own recorded, which
//! `--forget` starts above (`restripe.rs`). Takes raise it (`taker.rs`),
//! and so do a snowflake lane's holders, through the [`LaneCeiling`] their
//! taker gives them with the lane they lease.

use std::sync::Arc;
use std::time::Instant;

use mongodb::bson::{doc, Document};
use mongodb::options::{ReturnDocument, WriteConcern};
use mongodb::Database;

use super::counting::CEILING_PERIOD;
use super::deadline::within;
use super::deployments::Deployments;
use super::lane::{self, CEILING};
use super::map::{CEILINGS, CEILING_PERIODS, STRIPED_KIND};
use crate::mongo::collections::COUNTERS;
use crate::mongo::describe_error;
use crate::sequence::identity::{self, Incarnation, INCARNATION_FIELD};
use crate::sequence::lane_ceiling::{LaneCeiling, RaiseCeiling, Raising};
use crate::sequence::name::CounterName;

/// What raises the ceilings of one counter's lanes: its deployments, its
/// name and identity, and the write concern of its writes.
#[derive(Debug, Clone)]
pub(super) struct Ceilings {
    pub(super) deployments: Deployments,
    pub(super) name: CounterName,
    pub(super) incarnation: Option<Incarnation>,
    pub(super) write_concern: WriteConcern,
}

/// One lane whose ceiling is raised: its `_id`, its generation, and the
/// deployment (and database) it is in.
#[derive(Debug, Clone)]
pub(super) struct CeilingOf {
    pub(super) id: String,
    pub(super) generation: u64,
    pub(super) deployment: String,
    pub(super) database: Database,
}

impl Ceilings {
    /// Raises the ceiling of `lane` to `ceiling`: recorded first in the
    /// copy of the map of one deployment of `spans` other than the lane's,
    /// then in the lane (see the module docs). A periodic lane's period
    /// ceiling too, to `period` (the label of a server's clock, an
    /// expression): the label the recording deployment's server makes of
    /// its clock is recorded there ([`CEILING_PERIODS`]) and then set in
    /// the lane, so no lane's is later than one recorded elsewhere. Each
    /// write before `deadline`; why not, in words.
    pub(super) async fn raise(
        &self,
        spans: &[String],
        lane: &CeilingOf,
        ceiling: u64,
        period: Option<Document>,
        deadline: Instant,
    ) -> Result<(), String> {
        let deadline = Some(deadline);
        let now = Instant::now();
        let mut others: Vec<&str> = spans
            .iter()
            .map(String::as_str)
            .filter(|other| *other != lane.deployment && self.deployments.get(other).is_some())
            .collect();
        others.sort_by_key(|other| !self.deployments.is_healthy(other, now));
        let mut failures = Vec::new();
        let mut recorded = None;
        let value = format!("{CEILINGS}.{}", lane.deployment);
        let label = format!("{CEILING_PERIODS}.{}", lane.deployment);
        // `$max` of the value; of a periodic lane's, the label too, read
        // back as this deployment's server made it.
        let mut raise = doc! { value.clone(): { "$max": [{ "$ifNull": [format!("${value}"), 0_i64] }, ceiling as i64] } };
        if let Some(period) = &period {
            raise.insert(
                label.clone(),
                doc! { "$max": [{ "$ifNull": [format!("${label}"), ""] }, period.clone()] },
            );
        }
        for other in others {
            let collection = self
                .deployments
                .get(other)
                .expect("others are deployments given")
                .database
                .collection::<Document>(COUNTERS);
            let record = collection
                .find_one_and_update(
                    doc! {
                        "_id": self.name.as_str(),
                        "kind": STRIPED_KIND,
                        INCARNATION_FIELD: identity::filter_value(self.incarnation.as_ref()),
                    },
                    vec![doc! { "$set": raise.clone() }],
                )
                .return_document(ReturnDocument::After)
                .write_concern(self.write_concern.clone());
            match within(deadline, record).await {
                Some(Ok(Some(copy))) => {
                    recorded = Some(recorded_label(&copy, &label));
                    break;
                }
                Some(Ok(None)) => failures.push(format!("{other}: no copy of the map")),
                Some(Err(error)) => failures.push(format!("{other}: {}", describe_error(&error))),
                None => failures.push(format!("{other}: no answer in time")),
            }
        }
        let Some(recorded_period) = recorded else {
            return Err(if failures.is_empty() {
                "no other deployment to record it".to_string()
            } else {
                format!("no other deployment recorded it ({})", failures.join("; "))
            });
        };
        let mut filter = doc! {
            "_id": &lane.id,
            "kind": lane::LANE_KIND,
            "lane.generation": lane.generation as i64,
            "sealed": { "$type": "null" },
            // Only a lane written with one (a lane without is unbounded).
            CEILING: { "$exists": true },
        };
        lane::of_counter(&mut filter, self.incarnation.as_ref());
        let mut raised = doc! { CEILING: ceiling as i64 };
        if period.is_some() {
            raised.insert(CEILING_PERIOD, recorded_period.unwrap_or_default());
        }
        let lanes = lane.database.collection::<Document>(COUNTERS);
        let raise = lanes
            .update_one(filter, doc! { "$max": raised })
            .write_concern(self.write_concern.clone());
        match within(deadline, raise).await {
            Some(Ok(_)) => Ok(()),
            Some(Err(error)) => Err(format!("{}: {}", lane.deployment, describe_error(&error))),
            None => Err(format!("{}: no answer in time", lane.deployment)),
        }
    }

    /// What raises `lane`'s ceiling for the lane's kind (a snowflake
    /// lane's holders), the counter spanning `spans`.
    pub(super) fn of_lane(&self, spans: Vec<String>, lane: CeilingOf) -> LaneCeiling {
        LaneCeiling::new(Arc::new(LeaseCeiling {
            ceilings: self.clone(),
            spans,
            lane,
        }))
    }
}

/// The label `copy` (a copy of the map after a raise) records at `path`,
/// if it is one.
fn recorded_label(copy: &Document, path: &str) -> Option<String> {
    let (field, deployment) = path.split_once('.')?;
    copy.get_document(field)
        .ok()?
        .get_str(deployment)
        .ok()
        .map(str::to_string)
}

/// [`Ceilings::raise`] of one lane, as its kind asks for it.
struct LeaseCeiling {
    ceilings: Ceilings,
    spans: Vec<String>,
    lane: CeilingOf,
}

impl RaiseCeiling for LeaseCeiling {
    /// Within half the deployments' deadline: the claim that asks for it
    /// has the whole of it, and says why it failed within it.
    fn raise(&self, ceiling: u64) -> Raising<'_> {
        let deadline = Instant::now() + self.ceilings.deployments.take_deadline() / 2;
        Box::pin(
            self.ceilings
                .raise(&self.spans, &self.lane, ceiling, None, deadline),
        )
    }
}
