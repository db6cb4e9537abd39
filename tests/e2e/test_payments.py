"""x402 payments end to end on a local chain: anvil (chain id 8453) with an EIP-3009 token at
the Base USDC address, the Python x402 facilitator over HTTP, and a buyer using the Python x402
client against the real `verifier serve`. Money moves on chain exactly once per answer; every
refused payment is a 402 with a specific reason and moves nothing. Solana: the requirement is
offered with the facilitator's fee payer, and a payload built by the Python SVM client passes
our local checks and is settled on LiteSVM, the Solana runtime with the real SPL Token program
(tests/x402/README.md says what is real there)."""
import asyncio
import base64
import copy
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from eth_account import Account
from x402 import x402ClientSync
from x402.http.utils import decode_payment_required_header, encode_payment_signature_header
from x402.extensions.payment_identifier import PAYMENT_IDENTIFIER, append_payment_identifier_to_extensions
from x402.mechanisms.evm.exact import ExactEvmClientScheme

from conftest import BIN, ROOT

sys.path.insert(0, str(ROOT / "tests" / "x402"))
from localchain import LocalChain  # noqa: E402
from solders.keypair import Keypair  # noqa: E402
from test_localchain import _tamper_buyer_signature, pay_svm  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Client is deprecated")

INVOICE = json.loads(json.loads((ROOT / "shared" / "tests" / "data" / "hosted-receipts.json").read_text())
                     ["receipts"][0]["request_body_json"])


@pytest.fixture(scope="module")
def chain():
    c = LocalChain().start()
    try:
        yield c
    finally:
        c.stop()


def server_env(chain, **extra):
    return {"VERIFIER_PAY_TO_BASE": chain.payee_address,
            "VERIFIER_PAY_TO_SOLANA": chain.svm_payee_address,
            "VERIFIER_FACILITATOR_URL": chain.facilitator_url, **extra}


@pytest.fixture()
def paid_server(start_server, chain):
    return start_server(allowance=1, env=server_env(chain))


def request(agent_id="seller-paid"):
    body = copy.deepcopy(INVOICE)
    body["agent_id"] = agent_id
    return body


def buyer(key):
    client = x402ClientSync()
    client.register("eip155:8453", ExactEvmClientScheme(Account.from_key(key)))
    return client


def pay_header(chain, required_header, key=None, payment_id=None):
    """The real x402 client: decode PAYMENT-REQUIRED, sign the Base entry, encode the header;
    with `payment_id`, the x402 payment-identifier extension as the client library adds it."""
    pr = decode_payment_required_header(required_header)
    pr.accepts = [a for a in pr.accepts if a.network == "eip155:8453"]
    extensions = None
    if payment_id:
        extensions = append_payment_identifier_to_extensions(dict(pr.extensions or {}), payment_id)
        assert extensions[PAYMENT_IDENTIFIER]["info"]["id"] == payment_id, "declaration not recognized"
    payload = buyer(key or chain.buyer_key).create_payment_payload(pr, extensions=extensions)
    return encode_payment_signature_header(payload)


def decode(header):
    return json.loads(base64.b64decode(header))


def encode(obj):
    return base64.b64encode(json.dumps(obj).encode()).decode()


def spend_allowance(server):
    r = httpx.post(server.url + "/verify/schema", json=request("test-warmup"))
    assert r.status_code == 200


def demand(server, path="/verify/schema", body=None):
    r = httpx.post(server.url + path, json=body or request()) if path.startswith("/verify") \
        else httpx.get(server.url + path)
    assert r.status_code == 402, r.text
    return r


def balances(chain):
    return chain.balance(chain.buyer_address), chain.balance(chain.payee_address)


def assert_refused(r, code):
    assert r.status_code == 402, r.text
    body = r.json()
    assert body["payment_error"]["code"] == code, body["payment_error"]
    assert "verification_id" not in body and "attestation" not in body
    assert decode(r.headers["payment-required"])["accepts"]


def test_a_paid_verification_settles_once_on_chain(paid_server, chain, tmp_path):
    spend_allowance(paid_server)
    offer = demand(paid_server)
    required = decode(offer.headers["payment-required"])
    base = next(a for a in required["accepts"] if a["network"] == "eip155:8453")
    assert base["amount"] == "20000" and base["payTo"] == chain.payee_address
    assert offer.json()["free_trial"]["code"] == "free_trial_exhausted"

    before = balances(chain)
    header = pay_header(chain, offer.headers["payment-required"])
    paid = httpx.post(paid_server.url + "/verify/schema", json=request(),
                      headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert paid.status_code == 200, paid.text
    settlement = decode(paid.headers["payment-response"])
    assert settlement["success"] is True and settlement["network"] == "eip155:8453"
    assert settlement["transaction"].startswith("0x") and len(settlement["transaction"]) == 66
    assert settlement["payer"].lower() == chain.buyer_address.lower()
    after = balances(chain)
    assert after[0] == before[0] - 20000 and after[1] == before[1] + 20000
    assert "free-allowance-remaining" not in paid.headers

    receipt = paid.json()
    assert receipt["summary"]["blocking_checks"] == ["consistency:sum_equals"]
    (tmp_path / "r.json").write_text(json.dumps(receipt))
    check = subprocess.run([BIN, "receipt", "verify", str(tmp_path / "r.json"), "--agent-card",
                            paid_server.url + "/.well-known/agent-card.json"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    # The same payment again: refused, and the money moved once.
    again = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert_refused(again, "payment_replayed")
    assert balances(chain) == after

    # The paid verification counts for reputation, like a free one.
    rep = httpx.get(paid_server.url + "/reputation/seller-paid").json()
    assert rep["total"] == 1 and rep["fails"] == 1

    # The operator's accounting export lists it once (the server stopped, its store opened).
    paid_server.stop()
    exported = subprocess.run([BIN, "admin", "--data-dir", paid_server.data_dir, "export-payments",
                               "--format", "jsonl"], capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(rows) == 1 and "1 settled payments" in exported.stderr, exported.stdout
    row = rows[0]
    assert (row["network"], row["amount_atomic"], row["amount_usdc"], row["route"]) == \
        ("eip155:8453", "20000", "0.020000", "/verify/schema")
    assert row["transaction"] == settlement["transaction"] and row["payer"].lower() == chain.buyer_address.lower()
    csv = subprocess.run([BIN, "admin", "--data-dir", paid_server.data_dir, "export-payments"],
                         capture_output=True, text=True).stdout.splitlines()
    assert csv[0] == "time,network,payer,amount_atomic,amount_usdc,transaction,route" and len(csv) == 2


def eip3009(chain, requirement, *, value=None, to=None, valid_after=0, valid_before=None, key=None):
    """A payload signed by hand (eth_account EIP-712) with chosen fields."""
    key = key or chain.buyer_key
    account = Account.from_key(key)
    nonce = "0x" + secrets.token_hex(32)
    auth = {"from": account.address, "to": to or requirement["payTo"],
            "value": int(value if value is not None else requirement["amount"]),
            "validAfter": valid_after, "validBefore": valid_before or int(time.time()) + 60,
            "nonce": nonce}
    signed = Account.sign_typed_data(
        key,
        domain_data={"name": "USD Coin", "version": "2", "chainId": 8453,
                     "verifyingContract": requirement["asset"]},
        message_types={"TransferWithAuthorization": [
            {"name": "from", "type": "address"}, {"name": "to", "type": "address"},
            {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
            {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]},
        message_data={**auth, "nonce": bytes.fromhex(nonce[2:])})
    return {"x402Version": 2, "accepted": requirement,
            "payload": {"signature": "0x" + signed.signature.hex().removeprefix("0x"),
                        "authorization": {k: str(v) for k, v in auth.items()}}}


def test_bad_payments_are_refused_with_a_reason_and_move_nothing(paid_server, chain):
    spend_allowance(paid_server)
    required = decode(demand(paid_server).headers["payment-required"])
    base = next(a for a in required["accepts"] if a["network"] == "eip155:8453")
    before = balances(chain)
    cheap = dict(base, amount="19999")
    tampered = eip3009(chain, base)
    sig = bytearray.fromhex(tampered["payload"]["signature"][2:])
    sig[10] ^= 0xFF
    tampered["payload"]["signature"] = "0x" + sig.hex()
    short = eip3009(chain, base)
    short["payload"]["signature"] = short["payload"]["signature"][:-2]        # 64 bytes
    fake_6492 = eip3009(chain, base)
    fake_6492["payload"]["signature"] = "0x" + "ab" * 200 + "6492" * 16    # the magic on junk
    huge = eip3009(chain, base)
    huge["payload"]["signature"] = "0x" + "01" * 5000                    # past 4096 bytes
    cases = {
        "no_matching_payment_requirements": eip3009(chain, cheap),
        "authorization_validity_too_long": eip3009(chain, base, valid_before=int(time.time()) + 3600),
        "amount_mismatch": eip3009(chain, base, value=19999),
        "recipient_mismatch": eip3009(chain, base, to="0x000000000000000000000000000000000000dEaD"),
        "authorization_expired": eip3009(chain, base, valid_before=int(time.time()) - 10),
        "authorization_not_yet_valid": eip3009(chain, base, valid_after=int(time.time()) + 600),
        "invalid_signature": tampered,
        "facilitator_rejected": eip3009(chain, base, key=chain.unfunded_key),
    }
    for code, payload in [*cases.items(), ("invalid_signature", short),
                          ("invalid_signature", fake_6492), ("invalid_signature", huge)]:
        r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": encode(payload)}, timeout=60)
        assert_refused(r, code)
        if code == "facilitator_rejected":
            assert "insufficient" in r.json()["payment_error"]["reason"]
    for header in ["not base64!", encode({"hello": "world"}), base64.b64encode(b"[1,2").decode()]:
        r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": header})
        assert_refused(r, "payment_header_invalid")
    assert balances(chain) == before


def test_a_facilitator_outage_burns_no_payment(start_server, chain, tmp_path):
    # The facilitator cannot be reached: a retryable 503, and the claim is given back ...
    from conftest import free_port
    data = str(tmp_path / "data")
    down = start_server(allowance=1, data_dir=data,
                        env=server_env(chain, VERIFIER_FACILITATOR_URL=f"http://127.0.0.1:{free_port()}"))
    spend_allowance(down)
    header = pay_header(chain, demand(down).headers["payment-required"])
    before = balances(chain)
    r = httpx.post(down.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                   timeout=60)
    assert r.status_code == 503 and r.json()["code"] == "facilitator_unavailable", r.text
    assert r.json()["retryable"] is True and int(r.headers["retry-after"]) > 0
    down.stop()
    # ... so the same payment, retried once the facilitator is back, buys exactly one answer.
    up = start_server(allowance=1, data_dir=data, env=server_env(chain))
    ok = httpx.post(up.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                    timeout=60)
    assert ok.status_code == 200, ok.text
    after = balances(chain)
    assert after[0] == before[0] - 20000 and after[1] == before[1] + 20000
    again = httpx.post(up.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                       timeout=60)
    assert_refused(again, "payment_replayed")
    assert balances(chain) == after


@pytest.fixture()
def cutting(chain):
    from cutting_proxy import CuttingProxy
    proxy = CuttingProxy(chain.facilitator_url)
    yield proxy
    proxy.stop()


def test_a_settlement_whose_answer_is_lost_is_paid_once_and_answered_on_the_retry(start_server, chain, cutting):
    """Issue 16: the facilitator settles, but its answer never reaches us. The payer's money has
    moved, so the claim stays `settling` (503, retry with the same payment); the same payment
    sent again takes the claim over, the facilitator finds it spent, and the payer gets its
    answer: one payment, one answer, one count, no second transfer."""
    server = start_server(allowance=0, env=server_env(chain, VERIFIER_FACILITATOR_URL=cutting.url))
    header = pay_header(chain, demand(server, body=request("seller-cut")).headers["payment-required"])
    before = balances(chain)
    cutting.cut_next_settle("after")
    r = httpx.post(server.url + "/verify/schema", json=request("seller-cut"),
                   headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert r.status_code == 503 and r.json()["code"] == "facilitator_unavailable", r.text
    assert r.json()["retryable"] is True and r.json()["charged"] is False
    paid_once = (before[0] - 20000, before[1] + 20000)
    assert balances(chain) == paid_once, "settled upstream, the answer was lost"
    assert httpx.get(server.url + "/reputation/seller-cut").json()["total"] == 0

    ok = httpx.post(server.url + "/verify/schema", json=request("seller-cut"),
                    headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert ok.status_code == 200, ok.text
    settlement = decode(ok.headers["payment-response"])
    assert settlement["success"] is True and settlement["payer"].lower() == chain.buyer_address.lower()
    assert balances(chain) == paid_once
    rep = httpx.get(server.url + "/reputation/seller-cut").json()
    assert (rep["total"], rep["paid_verifications"]) == (1, 1)
    again = httpx.post(server.url + "/verify/schema", json=request("seller-cut"),
                       headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert_refused(again, "payment_replayed")
    assert balances(chain) == paid_once


def test_a_settlement_cut_before_the_facilitator_is_settled_once_on_the_retry(start_server, chain, cutting):
    """The connection drops after our request left and before the facilitator saw it: the
    outcome is unknown to us, nothing moved. The retry settles it, exactly once."""
    server = start_server(allowance=0, env=server_env(chain, VERIFIER_FACILITATOR_URL=cutting.url))
    header = pay_header(chain, demand(server).headers["payment-required"])
    before = balances(chain)
    cutting.cut_next_settle("before")
    r = httpx.post(server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                   timeout=60)
    assert r.status_code == 503 and r.json()["code"] == "facilitator_unavailable", r.text
    assert balances(chain) == before and cutting.settles_forwarded == 0
    ok = httpx.post(server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                    timeout=60)
    assert ok.status_code == 200, ok.text
    settlement = decode(ok.headers["payment-response"])
    assert settlement["success"] is True and settlement["transaction"].startswith("0x")
    assert balances(chain) == (before[0] - 20000, before[1] + 20000)
    assert cutting.settles_forwarded == 1


def test_a_payment_identifier_gets_a_lost_answer_again_without_paying_twice(paid_server, chain):
    spend_allowance(paid_server)
    pid = "pay_" + secrets.token_hex(16)
    header = pay_header(chain, demand(paid_server).headers["payment-required"], payment_id=pid)
    assert decode(header)["extensions"][PAYMENT_IDENTIFIER]["info"]["id"] == pid
    before = balances(chain)
    first = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                       timeout=60)
    assert first.status_code == 200, first.text
    after = balances(chain)
    assert after[0] == before[0] - 20000
    # The answer was "lost": the same payment and request again return it byte for byte,
    # with the same settlement, no second settlement and no second count.
    again = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header},
                       timeout=60)
    assert again.status_code == 200, again.text
    assert again.content == first.content
    assert decode(again.headers["payment-response"]) == decode(first.headers["payment-response"])
    assert balances(chain) == after
    assert httpx.get(paid_server.url + "/reputation/seller-paid").json()["total"] == 1
    # The same id with another request, or with another payment: 409 in the error shape.
    other = request()
    other["task_id"] = "another-task"
    r = httpx.post(paid_server.url + "/verify/schema", json=other, headers={"PAYMENT-SIGNATURE": header})
    assert r.status_code == 409 and r.json()["code"] == "payment_identifier_conflict", r.text
    assert pid not in r.text
    fresh = pay_header(chain, demand(paid_server).headers["payment-required"], payment_id=pid)
    r = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": fresh})
    assert r.status_code == 409 and r.json()["charged"] is False
    assert balances(chain) == after
    # A malformed id is refused before anything happens.
    bad = decode(pay_header(chain, demand(paid_server).headers["payment-required"]))
    bad["extensions"] = {PAYMENT_IDENTIFIER: {"info": {"required": False, "id": "short"}}}
    r = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": encode(bad)})
    assert_refused(r, "invalid_payment_identifier")
    # Without an id, a settled payment sent again is a replay, as before.
    plain = pay_header(chain, demand(paid_server).headers["payment-required"])
    assert httpx.post(paid_server.url + "/verify/schema", json=request(),
                      headers={"PAYMENT-SIGNATURE": plain}, timeout=60).status_code == 200
    r = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": plain})
    assert_refused(r, "payment_replayed")


def test_payments_the_facilitator_refuses_are_budgeted_per_client(paid_server, chain):
    spend_allowance(paid_server)
    required = decode(demand(paid_server).headers["payment-required"])
    base = next(a for a in required["accepts"] if a["network"] == "eip155:8453")
    # An unfunded wallet's honest signature passes every local check; the facilitator refuses it.
    for _ in range(10):
        r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": encode(eip3009(chain, base, key=chain.unfunded_key))},
                       timeout=60)
        assert_refused(r, "facilitator_rejected")
    # Past the burst the client waits, without another facilitator call ...
    started = time.monotonic()
    r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                   headers={"PAYMENT-SIGNATURE": encode(eip3009(chain, base, key=chain.unfunded_key))})
    assert r.status_code == 429 and r.json()["code"] == "too_many_requests", r.text
    assert 0 < int(r.headers["retry-after"]) <= 30 and time.monotonic() - started < 1
    # ... and so does a good payment of the same client (the budget is the client's).
    good = pay_header(chain, demand(paid_server).headers["payment-required"])
    r = httpx.post(paid_server.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": good})
    assert r.status_code == 429


def test_an_invalid_paid_request_is_refused_before_any_payment_step(paid_server, chain):
    spend_allowance(paid_server)
    offer = demand(paid_server)
    header = pay_header(chain, offer.headers["payment-required"])
    before = balances(chain)
    bad = request()
    bad["rules"] = [{"type": "sum_of_everything", "field": "x"}]
    r = httpx.post(paid_server.url + "/verify/schema", json=bad, headers={"PAYMENT-SIGNATURE": header})
    assert r.status_code == 422 and r.json()["charged"] is False
    assert balances(chain) == before
    # The payment was not consumed: it still buys one answer.
    ok = httpx.post(paid_server.url + "/verify/schema", json=request(),
                    headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert ok.status_code == 200, ok.text


def test_a_paid_score_lookup_costs_ten_thousand_units(start_server, chain):
    """A rated agent (the minimum of counted verifications, one of them paid): the score is
    paid for once, and its evidence counts the paid verification."""
    probe = start_server(allowance=1)
    n = httpx.get(probe.url + "/score/test-nobody").json()["method"]["min_sample"]
    server = start_server(allowance=n - 1, env=server_env(chain))
    for _ in range(n - 1):
        assert httpx.post(server.url + "/verify/schema", json=request("seller-scored")).status_code == 200
    verification = demand(server, body=request("seller-scored"))
    paid = httpx.post(server.url + "/verify/schema", json=request("seller-scored"), timeout=60,
                      headers={"PAYMENT-SIGNATURE": pay_header(chain, verification.headers["payment-required"])})
    assert paid.status_code == 200, paid.text
    offer = demand(server, "/score/seller-scored")
    required = decode(offer.headers["payment-required"])
    assert {a["amount"] for a in required["accepts"]} == {"10000"}
    before = balances(chain)
    header = pay_header(chain, offer.headers["payment-required"])
    r = httpx.get(server.url + "/score/seller-scored", headers={"PAYMENT-SIGNATURE": header}, timeout=60)
    assert r.status_code == 200, r.text
    score = r.json()
    assert score["sample_size"] == n and score["trust_score"] is not None and "reason" not in score
    assert score["paid_verifications"] == 1 and score["checks_covered"] >= n
    assert decode(r.headers["payment-response"])["success"] is True
    after = balances(chain)
    assert after[0] == before[0] - 10000 and after[1] == before[1] + 10000


def svm_offer(server) -> dict:
    required = decode(demand(server).headers["payment-required"])
    return next(a for a in required["accepts"] if a["network"].startswith("solana:"))


def svm_balances(chain):
    return chain.svm_balance(chain.svm_buyer_address), chain.svm_balance(chain.svm_payee_address)


def test_solana_settles_on_litesvm_once_and_each_bad_payment_is_refused(paid_server, chain):
    """Issue 16: the buyer's real transaction (x402 Python SVM client) is verified and settled by
    the x402 SDK facilitator on LiteSVM (the Solana runtime: real SPL Token program, sigverify,
    blockhash check); balances move exactly once and every bad payment moves nothing."""
    spend_allowance(paid_server)
    sol = svm_offer(paid_server)
    supported = httpx.get(chain.facilitator_url + "/supported").json()
    fee_payer = next(k["extra"]["feePayer"] for k in supported["kinds"] if k["network"] == sol["network"])
    assert sol["extra"] == {"feePayer": fee_payer}
    assert sol["asset"] == "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" and sol["amount"] == "20000"
    before = svm_balances(chain)
    payload = pay_svm(chain, sol)
    r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                   headers={"PAYMENT-SIGNATURE": encode(payload)}, timeout=60)
    assert r.status_code == 200, r.text
    settlement = decode(r.headers["payment-response"])
    assert settlement["success"] is True and settlement["network"] == sol["network"]
    assert settlement["payer"] == chain.svm_buyer_address
    paid_once = (before[0] - 20000, before[1] + 20000)
    assert svm_balances(chain) == paid_once

    again = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": encode(payload)}, timeout=60)
    assert_refused(again, "payment_replayed")

    cheaper = pay_svm(chain, dict(sol, amount="19999"))
    cheaper["accepted"] = sol  # claims the offered requirement, transfers less
    elsewhere = pay_svm(chain, dict(sol, payTo=str(Keypair().pubkey())))
    elsewhere["accepted"] = sol  # claims the offer, pays another account
    tampered = _tamper_buyer_signature(pay_svm(chain, sol))
    cases = [
        ("transfers less", cheaper, "amount_mismatch"),
        ("pays someone else", elsewhere, "recipient_mismatch"),
        ("a forged buyer signature", tampered, "invalid_signature"),
        # Only the chain can tell these: the facilitator's simulation on LiteSVM refuses them.
        ("an unknown blockhash", pay_svm(chain, sol, blockhash=str(Keypair().pubkey())), "facilitator_rejected"),
        ("a buyer without USDC", pay_svm(chain, sol, keypair=Keypair()), "facilitator_rejected"),
    ]
    for case, bad, code in cases:
        r = httpx.post(paid_server.url + "/verify/schema", json=request(),
                       headers={"PAYMENT-SIGNATURE": encode(bad)}, timeout=60)
        assert r.status_code == 402, (case, r.text)
        error = r.json()["payment_error"]
        assert error["code"] == code, (case, error)
        if code == "facilitator_rejected":
            assert "simulation" in json.dumps(error), (case, error)
    assert svm_balances(chain) == paid_once


def test_a_paid_mcp_call_settles_on_litesvm(start_server, chain):
    from mcp import Client

    server = start_server(allowance=0, env=server_env(chain))
    body = request("seller-sol-mcp")

    async def go():
        async with Client(server.url + "/mcp", mode="auto") as c:
            asked = await c.call_tool("verify_schema", body)
            assert asked.is_error
            sol = next(a for a in asked.structured_content["accepts"] if a["network"].startswith("solana:"))
            meta = {"x402/payment": pay_svm(chain, sol)}
            paid = await c.call_tool("verify_schema", body, meta=meta)
            replay = await c.call_tool("verify_schema", body, meta=meta)
            return paid, replay

    before = svm_balances(chain)
    paid, replay = asyncio.run(go())
    assert not paid.is_error, paid.meta
    settlement = paid.meta["x402/payment-response"]
    assert settlement["success"] is True and settlement["network"].startswith("solana:")
    assert svm_balances(chain) == (before[0] - 20000, before[1] + 20000)
    assert replay.is_error and replay.meta["payment_error"]["code"] == "payment_replayed"
    assert svm_balances(chain) == (before[0] - 20000, before[1] + 20000)
    assert httpx.get(server.url + "/reputation/seller-sol-mcp").json()["paid_verifications"] == 1


def test_a_bearer_protected_facilitator(start_server):
    with LocalChain(require_bearer="s3cret-token") as guarded:
        without = start_server(allowance=0, env=server_env(guarded))
        r = httpx.post(without.url + "/verify/schema", json=request())
        header = pay_header(guarded, r.headers["payment-required"])
        r = httpx.post(without.url + "/verify/schema", json=request(), headers={"PAYMENT-SIGNATURE": header})
        assert r.status_code == 503 and r.json()["code"] == "facilitator_unavailable"
        assert r.json()["retryable"] is True and r.headers["retry-after"]
        with_token = start_server(allowance=0, env=server_env(guarded, VERIFIER_FACILITATOR_BEARER="s3cret-token"))
        offer = httpx.post(with_token.url + "/verify/schema", json=request())
        header = pay_header(guarded, offer.headers["payment-required"])
        ok = httpx.post(with_token.url + "/verify/schema", json=request(),
                        headers={"PAYMENT-SIGNATURE": header}, timeout=60)
        assert ok.status_code == 200, ok.text


def test_cors_exposes_the_payment_headers(paid_server):
    r = httpx.options(paid_server.url + "/verify/schema", headers={
        "origin": "https://buyer.example", "access-control-request-method": "POST",
        "access-control-request-headers": "payment-signature,content-type"})
    assert r.status_code == 200
    assert "payment-signature" in r.headers["access-control-allow-headers"].lower()
    r = httpx.post(paid_server.url + "/verify/schema", json=request("test-cors"),
                   headers={"origin": "https://buyer.example"})
    exposed = r.headers["access-control-expose-headers"].lower()
    assert "payment-required" in exposed and "payment-response" in exposed
