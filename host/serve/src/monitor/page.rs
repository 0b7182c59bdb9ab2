//! Renders a [`Snapshot`] as one HTML page. maud escapes every value it
//! interpolates, so a counter or lock name cannot inject markup. The page
//! reloads itself every few seconds with a `<meta>` refresh; the chart is an
//! inline SVG; the search is a form sent with GET and the pages are plain
//! links: nothing needs JavaScript.

use idmint::sequence::group_thousands as thousands;
use idmint::sequence::striping::HealthReport;
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::counters::{Attention, CounterRow};
use super::rates::RatePoint;
use super::snapshot::{BufferRow, Paging, PolicyRow, Snapshot};
use super::READ_REUSE;

/// Seconds between reloads.
pub const REFRESH_SECONDS: u32 = 5;

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d232a; background: #fafbfc; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.6em 0 .4em; }
.meta { color: #57606a; }
table { border-collapse: collapse; background: #fff; min-width: 40em; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f0f3f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { width: 10em; height: .7em; background: #e6eaef; border-radius: .35em; overflow: hidden; }
.bar > div { height: 100%; background: #2da44e; }
tr.warn td { background: #fff1e5; } tr.warn .bar > div { background: #d1242f; }
.warn-text { color: #d1242f; font-weight: 600; }
.problem { color: #d1242f; }
.why { color: #9a6700; font-weight: 600; } .why.urgent { color: #d1242f; }
form { margin: .4em 0; } nav a, nav span { margin-right: .8em; }
.empty { color: #57606a; font-style: italic; }
code { font-size: .92em; }
svg text { font: 11px system-ui, sans-serif; fill: #57606a; }
";

/// The page for `snapshot`.
pub fn render(snapshot: &Snapshot) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content=(REFRESH_SECONDS);
                title { "idmint monitor" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "idmint monitor" }
                p.meta {
                    "Instance " code { (snapshot.instance.name) }
                    " · database read at " (snapshot.taken_at)
                    " (one read serves every viewer for " (READ_REUSE.as_secs()) " s)"
                    " · reloads every " (REFRESH_SECONDS) " s"
                }
                @for problem in &snapshot.problems {
                    p.problem { "Could not read " (problem) }
                }
                (counters(snapshot))
                h2 { "This instance" }
                (deployments(&snapshot.instance.deployments))
                (buffers(&snapshot.instance.buffers))
                (chart(&snapshot.instance.rates))
                (workers(snapshot))
                (locks(snapshot))
                (series(snapshot))
                (policies(snapshot))
            }
        }
    }
}

/// `count` `one`s (`1 counter`, `2,000 counters`).
fn count_of(count: u64, one: &str) -> String {
    let s = if count == 1 { "" } else { "s" };
    format!("{} {one}{s}", thousands(count))
}

/// The search form: the counters whose name starts with `q`.
fn search(q: &str, per_page: Option<u64>) -> Markup {
    html! {
        form #search method="get" {
            label { "Counters whose name starts with " input type="search" name="q" value=(q) size="24" maxlength="128"; }
            @if let Some(per_page) = per_page { input type="hidden" name="per_page" value=(per_page); }
            " " button type="submit" { "Search" }
        }
    }
}

fn counters(snapshot: &Snapshot) -> Markup {
    html! {
        h2 { "Counters" }
        @match &snapshot.paging {
            Paging::First { total, more, attention, shown_per_reason, first_page } => {
                (search("", None))
                @match (total, attention) {
                    (Some(0), _) => p.empty { "No counters yet." },
                    (Some(total), Some(attention)) => {
                        p #attention {
                            (count_of(*total, "counter"))
                            @let counted: Vec<String> = Attention::ALL.iter().filter(|&&reason| attention.of(reason) > 0).map(|&reason| format!("{} {}", thousands(attention.of(reason)), reason.words())).collect();
                            @if counted.is_empty() { "; none to look at first." } @else { ": " (counted.join(", ")) "." }
                            @if Attention::ALL.iter().any(|&reason| attention.of(reason) > *shown_per_reason as u64) { " At most " (shown_per_reason) " are shown for each reason." }
                        }
                    }
                    _ => p.empty { "The counters could not be read (above); search or " a href=(first_page) { "page through them" } "." },
                }
                (table(&snapshot.counters))
                @if let Some(more) = more.filter(|more| *more > 0) {
                    p #more { "And " (count_of(more, "more counter")) ": search or " a href=(first_page) { "page through them" } "." }
                }
            }
            Paging::Page { q, page, per_page, total, pages, next, previous } => {
                (search(q, Some(*per_page)))
                p #paging {
                    @let first = (page - 1) * per_page + 1;
                    @if snapshot.counters.is_empty() {
                        "No counters" @if !q.is_empty() { " whose name starts with " code { (q) } } " on page " (page) " (" (thousands(*total)) " in all)."
                    } @else {
                        "Counters " (thousands(first)) "–" (thousands(first + snapshot.counters.len() as u64 - 1)) " of " (thousands(*total))
                        @if !q.is_empty() { " whose name starts with " code { (q) } }
                        ", page " (page) " of " (pages) "."
                    }
                }
                (pager(previous.as_deref(), next.as_deref()))
                @if !snapshot.counters.is_empty() { (table(&snapshot.counters)) }
                (pager(previous.as_deref(), next.as_deref()))
                @if *pages > 1 {
                    form #goto method="get" {
                        @if !q.is_empty() { input type="hidden" name="q" value=(q); }
                        input type="hidden" name="per_page" value=(per_page);
                        label { "Page " input type="number" name="page" min="1" max=(pages) value=(page) size="6"; }
                        " " button type="submit" { "Go" }
                    }
                }
            }
        }
    }
}

/// Links to the pages before and after, and back to the counters to look
/// at first.
fn pager(previous: Option<&str>, next: Option<&str>) -> Markup {
    html! {
        nav {
            @if let Some(previous) = previous { a rel="prev" href=(previous) { "← previous page" } }
            @if let Some(next) = next { a rel="next" href=(next) { "next page →" } }
            a href="?" { "the counters to look at first" }
        }
    }
}

/// Why `row` is to be looked at, in words.
fn why(row: &CounterRow) -> Markup {
    html! {
        @for reason in &row.attention {
            @let urgent = matches!(reason, Attention::Malformed | Attention::SharedPrefix | Attention::NearEnd);
            div class=(if urgent { "why urgent" } else { "why" }) {
                @match reason {
                    Attention::SharedPrefix => {
                        @for collision in &row.collisions {
                            "prefix " code { (format!("{:?}", collision.prefix)) } " also owned by "
                            (collision.counters.iter().filter(|name| **name != row.name).cloned().collect::<Vec<_>>().join(", "))
                        }
                    }
                    Attention::UndeclaredPrefixes => {
                        span title="Its document has no prefixes array: the unique index does not keep other counters from its prefix (idmint counter prefix add declares it)" { "prefix undeclared" }
                    }
                    Attention::Busy => { "busy here: " (count_of(row.recent_values, "value")) " in the last minute" }
                    _ => { (reason.words()) }
                }
            }
        }
    }
}

fn table(rows: &[CounterRow]) -> Markup {
    html! {
        @if !rows.is_empty() {
            table #counters {
                tr { th { "Counter" } th { "Why look" } th { "Kind" } th { "State" } th { "Prefixes" } th { "Left" } }
                @for row in rows {
                    @let warn = row.near_end();
                    tr class=[warn.then_some("warn")] {
                        td { code { (row.name) } }
                        td { (why(row)) }
                        @if let Some(problem) = &row.problem {
                            td colspan="4" class="problem" { "corrupt: " (problem) }
                        } @else {
                            td { (row.kind) }
                            td {
                                @for (label, text) in &row.facts {
                                    div { (label) ": " (text) }
                                }
                            }
                            td { (row.prefixes.join(", ")) }
                            td {
                                @match &row.headroom {
                                    Some(headroom) => {
                                        div.bar title=(format!("{:.1}% used", headroom.used * 100.0)) {
                                            div style=(format!("width: {:.1}%", (headroom.used * 100.0).clamp(0.0, 100.0))) {}
                                        }
                                        // A pace says how far ahead its timestamps are.
                                        span class=[warn.then_some("warn-text")] {
                                            @if headroom.pace_per_second.is_some() { (headroom.summary()) } @else { (headroom.left) }
                                        }
                                    }
                                    None => span.empty { "never runs out" },
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn range(range: Option<(u64, u64)>) -> String {
    match range {
        Some((start, end)) => format!("[{start}, {end})"),
        None => "—".to_string(),
    }
}

/// Each deployment a striped counter may span, as this instance knows its
/// health; nothing when it was given one connection string.
fn deployments(rows: &[HealthReport]) -> Markup {
    html! {
        @if !rows.is_empty() {
            table #deployments {
                tr { th { "Deployment" } th { "Health" } th { "Failures in a row" } }
                @for row in rows {
                    tr {
                        td { code { (row.name) } }
                        td {
                            @if row.healthy { "healthy" }
                            @else { "set aside for " (row.aside_ms) " ms more" }
                        }
                        td.num { (row.failures) }
                    }
                }
            }
        }
    }
}

fn buffers(rows: &[BufferRow]) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty { "No counter has buffered values here yet." }
        } @else {
            table #buffers {
                tr {
                    th { "Counter" } th { "Current" } th { "Position" } th { "Next" }
                    th { "Step" } th { "Fetch in flight" } th { "Fetches" } th { "Values" }
                }
                @for row in rows {
                    tr {
                        td { code { (row.counter) } }
                        td.num { (range(row.current)) }
                        td.num { @if let Some(position) = row.position { (position) } @else { "—" } }
                        td.num { (range(row.next)) }
                        td.num { (row.step) }
                        td { @if row.loading { "yes" } @else { "no" } }
                        td.num { (row.fetches) }
                        td.num { (row.values) }
                    }
                }
            }
        }
    }
}

/// Values and requests per second as two polylines over the window.
fn chart(points: &[RatePoint]) -> Markup {
    const WIDTH: f64 = 600.0;
    const HEIGHT: f64 = 120.0;
    let peak = points
        .iter()
        .map(|p| p.values.max(p.requests))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let line = |value: fn(&RatePoint) -> u64| -> String {
        let step = if points.len() > 1 {
            WIDTH / (points.len() - 1) as f64
        } else {
            0.0
        };
        points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "{:.1},{:.1}",
                    i as f64 * step,
                    HEIGHT - value(p) as f64 / peak * HEIGHT
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let last = points.last().copied().unwrap_or(RatePoint {
        values: 0,
        requests: 0,
    });
    html! {
        p {
            "Per second over the last " (points.len()) " s: "
            strong style="color:#0969da" { "values" } " (now " (last.values) "), "
            strong style="color:#8250df" { "requests" } " (now " (last.requests) "); peak " (peak as u64) "."
        }
        svg #rates width=(WIDTH) height=(HEIGHT + 14.0) viewBox=(format!("0 0 {WIDTH} {}", HEIGHT + 14.0))
            role="img" aria-label="values and requests per second" {
            rect x="0" y="0" width=(WIDTH) height=(HEIGHT) fill="#fff" stroke="#d0d7de" {}
            polyline points=(line(|p| p.values)) fill="none" stroke="#0969da" stroke-width="1.5" {}
            polyline points=(line(|p| p.requests)) fill="none" stroke="#8250df" stroke-width="1.5" {}
            text x="2" y=(HEIGHT + 12.0) { "oldest" }
            text x=(WIDTH - 24.0) y=(HEIGHT + 12.0) { "now" }
        }
    }
}

fn workers(snapshot: &Snapshot) -> Markup {
    html! {
        h2 { "Worker leases (every instance)" }
        @if snapshot.workers.is_empty() {
            p.empty { "No worker leases." }
        } @else {
            table #workers {
                tr { th { "Snowflake counter" } th { "Worker" } th { "Host" } th { "Pid" } th { "Expires in" } }
                @for row in &snapshot.workers {
                    tr class=[(!row.live).then_some("warn")] {
                        td { code { (row.counter) } }
                        td.num { (row.worker) }
                        td { (row.host) }
                        td.num { (row.pid) }
                        td.num { @if row.live { (seconds(row.expires_in_ms)) } @else { "expired" } }
                    }
                }
            }
        }
    }
}

fn locks(snapshot: &Snapshot) -> Markup {
    html! {
        h2 { "Locks held" }
        @if snapshot.locks.is_empty() {
            p.empty { "No lock is held." }
        } @else {
            table #locks {
                tr { th { "Lock" } th title="The first digits of the SHA-256 of the holder's owner token" { "Holder (SHA-256)" } th { "Fencing token" } th { "Holds" } th { "Time left" } }
                @for row in &snapshot.locks {
                    tr {
                        td { code { (row.name) } }
                        td {
                            @if let Some(label) = &row.label { (label) " " }
                            code { (row.holder_fingerprint) }
                            @if row.shared > 0 { " " (row.shared) " shared" }
                        }
                        td.num { (row.token) }
                        td.num { (row.count) }
                        td.num { @if let Some(ms) = row.expires_in_ms { (seconds(ms)) } @else { "—" } }
                    }
                }
            }
        }
        @if snapshot.free_locks > 0 {
            p.meta { (snapshot.free_locks) " other lock(s) free." }
        }
    }
}

/// The gap-free series, those with holes first (marked), then those with
/// reservations past their deadline.
fn series(snapshot: &Snapshot) -> Markup {
    html! {
        @if !snapshot.series.is_empty() {
            h2 { "Gap-free series" }
            table #series {
                tr { th { "Series" } th { "Numbers" } th title="Numbers with no record: `idmint series audit NAME` names them" { "Missing" } th { "Reserved" } th title="Reservations past their deadline, voided at the next sweep" { "Expired" } }
                @for row in &snapshot.series {
                    tr class=[(row.missing > 0).then_some("warn")] {
                        td { code { (row.series) } }
                        td.num { @if row.last >= row.first { (row.first) "–" (row.last) } @else { "none yet" } }
                        td.num { @if row.missing > 0 { span.warn-text { (row.missing) } } @else { "0" } }
                        td.num { (row.reserved) }
                        td.num { (row.expired) }
                    }
                }
            }
        }
    }
}

fn policy_cells(row: &PolicyRow) -> Markup {
    html! {
        td { (row.name) } td { (row.policy_version) } td { code { (short(&row.sha256)) } }
    }
}

fn policies(snapshot: &Snapshot) -> Markup {
    let view = &snapshot.policy;
    html! {
        h2 { "Policy" }
        @if let Some(serving) = &view.serving {
            p #serving {
                "In service here: " strong { (serving.name) " " (serving.policy_version) }
                @if let Some(version) = serving.version { ", stored version " (version) } @else { ", this instance's own (not from the store)" }
                @if let Some(contract) = &serving.contract { ", contract " (contract) }
                ", sha256 " code { (short(&serving.sha256)) }
            }
        }
        @if view.stored.is_empty() {
            p.empty { "No policy stored: every instance formats with its own." }
        } @else {
            table #policies {
                tr { th { "Version" } th { "Name" } th { "Policy version" } th { "SHA-256" } th { "Pushed" } th { "Active" } }
                @for row in &view.stored {
                    tr {
                        td.num { (row.version.unwrap_or_default()) }
                        (policy_cells(row))
                        td { (row.pushed_at.clone().unwrap_or_default()) }
                        td { @if row.active { strong { "active" } } }
                    }
                }
            }
            @if !view.history.is_empty() {
                p #history {
                    "Activation history (oldest first): "
                    (view.history.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" → "))
                    " → now " (view.stored.iter().find(|r| r.active).and_then(|r| r.version).map(|v| v.to_string()).unwrap_or_else(|| "none".into()))
                }
            }
        }
    }
}

fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::counters::AttentionCounts;
    use crate::monitor::snapshot::{Instance, LockRow, PolicyView};
    use idmint::sequence::Headroom;
    use idmint::series::SeriesSummary;

    fn snapshot() -> Snapshot {
        Snapshot {
            taken_at: "2026-11-23T16:00:00.000000Z".into(),
            instance: Instance {
                name: "host:1".into(),
                buffers: Vec::new(),
                rates: vec![
                    RatePoint {
                        values: 10,
                        requests: 2,
                    },
                    RatePoint {
                        values: 30,
                        requests: 3,
                    },
                ],
                deployments: vec![
                    HealthReport {
                        name: "eu".into(),
                        healthy: true,
                        failures: 0,
                        aside_ms: 0,
                    },
                    HealthReport {
                        name: "us".into(),
                        healthy: false,
                        failures: 3,
                        aside_ms: 1750,
                    },
                ],
            },
            counters: vec![CounterRow {
                name: "<script>alert(1)</script>".into(),
                kind: "autoinc".into(),
                facts: vec![("seq".into(), "95".into())],
                prefixes: vec!["(none)".into()],
                prefixes_declared: true,
                headroom: Some(Headroom {
                    used: 0.95,
                    left: "5 values".into(),
                    runs_out_at_ms: None,
                    left_values: Some(5),
                    pace_per_second: None,
                    ahead_ms: None,
                }),
                problem: None,
                collisions: Vec::new(),
                recent_values: 0,
                attention: vec![Attention::NearEnd],
            }],
            paging: Paging::First {
                total: Some(1234567),
                more: Some(1234566),
                attention: Some(AttentionCounts {
                    near_end: 1,
                    ..AttentionCounts::default()
                }),
                shown_per_reason: 50,
                first_page: "?page=1&per_page=50".into(),
            },
            workers: Vec::new(),
            locks: vec![LockRow {
                name: "nightly".into(),
                holder_fingerprint: "abc".into(),
                label: None,
                shared: 0,
                token: 7,
                count: 1,
                expires_in_ms: Some(2500),
            }],
            free_locks: 0,
            series: vec![
                SeriesSummary {
                    series: "invoices".into(),
                    first: 1,
                    last: 9,
                    missing: 2,
                    reserved: 1,
                    expired: 0,
                },
                SeriesSummary {
                    series: "receipts".into(),
                    first: 1,
                    last: 0,
                    missing: 0,
                    reserved: 0,
                    expired: 0,
                },
            ],
            policy: PolicyView::default(),
            problems: Vec::new(),
        }
    }

    #[test]
    fn a_series_with_holes_is_marked() {
        let page = render(&snapshot()).into_string();
        let table = &page[page.find("<table id=\"series\"").unwrap()..];
        let invoices = &table[table.find("invoices").unwrap()..];
        assert!(
            table[..table.find("invoices").unwrap()].ends_with("<tr class=\"warn\"><td><code>"),
            "{table}"
        );
        assert!(
            invoices.contains("<span class=\"warn-text\">2</span>"),
            "{table}"
        );
        assert!(table.contains("none yet"), "{table}");
    }

    #[test]
    fn each_deployment_shows_its_health_here() {
        let page = render(&snapshot()).into_string();
        assert!(
            page.contains("<code>eu</code></td><td>healthy</td>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<code>us</code></td><td>set aside for 1750 ms more</td><td class=\"num\">3</td>"
            ),
            "{page}"
        );
        let mut one = snapshot();
        one.instance.deployments.clear();
        assert!(!render(&one).into_string().contains("id=\"deployments\""));
    }

    #[test]
    fn names_are_escaped_and_a_counter_near_its_end_is_marked() {
        let page = render(&snapshot()).into_string();
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>"));
        assert!(page.contains(r#"<tr class="warn">"#));
        assert!(page.contains("2.5 s"));
        assert!(page.contains("<polyline"));
        assert!(
            page.contains("1,234,567 counters: 1 near the end."),
            "{page}"
        );
        assert!(
            page.contains(r#"And 1,234,566 more counters: search or <a href="?page=1&amp;per_page=50">page through them</a>"#),
            "{page}"
        );
    }
}
