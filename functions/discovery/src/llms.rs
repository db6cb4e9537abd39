//! `/llms.txt` (short) and `/llms-full.txt` (with worked examples): the service described for
//! agents, generated from the route table, the configuration and the error tables.

use crate::examples;
use std::fmt::Write as _;
use verifier_engine::json::MAX_FIELD_DEPTH;
use verifier_engine::request::MAX_ID_CHARS;
use verifier_engine::trust;
use verifier_service::Services;
use verifier_service::config::{BASE_NETWORK, BASE_USDC, SOLANA_NETWORK, SOLANA_USDC, usd};
use verifier_service::errors::ERROR_CODES;
use verifier_service::payments::PAYMENT_ERROR_CODES;
use verifier_service::routes::{Pricing, documented};
use verifier_service::score::RECENT_OUTCOMES;

/// The heading of the section that publishes the live allowance.
pub const FREE_ALLOWANCE_HEADING: &str = "## Free allowance";

/// How a route is priced, in words.
pub fn price_text(s: &Services, pricing: Pricing) -> String {
    let c = &s.config;
    if c.private && pricing != Pricing::PerTool {
        return private_price(c);
    }
    match pricing {
        Pricing::Free => "free".into(),
        Pricing::Verification => format!(
            "{} free per client address per UTC day, then {} (USDC)",
            c.free_per_day,
            usd(c.price_verify_units)
        ),
        Pricing::ScoreLookup => format!(
            "{} (USDC) once the agent is rated; free signed no_data or unrated answer below {} counted verifications",
            usd(c.price_score_units),
            trust::MIN_SAMPLE
        ),
        Pricing::PerTool => "each tool as its REST twin".into(),
    }
}

/// The rules and bounds reference, from the descriptions the request schema carries (one
/// source for the OpenAPI document, the MCP tool's input schema and this text).
fn rule_reference(out: &mut String) {
    use verifier_engine::request_schema::{bound_schema, rule_schema};
    let _ = writeln!(out, "## Rules and bounds\n");
    for (title, schema) in [("A rule", rule_schema()), ("A bound", bound_schema())] {
        let _ = writeln!(
            out,
            "{title}: {}\n",
            schema["description"].as_str().unwrap_or_default()
        );
        if let Some(members) = schema["properties"].as_object() {
            for (name, member) in members {
                let _ = writeln!(
                    out,
                    "- `{name}`: {}",
                    member["description"].as_str().unwrap_or_default()
                );
            }
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "### Expression rules\n\n{}\n",
        verifier_engine::expression::GUIDE
    );
}

/// A private deployment's price of any route.
fn private_price(c: &verifier_service::config::ServiceConfig) -> String {
    if c.free_per_day == verifier_service::config::UNLIMITED {
        "free (a private deployment: no payments)".into()
    } else {
        format!(
            "free (a private deployment: no payments), {} verifications per client address per UTC day",
            c.free_per_day
        )
    }
}

fn short(s: &Services, out: &mut String) {
    let c = &s.config;
    let _ = writeln!(out, "# Agent Output Verifier\n");
    let _ = writeln!(
        out,
        "> Before a buyer pays an AI agent for a structured result, ask this service whether the JSON \
         output satisfies a JSON Schema and business rules. It answers pass or fail with the share of checks \
         passed, repair hints and an Ed25519-signed receipt anyone can verify offline. Paid per call with x402 \
         v2 (USDC on Base or Solana) after a free daily allowance; REST and MCP.\n"
    );
    if c.private {
        let _ = writeln!(
            out,
            "**This is a private deployment: no payment is offered or taken, and no route answers 402.** \
             Every valid request within the body limit is served{}.\n",
            if c.free_per_day == verifier_service::config::UNLIMITED {
                String::new()
            } else {
                format!(
                    "; each client address may make {} verifications per UTC day (then 429 allowance_exhausted)",
                    c.free_per_day
                )
            }
        );
    }
    let _ = writeln!(out, "Base URL: {}\n", c.public_url);

    let _ = writeln!(out, "## Routes\n");
    let _ = writeln!(out, "| method | route | price | what |\n|---|---|---|---|");
    for r in documented() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            r.method,
            c.url(r.path),
            price_text(s, r.pricing),
            r.summary
        );
    }
    let _ = writeln!(
        out,
        "\nMCP tools at {}: `verify_schema` (= POST /verify/schema) and `get_verification_record` (= GET /score/{{agent_id}}).\n",
        c.url("/mcp")
    );

    let _ = writeln!(out, "## Pricing\n");
    let _ = writeln!(
        out,
        "- Verification: {} = {} USDC atomic units (6 decimals). Score lookup with data: {} = {} units.",
        usd(c.price_verify_units),
        c.price_verify_units,
        usd(c.price_score_units),
        c.price_score_units
    );
    let mut networks = Vec::new();
    if c.pay_to_base.is_some() {
        networks.push(format!("Base `{BASE_NETWORK}` (USDC `{BASE_USDC}`)"));
    }
    if c.pay_to_solana.is_some() {
        networks.push(format!(
            "Solana `{SOLANA_NETWORK}` (USDC mint `{SOLANA_USDC}`)"
        ));
    }
    let _ = writeln!(
        out,
        "- Networks offered by this deployment: {}.",
        if networks.is_empty() {
            "none configured (payments are not accepted here)".to_owned()
        } else {
            networks.join("; ")
        }
    );
    let _ = writeln!(
        out,
        "- Unpaid request → HTTP 402 with a `PAYMENT-REQUIRED` header (base64 JSON PaymentRequired, x402 v2) and the same requirements in the body. Pay by retrying with `PAYMENT-SIGNATURE` (base64 JSON PaymentPayload); the answer carries `PAYMENT-RESPONSE` (the settlement). A payment is accepted once.\n- A `fail` result is a complete answer and costs the same as a `pass`.\n"
    );

    let _ = writeln!(out, "{FREE_ALLOWANCE_HEADING}\n");
    let _ = writeln!(
        out,
        "Each client address gets **{} free verifications per UTC day**, shared by POST /verify/schema, POST /verify/deliverable and the MCP tool verify_schema. The client is the address the edge saw (never a header). Answers within the allowance carry `Free-Allowance-Remaining`, `Free-Allowance-Limit` and `Free-Allowance-Resets`. Bodies over {} bytes, requests carrying a payment and every request after the allowance is spent go to payment (402, with a `free_trial` object; `code: free_trial_exhausted` once spent). Score lookups have no free allowance.\n",
        c.free_per_day, c.free_body_limit
    );

    let _ = writeln!(out, "## Request (POST /verify/schema)\n");
    let _ = writeln!(
        out,
        "A JSON object (at most {} bytes; larger bodies get 413):\n\n\
         - `task_id` (string, 1–{MAX_ID_CHARS} characters, required)\n\
         - `agent_id` (string, 1–{MAX_ID_CHARS} characters, or null; `test-` IDs are never recorded, nor is a verification that checked nothing). A plain label is `unverified`: anyone may write under it. A key — `did:key:z6Mk…` (Ed25519), `eip155:<chain>:0x…` (EIP-191 personal_sign) or `solana:<chain>:<address>` (Ed25519) — is `verified`: only deliverables its holder signed count\n\
         - `agent_signature` (string; required for a key-based `agent_id`, refused otherwise): the agent's signature of the UTF-8 message `agent-output-verifier deliverable v1` / `agent_id: <JSON string>` / `task_id: <JSON string>` / `output_sha256: <output_hash>` (lines joined by a newline), `0x`-hex for eip155, base58 for Ed25519; `verifier agent sign` makes one. A missing or wrong signature is a 422 and records nothing\n\
         - `expected_schema` (JSON Schema object or boolean, required; draft 2020-12 unless `$schema` says 4, 6, 7 or 2019-09; no remote or file `$ref`)\n\
         - `submitted_output` (any JSON value, required; `null` is allowed but the key must be present)\n\
         - `rules` (array or null): `{{type, field, equals_field, equals, other_field, value, in_field, values, tolerance, if_present}}` with `type` one of `sum_equals`, `gte`, `lte`, `exists_in`, `unique`; paths like `total`, `items[].price`\n\
         - `bounds` (object or null): path → `{{min, max, if_present}}`\n\
         - `enforce_rules` (bool, default false: rule violations are flags only), `strict_content_check` (bool, default false), `detail` (`full` or `compact`), `format_assertion` (bool, default true: `format` is checked in every draft, so a `date` must be a real date; false makes it an annotation only, the 2019-09/2020-12 default; the receipt says which applied)\n\n\
         Strict JSON: duplicate keys, integers beyond ±(2^53−1), non-finite numbers and nesting deeper than {MAX_FIELD_DEPTH} levels inside a field are refused with 422.\n",
        c.hard_body_limit
    );

    rule_reference(out);

    let _ = writeln!(out, "## Verifying a receipt\n");
    let _ = writeln!(
        out,
        "1. GET {} and find the `capabilities.extensions` entry whose `uri` starts with `urn:json-schema-verifier:extension:attestation:`; pick the `params.publicKeys` entry whose `keyVersion` equals `attestation.key_version` (base64 of the raw 32-byte Ed25519 key).\n\
         2. Remove `attestation` from the response; call the rest R.\n\
         3. Build `{{\"context\": C, \"algorithm\": \"Ed25519\", \"key_version\": attestation.key_version, \"attested_at\": attestation.timestamp, \"response\": R}}` with C = `json-schema-verifier/verify-schema-attestation/v1` for verifications and `json-schema-verifier/trust-score-attestation/v1` for scores.\n\
         4. Canonicalize it with RFC 8785 (JCS) and check the base64 `attestation.signature` with Ed25519 over those bytes.\n\
         5. Check that it is about what you hold: recompute `output_hash`, `schema_hash`, `rules_hash` (SHA-256 of the JCS of `submitted_output`, `expected_schema`, `{{\"bounds\", \"rules\"}}` as sent) and, in a full receipt, `request_hash`; `verified_at` equals `attestation.timestamp`. A signature alone only proves the service signed it: required for any receipt you did not request yourself (a seller can attach a genuine receipt for another output, a laxer schema or other rules).\n\n\
         Offline, with this project's CLI: `verifier receipt verify RESPONSE.json --agent-card {} --request REQUEST.json`; in Python, `agent_output_verifier.verify_receipt(response, card, request=request)`.\n",
        c.url("/.well-known/agent-card.json"),
        c.url("/.well-known/agent-card.json")
    );

    let _ = writeln!(out, "## Score and reputation\n");
    let _ = writeln!(
        out,
        "GET /score/{{agent_id}}: a signed trust score (method `{}` version {}: lower bound of the 95% Wilson interval of the pass rate; a few passes do not look like a long clean record). Only verifications that checked something count; for a key-based agent ID only the deliverables its key signed, each once. Below {} counted verifications the answer is free and signed, with `trust_score: null` and `reason: \"unrated\"` (`no_data` with none). Every answer states its evidence: `sample_size` (counted verifications), `passes`, `fails`, `paid_verifications`, `checks_covered`, `first_seen`, `last_seen` and `identity` (`verified` for a key-based ID, `unverified` for a plain label anyone may write under). GET /reputation/{{agent_id}}: free, the same counts and the {RECENT_OUTCOMES} most recent outcomes (each with `paid` and `checks`), from which the score can be recomputed.\n",
        trust::METHOD,
        trust::METHOD_VERSION,
        trust::MIN_SAMPLE
    );

    let _ = writeln!(out, "## Errors\n");
    let _ = writeln!(
        out,
        "Every error has one shape: `code`, `message`, `status`, `retryable`, `retry_after` (when retryable), `charged: false`, `next_actions`, `fields` (`{{field, problem, fix}}`, every problem at once) and `guidance`. Errors never echo the request.\n"
    );
    let _ = writeln!(out, "| code | status | meaning |\n|---|---|---|");
    for (code, status, meaning) in ERROR_CODES {
        let _ = writeln!(out, "| `{code}` | {status} | {meaning} |");
    }
    let _ = writeln!(out, "\n## Payment errors\n");
    let _ = writeln!(
        out,
        "A refused payment is answered 402 with a new PaymentRequired whose `error` names the code, and a `payment_error` object `{{code, message, fix, reason?}}` in the body. Nothing is charged.\n"
    );
    let _ = writeln!(out, "| code | status | meaning |\n|---|---|---|");
    for (code, status, meaning) in PAYMENT_ERROR_CODES {
        let _ = writeln!(out, "| `{code}` | {status} | {meaning} |");
    }
    let _ = writeln!(out, "\n## Documents\n");
    for (name, path) in [
        ("OpenAPI 3.1", "/openapi.json"),
        ("Interactive docs", "/docs"),
        ("Agent card (keys)", "/.well-known/agent-card.json"),
        ("x402 manifest", "/.well-known/x402"),
        ("API catalog (RFC 9727)", "/.well-known/api-catalog"),
        ("Full version of this file", "/llms-full.txt"),
    ] {
        let _ = writeln!(out, "- {name}: {}", c.url(path));
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// `/llms.txt`.
pub fn llms_txt(s: &Services) -> String {
    let mut out = String::with_capacity(8 * 1024);
    short(s, &mut out);
    out
}

/// `/llms-full.txt`: the short text plus worked examples computed by this server.
pub fn llms_full_txt(s: &Services) -> String {
    let c = &s.config;
    let mut out = String::with_capacity(32 * 1024);
    short(s, &mut out);
    let draft = examples::invoice_request("test-seller-invoice-agent");
    let fixed = examples::corrected_request("test-seller-invoice-agent");
    let _ = writeln!(
        out,
        "\n## Worked example: an invoice whose line totals do not add up\n"
    );
    let _ = writeln!(
        out,
        "```bash\ncurl -s {} -H 'content-type: application/json' -d @request.json\n```\n\nrequest.json:\n\n```json\n{}\n```\n\nThe answer (computed by this server; `test-` agent IDs are never recorded):\n\n```json\n{}\n```\n",
        c.url("/verify/schema"),
        pretty(&draft),
        pretty(&examples::response_to(s, &draft))
    );
    let _ = writeln!(out, "## Worked example: the corrected invoice passes\n");
    let _ = writeln!(
        out,
        "With `total` 129.5 the sum rule holds:\n\n```json\n{}\n```\n",
        pretty(&examples::response_to(s, &fixed))
    );
    let expressions = examples::expression_request("test-seller-invoice-agent");
    let _ = writeln!(
        out,
        "## Worked example: business rules as expressions (CEL)\n\nThe totals add up (to the cent: `tolerance` 0.005), but one line's total is not its quantity times its unit price and the invoice is due before it was issued:\n\n```json\n{}\n```\n\nThe answer:\n\n```json\n{}\n```\n",
        pretty(&expressions),
        pretty(&examples::response_to(s, &expressions))
    );
    let _ = writeln!(out, "## Worked example: paying with x402\n");
    let _ = writeln!(
        out,
        "1. Once the allowance is spent, POST the same request: the answer is 402 and its `PAYMENT-REQUIRED` header is base64 of the following, plus `extensions.bazaar` (the x402 Bazaar listing: the input and output with examples and their JSON Schema, left out here):\n\n```json\n{}\n```\n\n\
         2. Sign one entry of `accepts` with an x402 v2 client (EIP-3009 `transferWithAuthorization` on Base; a partially signed SPL transfer on Solana), put the PaymentPayload, base64-encoded, in `PAYMENT-SIGNATURE` and POST again.\n\
         3. The 200 answer carries `PAYMENT-RESPONSE`: base64 of `{{\"success\": true, \"transaction\": \"0x…\", \"network\": \"{BASE_NETWORK}\", \"payer\": \"0x…\"}}`. Sending the same payment again is refused (`payment_replayed`).\n\n\
         Python: `x402ClientSync().register(\"{BASE_NETWORK}\", ExactEvmClientScheme(Account.from_key(KEY)))`, then `client.create_payment_payload(decode_payment_required_header(r.headers[\"PAYMENT-REQUIRED\"]))`.\n",
        pretty(
            &serde_json::to_value(verifier_service::payments::payment_required(
                verifier_service::payments::resource(
                    c.url("/verify/schema"),
                    verifier_service::verify::DESCRIPTION
                ),
                s.payments.accepts(c, c.price_verify_units),
                "Payment required",
                None
            ))
            .unwrap_or_default()
        )
    );
    let _ = writeln!(out, "## Worked example: MCP\n");
    let _ = writeln!(
        out,
        "```json\n{}\n```\n\nThe tool result's `structuredContent` is the same signed response as REST; once the allowance is spent the result has `isError: true` with the PaymentRequired in `structuredContent` and `content[0].text`, and `_meta.free_trial.code = \"free_trial_exhausted\"`. Pay by retrying with `params._meta[\"x402/payment\"]` = the PaymentPayload object; the settlement comes back in `result._meta[\"x402/payment-response\"]`.\n",
        pretty(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "verify_schema", "arguments": fixed}
        }))
    );
    out
}
