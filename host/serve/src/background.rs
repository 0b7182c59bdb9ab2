//! The tasks a server runs beside its listeners, each holding the state
//! weakly so that it ends with the server: policy events logged and
//! counted, the monitor page's rates sampled once a second, the expired
//! reservations of gap-free series voided once a second, every counter's
//! headroom read every 10 s for the metrics, and the API
//! tokens read again from the database when they come from it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use idmint::policy::watch::SwapEvent;
use idmint::policy::PolicyEvents;

use super::metrics::Metrics;
use super::state::AppState;

/// Starts the background tasks of `state`: the reporter of `events`, the
/// rate sampler, the sweep of expired reservations, and, given
/// `tokens_reload`, the tokens' reloader.
pub(crate) fn spawn(
    state: &Arc<AppState>,
    mut events: PolicyEvents,
    tokens_reload: Option<Duration>,
) -> Vec<JoinHandle<()>> {
    let reporter = {
        let state = Arc::downgrade(state);
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                let Some(state) = state.upgrade() else {
                    return;
                };
                report(&state.metrics, &event);
            }
        })
    };
    // The monitor page's rates: the running totals, once a second.
    let sampler = {
        let state = Arc::downgrade(state);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(state) = state.upgrade() else {
                    return;
                };
                let totals = state.metrics.totals();
                if let Ok(mut rates) = state.rates.lock() {
                    rates.sample(totals);
                };
            }
        })
    };
    // The reservations of gap-free series past their deadline, voided.
    let sweeper = tokio::spawn(super::series::sweep(
        Arc::downgrade(state),
        Duration::from_secs(1),
    ));
    // What is left of every counter, for the metrics.
    let headroom = tokio::spawn(read_headroom(
        Arc::downgrade(state),
        Duration::from_secs(10),
    ));
    let mut tasks = vec![reporter, sampler, sweeper, headroom];
    if let Some(every) = tokens_reload {
        tasks.push(tokio::spawn(AppState::reload_tokens(
            Arc::downgrade(state),
            every,
        )));
    }
    tasks
}

/// Reads every counter's headroom into the metrics every `every`, while the
/// server lives, with when each runs out: a counter whose IDs carry the
/// time at its layout's end, one that runs out of values at the rate its
/// values went between the last two reads (whoever took them). A cyclic
/// counter's pace is judged by the busiest 10 s of the values this instance
/// handed out from it (the others it cannot see). A failed read
/// is logged at debug: the metrics keep the last figures, and readiness
/// reports an unreachable database.
async fn read_headroom(state: std::sync::Weak<AppState>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Per counter, when its values left were last read, and how many.
    let mut last: HashMap<String, (u64, u64)> = HashMap::new();
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else {
            return;
        };
        let now_ms = idmint::Clock::now_micros(&idmint::SystemClock) / 1000;
        let counters = match idmint::sequence::headrooms(&state.database, now_ms).await {
            Ok(counters) => counters
                .into_iter()
                .map(|mut counter| {
                    let peak = state.metrics.activity().peak_per_second(&counter.counter);
                    counter.headroom = counter.headroom.at_rate(peak);
                    counter
                })
                .collect::<Vec<_>>(),
            Err(error) => {
                tracing::debug!("headroom: {error}");
                continue;
            }
        };
        let runs_out: Vec<Option<u64>> = counters
            .iter()
            .map(|counter| {
                let headroom = &counter.headroom;
                let left = headroom.left_values?;
                let rate = last
                    .insert(counter.counter.clone(), (now_ms, left))
                    .and_then(|(then_ms, then_left)| {
                        let seconds = now_ms.saturating_sub(then_ms) as f64 / 1000.0;
                        (seconds > 0.0).then(|| then_left.saturating_sub(left) as f64 / seconds)
                    })?;
                headroom.runs_out_at_rate(now_ms, rate)
            })
            .collect();
        state.metrics.headroom(&counters, &runs_out);
    }
}

/// Logs a policy event, in the words the library gives it, and counts it.
fn report(metrics: &Metrics, event: &SwapEvent) {
    match event {
        SwapEvent::Swapped { .. } => metrics.policy_swapped(),
        SwapEvent::Refused { .. } => metrics.policy_refused(),
        _ => {}
    }
    if event.is_warning() {
        tracing::warn!(event = event.kind(), "{event}");
    } else {
        tracing::info!(event = event.kind(), "{event}");
    }
}
