//! What a verification without a payment is told when it must be paid for (the 402 and its
//! `payment_reason`), or when no payment could buy it (a 422 naming the costly part).

use super::paid::demand;
use super::{Reply, Resource, Services};
use crate::errors::ApiError;
use crate::payments::{FreeTrialState, free_trial};
use crate::telemetry::{self, PaymentReason};
use serde_json::{Value, json};
use verifier_engine::cost::{OverBudget, mebibytes, millis};
use verifier_engine::engine::over_budget_problem;
use verifier_engine::schema_doc::SchemaDoc;
use verifier_ports::clock::{next_utc_midnight, rfc3339_seconds, utc_day};

/// The `free_trial` object for a client that used `used` free calls today.
pub(super) fn trial(s: &Services, used: u64) -> Value {
    let resets = rfc3339_seconds(next_utc_midnight(s.clock.now()));
    free_trial(
        &s.config,
        &FreeTrialState {
            used,
            resets_at: &resets,
        },
    )
}

/// A 402 for a verification, with why it is asked (`payment_reason`) and the requirement's
/// `error` text.
pub(super) fn to_payment(
    s: &Services,
    resource: &Resource,
    used: u64,
    reason: Value,
    message: &str,
) -> Reply {
    let mut reply = demand(
        s,
        s.config.price_verify_units,
        resource,
        None,
        None,
        Some(trial(s, used)),
    );
    if let Reply::PaymentRequired(d) = &mut reply {
        d.required.error = Some(message.to_owned());
        d.reason = Some(reason);
    }
    reply
}

/// The 402 of a client whose free calls for today are used up (a 429 in a private deployment,
/// which takes no payment).
pub(super) fn allowance_spent(s: &Services, resource: &Resource, used: u64) -> Reply {
    if s.config.private {
        let now = s.clock.now();
        let wait = (next_utc_midnight(now) - now).whole_seconds().max(1) as u64;
        return Reply::Error(ApiError::AllowanceExhausted {
            limit: s.config.free_per_day,
            retry_after: wait,
        });
    }
    telemetry::payment_required(PaymentReason::AllowanceSpent);
    to_payment(
        s,
        resource,
        used,
        json!({
            "code": "free_trial_exhausted",
            "message": "This client's free verifications for today are used up; pay to run this one.",
        }),
        "Payment required: the free allowance is used up",
    )
}

/// The 402 of a free call when the day's free budget across all clients is spent: its
/// `free_trial` and `payment_reason` both say so (`free_budget_exhausted`).
pub(super) fn free_budget_spent(s: &Services, resource: &Resource, used: u64) -> Reply {
    telemetry::payment_required(PaymentReason::FreeBudgetSpent);
    const CODE: &str = "free_budget_exhausted";
    let total = s.config.free_total_per_day;
    let message = format!(
        "The {total} free verifications this service gives all clients together today are used up; pay to run this one, or come back after the reset."
    );
    let mut reply = to_payment(
        s,
        resource,
        used,
        json!({"code": CODE, "message": message, "free_calls_total_per_day": total}),
        "Payment required: today's free budget across all clients is used up",
    );
    if let Reply::PaymentRequired(d) = &mut reply
        && let Some(trial) = d.free_trial.as_mut()
    {
        trial["available"] = false.into();
        trial["code"] = CODE.into();
        trial["free_calls_total_per_day"] = total.into();
        trial["message"] = message.into();
    }
    reply
}

/// The 402 of a request over the free size limit.
pub(super) async fn over_free_size(s: &Services, client: &str, resource: &Resource) -> Reply {
    telemetry::payment_required(PaymentReason::OverFreeSize);
    let used = s
        .store
        .free_used(client, &utc_day(s.clock.now()))
        .await
        .unwrap_or(0);
    let limit = s.config.free_body_limit;
    to_payment(
        s,
        resource,
        used,
        json!({
            "code": "over_free_size",
            "message": format!("Requests larger than {limit} bytes are never free; pay to send this one."),
            "free_limit_bytes": limit,
        }),
        "Payment required: the request is over the free size limit",
    )
}

/// A request over the unpaid ceiling: to payment (the paid ceiling is larger), or a 422 when
/// its estimate is past any ceiling.
pub(super) fn over_free_budget(
    s: &Services,
    resource: &Resource,
    used: u64,
    over: OverBudget,
) -> Reply {
    let paid = s.config.budgets.paid;
    if over.past(paid) {
        return Reply::Error(ApiError::InvalidRequest(vec![over_budget_problem(&over)]));
    }
    telemetry::payment_required(PaymentReason::OverFreeCost);
    let free = s.config.budgets.unpaid;
    let (estimate, limit) = over.amounts();
    to_payment(
        s,
        resource,
        used,
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

/// The static screen of a request headed for a 402: its schema must be one the service can
/// compile, checked without compiling it (nothing is compiled or cached for a 402).
pub(super) fn screen(s: &Services, schema: &SchemaDoc) -> Result<(), ApiError> {
    // Formats do not decide whether a schema compiles: either compiled form will do.
    if s.engine.has_compiled(schema, true) || s.engine.has_compiled(schema, false) {
        return Ok(());
    }
    verifier_engine::checks::schema::screen(&schema.value).map_err(|e| {
        ApiError::InvalidRequest(vec![verifier_engine::request::FieldProblem::new(
            "expected_schema",
            e.to_string(),
            e.fix(),
        )])
    })
}
