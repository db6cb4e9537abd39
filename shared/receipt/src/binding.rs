//! Whether a genuine receipt is about what you hold. A signature proves the service signed the
//! response; it does not prove the response is about *this* output, schema and rules: a seller
//! can attach a genuine receipt for something else. The binding check recomputes the receipt's
//! hashes from what the buyer holds and compares them with the signed ones.

use crate::canonical::{CanonicalError, sha256_hex, value_to_jcs, write_value};
use crate::hashes::{HashInput, receipt_hashes};
use serde_json::Value;

/// What a receipt must state to be about what the caller holds; `None` is not checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExpectedHashes {
    pub output_hash: Option<String>,
    pub schema_hash: Option<String>,
    pub rules_hash: Option<String>,
    pub request_hash: Option<String>,
    /// The request's fields a receipt states in the clear (`task_id`, `agent_id`,
    /// `enforce_rules`, `strict_content_check`): compared when the receipt is a compact one,
    /// which carries no `request_hash`.
    pub stated: Vec<(&'static str, Value)>,
}

impl ExpectedHashes {
    /// All four hashes of a whole request, and the fields a compact receipt states instead of
    /// the request hash.
    pub fn of_request(input: &HashInput<'_>) -> Result<Self, CanonicalError> {
        let hashes = receipt_hashes(input)?;
        Ok(ExpectedHashes {
            output_hash: Some(hashes.output_hash),
            schema_hash: Some(hashes.schema_hash),
            rules_hash: Some(hashes.rules_hash),
            request_hash: Some(hashes.request_hash),
            stated: vec![
                ("task_id", Value::from(input.task_id)),
                ("agent_id", input.agent_id.map_or(Value::Null, Value::from)),
                ("enforce_rules", Value::from(input.enforce_rules)),
                (
                    "strict_content_check",
                    Value::from(input.strict_content_check),
                ),
            ],
        })
    }

    /// From parts held separately: the output, the schema, and the rules and bounds (the rules
    /// hash covers both: it is checked when either is given, the other counting as not sent).
    pub fn of_parts(
        output: Option<&Value>,
        schema: Option<&Value>,
        rules: Option<&Value>,
        bounds: Option<&Value>,
    ) -> Self {
        let rules_hash = (rules.is_some() || bounds.is_some()).then(|| {
            let mut doc = Vec::with_capacity(256);
            doc.extend_from_slice(b"{\"bounds\":");
            write_value(&mut doc, bounds.unwrap_or(&Value::Null));
            doc.extend_from_slice(b",\"rules\":");
            write_value(&mut doc, rules.unwrap_or(&Value::Null));
            doc.push(b'}');
            sha256_hex(&doc)
        });
        ExpectedHashes {
            output_hash: output.map(|v| sha256_hex(&value_to_jcs(v))),
            schema_hash: schema.map(|v| sha256_hex(&value_to_jcs(v))),
            rules_hash,
            request_hash: None,
            stated: Vec::new(),
        }
    }

    /// Whether nothing is to be checked.
    pub fn is_empty(&self) -> bool {
        self == &ExpectedHashes::default()
    }
}

/// Why a receipt is not about what the caller holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error("the receipt has no '{0}': it is not a verification receipt")]
    NotAVerification(&'static str),
    #[error("the receipt's output_hash differs: it is about another output")]
    OtherOutput,
    #[error("the receipt's schema_hash differs: it is about another schema")]
    OtherSchema,
    #[error("the receipt's rules_hash differs: it is about other rules or bounds")]
    OtherRules,
    #[error(
        "the receipt's request_hash differs: it is about another request (task, agent, flags or options)"
    )]
    OtherRequest,
    #[error("the receipt's {0} differs: it is about another request")]
    OtherField(&'static str),
}

/// Compare a receipt's signed hashes with the expected ones (the output first, so the most
/// telling difference is named) and say what was compared. A compact receipt has no
/// `request_hash`: the request's fields it states are compared instead (`format_assertion`,
/// which it does not state, is then not covered).
pub fn check_binding(
    response: &Value,
    expected: &ExpectedHashes,
) -> Result<Vec<&'static str>, BindingError> {
    let mut compared = Vec::new();
    let checks: [(&'static str, &Option<String>, BindingError); 3] = [
        (
            "output_hash",
            &expected.output_hash,
            BindingError::OtherOutput,
        ),
        (
            "schema_hash",
            &expected.schema_hash,
            BindingError::OtherSchema,
        ),
        ("rules_hash", &expected.rules_hash, BindingError::OtherRules),
    ];
    for (field, want, mismatch) in checks {
        let Some(want) = want else { continue };
        let got = response
            .get(field)
            .and_then(Value::as_str)
            .ok_or(BindingError::NotAVerification(field))?;
        if got != want {
            return Err(mismatch);
        }
        compared.push(field);
    }
    let Some(want) = &expected.request_hash else {
        return Ok(compared);
    };
    match response.get("request_hash").and_then(Value::as_str) {
        Some(got) if got == want => compared.push("request_hash"),
        Some(_) => return Err(BindingError::OtherRequest),
        None => {
            for (field, want) in &expected.stated {
                if response.get(*field).unwrap_or(&Value::Null) != want {
                    return Err(BindingError::OtherField(field));
                }
                compared.push(field);
            }
        }
    }
    Ok(compared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_hash_as_the_service_does() {
        let output = json!({"b": 1, "a": [1.0, "x"]});
        let expected = ExpectedHashes::of_parts(Some(&output), None, None, None);
        assert_eq!(
            expected.output_hash.as_deref(),
            Some(sha256_hex(br#"{"a":[1,"x"],"b":1}"#).as_str())
        );
        let rules = json!([{"type": "unique", "field": "ids"}]);
        let with_rules = ExpectedHashes::of_parts(None, None, Some(&rules), None);
        assert_eq!(
            with_rules.rules_hash.as_deref(),
            Some(
                sha256_hex(br#"{"bounds":null,"rules":[{"field":"ids","type":"unique"}]}"#)
                    .as_str()
            )
        );
    }

    #[test]
    fn a_difference_is_named_and_a_score_receipt_is_not_a_verification() {
        let output = json!({"a": 1});
        let expected = ExpectedHashes::of_parts(Some(&output), None, None, None);
        let good = json!({"output_hash": expected.output_hash.clone().unwrap_or_default()});
        assert_eq!(check_binding(&good, &expected), Ok(vec!["output_hash"]));
        let other = json!({"output_hash": "00"});
        assert_eq!(
            check_binding(&other, &expected),
            Err(BindingError::OtherOutput)
        );
        let score = json!({"trust_score": 0.5});
        assert_eq!(
            check_binding(&score, &expected),
            Err(BindingError::NotAVerification("output_hash"))
        );
    }

    #[test]
    fn a_compact_receipt_is_bound_by_the_fields_it_states() {
        let (output, schema, rules) = (json!({"a": 1}), br#"{"type":"object"}"#, json!(null));
        let input = HashInput {
            task_id: "t-1",
            agent_id: None,
            agent_signature: None,
            submitted_output: &output,
            schema_canonical: schema,
            schema_digest: None,
            rules_sent: &rules,
            bounds_sent: &rules,
            enforce_rules: true,
            strict_content_check: false,
            format_assertion: true,
        };
        let expected = ExpectedHashes::of_request(&input).expect("canonical");
        let mut compact = json!({
            "task_id": "t-1", "agent_id": null, "enforce_rules": true, "strict_content_check": false,
            "output_hash": expected.output_hash, "schema_hash": expected.schema_hash,
            "rules_hash": expected.rules_hash,
        });
        assert_eq!(
            check_binding(&compact, &expected),
            Ok(vec![
                "output_hash",
                "schema_hash",
                "rules_hash",
                "task_id",
                "agent_id",
                "enforce_rules",
                "strict_content_check"
            ])
        );
        compact["enforce_rules"] = json!(false);
        assert_eq!(
            check_binding(&compact, &expected),
            Err(BindingError::OtherField("enforce_rules"))
        );
    }
}
