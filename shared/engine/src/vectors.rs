//! The request-hash test vectors the agent card publishes: the hosted service's three request
//! bodies (`shared/engine/data/request-hash-vectors.json`), with their canonical form and hash
//! recomputed by this code (a test checks they equal the hosted values).

use crate::request::VerifyRequest;
use serde::Serialize;
use serde_json::Value;
use std::sync::OnceLock;
use verifier_receipt::canonical::sha256_hex;
use verifier_receipt::hashes::write_request_document;

/// The vectors file as published by the hosted service.
pub const REQUEST_HASH_VECTORS_JSON: &str = include_str!("../data/request-hash-vectors.json");

/// One vector: what to POST, the canonical form that is hashed, the hash.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestHashVector {
    pub name: String,
    pub request_body_json: String,
    pub canonical_form: String,
    pub request_hash: String,
}

/// The vectors, computed once.
pub fn request_hash_vectors() -> &'static [RequestHashVector] {
    static VECTORS: OnceLock<Vec<RequestHashVector>> = OnceLock::new();
    VECTORS.get_or_init(|| {
        let data: Value = serde_json::from_str(REQUEST_HASH_VECTORS_JSON).unwrap_or(Value::Null);
        data["vectors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let name = v["name"].as_str()?.to_owned();
                let body = v["request_body_json"].as_str()?.to_owned();
                let req = VerifyRequest::from_body(body.as_bytes()).ok()?;
                let output = verifier_receipt::canonical::value_to_jcs(&req.submitted_output);
                let mut doc = Vec::new();
                write_request_document(&mut doc, &req.hash_input(), &output);
                Some(RequestHashVector {
                    name,
                    request_body_json: body,
                    request_hash: sha256_hex(&doc),
                    canonical_form: String::from_utf8(doc).ok()?,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recomputed_vectors_equal_the_hosted_ones() {
        let data: Value = serde_json::from_str(REQUEST_HASH_VECTORS_JSON).expect("json");
        let hosted = data["vectors"].as_array().expect("vectors");
        let ours = request_hash_vectors();
        assert_eq!(ours.len(), hosted.len());
        for (mine, theirs) in ours.iter().zip(hosted) {
            assert_eq!(mine.canonical_form, theirs["canonical_form"]);
            assert_eq!(mine.request_hash, theirs["request_hash"]);
        }
    }
}
