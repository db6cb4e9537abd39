//! The five business-rule types over the path language; the integrity checks each counts are
//! described in [`super::tally`].

use super::numbers::{PySum, py_number};
use super::tally::Tally;
use super::{Finding, Severity, describe_value};
use crate::path::{FieldPath, Location, Resolved};
use crate::request::{Operand, Rule, RuleType};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Run one rule: its finding (`None` when it holds) and the integrity checks it counts (see
/// [`super::tally`]).
pub fn check_rule(rule: &Rule, output: &Value, enforce: bool) -> (Option<Finding>, Tally) {
    let mut tally = Tally::default();
    let violation = match rule.kind {
        RuleType::SumEquals => sum_equals(rule, output, &mut tally),
        RuleType::Gte | RuleType::Lte => compare(rule, output, &mut tally),
        RuleType::ExistsIn => exists_in(rule, output, &mut tally),
        RuleType::Unique => unique(rule, output, &mut tally),
    };
    (violation.map(|v| v.into_finding(rule, enforce)), tally)
}

/// A rule's verdict over its comparisons: the violation, how many comparisons were made and
/// how many of them failed.
struct Verdict {
    violation: Option<Violation>,
    compared: usize,
    failed: usize,
}

impl Verdict {
    fn holds(compared: usize) -> Self {
        Verdict {
            violation: None,
            compared,
            failed: 0,
        }
    }

    /// A rule stopped before its comparisons (a value or operand missing or of the wrong
    /// type): every comparison it would have made fails.
    fn stopped(violation: Violation, compared: usize) -> Self {
        Verdict {
            violation: Some(violation),
            compared,
            failed: compared,
        }
    }

    fn count(self, tally: &mut Tally) -> Option<Violation> {
        tally.add(self.compared, self.failed);
        self.violation
    }
}

/// Resolve a rule's field operand once, counting what its resolution establishes.
fn resolve_operand<'v>(
    rule: &Rule,
    output: &'v Value,
    numbers: bool,
    tally: &mut Tally,
) -> Option<Resolved<'v>> {
    match &rule.operand {
        Operand::Field(path) => {
            let resolved = path.resolve(output);
            tally.path(&resolved, rule.if_present, numbers);
            Some(resolved)
        }
        _ => None,
    }
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

/// The numbers a path resolved to, or the violation that stops the rule.
fn numbers<'r, 'v>(
    rule: &Rule,
    path: &FieldPath,
    resolved: &'r Resolved<'v>,
) -> Result<Vec<(&'r Location, &'v serde_json::Number)>, Violation> {
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Err(missing(path, at));
    }
    let mut out = Vec::with_capacity(resolved.found.len());
    for (at, v) in &resolved.found {
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
/// `if_present` allows it. `resolved` is the field operand's resolution.
fn operand_number(
    rule: &Rule,
    resolved: Option<&Resolved<'_>>,
) -> Result<Option<(String, f64, String)>, Violation> {
    match (&rule.operand, resolved) {
        (Operand::Number(n, raw), _) => Ok(Some((
            String::new(),
            *n,
            raw.as_number().map(py_number).unwrap_or_default(),
        ))),
        (Operand::Field(path), Some(resolved)) => {
            let nums = numbers(rule, path, resolved)?;
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

fn sum_equals(rule: &Rule, output: &Value, tally: &mut Tally) -> Option<Violation> {
    let field = rule.field.resolve(output);
    tally.path(&field, rule.if_present, true);
    let operand = resolve_operand(rule, output, true, tally);
    let verdict = (|| {
        let terms = numbers(rule, &rule.field, &field)?;
        if terms.is_empty() && rule.if_present && !rule.field.is_multi() {
            return Ok(Verdict::holds(0));
        }
        let Some((label, target, printed)) = operand_number(rule, operand.as_ref())? else {
            return Ok(Verdict::holds(0));
        };
        let mut sum = PySum::default();
        for (_, n) in &terms {
            sum.add(n);
        }
        if (sum.value() - target).abs() <= rule.tolerance {
            return Ok(Verdict::holds(1));
        }
        let expected = labelled(&label, &printed);
        Ok(Verdict::stopped(
            Violation {
                expected: format!("a sum equal to {expected}"),
                found: format!("sum {}", sum.render()),
                detail: format!("values sum to {}, expected {expected}", sum.render()),
            },
            1,
        ))
    })();
    verdict
        .unwrap_or_else(|v| Verdict::stopped(v, 1))
        .count(tally)
}

fn compare(rule: &Rule, output: &Value, tally: &mut Tally) -> Option<Violation> {
    let field = rule.field.resolve(output);
    tally.path(&field, rule.if_present, true);
    let operand = resolve_operand(rule, output, true, tally);
    let compared = field.found.len();
    let verdict = (|| {
        let values = numbers(rule, &rule.field, &field)?;
        let Some((label, limit, printed)) = operand_number(rule, operand.as_ref())? else {
            return Ok(Verdict::holds(0));
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
            return Ok(Verdict::holds(compared));
        };
        let expected = format!("values {op} {}", labelled(&label, &printed));
        let more = if bad.len() > 1 {
            format!(" ({} of {} values break the rule)", bad.len(), values.len())
        } else {
            String::new()
        };
        Ok(Verdict {
            violation: Some(Violation {
                found: format!("{} at {}", py_number(n), at.render()),
                detail: format!(
                    "value at {} is {}, expected {op} {}{more}",
                    at.render(),
                    py_number(n),
                    labelled(&label, &printed)
                ),
                expected,
            }),
            compared,
            failed: bad.len(),
        })
    })();
    verdict
        .unwrap_or_else(|v| Verdict::stopped(v, compared))
        .count(tally)
}

fn exists_in(rule: &Rule, output: &Value, tally: &mut Tally) -> Option<Violation> {
    let resolved = rule.field.resolve(output);
    tally.path(&resolved, rule.if_present, false);
    let operand = resolve_operand(rule, output, false, tally);
    let compared = resolved.found.len();
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Verdict::stopped(missing(&rule.field, at), compared).count(tally);
    }
    let (allowed, label): (Vec<&Value>, String) = match (&rule.operand, operand) {
        (Operand::List(list), _) => (list.iter().collect(), "the allowed values".to_owned()),
        (Operand::Field(path), Some(r)) => {
            if r.found.is_empty()
                && !rule.if_present
                && let Some(at) = r.missing.first()
            {
                return Verdict::stopped(missing(path, at), compared).count(tally);
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
        .map(|a| verifier_receipt::canonical::value_to_jcs(a))
        .collect();
    let absent: Vec<_> = resolved
        .found
        .iter()
        .filter(|(_, v)| !allowed.contains(&verifier_receipt::canonical::value_to_jcs(v)))
        .collect();
    let Some((at, value)) = absent.first() else {
        return Verdict::holds(compared).count(tally);
    };
    let more = if absent.len() > 1 {
        format!(" ({} values are absent)", absent.len())
    } else {
        String::new()
    };
    Verdict {
        violation: Some(Violation {
            expected: format!("values among {label}"),
            found: format!("{} at {}", describe_value(value), at.render()),
            detail: format!("the value at {} is not among {label}{more}", at.render()),
        }),
        compared,
        failed: absent.len(),
    }
    .count(tally)
}

fn unique(rule: &Rule, output: &Value, tally: &mut Tally) -> Option<Violation> {
    let resolved = rule.field.resolve(output);
    tally.path(&resolved, rule.if_present, false);
    let compared = resolved.found.len();
    if let (Some(at), false) = (resolved.missing.first(), rule.if_present) {
        return Verdict::stopped(missing(&rule.field, at), compared).count(tally);
    }
    let mut seen: HashMap<Vec<u8>, &Location> = HashMap::with_capacity(resolved.found.len());
    let mut repeats = 0usize;
    let mut first: Option<(&Location, &Location)> = None;
    for (at, value) in &resolved.found {
        let key = verifier_receipt::canonical::value_to_jcs(value);
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
    let Some((at, earlier)) = first else {
        return Verdict::holds(compared).count(tally);
    };
    let more = if repeats > 1 {
        format!(" ({repeats} repeats in all)")
    } else {
        String::new()
    };
    Verdict {
        violation: Some(Violation {
            expected: format!("distinct values at {}", rule.field.rooted()),
            found: format!("a repeat at {}", at.render()),
            detail: format!(
                "the value at {} repeats the value at {}{more}",
                at.render(),
                earlier.render()
            ),
        }),
        compared,
        failed: repeats,
    }
    .count(tally)
}
