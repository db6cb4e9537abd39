"""What a serverless user pays, measured on the emulated deployment (deployment.py); run by
scripts/lambda-costs.sh, not by the test command (these are measurements, not assertions).

- Init and warm duration per function, as Lambda defines them, read at a proxy between each
  function and the Runtime API emulator: init = process start → its first `GET …/next`; a
  warm invocation's duration = the event handed over → the function's `POST …/response`.
  Each cold start is a fresh deployment (its own emulator and processes), measured twice:
  `init_alone` starts the functions one at a time, each init alone on the machine as on Lambda
  (every instance its own micro-VM); `init_together` starts them all at once, four inits
  sharing this machine's two CPUs (what the test command's deployments do). Beside them, the
  init of the smallest `lambda_http` function (functions/common/examples/bare_lambda.rs), alone:
  the runtime's floor on this machine, in the same run.
- The MCP function's `tools/call verify_schema` with verify's body: CPU per warm call and
  durations, beside the REST verification (verify) in the same deployment.
- The yardsticks of CPU per warm call, in the same run: the smallest `lambda_http` function
  deployed in discovery's place and called as `/health` is (the stock runtime's own cost per
  event), and the local server's CPU per verification of verify's body (`verifier serve` on
  the embedded store, 8 clients at once); `targets` sets them beside the functions' figures.
- DynamoDB round trips and capacity units per free verification, paid verification and score
  lookup, counted at a proxy between the functions and DynamoDB Local (operation from
  `X-Amz-Target`; units as on-demand bills them for items under 1 KB: a consistent read 1 RRU,
  a write 1 WRU, a transaction 2 units per item).

Prints one JSON document."""
from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "x402"))

import httpx  # noqa: E402

from deployment import RELEASE, Deployment, Relay  # noqa: E402


class RuntimeTimes:
    """Init and invocation durations seen between the functions and the emulator."""

    def __init__(self):
        self.lock = threading.Lock()
        self.nexts: dict[str, list[float]] = {}
        self.handed: dict[str, tuple[str, float]] = {}
        self.durations: dict[str, list[float]] = {}

    def observe(self, phase, method, path, headers, body, at, started=None):
        parts = path.split("/")  # /.rt/<function>/2018-06-01/runtime/invocation/...
        if len(parts) < 4 or parts[1] != ".rt":
            return
        function = parts[2]
        with self.lock:
            if phase == "request" and path.endswith("/invocation/next"):
                self.nexts.setdefault(function, []).append(at)
            elif phase == "response" and path.endswith("/invocation/next"):
                rid = headers.get("lambda-runtime-aws-request-id")
                if rid and body:
                    self.handed[rid] = (function, at)
            elif phase == "request" and path.endswith("/response"):
                rid = parts[-2]
                if rid in self.handed:
                    fn, handed = self.handed.pop(rid)
                    self.durations.setdefault(fn, []).append(at - handed)


class DynamoCount:
    """Round trips and capacity units per operation."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.ops: dict[str, int] = {}
            self.rru = 0
            self.wru = 0
            self.busy = 0.0

    def observe(self, phase, method, path, headers, body, at, started=None):
        if phase == "response":
            with self.lock:
                self.busy += at - started
            return
        op = (headers.get("x-amz-target") or "").split(".")[-1]
        doc = json.loads(body or b"{}")
        with self.lock:
            self.ops[op] = self.ops.get(op, 0) + 1
            if op == "TransactWriteItems":
                self.wru += 2 * len(doc.get("TransactItems", []))
            elif op in ("PutItem", "UpdateItem", "DeleteItem"):
                self.wru += 1
            elif op in ("GetItem", "Query"):
                self.rru += 1 if doc.get("ConsistentRead") else 0.5

    def snapshot(self) -> dict:
        with self.lock:
            return {"round_trips": sum(self.ops.values()), "operations": dict(self.ops),
                    "read_units": self.rru, "write_units": self.wru}


SAMPLES = {
    "discovery": ("GET", "/health", None),
    "verify": ("POST", "/verify/schema", {"task_id": "c", "agent_id": "seller-cost",
                                         "expected_schema": {"type": "object", "required": ["total"]},
                                         "submitted_output": {"total": 1}}),
    "score": ("GET", "/reputation/seller-cost", None),
    "mcp": ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}


def call(stack, fn):
    method, path, body = SAMPLES[fn]
    r = httpx.request(method, stack.url + path, json=body, headers=MCP_HEADERS, timeout=60)
    assert r.status_code < 500, (fn, r.status_code, r.text[:200])


def mcp_verify(stack):
    """`tools/call verify_schema` with verify's body on the MCP function: a free verification."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "verify_schema", "arguments": SAMPLES["verify"][2]}}
    r = httpx.post(stack.url + "/mcp", json=message, headers=MCP_HEADERS, timeout=60)
    assert r.status_code == 200 and r.json()["result"].get("isError") is not True, r.text[:300]


def ms(values):
    values = sorted(v * 1000 for v in values)
    return {"median_ms": round(statistics.median(values), 2), "p90_ms": round(values[max(int(len(values) * 0.9) - 1, 0)], 2),
            "max_ms": round(values[-1], 2), "n": len(values)}


def bare_init(stack, first_next) -> float:
    """Init of the smallest `lambda_http` function (functions/common/examples/bare_lambda.rs)
    under the stack's emulator, alone: the runtime's own floor on this machine."""
    stack._start_function("bare_lambda", {}, RELEASE / "examples" / "bare_lambda")
    spawned = stack.spawned["bare_lambda"]
    return first_next("bare_lambda", spawned) - spawned


def yardstick_cpu(warm_calls: int) -> float:
    """CPU per warm call of the smallest `lambda_http` function (bare_lambda), deployed in
    discovery's place (the emulator serves the template's functions only) and called as
    `/health` is."""
    import tempfile
    import deployment
    with tempfile.TemporaryDirectory() as d:
        for name in ("verify", "score", "mcp", "rotate-key"):
            (Path(d) / name).symlink_to((RELEASE / name).resolve())
        (Path(d) / "discovery").symlink_to((RELEASE / "examples" / "bare_lambda").resolve())
        saved, deployment.RELEASE = deployment.RELEASE, Path(d)
        try:
            with Deployment({}) as stack:
                pid = stack.procs["discovery"].pid
                for _ in range(2):
                    httpx.get(stack.url + "/health", timeout=60).raise_for_status()
                before = process_cpu_seconds(pid)
                for _ in range(warm_calls):
                    httpx.get(stack.url + "/health", timeout=60).raise_for_status()
                return round((process_cpu_seconds(pid) - before) * 1e6 / warm_calls, 1)
        finally:
            deployment.RELEASE = saved


def local_server_cpu(calls: int) -> float:
    """The local server's CPU per free verification of verify's body (embedded store; 8
    clients at once, each on one keep-alive connection)."""
    from concurrent.futures import ThreadPoolExecutor
    import tempfile
    from conftest import Server
    with tempfile.TemporaryDirectory() as d:
        server = Server(d, allowance=10 * calls + 100).start()
        try:
            body = SAMPLES["verify"][2]

            def client(n):
                with httpx.Client(timeout=60) as c:
                    for _ in range(n):
                        c.post(server.url + "/verify/schema", json=body).raise_for_status()

            client(20)
            before = process_cpu_seconds(server.proc.pid)
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(client, [calls // 8] * 8))
            return round((process_cpu_seconds(server.proc.pid) - before) * 1e6 / (calls // 8 * 8), 1)
        finally:
            server.stop()


def process_cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system, all its threads), from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(cold_starts: int = 5, warm_calls: int = 200) -> dict:
    from localchain import LocalChain
    from test_payments import pay_header

    times, dynamo = RuntimeTimes(), DynamoCount()
    real_ddb = os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = Relay(real_ddb, dynamo.observe).url
    relays: dict[str, str] = {}

    def via(emulator: str) -> str:
        relays.setdefault(emulator, Relay(emulator, times.observe).url)
        return relays[emulator]

    inits = {mode: {fn: [] for fn in SAMPLES} for mode in ("alone", "together")}
    bare_inits: list[float] = []
    first_calls: dict[str, list[float]] = {fn: [] for fn in SAMPLES}

    def first_next(fn, spawned_at, timeout=30):
        """When `fn` spawned at `spawned_at` first asked for an event (its init's end)."""
        deadline = time.monotonic() + timeout
        while True:
            with times.lock:
                at = min((t for t in times.nexts.get(fn, []) if t >= spawned_at), default=None)
            if at is not None:
                return at
            assert time.monotonic() < deadline, f"{fn} never asked for its first event"
            time.sleep(0.002)

    try:
        with LocalChain() as chain:
            # Both networks offered, as the template requires: each function's init asks the
            # facilitator's /supported for the Solana fee payer.
            overrides = {"FreeAllowancePerDay": 1, "PayToBase": chain.payee_address,
                         "PayToSolana": chain.svm_payee_address, "FacilitatorUrl": chain.facilitator_url}
            # METRICS_NAMESPACE= (empty) measures the functions with their EMF metrics off.
            if "METRICS_NAMESPACE" in os.environ:
                overrides["MetricsNamespace"] = os.environ["METRICS_NAMESPACE"]
            # Each cold start is a fresh deployment (its own emulator and processes), its
            # functions started one at a time (each init alone, as on Lambda, where every
            # instance has its own micro-VM) or all together (four inits sharing two CPUs).
            for _ in range(cold_starts):
                for mode in ("alone", "together"):
                    alone = first_next if mode == "alone" else None
                    with Deployment(overrides, runtime_via=via, await_init=alone) as stack:
                        for fn in SAMPLES:
                            inits[mode][fn].append(first_next(fn, stack.spawned[fn]) - stack.spawned[fn])
                            if mode == "alone":
                                before = len(times.durations.get(fn, []))
                                call(stack, fn)
                                first_calls[fn].append(times.durations[fn][before])
                        if mode == "alone":
                            bare_inits.append(bare_init(stack, first_next))
            # The allowance covers the warm calls (REST's and MCP's verifications) and one
            # counted free call, then 402s.
            last = dict(overrides, FreeAllowancePerDay=2 * warm_calls + 2)
            with Deployment(last, runtime_via=via) as stack:
                for fn in SAMPLES:
                    call(stack, fn)  # the first invocation (cold) is not a warm one
                times.durations.clear()
                dynamo_ms: dict[str, float] = {}
                cpu_us: dict[str, float] = {}
                for fn in SAMPLES:
                    dynamo.reset()
                    pid = stack.procs[fn].pid
                    cpu_before = process_cpu_seconds(pid)
                    for _ in range(warm_calls):
                        call(stack, fn)
                    # the function process's own CPU per warm call (clock ticks: 10 ms each, so
                    # a few hundred calls are needed for a figure)
                    cpu_us[fn] = round((process_cpu_seconds(pid) - cpu_before) * 1e6 / warm_calls, 1)
                    dynamo_ms[fn] = round(dynamo.busy * 1000 / warm_calls, 2)
                functions = {fn: {"init_alone": ms(inits["alone"][fn]),
                                  "init_together": ms(inits["together"][fn]),
                                  "first_invocation": ms(first_calls[fn]),
                                  "warm": ms(times.durations[fn]),
                                  "warm_cpu_us_per_call": cpu_us[fn],
                                  # time spent waiting on DynamoDB (Local, through the relay)
                                  "warm_dynamodb_wait_ms_mean": dynamo_ms[fn],
                                  "warm_excluding_dynamodb_ms_mean": round(
                                      statistics.mean(times.durations[fn]) * 1000 - dynamo_ms[fn], 2)}
                             for fn in SAMPLES}

                # The MCP function's tools/call verify_schema with verify's body, beside the
                # REST verification above.
                before = len(times.durations.get("mcp", []))
                dynamo.reset()
                mcp_pid = stack.procs["mcp"].pid
                cpu_before = process_cpu_seconds(mcp_pid)
                for _ in range(warm_calls):
                    mcp_verify(stack)
                mcp_durations = times.durations["mcp"][before:]
                mcp_tools_call = {
                    "warm": ms(mcp_durations),
                    "warm_cpu_us_per_call": round((process_cpu_seconds(mcp_pid) - cpu_before) * 1e6 / warm_calls, 1),
                    "warm_dynamodb_wait_ms_mean": round(dynamo.busy * 1000 / warm_calls, 2),
                    "warm_excluding_dynamodb_ms_mean": round(
                        statistics.mean(mcp_durations) * 1000 - dynamo.busy * 1000 / warm_calls, 2)}

                def counted(request):
                    dynamo.reset()
                    request()
                    return dynamo.snapshot()

                body = dict(SAMPLES["verify"][2], agent_id="seller-units")
                free = counted(lambda: httpx.post(stack.url + "/verify/schema", json=body, timeout=60).raise_for_status())
                offer = counted(lambda: httpx.post(stack.url + "/verify/schema", json=body, timeout=60))
                header = pay_header(chain, httpx.post(stack.url + "/verify/schema", json=body,
                                                      timeout=60).headers["payment-required"])
                paid = counted(lambda: httpx.post(stack.url + "/verify/schema", json=body, timeout=60,
                                                  headers={"PAYMENT-SIGNATURE": header}).raise_for_status())
                reputation = counted(lambda: httpx.get(stack.url + "/reputation/seller-units", timeout=60))
                no_data = counted(lambda: httpx.get(stack.url + "/score/never-seen-agent", timeout=60))
                bare_cpu = yardstick_cpu(warm_calls)
                local_cpu = local_server_cpu(max(warm_calls, 800))
                health, verify = cpu_us["discovery"], cpu_us["verify"]
                return {"functions": functions,
                        "targets": {
                            "yardstick_lambda_http_warm_cpu_us_per_call": bare_cpu,
                            "local_server_cpu_us_per_verification": local_cpu,
                            "health_over_yardstick": round(health / bare_cpu, 2),
                            "health_target": "<= 0.75",
                            "verification_cpu_us": verify,
                            "verification_target_us": round(bare_cpu + 4 * local_cpu, 1),
                            "mcp_tools_list_over_health": round(cpu_us["mcp"] / health, 2),
                            "mcp_tools_call_over_verify": round(mcp_tools_call["warm_cpu_us_per_call"] / verify, 2),
                        },
                        "mcp_tools_call_verify_schema": mcp_tools_call,
                        # the floor: the smallest lambda_http function, its init alone
                        "bare_lambda_http_init_alone": ms(bare_inits),
                        "dynamodb": {"free_verification": free, "payment_required_402": offer,
                                     "paid_verification": paid, "reputation": reputation,
                                     "score_no_data": no_data}}
    finally:
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = real_ddb


if __name__ == "__main__":
    print(json.dumps(measure(int(os.environ.get("COLD_STARTS", "5")), int(os.environ.get("WARM_CALLS", "200"))),
          indent=2))
