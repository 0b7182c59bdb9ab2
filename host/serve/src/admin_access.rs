//! [`AdminAccess`]: who may use the admin listener.

/// Who may use the admin listener (`/readyz`, `/metrics`, `/openapi.json`,
/// the monitor page): anyone who reaches it, or, given a token's SHA-256,
/// only a caller with `Authorization: Bearer TOKEN` (`/healthz` stays
/// open, it tells nothing). What those routes show (every counter, worker
/// hosts and pids, who holds which lock) is for operators, so an admin
/// listener that other hosts can reach is refused without a token
/// ([`AdminAccess::check_address`]) unless the operator says that is meant
/// ([`AdminAccess::insecure`]), and then warned about at start. Like the
/// API's tokens, only the token's SHA-256 is given to the server.
#[derive(Debug, Clone, Default)]
pub struct AdminAccess {
    token_sha256: Option<String>,
    insecure: bool,
}

/// Why an admin listener cannot be served as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdminAccessError {
    /// The token's SHA-256 is not one. (Its value is not repeated: it may
    /// be the token itself, pasted by mistake.)
    #[error(
        "the admin token's SHA-256 must be 64 hexadecimal digits \
         (printf %s \"$TOKEN\" | sha256sum), not {length} characters"
    )]
    NotSha256 {
        /// How many characters were given.
        length: usize,
    },
    /// The listener's address is reachable from other hosts and no token
    /// is required.
    #[error(
        "the admin listener on {address} is reachable from other hosts and requires no token: \
         it shows every counter, worker hosts and pids, and who holds which lock"
    )]
    Exposed {
        /// The listener's address.
        address: std::net::SocketAddr,
    },
}

impl AdminAccessError {
    /// What kind of failure this is: bad input.
    pub fn class(&self) -> idmint::ErrorClass {
        idmint::ErrorClass::BadInput
    }
}

impl AdminAccess {
    /// Requires the token whose SHA-256 is `sha256` (hexadecimal, either
    /// case).
    pub fn token_sha256(sha256: &str) -> Result<Self, AdminAccessError> {
        let sha256 = sha256.trim();
        if sha256.len() != 64 || !sha256.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(AdminAccessError::NotSha256 {
                length: sha256.chars().count(),
            });
        }
        Ok(Self {
            token_sha256: Some(sha256.to_ascii_lowercase()),
            insecure: false,
        })
    }

    /// Whether to serve without a token on an address other hosts reach
    /// (warned about at start) rather than refuse to.
    pub fn insecure(mut self, insecure: bool) -> Self {
        self.insecure = insecure;
        self
    }

    /// Fails if the admin listener would be served on `address`, reachable
    /// from other hosts, to anyone: no token and not [`insecure`](Self::insecure).
    pub fn check_address(&self, address: std::net::SocketAddr) -> Result<(), AdminAccessError> {
        if self.open_to_other_hosts(address) && !self.insecure {
            return Err(AdminAccessError::Exposed { address });
        }
        Ok(())
    }

    /// Whether requests must carry the admin token.
    pub(crate) fn requires_token(&self) -> bool {
        self.token_sha256.is_some()
    }

    /// Whether anyone on another host that reaches `address` is let in.
    pub(crate) fn open_to_other_hosts(&self, address: std::net::SocketAddr) -> bool {
        self.token_sha256.is_none() && !address.ip().to_canonical().is_loopback()
    }

    /// Whether a request with `headers` is let in.
    pub(crate) fn admits(&self, headers: &axum::http::HeaderMap) -> bool {
        match &self.token_sha256 {
            None => true,
            Some(expected) => super::tokens::bearer(headers)
                .is_some_and(|token| idmint::checksum::sha256_hex(token.as_bytes()) == *expected),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admin_listener_reachable_from_other_hosts_needs_a_token_or_insecure() {
        let open = AdminAccess::default();
        for private in ["127.0.0.1:9", "[::1]:9", "[::ffff:127.0.0.1]:9"] {
            open.check_address(private.parse().unwrap()).unwrap();
        }
        for public in ["0.0.0.0:9", "[::]:9", "192.0.2.7:9"] {
            let address = public.parse().unwrap();
            assert_eq!(
                open.check_address(address),
                Err(AdminAccessError::Exposed { address })
            );
            open.clone().insecure(true).check_address(address).unwrap();
        }
        let guarded = AdminAccess::token_sha256(&"AB".repeat(32)).unwrap();
        guarded.check_address("0.0.0.0:9".parse().unwrap()).unwrap();
        assert_eq!(
            AdminAccess::token_sha256("s3cret").unwrap_err(),
            AdminAccessError::NotSha256 { length: 6 }
        );
    }

    #[test]
    fn only_the_token_whose_hash_was_given_is_admitted() {
        let access =
            AdminAccess::token_sha256(&idmint::checksum::sha256_hex(b"tok-admin")).unwrap();
        let with = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(axum::http::header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        assert!(access.admits(&with("Bearer tok-admin")));
        assert!(!access.admits(&with("Bearer tok-other")));
        assert!(!access.admits(&axum::http::HeaderMap::new()));
        assert!(AdminAccess::default().admits(&axum::http::HeaderMap::new()));
    }
}
