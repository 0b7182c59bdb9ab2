//! What the monitor is asked to show of the counters: by default the ones
//! to look at first ([`View::First`]); given a search (`q`, the start of a
//! name) or a page (`page`, `per_page`), one page of the counters by name
//! ([`View::Page`]).

use serde::Deserialize;
use utoipa::IntoParams;

use idmint::sequence::CounterName;

/// Counters per page unless asked otherwise.
pub const DEFAULT_PER_PAGE: u64 = 50;

/// The most counters per page: what keeps a page small whatever is asked.
pub const MAX_PER_PAGE: u64 = 500;

/// The last page that may be asked for.
pub const MAX_PAGE: u64 = 1_000_000;

/// The query of `/monitor` and `/monitor.json`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MonitorQuery {
    /// Shows the counters whose name starts with this, a page at a time:
    /// the start of a counter name (letters, digits and `_ - . :`). Empty:
    /// not a search.
    #[param(max_length = 128, pattern = r"^([A-Za-z0-9][A-Za-z0-9_.:-]*)?$")]
    pub q: Option<String>,
    /// Shows this page of the counters by name (of those found, with `q`):
    /// 1 to 1,000,000, default 1.
    #[param(minimum = 1, maximum = 1_000_000)]
    pub page: Option<u64>,
    /// Counters per page: 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500)]
    pub per_page: Option<u64>,
}

/// A query parameter that cannot be served, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{parameter}: {reason}")]
pub struct InvalidQuery {
    /// The parameter.
    pub parameter: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

/// What to show of the counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// The counters to look at first, and a count of the rest.
    First,
    /// One page of the counters by name.
    Page(PageRequest),
}

/// One page of the counters by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Only the counters whose name starts with this (all: empty).
    pub start: String,
    /// The page, from 1.
    pub page: u64,
    /// Counters per page.
    pub per_page: u64,
}

impl MonitorQuery {
    /// The view asked for, or the first parameter that cannot be served.
    pub fn view(self) -> Result<View, InvalidQuery> {
        let start = self.q.filter(|q| !q.is_empty());
        if let Some(start) = &start {
            CounterName::new(start.as_str()).map_err(|error| InvalidQuery {
                parameter: "q",
                reason: format!("not the start of a counter name: {error}"),
            })?;
        }
        let page = within("page", self.page, 1, MAX_PAGE)?;
        let per_page = within("per_page", self.per_page, 1, MAX_PER_PAGE)?;
        if start.is_none() && page.is_none() && per_page.is_none() {
            return Ok(View::First);
        }
        Ok(View::Page(PageRequest {
            start: start.unwrap_or_default(),
            page: page.unwrap_or(1),
            per_page: per_page.unwrap_or(DEFAULT_PER_PAGE),
        }))
    }
}

/// `value`, unless it is outside `min..=max`.
fn within(
    parameter: &'static str,
    value: Option<u64>,
    min: u64,
    max: u64,
) -> Result<Option<u64>, InvalidQuery> {
    match value {
        Some(value) if !(min..=max).contains(&value) => Err(InvalidQuery {
            parameter,
            reason: format!("must be {min} to {max}, not {value}"),
        }),
        _ => Ok(value),
    }
}

impl PageRequest {
    /// How many counters come before the page.
    pub fn skip(&self) -> u64 {
        (self.page - 1) * self.per_page
    }

    /// The query string of page `page` of the same search and size.
    pub fn query_of(&self, page: u64) -> String {
        // A name's characters need no escaping in a query string.
        let mut query = String::new();
        if !self.start.is_empty() {
            query.push_str("q=");
            query.push_str(&self.start);
            query.push('&');
        }
        query.push_str(&format!("page={page}&per_page={}", self.per_page));
        query
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(q: Option<&str>, page: Option<u64>, per_page: Option<u64>) -> MonitorQuery {
        MonitorQuery {
            q: q.map(str::to_string),
            page,
            per_page,
        }
    }

    #[test]
    fn a_query_is_a_view_or_names_the_parameter_it_cannot_serve() {
        assert_eq!(query(None, None, None).view(), Ok(View::First));
        assert_eq!(query(Some(""), None, None).view(), Ok(View::First));
        let page = |start: &str, page, per_page| {
            Ok(View::Page(PageRequest {
                start: start.to_string(),
                page,
                per_page,
            }))
        };
        assert_eq!(
            query(Some("cust-1"), None, None).view(),
            page("cust-1", 1, 50)
        );
        assert_eq!(query(None, Some(3), None).view(), page("", 3, 50));
        assert_eq!(query(None, None, Some(500)).view(), page("", 1, 500));
        let refused = |query: MonitorQuery| query.view().unwrap_err();
        assert_eq!(refused(query(None, Some(0), None)).parameter, "page");
        assert_eq!(
            refused(query(None, None, Some(501))).to_string(),
            "per_page: must be 1 to 500, not 501"
        );
        let bad_name = refused(query(Some("a$b"), None, None));
        assert_eq!(bad_name.parameter, "q");
        assert!(bad_name.reason.contains("'$'"), "{bad_name}");
    }

    #[test]
    fn a_page_knows_what_it_skips_and_the_query_of_another() {
        let request = PageRequest {
            start: "cust-1".into(),
            page: 3,
            per_page: 20,
        };
        assert_eq!(request.skip(), 40);
        assert_eq!(request.query_of(4), "q=cust-1&page=4&per_page=20");
        let all = PageRequest {
            start: String::new(),
            ..request
        };
        assert_eq!(all.query_of(2), "page=2&per_page=20");
    }
}
