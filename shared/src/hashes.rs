//! The four receipt hashes of SERVICE.md §5. The request document's canonical bytes are
//! spliced from the canonical bytes of its parts (JCS of an object with fixed keys is the
//! concatenation of its sorted members), so the output and schema are canonicalized once.

use crate::canonical::{CanonicalError, sha256_hex, value_to_jcs};
use crate::request::VerifyRequest;
use serde_json::Value;

/// The four hashes of a request, lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptHashes {
    pub output_hash: String,
    pub schema_hash: String,
    pub rules_hash: String,
    pub request_hash: String,
    /// Raw SHA-256 of the schema's canonical form (the compiled-schema cache key).
    pub schema_digest: [u8; 32],
}

/// Compute all four hashes.
pub fn receipt_hashes(req: &VerifyRequest) -> Result<ReceiptHashes, CanonicalError> {
    let output = value_to_jcs(&req.submitted_output);
    let schema = value_to_jcs(&req.expected_schema);
    let bounds_sent = value_to_jcs(&req.bounds_sent);
    let rules_sent = value_to_jcs(&req.rules_sent);
    let mut rules_doc = Vec::with_capacity(bounds_sent.len() + rules_sent.len() + 20);
    rules_doc.extend_from_slice(b"{\"bounds\":");
    rules_doc.extend_from_slice(&bounds_sent);
    rules_doc.extend_from_slice(b",\"rules\":");
    rules_doc.extend_from_slice(&rules_sent);
    rules_doc.push(b'}');

    let full = req.request_document_parts();
    let b = |v: bool| {
        if v {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        }
    };
    let members: [(&str, Vec<u8>); 8] = [
        ("agent_id", value_to_jcs(&full.agent_id)),
        ("bounds", value_to_jcs(&full.bounds)),
        ("enforce_rules", b(req.enforce_rules)),
        ("expected_schema", schema.clone()),
        ("rules", value_to_jcs(&full.rules)),
        ("strict_content_check", b(req.strict_content_check)),
        ("submitted_output", output.clone()),
        ("task_id", value_to_jcs(&Value::String(req.task_id.clone()))),
    ];
    let mut doc = Vec::with_capacity(output.len() + schema.len() + 256);
    doc.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            doc.push(b',');
        }
        doc.push(b'"');
        doc.extend_from_slice(key.as_bytes());
        doc.extend_from_slice(b"\":");
        doc.extend_from_slice(value);
    }
    doc.push(b'}');

    let schema_digest = crate::canonical::sha256(&schema);
    Ok(ReceiptHashes {
        output_hash: sha256_hex(&output),
        schema_hash: hex::encode(schema_digest),
        rules_hash: sha256_hex(&rules_doc),
        request_hash: sha256_hex(&doc),
        schema_digest,
    })
}
