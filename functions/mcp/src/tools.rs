//! The two tools as `tools/list` describes them: titles, descriptions, annotations, strict
//! input schemas, and output schemas that also admit the PaymentRequired and error shapes
//! (strict clients validate `structuredContent` even on `isError` results).

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::sync::Arc;
use verifier_engine::request_schema::{record_tool_input_schema, verify_tool_input_schema};
use verifier_engine::trust;
use verifier_service::config::{ServiceConfig, usd};

/// `verify_schema`: the inputs of POST /verify/schema.
pub const VERIFY: &str = "verify_schema";
/// `get_verification_record`: the answer of GET /score/{agent_id}.
pub const RECORD: &str = "get_verification_record";

fn object(v: Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// What a tool result's `structuredContent` may be: the tool's answer, a PaymentRequired, or
/// the error shape.
fn output_schema(answer_required: &[&str]) -> Value {
    json!({
        "type": "object",
        "anyOf": [
            {"required": answer_required},
            {"required": ["x402Version", "accepts"], "description": "x402 PaymentRequired: pay and call again with _meta[\"x402/payment\"]"},
            {"required": ["code", "message", "fields"], "description": "An error in the service's one error shape; nothing was charged"}
        ]
    })
}

/// The tool list, in a fixed order.
pub fn tools(config: &ServiceConfig) -> Vec<Tool> {
    let verify = Tool::new(
        VERIFY,
        format!(
            "Verify an AI agent's JSON output against a JSON Schema and business rules (the same check and signed \
             receipt as POST /verify/schema). Returns pass or fail, the share of checks passed, repair hints and an \
             Ed25519-signed receipt. {} free calls per client address per UTC day, shared with REST; then {} in USDC \
             via x402: the result asks for payment (isError with a PaymentRequired), and you call again with \
             _meta[\"x402/payment\"].",
            config.free_per_day,
            usd(config.price_verify_units)
        ),
        object(verify_tool_input_schema()),
    )
    .with_title("Verify output against a JSON Schema")
    .with_raw_output_schema(object(output_schema(&["result", "attestation"])))
    .with_annotations(
        ToolAnnotations::with_title("Verify output against a JSON Schema")
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    );
    let record = Tool::new(
        RECORD,
        format!(
            "The signed trust score and verification record of an agent (the same answer as GET /score/{{agent_id}}). \
             Free, signed no_data or unrated answer for agents with fewer than {} counted verifications and for test- IDs; \
             otherwise {} in USDC via x402.",
            trust::MIN_SAMPLE,
            usd(config.price_score_units)
        ),
        object(record_tool_input_schema()),
    )
    .with_title("Get verification record")
    .with_raw_output_schema(object(output_schema(&["agent_id", "attestation"])))
    .with_annotations(
        ToolAnnotations::with_title("Get verification record")
            .read_only(true)
            .open_world(false),
    );
    vec![verify, record]
}
