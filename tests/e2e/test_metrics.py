"""The local server's metrics (`--metrics-listen`): after a scripted workload — free passes and
fails over REST and MCP, over-allowance 402s, a probe, invalid requests, a refused payment and a
payment settled on the local chain — `GET /metrics` on the metrics listener has exactly the
counts the workload produced, `promtool check metrics` (Debian's `prometheus`) finds nothing
to report, and the public port answers 404 on `/metrics`."""
import base64
import json
import re
import shutil
import subprocess
import sys

import httpx
import pytest

from conftest import ROOT, free_port

sys.path.insert(0, str(ROOT / "tests" / "x402"))
from test_payments import INVOICE, chain, pay_header, server_env  # noqa: E402,F401 (chain: the fixture)

pytestmark = pytest.mark.filterwarnings("ignore:Client is deprecated")

MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}
SAMPLE = re.compile(r'^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-z_][a-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text):
    """Every sample of a Prometheus text exposition as {(name, frozenset(labels)): value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(metrics, name, **labels):
    return metrics.get((name, frozenset(labels.items())), 0.0)


def mcp_verify(server, arguments, id_=1):
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
            "params": {"name": "verify_schema", "arguments": arguments}}
    r = httpx.post(server.url + "/mcp", json=body, headers=MCP_HEADERS, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["result"]


def test_the_metrics_count_exactly_what_the_workload_did(start_server, chain):
    metrics_port = free_port()
    server = start_server(allowance=3, env=server_env(chain),
                          args=["--metrics-listen", f"127.0.0.1:{metrics_port}"])
    url = server.url + "/verify/schema"
    passing = {"task_id": "m-pass", "agent_id": "test-metrics", "expected_schema": {"type": "object"},
               "submitted_output": {"a": 1}}
    failing = dict(INVOICE, agent_id="test-metrics")

    # Free: a pass and a fail over REST, a pass over MCP (the allowance of 3).
    assert httpx.post(url, json=passing).json()["result"] == "pass"
    assert httpx.post(url, json=failing).json()["result"] == "fail"
    assert mcp_verify(server, passing)["structuredContent"]["result"] == "pass"
    # The allowance is spent: two REST 402s and one over MCP.
    spent = [httpx.post(url, json=passing) for _ in range(2)]
    assert [r.status_code for r in spent] == [402, 402]
    assert mcp_verify(server, passing, 2)["isError"] is True
    # An x402 probe, two invalid requests, a 404 (the public port has no /metrics).
    assert httpx.post(url, content=b"").status_code == 402
    assert [httpx.post(url, json={"task_id": 1}).status_code for _ in range(2)] == [422, 422]
    assert httpx.get(server.url + "/metrics").status_code == 404
    # A payment the service refuses, then one settled on the local chain.
    junk = base64.b64encode(json.dumps({"x402Version": 2, "payload": {}}).encode()).decode()
    refused = httpx.post(url, json=passing, headers={"PAYMENT-SIGNATURE": junk})
    assert refused.status_code == 402
    refusal_code = refused.json()["payment_error"]["code"]
    header = pay_header(chain, spent[0].headers["payment-required"])
    paid = httpx.post(url, json=failing, headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert paid.status_code == 200, paid.text
    assert paid.json()["result"] == "fail"

    exposition = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert exposition.status_code == 200
    assert exposition.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert httpx.get(f"http://127.0.0.1:{metrics_port}/other").status_code == 404
    m = samples(exposition.text)

    v = "verifier_verifications_total"
    assert value(m, v, transport="rest", result="pass", paid="false") == 1
    assert value(m, v, transport="rest", result="fail", paid="false") == 1
    assert value(m, v, transport="mcp", result="pass", paid="false") == 1
    assert value(m, v, transport="rest", result="fail", paid="true") == 1
    assert sum(x for (name, _), x in m.items() if name == v) == 4

    p = "verifier_payment_required_total"
    assert value(m, p, reason="allowance_spent") == 3
    assert value(m, p, reason="probe") == 1
    assert sum(x for (name, _), x in m.items() if name == p) == 4

    pay = "verifier_payments_total"
    assert value(m, pay, network="none", outcome="refused", code=refusal_code) == 1
    assert value(m, pay, network="eip155:8453", outcome="verified", code="none") == 1
    assert value(m, pay, network="eip155:8453", outcome="settled", code="none") == 1
    assert sum(x for (name, _), x in m.items() if name == pay) == 3
    assert value(m, "verifier_revenue_usdc_atomic_total", network="eip155:8453") == 20_000

    assert value(m, "verifier_refusals_total", code="invalid_request") == 2
    assert value(m, "verifier_refusals_total", code="not_found") == 1

    r = "verifier_requests_total"
    assert value(m, r, route="/verify/schema", status="200") == 3
    assert value(m, r, route="/verify/schema", status="402") == 4
    assert value(m, r, route="/verify/schema", status="422") == 2
    assert value(m, r, route="/mcp", status="200") == 2
    assert value(m, r, route="unmatched", status="404") == 1
    assert value(m, "verifier_request_duration_seconds_count", route="/verify/schema") == 9
    # The store and the facilitator were timed (the facilitator: verify and settle, and the
    # supported-kinds lookup at start).
    assert value(m, "verifier_dependency_duration_seconds_count", dependency="store", outcome="ok") > 0
    assert value(m, "verifier_dependency_duration_seconds_count", dependency="facilitator", outcome="ok") >= 2
    assert any(name == "verifier_signing_key_info" for name, _ in m)
    # Nothing a caller chose is a label value.
    assert "test-metrics" not in exposition.text and "m-pass" not in exposition.text

    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian's prometheus package) is installed by the test command"
    checked = subprocess.run([promtool, "check", "metrics"], input=exposition.text, capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr


def test_the_request_log_is_json_with_a_request_id_and_no_caller_content(tmp_path):
    import os
    import time
    from conftest import BIN
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data")],
                            env=dict(os.environ, RUST_LOG="info"), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    marker = "callercontent" + "91ab"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        r = httpx.post(url + "/verify/schema", json={"task_id": marker, "agent_id": marker,
                                                     "expected_schema": {}, "submitted_output": marker})
        assert r.status_code == 200
        bad = httpx.post(url + "/verify/schema", json={"task_id": 1})
        assert bad.status_code == 422
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    request_id = r.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id) and bad.headers["x-request-id"] != request_id
    text = (tmp_path / "server.log").read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    fields = [line["fields"] for line in lines]
    requests = [f for f in fields if f["message"] == "request"]
    ours = [f for f in requests if f["request_id"] == request_id]
    assert len(ours) == 1
    assert ours[0]["route"] == "/verify/schema" and ours[0]["status"] == 200
    assert ours[0]["price_path"] == "free" and ours[0]["code"] == ""
    assert [f["code"] for f in requests if f["request_id"] == bad.headers["x-request-id"]] == ["invalid_request"]
    # Only these fields: no body, agent ID, task, address or header.
    allowed = {"message", "request_id", "method", "route", "status", "duration_us", "price_path", "code"}
    assert all(set(f) <= allowed for f in requests), requests
    start = [f for f in fields if f["message"] == "verifier listening"]
    assert len(start) == 1 and start[0]["version"] and start[0]["key_version"] and start[0]["free_per_day"] == 1000
    assert [f for f in fields if f["message"].startswith("verifier stopped")]
    assert marker not in text and "\x1b[" not in text
