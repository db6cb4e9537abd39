//! The rule object of type `expression`: `{"type": "expression", "rule": "<CEL>",
//! "tolerance": 0.005}`, read strictly like the other rules.

use super::price::ExpressionCost;
use super::{Expression, MAX_EXPRESSION_BYTES_PER_REQUEST};
use crate::cost::size::Shape;
use crate::problem::FieldProblem;
use crate::request::DEFAULT_TOLERANCE;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

/// The keys an expression rule may have.
pub const EXPRESSION_RULE_KEYS: &[&str] = &["type", "rule", "tolerance"];

/// A checked expression rule.
#[derive(Debug, Clone)]
pub struct ExpressionRule {
    /// Its position in `rules`.
    pub index: usize,
    /// Bytes of its text.
    pub source_len: usize,
    pub expression: Arc<Expression>,
    /// Its price over the request's output, estimated once for pricing and the run.
    priced: OnceLock<ExpressionCost>,
}

impl ExpressionRule {
    /// Its price over `output` (whose shape `shape` gives), estimated on the first call.
    pub fn price(&self, output: &Value, shape: impl FnOnce() -> Shape) -> ExpressionCost {
        *self.priced.get_or_init(|| {
            super::price::estimate(&self.expression, output, &shape(), self.source_len)
        })
    }

    /// Its name in findings and errors: `rules[3]`.
    pub fn name(&self) -> String {
        format!("rules[{}]", self.index)
    }
}

/// Read rule `index` (an object whose `type` is `expression`); `budget` is what is left of the
/// request's expression bytes.
pub fn parse(
    problems: &mut Vec<FieldProblem>,
    spec: &Map<String, Value>,
    index: usize,
    budget: &mut usize,
) -> Option<ExpressionRule> {
    let at = format!("rules[{index}]");
    let before = problems.len();
    let unknown = spec
        .iter()
        .filter(|(k, v)| !EXPRESSION_RULE_KEYS.contains(&k.as_str()) && !v.is_null())
        .count();
    if unknown > 0 {
        problems.push(FieldProblem::new(
            at.clone(),
            format!("has {unknown} key(s) an expression rule does not take"),
            format!(
                "An expression rule takes only: {}.",
                EXPRESSION_RULE_KEYS.join(", ")
            ),
        ));
    }
    let tolerance = match spec.get("tolerance").filter(|v| !v.is_null()) {
        None => DEFAULT_TOLERANCE,
        Some(v) => match v.as_f64() {
            Some(t) if t >= 0.0 && t.is_finite() => t,
            _ => {
                problems.push(FieldProblem::new(
                    format!("{at}.tolerance"),
                    "must be a number ≥ 0",
                    "Send a non-negative number, e.g. 0.005 to compare amounts to the cent.",
                ));
                DEFAULT_TOLERANCE
            }
        },
    };
    let source = match spec.get("rule") {
        None | Some(Value::Null) => {
            problems.push(FieldProblem::new(
                format!("{at}.rule"),
                "is required but missing",
                "Send a CEL expression over self, e.g. \"self.total == self.subtotal + self.tax\".",
            ));
            return None;
        }
        Some(Value::String(s)) => s,
        Some(_) => {
            problems.push(FieldProblem::new(
                format!("{at}.rule"),
                "has the wrong type",
                "Send the expression as a string.",
            ));
            return None;
        }
    };
    if source.len() > *budget {
        problems.push(FieldProblem::new(
            format!("{at}.rule"),
            format!(
                "makes the request's expressions longer than {MAX_EXPRESSION_BYTES_PER_REQUEST} bytes in all"
            ),
            "Send fewer or shorter expressions, or split the verification.",
        ));
        return None;
    }
    *budget -= source.len();
    match super::cache::compiled(source, tolerance) {
        Ok(expression) if problems.len() == before => Some(ExpressionRule {
            index,
            source_len: source.len(),
            expression,
            priced: OnceLock::new(),
        }),
        Ok(_) => None,
        Err(e) => {
            problems.push(FieldProblem::new(
                format!("{at}.rule"),
                e.to_string(),
                e.fix(),
            ));
            None
        }
    }
}
