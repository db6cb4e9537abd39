//! The paid path shared by every priced call: check the payment locally, claim it and have
//! the facilitator verify it, do the work, settle, record. No result is returned when
//! settlement fails, and a claim is given back when the work is refused.

use super::{Answer, Billing, PaymentDemand, Reply, Resource, Services};
use crate::errors::ApiError;
use crate::payments::identifier::fingerprint;
use crate::payments::{
    Authorized, Checked, Inspected, PaymentError, PaymentInput, SettleFailure, SettlementResponse,
    payment_required, resource,
};
use crate::telemetry;
use serde_json::Value;
use std::future::Future;
use std::time::Duration;
use verifier_ports::store::{Outcome, PaidAnswer, PaymentState};

/// Attempts to record a paid call's outcome; the money has moved, so the answer is returned
/// even if the store stays unavailable (and the failure is logged).
const RECORD_ATTEMPTS: u32 = 5;

/// What paid work gives: the response body, the outcome to record, a verification's verdict.
pub struct Work {
    pub body: Vec<u8>,
    pub outcome: Option<Outcome>,
    pub verdict: Option<bool>,
}

/// A 402 for `amount`, with the reason a payment was refused and a failed settlement.
pub fn demand(
    s: &Services,
    amount: u64,
    res: &Resource,
    error: Option<PaymentError>,
    settlement: Option<crate::payments::SettlementResponse>,
    free_trial: Option<Value>,
) -> Reply {
    // A payment refused before it matched an offer (the paid path counts the others with
    // their offer's network).
    if let Some(e) = &error
        && settlement.is_none()
    {
        telemetry::payment("none", "refused", e.code());
    }
    uncounted_demand(s, amount, res, error, settlement, free_trial)
}

/// [`demand`] without counting its refusal (counted by the caller, which knows its network).
fn uncounted_demand(
    s: &Services,
    amount: u64,
    res: &Resource,
    error: Option<PaymentError>,
    settlement: Option<crate::payments::SettlementResponse>,
    free_trial: Option<Value>,
) -> Reply {
    let message = match &error {
        None => "Payment required".to_owned(),
        Some(e) => match e.reason() {
            Some(reason) => format!("{}: {reason}", e.code()),
            None => e.code().to_owned(),
        },
    };
    Reply::PaymentRequired(Box::new(PaymentDemand {
        required: payment_required(
            resource(res.url.clone(), res.description),
            s.payments.accepts(&s.config, amount),
            &message,
            Some(s.listings.for_resource(s, res)),
        ),
        free_trial,
        error,
        settlement,
        reason: None,
    }))
}

/// Where a paid answer is to be kept: the payment's identifier and what a retry must match.
pub struct Keep {
    id: String,
    fingerprint: String,
}

/// A payment that carries an x402 `payment-identifier` id, looked up once the payment passed
/// its time-independent local checks ([`inspect`]; a lost answer may be fetched again after
/// the authorization's validity ended): the kept answer when the same payment and request were
/// answered before (no second settlement, no second count), a 409 when the id answered
/// something else, else where to keep this answer. `request` is only called when there is an
/// id.
pub async fn recall(
    s: &Services,
    payment: &Inspected,
    res: &Resource,
    request: impl FnOnce() -> Vec<u8>,
) -> Result<Option<Keep>, Reply> {
    let Some(id) = payment.payment_id.clone() else {
        return Ok(None);
    };
    let fingerprint = fingerprint(&payment.payload, &res.url, &request());
    let now = s.clock.now().unix_timestamp();
    match s.store.paid_answer(&id, now).await {
        Ok(None) => Ok(Some(Keep { id, fingerprint })),
        Ok(Some(kept)) if kept.fingerprint == fingerprint => {
            match serde_json::from_str::<SettlementResponse>(&kept.settlement) {
                Ok(settlement) => Err(Reply::Answer(Answer {
                    verdict: None,
                    body: kept.body.into_bytes(),
                    billing: Billing::Paid(settlement),
                })),
                Err(_) => Err(Reply::Error(ApiError::Internal)),
            }
        }
        Ok(Some(_)) => Err(Reply::Error(ApiError::PaymentIdConflict)),
        Err(e) => Err(Reply::Error(crate::call::store_error(e))),
    }
}

/// Keep a settled answer under its payment identifier; a failure is logged (the answer was
/// delivered, only its second delivery is lost).
async fn keep(s: &Services, keep: &Keep, body: &[u8], settlement: &SettlementResponse, until: i64) {
    let answer = PaidAnswer {
        fingerprint: keep.fingerprint.clone(),
        body: String::from_utf8_lossy(body).into_owned(),
        settlement: serde_json::to_string(settlement).unwrap_or_default(),
    };
    if let Err(e) = s.store.keep_paid_answer(&keep.id, &answer, until).await {
        tracing::error!(error = %e, "a paid answer could not be kept under its payment identifier");
    }
}

/// The local checks of a payment that do not depend on the time (no network, no store),
/// against what `amount` buys.
pub fn inspect(s: &Services, input: &PaymentInput, amount: u64) -> Result<Inspected, PaymentError> {
    s.payments
        .inspect(input, &s.payments.accepts(&s.config, amount))
}

/// The time-dependent checks of an inspected payment (its validity window); a 402 naming the
/// problem when they fail.
pub fn admit(
    s: &Services,
    payment: Inspected,
    amount: u64,
    res: &Resource,
    free_trial: Option<Value>,
) -> Result<Checked, Box<Reply>> {
    payment
        .at(s.clock.now().unix_timestamp())
        .map_err(|e| Box::new(demand(s, amount, res, Some(e), None, free_trial)))
}

/// Charge `amount` for `work`: the payment is claimed and verified by the facilitator first;
/// the body is returned only after settlement succeeded, and its outcome (if any) is recorded
/// for the agent's history.
///
/// The payment's claim moves claimed → settling → settled in the store. Work that is refused,
/// a settlement the facilitator refused and one that never reached it release the claim
/// (nothing moved: the payer can send the same payment again). A settlement sent but not
/// answered stays `settling` and is answered 503: the same payment sent again takes it over
/// and settles it once (see [`settle_resumed`]).
#[allow(clippy::too_many_arguments)]
pub async fn charge<F, Fut>(
    s: &Services,
    client: &str,
    checked: &Checked,
    kept: Option<Keep>,
    amount: u64,
    res: &Resource,
    free_trial: Option<Value>,
    work: F,
) -> Reply
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Work, ApiError>>,
{
    let authorized = match s
        .payments
        .authorize(s.store.as_ref(), checked, client)
        .await
    {
        Ok(a) => a,
        Err(PaymentError::FacilitatorUnavailable) => {
            return Reply::Error(ApiError::FacilitatorUnavailable { retry_after: 2 });
        }
        Err(PaymentError::TooManyRefused { retry_after }) => {
            return Reply::Error(ApiError::TooManyRequests { retry_after });
        }
        Err(e) => {
            telemetry::payment(&checked.requirements.network, "refused", e.code());
            return uncounted_demand(s, amount, res, Some(e), None, free_trial);
        }
    };
    let network = authorized.requirements.network.as_str();
    telemetry::payment(network, "verified", "none");
    // Nothing moved in this attempt: a fresh claim is forgotten, a taken-over one goes back
    // to `settling` (its first attempt's outcome is still unknown).
    let authorized = &authorized;
    let give_back = |settling: bool| async move {
        if !authorized.resumed {
            s.payments
                .release(s.store.as_ref(), &authorized.replay_key)
                .await;
            telemetry::payment(&authorized.requirements.network, "released", "none");
        } else if !settling {
            let _ = advance(s, authorized, PaymentState::Claimed, PaymentState::Settling).await;
        }
    };
    let Work {
        body,
        outcome,
        verdict,
    } = match work().await {
        Ok(done) => done,
        Err(e) => {
            give_back(false).await;
            return Reply::Error(e);
        }
    };
    if let Err(e) = advance(s, authorized, PaymentState::Claimed, PaymentState::Settling).await {
        give_back(false).await;
        return Reply::Error(e);
    }
    let unavailable = Reply::Error(ApiError::FacilitatorUnavailable { retry_after: 2 });
    let settlement = match s.payments.settle(authorized).await {
        Ok(settlement) => settlement,
        Err(SettleFailure::Refused(e, settlement)) if authorized.resumed => {
            match settle_resumed(s, authorized).await {
                Resumed::Settled(settlement) => settlement,
                Resumed::NotSettled => {
                    s.payments
                        .release(s.store.as_ref(), &authorized.replay_key)
                        .await;
                    telemetry::payment(network, "released", "none");
                    telemetry::payment(network, "refused", e.code());
                    return demand(s, amount, res, Some(e), Some(settlement), free_trial);
                }
                Resumed::Unknown => {
                    telemetry::payment(network, "settlement_unknown", "none");
                    return unavailable;
                }
            }
        }
        Err(SettleFailure::Refused(e, settlement)) => {
            telemetry::payment(network, "refused", e.code());
            give_back(true).await;
            return demand(s, amount, res, Some(e), Some(settlement), free_trial);
        }
        Err(SettleFailure::NotSent) => {
            give_back(true).await;
            return unavailable;
        }
        // The claim stays `settling`: the same payment sent again takes it over.
        Err(SettleFailure::Unknown) => {
            telemetry::payment(network, "settlement_unknown", "none");
            return unavailable;
        }
    };
    telemetry::payment(network, "settled", "none");
    if let Ok(amount) = authorized.requirements.amount.parse::<u64>() {
        telemetry::revenue(network, amount);
    }
    ledger(s, authorized, &settlement, res).await;
    if let Err(e) = advance(s, authorized, PaymentState::Settling, PaymentState::Settled).await {
        tracing::error!(error = ?e, "a settled payment's state could not be stored");
    }
    if let Some(outcome) = outcome {
        record(s, outcome).await;
    }
    if let Some(k) = &kept {
        keep(s, k, &body, &settlement, checked.keep_until).await;
    }
    Reply::Answer(Answer {
        body,
        billing: Billing::Paid(settlement),
        verdict,
    })
}

/// Keep the settled payment for the accounting export (`verifier admin export-payments`). A
/// store failure loses the ledger line only, never the answer: it is logged as an error (with
/// the network and transaction, which the chain also holds).
async fn ledger(
    s: &Services,
    authorized: &Authorized,
    settlement: &SettlementResponse,
    res: &Resource,
) {
    let path = res
        .url
        .strip_prefix(s.config.public_url.trim_end_matches('/'))
        .unwrap_or(&res.url);
    let route = match &res.path_param {
        Some(param) => path.replace(param.as_str(), "{agent_id}"),
        None => path.to_owned(),
    };
    let entry = verifier_ports::store::Settlement {
        at: s.clock.now().unix_timestamp(),
        network: settlement.network.clone(),
        payer: settlement.payer.clone().unwrap_or_default(),
        amount: authorized.requirements.amount.clone(),
        transaction: settlement.transaction.clone(),
        route,
    };
    if let Err(e) = s.store.record_settlement(&entry).await {
        tracing::error!(
            error = %e,
            network = %entry.network,
            transaction = %entry.transaction,
            "a settled payment could not be kept for the export"
        );
    }
}

/// Move the payment's claim between states; a store failure is a retryable 503.
async fn advance(
    s: &Services,
    authorized: &Authorized,
    from: PaymentState,
    to: PaymentState,
) -> Result<(), ApiError> {
    match s
        .store
        .advance_payment(&authorized.replay_key, from, to)
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => {
            tracing::error!(
                from = from.as_str(),
                to = to.as_str(),
                "a payment claim moved away"
            );
            Err(ApiError::Internal)
        }
        Err(e) => Err(crate::call::store_error(e)),
    }
}

/// What became of a taken-over payment the facilitator refused to settle.
enum Resumed {
    /// Settled by the earlier attempt.
    Settled(SettlementResponse),
    /// Still valid, so never settled: refused as usual.
    NotSettled,
    /// The facilitator did not say: the claim stays `settling`.
    Unknown,
}

/// A taken-over payment the facilitator now refuses to settle: either the earlier attempt
/// settled it (the money reached our payTo, which the payment itself names) or it became
/// invalid. The facilitator's verify tells which: a payment it still finds valid was not
/// settled; one it no longer accepts is taken as settled by the earlier attempt, so the payer
/// gets the answer it paid for (`success` with no transaction of ours to name).
async fn settle_resumed(s: &Services, authorized: &Authorized) -> Resumed {
    match s.payments.still_valid(authorized).await {
        Some(true) => Resumed::NotSettled,
        None => Resumed::Unknown,
        Some(false) => {
            tracing::warn!("a resumed payment is spent: answered as settled by its first attempt");
            Resumed::Settled(SettlementResponse {
                success: true,
                error_reason: None,
                error_message: None,
                payer: Some(authorized.payer.clone()),
                transaction: String::new(),
                network: authorized.requirements.network.clone(),
            })
        }
    }
}

async fn record(s: &Services, outcome: Outcome) {
    for attempt in 1..=RECORD_ATTEMPTS {
        match s.store.record(outcome.clone()).await {
            Ok(()) => return,
            Err(e) if attempt == RECORD_ATTEMPTS => {
                tracing::error!(error = %e, verification_id = %outcome.verification_id,
                    "a paid verification's outcome could not be recorded");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50 << attempt)).await,
        }
    }
}
