//! Faults DynamoDB Local cannot produce on demand, mocked at the SDK (aws-smithy-mocks):
//! persistent throttling becomes a retryable "unavailable", never a wrong answer; a
//! transaction conflict is retried and then commits; a throttled payment claim is not a win.

use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::error::TransactionCanceledException;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use aws_smithy_mocks::{RuleMode, mock, mock_client};
use verifier_ports::store::{FreeClaim, Outcome, Store, StoreError};
use verifier_store_dynamo::DynamoStore;

fn outcome() -> Outcome {
    Outcome {
        agent_id: "a".into(),
        verification_id: "v".into(),
        result: "pass".into(),
        verified_at: "2026-12-03T00:00:00.000000+00:00".into(),
        signed_deliverable: None,
        paid: false,
        checks: 1,
    }
}

fn cancelled(code: &str) -> TransactWriteItemsError {
    let reason = |c: &str| CancellationReason::builder().code(c).build();
    TransactWriteItemsError::TransactionCanceledException(
        TransactionCanceledException::builder()
            .cancellation_reasons(reason("None"))
            .cancellation_reasons(reason(code))
            .cancellation_reasons(reason("None"))
            .message("Transaction cancelled")
            .build(),
    )
}

#[tokio::test]
async fn a_conflicting_transaction_is_retried_then_commits() {
    let transact = mock!(aws_sdk_dynamodb::Client::transact_write_items)
        .sequence()
        .error(|| cancelled("TransactionConflict"))
        .times(2)
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    let read = mock!(aws_sdk_dynamodb::Client::get_item).then_output(|| {
        GetItemOutput::builder()
            .item("used", AttributeValue::N("1".into()))
            .build()
    });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&transact, &read]);
    let store = DynamoStore::new(client, "t");
    let claim = store
        .claim_free("c", "2026-12-03", 5, Some(outcome()))
        .await
        .expect("claim");
    assert_eq!(claim, FreeClaim::Granted { used: 1 });
    assert_eq!(transact.num_calls(), 3);
}

#[tokio::test]
async fn persistent_conflicts_are_unavailable_not_a_wrong_count() {
    let conflict = mock!(aws_sdk_dynamodb::Client::transact_write_items)
        .sequence()
        .error(|| cancelled("TransactionConflict"))
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&conflict]);
    let store = DynamoStore::new(client, "t");
    let err = store
        .claim_free("c", "2026-12-03", 5, Some(outcome()))
        .await
        .expect_err("gives up");
    assert!(matches!(err, StoreError::Unavailable), "{err:?}");
}

#[tokio::test]
async fn a_throttled_payment_claim_is_an_error_not_a_win() {
    let throttled = mock!(aws_sdk_dynamodb::Client::put_item)
        .sequence()
        .error(|| {
            PutItemError::ProvisionedThroughputExceededException(
                aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException::builder()
                    .message("slow down")
                    .build(),
            )
        })
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&throttled]);
    let store = DynamoStore::new(client, "t");
    let err = store.claim_payment("k", 1).await.expect_err("throttled");
    assert!(matches!(err, StoreError::Unavailable), "{err:?}");
}
