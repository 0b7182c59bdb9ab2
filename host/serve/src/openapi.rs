//! The OpenAPI documents, one per listener, each describing exactly what
//! that listener serves (both are served by the admin listener):
//!
//! - the API listener's, at `/openapi.json`: the API's routes and
//!   `/healthz`, what generated clients are built from;
//! - the admin listener's, at `/openapi-admin.json`: the operator's routes
//!   and `/healthz`.
//!
//! Paths, parameters and schemas come from the routes as they are
//! registered (`utoipa_axum::routes!` in `lib.rs`), so a route cannot be
//! served undocumented. What a route's annotation cannot know is added here,
//! where the server's configuration and the registry of kinds are: the
//! kinds of counter `ranges` serves, the bounds of `count` (the server's
//! own `--max-count` and `--max-range`) and of `validate`'s IDs, the rule of
//! counter names, the bearer token when the server requires one, and the
//! answers of the layers every route is behind (401 from authentication, 503
//! from the request limits, 408 and 413 from reading a body). A request the
//! document calls valid is never refused for its shape (400), and one it
//! calls invalid always is: `tests/serve_schema.rs` runs schemathesis on
//! both listeners.

use serde_json::{json, Map, Value};
use utoipa::OpenApi;

use idmint::sequence::{CounterKind, MAX_COUNTER_NAME_LEN};

use super::error::ErrorBody;
use super::limits::Limits;

/// The API listener's document: its title and description; its paths and
/// schemas come from the routes registered (`lib.rs`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idmint",
        description = "Unique, time-correlated, formatted IDs coordinated through MongoDB: \
                       the API listener (`--listen`). The admin listener's routes are \
                       described by `/openapi-admin.json` on the admin listener."
    ),
    components(schemas(ErrorBody))
)]
pub struct ApiDoc;

/// The admin listener's document (`--admin-listen`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idmint admin",
        description = "The operator's routes of idmint, on the admin listener \
                       (`--admin-listen`) only. The API listener's routes are described by \
                       `/openapi.json` on the admin listener."
    ),
    components(schemas(ErrorBody))
)]
pub struct AdminDoc;

/// A counter name, as `CounterName::new` accepts it: ASCII letters, digits
/// and `_ - . :`, starting with a letter or digit (1 to
/// `MAX_COUNTER_NAME_LEN` bytes, given apart as `maxLength`).
const COUNTER_NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9_.:-]*$";

/// The path parameters that name a counter.
const COUNTER_PARAMETERS: [&str; 2] = ["name", "key"];

/// The routes outside every limit and authentication.
const UNLIMITED: [&str; 1] = ["/healthz"];

/// Both documents, as JSON, ready to serve.
pub(crate) struct Documents {
    /// The API listener's.
    pub api: String,
    /// The admin listener's.
    pub admin: String,
}

impl Documents {
    /// The documents of the routes registered, completed with what the
    /// server's `limits` allow and whether it requires a token.
    pub(crate) fn new(
        api: utoipa::openapi::OpenApi,
        admin: utoipa::openapi::OpenApi,
        limits: &Limits,
        tokens: bool,
        admin_token: bool,
    ) -> Self {
        let mut api = serde_json::to_value(api).unwrap_or_default();
        bound_parameters(&mut api, limits);
        bound_validate(&mut api, limits);
        add_layer_answers(&mut api, tokens);
        if tokens {
            require_bearer(
                &mut api,
                "The application's token (`idmint token add`, or the tokens file)",
            );
        }
        let mut admin = serde_json::to_value(admin).unwrap_or_default();
        add_layer_answers(&mut admin, admin_token);
        if admin_token {
            require_bearer(
                &mut admin,
                "The admin token, whose SHA-256 `--admin-token-sha256` gives",
            );
        }
        Self {
            api: api.to_string(),
            admin: admin.to_string(),
        }
    }
}

/// Every operation of `document`, with its path.
fn operations(document: &mut Value) -> impl Iterator<Item = (String, &mut Map<String, Value>)> {
    document["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.iter_mut())
        .flat_map(|(path, item)| {
            let path = path.clone();
            item.as_object_mut()
                .into_iter()
                .flat_map(|methods| methods.values_mut())
                .filter_map(Value::as_object_mut)
                .map(move |operation| (path.clone(), operation))
        })
}

/// The bounds the server enforces on parameters: a counter's name (and
/// the kinds `ranges` serves), and
/// `count` (1 to `--max-range` for ranges, else to `--max-count`); a query
/// parameter left out is absent, never null.
fn bound_parameters(document: &mut Value, limits: &Limits) {
    for (path, operation) in operations(document) {
        let Some(parameters) = operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for parameter in parameters {
            let location = parameter["in"].as_str().unwrap_or_default().to_string();
            let name = parameter["name"].as_str().unwrap_or_default().to_string();
            let schema = &mut parameter["schema"];
            if location == "query" {
                not_null(schema);
            }
            match (location.as_str(), name.as_str()) {
                ("path", name) if COUNTER_PARAMETERS.contains(&name) => {
                    *schema = counter_name_schema();
                    if path.ends_with("/ranges") {
                        parameter["description"] = json!(ranges_counter());
                    }
                }
                ("query", "count") => {
                    let most = if path.ends_with("/ranges") {
                        limits.max_range
                    } else {
                        limits.max_count as u64
                    };
                    schema["minimum"] = json!(1);
                    schema["maximum"] = json!(most);
                }
                _ => {}
            }
        }
    }
}

/// What the counter `ranges` takes is: one of a kind that hands out runs,
/// the kinds named from the registry.
fn ranges_counter() -> String {
    let kinds: Vec<&str> = CounterKind::ALL
        .iter()
        .copied()
        .filter(|kind| kind.hands_out_runs())
        .map(CounterKind::as_str)
        .collect();
    format!(
        "A counter of a kind that hands out runs: {}",
        kinds.join(", ")
    )
}

/// The schema of a counter's name.
fn counter_name_schema() -> Value {
    json!({
        "type": "string",
        "pattern": COUNTER_NAME_PATTERN,
        "minLength": 1,
        "maxLength": MAX_COUNTER_NAME_LEN,
    })
}

/// `schema` without `null` among its types (utoipa makes an `Option` field
/// nullable; a query string has no null, only an absent parameter).
fn not_null(schema: &mut Value) {
    if let Some(types) = schema["type"].as_array() {
        let types: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        schema["type"] = match types.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(types),
        };
    }
}

/// `validate`'s body: 1 to `--max-count` IDs, and a counter's name.
fn bound_validate(document: &mut Value, limits: &Limits) {
    let request = &mut document["components"]["schemas"]["ValidateRequest"];
    if !request.is_object() {
        return;
    }
    let ids = &mut request["properties"]["ids"];
    ids["minItems"] = json!(1);
    ids["maxItems"] = json!(limits.max_count);
    let counter = &mut request["properties"]["counter"];
    let mut name = counter_name_schema();
    name["type"] = json!(["string", "null"]);
    *counter = name;
    request["additionalProperties"] = json!(false);
}

/// The answers of the layers a route is behind, where its annotation does
/// not give them: 401 (authentication, when the server requires a token),
/// 503 (the request limits, the tokens too old to trust), and for a route
/// with a body 408 and 413 (reading it in time and within `--max-body`).
fn add_layer_answers(document: &mut Value, tokens: bool) {
    for (path, operation) in operations(document) {
        if UNLIMITED.contains(&path.as_str()) {
            continue;
        }
        let has_body = operation.contains_key("requestBody");
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let mut answers = vec![(
            "503",
            "Overloaded: over the concurrency limit, past the request's time limit, \
             or the server's tokens too old to trust; retry with backoff",
        )];
        if tokens {
            answers.push(("401", "No valid token"));
        }
        if has_body {
            answers.push(("408", "The body did not arrive within `--body-timeout`"));
            answers.push(("413", "A body over `--max-body`"));
        }
        for (status, description) in answers {
            responses
                .entry(status)
                .or_insert_with(|| error_answer(description));
        }
    }
}

/// An error answer: the JSON error body.
fn error_answer(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    })
}

/// Declares the bearer token every route of `document` but `/healthz`
/// requires, described as `description`.
fn require_bearer(document: &mut Value, description: &str) {
    document["components"]["securitySchemes"] = json!({
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": description,
        }
    });
    for (path, operation) in operations(document) {
        if !UNLIMITED.contains(&path.as_str()) {
            operation.insert("security".to_string(), json!([{"bearer": []}]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn documents(limits: &Limits, tokens: bool) -> (Value, Value) {
        documents_with(limits, tokens, false)
    }

    fn documents_with(limits: &Limits, tokens: bool, admin_token: bool) -> (Value, Value) {
        let (_, api, admin) = crate::Routes::new();
        let documents = Documents::new(api, admin, limits, tokens, admin_token);
        (
            serde_json::from_str(&documents.api).unwrap(),
            serde_json::from_str(&documents.admin).unwrap(),
        )
    }

    #[test]
    fn the_bounds_are_the_servers_and_the_token_is_declared_when_required() {
        let limits = Limits {
            max_count: 7,
            max_range: 70,
            ..Limits::default()
        };
        let (api, _) = documents(&limits, false);
        let count = |path: &str| {
            api["paths"][path]["get"]["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|parameter| parameter["name"] == "count")
                .unwrap()["schema"]
                .clone()
        };
        assert_eq!(count("/v1/counters/{name}/ids")["maximum"], 7);
        assert_eq!(count("/v1/counters/{name}/values")["maximum"], 7);
        assert_eq!(count("/v1/counters/{name}/ranges")["maximum"], 70);
        let ranges_counter = &api["paths"]["/v1/counters/{name}/ranges"]["get"]["parameters"][0];
        assert_eq!(ranges_counter["name"], "name");
        let named: Vec<&str> = ranges_counter["description"]
            .as_str()
            .unwrap()
            .strip_prefix("A counter of a kind that hands out runs: ")
            .unwrap()
            .split(", ")
            .collect();
        for kind in CounterKind::ALL {
            assert_eq!(
                named.contains(&kind.as_str()),
                kind.hands_out_runs(),
                "{kind}: {named:?}"
            );
        }
        assert_eq!(count("/v1/counters/{name}/ids")["minimum"], 1);
        let ids = &api["components"]["schemas"]["ValidateRequest"]["properties"]["ids"];
        assert_eq!(ids["maxItems"], 7);
        let responses = &api["paths"]["/v1/counters/{name}/ids"]["get"]["responses"];
        assert!(responses["401"].is_null(), "no token required, yet a 401");
        assert!(api["components"]["securitySchemes"].is_null());

        let (api, admin) = documents(&limits, true);
        let operation = &api["paths"]["/v1/counters/{name}/ids"]["get"];
        assert!(operation["responses"]["401"].is_object());
        assert_eq!(operation["security"], json!([{"bearer": []}]));
        assert_eq!(
            api["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        assert!(api["paths"]["/healthz"]["get"]["security"].is_null());
        // The admin listener takes no token.
        assert!(admin["paths"]["/readyz"]["get"]["security"].is_null());
    }

    #[test]
    fn the_admin_document_declares_the_admin_token_when_one_is_required() {
        let (_, open) = documents_with(&Limits::default(), false, false);
        assert!(open["components"]["securitySchemes"].is_null());
        let (api, admin) = documents_with(&Limits::default(), false, true);
        assert!(api["components"]["securitySchemes"].is_null());
        assert_eq!(
            admin["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        assert_eq!(
            admin["paths"]["/metrics"]["get"]["security"],
            json!([{"bearer": []}])
        );
        assert!(admin["paths"]["/metrics"]["get"]["responses"]["401"].is_object());
        assert!(admin["paths"]["/healthz"]["get"]["security"].is_null());
    }
}
