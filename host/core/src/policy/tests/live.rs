//! Live swap: a live policy keeps the old one when a swap fails, and a
//! followed file replaced early is still swapped in.

use super::*;

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
