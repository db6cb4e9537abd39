//! The key function. Its event says what to do:
//! - a CloudFormation custom-resource request (the template's `SigningKey` resource): make the
//!   first key unless one exists, and answer CloudFormation ([`custom_resource`]);
//! - `{"revoke": "<key version>", "at": "<RFC 3339>"}` (`at` optional, now by default): mark
//!   the key revoked in the ring, rotating first when it is the active key;
//! - anything else (the EventBridge schedule, a console test, `aws lambda invoke`): make a new
//!   Ed25519 key, add its public half to the ring, then write it as the new version of the
//!   signing SecureString (creating the parameter on the first run).

pub mod custom_resource;

use serde_json::{Value, json};
use verifier_keys_aws::{KeyParams, Revocation, Rotation, SsmKeyError};

/// Counter: rotations by `outcome` (`ok`, `error`), as EMF on stdout when
/// `VERIFIER_METRICS_NAMESPACE` is set.
pub const KEY_ROTATIONS: &str = "verifier_key_rotations_total";
/// Counter: revocations by `outcome` (`ok`, `error`).
pub const KEY_REVOCATIONS: &str = "verifier_key_revocations_total";
/// Gauge: how many public keys the ring lists after a change.
pub const KEY_RING_SIZE: &str = "verifier_key_ring_keys";
/// Gauge: the ring parameter's length in bytes after a change (SSM refuses more than
/// [`verifier_keys_aws::RING_LIMIT_BYTES`]; the template alarms at 75 % of it).
pub const KEY_RING_BYTES: &str = "verifier_key_ring_bytes";

/// Why the function cannot do what the event asks.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("{0} must be set")]
    Missing(&'static str),
    #[error(transparent)]
    Keys(#[from] SsmKeyError),
    #[error(
        "\"revoke\" must be a key version (a string), and \"at\", when given, an RFC 3339 string"
    )]
    RevokeEvent,
    #[error("CloudFormation could not be answered: {0}")]
    Respond(#[from] custom_resource::ResponseError),
}

/// Where the keys live and which KMS key encrypts the SecureString.
#[derive(Debug, Clone)]
pub struct RotateSettings {
    pub params: KeyParams,
    pub kms_key_id: String,
}

fn required(name: &'static str) -> Result<String, RotateError> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or(RotateError::Missing(name))
}

impl RotateSettings {
    /// `VERIFIER_SIGNING_KEY_PARAM`, `VERIFIER_PUBLIC_KEYS_PARAM`, `VERIFIER_KMS_KEY_ID`.
    pub fn from_env() -> Result<Self, RotateError> {
        Ok(RotateSettings {
            params: KeyParams {
                signing: required("VERIFIER_SIGNING_KEY_PARAM")?,
                ring: required("VERIFIER_PUBLIC_KEYS_PARAM")?,
            },
            kms_key_id: required("VERIFIER_KMS_KEY_ID")?,
        })
    }
}

/// Do what `event` asks (see the module's documentation); the function's answer.
pub async fn handle(
    client: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
    event: &Value,
) -> Result<Value, RotateError> {
    if let Some(request) = custom_resource::CustomResourceEvent::of(event) {
        return first_key(client, settings, &request).await;
    }
    if let Some(version) = event.get("revoke") {
        let version = version.as_str().ok_or(RotateError::RevokeEvent)?;
        let at = match event.get("at") {
            None | Some(Value::Null) => None,
            Some(Value::String(at)) => Some(at.as_str()),
            Some(_) => return Err(RotateError::RevokeEvent),
        };
        return Ok(json!(revoke(client, settings, version, at).await?));
    }
    Ok(json!(rotate(client, settings).await?))
}

/// One rotation, counted in [`KEY_ROTATIONS`], [`KEY_RING_SIZE`] and [`KEY_RING_BYTES`].
pub async fn rotate(
    client: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
) -> Result<Rotation, RotateError> {
    let rotated = verifier_keys_aws::rotate(client, &settings.params, &settings.kms_key_id).await;
    let rotation = counted(KEY_ROTATIONS, rotated)?;
    report_rotation(&rotation);
    Ok(rotation)
}

fn report_rotation(rotation: &Rotation) {
    metrics::gauge!(KEY_RING_SIZE).set(rotation.ring_size as f64);
    metrics::gauge!(KEY_RING_BYTES).set(rotation.ring_bytes as f64);
    tracing::info!(
        key_version = %rotation.key_version,
        ring_size = rotation.ring_size,
        ring_bytes = rotation.ring_bytes,
        first = rotation.first,
        "signing key rotated"
    );
}

fn counted<T>(name: &'static str, result: Result<T, SsmKeyError>) -> Result<T, SsmKeyError> {
    let outcome = if result.is_ok() { "ok" } else { "error" };
    metrics::counter!(name, "outcome" => outcome).increment(1);
    result
}

/// One revocation, counted in [`KEY_REVOCATIONS`] (and the rotation it made, if any).
pub async fn revoke(
    client: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
    version: &str,
    at: Option<&str>,
) -> Result<Revocation, RotateError> {
    let revoked =
        verifier_keys_aws::revoke(client, &settings.params, &settings.kms_key_id, version, at)
            .await;
    let revocation = counted(KEY_REVOCATIONS, revoked)?;
    if let Some(rotation) = &revocation.rotation {
        metrics::counter!(KEY_ROTATIONS, "outcome" => "ok").increment(1);
        report_rotation(rotation);
    }
    metrics::gauge!(KEY_RING_BYTES).set(revocation.ring_bytes as f64);
    tracing::warn!(
        key_version = %revocation.key_version,
        revoked_at = %revocation.revoked_at,
        rotated = revocation.rotation.is_some(),
        "signing key revoked"
    );
    Ok(revocation)
}

/// The custom resource: the first key on Create/Update (unless one exists), nothing on
/// Delete; CloudFormation is answered either way.
async fn first_key(
    client: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
    request: &custom_resource::CustomResourceEvent,
) -> Result<Value, RotateError> {
    let outcome = if request.request_type == "Delete" {
        tracing::info!("stack deletion: the signing key and ring are kept");
        Ok(json!({}))
    } else {
        let made = verifier_keys_aws::ensure(client, &settings.params, &settings.kms_key_id).await;
        match counted(KEY_ROTATIONS, made) {
            Ok(Some(rotation)) => {
                report_rotation(&rotation);
                Ok(json!({"KeyVersion": rotation.key_version, "Created": true}))
            }
            Ok(None) => {
                tracing::info!("a signing key exists: nothing to make");
                Ok(json!({"Created": false}))
            }
            Err(e) => {
                tracing::error!(error = %e, "the first signing key could not be made");
                Err(e.to_string())
            }
        }
    };
    let answer = custom_resource::response(request, &settings.params.signing, outcome);
    custom_resource::send(request, &answer).await?;
    Ok(json!(answer))
}
