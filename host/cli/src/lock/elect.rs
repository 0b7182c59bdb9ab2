//! `idmint lock elect`: leader election on the exclusive lock. Every
//! candidate waits in the lock's line (fair: in the order they came); the
//! one that holds the lock leads and runs COMMAND as `lock run` does
//! (`run::hold`: renewed, stopped before its lease can lapse, also by its
//! guard), so COMMAND runs on one machine at a time. A leader that dies or
//! is cut off loses the lease, and the first standby in line takes the lock
//! within about a TTL and starts COMMAND. A leader that loses the lead
//! stops COMMAND and stands again; when COMMAND exits by itself, `lock
//! elect` gives the lead up and exits with its code.
//!
//! Who leads is the holder's label (`--id`, `LockState::label`), and the
//! fencing token counts the successions: each new leader has a larger one.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use idmint::lock::{LockError, LockName, Locks, MAX_WAIT};

use super::args::ElectArgs;
use super::run::{hold, wait_options, waited, Forwarded, Held, Job, Waited};
use crate::{Outcome, Output};

/// How long a standby waits after the database failed it before it
/// stands again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

pub(super) async fn elect(args: &ElectArgs, output: &Output) -> anyhow::Result<Outcome> {
    let name = LockName::new(&args.name)?;
    let label = args
        .id
        .clone()
        .unwrap_or_else(|| format!("{}:{}", idmint::host_name(), std::process::id()));
    let database = args.connect.connect().await?;
    let lock = Locks::new(&database).lock_labelled(name.clone(), &label)?;
    // The signals are COMMAND's while leading; a standby obeys them.
    let mut signals = Forwarded::install()?;
    let job = Job {
        command: &args.command,
        name: &name,
        ttl: args.ttl,
        at_most: None,
        json: output.is_json(),
        env: vec![("IDMINT_LOCK_LABEL", label.clone())],
        guard_flags: Vec::new(),
    };
    let stop = CancellationToken::new();
    let standing = wait_options(MAX_WAIT).stop_on(stop.clone());
    loop {
        let standing_for = lock.acquire(args.ttl, &standing);
        let lease = match waited(standing_for, &name, &stop, &mut signals).await {
            Waited::Signalled(code) => return Ok(Outcome::Exit(code)),
            Waited::Done(Ok(lease)) => lease,
            // A day without the lead: stand again.
            Waited::Done(Err(LockError::Busy { .. })) => continue,
            Waited::Done(Err(error @ LockError::Database { .. })) => {
                eprintln!(
                    "idmint: lock '{name}': {label} stands again in {} s: {error}",
                    RETRY_AFTER.as_secs()
                );
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
            Waited::Done(Err(error)) => return Err(idmint::Error::from(error).into()),
        };
        eprintln!(
            "idmint: lock '{name}': {label} leads (fencing token {})",
            lease.token()
        );
        match hold(lease, &job, &mut signals).await? {
            Held::Exited(code) => return Ok(Outcome::Exit(code)),
            Held::Overran => unreachable!("lock elect sets no --at-most"),
            Held::Lost => {
                eprintln!("idmint: lock '{name}': {label} lost the lead; it stands again")
            }
        }
    }
}
