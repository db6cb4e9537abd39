//! Security bounds of the pipeline: catastrophic-backtracking patterns are decided in linear
//! time, `$ref` cycles terminate, and deep nesting is refused with a clear problem instead of
//! exhausting the stack.

use serde_json::{Value, json};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use verifier_engine::{Engine, EngineConfig, SigningIdentity, VerifyRequest};

fn signer() -> SigningIdentity {
    SigningIdentity::from_seed("t", &[1; 32]).expect("a 32-byte seed is a valid key")
}

/// Verify on `engine`; the parsed body and the wall time of `Engine::verify` alone.
fn timed_verify(engine: &Engine, schema: Value, output: Value) -> (Value, Duration) {
    let req = VerifyRequest::from_value(
        json!({"task_id": "sec", "expected_schema": schema, "submitted_output": output}),
    )
    .expect("the request is valid");
    let key = signer();
    let started = Instant::now();
    let out = engine
        .verify(&req, &key, OffsetDateTime::now_utc())
        .expect("the schema compiles and verification runs");
    let elapsed = started.elapsed();
    (
        serde_json::from_slice(&out.body).expect("the body is JSON"),
        elapsed,
    )
}

/// Run `f` on its own thread and fail (instead of hanging the suite) if it takes over `limit`.
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: did not finish within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the worker panicked"),
    }
}

// ---------------------------------------------------------------- ReDoS

#[test]
fn catastrophic_backtracking_pattern_is_decided_in_well_under_100ms() {
    let schema = json!({"type": "string", "pattern": "^(a+)+$"});
    let evil = "a".repeat(30) + "b";
    // Cold: includes compiling the schema.
    let engine = Engine::new(EngineConfig::default());
    let (body, cold) = timed_verify(&engine, schema.clone(), json!(evil));
    assert_eq!(body["result"], "fail", "{body:#}");
    assert_eq!(
        body["summary"]["blocking_checks"],
        json!(["schema:pattern"])
    );
    assert!(
        cold < Duration::from_millis(100),
        "cold verify took {cold:?}"
    );
    // Warm: the compiled schema comes from the cache.
    let (body, warm) = timed_verify(&engine, schema.clone(), json!(evil));
    assert_eq!(body["result"], "fail");
    assert!(
        warm < Duration::from_millis(100),
        "warm verify took {warm:?}"
    );
    // The matching input still passes.
    let (body, _) = timed_verify(&engine, schema, json!("a".repeat(30)));
    assert_eq!(body["result"], "pass");
}

#[test]
fn backtracking_patterns_stay_linear_on_long_inputs() {
    let engine = Engine::new(EngineConfig::default());
    let long = "a".repeat(100_000) + "!";
    for pattern in [
        "^(a+)+$",
        "^(a|a)*$",
        "^(a|aa)+$",
        "^([a-z]+)*[0-9]$",
        "(x+x+)+y",
    ] {
        let (body, elapsed) = timed_verify(&engine, json!({"pattern": pattern}), json!(long));
        assert_eq!(body["result"], "fail", "{pattern}");
        assert!(
            elapsed < Duration::from_millis(500),
            "{pattern} on 100k chars took {elapsed:?}"
        );
    }
}

#[test]
fn backtracking_patterns_in_pattern_properties_and_property_names() {
    let engine = Engine::new(EngineConfig::default());
    let key = "a".repeat(40) + "b";
    let (body, elapsed) = timed_verify(
        &engine,
        json!({"type": "object", "propertyNames": {"pattern": "^(a+)+$"}}),
        json!({key.clone(): 1}),
    );
    assert_eq!(body["result"], "fail");
    assert!(
        elapsed < Duration::from_millis(100),
        "propertyNames took {elapsed:?}"
    );
    let (body, elapsed) = timed_verify(
        &engine,
        json!({"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}}, "additionalProperties": false}),
        json!({key: 1}),
    );
    assert_eq!(body["result"], "fail");
    assert!(
        elapsed < Duration::from_millis(100),
        "patternProperties took {elapsed:?}"
    );
}

// ---------------------------------------------------------------- $ref cycles

#[test]
fn ref_loops_terminate() {
    let schemas = [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"$ref": "#/$defs/a"}},
               "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#",
               "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
               "$ref": "#/definitions/a"}),
        json!({"$dynamicAnchor": "n", "$dynamicRef": "#n"}),
        json!({"anyOf": [{"$ref": "#"}], "allOf": [{"$ref": "#"}]}),
        json!({"$anchor": "me", "not": {"not": {"$ref": "#me"}}}),
    ];
    for schema in schemas {
        for output in [json!(1), json!({"x": {"x": 1}}), json!([[[]]])] {
            let what = format!("{schema} with {output}");
            let (s, o) = (schema.clone(), output.clone());
            let body = within(Duration::from_secs(10), &what, move || {
                let engine = Engine::new(EngineConfig::default());
                timed_verify(&engine, s, o).0
            });
            let result = body["result"].as_str().expect("a verdict");
            assert!(result == "pass" || result == "fail", "{what}: {result}");
        }
    }
}

#[test]
fn recursive_schema_over_a_deep_instance_is_fine() {
    let schema = json!({"type": "array", "items": {"$ref": "#"}});
    let ok = "[".repeat(120) + &"]".repeat(120);
    let bad = "[".repeat(120) + "1" + &"]".repeat(120);
    for (text, expected) in [(ok, "pass"), (bad, "fail")] {
        let body = format!(
            r#"{{"task_id": "deep", "expected_schema": {schema}, "submitted_output": {text}}}"#
        );
        let req =
            VerifyRequest::from_body(body.as_bytes()).expect("120 levels are within the limit");
        let engine = Engine::new(EngineConfig::default());
        let out = engine
            .verify(&req, &signer(), OffsetDateTime::now_utc())
            .expect("verifies");
        let parsed: Value = serde_json::from_slice(&out.body).expect("json");
        assert_eq!(parsed["result"], expected);
        if expected == "fail" {
            assert_eq!(parsed["errors_total"], 1);
            let path = parsed["errors_detail"][0]["path"].as_str().expect("path");
            assert_eq!(path, format!("${}", "[0]".repeat(120)));
        }
    }
}

// ---------------------------------------------------------------- deep nesting

#[test]
fn deep_nesting_is_refused_clearly_without_exhausting_the_stack() {
    for depth in [129usize, 1_000, 10_000, 1_000_000] {
        for (open, close) in [("[", "]"), (r#"{"k":"#, "}")] {
            let nested = open.repeat(depth) + "0" + &close.repeat(depth);
            for (body, field) in [
                (
                    format!(
                        r#"{{"task_id": "d", "expected_schema": {{}}, "submitted_output": {nested}}}"#
                    ),
                    "submitted_output",
                ),
                (
                    format!(
                        r#"{{"task_id": "d", "submitted_output": 1, "expected_schema": {nested}}}"#
                    ),
                    "expected_schema",
                ),
                (nested.clone(), "body"),
            ] {
                let problems = match VerifyRequest::from_body(body.as_bytes()) {
                    Err(e) => e.problems,
                    Ok(_) => panic!("{depth} levels of {open} accepted"),
                };
                assert_eq!(problems.len(), 1, "{problems:?}");
                assert_eq!(problems[0].field, field, "depth {depth} {open}");
                assert_eq!(
                    problems[0].problem,
                    "arrays and objects are nested deeper than 126 levels"
                );
            }
        }
    }
}

#[test]
fn deep_nesting_on_a_small_stack_thread() {
    // The strict parser stops at the limit, so even a 256 KiB stack never overflows.
    let nested = "[".repeat(50_000) + &"]".repeat(50_000);
    let body =
        format!(r#"{{"task_id": "d", "expected_schema": {{}}, "submitted_output": {nested}}}"#);
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            VerifyRequest::from_body(body.as_bytes())
                .map(|_| ())
                .map_err(|e| e.problems)
        })
        .expect("spawn");
    let problems = handle
        .join()
        .expect("no stack overflow or panic")
        .expect_err("refused");
    assert_eq!(
        problems[0].problem,
        "arrays and objects are nested deeper than 126 levels"
    );
}

#[test]
fn large_flat_output_is_verified_quickly() {
    let items: Vec<Value> = (0..20_000)
        .map(|i| json!({"id": i, "price": 1.5}))
        .collect();
    let body = serde_json::to_vec(&json!({
        "task_id": "flat",
        "expected_schema": {"type": "object", "properties": {"items": {"type": "array", "items": {
            "type": "object", "required": ["id", "price"],
            "properties": {"id": {"type": "integer"}, "price": {"type": "number", "minimum": 0}}}}}},
        "submitted_output": {"items": items, "total": 30000.0},
        "rules": [{"type": "sum_equals", "field": "items[].price", "equals_field": "total"},
                  {"type": "unique", "field": "items[].id"}],
        "bounds": {"items[].price": {"min": 0, "max": 10}},
        "enforce_rules": true,
        "strict_content_check": true
    }))
    .expect("serializable");
    let out = within(Duration::from_secs(20), "20k items", move || {
        let req = VerifyRequest::from_body(&body).expect("valid");
        let engine = Engine::new(EngineConfig::default());
        engine
            .verify(&req, &signer(), OffsetDateTime::now_utc())
            .expect("verifies")
    });
    assert!(
        out.passed,
        "{}",
        String::from_utf8_lossy(&out.body[..out.body.len().min(2000)])
    );
}

/// A 2 KB schema whose repeated `$ref`s expand to 2^22 subschemas is refused up front with a
/// clear 422-class problem instead of taking minutes to validate.
#[test]
fn exponentially_expanding_schemas_are_refused_quickly() {
    let n = 22;
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{n}"), json!({"type": "integer", "minimum": 5}));
    let schema = json!({"$ref": "#/$defs/d0", "$defs": defs});
    let req = verifier_engine::VerifyRequest::from_value(
        json!({"task_id": "t", "expected_schema": schema, "submitted_output": 1}),
    )
    .expect("valid request");
    let engine = verifier_engine::Engine::new(verifier_engine::EngineConfig::default());
    let key = verifier_engine::SigningIdentity::from_seed("k", &[1; 32]).expect("key");
    let started = std::time::Instant::now();
    let err = engine
        .verify(&req, &key, time::OffsetDateTime::now_utc())
        .expect_err("refused");
    assert!(
        started.elapsed() < std::time::Duration::from_millis(500),
        "took {:?}",
        started.elapsed()
    );
    match err {
        verifier_engine::EngineError::Invalid(e) => {
            assert_eq!(e.problems[0].field, "expected_schema");
            assert!(
                e.problems[0].problem.contains("too complex"),
                "{}",
                e.problems[0].problem
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}
