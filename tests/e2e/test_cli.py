"""`verifier verify` offline: the response on stdout (signed only with a key at hand, saying
which), exit 0 pass, 1 fail, 2 bad input; `verifier receipt verify` checks the signature and,
given what the receipt should be about, that it is."""
import json
import subprocess

from conftest import BIN, DATA


def run(tmp_path, schema, output, *extra, rules=None):
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "o.json").write_text(json.dumps(output))
    args = [BIN, "verify", "--schema", str(tmp_path / "s.json"), "--output", str(tmp_path / "o.json"),
            "--data-dir", str(tmp_path / "data"), *extra]
    if rules is not None:
        (tmp_path / "r.json").write_text(json.dumps(rules))
        args += ["--rules", str(tmp_path / "r.json")]
    return subprocess.run(args, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})


def receipt_verify(*args):
    return subprocess.run([BIN, "receipt", "verify", *map(str, args)], capture_output=True, text=True)


def test_without_a_key_the_answer_is_unsigned_and_no_key_is_made(tmp_path):
    ok = run(tmp_path, {"type": "object"}, {"a": 1})
    assert ok.returncode == 0, ok.stderr
    body = json.loads(ok.stdout)
    assert body["result"] == "pass"
    assert "attestation" not in body and "verify" not in body
    assert "unsigned" in ok.stderr and "verifier key init" in ok.stderr
    assert not (tmp_path / "data").exists()


def test_exit_codes_and_a_receipt_that_verifies(tmp_path, invoice):
    made = subprocess.run([BIN, "key", "init", "--data-dir", str(tmp_path / "data")], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    ring = json.loads((tmp_path / "data" / "public-keys.json").read_text())
    fail = run(tmp_path, invoice["expected_schema"], invoice["submitted_output"], "--enforce-rules",
               rules=invoice["rules"])
    assert fail.returncode == 1
    assert f"signed with key {ring[0]['keyVersion']}" in fail.stderr and "published nowhere" in fail.stderr
    body = json.loads(fail.stdout)
    assert body["summary"]["blocking_checks"] == ["consistency:sum_equals"]
    # No URL is stated where the key is not published; one is when the caller says where it is.
    assert body["verify"]["public_key_url"] is None and body["verify"]["mcp"] is None
    (tmp_path / "resp.json").write_text(fail.stdout)
    check = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "data" / "public-keys.json",
                           "--output", tmp_path / "o.json", "--schema", tmp_path / "s.json", "--rules", tmp_path / "r.json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "bound: output_hash, schema_hash, rules_hash recomputed and equal" in check.stdout
    published = run(tmp_path, {"type": "object"}, {}, "--public-url", "https://v.example")
    assert json.loads(published.stdout)["verify"]["public_key_url"] == "https://v.example/.well-known/agent-card.json"
    bad = run(tmp_path, {"type": 12}, {"a": 1})
    assert bad.returncode == 2 and "expected_schema" in bad.stderr
    compact = run(tmp_path, {"type": "object"}, {}, "--compact", "--strict")
    assert compact.returncode == 1 and "request_hash" not in json.loads(compact.stdout)
    unsigned = run(tmp_path, {"type": "object"}, {}, "--unsigned")
    assert "attestation" not in json.loads(unsigned.stdout)


def test_receipt_verify_binds_the_hosted_receipt_to_its_request(tmp_path):
    hosted = json.loads((DATA / "hosted-receipts.json").read_text())
    (tmp_path / "keys.json").write_text(json.dumps(hosted["public_key"]))
    r = hosted["receipts"][0]
    (tmp_path / "resp.json").write_text(r["response_body_json"])
    (tmp_path / "req.json").write_text(r["request_body_json"])
    request = json.loads(r["request_body_json"])

    ok = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "keys.json", "--request", tmp_path / "req.json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "bound: output_hash, schema_hash, rules_hash, request_hash recomputed and equal" in ok.stdout
    unbound = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "keys.json")
    assert unbound.returncode == 0 and "not bound" in unbound.stdout

    # A seller attaching this genuine receipt to another output, a laxer schema or other rules.
    for field, value, reason in (("submitted_output", dict(request["submitted_output"], total=129.5), "another output"),
                                 ("expected_schema", {"type": "object"}, "another schema"),
                                 ("rules", [], "other rules"),
                                 ("enforce_rules", False, "another request")):
        (tmp_path / "other.json").write_text(json.dumps(dict(request, **{field: value})))
        refused = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "keys.json", "--request", tmp_path / "other.json")
        assert refused.returncode == 1, refused.stdout
        assert refused.stdout.startswith("INVALID: genuine signature, but") and reason in refused.stdout, refused.stdout
    (tmp_path / "out.json").write_text(json.dumps(dict(request["submitted_output"], total=1)))
    part = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "keys.json", "--output", tmp_path / "out.json")
    assert part.returncode == 1 and "another output" in part.stdout
    both = receipt_verify(tmp_path / "resp.json", "--keys", tmp_path / "keys.json", "--request", tmp_path / "req.json",
                          "--output", tmp_path / "out.json")
    assert both.returncode == 2


def test_a_revoked_key_refuses_receipts_from_its_revocation_on_and_warns_before(tmp_path):
    """`verifier keys revoke` marks a key in the ring; `receipt verify` refuses a receipt
    attested at or after that time with the reason, and accepts an earlier one with the
    backdating warning. Revoking the active key rotates it, so nothing new is signed by it."""
    data = tmp_path / "data"
    assert subprocess.run([BIN, "keys", "init", "--data-dir", str(data)], capture_output=True).returncode == 0
    old = json.loads((data / "public-keys.json").read_text())[0]["keyVersion"]
    signed = run(tmp_path, {"type": "object"}, {"a": 1})
    assert signed.returncode == 0, signed.stderr
    (tmp_path / "resp.json").write_text(signed.stdout)
    attested = json.loads(signed.stdout)["attestation"]["timestamp"]

    later = subprocess.run([BIN, "keys", "revoke", old, "--at", "2999-01-01T00:00:00Z", "--data-dir", str(data)],
                           capture_output=True, text=True)
    assert later.returncode == 0, later.stderr
    assert f"key {old} revoked at 2999-01-01T00:00:00.000000+00:00" in later.stdout
    assert "replaces " + old in later.stdout, "the active key was rotated away"
    ring = json.loads((data / "public-keys.json").read_text())
    assert [k["keyVersion"] for k in ring][0] == old and len(ring) == 2 and "revokedAt" not in ring[1]
    before = receipt_verify(tmp_path / "resp.json", "--keys", data / "public-keys.json")
    assert before.returncode == 0, before.stdout + before.stderr
    assert f"warning: key {old} revoked at 2999-01-01T00:00:00.000000+00:00" in before.stdout
    assert "can write an earlier timestamp" in before.stdout

    # Moved to the receipt's own timestamp: at or after the revocation, refused with the reason.
    again = subprocess.run([BIN, "key", "revoke", old, "--at", attested, "--data-dir", str(data)],
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    after = receipt_verify(tmp_path / "resp.json", "--keys", data / "public-keys.json")
    assert after.returncode == 1
    assert after.stdout.startswith(f"INVALID: the key {old} was revoked at ")
    assert "attested at or after that time" in after.stdout
    # The new active key signs, and its receipts verify without a warning.
    fresh = run(tmp_path, {"type": "object"}, {"a": 1})
    (tmp_path / "fresh.json").write_text(fresh.stdout)
    assert json.loads(fresh.stdout)["attestation"]["key_version"] == ring[1]["keyVersion"]
    ok = receipt_verify(tmp_path / "fresh.json", "--keys", data / "public-keys.json")
    assert ok.returncode == 0 and "warning" not in ok.stdout, ok.stdout
    unknown = subprocess.run([BIN, "key", "revoke", "nope", "--data-dir", str(data)], capture_output=True, text=True)
    assert unknown.returncode == 2 and "no key with version" in unknown.stderr
