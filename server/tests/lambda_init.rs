//! The Lambda init path on real components: the signing key from moto's SSM (a SecureString
//! under a moto KMS key, made by the rotation), DynamoDB Local for the store; then API Gateway
//! events through the verify, discovery and score functions: the verify function signs with
//! the rotated key, a second rotation is picked up by the refresh, the agent card lists both
//! keys and receipts from before and after verify; the allowance is counted in DynamoDB and
//! the outcomes land in the agent's history.

use function_common::lambda::{Init, LambdaSettings, app, public_url_of};
use http_body_util::BodyExt;
use serde_json::Value;
use std::time::Duration;
use tower::ServiceExt;
use verifier_keys_aws::KeyParams;
use verifier_ports::keys::KeySource;
use verifier_receipt::attest::verify_receipt;
use verifier_service::config::ServiceConfig;
use verifier_store_dynamo::DynamoStore;

const EVENT: &str = include_str!("../../events/verify-schema-valid.json");
const SCORE_EVENT: &str = include_str!("../../events/reputation-unknown-agent.json");

fn components_available() -> bool {
    let present = std::env::var("AWS_ENDPOINT_URL_SSM").is_ok()
        && std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_ok();
    if !present {
        assert!(
            std::env::var("VERIFIER_REQUIRE_COMPONENTS").is_err(),
            "moto and DynamoDB Local are required (AWS_ENDPOINT_URL_SSM / _DYNAMODB unset)"
        );
        eprintln!("skipped: moto or DynamoDB Local is not running (scripts/test.sh starts both)");
    }
    present
}

/// The sample event, for a real agent (so the outcome is recorded).
fn verify_event(agent: &str) -> http::Request<axum::body::Body> {
    let mut event: Value = serde_json::from_str(EVENT).expect("event");
    let body = event["body"]
        .as_str()
        .expect("body")
        .replace("\"test-seller-invoice-agent\"", &format!("\"{agent}\""));
    event["headers"]["content-length"] = body.len().to_string().into();
    event["body"] = body.into();
    function_common::runtime::event::request_of(event.to_string().as_bytes())
        .expect("API Gateway event")
}

fn reputation_event(agent: &str) -> http::Request<axum::body::Body> {
    let mut event: Value = serde_json::from_str(SCORE_EVENT).expect("event");
    let path = format!("/reputation/{agent}");
    event["rawPath"] = path.clone().into();
    event["requestContext"]["http"]["path"] = path.into();
    event["pathParameters"] = serde_json::json!({ "agent_id": agent });
    function_common::runtime::event::request_of(event.to_string().as_bytes())
        .expect("API Gateway event")
}

async fn call(router: &axum::Router, req: http::Request<axum::body::Body>) -> (u16, Value) {
    let response = router.clone().oneshot(req).await.expect("infallible");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_loads_the_ssm_key_and_serves_on_dynamodb() {
    if !components_available() {
        return;
    }
    let sdk = verifier_aws_sdk::aws_sdk_config()
        .await
        .expect("an SDK configuration");
    let ssm = aws_sdk_ssm::Client::new(&sdk);
    let kms = aws_sdk_kms::Client::new(&sdk);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let keys = KeyParams {
        signing: format!("/agent-output-verifier/{run}/signing-key"),
        ring: format!("/agent-output-verifier/{run}/public-keys"),
    };
    let table = format!("lambda-{run}");
    DynamoStore::from_env(&table)
        .await
        .create_table()
        .await
        .expect("table");
    let settings = LambdaSettings {
        table,
        keys: keys.clone(),
        key_refresh: Duration::from_millis(200),
        blocks_refresh: std::time::Duration::from_secs(60),
        outcome_retention_days: 0,
        public_url: None,
        config: ServiceConfig {
            free_per_day: 3,
            pay_to_base: Some("0x1111111111111111111111111111111111111111".into()),
            ..ServiceConfig::default()
        },
        facilitator_url: None,
        facilitator_key_id: None,
        facilitator_key_secret_param: None,
        mcp_allowed_origins: vec![],
        mcp_allowed_hosts: vec![],
        metered: false,
    };

    // No key yet: init fails loudly, there is no fallback.
    let err = Init::new::<function_common::lambda::Dynamo>(settings.clone())
        .await
        .err()
        .expect("init without a key");
    assert!(err.to_string().contains("rotation"), "{err}");

    let kms_key = kms.create_key().send().await.expect("KMS key");
    let kms_key_id = kms_key.key_metadata.expect("metadata").key_id;
    let rotation = verifier_keys_aws::rotate(&ssm, &keys, &kms_key_id)
        .await
        .expect("first key");
    let init = Init::new::<function_common::lambda::Dynamo>(settings)
        .await
        .expect("init");
    assert_eq!(init.keys.current().key_version(), rotation.key_version);

    // The public URL comes from the request context when it is not configured.
    let url = public_url_of(&verify_event("x"));
    assert_eq!(
        url,
        "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
    );
    let services = init.services(&url).await.expect("services");
    let verify = app(verify_function::router(services.clone()), &services);
    let score = app(score_function::router(services.clone()), &services);

    let discovery = app(discovery_function::router(services.clone()), &services);

    let agent = format!("lambda-agent-{run}");
    let mut statuses = Vec::new();
    let mut before = Value::Null;
    for _ in 0..2 {
        let (status, body) = call(&verify, verify_event(&agent)).await;
        statuses.push(status);
        before = body;
    }
    assert_eq!(
        before["verify"]["public_key_url"],
        format!("{url}/.well-known/agent-card.json")
    );
    assert_eq!(
        before["attestation"]["key_version"],
        rotation.key_version.as_str()
    );

    // The rotation runs again; the running function picks the new key up on its refresh.
    let second = verifier_keys_aws::rotate(&ssm, &keys, &kms_key_id)
        .await
        .expect("second key");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while init.keys.current().key_version() != second.key_version {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refresh never saw the new key"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, after) = call(&verify, verify_event(&agent)).await;
    statuses.push(status);
    assert_eq!(
        after["attestation"]["key_version"],
        second.key_version.as_str()
    );
    let (status, _) = call(&verify, verify_event(&agent)).await;
    statuses.push(status);
    assert_eq!(
        statuses,
        [200, 200, 200, 402],
        "allowance 3 per client address, counted in DynamoDB"
    );

    // The agent card (through the discovery function) lists both keys; both receipts verify.
    let card_event = include_str!("../../events/discovery-agent-card.json");
    let (status, card) = call(
        &discovery,
        function_common::runtime::event::request_of(card_event.as_bytes()).expect("event"),
    )
    .await;
    assert_eq!(status, 200);
    let listed = verifier_receipt::keys::parse_key_list(&card).expect("the card lists its keys");
    let versions: Vec<&str> = listed.iter().map(|k| k.key_version.as_str()).collect();
    assert_eq!(
        versions,
        [rotation.key_version.as_str(), second.key_version.as_str()]
    );
    assert_eq!(
        verify_receipt(&before, &listed)
            .expect("receipt before the rotation")
            .key_version,
        rotation.key_version
    );
    assert_eq!(
        verify_receipt(&after, &listed)
            .expect("receipt after the rotation")
            .key_version,
        second.key_version
    );

    let (status, reputation) = call(&score, reputation_event(&agent)).await;
    assert_eq!(status, 200, "{reputation}");
    assert_eq!(
        reputation["fails"], 3,
        "every answered (failing) verification: {reputation}"
    );
    assert_eq!(reputation["passes"], 0, "{reputation}");
}

#[test]
fn missing_configuration_fails_init() {
    let err = LambdaSettings::from_env().expect_err("no VERIFIER_TABLE in the test environment");
    assert!(err.to_string().contains("must be set"), "{err}");
}
