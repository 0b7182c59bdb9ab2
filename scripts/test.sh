#!/usr/bin/env bash
# Runs idmint's whole test suite: unit tests, the guest policy's tests, and the
# integration tests against a real MongoDB wire-protocol server (started by the
# tests themselves unless MONGODB_URI is set) and mongosh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh

# What each part took, said at the end (docs/BENCHMARKS.md has the figures
# of this machine's kind).
began=$SECONDS
part_began=$SECONDS
parts=()
part_done() {
  parts+=("$1 $((SECONDS - part_began)) s")
  part_began=$SECONDS
}

ensure_wasm_target
if [ -z "${MONGODB_URI:-}" ]; then
  ensure_server
fi
ensure_mongosh
ensure_faketime
ensure_tmux
ensure_java
ensure_chromium
ensure_schemathesis
ensure_interop
# curl: the README's `idmint serve` examples, which tests/readme.rs runs.
command -v curl >/dev/null 2>&1 || apt_install curl

# No two files of a crate import each other in a loop (the check first held
# to its planted cycles).
python3 scripts/import-cycles-test.py
python3 scripts/import-cycles.py host/core/src host/serve/src host/cli/src

# Every intra-doc link of the host crates resolves (private items included).
# It runs beside the builds and tests below, in a target of its own (no lock
# shared with them) and in a session of its own whose CPU share is niced
# whole: the kernel shares the CPU between sessions first (autogroups), so a
# nice inside test.sh's session would hold only against test.sh's own
# processes, not against the servers and soak drivers that start sessions of
# their own. It so takes only the CPU nothing else wants (on a fresh clone
# its dependencies take about 190 s of CPU to check). The CLI on its own:
# its binary is named `idmint` like the library, and one `cargo doc` of both
# writes doc/idmint from two rustdocs at once (cargo#6313), which fails now
# and then.
doc_log=target/doc-check.log
mkdir -p target
CARGO_TARGET_DIR="$PWD/target/doc-check" RUSTDOCFLAGS="-D warnings" setsid bash -c '
  echo 19 >/proc/self/autogroup 2>/dev/null || true
  exec nice -n 19 bash -c "
    cargo doc --locked --no-deps --document-private-items \
      -p idmint -p idmint-serve -p idmint-guest-build &&
      cargo doc --locked --no-deps --document-private-items -p idmint-cli
  "
' >"$doc_log" 2>&1 &
doc_pid=$!
# Stopped whole (its process group) if a step below fails.
trap 'kill -- "-$doc_pid" 2>/dev/null || true' EXIT
part_done "setup"

# The CLI with the test-only sixth kind of counter, for tests/test_kind.rs: a
# binary of its own beside the one the other tests run (built first: the
# build below puts target/debug/idmint back as it must be).
cargo build --locked -p idmint-cli --features idmint-cli/test-kind
mkdir -p target/test-kind
cp target/debug/idmint target/test-kind/idmint
export IDMINT_TEST_KIND_BIN="$PWD/target/test-kind/idmint"
part_done "test-kind build"

# One build of the test-only features for every test and both soaks (not
# three builds of the core and the CLI): test-hooks, the crash hook the
# installer tests use, and soak-broken, the breaks the second soak below
# turns on (off unless IDMINT_SOAK_BROKEN picks one). Neither is ever in a
# user's build.
# Four test threads on two cores: the integration tests spend about a third
# of their time waiting (servers starting, child processes, deadlines), and
# four threads took them from about 480 s to about 400 s (docs/BENCHMARKS.md).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
cargo test --workspace --locked --features idmint-cli/test-hooks,idmint-cli/soak-broken "$@"
part_done "cargo test (build and tests)"

# A 2-minute soak with a nemesis, seeded so that CI repeats its schedule
# (docs/RELIABILITY.md): every kind through every client path while faults
# run; it fails if a value was handed out twice or lost, or lock holders
# overlapped. It uses the binary the tests just built. And it shows that it
# catches a bug: beside the run, a canary counter is taken by the same build
# with a break turned on (the soak-broken feature: autoinc takes without
# their guard), under the same faults; checked apart, the canary must show
# values twice, or the soak fails (exit 2). One setup for both (a soak of
# its own for the broken build took about 35 s more).
python3 scripts/soak/soak.py --self-test 2>&1 | tail -n 3
rm -rf target/soak target/soak-broken-run
SOAK_BIN="$PWD/target/debug/idmint" scripts/soak.sh --minutes 2 --seed 1 --canary duplicate --out target/soak
part_done "soaks"

# The documentation check started at the top.
if ! wait "$doc_pid"; then
  cat "$doc_log" >&2
  echo "test.sh: cargo doc found broken documentation (above)" >&2
  exit 1
fi
trap - EXIT
part_done "cargo doc (what was left of it)"
summary=$(printf '%s, ' "${parts[@]}")
echo "test.sh: everything passed in $((SECONDS - began)) s (${summary%, })"
