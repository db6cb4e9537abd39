//! The expression-rule cases (`tests/data/expression-cases.json`) through the engine's library
//! API: the verdict, the integrity counts and the failing rules each case states; the REST, MCP
//! and CLI doors are held to the same table by `tests/e2e/test_expressions.py`.

use serde_json::{Value, json};
use std::path::Path;
use time::OffsetDateTime;
use verifier_engine::{Engine, EngineConfig, VerifyRequest};

fn cases() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/expression-cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("cases")).expect("json")
}

fn request(output: &Value, rules: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "task_id": "expressions", "expected_schema": {"type": "object"},
        "submitted_output": output, "rules": rules, "enforce_rules": true,
    }))
    .expect("json")
}

#[test]
fn every_case_gives_its_stated_verdict() {
    let engine = Engine::new(EngineConfig::default());
    for case in cases()["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().unwrap_or_default();
        let body = request(&case["output"], &case["rules"]);
        let req = VerifyRequest::from_body(&body).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let (response, _) = engine
            .verify_unsigned(&req, OffsetDateTime::now_utc())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(response["result"], case["result"], "{name}: {response:#}");
        let integrity = &response["integrity_checks"];
        assert_eq!(
            json!([integrity["passed"], integrity["total"]]),
            case["integrity"],
            "{name}: {integrity}"
        );
        let failed: Vec<Value> = response["flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["check"] == "consistency:expression")
            .map(|e| e["field"].clone())
            .collect();
        assert_eq!(Value::from(failed), case["failed"], "{name}: {response:#}");
        if let Some(detail) = case["detail"].as_str() {
            assert!(
                response.to_string().contains(detail),
                "{name}: {response:#}"
            );
        }
    }
}

#[test]
fn invalid_expressions_are_refused_with_their_position() {
    for case in cases()["invalid"].as_array().expect("invalid") {
        let rules = json!([{"type": "expression", "rule": case["rule"]}]);
        let err = VerifyRequest::from_body(&request(&json!({}), &rules)).expect_err("refused");
        let problem = &err.problems[0];
        assert_eq!(problem.field, "rules[0].rule");
        let expected = case["problem"].as_str().unwrap_or_default();
        assert!(
            problem.problem.starts_with(expected),
            "{} vs {expected}",
            problem.problem
        );
    }
}

#[test]
fn the_rules_hash_covers_the_expression_text_and_its_tolerance() {
    let engine = Engine::new(EngineConfig::default());
    let hash = |rules: Value| {
        let req =
            VerifyRequest::from_body(&request(&json!({"total": 1.0}), &rules)).expect("valid");
        let (response, _) = engine
            .verify_unsigned(&req, OffsetDateTime::now_utc())
            .expect("verified");
        response["rules_hash"]
            .as_str()
            .expect("rules_hash")
            .to_owned()
    };
    let base = hash(json!([{"type": "expression", "rule": "self.total > 0.0"}]));
    assert_eq!(
        base,
        hash(json!([{"type": "expression", "rule": "self.total > 0.0"}]))
    );
    assert_ne!(
        base,
        hash(json!([{"type": "expression", "rule": "self.total >= 0.0"}]))
    );
    assert_ne!(
        base,
        hash(json!([{"type": "expression", "rule": "self.total > 0.0", "tolerance": 0.005}]))
    );
}
