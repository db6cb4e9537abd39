//! Key rotation on moto's SSM and KMS (started by scripts/test.sh; `AWS_ENDPOINT_URL_SSM`):
//! the first run creates the SecureString, each run adds one key to the ring and never
//! removes one, the functions' key source loads and refreshes the active key, and receipts
//! signed before and after a rotation both verify against the agent card's key list.

use rotate_key_function::{RotateSettings, handle};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use verifier_engine::{Engine, EngineConfig};
use verifier_keys_aws::{KeyParams, Rotation, SsmKeyError, SsmKeys};
use verifier_ports::keys::KeySource;
use verifier_receipt::attest::verify_receipt;
use verifier_receipt::keys::parse_key_list;
use verifier_service::Services;
use verifier_service::config::ServiceConfig;
use verifier_store_embedded::EmbeddedStore;

async fn clients() -> Option<(aws_sdk_ssm::Client, aws_sdk_kms::Client)> {
    if std::env::var("AWS_ENDPOINT_URL_SSM").is_err() {
        assert!(
            std::env::var("VERIFIER_REQUIRE_COMPONENTS").is_err(),
            "moto is required (AWS_ENDPOINT_URL_SSM unset)"
        );
        eprintln!("skipped: AWS_ENDPOINT_URL_SSM is unset (scripts/test.sh starts moto)");
        return None;
    }
    let sdk = verifier_aws_sdk::aws_sdk_config()
        .await
        .expect("an SDK configuration");
    Some((
        aws_sdk_ssm::Client::new(&sdk),
        aws_sdk_kms::Client::new(&sdk),
    ))
}

async fn settings(kms: &aws_sdk_kms::Client) -> RotateSettings {
    let key = kms.create_key().send().await.expect("create KMS key");
    let stage = uuid::Uuid::new_v4().simple().to_string();
    RotateSettings {
        params: KeyParams {
            signing: format!("/agent-output-verifier/{stage}/signing-key"),
            ring: format!("/agent-output-verifier/{stage}/public-keys"),
        },
        kms_key_id: key.key_metadata.expect("metadata").key_id,
    }
}

fn event(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../events")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).expect("event")).expect("JSON")
}

async fn rotation(
    ssm: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
    event: &Value,
) -> Result<Rotation, rotate_key_function::RotateError> {
    let answer = handle(ssm, settings, event).await?;
    Ok(serde_json::from_value(answer).expect("a rotation"))
}

fn services(keys: Arc<SsmKeys>, dir: &Path) -> Services {
    let config = ServiceConfig {
        public_url: "https://verifier.example".into(),
        ..ServiceConfig::default()
    };
    Services {
        engine: Engine::new(EngineConfig {
            public_url: Some(config.public_url.clone()),
            ..EngineConfig::default()
        }),
        config,
        keys,
        store: Arc::new(EmbeddedStore::open(dir).expect("store")),
        clock: Arc::new(verifier_ports::clock::SystemClock),
        payments: verifier_service::payments::PaymentGate::new(None, None),
        pool: verifier_service::pool::WorkPool::new(Default::default()),
        listings: Default::default(),
        in_flight: Default::default(),
        free_budget: Default::default(),
        blocks: Default::default(),
    }
}

fn receipt(s: &Services) -> Value {
    let body = include_str!("../../../shared/tests/data/hosted-receipts.json");
    let data: Value = serde_json::from_str(body).expect("json");
    let request = data["receipts"][0]["request_body_json"]
        .as_str()
        .expect("body");
    let req = s.engine.parse(request.as_bytes()).expect("valid request");
    let v = s
        .engine
        .verify(&req, &s.keys.current(), s.clock.now())
        .expect("verified");
    serde_json::from_slice(&v.body).expect("JSON")
}

fn card_keys(s: &Services) -> Vec<verifier_receipt::keys::PublicKeyEntry> {
    parse_key_list(&discovery_function::card::agent_card(s)).expect("the card lists its keys")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_creates_then_adds_keys_and_old_receipts_still_verify() {
    let Some((ssm, kms)) = clients().await else {
        return;
    };
    let settings = settings(&kms).await;

    // Before the first rotation a function cannot start: no fallback key.
    match SsmKeys::load(&ssm, &settings.params).await {
        Err(SsmKeyError::Missing(name)) => assert_eq!(name, settings.params.signing),
        Err(other) => panic!("expected Missing, got {other}"),
        Ok(_) => panic!("keys loaded before any rotation"),
    }

    // First run (a manual invoke sends {}): creates the SecureString under the KMS key.
    let first = rotation(&ssm, &settings, &event("rotate-key-manual.json"))
        .await
        .expect("first rotation");
    assert!(first.first);
    assert_eq!(first.ring_size, 1);
    let param = ssm
        .get_parameter()
        .name(&settings.params.signing)
        .send()
        .await
        .expect("parameter")
        .parameter
        .expect("parameter");
    assert_eq!(
        param.r#type,
        Some(aws_sdk_ssm::types::ParameterType::SecureString)
    );
    let described = ssm
        .describe_parameters()
        .parameter_filters(
            aws_sdk_ssm::types::ParameterStringFilter::builder()
                .key("Name")
                .values(&settings.params.signing)
                .build()
                .expect("filter"),
        )
        .send()
        .await
        .expect("describe");
    let key_id = described.parameters()[0].key_id().unwrap_or_default();
    assert!(
        key_id.contains(&settings.kms_key_id),
        "{key_id} is not the customer-managed key {}",
        settings.kms_key_id
    );

    let keys = SsmKeys::load(&ssm, &settings.params).await.expect("keys");
    assert_eq!(keys.current().key_version(), first.key_version);
    let (reports, mut refreshed) = tokio::sync::mpsc::unbounded_channel();
    keys.spawn_refresh(
        ssm.clone(),
        settings.params.clone(),
        Duration::from_millis(100),
        move |refresh| {
            let _ = reports.send(refresh);
        },
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let s = services(keys.clone(), dir.path());
    let old_receipt = receipt(&s);
    assert_eq!(
        old_receipt["attestation"]["key_version"],
        first.key_version.as_str()
    );

    // Second run (the scheduled event): a new active key, both in the ring.
    let second = rotation(&ssm, &settings, &event("scheduled.json"))
        .await
        .expect("second rotation");
    assert!(!second.first);
    assert_eq!(second.ring_size, 2);
    assert_ne!(second.key_version, first.key_version);

    // The running function picks the new key up on its refresh.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while keys.current().key_version() != second.key_version {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refresh never saw the new key"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let new_receipt = receipt(&s);
    assert_eq!(
        new_receipt["attestation"]["key_version"],
        second.key_version.as_str()
    );
    // Each refresh reported itself; exactly one named the new key.
    let mut changes = Vec::new();
    while let Ok(refresh) = refreshed.try_recv() {
        assert!(refresh.ok, "a refresh against moto failed");
        assert!(refresh.seconds < 10.0);
        changes.extend(refresh.changed_to);
    }
    assert_eq!(changes, vec![second.key_version.clone()]);

    // The agent card lists both; both receipts verify with it, each under its own key.
    let listed = card_keys(&s);
    let versions: Vec<&str> = listed.iter().map(|k| k.key_version.as_str()).collect();
    assert_eq!(
        versions,
        [first.key_version.as_str(), second.key_version.as_str()]
    );
    assert_eq!(
        verify_receipt(&old_receipt, &listed)
            .expect("old")
            .key_version,
        first.key_version
    );
    assert_eq!(
        verify_receipt(&new_receipt, &listed)
            .expect("new")
            .key_version,
        second.key_version
    );
    // A tampered receipt does not.
    let mut tampered = new_receipt.clone();
    tampered["result"] = "pass".into();
    assert!(verify_receipt(&tampered, &listed).is_err());

    // Twice in a row is safe: a third run adds a third key and keeps the first two.
    let third = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect("third");
    assert_eq!(third.ring_size, 3);
    let (_, ring) = verifier_keys_aws::load(&ssm, &settings.params)
        .await
        .expect("load");
    let versions: Vec<&str> = ring.iter().map(|k| k.key_version.as_str()).collect();
    assert_eq!(
        versions,
        [
            first.key_version.as_str(),
            second.key_version.as_str(),
            third.key_version.as_str()
        ]
    );
}

#[tokio::test]
async fn missing_configuration_fails_loudly() {
    // SAFETY of the test: this binary's other test sets no environment.
    let err = RotateSettings::from_env().expect_err("no configuration in the test environment");
    assert!(err.to_string().contains("must be set"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_reads_the_keys_and_the_facilitator_secret_in_one_call() {
    let Some((ssm, kms)) = clients().await else {
        return;
    };
    let settings = settings(&kms).await;
    let rotation = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect("rotate");
    let secret_name = format!("{}-facilitator-secret", settings.params.signing);

    // Named but not stored: init fails naming the parameter, never with the keys alone.
    match SsmKeys::load_with_secret(&ssm, &settings.params, Some(&secret_name)).await {
        Err(SsmKeyError::Missing(name)) => assert_eq!(name, secret_name),
        other => panic!("expected the missing secret, got {:?}", other.map(|r| r.1)),
    }

    ssm.put_parameter()
        .name(&secret_name)
        .value("the-cdp-api-key-secret")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .key_id(&settings.kms_key_id)
        .send()
        .await
        .expect("put the secret");
    let (keys, secret) = SsmKeys::load_with_secret(&ssm, &settings.params, Some(&secret_name))
        .await
        .expect("load");
    assert_eq!(secret.as_deref(), Some("the-cdp-api-key-secret"));
    assert_eq!(keys.current().key_version(), rotation.key_version);
    assert_eq!(keys.public_keys().len(), 1);

    // The refresh reads the secret in the same call and reports a new value once.
    let (seen, mut secrets) = tokio::sync::mpsc::unbounded_channel();
    keys.spawn_refresh_with_secret(
        ssm.clone(),
        settings.params.clone(),
        Duration::from_millis(100),
        Some((secret_name.clone(), "the-cdp-api-key-secret".into())),
        |_| {},
        move |secret| {
            let _ = seen.send(secret.to_owned());
        },
    );
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(
        secrets.try_recv().is_err(),
        "an unchanged secret is not reported"
    );
    ssm.put_parameter()
        .name(&secret_name)
        .value("the-rotated-secret")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .key_id(&settings.kms_key_id)
        .overwrite(true)
        .send()
        .await
        .expect("rotate the secret");
    let refreshed = tokio::time::timeout(Duration::from_secs(10), secrets.recv())
        .await
        .expect("the refresh saw the new secret");
    assert_eq!(refreshed.as_deref(), Some("the-rotated-secret"));
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(secrets.try_recv().is_err(), "reported once");

    // Without a secret named, only the keys.
    let (keys, secret) = SsmKeys::load_with_secret(&ssm, &settings.params, None)
        .await
        .expect("load");
    assert_eq!((secret, keys.public_keys().len()), (None, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_marks_the_ring_and_rotates_away_from_an_active_key() {
    let Some((ssm, kms)) = clients().await else {
        return;
    };
    let settings = settings(&kms).await;
    let first = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect("first");
    let second = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect("second");

    // An old key: marked from the time given; the active key is untouched.
    let event = serde_json::json!({"revoke": first.key_version, "at": "2026-12-07T10:00:00Z"});
    let answer = handle(&ssm, &settings, &event).await.expect("revoked");
    assert_eq!(answer["revoked_at"], "2026-12-07T10:00:00.000000+00:00");
    assert!(answer["rotation"].is_null());
    let (active, ring) = verifier_keys_aws::load(&ssm, &settings.params)
        .await
        .expect("load");
    assert_eq!(active.key_version(), second.key_version);
    assert_eq!(
        ring[0].revoked_at.as_deref(),
        Some("2026-12-07T10:00:00.000000+00:00")
    );
    assert_eq!(ring[1].revoked_at, None);
    // The card lists it in full form, revokedAt included.
    let card = serde_json::to_value(&ring[0]).expect("json");
    assert_eq!(card["algorithm"], "Ed25519");
    assert_eq!(card["revokedAt"], "2026-12-07T10:00:00.000000+00:00");

    // The active key: a new key signs first, then the old one is revoked (now).
    let event = serde_json::json!({"revoke": second.key_version});
    let answer = handle(&ssm, &settings, &event).await.expect("revoked");
    let rotated = answer["rotation"]["key_version"]
        .as_str()
        .expect("rotated first")
        .to_owned();
    let (active, ring) = verifier_keys_aws::load(&ssm, &settings.params)
        .await
        .expect("load");
    assert_eq!(active.key_version(), rotated);
    assert!(ring[1].revoked_at.is_some() && ring[2].revoked_at.is_none());

    // Bad events are refused with what is wrong; nothing changes.
    for bad in [
        serde_json::json!({"revoke": 7}),
        serde_json::json!({"revoke": first.key_version, "at": 3}),
    ] {
        let err = handle(&ssm, &settings, &bad).await.expect_err("refused");
        assert!(err.to_string().contains("\"revoke\" must be"), "{err}");
    }
    let err = handle(&ssm, &settings, &serde_json::json!({"revoke": "v-none"}))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("no key with version"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_ring_refuses_the_rotation_and_changes_nothing() {
    let Some((ssm, kms)) = clients().await else {
        return;
    };
    let settings = settings(&kms).await;
    let first = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect("first");
    // Fill the ring by hand to just under the limit with old keys' entries.
    let entry = |i: usize| {
        serde_json::json!({"keyVersion": format!("v2020-01-01-{i:06}"),
                           "publicKey": "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="})
    };
    let mut ring = vec![serde_json::json!({"keyVersion": first.key_version,
        "publicKey": verifier_keys_aws::load(&ssm, &settings.params).await.expect("load").1[0].public_key})];
    while serde_json::to_string(&ring).expect("json").len() + 80
        < verifier_keys_aws::RING_LIMIT_BYTES
    {
        ring.push(entry(ring.len()));
    }
    let text = serde_json::to_string(&ring).expect("json");
    ssm.put_parameter()
        .name(&settings.params.ring)
        .value(&text)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .tier(aws_sdk_ssm::types::ParameterTier::IntelligentTiering)
        .overwrite(true)
        .send()
        .await
        .expect("moto stores a ring of almost 8 KB");
    let err = rotation(&ssm, &settings, &Value::Null)
        .await
        .expect_err("the ring is full");
    assert!(
        err.to_string()
            .contains("over SSM's 8192-byte parameter limit"),
        "{err}"
    );
    let (active, listed) = verifier_keys_aws::load(&ssm, &settings.params)
        .await
        .expect("load");
    assert_eq!(
        active.key_version(),
        first.key_version,
        "the old key still signs"
    );
    assert_eq!(listed.len(), ring.len());
    // About 80 keys fit in the stored form.
    assert!(ring.len() >= 80, "{} keys", ring.len());
}
