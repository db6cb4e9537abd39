"""Discovery documents over real HTTP: they agree with the route table and with each other, the
OpenAPI document validates and survives schemathesis, /docs renders offline in headless
Chromium, receipts verify through the live agent card, and the allowance in llms.txt is live."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from conftest import BIN, ROOT

VENV_BIN = Path(sys.executable).parent


def route_table():
    out = subprocess.run([BIN, "routes"], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [{"method": m, "path": p, "function": f, "pricing": pr, "documented": d == "documented"}
            for m, p, f, pr, d in rows]


def concrete(path):
    return path.replace("{agent_id}", "test-discovery").replace("{proxy+}", "index.css")


def test_every_route_of_the_table_answers(server):
    for r in route_table():
        url = server.url + concrete(r["path"])
        if r["method"] == "POST" and r["path"].startswith("/verify"):
            resp = httpx.post(url, json={"task_id": "t", "expected_schema": {}, "submitted_output": 1})
            assert resp.status_code == 200, (r, resp.text[:200])
        elif r["function"] == "mcp":
            continue  # MCP is tested on its own (tests/e2e/test_mcp.py)
        else:
            resp = httpx.request(r["method"], url, follow_redirects=True)
            assert resp.status_code == 200, (r, resp.status_code, resp.text[:200])


def test_the_documents_agree_with_the_route_table(server):
    table = route_table()
    documented = {(r["method"], r["path"]) for r in table if r["documented"]}
    paid = {r["path"] for r in table if r["pricing"] in ("Verification", "ScoreLookup")}

    spec = httpx.get(server.url + "/openapi.json").json()
    ops = {(m.upper(), p) for p, item in spec["paths"].items() for m in item}
    assert ops == documented
    for path, item in spec["paths"].items():
        for method, op in item.items():
            assert ("x-payment-info" in op) == (path in paid), (method, path)

    manifest = httpx.get(server.url + "/.well-known/x402").json()
    assert manifest["version"] == 1
    assert set(manifest["resources"]) == {server.url + p for p in paid}

    card = httpx.get(server.url + "/.well-known/agent-card.json").json()
    skills = " ".join(s["description"] for s in card["skills"])
    for p in paid:
        assert server.url + p in skills, p

    index = httpx.get(server.url + "/", headers={"accept": "application/json"}).json()
    assert {(r["method"], r["path"]) for r in index["routes"]} == documented

    llms = httpx.get(server.url + "/llms.txt").text
    for method, path in documented:
        assert f"| {method} | {server.url}{path} |" in llms, (method, path)
    assert "$0.02" in llms and "$0.01" in llms

    # The template routes each path to the function the table names (e.g. /llms-full.txt to
    # verify, which links the engine its worked examples come from).
    template = subprocess.run([str(VENV_BIN / "python"), str(ROOT / "scripts" / "routes_from_template.py"),
                               "--functions"], capture_output=True, text=True, check=True).stdout
    template_routes = {tuple(line.split()) for line in template.splitlines() if line.strip()}
    assert template_routes == {(r["method"], r["path"], r["function"]) for r in table}


def test_every_error_code_is_documented(server):
    llms = httpx.get(server.url + "/llms.txt").text
    errors, payments = llms.split("## Errors")[1].split("## Payment errors")
    spec = httpx.get(server.url + "/openapi.json").json()
    for code in [e["code"] for e in spec["x-error-codes"]]:
        assert f"`{code}`" in errors
    for code in [e["code"] for e in spec["x-payment-error-codes"]]:
        assert f"`{code}`" in payments


def test_the_openapi_document_validates(server):
    validate(httpx.get(server.url + "/openapi.json").json())


def test_schemathesis_finds_no_server_error_and_no_response_outside_the_schema(start_server, tmp_path):
    server = start_server(allowance=1_000_000)
    # positive_data_acceptance is left out: a schema-valid request may rightly get 402 (payment)
    # or 422 (a rule whose operands do not fit its type); both are documented responses.
    run = subprocess.run(
        [str(VENV_BIN / "schemathesis"), "run", server.url + "/openapi.json",
         "--checks", "all", "--exclude-checks", "positive_data_acceptance",
         "--max-examples", "40", "--seed", "1", "--exclude-path", "/mcp",
         "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is not installed (scripts/test.sh installs Debian's chromium)")


@pytest.mark.parametrize("path", ["/docs", "/docs/"])
def test_docs_render_offline_in_headless_chromium(server, tmp_path, path):
    browser = chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    # /docs answers the page itself (API Gateway may route no /docs/), no redirect
    assert httpx.get(server.url + path).status_code == 200
    dom = subprocess.run([browser, *flags, "--dump-dom", server.url + path],
                         capture_output=True, text=True, timeout=120).stdout
    assert "swagger-ui" in dom
    assert "/verify/schema" in dom, dom[:2000]
    assert "Verify a JSON output against a JSON Schema" in dom
    # Swagger UI renders the document's server: this server's own URL (its port is this run's).
    assert server.url in dom, "the rendered page does not name this server"
    # The screenshot: a path of this test's own, the browser's exit status, and an image of the
    # size asked for (a size only this run asks for) that is not blank.
    width, height = 1200 + server.port % 97, 1600
    shot = tmp_path / "docs.png"
    run = subprocess.run([browser, *flags, f"--screenshot={shot}", f"--window-size={width},{height}",
                          server.url + "/docs/"], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert png_size(shot) == (width, height)
    assert distinct_bytes(shot) > 32, "the screenshot is blank"


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height from its IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def distinct_bytes(path: Path) -> int:
    """How many distinct byte values a PNG's decompressed pixel rows hold (a blank page: few)."""
    import zlib
    data, pos, idat = path.read_bytes(), 8, b""
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat)))


def test_docs_serve_every_file_the_page_loads_and_nothing_else(server):
    from adversarial_util import assert_error

    page = httpx.get(server.url + "/docs/").text
    linked = re.findall(r'(?:href|src)="(?:\./)?([^"]+)"', page)
    assert {"swagger-ui.css", "index.css", "swagger-ui-bundle.js", "swagger-initializer.js"} <= set(linked), linked
    assert "swagger-ui-standalone-preset.js" not in linked  # the base layout needs no preset
    kinds = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
    for name in linked:
        resp = httpx.get(f"{server.url}/docs/{name}")
        assert resp.status_code == 200, name
        assert resp.headers["content-type"].startswith(kinds[Path(name).suffix]), name
        assert resp.content, name
    assert '"/openapi.json"' in httpx.get(server.url + "/docs/swagger-initializer.js").text
    # Swagger UI's other builds are not in the package (the page never loads them).
    for unused in ("swagger-ui-es-bundle.js", "swagger-ui-es-bundle-core.js", "swagger-ui.js",
                   "swagger-ui-standalone-preset.js"):
        assert_error(httpx.get(f"{server.url}/docs/{unused}"), 404, "not_found")


def test_a_receipt_verifies_through_the_live_agent_card(server, invoice, tmp_path):
    resp = httpx.post(server.url + "/verify/schema", json=invoice).json()
    assert resp["verify"]["public_key_url"] == server.url + "/.well-known/agent-card.json"
    card = httpx.get(resp["verify"]["public_key_url"]).json()
    ext = [e for e in card["capabilities"]["extensions"]
           if e["uri"].startswith("urn:json-schema-verifier:extension:attestation:")]
    assert len(ext) == 1
    keys = ext[0]["params"]["publicKeys"]
    assert resp["attestation"]["key_version"] in {k["keyVersion"] for k in keys}
    assert len(ext[0]["params"]["requestHashTestVectors"]) == 3

    path = tmp_path / "resp.json"
    path.write_text(json.dumps(resp))
    ok = subprocess.run([BIN, "receipt", "verify", str(path), "--agent-card", resp["verify"]["public_key_url"]],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    text = json.dumps(resp)
    i = text.index('"task_id": "') + len('"task_id": "')
    tampered = text[:i] + ("X" if text[i] != "X" else "Y") + text[i + 1:]
    path.write_text(tampered)
    bad = subprocess.run([BIN, "receipt", "verify", str(path), "--agent-card", resp["verify"]["public_key_url"]],
                         capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout + bad.stderr


@pytest.mark.parametrize("allowance", [7, 1234])
def test_the_free_allowance_section_shows_the_configured_number(start_server, allowance):
    server = start_server(allowance=allowance)
    llms = httpx.get(server.url + "/llms.txt").text
    section = llms.split("## Free allowance")[1].split("\n## ")[0]
    assert re.search(rf"\*\*{allowance} free verifications per UTC day\*\*", section), section
    assert httpx.get(server.url + "/.well-known/x402").json()["paidResources"][0]["free"][
        "calls_per_client_per_day"] == allowance


def test_health_index_and_catalog(server):
    health = httpx.get(server.url + "/health").json()
    assert health["status"] == "ok" and health["key_version"] and health["version"]
    html = httpx.get(server.url + "/", headers={"accept": "text/html"})
    assert html.headers["content-type"].startswith("text/html") and "/docs" in html.text
    catalog = httpx.get(server.url + "/.well-known/api-catalog")
    assert catalog.headers["content-type"].startswith("application/linkset+json")
    links = catalog.json()["linkset"][0]
    assert links["service-desc"][0]["href"] == server.url + "/openapi.json"
    assert links["status"][0]["href"] == server.url + "/health"
    full = httpx.get(server.url + "/llms-full.txt").text
    assert "## Worked example" in full and '"result": "fail"' in full and '"result": "pass"' in full


def test_the_402_header_decodes_to_the_x402_manifest_prices(start_server):
    server = start_server(allowance=0)
    r = httpx.post(server.url + "/verify/schema", json={"task_id": "t", "expected_schema": {}, "submitted_output": 1})
    assert r.status_code == 402
    required = json.loads(base64.b64decode(r.headers["payment-required"]))
    manifest = httpx.get(server.url + "/.well-known/x402").json()
    offered = next(p for p in manifest["paidResources"] if p["resource"].endswith("/verify/schema"))
    assert required["accepts"] == offered["accepts"]
    assert r.json()["free_trial"]["code"] == "free_trial_exhausted"


def test_the_per_origin_manifest_lists_every_paid_resource_as_the_402s_do(start_server):
    """/.well-known/x402.json (x402's draft well-known-discovery): one item per paid REST route
    and per paid MCP tool, with the live 402's `accepts` and the bazaar listing's input and
    output lifted out of its envelope."""
    server = start_server(allowance=0)
    manifest = httpx.get(server.url + "/.well-known/x402.json").json()
    assert manifest["x402Version"] == 2 and isinstance(manifest["lastUpdated"], int)
    items = manifest["items"]
    http = {i["resource"]["url"]: i for i in items if i["type"] == "http"}
    assert set(http) == {server.url + p for p in ("/verify/schema", "/verify/deliverable", "/score/:agent_id")}
    tools = {i["input"]["toolName"] for i in items if i["type"] == "mcp"}
    assert tools == {"verify_schema", "get_verification_record"}
    assert all(i["resource"]["url"] == server.url + "/mcp" for i in items if i["type"] == "mcp")

    r = httpx.post(server.url + "/verify/schema", content=b"")
    required = json.loads(base64.b64decode(r.headers["payment-required"]))
    verify = http[server.url + "/verify/schema"]
    assert verify["accepts"] == required["accepts"]
    listing = required["extensions"]["bazaar"]["info"]
    assert verify["input"] == {k: v for k, v in listing["input"].items() if k != "type"}
    assert verify["output"]["example"] == listing["output"]["example"]
    assert verify["resource"]["serviceName"] == required["resource"]["serviceName"]
    # The example input is a real request the service answers.
    ok = start_server(allowance=5)
    answer = httpx.post(ok.url + "/verify/schema", json=verify["input"]["body"])
    assert answer.status_code == 200 and answer.json()["result"] == "pass"
    score = http[server.url + "/score/:agent_id"]
    assert score["input"]["method"] == "GET" and score["input"]["routeTemplate"] == "/score/:agent_id"


def test_format_assertion_is_on_by_default_and_can_be_turned_off(server):
    body = {"task_id": "format", "agent_id": "test-format", "expected_schema": {"type": "string", "format": "date"},
            "submitted_output": "2026-13-45"}
    asserted = httpx.post(server.url + "/verify/schema", json=body).json()
    assert asserted["result"] == "fail" and asserted["format_assertion"] is True
    annotated = httpx.post(server.url + "/verify/schema", json={**body, "format_assertion": False}).json()
    assert annotated["result"] == "pass" and annotated["format_assertion"] is False
    assert annotated["request_hash"] != asserted["request_hash"]
    refused = httpx.post(server.url + "/verify/schema", json={**body, "format_assertion": "no"})
    assert refused.status_code == 422 and refused.json()["fields"][0]["field"] == "format_assertion"
