#!/usr/bin/env bash
# Load test: the hosted invoice example against the local server on the embedded store (store
# writes included: every answer claims its free call and records its outcome, fsynced by group
# commit). The load generator (wrk, Debian package `wrk`; installed if missing) runs on the same
# machine. Usage: scripts/loadtest.sh [connections...]   (default: 1 32 128; 10 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
cargo build --release --locked --bin verifier 2>/dev/null
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$work/body.json" <<'PY'
import json, sys
r = json.load(open("shared/tests/data/hosted-receipts.json"))["receipts"][0]
body = json.loads(r["request_body_json"]); body["agent_id"] = "seller-load"
open(sys.argv[1], "w").write(json.dumps(body))
PY
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/body.json"); wrk.body = f:read("*a"); f:close()
done = function(summary, latency, requests)
  io.write(string.format("codes: non-2xx/3xx=%d\n", summary.errors.status))
  io.write(string.format("p50=%.0fus p99=%.0fus\n", latency:percentile(50), latency:percentile(99)))
end
LUA
start_ns=$(date +%s%N)
RUST_LOG=warn VERIFIER_FREE_ALLOWANCE_PER_DAY=1000000000 ./target/release/verifier serve \
  --listen "127.0.0.1:$port" --data-dir "$work/data" >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.005; done
echo "cold start (process start to first 200 on /health): $(( ($(date +%s%N) - start_ns) / 1000000 )) ms"
for c in "${@:-1 32 128}"; do
  for n in $c; do
    echo "--- $n connections"
    wrk -t"$(( n < 2 ? 1 : 2 ))" -c"$n" -d10s --latency -s "$work/post.lua" "http://127.0.0.1:$port/verify/schema" \
      | grep -E "Requests/sec|codes|p50|Latency  "
  done
done
echo "peak RSS of the server: $(grep VmHWM /proc/$pid/status | awk '{print $2, $3}')"
