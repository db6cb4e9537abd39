//! What a priced verification turns into, for both free paths and the paid one: the outcome
//! it adds to its agent's history, or its refusal as the caller's error.

use crate::errors::ApiError;
use crate::pricing::Refused;
use verifier_engine::Unsigned;
use verifier_engine::engine::over_budget_problem;
use verifier_engine::request::VerifyRequest;
use verifier_ports::store::Outcome;

/// A refusal after the request was priced, as the caller's error: over the ceiling it was
/// priced under is the caller's problem (422).
pub(crate) fn refusal_error(r: Refused) -> ApiError {
    match r {
        Refused::Over(over) => ApiError::InvalidRequest(vec![over_budget_problem(&over)]),
        Refused::Invalid(e) | Refused::Error(e) => e,
    }
}

/// The outcome a verification adds to its agent's history: none for `test-` or absent IDs,
/// and none for a verification that checked nothing (a schema asserting nothing, no rule, no
/// bound): it is evidence of nothing, so it cannot move a score.
pub(crate) fn outcome_of(req: &VerifyRequest, v: &Unsigned, paid: bool) -> Option<Outcome> {
    (req.records_history() && v.checks() > 0).then(|| Outcome {
        agent_id: req.agent_id.clone().unwrap_or_default(),
        verification_id: v.verification_id().to_owned(),
        result: if v.passed() { "pass" } else { "fail" }.into(),
        verified_at: v.verified_at().to_owned(),
        signed_deliverable: v.signed_deliverable().map(str::to_owned),
        paid,
        checks: u64::try_from(v.checks()).unwrap_or(u64::MAX),
    })
}
