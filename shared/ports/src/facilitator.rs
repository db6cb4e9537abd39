//! The facilitator port: an x402 facilitator's `POST /verify`, `POST /settle` and
//! `GET /supported` (x402 v2 §7). `verifier-facilitator-http` is its HTTP adapter.

use crate::x402::{
    PaymentPayload, PaymentRequirements, SettlementResponse, Supported, VerifyResponse,
};
use async_trait::async_trait;

/// Why the facilitator gave no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum FacilitatorError {
    /// The request never left: no connection could be made.
    #[error("the facilitator could not be reached: {0}")]
    Unreachable(String),
    /// The request was sent (or may have been) but no answer came back: what the facilitator
    /// did with it is unknown.
    #[error("the facilitator gave no answer: {0}")]
    NoAnswer(String),
    #[error("the facilitator answered HTTP {0} without a usable body")]
    Status(u16),
    #[error("the facilitator's answer is not the expected JSON")]
    Body,
    #[error("the facilitator credentials cannot sign a request: {0}")]
    Auth(String),
}

impl FacilitatorError {
    /// Whether the request certainly never reached the facilitator (so nothing was done).
    pub fn never_sent(&self) -> bool {
        matches!(
            self,
            FacilitatorError::Unreachable(_) | FacilitatorError::Auth(_)
        )
    }
}

/// A configured facilitator.
#[async_trait]
pub trait Facilitator: Send + Sync {
    /// Its base URL (for logs and documents).
    fn url(&self) -> &str;

    /// Ask whether a payment is valid for a requirement.
    async fn verify(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError>;

    /// Settle a verified payment.
    async fn settle(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettlementResponse, FacilitatorError>;

    /// The kinds the facilitator supports (the Solana fee payer comes from here).
    async fn supported(&self) -> Result<Supported, FacilitatorError>;
}
