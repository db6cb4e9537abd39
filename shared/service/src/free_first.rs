//! A free verification on a store that claims before the work ([`Store::claims_before_work`]:
//! DynamoDB). Two store round trips instead of three: the claim is the allowance check (one
//! conditional update that returns the new count, so the `Free-Allowance-Remaining` header
//! is exact and a spent client gets its 402 before any work), and after the checks the
//! outcome is recorded in one transaction of its own items. A claim whose answer is not given
//! (over the unpaid ceiling, an invalid request, a failed signature or record) is handed back
//! before the caller hears of it, so a refusal never costs a free call.
//!
//! [`Store::claims_before_work`]: verifier_ports::store::Store::claims_before_work

use super::pricing::{Refused, price, second_look};
use super::unpaid::{allowance_spent, free_budget_spent, over_free_budget, screen};
use super::{Billing, Reply, Services};
use crate::call::{VerifyCall, store_error};
use crate::free_budget::day_index;
use crate::priced_result::{outcome_of, refusal_error};
use std::sync::Arc;
use verifier_ports::clock::{next_utc_midnight, rfc3339_seconds, utc_day};
use verifier_ports::store::{FreeClaim, FreeLimit};

/// Claim, price, check, sign and record a free verification (the caller has decided it is
/// free: no payment, within the free size).
pub(super) async fn verify_free<'s>(
    s: &'s Arc<Services>,
    call: &VerifyCall<'_>,
    slot: Option<super::pool::Slot<'s>>,
) -> Reply {
    let now = s.clock.now();
    let day = utc_day(now);
    let today = day_index(now.unix_timestamp());
    let budget_spent = s.config.no_free_budget() || s.free_budget.is_spent(today);
    let claim = if budget_spent {
        FreeClaim::BudgetSpent
    } else {
        let limit = FreeLimit {
            per_client: s.config.free_per_day,
            total: s.config.free_budget(),
        };
        match s
            .store
            .claim_free_within(call.client, &day, limit, None)
            .await
        {
            Ok(claim) => claim,
            Err(e) => return Reply::Error(store_error(e)),
        }
    };
    let used = match claim {
        FreeClaim::Granted { used } => used,
        FreeClaim::Exhausted { used } => {
            if let Err(e) = screen(s, &call.request.expected_schema) {
                return Reply::Error(e);
            }
            return allowance_spent(s, &call.resource, used);
        }
        FreeClaim::BudgetSpent => {
            s.free_budget.mark(today);
            if let Err(e) = screen(s, &call.request.expected_schema) {
                return Reply::Error(e);
            }
            let used = s.store.free_used(call.client, &day).await.unwrap_or(0);
            return free_budget_spent(s, &call.resource, used);
        }
    };
    let given_back = |reply: Reply| async move {
        match s.store.release_free(call.client, &day, true).await {
            Ok(()) => reply,
            // The caller is told it is our failure, never charged a free call silently.
            Err(e) => Reply::Error(store_error(e)),
        }
    };
    // Priced, then checked; the estimate of a request over the unpaid ceiling gets its second
    // look (a 402 or, past any ceiling, a 422), and every refusal gives the claim back.
    let checked = match price(s, call, s.config.budgets.unpaid, slot).await {
        Ok(priced) => priced.check(s, &call.request, call.client, now).await,
        Err(Refused::Over(over)) => Err(Refused::Over(second_look(s, call, over))),
        Err(refused) => Err(refused),
    };
    let checked = match checked {
        Ok(checked) => checked,
        Err(Refused::Over(over)) => {
            let refusal = over_free_budget(s, &call.resource, used.saturating_sub(1), over);
            return given_back(refusal).await;
        }
        Err(Refused::Invalid(e) | Refused::Error(e)) => return given_back(Reply::Error(e)).await,
    };
    let outcome = outcome_of(&call.request, checked.report(), false);
    let record = async {
        match outcome {
            Some(outcome) => s.store.record(outcome).await,
            None => Ok(()),
        }
    };
    // The report is signed while the store records its outcome.
    let (recorded, signed) = tokio::join!(biased; record, checked.sign(s));
    let v = match (recorded, signed) {
        (Ok(()), Ok(v)) => v,
        (Err(e), _) => return given_back(Reply::Error(store_error(e))).await,
        // Signing our own report fails only by a bug; its outcome stays recorded (the checks
        // ran), the free call is given back.
        (Ok(()), Err(refused)) => return given_back(Reply::Error(refusal_error(refused))).await,
    };
    Reply::Answer(super::Answer {
        verdict: Some(v.passed),
        body: v.body,
        billing: Billing::Free {
            remaining: s.config.free_per_day.saturating_sub(used),
            limit: s.config.free_per_day,
            resets_at: rfc3339_seconds(next_utc_midnight(now)),
        },
    })
}
