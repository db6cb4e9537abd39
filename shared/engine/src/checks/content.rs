//! Content checks, run as blocking checks when `strict_content_check` is true:
//!
//! - `content:not_empty` — the output is not null, `{}`, `[]` or a blank string;
//! - `content:no_placeholders` — no string is a placeholder (see [`is_placeholder`]);
//! - `content:no_empty_required_strings` — no property the schema requires holds a blank string.

use super::{Finding, Severity};
use crate::path::Location;
use serde_json::Value;

/// How many checks strict mode adds to `integrity_checks`.
pub const CHECK_COUNT: usize = 3;

/// Placeholder texts, compared case-insensitively after trimming.
const PLACEHOLDERS: &[&str] = &[
    "todo",
    "tbd",
    "tba",
    "tbc",
    "fixme",
    "xxx",
    "placeholder",
    "changeme",
    "change me",
    "replace me",
    "replace_me",
    "insert here",
    "fill in",
    "fill me",
    "lorem ipsum",
    "...",
    "…",
    "n/a",
    "null",
    "undefined",
    "your text here",
    "sample text",
];

/// Whether a string looks like a placeholder: a listed text, text starting "lorem ipsum",
/// a `<…>`/`{{…}}`/`[insert …]` template slot, or `your_… _here`.
pub fn is_placeholder(s: &str) -> bool {
    let t = s.trim().to_lowercase();
    if t.is_empty() {
        return false;
    }
    PLACEHOLDERS.contains(&t.as_str())
        || t.starts_with("lorem ipsum")
        || (t.starts_with("{{") && t.ends_with("}}"))
        || (t.starts_with('<') && t.ends_with('>') && !t.contains(' ') && t.len() > 2)
        || (t.starts_with("[insert") && t.ends_with(']'))
        || (t.starts_with("your") && t.ends_with("here"))
        || t.starts_with("todo:")
}

/// Run the content checks; `blank_required` comes from the schema walk.
pub fn check_content(output: &Value, blank_required: &[Location]) -> Vec<Finding> {
    let mut out = Vec::new();
    let empty = match output {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if empty {
        out.push(finding(
            "content:not_empty",
            "$",
            "a non-empty output",
            "an empty output",
            "the output is empty".into(),
        ));
    }
    let mut hits = Vec::new();
    find_placeholders(output, Location::default(), &mut hits, 0);
    if let Some(first) = hits.first() {
        let more = if hits.len() > 1 {
            format!(" ({} placeholders in all)", hits.len())
        } else {
            String::new()
        };
        out.push(finding(
            "content:no_placeholders",
            &first.render(),
            "real content",
            "a placeholder string",
            format!("the string at {} is a placeholder{more}", first.render()),
        ));
    }
    if let Some(first) = blank_required.first() {
        let more = if blank_required.len() > 1 {
            format!(" ({} blank required strings)", blank_required.len())
        } else {
            String::new()
        };
        out.push(finding(
            "content:no_empty_required_strings",
            &first.render(),
            "a non-blank string",
            "a blank string",
            format!("the required string at {} is blank{more}", first.render()),
        ));
    }
    out
}

fn find_placeholders(v: &Value, at: Location, hits: &mut Vec<Location>, depth: usize) {
    if depth > 128 || hits.len() > 1000 {
        return;
    }
    match v {
        Value::String(s) if is_placeholder(s) => hits.push(at),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                find_placeholders(item, at.index(i), hits, depth + 1);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                find_placeholders(item, at.key(k), hits, depth + 1);
            }
        }
        _ => {}
    }
}

fn finding(check: &str, path: &str, expected: &str, found: &str, detail: String) -> Finding {
    let field = path.strip_prefix("$.").unwrap_or(path).to_owned();
    Finding {
        check: check.to_owned(),
        source: "content",
        path: path.to_owned(),
        message: format!("strict_content_check: {check} at '{field}': {detail}"),
        field,
        expected: expected.to_owned(),
        found: found.to_owned(),
        detail,
        severity: Severity::Error,
        blocking: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        for p in [
            "TODO",
            " tbd ",
            "Lorem ipsum dolor",
            "{{name}}",
            "<name>",
            "[insert date]",
            "your name here",
            "N/A",
        ] {
            assert!(is_placeholder(p), "{p}");
        }
        for ok in ["INV-7731", "Acme <b>Corp</b> ltd", "To do list app", ""] {
            assert!(!is_placeholder(ok), "{ok}");
        }
    }
}
