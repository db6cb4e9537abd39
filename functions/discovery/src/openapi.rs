//! The OpenAPI 3.1 description: component schemas derived (utoipa) from the request and
//! response types the code serializes, paths from the route table, prices from the
//! configuration, error codes from the error tables. Paid operations carry `x-payment-info`.

use crate::x402::price_units;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::ComponentsBuilder;
use verifier_engine::engine::VERIFIER_VERSION;
use verifier_engine::report::VerifyResponse;
use verifier_engine::request::{BOUND_KEYS, FIELDS, MAX_ID_CHARS, RULE_KEYS};
use verifier_engine::request_schema::{bound_schema, request_body_schema, rule_schema};
use verifier_ports::x402::{PaymentRequired, SettlementResponse};
use verifier_receipt::attest::Attestation;
use verifier_service::Services;
use verifier_service::config::usd;
use verifier_service::errors::{ERROR_CODES, ErrorBody};
use verifier_service::payments::PAYMENT_ERROR_CODES;
use verifier_service::routes::{Function, Pricing, Route, documented};
use verifier_service::score::{ReputationResponse, ScoreResponse};

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// The derived component schemas plus the request body and the signed wrappers.
fn components() -> Value {
    let mut nested = Vec::new();
    VerifyResponse::schemas(&mut nested);
    ScoreResponse::schemas(&mut nested);
    ReputationResponse::schemas(&mut nested);
    ErrorBody::schemas(&mut nested);
    PaymentRequired::schemas(&mut nested);
    SettlementResponse::schemas(&mut nested);
    Attestation::schemas(&mut nested);
    let derived = ComponentsBuilder::new()
        .schema_from::<VerifyResponse>()
        .schema_from::<ScoreResponse>()
        .schema_from::<ReputationResponse>()
        .schema_from::<ErrorBody>()
        .schema_from::<PaymentRequired>()
        .schema_from::<SettlementResponse>()
        .schema_from::<Attestation>()
        .schemas_from_iter(nested)
        .build();
    let mut schemas = serde_json::to_value(&derived)
        .ok()
        .and_then(|v| v.get("schemas").cloned())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let mut request =
        request_body_schema("#/components/schemas/Rule", "#/components/schemas/Bound");
    request["example"] = crate::examples::invoice_request("test-seller-invoice-agent");
    schemas.insert("VerifyRequest".into(), request);
    schemas.insert("Rule".into(), rule_schema());
    schemas.insert("Bound".into(), bound_schema());
    let signed = |inner: &str| {
        json!({"allOf": [schema_ref(inner), {
            "type": "object", "required": ["attestation"],
            "properties": {"attestation": schema_ref("Attestation")}
        }]})
    };
    schemas.insert("SignedVerifyResponse".into(), signed("VerifyResponse"));
    schemas.insert("SignedScoreResponse".into(), signed("ScoreResponse"));
    schemas.insert(
        "PaymentRequiredBody".into(),
        json!({"allOf": [schema_ref("PaymentRequired"), {
            "type": "object",
            "properties": {
                "free_trial": {"type": "object", "description": "The caller's free allowance (verification routes)."},
                "payment_error": {
                    "type": "object", "required": ["code", "message", "fix"],
                    "properties": {
                        "code": {"type": "string", "enum": PAYMENT_ERROR_CODES.iter().map(|c| c.0).collect::<Vec<_>>()},
                        "message": {"type": "string"}, "fix": {"type": "string"},
                        "reason": {"type": "string"}, "retryable": {"type": "boolean"}
                    }
                },
                "charged": {"type": "boolean", "const": false}
            }
        }]}),
    );
    json!({"schemas": schemas})
}

fn json_content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": json_content(schema_ref("ErrorBody"))})
}

fn payment_response() -> Value {
    json!({
        "description": "Payment required (x402 v2): the PAYMENT-REQUIRED header is base64 of the PaymentRequired; a failed settlement also carries PAYMENT-RESPONSE.",
        "headers": {
            "PAYMENT-REQUIRED": {"schema": {"type": "string"}, "description": "base64 of the PaymentRequired JSON"},
            "PAYMENT-RESPONSE": {"schema": {"type": "string"}, "description": "base64 of a failed SettlementResponse"}
        },
        "content": json_content(schema_ref("PaymentRequiredBody"))
    })
}

fn paid_headers() -> Value {
    json!({
        "PAYMENT-RESPONSE": {"schema": {"type": "string"}, "description": "base64 of the SettlementResponse (paid calls)"},
        "Free-Allowance-Remaining": {"schema": {"type": "integer"}},
        "Free-Allowance-Limit": {"schema": {"type": "integer"}},
        "Free-Allowance-Resets": {"schema": {"type": "string", "format": "date-time"}}
    })
}

fn payment_header_param() -> Value {
    json!({
        "name": "PAYMENT-SIGNATURE", "in": "header", "required": false,
        "description": "base64 of an x402 v2 PaymentPayload; omit to use the free allowance or to get the payment requirements",
        "schema": {"type": "string"}
    })
}

fn agent_param() -> Value {
    json!({"name": "agent_id", "in": "path", "required": true,
           "schema": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS}})
}

fn payment_info(s: &Services, pricing: Pricing) -> Value {
    let units = price_units(s, pricing);
    json!({
        "protocols": ["x402"],
        "price": {"mode": "fixed", "currency": "USD", "amount": format!("{}", usd(units).trim_start_matches('$'))},
        "amount": units.to_string(),
        "accepts": s.payments.accepts(&s.config, units),
        "free": matches!(pricing, Pricing::Verification).then(|| json!({"calls_per_client_per_day": s.config.free_per_day})),
    })
}

/// The group an operation is listed in: its function's name, except that the discovery
/// documents the verify function serves (`/llms-full.txt`, `/.well-known/x402.json`) are listed
/// with the other documents.
fn tag(r: &Route) -> &'static str {
    match r.function {
        Function::Verify if !r.path.starts_with("/verify") => Function::Discovery.name(),
        function => function.name(),
    }
}

fn operation(s: &Services, r: &Route) -> Value {
    let id = r
        .path
        .trim_matches('/')
        .replace(['/', '.', '-'], "_")
        .replace(['{', '}'], "");
    let mut op = json!({
        "operationId": format!("{}_{}", r.method.to_lowercase(), if id.is_empty() { "index".into() } else { id }),
        "summary": r.summary,
        "tags": [tag(r)],
    });
    let mut responses = Map::new();
    match (r.function, r.path) {
        (Function::Verify, p) if p.starts_with("/verify") => {
            op["requestBody"] = json!({"required": false, "content": json_content(schema_ref("VerifyRequest")),
                "description": "The request. An empty body is an x402 discovery probe (402)."});
            op["parameters"] = json!([payment_header_param()]);
            responses.insert("200".into(), json!({"description": "The signed verification (pass or fail).", "headers": paid_headers(), "content": json_content(schema_ref("SignedVerifyResponse"))}));
            responses.insert("400".into(), error_response("The body was incomplete."));
            responses.insert("402".into(), payment_response());
            responses.insert("405".into(), error_response("Wrong method."));
            responses.insert(
                "413".into(),
                error_response("The body is over the hard size limit."),
            );
            responses.insert("415".into(), error_response("The body is not JSON."));
            responses.insert(
                "422".into(),
                error_response("The request is invalid; every problem is listed."),
            );
            responses.insert(
                "503".into(),
                error_response("The store or the facilitator is briefly unavailable; retry."),
            );
        }
        (Function::Score, p) if p.starts_with("/score") => {
            op["parameters"] = json!([agent_param(), payment_header_param()]);
            responses.insert("200".into(), json!({"description": "The signed score (or a free signed no_data or unrated answer).", "headers": paid_headers(), "content": json_content(schema_ref("SignedScoreResponse"))}));
            responses.insert("402".into(), payment_response());
            responses.insert("422".into(), error_response("The agent ID is invalid."));
            responses.insert(
                "503".into(),
                error_response("The store or the facilitator is briefly unavailable; retry."),
            );
        }
        (Function::Score, _) => {
            op["parameters"] = json!([agent_param()]);
            responses.insert("200".into(), json!({"description": "The pass/fail history.", "content": json_content(schema_ref("ReputationResponse"))}));
            responses.insert("422".into(), error_response("The agent ID is invalid."));
            responses.insert(
                "503".into(),
                error_response("The store is briefly unavailable; retry."),
            );
        }
        (Function::Mcp, _) => {
            op["requestBody"] = json!({"required": true, "content": json_content(json!({"type": "object", "description": "One JSON-RPC 2.0 message (MCP Streamable HTTP)."}))});
            for (code, what) in [
                ("200", "A JSON-RPC response."),
                ("202", "A notification was accepted."),
            ] {
                responses.insert(
                    code.into(),
                    json!({"description": what, "content": json_content(json!({}))}),
                );
            }
            for (code, what) in [
                ("400", "Bad request (headers or protocol version)."),
                ("403", "Origin or Host not allowed."),
                ("404", "Method removed in this protocol version."),
                ("405", "Only POST."),
                (
                    "406",
                    "Accept must list application/json and text/event-stream.",
                ),
                ("413", "Body too large."),
                ("415", "Not JSON."),
            ] {
                responses.insert(code.into(), json!({"description": what}));
            }
        }
        // The documents (served by the discovery function, two of them by verify).
        (_, path) => {
            let (kind, schema) = match path {
                "/llms.txt" | "/llms-full.txt" => ("text/plain", json!({"type": "string"})),
                "/docs" => ("text/html", json!({"type": "string"})),
                "/.well-known/api-catalog" => {
                    ("application/linkset+json", json!({"type": "object"}))
                }
                "/" => ("application/json", json!({"type": "object"})),
                _ => ("application/json", json!({"type": "object"})),
            };
            let mut content = json!({kind: {"schema": schema}});
            if path == "/" {
                content["text/html"] = json!({"schema": {"type": "string"}});
            }
            responses.insert(
                "200".into(),
                json!({"description": r.summary, "content": content}),
            );
        }
    }
    if matches!(r.pricing, Pricing::Verification | Pricing::ScoreLookup) {
        op["x-payment-info"] = payment_info(s, r.pricing);
    }
    op["responses"] = Value::Object(responses);
    op
}

/// The OpenAPI document.
pub fn openapi(s: &Services) -> Value {
    let c = &s.config;
    let mut paths = Map::new();
    for r in documented() {
        let item = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
        item[r.method.to_lowercase()] = operation(s, r);
    }
    let errors: Vec<Value> = ERROR_CODES
        .iter()
        .map(|(code, status, meaning)| json!({"code": code, "status": status, "meaning": meaning}))
        .collect();
    let payment_errors: Vec<Value> = PAYMENT_ERROR_CODES
        .iter()
        .map(|(code, status, meaning)| json!({"code": code, "status": status, "meaning": meaning}))
        .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Agent Output Verifier",
            "version": VERIFIER_VERSION,
            "description": format!(
                "Verify an AI agent's JSON output against a JSON Schema and business rules; signed Ed25519 receipts. \
                 {} free verifications per client address per UTC day, then {} (x402 v2, USDC on Base or Solana). \
                 Request fields: {}. Rule keys: {}. Bound keys: {}.",
                c.free_per_day, usd(c.price_verify_units), FIELDS.join(", "), RULE_KEYS.join(", "), BOUND_KEYS.join(", ")),
            "license": {"name": "MIT", "identifier": "MIT"},
        },
        "servers": [{"url": c.public_url}],
        "paths": paths,
        "components": components(),
        "x-error-codes": errors,
        "x-payment-error-codes": payment_errors,
    })
}
