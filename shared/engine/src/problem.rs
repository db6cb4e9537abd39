//! What is wrong with a request: each problem as `{field, problem, fix}`, never quoting the
//! caller's input, and the helpers the request and schema readers share.

use crate::json::JsonError;
use serde::Serialize;
use serde_json::Value;

/// One problem of an invalid request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FieldProblem {
    /// Where: `task_id`, `rules[0].type`, `bounds` …
    pub field: String,
    /// What is wrong, in words that never quote the caller's input.
    pub problem: String,
    /// What to send instead.
    pub fix: String,
}

impl FieldProblem {
    /// A problem at `field`.
    pub fn new(
        field: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        FieldProblem {
            field: field.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// An invalid request: every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request is invalid ({} problem(s))", problems.len())]
pub struct InvalidRequest {
    pub problems: Vec<FieldProblem>,
}

impl InvalidRequest {
    /// One problem.
    pub fn one(problem: FieldProblem) -> Self {
        InvalidRequest {
            problems: vec![problem],
        }
    }
}

/// Whether arrays and objects nest deeper than `max` (iterative: safe on any depth).
pub fn depth_exceeds(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 1usize)];
    while let Some((v, depth)) = stack.pop() {
        let is_container = matches!(v, Value::Array(_) | Value::Object(_));
        if is_container && depth > max {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

pub fn json_problem(field: &str, error: JsonError) -> FieldProblem {
    let fix = match error {
        JsonError::Syntax { .. } | JsonError::Truncated => {
            "Send one complete JSON object encoded as UTF-8 (check quotes, commas and brackets)."
        }
        JsonError::DuplicateKey { .. } => {
            "Send each key at most once per object; a repeated key is ambiguous and cannot be hashed faithfully."
        }
        JsonError::UnsafeInteger { .. } => {
            "Send integers within ±9007199254740991 (2^53−1); send larger ones as strings, since JSON canonicalization (RFC 8785) would round them."
        }
        JsonError::NonFinite { .. } => {
            "Send numbers within the IEEE-754 double range; NaN, Infinity and overflowing numbers cannot be canonicalized."
        }
        JsonError::TooDeep => {
            "Flatten the document: arrays and objects may nest at most 126 levels inside a field."
        }
    };
    FieldProblem::new(field, error.to_string(), fix)
}
