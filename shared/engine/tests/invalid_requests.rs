//! Every kind of invalid request (HTTP 422): `VerifyRequest::from_body` problems and the
//! schema problems `Engine::verify` reports, and the never-echo guarantee: no problem text
//! quotes the caller's input.

use serde_json::{Value, json};
use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use verifier_engine::{
    Engine, EngineConfig, EngineError, FieldProblem, SigningIdentity, VerifyRequest,
};

fn problems(body: &[u8]) -> Vec<FieldProblem> {
    match VerifyRequest::from_body(body) {
        Ok(_) => panic!(
            "expected an invalid request: {}",
            String::from_utf8_lossy(body)
        ),
        Err(e) => {
            assert!(
                !e.problems.is_empty(),
                "an invalid request names at least one problem"
            );
            assert_eq!(
                e.to_string(),
                format!("the request is invalid ({} problem(s))", e.problems.len())
            );
            e.problems
        }
    }
}

fn problems_of(body: Value) -> Vec<FieldProblem> {
    problems(&serde_json::to_vec(&body).expect("serializable"))
}

fn valid(body: Value) -> VerifyRequest {
    let bytes = serde_json::to_vec(&body).expect("serializable");
    VerifyRequest::from_body(&bytes)
        .unwrap_or_else(|e| panic!("expected a valid request, got {:?}", e.problems))
}

/// A minimal valid request with `extra` merged over it (a null in `extra` removes the key).
fn base(extra: Value) -> Value {
    let mut req = json!({"task_id": "t-1", "expected_schema": {"type": "object"}, "submitted_output": {"a": 1}});
    let map = req.as_object_mut().expect("object");
    for (k, v) in extra.as_object().expect("object") {
        if v.is_null() {
            map.remove(k);
        } else {
            map.insert(k.clone(), v.clone());
        }
    }
    req
}

/// Exactly one problem, at `field`, whose text starts with `problem`.
fn assert_one(problems: &[FieldProblem], field: &str, problem: &str) {
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    assert_has(problems, field, problem);
}

fn assert_has(problems: &[FieldProblem], field: &str, problem: &str) {
    assert!(
        problems
            .iter()
            .any(|p| p.field == field && p.problem.starts_with(problem) && !p.fix.is_empty()),
        "no problem ({field}, {problem}…) in {problems:#?}"
    );
}

fn engine() -> Engine {
    Engine::new(EngineConfig::default())
}

fn signer() -> SigningIdentity {
    SigningIdentity::from_seed("t", &[1; 32]).expect("a 32-byte seed is a valid key")
}

/// The problems `Engine::verify` reports for a schema (the request itself is valid).
fn schema_problems(schema: Value) -> Vec<FieldProblem> {
    let req =
        valid(json!({"task_id": "s", "expected_schema": schema, "submitted_output": {"a": 1}}));
    match engine().verify(&req, &signer(), OffsetDateTime::now_utc()) {
        Err(EngineError::Invalid(e)) => e.problems,
        Err(other) => panic!("expected EngineError::Invalid, got {other:?}"),
        Ok(_) => panic!(
            "expected the schema {} to be refused",
            req.expected_schema.value
        ),
    }
}

// ---------------------------------------------------------------- body-level problems

#[test]
fn malformed_json() {
    let p = problems(br#"{"task_id": "a", }"#);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(
        p[0].problem,
        "the body is not valid JSON (line 1, column 18)"
    );
    let p = problems(b"{task_id: 1}");
    assert_one(&p, "body", "the body is not valid JSON (line 1, column 2)");
    assert!(p[0].fix.contains("complete JSON object"), "{p:?}");
    let p = problems(b"\xff\xfe{}");
    assert_one(&p, "body", "the body is not valid JSON");
    let p = problems(br#"{"task_id": "t", "expected_schema": {}, "submitted_output": 1} trailing"#);
    assert_one(&p, "body", "the body is not valid JSON");
}

#[test]
fn truncated_body() {
    for body in [
        &b""[..],
        b"{",
        br#"{"task_id""#,
        br#"{"task_id": "abc"#,
        br#"{"submitted_output": [1, 2"#,
    ] {
        let p = problems(body);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(
            p[0].problem,
            "the body ends before the JSON value is complete",
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_one(
        &problems(br#"{"submitted_output": [1, 2"#),
        "submitted_output",
        "the body ends",
    );
    assert_one(&problems(b""), "body", "the body ends");
}

#[test]
fn non_object_bodies() {
    for body in [&b"[1, 2]"[..], b"\"text\"", b"null", b"42", b"true"] {
        let p = problems(body);
        assert_one(&p, "body", "is not a JSON object");
    }
}

// ---------------------------------------------------------------- required fields

#[test]
fn missing_required_fields() {
    for field in ["task_id", "expected_schema", "submitted_output"] {
        let p = problems_of(base(json!({field: null})));
        assert_one(&p, field, "is required but missing");
    }
    let p = problems(b"{}");
    assert_eq!(p.len(), 3, "{p:#?}");
    for field in ["task_id", "expected_schema", "submitted_output"] {
        assert_has(&p, field, "is required but missing");
    }
}

#[test]
fn submitted_output_null_is_valid() {
    let req = valid(json!({"task_id": "t", "expected_schema": {}, "submitted_output": null}));
    assert_eq!(req.submitted_output, Value::Null);
    let out = engine()
        .verify(&req, &signer(), OffsetDateTime::now_utc())
        .expect("verifies");
    assert!(out.passed, "null satisfies the empty schema");
}

// ---------------------------------------------------------------- ids

#[test]
fn task_id_length_limits() {
    assert_one(
        &problems_of(base(json!({"task_id": ""}))),
        "task_id",
        "is empty",
    );
    assert_one(
        &problems_of(base(json!({"task_id": "x".repeat(201)}))),
        "task_id",
        "is longer than 200 characters",
    );
    assert_eq!(
        valid(base(json!({"task_id": "x".repeat(200)})))
            .task_id
            .len(),
        200
    );
    // Characters, not bytes: 200 'é' are 400 bytes and allowed; 201 are not.
    let req = valid(base(json!({"task_id": "é".repeat(200)})));
    assert_eq!(req.task_id.chars().count(), 200);
    assert_eq!(req.task_id.len(), 400);
    assert_one(
        &problems_of(base(json!({"task_id": "é".repeat(201)}))),
        "task_id",
        "is longer than 200",
    );
    assert_one(
        &problems_of(base(json!({"task_id": 7}))),
        "task_id",
        "has the wrong type",
    );
    assert_one(
        &problems_of(base(json!({"task_id": Value::Null}))),
        "task_id",
        "is required but missing",
    );
}

#[test]
fn agent_id_type_and_length() {
    for bad in [json!(5), json!(true), json!(["a"]), json!({"id": "a"})] {
        assert_one(
            &problems_of(base(json!({"agent_id": bad}))),
            "agent_id",
            "has the wrong type",
        );
    }
    assert_one(
        &problems_of(base(json!({"agent_id": ""}))),
        "agent_id",
        "is empty",
    );
    assert_one(
        &problems_of(base(json!({"agent_id": "a".repeat(201)}))),
        "agent_id",
        "is longer than 200",
    );
    let body =
        br#"{"task_id": "t", "agent_id": null, "expected_schema": {}, "submitted_output": 1}"#;
    assert_eq!(
        VerifyRequest::from_body(body)
            .expect("null agent_id is allowed")
            .agent_id,
        None
    );
}

// ---------------------------------------------------------------- other top-level fields

#[test]
fn expected_schema_must_be_object_or_boolean() {
    for bad in [json!("a string"), json!(12), json!([{"type": "object"}])] {
        let p = problems_of(base(json!({"expected_schema": bad})));
        assert_one(
            &p,
            "expected_schema",
            "must be a JSON Schema: an object or a boolean",
        );
    }
    valid(base(json!({"expected_schema": true})));
    valid(base(json!({"expected_schema": false})));
}

#[test]
fn boolean_fields_have_the_right_type() {
    for field in ["strict_content_check", "enforce_rules"] {
        for bad in [json!("true"), json!(1), json!([])] {
            assert_one(
                &problems_of(base(json!({field: bad}))),
                field,
                "has the wrong type",
            );
        }
    }
}

#[test]
fn detail_allowed_values() {
    for bad in [json!("verbose"), json!("FULL"), json!(1)] {
        let p = problems_of(base(json!({"detail": bad})));
        assert_one(&p, "detail", "is not one of the allowed values");
        assert!(
            p[0].fix.contains("'full'") && p[0].fix.contains("'compact'"),
            "{p:?}"
        );
    }
}

#[test]
fn unknown_top_level_fields() {
    let p = problems_of(base(json!({"extra": 1, "other": 2})));
    assert_one(&p, "body", "has 2 field(s) this API does not know");
    assert!(
        p[0].fix.contains("task_id") && p[0].fix.contains("submitted_output"),
        "{p:?}"
    );
}

// ---------------------------------------------------------------- rules

#[test]
fn rules_must_be_an_array_of_objects() {
    for bad in [json!({"type": "unique"}), json!("unique"), json!(1)] {
        assert_one(
            &problems_of(base(json!({"rules": bad}))),
            "rules",
            "has the wrong type",
        );
    }
    assert_one(
        &problems_of(base(json!({"rules": [5]}))),
        "rules[0]",
        "has the wrong type",
    );
    valid(base(json!({"rules": []})));
}

#[test]
fn rule_with_an_unknown_type() {
    let p = problems_of(base(json!({"rules": [{"type": "sum", "field": "a"}]})));
    assert_one(&p, "rules[0].type", "is not one of the allowed values");
    assert!(p[0].fix.contains("'sum_equals'"), "{p:?}");
    let p = problems_of(base(json!({"rules": [{"type": 3, "field": "a"}]})));
    assert_one(&p, "rules[0].type", "has the wrong type");
    let p = problems_of(base(json!({"rules": [{"field": "a"}]})));
    assert_one(&p, "rules[0].type", "is required but missing");
}

#[test]
fn rule_missing_field() {
    let p = problems_of(base(json!({"rules": [{"type": "unique"}]})));
    assert_one(&p, "rules[0].field", "is required but missing");
    let p = problems_of(base(json!({"rules": [{"type": "gte", "field": "a"}]})));
    assert_one(
        &p,
        "rules[0].other_field",
        "is required when value is not given",
    );
    let p = problems_of(base(
        json!({"rules": [{"type": "exists_in", "field": "a"}]}),
    ));
    assert_one(
        &p,
        "rules[0].in_field",
        "is required when values is not given",
    );
    let p = problems_of(base(
        json!({"rules": [{"type": "sum_equals", "field": "a"}]}),
    ));
    assert_one(
        &p,
        "rules[0].equals_field",
        "is required when equals is not given",
    );
}

#[test]
fn rule_with_both_operands() {
    let p = problems_of(base(json!({"rules": [
        {"type": "sum_equals", "field": "a[]", "equals": 3, "equals_field": "b"}
    ]})));
    assert_one(&p, "rules[0].equals_field", "is given together with equals");
    let p = problems_of(base(
        json!({"rules": [{"type": "lte", "field": "a", "value": 3, "other_field": "b"}]}),
    ));
    assert_one(&p, "rules[0].other_field", "is given together with value");
}

#[test]
fn rule_key_that_does_not_apply_to_its_type() {
    let p = problems_of(base(
        json!({"rules": [{"type": "unique", "field": "a[]", "values": [1]}]}),
    ));
    assert_one(&p, "rules[0].values", "does not apply to a 'unique' rule");
    let p = problems_of(base(
        json!({"rules": [{"type": "gte", "field": "a", "value": 1, "equals": 2}]}),
    ));
    assert_one(&p, "rules[0].equals", "does not apply to a 'gte' rule");
    // A null for a key of another type is as good as absent.
    valid(base(
        json!({"rules": [{"type": "gte", "field": "a", "value": 1, "equals": null}]}),
    ));
    let p = problems_of(base(
        json!({"rules": [{"type": "unique", "field": "a", "weight": 2}]}),
    ));
    assert_one(&p, "rules[0]", "has 1 key(s) this API does not know");
}

#[test]
fn rule_operand_types() {
    let p = problems_of(base(
        json!({"rules": [{"type": "gte", "field": "a", "value": "3"}]}),
    ));
    assert_one(&p, "rules[0].value", "has the wrong type");
    let p = problems_of(base(
        json!({"rules": [{"type": "exists_in", "field": "a", "values": "x"}]}),
    ));
    assert_one(&p, "rules[0].values", "has the wrong type");
    let p = problems_of(base(
        json!({"rules": [{"type": "gte", "field": "a", "other_field": 3}]}),
    ));
    assert_one(&p, "rules[0].other_field", "has the wrong type");
    let p = problems_of(base(
        json!({"rules": [{"type": "unique", "field": "a", "if_present": "yes"}]}),
    ));
    assert_one(&p, "rules[0].if_present", "has the wrong type");
}

#[test]
fn bad_path_syntax() {
    for (path, why) in [
        (
            "items[0].price",
            "is not a valid path: it has a bracket that is not `[]`",
        ),
        (
            "a..b",
            "is not a valid path: it has an empty name between dots",
        ),
        ("", "is not a valid path: it is empty"),
        (
            ".a",
            "is not a valid path: it has an empty name between dots",
        ),
        (
            "a]",
            "is not a valid path: it has a bracket that is not `[]`",
        ),
    ] {
        let p = problems_of(base(json!({"rules": [{"type": "unique", "field": path}]})));
        assert_one(&p, "rules[0].field", why);
    }
    let p = problems_of(base(
        json!({"rules": [{"type": "gte", "field": "a", "other_field": "b[1]"}]}),
    ));
    assert_one(&p, "rules[0].other_field", "is not a valid path");
    let p = problems_of(base(json!({"bounds": {"a[x]": {"min": 0}}})));
    assert_one(&p, "bounds[0] (key)", "is not a valid path");
}

#[test]
fn tolerance_must_be_non_negative_number() {
    for bad in [json!(-0.01), json!("0.1"), json!(true)] {
        let p = problems_of(base(json!({"rules": [
            {"type": "sum_equals", "field": "a[]", "equals": 1, "tolerance": bad}
        ]})));
        assert_one(&p, "rules[0].tolerance", "must be a number ≥ 0");
    }
    valid(base(
        json!({"rules": [{"type": "sum_equals", "field": "a[]", "equals": 1, "tolerance": 0}]}),
    ));
}

#[test]
fn problems_in_later_rules_are_indexed() {
    let p = problems_of(base(json!({"rules": [
        {"type": "unique", "field": "a"},
        {"type": "unique", "field": "a"},
        {"type": "nope", "field": "a"}
    ]})));
    assert_one(&p, "rules[2].type", "is not one of the allowed values");
}

// ---------------------------------------------------------------- bounds

#[test]
fn bounds_shapes() {
    for bad in [json!([{"min": 0}]), json!("a"), json!(3)] {
        assert_one(
            &problems_of(base(json!({"bounds": bad}))),
            "bounds",
            "has the wrong type",
        );
    }
    assert_one(
        &problems_of(base(json!({"bounds": {"a": 5}}))),
        "bounds[0]",
        "has the wrong type",
    );
    assert_one(
        &problems_of(base(json!({"bounds": {"a": {"min": "0"}}}))),
        "bounds[0].min",
        "has the wrong type",
    );
    assert_one(
        &problems_of(base(json!({"bounds": {"a": {"max": [1]}}}))),
        "bounds[0].max",
        "has the wrong type",
    );
    assert_one(
        &problems_of(base(json!({"bounds": {"a": {"min": 0, "if_present": 1}}}))),
        "bounds[0].if_present",
        "has the wrong type",
    );
    assert_one(
        &problems_of(base(json!({"bounds": {"a": {"min": 0, "step": 1}}}))),
        "bounds[0]",
        "has 1 key(s) this API does not know",
    );
    valid(base(json!({"bounds": {}})));
    valid(base(json!({"bounds": Value::Null})));
}

#[test]
fn bound_with_neither_min_nor_max() {
    for spec in [
        json!({}),
        json!({"if_present": true}),
        json!({"min": null, "max": null}),
    ] {
        let p = problems_of(base(json!({"bounds": {"a": spec}})));
        assert_one(&p, "bounds[0]", "has neither min nor max");
    }
}

#[test]
fn bound_min_greater_than_max() {
    let p = problems_of(base(
        json!({"bounds": {"a": {"min": 0}, "b": {"min": 10, "max": 1}}}),
    ));
    assert_one(&p, "bounds[1]", "has min greater than max");
    valid(base(json!({"bounds": {"a": {"min": 5, "max": 5}}})));
}

// ---------------------------------------------------------------- strict JSON

#[test]
fn duplicate_keys_anywhere() {
    let p = problems(
        br#"{"task_id": "a", "task_id": "b", "expected_schema": {}, "submitted_output": 1}"#,
    );
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].problem
            .starts_with("an object repeats a key (line 1, column"),
        "{p:?}"
    );
    assert!(p[0].fix.contains("at most once"), "{p:?}");

    let p = problems(br#"{"task_id": "a", "expected_schema": {}, "submitted_output": {"x": 1, "y": {"z": 1, "z": 1}}}"#);
    assert_one(&p, "submitted_output", "an object repeats a key");
    let p = problems(br#"{"task_id": "a", "expected_schema": {"type": "object", "type": "object"}, "submitted_output": 1}"#);
    assert_one(&p, "expected_schema", "an object repeats a key");
    let p = problems(
        br#"{"task_id": "a", "expected_schema": {}, "submitted_output": [{}, {"a": 1, "a": 2}]}"#,
    );
    assert_one(&p, "submitted_output", "an object repeats a key");
}

#[test]
fn integers_beyond_two_to_the_53() {
    let p = problems(
        br#"{"task_id": "a", "expected_schema": {}, "submitted_output": {"n": 9007199254740992}}"#,
    );
    assert_one(&p, "submitted_output", "an integer is beyond ±(2^53−1)");
    assert!(p[0].fix.contains("as strings"), "{p:?}");
    let p = problems(
        br#"{"task_id": "a", "expected_schema": {}, "submitted_output": [-9007199254740992]}"#,
    );
    assert_one(&p, "submitted_output", "an integer is beyond");
    let p = problems(br#"{"task_id": "a", "expected_schema": {"maximum": 9007199254740993}, "submitted_output": 1}"#);
    assert_one(&p, "expected_schema", "an integer is beyond");
    // The largest safe integers are fine.
    VerifyRequest::from_body(br#"{"task_id": "a", "expected_schema": {}, "submitted_output": [9007199254740991, -9007199254740991]}"#)
        .expect("2^53-1 is safe");
}

#[test]
fn numbers_out_of_double_range() {
    let p = problems(br#"{"task_id": "a", "expected_schema": {}, "submitted_output": 1e400}"#);
    assert_one(
        &p,
        "submitted_output",
        "a number is out of the IEEE-754 double range",
    );
    let p = problems(br#"{"task_id": "a", "expected_schema": {}, "submitted_output": [-1e309]}"#);
    assert_one(
        &p,
        "submitted_output",
        "a number is out of the IEEE-754 double range",
    );
    let p = problems(br#"{"task_id": "a", "expected_schema": {}, "submitted_output": NaN}"#);
    assert_one(&p, "submitted_output", "the body is not valid JSON");
}

#[test]
fn ten_thousand_nested_arrays_are_a_clear_error() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let body =
        format!(r#"{{"task_id": "a", "expected_schema": {{}}, "submitted_output": {deep}}}"#);
    let p = problems(body.as_bytes());
    assert_one(
        &p,
        "submitted_output",
        "arrays and objects are nested deeper than 126 levels",
    );
    assert!(p[0].fix.contains("126"), "{p:?}");
    let p = problems(deep.as_bytes());
    assert_one(
        &p,
        "body",
        "arrays and objects are nested deeper than 126 levels",
    );
    let objects = r#"{"a":"#.repeat(10_000) + "1" + &"}".repeat(10_000);
    let p = problems(objects.as_bytes());
    assert_one(&p, "body", "arrays and objects are nested deeper");
    // Nesting under the limit is accepted and verified.
    let ok = "[".repeat(100) + &"]".repeat(100);
    let body = format!(r#"{{"task_id": "a", "expected_schema": {{}}, "submitted_output": {ok}}}"#);
    let req = VerifyRequest::from_body(body.as_bytes()).expect("100 levels are fine");
    engine()
        .verify(&req, &signer(), OffsetDateTime::now_utc())
        .expect("verifies");
}

// ---------------------------------------------------------------- schemas refused by the engine

#[test]
fn invalid_schema_is_refused_at_expected_schema() {
    let p = schema_problems(json!({"type": 12}));
    assert_one(
        &p,
        "expected_schema",
        "is not a valid JSON Schema for its draft",
    );
    assert!(p[0].problem.contains("'type'"), "{p:?}");
    let p = schema_problems(json!({"properties": {"a": {"minLength": -1}}}));
    assert_one(
        &p,
        "expected_schema",
        "is not a valid JSON Schema for its draft",
    );
    let p = schema_problems(json!({"required": "a"}));
    assert_one(&p, "expected_schema", "is not a valid JSON Schema");
}

#[test]
fn unknown_draft_is_refused() {
    for uri in [
        "http://example.com/my-meta-schema",
        "https://json-schema.org/draft/2099-01/schema",
    ] {
        let p = schema_problems(json!({"$schema": uri, "type": "object"}));
        assert_one(
            &p,
            "expected_schema",
            "names a meta-schema ($schema) this service does not support",
        );
    }
}

#[test]
fn known_drafts_are_accepted() {
    for uri in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        let req = valid(
            json!({"task_id": "d", "expected_schema": {"$schema": uri, "type": "object"}, "submitted_output": {}}),
        );
        let out = engine()
            .verify(&req, &signer(), OffsetDateTime::now_utc())
            .expect("a known draft compiles");
        assert!(out.passed, "{uri}");
    }
}

#[test]
fn remote_ref_is_refused_without_a_network_request() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("address").port();
    let started = Instant::now();
    for reference in [
        format!("http://127.0.0.1:{port}/x.json"),
        format!("http://127.0.0.1:{port}/x.json#/definitions/a"),
        "http://127.0.0.1:9/x.json".to_owned(),
        "https://example.com/schema.json".to_owned(),
    ] {
        let p =
            schema_problems(json!({"type": "object", "properties": {"a": {"$ref": reference}}}));
        assert_one(
            &p,
            "expected_schema",
            "has a $ref to a remote or file resource, which is never fetched",
        );
        assert!(p[0].fix.contains("$defs"), "{p:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused without waiting on a network"
    );
    std::thread::sleep(Duration::from_millis(50));
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => panic!("unexpected accept error: {e}"),
        Ok((_, peer)) => panic!("the verifier connected to the $ref host from {peer}"),
    }
}

#[test]
fn file_ref_is_refused() {
    for reference in ["file:///etc/passwd", "file:///etc/passwd#/a"] {
        let p = schema_problems(json!({"$ref": reference}));
        assert_one(
            &p,
            "expected_schema",
            "has a $ref to a remote or file resource",
        );
    }
}

#[test]
fn unresolvable_local_ref_is_refused() {
    let p = schema_problems(json!({"$ref": "#/$defs/missing"}));
    assert_one(
        &p,
        "expected_schema",
        "has a $ref that does not resolve inside the schema",
    );
}

#[test]
fn non_linear_pattern_is_refused() {
    for pattern in ["(?=a)b", "(a)\\1", "a(?<!b)"] {
        let p = schema_problems(json!({"type": "string", "pattern": pattern}));
        assert_one(
            &p,
            "expected_schema",
            "has a pattern with lookaround or backreferences",
        );
    }
    for pattern in ["[", "a{1000000}"] {
        let p = schema_problems(json!({"type": "string", "pattern": pattern}));
        assert_one(
            &p,
            "expected_schema",
            "has a pattern that is not a valid regular expression",
        );
    }
}

// ---------------------------------------------------------------- several problems at once

#[test]
fn every_problem_is_reported_at_once() {
    let p = problems_of(json!({
        "task_id": "",
        "expected_schema": {},
        "submitted_output": 1,
        "detail": "verbose",
        "rules": [{"type": "sum", "field": "a"}],
    }));
    assert_eq!(p.len(), 3, "{p:#?}");
    assert_has(&p, "task_id", "is empty");
    assert_has(&p, "detail", "is not one of the allowed values");
    assert_has(&p, "rules[0].type", "is not one of the allowed values");

    let p = problems_of(json!({
        "agent_id": 3,
        "expected_schema": "x",
        "enforce_rules": "yes",
        "bounds": {"a": {"min": 3, "max": 1}},
        "rules": [{"type": "unique", "field": "a[0]"}, {"type": "gte", "field": "b"}],
        "surprise": true,
    }));
    for (field, problem) in [
        ("body", "has 1 field(s) this API does not know"),
        ("task_id", "is required but missing"),
        ("agent_id", "has the wrong type"),
        ("expected_schema", "must be a JSON Schema"),
        ("submitted_output", "is required but missing"),
        ("enforce_rules", "has the wrong type"),
        ("bounds[0]", "has min greater than max"),
        ("rules[0].field", "is not a valid path"),
        (
            "rules[1].other_field",
            "is required when value is not given",
        ),
    ] {
        assert_has(&p, field, problem);
    }
    assert_eq!(p.len(), 9, "{p:#?}");
}

// ---------------------------------------------------------------- never echo

const MARKER: &str = "MARKER-7f3a";

fn assert_no_marker(p: &[FieldProblem], what: &str) {
    let text = serde_json::to_string(p).expect("problems serialize");
    assert!(
        !text.contains(MARKER),
        "{what}: a problem echoes the caller's input: {text}"
    );
    assert!(
        !text.to_lowercase().contains("7f3a"),
        "{what}: a problem echoes part of the input: {text}"
    );
}

#[test]
fn problems_never_echo_the_request() {
    let m = MARKER;
    let long = format!("{m}-").repeat(30);
    let bodies: Vec<(&str, Value)> = vec![
        ("task_id too long", base(json!({"task_id": long}))),
        ("task_id wrong type", base(json!({"task_id": {m: m}}))),
        ("agent_id too long", base(json!({"agent_id": long}))),
        ("agent_id wrong type", base(json!({"agent_id": [m]}))),
        (
            "expected_schema a string",
            base(json!({"expected_schema": m})),
        ),
        (
            "bool field",
            base(json!({"enforce_rules": m, "strict_content_check": m})),
        ),
        ("detail", base(json!({"detail": m}))),
        ("unknown field name", base(json!({m: 1}))),
        ("unknown field value", base(json!({"x": m}))),
        ("rules a string", base(json!({"rules": m}))),
        ("rules element a string", base(json!({"rules": [m]}))),
        (
            "rule type",
            base(json!({"rules": [{"type": m, "field": "a"}]})),
        ),
        (
            "rule field path",
            base(json!({"rules": [{"type": "unique", "field": format!("{m}[0]")}]})),
        ),
        (
            "rule field wrong type",
            base(json!({"rules": [{"type": "unique", "field": [m]}]})),
        ),
        (
            "rule other_field path",
            base(
                json!({"rules": [{"type": "gte", "field": "a", "other_field": format!("{m}..x")}]}),
            ),
        ),
        (
            "rule unknown key",
            base(json!({"rules": [{"type": "unique", "field": "a", m: 1}]})),
        ),
        (
            "rule foreign key",
            base(json!({"rules": [{"type": "unique", "field": "a", "values": [m]}]})),
        ),
        (
            "rule value",
            base(json!({"rules": [{"type": "gte", "field": "a", "value": m}]})),
        ),
        (
            "rule values",
            base(json!({"rules": [{"type": "exists_in", "field": "a", "values": m}]})),
        ),
        (
            "rule tolerance",
            base(
                json!({"rules": [{"type": "sum_equals", "field": "a", "equals": 1, "tolerance": m}]}),
            ),
        ),
        (
            "rule if_present",
            base(json!({"rules": [{"type": "unique", "field": "a", "if_present": m}]})),
        ),
        ("bounds a string", base(json!({"bounds": m}))),
        (
            "bound key bad path",
            base(json!({"bounds": {format!("{m}[1]"): {"min": 0}}})),
        ),
        ("bound key wrong spec", base(json!({"bounds": {m: m}}))),
        ("bound key empty spec", base(json!({"bounds": {m: {}}}))),
        (
            "bound unknown key",
            base(json!({"bounds": {"a": {"min": 0, m: 1}}})),
        ),
        ("bound min", base(json!({"bounds": {m: {"min": m}}}))),
        (
            "bound min > max",
            base(json!({"bounds": {m: {"min": 2, "max": 1}}})),
        ),
        ("missing fields", json!({m: m})),
    ];
    for (what, body) in bodies {
        let p = problems_of(body);
        assert_no_marker(&p, what);
    }

    let raw: Vec<(&str, String)> = vec![
        (
            "syntax error after the marker",
            format!(r#"{{"task_id": "{m}" "x"}}"#),
        ),
        ("syntax error in a marker key", format!(r#"{{"{m}" 1}}"#)),
        ("truncated marker", format!(r#"{{"task_id": "{m}"#)),
        (
            "duplicate marker key",
            format!(
                r#"{{"task_id": "a", "expected_schema": {{}}, "submitted_output": {{"{m}": 1, "{m}": 2}}}}"#
            ),
        ),
        (
            "duplicate top-level marker key",
            format!(r#"{{"{m}": 1, "{m}": 2}}"#),
        ),
        (
            "unsafe integer",
            format!(
                r#"{{"task_id": "{m}", "expected_schema": {{}}, "submitted_output": {{"{m}": 9007199254740993}}}}"#
            ),
        ),
        (
            "non-finite",
            format!(r#"{{"task_id": "{m}", "{m}": 1e999}}"#),
        ),
        ("bad escape", format!(r#"{{"task_id": "{m}\q"}}"#)),
        ("deep", format!(r#"{{"{m}": {}}}"#, "[".repeat(200))),
        ("non-object", format!(r#"["{m}"]"#)),
    ];
    for (what, body) in raw {
        let p = problems(body.as_bytes());
        assert_no_marker(&p, what);
    }

    let schemas: Vec<(&str, Value)> = vec![
        ("invalid type", json!({"type": m})),
        (
            "invalid keyword under a marker property",
            json!({"properties": {m: {"type": 12}}}),
        ),
        (
            "marker property not a schema",
            json!({"properties": {m: 12}}),
        ),
        ("marker in enum of a bad schema", json!({"enum": m})),
        (
            "unknown draft",
            json!({"$schema": format!("http://{m}.example/schema")}),
        ),
        (
            "remote ref",
            json!({"$ref": format!("http://{m}.example/s.json")}),
        ),
        ("file ref", json!({"$ref": format!("file:///{m}")})),
        ("local ref", json!({"$ref": format!("#/$defs/{m}")})),
        ("anchor ref", json!({"$ref": format!("#{m}")})),
        ("bad pattern", json!({"pattern": format!("{m}(?=x)")})),
        (
            "bad pattern property",
            json!({"patternProperties": {format!("{m}(?=x)"): {}}}),
        ),
        ("bad minimum", json!({"minimum": m})),
        ("bad required", json!({"required": [m, 1]})),
    ];
    for (what, schema) in schemas {
        let p = schema_problems(schema);
        assert_eq!(p[0].field, "expected_schema", "{what}");
        assert_no_marker(&p, what);
    }
}
