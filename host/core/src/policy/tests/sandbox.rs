//! The sandbox: traps, the memory cap, the time limit, and the broken
//! fixtures of `tests/fixtures/policy/`, each refused with its reason.

use super::*;

#[test]
fn hand_written_contract_component_loads() {
    let runtime = PolicyRuntime::new().unwrap();
    let wat = contract_component("unreachable", 1);
    let policy = runtime.load_bytes(wat.as_bytes(), "fixture").unwrap();
    assert_eq!(policy.info().name, "trap");
    assert_eq!(policy.info().sequence_capacity, 100);
}

#[test]
fn traps_are_mapped_to_trap() {
    let runtime = PolicyRuntime::new().unwrap();
    let wat = contract_component("unreachable", 1);
    let policy = runtime.load_bytes(wat.as_bytes(), "fixture").unwrap();
    let error = policy.format(&parts("ORD-", 0, 0)).unwrap_err();
    match &error {
        PolicyError::Trap { origin, reason } => {
            assert_eq!(origin, "fixture");
            assert!(reason.contains("unreachable"), "{reason}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert!(error.is_trap());
    // A fresh store per call: the trap does not poison the next call.
    assert!(policy.validate("x", None, None).unwrap_err().is_trap());
    assert!(policy.format_batch("", &[]).unwrap_err().is_trap());
}

#[test]
fn memory_is_capped() {
    let limits = PolicyLimits::default().max_memory_bytes(4 << 20);
    let runtime = PolicyRuntime::with_limits(limits).unwrap();

    // Growing past the cap fails the call, naming the size asked for.
    let grow = "(drop (memory.grow (i32.const 64))) unreachable";
    let policy = runtime
        .load_bytes(contract_component(grow, 1).as_bytes(), "grower")
        .unwrap();
    match policy.format(&parts("", 0, 0)) {
        Err(PolicyError::MemoryLimit {
            limit, requested, ..
        }) => {
            assert_eq!(limit, 4 << 20);
            assert_eq!(requested, 65 << 16);
        }
        other => panic!("expected a memory limit failure, got {other:?}"),
    }

    // So does declaring more initial memory than the cap (65 pages > 4 MiB),
    // which is found at load, when `describe` is called.
    let error = runtime
        .load_bytes(contract_component("unreachable", 65).as_bytes(), "big")
        .unwrap_err();
    assert!(
        matches!(&error, PolicyError::MemoryLimit { origin, .. } if origin == "big"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("memory limit of 4194304 bytes"),
        "{error}"
    );

    // The default policy fits within 4 MiB (its 1 MiB stack included).
    let policy = runtime.load_default().unwrap();
    assert!(policy.format(&parts("ORD-", KNOWN_MICROS, 7)).is_ok());
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline() {
    let limits = PolicyLimits::default().timeout(std::time::Duration::from_millis(50));
    let runtime = PolicyRuntime::with_limits(limits).unwrap();
    let spin = "(loop $l (br $l)) unreachable";
    let policy = runtime
        .load_bytes(contract_component(spin, 1).as_bytes(), "spinner")
        .unwrap();
    let started = std::time::Instant::now();
    let error = policy.format(&parts("", 0, 0)).unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    assert!(error.to_string().contains("50 ms"), "{error}");
    // The deadline is a bound, not a hope: well under a second.
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    // The next call gets a fresh deadline and fails the same way, not at once.
    assert!(policy.format(&parts("", 0, 0)).unwrap_err().is_timeout());
}

#[test]
fn deadline_ticks_round_up() {
    let ticks = |ms| {
        PolicyLimits::default()
            .timeout(std::time::Duration::from_millis(ms))
            .deadline_ticks()
    };
    assert_eq!(ticks(0), 2);
    assert_eq!(ticks(10), 2);
    assert_eq!(ticks(11), 3);
    assert_eq!(ticks(100), 11);
}

#[test]
fn each_bad_fixture_is_refused_with_its_reason() {
    let runtime = PolicyRuntime::new().unwrap();
    let load = |name: &str| runtime.load_bytes(&fixture(name), name);
    let error = load("loop.wat").unwrap_err();
    assert!(error.is_timeout(), "{error:?}");
    let error = load("grow.wat").unwrap_err();
    assert!(error.is_memory_limit(), "{error:?}");
    assert!(
        error.to_string().contains("memory limit of 67108864 bytes"),
        "{error}"
    );
    let error = load("wrong-interface.wat").unwrap_err();
    assert!(
        matches!(error, PolicyError::WrongInterface { .. }),
        "{error:?}"
    );
    let trap = load("trap.wat").unwrap();
    let error = crate::policy::activation::check(&trap, &ActivationOptions::default()).unwrap_err();
    assert!(error.is_trap(), "{error:?}");
}
