//! The x402 facilitator client: `POST /verify`, `POST /settle`, `GET /supported` (x402 v2 §7).

use super::auth::FacilitatorAuth;
use super::types::{
    PaymentPayload, PaymentRequirements, SettlementResponse, Supported, VerifyResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

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

/// A configured facilitator.
pub struct Facilitator {
    base: String,
    client: reqwest::Client,
    auth: Option<FacilitatorAuth>,
    verify_timeout: Duration,
    settle_timeout: Duration,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Exchange<'a> {
    x402_version: u8,
    payment_payload: &'a PaymentPayload,
    payment_requirements: &'a PaymentRequirements,
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

impl Facilitator {
    /// A client of the facilitator at `base` (e.g. `https://api.cdp.coinbase.com/platform/v2/x402`).
    pub fn new(base: &str, auth: Option<FacilitatorAuth>) -> Result<Self, FacilitatorError> {
        let client = crate::tls::reqwest_builder()
            .map_err(|e| FacilitatorError::Unreachable(e.to_string()))?
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("agent-output-verifier/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FacilitatorError::Unreachable(e.to_string()))?;
        Ok(Facilitator {
            base: base.trim_end_matches('/').to_owned(),
            client,
            auth,
            verify_timeout: Duration::from_secs(10),
            // Settlement waits for a receipt; API Gateway gives up at about 30 s.
            settle_timeout: Duration::from_secs(25),
        })
    }

    /// The base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Ask whether a payment is valid for a requirement.
    pub async fn verify(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError> {
        self.post("/verify", payload, requirements, self.verify_timeout)
            .await
    }

    /// Settle a verified payment.
    pub async fn settle(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettlementResponse, FacilitatorError> {
        self.post("/settle", payload, requirements, self.settle_timeout)
            .await
    }

    /// The kinds the facilitator supports (the Solana fee payer comes from here).
    pub async fn supported(&self) -> Result<Supported, FacilitatorError> {
        let mut request = self
            .client
            .get(format!("{}/supported", self.base))
            .timeout(self.verify_timeout);
        if let Some(auth) = &self.auth {
            request = request.header(
                "authorization",
                auth.header("GET", &self.base, "/supported")
                    .map_err(FacilitatorError::Auth)?,
            );
        }
        let response = request
            .send()
            .await
            .map_err(|e| FacilitatorError::Unreachable(e.to_string()))?;
        read(response).await
    }

    async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
        timeout: Duration,
    ) -> Result<T, FacilitatorError> {
        let body = serde_json::to_vec(&Exchange {
            x402_version: 2,
            payment_payload: payload,
            payment_requirements: requirements,
        })
        .map_err(|_| FacilitatorError::Body)?;
        // One retry when the request never left (connection refused or reset before sending).
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self
                .client
                .post(format!("{}{path}", self.base))
                .header("content-type", "application/json")
                .timeout(timeout)
                .body(body.clone());
            if let Some(auth) = &self.auth {
                request = request.header(
                    "authorization",
                    auth.header("POST", &self.base, path)
                        .map_err(FacilitatorError::Auth)?,
                );
            }
            match request.send().await {
                Ok(response) => return read(response).await,
                Err(e) if e.is_connect() && attempt < 2 => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) if e.is_connect() => {
                    return Err(FacilitatorError::Unreachable(e.to_string()));
                }
                Err(e) => return Err(FacilitatorError::NoAnswer(e.to_string())),
            }
        }
    }
}

/// The JSON answer; the reference facilitators answer 200 with `isValid`/`success` false on
/// refusals, some answer 4xx with the same JSON: both are read.
async fn read<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, FacilitatorError> {
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| FacilitatorError::NoAnswer(e.to_string()))?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Ok(v),
        Err(_) if status.is_success() => Err(FacilitatorError::Body),
        Err(_) => Err(FacilitatorError::Status(status.as_u16())),
    }
}
