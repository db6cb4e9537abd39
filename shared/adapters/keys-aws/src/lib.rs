//! Keys on AWS: the active Ed25519 seed in an SSM SecureString (encrypted with a
//! customer-managed KMS key), the public key ring (every key ever used) in an SSM String
//! parameter. Functions read both once at init and refresh them on an interval; the rotation
//! function makes a key, publishes its public half in the ring first, then writes the new
//! SecureString version — so no receipt is ever signed by a key the agent card does not list.

use aws_sdk_ssm::Client;
use aws_sdk_ssm::types::{ParameterTier, ParameterType};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use verifier_ports::keys::KeySource;
use verifier_receipt::timestamp::rfc3339_micros;
use verifier_receipt::{PublicKeyEntry, SigningIdentity};

/// What the SecureString holds.
#[derive(Serialize, Deserialize)]
struct StoredKey {
    key_version: String,
    seed_base64: String,
    created_at: String,
}

/// Problems reading or writing the key parameters.
#[derive(Debug, thiserror::Error)]
pub enum SsmKeyError {
    #[error("SSM call failed: {0}")]
    Ssm(String),
    #[error("the parameter {0} does not hold what it should")]
    Format(String),
    #[error("the parameter {0} does not exist yet (run the rotation function once)")]
    Missing(String),
    #[error("key material: {0}")]
    Key(#[from] verifier_receipt::KeyError),
    #[error(
        "the key ring {name} would hold {bytes} bytes ({keys} keys), over SSM's {RING_LIMIT_BYTES}-byte parameter limit: nothing was changed (see docs/operations.md, \"A full key ring\")"
    )]
    RingFull {
        name: String,
        bytes: usize,
        keys: usize,
    },
    #[error("no key with version {0:?} is in the ring")]
    UnknownVersion(String),
    #[error("the revocation time is not an RFC 3339 time (e.g. 2026-12-07T10:00:00Z)")]
    RevocationTime,
}

/// The most an SSM parameter value may hold (an advanced parameter's 8 KB; the ring is
/// Intelligent-Tiering, which becomes advanced above 4 KB). About 80 keys fit in the ring's
/// stored form; the rotate-key function reports the ring's bytes ([`Rotation::ring_bytes`]) so
/// an alarm fires well before.
pub const RING_LIMIT_BYTES: usize = 8192;

/// The ring as stored: each entry without the fields every Ed25519 entry shares (the card
/// restores them), so more keys fit in one parameter.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredEntry<'a> {
    key_version: &'a str,
    public_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_at: Option<&'a str>,
}

/// The stored text of a ring.
fn ring_text(ring: &[PublicKeyEntry]) -> Result<String, SsmKeyError> {
    let stored: Vec<StoredEntry<'_>> = ring
        .iter()
        .map(|k| StoredEntry {
            key_version: &k.key_version,
            public_key: &k.public_key,
            revoked_at: k.revoked_at.as_deref(),
        })
        .collect();
    serde_json::to_string(&stored).map_err(|e| SsmKeyError::Ssm(e.to_string()))
}

/// Where the keys live.
#[derive(Debug, Clone)]
pub struct KeyParams {
    /// The SecureString with the active seed.
    pub signing: String,
    /// The String with the public key ring (a JSON array of agent-card entries).
    pub ring: String,
}

async fn get(client: &Client, name: &str, decrypt: bool) -> Result<Option<String>, SsmKeyError> {
    match client
        .get_parameter()
        .name(name)
        .with_decryption(decrypt)
        .send()
        .await
    {
        Ok(out) => Ok(out.parameter.and_then(|p| p.value)),
        Err(e) => {
            let missing = e
                .as_service_error()
                .is_some_and(|se| se.is_parameter_not_found());
            if missing {
                Ok(None)
            } else {
                Err(SsmKeyError::Ssm(format!("{e:?}")))
            }
        }
    }
}

fn parse_ring(name: &str, text: &str) -> Result<Vec<PublicKeyEntry>, SsmKeyError> {
    serde_json::from_str(text).map_err(|_| SsmKeyError::Format(name.to_owned()))
}

/// Read several parameters in one `GetParameters` call, SecureStrings decrypted (a String
/// comes back as it is): each name's value, none for a name that does not exist.
async fn get_many(client: &Client, names: &[&str]) -> Result<Vec<Option<String>>, SsmKeyError> {
    let out = client
        .get_parameters()
        .set_names(Some(names.iter().map(|n| (*n).to_owned()).collect()))
        .with_decryption(true)
        .send()
        .await
        .map_err(|e| SsmKeyError::Ssm(format!("{e:?}")))?;
    let found = out.parameters.unwrap_or_default();
    Ok(names
        .iter()
        .map(|name| {
            found
                .iter()
                .find(|p| p.name.as_deref() == Some(name) || p.arn.as_deref() == Some(name))
                .and_then(|p| p.value.clone())
        })
        .collect())
}

fn parse_keys(
    params: &KeyParams,
    secret: Option<String>,
    ring: Option<String>,
) -> Result<(SigningIdentity, Vec<PublicKeyEntry>), SsmKeyError> {
    let secret = secret.ok_or_else(|| SsmKeyError::Missing(params.signing.clone()))?;
    let stored: StoredKey =
        serde_json::from_str(&secret).map_err(|_| SsmKeyError::Format(params.signing.clone()))?;
    let seed = STANDARD
        .decode(&stored.seed_base64)
        .map_err(|_| SsmKeyError::Format(params.signing.clone()))?;
    let identity = SigningIdentity::from_seed(stored.key_version, &seed)?;
    let ring = match ring {
        Some(text) => parse_ring(&params.ring, &text)?,
        None => Vec::new(),
    };
    Ok((identity, ring))
}

/// Read the active key and the ring (one SSM call).
pub async fn load(
    client: &Client,
    params: &KeyParams,
) -> Result<(SigningIdentity, Vec<PublicKeyEntry>), SsmKeyError> {
    let (identity, ring, _) = fetch(client, params, None).await?;
    Ok((identity, ring))
}

/// The active key, the ring and, when named, one more SecureString, in one SSM call.
async fn fetch(
    client: &Client,
    params: &KeyParams,
    secret: Option<&str>,
) -> Result<(SigningIdentity, Vec<PublicKeyEntry>, Option<String>), SsmKeyError> {
    let mut names = vec![params.signing.as_str(), params.ring.as_str()];
    names.extend(secret);
    let mut values = get_many(client, &names).await?.into_iter();
    let (identity, ring) = parse_keys(params, values.next().flatten(), values.next().flatten())?;
    let secret = match secret {
        Some(name) => Some(
            values
                .next()
                .flatten()
                .ok_or_else(|| SsmKeyError::Missing(name.to_owned()))?,
        ),
        None => None,
    };
    Ok((identity, ring, secret))
}

/// The key source of the functions: refreshed from SSM in the background.
pub struct SsmKeys {
    state: RwLock<(Arc<SigningIdentity>, Vec<PublicKeyEntry>)>,
}

impl SsmKeys {
    /// Read the keys now (fails loudly: a function must not start without them).
    pub async fn load(client: &Client, params: &KeyParams) -> Result<Arc<Self>, SsmKeyError> {
        Ok(Self::load_with_secret(client, params, None).await?.0)
    }

    /// Read the keys and, when named, one more SecureString (the facilitator's API key
    /// secret) in the same SSM call: one round trip at init.
    pub async fn load_with_secret(
        client: &Client,
        params: &KeyParams,
        secret: Option<&str>,
    ) -> Result<(Arc<Self>, Option<String>), SsmKeyError> {
        let (identity, ring, secret) = fetch(client, params, secret).await?;
        let keys = Arc::new(SsmKeys {
            state: RwLock::new(with_active(identity, ring)),
        });
        Ok((keys, secret))
    }

    /// Refresh every `every` (a new key from a rotation is picked up; errors keep the old),
    /// telling `report` what each refresh found.
    pub fn spawn_refresh(
        self: &Arc<Self>,
        client: Client,
        params: KeyParams,
        every: Duration,
        report: impl Fn(KeyRefresh) + Send + 'static,
    ) {
        self.spawn_refresh_with_secret(client, params, every, None, report, |_| {});
    }

    /// [`Self::spawn_refresh`], reading the SecureString `secret` (the facilitator's API key
    /// secret) in the same SSM call: `on_secret` gets its value each time it differs from the
    /// last one seen (never logged here).
    pub fn spawn_refresh_with_secret(
        self: &Arc<Self>,
        client: Client,
        params: KeyParams,
        every: Duration,
        secret: Option<(String, String)>,
        report: impl Fn(KeyRefresh) + Send + 'static,
        on_secret: impl Fn(&str) + Send + 'static,
    ) {
        let keys = Arc::downgrade(self);
        tokio::spawn(async move {
            let (name, mut last_secret) = match secret {
                Some((name, value)) => (Some(name), Some(value)),
                None => (None, None),
            };
            loop {
                tokio::time::sleep(every).await;
                let Some(keys) = keys.upgrade() else { return };
                let asked = std::time::Instant::now();
                let loaded = fetch(&client, &params, name.as_deref()).await;
                let seconds = asked.elapsed().as_secs_f64();
                match loaded {
                    Ok((identity, ring, secret)) => {
                        let version = identity.key_version().to_owned();
                        let changed = keys.current().key_version() != version;
                        if let Ok(mut state) = keys.state.write() {
                            *state = with_active(identity, ring);
                        }
                        if let Some(secret) = secret
                            && last_secret.as_deref() != Some(secret.as_str())
                        {
                            on_secret(&secret);
                            last_secret = Some(secret);
                        }
                        report(KeyRefresh {
                            ok: true,
                            seconds,
                            changed_to: changed.then_some(version),
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "key refresh failed; keeping the current key");
                        report(KeyRefresh {
                            ok: false,
                            seconds,
                            changed_to: None,
                        });
                    }
                }
            }
        });
    }
}

/// What one background refresh of the keys found.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRefresh {
    /// Whether SSM answered with readable keys.
    pub ok: bool,
    /// How long the SSM call took.
    pub seconds: f64,
    /// The new active key's version, when it differs from the one signing before.
    pub changed_to: Option<String>,
}

/// The ring always lists the active key (a rotation publishes it first; this covers a ring
/// edited by hand).
fn with_active(
    identity: SigningIdentity,
    mut ring: Vec<PublicKeyEntry>,
) -> (Arc<SigningIdentity>, Vec<PublicKeyEntry>) {
    let entry = identity.public_entry();
    if !ring.iter().any(|k| k.key_version == entry.key_version) {
        ring.push(entry);
    }
    (Arc::new(identity), ring)
}

impl KeySource for SsmKeys {
    fn current(&self) -> Arc<SigningIdentity> {
        match self.state.read() {
            Ok(s) => s.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        }
    }
    fn public_keys(&self) -> Vec<PublicKeyEntry> {
        match self.state.read() {
            Ok(s) => s.1.clone(),
            Err(poisoned) => poisoned.into_inner().1.clone(),
        }
    }
}

/// What a rotation did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rotation {
    /// The new active key's version.
    pub key_version: String,
    /// How many keys the ring lists now.
    pub ring_size: usize,
    /// The ring parameter's length in bytes (at most [`RING_LIMIT_BYTES`]).
    pub ring_bytes: usize,
    /// Whether this was the first key (the parameters were created).
    pub first: bool,
}

/// Make a new key: publish its public half in the ring, then write it as the new
/// SecureString version (encrypted with `kms_key_id`). Safe to run any number of times: each
/// run adds one key and never removes one.
pub async fn rotate(
    client: &Client,
    params: &KeyParams,
    kms_key_id: &str,
) -> Result<Rotation, SsmKeyError> {
    let now = time::OffsetDateTime::now_utc();
    let identity = SigningIdentity::generate_dated("v", now)?;
    let version = identity.key_version().to_owned();

    // Whether a key exists yet; no need to decrypt it for that.
    let first = get(client, &params.signing, false).await?.is_none();
    let entry = identity.public_entry();
    publish(client, &params.ring, &entry).await?;
    let secret = serde_json::to_string(&StoredKey {
        key_version: version.clone(),
        seed_base64: STANDARD.encode(identity.seed()),
        created_at: rfc3339_micros(now),
    })
    .map_err(|e| SsmKeyError::Ssm(e.to_string()))?;
    client
        .put_parameter()
        .name(&params.signing)
        .value(secret)
        .r#type(ParameterType::SecureString)
        .key_id(kms_key_id)
        .overwrite(true)
        .send()
        .await
        .map_err(|e| SsmKeyError::Ssm(format!("{e:?}")))?;
    // A rotation running at the same time may have rewritten the ring without this key:
    // publish again (a no-op when it is there) so the active key is always listed.
    let (ring_size, ring_bytes) = publish(client, &params.ring, &entry).await?;
    Ok(Rotation {
        key_version: version,
        ring_size,
        ring_bytes,
        first,
    })
}

/// Make the first key unless one exists (a deployment's custom resource): `None` when a key
/// was already there.
pub async fn ensure(
    client: &Client,
    params: &KeyParams,
    kms_key_id: &str,
) -> Result<Option<Rotation>, SsmKeyError> {
    if get(client, &params.signing, false).await?.is_some() {
        return Ok(None);
    }
    rotate(client, params, kms_key_id).await.map(Some)
}

/// What a revocation did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revocation {
    /// The revoked key.
    pub key_version: String,
    /// From when it is revoked (the earlier time when it already was).
    pub revoked_at: String,
    /// The rotation made first, when the revoked key was the active one.
    pub rotation: Option<Rotation>,
    /// The ring parameter's length in bytes.
    pub ring_bytes: usize,
}

/// Mark `version` revoked from `at` (RFC 3339; now when absent) in the ring. Revoking the
/// active key rotates first, so no function signs with a revoked key once it refreshes. A
/// key already revoked keeps the earlier time.
pub async fn revoke(
    client: &Client,
    params: &KeyParams,
    kms_key_id: &str,
    version: &str,
    at: Option<&str>,
) -> Result<Revocation, SsmKeyError> {
    use time::format_description::well_known::Rfc3339;
    let at = match at {
        Some(text) => {
            time::OffsetDateTime::parse(text, &Rfc3339).map_err(|_| SsmKeyError::RevocationTime)?
        }
        None => time::OffsetDateTime::now_utc(),
    };
    let (identity, ring) = load(client, params).await?;
    if !ring.iter().any(|k| k.key_version == version) {
        return Err(SsmKeyError::UnknownVersion(version.to_owned()));
    }
    let rotation = if identity.key_version() == version {
        Some(rotate(client, params, kms_key_id).await?)
    } else {
        None
    };
    for _ in 0..6 {
        let mut ring = read_ring(client, &params.ring).await?;
        let Some(entry) = ring.iter_mut().find(|k| k.key_version == version) else {
            return Err(SsmKeyError::UnknownVersion(version.to_owned()));
        };
        let revoked_at = entry.revoke(at).to_owned();
        let bytes = put_ring(client, &params.ring, &ring).await?;
        // Read back: a rotation running at the same time may have rewritten the ring.
        let back = read_ring(client, &params.ring).await?;
        if back
            .iter()
            .any(|k| k.key_version == version && k.revoked_at.as_deref() == Some(&revoked_at))
        {
            return Ok(Revocation {
                key_version: version.to_owned(),
                revoked_at,
                rotation,
                ring_bytes: bytes,
            });
        }
    }
    Err(SsmKeyError::Ssm(format!(
        "the key ring {} kept losing the revocation (concurrent rotations?)",
        params.ring
    )))
}

async fn read_ring(client: &Client, name: &str) -> Result<Vec<PublicKeyEntry>, SsmKeyError> {
    match get(client, name, false).await? {
        Some(text) => parse_ring(name, &text),
        None => Ok(Vec::new()),
    }
}

/// Write the ring whole, refusing one over [`RING_LIMIT_BYTES`]; its length in bytes.
async fn put_ring(
    client: &Client,
    name: &str,
    ring: &[PublicKeyEntry],
) -> Result<usize, SsmKeyError> {
    let text = ring_text(ring)?;
    if text.len() > RING_LIMIT_BYTES {
        return Err(SsmKeyError::RingFull {
            name: name.to_owned(),
            bytes: text.len(),
            keys: ring.len(),
        });
    }
    let bytes = text.len();
    client
        .put_parameter()
        .name(name)
        .value(text)
        .r#type(ParameterType::String)
        .tier(ParameterTier::IntelligentTiering)
        .overwrite(true)
        .send()
        .await
        .map_err(|e| SsmKeyError::Ssm(format!("{e:?}")))?;
    Ok(bytes)
}

/// Make sure the ring lists `entry` (add it, never remove one), read back until it does;
/// returns the ring's size and its stored length in bytes.
async fn publish(
    client: &Client,
    name: &str,
    entry: &PublicKeyEntry,
) -> Result<(usize, usize), SsmKeyError> {
    for _ in 0..6 {
        let mut ring = read_ring(client, name).await?;
        if ring.iter().any(|k| k.key_version == entry.key_version) {
            return Ok((ring.len(), ring_text(&ring)?.len()));
        }
        ring.push(entry.clone());
        put_ring(client, name, &ring).await?;
    }
    Err(SsmKeyError::Ssm(format!(
        "the key ring {name} kept losing the new key (concurrent rotations?)"
    )))
}
