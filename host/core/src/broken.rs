//! A deliberately broken idmint, for the soak only (`scripts/soak.sh
//! --broken MODE`): the `soak-broken` feature compiles these breaks in, and
//! `IDMINT_SOAK_BROKEN` picks one at run time. They show that the soak
//! catches what it claims: each breaks one promise the way a bug would. The
//! binary users build never has the feature, nor this module.
//!
//! - `duplicate`: an autoinc take reads the counter and then sets it, with
//!   no guard between (a lost update): two concurrent takes get the same
//!   values.
//! - `lock`: a lock's watchdog neither renews the lease nor ever says it
//!   expires, so `lock run` lets COMMAND run on after the server has ended
//!   the lease and given the lock to the next holder.

use std::sync::OnceLock;

fn mode() -> Option<&'static str> {
    static MODE: OnceLock<Option<String>> = OnceLock::new();
    MODE.get_or_init(|| std::env::var("IDMINT_SOAK_BROKEN").ok())
        .as_deref()
}

/// Autoinc takes without their guard (`IDMINT_SOAK_BROKEN=duplicate`).
pub(crate) fn unguarded_takes() -> bool {
    mode() == Some("duplicate")
}

/// Lock leases neither renewed nor watched (`IDMINT_SOAK_BROKEN=lock`).
pub(crate) fn ignores_leases() -> bool {
    mode() == Some("lock")
}
