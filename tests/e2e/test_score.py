"""Score and reputation with the SarnAI client over real HTTP: the free signed no_data answer,
history counts that equal the verifications made, and the paid lookup once there is history."""
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sarnai import PaymentRequiredError, SarnAIClient

from conftest import BIN


def client(server) -> SarnAIClient:
    return SarnAIClient(verify_url=server.url, score_url=server.url)


def verify(server, agent_id, passing=True):
    body = {"task_id": "t", "agent_id": agent_id, "expected_schema": {"type": "object"},
            "submitted_output": {} if passing else 1}
    r = httpx.post(server.url + "/verify/schema", json=body, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_test_id_has_no_score_and_a_signed_answer_that_verifies(server, tmp_path):
    with client(server) as c:
        s = c.score("test-nobody")
    assert not s.has_score and s.reason == "no_data" and s.sample_size == 0
    assert s.raw["trust_score"] is None
    (tmp_path / "score.json").write_text(json.dumps(s.raw))
    card = server.url + "/.well-known/agent-card.json"
    ok = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "score.json"), "--agent-card", card],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    tampered = dict(s.raw, sample_size=1)
    (tmp_path / "score.json").write_text(json.dumps(tampered))
    bad = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "score.json"), "--agent-card", card],
                         capture_output=True, text=True)
    assert bad.returncode == 1


def test_test_ids_are_never_recorded(server):
    verify(server, "test-seller")
    with client(server) as c:
        rep = c.reputation("test-seller")
        assert rep["total"] == 0 and rep["reserved_test_id"] is True
        assert not c.score("test-seller").has_score


def test_reputation_counts_equal_the_verifications_made(server):
    ids = [verify(server, "seller-a", passing=i % 3 != 0)["verification_id"] for i in range(5)]
    with client(server) as c:
        rep = c.reputation("seller-a")
    assert (rep["passes"], rep["fails"], rep["total"]) == (3, 2, 5)
    assert [o["verification_id"] for o in rep["recent"]] == ids[::-1]
    assert rep["first_seen"] <= rep["last_seen"]
    assert set(rep["recent"][0]) == {"verification_id", "result", "verified_at", "paid", "checks"}
    # The evidence: free calls, each with at least one check, summed in checks_covered.
    assert rep["paid_verifications"] == 0 and not any(o["paid"] for o in rep["recent"])
    assert all(o["checks"] >= 1 for o in rep["recent"])
    assert rep["checks_covered"] == sum(o["checks"] for o in rep["recent"])
    unknown = httpx.get(server.url + "/reputation/never-seen").json()
    assert unknown["total"] == 0 and unknown["recent"] == []


def min_sample(server):
    """The minimum of counted verifications, as the signed score method states it."""
    return httpx.get(server.url + "/score/test-nobody").json()["method"]["min_sample"]


def test_below_the_minimum_an_agent_is_unrated_for_free_and_says_on_what_evidence(server, tmp_path):
    """Issue 19: a score resting on a handful of calls is not sold. Below the documented minimum
    the answer is free and signed, `trust_score: null`, `reason: "unrated"`, with its evidence."""
    n = min_sample(server)
    assert n >= 5
    for i in range(n - 1):
        verify(server, "seller-new", passing=i != 0)
    with client(server) as c:
        s = c.score("seller-new")  # free: no payment asked
    raw = s.raw
    assert not s.has_score and s.reason == "unrated" and s.sample_size == n - 1
    assert (raw["passes"], raw["fails"], raw["paid_verifications"]) == (n - 2, 1, 0)
    rep = httpx.get(server.url + "/reputation/seller-new").json()
    assert raw["checks_covered"] == rep["checks_covered"] >= n - 1
    assert raw["identity"] == "unverified" and raw["first_seen"] <= raw["last_seen"]
    assert raw["method"]["version"] == "2" and raw["method"]["min_sample"] == n
    (tmp_path / "score.json").write_text(json.dumps(raw))
    card = server.url + "/.well-known/agent-card.json"
    ok = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "score.json"), "--agent-card", card],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert 'identity: "seller-new" unverified' in ok.stdout, ok.stdout
    # The minimum-th counted verification makes a score, and a score is paid for.
    verify(server, "seller-new")
    with client(server) as c:
        with pytest.raises(PaymentRequiredError):
            c.score("seller-new")


def test_a_score_with_history_asks_for_ten_thousand_units(server):
    for _ in range(min_sample(server)):
        verify(server, "seller-b")
    with client(server) as c:
        with pytest.raises(PaymentRequiredError) as err:
            c.score("seller-b")
    accepts = err.value.accepts
    assert accepts and all(a["amount"] == "10000" for a in accepts)
    assert err.value.payment_required["resource"]["url"].endswith("/score/{agent_id}")


def test_fifty_concurrent_verifications_of_one_agent_are_all_counted(server):
    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(lambda _: verify(server, "seller-c"), range(50)))
    assert len({r["verification_id"] for r in results}) == 50
    rep = httpx.get(server.url + "/reputation/seller-c").json()
    assert rep["passes"] == 50 and rep["total"] == 50


def test_agent_id_rules_in_the_path(server):
    too_long = "a" * 201
    for route in ("/score/", "/reputation/"):
        r = httpx.get(server.url + route + too_long)
        assert r.status_code == 422
        body = r.json()
        assert body["code"] == "invalid_request" and body["fields"][0]["field"] == "agent_id"
        assert too_long not in r.text
        ok = httpx.get(server.url + route + "%E2%9C%93" * 200)  # 200 characters once decoded
        assert ok.status_code in (200, 402), ok.text


@pytest.mark.parametrize("schema", [{}, True, {"description": "asserts nothing"}])
def test_a_verification_that_checks_nothing_changes_no_history(server, schema):
    """Issue 19: a verification with no schema assertion applied, no rule and no bound is
    evidence of nothing, so it enters no history and cannot move a score."""
    agent = "rival-agent-" + str(abs(hash(json.dumps(schema))) % 10_000)
    for _ in range(5):
        body = {"task_id": "t", "agent_id": agent, "expected_schema": schema, "submitted_output": {"x": 1}}
        r = httpx.post(server.url + "/verify/schema", json=body, timeout=30)
        assert r.status_code == 200 and r.json()["result"] == "pass", r.text
    history = httpx.get(f"{server.url}/reputation/{agent}").json()
    assert (history["passes"], history["fails"], history["total"]) == (0, 0, 0)
    assert httpx.get(f"{server.url}/score/{agent}").json()["reason"] == "no_data"
    # One assertion applied is evidence: it counts.
    verify(server, agent, passing=False)
    history = httpx.get(f"{server.url}/reputation/{agent}").json()
    assert (history["passes"], history["fails"]) == (0, 1)
