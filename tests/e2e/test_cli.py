"""`verifier verify` offline: the signed response on stdout, exit 0 pass, 1 fail, 2 bad input."""
import json
import subprocess

from conftest import BIN


def run(tmp_path, schema, output, *extra, rules=None):
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "o.json").write_text(json.dumps(output))
    args = [BIN, "verify", "--schema", str(tmp_path / "s.json"), "--output", str(tmp_path / "o.json"),
            "--data-dir", str(tmp_path / "data"), *extra]
    if rules is not None:
        (tmp_path / "r.json").write_text(json.dumps(rules))
        args += ["--rules", str(tmp_path / "r.json")]
    return subprocess.run(args, capture_output=True, text=True)


def test_exit_codes_and_a_receipt_that_verifies(tmp_path, invoice):
    ok = run(tmp_path, {"type": "object"}, {"a": 1})
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["result"] == "pass"
    fail = run(tmp_path, invoice["expected_schema"], invoice["submitted_output"], "--enforce-rules",
               rules=invoice["rules"])
    assert fail.returncode == 1
    body = json.loads(fail.stdout)
    assert body["summary"]["blocking_checks"] == ["consistency:sum_equals"]
    (tmp_path / "resp.json").write_text(fail.stdout)
    check = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "resp.json"), "--keys",
                            str(tmp_path / "data" / "public-keys.json")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    bad = run(tmp_path, {"type": 12}, {"a": 1})
    assert bad.returncode == 2 and "expected_schema" in bad.stderr
    compact = run(tmp_path, {"type": "object"}, {}, "--compact", "--strict")
    assert compact.returncode == 1 and "request_hash" not in json.loads(compact.stdout)
