//! One verification: free within the client's daily allowance, else paid through x402.

use super::paid::{charge, demand};
use super::{Answer, Billing, Reply, Resource, Services};
use crate::EngineError;
use crate::clock::{next_utc_midnight, rfc3339_seconds, utc_day};
use crate::errors::ApiError;
use crate::payments::{FreeTrialState, PaymentInput, free_trial};
use crate::request::VerifyRequest;
use crate::store::{FreeClaim, Outcome, StoreError};

/// The description paid verifications carry in PaymentRequired.
pub const DESCRIPTION: &str =
    "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt";

/// Requests larger than this run off the async workers (`block_in_place`), so one heavy
/// verification cannot delay every other request.
const HEAVY_BODY_BYTES: usize = 16 * 1024;

/// Run CPU-heavy work without stalling the async runtime's other tasks.
fn run_heavy<T>(heavy: bool, work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if heavy && multi {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// A verification call as a transport received it.
pub struct VerifyCall<'a> {
    /// The caller's address (the allowance is per address).
    pub client: &'a str,
    /// The parsed, valid request.
    pub request: &'a VerifyRequest,
    /// Size of the request as sent (bodies over the free size limit are never free).
    pub body_len: usize,
    pub payment: &'a PaymentInput,
    pub resource: Resource,
}

/// A store failure as the caller sees it: retryable, nothing charged.
pub(crate) fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Unavailable => ApiError::StoreUnavailable { retry_after: 1 },
        StoreError::Backend(detail) => {
            tracing::error!(error = %detail, "store failed");
            ApiError::StoreUnavailable { retry_after: 2 }
        }
    }
}

fn engine_error(e: EngineError) -> ApiError {
    match e {
        EngineError::Invalid(invalid) => ApiError::InvalidRequest(invalid.problems),
        other => {
            tracing::error!(error = %other, "verification failed internally");
            ApiError::Internal
        }
    }
}

/// The outcome an answered verification adds to the agent's history (none for `test-` IDs
/// and a null agent).
fn outcome_of(req: &VerifyRequest, v: &crate::Verification) -> Option<Outcome> {
    req.records_history().then(|| Outcome {
        agent_id: req.agent_id.clone().unwrap_or_default(),
        verification_id: v.verification_id.clone(),
        result: if v.passed { "pass" } else { "fail" }.into(),
        verified_at: v.verified_at.clone(),
    })
}

/// Run a verification call.
pub async fn verify(s: &Services, call: VerifyCall<'_>) -> Reply {
    let req = call.request;
    // A schema that cannot compile is the caller's error: refused before any payment step.
    if let Err(invalid) = s.engine.compiled(&req.expected_schema) {
        return Reply::Error(ApiError::InvalidRequest(invalid.problems));
    }
    let now = s.clock.now();
    let day = utc_day(now);
    let resets = rfc3339_seconds(next_utc_midnight(now));
    let trial = |used: u64| {
        free_trial(
            &s.config,
            &FreeTrialState {
                used,
                resets_at: &resets,
            },
        )
    };
    let price = s.config.price_verify_units;

    if call.payment.is_present() {
        let used = s.store.free_used(call.client, &day).await.unwrap_or(0);
        return charge(
            s,
            call.payment,
            price,
            &call.resource,
            Some(trial(used)),
            || async {
                let signer = s.keys.current();
                let v = run_heavy(call.body_len > HEAVY_BODY_BYTES, || {
                    s.engine.verify(req, &signer, now)
                })
                .map_err(engine_error)?;
                let outcome = outcome_of(req, &v);
                Ok((v.body, outcome))
            },
        )
        .await;
    }
    if call.body_len > s.config.free_body_limit {
        let used = s.store.free_used(call.client, &day).await.unwrap_or(0);
        return demand(s, price, &call.resource, None, None, Some(trial(used)));
    }
    let signer = s.keys.current();
    let v = match run_heavy(call.body_len > HEAVY_BODY_BYTES, || {
        s.engine.verify(req, &signer, now)
    }) {
        Ok(v) => v,
        Err(e) => return Reply::Error(engine_error(e)),
    };
    let outcome = outcome_of(req, &v);
    match s
        .store
        .claim_free(call.client, &day, s.config.free_per_day, outcome)
        .await
    {
        Ok(FreeClaim::Granted { used }) => Reply::Answer(Answer {
            body: v.body,
            billing: Billing::Free {
                remaining: s.config.free_per_day.saturating_sub(used),
                limit: s.config.free_per_day,
                resets_at: resets,
            },
        }),
        Ok(FreeClaim::Exhausted { used }) => {
            demand(s, price, &call.resource, None, None, Some(trial(used)))
        }
        Err(e) => Reply::Error(store_error(e)),
    }
}

/// The 402 an empty verification POST (an x402 discovery probe) gets.
pub async fn probe(s: &Services, client: &str, resource: Resource) -> Reply {
    let now = s.clock.now();
    let resets = rfc3339_seconds(next_utc_midnight(now));
    let used = s.store.free_used(client, &utc_day(now)).await.unwrap_or(0);
    let trial = free_trial(
        &s.config,
        &FreeTrialState {
            used,
            resets_at: &resets,
        },
    );
    demand(
        s,
        s.config.price_verify_units,
        &resource,
        None,
        None,
        Some(trial),
    )
}
