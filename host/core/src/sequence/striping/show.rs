//! What `counter show` and the monitor page say of a striped counter: its
//! lanes as they are, each read in its deployment, and each deployment's
//! health as this process knows it.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::Database;
use serde::Serialize;

use super::arithmetic::lane_id;
use super::deployments::Deployments;
use super::lane::{self, LaneDocument};
use super::map::StripeMap;
use crate::mongo::collections::COUNTERS;
use crate::mongo::describe_error;
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;

/// How long past its deadline a deployment's lanes are waited for, so
/// that the driver's own error (which says why) comes first.
const SAY_WHY: std::time::Duration = std::time::Duration::from_secs(1);

/// One live lane of a striped counter, as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneReport {
    /// Its residue.
    pub residue: u64,
    /// Its deployment (none: the map's own).
    pub deployment: Option<String>,
    /// The lane, or why it could not be read (its deployment did not
    /// answer, it is missing, it is corrupt).
    pub lane: Result<LaneDocument, String>,
}

/// A lane as `counter show --json` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LaneView {
    /// Its residue.
    pub residue: u64,
    /// Its deployment, when the counter spans several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    /// Its last local value (0: none yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<u64>,
    /// The last value it handed out (the generation's base if none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<u64>,
    /// Whether it is sealed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed: Option<bool>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LaneReport {
    /// The label `counter show` gives it: `lane 2`.
    pub fn label(&self) -> String {
        format!("lane {}", self.residue)
    }

    /// What it has handed out, in words (with its deployment when the
    /// counter spans several), or why it could not be read.
    pub fn describe(&self) -> String {
        let place = self
            .deployment
            .as_ref()
            .map_or_else(String::new, |deployment| format!("in {deployment}: "));
        match &self.lane {
            Ok(lane) => format!("{place}{}", lane.describe()),
            Err(reason) => format!("{place}unread ({reason})"),
        }
    }

    /// As `--json` shows it.
    pub fn view(&self) -> LaneView {
        let lane = self.lane.as_ref().ok();
        LaneView {
            residue: self.residue,
            deployment: self.deployment.clone(),
            local: lane.map(LaneDocument::local_value),
            last: lane.map(|lane| lane.last),
            sealed: lane.map(|lane| lane.sealed),
            error: self.lane.as_ref().err().cloned(),
        }
    }
}

/// The live lanes of striped counter `name` whose map (read from
/// `database`) is `map`, by residue, as they are now: each read in its
/// deployment (of `deployments`), those of a deployment not given or not
/// answering said so. Fails only on a database error in a counter that
/// spans no other deployment.
pub async fn lanes(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    map: &StripeMap,
) -> Result<Vec<LaneReport>, SequenceError> {
    let residues: Vec<u64> = map.lanes().iter().map(|lane| lane.residue()).collect();
    let mut sites: Vec<Option<String>> = Vec::new();
    for residue in &residues {
        let site = map.deployment_of(*residue).map(str::to_string);
        if !sites.contains(&site) {
            sites.push(site);
        }
    }
    let mut reports = Vec::new();
    for site in sites {
        let ids: Vec<(u64, String)> = residues
            .iter()
            .filter(|residue| map.deployment_of(**residue).map(str::to_string) == site)
            .map(|residue| (*residue, lane_id(name, *residue)))
            .collect();
        let database = match &site {
            None => Some(database.clone()),
            Some(site) => deployments
                .and_then(|deployments| deployments.get(site))
                .map(|deployment| deployment.database.clone()),
        };
        let found = match database {
            None => Err("its deployment was not given (--uri NAME=URI)".to_string()),
            Some(database) => {
                let read = read_documents(&database, &ids);
                match (&site, deployments) {
                    (Some(_), Some(deployments)) => {
                        // The driver's own timeout (the deadline) says why
                        // first; this one ends a read a partition holds.
                        let limit = deployments.take_deadline() + SAY_WHY;
                        match tokio::time::timeout(limit, read).await {
                            Ok(found) => found.map_err(|error| describe_error(&error)),
                            Err(_) => Err(format!("no answer within {} ms", limit.as_millis())),
                        }
                    }
                    _ => Ok(read.await.map_err(|source| {
                        SequenceError::from_database(name, "read", "find", source)
                    })?),
                }
            }
        };
        for (residue, id) in ids {
            let lane = match &found {
                Err(reason) => Err(reason.clone()),
                Ok(found) => found
                    .iter()
                    .find(|document| document.get_str("_id") == Ok(id.as_str()))
                    .ok_or_else(|| {
                        "missing: a change of stripes may have stopped half way \
                         (`idmint counter stripes NAME --resume` finishes it)"
                            .to_string()
                    })
                    .and_then(|document| {
                        lane::read(document).map_err(|reason| format!("corrupt: {reason}"))
                    }),
            };
            reports.push(LaneReport {
                residue,
                deployment: site.clone(),
                lane,
            });
        }
    }
    reports.sort_by_key(|report| report.residue);
    Ok(reports)
}

async fn read_documents(
    database: &Database,
    ids: &[(u64, String)],
) -> mongodb::error::Result<Vec<Document>> {
    let ids: Vec<&String> = ids.iter().map(|(_, id)| id).collect();
    database
        .collection::<Document>(COUNTERS)
        .find(doc! { "_id": { "$in": ids } })
        .await?
        .try_collect()
        .await
}
