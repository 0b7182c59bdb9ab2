//! Prometheus metrics of a server, at `/metrics` (OpenMetrics text).
//!
//! Requests and their latency per route and status are counted as they
//! happen; values handed out per counter, and connections, too. What the
//! counters' own machinery knows (segment fetches, worker lease renewals
//! and losses), the policy slots and the policy in service are read when the
//! metrics are scraped.

use std::sync::atomic::Ordering;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::batcher::BatchMeter;
use super::pool::Served;
use super::slots::PolicySlots;
use idmint::policy::Policy;

/// A request's route (its pattern, not its path) and status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteStatus {
    /// The route pattern, e.g. `/v1/counters/{name}/ids`.
    pub route: String,
    /// The HTTP status answered.
    pub status: u16,
}

/// A route pattern.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Route {
    /// The route pattern.
    pub route: String,
}

/// A counter's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CounterLabel {
    /// The counter.
    pub counter: String,
}

/// A gap-free series' name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SeriesLabel {
    /// The series.
    pub series: String,
}

/// The policy in service.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    /// The counters it formats: `any` (the followed policy), or a kind.
    pub serves: String,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The contract it implements.
    pub contract: String,
    /// The SHA-256 of its bytes.
    pub sha256: String,
}

/// Every metric of a server.
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteStatus, Counter>,
    in_flight: Gauge,
    latency: Family<Route, Histogram>,
    values: Family<CounterLabel, Counter>,
    segment_fetches: Family<CounterLabel, Counter>,
    segment_waits: Family<CounterLabel, Counter>,
    lease_renewals: Family<CounterLabel, Counter>,
    lease_losses: Family<CounterLabel, Counter>,
    lease_held: Family<CounterLabel, Gauge>,
    policy: Family<PolicyLabels, Gauge>,
    policy_swaps: Counter,
    policy_refusals: Counter,
    policy_slots_in_use: Gauge,
    batching: BatchMeter,
    connections: Gauge,
    connections_refused: Counter,
    connections_shed: Counter,
    connections_abandoned: Counter,
    write_blocked: Gauge,
    write_timeouts: Counter,
    bodies_reading: Gauge,
    series_missing: Family<SeriesLabel, Gauge>,
    series_reserved: Family<SeriesLabel, Gauge>,
    series_expired: Family<SeriesLabel, Gauge>,
    headroom_used: Family<CounterLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    runs_out_at: Family<CounterLabel, Gauge>,
    ahead: Family<CounterLabel, Gauge<f64, std::sync::atomic::AtomicU64>>,
    /// Requests answered and values handed out since start, for the
    /// monitor page's rates.
    total_requests: std::sync::atomic::AtomicU64,
    total_values: std::sync::atomic::AtomicU64,
    /// Values per counter over the last minute, for the monitor page's
    /// busiest counters.
    activity: crate::monitor::CounterActivity,
}

fn latency_histogram() -> Histogram {
    // 50 us to ~1.6 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("idmint");
        let requests = Family::<RouteStatus, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            requests.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "http_requests_in_flight",
            "HTTP requests being answered now (this scrape included)",
            in_flight.clone(),
        );
        let latency = Family::<Route, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer a request, by route",
            latency.clone(),
        );
        let values = Family::<CounterLabel, Counter>::default();
        registry.register("values", "Values handed out, by counter", values.clone());
        let segment_fetches = Family::<CounterLabel, Counter>::default();
        registry.register(
            "segment_fetches",
            "Segments taken from the database, by counter",
            segment_fetches.clone(),
        );
        let segment_waits = Family::<CounterLabel, Counter>::default();
        registry.register(
            "segment_waits",
            "Requests that found both segment buffers empty and waited for the database",
            segment_waits.clone(),
        );
        let lease_renewals = Family::<CounterLabel, Counter>::default();
        registry.register(
            "lease_renewals",
            "Worker lease renewals that landed, by snowflake counter",
            lease_renewals.clone(),
        );
        let lease_losses = Family::<CounterLabel, Counter>::default();
        registry.register(
            "lease_losses",
            "Worker leases found taken over at renewal, by snowflake counter",
            lease_losses.clone(),
        );
        let lease_held = Family::<CounterLabel, Gauge>::default();
        registry.register(
            "lease_held",
            "1 while the worker lease is proved valid, by snowflake counter",
            lease_held.clone(),
        );
        let policy = Family::<PolicyLabels, Gauge>::default();
        registry.register(
            "policy_info",
            "The policy in service (value 1)",
            policy.clone(),
        );
        let policy_swaps = Counter::default();
        registry.register("policy_swaps", "Policies swapped in", policy_swaps.clone());
        let policy_refusals = Counter::default();
        registry.register(
            "policy_refusals",
            "Policies refused (the current one kept serving)",
            policy_refusals.clone(),
        );
        let policy_slots_in_use = Gauge::default();
        registry.register(
            "policy_slots_in_use",
            "Policy slots held by requests now (of --policy-slots)",
            policy_slots_in_use.clone(),
        );
        let connections = Gauge::default();
        registry.register(
            "connections",
            "Connections open on the API listener",
            connections.clone(),
        );
        let connections_refused = Counter::default();
        registry.register(
            "connections_refused",
            "Connections answered 503 and closed at the connection limit",
            connections_refused.clone(),
        );
        let connections_shed = Counter::default();
        registry.register(
            "connections_shed",
            "Connections closed at the connection limit to let a new one in: each the one \
             blocked longest on a client that does not read its answers",
            connections_shed.clone(),
        );
        let connections_abandoned = Counter::default();
        registry.register(
            "connections_abandoned",
            "Connections cut at the shutdown deadline, with their requests",
            connections_abandoned.clone(),
        );
        let write_blocked = Gauge::default();
        registry.register(
            "connections_write_blocked",
            "Connections whose last write found the client's window full (a client not reading)",
            write_blocked.clone(),
        );
        let write_timeouts = Counter::default();
        registry.register(
            "connections_write_timeouts",
            "Connections closed because an answer could not be written within --write-timeout",
            write_timeouts.clone(),
        );
        let bodies_reading = Gauge::default();
        registry.register(
            "http_bodies_reading",
            "Request bodies being read (before their request takes a slot)",
            bodies_reading.clone(),
        );
        let series_missing = Family::<SeriesLabel, Gauge>::default();
        registry.register(
            "series_missing_numbers",
            "Numbers of a gap-free series from its first to its last with no record (holes; \
             `idmint series audit` names them), as last counted (every 10 s)",
            series_missing.clone(),
        );
        let series_reserved = Family::<SeriesLabel, Gauge>::default();
        registry.register(
            "series_reserved_numbers",
            "Numbers of a gap-free series reserved, not yet confirmed or voided",
            series_reserved.clone(),
        );
        let series_expired = Family::<SeriesLabel, Gauge>::default();
        registry.register(
            "series_expired_reservations",
            "Reservations of a gap-free series past their deadline, not yet voided",
            series_expired.clone(),
        );
        let headroom_used =
            Family::<CounterLabel, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "counter_headroom_used_ratio",
            "The share of what a counter can hand out that is used, 0 to 1, as last read \
             (every 10 s): of its values, of its layout's time, or for a cyclic counter, of \
             its pace at the busiest 10 s this instance saw (striped counters have none)",
            headroom_used.clone(),
        );
        let runs_out_at = Family::<CounterLabel, Gauge>::default();
        registry.register(
            "counter_runs_out_timestamp_seconds",
            "When a counter runs out, in seconds since 1970: a snowflake layout's end, or \
             for a counter that runs out of values, at the rate they went between the last \
             two reads (none while nothing is taken)",
            runs_out_at.clone(),
        );
        let ahead = Family::<CounterLabel, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "counter_timestamps_ahead_seconds",
            "How far a cyclic counter's last timestamp is ahead of this instance's clock, in \
             seconds, as last read: it is taken faster than its pace, or a client's clock is \
             ahead",
            ahead.clone(),
        );
        let batching = BatchMeter::default();
        registry.register(
            "policy_calls",
            "Policy calls made to format the IDs of requests",
            batching.calls.clone(),
        );
        registry.register(
            "policy_call_requests",
            "Requests for IDs formatted by those calls: more than calls when requests that arrived together shared one",
            batching.requests.clone(),
        );
        Self {
            registry,
            requests,
            in_flight,
            latency,
            values,
            segment_fetches,
            segment_waits,
            lease_renewals,
            lease_losses,
            lease_held,
            policy,
            policy_swaps,
            policy_refusals,
            policy_slots_in_use,
            batching,
            connections,
            connections_refused,
            connections_shed,
            connections_abandoned,
            write_blocked,
            write_timeouts,
            bodies_reading,
            series_missing,
            series_reserved,
            series_expired,
            headroom_used,
            runs_out_at,
            ahead,
            total_requests: Default::default(),
            total_values: Default::default(),
            activity: Default::default(),
        }
    }

    /// A request body started being read: counted until the guard drops.
    pub fn body_started(&self) -> InFlight {
        self.bodies_reading.inc();
        InFlight(self.bodies_reading.clone())
    }

    /// A connection was accepted: counted as open until the guard drops.
    pub fn connection_opened(&self) -> InFlight {
        self.connections.inc();
        InFlight(self.connections.clone())
    }

    /// Counts a connection refused at the connection limit.
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }

    /// Counts a connection shed at the connection limit.
    pub fn connection_shed(&self) {
        self.connections_shed.inc();
    }

    /// Counts connections cut at the shutdown deadline.
    pub fn connections_abandoned(&self, count: u64) {
        self.connections_abandoned.inc_by(count);
    }

    /// The gauge of connections blocked on a write.
    pub fn write_blocked(&self) -> Gauge {
        self.write_blocked.clone()
    }

    /// The counter of connections closed at the write timeout.
    pub fn write_timed_out(&self) -> Counter {
        self.write_timeouts.clone()
    }

    /// A request started: it counts as in flight until the guard is
    /// dropped, however the request ends (answered, or abandoned by a
    /// client that hung up).
    pub fn request_started(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Counts one answered request.
    pub fn request(&self, route: &str, status: u16, seconds: f64) {
        self.total_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.requests
            .get_or_create(&RouteStatus {
                route: route.to_string(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&Route {
                route: route.to_string(),
            })
            .observe(seconds);
    }

    /// What the batchers count their calls with.
    pub fn batch_meter(&self) -> BatchMeter {
        self.batching.clone()
    }

    /// Counts `count` values handed out by `counter`.
    pub fn values(&self, counter: &str, count: usize) {
        self.total_values
            .fetch_add(count as u64, std::sync::atomic::Ordering::Relaxed);
        self.values
            .get_or_create(&CounterLabel {
                counter: counter.to_string(),
            })
            .inc_by(count as u64);
        self.activity.record(counter, count as u64);
    }

    /// Values handed out per counter over the last minute.
    pub fn activity(&self) -> &crate::monitor::CounterActivity {
        &self.activity
    }

    /// Requests answered and values handed out since start.
    pub fn totals(&self) -> crate::monitor::RatePoint {
        use std::sync::atomic::Ordering::Relaxed;
        crate::monitor::RatePoint {
            values: self.total_values.load(Relaxed),
            requests: self.total_requests.load(Relaxed),
        }
    }

    /// Counts a policy swapped in.
    pub fn policy_swapped(&self) {
        self.policy_swaps.inc();
    }

    /// Counts a policy refused.
    pub fn policy_refused(&self) {
        self.policy_refusals.inc();
    }

    /// The metrics as OpenMetrics text, with the counters' own figures and
    /// the policy in service read now.
    /// `policies`: each policy in service and the counters it formats
    /// (`any`, or a kind).
    /// The gap-free series as last counted.
    pub fn series(&self, summaries: &[idmint::series::SeriesSummary]) {
        for summary in summaries {
            let label = SeriesLabel {
                series: summary.series.clone(),
            };
            let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
            self.series_missing
                .get_or_create(&label)
                .set(gauge(summary.missing));
            self.series_reserved
                .get_or_create(&label)
                .set(gauge(summary.reserved));
            self.series_expired
                .get_or_create(&label)
                .set(gauge(summary.expired));
        }
    }

    /// The counters' headroom as last read, and when each runs out
    /// (`runs_out`, in order): its layout's end, or projected at its rate.
    pub fn headroom(
        &self,
        counters: &[idmint::sequence::CounterHeadroom],
        runs_out: &[Option<u64>],
    ) {
        for (counter, runs_out) in counters.iter().zip(runs_out) {
            let label = CounterLabel {
                counter: counter.counter.clone(),
            };
            self.headroom_used
                .get_or_create(&label)
                .set(counter.headroom.used);
            if let Some(ahead_ms) = counter.headroom.ahead_ms {
                self.ahead
                    .get_or_create(&label)
                    .set(ahead_ms as f64 / 1000.0);
            }
            match counter.headroom.runs_out_at_ms.or(*runs_out) {
                Some(end_ms) => {
                    self.runs_out_at
                        .get_or_create(&label)
                        .set(i64::try_from(end_ms / 1000).unwrap_or(i64::MAX));
                }
                None => {
                    self.runs_out_at.remove(&label);
                }
            }
        }
    }

    pub fn render(
        &self,
        opened: &[std::sync::Arc<Served>],
        policies: &[(String, Policy)],
        slots: &PolicySlots,
    ) -> String {
        self.policy_slots_in_use.set(slots.in_use() as i64);
        for served in opened {
            let label = CounterLabel {
                counter: served.state.name.clone(),
            };
            let held = served.sequence.held();
            if let Some(stats) = held.buffers {
                set(&self.segment_fetches, &label, stats.fetches);
                set(&self.segment_waits, &label, stats.waits);
            }
            if let Some(stats) = held.lease {
                set(&self.lease_renewals, &label, stats.renewals);
                set(&self.lease_losses, &label, stats.losses);
                self.lease_held
                    .get_or_create(&label)
                    .set(i64::from(stats.holding));
            }
        }
        self.policy.clear();
        for (serves, policy) in policies {
            self.policy
                .get_or_create(&PolicyLabels {
                    serves: serves.clone(),
                    name: policy.info().name.clone(),
                    version: policy.info().version.clone(),
                    contract: policy.contract().to_string(),
                    sha256: policy.sha256().to_string(),
                })
                .set(1);
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// Something counted while it lasts: a request in flight
/// ([`Metrics::request_started`]), a body being read, a connection open.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Sets a counter to a figure kept elsewhere (which only grows).
fn set(family: &Family<CounterLabel, Counter>, label: &CounterLabel, value: u64) {
    family
        .get_or_create(label)
        .inner()
        .store(value, Ordering::Relaxed);
}
