//! One verification, priced before it runs.
//!
//! The order (docs/cost-model.md):
//! 1. The request is parsed and validated (an invalid one is a 422); a large body on a worker of
//!    the bounded pool.
//! 2. Without a payment, the price is decided before any work that reads the output: a body over
//!    the free size limit, or a client whose allowance is spent (one store read), gets its 402 at
//!    once — after a static screen of the schema, so an invalid schema is still a 422, but
//!    nothing is compiled or cached (a body over the free size limit is checked in place, its
//!    output never built).
//! 3. Otherwise the schema is compiled (cached) and the whole verification priced under the
//!    unpaid ceiling ([`super::pricing`]); past it the request goes to payment, or is a 422 when
//!    no payment could buy it.
//! 4. The checks run, then the free call is claimed and the outcome recorded in one atomic
//!    step (a lost race wastes one bounded computation and never serves a free answer twice);
//!    a verification alone in the process signs its report while the store makes that step.
//!    A store that claims before the work (DynamoDB) takes the other order instead
//!    ([`super::free_first`]): claim, check, record, and a refusal hands the claim back.
//!
//! With a payment, its local checks come first (no network), then the same pricing under the
//! unpaid ceiling; a request dearer than that is priced under the paid ceiling only after the
//! facilitator has verified the payment (so only a funded payer can buy that work), and any
//! refusal after the claim gives the payment back.

use super::paid::{admit, charge, demand, inspect, recall};
use super::pool::Share;
use super::pricing::{HEAVY_BODY_BYTES, Refused, price, second_look};
use super::unpaid::{
    allowance_spent, free_budget_spent, over_free_budget, over_free_size, screen, trial,
};
use super::{Reply, Resource, Services};
pub use crate::call::{VerifyCall, store_error};
use crate::errors::ApiError;
use crate::free_budget::day_index;
use crate::payments::PaymentInput;
use crate::priced_result::{outcome_of, refusal_error};
use crate::telemetry::{self, PaymentReason, Transport};
use bytes::Bytes;
use std::sync::Arc;
use verifier_engine::engine::over_budget_problem;
use verifier_ports::clock::{next_utc_midnight, rfc3339_seconds, utc_day};
use verifier_ports::store::{FreeClaim, FreeLimit};

/// The description paid verifications carry in PaymentRequired.
pub const DESCRIPTION: &str =
    "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt";

/// A REST verification as received, before parsing.
pub struct BodyCall<'a, 's> {
    /// The caller's address (the allowance is per address).
    pub client: &'a str,
    /// The body as received (not empty: an empty POST is a [`probe`]).
    pub body: Bytes,
    pub payment: &'a PaymentInput,
    pub resource: Resource,
    /// The client's share of the pool, taken before a large body was read.
    pub share: Option<Share<'s>>,
    /// The size the free size limit is measured on: the body's over REST; over MCP, where the
    /// body is a tool call's arguments, the whole message received.
    pub size: usize,
    /// Which transport the call came by (for the metrics).
    pub transport: Transport,
}

/// Run a verification from its body (a REST body, or a tool call's arguments as received):
/// parse it (on a pool worker when it is large), then the call. A call over the free size
/// limit without a payment is checked in place and answered with a 402 (or its 422) without
/// building its output.
pub async fn verify_body<'s>(s: &'s Arc<Services>, call: BodyCall<'_, 's>) -> Reply {
    let slot = if call.body.len() > HEAVY_BODY_BYTES {
        let share = match call.share {
            Some(share) => Ok(share),
            None => s.pool.share_waiting(call.client).await,
        };
        match share {
            Ok(share) => match share.worker().await {
                Ok(slot) => Some(slot),
                Err(e) => return Reply::Error(e),
            },
            Err(e) => return Reply::Error(e),
        }
    } else {
        None
    };
    if !call.payment.is_present() && call.size > s.config.free_body_limit {
        let (worker_s, body) = (s.clone(), call.body.clone());
        let checked = move || {
            let schema = worker_s
                .engine
                .screen_body(&body, worker_s.config.free_body_limit)
                .map_err(|invalid| ApiError::InvalidRequest(invalid.problems))?;
            match schema {
                Some(schema) => screen(&worker_s, &schema),
                None => Ok(()),
            }
        };
        let checked = match &slot {
            Some(slot) => slot.run(checked).await.and_then(|r| r),
            None => checked(),
        };
        return match checked {
            Ok(()) => over_free_size(s, call.client, &call.resource).await,
            Err(e) => Reply::Error(e),
        };
    }
    let parsed = match &slot {
        Some(slot) => {
            let (worker_s, body) = (s.clone(), call.body.clone());
            slot.run(move || worker_s.engine.parse(&body))
                .await
                .map(|parsed| parsed.map_err(|e| ApiError::InvalidRequest(e.problems)))
                .and_then(|r| r)
        }
        None => s
            .engine
            .parse(&call.body)
            .map_err(|e| ApiError::InvalidRequest(e.problems)),
    };
    let request = match parsed {
        Ok(request) => Arc::new(request),
        Err(e) => return Reply::Error(e),
    };
    let reply = verify_in(
        s,
        VerifyCall {
            client: call.client,
            request: request.clone(),
            body_len: call.size,
            payment: call.payment,
            resource: call.resource,
        },
        slot,
    )
    .await;
    if matches!(reply, Reply::Answer(_)) {
        s.engine.remember_schema(&call.body, &request);
    }
    counted(call.transport, reply)
}

/// Count a verification answered with its verdict.
fn counted(transport: Transport, reply: Reply) -> Reply {
    if let Reply::Answer(answer) = &reply
        && let Some(passed) = answer.verdict
    {
        telemetry::verification(
            transport,
            passed,
            matches!(answer.billing, super::Billing::Paid(_)),
        );
    }
    reply
}

async fn verify_in<'s>(
    s: &'s Arc<Services>,
    call: VerifyCall<'_>,
    slot: Option<super::pool::Slot<'s>>,
) -> Reply {
    let _counted = s.in_flight.enter();
    if let Some(agent) = call.request.agent_id.as_deref()
        && s.blocks.agent_blocked(agent)
    {
        return Reply::Error(ApiError::Blocked);
    }
    // A private deployment takes no payment: a payment header is not read.
    if call.payment.is_present() && !s.config.private {
        return paid(s, &call, slot).await;
    }
    if call.body_len > s.config.free_body_limit {
        if let Err(e) = screen(s, &call.request.expected_schema) {
            return Reply::Error(e);
        }
        return over_free_size(s, call.client, &call.resource).await;
    }
    if s.store.claims_before_work() {
        return super::free_first::verify_free(s, &call, slot).await;
    }
    let now = s.clock.now();
    let day = utc_day(now);
    let used = match s.store.free_used(call.client, &day).await {
        Ok(used) => used,
        Err(e) => return Reply::Error(store_error(e)),
    };
    if used >= s.config.free_per_day {
        if let Err(e) = screen(s, &call.request.expected_schema) {
            return Reply::Error(e);
        }
        return allowance_spent(s, &call.resource, used);
    }
    let today = day_index(now.unix_timestamp());
    if s.config.no_free_budget() || s.free_budget.is_spent(today) {
        if let Err(e) = screen(s, &call.request.expected_schema) {
            return Reply::Error(e);
        }
        return free_budget_spent(s, &call.resource, used);
    }
    let priced = match price(s, &call, s.config.budgets.unpaid, slot).await {
        Ok(p) => p,
        Err(Refused::Over(over)) => {
            let over = second_look(s, &call, over);
            return over_free_budget(s, &call.resource, used, over);
        }
        Err(Refused::Invalid(e) | Refused::Error(e)) => return Reply::Error(e),
    };
    let checked = match priced.check(s, &call.request, call.client, now).await {
        Ok(checked) => checked,
        Err(Refused::Over(over)) => return over_free_budget(s, &call.resource, used, over),
        Err(Refused::Invalid(e) | Refused::Error(e)) => return Reply::Error(e),
    };
    let outcome = outcome_of(&call.request, checked.report(), false);
    let limit = FreeLimit {
        per_client: s.config.free_per_day,
        total: s.config.free_budget(),
    };
    let claim = s.store.claim_free_within(call.client, &day, limit, outcome);
    let (claimed, signed) = if s.in_flight.alone() {
        // Alone, the claim goes to the store first (`biased`: its first poll hands it over)
        // and the report is signed while the store writes it. Signing our own report fails
        // only by a bug; the free call it claimed is then spent, and the caller is told it is
        // our failure.
        tokio::join!(biased; claim, checked.sign(s))
    } else {
        // Among other verifications the report is signed first, so the claim joins theirs in
        // one group commit rather than starting a group of its own.
        match checked.sign(s).await {
            Ok(v) => (claim.await, Ok(v)),
            Err(refused) => return Reply::Error(refusal_error(refused)),
        }
    };
    let v = match signed {
        Ok(v) => v,
        Err(refused) => return Reply::Error(refusal_error(refused)),
    };
    match claimed {
        Ok(FreeClaim::Granted { used }) => Reply::Answer(super::Answer {
            verdict: Some(v.passed),
            body: v.body,
            billing: super::Billing::Free {
                remaining: s.config.free_per_day.saturating_sub(used),
                limit: s.config.free_per_day,
                resets_at: rfc3339_seconds(next_utc_midnight(now)),
            },
        }),
        Ok(FreeClaim::Exhausted { used }) => allowance_spent(s, &call.resource, used),
        Ok(FreeClaim::BudgetSpent) => {
            s.free_budget.mark(today);
            free_budget_spent(s, &call.resource, used)
        }
        Err(e) => Reply::Error(store_error(e)),
    }
}

/// The `free_trial` object of a 402 for `client` now (one store read; an unavailable store
/// reads as nothing used).
async fn trial_now(s: &Services, client: &str) -> serde_json::Value {
    let used = s
        .store
        .free_used(client, &utc_day(s.clock.now()))
        .await
        .unwrap_or(0);
    trial(s, used)
}

/// A paid verification.
async fn paid<'s>(
    s: &'s Arc<Services>,
    call: &VerifyCall<'_>,
    slot: Option<super::pool::Slot<'s>>,
) -> Reply {
    let price_units = s.config.price_verify_units;
    // The payment's own checks come first: junk costs no store read.
    let inspected = match inspect(s, call.payment, price_units) {
        Ok(i) => i,
        Err(e) => {
            let free_trial = trial_now(s, call.client).await;
            return demand(
                s,
                price_units,
                &call.resource,
                Some(e),
                None,
                Some(free_trial),
            );
        }
    };
    let kept = match recall(s, &inspected, &call.resource, || {
        // The request document `request_hash` covers, and the answer's detail level.
        let req = &*call.request;
        let mut doc = format!("{:?}\n", req.detail).into_bytes();
        let output = verifier_receipt::canonical::value_to_jcs(&req.submitted_output);
        verifier_receipt::hashes::write_request_document(&mut doc, &req.hash_input(), &output);
        doc
    })
    .await
    {
        Ok(kept) => kept,
        Err(answered) => return answered,
    };
    let now = s.clock.now();
    let free_trial = trial_now(s, call.client).await;
    let checked = match admit(
        s,
        inspected,
        price_units,
        &call.resource,
        Some(free_trial.clone()),
    ) {
        Ok(c) => c,
        Err(demand) => return *demand,
    };
    let budgets = s.config.budgets;
    // Within the unpaid ceiling, everything is known before the facilitator is asked.
    let cheap = match price(s, call, budgets.unpaid, slot).await {
        Ok(priced) => Some(priced),
        Err(Refused::Over(over)) => {
            let over = second_look(s, call, over);
            if over.past(budgets.paid) {
                return Reply::Error(ApiError::InvalidRequest(vec![over_budget_problem(&over)]));
            }
            None
        }
        Err(Refused::Invalid(e) | Refused::Error(e)) => return Reply::Error(e),
    };
    charge(
        s,
        call.client,
        &checked,
        kept,
        price_units,
        &call.resource,
        Some(free_trial),
        || async move {
            let priced = match cheap {
                Some(priced) => priced,
                // Dearer work is priced under the paid ceiling once the payment is verified.
                None => price(s, call, budgets.paid, None)
                    .await
                    .map_err(refusal_error)?,
            };
            let checked = priced
                .check(s, &call.request, call.client, now)
                .await
                .map_err(refusal_error)?;
            let outcome = outcome_of(&call.request, checked.report(), true);
            let v = checked.sign(s).await.map_err(refusal_error)?;
            Ok(super::paid::Work {
                body: v.body,
                outcome,
                verdict: Some(v.passed),
            })
        },
    )
    .await
}

/// The 402 an empty verification POST (an x402 discovery probe) gets.
pub async fn probe(s: &Services, client: &str, resource: Resource) -> Reply {
    if s.config.private {
        // Nothing to pay for: the empty body is what is wrong.
        return Reply::Error(ApiError::InvalidRequest(vec![
            verifier_engine::request::FieldProblem::new(
                "body",
                "is empty",
                "Send a verification request: a JSON object with expected_schema and submitted_output.",
            ),
        ]));
    }
    telemetry::payment_required(PaymentReason::Probe);
    let used = s
        .store
        .free_used(client, &utc_day(s.clock.now()))
        .await
        .unwrap_or(0);
    demand(
        s,
        s.config.price_verify_units,
        &resource,
        None,
        None,
        Some(trial(s, used)),
    )
}
