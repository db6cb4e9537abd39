//! x402 v2 wire types (x402 specification v2 §5; the TypeScript and Python SDKs agree).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// One way to pay: scheme, network, amount, asset and recipient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    pub scheme: String,
    /// CAIP-2 network id (`eip155:8453`, `solana:5eykt4…`).
    pub network: String,
    /// Atomic units, as a decimal string.
    pub amount: String,
    pub asset: String,
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

/// The resource a payment is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Bazaar service metadata: the service's name (printable ASCII, ≤ 32 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Bazaar service metadata: up to 5 topical tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

/// What a client must pay (the `PAYMENT-REQUIRED` header and the 402 body).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired {
    pub x402_version: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub resource: ResourceInfo,
    pub accepts: Vec<PaymentRequirements>,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub extensions: Map<String, Value>,
}

/// A client's payment (the `PAYMENT-SIGNATURE` header, or MCP `_meta["x402/payment"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload {
    pub x402_version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    /// A copy of the requirement the client chose.
    pub accepted: PaymentRequirements,
    /// Scheme-specific: EVM `{signature, authorization}`, Solana `{transaction}`.
    #[schema(value_type = Object)]
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub extensions: Option<Value>,
}

/// A facilitator's answer to `/verify`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    pub is_valid: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// A settlement's result (the `PAYMENT-RESPONSE` header, MCP `_meta["x402/payment-response"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettlementResponse {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
    /// Transaction hash (EVM) or signature (Solana); empty on failure.
    #[serde(default)]
    pub transaction: String,
    pub network: String,
}

/// One kind a facilitator supports (`GET /supported`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportedKind {
    pub x402_version: u64,
    pub scheme: String,
    pub network: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub extra: Map<String, Value>,
}

/// `GET /supported`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Supported {
    #[serde(default)]
    pub kinds: Vec<SupportedKind>,
}
