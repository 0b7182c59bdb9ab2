//! Loading policies and calling them: `describe`, `format`, `format-batch`
//! and `validate` of the default policy, refusals, the component cache.

use super::*;
use crate::checksum::sha256_hex;

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
