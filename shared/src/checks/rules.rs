//! The five business-rule types over the path language. One check per rule.

use super::numbers::{PySum, py_number};
use super::{Finding, Severity, describe_value};
use crate::path::{FieldPath, Location};
use crate::request::{Operand, Rule, RuleType};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Run one rule; `None` when it holds.
pub fn check_rule(rule: &Rule, output: &Value, enforce: bool) -> Option<Finding> {
    let violation = match rule.kind {
        RuleType::SumEquals => sum_equals(rule, output),
        RuleType::Gte | RuleType::Lte => compare(rule, output),
        RuleType::ExistsIn => exists_in(rule, output),
        RuleType::Unique => unique(rule, output),
    }?;
    Some(violation.into_finding(rule, enforce))
}

struct Violation {
    expected: String,
    found: String,
    detail: String,
}

impl Violation {
    fn into_finding(self, rule: &Rule, enforce: bool) -> Finding {
        let check = rule.kind.check_name();
        let field = rule.field.as_str();
        let prefix = if enforce { "enforce_rules: " } else { "" };
        Finding {
            check: check.to_owned(),
            source: "integrity",
            path: rule.field.rooted(),
            field: field.to_owned(),
            message: format!("{prefix}{check} at '{field}': {}", self.detail),
            expected: self.expected,
            found: self.found,
            detail: self.detail,
            severity: if enforce {
                Severity::Error
            } else {
                Severity::Warning
            },
            blocking: enforce,
        }
    }
}

fn missing(path: &FieldPath, at: &Location) -> Violation {
    Violation {
        expected: format!("a value at {}", path.rooted()),
        found: "missing".into(),
        detail: format!("no value at {}", at.render()),
    }
}

/// The numbers at a path, or the violation that stops the rule.
fn numbers<'v>(
    rule: &Rule,
    path: &FieldPath,
    output: &'v Value,
) -> Result<Vec<(Location, &'v serde_json::Number)>, Violation> {
    let resolved = path.resolve(output);
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Err(missing(path, at));
    }
    let mut out = Vec::with_capacity(resolved.found.len());
    for (at, v) in resolved.found {
        match v {
            Value::Number(n) => out.push((at, n)),
            other => {
                return Err(Violation {
                    expected: format!("numbers at {}", path.rooted()),
                    found: describe_value(other),
                    detail: format!("the value at {} is not a number", at.render()),
                });
            }
        }
    }
    Ok(out)
}

/// The single number an operand names: `(label, value, printed)`; `Ok(None)` when absent and
/// `if_present` allows it.
fn operand_number(rule: &Rule, output: &Value) -> Result<Option<(String, f64, String)>, Violation> {
    match &rule.operand {
        Operand::Number(n, raw) => Ok(Some((
            String::new(),
            *n,
            raw.as_number().map(py_number).unwrap_or_default(),
        ))),
        Operand::Field(path) => {
            let nums = numbers(rule, path, output)?;
            match nums.as_slice() {
                [] => Ok(None),
                [(_, n)] => Ok(Some((
                    path.as_str().to_owned(),
                    n.as_f64().unwrap_or(0.0),
                    py_number(n),
                ))),
                _ => Err(Violation {
                    expected: format!("one number at {}", path.rooted()),
                    found: format!("{} values", nums.len()),
                    detail: format!(
                        "{} names {} values where one number is needed",
                        path.rooted(),
                        nums.len()
                    ),
                }),
            }
        }
        _ => Ok(None),
    }
}

fn labelled(label: &str, printed: &str) -> String {
    if label.is_empty() {
        printed.to_owned()
    } else {
        format!("{label} ({printed})")
    }
}

fn sum_equals(rule: &Rule, output: &Value) -> Option<Violation> {
    let result = (|| {
        let terms = numbers(rule, &rule.field, output)?;
        if terms.is_empty() && rule.if_present && !rule.field.is_multi() {
            return Ok(None);
        }
        let Some((label, target, printed)) = operand_number(rule, output)? else {
            return Ok(None);
        };
        let mut sum = PySum::default();
        for (_, n) in &terms {
            sum.add(n);
        }
        if (sum.value() - target).abs() <= rule.tolerance {
            return Ok(None);
        }
        let expected = labelled(&label, &printed);
        Ok(Some(Violation {
            expected: format!("a sum equal to {expected}"),
            found: format!("sum {}", sum.render()),
            detail: format!("values sum to {}, expected {expected}", sum.render()),
        }))
    })();
    result.unwrap_or_else(Some)
}

fn compare(rule: &Rule, output: &Value) -> Option<Violation> {
    let result = (|| {
        let values = numbers(rule, &rule.field, output)?;
        let Some((label, limit, printed)) = operand_number(rule, output)? else {
            return Ok(None);
        };
        // `tolerance` widens the comparison: gte holds for v ≥ limit − tolerance.
        let gte = rule.kind == RuleType::Gte;
        let op = if gte { ">=" } else { "<=" };
        let t = rule.tolerance;
        let holds = |v: f64| if gte { v + t >= limit } else { v - t <= limit };
        let bad: Vec<_> = values
            .iter()
            .filter(|(_, n)| !holds(n.as_f64().unwrap_or(f64::NAN)))
            .collect();
        let Some((at, n)) = bad.first() else {
            return Ok(None);
        };
        let expected = format!("values {op} {}", labelled(&label, &printed));
        let more = if bad.len() > 1 {
            format!(" ({} of {} values break the rule)", bad.len(), values.len())
        } else {
            String::new()
        };
        Ok(Some(Violation {
            found: format!("{} at {}", py_number(n), at.render()),
            detail: format!(
                "value at {} is {}, expected {op} {}{more}",
                at.render(),
                py_number(n),
                labelled(&label, &printed)
            ),
            expected,
        }))
    })();
    result.unwrap_or_else(Some)
}

fn exists_in(rule: &Rule, output: &Value) -> Option<Violation> {
    let resolved = rule.field.resolve(output);
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Some(missing(&rule.field, at));
    }
    let (allowed, label): (Vec<&Value>, String) = match &rule.operand {
        Operand::List(list) => (list.iter().collect(), "the allowed values".to_owned()),
        Operand::Field(path) => {
            let r = path.resolve(output);
            if r.found.is_empty()
                && !rule.if_present
                && let Some(at) = r.missing.first()
            {
                return Some(missing(path, at));
            }
            (
                r.found.into_iter().map(|(_, v)| v).collect(),
                format!("the values at {}", path.rooted()),
            )
        }
        _ => return None,
    };
    // Equal canonical bytes mean equal JSON values (numbers compared by value: 1 and 1.0 are
    // the same), so a hash set answers membership in constant time.
    let allowed: HashSet<Vec<u8>> = allowed
        .iter()
        .map(|a| crate::canonical::value_to_jcs(a))
        .collect();
    let absent: Vec<_> = resolved
        .found
        .iter()
        .filter(|(_, v)| !allowed.contains(&crate::canonical::value_to_jcs(v)))
        .collect();
    let (at, value) = absent.first()?;
    let more = if absent.len() > 1 {
        format!(" ({} values are absent)", absent.len())
    } else {
        String::new()
    };
    Some(Violation {
        expected: format!("values among {label}"),
        found: format!("{} at {}", describe_value(value), at.render()),
        detail: format!("the value at {} is not among {label}{more}", at.render()),
    })
}

fn unique(rule: &Rule, output: &Value) -> Option<Violation> {
    let resolved = rule.field.resolve(output);
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Some(missing(&rule.field, at));
    }
    let mut seen: HashMap<Vec<u8>, &Location> = HashMap::with_capacity(resolved.found.len());
    let mut repeats = 0usize;
    let mut first: Option<(&Location, &Location)> = None;
    for (at, value) in &resolved.found {
        let key = crate::canonical::value_to_jcs(value);
        match seen.get(&key) {
            Some(earlier) => {
                repeats += 1;
                first.get_or_insert((at, earlier));
            }
            None => {
                seen.insert(key, at);
            }
        }
    }
    let (at, earlier) = first?;
    let more = if repeats > 1 {
        format!(" ({repeats} repeats in all)")
    } else {
        String::new()
    };
    Some(Violation {
        expected: format!("distinct values at {}", rule.field.rooted()),
        found: format!("a repeat at {}", at.render()),
        detail: format!(
            "the value at {} repeats the value at {}{more}",
            at.render(),
            earlier.render()
        ),
    })
}
