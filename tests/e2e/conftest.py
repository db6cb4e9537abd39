"""Start the real `verifier serve` binary on loopback for each test that asks for it."""
import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("VERIFIER_BIN", str(ROOT / "target" / "release" / "verifier"))
DATA = ROOT / "shared" / "tests" / "data"
PAY_TO_BASE = "0x1111111111111111111111111111111111111111"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def store_args(store: str | None = None, data_dir: str | None = None) -> list:
    """Arguments selecting the store: `E2E_STORE=dynamodb` runs the whole suite on DynamoDB
    Local, one table per data directory (so a restart on the same directory finds its data)."""
    store = store or os.environ.get("E2E_STORE", "embedded")
    if store == "dynamodb":
        import hashlib
        import uuid
        tag = hashlib.sha256(data_dir.encode()).hexdigest()[:16] if data_dir else uuid.uuid4().hex
        return ["--store", "dynamodb", "--table", f"e2e-{tag}", "--create-table"]
    return []


class Server:
    def __init__(self, data_dir: str, allowance: int, env: dict | None = None, args: list | None = None):
        self.data_dir = data_dir
        self.allowance = allowance
        self.extra_env = env or {}
        self.extra_args = args if args is not None else store_args(data_dir=data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        env = dict(os.environ)
        env.update({
            "VERIFIER_FREE_ALLOWANCE_PER_DAY": str(self.allowance),
            "VERIFIER_PAY_TO_BASE": PAY_TO_BASE,
            "RUST_LOG": "warn",
        })
        for name, value in self.extra_env.items():  # None: the variable is unset
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        self.proc = subprocess.Popen(
            [BIN, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.data_dir,
             *self.extra_args],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the verifier did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def start_server():
    started = []
    dirs = []

    def make(allowance: int = 1000, data_dir: str | None = None, env: dict | None = None,
             args: list | None = None) -> Server:
        if data_dir is None:
            d = tempfile.TemporaryDirectory()
            dirs.append(d)
            data_dir = d.name
        server = Server(data_dir, allowance, env, args).start()
        started.append(server)
        return server

    yield make
    for s in started:
        s.stop()
    for d in dirs:
        d.cleanup()


@pytest.fixture
def server(start_server):
    return start_server()


@pytest.fixture
def invoice():
    receipts = json.loads((DATA / "hosted-receipts.json").read_text())["receipts"]
    return json.loads(receipts[0]["request_body_json"])
