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
  `StubSvmChain`, an in-memory stand-in for the RPC node (simulate / send / confirm answered
  from memory, with an explicit ed25519 check of every required signature, which the real
  facilitator leaves to the node's sigVerify, and an SPL-token ledger seeded with --svm-fund).

Test-only extras (not part of x402): `GET /health`, and
`GET /_stub/svm/balance?owner=<base58>[&mint=<base58>]` -> {"owner", "mint", "ata", "balance"}.

With `--require-bearer TOKEN` every request without `Authorization: Bearer TOKEN` gets 401.
Each request is logged to stderr in one line.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
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
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction
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
TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111"
MEMO_PROGRAM = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
LIGHTHOUSE_PROGRAM = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95"
# A fixed, valid-looking blockhash that the stub chain accepts (clients put it in
# requirements.extra.recentBlockhash, see x402.md §9).
DEFAULT_SVM_BLOCKHASH = str(Hash(hashlib.sha256(b"x402-localchain svm blockhash").digest()))


def log(msg: str) -> None:
    sys.stderr.write(f"[facilitator {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Solana: a stubbed chain behind the real x402 SVM facilitator scheme
# ---------------------------------------------------------------------------------------------


class StubSvmChain(FacilitatorKeypairSigner):
    """`FacilitatorSvmSigner` whose chain lives in memory.

    Signing with the fee payer is the SDK's own (`FacilitatorKeypairSigner.sign_transaction`).
    `simulate_transaction` does what a node's `simulateTransaction(sigVerify=true)` would do for
    the x402 exact transaction shape: ed25519 check of every required signature over the
    serialized message (prefixed with 0x80 for v0 messages), known blockhash, known programs,
    and an SPL TransferChecked against the in-memory ledger (source ATA derivation, mint,
    decimals, balance). `send_transaction` executes it once (a repeat of the same signature is
    rejected like a node's "already processed"); `confirm_transaction` confirms what was sent.
    Destination token accounts are treated as existing.
    """

    def __init__(self, keypairs: list[Keypair], blockhashes: list[str],
                 mints: dict[str, int] | None = None):
        super().__init__(keypairs, rpc_url="http://127.0.0.1:9")  # never contacted
        self._lock = threading.Lock()
        self._blockhashes = {Hash.from_string(b) for b in blockhashes}
        self._mints = dict(mints or {SVM_USDC_MINT: 6})  # mint -> decimals
        self._balances: dict[str, int] = {}  # token account (ATA) -> amount
        self._processed: dict[str, dict[str, Any]] = {}  # tx signature -> effects

    # -- ledger --------------------------------------------------------------------------------
    def fund(self, owner: str, amount: int, mint: str = SVM_USDC_MINT) -> str:
        ata = derive_ata(owner, mint, TOKEN_PROGRAM)
        with self._lock:
            self._balances[ata] = self._balances.get(ata, 0) + int(amount)
        return ata

    def balance(self, owner: str, mint: str = SVM_USDC_MINT) -> tuple[str, int]:
        ata = derive_ata(owner, mint, TOKEN_PROGRAM)
        with self._lock:
            return ata, self._balances.get(ata, 0)

    # -- execution -----------------------------------------------------------------------------
    @staticmethod
    def _decode(tx_base64: str) -> tuple[VersionedTransaction, bytes]:
        raw = base64.b64decode(tx_base64)
        tx = VersionedTransaction.from_bytes(raw)
        return tx, raw

    def _check(self, tx: VersionedTransaction, raw: bytes) -> list[tuple[str, str, int]]:
        """Validate like simulateTransaction(sigVerify=true); return the token moves."""
        msg = tx.message
        header = msg.header
        keys = list(msg.account_keys)
        n_sig = header.num_required_signatures
        sigs = list(tx.signatures)
        if len(sigs) != n_sig:
            raise RuntimeError(f"signature count {len(sigs)} != required {n_sig}")
        # v0 messages are signed as 0x80 || message; legacy ones as the bare message.
        versioned = self._is_versioned_transaction(raw)
        signed_bytes = (b"\x80" if versioned else b"") + bytes(msg)
        for i in range(n_sig):
            if not sigs[i].verify(keys[i], signed_bytes):
                raise RuntimeError(
                    f"Transaction signature verification failure (signer {i}: {keys[i]})")
        if msg.recent_blockhash not in self._blockhashes:
            raise RuntimeError("BlockhashNotFound")
        signers = {str(k) for k in keys[:n_sig]}
        moves = []
        for ix in msg.instructions:
            program = str(keys[ix.program_id_index])
            data = bytes(ix.data)
            if program in (COMPUTE_BUDGET_PROGRAM, MEMO_PROGRAM, LIGHTHOUSE_PROGRAM):
                continue
            if program not in (TOKEN_PROGRAM, TOKEN_2022_PROGRAM):
                raise RuntimeError(f"stub chain: unsupported program {program}")
            if len(data) != 10 or data[0] != 12:
                raise RuntimeError("stub chain: only SPL TransferChecked is supported")
            src, mint, dst, owner = (str(keys[a]) for a in list(ix.accounts)[:4])
            amount = int.from_bytes(data[1:9], "little")
            if mint not in self._mints:
                raise RuntimeError(f"AccountNotFound: mint {mint}")
            if data[9] != self._mints[mint]:
                raise RuntimeError("custom program error: 0x12 (MintDecimalsMismatch)")
            if owner not in signers:
                raise RuntimeError("missing required signature for instruction")
            if src != derive_ata(owner, mint, program):
                raise RuntimeError("custom program error: 0x4 (OwnerMismatch)")
            if self._balances.get(src, 0) < amount:
                if src not in self._balances:
                    raise RuntimeError("AccountNotFound: source token account")
                raise RuntimeError("custom program error: 0x1 (InsufficientFunds)")
            moves.append((src, dst, amount))
        return moves

    def simulate_transaction(self, tx_base64: str, network: str) -> None:
        if network != SVM_NETWORK:
            raise RuntimeError(f"stub chain serves {SVM_NETWORK}, not {network}")
        tx, raw = self._decode(tx_base64)
        with self._lock:
            self._check(tx, raw)

    def send_transaction(self, tx_base64: str, network: str) -> str:
        if network != SVM_NETWORK:
            raise RuntimeError(f"stub chain serves {SVM_NETWORK}, not {network}")
        tx, raw = self._decode(tx_base64)
        signature = str(tx.signatures[0])
        with self._lock:
            if signature in self._processed:
                raise RuntimeError("AlreadyProcessed: this transaction has already been processed")
            moves = self._check(tx, raw)
            for src, dst, amount in moves:
                self._balances[src] -= amount
                self._balances[dst] = self._balances.get(dst, 0) + amount
            self._processed[signature] = {"moves": moves, "time": time.time()}
        return signature

    def confirm_transaction(self, signature: str, network: str, timeout_seconds: int = 30) -> None:
        with self._lock:
            if signature not in self._processed:
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
    def __init__(self, facilitator: x402FacilitatorSync, svm_chain: StubSvmChain | None,
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
        if method == "GET" and route == "/_stub/svm/balance" and self.svm_chain is not None:
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
        svm_chain = StubSvmChain([svm_keypair(svm_key)], args.svm_blockhash or [DEFAULT_SVM_BLOCKHASH])
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
                    help="credit OWNER's USDC token account on the stub Solana chain (repeatable)")
    ap.add_argument("--svm-blockhash", action="append", metavar="HASH",
                    help=f"blockhash the stub chain accepts (repeatable; default {DEFAULT_SVM_BLOCKHASH})")
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
