//! The x402 discovery manifests: `/.well-known/x402`, x402scan's format (`version: 1`,
//! `resources`) with each paid resource's price and payment options as extra keys, and
//! `/.well-known/x402.json`, the draft per-origin manifest of x402's well-known-discovery
//! (`x402Version: 2`, `items` with `accepts`, `input` and `output` lifted from the bazaar
//! listings the live 402s carry).

use serde_json::{Map, Value, json};
use verifier_engine::trust;
use verifier_service::config::usd;
use verifier_service::listings::Listing;
use verifier_service::payments::resource;
use verifier_service::routes::{Pricing, paid};
use verifier_service::{Services, score, verify};

/// The price of a paid route, in USDC atomic units.
pub fn price_units(s: &Services, pricing: Pricing) -> u64 {
    match pricing {
        Pricing::ScoreLookup => s.config.price_score_units,
        _ => s.config.price_verify_units,
    }
}

/// The manifest (no paid resources in a private deployment).
pub fn manifest(s: &Services) -> Value {
    let c = &s.config;
    if c.private {
        return json!({
            "version": 1,
            "resources": [],
            "instructions": "A private deployment: no payment is offered or taken, and no route answers 402.",
            "x402Version": 2,
            "paidResources": [],
            "mcp": {"url": c.url("/mcp"), "tools": ["verify_schema", "get_verification_record"]},
        });
    }
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
                    _ => json!({"when": format!("the agent has fewer than {} counted verifications (signed no_data or unrated answer)", trust::MIN_SAMPLE)}),
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

/// One item of the per-origin manifest: the bazaar listing's `info` lifted to `input` and
/// `output` (without the meta-schema envelope), with the route template for dynamic routes.
fn item(
    s: &Services,
    kind: &str,
    url: String,
    description: &str,
    listing: Listing,
    units: u64,
) -> Value {
    let bazaar = s.listings.get(s, listing);
    let mut input: Map<String, Value> = bazaar["info"]["input"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    input.remove("type");
    if let Some(template) = bazaar.get("routeTemplate") {
        input.insert("routeTemplate".into(), template.clone());
    }
    let output = &bazaar["info"]["output"];
    json!({
        "resource": resource(url, description),
        "type": kind,
        "accepts": s.payments.accepts(&s.config, units),
        "input": input,
        "output": {"mimeType": "application/json", "example": output["example"]},
    })
}

/// `/.well-known/x402.json` (no items in a private deployment: nothing is paid for).
pub fn origin_manifest(s: &Services) -> Value {
    let c = &s.config;
    if c.private {
        return json!({"x402Version": 2, "lastUpdated": s.clock.now().unix_timestamp(), "items": []});
    }
    let mut items: Vec<Value> = paid()
        .map(|r| {
            let (description, listing) = match r.pricing {
                Pricing::ScoreLookup => (score::DESCRIPTION, Listing::HTTP_SCORE),
                _ => (verify::DESCRIPTION, Listing::HTTP_VERIFY),
            };
            let mut it = item(
                s,
                "http",
                c.url(r.path),
                description,
                listing,
                price_units(s, r.pricing),
            );
            if r.path.contains('{') {
                // The live 402 names the route's template; the listing's path is the colon form.
                it["resource"]["url"] = c.url(&r.path.replace('{', ":").replace('}', "")).into();
            }
            it
        })
        .collect();
    items.push(item(
        s,
        "mcp",
        c.url("/mcp"),
        verify::DESCRIPTION,
        Listing::MCP_VERIFY,
        c.price_verify_units,
    ));
    items.push(item(
        s,
        "mcp",
        c.url("/mcp"),
        score::DESCRIPTION,
        Listing::MCP_RECORD,
        c.price_score_units,
    ));
    json!({
        "x402Version": 2,
        "lastUpdated": s.clock.now().unix_timestamp(),
        "items": items,
    })
}
