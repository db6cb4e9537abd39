//! The hosted service's published vectors: request hashes, two signed receipts, and the
//! invoice example's verdict.

use serde_json::Value;
use verifier_engine::receipt::attest::{ReceiptError, verify_receipt};
use verifier_engine::receipt::canonical::to_jcs;
use verifier_engine::receipt::hashes::receipt_hashes;
use verifier_engine::receipt::keys::{PublicKeyEntry, SigningIdentity};
use verifier_engine::{Engine, EngineConfig, VerifyRequest};

fn load(name: &str) -> Value {
    let path = format!("{}/../tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("test data present")).expect("json")
}

/// The top-level keys of a JSON object text, in document order.
fn key_order(text: &[u8]) -> Vec<String> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    serde::Deserializer::deserialize_map(&mut de, Keys).expect("object")
}

fn hosted_key() -> PublicKeyEntry {
    serde_json::from_value(load("hosted-receipts.json")["public_key"].clone()).expect("key entry")
}

#[test]
fn request_hash_vectors_reproduce_exactly() {
    let vectors: Value =
        serde_json::from_str(verifier_engine::vectors::REQUEST_HASH_VECTORS_JSON).expect("json");
    for v in vectors["vectors"].as_array().expect("vectors") {
        let body = v["request_body_json"].as_str().expect("body");
        let req = VerifyRequest::from_body(body.as_bytes()).expect("valid request");
        let canonical =
            String::from_utf8(to_jcs(&req.request_document()).expect("jcs")).expect("utf8");
        assert_eq!(
            canonical,
            v["canonical_form"].as_str().expect("form"),
            "{}",
            v["name"]
        );
        let hashes = receipt_hashes(&req.hash_input()).expect("hashes");
        assert_eq!(
            hashes.request_hash,
            v["request_hash"].as_str().expect("hash"),
            "{}",
            v["name"]
        );
    }
}

#[test]
fn hosted_receipts_verify_and_their_hashes_recompute() {
    let data = load("hosted-receipts.json");
    let keys = vec![hosted_key()];
    for r in data["receipts"].as_array().expect("receipts") {
        let response: Value =
            serde_json::from_str(r["response_body_json"].as_str().expect("resp")).expect("json");
        let ok = verify_receipt(&response, &keys).expect("hosted receipt verifies");
        assert_eq!(ok.key_version, "v1-2026-09c");

        let req =
            VerifyRequest::from_body(r["request_body_json"].as_str().expect("req").as_bytes())
                .expect("valid");
        let h = receipt_hashes(&req.hash_input()).expect("hashes");
        assert_eq!(response["output_hash"], h.output_hash.as_str());
        assert_eq!(response["schema_hash"], h.schema_hash.as_str());
        assert_eq!(response["rules_hash"], h.rules_hash.as_str());
        if let Some(rh) = response.get("request_hash") {
            assert_eq!(rh, h.request_hash.as_str());
        }
    }
}

#[test]
fn changing_any_byte_of_a_hosted_receipt_breaks_it() {
    let data = load("hosted-receipts.json");
    let keys = vec![hosted_key()];
    for r in data["receipts"].as_array().expect("receipts") {
        let text = r["response_body_json"].as_str().expect("resp");
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(text).expect("json"))
            .expect("ser");
        let bytes = compact.as_bytes();
        let mut changed = 0;
        for i in 0..bytes.len() {
            // Replace one byte with another printable character that keeps JSON syntax valid
            // where it can; bytes whose change breaks the syntax fail to parse, which also rejects.
            let mut tampered = bytes.to_vec();
            tampered[i] = if bytes[i] == b'0' {
                b'1'
            } else if bytes[i].is_ascii_alphanumeric() {
                b'0'
            } else {
                b'x'
            };
            let outcome = serde_json::from_slice::<Value>(&tampered)
                .map_err(|_| ReceiptError::NotAnObject)
                .and_then(|v| verify_receipt(&v, &keys));
            assert!(
                outcome.is_err(),
                "byte {i} changed and the receipt still verified"
            );
            changed += 1;
        }
        assert_eq!(changed, bytes.len());
    }
}

fn engine() -> (Engine, SigningIdentity) {
    (
        Engine::new(EngineConfig::default()),
        SigningIdentity::from_seed("test-key", &[7u8; 32]).expect("seed"),
    )
}

#[test]
fn hosted_invoice_draft_fails_exactly_as_the_hosted_receipt_says() {
    let data = load("hosted-receipts.json");
    let hosted = &data["receipts"][0];
    let hosted_resp: Value =
        serde_json::from_str(hosted["response_body_json"].as_str().expect("r")).expect("json");
    let req = VerifyRequest::from_body(hosted["request_body_json"].as_str().expect("q").as_bytes())
        .expect("valid");
    let (engine, key) = engine();
    let out = engine
        .verify(&req, &key, time::OffsetDateTime::now_utc())
        .expect("verified");
    let ours: Value = serde_json::from_slice(&out.body).expect("json");
    assert!(!out.passed);
    assert_eq!(ours["result"], "fail");
    assert_eq!(
        ours["summary"]["blocking_checks"],
        serde_json::json!(["consistency:sum_equals"])
    );
    // Every list whole, element by element, and every count beside it.
    for list in ["errors", "errors_detail", "flags", "hints"] {
        assert_eq!(ours[list], hosted_resp[list], "{list}");
        for count in ["total", "omitted"] {
            let key = format!("{list}_{count}");
            assert!(
                hosted_resp.get(&key).is_some(),
                "the hosted receipt has {key}"
            );
            assert_eq!(ours[&key], hosted_resp[&key], "{key}");
        }
    }
    for k in [
        "summary",
        "next_actions",
        "result",
        "task_id",
        "agent_id",
        "enforce_rules",
        "strict_content_check",
        "schema_compliance",
        "integrity_checks",
        "overall",
    ] {
        assert_eq!(ours[k], hosted_resp[k], "{k}");
    }
    for k in ["output_hash", "schema_hash", "rules_hash", "request_hash"] {
        assert_eq!(ours[k], hosted_resp[k], "{k}");
    }
    // The keys of the full response, in the contract's order.
    let theirs = key_order(hosted["response_body_json"].as_str().expect("r").as_bytes());
    assert_eq!(hosted_keys_of(&out.body), theirs);
    let keys = vec![key.public_entry()];
    verify_receipt(&ours, &keys).expect("our receipt verifies");
}

/// Our response's keys in order, without the two we add to the hosted contract right after
/// `strict_content_check`: `format_assertion` (whether formats were asserted) and `identity`
/// (whether the agent ID is a verified key or a plain label).
fn hosted_keys_of(body: &[u8]) -> Vec<String> {
    let mut keys = key_order(body);
    let at = keys
        .iter()
        .position(|k| k == "format_assertion")
        .expect("the receipt states whether formats were asserted");
    assert_eq!(keys[at - 1], "strict_content_check");
    assert_eq!(keys[at + 1], "identity");
    keys.drain(at..at + 2);
    keys
}

#[test]
fn corrected_invoice_passes_and_compact_has_the_compact_keys() {
    let data = load("hosted-receipts.json");
    let draft: Value = serde_json::from_str(
        data["receipts"][0]["request_body_json"]
            .as_str()
            .expect("q"),
    )
    .expect("json");
    let mut fixed = draft.clone();
    fixed["submitted_output"]["total"] = serde_json::json!(129.5);
    fixed["detail"] = "compact".into();
    let req = VerifyRequest::from_value(fixed).expect("valid");
    let (engine, key) = engine();
    let out = engine
        .verify(&req, &key, time::OffsetDateTime::now_utc())
        .expect("verified");
    let ours: Value = serde_json::from_slice(&out.body).expect("json");
    assert!(out.passed);
    let hosted: Value = serde_json::from_str(
        data["receipts"][1]["response_body_json"]
            .as_str()
            .expect("r"),
    )
    .expect("json");
    let theirs = key_order(
        data["receipts"][1]["response_body_json"]
            .as_str()
            .expect("r")
            .as_bytes(),
    );
    assert_eq!(hosted_keys_of(&out.body), theirs);
    assert_eq!(ours["output_hash"], hosted["output_hash"]);
    assert_eq!(ours["rules_hash"], hosted["rules_hash"]);
    assert_eq!(ours["next_actions"], hosted["next_actions"]);
}

/// The streamed request document (what `request_hash` covers) equals the readable
/// definition on requests with every kind of rule, bound and default.
#[test]
fn streamed_request_document_equals_the_reference() {
    let bodies = [
        r#"{"task_id":"t","expected_schema":true,"submitted_output":null}"#,
        r#"{"task_id":"t","agent_id":null,"expected_schema":{},"submitted_output":[1,2.5],"rules":[],"bounds":{}}"#,
        r#"{"task_id":"t","agent_id":"a\u00e9\ud83d\ude02","expected_schema":{"type":"object","b":1,"a":[]},
            "submitted_output":{"x":1e21,"y":-0.0},"strict_content_check":true,"enforce_rules":true,
            "rules":[{"type":"sum_equals","field":"items[].p","equals_field":"total","tolerance":0.01},
                     {"type":"gte","field":"a","value":0,"if_present":true},
                     {"type":"exists_in","field":"a[].b","values":["x",1,null]},
                     {"type":"unique","field":"ids[]","equals":null}],
            "bounds":{"z.\ud83d\ude02":{"min":0},"\ufb33":{"max":1.5,"if_present":true},"a":{"min":-1,"max":1,"if_present":false}}}"#,
    ];
    for body in bodies {
        let req = match VerifyRequest::from_body(body.as_bytes()) {
            Ok(req) => req,
            Err(e) => panic!("{body}: {:?}", e.problems),
        };
        let output = to_jcs(&req.submitted_output).expect("jcs");
        let mut streamed = Vec::new();
        verifier_engine::receipt::hashes::write_request_document(
            &mut streamed,
            &req.hash_input(),
            &output,
        );
        let reference = to_jcs(&req.request_document()).expect("jcs");
        assert_eq!(
            String::from_utf8(streamed).expect("utf8"),
            String::from_utf8(reference).expect("utf8"),
            "{body}"
        );
    }
}
