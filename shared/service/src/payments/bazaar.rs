//! x402's `bazaar` extension (specs/extensions/bazaar.md): what a paid resource takes and
//! gives, declared in every PaymentRequired so a facilitator's catalogue (the Bazaar) can list
//! it. Each declaration is `{info, schema}`: `info` says how to call the resource (an HTTP body
//! method, an HTTP GET with path parameters, or an MCP tool) with a real example of the input
//! and the output, and `schema` is the JSON Schema (draft 2020-12, same-document `$ref`s only)
//! that `info` satisfies. The service metadata (`serviceName`, `tags`) goes on `resource`.

use serde_json::{Value, json};

/// The extension's key in `extensions`.
pub const BAZAAR: &str = "bazaar";
/// `resource.serviceName`: printable ASCII, at most 32 characters.
pub const SERVICE_NAME: &str = "Agent Output Verifier";
/// `resource.tags`: at most 5, each printable ASCII of at most 32 characters.
pub const TAGS: [&str; 5] = [
    "json-schema",
    "verification",
    "signed-receipts",
    "ai-agents",
    "trust-score",
];
/// The draft every `schema` is written in.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// `{info, schema}`: the `input` with the schema of its members (`input_properties`, of which
/// `required` must be present, no others allowed), and a JSON `output` with its example.
fn declaration(input: Value, input_properties: Value, required: &[&str], answer: Value) -> Value {
    json!({
        "info": {"input": input, "output": {"type": "json", "example": answer}},
        "schema": {
            "$schema": DRAFT_2020_12,
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": input_properties,
                    "required": required,
                    "additionalProperties": false
                },
                "output": {
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "example": {"type": "object"}},
                    "required": ["type"]
                }
            },
            "required": ["input"]
        }
    })
}

/// Query parameter and header examples are not declared; their schema admits strings only.
fn strings_schema() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

/// An HTTP route taking a JSON body (POST): `body_schema` describes the body and may refer to
/// `#/$defs/…` entries given in `defs`.
pub fn http_body(body_example: Value, body_schema: Value, defs: Value, answer: Value) -> Value {
    let mut listing = declaration(
        json!({"type": "http", "method": "POST", "bodyType": "json", "body": body_example}),
        json!({
            "type": {"type": "string", "const": "http"},
            "method": {"type": "string", "enum": ["POST", "PUT", "PATCH"]},
            "bodyType": {"type": "string", "enum": ["json", "form-data", "text"]},
            "body": body_schema,
            "queryParams": strings_schema(),
            "headers": strings_schema()
        }),
        &["type", "method", "bodyType", "body"],
        answer,
    );
    listing["schema"]["$defs"] = defs;
    listing
}

/// An HTTP GET route with one path parameter: `route_template` in the `:name` form, the
/// parameter's example value and schema.
pub fn http_get_path(
    route_template: &str,
    param: &str,
    param_example: &str,
    param_schema: Value,
    answer: Value,
) -> Value {
    let mut listing = declaration(
        json!({"type": "http", "method": "GET", "pathParams": {param: param_example}}),
        json!({
            "type": {"type": "string", "const": "http"},
            "method": {"type": "string", "enum": ["GET", "HEAD", "DELETE"]},
            "pathParams": {
                "type": "object",
                "properties": {param: param_schema},
                "required": [param],
                "additionalProperties": false
            },
            "queryParams": strings_schema(),
            "headers": strings_schema()
        }),
        &["type", "method"],
        answer,
    );
    listing["routeTemplate"] = route_template.into();
    listing
}

/// An MCP tool over Streamable HTTP: its name, description, the input schema `tools/list`
/// declares for it, an example of its arguments and of its result.
pub fn mcp_tool(
    tool: &str,
    description: &str,
    input_schema: Value,
    arguments: Value,
    answer: Value,
) -> Value {
    declaration(
        json!({
            "type": "mcp",
            "toolName": tool,
            "description": description,
            "transport": "streamable-http",
            "inputSchema": input_schema,
            "example": arguments
        }),
        json!({
            "type": {"type": "string", "const": "mcp"},
            "toolName": {"type": "string"},
            "description": {"type": "string"},
            "transport": {"type": "string", "enum": ["streamable-http", "sse"]},
            "inputSchema": {"type": "object"},
            "example": {"type": "object"}
        }),
        &["type", "toolName", "inputSchema"],
        answer,
    )
}

/// Whether a `routeTemplate` passes the spec's rules (what a facilitator checks before using
/// it as a catalogue key).
pub fn is_valid_route_template(template: &str) -> bool {
    template.starts_with('/')
        && template.len() > 1
        && template
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_/:.-~%".contains(&b))
        && !template.contains("..")
        && !template.contains("://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_metadata_is_within_the_spec_limits() {
        let printable = |s: &str| s.bytes().all(|b| (0x20..=0x7e).contains(&b));
        assert!(!SERVICE_NAME.is_empty() && SERVICE_NAME.len() <= 32 && printable(SERVICE_NAME));
        for tag in TAGS {
            assert!(
                !tag.is_empty() && tag.len() <= 32 && printable(tag),
                "{tag}"
            );
        }
        let mut lower: Vec<String> = TAGS.iter().map(|t| t.to_lowercase()).collect();
        lower.dedup();
        assert_eq!(lower.len(), TAGS.len());
    }

    #[test]
    fn route_templates_follow_the_spec_rules() {
        assert!(is_valid_route_template("/score/:agent_id"));
        assert!(!is_valid_route_template("/a/../b"));
        assert!(!is_valid_route_template("http://x/y"));
        assert!(!is_valid_route_template("score/:a"));
    }
}
