"""The API as deployed, on this machine: every Lambda function of `template.yaml` runs as its own
release `bootstrap` process against a real Lambda Runtime API emulator (`cargo lambda watch
--only-lambda-apis`, cargo-lambda from PyPI), with the environment the template gives it, on
DynamoDB Local (the template's table) and moto (SSM + KMS). A small test-only router in front
maps each HTTP API route to its function **as the template declares it** (read from the file,
not restated) and forwards the request through the emulator's function-URL endpoint, which
turns it into an API Gateway payload-2.0 event; so one base URL behaves like the HTTP API.
The functions reach the emulator's Runtime API through a relay (`Relay`: why, and measured).

Before the other functions start, the harness plays CloudFormation for the template's
`SigningKey` custom resource, as a deployment does on a fresh stack: it sends `rotate-key` the
resource's `Create` request (type and properties read from the template) with a pre-signed
`ResponseURL` of its own (`CloudFormationResponses`), and the function makes the signing-key
SecureString and the public key ring, then answers there. No manual invocation is involved.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3

from conftest import ROOT, free_port

sys.path.insert(0, str(ROOT / "scripts"))
import routes_from_template  # noqa: E402

TEMPLATE = ROOT / "template.yaml"
# The function binaries (LAMBDA_BIN_DIR: another build of them, e.g. target/release-lambda).
RELEASE = Path(os.environ.get("LAMBDA_BIN_DIR", ROOT / "target" / "release"))
CARGO_LAMBDA = Path(os.environ.get("CARGO_LAMBDA", ROOT / ".venv" / "bin" / "cargo-lambda"))


class Route:
    """One HttpApi event: method and path template (`{name}` one segment, `{name+}` the rest)."""

    def __init__(self, method: str, path: str, function: str):
        self.method, self.path, self.function = method.upper(), path, function
        pattern = ""
        for segment in path.strip("/").split("/") if path != "/" else []:
            if segment.endswith("+}"):
                pattern += "/.+"
            elif segment.startswith("{"):
                pattern += "/[^/]+"
            else:
                pattern += "/" + re.escape(segment)
        self.regex = re.compile("^" + (pattern or "/") + "$")
        # HTTP API picks the most specific route: literal segments first, greedy last.
        self.rank = (path.count("+}"), -len([s for s in path.split("/") if s and not s.startswith("{")]))

    def matches(self, method: str, path: str) -> bool:
        return self.method in (method, "ANY") and bool(self.regex.match(path))


def routes_of(template: dict) -> tuple[list[Route], dict[str, str]]:
    """The HTTP routes, most specific first (scripts/routes_from_template.py reads them), and
    every function's binary (logical id -> binary name)."""
    routes = sorted((Route(m, p, binary) for m, p, binary in routes_from_template.routes(TEMPLATE)),
                    key=lambda r: r.rank)
    binaries = {name: res["Metadata"]["BuildProperties"]["Binary"]
                for name, res in template["Resources"].items()
                if res.get("Type") == "AWS::Serverless::Function"}
    return routes, binaries


def resolve(value, params: dict, resources: dict):
    """The value of an environment variable: parameters from their defaults or overrides,
    resources from what this deployment created."""
    if isinstance(value, dict) and "Ref" in value:
        name = value["Ref"]
        return str(params[name] if name in params else resources[name])
    if isinstance(value, dict) and "Fn::Sub" in value:
        return re.sub(r"\$\{([^}]+)\}", lambda m: str(params.get(m.group(1), resources.get(m.group(1)))),
                      value["Fn::Sub"])
    if isinstance(value, dict):
        raise ValueError(f"unsupported intrinsic {next(iter(value))}")
    return str(value)


def forward(url: str, method: str, headers, body: bytes | None, timeout: float) -> tuple:
    """Send a request on (its headers but the framing ones); (status, headers, body) back,
    error statuses included."""
    headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "connection")}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def send_answer(handler: BaseHTTPRequestHandler, status: int, headers, payload: bytes) -> None:
    """Answer a relayed request with what came back (framing headers recomputed)."""
    handler.send_response(status)
    for k, v in headers.items():
        if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
            handler.send_header(k, v)
    handler.send_header("content-length", str(len(payload)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(payload)


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, headers and body in one segment, no access log."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once: no delayed-ACK stall

    def log_message(self, fmt, *args):
        pass


class LoopbackServer:
    """A threaded HTTP server for `handler` on 127.0.0.1 (a free port) at `url`; `stop()` ends
    it without waiting for a request still open (a long poll)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Relay(LoopbackServer):
    """A loopback HTTP relay to `upstream` that sends each request it receives on a connection
    of its own (`forward`), and calls `observe(phase, method, path, headers, body, at,
    started)`, when given, for each request and answer (long polls included: one thread per
    request).

    Every function reaches the emulator's Runtime API through one. Talked to directly,
    cargo-lambda 1.9.2 sometimes holds a function's `GET …/invocation/next` for 30 s or more, or
    answers an invocation with a 500 of its own. The stall read in an strace of the function
    came when its Runtime API client had a second connection open to the emulator (hyper's pool
    opens a new connection for `/next` when the one that just carried `POST …/response` is not
    back in the pool yet); the 500s were not traced. Both are gone through the relay. Measured
    on this machine with a loop of 402, paid call and replay through one deployment
    (scripts/runtime-api-soak.sh): directly, 10 such requests in 13,800 (14 in 324 with the
    function under strace); through the relay, none in 11,300 (none in 2,900 under strace)."""

    def __init__(self, upstream: str, observe=None):
        class Handler(QuietHandler):
            def _go(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                started = time.monotonic()
                if observe:
                    observe("request", self.command, self.path, self.headers, body, started)
                try:
                    status, rheaders, payload = forward(upstream + self.path, self.command, self.headers, body,
                                                        timeout=900)
                except OSError:  # the emulator of a finished deployment went away
                    self.close_connection = True
                    return
                if observe:
                    observe("response", self.command, self.path, rheaders, payload, time.monotonic(), started)
                send_answer(self, status, rheaders, payload)

            do_GET = do_POST = do_PUT = do_DELETE = _go

        super().__init__(Handler)


class Router(LoopbackServer):
    """The HTTP API: route by the template, forward through the emulator's function URLs."""

    def __init__(self, routes: list[Route], emulator: str):
        self.routes, self.emulator = routes, emulator
        router = self

        class Handler(QuietHandler):
            def _route(self):
                target = self.path
                path = target.split("?", 1)[0]
                route = next((r for r in router.routes if r.matches(self.command, path)), None)
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                if route is None:
                    payload = b'{"message":"Not Found"}'
                    self.send_response(404)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                # The function sees the API's host, as behind API Gateway.
                answer = forward(f"{router.emulator}/lambda-url/{route.function}{target}",
                                 self.command, self.headers, body, timeout=60)
                send_answer(self, *answer)

            do_GET = do_POST = do_DELETE = do_PUT = do_HEAD = do_OPTIONS = _route

        super().__init__(Handler)


class CloudFormationResponses:
    """What CloudFormation's pre-signed response URL receives: each PUT body, by request ID."""

    def __init__(self):
        received = self.received = {}

        class Handler(QuietHandler):
            def do_PUT(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                received[self.path.strip("/")] = {"body": json.loads(body),
                                                  "content_type": self.headers.get("content-type")}
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Deployment:
    """Start with `Deployment(overrides).start()`; `url` is the API's base URL; `stop()` ends
    every process it started. `overrides` replace template parameter defaults.

    `await_init(binary, spawned_at)`, when given, is called after each function is spawned and
    returns when that function's init has ended, so the functions start one at a time, each
    init alone on the machine, as Lambda runs each in its own micro-VM (a measurement's choice;
    the tests start them together)."""

    def __init__(self, overrides: dict | None = None, log_dir: Path | None = None, runtime_via=None,
                 await_init=None):
        self.template = routes_from_template.load_template(TEMPLATE)
        self.routes, self.binaries = routes_of(self.template)
        self.stage = f"e2e{uuid.uuid4().hex[:8]}"
        self.params = {k: v.get("Default", "") for k, v in self.template["Parameters"].items()}
        self.params.update({"Stage": self.stage, "LogLevel": "warn"})
        self.params.update(overrides or {})
        self.log_dir = log_dir or Path(os.environ.get("TMPDIR", "/tmp")) / f"deployment-{self.stage}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}
        self.emulator_proc: subprocess.Popen | None = None
        self.router: Router | None = None
        self.timings: dict[str, float] = {}
        # Maps the emulator's URL to the one the functions are given (a measuring relay); by
        # default a plain Relay of this deployment's own.
        self.runtime_via = runtime_via
        self.runtime_relay: Relay | None = None
        self.runtime_api = ""  # the Runtime API URL the functions get; set by start()
        self.spawned: dict[str, float] = {}
        self.await_init = await_init

    # -- the stack's resources --------------------------------------------------------------
    def _create_resources(self) -> dict:
        table = f"verifier-{self.stage}"
        props = self.template["Resources"]["Table"]["Properties"]
        ddb = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
        ddb.create_table(TableName=table, BillingMode=props["BillingMode"],
                         AttributeDefinitions=props["AttributeDefinitions"], KeySchema=props["KeySchema"])
        ttl = props["TimeToLiveSpecification"]
        ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={
            "AttributeName": ttl["AttributeName"], "Enabled": bool(ttl["Enabled"])})
        kms = boto3.client("kms", endpoint_url=os.environ["AWS_ENDPOINT_URL_KMS"])
        key = kms.create_key(Description=f"verifier {self.stage}")["KeyMetadata"]["KeyId"]
        ring = self.template["Resources"]["PublicKeysParameter"]["Properties"]
        ring_name = resolve(ring["Name"], self.params, {})
        ssm = boto3.client("ssm", endpoint_url=os.environ["AWS_ENDPOINT_URL_SSM"])
        ssm.put_parameter(Name=ring_name, Type=ring["Type"], Value=ring["Value"])
        self.table, self.kms_key = table, key
        self.ddb = ddb
        return {"Table": table, "SigningKmsKey": key, "PublicKeysParameter": ring_name}

    def environment(self, resources: dict) -> dict:
        variables = self.template["Globals"]["Function"]["Environment"]["Variables"]
        return {k: resolve(v, self.params, resources) for k, v in variables.items()}

    # -- processes ----------------------------------------------------------------------------
    def _start_function(self, binary: str, env: dict, path: Path | None = None) -> None:
        """Start `binary` (or the executable at `path`, under that name) as a function of this
        deployment's emulator; `stop()` ends it."""
        full = {**os.environ, **env,
                "AWS_LAMBDA_RUNTIME_API": f"{self.runtime_api}/.rt/{binary}",
                "AWS_LAMBDA_FUNCTION_NAME": binary, "AWS_LAMBDA_FUNCTION_VERSION": "1",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256"}
        log = open(self.log_dir / f"{binary}.log", "wb")
        self.spawned[binary] = time.monotonic()
        self.procs[binary] = subprocess.Popen([str(path or RELEASE / binary)], env=full, stdout=log,
                                              stderr=subprocess.STDOUT)

    def ssm(self):
        """A boto3 SSM client of this deployment's moto."""
        return boto3.client("ssm", endpoint_url=os.environ["AWS_ENDPOINT_URL_SSM"])

    def custom_resource(self, request_type: str) -> dict:
        """Send the SigningKey resource's `request_type` request as CloudFormation does and
        return what the function PUT at the response URL."""
        resource = self.template["Resources"]["SigningKey"]
        function = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
        binary = self.template["Resources"][function]["Metadata"]["BuildProperties"]["Binary"]
        request_id = uuid.uuid4().hex
        event = {"RequestType": request_type, "ServiceToken": f"arn:aws:lambda:us-east-1:000000000000:function:{binary}",
                 "ResponseURL": f"{self.cloudformation.url}/{request_id}",
                 "StackId": f"arn:aws:cloudformation:us-east-1:000000000000:stack/{self.stage}/1",
                 "RequestId": request_id, "LogicalResourceId": "SigningKey", "ResourceType": resource["Type"],
                 "ResourceProperties": {k: str(v) for k, v in resource["Properties"].items()}}
        if request_type != "Create":
            event["PhysicalResourceId"] = self.first_key_physical_id
        self.invoke(binary, event)
        received = self.cloudformation.received[request_id]
        assert received["content_type"] in (None, ""), received  # the URL is signed without one
        if request_type == "Create":
            self.first_key_physical_id = received["body"]["PhysicalResourceId"]
        return received["body"]

    def invoke(self, binary: str, event: dict) -> dict:
        """The Lambda Invoke API of the emulator (what `cargo lambda invoke` calls)."""
        req = urllib.request.Request(
            f"{self.emulator}/2015-03-31/functions/{binary}/invocations",
            data=json.dumps(event).encode(), method="POST", headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")

    def start(self) -> "Deployment":
        t0 = time.monotonic()
        self.port = free_port()
        self.emulator = f"http://127.0.0.1:{self.port}"
        self.router = Router(self.routes, self.emulator)
        self.url = self.router.url
        # The emulator's function-URL events name `localhost` as the domain, so the API's URL
        # is given as a custom-domain deployment gives it: the PublicUrl parameter.
        if not self.params.get("PublicUrl"):
            self.params["PublicUrl"] = self.url
        resources = self._create_resources()
        self.env = self.environment(resources)
        self.emulator_proc = subprocess.Popen(
            # No CORS layer of the emulator's own: an HTTP API without a CORS configuration adds
            # none either, so the functions' CORS headers are the only ones.
            [str(CARGO_LAMBDA), "lambda", "watch", "--only-lambda-apis", "--disable-cors",
             "-A", "127.0.0.1", "-P", str(self.port)], cwd=ROOT, stdout=open(self.log_dir / "emulator.log", "wb"),
            stderr=subprocess.STDOUT)
        self._wait_emulator()
        if self.runtime_via:
            self.runtime_api = self.runtime_via(self.emulator)
        else:
            self.runtime_relay = Relay(self.emulator)
            self.runtime_api = self.runtime_relay.url
        self.timings["emulator"] = time.monotonic() - t0
        # A fresh stack has no signing key: the SigningKey custom resource makes it.
        self._start_function("rotate-key", self.env)
        self.cloudformation = CloudFormationResponses()
        answer = self.custom_resource("Create")
        assert answer["Status"] == "SUCCESS", answer
        self.first_key = answer["Data"]
        self.timings["first_rotation"] = time.monotonic() - t0
        for binary in self.binaries.values():
            if binary != "rotate-key":
                self._start_function(binary, self.env)
                if self.await_init:
                    self.await_init(binary, self.spawned[binary])
        self.timings["ready"] = time.monotonic() - t0
        return self

    def _wait_emulator(self, timeout: float = 30):
        import socket
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.emulator_proc.poll() is not None:
                raise RuntimeError("the Lambda emulator exited: " + (self.log_dir / "emulator.log").read_text())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the Lambda emulator did not start")

    def log(self, binary: str) -> str:
        return (self.log_dir / f"{binary}.log").read_text(errors="replace")

    def stop(self) -> None:
        if getattr(self, "cloudformation", None):
            self.cloudformation.stop()
        if self.router:
            self.router.stop()
        for proc in [*self.procs.values(), self.emulator_proc]:
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if self.runtime_relay:
            self.runtime_relay.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
