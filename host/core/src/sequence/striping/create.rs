//! Creating a striped counter: making an unstriped one and striping it
//! (`restripe.rs`), across deployments with its identity, prefixes and tag
//! claimed in every deployment first.

use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::deployments::Deployments;
use super::error::StripingError;
use super::lane::lanes_of;
use super::layout::Layout;
use super::restripe::{check_lanes, check_layout, check_stripable, set_layout, Sites};
use crate::mongo::collections::COUNTERS;
use crate::mongo::durable_write_concern;
use crate::sequence::clock::{Clock, SystemClock};
use crate::sequence::counters::create;
use crate::sequence::error::striping;
use crate::sequence::error::SequenceError;
use crate::sequence::name::CounterName;
use crate::sequence::spec::CounterSpec;

/// Creates counter `name` as `spec` says with `stripes` lanes: an
/// unstriped counter for 1, else a counter striped at once (see the module
/// docs). Only the kinds that can be striped take more than one.
pub async fn create_striped(
    database: &Database,
    name: &CounterName,
    spec: &CounterSpec,
    stripes: u64,
) -> Result<crate::sequence::CounterState, SequenceError> {
    create_laid_out(database, None, name, spec, &Layout::count(stripes)).await
}

/// Creates counter `name` as `spec` says in `database` (the preferred of
/// `deployments`, if given), its lanes laid out as `layout` says (lanes in
/// other deployments: of `deployments`): an unstriped counter for one
/// unnamed lane, else a counter striped at once.
pub async fn create_laid_out(
    database: &Database,
    deployments: Option<&Deployments>,
    name: &CounterName,
    spec: &CounterSpec,
    layout: &Layout,
) -> Result<crate::sequence::CounterState, SequenceError> {
    let striped = layout.is_named() || layout.modulus() != 1;
    if striped {
        check_stripable(name, spec.kind.as_str())?;
        check_layout(name, deployments, layout)?;
        // Lanes the counter's settings cannot have (a cyclic counter's
        // cycle, a snowflake counter's worker ids), refused before the
        // counter is created; settings the kind refuses are refused as
        // it is created.
        let now_ms = SystemClock.now_micros() / 1000;
        let fields = spec.kind.new_document(name, &spec.settings, &[], now_ms);
        if let Ok(of) = fields.and_then(|fields| {
            lanes_of(spec.kind.as_str(), &fields).map_err(SequenceError::InvalidSpec)
        }) {
            check_lanes(name, &of, layout.modulus())?;
        }
    }
    // The counter's identity, drawn now: what is claimed for it in other
    // deployments before it exists is claimed under it.
    let incarnation = spec.incarnation.clone().unwrap_or_default();
    let spec = &CounterSpec {
        incarnation: Some(incarnation.clone()),
        ..spec.clone()
    };
    let mut claimed_elsewhere = Vec::new();
    let mut sites = None;
    if layout.is_named() {
        // Every deployment answers, none holds a counter of the name, and
        // the prefixes are claimed in each, before the counter is created.
        let laid = Sites::of(database, deployments, name, &[], layout)?;
        if let Some((site, _)) = laid.other_copies(name, Some(&incarnation)).await?.first() {
            return Err(striping(
                name,
                StripingError::OtherCounter {
                    deployment: site.clone(),
                    why: "a counter of the name is there already".to_string(),
                },
            ));
        }
        let prefixes = Bson::Array(
            spec.prefixes
                .iter()
                .map(|p| Bson::String(p.clone()))
                .collect(),
        );
        claimed_elsewhere = laid
            .claim_prefixes(name, Some(&incarnation), &prefixes, &[])
            .await?;
        sites = Some(laid);
    }
    let created = match create(database, name, spec).await {
        Ok(created) => created,
        Err(error) => {
            // Refused before it wrote anything: what was claimed for it
            // elsewhere is taken back.
            if matches!(
                error,
                SequenceError::CounterExists(_)
                    | SequenceError::InvalidSpec(_)
                    | SequenceError::PrefixTaken { .. }
                    | SequenceError::PrefixRetired { .. }
            ) {
                if let Some(sites) = &sites {
                    sites.abandon_prefixes(name, &claimed_elsewhere).await;
                }
            }
            return Err(error);
        }
    };
    if !striped {
        return Ok(created);
    }
    let laid_out = set_layout(database, deployments, name, layout).await;
    if let Err(
        error @ SequenceError::Striping {
            source: StripingError::TagInDeployment { .. },
            ..
        },
    ) = laid_out
    {
        // The tag is drawn when the counter is made: one another
        // deployment has given already refuses the layout, and the counter
        // made for it is not left behind (its tag is skipped, never drawn
        // again).
        database
            .collection::<Document>(COUNTERS)
            .delete_one(doc! { "_id": name.as_str(), "kind": spec.kind.as_str() })
            .write_concern(durable_write_concern())
            .await
            .map_err(|source| SequenceError::from_database(name, "remove", "remove", source))?;
        return Err(error);
    }
    laid_out?;
    crate::sequence::state(database, name).await
}
