//! Redacts credentials from connection strings before they reach a message.
//!
//! Every error or report that names the server goes through [`redact_uri`], so
//! a password in `MONGODB_URI` never lands in a terminal, a log or a CI page.

/// Returns `uri` with the password of its user-info part replaced by `***`.
///
/// `mongodb://app:s3cret@db1:27017/x` becomes `mongodb://app:***@db1:27017/x`.
/// A user name without a password is kept; query options such as
/// `tlsCertificateKeyFilePassword=...` are redacted too. Text that is not a
/// connection string at all is returned unchanged.
pub fn redact_uri(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://") else {
        return uri.to_string();
    };
    let (scheme, rest) = uri.split_at(scheme_end + 3);
    // The user info ends at the last '@' before the path or query starts.
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (user_info, hosts) = authority.split_at(at);
            match user_info.split_once(':') {
                Some((user, _password)) => format!("{user}:***{hosts}"),
                None => format!("{user_info}{hosts}"),
            }
        }
        None => authority.to_string(),
    };
    format!("{scheme}{authority}{}", redact_query_secrets(tail))
}

/// Query options whose values are secrets.
const SECRET_OPTIONS: &[&str] = &[
    "password",
    "tlscertificatekeyfilepassword",
    "sslpemkeypassword",
];

fn redact_query_secrets(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let options: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if SECRET_OPTIONS.contains(&key.to_ascii_lowercase().as_str()) => {
                format!("{key}=***")
            }
            _ => pair.to_string(),
        })
        .collect();
    format!("{path}?{}", options.join("&"))
}

#[cfg(test)]
mod tests {
    use super::redact_uri;

    #[test]
    fn hides_the_password_and_keeps_the_rest() {
        assert_eq!(
            redact_uri("mongodb://app:s3cret@db1:27017,db2/idmint?replicaSet=rs0"),
            "mongodb://app:***@db1:27017,db2/idmint?replicaSet=rs0"
        );
        assert_eq!(
            redact_uri("mongodb+srv://a%40b:p%3Aw@cluster.example/"),
            "mongodb+srv://a%40b:***@cluster.example/"
        );
    }

    #[test]
    fn a_password_with_at_signs_is_hidden_whole() {
        assert_eq!(redact_uri("mongodb://u:p@ss@h:1"), "mongodb://u:***@h:1");
    }

    #[test]
    fn keeps_uris_without_credentials() {
        assert_eq!(
            redact_uri("mongodb://127.0.0.1:27017"),
            "mongodb://127.0.0.1:27017"
        );
        assert_eq!(redact_uri("mongodb://user@h/"), "mongodb://user@h/");
        assert_eq!(redact_uri("not a uri"), "not a uri");
    }

    #[test]
    fn hides_secret_query_options() {
        assert_eq!(
            redact_uri("mongodb://h/?tls=true&tlsCertificateKeyFilePassword=x1&w=1"),
            "mongodb://h/?tls=true&tlsCertificateKeyFilePassword=***&w=1"
        );
    }
}
