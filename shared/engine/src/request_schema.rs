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
    let described = |mut v: Value, text: &str| {
        v["description"] = text.into();
        v
    };
    json!({
        "type": "object",
        "required": ["task_id", "expected_schema", "submitted_output"],
        "additionalProperties": false,
        "properties": {
            "task_id": described(id(false), "Your ID of the task the output was delivered for (1 to 200 characters); the receipt states it."),
            "agent_id": described(id(true), "The agent (seller) whose output this is: its history and trust score count this verification. A test- ID is checked and signed but never recorded; a key-based ID (did:key:z6Mk…, eip155:<chain>:0x…, solana:<chain>:<address>) needs agent_signature."),
            "expected_schema": {"oneOf": [{"type": "object"}, {"type": "boolean"}], "description": "A JSON Schema (draft 2020-12 unless $schema says otherwise)."},
            "submitted_output": {"description": "The output under test: any JSON value, null included."},
            "strict_content_check": {"type": "boolean", "default": false, "description": "true: three blocking content checks run too: the output is not empty, holds no placeholder text (TODO, lorem ipsum, {{name}}, N/A, …), and no required property is a blank string."},
            "bounds": {"oneOf": [{"type": "object", "additionalProperties": {"$ref": bound_ref}}, {"type": "null"}], "description": "Numeric ranges by field path: {\"total\": {\"min\": 0}, \"line_items[].qty\": {\"min\": 1, \"max\": 100}}. Bounds always block (a value out of range fails the result)."},
            "rules": {"oneOf": [{"type": "array", "items": {"$ref": rule_ref}}, {"type": "null"}], "description": "Business rules over the output (sum_equals, gte, lte, exists_in, unique, and expression: a CEL condition over self such as self.total == self.subtotal + self.tax), each a finding counted in integrity_checks. They only warn unless enforce_rules is true."},
            "enforce_rules": {"type": "boolean", "default": false, "description": "true: a violated rule fails the result (result fail, listed in blocking_checks). false (the default): violations are warnings and the result can still pass."},
            "detail": {"type": "string", "enum": ["full", "compact"], "default": "full", "description": "full (the default): the findings (errors, flags, hints) and the schema and integrity ratios; compact: the verdict and summary with the signed receipt, without those lists and without request_hash."},
            "agent_signature": {"oneOf": [{"type": "string", "minLength": 1, "maxLength": 200}, {"type": "null"}], "description": "Required when agent_id is a key (did:key:z6Mk…, eip155:<chain>:0x…, solana:<chain>:<address>): the agent's signature of the deliverable message binding agent_id, task_id and the output's SHA-256 (EIP-191 personal_sign in 0x-hex for eip155; Ed25519 in base58 otherwise). Refused for a plain label."},
            "format_assertion": {"type": "boolean", "default": true, "description": "true (the default): `format` is an assertion in every draft, so {\"format\": \"date\"} fails \"2026-13-45\". false: `format` is only an annotation, as drafts 2019-09 and 2020-12 define it by default."}
        }
    })
}

/// What a field path is, for the descriptions.
const PATH: &str = "A field path: dotted names, [] for every element of an array (total, line_items[].line_total).";

/// One rule object.
pub fn rule_schema() -> Value {
    let path = |text: &str| json!({"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": text});
    let number =
        |text: &str| json!({"oneOf": [{"type": "number"}, {"type": "null"}], "description": text});
    json!({
        "type": "object", "required": ["type"], "additionalProperties": false,
        "description": "One business rule; every type but expression needs field. expression: the CEL condition in rule must be true of the output, self (numbers are doubles; numbers within tolerance are equal). sum_equals: the numbers at field add up to equals_field's value or equals (within tolerance). gte / lte: every number at field is at least / at most other_field's value or value (tolerance widens it). exists_in: every value at field is one of values or of the values at in_field. unique: the values at field repeat none. A missing path fails the rule unless if_present is true.",
        "properties": {
            "type": {"type": "string", "enum": ["sum_equals", "gte", "lte", "exists_in", "unique", "expression"], "description": "The rule: sum_equals, gte, lte, exists_in, unique or expression."},
            "field": {"type": "string", "minLength": 1, "description": format!("The values the rule is about (every type but expression). {PATH}")},
            "rule": {"type": "string", "minLength": 1, "maxLength": crate::expression::MAX_EXPRESSION_BYTES, "description": "expression: a CEL expression over the output, self, that must be true, e.g. self.total == self.subtotal + self.tax, self.lines.all(l, l.line_total == l.qty * l.unit_price), date(self.due_date) > date(self.issue_date). Numbers in the output are doubles (write 2.0, not 2, in arithmetic with them). At most 1,024 bytes, 4,096 in all per request; priced before it runs."},
            "equals_field": path(&format!("sum_equals: the path of the value the sum must equal (or give equals). {PATH}")),
            "equals": number("sum_equals: the number the sum must equal (or give equals_field)."),
            "other_field": path(&format!("gte / lte: the path of the limit (or give value). {PATH}")),
            "value": number("gte / lte: the limit (or give other_field)."),
            "in_field": path(&format!("exists_in: the path of the allowed values (or give values). {PATH}")),
            "values": {"oneOf": [{"type": "array"}, {"type": "null"}], "description": "exists_in: the allowed values (JSON values; numbers compare by value, 1 equals 1.0)."},
            "tolerance": {"oneOf": [{"type": "number", "minimum": 0}, {"type": "null"}], "default": 1e-9, "description": "sum_equals: how far the sum may be from the expected number; gte / lte: how far past the limit a value may be; expression: how far apart two numbers may be and still be equal (0.005 compares amounts to the cent)."},
            "if_present": {"oneOf": [{"type": "boolean"}, {"type": "null"}], "default": false, "description": "true: a path that is missing from the output is skipped instead of failing the rule."}
        }
    })
}

/// One bound object.
pub fn bound_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "description": "A numeric range for the values at the path it is listed under; bounds always block.",
        "properties": {
            "min": {"oneOf": [{"type": "number"}, {"type": "null"}], "description": "The smallest value allowed (inclusive)."},
            "max": {"oneOf": [{"type": "number"}, {"type": "null"}], "description": "The largest value allowed (inclusive)."},
            "if_present": {"type": "boolean", "default": false, "description": "true: a missing path is skipped instead of failing the bound."}
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
    fn every_member_an_agent_can_send_is_described() {
        for schema in [
            request_body_schema("#r", "#b"),
            rule_schema(),
            bound_schema(),
        ] {
            for (name, member) in schema["properties"].as_object().expect("properties") {
                let text = member["description"].as_str().unwrap_or_default();
                assert!(text.len() > 20, "{name} has no description");
            }
        }
        let tool = verify_tool_input_schema();
        assert!(
            tool["properties"]["enforce_rules"]["description"]
                .as_str()
                .is_some_and(|d| d.contains("only") || d.contains("warnings"))
        );
        assert!(
            tool["properties"]["rules"]["description"]
                .as_str()
                .is_some_and(|d| d.contains("unless enforce_rules is true"))
        );
    }

    #[test]
    fn the_documented_shapes_have_exactly_the_parsers_members() {
        assert_eq!(keys(&request_body_schema("#r", "#b")), sorted(FIELDS));
        assert_eq!(keys(&rule_schema()), sorted(RULE_KEYS));
        assert_eq!(keys(&bound_schema()), sorted(BOUND_KEYS));
    }
}
