"""Adversarial end-to-end tests against the real release binary (`verifier serve`).

Every case asserts the HTTP status, the §9 error shape for errors, no 5xx, a time bound, and
(at the end) a memory bound and a live server. The server runs with small limits:
hard body limit 256 KiB, free body limit 64 KiB, an allowance no test exhausts.

The cases that could hurt the machine (runaway memory or CPU) run against a throw-away server
with an address-space cap, some under an RSS watchdog.
"""
import base64
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest

from adversarial_util import (
    ALLOWANCE, FREE_LIMIT, HARD_LIMIT, PAY_TO_BASE, LimitedServer, RssWatch, assert_error,
    padded, raw_http, request_body,
)

BOUND = 2.0          # seconds: every single request of this file answers within this
QUICK = 1.0          # seconds: for cases the service must refuse "quickly"
PEAK_RSS_MB = 200    # the shared server's VmHWM after every heavy case of this file
MARKER = "advmark" + uuid.uuid4().hex   # planted in invalid inputs; must never come back

# Sends one body from twelve threads until terminated: prints "ready" after the first answer
# ("no answer" when none came within 10 s, so the test fails instead of waiting for ever), and
# at the end how many were answered.
FLOOD_SCRIPT = """
import signal, sys, threading, time
stop, sent, first = threading.Event(), [], threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
import httpx
url, body = sys.argv[1], sys.argv[2]
def flood():
    with httpx.Client(timeout=5) as c:
        while not stop.is_set():
            try:
                c.post(url, content=body, headers={"content-type": "application/json"})
                sent.append(1)
                first.set()
            except httpx.HTTPError:
                time.sleep(0.01)
threads = [threading.Thread(target=flood, daemon=True) for _ in range(12)]
for t in threads:
    t.start()
give_up = time.monotonic() + 10
while not (first.is_set() or stop.is_set()) and time.monotonic() < give_up:
    first.wait(0.1)
print("ready" if first.is_set() else "no answer", flush=True)
while not stop.is_set():
    stop.wait(0.1)
print(len(sent), flush=True)
"""


# ---------------------------------------------------------------------------------------------
# fixtures

@pytest.fixture(scope="module")
def srv():
    server = LimitedServer().start()
    yield server
    server.stop()


class Api:
    def __init__(self, server: LimitedServer):
        self.server = server
        self.client = httpx.Client(base_url=server.url, timeout=10)

    def request(self, method, path, *, body=None, ct="application/json", headers=None,
                bound=BOUND):
        if body is not None and not isinstance(body, (bytes, str)) and not callable(body):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        if callable(body):      # a generator factory: sent chunked
            body = body()
        h = {} if ct is None else {"content-type": ct}
        h.update(headers or {})
        t0 = time.monotonic()
        r = self.client.request(method, path, content=body, headers=h)
        elapsed = time.monotonic() - t0
        assert elapsed < bound, f"{method} {path} took {elapsed:.2f} s (bound {bound} s)"
        assert r.status_code < 500, f"{r.status_code}: {r.text[:300]}"
        return r

    def post(self, body, path="/verify/schema", **kw):
        return self.request("POST", path, body=body, **kw)


@pytest.fixture(scope="module")
def api(srv):
    a = Api(srv)
    yield a
    a.client.close()


@pytest.fixture
def hostile():
    """Throw-away servers for cases that currently run away with CPU or memory."""
    started = []

    def make(**env):
        s = LimitedServer(**env).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.kill()
        s.stop()


def nbytes(body: bytes | str) -> int:
    return len(body.encode() if isinstance(body, str) else body)


def doc(**kw) -> str:
    """A request body as compact JSON text."""
    return json.dumps(request_body(**kw), separators=(",", ":"), ensure_ascii=False)


def raw_post(body: bytes, *, content_length: int | str | None = None, extra: bytes = b"",
             path: bytes = b"/verify/schema") -> bytes:
    cl = len(body) if content_length is None else content_length
    return (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + b"Content-Length: " + str(cl).encode() + b"\r\n" + extra + b"\r\n" + body)


def assert_serving(srv: LimitedServer):
    assert srv.alive(), "the server process died"
    t0 = time.monotonic()
    r = httpx.get(srv.url + "/health", timeout=BOUND)
    assert r.status_code == 200 and time.monotonic() - t0 < QUICK


# ---------------------------------------------------------------------------------------------
# 1. bodies near and over the limits

def sized(kind: str, size: int) -> bytes:
    if kind == "whitespace":
        return padded(request_body(), size)
    d = request_body(submitted_output="")
    base = nbytes(json.dumps(d, separators=(",", ":")))
    d["submitted_output"] = "x" * (size - base)
    out = json.dumps(d, separators=(",", ":")).encode()
    assert len(out) == size
    return out


@pytest.mark.parametrize("kind", ["whitespace", "long_string"])
def test_body_exactly_at_the_hard_limit_is_not_413(api, kind):
    r = api.post(sized(kind, HARD_LIMIT))
    # over the free limit, under the hard one: the payment flow (SERVICE.md §7), not 413
    assert r.status_code == 402
    assert r.json()["free_trial"]["available"] is True


@pytest.mark.parametrize("kind", ["whitespace", "long_string"])
def test_one_byte_over_the_hard_limit_is_413_stating_the_limit(api, kind):
    r = api.post(sized(kind, HARD_LIMIT + 1))
    body = assert_error(r, 413, "body_too_large", ["body"])
    assert str(HARD_LIMIT) in body["message"]
    assert {"action": "shrink_request", "max_bytes": HARD_LIMIT} in body["next_actions"]


def test_body_exactly_at_the_free_limit_is_served_free(api):
    r = api.post(sized("whitespace", FREE_LIMIT))
    assert r.status_code == 200 and r.json()["result"] == "pass"
    assert r.headers["free-allowance-limit"] == str(ALLOWANCE)
    assert int(r.headers["free-allowance-remaining"]) < ALLOWANCE
    assert r.headers["free-allowance-resets"].endswith("T00:00:00Z")


@pytest.mark.parametrize("size", [FREE_LIMIT + 1, (FREE_LIMIT + HARD_LIMIT) // 2])
def test_body_between_the_free_and_hard_limits_is_402_with_free_trial(api, size):
    r = api.post(sized("long_string", size))
    assert r.status_code == 402
    body = r.json()
    trial = body["free_trial"]
    for key in ["available", "via", "transport", "url", "tool", "calls_per_client_per_day",
                "remaining_calls_today", "resets_at", "client", "rest_free", "message"]:
        assert key in trial, key
    assert trial["via"] == "mcp+rest" and trial["tool"] == "verify_schema"
    assert trial["transport"] == "streamable-http"
    assert trial["calls_per_client_per_day"] == ALLOWANCE
    assert r.headers["cache-control"] == "no-store"
    required = json.loads(base64.b64decode(r.headers["payment-required"]))
    assert required["x402Version"] == 2
    assert required["accepts"] == body["accepts"]
    base = [a for a in body["accepts"] if a["network"] == "eip155:8453"]
    assert base and base[0]["payTo"] == PAY_TO_BASE and base[0]["amount"] == "20000"
    assert body["resource"]["url"].endswith("/verify/schema")


def test_invalid_body_between_the_limits_is_422_not_402(api):
    d = request_body(task_id="", submitted_output="x" * (FREE_LIMIT + 10))
    assert_error(api.post(d), 422, "invalid_request", ["task_id"])


def test_empty_post_is_an_x402_discovery_probe(api):
    r = api.post(b"")
    assert r.status_code == 402 and "free_trial" in r.json()


def _chunks(data: bytes, size: int = 16384):
    def gen():
        for i in range(0, len(data), size):
            yield data[i:i + size]
    return gen


@pytest.mark.parametrize("size,status", [(2_000, 200), (HARD_LIMIT, 402), (HARD_LIMIT + 1, 413),
                                         (4 * HARD_LIMIT, 413)])
def test_chunked_transfer_encoding_obeys_the_same_limits(api, size, status):
    data = sized("whitespace", size) if size <= HARD_LIMIT + 1 else b" " * size
    r = api.post(_chunks(data))
    assert r.status_code == status
    if status == 413:
        assert_error(r, 413, "body_too_large")


def test_content_length_declaring_more_than_the_limit_is_413_without_the_body(srv):
    r = raw_http(srv.port, raw_post(b'{"task_id":', content_length=10 ** 12), timeout=BOUND)
    assert not r.timed_out and r.elapsed < QUICK
    assert_error(r, 413, "body_too_large")


def test_content_length_smaller_than_the_body(srv):
    body = doc().encode()
    r = raw_http(srv.port, raw_post(body, content_length=11), timeout=BOUND)
    assert not r.timed_out
    # the server reads 11 bytes, `{"task_id":` — an incomplete document; the rest of the bytes
    # are then read as a next request on the connection (and refused with 400)
    body = assert_error(r, 422, "invalid_request")
    assert "ends before the JSON value is complete" in body["fields"][0]["problem"]
    assert_serving(srv)


@pytest.mark.parametrize("cl", [str(2 ** 64).encode(), b"-1", b"12abc", b"5\r\nContent-Length: 6"])
def test_unparseable_content_length_is_400_and_close(srv, cl):
    body = doc().encode()
    data = (b"POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + cl + b"\r\n\r\n" + body)
    r = raw_http(srv.port, data, timeout=BOUND, read_all=True)
    assert not r.timed_out
    assert r.status == 400 and r.headers.get("connection") == "close"
    assert_serving(srv)


def test_content_length_larger_than_the_body_waits_without_blocking_others(srv):
    body = doc().encode()
    s = socket.create_connection(("127.0.0.1", srv.port))
    try:
        s.sendall(raw_post(body, content_length=len(body) + 100))
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1)            # still waiting for the rest: no answer, no crash
        assert_serving(srv)
    finally:
        s.close()
    assert_serving(srv)


@pytest.mark.parametrize("path", [b"/verify/schema", b"/mcp"])   # /mcp: the fuzzer's first find (was 500)
@pytest.mark.parametrize("case", ["short_body_then_half_close", "bad_chunk_size", "truncated_chunk"])
def test_incomplete_body_is_not_called_too_large(srv, case, path):
    body = doc().encode()
    chunked = (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    data = {
        "short_body_then_half_close": raw_post(body, content_length=len(body) + 100, path=path,
                                               extra=b"Accept: application/json, text/event-stream\r\n"),
        "bad_chunk_size": chunked + b"zz\r\nabc\r\n0\r\n\r\n",
        "truncated_chunk": chunked + b"40\r\n" + body[:10],
    }[case]
    r = raw_http(srv.port, data, timeout=BOUND, shut_wr=True)
    assert r.status in (400, 422), r.raw[:200]
    assert b"larger than" not in r.body
    if r.status == 400:
        assert_error(r, 400, "body_incomplete")


# ---------------------------------------------------------------------------------------------
# 2. deep nesting

DEEP_ARRAY = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"a":' * 10_000 + "1" + "}" * 10_000


def with_member(name: str, value_text: str) -> str:
    members = {"task_id": '"t"', "expected_schema": "{}", "submitted_output": "1"}
    members[name] = value_text
    return "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + "}"


@pytest.mark.parametrize("field", ["submitted_output", "expected_schema", "rules", "bounds", "task_id"])
@pytest.mark.parametrize("shape", ["arrays", "objects"])
def test_ten_thousand_levels_are_refused_naming_the_field(api, field, shape):
    text = with_member(field, DEEP_ARRAY if shape == "arrays" else DEEP_OBJECT)
    body = assert_error(api.post(text, bound=QUICK), 422, "invalid_request", [field])
    assert "nested deeper than 126" in body["fields"][0]["problem"]


@pytest.mark.parametrize("text,field", [
    ('{"task_id":"t","expected_schema":{},"submitted_output":' + "[" * 100_000, "submitted_output"),
    ("[" * 100_000, "body"),
    ('{"a":' * 50_000, "body"),
])
def test_unclosed_deep_documents_are_refused_quickly(api, text, field):
    assert_error(api.post(text, bound=QUICK), 422, "invalid_request", [field])


def test_nesting_just_under_the_limit_is_accepted(api):
    out = "[" * 126 + "]" * 126
    assert api.post(with_member("submitted_output", out)).status_code == 200
    schema = '{"not":' * 125 + "{}" + "}" * 125  # 126 levels of objects
    r = api.post(with_member("expected_schema", schema))
    assert r.status_code == 200


def test_nesting_limit_is_the_documented_126_for_every_field(api):
    # One level more than the documented limit is refused the same way in both fields.
    out = "[" * 127 + "]" * 127
    assert_error(api.post(with_member("submitted_output", out)), 422, "invalid_request",
                 ["submitted_output"])
    schema = '{"not":' * 126 + "{}" + "}" * 126  # 127 levels of objects
    assert_error(api.post(with_member("expected_schema", schema)), 422, "invalid_request",
                 ["expected_schema"])


# ---------------------------------------------------------------------------------------------
# 3. regular expressions

@pytest.mark.parametrize("pattern,instance", [
    ("^(a+)+$", "a" * 30 + "b"),
    ("(x+x+)+y", "x" * 5_000),
    ("^(a|a)*$", "a" * 20_000 + "!"),
    ("^(\\w+\\s?)*$", "word " * 5_000 + "!"),
])
def test_catastrophic_backtracking_patterns_run_in_linear_time(api, pattern, instance):
    r = api.post(request_body(expected_schema={"type": "string", "pattern": pattern},
                              submitted_output=instance), bound=QUICK)
    assert r.status_code == 200
    assert r.json()["summary"] == {"result": "fail", "blocking_checks": ["schema:pattern"]}


def test_many_pathological_patterns_at_once(api):
    props = {f"k{i}": {"pattern": f"^(a+)+{i}$"} for i in range(40)}
    out = {f"k{i}": "a" * 30 + "b" for i in range(40)}
    r = api.post(request_body(expected_schema={"type": "object", "properties": props},
                              submitted_output=out, detail="compact"), bound=QUICK)
    assert r.status_code == 200 and r.json()["result"] == "fail"


def test_more_patterns_than_a_free_request_compiles_go_to_payment(api):
    # 500 regexes compile in tens of milliseconds: past the free ceiling, priced, never run
    props = {f"k{i}": {"pattern": f"^(a+)+{i}$"} for i in range(500)}
    out = {f"k{i}": "a" * 30 + "b" for i in range(500)}
    r = api.post(request_body(expected_schema={"type": "object", "properties": props},
                              submitted_output=out, detail="compact"), bound=QUICK)
    assert r.status_code == 402
    reason = r.json()["payment_reason"]
    assert reason["code"] == "over_free_cost" and reason["part"] == "patterns"


@pytest.mark.parametrize("schema", [
    {"pattern": "(?<=a)b"},
    {"pattern": "(?<!a)b"},
    {"pattern": "a(?=b)"},
    {"pattern": "a(?!b)"},
    {"pattern": "(a)\\1"},
    {"pattern": "(?<n>a)\\k<n>"},
    {"patternProperties": {"(?=x)": {}}},
    {"propertyNames": {"pattern": "(a)\\1"}},
    {"properties": {"deep": {"items": {"pattern": "(?<=x)"}}}},
], ids=lambda s: json.dumps(s)[:40])
def test_patterns_the_linear_time_engine_refuses_are_a_clear_422(api, schema):
    body = assert_error(api.post(request_body(expected_schema=schema, submitted_output="ab")),
                        422, "invalid_request", ["expected_schema"])
    assert "regex" in body["fields"][0]["problem"]


@pytest.mark.parametrize("pattern", ["a{1000000}", "(a{1000}){1000}", "((a{100}){100}){100}",
                                     "[", "(", "a{2,1}", "\\", "(?P<>a)", "[z-a]"])
def test_huge_or_invalid_patterns_are_422_quickly(api, pattern):
    r = api.post(request_body(expected_schema={"pattern": pattern}, submitted_output="a"),
                 bound=QUICK)
    assert_error(r, 422, "invalid_request", ["expected_schema"])


@pytest.mark.parametrize("pattern", ["[", "a{1000000}"])
def test_regex_refusal_names_the_real_reason(api, pattern):
    r = api.post(request_body(expected_schema={"pattern": pattern}, submitted_output="a"))
    problem = assert_error(r, 422)["fields"][0]
    assert "lookaround" not in problem["problem"] + problem["fix"]


def test_format_regex_instances_cannot_blow_up_the_compiler(api):
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "items": {"format": "regex"}}
    out = ["((a{100}){100}){100}", "(?:(?:(?:a{1000}){1000}){1000})", "a{1000000}", "(["] * 200
    r = api.post(request_body(expected_schema=schema, submitted_output=out, detail="compact"))
    assert r.status_code == 200


# ---------------------------------------------------------------------------------------------
# 4. $ref: loops, exponential expansion, remote and file references

def test_self_reference_loops_answer_quickly_without_5xx(api):
    # JSON Schema calls pure loops undefined; the service may answer or refuse, but quickly.
    for schema in [{"$ref": "#"},
                   {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
                   {"$defs": {"alice": {"allOf": [{"$ref": "#/$defs/bob"}]},
                              "bob": {"allOf": [{"$ref": "#/$defs/alice"}]}}, "$ref": "#/$defs/alice"}]:
        r = api.post(request_body(expected_schema=schema, submitted_output={"a": [1, {"b": 2}]}),
                     bound=QUICK)
        if r.status_code != 200:
            assert_error(r, 422, "invalid_request", ["expected_schema"])


def test_loops_still_enforce_their_constraints(api):
    loop = {"$ref": "#", "type": "integer"}
    r = api.post(request_body(expected_schema=loop, submitted_output="x"), bound=QUICK)
    assert r.status_code == 200 and r.json()["summary"]["blocking_checks"] == ["schema:type"]
    mutual = {"$defs": {"alice": {"allOf": [{"$ref": "#/$defs/bob"}], "type": "integer"},
                        "bob": {"allOf": [{"$ref": "#/$defs/alice"}], "minimum": 5}},
              "$ref": "#/$defs/alice"}
    r = api.post(request_body(expected_schema=mutual, submitted_output=3), bound=QUICK)
    assert r.status_code == 200 and r.json()["summary"]["blocking_checks"] == ["schema:minimum"]


def test_a_legitimate_recursive_schema_checks_deep_nodes(api):
    tree = {"type": "object", "properties": {"v": {"type": "integer"}, "c": {"$ref": "#"}}}
    out = {"v": 1}
    node = out
    for _ in range(60):
        node["c"] = {"v": 1}
        node = node["c"]
    node["v"] = "x"
    r = api.post(request_body(expected_schema=tree, submitted_output=out))
    assert r.status_code == 200
    (detail,) = r.json()["errors_detail"]
    assert detail["check"] == "schema:type" and detail["path"] == "$" + ".c" * 60 + ".v"


@pytest.mark.parametrize("combinator", ["properties", "allOf", "anyOf", "items"])
def test_exponentially_expanding_refs_are_too_complex(api, combinator):
    defs = {"n0": {"type": "integer"}}
    for i in range(1, 31):
        ref = {"$ref": f"#/$defs/n{i - 1}"}
        defs[f"n{i}"] = {
            "properties": {"properties": {"a": ref, "b": ref}},
            "allOf": {"allOf": [ref, ref]},
            "anyOf": {"anyOf": [ref, ref]},
            "items": {"prefixItems": [ref, ref], "items": ref},
        }[combinator]
    schema = {"$defs": defs, "$ref": "#/$defs/n30"}
    body = assert_error(api.post(request_body(expected_schema=schema, submitted_output={"a": 1}),
                                 bound=QUICK), 422, "invalid_request", ["expected_schema"])
    assert "too complex" in body["fields"][0]["problem"]


@pytest.fixture
def listening_socket():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.settimeout(0.3)
    yield s
    s.close()


def test_remote_refs_are_refused_and_never_fetched(api, listening_socket):
    port = listening_socket.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    schemas = [
        {"$ref": f"{base}/x.json"},
        {"properties": {"a": {"$ref": f"{base}/x.json#/definitions/a"}}},
        {"$id": f"{base}/root.json", "$ref": "other.json"},
        {"$dynamicRef": f"{base}/x.json"},
        {"$defs": {"a": {"$ref": f"{base}/x.json"}}, "$ref": "#/$defs/a"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": f"{base}/d7.json"},
        {"$schema": f"{base}/meta.json"},
    ]
    for schema in schemas:
        assert_error(api.post(request_body(expected_schema=schema, submitted_output=1)),
                     422, "invalid_request", ["expected_schema"])
    with pytest.raises(socket.timeout):
        conn, _ = listening_socket.accept()
        conn.close()


@pytest.mark.parametrize("ref", ["file:///etc/passwd", "file:///etc/passwd#/root",
                                 "file:/etc/passwd", "/etc/passwd", "../../../../etc/passwd"])
def test_file_refs_are_refused_and_never_read(api, ref):
    r = api.post(request_body(expected_schema={"$ref": ref}, submitted_output=1))
    assert_error(r, 422, "invalid_request", ["expected_schema"])
    assert "root:" not in r.text and "/bin/" not in r.text


@pytest.mark.parametrize("branches,depth", [(2, 40), (3, 40)])
def test_recursive_anyof_over_a_deep_output_is_bounded(hostile, branches, depth):
    s = hostile()
    out = 1
    for _ in range(depth):
        out = [out]
    schema = {"type": "array", "items": {"anyOf": [{"$ref": "#"}] * branches}}
    body = request_body(expected_schema=schema, submitted_output=out, detail="compact")
    status = None
    with RssWatch(s, kill_over_mb=400) as watch:
        t0 = time.monotonic()
        try:
            status = httpx.post(s.url + "/verify/schema", json=body, timeout=BOUND).status_code
        except httpx.HTTPError:
            pass
        elapsed = time.monotonic() - t0
    # 2^40 or 3^40 applications: no payment could buy them, so a quick 422 rather than a price.
    assert status == 422, "no answer (timeout, or the server died)" if status is None else status
    assert elapsed < QUICK
    assert watch.peak_mb < PEAK_RSS_MB
    assert_serving(s)


# ---------------------------------------------------------------------------------------------
# 5. unicode

@pytest.mark.parametrize("text,field", [
    ('{"task_id":"t","expected_schema":{},"submitted_output":"\\ud800"}', "submitted_output"),
    ('{"task_id":"t","expected_schema":{},"submitted_output":"\\udfff x"}', "submitted_output"),
    ('{"task_id":"t","expected_schema":{},"submitted_output":"\\ude00\\ud83d"}', "submitted_output"),
    ('{"task_id":"t","expected_schema":{},"submitted_output":{"\\ud800":1}}', "submitted_output"),
    ('{"task_id":"t","expected_schema":{"title":"\\udc00"},"submitted_output":1}', "expected_schema"),
    ('{"task_id":"t","expected_schema":{"properties":{"\\ud800":{}}},"submitted_output":1}', "expected_schema"),
    ('{"task_id":"\\ud800","expected_schema":{},"submitted_output":1}', "task_id"),
    ('{"task_id":"t","agent_id":"\\udbff","expected_schema":{},"submitted_output":1}', "agent_id"),
    ('{"task_id":"t","expected_schema":{},"submitted_output":1,"rules":[{"type":"unique","field":"\\ud800"}]}', "rules"),
], ids=range(9))
def test_lone_surrogates_are_422(api, text, field):
    assert_error(api.post(text), 422, "invalid_request", [field])


@pytest.mark.parametrize("bad", [b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xff\xfe",
                                 b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80"],
                         ids=["overlong2", "overlong3", "overlong4", "ff-fe", "cesu-surrogate",
                              "truncated", "beyond-10ffff", "lone-continuation"])
@pytest.mark.parametrize("field", ["submitted_output", "expected_schema", "task_id"])
def test_invalid_utf8_bytes_are_422(api, bad, field):
    members = {"task_id": b'"t"', "expected_schema": b"{}", "submitted_output": b"1"}
    members[field] = b'"x' + bad + b'"' if field != "expected_schema" else b'{"title":"' + bad + b'"}'
    text = b"{" + b",".join(b'"' + k.encode() + b'":' + v for k, v in members.items()) + b"}"
    assert_error(api.post(text), 422, "invalid_request", [field])


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"], ids=["utf8-bom", "utf16le-bom", "utf16be-bom"])
def test_byte_order_marks_are_refused(api, prefix):
    # RFC 8259 §8.1: a parser MAY ignore a BOM; this service parses strictly and refuses it.
    assert_error(api.post(prefix + doc().encode()), 422, "invalid_request", ["body"])


def test_utf16_body_is_refused(api):
    assert_error(api.post(doc().encode("utf-16-le")), 422, "invalid_request", ["body"])


def test_escaped_nul_characters_are_processed(api):
    text = ('{"task_id":"t\\u0000x","agent_id":"test-\\u0000","expected_schema":'
            '{"type":"object","required":["k\\u0000"],"properties":{"k\\u0000":{"const":"a\\u0000b"}}},'
            '"submitted_output":{"k\\u0000":"a\\u0000b"}}')
    r = api.post(text)
    assert r.status_code == 200 and r.json()["result"] == "pass"
    assert r.json()["task_id"] == "t\x00x"


@pytest.mark.parametrize("ctl", [b"\x00", b"\x01", b"\x1f", b"\n"])
def test_raw_control_characters_in_strings_are_422(api, ctl):
    text = b'{"task_id":"t","expected_schema":{},"submitted_output":"a' + ctl + b'b"}'
    assert_error(api.post(text), 422, "invalid_request", ["submitted_output"])


def test_astral_keys_work_in_schema_and_output(api):
    key = "😀𝄞\U0010fffd"
    schema = {"type": "object", "required": [key], "properties": {key: {"type": "integer"}}}
    r = api.post(request_body(expected_schema=schema, submitted_output={key: "x"}))
    assert r.status_code == 200
    assert r.json()["errors_detail"][0]["path"] == f"$.{key}"
    r = api.post(request_body(expected_schema=schema, submitted_output={key: 1}),
                 bound=QUICK)
    assert r.json()["result"] == "pass"


def test_very_long_keys(api):
    key = "k" * 30_000
    r = api.post(request_body(expected_schema={"required": [key]}, submitted_output={key: 1}))
    assert r.status_code == 200 and r.json()["result"] == "pass"
    r = api.post(request_body(submitted_output={"é" * 40_000: 1}, detail="compact"))
    assert r.status_code == 402   # 80 KB of UTF-8: over the free size limit


@pytest.mark.parametrize("char", ["a", "é", "😀", "\u200b", "\u202e", "\u0301", "\U0010ffff"],
                         ids=["ascii", "2-byte", "4-byte", "zero-width", "rtl-override",
                              "combining", "max-codepoint"])
@pytest.mark.parametrize("field", ["task_id", "agent_id"])
def test_ids_are_measured_in_characters(api, char, field):
    value = char * 200
    extra = {} if field == "task_id" else {"task_id": "t"}
    r = api.post(request_body(**extra, **{field: value}))
    assert r.status_code == 200 and r.json()[field] == value
    body = assert_error(api.post(request_body(**extra, **{field: value + char})), 422,
                        "invalid_request", [field])
    assert "longer than 200 characters" in body["fields"][0]["problem"]


@pytest.mark.parametrize("value", ["", [], {}, 5, True])
def test_empty_or_mistyped_ids_are_422(api, value):
    assert_error(api.post(request_body(task_id=value)), 422, "invalid_request", ["task_id"])


# ---------------------------------------------------------------------------------------------
# 6. duplicate keys

DUPLICATES = {
    "top-level": ('{"task_id":"t","task_id":"u","expected_schema":{},"submitted_output":1}', "task_id"),
    "top-level-escaped": ('{"task_id":"t","\\u0074ask_id":"u","expected_schema":{},"submitted_output":1}', "task_id"),
    "schema-twice": ('{"task_id":"t","expected_schema":{},"expected_schema":{},"submitted_output":1}', "expected_schema"),
    "output-twice": ('{"task_id":"t","expected_schema":{},"submitted_output":1,"submitted_output":1}', "submitted_output"),
    "in-schema": ('{"task_id":"t","expected_schema":{"type":"object","type":"array"},"submitted_output":1}', "expected_schema"),
    "in-schema-deep": ('{"task_id":"t","expected_schema":{"properties":{"a":{"x":1,"x":1}}},"submitted_output":1}', "expected_schema"),
    "in-schema-escaped": ('{"task_id":"t","expected_schema":{"type":"object","\\u0074ype":"array"},"submitted_output":1}', "expected_schema"),
    "in-output": ('{"task_id":"t","expected_schema":{},"submitted_output":{"a":1,"a":2}}', "submitted_output"),
    "in-output-deep": ('{"task_id":"t","expected_schema":{},"submitted_output":[{"b":[{"a":1,"a":1}]}]}', "submitted_output"),
    "in-output-escaped": ('{"task_id":"t","expected_schema":{},"submitted_output":{"a":1,"\\u0061":1}}', "submitted_output"),
    "in-rule": ('{"task_id":"t","expected_schema":{},"submitted_output":{"a":1},"rules":[{"type":"unique","type":"unique","field":"a"}]}', "rules"),
    "in-bounds": ('{"task_id":"t","expected_schema":{},"submitted_output":{"a":1},"bounds":{"a":{"min":0},"a":{"min":1}}}', "bounds"),
    "in-bound-spec": ('{"task_id":"t","expected_schema":{},"submitted_output":{"a":1},"bounds":{"a":{"min":0,"min":0}}}', "bounds"),
}


@pytest.mark.parametrize("name", list(DUPLICATES))
def test_duplicate_keys_are_422_naming_the_field(api, name):
    text, field = DUPLICATES[name]
    body = assert_error(api.post(text), 422, "invalid_request", [field])
    assert "each key at most once" in body["fields"][0]["fix"]


def test_canonically_equivalent_but_different_keys_are_not_duplicates(api):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":{"\u00e9":1,"e\u0301":2}}')
    assert r.status_code == 200


def test_duplicate_key_position_in_the_schema_is_a_body_position(api):
    text = DUPLICATES["in-schema"][0]
    where = text.index('"type":"array"') + 1
    problem = assert_error(api.post(text), 422)["fields"][0]["problem"]
    column = int(problem.split("column ")[1].rstrip(")"))
    assert where <= column <= where + len('"type"') + 2


# ---------------------------------------------------------------------------------------------
# 7. numbers at the edges

NUMBER_HASH_CASES = {"-0": "0", "0.0": "0", "0e-400": "0", "1E+2": "100", "9007199254740991.0": "9007199254740991",
                     "1e308": "1e+308", "5e-324": "5e-324", "-9007199254740991": "-9007199254740991",
                     "9007199254740991": "9007199254740991", "1.7976931348623157e308": "1.7976931348623157e+308",
                     "9.007199254740993e15": "9007199254740992"}


@pytest.mark.parametrize("literal", list(NUMBER_HASH_CASES), ids=lambda t: t if len(t) < 30 else f"{t[:6]}..{len(t)}")
def test_edge_numbers_are_accepted_and_hashed_canonically(api, literal):
    import hashlib
    r = api.post('{"task_id":"t","expected_schema":{"type":"number"},"submitted_output":%s}' % literal)
    assert r.status_code == 200 and r.json()["result"] == "pass"
    assert r.json()["output_hash"] == hashlib.sha256(NUMBER_HASH_CASES[literal].encode()).hexdigest()


@pytest.mark.parametrize("literal", ["9007199254740992", "-9007199254740992", "123456789012345678",
                                     "[1, 9007199254740993]", "9007199254740993.0", "-9007199254740993.000"])
def test_unsafe_integers_are_refused_with_a_send_strings_fix(api, literal):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal)
    body = assert_error(r, 422, "invalid_request", ["submitted_output"])
    assert "as strings" in body["fields"][0]["fix"]


@pytest.mark.parametrize("literal", ["18446744073709551616", "-9223372036854775809",
                                     "123456789012345678901234567890", "[1e20, 100000000000000000000]"])
def test_integers_beyond_64_bits_are_refused(api, literal):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal)
    body = assert_error(r, 422, "invalid_request")
    assert "as strings" in body["fields"][0]["fix"]


@pytest.mark.parametrize("literal", ["18446744073709551616", "123456789012345678901234567890"])
def test_integers_beyond_64_bits_name_their_field(api, literal):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal)
    assert_error(r, 422, "invalid_request", ["submitted_output"])


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "-" + "9" * 5_000],
                         ids=["1e400-digits", "-9x5000-digits"])
def test_integers_beyond_the_double_range_get_the_send_strings_fix(api, literal):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal)
    body = assert_error(r, 422, "invalid_request", ["submitted_output"])
    assert "as strings" in body["fields"][0]["fix"]


@pytest.mark.parametrize("literal", ["1e309", "-1e309", "1" + "0" * 5_000, "-" + "9" * 5_000 + ".5",
                                     "1e" + "9" * 5_000, "0.1e-400", "-1e-400", "[0.0, 2.5e-330]",
                                     "1e-" + "9" * 5_000, "0." + "0" * 5_000 + "1"],
                         ids=lambda t: f"{t[:8]}..{len(t)}")
def test_out_of_range_numbers_are_422_fast(api, literal):
    # Too large for a double, or nonzero and too small for one (it would be read as 0).
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal,
                 bound=QUICK)
    assert_error(r, 422, "invalid_request", ["submitted_output"])


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "0x10", "01", "1.", ".5", "+1",
                                     "1e", "--1"])
def test_malformed_numbers_are_422(api, literal):
    r = api.post('{"task_id":"t","expected_schema":{},"submitted_output":%s}' % literal)
    body = assert_error(r, 422, "invalid_request")
    # the problem is found in the value, or just after a valid prefix such as the 0 of 0x10
    assert body["fields"][0]["field"] in ("submitted_output", "body")


@pytest.mark.parametrize("field,template", [
    ("expected_schema", '{"task_id":"t","expected_schema":{"maximum":%s},"submitted_output":1}'),
    ("rules", '{"task_id":"t","expected_schema":{},"submitted_output":{"a":1},"rules":[{"type":"gte","field":"a","value":%s}]}'),
    ("bounds", '{"task_id":"t","expected_schema":{},"submitted_output":{"a":1},"bounds":{"a":{"min":%s}}}'),
])
@pytest.mark.parametrize("literal", ["9007199254740992", "1e309", "1" + "0" * 5_000],
                         ids=["2^53", "1e309", "1e5000-digits"])
def test_edge_numbers_in_other_fields_name_the_field(api, field, template, literal):
    assert_error(api.post(template % literal, bound=QUICK), 422, "invalid_request", [field])


def test_hundred_thousand_digit_fractions_are_fast(api):
    # 1.000…01 is a valid number (it rounds to 1.0): a body over the free limit goes to payment.
    text = '{"task_id":"t","expected_schema":{},"submitted_output":1.%s1}' % ("0" * 100_000)
    r = api.post(text, bound=QUICK)
    assert r.status_code == 402
    # 0.000…01 (1e-100001) is nonzero but reads as 0: refused like 1e400, not silently zeroed.
    text = '{"task_id":"t","expected_schema":{},"submitted_output":0.%s1}' % ("0" * 100_000)
    r = api.post(text, bound=QUICK)
    assert r.status_code == 422 and r.json()["fields"][0]["field"] == "submitted_output"


# ---------------------------------------------------------------------------------------------
# 8. content types and non-object bodies

@pytest.mark.parametrize("ct,status", [
    ("text/plain", 415), ("application/x-www-form-urlencoded", 415),
    ("multipart/form-data; boundary=x", 415), ("text/json", 415), ("*/*", 415), ("", 415),
    ("application/jsonx", 415), ("application/x-ndjson", 415), ("application/json, text/plain", 415),
    (None, 200),                              # no Content-Type: read as JSON (is_json in handler.rs)
    ("application/json", 200), ("APPLICATION/JSON", 200), ("application/json; charset=utf-8", 200),
    ("application/json; charset=latin1", 200),  # RFC 8259 §11: no charset parameter; ignored
    ("application/problem+json", 200), ("application/vnd.api+json; v=1", 200),
])
def test_content_types(api, ct, status):
    r = api.post(doc(), ct=ct)
    assert r.status_code == status
    if status == 415:
        assert_error(r, 415, "unsupported_media_type", ["content-type"])


def test_latin1_declared_body_is_still_read_as_utf8(api):
    text = b'{"task_id":"caf\xe9","expected_schema":{},"submitted_output":1}'
    assert_error(api.post(text, ct="application/json; charset=latin1"), 422, "invalid_request",
                 ["task_id"])


def test_wrong_content_type_wins_over_a_bad_body(api):
    assert_error(api.post(b"{", ct="text/plain"), 415, "unsupported_media_type")


@pytest.mark.parametrize("text", ["[]", '"x"', "null", "42", "true", "[{}]", '""'])
def test_non_object_bodies_are_422(api, text):
    body = assert_error(api.post(text), 422, "invalid_request", ["body"])
    assert "not a JSON object" in body["fields"][0]["problem"]


@pytest.mark.parametrize("text", ["{} x", "{}{}", "   ", "{'task_id':'t'}", '{"a":1,}',
                                  '{"task_id":"t",/*c*/"expected_schema":{}}'])
def test_malformed_json_is_422(api, text):
    assert_error(api.post(text), 422, "invalid_request", ["body"])


def test_every_problem_is_reported_at_once(api):
    text = json.dumps({"task_id": "", "agent_id": 5, "expected_schema": [], "rules": [{"type": "nope"}],
                       "bounds": {"": {}}, "detail": "x", "enforce_rules": "yes", "extra": 1})
    body = assert_error(api.post(text), 422, "invalid_request",
                        ["task_id", "agent_id", "expected_schema", "submitted_output", "enforce_rules",
                         "detail", "rules[0].type", "rules[0].field", "bounds[0] (key)", "body"])
    assert len(body["fields"]) >= 10


# ---------------------------------------------------------------------------------------------
# 9. slow, truncated and silent connections

def test_truncated_bodies_and_aborted_connections_leave_the_server_working(srv):
    body = doc().encode()
    head = raw_post(body)[: -len(body)]
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(head + body[:10])
        s.close()
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(head[:25])
        s.close()
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(head + body[:10])
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()   # RST
    assert_serving(srv)
    r = httpx.post(srv.url + "/verify/schema", content=body, headers={"content-type": "application/json"},
                   timeout=BOUND)
    assert r.status_code == 200


def test_slowloris_body_does_not_block_other_clients(srv):
    body = doc().encode()
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(raw_post(body)[: -len(body)])
    stop = threading.Event()

    def dribble():
        for i in range(len(body) - 1):       # never the last byte
            if stop.wait(1.0):
                return
            s.sendall(body[i:i + 1])

    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    try:
        with httpx.Client(timeout=BOUND) as c:
            for _ in range(4):
                time.sleep(0.5)
                t0 = time.monotonic()
                r = c.post(srv.url + "/verify/schema", content=body, headers={"content-type": "application/json"})
                assert r.status_code == 200 and time.monotonic() - t0 < QUICK
    finally:
        stop.set()
        t.join()
        s.close()


def test_hundreds_of_stalled_connections_do_not_block_a_request(srv):
    body = doc().encode()
    socks = []
    try:
        for i in range(600):
            s = socket.create_connection(("127.0.0.1", srv.port))
            if i % 3 == 0:
                s.sendall(raw_post(body)[:-len(body) + 5])   # headers, part of the body
            elif i % 3 == 1:
                s.sendall(b"POST /verify/schema HTTP/1.1\r\nHost: x\r\n")   # part of the headers
            socks.append(s)                                   # else: nothing at all
        t0 = time.monotonic()
        r = httpx.post(srv.url + "/verify/schema", content=body,
                       headers={"content-type": "application/json"}, timeout=BOUND)
        assert r.status_code == 200 and time.monotonic() - t0 < QUICK
    finally:
        for s in socks:
            s.close()
    assert_serving(srv)


def test_a_connection_that_sends_nothing_gets_nothing(srv):
    s = socket.create_connection(("127.0.0.1", srv.port))
    try:
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(1)
        assert_serving(srv)
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# 10. many headers, huge headers, huge URLs

def _get_with(srv, extra_headers: bytes = b"", path: bytes = b"/health") -> "object":
    data = b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra_headers + b"\r\n"
    return raw_http(srv.port, data, timeout=BOUND, read_all=True)


@pytest.mark.parametrize("count", [200, 1_000, 10_000])
def test_many_headers_are_refused_cleanly(srv, count):
    r = _get_with(srv, b"".join(b"X-H%d: v\r\n" % i for i in range(count)))
    assert not r.timed_out
    assert r.status in (400, 431) or (r.status is None and (r.reset or r.raw == b""))
    assert_serving(srv)


@pytest.mark.parametrize("size", [64 * 1024, 512 * 1024, 2 * 1024 * 1024])
def test_one_huge_header_is_refused_or_served_never_5xx(srv, size):
    r = _get_with(srv, b"X-Big: " + b"a" * size + b"\r\n")
    assert not r.timed_out
    assert r.status in (200, 400, 431) or r.status is None
    if size > 100 * 1024:
        assert r.status in (400, 431) or r.status is None
    assert_serving(srv)


@pytest.mark.parametrize("size", [64 * 1024, 1024 * 1024])
def test_huge_urls_are_refused_cleanly(srv, size):
    for path in [b"/verify/schema?" + b"a" * size, b"/" + b"a" * size]:
        r = _get_with(srv, path=path)
        assert not r.timed_out
        assert r.status in (400, 414, 431) or r.status is None
    assert_serving(srv)


@pytest.mark.parametrize("header", [b"X-A: a\x00b\r\n", b"X-A: a\rb\r\n", b"Bad Header: x\r\n",
                                    b": novalue\r\n", b"X-A\r\n"])
def test_malformed_headers_are_400(srv, header):
    r = _get_with(srv, header)
    assert r.status == 400
    assert_serving(srv)


def test_non_ascii_header_values_and_paths_do_not_break_anything(srv):
    assert _get_with(srv, b"X-A: \xff\xfe\x80\r\n").status == 200
    r = _get_with(srv, path="/é😀".encode())
    assert_error(r, 404, "not_found")


# ---------------------------------------------------------------------------------------------
# 11. methods and routes

@pytest.mark.parametrize("path", ["/verify/schema", "/verify/deliverable"])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "BREW"])
def test_wrong_methods_are_405_in_the_error_shape(api, path, method):
    r = api.request(method, path, body=doc())
    assert_error(r, 405, "method_not_allowed")
    assert "POST" in r.headers.get("allow", "")


def test_post_to_health_is_405_in_the_error_shape(api):
    assert_error(api.request("POST", "/health", body=b"{}"), 405, "method_not_allowed")


@pytest.mark.parametrize("path", ["/verify/schema", "/verify/deliverable"])
def test_options_is_a_cors_preflight_or_a_405(api, path):
    r = api.request("OPTIONS", path, headers={"origin": "https://buyer.example",
                                             "access-control-request-method": "POST",
                                             "access-control-request-headers": "content-type"})
    assert r.status_code in (200, 204)
    assert r.headers.get("access-control-allow-origin") in ("*", "https://buyer.example")
    assert "POST" in r.headers.get("access-control-allow-methods", "")
    r = api.request("OPTIONS", path)          # not a preflight: an answer without a body, or a 405
    if r.status_code == 405:
        assert_error(r, 405, "method_not_allowed")
    else:
        assert r.status_code in (200, 204) and r.content == b""


def test_head(api):
    r = api.request("HEAD", "/health")
    assert r.status_code == 200 and r.content == b""
    r = api.request("HEAD", "/verify/schema")
    assert r.status_code == 405 and r.content == b""


@pytest.mark.parametrize("method,path", [
    ("GET", "/nope"), ("POST", "/nope"), ("POST", "/verify/schema/"), ("POST", "//verify/schema"),
    ("POST", "/VERIFY/SCHEMA"), ("POST", "/verify/schema%2F"), ("POST", "/verify"),
    ("GET", "/verify/schema/x"), ("GET", "/health/x"),
])
def test_unknown_routes_are_404_in_the_error_shape(api, method, path):
    r = api.request(method, path, body=b"{}" if method == "POST" else None)
    assert_error(r, 404, "not_found")


# ---------------------------------------------------------------------------------------------
# 12. errors never echo the caller's input

M = MARKER
ECHO_CASES = {
    "task_id too long": request_body(task_id=M * 10),
    "task_id wrong type": request_body(task_id={M: M}),
    "agent_id too long": request_body(agent_id=M * 10),
    "agent_id wrong type": request_body(agent_id=[M]),
    "unknown top-level field": request_body(**{M: M}),
    "rule type": request_body(rules=[{"type": M, "field": "a"}]),
    "rule unknown key": request_body(rules=[{"type": "unique", "field": "a", M: 1}]),
    "rule path brackets": request_body(rules=[{"type": "unique", "field": M + "[0]"}]),
    "rule path empty segment": request_body(rules=[{"type": "unique", "field": M + ".." + M}]),
    "rule path wrong type": request_body(rules=[{"type": "unique", "field": [M]}]),
    "rule values wrong type": request_body(rules=[{"type": "exists_in", "field": "a", "values": M}]),
    "rule equals wrong type": request_body(rules=[{"type": "sum_equals", "field": "a", "equals": M}]),
    "rule operand not applicable": request_body(rules=[{"type": "unique", "field": "a", "in_field": M}]),
    "rule tolerance": request_body(rules=[{"type": "sum_equals", "field": "a", "equals": 1, "tolerance": M}]),
    "rule not an object": request_body(rules=[M]),
    "rules not an array": request_body(rules=M),
    "bound key bad path": request_body(bounds={M + "[x]": {"min": 0}}),
    "bound key empty segment": request_body(bounds={"." + M: {"min": 0}}),
    "bound unknown key": request_body(bounds={"a": {"min": 0, M: 1}}),
    "bound min wrong type": request_body(bounds={"a": {"min": M}}),
    "bound spec wrong type": request_body(bounds={M: M}),
    "bound min > max": request_body(bounds={M: {"min": 2, "max": 1}}),
    "bounds wrong type": request_body(bounds=M),
    "detail": request_body(detail=M),
    "strict_content_check": request_body(strict_content_check=M),
    "enforce_rules": request_body(enforce_rules=[M]),
    "schema type": request_body(expected_schema={"type": M}),
    "schema minimum": request_body(expected_schema={"minimum": M}),
    "schema required": request_body(expected_schema={"required": M}),
    "schema property value": request_body(expected_schema={"properties": {M: M}}),
    "schema nested keyword": request_body(expected_schema={"properties": {M: {"type": M}}}),
    "schema $defs": request_body(expected_schema={"$defs": {M: {"minLength": -1}}}),
    "schema remote ref": request_body(expected_schema={"$ref": f"http://{M}.invalid/{M}.json"}),
    "schema missing local ref": request_body(expected_schema={"$ref": f"#/$defs/{M}"}),
    "schema missing anchor": request_body(expected_schema={"$ref": f"#{M}"}),
    "schema $schema": request_body(expected_schema={"$schema": f"http://{M}/schema"}),
    "schema lookbehind": request_body(expected_schema={"pattern": f"(?<={M})x"}),
    "schema invalid pattern": request_body(expected_schema={"pattern": f"[{M}"}),
    "schema patternProperties": request_body(expected_schema={"patternProperties": {f"(?={M})": {}}}),
    "schema array": request_body(expected_schema=[M]),
    "schema string": request_body(expected_schema=M),
    "schema bad $id": request_body(expected_schema={"$id": f"{M} not a uri", "$ref": "#"}),
    "schema bad $anchor": request_body(expected_schema={"$anchor": f"{M} bad"}),
    "schema format object": request_body(expected_schema={"format": {M: 1}}),
    "schema too complex": None,  # filled below
    "schema dup key": f'{{"task_id":"t","expected_schema":{{"{M}":1,"{M}":2}},"submitted_output":1}}',
    "output dup key": f'{{"task_id":"t","expected_schema":{{}},"submitted_output":{{"{M}":1,"{M}":2}}}}',
    "output big integer": f'{{"task_id":"t","expected_schema":{{}},"submitted_output":{{"{M}":123456789012345678901234567890}}}}',
    "output overflow": f'{{"task_id":"t","expected_schema":{{}},"submitted_output":{{"{M}":1e999}}}}',
    "syntax error after marker": f'{{"task_id":"{M}","expected_schema":{{}},"submitted_output":{{"{M}" 1}}}}',
    "unterminated": f'{{"task_id":"{M}',
    "lone surrogate": f'{{"task_id":"{M}\\ud800","expected_schema":{{}},"submitted_output":1}}',
    "invalid utf-8": (f'{{"task_id":"{M}","expected_schema":{{}},"submitted_output":"{M}').encode() + b'\xff"}',
    "not an object": json.dumps([M]),
    "missing fields": json.dumps({"task_id": M}),
    "too deep": '{"task_id":"%s","expected_schema":{},"submitted_output":%s}' % (M, "[" * 200 + json.dumps(M) + "]" * 200),
}
_defs = {"n0": {"type": "integer", "title": M}}
for _i in range(1, 31):
    _ref = {"$ref": f"#/$defs/n{_i - 1}"}
    _defs[f"n{_i}"] = {"properties": {M: _ref, "b": _ref}}
ECHO_CASES["schema too complex"] = request_body(task_id=M, expected_schema={"$defs": _defs, "$ref": "#/$defs/n30"})


def assert_no_marker(r):
    assert MARKER not in r.text, r.text[:500]
    for k, v in r.headers.items():
        assert MARKER not in k and MARKER not in v


@pytest.mark.parametrize("name", list(ECHO_CASES))
def test_invalid_input_is_never_echoed(api, name):
    r = api.post(ECHO_CASES[name])
    assert_error(r, 422, "invalid_request")
    assert_no_marker(r)


@pytest.mark.parametrize("case", ["content-type", "headers", "path", "query", "payment-signature",
                                  "x-payment", "over-free-limit", "over-hard-limit", "405", "404"])
def test_marker_in_headers_paths_and_oversized_bodies_is_never_echoed(api, case):
    body = request_body(task_id=M)
    if case == "content-type":
        r = api.post(body, ct=f"text/{M}")
        assert r.status_code == 415
    elif case == "headers":
        r = api.post(body, ct="text/plain", headers={"x-m": M, "accept": M, "user-agent": M})
        assert r.status_code == 415
    elif case == "path":
        r = api.post(body, path=f"/{M}")
        assert r.status_code == 404
    elif case == "query":
        r = api.post(body, path=f"/verify/schema?{M}={M}", ct="text/plain")
        assert r.status_code == 415
    elif case in ("payment-signature", "x-payment"):
        r = api.post(body, headers={case: base64.b64encode(M.encode()).decode() + M})
        assert r.status_code == 402
    elif case == "over-free-limit":
        r = api.post(request_body(task_id=M, agent_id=M, submitted_output={M: "x" * FREE_LIMIT}))
        assert r.status_code == 402
    elif case == "over-hard-limit":
        r = api.post(request_body(task_id=M, submitted_output=M * (HARD_LIMIT // len(M))))
        assert r.status_code == 413
    elif case == "405":
        r = api.request("GET", f"/verify/schema?{M}", headers={"x-m": M})
        assert r.status_code == 405
    else:
        r = api.request("DELETE", f"/health/{M}")
        assert r.status_code == 404
    assert_no_marker(r)


# ---------------------------------------------------------------------------------------------
# 13. heavy but legitimate work, and work that is not bounded yet

def test_many_failing_items_within_the_free_limit(api):
    text = ('{"task_id":"t","expected_schema":{"items":{"type":"string"}},"submitted_output":['
            + ",".join(["1"] * 2_000) + "]}")
    r = api.post(text)
    assert r.status_code == 200
    body = r.json()
    assert body["errors_total"] == 2_000 and len(body["errors"]) == 50
    assert body["errors_omitted"] == 2_000 - 50


def test_reporting_more_errors_than_the_free_ceiling_allows_goes_to_payment(api):
    # 30,000 errors to collect and report: past the free ceiling (schema errors are priced as
    # they are collected, so this is found after a bounded amount of work), payable
    text = ('{"task_id":"t","expected_schema":{"items":{"type":"string"}},"submitted_output":['
            + ",".join(["1"] * 30_000) + "]}")
    r = api.post(text, bound=QUICK)
    assert r.status_code == 402
    reason = r.json()["payment_reason"]
    assert reason["code"] == "over_free_cost" and reason["part"] == "schema_errors"


def test_many_failing_items_up_to_the_hard_limit(api):
    text = ('{"task_id":"t","expected_schema":{"items":{"type":"string"}},"detail":"compact",'
            '"submitted_output":[' + ",".join(["1"] * 120_000) + "]}")
    assert nbytes(text) < HARD_LIMIT
    assert api.post(text).status_code == 402


def test_rules_times_items_within_the_free_limit(api):
    d = request_body(submitted_output={"a": list(range(6_000))},
                     rules=[{"type": "unique", "field": "a[]"}] * 5, detail="compact")
    r = api.post(d, bound=QUICK)
    assert r.status_code == 200 and r.json()["result"] == "pass"
    # 100 rules over the same items: past the free ceiling, within the paid one
    d["rules"] = [{"type": "unique", "field": "a[]"}] * 100
    r = api.post(d, bound=QUICK)
    assert r.status_code == 402 and r.json()["payment_reason"]["part"] == "rules"
    # 800: past any ceiling, a 422 naming the rules and the limit
    d["rules"] = [{"type": "unique", "field": "a[]"}] * 800
    assert nbytes(json.dumps(d)) < FREE_LIMIT
    problem = assert_error(api.post(d, bound=QUICK), 422, "invalid_request", ["rules"])
    assert "1000 ms" in problem["fields"][0]["problem"]


def test_big_enum_and_unique_items(api):
    d = request_body(expected_schema={"uniqueItems": True, "items": {"enum": list(range(5_000))}},
                     submitted_output=list(range(5_000)), detail="compact")
    assert api.post(d).status_code == 200


def test_error_amplification_is_bounded_in_memory(hostile):
    s = hostile()
    text = ('{"task_id":"t","detail":"compact","expected_schema":{"items":{"allOf":['
            + ",".join(['{"type":"string"}'] * 100) + ']}},"submitted_output":['
            + ",".join(["1"] * 10_000) + "]}")
    assert nbytes(text) < FREE_LIMIT
    status = None
    with RssWatch(s, kill_over_mb=400) as watch:
        t0 = time.monotonic()
        try:
            status = httpx.post(s.url + "/verify/schema", content=text,
                                headers={"content-type": "application/json"}, timeout=BOUND).status_code
        except httpx.HTTPError:
            pass
        elapsed = time.monotonic() - t0
    # A bounded answer either way: the verdict, a price (past the free ceiling), or a 422.
    assert status in (200, 402, 422), "no answer (timeout, or the server was killed for its memory)"
    assert elapsed < BOUND
    assert watch.peak_mb < PEAK_RSS_MB
    assert_serving(s)


def test_cpu_heavy_requests_do_not_stall_other_clients(hostile):
    s = hostile()
    # inside the free size limit: 1,000 unique rules over 15,000 items (62 KB), ~1.5 s of CPU
    # each if they ran (they are priced and refused)
    heavy = json.dumps(request_body(
        submitted_output={"a": [0] * 15_000}, detail="compact",
        rules=[{"type": "unique", "field": "a[]"}] * 1_000), separators=(",", ":"))
    assert nbytes(heavy) < FREE_LIMIT

    def send():
        try:
            httpx.post(s.url + "/verify/schema", content=heavy,
                       headers={"content-type": "application/json"}, timeout=15)
        except httpx.HTTPError:
            pass

    threads = [threading.Thread(target=send, daemon=True) for _ in range(3 * (os.cpu_count() or 2))]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            ok = httpx.get(s.url + "/health", timeout=3).status_code == 200
        except httpx.HTTPError:
            ok = False
        elapsed = time.monotonic() - t0
        assert ok and elapsed < 0.5, f"/health took {elapsed:.2f} s behind the heavy requests"
    finally:
        s.kill()
        for t in threads:
            t.join(timeout=5)


def test_unpaid_oversized_body_gets_its_402_before_the_checks_run(hostile):
    # 2,000 rules x 20,000 items: ~7.8 s of checks, which an unpaid 402 must not run
    s = hostile()
    d = request_body(submitted_output={"a": list(range(20_000))}, detail="compact",
                     rules=[{"type": "unique", "field": "a[]"}] * 2_000)
    text = json.dumps(d)
    assert FREE_LIMIT < nbytes(text) < HARD_LIMIT
    t0 = time.monotonic()
    try:
        status = httpx.post(s.url + "/verify/schema", content=text,
                            headers={"content-type": "application/json"}, timeout=BOUND).status_code
    except httpx.HTTPError:
        status = None
    elapsed = time.monotonic() - t0
    assert status == 402 and elapsed < QUICK, f"status {status} after {elapsed:.2f} s"


# ---------------------------------------------------------------------------------------------
# 13. denial of wallet: the reproducers of issue 15. Every request is priced before it runs; a
# request without payment may cost 25 ms of CPU and 16 MiB, a paid one 1 s and 128 MiB.

def _wordy_body() -> dict:
    """A 62 KB request: a Unicode word-boundary pattern applied 45 × 45 times (through allOf and
    $ref) to a string of 30,000 é — about 8.8 s of CPU if it ran."""
    d1 = [{"$ref": "#/$defs/d0"}] * 45
    d2 = [{"$ref": "#/$defs/d1"}] * 45
    schema = {"$defs": {"d0": {"pattern": "\\b\\w+\\b$"}, "d1": {"allOf": d1}, "d2": {"allOf": d2}},
              "$ref": "#/$defs/d2"}
    return request_body(expected_schema=schema, submitted_output="é" * 30_000, detail="compact")


def _mcp_call(url: str, arguments: dict, pad: int = 0) -> tuple[float, dict]:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "verify_schema", "arguments": arguments}},
                      ensure_ascii=False)
    t0 = time.monotonic()
    r = httpx.post(url + "/mcp", content=(body + " " * pad).encode(), timeout=BOUND, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25"})
    elapsed = time.monotonic() - t0
    assert r.status_code == 200, r.text[:300]
    return elapsed, r.json()["result"]


def _median_post(url: str, body: dict, runs: int = 3) -> tuple[float, httpx.Response]:
    text = json.dumps(body, ensure_ascii=False).encode()
    times, last = [], None
    for _ in range(runs):
        t0 = time.monotonic()
        last = httpx.post(url + "/verify/schema", content=text, timeout=BOUND,
                          headers={"content-type": "application/json"})
        times.append(time.monotonic() - t0)
    return sorted(times)[runs // 2], last


def test_a_spent_allowance_gets_its_402_before_any_work(hostile):
    s = hostile(VERIFIER_FREE_ALLOWANCE_PER_DAY="0")
    body = _wordy_body()
    assert 60_000 < nbytes(json.dumps(body, ensure_ascii=False)) < FREE_LIMIT
    elapsed, r = _median_post(s.url, body)
    assert r.status_code == 402 and elapsed < 0.1, f"{r.status_code} after {elapsed * 1000:.0f} ms"
    assert r.json()["payment_reason"]["code"] == "free_trial_exhausted"
    # The same over MCP: the payment-required tool result, as quickly.
    times = []
    for _ in range(3):
        elapsed, result = _mcp_call(s.url, body)
        times.append(elapsed)
        assert result["isError"] is True and result["structuredContent"]["x402Version"] == 2
        assert result["_meta"]["free_trial"]["code"] == "free_trial_exhausted"
    assert sorted(times)[1] < 0.1, times


def test_a_request_no_payment_could_buy_is_refused_inside_the_allowance(hostile):
    s = hostile()
    body = _wordy_body()
    elapsed, r = _median_post(s.url, body)
    assert elapsed < 0.25, f"{elapsed * 1000:.0f} ms"
    problem = assert_error(r, 422, "invalid_request", ["expected_schema"])["fields"][0]
    assert "1000 ms" in problem["problem"] and "pattern" in problem["problem"]
    assert MARKER not in r.text and "é" not in r.text
    times = []
    for _ in range(3):
        elapsed, result = _mcp_call(s.url, body)
        times.append(elapsed)
        assert result["isError"] is True
        assert result["structuredContent"]["code"] == "invalid_request"
    assert sorted(times)[1] < 0.25, times


def test_heavy_pattern_schemas_do_not_grow_memory(hostile):
    s = hostile()
    before = s.status_kb("VmRSS")
    for n in range(6):
        props = {f"p{i}": {"type": "string", "pattern": f"[a-z]{{20000}}{n}x{i}"} for i in range(100)}
        r = httpx.post(s.url + "/verify/schema", json=request_body(
            expected_schema={"type": "object", "properties": props}, submitted_output={"p1": "a"}),
            timeout=BOUND)
        # Compiling them would take ~250 MB: past the free ceiling, priced, never compiled.
        assert r.status_code == 402, r.text[:300]
        assert r.json()["payment_reason"]["part"] == "patterns"
    grown_mb = (s.status_kb("VmRSS") - before) / 1024
    assert grown_mb < 64, f"RSS grew by {grown_mb:.0f} MiB"
    assert s.status_kb("VmHWM") / 1024 < PEAK_RSS_MB


def test_health_stays_quick_through_a_flood_of_costly_refusals(hostile):
    s = hostile()
    out = 1
    for _ in range(120):
        out = [out]
    branch = {"type": "array", "items": {"$ref": "#/$defs/n"}}
    text = json.dumps({"task_id": "t", "expected_schema": {
        "$defs": {"n": {"anyOf": [branch, branch, branch, {"type": "integer"}]}}, "$ref": "#/$defs/n"},
        "submitted_output": out}, separators=(",", ":"))
    assert nbytes(text) < 1000
    r = httpx.post(s.url + "/verify/schema", content=text, timeout=BOUND,
                   headers={"content-type": "application/json"})
    assert_error(r, 422, "invalid_request", ["expected_schema"])
    # The flood runs in its own process: twelve flooding threads in this one would make the
    # prober below wait for the GIL, and the test would time Python instead of the server.
    flooder = subprocess.Popen([sys.executable, "-c", FLOOD_SCRIPT, s.url + "/verify/schema", text],
                               stdout=subprocess.PIPE, text=True)
    took = []
    try:
        assert flooder.stdout.readline().strip() == "ready"   # the flood reaches the server
        deadline = time.monotonic() + 3
        with httpx.Client(timeout=BOUND) as c:
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                assert c.get(s.url + "/health").status_code == 200
                took.append(time.monotonic() - t0)
                time.sleep(0.02)
    finally:
        flooder.terminate()
        try:
            sent, _ = flooder.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            flooder.kill()
            sent, _ = flooder.communicate()
    assert int(sent.strip() or 0) > 100, "the flood did not run"
    # Starvation (costly work holding every thread) would show as seconds on every probe; one
    # probe can still lose a scheduler slice on a busy two-CPU machine, so the bound is on the
    # ninetieth percentile, and no probe may come near the per-request bound.
    took.sort()
    p90 = took[int(len(took) * 0.9)]
    assert p90 < 0.1, f"/health p90 {p90 * 1000:.0f} ms during the flood"
    assert took[-1] < BOUND / 2, f"/health took {took[-1] * 1000:.0f} ms during the flood"


def test_mcp_measures_the_free_size_limit_on_the_bytes_received(hostile):
    s = hostile()
    small = request_body()
    # Free at its own size …
    _, result = _mcp_call(s.url, small)
    assert result.get("isError") is not True and result["structuredContent"]["result"] == "pass"
    # … but the same arguments in a body padded past the free limit are priced by what arrived.
    _, result = _mcp_call(s.url, small, pad=FREE_LIMIT)
    assert result["isError"] is True and result["structuredContent"]["x402Version"] == 2


# ---------------------------------------------------------------------------------------------
# 14a. the cost bound, complete (issue 35): contentMediaType/contentEncoding, which drafts 6 and 7
# assert by parsing the string at every application, were not priced: a 60 KB request answered
# free with 860-900 ms of server CPU. Each case below is sent three times to a fresh server and
# its server CPU per request (every thread's, from schedstat) must stay within the unpaid
# ceiling of 25 ms, with the answer a 402 `over_free_cost` (or 422 when no payment could buy it).

UNPAID_CPU_MS = 25
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _fan_out(leaf: dict, width: int = 40) -> dict:
    """`leaf` applied width × width times through allOf and $ref (under the 'too complex' guard)."""
    return {"$schema": DRAFT7, "definitions": {
        "d0": leaf, "d1": {"allOf": [{"$ref": "#/definitions/d0"}] * width},
        "d2": {"allOf": [{"$ref": "#/definitions/d1"}] * width}}, "$ref": "#/definitions/d2"}


def _json_array_text(size: int, unit: str = "0") -> str:
    return "[" + ",".join([unit] * (size // (len(unit) + 1))) + "]"


CONTENT_CASES = {
    "60 KB array": (_fan_out({"contentMediaType": "application/json"}), _json_array_text(60_000)),
    "16 KB array": (_fan_out({"contentMediaType": "application/json"}), _json_array_text(16_000)),
    "objects": (_fan_out({"contentMediaType": "application/json"}),
                _json_array_text(40_000, '{"a":{"b":[1,2]}}')),
    "base64 of JSON": (_fan_out({"contentEncoding": "base64", "contentMediaType": "application/json"}),
                       base64.b64encode(_json_array_text(40_000).encode()).decode()),
}


def _server_cpu_ms(server: LimitedServer, send) -> list[float]:
    """The server CPU of each of three sends, in ms."""
    spent = []
    for _ in range(3):
        before = server.cpu_ns()
        send()
        spent.append((server.cpu_ns() - before) / 1e6)
    return spent


@pytest.mark.parametrize("case", list(CONTENT_CASES))
def test_content_keywords_are_priced_over_rest(hostile, case):
    schema, text = CONTENT_CASES[case]
    s = hostile()
    body = json.dumps(request_body(expected_schema=schema, submitted_output=text), separators=(",", ":"))
    assert nbytes(body) < FREE_LIMIT
    answers = []

    def send():
        answers.append(httpx.post(s.url + "/verify/schema", content=body, timeout=BOUND,
                                  headers={"content-type": "application/json"}))
    spent = _server_cpu_ms(s, send)
    for r in answers:
        assert r.status_code in (402, 422), f"{r.status_code}: {r.text[:200]}"
        if r.status_code == 402:
            reason = r.json()["payment_reason"]
            assert reason["code"] == "over_free_cost" and reason["part"] == "content_keywords"
        else:
            assert_error(r, 422, "invalid_request", ["submitted_output"])
    print(f"{case}: {answers[-1].status_code}, server CPU per request {spent} ms")
    assert max(spent) <= UNPAID_CPU_MS, f"server CPU per request {spent} ms"


def test_content_keywords_are_priced_over_mcp(hostile):
    s = hostile()
    schema = _fan_out({"contentMediaType": "application/json"})
    arguments = request_body(expected_schema=schema, submitted_output=_json_array_text(30_000))
    results = []
    spent = _server_cpu_ms(s, lambda: results.append(_mcp_call(s.url, arguments)[1]))
    for result in results:
        assert result["isError"] is True
        assert result["structuredContent"].get("x402Version") == 2 \
            or result["structuredContent"].get("code") == "invalid_request", result
    print(f"MCP 30 KB: server CPU per request {spent} ms")
    assert max(spent) <= UNPAID_CPU_MS, f"server CPU per request {spent} ms"


def test_the_same_keywords_in_draft_2020_12_are_annotations_and_served_free(api):
    # From 2019-09 on they only annotate: nothing is parsed, and the request is cheap.
    schema = {"items": {"contentMediaType": "application/json", "contentEncoding": "base64"}}
    r = api.post(request_body(expected_schema=schema, submitted_output=["{not json"] * 50))
    assert r.status_code == 200 and r.json()["result"] == "pass"


# A request whose estimate is wrong by 100× (the operator setting VERIFIER_COST_SCALE makes
# every CPU estimate 1/2000 of the model's, and the model's estimate is about 2-5× this request's
# real cost) runs on the request threads the first time; the server measures what it really took,
# and the client and the schema go to the bounded pool. Another client's /health and small
# verifications stay quick while the first client floods it over four connections.
FLOOD4_SCRIPT = """
import sys, threading, time, httpx
url, body, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
stop, codes = time.monotonic() + seconds, {}
def go():
    with httpx.Client(timeout=10) as c:
        while time.monotonic() < stop:
            try:
                code = c.post(url, content=body, headers={"content-type": "application/json"}).status_code
            except httpx.HTTPError:
                code = 0
            codes[code] = codes.get(code, 0) + 1
threads = [threading.Thread(target=go) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(codes, flush=True)
"""


def test_a_mispriced_request_cannot_hold_the_request_threads(hostile):
    s = hostile(log=True, VERIFIER_COST_SCALE="0.0005", RUST_LOG="warn")
    mispriced = json.dumps(request_body(
        agent_id="test-flood", expected_schema=_fan_out({"contentMediaType": "application/json"}, 24),
        submitted_output="[" + ("[" * 100 + "]" * 100 + ",") * 59 + "0]"), separators=(",", ":"))
    assert nbytes(mispriced) < 16 * 1024   # small enough for the request threads
    small = json.dumps(request_body(agent_id="test-probe"))
    flooder = subprocess.Popen([sys.executable, "-c", FLOOD4_SCRIPT, s.url + "/verify/schema",
                                mispriced, "4"], stdout=subprocess.PIPE, text=True)
    health, verify = [], []
    try:
        time.sleep(0.3)
        # Another client: its own loopback address.
        other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=BOUND)
        with other:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                assert other.get(s.url + "/health").status_code == 200
                health.append(time.monotonic() - t0)
                t0 = time.monotonic()
                r = other.post(s.url + "/verify/schema", content=small,
                               headers={"content-type": "application/json"})
                verify.append(time.monotonic() - t0)
                assert r.status_code == 200 and r.json()["result"] == "pass"
                time.sleep(0.02)
    finally:
        codes, _ = flooder.communicate(timeout=30)
    print(f"flood answers: {codes.strip()}")
    # The first mispriced request ran on a request thread and was caught: its measured CPU and
    # estimate are in the log (amounts only).
    log = re.sub(r"\x1b\[[0-9;]*m", "", s.log())   # without terminal colours, if any
    overrun = re.search(r"estimate_us\W*(\d+).*?measured_us\W*(\d+)", log)
    assert overrun, "no overrun was logged"
    estimate_us, measured_us = int(overrun.group(1)), int(overrun.group(2))
    print(f"mispriced by {measured_us / max(estimate_us, 1):.0f}x ({measured_us} µs of CPU against an estimate of {estimate_us} µs)")
    assert measured_us >= 50 * estimate_us
    for name, took in (("/health", health), ("a small verification", verify)):
        took.sort()
        p90 = took[int(len(took) * 0.9)]
        print(f"{name} from another client during the flood: p50 {took[len(took) // 2] * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, n={len(took)}")
        assert p90 < 0.1, f"{name} p90 {p90 * 1000:.0f} ms during the flood"
    assert "test-flood" not in s.log() and "[[[" not in s.log()


# The three small ones of issue 35.

@pytest.mark.parametrize("body,code", [
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}', -32600),
    ('{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema",'
     '"arguments":{"task_id":"a","task_id":"b","expected_schema":{},"submitted_output":{}}}}', -32600),
    ('{"jsonrpc":"2.0","id":1,"method":"ping"', -32700),
])
def test_mcp_answers_malformed_messages_with_json_rpc_errors(api, body, code):
    r = api.request("POST", "/mcp", body=body, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"})
    assert r.status_code == 400, r.text[:200]
    assert r.json()["error"]["code"] == code
    assert "task_id" not in r.text


def test_caller_chosen_methods_never_reach_the_log(hostile):
    s = hostile(log=True, RUST_LOG="info")
    token = "X" + MARKER * 100
    raw = raw_http(s.port, f"{token} /health HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert raw.status is not None and raw.status < 500
    assert_serving(s)
    log = s.log()
    assert MARKER not in log and "method" in log


def test_an_impossible_chunk_size_is_413_at_once(srv):
    for size in ("ffffffffffffffff", "fffffffffffffffff", "40001"):
        raw = raw_http(srv.port, b"POST /verify/schema HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + size.encode() + b"\r\n", timeout=5)
        assert raw.status == 413 and raw.elapsed < QUICK, (size, raw.status, raw.elapsed)
        assert raw.headers.get("connection") == "close"
    # The same size spread over chunks that each fit.
    raw = raw_http(srv.port, b"POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n20000\r\n" + b" " * 0x20000
                   + b"\r\n20001\r\n", timeout=5)
    assert raw.status == 413 and raw.elapsed < QUICK
    # Over MCP too.
    raw = raw_http(srv.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\nffffffff\r\n", timeout=5)
    assert raw.status == 413 and raw.elapsed < QUICK


# ---------------------------------------------------------------------------------------------
# 14. after everything: bounded memory, still alive (keep this last in the file)

def test_zz_the_shared_server_stayed_small_and_alive(srv, api):
    assert srv.alive()
    hwm_mb = srv.status_kb("VmHWM") / 1024
    rss_mb = srv.status_kb("VmRSS") / 1024
    assert 0 < hwm_mb < PEAK_RSS_MB, f"peak RSS {hwm_mb:.0f} MB"
    assert rss_mb < PEAK_RSS_MB
    r = api.post(request_body())
    assert r.status_code == 200 and r.json()["result"] == "pass"
    assert_serving(srv)
