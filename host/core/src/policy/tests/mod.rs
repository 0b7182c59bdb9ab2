//! Unit tests of the policy module against the embedded policies, the
//! fixture policies of `guest/` and small hand-written components (WAT
//! text) that break the contract in one way each; one file per concern.
//! The helpers they share are here.

mod activation;
mod contracts;
mod fit;
mod live;
mod prefixes;
mod runtime;
mod sandbox;

use std::sync::OnceLock;
use std::time::Duration;

use super::*;

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

/// A fixture of `tests/fixtures/policy/`.
fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/policy")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture policy of `guest/<name>/`, built on first use.
fn fixture_wasm(name: &str) -> Vec<u8> {
    std::fs::read(idmint_guest_build::fixture(name)).expect("the fixture was built")
}

/// The example policy on contract 0.2.0, `guest/check-digit/`.
fn check_digit_wasm() -> Vec<u8> {
    fixture_wasm("check-digit")
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
        striped: None,
        incarnation: None,
    }
}

fn snowflake_counter(layout: crate::parts::Layout) -> crate::sequence::CounterState {
    crate::sequence::CounterState {
        name: "events".to_string(),
        kind: crate::sequence::KindState::Snowflake(crate::sequence::SnowflakeState {
            layout,
            tag: None,
        }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
        striped: None,
        incarnation: None,
    }
}

/// A periodic counter `inv`, of years in UTC.
fn periodic_counter() -> crate::sequence::CounterState {
    crate::sequence::CounterState {
        name: "inv".to_string(),
        kind: crate::sequence::KindState::Periodic(crate::sequence::PeriodicState {
            period: crate::parts::PeriodUnit::Year,
            zone: "UTC".to_string(),
            current: None,
            seq: 0,
        }),
        prefix: None,
        prefixes: vec![String::new()],
        prefixes_declared: true,
        striped: None,
        incarnation: None,
    }
}

/// A period of `unit` starting on `year-month-day`.
fn period(unit: crate::parts::PeriodUnit, year: u16, month: u8, day: u8) -> crate::parts::Period {
    crate::parts::Period {
        unit,
        year,
        month,
        day,
    }
}
