"""Issue 19: reputation strangers cannot forge. A key-based agent ID (did:key Ed25519, CAIP-10
eip155 with EIP-191 personal-sign, CAIP-10 solana with Ed25519) only gains history from
deliverables its key holder signed; a missing or wrong signature is a 422 naming
`agent_signature` and records nothing, over REST and MCP. Plain labels keep working and say
`identity: "unverified"`. The seller's side is the real `verifier agent keygen` / `sign`."""
import hashlib
import json
import subprocess

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from solders.keypair import Keypair

from conftest import BIN

OUTPUT = {"invoice_id": "INV-0001", "total": 3}
SCHEMA = {"type": "object", "required": ["invoice_id", "total"]}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}


def output_hash(output=OUTPUT) -> str:
    """SHA-256 of RFC 8785: for ASCII keys and integers, sorted keys without spaces."""
    return hashlib.sha256(json.dumps(output, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def message(agent_id: str, task_id: str, digest: str) -> str:
    """The documented deliverable message (llms.txt, README)."""
    return (f"agent-output-verifier deliverable v1\nagent_id: {json.dumps(agent_id)}\n"
            f"task_id: {json.dumps(task_id)}\noutput_sha256: {digest}")


def request(agent_id, task_id="task-1", signature=None, output=OUTPUT, schema=SCHEMA):
    body = {"task_id": task_id, "agent_id": agent_id, "expected_schema": schema, "submitted_output": output}
    if signature is not None:
        body["agent_signature"] = signature
    return body


def post(server, body):
    return httpx.post(server.url + "/verify/schema", json=body, timeout=30)


def history(server, agent_id):
    return httpx.get(f"{server.url}/reputation/{agent_id}", timeout=30).json()


def seller(tmp_path, name="seller"):
    """`verifier agent keygen`: a did:key and its owner-only key file."""
    key = tmp_path / f"{name}.json"
    out = subprocess.run([BIN, "agent", "keygen", "--out", str(key)], capture_output=True, text=True, check=True)
    assert (key.stat().st_mode & 0o777) == 0o600
    return json.loads(out.stdout)["agent_id"], key


def sign(key, task_id, output, tmp_path):
    path = tmp_path / "output.json"
    path.write_text(json.dumps(output))
    out = subprocess.run([BIN, "agent", "sign", "--key", str(key), "--task-id", task_id, str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_did_key_holder_adds_history_and_a_stranger_cannot(server, tmp_path):
    agent_id, key = seller(tmp_path)
    assert agent_id.startswith("did:key:z6Mk")
    signed = sign(key, "task-1", OUTPUT, tmp_path)
    assert signed["output_hash"] == output_hash()

    ok = post(server, request(agent_id, signature=signed["agent_signature"]))
    assert ok.status_code == 200, ok.text
    assert ok.json()["identity"] == "verified" and ok.json()["output_hash"] == signed["output_hash"]

    stranger_cases = {
        "no signature": request(agent_id),
        "signature for another task": request(agent_id, task_id="task-2", signature=signed["agent_signature"]),
        "signature for another output": request(agent_id, signature=signed["agent_signature"],
                                                output={**OUTPUT, "total": 4}),
        "a failing schema without the agent's signature": request(agent_id, schema=False),
        "garbage": request(agent_id, signature="0xnot-base58"),
    }
    other_id, other_key = seller(tmp_path, "other")
    stranger_cases["another agent's signature"] = request(
        agent_id, signature=sign(other_key, "task-1", OUTPUT, tmp_path)["agent_signature"])
    for case, body in stranger_cases.items():
        r = post(server, body)
        assert r.status_code == 422, (case, r.text)
        assert [f["field"] for f in r.json()["fields"]] == ["agent_signature"], (case, r.json())
        assert agent_id not in r.text, "the caller's agent ID is not echoed"
    # The same signed deliverable submitted again (even against a harsher schema) is answered
    # but counts once: one signature, one outcome.
    for schema in (SCHEMA, False):
        again = post(server, request(agent_id, signature=signed["agent_signature"], schema=schema))
        assert again.status_code == 200, again.text
    h = history(server, agent_id)
    assert (h["passes"], h["fails"], h["identity"]) == (1, 0, "verified")
    # The signed receipt and the (free, unrated) signed score name the identity, and the offline
    # receipt check reports it.
    card = server.url + "/.well-known/agent-card.json"
    score = httpx.get(f"{server.url}/score/{agent_id}", timeout=30).json()
    assert (score["reason"], score["identity"], score["sample_size"]) == ("unrated", "verified", 1)
    for name, doc, says in [("receipt", ok.json(), "checked its holder's signature"),
                            ("score", score, "only deliverables its holder signed")]:
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        out = subprocess.run([BIN, "receipt", "verify", str(tmp_path / f"{name}.json"), "--agent-card", card],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert f'identity: "{agent_id}" verified' in out.stdout and says in out.stdout, out.stdout


def test_an_evm_account_signs_with_personal_sign(server):
    account = Account.create()
    agent_id = f"eip155:8453:{account.address}"
    digest = output_hash()
    sig = account.sign_message(encode_defunct(text=message(agent_id, "task-1", digest))).signature.hex()
    sig = sig if sig.startswith("0x") else "0x" + sig
    r = post(server, request(agent_id, signature=sig))
    assert r.status_code == 200 and r.json()["identity"] == "verified", r.text
    stranger = Account.create().sign_message(encode_defunct(text=message(agent_id, "task-1", digest)))
    forged = stranger.signature.hex()
    r = post(server, request(agent_id, signature=forged if forged.startswith("0x") else "0x" + forged))
    assert r.status_code == 422 and r.json()["fields"][0]["field"] == "agent_signature"
    assert history(server, agent_id)["total"] == 1


def test_a_solana_account_signs_with_ed25519(server):
    kp = Keypair()
    agent_id = f"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:{kp.pubkey()}"
    sig = str(kp.sign_message(message(agent_id, "task-1", output_hash()).encode()))
    r = post(server, request(agent_id, signature=sig))
    assert r.status_code == 200 and r.json()["identity"] == "verified", r.text
    wrong = str(Keypair().sign_message(message(agent_id, "task-1", output_hash()).encode()))
    assert post(server, request(agent_id, signature=wrong)).status_code == 422
    assert history(server, agent_id)["total"] == 1


def test_labels_keep_working_unverified_and_lookalikes_are_refused(server):
    r = post(server, request("plain-label-agent"))
    assert r.status_code == 200 and r.json()["identity"] == "unverified"
    assert history(server, "plain-label-agent")["identity"] == "unverified"
    for bad in ["did:web:example.com", "eip155:8453:0x12"]:
        r = post(server, request(bad))
        assert r.status_code == 422 and r.json()["fields"][0]["field"] == "agent_id", r.text
    r = post(server, request("plain-label-agent", signature="abc"))
    assert r.status_code == 422 and r.json()["fields"][0]["field"] == "agent_signature"


def test_mcp_refuses_a_stranger_and_counts_the_holder(server, tmp_path):
    agent_id, key = seller(tmp_path)
    signed = sign(key, "task-1", OUTPUT, tmp_path)

    def call(arguments, rpc_id):
        body = {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call",
                "params": {"name": "verify_schema", "arguments": arguments}}
        r = httpx.post(server.url + "/mcp", json=body, headers=MCP_HEADERS, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()["result"]

    refused = call(request(agent_id), 1)
    assert refused["isError"] and refused["structuredContent"]["fields"][0]["field"] == "agent_signature"
    answered = call(request(agent_id, signature=signed["agent_signature"]), 2)
    assert not answered.get("isError") and answered["structuredContent"]["identity"] == "verified"
    assert history(server, agent_id)["passes"] == 1
