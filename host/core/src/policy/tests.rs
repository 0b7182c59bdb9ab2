//! Unit tests of the policy module against the embedded default policy and
//! small hand-written components (WAT text) that break the contract in one
//! way each.

use std::sync::OnceLock;
use std::time::Duration;

use super::*;
use crate::checksum::sha256_hex;

/// 2026-11-22T03:14:57.123456Z.
const KNOWN_MICROS: u64 = 1_795_317_297_123_456;
/// 9999-12-31T23:59:59.999999Z, the last instant the default policy writes.
const MAX_MICROS: u64 = 253_402_300_799_999_999;

/// The default policy, compiled once for all tests (compiling takes most of a
/// second in a debug build). Its calls may run 10 s, not the default 100 ms:
/// these tests are about what a policy writes, and a loaded CI machine can
/// keep a thread off the CPU past 100 ms; the time limit has tests of its
/// own, with runtimes of their own.
fn default_policy() -> Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY
        .get_or_init(|| {
            PolicyRuntime::with_limits(PolicyLimits::default().timeout(Duration::from_secs(10)))
                .and_then(|runtime| runtime.load_default())
                .expect("the default policy loads")
        })
        .clone()
}

fn parts(prefix: &str, timestamp_micros: u64, sequence: u64) -> IdParts {
    IdParts {
        prefix: prefix.to_string(),
        timestamp_micros,
        sequence,
        snowflake: None,
        period: None,
    }
}

/// A component that implements the whole `id-policy` world by hand: `describe`
/// answers `{name: "trap", version: "0.0.0", sequence-capacity: 100,
/// max-prefix-len: 32}`; `format` runs `format_body`; everything else traps.
/// The core module has `pages` pages of initial memory.
fn contract_component(format_body: &str, pages: u32) -> String {
    format!(
        r#"(component
  (core module $m
    (memory (export "memory") {pages})
    ;; policy-info at 0: name (ptr 100, len 4), version (ptr 110, len 5),
    ;; sequence-capacity 100 (u64 at 16), max-prefix-len 32 (u32 at 24).
    (data (i32.const 0) "\64\00\00\00\04\00\00\00\6e\00\00\00\05\00\00\00")
    (data (i32.const 16) "\64\00\00\00\00\00\00\00\20\00\00\00")
    (data (i32.const 100) "trap")
    (data (i32.const 110) "0.0.0")
    (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 1024)
    (func (export "describe") (result i32) i32.const 0)
    (func (export "format") (param i32 i32 i64 i64) (result i32) {format_body})
    (func (export "format-batch") (param i32 i32 i32 i32) (result i32) unreachable)
    (func (export "validate") (param i32 i32 i32 i32 i32) (result i32) unreachable)
  )
  (core instance $i (instantiate $m))

  (type $id-parts' (record (field "prefix" string) (field "timestamp-micros" u64) (field "sequence" u64)))
  (export $id-parts "id-parts" (type $id-parts'))
  (type $stamp' (record (field "timestamp-micros" u64) (field "sequence" u64)))
  (export $stamp "stamp" (type $stamp'))
  (type $policy-info' (record (field "name" string) (field "version" string)
    (field "sequence-capacity" u64) (field "max-prefix-len" u32)))
  (export $policy-info "policy-info" (type $policy-info'))
  (type $format-error' (variant (case "bad-prefix" string)
    (case "sequence-out-of-range" u64) (case "timestamp-out-of-range" u64)))
  (export $format-error "format-error" (type $format-error'))
  (type $wrong-length' (record (field "found" u32) (field "min" u32) (field "max" u32)))
  (export $wrong-length "wrong-length" (type $wrong-length'))
  (type $non-digit' (record (field "position" u32) (field "found" char)))
  (export $non-digit "non-digit" (type $non-digit'))
  (type $invalid-id' (variant (case "wrong-length" $wrong-length) (case "bad-prefix" string)
    (case "non-digit" $non-digit) (case "impossible-date" string) (case "malformed" string)))
  (export $invalid-id "invalid-id" (type $invalid-id'))

  (func (export "describe") (result $policy-info)
    (canon lift (core func $i "describe") (memory (core memory $i "memory"))))
  (func (export "format") (param "parts" $id-parts) (result (result string (error $format-error)))
    (canon lift (core func $i "format") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func (export "format-batch") (param "prefix" string) (param "stamps" (list $stamp))
    (result (result string (error $format-error)))
    (canon lift (core func $i "format-batch") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func (export "validate") (param "id" string) (param "expected-prefix" (option string))
    (result (result $id-parts (error $invalid-id)))
    (canon lift (core func $i "validate") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
)"#
    )
}

#[test]
fn load_default_describes_itself() {
    let policy = default_policy();
    assert_eq!(
        policy.info(),
        &PolicyInfo {
            name: "default".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sequence_capacity: 100,
            max_prefix_len: 32,
        }
    );
    assert_eq!(policy.origin(), DEFAULT_POLICY_ORIGIN);
    assert_eq!(policy.sha256(), sha256_hex(DEFAULT_POLICY_WASM));
    assert_eq!(policy.sha256().len(), 64);
}

#[test]
fn sha256_hex_is_lowercase_hex() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn format_known_timestamp() {
    let policy = default_policy();
    assert_eq!(
        policy.format(&parts("ORD-", KNOWN_MICROS, 7)).unwrap(),
        "ORD-2026112203145712345607"
    );
    assert_eq!(
        policy.format(&parts("", 0, 0)).unwrap(),
        "1970010100000000000000"
    );
}

#[test]
fn format_refusals() {
    let policy = default_policy();
    let refusal = |p: IdParts| match policy.format(&p) {
        Err(PolicyError::Format(e)) => e,
        other => panic!("expected a format error, got {other:?}"),
    };
    assert_eq!(
        refusal(parts("", 0, 100)),
        FormatError::SequenceOutOfRange(100)
    );
    assert_eq!(
        refusal(parts("", MAX_MICROS + 1, 0)),
        FormatError::TimestampOutOfRange(MAX_MICROS + 1)
    );
    let bad = refusal(parts("ORD 1", 0, 0));
    assert_eq!(
        bad.to_string(),
        "bad prefix: prefix has ' ' (U+0020) at byte 3; only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"
    );
    assert!(matches!(
        refusal(parts(&"x".repeat(33), 0, 0)),
        FormatError::BadPrefix(_)
    ));
    let error = policy.format(&parts("", 0, 100)).unwrap_err();
    assert!(error.is_format() && !error.is_trap() && !error.is_load());
}

#[test]
fn format_batch_equals_format_per_item() {
    let policy = default_policy();
    let stamps: Vec<Stamp> = [0, 1, KNOWN_MICROS, MAX_MICROS]
        .into_iter()
        .zip([0, 1, 7, 99])
        .map(|(timestamp_micros, sequence)| Stamp::new(timestamp_micros, sequence))
        .collect();
    let batch = policy.format_batch("B.", &stamps).unwrap();
    let single: Vec<String> = stamps
        .iter()
        .map(|s| {
            policy
                .format(&parts("B.", s.timestamp_micros, s.sequence))
                .unwrap()
        })
        .collect();
    assert_eq!(batch, single);
    assert_eq!(
        policy.format_batch("B.", &[]).unwrap(),
        Vec::<String>::new()
    );

    let out_of_range = [Stamp::new(0, 100)];
    assert!(matches!(
        policy.format_batch("B.", &out_of_range),
        Err(PolicyError::Format(FormatError::SequenceOutOfRange(100)))
    ));
}

#[test]
fn validate_round_trip() {
    let policy = default_policy();
    for p in [
        parts("ORD-", KNOWN_MICROS, 7),
        parts("", 0, 0),
        parts(&"a".repeat(32), MAX_MICROS, 99),
    ] {
        let id = policy.format(&p).unwrap();
        assert_eq!(policy.validate(&id, None, None).unwrap(), Ok(p.clone()));
        assert_eq!(policy.validate(&id, Some(&p.prefix), None).unwrap(), Ok(p));
    }
}

#[test]
fn validate_reports_each_invalid_kind() {
    let policy = default_policy();
    let invalid = |id: &str, expected: Option<&str>| {
        policy
            .validate(id, expected, None)
            .unwrap()
            .expect_err("the ID is invalid")
    };

    let e = invalid("202611220314571234560", None);
    assert_eq!(
        e,
        InvalidId::WrongLength {
            found: 21,
            min: 22,
            max: 54
        }
    );
    assert_eq!(e.to_string(), "wrong length: 21 bytes, expected 22 to 54");
    assert_eq!(e.kind(), "wrong-length");

    let e = invalid("ORD-2026112203145712x45607", None);
    assert_eq!(
        e,
        InvalidId::NonDigit {
            position: 20,
            found: 'x'
        }
    );
    assert_eq!(e.to_string(), "not a digit: 'x' at byte 20");
    // A character straddling the prefix and the digits is named whole.
    let e = invalid("Aé202611220314571234560", None);
    assert_eq!(
        e,
        InvalidId::NonDigit {
            position: 1,
            found: 'é'
        }
    );
    assert_eq!(e.to_string(), "not a digit: 'é' (U+00E9) at byte 1");

    let e = invalid("OR D2026112203145712345607", None);
    assert!(matches!(e, InvalidId::BadPrefix(_)), "{e:?}");
    let e = invalid("INV-2026112203145712345607", Some("ORD-"));
    assert_eq!(
        e.to_string(),
        "bad prefix: expected prefix 'ORD-', found 'INV-'"
    );

    let e = invalid("ORD-2023022912000000000000", None);
    assert_eq!(
        e,
        InvalidId::ImpossibleDate("day 29 of February 2023".to_string())
    );
    assert_eq!(e.to_string(), "impossible date: day 29 of February 2023");
    assert_eq!(
        invalid("ORD-2026132203145712345607", None),
        InvalidId::ImpossibleDate("month 13".to_string())
    );
}

#[test]
fn validate_many_matches_validate() {
    let policy = default_policy();
    let ids: Vec<String> = [
        "ORD-2026112203145712345607",
        "short",
        "ORD-2024022923595999999999",
        "ORD-2026112224145712345607",
    ]
    .map(String::from)
    .to_vec();
    let many = policy.validate_many(&ids, Some("ORD-"), None).unwrap();
    let one_by_one: Vec<_> = ids
        .iter()
        .map(|id| policy.validate(id, Some("ORD-"), None).unwrap())
        .collect();
    assert_eq!(many, one_by_one);
    assert!(many[0].is_ok() && many[1].is_err() && many[2].is_ok() && many[3].is_err());
    assert_eq!(policy.validate_many(&[], None, None).unwrap(), vec![]);
}

#[test]
fn invalid_id_serializes_with_a_kind() {
    let json = |e: &InvalidId| serde_json::to_value(e).unwrap();
    assert_eq!(
        json(&InvalidId::WrongLength {
            found: 21,
            min: 22,
            max: 54
        }),
        serde_json::json!({
            "kind": "wrong-length",
            "message": "wrong length: 21 bytes, expected 22 to 54",
            "found": 21, "min": 22, "max": 54
        })
    );
    assert_eq!(
        json(&InvalidId::NonDigit {
            position: 3,
            found: 'x'
        }),
        serde_json::json!({
            "kind": "non-digit",
            "message": "not a digit: 'x' at byte 3",
            "position": 3, "found": "x"
        })
    );
    assert_eq!(
        json(&InvalidId::ImpossibleDate("month 13".into())),
        serde_json::json!({
            "kind": "impossible-date",
            "message": "impossible date: month 13",
            "reason": "month 13"
        })
    );
    assert_eq!(
        serde_json::to_value(FormatError::SequenceOutOfRange(100)).unwrap(),
        serde_json::json!({
            "kind": "sequence-out-of-range",
            "message": "sequence value 100 is out of range for this policy",
            "sequence": 100
        })
    );
}

#[test]
fn garbage_does_not_compile() {
    let runtime = PolicyRuntime::new().unwrap();
    let error = runtime
        .load_bytes(b"not wasm at all", "garbage")
        .unwrap_err();
    assert!(
        matches!(&error, PolicyError::Compile { origin, .. } if origin == "garbage"),
        "{error:?}"
    );
    assert!(error.is_load());
    assert_eq!(error.origin(), Some("garbage"));
    assert!(
        error.to_string().contains("no WebAssembly binary header"),
        "{error}"
    );
    // A component header followed by nothing valid.
    let error = runtime
        .load_bytes(b"\0asm\x0d\x00\x01\x00\x05", "truncated")
        .unwrap_err();
    assert!(matches!(error, PolicyError::Compile { .. }), "{error:?}");
}

#[test]
fn load_file_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.wasm");
    std::fs::write(&path, DEFAULT_POLICY_WASM).unwrap();
    let policy = PolicyRuntime::new().unwrap().load_file(&path).unwrap();
    assert_eq!(policy.origin(), path.display().to_string());
    assert_eq!(policy.sha256(), default_policy().sha256());
    assert_eq!(policy.info(), default_policy().info());
}

#[test]
fn missing_file_is_a_read_error() {
    let runtime = PolicyRuntime::new().unwrap();
    let path = std::path::Path::new("/nonexistent/idmint/policy.wasm");
    let error = runtime.load_file(path).unwrap_err();
    assert!(
        matches!(&error, PolicyError::Read { path: p, .. } if p == path),
        "{error:?}"
    );
}

#[test]
fn wrong_interfaces_are_refused_at_load() {
    let runtime = PolicyRuntime::new().unwrap();
    let wrong = |wasm: &[u8]| match runtime.load_bytes(wasm, "fixture") {
        Err(PolicyError::WrongInterface { reason, .. }) => reason,
        other => panic!("expected WrongInterface, got {other:?}"),
    };
    // A component that exports nothing.
    let reason = wrong(b"(component)");
    assert!(reason.contains("describe"), "{reason}");
    // A core module, even a valid one, is not a component.
    let reason = wrong(b"\0asm\x01\x00\x00\x00");
    assert!(reason.contains("core WebAssembly module"), "{reason}");
    // A component that imports something the host does not provide.
    let reason =
        wrong(br#"(component (import "acme:secrets/vault" (instance (export "get" (func)))))"#);
    assert!(reason.contains("acme:secrets/vault"), "{reason}");
    // A `describe` of the wrong type.
    let reason = wrong(
        br#"(component
          (core module $m (func (export "describe") (result i32) i32.const 0))
          (core instance $i (instantiate $m))
          (func (export "describe") (result u32) (canon lift (core func $i "describe"))))"#,
    );
    assert!(reason.contains("describe"), "{reason}");
}

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
fn reloading_the_same_bytes_reuses_the_component() {
    let runtime = PolicyRuntime::new().unwrap();
    let a = runtime.load_default().unwrap();
    assert_eq!(runtime.cached_components(), 1);
    let b = runtime.load_bytes(DEFAULT_POLICY_WASM, "copy").unwrap();
    assert_eq!(
        runtime.cached_components(),
        1,
        "the same bytes were compiled a second time"
    );
    assert_eq!(a.sha256(), b.sha256());
    assert_eq!(b.origin(), "copy");
    assert_eq!(
        b.format(&parts("", KNOWN_MICROS, 1)).unwrap(),
        a.format(&parts("", KNOWN_MICROS, 1)).unwrap()
    );
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<PolicyRuntime>();
    check::<Policy>();
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

/// A fixture of `tests/fixtures/policy/`.
fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/policy")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example policy on contract 0.2.0, `guest/check-digit/` (a fixture,
/// built on first use).
fn check_digit_wasm() -> Vec<u8> {
    std::fs::read(idmint_guest_build::fixture("check-digit")).expect("the fixture was built")
}

fn counter(maxval: u64) -> crate::sequence::CounterState {
    crate::sequence::CounterState {
        name: "orders".to_string(),
        kind: crate::sequence::KindState::Cyclic(crate::sequence::CyclicState {
            val: 0,
            maxval,
            ts: 0,
        }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
    }
}

#[test]
fn the_activation_check_passes_both_shipped_policies() {
    let runtime = PolicyRuntime::new().unwrap();
    let options = ActivationOptions::default()
        .prefix("ORD-")
        .counter(counter(99))
        .now_micros(KNOWN_MICROS);
    let report = activation::check(&default_policy(), &options).unwrap();
    assert_eq!(report.samples, 14 * 3);
    assert_eq!(report.counters, ["orders"]);

    let check_digit = runtime
        .load_bytes(&check_digit_wasm(), "check-digit")
        .unwrap();
    assert_eq!(check_digit.info().sequence_capacity, 1000);
    let options = ActivationOptions::default()
        .prefix("ORD-")
        .counter(counter(999));
    activation::check(&check_digit, &options).unwrap();
    let id = check_digit.format(&parts("ORD-", KNOWN_MICROS, 7)).unwrap();
    assert!(id.starts_with("ORD-20261122T031457.123456Z-007-"), "{id}");
}

#[test]
fn the_activation_check_refuses_a_counter_too_large() {
    let options = ActivationOptions::default().counter(counter(999));
    let error = activation::check(&default_policy(), &options).unwrap_err();
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
    let error = activation::check(&policy, &ActivationOptions::default()).unwrap_err();
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
    let error = activation::check(&trap, &ActivationOptions::default()).unwrap_err();
    assert!(error.is_trap(), "{error:?}");
}

#[test]
fn a_live_policy_keeps_the_old_one_when_a_swap_fails() {
    let runtime = PolicyRuntime::new().unwrap();
    let live = LivePolicy::new(
        default_policy(),
        ActivationOptions::default().counter(counter(99)),
    );
    let before = live.current().sha256().to_string();
    let bad = runtime
        .load_bytes(&fixture("bad-validator.wat"), "bad")
        .unwrap();
    assert!(live.try_swap(bad).unwrap_err().is_activation());
    assert_eq!(live.current().sha256(), before);

    // A call in flight keeps its handle across a swap.
    let in_flight = live.current();
    let check_digit = runtime
        .load_bytes(&check_digit_wasm(), "check-digit")
        .unwrap();
    let report = live.try_swap(check_digit).unwrap();
    assert_eq!(report.policy.name, "check-digit");
    assert_eq!(live.current().info().name, "check-digit");
    assert_eq!(in_flight.info().name, "default");
    assert!(in_flight.format(&parts("", KNOWN_MICROS, 1)).is_ok());
}

#[test]
fn concurrent_calls_share_the_instance_pool() {
    let policy = default_policy();
    let threads: Vec<_> = (0..16_u64)
        .map(|t| {
            let policy = policy.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let stamps = [Stamp::new(KNOWN_MICROS + i, t)];
                    let ids = policy.format_batch("T-", &stamps).unwrap();
                    assert_eq!(ids.len(), 1);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
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
    let autoinc = crate::sequence::CounterState {
        name: "inv".to_string(),
        kind: crate::sequence::KindState::Autoinc(crate::sequence::AutoincState { seq: 0 }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
    };
    let report = activation::check(
        &decimal,
        &ActivationOptions::default()
            .prefix("INV-")
            .counter(autoinc.clone()),
    )
    .unwrap();
    assert!(!report.writes_time);
    assert!(!writes_time(&decimal, "INV-").unwrap());
    assert!(writes_time(&default_policy(), "INV-").unwrap());

    let error = activation::check(
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

/// A file replaced right after `follow_file` is called, before its task
/// first looks, is still seen as a change (the fingerprint it compares with
/// is taken by the call, not by the task).
#[tokio::test(flavor = "current_thread")]
async fn a_file_replaced_before_the_follower_first_looks_is_swapped_in() {
    use std::sync::Arc;
    let runtime = PolicyRuntime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.wasm");
    std::fs::write(&path, DEFAULT_POLICY_WASM).unwrap();
    let live = Arc::new(LivePolicy::new(
        runtime.load_default().unwrap(),
        ActivationOptions::default(),
    ));
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel();
    let follower = watch::follow_file(path.clone(), runtime.clone(), live.clone(), sender);
    // On a current-thread runtime the task cannot run before this await.
    std::fs::write(&path, check_digit_wasm()).unwrap();
    let event = tokio::time::timeout(std::time::Duration::from_secs(30), events.recv())
        .await
        .expect("a swap within 30 s")
        .unwrap();
    assert!(
        matches!(event, watch::SwapEvent::Swapped { .. }),
        "{event:?}"
    );
    assert_eq!(live.current().info().name, "check-digit");
    follower.abort();
}

fn snowflake_counter(layout: crate::parts::Layout) -> crate::sequence::CounterState {
    crate::sequence::CounterState {
        name: "events".to_string(),
        kind: crate::sequence::KindState::Snowflake(crate::sequence::SnowflakeState { layout }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
    }
}

#[test]
fn policies_of_both_contracts_load_and_say_which() {
    let runtime = PolicyRuntime::new().unwrap();
    assert_eq!(runtime.load_default().unwrap().contract(), "0.3.0");
    assert_eq!(runtime.load_builtin("base32").unwrap().contract(), "0.3.0");
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
    let report =
        activation::check(&check_digit, &ActivationOptions::default().prefix("ORD-")).unwrap();
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
fn a_component_of_neither_contract_is_refused_naming_both() {
    let runtime = PolicyRuntime::new().unwrap();
    let reason = match runtime.load_bytes(b"(component)", "fixture") {
        Err(PolicyError::WrongInterface { reason, .. }) => reason,
        other => panic!("expected WrongInterface, got {other:?}"),
    };
    assert!(
        reason.contains("neither contract 0.3.0") && reason.contains("nor 0.2.0"),
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
    let report = activation::check(
        &base32,
        &ActivationOptions::default()
            .prefix("EVT-")
            .counter(snowflake_counter(layout)),
    )
    .unwrap();
    assert_eq!(report.reads_snowflake, Some(true));
}
