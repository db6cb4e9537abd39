//! x402 v2 payment requirements and the `free_trial` object of a 402 (SERVICE.md §7–§8).

use crate::config::{BASE_NETWORK, BASE_USDC, SOLANA_NETWORK, SOLANA_USDC, ServiceConfig};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The accepted payment options for a price.
pub fn accepts(config: &ServiceConfig, amount_units: u64) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(pay_to) = &config.pay_to_base {
        out.push(json!({
            "scheme": "exact",
            "network": BASE_NETWORK,
            "amount": amount_units.to_string(),
            "asset": BASE_USDC,
            "payTo": pay_to,
            "maxTimeoutSeconds": config.payment_timeout_seconds,
            "extra": {"name": "USD Coin", "version": "2"}
        }));
    }
    if let Some(pay_to) = &config.pay_to_solana {
        let mut extra = serde_json::Map::new();
        if let Some(fee_payer) = &config.solana_fee_payer {
            extra.insert("feePayer".into(), fee_payer.clone().into());
        }
        out.push(json!({
            "scheme": "exact",
            "network": SOLANA_NETWORK,
            "amount": amount_units.to_string(),
            "asset": SOLANA_USDC,
            "payTo": pay_to,
            "maxTimeoutSeconds": config.payment_timeout_seconds,
            "extra": extra
        }));
    }
    out
}

/// The x402 v2 PaymentRequired object for a resource.
pub fn payment_required(
    config: &ServiceConfig,
    path: &str,
    description: &str,
    amount_units: u64,
    error: &str,
) -> Value {
    json!({
        "x402Version": 2,
        "error": error,
        "resource": {"url": config.url(path), "description": description, "mimeType": "application/json"},
        "accepts": accepts(config, amount_units),
        "extensions": {}
    })
}

/// The `PAYMENT-REQUIRED` header value: standard base64 of the JSON.
pub fn encode_header(value: &Value) -> String {
    STANDARD.encode(serde_json::to_vec(value).unwrap_or_default())
}

/// The caller's free-allowance state, as a 402 body reports it.
pub struct FreeTrialState<'a> {
    pub used: u64,
    pub resets_at: &'a str,
}

/// The `free_trial` object.
pub fn free_trial(config: &ServiceConfig, state: &FreeTrialState<'_>) -> Value {
    let limit = config.free_per_day;
    let remaining = limit.saturating_sub(state.used);
    let available = remaining > 0;
    let message = if available {
        format!(
            "This client has {remaining} of {limit} free checks left today (REST and MCP share them); they reset at {}.",
            state.resets_at
        )
    } else {
        format!(
            "This client's {limit} free checks for today are used up (REST and MCP share them); they reset at {}. Payment applies until then.",
            state.resets_at
        )
    };
    let mut obj = json!({
        "available": available,
        "via": "mcp+rest",
        "transport": "streamable-http",
        "url": config.url("/mcp"),
        "tool": "verify_schema",
        "calls_per_client_per_day": limit,
        "remaining_calls_today": remaining,
        "resets_at": state.resets_at,
        "client": "identified by request IP address; the same address's REST and MCP verification calls share one allowance",
        "rest_free": true,
        "message": message,
    });
    if !available {
        obj["code"] = "free_trial_exhausted".into();
    }
    obj
}
