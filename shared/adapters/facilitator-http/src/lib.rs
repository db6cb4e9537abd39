//! The x402 facilitator's HTTP client, the service's facilitator port adapter: `POST /verify`,
//! `POST /settle`, `GET /supported` (x402 v2 §7), with a static bearer token or a CDP API key
//! ([`auth`]), over rustls with Mozilla's roots ([`tls`]).

pub mod auth;
pub mod tls;

use async_trait::async_trait;
use auth::FacilitatorAuth;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::{Arc, RwLock};
use std::time::Duration;
pub use verifier_ports::facilitator::{Facilitator, FacilitatorError};
use verifier_ports::x402::{
    PaymentPayload, PaymentRequirements, SettlementResponse, Supported, VerifyResponse,
};

/// A facilitator reached over HTTPS.
pub struct HttpFacilitator {
    base: String,
    client: reqwest::Client,
    auth: Credentials,
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
        if let Some(auth) = self.auth.current() {
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

/// The credentials a facilitator client signs with, replaceable while it serves (a CDP key
/// secret refreshed from SSM): requests already signed keep the old key, later ones use the
/// new one.
#[derive(Clone)]
pub struct Credentials(Arc<RwLock<Option<Arc<FacilitatorAuth>>>>);

impl Credentials {
    fn current(&self) -> Option<Arc<FacilitatorAuth>> {
        match self.0.read() {
            Ok(auth) => auth.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Sign with `secret` from now on (a CDP key's; the key id stays). Refused, keeping the
    /// current key, when the credentials are not a CDP key or the secret does not parse; the
    /// error never contains the secret.
    pub fn replace_cdp_secret(&self, secret: &str) -> Result<(), String> {
        let current = self.current();
        let Some(FacilitatorAuth::Cdp { key_id, .. }) = current.as_deref() else {
            return Err("the facilitator's credentials are not a CDP API key".into());
        };
        let next = FacilitatorAuth::Cdp {
            key_id: key_id.clone(),
            key: auth::CdpKeyPair::parse(secret).map_err(|_| {
                "the new CDP key secret does not parse; the current one stays".to_owned()
            })?,
        };
        if let Ok(mut auth) = self.0.write() {
            *auth = Some(Arc::new(next));
        }
        Ok(())
    }
}

impl HttpFacilitator {
    /// Its credentials (to replace a refreshed key secret).
    pub fn credentials(&self) -> Credentials {
        self.auth.clone()
    }

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
            auth: Credentials(Arc::new(RwLock::new(auth.map(Arc::new)))),
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
            if let Some(auth) = self.auth.current() {
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

/// The host of Coinbase's CDP facilitator, which answers 401 to requests without a CDP key.
pub const CDP_HOST: &str = "api.cdp.coinbase.com";

impl FacilitatorSettings {
    /// What is wrong with these settings that no request would show before a payment fails:
    /// the CDP facilitator without a CDP API key. `names` names the key id's and the secret's
    /// settings as the operator sets them (flags or variables).
    pub fn missing_credentials(&self, names: (&str, &str)) -> Option<String> {
        let url = self.url.as_deref()?;
        let host = url.split("://").nth(1)?.split(['/', ':']).next()?;
        let cdp = host.eq_ignore_ascii_case(CDP_HOST);
        (cdp && (self.key_id.is_none() || self.key_secret.is_none())).then(|| {
            format!(
                "the facilitator {url} needs a CDP API key: set {} and {}; until then every payment is refused",
                names.0, names.1
            )
        })
    }

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

#[cfg(test)]
mod credential_tests {
    use super::*;
    use aws_lc_rs::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    fn secret(seed: u8) -> (String, Vec<u8>) {
        let seed = [seed; 32];
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("seed");
        let public = pair.public_key().as_ref().to_vec();
        (STANDARD.encode([&seed[..], &public[..]].concat()), public)
    }

    fn signed_by(facilitator: &HttpFacilitator, public: &[u8]) -> bool {
        let header = facilitator
            .auth
            .current()
            .expect("credentials")
            .header("POST", "https://f.example", "/settle")
            .expect("header");
        let jwt = header.trim_start_matches("Bearer ");
        let (input, sig) = jwt.rsplit_once('.').expect("jwt");
        let sig = URL_SAFE_NO_PAD.decode(sig).expect("base64url");
        UnparsedPublicKey::new(&ED25519, public)
            .verify(input.as_bytes(), &sig)
            .is_ok()
    }

    #[test]
    fn the_cdp_facilitator_without_its_key_is_named_at_start() {
        let settings = |url: &str, id: Option<&str>| FacilitatorSettings {
            url: Some(url.into()),
            bearer: None,
            key_id: id.map(Into::into),
            key_secret: id.map(|_| "secret".into()),
        };
        let names = (
            "VERIFIER_FACILITATOR_KEY_ID",
            "VERIFIER_FACILITATOR_KEY_SECRET_PARAM",
        );
        let missing = settings("https://api.cdp.coinbase.com/platform/v2/x402", None)
            .missing_credentials(names)
            .expect("named");
        assert!(
            missing
                .contains("VERIFIER_FACILITATOR_KEY_ID and VERIFIER_FACILITATOR_KEY_SECRET_PARAM")
        );
        assert!(
            settings("https://api.cdp.coinbase.com/platform/v2/x402", Some("kid"))
                .missing_credentials(names)
                .is_none()
        );
        assert!(
            settings("http://127.0.0.1:4022", None)
                .missing_credentials(names)
                .is_none()
        );
        assert!(
            settings("https://x402.org/facilitator", None)
                .missing_credentials(names)
                .is_none()
        );
    }

    #[test]
    fn a_refreshed_cdp_secret_signs_the_next_requests_and_a_bad_one_is_refused() {
        let (old, old_public) = secret(1);
        let (new, new_public) = secret(2);
        let settings = FacilitatorSettings {
            url: Some("https://f.example".into()),
            bearer: None,
            key_id: Some("kid".into()),
            key_secret: Some(old),
        };
        let facilitator = settings.facilitator().expect("settings").expect("client");
        assert!(signed_by(&facilitator, &old_public));
        let credentials = facilitator.credentials();
        credentials.replace_cdp_secret(&new).expect("replaced");
        assert!(signed_by(&facilitator, &new_public) && !signed_by(&facilitator, &old_public));
        let refused = credentials
            .replace_cdp_secret("not a key")
            .expect_err("refused");
        assert!(
            !refused.contains("not a key"),
            "the secret is never echoed: {refused}"
        );
        assert!(
            signed_by(&facilitator, &new_public),
            "the current key stays"
        );

        let bearer = FacilitatorSettings {
            url: Some("https://f.example".into()),
            bearer: Some("token".into()),
            key_id: None,
            key_secret: None,
        };
        let bearer = bearer.facilitator().expect("settings").expect("client");
        assert!(bearer.credentials().replace_cdp_secret(&new).is_err());
    }
}
