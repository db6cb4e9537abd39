#!/usr/bin/env python3
"""Instructions per call of the local server, REST against MCP, under callgrind.

Usage: instructions.py BINARY [CALLS] [WARMUP]

Starts `BINARY serve` under valgrind's callgrind (every thread counted, fresh data directory,
free allowance and budget lifted so every call is a real signed verification) and sends, over
one keep-alive connection, the hosted invoice (shared/tests/data/hosted-receipts.json,
receipts[0]) as `POST /verify/schema` and as MCP `tools/call verify_schema` (protocol version
2025-11-25), and, for scale, MCP `tools/list` and `GET /health`. For each, WARMUP calls (default 100) are sent first, then the counters are zeroed
(`callgrind_control -z`), CALLS calls (default 1000) are sent, and the counters dumped: the
instructions of the whole server divided by CALLS. Deterministic (instructions, not time), so
two builds compare side by side on a machine whose speed drifts. Prints JSON. KEEP_PROFILES=DIR
keeps each dump as DIR/rest.callgrind and DIR/mcp.callgrind (for callgrind_annotate).
Needs valgrind (Debian's `valgrind`).
"""
import glob
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from coldstart import free_port  # this script's folder is on the path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def invoice():
    with open(os.path.join(ROOT, "shared/tests/data/hosted-receipts.json")) as f:
        return json.loads(json.load(f)["receipts"][0]["request_body_json"])


def calls(port):
    body = invoice()
    rest = ("/verify/schema", json.dumps(body).encode(), {"content-type": "application/json"})
    mcp = ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "verify_schema", "arguments": body}}).encode(),
           {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25"})
    tools_list = ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
                  mcp[2])
    health = ("/health", None, {})
    return {"rest": rest, "mcp": mcp, "mcp_tools_list": tools_list, "health": health}


def send(conn, call, n):
    path, body, headers = call
    for _ in range(n):
        conn.request("POST" if body else "GET", path, body=body, headers=headers)
        r = conn.getresponse()
        answer = r.read()
        verification = path != "/health" and b'"tools"' not in answer
        if r.status != 200 or b'"isError":true' in answer or (
                verification and b'"verification_id"' not in answer):
            raise SystemExit(f"{path}: {r.status} {answer[:300]!r}")


def totals(out_file):
    # The dump's "summary:" (or "totals:") line: instructions since the counters were zeroed.
    dumps = sorted(glob.glob(out_file + "*"), key=os.path.getmtime)
    with open(dumps[-1]) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit("no totals in " + dumps[-1])


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", binary, "serve",
             "--listen", f"127.0.0.1:{port}", "--data-dir", os.path.join(tmp, "data"),
             "--public-url", f"http://127.0.0.1:{port}", "--free-allowance-per-day", "1000000000",
             "--free-calls-total-per-day", "1000000000", "--log-format", "json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    conn.request("GET", "/health")
                    if conn.getresponse().read() and True:
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("the server did not start")
                    time.sleep(0.5)
            result = {}
            for name, call in calls(port).items():
                send(conn, call, warmup)
                subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, **quiet)
                send(conn, call, n)
                subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, **quiet)
                result[name] = round(totals(out_file) / n)
                if os.environ.get("KEEP_PROFILES"):
                    # The dump for callgrind_annotate: KEEP_PROFILES=DIR keeps DIR/<name>.callgrind.
                    dumps = sorted(glob.glob(out_file + "*"), key=os.path.getmtime)
                    os.makedirs(os.environ["KEEP_PROFILES"], exist_ok=True)
                    shutil.copy(dumps[-1], os.path.join(os.environ["KEEP_PROFILES"], name + ".callgrind"))
            result["mcp_over_rest"] = round(result["mcp"] / result["rest"], 3)
            print(json.dumps({"binary": binary, "calls": n, "instructions_per_call": result}))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
