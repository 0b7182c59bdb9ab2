//! Whether a policy can serve a counter: capacity, time, period.

use super::*;

/// An auto-increment counter, "inv", owning the empty prefix.
fn autoinc_counter() -> crate::sequence::CounterState {
    crate::sequence::CounterState {
        name: "inv".to_string(),
        kind: crate::sequence::KindState::Autoinc(crate::sequence::AutoincState { seq: 0 }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
        striped: None,
        incarnation: None,
    }
}

#[test]
fn the_decimal_policy_passes_without_time_and_is_refused_for_a_cyclic_counter() {
    let runtime = PolicyRuntime::new().unwrap();
    let decimal = runtime.load_builtin("decimal").unwrap();
    assert_eq!(decimal.info().name, "decimal");
    assert_eq!(
        decimal.format(&parts("INV-", KNOWN_MICROS, 42)).unwrap(),
        "INV-000000042"
    );
    let autoinc = autoinc_counter();
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
    // The advice names the kinds whose values never repeat, from the registry.
    let message = error.to_string();
    let advice = &message[message.find("; use ").unwrap()..message.find(" counter with").unwrap()];
    for (kind, named) in [
        ("autoinc", true),
        ("segment", true),
        ("cyclic", false),
        ("periodic", false),
    ] {
        assert_eq!(
            advice.contains(&format!(" {kind}")),
            named,
            "{kind}: {message}"
        );
    }
    // And the default policy is too small for an auto-increment counter.
    let error = check_fit(
        &default_policy(),
        &autoinc,
        Writes {
            time: true,
            period: false,
            snowflake_only: false,
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

#[test]
fn a_policy_that_does_not_write_the_period_is_refused_for_a_periodic_counter() {
    let runtime = PolicyRuntime::new().unwrap();
    let counter = periodic_counter();
    let fit = |policy: &Policy| {
        let writes = writes(policy, "INV-").unwrap();
        check_fit(policy, &counter, writes)
    };
    fit(&runtime.load_builtin("decimal").unwrap()).unwrap();
    // Policies that hold every value but write no period: the built-in
    // base32 (contract 0.4.0, it ignores periods) and the decimal policy on
    // contract 0.3.0, which never sees them.
    for policy in [
        runtime.load_builtin("base32").unwrap(),
        runtime
            .load_bytes(&fixture_wasm("decimal-0.3"), "decimal-0.3")
            .unwrap(),
    ] {
        let error = fit(&policy).unwrap_err();
        assert!(matches!(error, FitError::NeedsPeriod { .. }), "{error:?}");
        assert!(
            error.to_string().contains("does not write the period")
                && error.to_string().contains("counter 'inv' is periodic"),
            "{error}"
        );
    }
    // The activation check says the same.
    let error = crate::policy::activation::check(
        &runtime.load_builtin("base32").unwrap(),
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(counter.clone()),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("does not write the period"),
        "{error}"
    );
}

#[test]
fn an_accepted_fit_is_remembered_by_prefix_and_shape_and_a_refusal_is_not() {
    // A policy of its own: the memo is the policy's.
    let policy = PolicyRuntime::new().unwrap().load_default().unwrap();
    let orders = counter(99);
    check_serves(&policy, &orders, "A-", KNOWN_MICROS).unwrap();
    assert_eq!(policy.fits().len(), 1);
    // Another counter of the same shape, or the same one again: nothing new
    // to check, nothing new remembered.
    let mut invoices = counter(99);
    invoices.name = "invoices".to_string();
    check_serves(&policy, &invoices, "A-", KNOWN_MICROS).unwrap();
    check_serves(&policy, &orders, "A-", KNOWN_MICROS).unwrap();
    assert_eq!(policy.fits().len(), 1);
    // Another prefix, another shape: each checked and remembered.
    check_serves(&policy, &orders, "B-", KNOWN_MICROS).unwrap();
    check_serves(&policy, &counter(9), "A-", KNOWN_MICROS).unwrap();
    assert_eq!(policy.fits().len(), 3);
    // A counter the policy cannot serve is refused every time, and its
    // refusal is not remembered as a fit.
    let autoinc = autoinc_counter();
    for _ in 0..2 {
        let error = check_serves(&policy, &autoinc, "A-", KNOWN_MICROS).unwrap_err();
        assert!(matches!(error, PolicyError::Fit(_)), "{error}");
    }
    // A prefix the policy refuses is refused, and not remembered either.
    let error = check_serves(&policy, &orders, "A\n", KNOWN_MICROS).unwrap_err();
    assert!(error.is_format(), "{error}");
    assert_eq!(policy.fits().len(), 3);
}

#[test]
fn a_tag_read_back_is_remembered_by_tag_and_layout_and_a_refusal_is_not() {
    use crate::parts::Layout;
    use crate::sequence::{CounterTag, KindState};
    // A policy of its own: the memo is the policy's.
    let policy = PolicyRuntime::new()
        .unwrap()
        .load_builtin("uuidv7")
        .unwrap();
    let tagged = |tag: u32| {
        let mut counter = snowflake_counter(Layout::default());
        if let KindState::Snowflake(state) = &mut counter.kind {
            state.tag = Some(CounterTag { tag, salt: 0x5eed });
        }
        counter
    };
    check_tag_reads_back(&policy, &tagged(7)).unwrap();
    assert_eq!(policy.fits().len(), 1);
    // The same tag again: nothing new to check, nothing new remembered.
    check_tag_reads_back(&policy, &tagged(7)).unwrap();
    assert_eq!(policy.fits().len(), 1);
    // Another tag: checked and remembered.
    check_tag_reads_back(&policy, &tagged(8)).unwrap();
    assert_eq!(policy.fits().len(), 2);
    // A counter without a tag is refused every time, and not remembered.
    for _ in 0..2 {
        let error =
            check_tag_reads_back(&policy, &snowflake_counter(Layout::default())).unwrap_err();
        assert!(
            matches!(&error, PolicyError::Fit(fit) if matches!(**fit, FitError::TagNotReadBack { tag: 0, .. })),
            "{error}"
        );
    }
    assert_eq!(policy.fits().len(), 2);
}
