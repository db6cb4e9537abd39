//! A call's [`Reply`] as an MCP tool result: the answer in `structuredContent` (with a text
//! mirror), a payment demand as the x402 tool-result binding (`isError`, PaymentRequired in
//! `structuredContent` and `content[0].text`, the `free_trial` in `_meta`), errors in the
//! service's one error shape.

use crate::handoff::{Handoff, TEXT_MARK, structured_mark};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;
use verifier_service::{Billing, Reply, payment_error};

/// `_meta` key of the settlement (x402 MCP binding).
pub const PAYMENT_RESPONSE_KEY: &str = "x402/payment-response";
/// `_meta` key of a paid call's payment (x402 MCP binding).
pub const PAYMENT_KEY: &str = "x402/payment";
/// `_meta` key of the free allowance left after a free call.
pub const ALLOWANCE_KEY: &str = "agent-output-verifier/free-allowance";

fn meta(entries: Map<String, Value>) -> Option<MetaObject> {
    (!entries.is_empty()).then_some(MetaObject(entries))
}

/// An error in the one error shape, as an `isError` result.
pub fn error(e: &ApiError, config: &ServiceConfig) -> CallToolResult {
    verifier_service::telemetry::refusal(e.code());
    CallToolResult::structured_error(serde_json::to_value(e.body(config)).unwrap_or_default())
}

/// A result with the handoff's marks where the answer goes ([`crate::handoff::fill`]).
fn marked_result(extra: Map<String, Value>) -> CallToolResult {
    let mut result = CallToolResult::structured(structured_mark());
    result.content = vec![ContentBlock::text(TEXT_MARK)];
    result.with_meta(meta(extra))
}

/// The tool result of a reply. With a [`Handoff`] an answer's JSON is kept there and the
/// result holds marks in its place (see [`crate::handoff`]).
pub fn tool_result(
    reply: Reply,
    config: &ServiceConfig,
    handoff: Option<&Handoff>,
) -> CallToolResult {
    match reply {
        Reply::Answer(answer) => {
            let mut extra = Map::new();
            match answer.billing {
                Billing::Free {
                    remaining,
                    limit,
                    resets_at,
                } => {
                    extra.insert(
                        ALLOWANCE_KEY.into(),
                        json!({"remaining": remaining, "limit": limit, "resets_at": resets_at}),
                    );
                }
                Billing::Paid(settlement) => {
                    extra.insert(
                        PAYMENT_RESPONSE_KEY.into(),
                        serde_json::to_value(settlement).unwrap_or_default(),
                    );
                }
                Billing::NotCharged => {}
            }
            if let Some(handoff) = handoff {
                handoff.put_answer(answer.body);
                return marked_result(extra);
            }
            let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
            // The text mirror is the answer's own JSON text (as REST sends it), not the
            // parsed value written out again.
            let text = String::from_utf8(answer.body).unwrap_or_else(|_| body.to_string());
            let mut result = CallToolResult::structured(Value::Null);
            result.content = vec![ContentBlock::text(text)];
            result.structured_content = Some(body);
            result.with_meta(meta(extra))
        }
        Reply::PaymentRequired(demand) => {
            let required = serde_json::to_value(&demand.required).unwrap_or_default();
            let mut extra = Map::new();
            if let Some(trial) = &demand.free_trial {
                extra.insert("free_trial".into(), trial.clone());
            }
            if let Some(e) = &demand.error {
                extra.insert("payment_error".into(), payment_error(e));
            }
            if let Some(reason) = &demand.reason {
                extra.insert("payment_reason".into(), reason.clone());
            }
            if let Some(settlement) = &demand.settlement {
                extra.insert(
                    PAYMENT_RESPONSE_KEY.into(),
                    serde_json::to_value(settlement).unwrap_or_default(),
                );
            }
            CallToolResult::structured_error(required).with_meta(meta(extra))
        }
        Reply::Error(e) => error(&e, config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::fill;
    use rmcp::model::{RequestId, ServerJsonRpcMessage, ServerResult};

    /// The marks survive rmcp's own writing of the result, for current and older peers alike,
    /// so the guard fills them (and never needs its parsed fallback).
    #[test]
    fn rmcp_writes_the_marks_where_the_guard_finds_them() {
        let extra = Map::from_iter([("a".to_owned(), json!(1))]);
        for legacy in [false, true] {
            let mut result = ServerResult::CallToolResult(marked_result(extra.clone()));
            if legacy {
                result.strip_non_object_output_for_legacy_peer();
            }
            let message = ServerJsonRpcMessage::response(result, RequestId::Number(7));
            let bytes = serde_json::to_vec(&message).expect("json");
            let at = bytes
                .windows(10)
                .position(|w| w == br#""result":{"#)
                .expect("a result")
                + 9;
            let answer = br#"{"result":"pass"}"#;
            let filled = fill(&bytes, at, answer).expect("both marks found");
            let v: Value = serde_json::from_slice(&filled).expect("json");
            assert_eq!(v["result"]["structuredContent"], json!({"result": "pass"}));
            assert_eq!(v["result"]["content"][0]["text"], r#"{"result":"pass"}"#);
            assert_eq!(v["result"]["content"].as_array().map(Vec::len), Some(1));
            assert_eq!(v["result"]["_meta"]["a"], 1);
        }
    }
}
