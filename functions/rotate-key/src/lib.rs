//! The key rotation function: on an EventBridge schedule or by hand (any JSON event), make a
//! new Ed25519 key, add its public half to the ring, then write it as the new version of the
//! signing SecureString (creating the parameter on the first run).

use verifier_keys_aws::{KeyParams, Rotation, SsmKeyError};

/// Counter: rotations by `outcome` (`ok`, `error`), as EMF on stdout when
/// `VERIFIER_METRICS_NAMESPACE` is set.
pub const KEY_ROTATIONS: &str = "verifier_key_rotations_total";
/// Gauge: how many public keys the ring lists after a rotation (SSM's 8 KB parameter limit
/// bounds it; [docs/operations.md]).
pub const KEY_RING_SIZE: &str = "verifier_key_ring_keys";

/// Why a rotation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("{0} must be set")]
    Missing(&'static str),
    #[error(transparent)]
    Keys(#[from] SsmKeyError),
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

/// One rotation; the event's content does not matter (scheduled, console test, CLI invoke).
/// Counted in [`KEY_ROTATIONS`] and [`KEY_RING_SIZE`].
pub async fn handle(
    client: &aws_sdk_ssm::Client,
    settings: &RotateSettings,
    _event: &serde_json::Value,
) -> Result<Rotation, RotateError> {
    let rotated = verifier_keys_aws::rotate(client, &settings.params, &settings.kms_key_id).await;
    let outcome = if rotated.is_ok() { "ok" } else { "error" };
    metrics::counter!(KEY_ROTATIONS, "outcome" => outcome).increment(1);
    let rotation = rotated?;
    metrics::gauge!(KEY_RING_SIZE).set(rotation.ring_size as f64);
    tracing::info!(
        key_version = %rotation.key_version,
        ring_size = rotation.ring_size,
        first = rotation.first,
        "signing key rotated"
    );
    Ok(rotation)
}
