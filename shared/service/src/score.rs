//! The trust score (`GET /score/{agent_id}`, MCP `get_verification_record`) and the free
//! reputation history (`GET /reputation/{agent_id}`).

use super::paid::{admit, charge, demand, inspect, recall};
use super::{Answer, Billing, Reply, Resource, Services};
use crate::call::store_error as map_store_error;
use crate::errors::ApiError;
use crate::payments::PaymentInput;
use serde::Serialize;
use utoipa::ToSchema;
use verifier_engine::report::VerifyBlock;
use verifier_engine::request::{FieldProblem, MAX_ID_CHARS};
use verifier_engine::trust;
use verifier_ports::store::AgentHistory;
use verifier_receipt::attest::{TRUST_SCORE_CONTEXT, attest, with_attestation};
use verifier_receipt::timestamp::rfc3339_micros;

/// The description paid score lookups carry in PaymentRequired.
pub const DESCRIPTION: &str = "Signed trust score of an agent from its verification history";
/// Outcomes `/reputation` lists, newest first.
pub const RECENT_OUTCOMES: usize = verifier_ports::store::RECENT_OUTCOMES_KEPT;

/// How the score was computed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Method {
    pub name: &'static str,
    pub version: &'static str,
    pub confidence: f64,
    /// Counted verifications an agent needs before it gets a score (`unrated` below).
    pub min_sample: u64,
    pub description: &'static str,
}

fn method() -> Method {
    Method {
        name: trust::METHOD,
        version: trust::METHOD_VERSION,
        confidence: trust::CONFIDENCE,
        min_sample: trust::MIN_SAMPLE,
        description: "lower bound of the 95% Wilson score interval of passes / (passes + fails), rounded to 6 decimals; every free and paid verification that checked something counts (for a key-based agent ID only the deliverables its key signed, each once); test- IDs and verifications that checked nothing never do; below min_sample counted verifications there is no score (reason unrated)",
    }
}

/// A score answer without its attestation (what the signature covers).
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreResponse {
    pub agent_id: String,
    /// Null with `reason` `no_data` or `unrated`.
    pub trust_score: Option<f64>,
    /// Counted verifications (passes + fails).
    pub sample_size: u64,
    pub passes: u64,
    pub fails: u64,
    /// Of the counted verifications, how many were paid for.
    pub paid_verifications: u64,
    /// The checks the counted verifications ran together.
    pub checks_covered: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// `verified`: the agent ID is a key and only its holder's signed deliverables are counted;
    /// `unverified`: a plain label anyone may write under.
    pub identity: &'static str,
    pub method: Method,
    pub computed_at: String,
    pub verify: VerifyBlock,
}

/// One outcome in the history (no task content).
#[derive(Debug, Serialize, ToSchema)]
pub struct RecentOutcome {
    pub verification_id: String,
    pub result: String,
    pub verified_at: String,
    /// Paid for (not a free call).
    pub paid: bool,
    /// The checks the verification ran.
    pub checks: u64,
}

/// The free reputation history.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReputationResponse {
    pub agent_id: String,
    pub passes: u64,
    pub fails: u64,
    pub total: u64,
    /// Of the counted verifications, how many were paid for.
    pub paid_verifications: u64,
    /// The checks the counted verifications ran together.
    pub checks_covered: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// Newest first, at most `recent_limit`.
    pub recent: Vec<RecentOutcome>,
    pub recent_limit: usize,
    /// `test-` IDs are never recorded.
    pub reserved_test_id: bool,
    /// `verified` (a key-based ID: only its holder's signed deliverables are recorded) or
    /// `unverified` (a plain label anyone may write under).
    pub identity: &'static str,
}

/// Check an agent ID from a path: 1 to 200 characters (after URL decoding).
pub fn check_agent_id(agent_id: &str) -> Result<(), ApiError> {
    let n = agent_id.chars().count();
    if n == 0 || n > MAX_ID_CHARS {
        return Err(ApiError::InvalidRequest(vec![FieldProblem::new(
            "agent_id",
            if n == 0 {
                "is empty".to_owned()
            } else {
                format!("is longer than {MAX_ID_CHARS} characters")
            },
            format!(
                "Send an agent ID of 1 to {MAX_ID_CHARS} characters (URL-encoded in the path)."
            ),
        )]));
    }
    Ok(())
}

fn is_test_id(agent_id: &str) -> bool {
    agent_id.starts_with("test-")
}

/// Build and sign a score answer.
pub(crate) fn signed_score(
    s: &Services,
    agent_id: &str,
    history: &AgentHistory,
) -> Result<Vec<u8>, ApiError> {
    let signer = s.keys.current();
    let computed_at = rfc3339_micros(s.clock.now());
    let rating = trust::rating(history.passes, history.fails);
    let response = ScoreResponse {
        agent_id: agent_id.to_owned(),
        trust_score: rating.ok(),
        sample_size: history.passes + history.fails,
        passes: history.passes,
        fails: history.fails,
        paid_verifications: history.paid,
        checks_covered: history.checks,
        first_seen: history.first_seen.clone(),
        last_seen: history.last_seen.clone(),
        reason: rating.err().map(trust::NoScore::reason),
        identity: verifier_engine::identity::label(agent_id),
        method: method(),
        computed_at: computed_at.clone(),
        verify: VerifyBlock::new(Some(s.config.public_url.as_str()), signer.key_version()),
    };
    let attestation = attest(TRUST_SCORE_CONTEXT, &response, &signer, &computed_at)
        .map_err(|_| ApiError::Internal)?;
    let body = serde_json::to_vec(&response).map_err(|_| ApiError::Internal)?;
    with_attestation(body, &attestation).map_err(|_| ApiError::Internal)
}

/// Run a score lookup.
pub async fn score(
    s: &Services,
    client: &str,
    agent_id: &str,
    payment: &PaymentInput,
    res: Resource,
) -> Reply {
    if let Err(e) = check_agent_id(agent_id) {
        return Reply::Error(e);
    }
    if s.blocks.agent_blocked(agent_id) {
        return Reply::Error(ApiError::Blocked);
    }
    let history = if is_test_id(agent_id) {
        AgentHistory::default()
    } else {
        match s.store.history(agent_id, 0).await {
            Ok(h) => h,
            Err(e) => return Reply::Error(map_store_error(e)),
        }
    };
    if trust::rating(history.passes, history.fails).is_err() || s.config.private {
        // No data, or too little to rate, or a private deployment: a free, signed answer,
        // paid or not.
        return match signed_score(s, agent_id, &history) {
            Ok(body) => Reply::Answer(Answer {
                body,
                billing: Billing::NotCharged,
                verdict: None,
            }),
            Err(e) => Reply::Error(e),
        };
    }
    let price = s.config.price_score_units;
    if !payment.is_present() {
        crate::telemetry::payment_required(crate::telemetry::PaymentReason::PaidScore);
        return demand(s, price, &res, None, None, None);
    }
    let inspected = match inspect(s, payment, price) {
        Ok(i) => i,
        Err(e) => return demand(s, price, &res, Some(e), None, None),
    };
    let kept = match recall(s, &inspected, &res, || agent_id.as_bytes().to_vec()).await {
        Ok(kept) => kept,
        Err(answered) => return answered,
    };
    let checked = match admit(s, inspected, price, &res, None) {
        Ok(c) => c,
        Err(demand) => return *demand,
    };
    charge(s, client, &checked, kept, price, &res, None, || async {
        Ok(super::paid::Work {
            body: signed_score(s, agent_id, &history)?,
            outcome: None,
            verdict: None,
        })
    })
    .await
}

/// The free reputation history.
pub async fn reputation(s: &Services, agent_id: &str) -> Result<Vec<u8>, ApiError> {
    check_agent_id(agent_id)?;
    if s.blocks.agent_blocked(agent_id) {
        return Err(ApiError::Blocked);
    }
    let test = is_test_id(agent_id);
    let history = if test {
        AgentHistory::default()
    } else {
        s.store
            .history(agent_id, RECENT_OUTCOMES)
            .await
            .map_err(map_store_error)?
    };
    let response = ReputationResponse {
        agent_id: agent_id.to_owned(),
        passes: history.passes,
        fails: history.fails,
        total: history.passes + history.fails,
        paid_verifications: history.paid,
        checks_covered: history.checks,
        first_seen: history.first_seen,
        last_seen: history.last_seen,
        recent: history
            .recent
            .into_iter()
            .map(|o| RecentOutcome {
                verification_id: o.verification_id,
                result: o.result,
                verified_at: o.verified_at,
                paid: o.paid,
                checks: o.checks,
            })
            .collect(),
        recent_limit: RECENT_OUTCOMES,
        reserved_test_id: test,
        identity: verifier_engine::identity::label(agent_id),
    };
    serde_json::to_vec(&response).map_err(|_| ApiError::Internal)
}
