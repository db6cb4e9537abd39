"""Private mode (`--private`, `VERIFIER_PRIVATE=1`): no payment offered and no 402 ever. Every
valid request within the hard body limit is served (also past the free size limit, and with a
payment header, which is not read), scores of rated agents are free, an empty POST is a 422, and
the per-client allowance, when given, answers 429 `allowance_exhausted` past it; `/health` and
the index say so. On the embedded store and (E2E_STORE=dynamodb) on DynamoDB Local."""
import base64
import json

import httpx

MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}


def request(i, agent="private-agent", pad=0):
    return {"task_id": f"private-{i}", "agent_id": agent, "expected_schema": {"type": "object"},
            "submitted_output": {"i": i, "pad": "x" * pad}}


def no_payment_headers(response):
    assert response.status_code != 402, response.text
    for name in ("payment-required", "payment-response"):
        assert name not in response.headers


def test_private_mode_serves_everything_and_never_asks_for_payment(start_server):
    server = start_server(env={"VERIFIER_PRIVATE": "1", "VERIFIER_FREE_ALLOWANCE_PER_DAY": None})
    health = httpx.get(server.url + "/health").json()
    assert health["private"] is True
    index = httpx.get(server.url + "/", headers={"accept": "application/json"}).json()
    assert index["private"] is True and index["free_allowance_per_day"] is None
    # The documents agents read say so: no paid resources, every route free.
    assert httpx.get(server.url + "/.well-known/x402.json").json()["items"] == []
    assert httpx.get(server.url + "/.well-known/x402").json()["paidResources"] == []
    llms = httpx.get(server.url + "/llms.txt").text
    assert "This is a private deployment: no payment is offered or taken" in llms
    assert "free (a private deployment: no payments)" in llms

    # Over the free size limit (64 KiB by default), under the hard one: served.
    big = httpx.post(server.url + "/verify/schema", json=request(0, pad=200_000), timeout=30)
    no_payment_headers(big)
    assert big.status_code == 200 and big.json()["result"] == "pass"
    assert "free-allowance-remaining" not in big.headers, "no limit, no allowance headers"
    # A payment header is not read: nothing to pay, the request is served.
    junk = base64.b64encode(json.dumps({"x402Version": 2}).encode()).decode()
    paid = httpx.post(server.url + "/verify/schema", json=request(1), headers={"payment-signature": junk})
    no_payment_headers(paid)
    assert paid.status_code == 200
    # An empty POST (an x402 probe elsewhere) is what it is here: an invalid request.
    probe = httpx.post(server.url + "/verify/schema", content=b"", headers={"content-type": "application/json"})
    no_payment_headers(probe)
    assert probe.status_code == 422 and probe.json()["code"] == "invalid_request"

    # Rated scores are free: ten verifications make the agent rated.
    for i in range(2, 12):
        assert httpx.post(server.url + "/verify/schema", json=request(i)).status_code == 200
    score = httpx.get(server.url + "/score/private-agent")
    no_payment_headers(score)
    assert score.status_code == 200 and score.json()["trust_score"] is not None

    # MCP alike: the tool answers with its result, never a PaymentRequired.
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "verify_schema", "arguments": request(20, pad=100_000)}}
    mcp = httpx.post(server.url + "/mcp", json=call, headers=MCP_HEADERS, timeout=30)
    assert mcp.status_code == 200
    result = mcp.json()["result"]
    assert not result.get("isError"), result
    assert result["structuredContent"]["result"] == "pass"


def test_private_mode_keeps_a_given_allowance_with_429(start_server):
    server = start_server(allowance=2, env={"VERIFIER_PRIVATE": "true"})
    answers = [httpx.post(server.url + "/verify/schema", json=request(i, agent="test-private-limit"))
               for i in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[1].headers["free-allowance-remaining"] == "0"
    body = answers[2].json()
    assert body["code"] == "allowance_exhausted" and body["status"] == 429 and body["charged"] is False
    assert 0 < int(answers[2].headers["retry-after"]) <= 86400
    no_payment_headers(answers[2])


def test_without_private_mode_the_same_requests_get_402(start_server):
    server = start_server(allowance=1)
    big = httpx.post(server.url + "/verify/schema", json=request(0, pad=200_000), timeout=30)
    assert big.status_code == 402
    assert httpx.get(server.url + "/health").json()["private"] is False
