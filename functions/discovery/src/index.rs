//! `GET /`: a JSON index of routes and documents for clients that ask for JSON, a small HTML
//! page for browsers.

use crate::llms::price_text;
use serde_json::{Value, json};
use verifier_engine::engine::VERIFIER_VERSION;
use verifier_service::Services;
use verifier_service::routes::documented;

/// The JSON index.
pub fn index_json(s: &Services) -> Value {
    let c = &s.config;
    let routes: Vec<Value> = documented()
        .map(|r| {
            json!({"method": r.method, "path": r.path, "url": c.url(r.path),
                   "function": r.function.name(), "price": price_text(s, r.pricing), "summary": r.summary})
        })
        .collect();
    json!({
        "service": "Agent Output Verifier",
        "version": VERIFIER_VERSION,
        "description": "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipts; x402 payments after a free daily allowance.",
        "routes": routes,
        "documents": {
            "openapi": c.url("/openapi.json"),
            "docs": c.url("/docs"),
            "llms_txt": c.url("/llms.txt"),
            "llms_full_txt": c.url("/llms-full.txt"),
            "agent_card": c.url("/.well-known/agent-card.json"),
            "x402": c.url("/.well-known/x402"),
            "api_catalog": c.url("/.well-known/api-catalog"),
            "health": c.url("/health"),
        },
        "mcp": {"url": c.url("/mcp"), "tools": ["verify_schema", "get_verification_record"]},
        "free_allowance_per_day": (c.free_per_day != verifier_service::config::UNLIMITED).then_some(c.free_per_day),
        "private": c.private,
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The HTML page.
pub fn index_html(s: &Services) -> String {
    let c = &s.config;
    let rows: String = documented()
        .map(|r| {
            format!(
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                r.method,
                escape(r.path),
                escape(&price_text(s, r.pricing)),
                escape(r.summary)
            )
        })
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Agent Output Verifier</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}td,th{{padding:.2rem .6rem;text-align:left;vertical-align:top}}</style>\
         </head><body>\n<h1>Agent Output Verifier</h1>\n<p>Verify an AI agent's JSON output against a JSON Schema and \
         business rules before paying for it: pass or fail, the checks passed, repair hints and an Ed25519-signed \
         receipt. {}</p>\n<p><a href=\"{}\">Interactive API docs</a> · \
         <a href=\"{}\">OpenAPI</a> · <a href=\"{}\">llms.txt</a> · <a href=\"{}\">Agent card</a> · <a href=\"{}\">x402</a></p>\n\
         <table><tr><th>method</th><th>route</th><th>price</th><th>what</th></tr>\n{rows}</table>\n</body></html>\n",
        if c.private {
            escape(&crate::llms::price_text(
                s,
                verifier_service::routes::Pricing::Verification,
            ))
        } else {
            format!(
                "{} free verifications per client address per UTC day.",
                c.free_per_day
            )
        },
        escape(&c.url("/docs")),
        escape(&c.url("/openapi.json")),
        escape(&c.url("/llms.txt")),
        escape(&c.url("/.well-known/agent-card.json")),
        escape(&c.url("/.well-known/x402")),
    )
}
