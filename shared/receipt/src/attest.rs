//! Signed receipts: the Ed25519 signature over the JCS bytes of the five-key document
//! (SERVICE.md §5), and a verifier buyers can run offline against a key list.

use crate::canonical::{CanonicalError, write_serialize, write_string};
use crate::keys::{PublicKeyEntry, SigningIdentity};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::Signature;
use serde::Serialize;
use serde_json::{Map, Value};

/// Context of `/verify/schema` and `/verify/deliverable` receipts.
pub const VERIFY_CONTEXT: &str = "json-schema-verifier/verify-schema-attestation/v1";
/// Context of `/score/{agent_id}` receipts.
pub const TRUST_SCORE_CONTEXT: &str = "json-schema-verifier/trust-score-attestation/v1";

/// The `attestation` block of a response.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attestation {
    pub algorithm: &'static str,
    pub key_version: String,
    pub timestamp: String,
    pub signature: String,
}

/// The JCS bytes of the five-key signed document (what the Ed25519 signature covers). Its keys sort as algorithm, attested_at,
/// context, key_version, response, so the document is spliced around the response's bytes.
pub fn signed_document<B: Serialize + ?Sized>(
    context: &str,
    key_version: &str,
    attested_at: &str,
    response: &B,
) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"algorithm\":\"Ed25519\",\"attested_at\":");
    write_string(&mut out, attested_at);
    out.extend_from_slice(b",\"context\":");
    write_string(&mut out, context);
    out.extend_from_slice(b",\"key_version\":");
    write_string(&mut out, key_version);
    out.extend_from_slice(b",\"response\":");
    write_serialize(&mut out, response)?;
    out.push(b'}');
    Ok(out)
}

/// Append `"attestation": {...}` as the last key of a serialized response object.
pub fn with_attestation(
    mut body: Vec<u8>,
    attestation: &Attestation,
) -> Result<Vec<u8>, serde_json::Error> {
    if body.last() == Some(&b'}') {
        body.pop();
        if body.len() > 1 {
            body.push(b',');
        }
        body.extend_from_slice(b"\"attestation\":");
        serde_json::to_writer(&mut body, attestation)?;
        body.push(b'}');
    }
    Ok(body)
}

/// Sign a response body (everything but `attestation`) under `context`.
pub fn attest<B: Serialize + ?Sized>(
    context: &str,
    body: &B,
    signer: &SigningIdentity,
    timestamp: &str,
) -> Result<Attestation, CanonicalError> {
    let bytes = signed_document(context, signer.key_version(), timestamp, body)?;
    Ok(Attestation {
        algorithm: "Ed25519",
        key_version: signer.key_version().to_owned(),
        timestamp: timestamp.to_owned(),
        signature: signer.sign_base64(&bytes),
    })
}

/// Why a receipt does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    #[error("the response is not a JSON object")]
    NotAnObject,
    #[error("the response has no attestation object")]
    NoAttestation,
    #[error("the attestation lacks '{0}' or it is not a string")]
    MissingField(&'static str),
    #[error("the attestation algorithm is not Ed25519")]
    Algorithm,
    #[error("no key with the attestation's key_version is in the key list")]
    UnknownKey,
    #[error("the key list entry for this key_version is not a valid Ed25519 public key")]
    BadKey,
    #[error("the signature is not base64 of 64 bytes")]
    SignatureEncoding,
    #[error("verified_at differs from attestation.timestamp")]
    TimestampMismatch,
    #[error("the signature does not match the response")]
    BadSignature,
    #[error("the response cannot be canonicalized")]
    Canonical,
    #[error(
        "the key {key_version} was revoked at {revoked_at}, and this receipt is attested at or after that time"
    )]
    KeyRevoked {
        key_version: String,
        revoked_at: String,
    },
    #[error("the key list entry for this key_version has a revokedAt that is not an RFC 3339 time")]
    BadRevocation,
    #[error("the attestation's timestamp is not an RFC 3339 time")]
    BadTimestamp,
}

/// The warning a receipt signed by a since-revoked key carries.
pub const BACKDATING_WARNING: &str = "its key was revoked after this receipt's timestamp; whoever holds a leaked key can write an earlier timestamp, so trust it only if you received it before the revocation";

/// A receipt that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    pub key_version: String,
    pub context: &'static str,
    /// The agent the signed response was recorded under, if it names one.
    pub identity: Option<ReceiptIdentity>,
    /// When its key was revoked, if it was (after the receipt's timestamp, or it would have
    /// been refused): see [`BACKDATING_WARNING`].
    pub key_revoked_at: Option<String>,
}

/// The agent identity a signed response states (covered by its signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptIdentity {
    pub agent_id: String,
    /// `verified` (a key-based ID whose holder's signature the service checked), `unverified`
    /// (a plain label anyone may write under), or `None` when the response does not say (a
    /// receipt of a service without agent identities).
    pub identity: Option<String>,
}

impl ReceiptIdentity {
    /// The identity a signed response states: its `agent_id` and `identity` fields.
    pub fn of(response: &Map<String, Value>) -> Option<Self> {
        let agent_id = response.get("agent_id")?.as_str()?.to_owned();
        let identity = response
            .get("identity")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(ReceiptIdentity { agent_id, identity })
    }
}

/// Verify any signed response against a key list, picking the key by `key_version`. The
/// context is the trust-score one when the response carries `trust_score`, else the
/// verification one.
pub fn verify_receipt(
    response: &Value,
    keys: &[PublicKeyEntry],
) -> Result<VerifiedReceipt, ReceiptError> {
    let map = response.as_object().ok_or(ReceiptError::NotAnObject)?;
    let context = if map.contains_key("trust_score") {
        TRUST_SCORE_CONTEXT
    } else {
        VERIFY_CONTEXT
    };
    verify_receipt_in_context(response, keys, context)
}

/// Verify a signed response under an explicit context.
pub fn verify_receipt_in_context(
    response: &Value,
    keys: &[PublicKeyEntry],
    context: &'static str,
) -> Result<VerifiedReceipt, ReceiptError> {
    let map = response.as_object().ok_or(ReceiptError::NotAnObject)?;
    let att = map
        .get("attestation")
        .and_then(Value::as_object)
        .ok_or(ReceiptError::NoAttestation)?;
    let field = |name: &'static str| {
        att.get(name)
            .and_then(Value::as_str)
            .ok_or(ReceiptError::MissingField(name))
    };
    if field("algorithm")? != "Ed25519" {
        return Err(ReceiptError::Algorithm);
    }
    let key_version = field("key_version")?;
    let timestamp = field("timestamp")?;
    let signature = field("signature")?;
    if let Some(verified_at) = map.get("verified_at")
        && verified_at.as_str() != Some(timestamp)
    {
        return Err(ReceiptError::TimestampMismatch);
    }
    let entry = keys
        .iter()
        .find(|k| k.key_version == key_version)
        .ok_or(ReceiptError::UnknownKey)?;
    if entry.algorithm != "Ed25519" {
        return Err(ReceiptError::Algorithm);
    }
    let key = entry.verifying_key().map_err(|_| ReceiptError::BadKey)?;
    let sig_bytes = STANDARD
        .decode(signature)
        .map_err(|_| ReceiptError::SignatureEncoding)?;
    let sig_bytes: [u8; 64] = sig_bytes
        .try_into()
        .map_err(|_| ReceiptError::SignatureEncoding)?;
    let body: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| k.as_str() != "attestation")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let bytes = signed_document(context, key_version, timestamp, &Value::Object(body))
        .map_err(|_| ReceiptError::Canonical)?;
    key.verify_strict(&bytes, &Signature::from_bytes(&sig_bytes))
        .map_err(|_| ReceiptError::BadSignature)?;
    check_revocation(entry, timestamp)?;
    Ok(VerifiedReceipt {
        key_version: key_version.to_owned(),
        context,
        identity: ReceiptIdentity::of(map),
        key_revoked_at: entry.revoked_at.clone(),
    })
}

/// Refuse a receipt attested at or after its key's revocation (fail closed on a time that
/// does not parse).
fn check_revocation(entry: &PublicKeyEntry, timestamp: &str) -> Result<(), ReceiptError> {
    use time::format_description::well_known::Rfc3339;
    let Some(revoked_at) = &entry.revoked_at else {
        return Ok(());
    };
    let revoked = time::OffsetDateTime::parse(revoked_at, &Rfc3339)
        .map_err(|_| ReceiptError::BadRevocation)?;
    let attested =
        time::OffsetDateTime::parse(timestamp, &Rfc3339).map_err(|_| ReceiptError::BadTimestamp)?;
    if attested >= revoked {
        return Err(ReceiptError::KeyRevoked {
            key_version: entry.key_version.clone(),
            revoked_at: revoked_at.clone(),
        });
    }
    Ok(())
}
