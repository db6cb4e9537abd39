"""The Python package `agent_output_verifier` (shared/python, installed by the test command with
`pip install ./shared/python`): the hosted service's receipts verify and tampered or unbound ones
are refused, the request-hash vectors and RFC 8785 data hold, and its offline verdicts are the
running server's for every JSON-Schema-Test-Suite case."""
import json
import os
import subprocess
import tempfile

import httpx
import pytest

import agent_output_verifier as aov
from conftest import BIN, DATA, ROOT, Server

HOSTED = json.loads((DATA / "hosted-receipts.json").read_text())
VECTORS = json.loads((ROOT / "shared" / "engine" / "data" / "request-hash-vectors.json").read_text())
JCS = DATA / "jcs" / "testdata"
SUITE = DATA / "json-schema-test-suite" / "tests"
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def hosted(i=0):
    r = HOSTED["receipts"][i]
    return json.loads(r["response_body_json"]), json.loads(r["request_body_json"])


def test_every_hosted_receipt_verifies_and_is_bound_to_its_request():
    key = HOSTED["public_key"]
    for r in HOSTED["receipts"]:
        # The text exactly as the hosted service sent it, and the parsed dict: the same answer.
        for response, request in ((r["response_body_json"], r["request_body_json"]),
                                  (json.loads(r["response_body_json"]), json.loads(r["request_body_json"]))):
            ok = aov.verify_receipt(response, key, request=request)
            assert ok["valid"] is True
            assert ok["key_version"] == "v1-2026-09c"
            # A compact receipt carries no request_hash: the request fields it states are compared.
            rest = (["request_hash"] if '"request_hash"' in r["response_body_json"]
                    else ["task_id", "agent_id", "enforce_rules", "strict_content_check"])
            assert ok["bound"] == ["output_hash", "schema_hash", "rules_hash", *rest]
        assert aov.verify_receipt(response, [key])["bound"] == []


def test_a_tampered_receipt_is_refused_naming_the_signature():
    response, _ = hosted()
    key = HOSTED["public_key"]
    for field, value in (("result", "pass"), ("agent_id", "someone-else"), ("errors_total", 0)):
        forged = dict(response, **{field: value})
        with pytest.raises(ValueError, match="signature does not match"):
            aov.verify_receipt(forged, key)
    with pytest.raises(ValueError, match="no key with the attestation's key_version"):
        aov.verify_receipt(response, dict(key, keyVersion="v0-other"))


@pytest.mark.parametrize("which", [0, 1])
def test_a_genuine_receipt_about_something_else_is_refused(which):
    response, request = hosted(which)
    key = HOSTED["public_key"]
    other_output = json.loads(json.dumps(request))
    other_output["submitted_output"]["total"] = 1
    laxer_schema = json.loads(json.dumps(request))
    laxer_schema["expected_schema"]["required"] = []
    other_rules = json.loads(json.dumps(request))
    other_rules["rules"] = other_rules["rules"][:0]
    not_enforced = dict(request, enforce_rules=False)
    for changed, reason in ((other_output, "another output"), (laxer_schema, "another schema"),
                            (other_rules, "other rules"), (not_enforced, "another request"),
                            (dict(request, task_id="another-task"), "another request")):
        with pytest.raises(ValueError, match=f"genuine signature, but .*{reason}"):
            aov.verify_receipt(response, key, request=changed)
    # The parts held separately: each is checked on its own.
    ok = aov.verify_receipt(response, key, output=request["submitted_output"],
                            schema=request["expected_schema"], rules=request["rules"])
    assert ok["bound"] == ["output_hash", "schema_hash", "rules_hash"]
    with pytest.raises(ValueError, match="another output"):
        aov.verify_receipt(response, key, output=other_output["submitted_output"])
    with pytest.raises(ValueError, match="not both"):
        aov.verify_receipt(response, key, request=request, output=request["submitted_output"])


def test_hashes_equal_the_hosted_vectors_and_receipts():
    for v in VECTORS["vectors"]:
        assert aov.hashes(v["request_body_json"])["request_hash"] == v["request_hash"], v["name"]
        assert aov.canonicalize(json.loads(v["canonical_form"])) == v["canonical_form"].encode()
    for r in HOSTED["receipts"]:
        response = json.loads(r["response_body_json"])
        mine = aov.hashes(r["request_body_json"])
        stated = {k: response[k] for k in ("output_hash", "schema_hash", "rules_hash", "request_hash") if k in response}
        assert len(stated) >= 3 and stated == {k: mine[k] for k in stated}
    with pytest.raises(ValueError, match="submitted_output"):
        aov.hashes({"task_id": "t", "expected_schema": {}})


def test_canonicalize_matches_the_rfc_8785_test_data():
    names = sorted(p.name for p in (JCS / "input").glob("*.json"))
    assert len(names) == 6, names
    for name in names:
        assert aov.canonicalize((JCS / "input" / name).read_bytes()) == (JCS / "output" / name).read_bytes(), name
    assert aov.canonicalize("é") == '"é"'.encode()
    with pytest.raises(ValueError):
        aov.canonicalize(float("nan"))


def test_verify_offline_is_unsigned_unless_given_a_key_and_then_verifies(tmp_path):
    _, request = hosted()
    unsigned = aov.verify(request)
    assert unsigned["result"] == "fail"
    assert "attestation" not in unsigned and "verify" not in unsigned
    assert unsigned["summary"]["blocking_checks"] == ["consistency:sum_equals"]
    # A key made by the CLI signs it; the receipt verifies against that key's public half.
    made = subprocess.run([BIN, "key", "init", "--data-dir", str(tmp_path)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    signed = aov.verify(request, key_file=str(tmp_path / "signing-key.json"))
    assert signed["verify"]["public_key_url"] is None
    ring = json.loads((tmp_path / "public-keys.json").read_text())
    ok = aov.verify_receipt(signed, ring, request=request)
    assert ok["key_version"] == ring[0]["keyVersion"] and len(ok["bound"]) == 4
    published = aov.verify(request, key_file=str(tmp_path / "signing-key.json"), public_url="https://v.example/")
    assert published["verify"]["public_key_url"] == "https://v.example/.well-known/agent-card.json"
    with pytest.raises(ValueError, match="submitted_output"):
        aov.verify({"task_id": "t", "expected_schema": {}})


def test_sign_deliverable_prints_what_the_cli_prints(tmp_path):
    key = tmp_path / "agent-key.json"
    made = subprocess.run([BIN, "agent", "keygen", "--out", str(key)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    agent_id = json.loads(key.read_text())["agent_id"]
    output = {"invoice_id": "INV-1", "total": 1.5}
    (tmp_path / "o.json").write_text(json.dumps(output))
    cli = subprocess.run([BIN, "agent", "sign", "--key", str(key), "--task-id", "t-1", str(tmp_path / "o.json")],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert aov.sign_deliverable(key, agent_id, "t-1", output) == json.loads(cli.stdout)
    with pytest.raises(ValueError, match="another agent ID"):
        aov.sign_deliverable(key, "did:key:z6MkOther", "t-1", output)


def suite_requests():
    """Every test of the required draft2020-12 and draft7 suites as a verification request
    (draft7 schemas name their draft, as a caller would)."""
    for draft, meta in (("draft2020-12", None), ("draft7", DRAFT7)):
        for path in sorted((SUITE / draft).glob("*.json")):
            for case in json.loads(path.read_text()):
                schema = case["schema"]
                if meta and isinstance(schema, dict) and "$schema" not in schema:
                    schema = dict(schema, **{"$schema": meta})
                for test in case["tests"]:
                    yield (f"{draft}/{path.name} :: {case['description']} :: {test['description']}",
                           {"task_id": "suite", "expected_schema": schema, "submitted_output": test["data"]},
                           test["valid"])


def test_offline_verdicts_are_the_servers_for_the_whole_suite():
    """The package and the running server answer every suite case alike: the same result, or
    both refuse the request (e.g. a remote $ref the service never fetches)."""
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(data_dir, allowance=100_000, args=[])
        server.start()
        try:
            counts = {"tests": 0, "same": 0, "refused": 0, "agree_with_suite": 0}
            different = []
            with httpx.Client(base_url=server.url, timeout=30) as client:
                for name, request, valid in suite_requests():
                    counts["tests"] += 1
                    answer = client.post("/verify/schema", json=request)
                    try:
                        offline = aov.verify(request)["result"]
                    except ValueError:
                        offline = "refused"
                    online = answer.json()["result"] if answer.status_code == 200 else "refused"
                    if answer.status_code not in (200, 422):
                        different.append(f"{name}: HTTP {answer.status_code}")
                    elif offline != online:
                        different.append(f"{name}: offline {offline}, server {online}")
                    else:
                        counts["same"] += 1
                        counts["refused"] += online == "refused"
                        counts["agree_with_suite"] += (online == "pass") == valid
        finally:
            server.stop()
    print(counts)
    assert not different, different[:20]
    # Every test was answered alike (2,226 tests in the vendored suites, 80 of them refused by
    # both: remote references, custom meta-schemas); the verdicts' agreement with the suite
    # itself is the Rust schema_suite test's job.
    assert counts["tests"] > 2000 and counts["same"] == counts["tests"], counts
    assert counts["agree_with_suite"] > 0.95 * counts["tests"], counts
