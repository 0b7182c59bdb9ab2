#!/usr/bin/env bash
# Sets up idmint on this machine and shows it working: builds the policy and
# the CLI, starts a local test server unless MONGODB_URI is set, installs the
# server-side functions, creates a counter and prints formatted IDs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh

ensure_wasm_target
# The debug profile: the test suite (scripts/test.sh) then reuses this build.
say "building idmint"
cargo build --locked -p idmint-cli --quiet
idmint="${CARGO_TARGET_DIR:-target}/debug/idmint"

if [ -z "${MONGODB_URI:-}" ]; then
  start_local_server
fi

say "idmint install"
"$idmint" install
say "idmint status"
"$idmint" status
say "idmint counter create demo --prefix DEMO- --exist-ok"
"$idmint" counter create demo --prefix DEMO- --exist-ok
say "idmint next demo --count 5"
"$idmint" next demo --count 5
say "idmint seq demo --count 3"
"$idmint" seq demo --count 3
