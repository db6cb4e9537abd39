//! The A2A agent cards: A2A 1.0 at `/.well-known/agent-card.json` (`supportedInterfaces`) and
//! the 0.3 card at the legacy path `/.well-known/agent.json` (`url`, `preferredTransport`), both
//! saying who the service is, its skills, and carrying the attestation extension that lists
//! every public key it ever signed with, plus the request-hash test vectors.

use serde_json::{Value, json};
use verifier_engine::engine::VERIFIER_VERSION;
use verifier_engine::trust;
use verifier_engine::vectors::request_hash_vectors;
use verifier_receipt::attest::{TRUST_SCORE_CONTEXT, VERIFY_CONTEXT};
use verifier_service::Services;
use verifier_service::config::usd;

/// The `uri` of the attestation extension (receipt verifiers look for this prefix).
pub const ATTESTATION_EXTENSION: &str = "urn:json-schema-verifier:extension:attestation:v1";

/// The A2A protocol version of [`agent_card`].
pub const A2A_VERSION: &str = "1.0";
/// MCP's protocol version the service prefers (it also speaks the earlier ones).
const MCP_VERSION: &str = "2025-11-25";

/// The A2A 1.0 card. The service is reached over MCP and REST rather than A2A's own
/// bindings, so its interfaces name those (A2A's `protocolBinding` is an open string); the
/// first, MCP, is preferred.
pub fn agent_card(s: &Services) -> Value {
    let legacy = legacy_agent_card(s);
    let c = &s.config;
    json!({
        "name": legacy["name"],
        "description": legacy["description"],
        "supportedInterfaces": [
            {"url": c.url("/mcp"), "protocolBinding": "MCP", "protocolVersion": MCP_VERSION},
            {"url": c.url("/verify/schema"), "protocolBinding": "REST", "protocolVersion": VERIFIER_VERSION}
        ],
        "provider": legacy["provider"],
        "version": VERIFIER_VERSION,
        "documentationUrl": c.url("/docs"),
        "capabilities": {
            "streaming": false,
            "pushNotifications": false,
            "extensions": legacy["capabilities"]["extensions"]
        },
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": legacy["skills"]
    })
}

/// The A2A 0.3 card, kept at the legacy path for clients of that version.
pub fn legacy_agent_card(s: &Services) -> Value {
    let c = &s.config;
    let keys = s.keys.public_keys();
    let active = s.keys.current();
    json!({
        "protocolVersion": "0.3.0",
        "name": "Agent Output Verifier",
        "description": format!(
            "Checks an AI agent's JSON output against a JSON Schema and business rules before a buyer pays, \
             and answers pass or fail with the share of checks passed, repair hints and an Ed25519-signed receipt \
             anyone can verify offline. {} free verifications per client address per UTC day (REST and MCP share \
             them), then {} per verification in USDC over x402 v2 on Base or Solana.",
            c.free_per_day, usd(c.price_verify_units)),
        "url": c.public_url,
        "version": VERIFIER_VERSION,
        "provider": {"organization": "Agent Output Verifier (self-hosted)", "url": c.public_url},
        "documentationUrl": c.url("/docs"),
        "iconUrl": null,
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": c.url("/mcp"), "transport": "MCP Streamable HTTP"},
            {"url": c.url("/verify/schema"), "transport": "HTTP+JSON"}
        ],
        "capabilities": {
            "streaming": false,
            "pushNotifications": false,
            "stateTransitionHistory": false,
            "extensions": [{
                "uri": ATTESTATION_EXTENSION,
                "description": "Every response is signed: Ed25519 over the RFC 8785 (JCS) bytes of {context, algorithm, key_version, attested_at, response}; verify with the key whose keyVersion equals attestation.key_version.",
                "required": false,
                "params": {
                    "algorithm": "Ed25519",
                    "canonicalization": "RFC 8785 (JCS)",
                    "hashAlgorithm": "SHA-256",
                    "contexts": {"verification": VERIFY_CONTEXT, "trustScore": TRUST_SCORE_CONTEXT},
                    "signedDocument": ["algorithm", "attested_at", "context", "key_version", "response"],
                    "activeKeyVersion": active.key_version(),
                    "publicKeys": keys,
                    "requestHashTestVectors": request_hash_vectors(),
                }
            }]
        },
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": "verify_schema",
                "name": "Verify an agent's JSON output",
                "description": format!(
                    "POST {} (or {}, or the MCP tool verify_schema) with task_id, expected_schema and submitted_output, \
                     plus optional rules, bounds, enforce_rules, strict_content_check, detail, format_assertion, and agent_signature for a key-based agent_id. Returns pass/fail, \
                     the checks passed, repair hints and a signed receipt. Free allowance, then {}.",
                    c.url("/verify/schema"), c.url("/verify/deliverable"), usd(c.price_verify_units)),
                "tags": ["json-schema", "verification", "receipts", "invoices", "x402"],
                "examples": ["Check that an invoice's line totals add up to its total before paying the agent that produced it."],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            },
            {
                "id": "get_verification_record",
                "name": "An agent's trust score",
                "description": format!(
                    "GET {} (or the MCP tool get_verification_record): a signed trust score from the agent's verification \
                     history ({} when a score exists; a free signed no_data or unrated answer below {} counted verifications). \
                     The free, unsigned history is at {}.",
                    c.url("/score/{agent_id}"), usd(c.price_score_units), trust::MIN_SAMPLE, c.url("/reputation/{agent_id}")),
                "tags": ["reputation", "trust-score", "agents"],
                "examples": ["Before hiring an agent, look up how often its outputs passed verification."],
                "inputModes": ["application/json"],
                "outputModes": ["application/json"]
            }
        ]
    })
}
