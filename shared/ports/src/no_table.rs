//! The store of a function that has no table: discovery, whose documents read and write
//! nothing and whose IAM policy grants no DynamoDB action. It lets that function's package
//! leave the DynamoDB client out. Every call fails as a backend error that says why: a route
//! reaching it is served by the wrong function, and nothing is ever silently not stored.

use crate::store::{
    AgentHistory, FreeClaim, FreeLimit, Outcome, PaidAnswer, PaymentState, Store, StoreError,
};
use async_trait::async_trait;

/// A store with no table behind it.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTable;

fn refused<T>() -> Result<T, StoreError> {
    Err(StoreError::Backend(
        "this function has no table: the route that needs the store is served by the wrong function"
            .into(),
    ))
}

#[async_trait]
impl Store for NoTable {
    async fn claim_free_within(
        &self,
        _client: &str,
        _day: &str,
        _limit: FreeLimit,
        _outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError> {
        refused()
    }

    async fn free_used(&self, _client: &str, _day: &str) -> Result<u64, StoreError> {
        refused()
    }

    async fn release_free(
        &self,
        _client: &str,
        _day: &str,
        _total: bool,
    ) -> Result<(), StoreError> {
        refused()
    }

    async fn record(&self, _outcome: Outcome) -> Result<(), StoreError> {
        refused()
    }

    async fn history(&self, _agent_id: &str, _recent: usize) -> Result<AgentHistory, StoreError> {
        refused()
    }

    async fn claim_payment(&self, _key: &str, _keep_until: i64) -> Result<bool, StoreError> {
        refused()
    }

    async fn advance_payment(
        &self,
        _key: &str,
        _from: PaymentState,
        _to: PaymentState,
    ) -> Result<bool, StoreError> {
        refused()
    }

    async fn release_payment(&self, _key: &str) -> Result<(), StoreError> {
        refused()
    }

    async fn paid_answer(&self, _id: &str, _now: i64) -> Result<Option<PaidAnswer>, StoreError> {
        refused()
    }

    async fn keep_paid_answer(
        &self,
        _id: &str,
        _answer: &PaidAnswer,
        _keep_until: i64,
    ) -> Result<(), StoreError> {
        refused()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_call_fails_and_says_why() {
        let store = NoTable;
        let answer = PaidAnswer {
            fingerprint: "f".into(),
            body: "{}".into(),
            settlement: "{}".into(),
        };
        let errors = [
            store.claim_free("c", "2026-12-06", 1, None).await.err(),
            store.free_used("c", "2026-12-06").await.err(),
            store.history("a", 1).await.err(),
            store
                .record(Outcome {
                    agent_id: "a".into(),
                    verification_id: "v".into(),
                    result: "pass".into(),
                    verified_at: "2026-12-06T00:00:00.000000+00:00".into(),
                    signed_deliverable: None,
                    paid: false,
                    checks: 1,
                })
                .await
                .err(),
            store.claim_payment("k", 0).await.err(),
            store
                .advance_payment("k", PaymentState::Claimed, PaymentState::Settling)
                .await
                .err(),
            store.release_payment("k").await.err(),
            store.paid_answer("i", 0).await.err(),
            store.keep_paid_answer("i", &answer, 0).await.err(),
        ];
        for error in errors {
            let error = error.expect("an error").to_string();
            assert!(error.contains("has no table"), "{error}");
        }
    }
}
