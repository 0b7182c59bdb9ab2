#!/usr/bin/env bash
# Benchmarks what a counter costs `idmint serve` and the CLI as the database
# grows (issue 36): in one run, with 1, 1,000 and 50,000 counters in the
# database (cyclic and autoinc alternating, each owning its own prefix, as
# `idmint counter create` writes them), a fresh server each time:
#
#   throughput    wrk asks up to 1,000 of the counters for one ID each in
#                 turn (scripts/wrk-round-robin.lua), after a warm-up:
#                 requests/s and p99, and at the end the ratio of the median
#                 at the largest size to the one at 1 counter. Measured last,
#                 in ROUNDS rounds that each ask every size in turn (each
#                 round starting at the next size), on one database per size
#                 (idmint_bench_scale_tpN, filled first): requests spread
#                 over many documents leave the database server slower for
#                 whatever runs next, so sizes measured one after the other
#                 favour the first (docs/BENCHMARKS.md, "the order effect")
#   first         the first request for a counter's IDs, averaged over
#                 SAMPLES counters spread over the database; each server
#                 has answered one request (for the counter first-of-server,
#                 created beside k000000) before, so that its own start-up
#                 is not counted
#   idle          the same counters again, once they have been idle 11 s
#                 (past the 10 s a server trusts a prepared minter)
#   refused       on a second server whose policies fit no counter (decimal,
#                 without time, for the cyclic ones; the two-digit default
#                 for the autoinc ones): the first request (409) for each of
#                 the same counters, then each again (refused_again)
#   cli           `idmint next NAME --count 1` against `idmint seq NAME
#                 --count 1`, alternated, CLI_RUNS runs each: medians of
#                 wall and CPU time, and their ratio
#
# Prints one JSON line per size and scenario, then a table. The server, the
# database server and wrk share this machine: compare figures of one run.
#
#   scripts/bench-scale.sh [SECONDS]     (default 20 per throughput figure:
#                                         longer than the 10 s after which a
#                                         prepared minter is checked again)
#
# Environment:
#   BENCH_SCALE_SIZES="1 1000 50000"   the database sizes, in increasing order
#   BENCH_SCALE_SPREAD=1000            how many counters wrk goes round
#   BENCH_SCALE_WARMUP=5               seconds of wrk before each measurement
#   BENCH_SCALE_SAMPLES=20             counters per single-request figure
#   BENCH_SCALE_CLI_RUNS=10            runs of each CLI command per size
#   BENCH_SCALE_ROUNDS=5               throughput figures per size
#   BENCH_SERVE_BIN=PATH               this idmint binary instead of a
#                                      release build
#
# Starts a local test server unless MONGODB_URI is set, and uses the
# database idmint_bench_scale and one idmint_bench_scale_tpN per size (each
# dropped first).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
. scripts/bench-lib.sh

seconds="${1:-20}"
sizes="${BENCH_SCALE_SIZES:-1 1000 50000}"
spread="${BENCH_SCALE_SPREAD:-1000}"
warmup="${BENCH_SCALE_WARMUP:-5}"
samples="${BENCH_SCALE_SAMPLES:-20}"
cli_runs="${BENCH_SCALE_CLI_RUNS:-10}"
rounds="${BENCH_SCALE_ROUNDS:-5}"
idle_seconds=11

ensure_wasm_target
ensure_wrk
ensure_mongosh
command -v curl >/dev/null 2>&1 || apt_install curl
bench_binary_and_server
export IDMINT_DB=idmint_bench_scale

work="$(mktemp -d "${TMPDIR:-/tmp}/idmint-bench-scale.XXXXXX")"
trap 'stop_serve; rm -rf "$work"; kill "${IDMINT_SERVER_PID:-}" 2>/dev/null || true; rm -rf "${IDMINT_SERVER_DATA:-}" "${IDMINT_SERVER_DATA:-}.log"' EXIT

shell() { "$IDMINT_MONGOSH" "$MONGODB_URI" --quiet "$@"; }

# The counters' names, as scripts/bench-scale-fill.js writes them.
counter_name() { printf 'k%06d' "$1"; }

# A fresh database with counter 0 made by the CLI (which also makes the
# index of prefixes); the fill script copies its shape.
shell --eval "db.getSiblingDB('$IDMINT_DB').dropDatabase()" >/dev/null
"$idmint" install >/dev/null
"$idmint" counter create "$(counter_name 0)" --kind cyclic --prefix K000000- >/dev/null
# Asked once by each fresh server before anything is measured, so that the
# single-request figures are a counter's first request, not the server's
# (its first connections to the database, its first policy instance).
"$idmint" counter create first-of-server --kind cyclic --prefix W- >/dev/null
filled=1

# Fills the database up to $1 counters.
fill_to() {
  [ "$1" -gt "$filled" ] || return 0
  say "adding counters $filled to $(($1 - 1))"
  BENCH_FILL_FROM=$filled BENCH_FILL_TO=$1 shell --file scripts/bench-scale-fill.js >&2
  filled=$1
}

# The database of the throughput figures at size $1.
throughput_db() { printf '%s_tp%s' "$IDMINT_DB" "$1"; }

# A fresh database of $1 counters for the throughput figures.
make_throughput_db() { # size
  local main=$IDMINT_DB
  IDMINT_DB="$(throughput_db "$1")"
  shell --eval "db.getSiblingDB('$IDMINT_DB').dropDatabase()" >/dev/null
  "$idmint" install >/dev/null
  "$idmint" counter create "$(counter_name 0)" --kind cyclic --prefix K000000- >/dev/null
  if [ "$1" -gt 1 ]; then
    say "database $IDMINT_DB: adding counters 1 to $(($1 - 1))"
    BENCH_FILL_FROM=1 BENCH_FILL_TO=$1 shell --file scripts/bench-scale-fill.js >&2
  fi
  IDMINT_DB=$main
}

# SAMPLES counters spread over a database of $1, cyclic and autoinc in turn.
sample_counters() {
  local size=$1 n step j index
  n=$((samples < size ? samples : size))
  step=$((size / n))
  for j in $(seq 0 $((n - 1))); do
    index=$((j * step))
    [ "$size" -gt 1 ] && index=$((index - index % 2 + j % 2))
    printf '%s\n' "$(counter_name "$index")"
  done
}

# Asks each counter of $sampled for one ID, one request at a time, and
# prints the JSON line of scenario $2 at size $1 (average, least and most of
# curl's time_total); every answer must have status $3.
single_requests() { # size scenario status
  local size=$1 scenario=$2 status=$3 name answer times=""
  for name in $sampled; do
    answer="$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$url/v1/counters/$name/ids?count=1")"
    if [ "${answer%% *}" != "$status" ]; then
      say "$scenario: counter $name answered ${answer%% *}, not $status"
      cat "$work/serve.log" >&2
      exit 1
    fi
    times="$times ${answer#* }"
  done
  awk -v size="$size" -v scenario="$scenario" -v status="$status" -v times="$times" 'BEGIN {
    n = split(times, t, " "); min = t[1]; max = t[1]
    for (i = 1; i <= n; i++) { sum += t[i]; if (t[i] < min) min = t[i]; if (t[i] > max) max = t[i] }
    printf "{\"size\":%d,\"scenario\":\"%s\",\"status\":%d,\"samples\":%d,\"avg_ms\":%.2f,\"min_ms\":%.2f,\"max_ms\":%.2f}\n",
      size, scenario, status, n, sum * 1000 / n, min * 1000, max * 1000
  }'
}

# The wall and CPU (user + system) milliseconds of one run of the idmint
# command "$@", output discarded: `times` in a subshell that ran only it.
# The fresh server's first request, for a counter outside every sample.
first_of_server() {
  curl -sS -o /dev/null "$url/v1/counters/first-of-server/ids?count=1"
}

timed_run() {
  (
    start=$EPOCHREALTIME
    "$idmint" "$@" >/dev/null
    end=$EPOCHREALTIME
    echo "$start $end"
    times
  ) | LC_ALL=C awk '
    function ms(t, p) { split(t, p, "m"); sub("s", "", p[2]); return (p[1] * 60 + p[2]) * 1000 }
    NR == 1 { wall = ($2 - $1) * 1000 }
    NR == 3 { cpu = ms($1) + ms($2) }
    END { printf "%.1f %.0f\n", wall, cpu }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# `next` against `seq`, alternated.
cli_costs() { # size
  local size=$1 name run
  name="$(counter_name 0)"
  : >"$work/next" && : >"$work/seq"
  for run in $(seq "$cli_runs"); do
    timed_run next "$name" --count 1 >>"$work/next"
    timed_run seq "$name" --count 1 >>"$work/seq"
  done
  awk -v size="$size" -v runs="$cli_runs" \
    -v nw="$(cut -d' ' -f1 "$work/next" | median)" -v sw="$(cut -d' ' -f1 "$work/seq" | median)" \
    -v nc="$(cut -d' ' -f2 "$work/next" | median)" -v sc="$(cut -d' ' -f2 "$work/seq" | median)" 'BEGIN {
    printf "{\"size\":%d,\"scenario\":\"cli\",\"runs\":%d,\"next_wall_ms\":%.1f,\"seq_wall_ms\":%.1f,\"wall_ratio\":%.2f,\"next_cpu_ms\":%d,\"seq_cpu_ms\":%d}\n",
      size, runs, nw, sw, nw / sw, nc, sc
  }'
}

# The server's answers so far by HTTP status, "STATUS COUNT" a line.
answers_by_status() {
  curl -fsS "$admin/metrics" |
    sed -n 's/^idmint_http_requests_total{.*status="\([0-9]*\)".*} \([0-9]*\)$/\1 \2/p' |
    awk '{ n[$1] += $2 } END { for (s in n) print s, n[s] }'
}

# Goes round $2 counters for $seconds, after the warm-up, and prints the
# JSON line of the throughput at size $1, with the server's answers by
# status and the machine's load average when it began.
throughput() { # size counters round
  local line before load
  export WRK_COUNTERS=$2 WRK_ACCEPT=text/plain
  wrk -t2 -c32 -d"${warmup}s" --timeout 30s -s scripts/wrk-round-robin.lua "$url" >/dev/null
  load="$(cut -d' ' -f1 /proc/loadavg)"
  before="$(answers_by_status)"
  line="$(measure_wrk scripts/wrk-round-robin.lua "$url" --timeout 30s)"
  printf '{"size":%d,"scenario":"throughput","round":%d,"counters_asked":%d,"load_1m":%s,"statuses":{%s},%s\n' \
    "$1" "$3" "$2" "$load" "$( (sed 's/^/before /' <<<"$before"; answers_by_status) |
      awk '$1 == "before" { n[$2] -= $3; next } { n[$1] += $2 } END {
        for (s in n) if (n[s]) printf "%s\"%s\":%d", (k++ ? "," : ""), s, n[s] }')" "$line"
}

# A field of a JSON line.
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$1"; }

results="$work/results"
: >"$results"
# Runs "$@" and prints its line, keeping it for the table.
emit() {
  local line
  line="$("$@")"
  echo "$line"
  echo "$line" >>"$results"
}
# The line of scenario $1 at size $size.
of() { grep "^{\"size\":$size,\"scenario\":\"$1\"" "$results"; }

for size in $sizes; do
  fill_to "$size"
  sampled="$(sample_counters "$size")"
  asked=$((spread < size ? spread : size))

  # Every counter served: the default policy for the cyclic ones, decimal
  # for the autoinc ones.
  start_serve "$idmint" --policy builtin:default --policy-for autoinc=builtin:decimal
  say "$size counters: idmint serve at $url"
  first_of_server
  emit single_requests "$size" first 200
  sleep "$idle_seconds" # the idle time is what is measured
  emit single_requests "$size" idle 200
  stop_serve

  # No counter served: decimal (no time) for the cyclic ones, the two-digit
  # default for the autoinc ones.
  start_serve "$idmint" --policy builtin:decimal --policy-for autoinc=builtin:default
  first_of_server
  emit single_requests "$size" refused 409
  emit single_requests "$size" refused_again 409
  stop_serve

  emit cli_costs "$size"
done

# Throughput: every size in each round, each round starting at the next.
for size in $sizes; do make_throughput_db "$size"; done
read -r -a size_list <<<"$sizes"
for round in $(seq "$rounds"); do
  for k in "${!size_list[@]}"; do
    size="${size_list[$(((round - 1 + k) % ${#size_list[@]}))]}"
    asked=$((spread < size ? spread : size))
    main_db=$IDMINT_DB
    IDMINT_DB="$(throughput_db "$size")"
    start_serve "$idmint" --policy builtin:default --policy-for autoinc=builtin:decimal
    IDMINT_DB=$main_db
    say "round $round, $size counters: throughput"
    emit throughput "$size" "$asked" "$round"
    stop_serve
  done
done

# The median of field $1 over the throughput lines at $size.
throughput_median() {
  of throughput | while read -r line; do field "$line" "$1"; done | median
}

# The table, and the ratio of the throughput at the largest size to that at
# the smallest.
{
  echo
  echo "| counters | ok req/s | non-2xx | p99 ms | first ms | idle ms | refused ms | refused again ms | next / seq wall ms |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for size in $sizes; do
    cli="$(of cli)"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s (%sx) |\n' "$size" \
      "$(throughput_median ok_per_sec)" "$(throughput_median non_2xx)" "$(awk -v us="$(throughput_median p99_us)" 'BEGIN { printf "%.1f", us / 1000 }')" \
      "$(field "$(of first)" avg_ms)" "$(field "$(of idle)" avg_ms)" \
      "$(field "$(of refused)" avg_ms)" "$(field "$(of refused_again)" avg_ms)" \
      "$(field "$cli" next_wall_ms)" "$(field "$cli" seq_wall_ms)" "$(field "$cli" wall_ratio)"
  done
  size="${sizes%% *}"
  small="$(throughput_median ok_per_sec)"
  small_rounds="$(of throughput | while read -r line; do field "$line" ok_per_sec; done | tr '\n' ' ')"
  size="${sizes##* }"
  large="$(throughput_median ok_per_sec)"
  large_rounds="$(of throughput | while read -r line; do field "$line" ok_per_sec; done | tr '\n' ' ')"
  awk -v small="$small" -v large="$large" -v a="${sizes%% *}" -v b="${sizes##* }" -v rounds="$rounds" \
    -v sr="$small_rounds" -v lr="$large_rounds" 'BEGIN {
      printf "\nthroughput at %d counters / at %d, medians of %d rounds: %.3f (target >= 0.8)\n", b, a, rounds, small ? large / small : 0
      n = split(sr, s, " "); split(lr, l, " ")
      printf "round by round:"
      for (i = 1; i <= n; i++) printf " %.3f", s[i] ? l[i] / s[i] : 0
      printf "\n"
    }'
}
say "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
