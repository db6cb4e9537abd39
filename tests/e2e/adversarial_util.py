"""Helpers for test_adversarial.py: a server with small limits and a memory cap, raw sockets,
the §9 error-shape check, and an RSS watchdog."""
import json
import os
import resource
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

import httpx

from conftest import BIN, PAY_TO_BASE, free_port

HARD_LIMIT = 262_144
FREE_LIMIT = 65_536
ALLOWANCE = 1_000_000
# Address-space cap of every server this suite starts: the binary reserves ~1.3 GB of virtual
# memory at rest, so this leaves ~1.2 GB of real allocations before an allocation fails. It
# keeps a runaway request from taking the machine (and the engineer compiling on it) down.
ADDRESS_SPACE_CAP = 2_500 * 1024 * 1024

ERROR_KEYS = {"code", "message", "status", "retryable", "charged", "next_actions", "fields", "guidance"}


class LimitedServer:
    """`verifier serve` on a free loopback port, with small body limits and a memory cap."""

    def __init__(self, log: bool = False, **env):
        """`log`: keep the server's log (stderr) in `log_path` instead of discarding it."""
        self._dir = tempfile.TemporaryDirectory()
        self.log_path = os.path.join(self._dir.name, "server.log") if log else None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            "VERIFIER_MAX_BODY_BYTES": str(HARD_LIMIT),
            "VERIFIER_FREE_BODY_LIMIT_BYTES": str(FREE_LIMIT),
            "VERIFIER_FREE_ALLOWANCE_PER_DAY": str(ALLOWANCE),
            "VERIFIER_PAY_TO_BASE": PAY_TO_BASE,
            "RUST_LOG": "error",
            **env,
        }
        self.proc = None

    def start(self):
        env = dict(os.environ)
        env.update(self.env)

        def cap():
            resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))

        sink = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [BIN, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", self._dir.name],
            env=env, stdout=sink, stderr=sink, preexec_fn=cap)
        if self.log_path:
            sink.close()
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the verifier did not start")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def status_kb(self, key: str) -> int:
        """VmRSS / VmHWM in KiB from /proc (0 once the process is gone)."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
        return 0

    def cpu_ns(self) -> int:
        """The server's CPU time so far, every thread's, in nanoseconds (schedstat)."""
        total = 0
        for task in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass   # a thread that ended meanwhile
        return total

    def log(self) -> str:
        """What the server logged so far (with `log=True`)."""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        self._dir.cleanup()


class RssWatch:
    """Poll a server's RSS; SIGKILL it when it passes `kill_over_mb`. `peak_mb` is the highest
    RSS seen (or VmHWM when read later)."""

    def __init__(self, server: LimitedServer, kill_over_mb: int):
        self.server = server
        self.limit_kb = kill_over_mb * 1024
        self.peak_kb = 0
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set() and self.server.alive():
            rss = max(self.server.status_kb("VmRSS"), self.server.status_kb("VmHWM"))
            self.peak_kb = max(self.peak_kb, rss)
            if rss > self.limit_kb:
                self.killed = True
                self.server.kill()
                return
            time.sleep(0.02)

    @property
    def peak_mb(self) -> float:
        return self.peak_kb / 1024

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=2)


@dataclass
class RawResponse:
    status: int | None
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    raw: bytes = b""
    timed_out: bool = False
    reset: bool = False
    elapsed: float = 0.0

    def json(self):
        return json.loads(self.body)


def parse_raw(data: bytes) -> tuple[int | None, dict, bytes]:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None, {}, b""
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, b""
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    if "content-length" in headers and headers["content-length"].isdigit():
        body = body[: int(headers["content-length"])]
    return status, headers, body


def raw_http(port: int, data: bytes, *, timeout: float = 3.0, shut_wr: bool = False,
             read_all: bool = False) -> RawResponse:
    """Send raw bytes, read one response (or until close with `read_all`)."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    timed_out = reset = False
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            reset = True
        if shut_wr and not reset:
            s.shutdown(socket.SHUT_WR)
        while not reset:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
            status, headers, body = parse_raw(out)
            if not read_all and status is not None and "content-length" in headers \
                    and len(body) >= int(headers["content-length"]):
                break
    except socket.timeout:
        timed_out = True
    except ConnectionResetError:
        reset = True
    finally:
        s.close()
    status, headers, body = parse_raw(out)
    return RawResponse(status, headers, body, out, timed_out, reset, time.monotonic() - t0)


def request_body(**overrides) -> dict:
    body = {"task_id": "adv-1", "expected_schema": {"type": "object"}, "submitted_output": {"a": 1}}
    body.update(overrides)
    return body


def padded(doc: dict, size: int) -> bytes:
    """`doc` as JSON padded with whitespace before the closing brace to exactly `size` bytes."""
    text = json.dumps(doc, separators=(",", ":")).encode()
    assert len(text) <= size
    return text[:-1] + b" " * (size - len(text)) + b"}"


def assert_error(resp, status: int, code: str | None = None, fields: list[str] | None = None) -> dict:
    """The §9 error shape, for an httpx response or a RawResponse."""
    got = resp.status_code if hasattr(resp, "status_code") else resp.status
    assert got == status, f"status {got}, expected {status}"
    headers = resp.headers
    assert headers.get("content-type", "").startswith("application/json")
    body = resp.json()
    assert ERROR_KEYS <= set(body), f"missing keys: {ERROR_KEYS - set(body)}"
    assert body["status"] == status
    assert body["charged"] is False
    assert isinstance(body["retryable"], bool)
    if body["retryable"]:
        assert isinstance(body.get("retry_after"), int)
    assert isinstance(body["message"], str) and "Nothing was charged" in body["message"]
    assert isinstance(body["next_actions"], list) and body["next_actions"]
    assert all(isinstance(a, dict) and "action" in a for a in body["next_actions"])
    assert isinstance(body["fields"], list)
    for f in body["fields"]:
        assert set(f) == {"field", "problem", "fix"}, f
        assert all(isinstance(v, str) and v for v in f.values())
    assert isinstance(body["guidance"], dict) and body["guidance"]
    if code is not None:
        assert body["code"] == code
    if fields is not None:
        named = [f["field"] for f in body["fields"]]
        for name in fields:
            assert name in named, f"{name} not in {named}"
        if status == 422:
            fix_action = [a for a in body["next_actions"] if a["action"] == "fix_request_fields"]
            assert fix_action and all(name in fix_action[0]["fields"] for name in fields)
    return body
