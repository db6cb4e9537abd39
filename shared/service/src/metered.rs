//! The ports with their calls measured: a [`Store`] and a [`Facilitator`] that time every call
//! of the one they wrap and record it ([`telemetry::dependency`]) — how long, and whether it
//! failed. What they wrap answers exactly as before.

use crate::telemetry::{self, Dependency};
use async_trait::async_trait;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use verifier_ports::facilitator::{Facilitator, FacilitatorError};
use verifier_ports::store::{
    AgentHistory, Block, BlockTarget, FreeClaim, FreeLimit, Outcome, PaidAnswer, PaymentState,
    Settlement, Store, StoreError,
};
use verifier_ports::x402::{
    PaymentPayload, PaymentRequirements, SettlementResponse, Supported, VerifyResponse,
};

/// Run one call of `dependency`, recording its duration and outcome.
async fn timed<T, E>(
    dependency: Dependency,
    call: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let started = Instant::now();
    let result = call.await;
    telemetry::dependency(dependency, result.is_ok(), started.elapsed().as_secs_f64());
    result
}

/// A store whose calls are measured.
pub struct MeteredStore(pub Arc<dyn Store>);

#[async_trait]
impl Store for MeteredStore {
    async fn claim_free_within(
        &self,
        client: &str,
        day: &str,
        limit: FreeLimit,
        outcome: Option<Outcome>,
    ) -> Result<FreeClaim, StoreError> {
        timed(
            Dependency::Store,
            self.0.claim_free_within(client, day, limit, outcome),
        )
        .await
    }

    async fn free_used(&self, client: &str, day: &str) -> Result<u64, StoreError> {
        timed(Dependency::Store, self.0.free_used(client, day)).await
    }

    fn claims_before_work(&self) -> bool {
        self.0.claims_before_work()
    }

    async fn release_free(&self, client: &str, day: &str, total: bool) -> Result<(), StoreError> {
        timed(Dependency::Store, self.0.release_free(client, day, total)).await
    }

    async fn record(&self, outcome: Outcome) -> Result<(), StoreError> {
        timed(Dependency::Store, self.0.record(outcome)).await
    }

    async fn history(&self, agent_id: &str, recent: usize) -> Result<AgentHistory, StoreError> {
        timed(Dependency::Store, self.0.history(agent_id, recent)).await
    }

    async fn claim_payment(&self, key: &str, keep_until: i64) -> Result<bool, StoreError> {
        timed(Dependency::Store, self.0.claim_payment(key, keep_until)).await
    }

    async fn advance_payment(
        &self,
        key: &str,
        from: PaymentState,
        to: PaymentState,
    ) -> Result<bool, StoreError> {
        timed(Dependency::Store, self.0.advance_payment(key, from, to)).await
    }

    async fn release_payment(&self, key: &str) -> Result<(), StoreError> {
        timed(Dependency::Store, self.0.release_payment(key)).await
    }

    async fn paid_answer(&self, id: &str, now: i64) -> Result<Option<PaidAnswer>, StoreError> {
        timed(Dependency::Store, self.0.paid_answer(id, now)).await
    }

    async fn keep_paid_answer(
        &self,
        id: &str,
        answer: &PaidAnswer,
        keep_until: i64,
    ) -> Result<(), StoreError> {
        timed(
            Dependency::Store,
            self.0.keep_paid_answer(id, answer, keep_until),
        )
        .await
    }

    async fn record_settlement(&self, settlement: &Settlement) -> Result<(), StoreError> {
        timed(Dependency::Store, self.0.record_settlement(settlement)).await
    }

    async fn settlements(
        &self,
        since: i64,
        until: i64,
        limit: usize,
    ) -> Result<Vec<Settlement>, StoreError> {
        timed(Dependency::Store, self.0.settlements(since, until, limit)).await
    }

    async fn set_blocked(
        &self,
        target: &BlockTarget,
        blocked: bool,
        now: i64,
    ) -> Result<bool, StoreError> {
        timed(Dependency::Store, self.0.set_blocked(target, blocked, now)).await
    }

    async fn blocks(&self) -> Result<Vec<Block>, StoreError> {
        timed(Dependency::Store, self.0.blocks()).await
    }

    async fn erase_agent(&self, agent_id: &str) -> Result<u64, StoreError> {
        timed(Dependency::Store, self.0.erase_agent(agent_id)).await
    }
}

/// A facilitator whose calls are measured.
pub struct MeteredFacilitator(pub Arc<dyn Facilitator>);

#[async_trait]
impl Facilitator for MeteredFacilitator {
    fn url(&self) -> &str {
        self.0.url()
    }

    async fn verify(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError> {
        timed(
            Dependency::Facilitator,
            self.0.verify(payload, requirements),
        )
        .await
    }

    async fn settle(
        &self,
        payload: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettlementResponse, FacilitatorError> {
        timed(
            Dependency::Facilitator,
            self.0.settle(payload, requirements),
        )
        .await
    }

    async fn supported(&self) -> Result<Supported, FacilitatorError> {
        timed(Dependency::Facilitator, self.0.supported()).await
    }
}
