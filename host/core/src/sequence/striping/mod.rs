//! Striped counters (issue 34, `docs/design/striped-counters.md`): one
//! counter whose values come from several **lanes**, each a counter
//! document whose local values are mapped into one residue class of its
//! generation's modulus, so that the lanes' values are disjoint by
//! construction, in one deployment or across several. It knows no kind:
//! what a kind's lanes are is the kind's (`kinds/<kind>/lanes.rs`, the
//! `Stripable` trait of `lane_kind.rs`), which this module asks through
//! [`LaneOf`].
//!
//! - `arithmetic`: the residue classes, generations and their proofs
//!   (`limits`: how many lanes);
//! - `map`: the counter's document once striped (`kind: "striped"`);
//! - `lane`: a lane's document (`kind: "lane"`), its reader and guard, and
//!   the commands that take from it and seal it; `counting`: what the
//!   lanes of the kinds that count share;
//! - `command`: a lane's take as the command `idmint pipeline --lane`
//!   prints;
//! - `deployments`: named deployments and their health; `layout`: where
//!   a generation's lanes go;
//! - `open`: reading a counter's document from the preferred deployment
//!   or a copy in another;
//! - `taker`: [`StripedCounter`], an opened striped counter, which
//!   [`Sequence`](crate::sequence::Sequence) opens a counter whose document
//!   is a map as (`buffer`: the values of a taker whose takes are
//!   buffered; `leased`: the lease of one whose values come from a lease
//!   in a lane);
//! - `create`: creating a striped counter; `restripe`: changing its
//!   stripes, and finishing a change that stopped half way; `finish`: a
//!   change that, stopped half way, finishes itself while its command
//!   waits;
//! - `show`: its lanes as they are, for `counter show`;
//! - `hooks`: where a test holds takers mid-take (test builds only).
//!
//! Every write that hands out values or seals a lane uses write concern
//! majority with journal.

mod arithmetic;
mod buffer;
mod ceilings;
mod command;
pub(crate) mod counting;
mod create;
mod deadline;
mod deployments;
mod error;
mod finish;
pub mod hooks;
mod lane;
mod layout;
mod leased;
mod limits;
mod map;
mod open;
mod restripe;
mod run_cursor;
mod show;
mod taker;

pub use crate::sequence::lane_kind::{LaneOf, Local};
pub use arithmetic::{lane_id, Generation, Lane, LANE_SEPARATOR, MAX_LANES};
pub use command::{how_to_read_a_lane_take, lane_take_command};
pub use create::{create_laid_out, create_striped};
pub use deployments::{
    check_deployment_name, Deployment, Deployments, HealthReport, FIRST_BACKOFF, LONGEST_BACKOFF,
};
pub use error::StripingError;
pub use finish::{finish_if_stalled, set_layout_and_finish, FINISH_PATIENCE};
pub use lane::{lanes_of, LaneDocument, Mark, StripableKinds, CEILING_CHUNK, LANE_KIND, STRIPABLE};
pub use layout::Layout;
pub use map::{
    PendingChange, StripeMap, CEILINGS, CEILING_PERIODS, LONGEST_PATIENCE, RESUME_AFTER,
    SEEN_STILL, STALLED_AFTER, STRIPED_KIND,
};
pub(crate) use open::read_from_any;
pub use restripe::{forget, resume, resume_change, set_layout, set_stripes, Restriped};
pub use show::{lanes, LaneReport, LaneView};
pub use taker::{StripedCounter, ATTEMPTS, FINISH_ON_CLOSE, HEDGE_AFTER};
