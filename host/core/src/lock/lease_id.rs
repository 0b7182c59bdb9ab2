//! A lease named by a string its holder keeps ([`LeaseId`]), so that a
//! process other than the one that took it can renew or release it: what
//! `idmint serve` gives an HTTP client that takes a lock, which renews and
//! releases it later through any instance of the service.
//!
//! The ID carries everything a renewal or a release needs: the owner token
//! (the secret: whoever has it can release the lease, so it is shown once,
//! to the taker, and never logged), the fencing token, whether the holding
//! is shared, the TTL each renewal asks for and a scheduled job's
//! `at_least`. Nothing about it is kept by the process that took it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::{Lease, Lock, LockError, LockName, Locks, MAX_TTL, MIN_TTL};

/// The version mark every ID begins with.
const VERSION: &str = "l1";
/// The longest owner token an ID may carry, in characters (a label's 128,
/// `/` and the random part's 32).
const MAX_OWNER: usize = 200;

/// A lease another process took, named by what its holder keeps (see the
/// module docs). `Display` writes it, `FromStr` reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseId {
    owner: String,
    token: i64,
    shared: bool,
    ttl: Duration,
    at_least: Duration,
}

impl LeaseId {
    /// The fencing token of the lease.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// Whether it is a shared holding (a permit, a reader).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The TTL each renewal asks for.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The holder's label, if the lease was taken with one.
    pub fn label(&self) -> Option<&str> {
        super::document::label_of(&self.owner)
    }

    /// How long after it *sent* the request that took or renewed the lease
    /// its holder may trust it: the TTL less the margin every holder takes
    /// off (a tenth). The service's own write was sent later than the
    /// client's request, so the client's count ends first.
    pub fn proved_for(&self) -> Duration {
        Self::proved_for_ttl(self.ttl)
    }

    /// [`LeaseId::proved_for`] of a lease of `ttl`: how long after the
    /// write that took or renewed it was sent its holder trusts it.
    pub fn proved_for_ttl(ttl: Duration) -> Duration {
        crate::lease::proved_for(ttl)
    }
}

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VERSION}.{}.{}.{}.{}.{}",
            if self.shared { "s" } else { "x" },
            self.token,
            self.ttl.as_millis(),
            self.at_least.as_millis(),
            self.owner
        )
    }
}

/// Why a string is not a lease ID.
fn invalid(reason: &str) -> LockError {
    LockError::InvalidLease {
        reason: reason.to_string(),
    }
}

impl FromStr for LeaseId {
    type Err = LockError;

    /// Reads an ID written by `Display`: its form only (the service's
    /// OpenAPI pattern says the same). Whether a lease with it could be held
    /// at all is [`Locks::resume`]'s to say.
    fn from_str(text: &str) -> Result<Self, LockError> {
        let mut parts = text.splitn(6, '.');
        let mut next = |what: &str| {
            parts
                .next()
                .filter(|part| !part.is_empty())
                .ok_or_else(|| invalid(&format!("its {what} is missing")))
        };
        if next("version")? != VERSION {
            return Err(invalid(&format!("it does not begin with {VERSION}.")));
        }
        let shared = match next("mode")? {
            "x" => false,
            "s" => true,
            _ => return Err(invalid("its mode is neither x nor s")),
        };
        let number = |part: &str, what: &str, digits: usize| {
            if part.len() > digits || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid(&format!(
                    "its {what} is not a whole number of at most {digits} digits"
                )));
            }
            Ok(part.parse::<u64>().expect("at most 18 digits fit"))
        };
        let token = number(next("fencing token")?, "fencing token", 18)? as i64;
        let ttl = Duration::from_millis(number(next("ttl")?, "ttl", 8)?);
        let at_least = Duration::from_millis(number(next("at-least")?, "at-least", 8)?);
        let owner = next("owner")?.to_string();
        if owner.chars().count() > MAX_OWNER || owner.chars().any(char::is_control) {
            return Err(invalid(&format!(
                "its owner is longer than {MAX_OWNER} characters or has control characters"
            )));
        }
        Ok(Self {
            owner,
            token,
            shared,
            ttl,
            at_least,
        })
    }
}

impl LeaseId {
    /// Whether a lease could have been given with this ID: its TTL and
    /// at-least within the bounds every acquire checks.
    fn could_be_held(&self) -> bool {
        (MIN_TTL..=MAX_TTL).contains(&self.ttl) && self.at_least <= MAX_TTL
    }
}

impl Lease {
    /// Hands the lease to whoever keeps the ID returned: this process stops
    /// holding it (nothing here renews it, and dropping it warns of
    /// nothing), and the lock stays held until the holder of the ID renews
    /// or releases it through [`Locks::resume`], or its TTL ends.
    pub fn into_id(mut self) -> LeaseId {
        self.released = true;
        if !self.shared {
            // The process's waiters wait in the stored line from now on.
            self.lock.cohort().ended(self.lock.owner(), self.token);
        }
        LeaseId {
            owner: self.lock.owner().to_string(),
            token: self.token,
            shared: self.shared,
            ttl: self.ttl,
            at_least: self.at_least,
        }
    }
}

impl Locks {
    /// The lease `id` names, on lock `name`, to renew or release it (a
    /// lease taken by another process and handed over with
    /// [`Lease::into_id`]). Nothing is read: a renewal or release of a
    /// lease that ended or changed hands fails with [`LockError::Lost`].
    ///
    /// An ID no acquire could have given (a TTL out of bounds) names no
    /// lease: [`LockError::Lost`] at once, with nothing sent.
    pub fn resume(&self, name: LockName, id: &LeaseId) -> Result<Lease, LockError> {
        if !id.could_be_held() {
            return Err(LockError::Lost {
                name,
                token: id.token,
            });
        }
        let lock: Lock = self.lock_with_owner(name, id.owner.clone());
        let lease = if id.shared {
            lock.shared_lease(id.token, id.ttl, std::time::Instant::now())
        } else {
            lock.exclusive_lease(id.token, 1, id.ttl, std::time::Instant::now())
        };
        Ok(lease.held_at_least(id.ttl, id.at_least))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(owner: &str, shared: bool) -> LeaseId {
        LeaseId {
            owner: owner.to_string(),
            token: 42,
            shared,
            ttl: Duration::from_secs(10),
            at_least: Duration::from_millis(1500),
        }
    }

    #[test]
    fn an_id_reads_back_as_written_even_with_dots_in_its_label() {
        let labelled = "node.a.1/0123456789abcdef0123456789abcdef";
        for original in [id("0123abcd", false), id(labelled, true)] {
            let text = original.to_string();
            assert_eq!(text.parse::<LeaseId>().unwrap(), original, "{text}");
        }
        assert_eq!(
            id("0123abcd", false).to_string(),
            "l1.x.42.10000.1500.0123abcd"
        );
        assert_eq!(id(labelled, true).label(), Some("node.a.1"));
        assert_eq!(id("ff", true).label(), None);
    }

    #[test]
    fn a_malformed_id_says_what_is_wrong() {
        for (text, says) in [
            ("", "version is missing"),
            ("l2.x.1.1000.0.o", "does not begin with l1."),
            ("l1.y.1.1000.0.o", "neither x nor s"),
            ("l1.x.-1.1000.0.o", "fencing token is not a whole number"),
            ("l1.x.1234567890123456789.1000.0.o", "at most 18 digits"),
            (
                "l1.x.1.123456789.0.o",
                "ttl is not a whole number of at most 8 digits",
            ),
            ("l1.x.1.1000.0", "owner is missing"),
            ("l1.x.1.1000.0.o\u{7}", "control characters"),
        ] {
            let error = text.parse::<LeaseId>().unwrap_err().to_string();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn an_id_whose_ttl_no_acquire_gives_names_no_lease() {
        let read = |text: &str| text.parse::<LeaseId>().unwrap().could_be_held();
        assert!(read("l1.x.1.100.0.o") && read("l1.s.1.86400000.86400000.o"));
        assert!(!read("l1.x.1.99.0.o") && !read("l1.x.1.86400001.0.o"));
        assert!(!read("l1.x.1.1000.86400001.o"));
    }

    #[test]
    fn a_client_trusts_its_lease_for_the_ttl_less_a_tenth() {
        assert_eq!(id("o", false).proved_for(), Duration::from_secs(9));
    }
}
