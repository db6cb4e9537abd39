-- wrk script for scripts/bench.sh: POST the body in $BENCH_BODY to the URL given on the command
-- line, and print one machine-readable summary line (parsed by bench.sh) at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local path = os.getenv("BENCH_BODY")
local f = assert(io.open(path, "rb"), "BENCH_BODY must name the request body file")
wrk.body = f:read("*a")
f:close()

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f "
      .. "non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
