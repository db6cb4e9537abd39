#!/usr/bin/env python3
"""Seed the fuzz corpora from the repository's own data (run by scripts/fuzz.sh).

Writes fuzz/corpus/parse_and_verify/ (verification request bodies) and fuzz/corpus/http/
(raw HTTP/1.1 connections) from:
  - shared/tests/data/hosted-receipts.json        the hosted invoice examples
  - shared/engine/data/request-hash-vectors.json          the request-hash vectors
  - events/*.json                                  the API Gateway events (method, path,
                                                   headers, body) of every route
  - shared/tests/data/json-schema-test-suite/     schemas and instances as requests
  - shared/tests/data/jcs/testdata/input/         RFC 8785 inputs as submitted outputs
  - fuzz/seeds/*.json                              hand-written bodies (rules, bounds)
plus GETs of every route, a CORS preflight, and pipelined, chunked and 100-continue
connections. Existing corpus files are kept (libFuzzer adds what it finds); names are content
hashes, so reseeding is idempotent.
"""
import base64
import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
HOST = "127.0.0.1:8080"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def http_request(method, path, body=b"", headers=None, close=False):
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    for k, v in (headers or {}).items():
        if k.lower() in ("host", "content-length"):
            continue
        lines.append(f"{k}: {v}")
    if body or method in ("POST", "PUT", "DELETE"):
        lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(method, path, body, sizes=(7, 31, 1)):
    if isinstance(body, str):
        body = body.encode()
    out = (
        f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
    ).encode()
    at, i = 0, 0
    while at < len(body):
        n = sizes[i % len(sizes)]
        out += f"{n:x}\r\n".encode() + body[at : at + n] + b"\r\n"
        at += n
        i += 1
    return out + b"0\r\n\r\n"


def main():
    bodies = []
    hosted = json.loads((ROOT / "shared/tests/data/hosted-receipts.json").read_text())
    bodies += [r["request_body_json"] for r in hosted["receipts"]]
    vectors = json.loads((ROOT / "shared/engine/data/request-hash-vectors.json").read_text())
    bodies += [v["request_body_json"] for v in vectors["vectors"]]
    bodies += [p.read_text() for p in sorted((ROOT / "fuzz/seeds").glob("*.json"))]

    # JSON-Schema-Test-Suite: the first cases of each file, with a valid and an invalid instance.
    suite = ROOT / "shared/tests/data/json-schema-test-suite/tests"
    schema_cases = 0
    for f in sorted(suite.glob("*/*.json")):
        try:
            cases = json.loads(f.read_text())
        except ValueError:
            continue
        for case in cases[:3]:
            for test in case.get("tests", [])[:2]:
                bodies.append(json.dumps({
                    "task_id": f"suite-{f.stem}"[:64],
                    "expected_schema": case["schema"],
                    "submitted_output": test["data"],
                    "strict_content_check": True,
                }))
                schema_cases += 1

    # RFC 8785 inputs: numbers, unicode and structures as submitted outputs.
    for f in sorted((ROOT / "shared/tests/data/jcs/testdata/input").glob("*.json")):
        try:
            value = json.loads(f.read_text())
        except ValueError:
            continue
        bodies.append(json.dumps({
            "task_id": f"jcs-{f.stem}",
            "agent_id": "test-jcs",
            "expected_schema": {},
            "submitted_output": value,
            "detail": "compact",
        }))

    for b in bodies:
        write("parse_and_verify", b)

    # HTTP: every body on both verify routes; the hosted example pipelined after a GET.
    for b in bodies[:40]:
        write("http", http_request("POST", "/verify/schema", b, {"Content-Type": "application/json"}))
    for b in bodies[:5]:
        write("http", http_request("POST", "/verify/deliverable", b, {"Content-Type": "application/json"}))
        write("http", chunked("POST", "/verify/schema", b))
    first = bodies[0]
    write("http", http_request("GET", "/health") + http_request(
        "POST", "/verify/schema", first, {"Content-Type": "application/json"}) + http_request(
        "HEAD", "/openapi.json") + http_request("GET", "/score/test-agent?x=1", close=True))

    # The API Gateway events: method, path, query, headers and body of every route.
    events = 0
    for f in sorted((ROOT / "events").glob("*.json")):
        e = json.loads(f.read_text())
        ctx = e.get("requestContext", {}).get("http") if isinstance(e, dict) else None
        if not ctx:
            continue
        body = e.get("body") or ""
        body = base64.b64decode(body) if e.get("isBase64Encoded") else body.encode()
        path = e.get("rawPath", ctx.get("path", "/"))
        if e.get("rawQueryString"):
            path += "?" + e["rawQueryString"]
        headers = {k: v for k, v in e.get("headers", {}).items() if not k.startswith("x-")}
        write("http", http_request(ctx["method"], path, body, headers))
        events += 1
        if path.startswith("/verify/") and body:
            write("parse_and_verify", body)

    for path in ["/", "/health", "/docs", "/openapi.json", "/llms.txt", "/llms-full.txt",
                 "/.well-known/x402", "/.well-known/agent-card.json", "/.well-known/agent.json",
                 "/.well-known/api-catalog", "/score/test-agent", "/reputation/seller-x",
                 "/mcp", "/nope"]:
        write("http", http_request("GET", path, headers={"Accept": "application/json"}))
    write("http", http_request("OPTIONS", "/verify/schema", headers={
        "Origin": "http://example.com", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,payment-signature"}))
    write("http", http_request("POST", "/verify/schema", first, {
        "Content-Type": "application/json", "PAYMENT-SIGNATURE": "eyJ4NDAyVmVyc2lvbiI6Mn0="}))
    write("http", b"GET /health HTTP/1.0\r\n\r\n")

    counts = {t.name: len(list(t.iterdir())) for t in sorted(CORPUS.iterdir())}
    print(f"seeded from {len(bodies)} bodies ({schema_cases} schema-suite cases), {events} events:",
          ", ".join(f"{k} {v} files" for k, v in counts.items()))


if __name__ == "__main__":
    sys.exit(main())
