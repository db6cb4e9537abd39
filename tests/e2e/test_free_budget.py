"""The day's free budget across all clients (`--free-calls-total-per-day`): with a total of N and
several client addresses (127.0.0.x sources) sending at once, exactly N free answers, the rest
402s whose `free_trial` says `free_budget_exhausted`, REST and MCP alike; on the embedded store
and (E2E_STORE=dynamodb) on DynamoDB Local. A total of 0 makes no verification free."""
from concurrent.futures import ThreadPoolExecutor

import httpx

TOTAL = 7
CLIENTS = [f"127.0.0.{i}" for i in range(2, 10)]
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}


def request(i):
    return {"task_id": f"budget-{i}", "agent_id": "test-budget", "expected_schema": {"type": "object"},
            "submitted_output": {"i": i}}


def post_from(address, url, body):
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
        return client.post(url, json=body)


def test_exactly_the_budget_is_free_under_concurrency(start_server):
    server = start_server(allowance=3, env={"VERIFIER_FREE_CALLS_TOTAL_PER_DAY": str(TOTAL)})
    url = server.url + "/verify/schema"
    jobs = [(CLIENTS[i % len(CLIENTS)], i) for i in range(3 * len(CLIENTS))]
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda job: post_from(job[0], url, request(job[1])), jobs))
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == TOTAL, statuses
    assert statuses.count(402) == len(jobs) - TOTAL, statuses
    for a in answers:
        if a.status_code == 402:
            body = a.json()
            assert body["free_trial"]["code"] == "free_budget_exhausted", body["free_trial"]
            assert body["free_trial"]["available"] is False
            assert body["payment_reason"]["code"] == "free_budget_exhausted"
            assert body["free_trial"]["free_calls_total_per_day"] == TOTAL
            assert a.headers.get("payment-required")
    # Every client still has allowance left, yet nothing more is free today: over MCP too.
    again = post_from(CLIENTS[0], url, request(99))
    assert again.status_code == 402 and again.json()["free_trial"]["code"] == "free_budget_exhausted"
    mcp = httpx.post(server.url + "/mcp", headers=MCP_HEADERS, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "verify_schema", "arguments": request(100)}}).json()["result"]
    assert mcp["isError"] is True
    assert mcp["_meta"]["free_trial"]["code"] == "free_budget_exhausted"


def test_a_total_of_zero_makes_nothing_free(start_server):
    server = start_server(allowance=3, env={"VERIFIER_FREE_CALLS_TOTAL_PER_DAY": "0"})
    r = httpx.post(server.url + "/verify/schema", json=request(1))
    assert r.status_code == 402 and r.json()["free_trial"]["code"] == "free_budget_exhausted"
    # An invalid request is still a 422, not a 402.
    bad = httpx.post(server.url + "/verify/schema", json={"task_id": "x", "expected_schema": {"type": 12},
                                                          "submitted_output": 1})
    assert bad.status_code == 422


def test_a_refused_free_request_costs_no_free_call(start_server):
    """On DynamoDB the free call is claimed before the work; a request refused after the claim
    (over the unpaid ceiling: 402; a pattern the engine cannot run: 422) hands it back, so the
    next answer's remaining count is one less than the first's, on both stores."""
    server = start_server(allowance=5, env={"VERIFIER_FREE_CALLS_TOTAL_PER_DAY": "100"})
    url = server.url + "/verify/schema"
    first = httpx.post(url, json=request(1), timeout=30)
    assert first.status_code == 200
    remaining = int(first.headers["free-allowance-remaining"])
    props = {f"k{i}": {"pattern": f"^(a+)+{i}$"} for i in range(500)}
    costly = {"task_id": "costly", "agent_id": "test-budget", "detail": "compact",
              "expected_schema": {"type": "object", "properties": props},
              "submitted_output": {f"k{i}": "a" for i in range(500)}}
    over = httpx.post(url, json=costly, timeout=30)
    assert over.status_code == 402 and over.json()["payment_reason"]["code"] == "over_free_cost"
    assert over.json()["free_trial"]["remaining_calls_today"] == remaining, over.json()["free_trial"]
    unrunnable = httpx.post(url, json={"task_id": "x", "expected_schema": {"pattern": "(?<=a)b"},
                                       "submitted_output": "ab"}, timeout=30)
    assert unrunnable.status_code == 422
    second = httpx.post(url, json=request(2), timeout=30)
    assert second.status_code == 200
    assert int(second.headers["free-allowance-remaining"]) == remaining - 1
