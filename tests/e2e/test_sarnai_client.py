"""The SarnAI Python client (PyPI sarnai==0.2.1) against the local server."""
import json
import subprocess

import httpx
import pytest
from sarnai import PaymentRequiredError, SarnAIClient, SarnAIError

from conftest import BIN


def client(server) -> SarnAIClient:
    return SarnAIClient(verify_url=server.url, score_url=server.url)


def test_verify_output_pass_and_fail(server, invoice):
    with client(server) as c:
        ok = c.verify_output({"type": "object", "required": ["total"]}, {"total": 42})
        assert ok.passed and ok.result == "pass"
        assert ok.raw["schema_compliance"] == {"ratio": 1.0, "passed": 2, "total": 2}
        bad = c.verify_output(invoice["expected_schema"], invoice["submitted_output"],
                              rules=invoice["rules"], enforce_rules=True, task_id="inv-1",
                              agent_id="test-e2e")
        assert not bad.passed
        assert bad.raw["summary"]["blocking_checks"] == ["consistency:sum_equals"]
        assert bad.errors[0] == ("enforce_rules: consistency:sum_equals at 'line_items[].line_total': "
                                 "values sum to 129.5, expected total (135.0)")
        assert bad.hints and bad.hints[0]["source"] == "integrity"
        assert bad.raw["schema_compliance"]["total"] == 22
        # Counted as the hosted service counts its own invoice example: 8 checks, 7 passed.
        assert bad.raw["integrity_checks"] == {"ratio": 0.875, "passed": 7, "total": 8}
        assert bad.raw["overall"] == {"ratio": 0.966667, "passed": 29, "total": 30}
        # The receipt names the identity it was recorded under: none without an agent, a plain
        # label is unverified (anyone may write under it).
        assert ok.raw["agent_id"] is None and ok.raw["identity"] is None
        assert bad.raw["agent_id"] == "test-e2e" and bad.raw["identity"] == "unverified"


def test_compact_and_deliverable(server, invoice):
    with client(server) as c:
        compact = c.verify_output({"type": "object"}, {"a": 1}, compact=True)
        assert "request_hash" not in compact.raw and "errors" not in compact.raw
        assert compact.attestation["algorithm"] == "Ed25519"
        d = c.verify_output({"type": "object"}, {"a": 1}, endpoint="deliverable")
        assert d.passed and "request_hash" in d.raw


def test_bad_rule_type_is_a_clear_invalid_request(server):
    with client(server) as c:
        with pytest.raises(SarnAIError) as err:
            c.verify_output({"type": "object"}, {"a": 1}, rules=[{"type": "sum_of_all", "field": "a"}])
    e = err.value
    assert e.code == "invalid_request" and e.status == 422
    assert "rules[0].type" in str(e)
    assert e.payload["fields"][0]["field"] == "rules[0].type"
    assert "sum_of_all" not in json.dumps(e.payload)
    assert e.guidance["minimal_request"]["task_id"]


def test_fourth_call_over_an_allowance_of_three_asks_for_payment(start_server):
    server = start_server(allowance=3)
    with client(server) as c:
        for _ in range(3):
            assert c.verify_output({"type": "object"}, {}).passed
        with pytest.raises(PaymentRequiredError) as err:
            c.verify_output({"type": "object"}, {})
    e = err.value
    assert e.accepts, "the 402 offers at least one way to pay"
    assert e.accepts[0]["amount"] == "20000" and e.accepts[0]["network"] == "eip155:8453"
    assert e.payload["free_trial"]["code"] == "free_trial_exhausted"
    assert e.payload["free_trial"]["available"] is False
    assert e.payment_required["x402Version"] == 2


def test_a_restart_keeps_the_counts(start_server, tmp_path):
    data_dir = str(tmp_path / "data")
    first = start_server(allowance=3, data_dir=data_dir)
    body = {"task_id": "r", "expected_schema": {}, "submitted_output": 1}
    for expected in ("2", "1"):
        r = httpx.post(first.url + "/verify/schema", json=body)
        assert r.headers["free-allowance-remaining"] == expected
    first.stop()
    second = start_server(allowance=3, data_dir=data_dir)
    r = httpx.post(second.url + "/verify/schema", json=body)
    assert r.status_code == 200 and r.headers["free-allowance-remaining"] == "0"
    assert httpx.post(second.url + "/verify/schema", json=body).status_code == 402


def test_receipts_verify_with_the_cli_and_fail_when_changed(server, tmp_path):
    r = httpx.post(server.url + "/verify/schema",
                   json={"task_id": "cli", "expected_schema": {"type": "object"}, "submitted_output": {"x": 1}})
    assert r.status_code == 200
    receipt = tmp_path / "receipt.json"
    receipt.write_bytes(r.content)
    keys = f"{server.data_dir}/public-keys.json"
    ok = subprocess.run([BIN, "receipt", "verify", str(receipt), "--keys", keys], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    receipt.write_bytes(r.content.replace(b'"x"', b'"y"', 1) if b'"x"' in r.content else r.content.replace(b"cli", b"clj", 1))
    bad = subprocess.run([BIN, "receipt", "verify", str(receipt), "--keys", keys], capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout
