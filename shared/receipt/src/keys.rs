//! Ed25519 signing identities and public-key entries in the agent card's form.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `publicKeyEncoding` text of every entry.
pub const PUBLIC_KEY_ENCODING: &str = "base64 of the raw 32-byte Ed25519 public key";

/// A public key as the agent card lists it.
///
/// `revokedAt` (also read as `revoked_at`), when present, is the RFC 3339 time from which the
/// key must no longer be trusted: a receipt attested at or after it is refused, one attested
/// before it verifies with a warning (whoever holds a leaked key can write any timestamp).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicKeyEntry {
    pub key_version: String,
    #[serde(default = "default_algorithm")]
    pub algorithm: String,
    pub public_key: String,
    #[serde(default = "default_encoding")]
    pub public_key_encoding: String,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "revoked_at")]
    pub revoked_at: Option<String>,
}

fn default_algorithm() -> String {
    "Ed25519".to_owned()
}

fn default_encoding() -> String {
    PUBLIC_KEY_ENCODING.to_owned()
}

/// Problems with key material.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the system random source failed")]
    Random,
    #[error("a key seed must be exactly 32 bytes")]
    SeedLength,
    #[error("the public key is not base64 of 32 bytes")]
    PublicKeyEncoding,
    #[error("the public key is not a valid Ed25519 point")]
    PublicKeyPoint,
    #[error("the key list is neither an array of key entries nor an agent card")]
    KeyList,
    #[error("the signing library refused the seed")]
    Signer,
    #[error("not a signing key file (JSON with key_version and a base64 32-byte seed_base64)")]
    KeyFile,
}

/// The active signing key and its version label.
///
/// With the `aws-lc` feature (the service's), signatures come from AWS-LC (`aws-lc-rs`), whose
/// Ed25519 is about twice as fast as ed25519-dalek's here; both implement RFC 8032, so the
/// signatures are byte-identical (a test checks it). Without it, from ed25519-dalek. The dalek
/// key gives the seed and the public half.
pub struct SigningIdentity {
    key_version: String,
    key: SigningKey,
    #[cfg(feature = "aws-lc")]
    signer: aws_lc_rs::signature::Ed25519KeyPair,
}

impl std::fmt::Debug for SigningIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningIdentity")
            .field("key_version", &self.key_version)
            .finish_non_exhaustive()
    }
}

impl SigningIdentity {
    /// The key of a signing key file's text (the local server's `signing-key.json`: JSON with
    /// `key_version` and a base64 `seed_base64`).
    pub fn from_key_file(text: &str) -> Result<Self, KeyError> {
        let file: Value = serde_json::from_str(text).map_err(|_| KeyError::KeyFile)?;
        let version = file["key_version"].as_str().ok_or(KeyError::KeyFile)?;
        let seed = file["seed_base64"]
            .as_str()
            .and_then(|s| STANDARD.decode(s).ok())
            .ok_or(KeyError::KeyFile)?;
        Self::from_seed(version, &seed)
    }

    /// From an RFC 8032 seed.
    pub fn from_seed(key_version: impl Into<String>, seed: &[u8]) -> Result<Self, KeyError> {
        let seed: [u8; 32] = seed.try_into().map_err(|_| KeyError::SeedLength)?;
        let key = SigningKey::from_bytes(&seed);
        #[cfg(feature = "aws-lc")]
        let signer = aws_lc_rs::signature::Ed25519KeyPair::from_seed_and_public_key(
            &seed,
            key.verifying_key().as_bytes(),
        )
        .map_err(|_| KeyError::Signer)?;
        Ok(SigningIdentity {
            key_version: key_version.into(),
            key,
            #[cfg(feature = "aws-lc")]
            signer,
        })
    }

    /// A fresh random key.
    pub fn generate(key_version: impl Into<String>) -> Result<Self, KeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|_| KeyError::Random)?;
        Self::from_seed(key_version, &seed)
    }

    /// A fresh random key whose version names the day and the first letters of its public key
    /// (`{prefix}2026-12-07-AbC123`): unique and readable.
    pub fn generate_dated(prefix: &str, now: time::OffsetDateTime) -> Result<Self, KeyError> {
        let fresh = Self::generate("pending")?;
        let tag: String = fresh
            .public_entry()
            .public_key
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(6)
            .collect();
        let version = format!(
            "{prefix}{:04}-{:02}-{:02}-{tag}",
            now.year(),
            u8::from(now.month()),
            now.day()
        );
        Self::from_seed(version, &fresh.seed())
    }

    /// The 32-byte seed (for storing the key).
    pub fn seed(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The version label.
    pub fn key_version(&self) -> &str {
        &self.key_version
    }

    /// The public half as an agent-card entry.
    pub fn public_entry(&self) -> PublicKeyEntry {
        PublicKeyEntry {
            key_version: self.key_version.clone(),
            algorithm: "Ed25519".into(),
            public_key: STANDARD.encode(self.key.verifying_key().to_bytes()),
            public_key_encoding: PUBLIC_KEY_ENCODING.into(),
            revoked_at: None,
        }
    }

    /// Sign bytes; the signature as standard padded base64.
    pub fn sign_base64(&self, message: &[u8]) -> String {
        STANDARD.encode(self.sign(message))
    }

    /// Sign bytes: the raw 64-byte RFC 8032 signature.
    #[cfg(feature = "aws-lc")]
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        let mut out = [0u8; 64];
        out.copy_from_slice(self.signer.sign(message).as_ref());
        out
    }

    /// Sign bytes: the raw 64-byte RFC 8032 signature.
    #[cfg(not(feature = "aws-lc"))]
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.sign_reference(message)
    }

    /// The same signature from ed25519-dalek (tests compare the two implementations).
    pub fn sign_reference(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

impl PublicKeyEntry {
    /// Mark the key revoked from `at`; a key already revoked earlier keeps its earlier time
    /// (a revocation is never moved later or undone). The time now stated.
    pub fn revoke(&mut self, at: time::OffsetDateTime) -> &str {
        use time::format_description::well_known::Rfc3339;
        let earlier = self
            .revoked_at
            .as_deref()
            .and_then(|t| time::OffsetDateTime::parse(t, &Rfc3339).ok())
            .is_some_and(|t| t <= at);
        if !earlier {
            self.revoked_at = Some(crate::timestamp::rfc3339_micros(at));
        }
        self.revoked_at.as_deref().unwrap_or_default()
    }

    /// The verifying key.
    pub fn verifying_key(&self) -> Result<VerifyingKey, KeyError> {
        let bytes = STANDARD
            .decode(&self.public_key)
            .map_err(|_| KeyError::PublicKeyEncoding)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| KeyError::PublicKeyEncoding)?;
        VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::PublicKeyPoint)
    }
}

/// Read a key list: a JSON array of entries, one entry, or a whole agent card (the entries of
/// its attestation extension's `params.publicKeys`).
pub fn parse_key_list(value: &Value) -> Result<Vec<PublicKeyEntry>, KeyError> {
    if let Some(ext) = value
        .pointer("/capabilities/extensions")
        .and_then(Value::as_array)
    {
        let keys = ext
            .iter()
            .filter(|e| {
                e.get("uri").and_then(Value::as_str).is_some_and(|u| {
                    u.starts_with("urn:json-schema-verifier:extension:attestation:")
                })
            })
            .find_map(|e| e.pointer("/params/publicKeys"))
            .ok_or(KeyError::KeyList)?;
        return serde_json::from_value(keys.clone()).map_err(|_| KeyError::KeyList);
    }
    if value.is_array() {
        return serde_json::from_value(value.clone()).map_err(|_| KeyError::KeyList);
    }
    serde_json::from_value(value.clone())
        .map(|e| vec![e])
        .map_err(|_| KeyError::KeyList)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_lc_signatures_equal_the_reference_implementation() {
        // RFC 8032 §7.1 TEST 1, then longer messages with other seeds.
        let seed = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .expect("hex");
        let id = SigningIdentity::from_seed("t", &seed).expect("seed");
        assert_eq!(
            hex::encode(id.sign(b"")),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        for (i, len) in [1usize, 64, 1000, 2400, 70_000].into_iter().enumerate() {
            let id = SigningIdentity::from_seed("t", &[i as u8 + 1; 32]).expect("seed");
            let message: Vec<u8> = (0..len).map(|j| (j * 31 + i) as u8).collect();
            assert_eq!(
                id.sign(&message),
                id.sign_reference(&message),
                "length {len}"
            );
            let vk = id.public_entry().verifying_key().expect("key");
            let sig = ed25519_dalek::Signature::from_bytes(&id.sign(&message));
            assert!(vk.verify_strict(&message, &sig).is_ok());
        }
    }
}
