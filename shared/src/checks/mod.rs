//! The checks: schema, bounds, business rules and content, each producing [`Finding`]s.

pub mod bounds;
pub mod content;
pub mod count;
pub mod numbers;
pub mod rules;
pub mod schema;

use serde_json::Value;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// The name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One failed check, with everything the report needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `schema:required`, `consistency:sum_equals`, `bounds:range`, `content:placeholder` …
    pub check: String,
    /// `schema`, `integrity` or `content` (the hint's `source`).
    pub source: &'static str,
    /// From the root: `$.line_items[].line_total`.
    pub path: String,
    /// As the caller named it (rules and bounds) or the path without `$.`.
    pub field: String,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
    /// The flag's detail text.
    pub detail: String,
    /// The full error line.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
    /// Whether it makes the result `fail`.
    pub blocking: bool,
}

/// Describe a value without copying strings or structures into the report.
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => numbers::py_number(n),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object with {} properties", o.len()),
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}
