//! The payment gate: decode a client's payment, match it to what was offered, check it
//! locally, claim it once in the store (replay guard), have the facilitator verify it, and —
//! after the work is done — settle it.

use super::error::{PaymentError, sanitize_reason};
use super::offer;
use super::refusals::RefusalBudget;
use super::types::{PaymentPayload, PaymentRequirements, SettlementResponse};
use super::{evm, svm};
use crate::config::{SOLANA_NETWORK, ServiceConfig};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use verifier_ports::facilitator::{Facilitator, FacilitatorError};
use verifier_ports::store::{PaymentState, Store};

/// How long a Solana payment's identity is kept: its blockhash expires within ~2 minutes.
const SOLANA_REPLAY_SECONDS: i64 = 600;
/// Kept this long past an EVM authorization's `validBefore`.
const EVM_REPLAY_MARGIN: i64 = 3600;

/// A payment as the transport carried it.
#[derive(Debug, Clone)]
pub enum PaymentInput {
    /// No payment.
    None,
    /// REST: the `PAYMENT-SIGNATURE` (or legacy `X-PAYMENT`) header, base64 of JSON.
    Header(String),
    /// MCP: `params._meta["x402/payment"]`, a JSON object.
    Object(Value),
}

impl PaymentInput {
    /// Whether a payment was sent at all.
    pub fn is_present(&self) -> bool {
        !matches!(self, PaymentInput::None)
    }

    /// The PaymentPayload, decoded strictly (duplicate keys and the like are refused).
    pub fn decode(&self) -> Result<PaymentPayload, PaymentError> {
        let value = match self {
            PaymentInput::None => return Err(PaymentError::HeaderInvalid),
            PaymentInput::Header(text) => {
                let text = text.trim();
                let bytes = STANDARD
                    .decode(text)
                    .or_else(|_| STANDARD_NO_PAD.decode(text.trim_end_matches('=')))
                    .map_err(|_| PaymentError::HeaderInvalid)?;
                verifier_engine::json::parse_strict_value(&bytes)
                    .map_err(|_| PaymentError::HeaderInvalid)?
            }
            PaymentInput::Object(v) => v.clone(),
        };
        let version = value.get("x402Version").and_then(Value::as_u64);
        if value.is_object() && version.is_some_and(|v| v != 2) {
            return Err(PaymentError::UnsupportedVersion);
        }
        serde_json::from_value(value).map_err(|_| PaymentError::HeaderInvalid)
    }
}

/// A payment that passed the local checks; not yet claimed or verified by the facilitator.
#[derive(Debug, Clone)]
pub struct Checked {
    pub payload: PaymentPayload,
    pub requirements: PaymentRequirements,
    /// The payer's address.
    pub payer: String,
    /// Its identity in the replay guard (network, payer, nonce or transaction signature).
    pub replay_key: String,
    /// Until when (unix seconds) the replay guard keeps it.
    pub keep_until: i64,
    /// The x402 `payment-identifier` id, when the payment carries one.
    pub payment_id: Option<String>,
}

/// A payment that passed every local check that does not depend on the time (what a kept
/// answer is looked up with: a lost answer may be fetched after the authorization expired).
#[derive(Debug, Clone)]
pub struct Inspected {
    pub payload: PaymentPayload,
    pub requirements: PaymentRequirements,
    /// The payer's address.
    pub payer: String,
    /// Its identity in the replay guard (network, payer, nonce or transaction signature).
    pub replay_key: String,
    /// The x402 `payment-identifier` id, when the payment carries one.
    pub payment_id: Option<String>,
    /// The EVM authorization's facts (its validity window), for an EVM payment.
    evm: Option<evm::CheckedEvm>,
}

impl Inspected {
    /// The time-dependent checks at `now` (unix seconds): an EVM authorization's validity
    /// window; then how long the replay guard keeps the payment.
    pub fn at(self, now: i64) -> Result<Checked, PaymentError> {
        let keep_until = match &self.evm {
            Some(e) => {
                evm::check_window(e, &self.requirements, now.max(0) as u64)?;
                i64::try_from(e.valid_before)
                    .unwrap_or(i64::MAX / 2)
                    .saturating_add(EVM_REPLAY_MARGIN)
            }
            None => now + SOLANA_REPLAY_SECONDS,
        };
        Ok(Checked {
            payload: self.payload,
            requirements: self.requirements,
            payer: self.payer,
            replay_key: self.replay_key,
            keep_until,
            payment_id: self.payment_id,
        })
    }
}

/// A payment that passed every check and the facilitator's `/verify`; not yet settled.
#[derive(Debug, Clone)]
pub struct Authorized {
    pub payload: PaymentPayload,
    pub requirements: PaymentRequirements,
    /// The payer's address.
    pub payer: String,
    /// Its identity in the replay guard.
    pub replay_key: String,
    /// The payment was taken over from an earlier attempt whose settlement outcome is unknown
    /// (so it may have been settled already).
    pub resumed: bool,
}

/// Why a settlement gave no settled payment.
#[derive(Debug)]
pub enum SettleFailure {
    /// The facilitator answered that it did not settle: nothing moved.
    Refused(PaymentError, SettlementResponse),
    /// The settlement request never reached the facilitator: nothing moved.
    NotSent,
    /// The request was sent but no answer came back: the outcome is unknown.
    Unknown,
}

fn authorized(checked: &Checked, resumed: bool) -> Authorized {
    Authorized {
        payload: checked.payload.clone(),
        requirements: checked.requirements.clone(),
        payer: checked.payer.clone(),
        replay_key: checked.replay_key.clone(),
        resumed,
    }
}

/// The facilitator and what was learnt from it.
pub struct PaymentGate {
    facilitator: Option<Arc<dyn Facilitator>>,
    /// The Solana fee payer: configured, or read from the facilitator's `/supported`.
    fee_payer: RwLock<Option<String>>,
    /// How many of each client's payments the facilitator refused lately.
    refusals: RefusalBudget,
}

/// Whether `accepted` is the offered requirement: the six core fields equal, and every
/// offered `extra` member present with the same value (clients may add members).
fn matches(offered: &PaymentRequirements, accepted: &PaymentRequirements) -> bool {
    offered.scheme == accepted.scheme
        && offered.network == accepted.network
        && offered.amount == accepted.amount
        && offered.asset == accepted.asset
        && offered.pay_to == accepted.pay_to
        && offered.max_timeout_seconds == accepted.max_timeout_seconds
        && offered
            .extra
            .iter()
            .all(|(k, v)| accepted.extra.get(k) == Some(v))
}

fn unavailable(e: FacilitatorError) -> PaymentError {
    tracing::warn!(error = %e, "facilitator call failed");
    PaymentError::FacilitatorUnavailable
}

/// How long start-up waits for the facilitator's `/supported`: a slow or unreachable
/// facilitator must not hold a function's init (Lambda ends an init after 10 s) or the
/// server's start for the facilitator's full request timeout.
pub const SUPPORTED_WAIT: Duration = Duration::from_secs(2);

/// The Solana fee payer the facilitator names in its `/supported` (`exact` on Solana
/// mainnet); none when it names none or does not answer within [`SUPPORTED_WAIT`].
pub async fn solana_fee_payer(f: &dyn Facilitator) -> Option<String> {
    match tokio::time::timeout(SUPPORTED_WAIT, f.supported()).await {
        Ok(Ok(supported)) => supported
            .kinds
            .iter()
            .filter(|k| k.network == SOLANA_NETWORK && k.scheme == "exact")
            .find_map(|k| k.extra.get("feePayer").and_then(Value::as_str))
            .map(str::to_owned),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot read the facilitator's /supported: Solana is not offered");
            None
        }
        Err(_) => {
            tracing::warn!(
                wait_ms = SUPPORTED_WAIT.as_millis() as u64,
                "the facilitator's /supported did not answer in time: Solana is not offered"
            );
            None
        }
    }
}

impl PaymentGate {
    /// A gate over a facilitator (none: payments are refused as not configured).
    pub fn new(facilitator: Option<Arc<dyn Facilitator>>, fee_payer: Option<String>) -> Self {
        PaymentGate {
            facilitator,
            fee_payer: RwLock::new(fee_payer),
            refusals: RefusalBudget::default(),
        }
    }

    /// Whether payments can be settled.
    pub fn configured(&self) -> bool {
        self.facilitator.is_some()
    }

    /// Learn the Solana fee payer from the facilitator's `/supported` when Solana is offered
    /// (`pay_to_solana`) and no fee payer is known: at most one facilitator call, waiting at
    /// most [`SUPPORTED_WAIT`]. Without an answer Solana is not offered (a warning says why).
    pub async fn refresh_supported(&self, pay_to_solana: Option<&str>) {
        if pay_to_solana.is_none() || self.fee_payer().is_some() {
            return;
        }
        let Some(f) = &self.facilitator else { return };
        if let (Some(fp), Ok(mut slot)) =
            (solana_fee_payer(f.as_ref()).await, self.fee_payer.write())
        {
            *slot = Some(fp);
        }
    }

    /// The Solana fee payer, when known.
    pub fn fee_payer(&self) -> Option<String> {
        self.fee_payer.read().ok().and_then(|g| g.clone())
    }

    /// The payment options for a price.
    pub fn accepts(&self, config: &ServiceConfig, amount_units: u64) -> Vec<PaymentRequirements> {
        offer::accepts(config, self.fee_payer().as_deref(), amount_units)
    }

    /// Check a payment against the offered requirements, locally and without any network or
    /// store call: [`PaymentGate::inspect`], then [`Inspected::at`] `now` (unix seconds).
    pub fn precheck(
        &self,
        input: &PaymentInput,
        offered: &[PaymentRequirements],
        now: i64,
    ) -> Result<Checked, PaymentError> {
        self.inspect(input, offered)?.at(now)
    }

    /// The local checks that do not depend on the time: decoding, the payment identifier's
    /// form, the matching offer, the scheme's own checks (amount, recipient, signature; Solana:
    /// the whole transaction). No network or store call.
    pub fn inspect(
        &self,
        input: &PaymentInput,
        offered: &[PaymentRequirements],
    ) -> Result<Inspected, PaymentError> {
        if self.facilitator.is_none() {
            return Err(PaymentError::NotConfigured);
        }
        let payload = input.decode()?;
        let payment_id = super::identifier::payment_id(&payload)?;
        let requirements = offered
            .iter()
            .find(|o| matches(o, &payload.accepted))
            .cloned()
            .ok_or(PaymentError::NoMatchingRequirements)?;
        let (payer, replay_key, evm) = if requirements.network.starts_with("eip155:") {
            let checked = evm::inspect(&payload, &requirements)?;
            let key = format!(
                "{}#{}#{}",
                requirements.network, checked.payer, checked.nonce
            );
            (checked.payer.clone(), key, Some(checked))
        } else if requirements.network.starts_with("solana:") {
            let checked = svm::check(&payload, &requirements)?;
            let key = format!(
                "{}#{}#{}",
                requirements.network, checked.payer, checked.signature
            );
            (checked.payer, key, None)
        } else {
            return Err(PaymentError::NoMatchingRequirements);
        };
        Ok(Inspected {
            payload,
            requirements,
            payer,
            replay_key,
            payment_id,
            evm,
        })
    }

    /// Claim a checked payment once (replay guard), then have the facilitator verify it. A
    /// `client` whose payments the facilitator refused too often lately waits first (see
    /// [`RefusalBudget`]), before any store or network call.
    pub async fn authorize(
        &self,
        store: &dyn Store,
        checked: &Checked,
        client: &str,
    ) -> Result<Authorized, PaymentError> {
        let facilitator = self
            .facilitator
            .as_ref()
            .ok_or(PaymentError::NotConfigured)?;
        if let Some(retry_after) = self.refusals.wait(client, Instant::now()) {
            return Err(PaymentError::TooManyRefused { retry_after });
        }
        let first = store
            .claim_payment(&checked.replay_key, checked.keep_until)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "replay guard unavailable");
                PaymentError::FacilitatorUnavailable
            })?;
        // A payment whose earlier settlement ended without an answer may be taken over, by one
        // request; it is not verified again (its settlement may have gone through).
        let resumed = !first
            && store
                .advance_payment(
                    &checked.replay_key,
                    PaymentState::Settling,
                    PaymentState::Claimed,
                )
                .await
                .map_err(|e| {
                    tracing::warn!(error = %e, "replay guard unavailable");
                    PaymentError::FacilitatorUnavailable
                })?;
        if !first && !resumed {
            return Err(PaymentError::Replayed);
        }
        if resumed {
            tracing::warn!("a payment whose settlement outcome was unknown is sent again");
            return Ok(authorized(checked, true));
        }
        let verdict = match facilitator
            .verify(&checked.payload, &checked.requirements)
            .await
        {
            Ok(v) => v,
            Err(e) => {
                // Nothing was settled: the same payment may be sent again.
                self.release(store, &checked.replay_key).await;
                return Err(unavailable(e));
            }
        };
        if !verdict.is_valid {
            self.refusals.refused(client, Instant::now());
            let reason = verdict.invalid_reason.as_deref().unwrap_or("invalid");
            return Err(PaymentError::Rejected(sanitize_reason(reason)));
        }
        Ok(authorized(checked, false))
    }

    /// Whether a payment is still valid by the facilitator's word (`None`: no answer).
    pub async fn still_valid(&self, authorized: &Authorized) -> Option<bool> {
        let facilitator = self.facilitator.as_ref()?;
        match facilitator
            .verify(&authorized.payload, &authorized.requirements)
            .await
        {
            Ok(v) => Some(v.is_valid),
            Err(e) => {
                tracing::warn!(error = %e, "facilitator verify failed");
                None
            }
        }
    }

    /// Give a claimed payment back before it was settled (the request was refused after the
    /// claim), so the payer can send it again.
    pub async fn release(&self, store: &dyn Store, replay_key: &str) {
        if let Err(e) = store.release_payment(replay_key).await {
            tracing::warn!(error = %e, "a refused payment's claim could not be released");
        }
    }

    /// Settle an authorized payment. A refusal carries the error and the failed settlement
    /// response (for `PAYMENT-RESPONSE`); a request that never reached the facilitator and one
    /// that got no answer are told apart (nothing moved, or unknown).
    pub async fn settle(
        &self,
        authorized: &Authorized,
    ) -> Result<SettlementResponse, SettleFailure> {
        let failed = |reason: &str| SettlementResponse {
            success: false,
            error_reason: Some(reason.to_owned()),
            error_message: None,
            payer: Some(authorized.payer.clone()),
            transaction: String::new(),
            network: authorized.requirements.network.clone(),
        };
        let Some(facilitator) = &self.facilitator else {
            return Err(SettleFailure::Refused(
                PaymentError::NotConfigured,
                failed("not_configured"),
            ));
        };
        match facilitator
            .settle(&authorized.payload, &authorized.requirements)
            .await
        {
            Ok(s) if s.success => Ok(s),
            Ok(s) => {
                let reason = sanitize_reason(s.error_reason.as_deref().unwrap_or("failed"));
                let response = SettlementResponse {
                    success: false,
                    error_reason: Some(reason.clone()),
                    error_message: None,
                    ..s
                };
                Err(SettleFailure::Refused(
                    PaymentError::SettlementFailed(reason),
                    response,
                ))
            }
            Err(e) if e.never_sent() => {
                tracing::error!(error = %e, "settlement could not be sent");
                Err(SettleFailure::NotSent)
            }
            Err(e) => {
                tracing::error!(error = %e, "settlement sent but not answered: outcome unknown");
                Err(SettleFailure::Unknown)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered() -> PaymentRequirements {
        PaymentRequirements {
            scheme: "exact".into(),
            network: "eip155:8453".into(),
            amount: "20000".into(),
            asset: "0xA".into(),
            pay_to: "0xB".into(),
            max_timeout_seconds: 60,
            extra: json!({"name": "USD Coin", "version": "2"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        }
    }

    #[test]
    fn accepted_matches_exactly_with_extra_as_a_superset() {
        let o = offered();
        let mut a = o.clone();
        assert!(matches(&o, &a));
        a.extra.insert("recentBlockhash".into(), "x".into());
        assert!(matches(&o, &a));
        a.amount = "19999".into();
        assert!(!matches(&o, &a));
        let mut b = o.clone();
        b.extra.remove("version");
        assert!(!matches(&o, &b));
    }

    #[test]
    fn header_decoding_is_strict() {
        let good = json!({"x402Version": 2, "accepted": offered(), "payload": {}});
        let header = STANDARD.encode(good.to_string());
        assert!(PaymentInput::Header(header.clone()).decode().is_ok());
        assert!(
            PaymentInput::Header(header.trim_end_matches('=').to_owned())
                .decode()
                .is_ok()
        );
        for bad in ["%%%", "bm90IGpzb24=", ""] {
            assert_eq!(
                PaymentInput::Header(bad.into()).decode(),
                Err(PaymentError::HeaderInvalid)
            );
        }
        let v1 = STANDARD
            .encode(json!({"x402Version": 1, "accepted": offered(), "payload": {}}).to_string());
        assert_eq!(
            PaymentInput::Header(v1).decode(),
            Err(PaymentError::UnsupportedVersion)
        );
        let dup = STANDARD.encode(r#"{"x402Version":2,"x402Version":2}"#);
        assert_eq!(
            PaymentInput::Header(dup).decode(),
            Err(PaymentError::HeaderInvalid)
        );
    }
}
