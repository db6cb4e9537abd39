//! RFC 8785 (JCS) canonical JSON and the receipt hashes (lowercase hex SHA-256).

use serde::Serialize;
use sha2::{Digest, Sha256};

/// A value could not be put in canonical form (a non-finite number or a duplicate key).
#[derive(Debug, thiserror::Error)]
#[error("the value has no RFC 8785 canonical form")]
pub struct CanonicalError;

/// The RFC 8785 canonical bytes of any serializable value.
pub fn to_jcs<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    serde_json_canonicalizer::to_vec(value).map_err(|_| CanonicalError)
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Raw SHA-256 of bytes.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lowercase hex SHA-256 of the canonical form of a value.
pub fn hash_of<T: Serialize>(value: &T) -> Result<String, CanonicalError> {
    Ok(sha256_hex(&to_jcs(value)?))
}
