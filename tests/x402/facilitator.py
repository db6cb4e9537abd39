#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A local x402 v2 facilitator over HTTP, for tests only.

    POST /verify     body {"x402Version": 2, "paymentPayload": {...}, "paymentRequirements": {...}}
    POST /settle     same body
    GET  /supported  {"kinds": [...], "extensions": [...], "signers": {...}}

Both POSTs answer HTTP 200 with a VerifyResponse / SettleResponse, also when `isValid` /
`success` is false (x402.md §4). A body that is not JSON, or whose paymentPayload /
paymentRequirements do not parse as x402 v2 models, gets HTTP 400 `{"error", "message"}`.
An internal failure (e.g. the RPC is down) gets HTTP 500 `{"error", "message"}`.

The verification and settlement logic is the Python x402 SDK's own (`x402FacilitatorSync`):

* EVM `eip155:8453`: `ExactEvmFacilitatorScheme(FacilitatorWeb3Signer(key, rpc_url))` against
  a real chain (anvil, see localchain.py): real eth_call simulation, real transactions.
* Solana `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`: `ExactSvmFacilitatorScheme` over
  `LiteSvmChain`: LiteSVM (solders.litesvm), the Solana runtime in process, with the real SPL
  Token program, signature verification and blockhash check; the USDC mint sits at its mainnet
  address and token accounts are seeded with --svm-fund.

Test-only extras (not part of x402): `GET /health`, `GET /_svm/blockhash` -> {"blockhash"}
(what a buyer puts in `extra.recentBlockhash`), and
`GET /_svm/balance?owner=<base58>[&mint=<base58>]` -> {"owner", "mint", "ata", "balance"}.

With `--require-bearer TOKEN` every request without `Authorization: Bearer TOKEN` gets 401.
Each request is logged to stderr in one line.
"""
from __future__ import annotations

import argparse
import base64
import hmac
import json
import os
import signal
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError
from solders.account import Account
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.token.state import Mint, TokenAccount, TokenAccountState
from solders.transaction import VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata
from x402 import x402FacilitatorSync
from x402.mechanisms.evm import FacilitatorWeb3Signer
from x402.mechanisms.evm.exact import ExactEvmFacilitatorScheme
from x402.mechanisms.svm import FacilitatorKeypairSigner
from x402.mechanisms.svm.exact import ExactSvmFacilitatorScheme
from x402.mechanisms.svm.utils import derive_ata
from x402.schemas import PaymentPayload, PaymentRequirements, SchemeNotFoundError

EVM_NETWORK = "eip155:8453"
SVM_NETWORK = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
SVM_USDC_MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
LAMPORTS_PER_SOL = 1_000_000_000


def log(msg: str) -> None:
    sys.stderr.write(f"[facilitator {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Solana: LiteSVM behind the real x402 SVM facilitator scheme
# ---------------------------------------------------------------------------------------------


class LiteSvmChain(FacilitatorKeypairSigner):
    """`FacilitatorSvmSigner` whose chain is LiteSVM (`solders.litesvm`): the real Solana
    runtime in process, with its real SPL Token program, signature verification (sigverify on)
    and blockhash check.

    Signing with the fee payer is the SDK's own (`FacilitatorKeypairSigner.sign_transaction`).
    `simulate_transaction` is LiteSVM's simulation, `send_transaction` executes the
    transaction (a repeat of the same transaction is refused by the runtime as already
    processed), `confirm_transaction` looks it up in the runtime's history. The USDC mint
    (6 decimals, classic token program) is placed at its mainnet address; `fund` creates or
    overwrites an owner's associated token account with a balance. The fee payers get SOL.
    """

    def __init__(self, keypairs: list[Keypair], mints: dict[str, int] | None = None):
        super().__init__(keypairs, rpc_url="http://127.0.0.1:9")  # never contacted
        self._lock = threading.Lock()
        self.svm = LiteSVM()
        for kp in keypairs:
            self.svm.airdrop(kp.pubkey(), 100 * LAMPORTS_PER_SOL)
        for mint, decimals in (mints or {SVM_USDC_MINT: 6}).items():
            data = bytes(Mint(mint_authority=None, supply=10**15, decimals=decimals, is_initialized=True))
            self._place(Pubkey.from_string(mint), data)

    def _place(self, address: Pubkey, data: bytes) -> None:
        rent = self.svm.minimum_balance_for_rent_exemption(len(data))
        self.svm.set_account(address, Account(lamports=rent, data=data,
                                              owner=Pubkey.from_string(TOKEN_PROGRAM), executable=False))

    # -- ledger --------------------------------------------------------------------------------
    def fund(self, owner: str, amount: int, mint: str = SVM_USDC_MINT) -> str:
        ata = derive_ata(owner, mint, TOKEN_PROGRAM)
        account = TokenAccount(mint=Pubkey.from_string(mint), owner=Pubkey.from_string(owner),
                               amount=int(amount), delegate=None, state=TokenAccountState.Initialized,
                               is_native=None, delegated_amount=0)
        with self._lock:
            self._place(Pubkey.from_string(ata), bytes(account))
        return ata

    def balance(self, owner: str, mint: str = SVM_USDC_MINT) -> tuple[str, int]:
        ata = derive_ata(owner, mint, TOKEN_PROGRAM)
        with self._lock:
            account = self.svm.get_account(Pubkey.from_string(ata))
        if account is None or not account.data:
            return ata, 0
        return ata, TokenAccount.from_bytes(bytes(account.data)).amount

    def blockhash(self) -> str:
        with self._lock:
            return str(self.svm.latest_blockhash())

    # -- execution -----------------------------------------------------------------------------
    @staticmethod
    def _decode(tx_base64: str) -> VersionedTransaction:
        return VersionedTransaction.from_bytes(base64.b64decode(tx_base64))

    @staticmethod
    def _failed(result) -> str | None:
        """The runtime's error of a failed simulation or execution, with its program logs."""
        if not isinstance(result, FailedTransactionMetadata):
            return None
        logs = [line for line in result.meta().logs() if "failed" in line or "Error" in line]
        return f"{result.err()}" + (f" ({'; '.join(logs)})" if logs else "")

    def simulate_transaction(self, tx_base64: str, network: str) -> None:
        if network != SVM_NETWORK:
            raise RuntimeError(f"this chain serves {SVM_NETWORK}, not {network}")
        tx = self._decode(tx_base64)
        with self._lock:
            error = self._failed(self.svm.simulate_transaction(tx))
        if error:
            raise RuntimeError(f"simulation failed: {error}")

    def send_transaction(self, tx_base64: str, network: str) -> str:
        if network != SVM_NETWORK:
            raise RuntimeError(f"this chain serves {SVM_NETWORK}, not {network}")
        tx = self._decode(tx_base64)
        with self._lock:
            error = self._failed(self.svm.send_transaction(tx))
        if error:
            raise RuntimeError(f"transaction failed: {error}")
        return str(tx.signatures[0])

    def confirm_transaction(self, signature: str, network: str, timeout_seconds: int = 30) -> None:
        with self._lock:
            found = self.svm.get_transaction(Signature.from_string(signature))
        if found is None:
            raise RuntimeError(f"transaction {signature} not found")


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


class BadRequest(Exception):
    pass


def parse_body(raw: bytes) -> tuple[PaymentPayload, PaymentRequirements]:
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(f"body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    version = body.get("x402Version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise BadRequest("x402Version must be an integer")
    for key in ("paymentPayload", "paymentRequirements"):
        if not isinstance(body.get(key), dict):
            raise BadRequest(f"{key} must be a JSON object")
    pp, pr = body["paymentPayload"], body["paymentRequirements"]
    if pp.get("x402Version") != 2:
        raise BadRequest("paymentPayload.x402Version must be 2 (this facilitator speaks x402 v2)")
    try:
        payload = PaymentPayload.model_validate(pp)
    except ValidationError as e:
        raise BadRequest(f"paymentPayload: {_short(e)}") from None
    try:
        requirements = PaymentRequirements.model_validate(pr)
    except ValidationError as e:
        raise BadRequest(f"paymentRequirements: {_short(e)}") from None
    if not isinstance(payload.payload, dict) or not payload.payload:
        raise BadRequest("paymentPayload.payload must be a non-empty object")
    return payload, requirements


def _short(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors())


def _scheme_payload_problem(payload: PaymentPayload) -> str | None:
    """Shape check of the scheme-specific payload, so the SDK does not crash on it."""
    p = payload.payload
    network = str(payload.accepted.network)
    if network.startswith("eip155:"):
        if "permit2Authorization" in p:
            return None
        auth = p.get("authorization")
        if not isinstance(auth, dict) or not isinstance(p.get("signature"), str):
            return "EVM exact payload needs 'signature' and 'authorization'"
        for field in ("from", "to", "value", "validAfter", "validBefore", "nonce"):
            if not isinstance(auth.get(field), str):
                return f"authorization.{field} must be a string"
        for field in ("value", "validAfter", "validBefore"):
            if not auth[field].isdigit():
                return f"authorization.{field} must be a decimal integer string"
    elif network.startswith("solana:"):
        if not isinstance(p.get("transaction"), str):
            return "SVM exact payload needs 'transaction' (base64)"
    return None


class Facilitator:
    def __init__(self, facilitator: x402FacilitatorSync, svm_chain: LiteSvmChain | None,
                 bearer: str | None):
        self.facilitator = facilitator
        self.svm_chain = svm_chain
        self.bearer = bearer
        self.networks = {str(k.network) for k in facilitator.get_supported().kinds}

    def handle(self, method: str, path: str, headers, raw: bytes) -> tuple[int, dict]:
        url = urlsplit(path)
        route = url.path.rstrip("/") or "/"
        if self.bearer is not None:
            got = headers.get("Authorization") or ""
            want = f"Bearer {self.bearer}"
            if not hmac.compare_digest(got.encode(), want.encode()):
                return 401, {"error": "unauthorized",
                             "message": "missing or wrong Authorization: Bearer token"}
        if method == "GET" and route == "/health":
            return 200, {"status": "ok"}
        if method == "GET" and route == "/supported":
            return 200, self.facilitator.get_supported().model_dump(by_alias=True, exclude_none=True)
        if method == "GET" and route == "/_svm/blockhash" and self.svm_chain is not None:
            return 200, {"blockhash": self.svm_chain.blockhash()}
        if method == "GET" and route == "/_svm/balance" and self.svm_chain is not None:
            q = parse_qs(url.query)
            owner = (q.get("owner") or [""])[0]
            mint = (q.get("mint") or [SVM_USDC_MINT])[0]
            try:
                Pubkey.from_string(owner), Pubkey.from_string(mint)
            except ValueError:
                return 400, {"error": "invalid_request", "message": "owner/mint must be base58 pubkeys"}
            ata, bal = self.svm_chain.balance(owner, mint)
            return 200, {"owner": owner, "mint": mint, "ata": ata, "balance": str(bal)}
        if route in ("/verify", "/settle"):
            if method != "POST":
                return 405, {"error": "method_not_allowed", "message": f"use POST {route}"}
            try:
                payload, requirements = parse_body(raw)
            except BadRequest as e:
                return 400, {"error": "invalid_request", "message": str(e)}
            return 200, self._run(route[1:], payload, requirements)
        return 404, {"error": "not_found", "message": f"no route {method} {route}"}

    def _run(self, op: str, payload: PaymentPayload, requirements: PaymentRequirements) -> dict:
        network = str(requirements.network)
        payer = ""
        if isinstance(payload.payload.get("authorization"), dict):
            payer = str(payload.payload["authorization"].get("from") or "")

        def fail(reason: str, message: str) -> dict:
            if op == "verify":
                return {"isValid": False, "invalidReason": reason, "invalidMessage": message,
                        "payer": payer}
            return {"success": False, "errorReason": reason, "errorMessage": message,
                    "transaction": "", "network": network, "payer": payer}

        # The SDK registers ["eip155:8453"] as the pattern "eip155:*" and would happily verify
        # a payment for any EVM chain against the one RPC it has: serve only what we advertise.
        for net, scheme in ((network, requirements.scheme),
                            (str(payload.accepted.network), payload.accepted.scheme)):
            if net not in self.networks:
                return fail("invalid_network", f"this facilitator serves {sorted(self.networks)}, not {net}")
            if scheme != "exact":
                return fail("unsupported_scheme", f"only scheme 'exact' is supported, not {scheme!r}")
        problem = _scheme_payload_problem(payload)
        if problem:
            return fail("invalid_payload", problem)
        try:
            fn = self.facilitator.verify if op == "verify" else self.facilitator.settle
            result = fn(payload, requirements)
        except SchemeNotFoundError as e:
            return fail("unsupported_scheme", str(e))
        return result.model_dump(by_alias=True, exclude_none=True)


def make_handler(app: Facilitator, quiet: bool):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "x402-local-facilitator/1"

        def _serve(self) -> None:
            t0 = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                status, body = app.handle(self.command, self.path, self.headers, raw)
            except Exception as e:  # an internal failure: the RPC is down, a bug, ...
                traceback.print_exc(file=sys.stderr)
                status, body = 500, {"error": "internal_error", "message": f"{type(e).__name__}: {e}"}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="x402-facilitator"')
            self.end_headers()
            self.wfile.write(data)
            if not quiet:
                outcome = ""
                if "isValid" in body:
                    outcome = "valid" if body["isValid"] else f"invalid {body.get('invalidReason')}"
                elif "success" in body:
                    outcome = (f"settled {body.get('transaction')}" if body["success"]
                               else f"failed {body.get('errorReason')}")
                elif status >= 400:
                    outcome = body.get("message", "")
                log(f"{self.command} {self.path} -> {status} {outcome} "
                    f"({(time.monotonic() - t0) * 1000:.0f} ms)")

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, fmt, *args):  # silence the default access log
            pass

    return Handler


def svm_keypair(value: str) -> Keypair:
    """A keypair from base58 (64-byte secret, as Keypair.from_base58_string) or 32-byte hex seed."""
    v = value.strip()
    if len(v) == 64 and all(c in "0123456789abcdefABCDEF" for c in v):
        return Keypair.from_seed(bytes.fromhex(v))
    return Keypair.from_base58_string(v)


def build(args) -> Facilitator:
    facilitator = x402FacilitatorSync()
    evm_key = args.evm_private_key or os.environ.get("FACILITATOR_EVM_PRIVATE_KEY")
    if evm_key:
        signer = FacilitatorWeb3Signer(private_key=evm_key, rpc_url=args.rpc_url,
                                       confirmation_timeout_seconds=args.confirmation_timeout)
        facilitator.register([EVM_NETWORK], ExactEvmFacilitatorScheme(signer))
    svm_chain = None
    svm_key = args.svm_private_key or os.environ.get("FACILITATOR_SVM_PRIVATE_KEY")
    if svm_key:
        svm_chain = LiteSvmChain([svm_keypair(svm_key)])
        for spec in args.svm_fund or []:
            owner, _, amount = spec.partition("=")
            svm_chain.fund(owner, int(amount))
        facilitator.register([SVM_NETWORK], ExactSvmFacilitatorScheme(svm_chain))
    if not evm_key and not svm_key:
        raise SystemExit("facilitator: give --evm-private-key and/or --svm-private-key")
    return Facilitator(facilitator, svm_chain, args.require_bearer)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=4020)
    ap.add_argument("--rpc-url", default="http://127.0.0.1:8545", help="EVM JSON-RPC (anvil)")
    ap.add_argument("--evm-private-key", help="facilitator EOA key (or env FACILITATOR_EVM_PRIVATE_KEY)")
    ap.add_argument("--svm-private-key",
                    help="fee payer: base58 64-byte secret or 32-byte hex seed (or env FACILITATOR_SVM_PRIVATE_KEY)")
    ap.add_argument("--svm-fund", action="append", metavar="OWNER=AMOUNT",
                    help="set OWNER's USDC token account on the LiteSVM chain to AMOUNT (repeatable)")
    ap.add_argument("--require-bearer", metavar="TOKEN", help="answer 401 without Authorization: Bearer TOKEN")
    ap.add_argument("--confirmation-timeout", type=float, default=30.0)
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines")
    args = ap.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("facilitator: refusing to listen on anything but loopback")

    app = build(args)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(app, args.quiet))
    server.daemon_threads = True

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    kinds = [k["network"] for k in app.facilitator.get_supported().model_dump(by_alias=True)["kinds"]]
    log(f"listening on http://{args.host}:{server.server_address[1]} kinds={kinds} "
        f"auth={'bearer' if args.require_bearer else 'none'}")
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        log("stopped")


if __name__ == "__main__":
    main()
