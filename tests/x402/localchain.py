#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A self-starting local x402 payment environment (x402.md §11, "Option A").

It starts, all on 127.0.0.1 and on free ports:

* anvil (`--chain-id 8453`, from tests/x402/node_modules) with MockUSDC compiled from
  contracts/MockUSDC.sol by solc-js and placed by `anvil_setCode` at the real Base USDC
  address, and USDC minted to a buyer: real EIP-3009 settlement on a real (local) chain;
* facilitator.py: the Python x402 SDK facilitator over HTTP, for `eip155:8453` against anvil
  and for Solana mainnet against LiteSVM, the Solana runtime in process with the real SPL Token
  program (SVM buyer funded there).

As a library (pytest)::

    from localchain import LocalChain
    with LocalChain() as chain:          # or chain = LocalChain().start(); ...; chain.stop()
        chain.facilitator_url, chain.rpc_url, chain.buyer_key, chain.balance(chain.payee_address)

As a CLI::

    python tests/x402/localchain.py start --env-file F   # background; writes KEY=VALUE lines to F
    python tests/x402/localchain.py stop  --env-file F   # stops what F's PIDS names

Nothing here needs the network: `npm ci` in tests/x402 and the Python requirements beforehand.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ANVIL_BIN = HERE / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
COMPILE_JS = HERE / "compile.js"
CONTRACT = HERE / "contracts" / "MockUSDC.sol"
FACILITATOR_PY = HERE / "facilitator.py"

CHAIN_ID = 8453
EVM_NETWORK = "eip155:8453"
SVM_NETWORK = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"  # Base mainnet USDC
SVM_USDC_MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"  # Solana mainnet USDC

# anvil's deterministic dev accounts ("test test ... junk" mnemonic); public test keys.
ANVIL_ACCOUNTS = [
    ("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"),
    ("0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"),
    ("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a"),
    ("0x90F79bf6EB2c4f870365E785982E1f101E93b906", "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"),
]
MINTER = ANVIL_ACCOUNTS[0]       # unlocked; sends the mint transactions
BUYER = ANVIL_ACCOUNTS[1]        # pays (the x402.md §5.1 test-vector key)
FACILITATOR = ANVIL_ACCOUNTS[2]  # submits transferWithAuthorization, pays gas
UNFUNDED = ANVIL_ACCOUNTS[3]     # holds no USDC (for insufficient-funds tests)
PAYEE = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"  # no key needed; the §5.1 vector's `to`

DEFAULT_BUYER_USDC = 100_000_000  # 100 USDC (6 decimals)
MINT_SELECTOR = "40c10f19"        # mint(address,uint256)
BALANCE_OF_SELECTOR = "70a08231"  # balanceOf(address)


def _seed(label: str) -> bytes:
    return hashlib.sha256(f"x402-localchain {label}".encode()).digest()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def _pdeathsig() -> None:  # runs in the child: die with the parent (library mode)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its new parent) counts as gone
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def terminate_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM `pid`, then SIGKILL after `timeout`; return once it is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while _pid_alive(pid):
        time.sleep(0.05)


def wait_port_closed(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while port_open(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"port {port} still open after {timeout}s")
        time.sleep(0.05)


def compile_mock_usdc(node: str = "node") -> str:
    """Compile contracts/MockUSDC.sol with solc-js; return the runtime bytecode (0x-hex)."""
    out = subprocess.run([node, str(COMPILE_JS), str(CONTRACT), "MockUSDC"], cwd=HERE,
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"solc-js failed: {out.stderr.strip()}")
    return out.stdout.strip()


def _tail(path: Path | None, n: int = 30) -> str:
    if not path or not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


class Proc:
    """One child process with its log file."""

    def __init__(self, name: str, argv: list[str], log: Path, port: int, *, detach: bool,
                 env: dict | None = None, own_log: bool = False):
        self.name, self.argv, self.log, self.port = name, argv, log, port
        self.own_log = own_log  # delete the log file on stop()
        self._fh = open(log, "ab")
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._fh, stderr=subprocess.STDOUT, cwd=HERE,
            env=env, start_new_session=detach, preexec_fn=None if detach else _pdeathsig)
        self.pid = self.popen.pid

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{_tail(self.log)}")

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._fh.close()
        wait_port_closed(self.port)
        if self.own_log:
            self.log.unlink(missing_ok=True)


def start_facilitator(rpc_url: str, *, port: int | None = None, evm_key: str | None = FACILITATOR[1],
                      svm_key: str | None = None, svm_fund: dict[str, int] | None = None,
                      require_bearer: str | None = None, log: Path | None = None,
                      detach: bool = False, python: str = sys.executable,
                      timeout: float = 30.0) -> tuple[Proc, str]:
    """Start facilitator.py on 127.0.0.1:`port` (free port if None); wait until it answers.

    Returns (process, base URL). Stop it with `process.stop()`.
    """
    port = port or free_port()
    own_log = log is None
    if own_log:
        fd, name = tempfile.mkstemp(prefix="x402-facilitator-", suffix=".log")
        os.close(fd)
        log = Path(name)
    argv = [python, str(FACILITATOR_PY), "--host", "127.0.0.1", "--port", str(port),
            "--rpc-url", rpc_url]
    env = dict(os.environ)
    env.pop("FACILITATOR_EVM_PRIVATE_KEY", None)
    env.pop("FACILITATOR_SVM_PRIVATE_KEY", None)
    if evm_key:
        env["FACILITATOR_EVM_PRIVATE_KEY"] = evm_key  # keys via env, not argv (ps)
    if svm_key:
        env["FACILITATOR_SVM_PRIVATE_KEY"] = svm_key
    for owner, amount in (svm_fund or {}).items():
        argv += ["--svm-fund", f"{owner}={amount}"]
    if require_bearer:
        argv += ["--require-bearer", require_bearer]
    proc = Proc("facilitator", argv, log, port, detach=detach, env=env, own_log=own_log)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {require_bearer}"} if require_bearer else {}
    deadline = time.monotonic() + timeout
    while True:
        proc.check_alive()
        try:
            req = urllib.request.Request(url + "/health", headers=headers)
            with urllib.request.urlopen(req, timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError(f"facilitator did not start in {timeout}s:\n{_tail(log)}")
        time.sleep(0.05)


class LocalChain:
    """anvil + MockUSDC at the Base USDC address + the local facilitator.

    Attributes (all known once constructed; the processes run after start()): rpc_url, facilitator_url, anvil_port, facilitator_port,
    chain_id, network, usdc_address, buyer_key, buyer_address, payee_address,
    facilitator_address, unfunded_key/unfunded_address, svm_network, svm_usdc_mint,
    svm_fee_payer, svm_buyer_key (base58 64-byte secret), svm_buyer_address,
    svm_payee_address, svm_blockhash, timings (seconds per start-up step).
    """

    def __init__(self, *, anvil_port: int | None = None, facilitator_port: int | None = None,
                 buyer_usdc: int = DEFAULT_BUYER_USDC, svm_buyer_usdc: int = DEFAULT_BUYER_USDC,
                 payee_address: str = PAYEE, svm_payee_address: str | None = None,
                 require_bearer: str | None = None,
                 log_dir: str | Path | None = None, detach: bool = False,
                 python: str = sys.executable, node: str = "node"):
        from solders.keypair import Keypair

        self.anvil_port = anvil_port or free_port()
        self.facilitator_port = facilitator_port or free_port()
        while self.facilitator_port == self.anvil_port:
            self.facilitator_port = free_port()
        self.rpc_url = f"http://127.0.0.1:{self.anvil_port}"
        self.facilitator_url = f"http://127.0.0.1:{self.facilitator_port}"
        self.chain_id, self.network, self.usdc_address = CHAIN_ID, EVM_NETWORK, USDC_ADDRESS
        self.minter_address = MINTER[0]
        self.buyer_address, self.buyer_key = BUYER
        self.facilitator_address, self.facilitator_key = FACILITATOR
        self.unfunded_address, self.unfunded_key = UNFUNDED
        self.payee_address = payee_address
        self.buyer_usdc, self.svm_buyer_usdc = buyer_usdc, svm_buyer_usdc
        self.require_bearer = require_bearer
        fee_payer = Keypair.from_seed(_seed("svm fee payer"))
        svm_buyer = Keypair.from_seed(_seed("svm buyer"))
        self.svm_network, self.svm_usdc_mint = SVM_NETWORK, SVM_USDC_MINT
        self._svm_fee_payer_seed = _seed("svm fee payer").hex()
        self.svm_fee_payer = str(fee_payer.pubkey())
        self.svm_buyer_key = str(svm_buyer)  # base58 of the 64-byte secret
        self.svm_buyer_address = str(svm_buyer.pubkey())
        self.svm_payee_address = svm_payee_address or str(Keypair.from_seed(_seed("svm payee")).pubkey())
        self.svm_blockhash = ""  # LiteSVM's, read from the facilitator once it runs
        self._own_log_dir = log_dir is None
        self.log_dir: Path | None = Path(log_dir) if log_dir else None
        self.detach, self.python, self.node = detach, python, node
        self.anvil: Proc | None = None
        self.facilitator: Proc | None = None
        self.timings: dict[str, float] = {}

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> "LocalChain":
        if not ANVIL_BIN.exists():
            raise RuntimeError(f"{ANVIL_BIN} missing: run `npm ci` in {HERE}")
        t0 = time.monotonic()
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="x402-localchain-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        compiler = None
        try:
            # solc-js takes ~4 s: run it while anvil and the facilitator start.
            compiler = subprocess.Popen([self.node, str(COMPILE_JS), str(CONTRACT), "MockUSDC"],
                                        cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
            self.anvil = Proc("anvil", [str(ANVIL_BIN), "--host", "127.0.0.1",
                                        "--port", str(self.anvil_port),
                                        "--chain-id", str(CHAIN_ID), "--quiet"],
                              self.log_dir / "anvil.log", self.anvil_port, detach=self.detach)
            self.facilitator, _ = start_facilitator(
                self.rpc_url, port=self.facilitator_port, evm_key=self.facilitator_key,
                svm_key=self._svm_fee_payer_seed,
                svm_fund={self.svm_buyer_address: self.svm_buyer_usdc, self.svm_payee_address: 0},
                require_bearer=self.require_bearer, log=self.log_dir / "facilitator.log",
                detach=self.detach, python=self.python)
            self.timings["facilitator_ready"] = time.monotonic() - t0
            self.svm_blockhash = self._facilitator_get("/_svm/blockhash")["blockhash"]
            self._wait_anvil()
            self.timings["anvil_ready"] = time.monotonic() - t0
            out, err = compiler.communicate(timeout=120)
            if compiler.returncode != 0:
                raise RuntimeError(f"solc-js failed: {err.strip()}")
            self.timings["compiled"] = time.monotonic() - t0
            self.rpc("anvil_setCode", [USDC_ADDRESS, out.strip()])
            if self.buyer_usdc:
                self.mint(self.buyer_address, self.buyer_usdc)
            self.timings["total"] = time.monotonic() - t0
        except BaseException:
            if compiler is not None and compiler.poll() is None:
                compiler.kill()
                compiler.wait()
            self.stop()
            raise
        return self

    def _wait_anvil(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.anvil.check_alive()
            try:
                if int(self.rpc("eth_chainId", []), 16) == CHAIN_ID:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"anvil did not start in {timeout}s:\n{_tail(self.anvil.log)}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the facilitator and anvil and wait until their ports are closed."""
        for proc in (self.facilitator, self.anvil):
            if proc is not None:
                proc.stop()
        self.facilitator = self.anvil = None
        if self._own_log_dir and not self.detach and self.log_dir is not None:
            shutil.rmtree(self.log_dir, ignore_errors=True)
            self.log_dir = None

    def __enter__(self) -> "LocalChain":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in (self.anvil, self.facilitator) if p is not None]

    # -- chain helpers ---------------------------------------------------------------------------
    def rpc(self, method: str, params: list):
        """One JSON-RPC call to anvil; returns `result`, raises RuntimeError on `error`."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        req = urllib.request.Request(self.rpc_url, data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            reply = json.loads(r.read())
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def call(self, to: str, data: str) -> str:
        return self.rpc("eth_call", [{"to": to, "data": data}, "latest"])

    def send(self, to: str, data: str, sender: str | None = None) -> dict:
        """eth_sendTransaction from an unlocked dev account; returns the mined receipt."""
        tx_hash = self.rpc("eth_sendTransaction", [{"from": sender or self.minter_address,
                                                    "to": to, "data": data}])
        deadline = time.monotonic() + 30
        while (receipt := self.rpc("eth_getTransactionReceipt", [tx_hash])) is None:
            if time.monotonic() > deadline:  # anvil automines, but the receipt can lag a moment
                break
            time.sleep(0.02)
        if receipt is None or int(receipt["status"], 16) != 1:
            raise RuntimeError(f"transaction {tx_hash} failed: {receipt}")
        return receipt

    def mint(self, address: str, amount: int) -> dict:
        """Mint MockUSDC (atomic units) to `address` with a real transaction."""
        data = "0x" + MINT_SELECTOR + _word_addr(address) + f"{int(amount):064x}"
        return self.send(USDC_ADDRESS, data)

    def balance(self, address: str) -> int:
        """USDC balance of `address` in atomic units (balanceOf on chain)."""
        return int(self.call(USDC_ADDRESS, "0x" + BALANCE_OF_SELECTOR + _word_addr(address)), 16)

    def _facilitator_get(self, path: str) -> dict:
        headers = {"Authorization": f"Bearer {self.require_bearer}"} if self.require_bearer else {}
        req = urllib.request.Request(self.facilitator_url + path, headers=headers)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def svm_balance(self, owner: str, mint: str = SVM_USDC_MINT) -> int:
        """Token balance of `owner`'s ATA on the facilitator's LiteSVM chain."""
        return int(self._facilitator_get(f"/_svm/balance?owner={owner}&mint={mint}")["balance"])

    def env(self) -> dict[str, str]:
        """The KEY=VALUE set that the CLI writes (what a server under test needs)."""
        return {
            "FACILITATOR_URL": self.facilitator_url,
            "RPC_URL": self.rpc_url,
            "CHAIN_ID": str(self.chain_id),
            "USDC_ADDRESS": self.usdc_address,
            "BUYER_KEY": self.buyer_key,
            "BUYER_ADDRESS": self.buyer_address,
            "PAYEE_ADDRESS": self.payee_address,
            "FACILITATOR_ADDRESS": self.facilitator_address,
            "SVM_FEE_PAYER": self.svm_fee_payer,
            "SVM_BUYER_KEY": self.svm_buyer_key,
            "SVM_BUYER_ADDRESS": self.svm_buyer_address,
            "SVM_PAYEE_ADDRESS": self.svm_payee_address,
            "SVM_USDC_MINT": self.svm_usdc_mint,
            "SVM_BLOCKHASH": self.svm_blockhash,
            "FACILITATOR_BEARER": self.require_bearer or "",
            "ANVIL_PORT": str(self.anvil_port),
            "FACILITATOR_PORT": str(self.facilitator_port),
            "LOG_DIR": str(self.log_dir),
            "PIDS": " ".join(str(p) for p in self.pids),
        }


def _word_addr(address: str) -> str:
    a = address.lower().removeprefix("0x")
    if len(a) != 40:
        raise ValueError(f"not an address: {address}")
    return a.rjust(64, "0")


# -- CLI ------------------------------------------------------------------------------------------


def read_env_file(path: str | Path) -> dict[str, str]:
    out = {}
    for line in Path(path).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def _cli_start(args) -> int:
    env_file = Path(args.env_file).resolve()
    log_dir = Path(args.log_dir) if args.log_dir else env_file.with_name(env_file.name + ".logs")
    extra = {k: v for k, v in (("payee_address", args.payee_address),
                               ("svm_payee_address", args.svm_payee_address)) if v}
    chain = LocalChain(anvil_port=args.anvil_port, facilitator_port=args.facilitator_port,
                       require_bearer=args.require_bearer, log_dir=log_dir, detach=True, **extra)
    chain.start()
    lines = [f"{k}={v}" for k, v in chain.env().items()]
    env_file.write_text("\n".join(lines) + "\n")
    timings = " ".join(f"{k}={v:.2f}s" for k, v in chain.timings.items())
    print(f"localchain: started ({timings}); wrote {env_file}", file=sys.stderr)
    return 0


def _cli_stop(args) -> int:
    env = read_env_file(args.env_file)
    for pid in reversed([int(p) for p in env.get("PIDS", "").split()]):
        terminate_pid(pid)
    for key in ("FACILITATOR_PORT", "ANVIL_PORT"):
        if env.get(key):
            wait_port_closed(int(env[key]))
    print(f"localchain: stopped pids {env.get('PIDS', '')}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="local x402 payment environment (anvil + facilitator)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="start in the background, write KEY=VALUE lines to --env-file")
    s.add_argument("--env-file", required=True)
    s.add_argument("--anvil-port", type=int)
    s.add_argument("--facilitator-port", type=int)
    s.add_argument("--require-bearer", metavar="TOKEN", help="facilitator answers 401 without it")
    s.add_argument("--payee-address", help=f"EVM payTo written as PAYEE_ADDRESS (default {PAYEE})")
    s.add_argument("--svm-payee-address", help="Solana payTo written as SVM_PAYEE_ADDRESS")
    s.add_argument("--log-dir", help="default: <env-file>.logs/")
    t = sub.add_parser("stop", help="stop the processes named in --env-file")
    t.add_argument("--env-file", required=True)
    args = ap.parse_args(argv)
    return _cli_start(args) if args.cmd == "start" else _cli_stop(args)


if __name__ == "__main__":
    sys.exit(main())
