#!/usr/bin/env bash
# Benchmark of the local server on the embedded store, with a real load generator (wrk).
#
# What it does:
#   1. installs wrk (Debian package) if it is missing, and builds the release binary
#      (`cargo build --release --locked -p verifier`);
#   2. cold start: starts `verifier serve` COLD_RUNS times, each on a fresh data directory, and
#      measures process start to the first 200 on GET /health and on POST /verify/schema
#      (scripts/bench/coldstart.py); prints the medians;
#   3. for each variant, starts a fresh server (fresh temp data dir, free allowance 1e9 so every
#      answer is a real signed verification, never a 402), checks that one request returns 200
#      with a signed receipt, then drives POST /verify/schema with the hosted invoice example
#      (shared/tests/data/hosted-receipts.json, receipts[0].request_body_json) with
#      `wrk --latency` at each connection count (1 thread for 1 connection, 2 otherwise);
#      reads the server's peak RSS (VmHWM in /proc/PID/status) after its load runs;
#   4. prints a summary table (requests/s, p50, p99, non-2xx, socket errors, peak RSS) and fails
#      if any response was not 2xx or any socket error occurred;
#   5. the denial-of-wallet benchmark (server/examples/dow.rs): the costliest requests we know,
#      free and unpaid, at 32 connections from four addresses while a legitimate client sends
#      the invoice example at DOW_RATE/s: the server CPU of one such request (max, mean), the
#      legitimate client's p50/p99 and success alone and under attack, /health's worst latency,
#      the server's peak RSS. Fails when a refused or unpaid request costs more than 25 ms of
#      CPU, the legitimate p99 under attack is over 2x its p99 alone, or peak RSS is over 100 MiB.
#
# Variants:
#   test  the example as is: agent id `test-seller-invoice-agent` (test- ids write no history;
#         the free-allowance claim per client address is still a store write);
#   real  the same body with agent id `seller-bench`: every answer also records its outcome
#         in the agent's history (the full store write path, fsynced by group commit).
#
# Environment:
#   DURATION   wrk duration of each run (default 15s)
#   CONNS      connection counts (default "1 32 128")
#   VARIANTS   variants to run (default "test real")
#   COLD_RUNS  cold-start runs (default 7; 0 skips)
#   PIN        "1": server on CPU 0 and wrk on CPU 1 (taskset); default: no pinning
#   DURABILITY server --durability (default sync)
#   WARMUP     warm-up duration before each variant (default 2s)
#   DOW        "0" skips the denial-of-wallet benchmark (default 1)
#   DOW_SECS   its duration per phase in seconds (default 15); DOW_RATE its legitimate rate (200/s)
#   PEER       "0" skips the side-by-side run with the Python peer (default 1): bench/python-peer,
#              a lean FastAPI implementation of POST /verify/schema (same checks, the same four
#              hashes — checked equal to ours — and an Ed25519 signature; no store), installed
#              into bench/.venv, run by uvicorn with PEER_WORKERS processes (default: CPUs);
#              PEER_ROUNDS alternating rounds (default 2) of ours (variant real, store writes and
#              fsync on) and the peer at PEER_CONNS connections (default 32); prints each ratio.
#              Each round also measures the HTTP floor (server/examples/http_floor.rs: the same
#              listener and request threads, the body read and our own answer sent back, no work):
#              the most any server answering this call reaches on this machine under this wrk
#   BENCH_BIN  the verifier binary to measure (default target/release/verifier), e.g. an older
#              build, to compare two versions side by side in one session
#
# Usage: scripts/bench.sh            (about 2 x 3 x DURATION plus a few seconds)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-15s}
CONNS=${CONNS:-1 32 128}
VARIANTS=${VARIANTS:-test real}
COLD_RUNS=${COLD_RUNS:-7}
PIN=${PIN:-0}
DURABILITY=${DURABILITY:-sync}
WARMUP=${WARMUP:-2s}
DOW=${DOW:-1}
DOW_SECS=${DOW_SECS:-15}
DOW_RATE=${DOW_RATE:-200}
PEER=${PEER:-1}
PEER_ROUNDS=${PEER_ROUNDS:-2}
PEER_CONNS=${PEER_CONNS:-32}
PEER_WORKERS=${PEER_WORKERS:-$(nproc)}

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v wrk >/dev/null; then
  sudo_if_needed apt-get update -qq
  sudo_if_needed apt-get install -y -qq wrk
fi
for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "bench.sh needs $tool" >&2; exit 1; }
done

cargo build --release --locked -p verifier --bin verifier --example dow --example http_floor
bin=${BENCH_BIN:-$PWD/target/release/verifier}

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The request bodies: the hosted invoice example, and the same with a non-test agent id.
python3 - "$work" <<'PY'
import json, sys
r = json.load(open("shared/tests/data/hosted-receipts.json"))["receipts"][0]
open(f"{sys.argv[1]}/body-test.json", "w").write(r["request_body_json"])
body = json.loads(r["request_body_json"])
assert body["agent_id"].startswith("test-"), body["agent_id"]
body["agent_id"] = "seller-bench"
open(f"{sys.argv[1]}/body-real.json", "w").write(json.dumps(body, indent=2))
PY

server_cpu=() wrk_cpu=() pin_arg=""
if [ "$PIN" = 1 ]; then
  server_cpu=(taskset -c 0) wrk_cpu=(taskset -c 1) pin_arg=0
fi

echo "== machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), $(free -m | awk '/^Mem:/ {print $2}') MiB RAM, $(uname -sr)"
echo "== wrk: $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2); duration $DURATION; durability $DURABILITY; pinning: $([ "$PIN" = 1 ] && echo 'server CPU 0, wrk CPU 1' || echo none)"

cold=""
if [ "$COLD_RUNS" -gt 0 ]; then
  echo "== cold start ($COLD_RUNS runs, fresh data dir each)"
  python3 scripts/bench/coldstart.py "$bin" "$work/body-test.json" "$COLD_RUNS" $pin_arg | tee "$work/cold.txt"
  cold=$(grep '^COLD' "$work/cold.txt")
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

rows=()
failed=0
for variant in $VARIANTS; do
  body=$work/body-$variant.json
  [ -f "$body" ] || { echo "unknown variant $variant" >&2; exit 1; }
  echo "== variant $variant (agent id $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agent_id"])' "$body"))"
  port=$(free_port)
  data=$work/data-$variant
  RUST_LOG=${SERVER_LOG:-warn} "${server_cpu[@]}" "$bin" serve --listen "127.0.0.1:$port" --data-dir "$data" \
    --free-allowance-per-day 1000000000 --free-calls-total-per-day 1000000000000 --durability "$DURABILITY" >"$work/server-$variant.log" 2>&1 &
  pid=$!
  for _ in $(seq 1000); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.01
  done
  url=http://127.0.0.1:$port/verify/schema
  # One real verification first: 200 and a signed receipt (not a 402 or an error).
  code=$(curl -s -o "$work/first.json" -w '%{http_code}' -H 'content-type: application/json' \
    --data-binary @"$body" "$url")
  python3 - "$work/first.json" "$code" <<'PY'
import json, sys
code = sys.argv[2]
doc = json.load(open(sys.argv[1]))
assert code == "200", f"expected 200, got {code}: {doc}"
assert doc.get("attestation", {}).get("signature"), "no signed attestation in the answer"
print(f"   first answer: 200, result={doc['result']}, signed by {doc['attestation'].get('key_version', '?')}")
PY
  BENCH_BODY=$body "${wrk_cpu[@]}" wrk -t2 -c32 -d"$WARMUP" -s scripts/bench/post.lua "$url" >/dev/null
  for c in $CONNS; do
    threads=$(( c < 2 ? 1 : 2 ))
    out=$(BENCH_BODY=$body "${wrk_cpu[@]}" wrk -t"$threads" -c"$c" -d"$DURATION" --latency \
      -s scripts/bench/post.lua "$url")
    line=$(echo "$out" | grep '^BENCH')
    get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    errs=$(( $(get connect) + $(get read) + $(get write) + $(get timeout) ))
    non2xx=$(get non2xx)
    if [ "$non2xx" != 0 ] || [ "$errs" != 0 ]; then failed=1; fi
    printf -v row '| %-7s | %5s | %10s | %9.2f | %9.2f | %9.2f | %7s | %6s |' "$variant" "$c" \
      "$(get rps)" "$(echo "$(get p50_us)/1000" | bc -l)" "$(echo "$(get p99_us)/1000" | bc -l)" \
      "$(echo "$(get max_us)/1000" | bc -l)" "$non2xx" "$errs"
    echo "$row"
    rows+=("$row")
  done
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  rows+=("| $variant: peak RSS (VmHWM) $(( hwm / 1024 )) MiB ($hwm kB), RSS at end $(( rss / 1024 )) MiB |")
  if grep -qiE 'panick|ERROR' "$work/server-$variant.log"; then
    echo "server log of $variant has errors or panics:" >&2
    grep -iE 'panick|ERROR' "$work/server-$variant.log" | head >&2
    failed=1
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done

echo
echo "== summary (POST /verify/schema, hosted invoice example, $DURATION per run)"
echo "| variant | conns | requests/s | p50 (ms) | p99 (ms) | max (ms) | non-2xx | socket errors |"
echo "|---------|-------|------------|----------|----------|----------|---------|---------------|"
printf '%s\n' "${rows[@]}"
[ -n "$cold" ] && echo "cold start: $cold"
if [ "$failed" != 0 ]; then
  echo "FAILED: some responses were not 2xx, a socket error occurred, or the server logged an error" >&2
  exit 1
fi
echo "OK: zero non-2xx responses"

# One wrk run at $2 connections against URL $1 with body $3: "rps p50_us p99_us non2xx errors".
wrk_run() {
  local threads=$(( $2 < 2 ? 1 : 2 ))
  BENCH_BODY=$3 wrk -t2 -c"$2" -d"$WARMUP" -s scripts/bench/post.lua "$1" >/dev/null
  BENCH_BODY=$3 "${wrk_cpu[@]}" wrk -t"$threads" -c"$2" -d"$DURATION" --latency \
    -s scripts/bench/post.lua "$1" | grep '^BENCH' | tr ' ' '\n' | awk -F= '
      /^rps=/ {r=$2} /^p50_us=/ {p50=$2} /^p99_us=/ {p99=$2} /^non2xx=/ {n=$2}
      /^(connect|read|write|timeout)=/ {e+=$2} END {print r, p50, p99, n, e+0}'
}

# Wait until a POST of body $2 to URL $1 answers 200; leaves the answer in $work/answer.json.
await_200() {
  for _ in $(seq 1500); do
    code=$(curl -s -o "$work/answer.json" -w '%{http_code}' -H 'content-type: application/json' \
      --data-binary @"$2" "$1" || true)
    [ "$code" = 200 ] && return 0
    sleep 0.01
  done
  echo "no 200 from $1" >&2
  return 1
}

if [ "$PEER" != 0 ]; then
  echo
  echo "== side by side with the Python peer (bench/python-peer: FastAPI, uvicorn --workers $PEER_WORKERS), $PEER_CONNS connections, $DURATION per run"
  [ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet --disable-pip-version-check -r bench/python-peer/requirements.txt
  body=$work/body-real.json
  peer_rows=() ratios=() floors=()
  for round in $(seq "$PEER_ROUNDS"); do
    port=$(free_port)
    RUST_LOG=warn "${server_cpu[@]}" "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/data-peer-$round" \
      --free-allowance-per-day 1000000000 --free-calls-total-per-day 1000000000000 --durability "$DURABILITY" >"$work/server-peer.log" 2>&1 &
    pid=$!
    await_200 "http://127.0.0.1:$port/verify/schema" "$body"
    cp "$work/answer.json" "$work/ours.json"
    read -r o_rps o_p50 o_p99 o_non o_err < <(wrk_run "http://127.0.0.1:$port/verify/schema" "$PEER_CONNS" "$body")
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

    port=$(free_port)
    (cd bench/python-peer && exec "${server_cpu[@]}" ../.venv/bin/uvicorn app:app --host 127.0.0.1 --port "$port" \
      --workers "$PEER_WORKERS" --no-access-log --log-level warning) >"$work/peer.log" 2>&1 &
    pid=$!
    await_200 "http://127.0.0.1:$port/verify/schema" "$body"
    python3 - "$work/ours.json" "$work/answer.json" <<'PY'
import json, sys
ours, peer = (json.load(open(p)) for p in sys.argv[1:3])
for key in ("output_hash", "schema_hash", "rules_hash", "request_hash", "result", "errors"):
    assert ours[key] == peer[key], f"the peer's {key} differs from ours: {peer[key]} != {ours[key]}"
assert peer["attestation"]["signature"], "the peer did not sign"
PY
    read -r p_rps p_p50 p_p99 p_non p_err < <(wrk_run "http://127.0.0.1:$port/verify/schema" "$PEER_CONNS" "$body")
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

    port=$(free_port)
    "${server_cpu[@]}" target/release/examples/http_floor --listen "127.0.0.1:$port" --answer "$work/ours.json" \
      >"$work/floor.log" 2>&1 &
    pid=$!
    await_200 "http://127.0.0.1:$port/verify/schema" "$body"
    read -r f_rps f_p50 f_p99 f_non f_err < <(wrk_run "http://127.0.0.1:$port/verify/schema" "$PEER_CONNS" "$body")
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    if [ "$o_non" != 0 ] || [ "$o_err" != 0 ] || [ "$p_non" != 0 ] || [ "$p_err" != 0 ] \
      || [ "$f_non" != 0 ] || [ "$f_err" != 0 ]; then failed=1; fi
    ratio=$(echo "$o_rps / $p_rps" | bc -l)
    ratios+=("$(printf '%.1f' "$ratio")")
    floors+=("$(printf '%.0f req/s: ours %.2f, peer %.3f of it' "$f_rps" "$(echo "$o_rps / $f_rps" | bc -l)" "$(echo "$p_rps / $f_rps" | bc -l)")")
    printf -v row '| %5s | %10.0f | %7.2f | %7.2f | %10.0f | %7.2f | %7.2f | %6.1fx | %10.0f | %7.2f |' "$round" \
      "$o_rps" "$(echo "$o_p50/1000" | bc -l)" "$(echo "$o_p99/1000" | bc -l)" \
      "$p_rps" "$(echo "$p_p50/1000" | bc -l)" "$(echo "$p_p99/1000" | bc -l)" "$ratio" \
      "$f_rps" "$(echo "$f_p50/1000" | bc -l)"
    echo "$row"
    peer_rows+=("$row")
  done
  echo "| round | ours req/s | p50 ms | p99 ms | peer req/s | p50 ms | p99 ms | ratio | floor req/s | p50 ms |"
  echo "|-------|------------|--------|--------|------------|--------|--------|-------|-------------|--------|"
  printf '%s\n' "${peer_rows[@]}"
  echo "ours / Python peer: ${ratios[*]} (same body, hashes checked equal; ours writes and fsyncs the allowance and the history, the peer keeps no store)"
  printf 'HTTP floor (no work, our answer sent back): %s\n' "${floors[@]}"
  if [ "$failed" != 0 ]; then
    echo "FAILED: non-2xx responses or socket errors in the side-by-side run" >&2
    exit 1
  fi
fi

if [ "$DOW" != 0 ]; then
  echo
  echo "== denial of wallet (server/examples/dow.rs, $DOW_SECS s per phase, legitimate $DOW_RATE/s)"
  target/release/examples/dow --duration "$DOW_SECS" --rate "$DOW_RATE" | tee "$work/dow.txt"
  python3 - "$work/dow.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
worst = float(re.search(r"worst server CPU of one refused or unpaid request: ([\d.]+) ms", text).group(1))
ratio = float(re.search(r"\(([\d.]+)× alone\)", text).group(1))
rss = float(re.search(r"peak RSS \(VmHWM\): ([\d.]+) MiB", text).group(1))
failures = []
if worst > 25: failures.append(f"a refused or unpaid request cost {worst} ms of CPU (> 25)")
if ratio > 2: failures.append(f"the legitimate p99 under attack is {ratio}x alone (> 2)")
if rss > 100: failures.append(f"peak RSS {rss} MiB (> 100)")
if failures:
    sys.exit("FAILED: " + "; ".join(failures))
print(f"OK: worst refused/unpaid request {worst} ms of CPU, legitimate p99 {ratio}x, peak RSS {rss} MiB")
PY
fi
