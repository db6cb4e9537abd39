# SPDX-License-Identifier: MIT
"""The local x402 payment environment works end to end, without the Rust server.

EVM: real anvil chain, MockUSDC at the Base USDC address, the Python x402 client signs,
the local facilitator (Python x402 SDK) verifies and settles with real transactions, and the
on-chain balances move. Solana: the real x402 SVM client (offline) and facilitator logic over
the facilitator's LiteSVM chain (the Solana runtime with the real SPL Token program).
"""
from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from eth_account import Account
from eth_utils import keccak
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction
from x402 import x402ClientSync
from x402.http import FacilitatorConfig, HTTPFacilitatorClientSync
from x402.http.utils import (
    decode_payment_required_header,
    decode_payment_signature_header,
    encode_payment_signature_header,
)
from x402.mechanisms.evm.exact import ExactEvmClientScheme
from x402.mechanisms.svm import KeypairSigner
from x402.mechanisms.svm.constants import TOKEN_PROGRAM_ADDRESS
from x402.mechanisms.svm.exact import ExactSvmClientScheme
from x402.mechanisms.svm.mint_cache import MintMetadata

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import localchain  # noqa: E402
from localchain import LocalChain, free_port, port_open  # noqa: E402

# x402 2.25's SVM client builds a (never contacted) sync solana Client, which warns.
pytestmark = pytest.mark.filterwarnings("ignore:Client is deprecated")

PRICE = "20000"  # $0.02, POST /verify/schema
RESOURCE = {"url": "http://127.0.0.1:8080/verify/schema",
            "description": "Validate agent output against a JSON Schema",
            "mimeType": "application/json"}


@pytest.fixture(scope="module")
def chain():
    t0 = time.monotonic()
    c = LocalChain().start()
    print(f"\nlocalchain up in {time.monotonic() - t0:.2f}s {c.timings}")
    try:
        yield c
    finally:
        pids, ports = c.pids, (c.anvil_port, c.facilitator_port)
        c.stop()
        for pid in pids:
            assert not localchain._pid_alive(pid), f"process {pid} survived stop()"
        for port in ports:
            assert not port_open(port), f"port {port} still open after stop()"


@pytest.fixture()
def http(chain):
    with httpx.Client(base_url=chain.facilitator_url, timeout=60) as h:
        yield h


# -- the 402 exactly as our server sends it, and the buyer side ---------------------------------


def evm_requirement(chain, **over) -> dict:
    req = {"scheme": "exact", "network": "eip155:8453", "amount": PRICE,
           "asset": chain.usdc_address, "payTo": chain.payee_address, "maxTimeoutSeconds": 60,
           "extra": {"name": "USD Coin", "version": "2"}}
    req.update(over)
    return req


def svm_requirement(chain, fee_payer: str, **over) -> dict:
    req = {"scheme": "exact", "network": chain.svm_network, "amount": PRICE,
           "asset": chain.svm_usdc_mint, "payTo": chain.svm_payee_address, "maxTimeoutSeconds": 60,
           "extra": {"feePayer": fee_payer}}
    req.update(over)
    return req


def payment_required_header(*accepts: dict) -> str:
    """base64(JSON PaymentRequired), as the server's PAYMENT-REQUIRED header (standard base64)."""
    body = {"x402Version": 2, "error": "Payment required", "resource": RESOURCE,
            "accepts": list(accepts), "extensions": {}}
    return base64.b64encode(json.dumps(body).encode()).decode()


def evm_client(key: str) -> x402ClientSync:
    client = x402ClientSync()
    client.register("eip155:8453", ExactEvmClientScheme(Account.from_key(key)))
    return client


def pay_evm(chain, requirement: dict, key: str | None = None) -> dict:
    """The buyer: decode PAYMENT-REQUIRED, sign, encode PAYMENT-SIGNATURE; return the JSON the
    server would decode from that header."""
    pr = decode_payment_required_header(payment_required_header(requirement))
    payload = evm_client(key or chain.buyer_key).create_payment_payload(pr)
    header = encode_payment_signature_header(payload)
    assert decode_payment_signature_header(header).payload == payload.payload
    return json.loads(base64.b64decode(header))


def svm_client(keypair: Keypair, network: str, mint: str) -> x402ClientSync:
    """Python x402 SVM client, fully offline (x402.md §9)."""
    scheme = ExactSvmClientScheme(KeypairSigner(keypair), rpc_url=f"http://127.0.0.1:{free_port()}")
    scheme._mint_cache[(network, mint)] = MintMetadata(6, Pubkey.from_string(TOKEN_PROGRAM_ADDRESS))
    client = x402ClientSync()
    client.register(network, scheme)
    return client


def pay_svm(chain, requirement: dict, keypair: Keypair | None = None,
            blockhash: str | None = None) -> dict:
    """Offline SVM buyer. Our server's 402 has no recentBlockhash (a Python-only extra), so the
    buyer adds the LiteSVM chain's latest blockhash to its copy of the requirement before signing; its
    `accepted.extra` is then a superset of the offered one."""
    pr = json.loads(base64.b64decode(payment_required_header(requirement)))
    for acc in pr["accepts"]:
        acc["extra"]["recentBlockhash"] = blockhash or chain.svm_blockhash
    pr = decode_payment_required_header(base64.b64encode(json.dumps(pr).encode()).decode())
    keypair = keypair or Keypair.from_base58_string(chain.svm_buyer_key)
    payload = svm_client(keypair, chain.svm_network, chain.svm_usdc_mint).create_payment_payload(pr)
    return json.loads(base64.b64decode(encode_payment_signature_header(payload)))


def body(payload: dict, requirement: dict) -> dict:
    return {"x402Version": 2, "paymentPayload": payload, "paymentRequirements": requirement}


def verify(http, payload, requirement) -> dict:
    r = http.post("/verify", json=body(payload, requirement))
    assert r.status_code == 200, r.text
    return r.json()


def settle(http, payload, requirement) -> dict:
    r = http.post("/settle", json=body(payload, requirement))
    assert r.status_code == 200, r.text
    return r.json()


def authorization_used(chain, authorizer: str, nonce: str) -> bool:
    data = "0x" + keccak(text="authorizationState(address,bytes32)")[:4].hex() \
        + localchain._word_addr(authorizer) + nonce.removeprefix("0x")
    return int(chain.call(chain.usdc_address, data), 16) == 1


@pytest.fixture()
def fee_payer(http, chain) -> str:
    kinds = http.get("/supported").json()["kinds"]
    return next(k["extra"]["feePayer"] for k in kinds if k["network"] == chain.svm_network)


# -- the environment itself ----------------------------------------------------------------------


def test_supported_lists_both_networks_and_the_fee_payer(http, chain):
    r = http.get("/supported")
    assert r.status_code == 200
    sup = r.json()
    kinds = {k["network"]: k for k in sup["kinds"]}
    assert kinds["eip155:8453"] == {"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}
    assert kinds[chain.svm_network]["scheme"] == "exact"
    assert kinds[chain.svm_network]["x402Version"] == 2
    assert kinds[chain.svm_network]["extra"]["feePayer"] == chain.svm_fee_payer
    assert sup["signers"]["eip155:*"] == [chain.facilitator_address]
    assert sup["signers"]["solana:*"] == [chain.svm_fee_payer]


def test_mock_usdc_looks_like_base_usdc(chain):
    def call(sig: str) -> str:
        return chain.call(chain.usdc_address, "0x" + keccak(text=sig)[:4].hex())

    def string(sig: str) -> str:
        raw = bytes.fromhex(call(sig)[2:])
        n = int.from_bytes(raw[32:64], "big")
        return raw[64:64 + n].decode()

    assert int(chain.rpc("eth_chainId", []), 16) == 8453
    assert len(chain.rpc("eth_getCode", [chain.usdc_address, "latest"])) > 2
    assert string("name()") == "USD Coin"
    assert string("version()") == "2"
    assert string("symbol()") == "USDC"
    assert int(call("decimals()"), 16) == 6
    # x402.md §5.1: the real Base USDC domain separator and the EIP-3009 typehash
    assert call("DOMAIN_SEPARATOR()") == "0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f"
    assert call("TRANSFER_WITH_AUTHORIZATION_TYPEHASH()") == "0x" + keccak(
        text="TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,"
             "uint256 validBefore,bytes32 nonce)").hex()
    assert call("RECEIVE_WITH_AUTHORIZATION_TYPEHASH()") == "0x" + keccak(
        text="ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,"
             "uint256 validBefore,bytes32 nonce)").hex()
    assert int(call("totalSupply()"), 16) >= chain.buyer_usdc


SPEC_VECTOR = {  # x402.md §5.1
    "from": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    "to": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    "value": 20000, "validAfter": 0, "validBefore": 1900000000, "nonce": "0x" + "11" * 32,
    "signature": "0xdfc1b3e934a375e92adadb61a0ca7fbff61512f04cb2a685d52ec8a51e1c0162"
                 "513a67fb7ecc10d44563f6ce45d3d7fda26cf2af1dcd3244b5cc8b0564ef0b131b",
}
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def twa_calldata(v: int, r: bytes, s: bytes, vec=SPEC_VECTOR, *, as_bytes: bool = False) -> str:
    head = (localchain._word_addr(vec["from"]) + localchain._word_addr(vec["to"])
            + f"{vec['value']:064x}{vec['validAfter']:064x}{vec['validBefore']:064x}"
            + vec["nonce"][2:])
    if as_bytes:
        sel = keccak(text="transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)")[:4]
        sig = r + s + bytes([v])
        tail = f"{7 * 32:064x}" + f"{len(sig):064x}" + sig.hex().ljust(128, "0")
        return "0x" + sel.hex() + head + tail
    sel = keccak(text="transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)")[:4]
    return "0x" + sel.hex() + head + f"{v:064x}" + r.hex() + s.hex()


def eth_call_error(chain, data: str) -> str:
    try:
        chain.call(chain.usdc_address, data)
    except RuntimeError as e:
        return str(e)
    return ""


def sign_twa(chain, vec: dict):
    """EIP-3009 TransferWithAuthorization for `vec`, signed by the buyer for Base USDC's domain."""
    return Account.sign_typed_data(
        chain.buyer_key,
        {"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": chain.usdc_address},
        {"TransferWithAuthorization": [
            {"name": "from", "type": "address"}, {"name": "to", "type": "address"},
            {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
            {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]},
        {k: vec[k] for k in ("from", "to", "value", "validAfter", "validBefore")}
        | {"nonce": bytes.fromhex(vec["nonce"][2:])})


def chain_time(chain) -> int:
    return int(chain.rpc("eth_getBlockByNumber", ["latest", False])["timestamp"], 16)


def test_spec_vector_signature_settles_directly_on_chain(chain):
    """The §5.1 vector (signed for production Base USDC) is reproduced exactly by the buyer's
    key; the same authorization, valid for an hour of the chain's own clock (the vector's
    validBefore, 2030-03-17, is a date the chain's clock will pass), is accepted by the contract;
    malleable (high-s) and bad-v variants are rejected. Uses the contract without x402."""
    acct = Account.from_key(chain.buyer_key)
    assert acct.address == SPEC_VECTOR["from"]
    signed = sign_twa(chain, SPEC_VECTOR)
    assert "0x" + signed.message_hash.hex().removeprefix("0x") == \
        "0xd007d95039bc4ce155b782727335cd90795a3bbe81d2b1ec3d7a1c67a0826db3"
    assert signed.signature.hex().removeprefix("0x") == SPEC_VECTOR["signature"][2:]

    vec = SPEC_VECTOR | {"validBefore": chain_time(chain) + 3600, "nonce": "0x" + "12" * 32}
    sig = bytes.fromhex(sign_twa(chain, vec).signature.hex().removeprefix("0x"))
    r, s, v = sig[:32], sig[32:64], sig[64]
    high_s = (SECP256K1_N - int.from_bytes(s, "big")).to_bytes(32, "big")
    assert "invalid signature 's' value" in eth_call_error(chain, twa_calldata(55 - v, r, high_s, vec))
    assert "invalid signature 'v' value" in eth_call_error(chain, twa_calldata(v - 27, r, s, vec))
    assert "invalid signature" in eth_call_error(chain, twa_calldata(v, r, bytes(32 - 1) + b"\x01", vec))
    # both overloads simulate fine
    assert eth_call_error(chain, twa_calldata(v, r, s, vec)) == ""
    assert eth_call_error(chain, twa_calldata(v, r, s, vec, as_bytes=True)) == ""

    buyer0, payee0 = chain.balance(vec["from"]), chain.balance(vec["to"])
    receipt = chain.send(chain.usdc_address, twa_calldata(v, r, s, vec))
    topics = {log["topics"][0] for log in receipt["logs"]}
    assert "0x" + keccak(text="Transfer(address,address,uint256)").hex() in topics
    assert "0x" + keccak(text="AuthorizationUsed(address,bytes32)").hex() in topics
    assert chain.balance(vec["from"]) == buyer0 - 20000
    assert chain.balance(vec["to"]) == payee0 + 20000
    assert authorization_used(chain, vec["from"], vec["nonce"])
    assert "authorization is used or canceled" in eth_call_error(chain, twa_calldata(v, r, s, vec, as_bytes=True))


# -- EVM: the real payment flow ------------------------------------------------------------------


def test_evm_payment_verifies_settles_and_moves_exactly_the_price(http, chain):
    req = evm_requirement(chain)
    payload = pay_evm(chain, req)
    auth = payload["payload"]["authorization"]
    assert payload["x402Version"] == 2 and payload["accepted"] == req
    assert auth["from"] == chain.buyer_address and auth["to"] == chain.payee_address
    assert auth["value"] == PRICE and auth["validAfter"] == "0"
    assert 55 <= int(auth["validBefore"]) - int(time.time()) <= 61
    buyer0, payee0 = chain.balance(chain.buyer_address), chain.balance(chain.payee_address)

    v = verify(http, payload, req)
    assert v == {"isValid": True, "payer": chain.buyer_address}
    assert chain.balance(chain.buyer_address) == buyer0  # verify moves nothing

    s = settle(http, payload, req)
    assert s["success"] is True, s
    assert s["network"] == "eip155:8453" and s["payer"] == chain.buyer_address
    assert s["transaction"].startswith("0x") and len(s["transaction"]) == 66
    receipt = chain.rpc("eth_getTransactionReceipt", [s["transaction"]])
    assert int(receipt["status"], 16) == 1
    assert receipt["from"].lower() == chain.facilitator_address.lower()
    assert receipt["to"].lower() == chain.usdc_address.lower()
    assert chain.balance(chain.buyer_address) == buyer0 - 20000
    assert chain.balance(chain.payee_address) == payee0 + 20000
    assert authorization_used(chain, chain.buyer_address, auth["nonce"])

    # replay: the nonce is spent on chain
    v2 = verify(http, payload, req)
    assert v2["isValid"] is False
    assert v2["invalidReason"] == "invalid_exact_evm_nonce_already_used"
    s2 = settle(http, payload, req)
    assert s2["success"] is False
    assert s2["errorReason"] in ("transaction_failed", "invalid_exact_evm_nonce_already_used")
    assert chain.balance(chain.buyer_address) == buyer0 - 20000
    assert chain.balance(chain.payee_address) == payee0 + 20000


def _tamper_signature(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    sig = bytearray(bytes.fromhex(p["payload"]["signature"][2:]))
    sig[5] ^= 0x01  # inside r
    p["payload"]["signature"] = "0x" + sig.hex()
    return p


def _tamper_value(payload: dict) -> tuple[dict, dict]:
    p = copy.deepcopy(payload)
    p["payload"]["authorization"]["value"] = "10000"
    p["accepted"]["amount"] = "10000"
    return p, p["accepted"]


@pytest.mark.parametrize("case, reason", [
    ("wrong_amount", "invalid_exact_evm_payload_authorization_value_mismatch"),
    ("overpaid_amount", "invalid_exact_evm_payload_authorization_value_mismatch"),
    ("wrong_pay_to", "invalid_exact_evm_payload_recipient_mismatch"),
    ("expired_valid_before", "invalid_exact_evm_payload_authorization_valid_before"),
    ("tampered_signature", "invalid_exact_evm_payload_signature"),
    ("tampered_value_in_authorization", "invalid_exact_evm_payload_signature"),
    ("unfunded_buyer", "invalid_exact_evm_insufficient_balance"),
    ("missing_eip712_domain", "missing_eip712_domain"),
])
def test_evm_bad_payments_are_rejected_and_move_no_money(http, chain, case, reason):
    req = evm_requirement(chain)
    key = chain.unfunded_key if case == "unfunded_buyer" else None
    if case == "expired_valid_before":
        # a genuinely signed authorization whose validBefore is (almost) now
        req = evm_requirement(chain, maxTimeoutSeconds=1)
    payload = pay_evm(chain, req, key)
    check_req = req
    if case == "wrong_amount":
        check_req = evm_requirement(chain, amount="10000")
    elif case == "overpaid_amount":
        check_req = evm_requirement(chain, amount="30000")
    elif case == "wrong_pay_to":
        check_req = evm_requirement(chain, payTo="0x1111111111111111111111111111111111111111")
    elif case == "tampered_signature":
        payload = _tamper_signature(payload)
    elif case == "tampered_value_in_authorization":
        payload, check_req = _tamper_value(payload)
    elif case == "missing_eip712_domain":
        check_req = evm_requirement(chain, extra={})
    auth = payload["payload"]["authorization"]
    watched = [auth["from"], chain.payee_address, check_req["payTo"]]
    before = [chain.balance(a) for a in watched]

    v = verify(http, payload, check_req)
    assert v["isValid"] is False
    assert v["invalidReason"] == reason, v
    s = settle(http, payload, check_req)
    assert s["success"] is False
    if case == "unfunded_buyer":
        # x402 2.25 settle re-verifies WITHOUT simulating (simulate_in_settle=False): the
        # transfer is broadcast and reverts on chain, so settle reports transaction_failed
        # with the reverted tx hash. A server must /verify before /settle.
        assert s["errorReason"] == "transaction_failed", s
        receipt = chain.rpc("eth_getTransactionReceipt", [s["transaction"]])
        assert int(receipt["status"], 16) == 0
    else:
        assert s["errorReason"] == reason, s
        assert s["transaction"] == ""  # rejected before anything was broadcast
    assert [chain.balance(a) for a in watched] == before
    assert not authorization_used(chain, auth["from"], auth["nonce"])


def test_evm_interop_with_the_sdk_http_facilitator_client(chain):
    """The SDK's own HTTPFacilitatorClientSync (what a Python resource server uses) talks to
    this facilitator: /supported, /verify, /settle parse into its models."""
    from x402.schemas import PaymentPayload, PaymentRequirements

    req = evm_requirement(chain)
    payload = PaymentPayload.model_validate(pay_evm(chain, req))
    requirements = PaymentRequirements.model_validate(req)
    payee0 = chain.balance(chain.payee_address)
    with HTTPFacilitatorClientSync(FacilitatorConfig(url=chain.facilitator_url)) as fc:
        networks = {str(k.network) for k in fc.get_supported().kinds}
        assert {"eip155:8453", chain.svm_network} <= networks
        assert fc.verify(payload, requirements).is_valid is True
        settled = fc.settle(payload, requirements)
        assert settled.success is True and settled.transaction.startswith("0x")
    assert chain.balance(chain.payee_address) == payee0 + 20000


# -- HTTP behaviour of the facilitator -----------------------------------------------------------


@pytest.mark.parametrize("raw", [
    b"not json", b"[]", b'{"x402Version": 2}',
    b'{"x402Version": 2, "paymentPayload": {}, "paymentRequirements": {}}',
    b'{"x402Version": "two", "paymentPayload": {}, "paymentRequirements": {}}',
])
@pytest.mark.parametrize("path", ["/verify", "/settle"])
def test_malformed_bodies_get_400(http, path, raw):
    r = http.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "invalid_request" and r.json()["message"]


def test_bad_scheme_payload_and_unknown_network_are_200_invalid(http, chain):
    req = evm_requirement(chain)
    payload = pay_evm(chain, req)
    broken = copy.deepcopy(payload)
    del broken["payload"]["authorization"]
    v = verify(http, broken, req)
    assert v["isValid"] is False and v["invalidReason"] == "invalid_payload"
    s = settle(http, broken, req)
    assert s["success"] is False and s["errorReason"] == "invalid_payload" and s["transaction"] == ""

    other = copy.deepcopy(payload)
    other["accepted"]["network"] = "eip155:1"
    v = verify(http, other, evm_requirement(chain, network="eip155:1"))
    assert v["isValid"] is False and v["invalidReason"] == "invalid_network"
    s = settle(http, other, evm_requirement(chain, network="eip155:1"))
    assert s["success"] is False and s["errorReason"] == "invalid_network"

    upto = copy.deepcopy(payload)
    upto["accepted"]["scheme"] = "upto"
    v = verify(http, upto, evm_requirement(chain, scheme="upto"))
    assert v["isValid"] is False and v["invalidReason"] == "unsupported_scheme"


def test_unknown_route_and_wrong_method(http):
    assert http.get("/nope").status_code == 404
    assert http.get("/verify").status_code == 405


def test_bearer_auth(chain):
    """--require-bearer: 401 without the token, normal answers with it (a second facilitator
    on the same anvil)."""
    token = "s3cret-token"
    proc, url = localchain.start_facilitator(chain.rpc_url, require_bearer=token)
    try:
        req = evm_requirement(chain)
        payload = pay_evm(chain, req)
        with httpx.Client(base_url=url, timeout=60) as h:
            for method, path in (("GET", "/supported"), ("POST", "/verify"), ("POST", "/settle")):
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
                    r = h.request(method, path, json=body(payload, req), headers=headers)
                    assert r.status_code == 401, (path, headers, r.text)
                    assert r.headers["WWW-Authenticate"].startswith("Bearer")
            good = {"Authorization": f"Bearer {token}"}
            assert h.get("/supported", headers=good).status_code == 200
            r = h.post("/verify", json=body(payload, req), headers=good)
            assert r.status_code == 200 and r.json()["isValid"] is True
        # the SDK client's create_headers hook works with it too
        from x402.schemas import PaymentPayload, PaymentRequirements
        cfg = {"url": url, "create_headers": lambda: {"verify": good, "settle": good, "supported": good}}
        with HTTPFacilitatorClientSync(cfg) as fc:
            s = fc.settle(PaymentPayload.model_validate(payload), PaymentRequirements.model_validate(req))
            assert s.success is True
    finally:
        proc.stop()
    assert not port_open(proc.port)


# -- Solana: real x402 SVM client and facilitator logic over LiteSVM --------------------------------


def test_svm_payment_verifies_settles_once(http, chain, fee_payer):
    assert fee_payer == chain.svm_fee_payer
    req = svm_requirement(chain, fee_payer)
    payload = pay_svm(chain, req)
    assert payload["x402Version"] == 2 and set(payload["payload"]) == {"transaction"}
    assert payload["accepted"]["extra"]["feePayer"] == fee_payer
    # x402.md §6 layout: fee payer is key 0 with an empty signature slot, the buyer key 1
    tx = VersionedTransaction.from_bytes(base64.b64decode(payload["payload"]["transaction"]))
    keys = list(tx.message.account_keys)
    assert str(keys[0]) == fee_payer and str(keys[1]) == chain.svm_buyer_address
    assert tx.signatures[0] == Signature.default()
    assert tx.signatures[1].verify(keys[1], b"\x80" + bytes(tx.message))
    assert [bytes(ix.data)[:1] for ix in tx.message.instructions[:3]] == [b"\x02", b"\x03", b"\x0c"]
    assert int.from_bytes(bytes(tx.message.instructions[2].data)[1:9], "little") == 20000

    buyer0 = chain.svm_balance(chain.svm_buyer_address)
    payee0 = chain.svm_balance(chain.svm_payee_address)
    v = verify(http, payload, req)
    assert v == {"isValid": True, "payer": chain.svm_buyer_address}
    s = settle(http, payload, req)
    assert s["success"] is True, s
    assert s["network"] == chain.svm_network and s["payer"] == chain.svm_buyer_address
    sig = Signature.from_string(s["transaction"])  # base58 transaction signature
    assert sig.verify(Pubkey.from_string(fee_payer), b"\x80" + bytes(tx.message))
    assert chain.svm_balance(chain.svm_buyer_address) == buyer0 - 20000
    assert chain.svm_balance(chain.svm_payee_address) == payee0 + 20000

    s2 = settle(http, payload, req)
    # The runtime itself refuses the replay: the SDK's pre-settlement simulation meets an
    # already-processed transaction (on the stub chain, the SDK's duplicate cache answered).
    assert s2["success"] is False and s2["errorReason"] == "transaction_simulation_failed", s2
    again = verify(http, payload, req)
    assert again["isValid"] is False and "AlreadyProcessed" in again["invalidMessage"], again
    assert chain.svm_balance(chain.svm_buyer_address) == buyer0 - 20000
    assert chain.svm_balance(chain.svm_payee_address) == payee0 + 20000


def _tamper_buyer_signature(payload: dict) -> dict:
    p = copy.deepcopy(payload)
    raw = bytearray(base64.b64decode(p["payload"]["transaction"]))
    raw[1 + 64 + 10] ^= 0x01  # compact-u16 count, fee payer slot, then the buyer's signature
    p["payload"]["transaction"] = base64.b64encode(bytes(raw)).decode()
    return p


@pytest.mark.parametrize("case, reason", [
    ("wrong_amount", "invalid_exact_svm_payload_amount_insufficient"),
    ("wrong_pay_to", "invalid_exact_svm_payload_recipient_mismatch"),
    ("wrong_mint", "invalid_exact_svm_payload_mint_mismatch"),
    ("unmanaged_fee_payer", "fee_payer_not_managed_by_facilitator"),
    ("tampered_buyer_signature", "transaction_simulation_failed"),
    ("unknown_blockhash", "transaction_simulation_failed"),
    ("unfunded_buyer", "transaction_simulation_failed"),
])
def test_svm_bad_payments_are_rejected(http, chain, fee_payer, case, reason):
    req = svm_requirement(chain, fee_payer)
    check_req = req
    kwargs = {}
    if case == "unknown_blockhash":
        kwargs["blockhash"] = str(Keypair().pubkey())  # any 32 bytes the runtime never issued
    if case == "unfunded_buyer":
        kwargs["keypair"] = Keypair()
    payload = pay_svm(chain, req, **kwargs)
    if case == "wrong_amount":
        check_req = svm_requirement(chain, fee_payer, amount="30000")
    elif case == "wrong_pay_to":
        check_req = svm_requirement(chain, fee_payer, payTo=str(Keypair().pubkey()))
    elif case == "wrong_mint":
        check_req = svm_requirement(chain, fee_payer, asset=str(Keypair().pubkey()))
    elif case == "unmanaged_fee_payer":
        check_req = svm_requirement(chain, str(Keypair().pubkey()))
    elif case == "tampered_buyer_signature":
        payload = _tamper_buyer_signature(payload)
    buyer0 = chain.svm_balance(chain.svm_buyer_address)
    payee0 = chain.svm_balance(chain.svm_payee_address)
    v = verify(http, payload, check_req)
    assert v["isValid"] is False and v["invalidReason"] == reason, v
    if case == "tampered_buyer_signature":
        assert "SignatureFailure" in v["invalidMessage"]  # the runtime's sigverify
    s = settle(http, payload, check_req)
    assert s["success"] is False and s["errorReason"] == reason, s
    assert chain.svm_balance(chain.svm_buyer_address) == buyer0
    assert chain.svm_balance(chain.svm_payee_address) == payee0


def test_svm_overpayment_is_accepted_by_the_sdk(http, chain, fee_payer):
    """Documents x402 2.25.0: the SVM facilitator checks `amount >= required` (the EVM one
    checks `==`). The spec wants exact; the resource server must compare `accepted` itself."""
    payload = pay_svm(chain, svm_requirement(chain, fee_payer))
    assert verify(http, payload, svm_requirement(chain, fee_payer, amount="10000"))["isValid"] is True


# -- the CLI -------------------------------------------------------------------------------------


def test_cli_start_writes_env_file_and_stop_cleans_up(tmp_path):
    env_file = tmp_path / "x402.env"
    script = str(HERE / "localchain.py")
    t0 = time.monotonic()
    subprocess.run([sys.executable, script, "start", "--env-file", str(env_file)],
                   check=True, timeout=120, stdin=subprocess.DEVNULL)
    started = time.monotonic() - t0
    env = localchain.read_env_file(env_file)
    try:
        for key in ("FACILITATOR_URL", "RPC_URL", "BUYER_KEY", "BUYER_ADDRESS", "PAYEE_ADDRESS",
                    "SVM_FEE_PAYER", "PIDS"):
            assert env[key], key
        pids = [int(p) for p in env["PIDS"].split()]
        assert len(pids) == 2 and all(localchain._pid_alive(p) for p in pids)
        assert env["FACILITATOR_URL"].startswith("http://127.0.0.1:")
        assert env["RPC_URL"].startswith("http://127.0.0.1:")
        sup = httpx.get(env["FACILITATOR_URL"] + "/supported", timeout=10).json()
        assert any(k.get("extra", {}).get("feePayer") == env["SVM_FEE_PAYER"] for k in sup["kinds"])
        assert Account.from_key(env["BUYER_KEY"]).address == env["BUYER_ADDRESS"]
        r = httpx.post(env["RPC_URL"], json={"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": [
            {"to": localchain.USDC_ADDRESS,
             "data": "0x70a08231" + localchain._word_addr(env["BUYER_ADDRESS"])}, "latest"]})
        assert int(r.json()["result"], 16) == localchain.DEFAULT_BUYER_USDC
    finally:
        subprocess.run([sys.executable, script, "stop", "--env-file", str(env_file)],
                       check=True, timeout=60)
    for pid in pids:
        assert not localchain._pid_alive(pid)
    for key in ("ANVIL_PORT", "FACILITATOR_PORT"):
        assert not port_open(int(env[key]))
    print(f"\nCLI start took {started:.2f}s")
