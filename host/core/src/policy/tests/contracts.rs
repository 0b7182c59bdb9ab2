//! Contract versions: a policy is bound to the newest contract it
//! implements, and policies of older contracts run beside current ones,
//! with what their contract cannot carry dropped.

use super::*;

#[test]
fn policies_of_each_contract_load_and_say_which() {
    let runtime = PolicyRuntime::new().unwrap();
    assert_eq!(runtime.load_default().unwrap().contract(), "0.4.0");
    assert_eq!(runtime.load_builtin("base32").unwrap().contract(), "0.4.0");
    assert_eq!(runtime.load_builtin("decimal").unwrap().contract(), "0.4.0");
    // The standard IDs need the counter's tag and salt: 0.5.0.
    for standard in ["uuidv7", "ulid"] {
        let policy = runtime.load_builtin(standard).unwrap();
        assert_eq!(
            (policy.contract(), policy.receives_counter_tag()),
            ("0.5.0", true)
        );
    }
    assert!(!runtime
        .load_builtin("base32")
        .unwrap()
        .receives_counter_tag());
    assert_eq!(
        runtime
            .load_bytes(&fixture_wasm("decimal-0.3"), "decimal-0.3")
            .unwrap()
            .contract(),
        "0.3.0"
    );
    // The check-digit policy is built against 0.2.0 on purpose, and so is
    // the hand-written component.
    let check_digit = runtime
        .load_bytes(&check_digit_wasm(), "check-digit")
        .unwrap();
    assert_eq!(check_digit.contract(), "0.2.0");
    let hand_written = runtime
        .load_bytes(contract_component("unreachable", 1).as_bytes(), "fixture")
        .unwrap();
    assert_eq!(hand_written.contract(), "0.2.0");
    // A 0.2.0 policy formats and reads back as it always did; snowflake
    // fields, which it cannot see, are dropped on the way in and absent on
    // the way out.
    let report = crate::policy::activation::check(
        &check_digit,
        &ActivationOptions::default().prefix("ORD-"),
    )
    .unwrap();
    assert_eq!(report.contract, "0.2.0");
    let plain = parts("ORD-", KNOWN_MICROS, 7);
    let with_fields = IdParts {
        snowflake: Some(crate::parts::SnowflakeParts {
            time: 1,
            worker: 2,
            seq: 3,
            ..Default::default()
        }),
        ..plain.clone()
    };
    let id = check_digit.format(&with_fields).unwrap();
    assert_eq!(id, check_digit.format(&plain).unwrap());
    let layout = crate::parts::Layout::default();
    assert_eq!(
        check_digit
            .validate(&id, Some("ORD-"), Some(&layout))
            .unwrap(),
        Ok(plain)
    );
}

#[test]
fn a_component_of_no_contract_is_refused_naming_each() {
    let runtime = PolicyRuntime::new().unwrap();
    let reason = match runtime.load_bytes(b"(component)", "fixture") {
        Err(PolicyError::WrongInterface { reason, .. }) => reason,
        other => panic!("expected WrongInterface, got {other:?}"),
    };
    assert!(
        reason.starts_with("it implements none of the contracts this host runs: 0.5.0 (")
            && reason.contains("; 0.4.0 (")
            && reason.contains("; 0.3.0 (")
            && reason.contains("; 0.2.0 ("),
        "{reason}"
    );
}

#[test]
fn the_base32_policy_reads_snowflake_ids_back_into_their_fields() {
    use crate::parts::{Layout, SnowflakeParts, TimeUnit};
    let runtime = PolicyRuntime::new().unwrap();
    let base32 = runtime.load_builtin("base32").unwrap();
    for layout in [
        Layout::default(),
        Layout {
            time_bits: 31,
            worker_bits: 20,
            seq_bits: 12,
            unit: TimeUnit::S,
            epoch_ms: 1_600_000_000_000,
        },
    ] {
        let fields = SnowflakeParts {
            time: 123_456,
            worker: 5,
            seq: 4095,
            ..SnowflakeParts::default()
        };
        let stamp = Stamp::snowflake(layout.compose(fields), &layout).unwrap();
        assert_eq!(stamp.snowflake, Some(fields));
        assert_eq!(
            stamp.timestamp_micros,
            (layout.epoch_ms + 123_456 * layout.unit.millis()) * 1000
        );
        let parts = stamp.with_prefix("EVT-");
        let id = base32.format(&parts).unwrap();
        // With the layout: the very parts it was made from ...
        assert_eq!(
            base32.validate(&id, Some("EVT-"), Some(&layout)).unwrap(),
            Ok(parts.clone())
        );
        // ... without it, the value alone, as a policy without time.
        assert_eq!(
            base32.validate(&id, Some("EVT-"), None).unwrap(),
            Ok(IdParts {
                timestamp_micros: 0,
                snowflake: None,
                ..parts
            })
        );
    }
    // A value with the sign bit set is no snowflake ID.
    let id = base32.format(&parts("EVT-", 0, 1 << 63)).unwrap();
    let layout = Layout::default();
    match base32.validate(&id, Some("EVT-"), Some(&layout)).unwrap() {
        Err(InvalidId::Malformed(reason)) => assert!(reason.contains("sign bit"), "{reason}"),
        other => panic!("expected malformed, got {other:?}"),
    }
    // The activation check runs the snowflake round trip for a snowflake
    // counter and reports that the policy passed it.
    let report = crate::policy::activation::check(
        &base32,
        &ActivationOptions::default()
            .prefix("EVT-")
            .counter(snowflake_counter(layout)),
    )
    .unwrap();
    assert_eq!(report.reads_snowflake, Some(true));
}

#[test]
fn policies_of_three_contracts_run_side_by_side_and_the_older_ones_drop_the_period() {
    use crate::parts::PeriodUnit;
    let runtime = PolicyRuntime::new().unwrap();
    let current = runtime.load_builtin("decimal").unwrap();
    let previous = runtime
        .load_bytes(&fixture_wasm("decimal-0.3"), "decimal-0.3")
        .unwrap();
    let oldest = runtime
        .load_bytes(&check_digit_wasm(), "check-digit")
        .unwrap();
    assert_eq!(
        [current.contract(), previous.contract(), oldest.contract()],
        ["0.4.0", "0.3.0", "0.2.0"]
    );
    let year = period(PeriodUnit::Year, 2026, 1, 1);
    let in_2026 = IdParts {
        period: Some(year),
        ..parts("INV-", KNOWN_MICROS, 42)
    };

    // 0.4.0: the period is written and read back.
    assert_eq!(current.format(&in_2026).unwrap(), "INV-2026-000000042");
    let read = current
        .validate("INV-2026-000000042", Some("INV-"), None)
        .unwrap()
        .unwrap();
    assert_eq!(read.period, Some(year));

    // 0.3.0, the same policy: the period never reaches it, alone or in a
    // batch, and is never read back, even from an ID that has one.
    assert_eq!(previous.format(&in_2026).unwrap(), "INV-000000042");
    let stamps = [Stamp::new(KNOWN_MICROS, 1).in_period(year)];
    assert_eq!(
        previous.format_batch("INV-", &stamps).unwrap(),
        ["INV-000000001"]
    );
    for id in ["INV-000000042", "INV-2026-000000042"] {
        let read = previous.validate(id, Some("INV-"), None).unwrap().unwrap();
        assert_eq!((read.sequence, read.period), (42, None), "{id}");
    }

    // 0.2.0: neither the period nor snowflake fields reach it.
    let plain = parts("ORD-", KNOWN_MICROS, 7);
    let id = oldest.format(&plain).unwrap();
    let everything = IdParts {
        period: Some(year),
        snowflake: Some(crate::parts::SnowflakeParts {
            time: 1,
            worker: 2,
            seq: 3,
            ..Default::default()
        }),
        ..plain.clone()
    };
    assert_eq!(oldest.format(&everything).unwrap(), id);
    assert_eq!(oldest.validate(&id, Some("ORD-"), None).unwrap(), Ok(plain));

    // So only the current one writes periods, which is what the fit check asks.
    assert!(writes_period(&current, "INV-").unwrap());
    assert!(!writes_period(&previous, "INV-").unwrap());
    assert!(!writes_period(&oldest, "ORD-").unwrap());
}

#[test]
fn a_period_read_back_that_does_not_exist_is_bad_output() {
    let policy = PolicyRuntime::new()
        .unwrap()
        .load_bytes(&fixture_wasm("lossy-period"), "lossy-period")
        .unwrap();
    // Under the prefix ODD-, the fixture reads a month period back as a
    // year period starting in that month.
    let id = "ODD-2026-11-000000001";
    match policy.validate(id, Some("ODD-"), None) {
        Err(PolicyError::BadOutput { origin, reason }) => {
            assert_eq!(origin, "lossy-period");
            assert_eq!(
                reason,
                "validate read \"ODD-2026-11-000000001\" back with an impossible period: \
                 a year period starts on its first day"
            );
        }
        other => panic!("expected bad output, got {other:?}"),
    }
    // A year period it reads back exactly.
    let read = policy
        .validate("ODD-2026-000000001", Some("ODD-"), None)
        .unwrap()
        .unwrap();
    assert_eq!(
        read.period,
        Some(period(crate::parts::PeriodUnit::Year, 2026, 1, 1))
    );
}
