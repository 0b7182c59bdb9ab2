//! No two counters' IDs coincide, whatever their prefixes (empty, nested,
//! ending in digits or in a period's label), kinds and built-in policy:
//! when the host accepts both counters' prefixes for a policy (the checks
//! `Minter::prepare` makes), no ID one of them can issue is an ID the other
//! can issue.

use proptest::prelude::*;

use super::*;
use crate::sequence::{CounterKind, CounterName, CounterSpec, CounterState, Repeats};

/// 2026-11-22T03:14:57.123Z.
const NOW_MS: u64 = 1_795_317_297_123;

/// The built-in policies, compiled once for all tests.
fn builtins() -> &'static [Policy] {
    static POLICIES: OnceLock<Vec<Policy>> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let runtime =
            PolicyRuntime::with_limits(PolicyLimits::default().timeout(Duration::from_secs(10)))
                .expect("a runtime");
        BUILTIN_POLICIES
            .iter()
            .map(|(name, _)| runtime.load_builtin(name).expect("a built-in loads"))
            .collect()
    })
}

/// A counter of `kind` owning `prefix`, as `counter create` makes it.
fn counter(kind: CounterKind, name: &str, prefix: &str) -> CounterState {
    let name = CounterName::new(name).unwrap();
    let document = CounterSpec::of(kind)
        .prefixes(vec![prefix.to_string()])
        .document(&name, NOW_MS)
        .unwrap();
    CounterState::from_document(&name, &document).unwrap()
}

/// Whether the host lets `policy` format `counter`'s IDs with its prefix.
fn accepted(policy: &Policy, counter: &CounterState) -> bool {
    let prefix = counter.default_prefix();
    check_prefix(policy, prefix, KNOWN_MICROS).is_ok()
        && writes(policy, prefix).is_ok_and(|writes| check_fit(policy, counter, writes).is_ok())
        && check_prefix_reads_back(policy, counter, prefix).is_ok()
}

/// IDs `counter` can issue under `policy`: every shape the fit check
/// probes, and the values given at times given.
fn ids(policy: &Policy, counter: &CounterState, values: &[u64], micros: &[u64]) -> Vec<String> {
    let shape = counter.shape();
    let mut stamps = crate::policy::fit::probe_stamps(counter);
    for (value, at) in values.iter().zip(micros) {
        let value = value % shape.largest_value.saturating_add(1).max(1);
        stamps.push(match counter.snowflake_layout() {
            Some(layout) => match Stamp::snowflake(value, layout) {
                Some(stamp) => stamp,
                None => continue,
            },
            None => Stamp::new(*at, value),
        });
    }
    if shape.repeats == Repeats::EachPeriod {
        let periods = crate::policy::fit::probe_stamps(counter)
            .into_iter()
            .filter_map(|stamp| stamp.period)
            .collect::<Vec<_>>();
        stamps = stamps
            .into_iter()
            .flat_map(|stamp| periods.iter().map(move |period| stamp.in_period(*period)))
            .collect();
    }
    let prefix = counter.default_prefix();
    policy.format_batch(prefix, &stamps).unwrap_or_else(|_| {
        stamps
            .iter()
            .filter_map(|stamp| policy.format(&stamp.with_prefix(prefix)).ok())
            .collect()
    })
}

/// The first of `ids` that `counter` can issue under `policy`: the policy
/// reads it with the counter's prefix into parts the counter can hand out,
/// and formats those parts back into it. Two calls into the policy.
fn first_issuable(policy: &Policy, counter: &CounterState, ids: &[String]) -> Option<String> {
    let shape = counter.shape();
    let layout = counter.snowflake_layout();
    let prefix = counter.default_prefix();
    let read = policy.validate_many(ids, Some(prefix), layout).ok()?;
    let candidates: Vec<(&String, Stamp)> = ids
        .iter()
        .zip(read)
        .filter_map(|(id, parts)| Some((id, parts.ok()?)))
        .filter(|(_, parts)| {
            parts.sequence <= shape.largest_value
                && parts.period.is_some() == (shape.repeats == Repeats::EachPeriod)
                && (layout.is_none() || parts.snowflake.is_some())
        })
        .map(|(id, parts)| (id, parts.stamp()))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let stamps: Vec<Stamp> = candidates.iter().map(|(_, stamp)| *stamp).collect();
    let again = policy.format_batch(prefix, &stamps).ok()?;
    candidates
        .into_iter()
        .zip(again)
        .find(|((id, _), again)| *id == again)
        .map(|((id, _), _)| id.clone())
}

/// The first ID both counters can issue under `policy`, if the host accepts
/// both; `None` if it refuses one or they share none.
fn shared_id(
    policy: &Policy,
    a: &CounterState,
    b: &CounterState,
    values: &[u64],
    micros: &[u64],
) -> Option<String> {
    if a.default_prefix() == b.default_prefix() || !accepted(policy, a) || !accepted(policy, b) {
        return None;
    }
    first_issuable(policy, b, &ids(policy, a, values, micros))
        .or_else(|| first_issuable(policy, a, &ids(policy, b, values, micros)))
}

/// The pairs the issue found: a periodic counter owning `X-` (or the empty
/// prefix) and an autoinc counter owning `X-2026-` (or `2026-`), whose IDs
/// under the decimal policy were both `X-2026-000000001`: the host refuses
/// the longer prefix now, and no built-in policy lets such a pair share an
/// ID, whichever kinds they are.
#[test]
fn nested_prefixes_never_make_one_id() {
    let decimal = builtins()
        .iter()
        .find(|p| p.info().name == "decimal")
        .unwrap();

    assert!(!accepted(
        decimal,
        &counter(CounterKind::Autoinc, "b", "X-2026-")
    ));
    assert!(accepted(
        decimal,
        &counter(CounterKind::Periodic, "a", "X-")
    ));
    for (short, long) in [
        ("X-", "X-2026-"),
        ("", "2026-"),
        ("X-", "X-2026-11-"),
        ("INV", "INV7"),
    ] {
        for policy in builtins() {
            for a in CounterKind::ALL {
                for b in CounterKind::ALL {
                    let a = counter(*a, "a", short);
                    let b = counter(*b, "b", long);
                    assert_eq!(
                        shared_id(policy, &a, &b, &[1, 42], &[KNOWN_MICROS, KNOWN_MICROS]),
                        None,
                        "{} {:?} and {} {:?} under {}",
                        a.kind(),
                        short,
                        b.kind(),
                        long,
                        policy.info().name
                    );
                }
            }
        }
    }
}

/// A prefix: empty, plain, ending in digits, or ending in a period's label
/// and its dash.
fn prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[A-Za-z][A-Za-z0-9._-]{0,5}",
        "[A-Z]{1,3}[0-9]{1,4}",
        "([A-Z]{1,2}[-.])?20[0-9]{2}-",
        "([A-Z]{1,2}-)?20[0-9]{2}-(0[1-9]|1[0-2])-",
    ]
}

fn kind() -> impl Strategy<Value = CounterKind> {
    proptest::sample::select(CounterKind::ALL)
}

/// Where a nested prefix may end inside an ID's body: after each character
/// that is not a letter or digit (where a policy's fields meet), or, in a
/// body that has none, anywhere.
fn cuts(body: &str) -> Vec<usize> {
    let after_separators: Vec<usize> = body
        .char_indices()
        .filter(|(_, c)| !c.is_ascii_alphanumeric())
        .map(|(at, c)| at + c.len_utf8())
        .collect();
    if after_separators.is_empty() {
        (1..body.len()).collect()
    } else {
        after_separators
    }
}

proptest! {
    // Shrinking stops early: the pair found first already names the
    // prefixes, kinds and policy.
    #![proptest_config(ProptestConfig {
        cases: 256,
        max_shrink_iters: 32,
        ..ProptestConfig::default()
    })]

    /// Two counters with independent prefixes, or the second's nested in
    /// the first's by a piece of one of the first's own IDs (the way a
    /// collision is made: cut where the policy's fields meet), share no ID,
    /// whatever the second's kind.
    #[test]
    fn no_two_counters_issue_one_id(
        policy in 0..BUILTIN_POLICIES.len(),
        a_kind in kind(),
        (short, other) in (prefix(), prefix()),
        nest in proptest::option::weighted(0.75, (any::<usize>(), any::<usize>())),
        values in proptest::collection::vec(any::<u64>(), 4),
        micros in proptest::collection::vec(0..MAX_MICROS, 4),
    ) {
        let policy = &builtins()[policy];
        let a = counter(a_kind, "a", &short);
        let long = match nest {
            Some((pick, cut)) if accepted(policy, &a) => {
                let ids = ids(policy, &a, &values, &micros);
                let id = &ids[pick % ids.len()];
                let cuts = cuts(&id[short.len()..]);
                match cuts.get(cut % cuts.len().max(1)) {
                    Some(at) => id[..short.len() + at].to_string(),
                    None => other,
                }
            }
            _ => other,
        };
        prop_assume!(long.len() <= crate::sequence::MAX_PREFIX_BYTES);
        for b_kind in CounterKind::ALL {
            let b = counter(*b_kind, "b", &long);
            let shared = shared_id(policy, &a, &b, &values, &micros);
            prop_assert!(
                shared.is_none(),
                "{} {:?} and {} {:?} both issue {:?} under {}",
                a_kind, short, b_kind, long, shared, policy.info().name
            );
        }
    }
}
