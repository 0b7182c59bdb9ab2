# Sourced by the benchmark scripts of `idmint serve` (after tools.sh): runs
# the server in the background and measures it. The caller sets `work` (a
# scratch directory) and, for measure_wrk, `seconds`.
#
#   bench_binary_and_server      sets idmint: $BENCH_SERVE_BIN, else a
#                                release build; starts a local test
#                                server unless MONGODB_URI is set
#   start_serve IDMINT ARGS...   `IDMINT serve ARGS...` on free loopback
#                                ports; returns once it listens, with
#                                serve_pid, url and admin set
#   stop_serve                   SIGTERM, and waits for it to end
#   server_ticks                 its CPU time so far (user + system), ticks
#   measure_wrk SCRIPT URL [OPTIONS...]
#                                wrk for $seconds with the wrk script SCRIPT
#                                (whose last line is the JSON of
#                                wrk-report.lua); prints that line's fields,
#                                without braces, after the server's CPU time
#                                per request; WRK_CONNECTIONS connections
#                                (default 32)

serve_pid=""
tick_hz="$(getconf CLK_TCK)"

bench_binary_and_server() {
  if [ -n "${BENCH_SERVE_BIN:-}" ]; then
    idmint="$BENCH_SERVE_BIN"
  else
    say "building idmint (release)"
    cargo build --locked --release -p idmint-cli --quiet
    idmint="${CARGO_TARGET_DIR:-target}/release/idmint"
  fi
  if [ -z "${MONGODB_URI:-}" ]; then
    start_local_server
  fi
}

start_serve() { # idmint args...
  local idmint=$1 listening
  shift
  "$idmint" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --log-format json "$@" \
    >"$work/serve.out" 2>"$work/serve.log" &
  serve_pid=$!
  for _ in $(seq 300); do
    grep -q '^listening on ' "$work/serve.out" 2>/dev/null && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  listening="$(sed -n 's/^listening on //p' "$work/serve.out")"
  url="${listening%% *}"
  admin="$(sed -n 's/.*(admin on \(.*\))$/\1/p' <<<"$listening")"
  [ -n "$url" ] && [ -n "$admin" ] || { cat "$work/serve.log" >&2; return 1; }
}

stop_serve() {
  if [ -n "$serve_pid" ]; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
  fi
}

server_ticks() { awk '{ print $14 + $15 }' "/proc/$serve_pid/stat"; }

# The requests a JSON line of wrk-report.lua counts.
requests_of() { sed -n 's/.*"requests":\([0-9]*\).*/\1/p' <<<"$1"; }

measure_wrk() { # script url [wrk options...]
  local script=$1 target=$2 line before after requests
  shift 2
  before="$(server_ticks)"
  line="$(wrk -t2 -c"${WRK_CONNECTIONS:-32}" -d"${seconds}s" --latency "$@" -s "$script" "$target" | tail -n 1)"
  after="$(server_ticks)"
  # The server's CPU per request: unlike requests/s, it hardly moves with
  # what else the (shared) machine runs.
  requests="$(requests_of "$line")"
  printf '"server_cpu_us_per_request":%.1f,%s\n' \
    "$(awk -v t=$((after - before)) -v hz="$tick_hz" -v r="$requests" 'BEGIN { print r ? t * 1e6 / hz / r : 0 }')" \
    "${line#\{}"
}
