//! What the service offers: the x402 v2 payment requirements for a price, the PaymentRequired
//! answer, and the `free_trial` object of an unpaid verification's 402 (SERVICE.md §7–§8).

use super::bazaar;
use super::types::{PaymentRequired, PaymentRequirements, ResourceInfo};
use crate::config::{BASE_NETWORK, BASE_USDC, SOLANA_NETWORK, SOLANA_USDC, ServiceConfig};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The payment options for a price: Base when a Base pay-to address is configured, Solana
/// when a Solana address and the facilitator's fee payer are known.
pub fn accepts(
    config: &ServiceConfig,
    fee_payer: Option<&str>,
    amount_units: u64,
) -> Vec<PaymentRequirements> {
    let mut out = Vec::new();
    if let Some(pay_to) = &config.pay_to_base {
        let mut extra = Map::new();
        extra.insert("name".into(), "USD Coin".into());
        extra.insert("version".into(), "2".into());
        out.push(PaymentRequirements {
            scheme: "exact".into(),
            network: BASE_NETWORK.into(),
            amount: amount_units.to_string(),
            asset: BASE_USDC.into(),
            pay_to: pay_to.clone(),
            max_timeout_seconds: config.payment_timeout_seconds,
            extra,
        });
    }
    if let (Some(pay_to), Some(fee_payer)) = (&config.pay_to_solana, fee_payer) {
        let mut extra = Map::new();
        extra.insert("feePayer".into(), fee_payer.into());
        out.push(PaymentRequirements {
            scheme: "exact".into(),
            network: SOLANA_NETWORK.into(),
            amount: amount_units.to_string(),
            asset: SOLANA_USDC.into(),
            pay_to: pay_to.clone(),
            max_timeout_seconds: config.payment_timeout_seconds,
            extra,
        });
    }
    out
}

/// The resource a payment buys, as PaymentRequired names it, with the Bazaar's service
/// metadata.
pub fn resource(url: String, description: &str) -> ResourceInfo {
    ResourceInfo {
        url,
        description: Some(description.to_owned()),
        mime_type: Some("application/json".into()),
        service_name: Some(bazaar::SERVICE_NAME.to_owned()),
        tags: Some(bazaar::TAGS.iter().map(|t| (*t).to_owned()).collect()),
    }
}

/// The x402 v2 PaymentRequired object: the payment-identifier extension is declared always,
/// the bazaar listing (`{info, schema}`) when the resource has one.
pub fn payment_required(
    resource: ResourceInfo,
    accepts: Vec<PaymentRequirements>,
    error: &str,
    listing: Option<Value>,
) -> PaymentRequired {
    let mut extensions = Map::from_iter([(
        super::identifier::PAYMENT_IDENTIFIER.to_owned(),
        super::identifier::declaration(),
    )]);
    if let Some(listing) = listing {
        extensions.insert(bazaar::BAZAAR.to_owned(), listing);
    }
    PaymentRequired {
        x402_version: 2,
        error: Some(error.to_owned()),
        resource,
        accepts,
        extensions,
    }
}

/// A header value: standard base64 (with padding) of the JSON.
pub fn encode_header<T: Serialize>(value: &T) -> String {
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
