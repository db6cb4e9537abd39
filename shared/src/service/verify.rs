//! One verification, priced before it runs.
//!
//! The order (README, "What a request costs"):
//! 1. The request was parsed and validated by the transport (an invalid one is a 422).
//! 2. Without a payment, the price is decided before any work that reads the output: a body over
//!    the free size limit, or a client whose allowance is spent (one store read), gets its 402 at
//!    once — after a static screen of the schema, so an invalid schema is still a 422, but
//!    nothing is compiled or cached.
//! 3. Otherwise the schema is compiled (cached) and the whole verification priced under the
//!    unpaid ceiling; past it the request goes to payment (or is a 422 when no payment could
//!    buy it). Cheap work runs on the request thread; anything dearer is priced again and run on
//!    the bounded pool ([`super::pool`]), one client holding at most its share of it.
//! 4. The checks run, then the free call is claimed and the outcome recorded in one atomic
//!    step (a lost race wastes one bounded computation and never serves a free answer twice).
//!
//! With a payment, its local checks come first (no network), then the same pricing under the
//! unpaid ceiling; a request dearer than that is priced under the paid ceiling only after the
//! facilitator has verified the payment (so only a funded payer can buy that work), and any
//! refusal after the claim gives the payment back.

use super::paid::{charge, demand, precheck};
use super::pool::Slot;
use super::{Reply, Resource, Services};
use crate::checks::schema::CompiledSchema;
use crate::clock::{next_utc_midnight, rfc3339_seconds, utc_day};
use crate::cost::{Budget, Meter, OverBudget, mebibytes, millis};
use crate::engine::over_budget_problem;
use crate::errors::ApiError;
use crate::payments::{FreeTrialState, PaymentInput, free_trial};
use crate::request::VerifyRequest;
use crate::schema_doc::SchemaDoc;
use crate::store::{FreeClaim, Outcome, StoreError};
use crate::{EngineError, Verification};
use serde_json::{Value, json};
use std::sync::Arc;
use time::OffsetDateTime;

/// The description paid verifications carry in PaymentRequired.
pub const DESCRIPTION: &str =
    "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt";

/// Requests larger than this are priced and run on the bounded pool from the start.
pub const HEAVY_BODY_BYTES: usize = 16 * 1024;

/// Work priced above this runs on the bounded pool, not on the request threads.
pub const LIGHT: Budget = Budget::ms_mib(2, 8);

/// A verification call as a transport received it.
pub struct VerifyCall<'a> {
    /// The caller's address (the allowance is per address).
    pub client: &'a str,
    /// The parsed, valid request.
    pub request: &'a VerifyRequest,
    /// Size of the request as received (bodies over the free size limit are never free).
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

/// Why a verification was not run.
enum Refused {
    /// The caller's error (422).
    Invalid(ApiError),
    /// Over the ceiling it was priced under.
    Over(OverBudget),
    /// No worker for it (429/503), or our failure.
    Error(ApiError),
}

impl From<EngineError> for Refused {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(invalid) => {
                Refused::Invalid(ApiError::InvalidRequest(invalid.problems))
            }
            EngineError::OverBudget(over) => Refused::Over(over),
            other => {
                tracing::error!(error = %other, "verification failed internally");
                Refused::Error(ApiError::Internal)
            }
        }
    }
}

/// A compiled, priced verification ready to run (on a pool worker when it holds one).
struct Priced<'p> {
    compiled: Arc<CompiledSchema>,
    meter: Meter,
    slot: Option<Slot<'p>>,
}

impl Priced<'_> {
    fn run(
        mut self,
        s: &Services,
        req: &VerifyRequest,
        now: OffsetDateTime,
    ) -> Result<Verification, Refused> {
        let signer = s.keys.current();
        let mut work = || {
            s.engine
                .verify_metered(req, &self.compiled, &mut self.meter, &signer, now)
        };
        let done = match &self.slot {
            Some(slot) => slot.run(work),
            None => work(),
        };
        done.map_err(Refused::from)
    }
}

/// Compile (cached) and price a verification under `budget`: on the pool worker `slot` when
/// the request holds one; else first on the request thread under the [`LIGHT`] ceiling, and on
/// a pool worker under the whole budget when that is not enough.
async fn price<'s>(
    s: &'s Services,
    call: &VerifyCall<'_>,
    budget: Budget,
    slot: Option<Slot<'s>>,
) -> Result<Priced<'s>, Refused> {
    let attempt = |meter: &mut Meter| -> Result<Arc<CompiledSchema>, EngineError> {
        let compiled = s
            .engine
            .compile(&call.request.expected_schema, meter, true)?;
        s.engine
            .price(call.request, &compiled, call.body_len, meter)?;
        Ok(compiled)
    };
    if slot.is_none() && call.body_len <= HEAVY_BODY_BYTES {
        let light = Budget {
            cpu_ns: LIGHT.cpu_ns.min(budget.cpu_ns),
            mem_bytes: LIGHT.mem_bytes.min(budget.mem_bytes),
        };
        let mut meter = Meter::new(light);
        match attempt(&mut meter) {
            Ok(compiled) => {
                return Ok(Priced {
                    compiled,
                    meter: meter.with_budget(budget),
                    slot: None,
                });
            }
            // Dearer than the light ceiling: priced again on a pool worker, unless the
            // estimate is past the whole budget already.
            Err(EngineError::OverBudget(over)) => {
                if light == budget || over.past(budget) {
                    return Err(Refused::Over(over));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let slot = match slot {
        Some(slot) => slot,
        None => s.pool.admit(call.client).await.map_err(Refused::Error)?,
    };
    let mut meter = Meter::new(budget);
    let compiled = slot.run(|| attempt(&mut meter))?;
    Ok(Priced {
        compiled,
        meter,
        slot: Some(slot),
    })
}

/// A REST verification as received, before parsing.
pub struct BodyCall<'a> {
    /// The caller's address (the allowance is per address).
    pub client: &'a str,
    /// The body as received (not empty: an empty POST is a [`probe`]).
    pub body: &'a [u8],
    pub payment: &'a PaymentInput,
    pub resource: Resource,
}

/// Run a REST verification: parse the body (on a pool worker when it is large), then the call.
/// A body over the free size limit without a payment is checked in place and answered with a
/// 402 (or its 422) without building its output.
pub async fn verify_body(s: &Services, call: BodyCall<'_>) -> Reply {
    let slot = if call.body.len() > HEAVY_BODY_BYTES {
        match s.pool.admit(call.client).await {
            Ok(slot) => Some(slot),
            Err(e) => return Reply::Error(e),
        }
    } else {
        None
    };
    let on_slot = |work: &dyn Fn() -> Reply| match &slot {
        Some(slot) => slot.run(work),
        None => work(),
    };
    if !call.payment.is_present() && call.body.len() > s.config.free_body_limit {
        let free_limit = s.config.free_body_limit;
        let screened = on_slot(&|| match s.engine.screen_body(call.body, free_limit) {
            Err(invalid) => Reply::Error(ApiError::InvalidRequest(invalid.problems)),
            Ok(Some(schema)) => match screen(s, &schema) {
                Err(e) => Reply::Error(e),
                Ok(()) => Reply::Answer(super::Answer {
                    body: Vec::new(),
                    billing: super::Billing::NotCharged,
                }),
            },
            Ok(None) => Reply::Answer(super::Answer {
                body: Vec::new(),
                billing: super::Billing::NotCharged,
            }),
        });
        return match screened {
            Reply::Answer(_) => over_free_size(s, call.client, &call.resource).await,
            refused => refused,
        };
    }
    let request = match slot.as_ref().map_or_else(
        || s.engine.parse(call.body),
        |slot| slot.run(|| s.engine.parse(call.body)),
    ) {
        Ok(request) => request,
        Err(e) => return Reply::Error(ApiError::InvalidRequest(e.problems)),
    };
    let reply = verify_in(
        s,
        VerifyCall {
            client: call.client,
            request: &request,
            body_len: call.body.len(),
            payment: call.payment,
            resource: call.resource,
        },
        slot,
    )
    .await;
    if matches!(reply, Reply::Answer(_)) {
        s.engine.remember_schema(call.body, &request);
    }
    reply
}

/// Run a verification call whose request is parsed already (MCP).
pub async fn verify(s: &Services, call: VerifyCall<'_>) -> Reply {
    verify_in(s, call, None).await
}

/// The 402 of a request over the free size limit.
async fn over_free_size(s: &Services, client: &str, resource: &Resource) -> Reply {
    let now = s.clock.now();
    let used = s.store.free_used(client, &utc_day(now)).await.unwrap_or(0);
    let resets = rfc3339_seconds(next_utc_midnight(now));
    let trial = free_trial(
        &s.config,
        &FreeTrialState {
            used,
            resets_at: &resets,
        },
    );
    let limit = s.config.free_body_limit;
    with_reason(
        demand(
            s,
            s.config.price_verify_units,
            resource,
            None,
            None,
            Some(trial),
        ),
        json!({
            "code": "over_free_size",
            "message": format!("Requests larger than {limit} bytes are never free; pay to send this one."),
            "free_limit_bytes": limit,
        }),
        "Payment required: the request is over the free size limit",
    )
}

async fn verify_in<'s>(s: &'s Services, call: VerifyCall<'_>, slot: Option<Slot<'s>>) -> Reply {
    if call.payment.is_present() {
        return paid(s, &call, slot).await;
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
    let price_units = s.config.price_verify_units;
    let to_payment = |used: u64, reason: Value, message: &str| {
        with_reason(
            demand(
                s,
                price_units,
                &call.resource,
                None,
                None,
                Some(trial(used)),
            ),
            reason,
            message,
        )
    };
    if call.body_len > s.config.free_body_limit {
        if let Err(e) = screen(s, &call.request.expected_schema) {
            return Reply::Error(e);
        }
        return over_free_size(s, call.client, &call.resource).await;
    }
    let used = match s.store.free_used(call.client, &day).await {
        Ok(used) => used,
        Err(e) => return Reply::Error(store_error(e)),
    };
    if used >= s.config.free_per_day {
        if let Err(e) = screen(s, &call.request.expected_schema) {
            return Reply::Error(e);
        }
        return to_payment(
            used,
            json!({
                "code": "free_trial_exhausted",
                "message": "This client's free verifications for today are used up; pay to run this one.",
            }),
            "Payment required: the free allowance is used up",
        );
    }
    let budgets = s.config.budgets;
    let priced = match price(s, &call, budgets.unpaid, slot).await {
        Ok(p) => p,
        Err(Refused::Over(over)) => {
            let over = second_look(s, &call, over);
            return over_free_budget(s, over, |reason, msg| to_payment(used, reason, msg));
        }
        Err(Refused::Invalid(e) | Refused::Error(e)) => return Reply::Error(e),
    };
    let v = match priced.run(s, call.request, now) {
        Ok(v) => v,
        Err(Refused::Over(over)) => {
            return over_free_budget(s, over, |reason, msg| to_payment(used, reason, msg));
        }
        Err(Refused::Invalid(e) | Refused::Error(e)) => return Reply::Error(e),
    };
    let outcome = outcome_of(call.request, &v);
    match s
        .store
        .claim_free(call.client, &day, s.config.free_per_day, outcome)
        .await
    {
        Ok(FreeClaim::Granted { used }) => Reply::Answer(super::Answer {
            body: v.body,
            billing: super::Billing::Free {
                remaining: s.config.free_per_day.saturating_sub(used),
                limit: s.config.free_per_day,
                resets_at: resets,
            },
        }),
        Ok(FreeClaim::Exhausted { used }) => to_payment(
            used,
            json!({
                "code": "free_trial_exhausted",
                "message": "This client's free verifications for today are used up; pay to run this one.",
            }),
            "Payment required: the free allowance is used up",
        ),
        Err(e) => Reply::Error(store_error(e)),
    }
}

/// Distinct (subschema, value) pairs a second look at an over-budget request may walk to tell
/// whether even the paid ceiling is passed (exponential schemas pass it within a few hundred).
const SECOND_LOOK_PAIRS: usize = 10_000;

/// A request found over `over`'s budget: is it past the paid ceiling too? A cheap second look
/// (its schema compiled already, the walk capped), so a request no payment could buy gets its
/// 422 rather than a 402.
fn second_look(s: &Services, call: &VerifyCall<'_>, over: OverBudget) -> OverBudget {
    let paid = s.config.budgets.paid;
    if over.past(paid) || !s.engine.has_compiled(&call.request.expected_schema) {
        return over;
    }
    let mut meter = Meter::new(paid);
    let repriced = s
        .engine
        .compile(&call.request.expected_schema, &mut meter, false)
        .and_then(|compiled| {
            s.engine
                .price_capped(
                    call.request,
                    &compiled,
                    call.body_len,
                    &mut meter,
                    Some(SECOND_LOOK_PAIRS),
                )
                .map_err(EngineError::from)
        });
    match repriced {
        Err(EngineError::OverBudget(again)) if again.past(paid) => again,
        _ => over,
    }
}

/// A request over the unpaid ceiling: to payment (the paid ceiling is larger), or a 422 when
/// its estimate is past any ceiling.
fn over_free_budget(
    s: &Services,
    over: OverBudget,
    to_payment: impl FnOnce(Value, &str) -> Reply,
) -> Reply {
    let paid = s.config.budgets.paid;
    if over.past(paid) {
        return Reply::Error(ApiError::InvalidRequest(vec![over_budget_problem(&over)]));
    }
    let free = s.config.budgets.unpaid;
    let (estimate, limit) = over.amounts();
    to_payment(
        json!({
            "code": "over_free_cost",
            "message": format!(
                "This request would cost more than {estimate} (mostly {}), over the free ceiling of {limit}; pay and it runs under the paid ceiling of {} of CPU and {}.",
                over.part.describe(),
                millis(paid.cpu_ns),
                mebibytes(paid.mem_bytes)
            ),
            "part": over.part.name(),
            "field": over.part.field(),
            "free_ceiling": {"cpu_ms": free.cpu_ns / 1_000_000, "memory_mib": free.mem_bytes >> 20},
            "paid_ceiling": {"cpu_ms": paid.cpu_ns / 1_000_000, "memory_mib": paid.mem_bytes >> 20},
        }),
        "Payment required: the request is over the free cost ceiling",
    )
}

/// A paid verification.
async fn paid<'s>(s: &'s Services, call: &VerifyCall<'_>, slot: Option<Slot<'s>>) -> Reply {
    let now = s.clock.now();
    let price_units = s.config.price_verify_units;
    let used = s
        .store
        .free_used(call.client, &utc_day(now))
        .await
        .unwrap_or(0);
    let resets = rfc3339_seconds(next_utc_midnight(now));
    let trial = free_trial(
        &s.config,
        &FreeTrialState {
            used,
            resets_at: &resets,
        },
    );
    let checked = match precheck(
        s,
        call.payment,
        price_units,
        &call.resource,
        Some(trial.clone()),
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
        &checked,
        price_units,
        &call.resource,
        Some(trial),
        || async move {
            let priced = match cheap {
                Some(priced) => priced,
                // Dearer work is priced under the paid ceiling once the payment is verified.
                None => price(s, call, budgets.paid, None)
                    .await
                    .map_err(paid_refusal)?,
            };
            let v = priced.run(s, call.request, now).map_err(paid_refusal)?;
            let outcome = outcome_of(call.request, &v);
            Ok((v.body, outcome))
        },
    )
    .await
}

/// A paid request refused: over the paid ceiling is the caller's problem (422).
fn paid_refusal(r: Refused) -> ApiError {
    match r {
        Refused::Over(over) => ApiError::InvalidRequest(vec![over_budget_problem(&over)]),
        Refused::Invalid(e) | Refused::Error(e) => e,
    }
}

/// A 402 with why it is asked (`payment_reason`) and the requirement's `error` text.
fn with_reason(mut reply: Reply, reason: Value, message: &str) -> Reply {
    if let Reply::PaymentRequired(d) = &mut reply {
        d.required.error = Some(message.to_owned());
        d.reason = Some(reason);
    }
    reply
}

/// The static screen of a request headed for a 402: its schema must be one the service can
/// compile, checked without compiling it (nothing is compiled or cached for a 402).
fn screen(s: &Services, schema: &SchemaDoc) -> Result<(), ApiError> {
    if s.engine.has_compiled(schema) {
        return Ok(());
    }
    crate::checks::schema::screen(&schema.value).map_err(|e| {
        ApiError::InvalidRequest(vec![crate::request::FieldProblem::new(
            "expected_schema",
            e.to_string(),
            e.fix(),
        )])
    })
}

/// The outcome an answered verification adds to the agent's history (none for `test-` IDs
/// and a null agent).
fn outcome_of(req: &VerifyRequest, v: &Verification) -> Option<Outcome> {
    req.records_history().then(|| Outcome {
        agent_id: req.agent_id.clone().unwrap_or_default(),
        verification_id: v.verification_id.clone(),
        result: if v.passed { "pass" } else { "fail" }.into(),
        verified_at: v.verified_at.clone(),
    })
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
