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
        reason.starts_with("it implements none of the contracts this host runs: 0.4.0 (")
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
