//! The request's wire shape as JSON Schema, for the documents that describe it (the OpenAPI
//! description, the MCP tool's input schema). The parser ([`crate::request`]) is the
//! authority; a test keeps the member lists equal to its own.

use crate::request::MAX_ID_CHARS;
use serde_json::{Value, json};

/// The request body; `rule_ref` and `bound_ref` are where the rule and bound schemas live in
/// the enclosing document.
pub fn request_body_schema(rule_ref: &str, bound_ref: &str) -> Value {
    let id = |nullable: bool| {
        let mut v = json!({"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS});
        if nullable {
            v = json!({"oneOf": [v, {"type": "null"}]});
        }
        v
    };
    json!({
        "type": "object",
        "required": ["task_id", "expected_schema", "submitted_output"],
        "additionalProperties": false,
        "properties": {
            "task_id": id(false),
            "agent_id": id(true),
            "expected_schema": {"oneOf": [{"type": "object"}, {"type": "boolean"}], "description": "A JSON Schema (draft 2020-12 unless $schema says otherwise)."},
            "submitted_output": {"description": "The output under test: any JSON value, null included."},
            "strict_content_check": {"type": "boolean", "default": false},
            "bounds": {"oneOf": [{"type": "object", "additionalProperties": {"$ref": bound_ref}}, {"type": "null"}]},
            "rules": {"oneOf": [{"type": "array", "items": {"$ref": rule_ref}}, {"type": "null"}]},
            "enforce_rules": {"type": "boolean", "default": false},
            "detail": {"type": "string", "enum": ["full", "compact"], "default": "full"},
            "agent_signature": {"oneOf": [{"type": "string", "minLength": 1, "maxLength": 200}, {"type": "null"}], "description": "Required when agent_id is a key (did:key:z6Mk…, eip155:<chain>:0x…, solana:<chain>:<address>): the agent's signature of the deliverable message binding agent_id, task_id and the output's SHA-256 (EIP-191 personal_sign in 0x-hex for eip155; Ed25519 in base58 otherwise). Refused for a plain label."},
            "format_assertion": {"type": "boolean", "default": true, "description": "true (the default): `format` is an assertion in every draft, so {\"format\": \"date\"} fails \"2026-13-45\". false: `format` is only an annotation, as drafts 2019-09 and 2020-12 define it by default."}
        }
    })
}

/// One rule object.
pub fn rule_schema() -> Value {
    let path = json!({"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]});
    let number = json!({"oneOf": [{"type": "number"}, {"type": "null"}]});
    json!({
        "type": "object", "required": ["type", "field"], "additionalProperties": false,
        "properties": {
            "type": {"type": "string", "enum": ["sum_equals", "gte", "lte", "exists_in", "unique"]},
            "field": {"type": "string", "minLength": 1},
            "equals_field": path, "equals": number,
            "other_field": path, "value": number,
            "in_field": path, "values": {"oneOf": [{"type": "array"}, {"type": "null"}]},
            "tolerance": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "null"}], "default": 1e-9},
            "if_present": {"oneOf": [{"type": "boolean"}, {"type": "null"}], "default": false}
        }
    })
}

/// One bound object.
pub fn bound_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "properties": {
            "min": {"oneOf": [{"type": "number"}, {"type": "null"}]},
            "max": {"oneOf": [{"type": "number"}, {"type": "null"}]},
            "if_present": {"type": "boolean", "default": false}
        }
    })
}

/// The MCP tool `verify_schema`'s input schema: the request body, its rule and bound schemas
/// under `$defs` (also what the bazaar extension lists for the tool).
pub fn verify_tool_input_schema() -> Value {
    let mut input = request_body_schema("#/$defs/Rule", "#/$defs/Bound");
    input["$defs"] = json!({"Rule": rule_schema(), "Bound": bound_schema()});
    input
}

/// The MCP tool `get_verification_record`'s input schema: one agent ID.
pub fn record_tool_input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["agent_id"],
        "additionalProperties": false,
        "properties": {"agent_id": agent_id_schema()}
    })
}

/// An agent ID (a path parameter or a tool argument).
pub fn agent_id_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{BOUND_KEYS, FIELDS, RULE_KEYS};

    fn keys(schema: &Value) -> Vec<String> {
        let mut k: Vec<String> = schema["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    }

    fn sorted(list: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn the_documented_shapes_have_exactly_the_parsers_members() {
        assert_eq!(keys(&request_body_schema("#r", "#b")), sorted(FIELDS));
        assert_eq!(keys(&rule_schema()), sorted(RULE_KEYS));
        assert_eq!(keys(&bound_schema()), sorted(BOUND_KEYS));
    }
}
