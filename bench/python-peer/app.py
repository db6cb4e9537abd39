"""A lean Python implementation of `POST /verify/schema`, the benchmark peer of issue 18.

What a Python developer would write for the same call: a pydantic request model, a cached
python-jsonschema validator per schema, the five rule types and bounds, the four RFC 8785
hashes of the contract (they equal ours and the hosted service's for the same body; the
benchmark checks that), an Ed25519 signature over the same five-key JCS document, and the JSON
response. It keeps no store: no allowance, no history (ours writes and fsyncs both).

Run: uvicorn app:app --workers 2 --no-access-log --log-level warning
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import uuid
from datetime import datetime, timezone
from typing import Any, Literal

import jsonschema
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

CONTEXT = "json-schema-verifier/verify-schema-attestation/v1"
KEY_VERSION = "peer-1"
SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
TOLERANCE = 1e-9
RULE_DEFAULTS = {"equals": None, "equals_field": None, "if_present": False, "in_field": None,
                 "other_field": None, "tolerance": TOLERANCE, "value": None, "values": None}
BOUND_DEFAULTS = {"if_present": False, "max": None, "min": None}
LIST_CAP = 50


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["sum_equals", "gte", "lte", "exists_in", "unique"]
    field: str = Field(min_length=1)
    equals: float | None = None
    equals_field: str | None = None
    value: float | None = None
    other_field: str | None = None
    in_field: str | None = None
    values: list[Any] | None = None
    tolerance: float = TOLERANCE
    if_present: bool = False


class Bound(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min: float | None = None
    max: float | None = None
    if_present: bool = False


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_id: str = Field(min_length=1, max_length=200)
    agent_id: str | None = Field(default=None, min_length=1, max_length=200)
    expected_schema: dict[str, Any] | bool
    submitted_output: Any
    rules: list[Rule] | None = None
    bounds: dict[str, Bound] | None = None
    strict_content_check: bool = False
    enforce_rules: bool = False
    detail: Literal["full", "compact"] = "full"


app = FastAPI()
_validators: dict[bytes, tuple[str, Any]] = {}


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def validator_for(schema: Any) -> tuple[str, Any]:
    """The schema's hash and its compiled validator, cached by canonical text."""
    canonical = rfc8785.dumps(schema)
    hit = _validators.get(canonical)
    if hit is None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        hit = (sha256_hex(canonical), cls(schema))
        if len(_validators) < 1024:
            _validators[canonical] = hit
    return hit


def resolve(doc: Any, path: str) -> list[Any] | None:
    """Values at a path like `line_items[].line_total` (None when absent)."""
    values = [doc]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        nxt = []
        for v in values:
            if not isinstance(v, dict) or key not in v:
                return None
            item = v[key]
            if many:
                if not isinstance(item, list):
                    return None
                nxt.extend(item)
            else:
                nxt.append(item)
        values = nxt
    return values


def number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def fmt(x: float) -> str:
    return repr(float(x))


def check_rule(rule: Rule, output: Any) -> str | None:
    """The violation's detail, or None when the rule holds."""
    values = resolve(output, rule.field)
    if values is None:
        return None if rule.if_present else f"path '{rule.field}' is missing"
    if rule.type == "sum_equals":
        nums = [number(v) for v in values]
        if any(n is None for n in nums):
            return "values are not all numbers"
        total = math.fsum(nums)
        if rule.equals_field is not None:
            other = resolve(output, rule.equals_field)
            target = number(other[0]) if other else None
            if target is None:
                return f"{rule.equals_field} is not a number"
            label = f"{rule.equals_field} ({fmt(target)})"
        else:
            target, label = rule.equals, fmt(rule.equals)
        if abs(total - target) > rule.tolerance:
            return f"values sum to {fmt(total)}, expected {label}"
        return None
    if rule.type in ("gte", "lte"):
        limit = rule.value
        if rule.other_field is not None:
            other = resolve(output, rule.other_field)
            limit = number(other[0]) if other else None
        for v in values:
            n = number(v)
            if n is None or limit is None:
                return "value is not a number"
            if rule.type == "gte" and n < limit - rule.tolerance:
                return f"{fmt(n)} is below {fmt(limit)}"
            if rule.type == "lte" and n > limit + rule.tolerance:
                return f"{fmt(n)} is above {fmt(limit)}"
        return None
    if rule.type == "unique":
        seen = set()
        for v in values:
            key = rfc8785.dumps(v)
            if key in seen:
                return "values are not unique"
            seen.add(key)
        return None
    allowed = rule.values if rule.values is not None else (resolve(output, rule.in_field or "") or [])
    allowed_keys = {rfc8785.dumps(a) for a in allowed}
    for v in values:
        if rfc8785.dumps(v) not in allowed_keys:
            return "a value is not in the allowed set"
    return None


def check_bound(path: str, bound: Bound, output: Any) -> str | None:
    values = resolve(output, path)
    if values is None:
        return None if bound.if_present else f"path '{path}' is missing"
    for v in values:
        n = number(v)
        if n is None or (bound.min is not None and n < bound.min) or (bound.max is not None and n > bound.max):
            return "value out of range"
    return None


def capped(name: str, items: list[Any]) -> dict[str, Any]:
    return {name: items[:LIST_CAP], f"{name}_total": len(items),
            f"{name}_omitted": max(0, len(items) - LIST_CAP)}


def ratio(passed: int, total: int) -> dict[str, Any]:
    return {"ratio": round(passed / total, 6) if total else 1.0, "passed": passed, "total": total}


def request_document(body: dict[str, Any]) -> dict[str, Any]:
    rules = body.get("rules") or None
    bounds = body.get("bounds") or None
    return {
        "agent_id": body.get("agent_id"),
        "bounds": {k: {**BOUND_DEFAULTS, **v} for k, v in bounds.items()} if bounds else None,
        "enforce_rules": body.get("enforce_rules", False),
        "expected_schema": body["expected_schema"],
        "rules": [{**RULE_DEFAULTS, **r} for r in rules] if rules else None,
        "strict_content_check": body.get("strict_content_check", False),
        "submitted_output": body["submitted_output"],
        "task_id": body["task_id"],
    }


@app.post("/verify/schema")
def verify(req: VerifyRequest) -> Response:
    sent = req.model_dump(exclude_unset=True)
    try:
        schema_hash, validator = validator_for(req.expected_schema)
    except jsonschema.SchemaError:
        return JSONResponse({"code": "invalid_request", "message": "expected_schema is not a valid schema"},
                            status_code=422)
    output = req.submitted_output
    schema_errors = [f"schema:{e.validator} at '{e.json_path}': {e.message}"
                     for e in validator.iter_errors(output)]
    integrity, flags, blocking = [], [], []
    for rule in req.rules or []:
        problem = check_rule(rule, output)
        integrity.append(problem is None)
        if problem:
            check = f"consistency:{rule.type}"
            flags.append({"check": check, "field": rule.field,
                          "severity": "error" if req.enforce_rules else "warning", "detail": problem})
            if req.enforce_rules:
                blocking.append(check)
                schema_errors.append(f"enforce_rules: {check} at '{rule.field}': {problem}")
    for path, bound in (req.bounds or {}).items():
        problem = check_bound(path, bound, output)
        integrity.append(problem is None)
        if problem:
            blocking.append("bounds")
            schema_errors.append(f"bounds at '{path}': {problem}")
    if any(e.startswith("schema:") for e in schema_errors):
        blocking.insert(0, "schema")
    result = "fail" if blocking else "pass"

    output_jcs = rfc8785.dumps(output)
    rules_doc = {"bounds": sent.get("bounds"), "rules": sent.get("rules")}
    now = datetime.now(timezone.utc).isoformat()
    schema_total = max(1, len(schema_errors))
    response: dict[str, Any] = {
        "summary": {"result": result, "blocking_checks": sorted(set(blocking))},
        "result": result,
        "verification_id": str(uuid.uuid4()),
        "task_id": req.task_id,
        "agent_id": req.agent_id,
        "output_hash": sha256_hex(output_jcs),
        "schema_hash": schema_hash,
        "rules_hash": sha256_hex(rfc8785.dumps(rules_doc)),
        "request_hash": sha256_hex(rfc8785.dumps(request_document(sent))),
        "verified_at": now,
        "enforce_rules": req.enforce_rules,
        "strict_content_check": req.strict_content_check,
        **capped("errors", sorted(schema_errors)),
        **capped("flags", flags),
        "schema_compliance": ratio(schema_total - sum(e.startswith("schema:") for e in schema_errors),
                                   schema_total),
        "integrity_checks": ratio(sum(integrity), len(integrity)),
        "verify": {"key_version": KEY_VERSION, "canonicalization": "RFC 8785 (JCS)",
                   "hash_algorithm": "SHA-256"},
    }
    signed = rfc8785.dumps({"algorithm": "Ed25519", "attested_at": now, "context": CONTEXT,
                            "key_version": KEY_VERSION, "response": response})
    response["attestation"] = {"algorithm": "Ed25519", "key_version": KEY_VERSION, "timestamp": now,
                               "signature": base64.b64encode(SIGNING_KEY.sign(signed)).decode()}
    return Response(json.dumps(response), media_type="application/json")
