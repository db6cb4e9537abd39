use super::eval::{ClauseOutcome, Failure, RunBudget, Subject, run};
use super::price::estimate;
use super::{Expression, ExpressionError, SourcePos};
use crate::cost::size::Shape;
use serde_json::json;

fn outcomes(source: &str, output: serde_json::Value) -> Vec<ClauseOutcome> {
    let expr = Expression::compile(source, 1e-9).expect("compiles");
    let priced = estimate(&expr, &output, &Shape::of(&output), source.len());
    run(
        &expr,
        &Subject::of(&output),
        RunBudget {
            steps: priced.steps,
            cpu_ns: 1_000_000_000,
        },
    )
    .into_iter()
    .map(|r| r.outcome)
    .collect()
}

fn holds(source: &str, output: serde_json::Value) -> bool {
    outcomes(source, output)
        .iter()
        .all(|o| *o == ClauseOutcome::Holds)
}

fn refused(source: &str) -> ExpressionError {
    Expression::compile(source, 1e-9).expect_err("refused")
}

#[test]
fn the_invoice_checks_hold_and_fail_as_a_buyer_expects() {
    let invoice = json!({
        "subtotal": 100.10, "tax": 10.01, "total": 110.11,
        "issue_date": "2026-02-01", "due_date": "2026-03-01",
        "currency": "EUR", "vat_id": "DE123",
        "lines": [{"qty": 3, "unit_price": 0.1, "line_total": 0.3}]
    });
    assert!(holds(
        "self.total == self.subtotal + self.tax",
        invoice.clone()
    ));
    assert!(holds(
        "self.lines.all(l, l.line_total == l.qty * l.unit_price)",
        invoice.clone()
    ));
    assert!(holds(
        "date(self.due_date) > date(self.issue_date)",
        invoice.clone()
    ));
    assert!(holds(
        "self.currency != 'EUR' || has(self.vat_id)",
        invoice.clone()
    ));
    assert!(holds("size(self.lines) >= 1", invoice.clone()));
    assert!(!holds("self.total == self.subtotal", invoice.clone()));
    let zero_qty = json!({"lines": [{"qty": 0, "unit_price": 10.0, "line_total": 50}]});
    assert!(!holds(
        "self.lines.all(l, l.line_total == l.qty * l.unit_price)",
        zero_qty
    ));
}

#[test]
fn a_false_comparison_shows_numbers_but_never_strings() {
    let out = outcomes(
        "self.total == self.subtotal && self.name == 'x'",
        json!({"total": 3, "subtotal": 2, "name": "secret-text"}),
    );
    assert_eq!(
        out[0],
        ClauseOutcome::False {
            sides: Some(("3.0".into(), "==", "2.0".into())),
            at: Vec::new(),
        }
    );
    let ClauseOutcome::False {
        sides: Some((l, _, r)),
        ..
    } = &out[1]
    else {
        panic!("false with sides: {:?}", out[1]);
    };
    assert!(!l.contains("secret") && !r.contains('x'), "{l} {r}");
}

#[test]
fn a_missing_field_is_an_error_that_names_no_key() {
    let out = outcomes("self.nope > 1.0", json!({}));
    assert_eq!(out, vec![ClauseOutcome::Error(Failure::Missing)]);
    assert!(!Failure::Missing.describe().contains("nope"));
}

#[test]
fn bad_expressions_are_refused_with_their_position() {
    assert_eq!(
        refused("self.total +"),
        ExpressionError::Syntax(SourcePos {
            line: 1,
            column: 13
        })
    );
    assert!(matches!(
        refused("foo(self.x)"),
        ExpressionError::UnknownFunction(_)
    ));
    assert!(matches!(
        refused("other.x > 1.0"),
        ExpressionError::UnknownName(_)
    ));
    assert_eq!(
        refused("self.qty * 2 == 4.0"),
        ExpressionError::Type(
            SourcePos {
                line: 1,
                column: 10
            },
            super::check::MIX_INT_TEXT
        )
    );
    assert_eq!(
        refused("self.a + 1.0"),
        ExpressionError::NotBoolean("a double")
    );
    assert!(matches!(
        refused("date(self.a) > self.b"),
        ExpressionError::Type(..)
    ));
    assert!(matches!(
        refused("self.s.matches(self.p)"),
        ExpressionError::Pattern(..)
    ));
    assert!(matches!(
        refused("self.s.matches('(')"),
        ExpressionError::Pattern(..)
    ));
    let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
    assert_eq!(refused(&format!("{deep} == 1")), ExpressionError::TooDeep);
    assert_eq!(refused(&"a".repeat(2000)), ExpressionError::TooLong);
}

#[test]
fn refusals_never_repeat_the_callers_text() {
    for source in [
        "self.secretword +",
        "secretword(1)",
        "secretword > 1",
        "self.secretword * 2 == 1.0",
    ] {
        let e = refused(source);
        assert!(!e.to_string().contains("secretword"), "{e}");
    }
}

#[test]
fn a_run_past_its_steps_stops() {
    let expr =
        Expression::compile("self.a.all(x, self.a.all(y, x == y || true))", 1e-9).expect("ok");
    let output = json!({"a": (0..100).collect::<Vec<_>>()});
    let out = run(
        &expr,
        &Subject::of(&output),
        RunBudget {
            steps: 50,
            cpu_ns: u64::MAX,
        },
    );
    assert_eq!(out[0].outcome, ClauseOutcome::Error(Failure::Budget));
}

#[test]
fn nested_comprehensions_multiply_the_estimate() {
    let output = json!({"a": (0..100).collect::<Vec<_>>()});
    let shape = Shape::of(&output);
    let once = estimate(
        &Expression::compile("self.a.all(x, x > 0.0)", 1e-9).expect("ok"),
        &output,
        &shape,
        10,
    );
    let twice = estimate(
        &Expression::compile("self.a.all(x, self.a.all(y, x > y))", 1e-9).expect("ok"),
        &output,
        &shape,
        10,
    );
    assert!(twice.steps >= 100 * once.steps, "{once:?} {twice:?}");
    assert!(
        twice.cost.cpu_ns >= 50 * once.cost.cpu_ns,
        "{once:?} {twice:?}"
    );
}

#[test]
fn a_false_all_names_the_element_and_the_sides() {
    let out = outcomes(
        "self.lines.all(l, l.line_total == l.qty * l.unit_price)",
        json!({"lines": [
            {"qty": 1, "unit_price": 2.0, "line_total": 2.0},
            {"qty": 0, "unit_price": 10.0, "line_total": 50}
        ]}),
    );
    assert_eq!(
        out,
        vec![ClauseOutcome::False {
            sides: Some(("50.0".into(), "==", "0.0".into())),
            at: vec![1],
        }]
    );
    // Nested: the outer and the inner element.
    let out = outcomes(
        "self.m.all(row, row.all(x, x < 5.0))",
        json!({"m": [[1, 2], [3, 7]]}),
    );
    assert!(
        matches!(&out[0], ClauseOutcome::False { at, .. } if *at == vec![1, 1]),
        "{out:?}"
    );
    // An error at one element and false at another: false.
    let out = outcomes(
        "self.a.all(x, x.v > 0.0)",
        json!({"a": [{"w": 1}, {"v": -1}]}),
    );
    assert!(
        matches!(&out[0], ClauseOutcome::False { at, .. } if *at == vec![1]),
        "{out:?}"
    );
    // An error only: the error.
    let out = outcomes(
        "self.a.all(x, x.v > 0.0)",
        json!({"a": [{"w": 1}, {"v": 1}]}),
    );
    assert_eq!(out, vec![ClauseOutcome::Error(Failure::Missing)]);
}

#[test]
fn the_tolerance_is_for_doubles_and_never_loosens_a_count() {
    let expr = Expression::compile(
        "self.a.exists_one(x, x > 0.0) && size(self.a) == 4 && self.t == 10.0",
        5.0,
    )
    .expect("ok");
    let output = json!({"a": [1, 2, -1, -2], "t": 12.5});
    let priced = estimate(&expr, &output, &Shape::of(&output), 10);
    let out = run(
        &expr,
        &Subject::of(&output),
        RunBudget {
            steps: priced.steps,
            cpu_ns: u64::MAX,
        },
    );
    // Two elements are positive: exists_one is false whatever the tolerance.
    assert!(
        matches!(out[0].outcome, ClauseOutcome::False { .. }),
        "{out:?}"
    );
    assert_eq!(out[1].outcome, ClauseOutcome::Holds);
    // 12.5 is within 5 of 10.0.
    assert_eq!(out[2].outcome, ClauseOutcome::Holds);
}

#[test]
fn the_same_text_and_tolerance_is_compiled_once() {
    let a = super::cache::compiled("self.cached_once > 1.0", 1e-9).expect("ok");
    let b = super::cache::compiled("self.cached_once > 1.0", 1e-9).expect("ok");
    let other_tolerance = super::cache::compiled("self.cached_once > 1.0", 0.5).expect("ok");
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert!(!std::sync::Arc::ptr_eq(&a, &other_tolerance));
    assert!(
        a.held_bytes > 0 && a.held_bytes < 64 << 10,
        "{}",
        a.held_bytes
    );
    assert!(super::cache::compiled("self.x +", 1e-9).is_err());
}

#[test]
fn nested_comprehensions_are_priced_in_one_walk() {
    // Twelve nested all(): walking each step twice would take 2^12 walks of the innermost.
    let mut source = "true".to_owned();
    for depth in (0..12).rev() {
        let var = format!("v{depth}");
        let range = if depth == 0 {
            "self.a".to_owned()
        } else {
            format!("v{}", depth - 1)
        };
        source = format!("{range}.all({var}, {source})");
    }
    let expr = Expression::compile(&source, 1e-9).expect("compiles");
    let output = json!({"a": []});
    let priced = estimate(&expr, &output, &Shape::of(&output), source.len());
    assert!(priced.cost.cpu_ns > 0);
}

#[test]
fn chains_deeper_than_the_tree_limit_are_refused() {
    let fields = format!("self{} == 1.0", ".a".repeat(200));
    assert_eq!(refused(&fields), ExpressionError::TooDeep);
    let sum = format!("{} > 0.0", vec!["self.x"; 100].join(" + "));
    assert_eq!(refused(&sum), ExpressionError::TooDeep);
    // An ordinary long sum is fine.
    assert!(
        Expression::compile(&format!("{} > 0.0", vec!["self.x"; 20].join(" + ")), 1e-9).is_ok()
    );
}

#[test]
fn dates_beyond_year_9999_are_invalid_not_a_crash() {
    let out = outcomes(
        "date(self.due) + duration('24h') > date(self.issue)",
        json!({"due": "+262143-12-31", "issue": "2026-01-01"}),
    );
    assert_eq!(out, vec![ClauseOutcome::Error(Failure::BadTime)]);
    assert!(holds(
        "date(self.due) + duration('24h') > date(self.issue)",
        json!({"due": "2026-01-01", "issue": "2026-01-01T12:00:00Z"})
    ));
}

#[test]
fn infinity_equals_only_itself() {
    assert!(!holds(
        "self.paid / self.total <= 1.0",
        json!({"paid": 5, "total": 0})
    ));
    assert!(!holds("1.0 / self.z == 5.0", json!({"z": 0})));
    assert!(holds("1.0 / self.z == 2.0 / self.z", json!({"z": 0})));
}

#[test]
fn bytes_and_strings_made_from_the_output_keep_its_size() {
    let small = json!({"s": "x"});
    let large = json!({"s": "x".repeat(50_000)});
    let source = "[bytes(self.s)].all(b, size(b + b + b + b) > 0)";
    let expr = Expression::compile(source, 1e-9).expect("ok");
    let a = estimate(&expr, &small, &Shape::of(&small), source.len());
    let b = estimate(&expr, &large, &Shape::of(&large), source.len());
    assert!(b.cost.cpu_ns > 100 * a.cost.cpu_ns, "{a:?} {b:?}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let expr = Expression::compile("self.cur == '€' && self.total > 0.0", 1e-9).expect("ok");
    let output = json!({"cur": "€", "total": 0});
    let out = run(
        &expr,
        &Subject::of(&output),
        RunBudget {
            steps: 10,
            cpu_ns: u64::MAX,
        },
    );
    assert_eq!(
        out[1].pos,
        SourcePos {
            line: 1,
            column: 20
        }
    );
}
