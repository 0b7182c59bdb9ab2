//! The activation check: sample parts formatted and read back, capacity.

use super::*;

#[test]
fn the_activation_check_passes_both_shipped_policies() {
    let runtime = PolicyRuntime::new().unwrap();
    let options = ActivationOptions::default()
        .prefix("ORD-")
        .counter(counter(99))
        .now_micros(KNOWN_MICROS);
    let report = crate::policy::activation::check(&default_policy(), &options).unwrap();
    assert_eq!(report.samples, 14 * 3);
    assert_eq!(report.counters, ["orders"]);

    let check_digit = runtime
        .load_bytes(&check_digit_wasm(), "check-digit")
        .unwrap();
    assert_eq!(check_digit.info().sequence_capacity, 1000);
    let options = ActivationOptions::default()
        .prefix("ORD-")
        .counter(counter(999));
    crate::policy::activation::check(&check_digit, &options).unwrap();
    let id = check_digit.format(&parts("ORD-", KNOWN_MICROS, 7)).unwrap();
    assert!(id.starts_with("ORD-20261122T031457.123456Z-007-"), "{id}");
}

#[test]
fn the_activation_check_refuses_a_counter_too_large() {
    let options = ActivationOptions::default().counter(counter(999));
    let error = crate::policy::activation::check(&default_policy(), &options).unwrap_err();
    assert!(error.is_activation(), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("holds 100 sequence values") && message.contains("values up to 999"),
        "{message}"
    );
}

#[test]
fn the_activation_check_catches_output_its_own_validator_rejects() {
    let runtime = PolicyRuntime::new().unwrap();
    let policy = runtime
        .load_bytes(&fixture("bad-validator.wat"), "bad-validator")
        .unwrap();
    let error =
        crate::policy::activation::check(&policy, &ActivationOptions::default()).unwrap_err();
    match &error {
        PolicyError::Activation { origin, reason } => {
            assert_eq!(origin, "bad-validator");
            assert!(
                reason.contains("own validator rejects \"ID\"") && reason.contains("not an ID"),
                "{reason}"
            );
        }
        other => panic!("expected an activation failure, got {other:?}"),
    }
}

#[test]
fn the_activation_check_samples_periods_of_every_unit_for_a_periodic_counter() {
    let decimal = PolicyRuntime::new()
        .unwrap()
        .load_builtin("decimal")
        .unwrap();
    let plain =
        crate::policy::activation::check(&decimal, &ActivationOptions::default().prefix("INV-"))
            .unwrap();
    let periodic = crate::policy::activation::check(
        &decimal,
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(periodic_counter()),
    )
    .unwrap();
    // 17 periods (years, months and days, at the calendar's edges), with
    // values 1 and the last the policy holds.
    assert_eq!(periodic.samples, plain.samples + 17 * 2);
    assert_eq!(periodic.counters, ["inv"]);
}

#[test]
fn the_activation_check_refuses_a_policy_whose_periods_do_not_round_trip() {
    let runtime = PolicyRuntime::new().unwrap();
    let lossy = runtime
        .load_bytes(&fixture_wasm("lossy-period"), "lossy-period")
        .unwrap();
    // It writes and reads year periods exactly, so the fit check's probe
    // (a year) takes it for a policy that writes periods ...
    assert!(writes_period(&lossy, "INV-").unwrap());
    // ... and without a periodic counter it passes.
    crate::policy::activation::check(&lossy, &ActivationOptions::default().prefix("INV-")).unwrap();
    // With one, the month and day samples catch it.
    let error = crate::policy::activation::check(
        &lossy,
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(periodic_counter()),
    )
    .unwrap_err();
    match &error {
        PolicyError::Activation { origin, reason } => {
            assert_eq!(origin, "lossy-period");
            assert!(
                reason.contains("\"INV-2026-01-000000001\", formatted from")
                    && reason.contains("month period 2026-01, reads back as")
                    && reason.ends_with("year period 2026"),
                "{reason}"
            );
        }
        other => panic!("expected an activation failure, got {other:?}"),
    }
}
