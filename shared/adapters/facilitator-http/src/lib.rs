//! The x402 facilitator's HTTP client, the service's facilitator port adapter: `POST /verify`,
//! `POST /settle`, `GET /supported` (x402 v2 §7), with a static bearer token or a CDP API key
//! ([`auth`]), over rustls with Mozilla's roots ([`tls`]).

pub mod auth;
pub mod tls;

use async_trait::async_trait;
use auth::FacilitatorAuth;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;
pub use verifier_ports::facilitator::{Facilitator, FacilitatorError};
use verifier_ports::x402::{
    PaymentPayload, PaymentRequirements, SettlementResponse, Supported, VerifyResponse,
};

/// A facilitator reached over HTTPS.
pub struct HttpFacilitator {
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

#[async_trait]
impl Facilitator for HttpFacilitator {
    /// The base URL.
    fn url(&self) -> &str {
        &self.base
    }

    /// Ask whether a payment is valid for a requirement.
    async fn verify(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError> {
        self.post("/verify", payload, requirements, self.verify_timeout)
            .await
    }

    /// Settle a verified payment.
    async fn settle(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettlementResponse, FacilitatorError> {
        self.post("/settle", payload, requirements, self.settle_timeout)
            .await
    }

    /// The kinds the facilitator supports (the Solana fee payer comes from here).
    async fn supported(&self) -> Result<Supported, FacilitatorError> {
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
}

impl HttpFacilitator {
    /// A client of the facilitator at `base` (e.g. `https://api.cdp.coinbase.com/platform/v2/x402`).
    pub fn new(base: &str, auth: Option<FacilitatorAuth>) -> Result<Self, FacilitatorError> {
        let client = tls::reqwest_builder()
            .map_err(|e| FacilitatorError::Unreachable(e.to_string()))?
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("agent-output-verifier/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FacilitatorError::Unreachable(e.to_string()))?;
        Ok(HttpFacilitator {
            base: base.trim_end_matches('/').to_owned(),
            client,
            auth,
            verify_timeout: Duration::from_secs(10),
            // Settlement waits for a receipt; API Gateway gives up at about 30 s.
            settle_timeout: Duration::from_secs(25),
        })
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

/// How to reach the facilitator, as configuration gives it.
#[derive(Debug, Clone, Default)]
pub struct FacilitatorSettings {
    /// Base URL; none: payments are refused as not configured.
    pub url: Option<String>,
    /// A static bearer token (self-hosted facilitators).
    pub bearer: Option<String>,
    /// A CDP API key id and its secret (PEM EC key or base64 Ed25519 key).
    pub key_id: Option<String>,
    pub key_secret: Option<String>,
}

impl FacilitatorSettings {
    /// The facilitator client these settings describe.
    pub fn facilitator(&self) -> Result<Option<HttpFacilitator>, String> {
        let Some(url) = self.url.as_deref().filter(|u| !u.trim().is_empty()) else {
            return Ok(None);
        };
        let auth = match (&self.bearer, &self.key_id, &self.key_secret) {
            (Some(token), None, None) => Some(FacilitatorAuth::Bearer(token.clone())),
            (None, Some(id), Some(secret)) => Some(FacilitatorAuth::Cdp {
                key_id: id.clone(),
                key: auth::CdpKeyPair::parse(secret)?,
            }),
            (None, None, None) => None,
            _ => {
                return Err(
                    "give either a bearer token, or a key id together with its secret".into(),
                );
            }
        };
        HttpFacilitator::new(url, auth)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// The same as a port for the service's payment gate.
    pub fn port(&self) -> Result<Option<std::sync::Arc<dyn Facilitator>>, String> {
        Ok(self
            .facilitator()?
            .map(|f| std::sync::Arc::new(f) as std::sync::Arc<dyn Facilitator>))
    }
}
