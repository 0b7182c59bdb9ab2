#!/usr/bin/env bash
# A soak with a nemesis: every counter kind through every client path (CLI
# takers, `next --stream`, four `idmint serve` instances with plain HTTP
# clients, the stored JavaScript twins in mongosh, `lock run` holders
# writing to a fenced store), and four striped counters (autoinc, cyclic,
# snowflake, periodic) whose lanes span two database servers, while a
# seeded schedule of faults runs (kill -9, SIGSTOP, partitions of either
# server, cut answers, slow clients, the server's clock, and two takers',
# stepped back and frozen, Ctrl-Z of a lock run). Then it checks what the
# clients recorded, Jepsen's way: duplicates, losses, order, lock overlaps,
# fencing.
#
#   scripts/soak.sh [--minutes M] [--seed S] [--out DIR] [--keep-data]
#                   [--broken MODE | --canary duplicate]
#   scripts/soak.sh --self-test        the checker against planted violations
#   scripts/soak.sh --check DIR        the checker again on a kept run
#
# Self-contained like scripts/test.sh: installs what it needs (the test
# server, mongosh, libfaketime, Java 17), builds idmint (debug; SOAK_RELEASE=1 for a
# release build, or SOAK_BIN=PATH to use a binary as it is), starts its own
# two database servers on data dirs of their own, its proxies and its serve
# instances, loopback only, and stops all of them when it ends or on Ctrl-C.
# Writes OUT (default /tmp/idmint-soak-SEED-TIME): schedule.json, logs/,
# faults.jsonl, result.json ("valid": true|false), timeline.svg. Exits 0 when
# valid, 1 when not (naming the first example and the faults around it), 2
# when the harness itself failed or refused its input (a --broken or
# --canary run of a build without the breaks). docs/RELIABILITY.md says more.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  case "$arg" in
    --self-test|--check) exec python3 scripts/soak/soak.py "$@" ;;
  esac
done

. scripts/tools.sh
ensure_server
ensure_mongosh
ensure_faketime
ensure_java

broken=0
for arg in "$@"; do
  case "$arg" in
    # Both run the deliberately broken build: for every process (--broken),
    # or for the canary's takers only, their break off everywhere else.
    --broken|--canary) broken=1 ;;
  esac
done

if [ -n "${SOAK_BIN:-}" ]; then
  idmint="$SOAK_BIN"
elif [ "$broken" = 1 ]; then
  # The deliberately broken build (the soak-broken feature), beside the real one.
  say "building a deliberately broken idmint (debug, feature soak-broken)"
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}" \
    cargo build --locked -p idmint-cli --features idmint-cli/soak-broken --quiet
  mkdir -p "${CARGO_TARGET_DIR:-target}/soak-broken"
  cp "${CARGO_TARGET_DIR:-target}/debug/idmint" "${CARGO_TARGET_DIR:-target}/soak-broken/idmint"
  cargo build --locked -p idmint-cli --quiet  # the real one back in target/debug
  idmint="${CARGO_TARGET_DIR:-target}/soak-broken/idmint"
elif [ "${SOAK_RELEASE:-0}" = 1 ]; then
  say "building idmint (release)"
  cargo build --locked --release -p idmint-cli --quiet
  idmint="${CARGO_TARGET_DIR:-target}/release/idmint"
else
  say "building idmint (debug)"
  cargo build --locked -p idmint-cli --quiet
  idmint="${CARGO_TARGET_DIR:-target}/debug/idmint"
fi
idmint="$(cd "$(dirname "$idmint")" && pwd)/$(basename "$idmint")"

# The orchestrator cleans up after itself; should it die, what it started is
# listed in OUT/pgids (one process group each) and killed here: only groups
# still led by one of the soak's own programs, since a pid may be reused.
pgids="$(mktemp "${TMPDIR:-/tmp}/idmint-soak-pgids.XXXXXX")"
cleanup() {
  local out pgid command
  out="$(sed -n 's/^soak: seed .* out \(.*\); schedule.*/\1/p' "$pgids.log" 2>/dev/null | head -n 1)"
  if [ -n "$out" ] && [ -f "$out/pgids" ]; then
    while read -r pgid; do
      command="$( { tr '\0' ' ' <"/proc/$pgid/cmdline"; } 2>/dev/null || true)"
      case "$command" in
        "$idmint "*|"$IDMINT_TEST_SERVER_BIN "*|*mongosh*/soak\?*|*SoakClient*|*scripts/soak/*)
          kill -CONT -- "-$pgid" 2>/dev/null || true
          kill -KILL -- "-$pgid" 2>/dev/null || true
          ;;
      esac
    done <"$out/pgids"
  fi
  rm -f "$pgids" "$pgids.log"
}
trap cleanup EXIT

# tee -i: Ctrl-C reaches the orchestrator, which stops and still reports.
set +e
python3 scripts/soak/soak.py --bin "$idmint" --server-bin "$IDMINT_TEST_SERVER_BIN" \
  --mongosh "$IDMINT_MONGOSH" "$@" | tee -i "$pgids.log"
status=${PIPESTATUS[0]}
set -e
exit "$status"
