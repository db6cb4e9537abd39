//! Behaviour of rules, bounds, content checks, caps and the response shape, through
//! `VerifyRequest::from_value` + `Engine::verify`, reading the signed response body.

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use verifier_engine::receipt::attest::verify_receipt;
use verifier_engine::{Engine, EngineConfig, SigningIdentity, VerifyRequest};

fn signer() -> SigningIdentity {
    SigningIdentity::from_seed("t", &[1; 32]).expect("a 32-byte seed is a valid key")
}

/// Verify a request object with a fresh engine; the parsed response body.
fn verify(request: Value) -> Value {
    let engine = Engine::new(EngineConfig::default());
    verify_with(&engine, request)
}

fn verify_with(engine: &Engine, request: Value) -> Value {
    let req = VerifyRequest::from_value(request).expect("the request is valid");
    let key = signer();
    let out = engine
        .verify(&req, &key, OffsetDateTime::now_utc())
        .expect("verification runs");
    let body: Value = serde_json::from_slice(&out.body).expect("the body is JSON");
    assert_eq!(
        out.passed,
        body["result"] == "pass",
        "Verification::passed matches the body"
    );
    assert_eq!(body["verification_id"], out.verification_id.as_str());
    assert_eq!(body["verified_at"], out.verified_at.as_str());
    verify_receipt(&body, &[key.public_entry()]).expect("every receipt verifies under its key");
    body
}

/// A request with an object schema, the given output and extra top-level fields.
fn request(output: Value, extra: Value) -> Value {
    let mut req = json!({
        "task_id": "rules-test",
        "expected_schema": {"type": "object"},
        "submitted_output": output,
    });
    let map = req.as_object_mut().expect("object");
    for (k, v) in extra.as_object().expect("extra fields are an object") {
        map.insert(k.clone(), v.clone());
    }
    req
}

/// A request with one enforced rule.
fn with_rule(output: Value, rule: Value) -> Value {
    request(output, json!({"rules": [rule], "enforce_rules": true}))
}

fn assert_pass(body: &Value, what: &str) {
    assert_eq!(
        body["result"], "pass",
        "{what}: expected pass, body: {body:#}"
    );
    assert_eq!(body["summary"]["result"], "pass", "{what}");
    assert_eq!(body["summary"]["blocking_checks"], json!([]), "{what}");
    assert_eq!(body["errors"], json!([]), "{what}");
}

fn assert_fail(body: &Value, check: &str, what: &str) {
    assert_eq!(
        body["result"], "fail",
        "{what}: expected fail, body: {body:#}"
    );
    let blocking = body["summary"]["blocking_checks"]
        .as_array()
        .expect("blocking_checks");
    assert!(
        blocking.iter().any(|c| c == check),
        "{what}: {check} not in {blocking:?}"
    );
    let errors = body["errors_detail"].as_array().expect("errors_detail");
    assert!(
        errors.iter().any(|e| e["check"] == check),
        "{what}: no error of {check}"
    );
}

fn invoice(total: Value) -> Value {
    json!({"items": [{"id": "a", "price": 10.5}, {"id": "b", "price": 4.5}], "total": total})
}

// ---------------------------------------------------------------- sum_equals

#[test]
fn sum_equals_with_equals_field() {
    let rule = json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"});
    assert_pass(
        &verify(with_rule(invoice(json!(15.0)), rule.clone())),
        "sum matches",
    );
    let body = verify(with_rule(invoice(json!(16)), rule));
    assert_fail(&body, "consistency:sum_equals", "sum differs");
    assert_eq!(
        body["errors"][0],
        "enforce_rules: consistency:sum_equals at 'items[].price': values sum to 15.0, expected total (16)"
    );
    assert_eq!(body["errors_detail"][0]["path"], "$.items[].price");
    assert_eq!(
        body["errors_detail"][0]["expected"],
        "a sum equal to total (16)"
    );
    assert_eq!(body["errors_detail"][0]["found"], "sum 15.0");
    assert_eq!(body["hints"][0]["source"], "integrity");
}

#[test]
fn sum_equals_with_constant() {
    let rule =
        |equals: Value| json!({"type": "sum_equals", "field": "items[].price", "equals": equals});
    assert_pass(
        &verify(with_rule(invoice(json!(0)), rule(json!(15)))),
        "constant matches",
    );
    let body = verify(with_rule(invoice(json!(0)), rule(json!(14.5))));
    assert_fail(&body, "consistency:sum_equals", "constant differs");
    assert_eq!(body["errors_detail"][0]["expected"], "a sum equal to 14.5");
}

#[test]
fn sum_equals_integer_terms_print_as_integers() {
    let output = json!({"q": [1, 2, 3]});
    let body = verify(with_rule(
        output,
        json!({"type": "sum_equals", "field": "q[]", "equals": 7}),
    ));
    assert_fail(&body, "consistency:sum_equals", "6 != 7");
    assert_eq!(body["errors_detail"][0]["found"], "sum 6");
}

#[test]
fn sum_equals_with_a_non_number_term_fails() {
    let output = json!({"items": [{"price": 1}, {"price": "2"}], "total": 3});
    let rule = json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"});
    let body = verify(with_rule(output, rule));
    assert_fail(&body, "consistency:sum_equals", "a string term");
    assert_eq!(
        body["flags"][0]["detail"],
        "the value at $.items[1].price is not a number"
    );
}

// ---------------------------------------------------------------- tolerance

#[test]
fn tolerance_within_and_outside() {
    let output =
        json!({"items": [{"price": 3.333}, {"price": 3.333}, {"price": 3.333}], "total": 10});
    let rule = |tolerance: f64| json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total", "tolerance": tolerance});
    // |9.999 − 10| = 0.001
    assert_pass(
        &verify(with_rule(output.clone(), rule(0.01))),
        "within tolerance",
    );
    assert_pass(
        &verify(with_rule(output.clone(), rule(0.0011))),
        "just within tolerance",
    );
    assert_fail(
        &verify(with_rule(output.clone(), rule(0.0009))),
        "consistency:sum_equals",
        "just outside",
    );
    assert_fail(
        &verify(with_rule(output, rule(0.0))),
        "consistency:sum_equals",
        "zero tolerance",
    );
}

#[test]
fn default_tolerance_absorbs_float_rounding_only() {
    let output = json!({"p": [0.1, 0.2], "total": 0.3});
    let rule = json!({"type": "sum_equals", "field": "p[]", "equals_field": "total"});
    assert_pass(
        &verify(with_rule(output, rule)),
        "0.1 + 0.2 == 0.3 within 1e-9",
    );
    let output = json!({"p": [0.1, 0.2], "total": 0.30001});
    let rule = json!({"type": "sum_equals", "field": "p[]", "equals_field": "total"});
    assert_fail(
        &verify(with_rule(output, rule)),
        "consistency:sum_equals",
        "1e-5 off",
    );
}

// ---------------------------------------------------------------- gte / lte

#[test]
fn gte_with_value_and_other_field() {
    let output = json!({"paid": 20, "total": 15, "items": [{"qty": 1}, {"qty": 0}]});
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "gte", "field": "paid", "value": 20}),
        )),
        "20 >= 20",
    );
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "gte", "field": "paid", "other_field": "total"}),
        )),
        "paid >= total",
    );
    let body = verify(with_rule(
        output.clone(),
        json!({"type": "gte", "field": "total", "other_field": "paid"}),
    ));
    assert_fail(&body, "consistency:gte", "total < paid");
    assert_eq!(body["errors_detail"][0]["expected"], "values >= paid (20)");
    assert_eq!(body["errors_detail"][0]["found"], "15 at $.total");

    let body = verify(with_rule(
        output,
        json!({"type": "gte", "field": "items[].qty", "value": 1}),
    ));
    assert_fail(&body, "consistency:gte", "one qty is 0");
    assert_eq!(body["errors_detail"][0]["found"], "0 at $.items[1].qty");
}

#[test]
fn lte_with_value_and_other_field() {
    let output =
        json!({"discount": 5, "total": 15, "items": [{"qty": 1}, {"qty": 9}, {"qty": 12}]});
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "lte", "field": "discount", "value": 5}),
        )),
        "5 <= 5",
    );
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "lte", "field": "discount", "other_field": "total"}),
        )),
        "discount <= total",
    );
    assert_fail(
        &verify(with_rule(
            output.clone(),
            json!({"type": "lte", "field": "total", "other_field": "discount"}),
        )),
        "consistency:lte",
        "total > discount",
    );
    let body = verify(with_rule(
        output,
        json!({"type": "lte", "field": "items[].qty", "value": 8}),
    ));
    assert_fail(&body, "consistency:lte", "two qty above 8");
    assert_eq!(
        body["flags"][0]["detail"],
        "value at $.items[1].qty is 9, expected <= 8 (2 of 3 values break the rule)"
    );
}

#[test]
fn other_field_naming_several_values_fails() {
    let output = json!({"paid": 20, "items": [{"p": 1}, {"p": 2}]});
    let body = verify(with_rule(
        output,
        json!({"type": "gte", "field": "paid", "other_field": "items[].p"}),
    ));
    assert_fail(&body, "consistency:gte", "ambiguous operand");
    assert_eq!(body["errors_detail"][0]["found"], "2 values");
}

// ---------------------------------------------------------------- exists_in

#[test]
fn exists_in_with_values() {
    let output = json!({"status": "paid", "lines": [{"cur": "USD"}, {"cur": "EUR"}]});
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "exists_in", "field": "status", "values": ["paid", "open"]}),
        )),
        "status allowed",
    );
    assert_pass(
        &verify(with_rule(
            output.clone(),
            json!({"type": "exists_in", "field": "lines[].cur", "values": ["USD", "EUR"]}),
        )),
        "every currency allowed",
    );
    let body = verify(with_rule(
        output,
        json!({"type": "exists_in", "field": "lines[].cur", "values": ["USD"]}),
    ));
    assert_fail(&body, "consistency:exists_in", "EUR not allowed");
    assert_eq!(
        body["errors_detail"][0]["found"],
        "a string of 3 characters at $.lines[1].cur"
    );
}

#[test]
fn exists_in_with_in_field() {
    let output = json!({
        "skus": [{"sku": "A"}, {"sku": "B"}],
        "lines": [{"sku": "A"}, {"sku": "B"}, {"sku": "A"}],
    });
    let rule = json!({"type": "exists_in", "field": "lines[].sku", "in_field": "skus[].sku"});
    assert_pass(
        &verify(with_rule(output.clone(), rule.clone())),
        "every line names a known sku",
    );
    let mut bad = output;
    bad["lines"][2]["sku"] = json!("Z");
    let body = verify(with_rule(bad, rule));
    assert_fail(&body, "consistency:exists_in", "unknown sku");
    assert_eq!(
        body["errors_detail"][0]["expected"],
        "values among the values at $.skus[].sku"
    );
}

#[test]
fn exists_in_compares_numbers_by_value() {
    let output = json!({"code": 1.0});
    let rule = json!({"type": "exists_in", "field": "code", "values": [1, 2]});
    assert_pass(&verify(with_rule(output, rule)), "1.0 is among [1, 2]");
}

// ---------------------------------------------------------------- unique

#[test]
fn unique_rule() {
    let rule = json!({"type": "unique", "field": "items[].id"});
    assert_pass(
        &verify(with_rule(invoice(json!(15)), rule.clone())),
        "distinct ids",
    );
    let output = json!({"items": [{"id": "a"}, {"id": "b"}, {"id": "a"}, {"id": "b"}]});
    let body = verify(with_rule(output, rule));
    assert_fail(&body, "consistency:unique", "repeated ids");
    assert_eq!(
        body["flags"][0]["detail"],
        "the value at $.items[2].id repeats the value at $.items[0].id (2 repeats in all)"
    );
}

// ---------------------------------------------------------------- if_present

#[test]
fn if_present_false_fails_on_a_missing_field_and_true_skips_it() {
    let output = json!({"total": 10});
    for rule in [
        json!({"type": "gte", "field": "discount", "value": 0}),
        json!({"type": "lte", "field": "discount", "other_field": "total"}),
        json!({"type": "exists_in", "field": "discount", "values": [1]}),
        json!({"type": "unique", "field": "lines[].id"}),
        json!({"type": "sum_equals", "field": "discount", "equals": 0}),
    ] {
        let check = format!("consistency:{}", rule["type"].as_str().expect("type"));
        let body = verify(with_rule(output.clone(), rule.clone()));
        assert_fail(&body, &check, &format!("{rule} without if_present"));
        assert_eq!(body["errors_detail"][0]["found"], "missing", "{rule}");

        let mut explicit_false = rule.clone();
        explicit_false["if_present"] = json!(false);
        assert_fail(
            &verify(with_rule(output.clone(), explicit_false)),
            &check,
            &format!("{rule} if_present false"),
        );

        let mut lenient = rule.clone();
        lenient["if_present"] = json!(true);
        assert_pass(
            &verify(with_rule(output.clone(), lenient)),
            &format!("{rule} if_present true"),
        );
    }
}

#[test]
fn if_present_true_still_checks_a_present_field() {
    let output = json!({"discount": -1});
    let rule = json!({"type": "gte", "field": "discount", "value": 0, "if_present": true});
    assert_fail(
        &verify(with_rule(output, rule)),
        "consistency:gte",
        "present and below 0",
    );
}

// ---------------------------------------------------------------- enforce_rules

#[test]
fn enforce_rules_on_fails_with_errors_and_error_flags() {
    let rule = json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"});
    let body = verify(request(
        invoice(json!(99)),
        json!({"rules": [rule], "enforce_rules": true}),
    ));
    assert_fail(&body, "consistency:sum_equals", "enforced");
    assert_eq!(body["enforce_rules"], true);
    assert_eq!(body["errors"].as_array().expect("errors").len(), 1);
    assert_eq!(body["errors_total"], 1);
    assert_eq!(body["flags"][0]["severity"], "error");
    assert_eq!(body["next_actions"][0]["action"], "repair_and_reverify");
    // items is an array, two prices present and numbers, total present and a number: 7 passed;
    // the sum: failed.
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.875, "passed": 7, "total": 8})
    );
}

#[test]
fn enforce_rules_off_passes_with_a_warning_flag() {
    let rule = json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"});
    for extra in [
        json!({"rules": [rule.clone()]}),
        json!({"rules": [rule], "enforce_rules": false}),
    ] {
        let body = verify(request(invoice(json!(99)), extra));
        assert_pass(&body, "not enforced");
        assert_eq!(body["enforce_rules"], false);
        assert_eq!(body["errors_total"], 0);
        assert_eq!(body["errors_detail"], json!([]));
        let flags = body["flags"].as_array().expect("flags");
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0]["severity"], "warning");
        assert_eq!(flags[0]["check"], "consistency:sum_equals");
        assert!(
            !flags[0]["detail"]
                .as_str()
                .expect("detail")
                .contains("enforce_rules"),
            "the warning is not labelled as enforced"
        );
        assert_eq!(body["hints"].as_array().expect("hints").len(), 1);
        assert_eq!(
            body["integrity_checks"],
            json!({"ratio": 0.875, "passed": 7, "total": 8}),
            "a failed rule lowers integrity_checks even when not enforced"
        );
        assert_eq!(body["next_actions"][0]["action"], "attach_receipt");
    }
}

// ---------------------------------------------------------------- bounds

#[test]
fn bounds_min_and_max() {
    let output = json!({"items": [{"price": 10}, {"price": 150}, {"price": -1}], "total": 50});
    let bounds = |b: Value| request(output.clone(), json!({"bounds": b}));
    assert_pass(
        &verify(bounds(json!({"total": {"min": 0, "max": 100}}))),
        "50 in [0, 100]",
    );
    assert_pass(&verify(bounds(json!({"total": {"min": 50}}))), "50 >= 50");
    assert_pass(&verify(bounds(json!({"total": {"max": 50}}))), "50 <= 50");
    let body = verify(bounds(json!({"total": {"max": 49.5}})));
    assert_fail(&body, "bounds:range", "50 > 49.5");
    assert_eq!(body["errors_detail"][0]["expected"], "values <= 49.5");

    let body = verify(bounds(json!({"items[].price": {"min": 0, "max": 100}})));
    assert_fail(&body, "bounds:range", "two prices out of range");
    assert_eq!(body["errors_detail"][0]["path"], "$.items[].price");
    assert_eq!(
        body["flags"][0]["detail"],
        "value at $.items[1].price is 150, expected between 0 and 100 (2 values out of range)"
    );
    assert_eq!(body["flags"][0]["severity"], "error");
    // items is an array, three prices present and numbers, three comparisons of which two fail.
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.8, "passed": 8, "total": 10})
    );
}

#[test]
fn bounds_are_blocking_even_without_enforce_rules() {
    let body = verify(request(
        json!({"total": 500}),
        json!({"bounds": {"total": {"max": 100}}, "enforce_rules": false}),
    ));
    assert_fail(&body, "bounds:range", "bounds always block");
}

#[test]
fn bounds_missing_field_and_if_present() {
    let output = json!({"total": 50});
    let body = verify(request(
        output.clone(),
        json!({"bounds": {"discount": {"min": 0}}}),
    ));
    assert_fail(&body, "bounds:range", "missing, if_present default false");
    assert_eq!(body["errors_detail"][0]["found"], "missing");
    let body = verify(request(
        output.clone(),
        json!({"bounds": {"discount": {"min": 0, "if_present": false}}}),
    ));
    assert_fail(&body, "bounds:range", "missing, if_present false");
    let body = verify(request(
        output,
        json!({"bounds": {"discount": {"min": 0, "if_present": true}}}),
    ));
    assert_pass(&body, "missing, if_present true");
    // An absent value that if_present allows is not counted at all.
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 1.0, "passed": 0, "total": 0})
    );
}

#[test]
fn bound_on_a_non_number_fails() {
    let body = verify(request(
        json!({"total": "50"}),
        json!({"bounds": {"total": {"min": 0}}}),
    ));
    assert_fail(&body, "bounds:range", "a string is not in range");
}

#[test]
fn integrity_counts_what_each_bound_and_rule_establishes() {
    let output = invoice(json!(15));
    let body = verify(request(
        output,
        json!({
            "bounds": {"total": {"min": 0}, "items[].price": {"max": 10}},
            "rules": [
                {"type": "sum_equals", "field": "items[].price", "equals_field": "total"},
                {"type": "unique", "field": "items[].id"},
                {"type": "gte", "field": "total", "value": 100},
            ],
            "enforce_rules": true,
        }),
    ));
    assert_eq!(body["result"], "fail");
    // total ≥ 0: present, number, in range (3/3); items[].price ≤ 10: array, two present, two
    // numbers, two comparisons, 10.5 fails (6/7); the sum: array, two present, two numbers,
    // total present and a number, the sum (8/8); unique ids: array, two present, two distinct
    // (5/5); total ≥ 100: present, number, comparison fails (2/3).
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.923077, "passed": 24, "total": 26})
    );
    assert_eq!(
        body["summary"]["blocking_checks"],
        json!(["bounds:range", "consistency:gte"]),
        "sorted and deduplicated"
    );
    let schema = &body["schema_compliance"];
    let (sp, st) = (
        schema["passed"].as_u64().expect("n"),
        schema["total"].as_u64().expect("n"),
    );
    assert_eq!(body["overall"]["passed"].as_u64().expect("n"), sp + 24);
    assert_eq!(body["overall"]["total"].as_u64().expect("n"), st + 26);
}

#[test]
fn the_hosted_invoice_example_counts_as_the_hosted_service_does() {
    let receipts: Value =
        serde_json::from_str(include_str!("../../tests/data/hosted-receipts.json"))
            .expect("receipts");
    let hosted = &receipts["receipts"][0];
    let request: Value =
        serde_json::from_str(hosted["request_body_json"].as_str().expect("body")).expect("request");
    let answer: Value =
        serde_json::from_str(hosted["response_body_json"].as_str().expect("body")).expect("answer");
    let body = verify(request);
    for key in ["integrity_checks", "schema_compliance", "overall"] {
        assert_eq!(body[key], answer[key], "{key}");
    }
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.875, "passed": 7, "total": 8})
    );
}

#[test]
fn a_rule_or_bound_with_a_finding_always_has_a_failed_check_and_one_without_has_none() {
    let outputs = [
        invoice(json!(15)),
        invoice(json!(99)),
        json!({"items": [{"id": "a", "price": "x"}, {"id": "a"}], "total": 1}),
        json!({"items": [], "total": 0}),
        json!({"items": 3}),
        json!({}),
    ];
    let rules = [
        json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"}),
        json!({"type": "sum_equals", "field": "items[].price", "equals": 15}),
        json!({"type": "gte", "field": "items[].price", "value": 5}),
        json!({"type": "lte", "field": "items[].price", "other_field": "total"}),
        json!({"type": "unique", "field": "items[].id"}),
        json!({"type": "exists_in", "field": "items[].id", "values": ["a", "b"]}),
        json!({"type": "gte", "field": "total", "value": 0, "if_present": true}),
    ];
    for output in &outputs {
        for rule in &rules {
            let body = verify(with_rule(output.clone(), rule.clone()));
            let found = body["flags_total"].as_u64().expect("flags") > 0;
            let i = &body["integrity_checks"];
            let failed = i["total"].as_u64().expect("n") - i["passed"].as_u64().expect("n");
            assert_eq!(found, failed > 0, "{rule} on {output}: {i}");
        }
        let body = verify(request(
            output.clone(),
            json!({"bounds": {"items[].price": {"min": 0, "max": 12}}}),
        ));
        let i = &body["integrity_checks"];
        let failed = i["total"].as_u64().expect("n") - i["passed"].as_u64().expect("n");
        assert_eq!(
            body["flags_total"].as_u64().expect("n") > 0,
            failed > 0,
            "bound on {output}: {i}"
        );
    }
}

// ---------------------------------------------------------------- strict_content_check

fn strict(schema: Value, output: Value) -> Value {
    verify(json!({
        "task_id": "strict",
        "expected_schema": schema,
        "submitted_output": output,
        "strict_content_check": true,
    }))
}

fn content_checks(body: &Value) -> Vec<String> {
    body["errors_detail"]
        .as_array()
        .expect("errors_detail")
        .iter()
        .map(|e| e["check"].as_str().expect("check").to_owned())
        .filter(|c| c.starts_with("content:"))
        .collect()
}

#[test]
fn strict_content_placeholder_fails() {
    let body = strict(
        json!({"type": "object"}),
        json!({"name": "Acme", "notes": "  todo "}),
    );
    assert_fail(&body, "content:no_placeholders", "TODO string");
    assert_eq!(content_checks(&body), ["content:no_placeholders"]);
    assert_eq!(body["errors_detail"][0]["path"], "$.notes");
    assert_eq!(body["strict_content_check"], true);
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.666667, "passed": 2, "total": 3})
    );

    let body = strict(json!({"type": "object"}), json!({"a": ["ok", "TODO"]}));
    assert_fail(&body, "content:no_placeholders", "TODO in an array");
    assert_eq!(body["errors_detail"][0]["path"], "$.a[1]");
}

#[test]
fn strict_content_blank_required_string_fails() {
    let schema = json!({"type": "object", "required": ["name", "note"], "properties": {"name": {"type": "string"}}});
    let body = strict(schema.clone(), json!({"name": "   ", "note": "fine"}));
    assert_fail(&body, "content:no_empty_required_strings", "blank required");
    assert_eq!(content_checks(&body), ["content:no_empty_required_strings"]);
    assert_eq!(body["errors_detail"][0]["path"], "$.name");
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.666667, "passed": 2, "total": 3})
    );
    // A blank string that is not required is fine.
    assert_pass(
        &strict(schema, json!({"name": "x", "note": "n", "extra": ""})),
        "blank optional",
    );
}

#[test]
fn strict_content_empty_output_fails() {
    for empty in [json!({}), json!([]), json!(""), json!("   "), Value::Null] {
        let body = strict(json!(true), empty.clone());
        assert_fail(&body, "content:not_empty", &format!("{empty} is empty"));
        assert_eq!(content_checks(&body), ["content:not_empty"], "{empty}");
        assert_eq!(
            body["integrity_checks"],
            json!({"ratio": 0.666667, "passed": 2, "total": 3})
        );
    }
}

#[test]
fn strict_content_two_failures_count_twice() {
    let schema = json!({"type": "object", "required": ["a"]});
    let body = strict(schema, json!({"a": "", "b": "TBD"}));
    assert_fail(&body, "content:no_empty_required_strings", "blank required");
    assert_fail(&body, "content:no_placeholders", "placeholder");
    assert_eq!(
        content_checks(&body),
        [
            "content:no_empty_required_strings",
            "content:no_placeholders"
        ],
        "sorted by path: $.a before $.b"
    );
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 0.333333, "passed": 1, "total": 3})
    );
}

#[test]
fn strict_content_off_ignores_placeholders() {
    let body = verify(json!({
        "task_id": "lenient",
        "expected_schema": {"type": "object"},
        "submitted_output": {"notes": "TODO", "blank": ""},
    }));
    assert_pass(&body, "strict off");
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 1.0, "passed": 0, "total": 0})
    );
}

#[test]
fn strict_content_clean_output_passes_with_three_checks() {
    let body = strict(
        json!({"type": "object", "required": ["a"]}),
        json!({"a": "real"}),
    );
    assert_pass(&body, "clean");
    assert_eq!(
        body["integrity_checks"],
        json!({"ratio": 1.0, "passed": 3, "total": 3})
    );
}

// ---------------------------------------------------------------- caps

#[test]
fn lists_are_capped_at_fifty_with_totals_and_omitted_counts() {
    let output: Vec<Value> = (0..60).map(|i| json!(i)).collect();
    let body = verify(json!({
        "task_id": "caps",
        "expected_schema": {"type": "array", "items": {"type": "string"}},
        "submitted_output": output,
    }));
    assert_eq!(body["result"], "fail");
    assert_eq!(body["summary"]["blocking_checks"], json!(["schema:type"]));
    for list in ["errors", "errors_detail", "flags", "hints"] {
        assert_eq!(
            body[list].as_array().expect(list).len(),
            50,
            "{list} has 50 entries"
        );
        assert_eq!(body[format!("{list}_total")], 60, "{list}_total");
        assert_eq!(body[format!("{list}_omitted")], 10, "{list}_omitted");
    }
    // One check for the array's type plus one per item; 60 items fail.
    assert_eq!(
        body["schema_compliance"],
        json!({"ratio": 0.016393, "passed": 1, "total": 61})
    );
    assert_eq!(body["errors_detail"][0]["path"], "$[0]");
    assert_eq!(body["errors_detail"][0]["expected"], "type string");
}

#[test]
fn list_cap_follows_the_engine_config() {
    let engine = Engine::new(EngineConfig {
        list_cap: 3,
        ..EngineConfig::default()
    });
    let output: Vec<Value> = (0..5).map(|i| json!(i)).collect();
    let body = verify_with(
        &engine,
        json!({"task_id": "cap3", "expected_schema": {"items": {"type": "string"}}, "submitted_output": output}),
    );
    assert_eq!(body["errors"].as_array().expect("errors").len(), 3);
    assert_eq!(body["errors_total"], 5);
    assert_eq!(body["errors_omitted"], 2);
}

// ---------------------------------------------------------------- response shape

const FULL_KEYS: &[&str] = &[
    "summary",
    "next_actions",
    "result",
    "verification_id",
    "task_id",
    "agent_id",
    "output_hash",
    "schema_hash",
    "rules_hash",
    "request_hash",
    "verified_at",
    "verifier_version",
    "enforce_rules",
    "strict_content_check",
    "format_assertion",
    "identity",
    "errors",
    "errors_total",
    "errors_omitted",
    "errors_detail",
    "errors_detail_total",
    "errors_detail_omitted",
    "flags",
    "flags_total",
    "flags_omitted",
    "hints",
    "hints_total",
    "hints_omitted",
    "schema_compliance",
    "integrity_checks",
    "overall",
    "verify",
    "attestation",
];

const COMPACT_KEYS: &[&str] = &[
    "summary",
    "next_actions",
    "result",
    "verification_id",
    "task_id",
    "agent_id",
    "output_hash",
    "schema_hash",
    "rules_hash",
    "verified_at",
    "verifier_version",
    "enforce_rules",
    "strict_content_check",
    "format_assertion",
    "identity",
    "verify",
    "attestation",
];

/// Keys of the body in document order (needs serde_json without `preserve_order`, so read
/// them from the raw bytes).
fn raw_keys(body: &[u8]) -> Vec<String> {
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
    let mut de = serde_json::Deserializer::from_slice(body);
    serde::Deserializer::deserialize_map(&mut de, Keys).expect("the body is an object")
}

fn raw_body(request: Value) -> Vec<u8> {
    let engine = Engine::new(EngineConfig::default());
    let req = VerifyRequest::from_value(request).expect("valid");
    engine
        .verify(&req, &signer(), OffsetDateTime::now_utc())
        .expect("verification runs")
        .body
}

#[test]
fn full_and_compact_keys() {
    let rule = json!({"type": "sum_equals", "field": "items[].price", "equals_field": "total"});
    let full = raw_body(request(
        invoice(json!(99)),
        json!({"rules": [rule.clone()], "detail": "full"}),
    ));
    assert_eq!(raw_keys(&full), FULL_KEYS);
    let default = raw_body(request(
        invoice(json!(99)),
        json!({"rules": [rule.clone()]}),
    ));
    assert_eq!(raw_keys(&default), FULL_KEYS, "detail defaults to full");

    let compact = raw_body(request(
        invoice(json!(99)),
        json!({"rules": [rule], "detail": "compact", "enforce_rules": true}),
    ));
    assert_eq!(raw_keys(&compact), COMPACT_KEYS);
    let body: Value = serde_json::from_slice(&compact).expect("json");
    assert_eq!(body["result"], "fail", "compact keeps the verdict");
    assert_eq!(
        body["summary"]["blocking_checks"],
        json!(["consistency:sum_equals"])
    );
    for absent in [
        "request_hash",
        "errors",
        "flags",
        "hints",
        "schema_compliance",
        "integrity_checks",
        "overall",
    ] {
        assert!(body.get(absent).is_none(), "compact has no {absent}");
    }
    verify_receipt(&body, &[signer().public_entry()]).expect("the compact receipt verifies");
}

#[test]
fn hashes_are_lowercase_sha256_hex_and_agent_id_is_echoed() {
    let body = verify(request(json!({"a": 1}), json!({"agent_id": "agent-1"})));
    for k in ["output_hash", "schema_hash", "rules_hash", "request_hash"] {
        let h = body[k].as_str().expect("hash");
        assert_eq!(h.len(), 64, "{k}");
        assert!(
            h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{k} is lowercase hex"
        );
    }
    assert_eq!(body["agent_id"], "agent-1");
    assert_eq!(body["task_id"], "rules-test");
    let body = verify(request(json!({"a": 1}), json!({})));
    assert_eq!(
        body["agent_id"],
        Value::Null,
        "agent_id is present and null when not sent"
    );
}

fn strip_volatile(mut body: Value) -> Value {
    let map = body.as_object_mut().expect("object");
    map.remove("verification_id").expect("verification_id");
    map.remove("verified_at").expect("verified_at");
    let att = map
        .get_mut("attestation")
        .and_then(Value::as_object_mut)
        .expect("attestation");
    att.remove("timestamp").expect("timestamp");
    att.remove("signature").expect("signature");
    body
}

#[test]
fn two_runs_are_identical_but_for_id_time_and_signature() {
    let req = request(
        invoice(json!(16)),
        json!({
            "agent_id": "agent-x",
            "rules": [{"type": "sum_equals", "field": "items[].price", "equals_field": "total"}],
            "bounds": {"total": {"max": 10}},
            "strict_content_check": true,
            "enforce_rules": true,
        }),
    );
    let engine = Engine::new(EngineConfig::default());
    let first = verify_with(&engine, req.clone());
    std::thread::sleep(std::time::Duration::from_millis(2));
    let second = verify_with(&engine, req.clone());
    let fresh = verify(req);
    assert_ne!(
        first["verification_id"], second["verification_id"],
        "each verification has its own id"
    );
    assert_ne!(first["verified_at"], second["verified_at"]);
    let a = strip_volatile(first);
    assert_eq!(a, strip_volatile(second), "a warm engine is deterministic");
    assert_eq!(
        a,
        strip_volatile(fresh),
        "a cold engine gives the same body"
    );
}

#[test]
fn verification_id_is_uuid_v4() {
    let body = verify(request(json!({}), json!({})));
    let id = body["verification_id"].as_str().expect("verification_id");
    let uuid = uuid::Uuid::parse_str(id).expect("a UUID");
    assert_eq!(uuid.get_version(), Some(uuid::Version::Random), "version 4");
    assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122);
    assert_eq!(
        id,
        uuid.hyphenated().to_string(),
        "lowercase hyphenated form"
    );
}

#[test]
fn verified_at_is_rfc3339_microseconds_utc_and_equals_the_attestation_timestamp() {
    let before = OffsetDateTime::now_utc();
    let body = verify(request(json!({}), json!({})));
    let after = OffsetDateTime::now_utc();
    let at = body["verified_at"].as_str().expect("verified_at");
    assert_eq!(body["attestation"]["timestamp"], at);
    // YYYY-MM-DDTHH:MM:SS.ffffff+00:00
    assert_eq!(at.len(), 32, "{at}");
    let b = at.as_bytes();
    for (i, c) in b.iter().enumerate() {
        let expected_sep = match i {
            4 | 7 => Some(b'-'),
            10 => Some(b'T'),
            13 | 16 | 29 => Some(b':'),
            19 => Some(b'.'),
            26 => Some(b'+'),
            _ => None,
        };
        match expected_sep {
            Some(sep) => assert_eq!(*c, sep, "{at}: byte {i}"),
            None => assert!(c.is_ascii_digit(), "{at}: byte {i} is a digit"),
        }
    }
    assert!(at.ends_with("+00:00"), "{at}");
    let parsed = OffsetDateTime::parse(at, &Rfc3339).expect("valid RFC 3339");
    let truncate = |t: OffsetDateTime| t.replace_nanosecond(t.microsecond() * 1000).expect("valid");
    assert!(
        truncate(before) <= parsed && parsed <= after,
        "{at} lies within the call"
    );
    assert_eq!(body["attestation"]["algorithm"], "Ed25519");
    assert_eq!(body["attestation"]["key_version"], "t");
}

#[test]
fn explicit_now_is_rendered_exactly() {
    let engine = Engine::new(EngineConfig::default());
    let req = VerifyRequest::from_value(request(json!({}), json!({}))).expect("valid");
    let now = OffsetDateTime::parse("2026-01-02T03:04:05.000007+02:00", &Rfc3339).expect("time");
    let out = engine.verify(&req, &signer(), now).expect("verified");
    assert_eq!(
        out.verified_at, "2026-01-02T01:04:05.000007+00:00",
        "converted to UTC"
    );
}
