"""Expression rules (CEL) through every door: each case of
shared/tests/data/expression-cases.json over REST, MCP and the offline CLI gives the same
verdict, integrity counts and failing rules (the engine's own test holds the same table); a bad
expression is a 422 naming the rule and its position, never the caller's text."""
import asyncio
import json
import subprocess

import httpx
import pytest
from mcp import Client

from conftest import BIN, DATA

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
TABLE = json.loads((DATA / "expression-cases.json").read_text())


def body(case):
    return {"task_id": "expr", "agent_id": "test-expr", "expected_schema": {"type": "object"},
            "submitted_output": case["output"], "rules": case["rules"], "enforce_rules": True}


def summary(response):
    failed = [f["field"] for f in response["flags"] if f["check"] == "consistency:expression"]
    checks = response["integrity_checks"]
    return response["result"], [checks["passed"], checks["total"]], failed


def expected(case):
    return case["result"], case["integrity"], case["failed"]


def test_every_case_is_the_same_over_rest_mcp_and_the_cli(server, tmp_path):
    cases = TABLE["cases"]
    rest = [httpx.post(server.url + "/verify/schema", json=body(c), timeout=30) for c in cases]

    async def over_mcp():
        async with Client(server.url + "/mcp", mode="legacy") as client:
            return [await client.call_tool("verify_schema", body(c)) for c in cases]
    mcp = asyncio.run(over_mcp())
    for case, r, m in zip(cases, rest, mcp):
        assert r.status_code == 200, (case["name"], r.text)
        assert summary(r.json()) == expected(case), case["name"]
        assert not m.is_error, case["name"]
        assert summary(m.structured_content) == expected(case), case["name"]
        if "detail" in case:
            assert case["detail"] in r.text, (case["name"], r.text)
        (tmp_path / "s.json").write_text('{"type": "object"}')
        (tmp_path / "o.json").write_text(json.dumps(case["output"]))
        (tmp_path / "r.json").write_text(json.dumps(case["rules"]))
        cli = subprocess.run([BIN, "verify", "--schema", str(tmp_path / "s.json"), "--output",
                              str(tmp_path / "o.json"), "--rules", str(tmp_path / "r.json"),
                              "--enforce-rules", "--data-dir", str(tmp_path / "data")],
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert cli.returncode == (0 if case["result"] == "pass" else 1), (case["name"], cli.stderr)
        assert summary(json.loads(cli.stdout)) == expected(case), case["name"]


def test_bad_expressions_are_422_with_the_rule_and_position_and_no_echo(server):
    for bad in TABLE["invalid"]:
        request = {"task_id": "expr", "expected_schema": {"type": "object"}, "submitted_output": {},
                   "rules": [{"type": "expression", "rule": bad["rule"]}]}
        r = httpx.post(server.url + "/verify/schema", json=request)
        assert r.status_code == 422, r.text
        field = r.json()["fields"][0]
        assert field["field"] == "rules[0].rule"
        assert field["problem"].startswith(bad["problem"]), field
        assert bad["rule"] not in r.text and "sqrt" not in r.text


def test_an_expression_over_the_free_budget_is_402_and_past_the_paid_ceiling_422(server):
    def priced(n):
        request = {"task_id": "expr", "expected_schema": {"type": "object"},
                   "submitted_output": {"a": list(range(n))},
                   "rules": [{"type": "expression", "rule": "self.a.all(x, self.a.exists(y, y == x))"}]}
        return httpx.post(server.url + "/verify/schema", json=request)
    # Nested comprehensions multiply: 150² steps are over the unpaid ceiling, 1,500² over the paid one.
    unpaid = priced(150)
    assert unpaid.status_code == 402, unpaid.text
    assert unpaid.headers.get("payment-required")
    past = priced(1500)
    assert past.status_code == 422, past.text
    assert past.json()["charged"] is False and "would cost more than" in past.text
