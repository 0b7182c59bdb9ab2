//! Whether a policy can serve a counter: capacity, time, period.

use super::*;

#[test]
fn the_decimal_policy_passes_without_time_and_is_refused_for_a_cyclic_counter() {
    let runtime = PolicyRuntime::new().unwrap();
    let decimal = runtime.load_builtin("decimal").unwrap();
    assert_eq!(decimal.info().name, "decimal");
    assert_eq!(
        decimal.format(&parts("INV-", KNOWN_MICROS, 42)).unwrap(),
        "INV-000000042"
    );
    let autoinc = crate::sequence::CounterState {
        name: "inv".to_string(),
        kind: crate::sequence::KindState::Autoinc(crate::sequence::AutoincState { seq: 0 }),
        prefix: None,
    };
    let report = crate::policy::activation::check(
        &decimal,
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(autoinc.clone()),
    )
    .unwrap();
    assert!(!report.writes_time);
    assert!(!writes_time(&decimal, "INV-").unwrap());
    assert!(writes_time(&default_policy(), "INV-").unwrap());

    let error = crate::policy::activation::check(
        &decimal,
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(counter(99)),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("does not write the time")
            && error.to_string().contains("'orders' is cyclic"),
        "{error}"
    );
    // And the default policy is too small for an auto-increment counter.
    let error = check_fit(
        &default_policy(),
        &autoinc,
        Writes {
            time: true,
            period: false,
        },
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("hands out values up to 9007199254740991"),
        "{error}"
    );
    assert!(matches!(
        runtime.load_builtin("nope"),
        Err(PolicyError::UnknownBuiltin { .. })
    ));
}
