//! Numeric bounds: every number at a path within `[min, max]`; always blocking. The integrity
//! checks a bound counts are described in [`super::tally`].

use super::numbers::py_number;
use super::tally::Tally;
use super::{Finding, Severity, describe_value};
use crate::request::Bound;
use serde_json::Value;

/// The check name of bounds.
pub const CHECK: &str = "bounds:range";

/// Run one bound: its finding (`None` when it holds) and the integrity checks it counts.
pub fn check_bound(bound: &Bound, output: &Value) -> (Option<Finding>, Tally) {
    let resolved = bound.field.resolve(output);
    let mut tally = Tally::default();
    tally.path(&resolved, bound.if_present, true);
    let compared = resolved.found.len();
    let finding = judge(bound, &resolved, compared, &mut tally);
    (finding, tally)
}

fn judge(
    bound: &Bound,
    resolved: &crate::path::Resolved<'_>,
    compared: usize,
    tally: &mut Tally,
) -> Option<Finding> {
    let range = match (&bound.min, &bound.max) {
        (Some((_, lo)), Some((_, hi))) => format!("between {} and {}", num(lo), num(hi)),
        (Some((_, lo)), None) => format!(">= {}", num(lo)),
        (None, Some((_, hi))) => format!("<= {}", num(hi)),
        (None, None) => String::new(),
    };
    let (found, detail) = if let (Some(at), false) = (resolved.missing.first(), bound.if_present) {
        tally.add(compared, compared);
        ("missing".to_owned(), format!("no value at {}", at.render()))
    } else {
        let mut bad = resolved.found.iter().filter(|(_, v)| match v.as_f64() {
            Some(n) if v.is_number() => {
                bound.min.as_ref().is_some_and(|(lo, _)| n < *lo)
                    || bound.max.as_ref().is_some_and(|(hi, _)| n > *hi)
            }
            _ => true,
        });
        let Some((at, value)) = bad.next() else {
            tally.add(compared, 0);
            return None;
        };
        let extra = bad.count();
        tally.add(compared, extra + 1);
        let more = if extra > 0 {
            format!(" ({} values out of range)", extra + 1)
        } else {
            String::new()
        };
        let shown = describe_value(value);
        (
            format!("{shown} at {}", at.render()),
            format!(
                "value at {} is {shown}, expected {range}{more}",
                at.render()
            ),
        )
    };
    let field = bound.field.as_str().to_owned();
    Some(Finding {
        check: CHECK.to_owned(),
        source: "integrity",
        path: bound.field.rooted(),
        message: format!("{CHECK} at '{field}': {detail}"),
        field,
        expected: format!("values {range}"),
        found,
        detail,
        severity: Severity::Error,
        blocking: true,
    })
}

fn num(v: &Value) -> String {
    v.as_number().map(py_number).unwrap_or_default()
}
