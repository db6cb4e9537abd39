"""MCP over Streamable HTTP with the real Python client (mcp==2.3.0, modes legacy and auto) and
the MCP conformance harnesses (0.1.16 and 0.2.0-alpha.12 under Node 22), against the real
server: tools, signed receipts that verify through the agent card, the x402 tool-result
binding with the allowance shared with REST, and a paid call settled on the local chain."""
import asyncio
import base64
import json
import os
import subprocess
import sys

import httpx
import pytest
from mcp import Client

from conftest import BIN, ROOT

sys.path.insert(0, str(ROOT / "tests" / "x402"))
from localchain import LocalChain  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

OK = {"task_id": "mcp-1", "agent_id": "test-mcp", "expected_schema": {"type": "object", "required": ["total"]},
      "submitted_output": {"total": 3}}
BAD = {**OK, "task_id": "mcp-2", "submitted_output": {"sum": 3}}


def run(coro):
    return asyncio.run(coro)


def verify_receipt(server, tmp_path, receipt):
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(receipt))
    r = subprocess.run([BIN, "receipt", "verify", str(path), "--agent-card",
                        server.url + "/.well-known/agent-card.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_tools_and_signed_results_in_both_protocol_eras(server, tmp_path, mode):
    async def go():
        async with Client(server.url + "/mcp", mode=mode) as c:
            tools = (await c.list_tools()).tools
            names = [t.name for t in tools]
            ok = await c.call_tool("verify_schema", OK)
            bad = await c.call_tool("verify_schema", BAD)
            rec = await c.call_tool("get_verification_record", {"agent_id": "test-nobody"})
            invalid = await c.call_tool("verify_schema", {**OK, "rules": [{"type": "nope", "field": "a"}]})
            return c.protocol_version, tools, names, ok, bad, rec, invalid
    version, tools, names, ok, bad, rec, invalid = run(go())
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert names == ["verify_schema", "get_verification_record"]
    for t in tools:
        assert t.description and t.title and t.annotations is not None
        assert t.input_schema["additionalProperties"] is False
        assert t.output_schema["type"] == "object"
    assert not ok.is_error and ok.structured_content["result"] == "pass"
    assert json.loads(ok.content[0].text) == ok.structured_content
    verify_receipt(server, tmp_path, ok.structured_content)
    assert not bad.is_error and bad.structured_content["summary"]["blocking_checks"] == ["schema:required"]
    verify_receipt(server, tmp_path, bad.structured_content)
    assert rec.structured_content["reason"] == "no_data" and rec.structured_content["trust_score"] is None
    verify_receipt(server, tmp_path, rec.structured_content)
    assert invalid.is_error
    err = invalid.structured_content
    assert err["code"] == "invalid_request" and err["charged"] is False
    assert err["fields"][0]["field"] == "rules[0].type"
    assert "nope" not in json.dumps(err)


def test_one_allowance_for_both_doors(start_server):
    server = start_server(allowance=3)
    for _ in range(2):
        assert httpx.post(server.url + "/verify/schema", json=OK).status_code == 200

    async def go():
        async with Client(server.url + "/mcp", mode="legacy") as c:
            first = await c.call_tool("verify_schema", OK)
            second = await c.call_tool("verify_schema", OK)
            return first, second
    first, second = run(go())
    assert not first.is_error
    assert first.meta["agent-output-verifier/free-allowance"]["remaining"] == 0
    assert second.is_error
    required = second.structured_content
    assert required["x402Version"] == 2 and required["accepts"]
    assert json.loads(second.content[0].text) == required
    assert required["resource"]["url"] == "mcp://tool/verify_schema"
    assert second.meta["free_trial"]["code"] == "free_trial_exhausted"
    assert second.meta["free_trial"]["available"] is False
    rest = httpx.post(server.url + "/verify/schema", json=OK)
    assert rest.status_code == 402 and rest.json()["free_trial"]["code"] == "free_trial_exhausted"


def test_a_paid_mcp_call_settles_on_the_local_chain(start_server, tmp_path):
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.mechanisms.evm.exact import ExactEvmClientScheme
    from x402.schemas import PaymentRequired

    with LocalChain() as chain:
        server = start_server(allowance=0, env={
            "VERIFIER_PAY_TO_BASE": chain.payee_address,
            "VERIFIER_FACILITATOR_URL": chain.facilitator_url})

        async def go():
            async with Client(server.url + "/mcp", mode="auto") as c:
                asked = await c.call_tool("verify_schema", {**OK, "agent_id": "seller-mcp"})
                assert asked.is_error
                required = PaymentRequired.model_validate(asked.structured_content)
                buyer = x402ClientSync()
                buyer.register("eip155:8453", ExactEvmClientScheme(Account.from_key(chain.buyer_key)))
                payload = buyer.create_payment_payload(required)
                meta = {"x402/payment": json.loads(payload.model_dump_json(by_alias=True, exclude_none=True))}
                paid = await c.call_tool("verify_schema", {**OK, "agent_id": "seller-mcp"}, meta=meta)
                replay = await c.call_tool("verify_schema", {**OK, "agent_id": "seller-mcp"}, meta=meta)
                return paid, replay
        before = chain.balance(chain.payee_address)
        paid, replay = run(go())
        assert not paid.is_error, paid.meta
        settlement = paid.meta["x402/payment-response"]
        assert settlement["success"] is True and settlement["transaction"].startswith("0x")
        assert chain.balance(chain.payee_address) == before + 20000
        verify_receipt(server, tmp_path, paid.structured_content)
        assert replay.is_error and replay.meta["payment_error"]["code"] == "payment_replayed"
        assert chain.balance(chain.payee_address) == before + 20000
        rep = httpx.get(server.url + "/reputation/seller-mcp").json()
        assert rep["total"] == 1


def test_http_details_of_the_endpoint(server):
    assert httpx.get(server.url + "/mcp").status_code == 405
    assert httpx.delete(server.url + "/mcp").status_code == 405
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    note = httpx.post(server.url + "/mcp", headers=headers,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.status_code == 202
    evil = httpx.post(server.url + "/mcp", headers={**headers, "origin": "http://evil.example"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert evil.status_code == 403
    init = httpx.post(server.url + "/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert init.status_code == 200 and "mcp-session-id" not in init.headers
    assert init.json()["result"]["serverInfo"]["name"] == "agent-output-verifier"


def test_the_conformance_scenarios_pass(server, tmp_path):
    url = server.url.replace("127.0.0.1", "localhost") + "/mcp"
    env = {**os.environ, "CONFORMANCE_OUT": str(tmp_path / "conformance"), "CONFORMANCE_SKIP_INSTALL": "1"}
    r = subprocess.run([str(ROOT / "tests" / "mcp-conformance" / "run.sh"), url], capture_output=True,
                       text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "8 passed, 0 failed" in r.stdout


# ---------------------------------------------------------------------------------------------
# /mcp speaks only in the service's shapes: JSON-RPC errors and the §9 error shape, never the
# caller's text (issue 16).

MARK = "mcpmark" + "4f1c2e"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}


def _post(server, body, headers=None):
    return httpx.post(server.url + "/mcp", content=body, headers={**HEADERS, **(headers or {})},
                      timeout=10)


def _assert_rpc_error(r, code):
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers.get("x-content-type-options") == "nosniff"
    body = r.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code, body
    assert set(body["error"]) == {"code", "message"}
    assert MARK not in r.text and "<b>" not in r.text
    return body


def test_protocol_errors_are_json_rpc_without_the_callers_text(server):
    unknown = _post(server, json.dumps({"jsonrpc": "2.0", "id": 1, "method": f"<b>{MARK}</b>"}))
    assert _assert_rpc_error(unknown, -32601)["id"] == 1
    _assert_rpc_error(_post(server, "{" + MARK), -32700)
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(2)]
    _assert_rpc_error(_post(server, json.dumps(batch)), -32600)
    _assert_rpc_error(_post(server, '{"jsonrpc":"2.0","id":null,"method":"ping"}'), -32600)
    huge = _assert_rpc_error(_post(server, '{"jsonrpc":"2.0","id":%d,"method":"ping"}' % 2 ** 100), -32600)
    assert huge["id"] is None
    long_id = _post(server, json.dumps({"jsonrpc": "2.0", "id": MARK * 40, "method": "ping"}))
    assert _assert_rpc_error(long_id, -32600)["id"] is None
    # Invalid params of a known method: the code stays, the message is ours.
    bad_params = _post(server, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                           "params": {"name": 7, "arguments": MARK}}))
    body = bad_params.json()
    assert "error" in body and MARK not in bad_params.text, body


@pytest.mark.parametrize("case", ["protocol-version", "origin", "get", "delete", "content-type", "accept"])
def test_http_refusals_are_in_the_error_shape(server, case):
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    if case == "protocol-version":
        r = _post(server, ping, {"mcp-protocol-version": f"<b>{MARK}</b>"})
        status, code = 400, "bad_request"
    elif case == "origin":
        r = _post(server, ping, {"origin": f"https://{MARK}.example"})
        status, code = 403, "forbidden"
    elif case in ("get", "delete"):
        r = httpx.request(case.upper(), server.url + "/mcp", headers=HEADERS, timeout=10)
        status, code = 405, "method_not_allowed"
        assert r.headers.get("allow") == "POST"
    elif case == "content-type":
        r = _post(server, ping, {"content-type": "text/plain"})
        status, code = 415, "unsupported_media_type"
    else:
        r = _post(server, ping, {"accept": "text/html"})
        status, code = 406, "not_acceptable"
    assert r.status_code == status, r.text[:300]
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers.get("x-content-type-options") == "nosniff"
    body = r.json()
    assert body["code"] == code and body["status"] == status and body["charged"] is False
    assert MARK not in r.text


def test_a_planted_marker_never_reaches_the_log(tmp_path):
    from conftest import free_port
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    env = dict(os.environ, RUST_LOG="info")
    proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir",
                             str(tmp_path / "data")], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                import time
                time.sleep(0.05)

        class S:
            pass
        s = S()
        s.url = url
        for method in (f"<b>{MARK}</b>", "ping", "tools/list", "initialize"):
            _post(s, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                 "params": {"protocolVersion": MARK, "capabilities": {},
                                            "clientInfo": {"name": MARK, "version": MARK}}}))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    text = (tmp_path / "server.log").read_text(errors="replace")
    assert "request" in text, "the per-request log is on"
    assert MARK not in text
