"""`verifier admin`: block and unblock a client network and an agent ID (403 `blocked` in the
error shape, REST and MCP, nothing charged), erase an agent's history (its score answers as for
an agent without data; a receipt issued before stays valid); through the running server's
operator port, and (E2E_STORE=dynamodb) directly on the DynamoDB table, which the server picks
up at its next refresh. On the embedded store and DynamoDB Local."""
import json
import os
import subprocess
import time

import httpx

from conftest import BIN, free_port, store_args

MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}


def body(i, agent="admin-agent"):
    return {"task_id": f"admin-{i}", "agent_id": agent, "expected_schema": {"type": "object"},
            "submitted_output": {"i": i}}


def post_from(address, url, json_body, **kw):
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
        return client.post(url, json=json_body, **kw)


def admin(*args):
    return subprocess.run([BIN, "admin", *map(str, args)], capture_output=True, text=True, timeout=60)


def assert_blocked(response):
    assert response.status_code == 403, response.text
    error = response.json()
    assert error["code"] == "blocked" and error["charged"] is False and error["retryable"] is False


def start(start_server, tmp_path):
    data = str(tmp_path / "data")
    port = free_port()
    args = [*store_args(data_dir=data), "--metrics-listen", f"127.0.0.1:{port}", "--blocks-refresh-seconds", "1"]
    return start_server(data_dir=data, args=args), f"http://127.0.0.1:{port}"


def test_blocked_clients_and_agents_get_403_until_unblocked(start_server, tmp_path):
    server, operator = start(start_server, tmp_path)
    url = server.url + "/verify/schema"
    blocked = admin("--server", operator, "block", "--client", "127.0.0.3")
    assert blocked.returncode == 0 and "now blocked" in blocked.stdout, blocked.stderr
    assert "already blocked" in admin("--server", operator, "block", "--client", "127.0.0.3/32").stdout
    assert_blocked(post_from("127.0.0.3", url, body(1)))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "verify_schema", "arguments": body(2)}}
    assert_blocked(post_from("127.0.0.3", server.url + "/mcp", call, headers=MCP_HEADERS))
    assert post_from("127.0.0.2", url, body(3)).status_code == 200
    listed = json.loads(admin("--server", operator, "blocks").stdout)
    assert [b["target"] for b in listed] == [{"kind": "client", "value": "127.0.0.3/32"}]

    assert admin("--server", operator, "block", "--agent", "spammer-agent").returncode == 0
    assert_blocked(post_from("127.0.0.2", url, body(4, agent="spammer-agent")))
    assert_blocked(httpx.get(server.url + "/reputation/spammer-agent"))
    assert_blocked(httpx.get(server.url + "/score/spammer-agent"))

    for target in (["--client", "127.0.0.3"], ["--agent", "spammer-agent"]):
        assert "now not blocked" in admin("--server", operator, "unblock", *target).stdout
    assert post_from("127.0.0.3", url, body(5, agent="spammer-agent")).status_code == 200
    bad = admin("--server", operator, "block", "--client", "example.com")
    assert bad.returncode == 2 and "CIDR" in bad.stderr
    both = admin("--server", operator, "block", "--client", "127.0.0.1", "--agent", "x")
    assert both.returncode == 2


def test_a_block_written_to_dynamodb_reaches_the_server_at_its_refresh(start_server, tmp_path):
    if os.environ.get("E2E_STORE") != "dynamodb":
        return  # the embedded store is held by the running server: --server is the way
    server, _ = start(start_server, tmp_path)
    table = store_args(data_dir=str(tmp_path / "data"))[3]
    assert admin("--store", "dynamodb", "--table", table, "block", "--client", "127.0.0.4").returncode == 0
    deadline = time.monotonic() + 10
    while post_from("127.0.0.4", server.url + "/verify/schema", body(6)).status_code != 403:
        assert time.monotonic() < deadline, "the server never read the block"
        time.sleep(0.2)
    assert admin("--store", "dynamodb", "--table", table, "unblock", "--client", "127.0.0.4").returncode == 0


def test_erasing_an_agent_forgets_its_history_and_keeps_its_receipts_valid(start_server, tmp_path):
    server, operator = start(start_server, tmp_path)
    answers = [httpx.post(server.url + "/verify/schema", json=body(i, agent="erase-me")) for i in range(12)]
    assert all(a.status_code == 200 for a in answers)
    assert httpx.get(server.url + "/reputation/erase-me").json()["total"] == 12
    assert httpx.get(server.url + "/score/erase-me").status_code == 402, "rated: a paid lookup"
    erased = admin("--server", operator, "erase-agent", "erase-me")
    assert erased.returncode == 0 and "erased 12 outcomes" in erased.stdout, erased.stdout + erased.stderr
    after = httpx.get(server.url + "/reputation/erase-me").json()
    assert (after["total"], after["recent"], after["first_seen"]) == (0, [], None)
    score = httpx.get(server.url + "/score/erase-me")
    assert score.status_code == 200 and score.json()["trust_score"] is None, "as for an agent without data"
    # A receipt issued before the erasure still verifies: it is signed, not stored.
    (tmp_path / "r.json").write_text(answers[0].text)
    check = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "r.json"), "--agent-card",
                            server.url + "/.well-known/agent-card.json"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
