//! What raises the ceiling of a lane a lease is held in, as the lane's
//! kind sees it (`kinds/snowflake/gate.rs`): given with the lane
//! (`lane_kind.rs`'s `LiveLane`), made by the striping module
//! (`striping/ceilings.rs`). A file of its own, importing neither, so that
//! a kind's gate can hold one without importing the striping module.

use std::fmt::{self, Debug};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A raise of a ceiling under way: done, or why not, in words.
pub type Raising<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Raises the ceiling of one lane a lease is held in: the striping
/// module's, which records it first in a copy of the map in another
/// deployment (`striping/ceilings.rs`).
pub trait RaiseCeiling: Send + Sync {
    /// Raises the lane's ceiling to `ceiling` at least, or says why not.
    fn raise(&self, ceiling: u64) -> Raising<'_>;
}

/// What raises a lane's ceiling ([`RaiseCeiling`]). Cheap to clone; two
/// are equal when they are the same one.
#[derive(Clone)]
pub struct LaneCeiling(Arc<dyn RaiseCeiling>);

impl LaneCeiling {
    /// The ceiling that `raiser` raises.
    pub fn new(raiser: Arc<dyn RaiseCeiling>) -> Self {
        Self(raiser)
    }

    /// Raises it to `ceiling` at least, or says why not.
    pub async fn raise(&self, ceiling: u64) -> Result<(), String> {
        self.0.raise(ceiling).await
    }
}

impl Debug for LaneCeiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LaneCeiling")
    }
}

impl PartialEq for LaneCeiling {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
