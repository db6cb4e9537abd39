//! `/.well-known/x402`: the x402scan-compatible discovery manifest (`version: 1`, `resources`),
//! with each paid resource's price and payment options as extra keys.

use serde_json::{Value, json};
use verifier_core::config::usd;
use verifier_core::routes::{Pricing, paid};
use verifier_core::service::Services;

/// The price of a paid route, in USDC atomic units.
pub fn price_units(s: &Services, pricing: Pricing) -> u64 {
    match pricing {
        Pricing::ScoreLookup => s.config.price_score_units,
        _ => s.config.price_verify_units,
    }
}

/// The manifest.
pub fn manifest(s: &Services) -> Value {
    let c = &s.config;
    let resources: Vec<String> = paid().map(|r| c.url(r.path)).collect();
    let details: Vec<Value> = paid()
        .map(|r| {
            let units = price_units(s, r.pricing);
            json!({
                "resource": c.url(r.path),
                "method": r.method,
                "description": r.summary,
                "price": {"amount": units.to_string(), "currency": "USDC", "decimals": 6, "usd": usd(units)},
                "free": match r.pricing {
                    Pricing::Verification => json!({"calls_per_client_per_day": c.free_per_day, "shared_with": ["/verify/schema", "/verify/deliverable", "mcp:verify_schema"]}),
                    _ => json!({"when": "the agent has no history (signed no_data answer)"}),
                },
                "accepts": s.payments.accepts(c, units),
            })
        })
        .collect();
    json!({
        "version": 1,
        "resources": resources,
        "instructions": format!(
            "Unpaid requests get HTTP 402 with a PAYMENT-REQUIRED header (base64 JSON, x402 v2). Retry with a \
             PAYMENT-SIGNATURE header; the answer carries PAYMENT-RESPONSE. Verification is free for the first {} \
             calls per client address per UTC day. See {} for details.",
            c.free_per_day, c.url("/llms.txt")),
        "x402Version": 2,
        "paidResources": details,
        "mcp": {"url": c.url("/mcp"), "tools": ["verify_schema", "get_verification_record"]},
    })
}
