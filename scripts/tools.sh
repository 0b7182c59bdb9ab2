# Sourced by the other scripts: installs, once, what idmint's build and tests
# need, and exports where it is. Later runs find everything cached.
#
#   wasm32-wasip2   the Rust target the policy guest is built for (rustup)
#   secantusd-rs    the MongoDB wire-protocol test server (crates.io: secantus-mdb;
#                   GPL, so it is only ever run as a separate process)
#   mongosh         the MongoDB shell, for the stored-function tests (npm)
#   faketime        libfaketime moves the clocks of clients and servers in the clock tests (apt)
#   tmux            a real terminal for `lock run`'s job-control tests (apt)
#   javac, java     Java 17, to build and test the Java client of `idmint serve` (apt)
#   wrk             HTTP load for the `idmint serve` benchmark (apt; scripts/bench-serve.sh)
#   chromium        a real browser, headless, for the monitor page's test (apt)
#   schemathesis    checks `idmint serve` against its OpenAPI documents (PyPI, in a venv)
#   python-ulid,    code no one here wrote that reads idmint's standard IDs (UUIDv7,
#   uuid (npm)      ULID): python-ulid from PyPI in a venv, uuid from npm
#
# Cache: $IDMINT_TOOLS_DIR (default ~/.cache/idmint). Override the binaries with
# IDMINT_TEST_SERVER_BIN and IDMINT_MONGOSH.

SECANTUS_VERSION="0.5.3-beta.196"
MONGOSH_VERSION="2.12.0"
SCHEMATHESIS_VERSION="4.32.5"
PYTHON_ULID_VERSION="4.1.0"
UUID_NPM_VERSION="14.0.3"
IDMINT_TOOLS_DIR="${IDMINT_TOOLS_DIR:-$HOME/.cache/idmint}"

say() { printf '==> %s\n' "$*" >&2; }

# Installs Debian packages, as root or through sudo.
apt_install() {
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq "$@" >/dev/null
  fi
}

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    say "adding the wasm32-wasip2 Rust target"
    rustup target add wasm32-wasip2
  fi
}

ensure_server() {
  if [ -n "${IDMINT_TEST_SERVER_BIN:-}" ] && [ -x "$IDMINT_TEST_SERVER_BIN" ]; then
    return
  fi
  # One already on PATH at the right version will do.
  if command -v secantusd-rs >/dev/null 2>&1 &&
     secantusd-rs --version 2>/dev/null | grep -qF "$SECANTUS_VERSION"; then
    IDMINT_TEST_SERVER_BIN="$(command -v secantusd-rs)"
    export IDMINT_TEST_SERVER_BIN
    return
  fi
  local root="$IDMINT_TOOLS_DIR/secantus-$SECANTUS_VERSION"
  if [ ! -x "$root/bin/secantusd-rs" ]; then
    if ! command -v cmake >/dev/null 2>&1; then
      say "installing cmake (needed to build the test server)"
      apt_install cmake
    fi
    say "building the test server secantusd-rs $SECANTUS_VERSION (about 4 minutes, once)"
    cargo install secantus-mdb --version "$SECANTUS_VERSION" --ignore-rust-version --locked \
      --root "$root" --quiet
  fi
  export IDMINT_TEST_SERVER_BIN="$root/bin/secantusd-rs"
}

# Installs npm package $2 at version $3 under the directory $1.
npm_into_prefix() {
  say "installing $2 $3 from npm (once)"
  mkdir -p "$1"
  npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2@$3" >/dev/null
}

ensure_mongosh() {
  if [ -n "${IDMINT_MONGOSH:-}" ] && [ -x "$IDMINT_MONGOSH" ]; then
    return
  fi
  local prefix="$IDMINT_TOOLS_DIR/mongosh-$MONGOSH_VERSION"
  [ -x "$prefix/node_modules/.bin/mongosh" ] || npm_into_prefix "$prefix" mongosh "$MONGOSH_VERSION"
  export IDMINT_MONGOSH="$prefix/node_modules/.bin/mongosh"
}

ensure_faketime() {
  if command -v faketime >/dev/null 2>&1; then
    return
  fi
  say "installing faketime (the clock tests run clients and servers on libfaketime)"
  apt_install faketime
}

ensure_tmux() {
  if command -v tmux >/dev/null 2>&1; then
    return
  fi
  say "installing tmux (a real terminal for the job-control tests of lock run)"
  apt_install tmux
}

ensure_java() {
  if command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then
    return
  fi
  say "installing Java 17 (the Java client's tests)"
  apt_install openjdk-17-jdk-headless
}

ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    return
  fi
  say "installing chromium (the monitor page is tested in a real browser)"
  apt_install chromium
}

ensure_wrk() {
  if command -v wrk >/dev/null 2>&1; then
    return
  fi
  say "installing wrk (HTTP load for the serve benchmark)"
  apt_install wrk
}

# Installs PyPI package $2 at version $3 into a venv at $1 (made if missing).
pip_into_venv() {
  say "installing $2 $3 from PyPI into a venv (once)"
  python3 -m venv "$1"
  "$1/bin/pip" install --quiet --disable-pip-version-check "$2==$3"
}

ensure_schemathesis() {
  if [ -n "${IDMINT_SCHEMATHESIS:-}" ] && [ -x "$IDMINT_SCHEMATHESIS" ]; then
    return
  fi
  local venv="$IDMINT_TOOLS_DIR/schemathesis-$SCHEMATHESIS_VERSION"
  [ -x "$venv/bin/schemathesis" ] || pip_into_venv "$venv" schemathesis "$SCHEMATHESIS_VERSION"
  export IDMINT_SCHEMATHESIS="$venv/bin/schemathesis"
}

# The standard IDs' interop checks (tests/standard_ids.rs): a Python with
# python-ulid (IDMINT_INTEROP_PYTHON) and a directory whose node_modules holds
# the uuid package (IDMINT_UUID_NPM_DIR), where node resolves `import 'uuid'`.
ensure_interop() {
  if [ -z "${IDMINT_INTEROP_PYTHON:-}" ] || [ ! -x "$IDMINT_INTEROP_PYTHON" ]; then
    local venv="$IDMINT_TOOLS_DIR/python-ulid-$PYTHON_ULID_VERSION"
    "$venv/bin/python" -c 'import ulid' 2>/dev/null ||
      pip_into_venv "$venv" python-ulid "$PYTHON_ULID_VERSION"
    export IDMINT_INTEROP_PYTHON="$venv/bin/python"
  fi
  if [ -z "${IDMINT_UUID_NPM_DIR:-}" ] || [ ! -d "$IDMINT_UUID_NPM_DIR/node_modules/uuid" ]; then
    local prefix="$IDMINT_TOOLS_DIR/uuid-npm-$UUID_NPM_VERSION"
    [ -d "$prefix/node_modules/uuid" ] || npm_into_prefix "$prefix" uuid "$UUID_NPM_VERSION"
    export IDMINT_UUID_NPM_DIR="$prefix"
  fi
}

# Starts secantusd-rs on a free loopback port with a fresh data dir, waits until
# it says it is listening, exports MONGODB_URI, and stops it when the calling
# script exits.
start_local_server() {
  ensure_server
  local data log line port
  data="$(mktemp -d "${TMPDIR:-/tmp}/idmint-server.XXXXXX")"
  log="$data.log"
  # Port 0: the server picks a free port and prints "listening on HOST:PORT".
  "$IDMINT_TEST_SERVER_BIN" --host 127.0.0.1 --port 0 --storage-path "$data" \
    --cache-size 256M --log-file-max 32MB >"$log" 2>&1 &
  IDMINT_SERVER_PID=$!
  IDMINT_SERVER_DATA=$data
  trap 'kill "$IDMINT_SERVER_PID" 2>/dev/null; wait "$IDMINT_SERVER_PID" 2>/dev/null; rm -rf "$IDMINT_SERVER_DATA" "$IDMINT_SERVER_DATA.log"' EXIT
  # Follow the log until the server reports it is listening (or exits).
  line="$(timeout 60 tail -n +1 -f --pid="$IDMINT_SERVER_PID" "$log" | grep -m1 'listening on ' || true)"
  port="${line##*:}"
  if [ -z "$port" ]; then
    say "the local server did not start; its log:"
    cat "$log" >&2
    return 1
  fi
  export MONGODB_URI="mongodb://127.0.0.1:$port/"
  say "started a local secantusd-rs at $MONGODB_URI"
}
