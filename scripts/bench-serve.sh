#!/usr/bin/env bash
# Benchmarks `idmint serve` on this machine with wrk (client and server share
# it) and the Java client: one segment value per request (Leaf's route), one
# raw value and one formatted ID per request on the same counter (run in
# alternation, ROUNDS times each, then the ratio of their totals), a batch of
# 1000 formatted IDs per request, and the Java client handing out values
# in-process. Prints one JSON line per scenario; docs/BENCHMARKS.md records
# the figures.
#
#   scripts/bench-serve.sh [SECONDS]     (default 10 per scenario)
#
# Environment:
#   BENCH_SERVE_ONLY=format   only the value/ID pair (no batch, no Java)
#   BENCH_SERVE_ONLY=scale    instead, the cost of counters as the database
#                             grows: scripts/bench-scale.sh [SECONDS]
#   BENCH_SERVE_ROUNDS=N      rounds of the value/ID pair (default 3)
#   BENCH_SERVE_BIN=PATH      this idmint binary instead of a release build
#   WRK_CONNECTIONS=N         connections wrk keeps open (default 32)
#   BENCH_SERVE_PERF=FILE     then one more formatted-ID round, outside the
#                             ratio, with the server under `perf record` into
#                             FILE (options BENCH_SERVE_PERF_OPTS, default -g)
#
# Starts a local test server unless MONGODB_URI is set, and uses the
# database idmint_bench_serve (dropped first).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${BENCH_SERVE_ONLY:-}" = scale ] && exec scripts/bench-scale.sh "$@"
. scripts/tools.sh
. scripts/bench-lib.sh

seconds="${1:-10}"
ensure_wasm_target
ensure_wrk
# curl: reads the server's /metrics between rounds.
command -v curl >/dev/null 2>&1 || apt_install curl
[ "${BENCH_SERVE_ONLY:-}" = format ] || ensure_java
bench_binary_and_server
export IDMINT_DB=idmint_bench_serve

work="$(mktemp -d "${TMPDIR:-/tmp}/idmint-bench-serve.XXXXXX")"
cleanup_serve() {
  stop_serve
  rm -rf "$work"
}
trap 'cleanup_serve; kill "${IDMINT_SERVER_PID:-}" 2>/dev/null || true; rm -rf "${IDMINT_SERVER_DATA:-}" "${IDMINT_SERVER_DATA:-}.log"' EXIT

"$idmint" uninstall --drop-counters --yes >/dev/null 2>&1 || true
"$idmint" counter create seg --kind segment --step 10000 --prefix ORD- >/dev/null

# The decimal policy: segment values are not cyclic, so they need no time.
start_serve "$idmint" --policy builtin:decimal
say "idmint serve at $url"

# A counter of the server's /metrics (idmint_NAME_total).
metric() { curl -fsS "$admin/metrics" | awk -v name="idmint_$1_total" '$1 == name { v = $2 } END { print v + 0 }'; }

run_wrk() { # name path accept ids_per_request
  local name=$1 path=$2 accept=$3 per=$4
  printf '{"scenario":"%s","ids_per_request":%d,%s\n' "$name" "$per" \
    "$(WRK_ACCEPT="$accept" measure_wrk scripts/wrk-report.lua "$url$path")"
}

# Warm-up: segment steps adapt, connections open.
WRK_ACCEPT= wrk -t2 -c32 -d2s "$url/api/segment/get/seg" >/dev/null
run_wrk segment_value /api/segment/get/seg "" 1

# One raw value against one formatted ID per request, same counter, same
# server, in alternation so that a change of load hits both alike.
rounds="${BENCH_SERVE_ROUNDS:-3}"
value_total=0
id_total=0
for round in $(seq "$rounds"); do
  line="$(run_wrk value_1 "/v1/counters/seg/values?count=1" text/plain 1)"
  echo "$line"
  value_total=$((value_total + $(requests_of "$line")))
  calls="$(metric policy_calls)"
  served="$(metric policy_call_requests)"
  line="$(run_wrk formatted_id_1 "/v1/counters/seg/ids?count=1" text/plain 1)"
  echo "$line"
  id_total=$((id_total + $(requests_of "$line")))
  # How many requests each policy call formatted (requests that arrive
  # together share one call).
  awk -v c=$(($(metric policy_calls) - calls)) -v r=$(($(metric policy_call_requests) - served)) \
    'BEGIN { printf "{\"scenario\":\"formatted_id_1\",\"policy_calls\":%d,\"requests_per_call\":%.2f}\n", c, c ? r / c : 0 }'
done
awk -v v="$value_total" -v i="$id_total" -v r="$rounds" \
  'BEGIN { printf "{\"scenario\":\"formatted_id_1/value_1\",\"rounds\":%d,\"value_requests\":%d,\"id_requests\":%d,\"ratio\":%.3f}\n", r, v, i, i / v }'
say "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${BENCH_SERVE_PERF:-}" ]; then
  # One more formatted-ID round, profiled, outside the ratio (perf slows it).
  # shellcheck disable=SC2086 # the options are words
  perf record ${BENCH_SERVE_PERF_OPTS:--g} -o "$BENCH_SERVE_PERF" -p "$serve_pid" -- sleep "$seconds" >/dev/null 2>&1 &
  perf_pid=$!
  run_wrk formatted_id_1_profiled "/v1/counters/seg/ids?count=1" text/plain 1
  wait "$perf_pid" || true
fi
[ "${BENCH_SERVE_ONLY:-}" = format ] && exit 0

run_wrk formatted_batch_1000 "/v1/counters/seg/ids?count=1000" text/plain 1000

classes="$work/classes"
javac -d "$classes" $(find clients/java/src clients/java/test -name '*.java')
for threads in 1 4; do
  java -cp "$classes" io.idmint.client.ClientBench "$url/" seg "$threads" "$seconds" 100000
done
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
