//! Running an expression over the output.
//!
//! **The money rule.** Numbers are binary doubles, and two numbers of which one is a double are
//! *equal* when they differ by at most the rule's `tolerance` (default 1e-9) plus the rounding of
//! doubles (2⁻⁵⁰ of the larger, about eight units in the last place); two ints compare exactly. Ordering follows: `a < b` holds only when `a`
//! is below `b` by more than that, so exactly one of `<`, `==`, `>` holds for two numbers. Set
//! `tolerance` to half a cent (0.005) to compare amounts to the cent.
//!
//! **Dates.** `date("2026-02-15")` is midnight UTC of that day; it also reads RFC 3339
//! timestamps, as `timestamp()` does.
//!
//! **The budget.** Every comprehension step counts one tick; past the ticks the estimate
//! allowed, or past the CPU ceiling, the run stops with [`Failure::Budget`].

use super::{ClauseForm, Expression, MATCHES, SourcePos, TICK};
use crate::cost::thread_cpu_ns;
use cel::common::ast::operators;
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, LazyLock};

/// The six comparisons, routed through the money rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Comparison {
    /// The comparison a CEL operator names.
    pub fn of_operator(name: &str) -> Option<Comparison> {
        Some(match name {
            operators::EQUALS => Comparison::Eq,
            operators::NOT_EQUALS => Comparison::Ne,
            operators::LESS => Comparison::Lt,
            operators::LESS_EQUALS => Comparison::Le,
            operators::GREATER => Comparison::Gt,
            operators::GREATER_EQUALS => Comparison::Ge,
            _ => return None,
        })
    }

    /// The function the rewritten tree calls.
    pub fn function(self) -> &'static str {
        match self {
            Comparison::Eq => "@eq",
            Comparison::Ne => "@ne",
            Comparison::Lt => "@lt",
            Comparison::Le => "@le",
            Comparison::Gt => "@gt",
            Comparison::Ge => "@ge",
        }
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Eq => "==",
            Comparison::Ne => "!=",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }

    const ALL: [Comparison; 6] = [
        Comparison::Eq,
        Comparison::Ne,
        Comparison::Lt,
        Comparison::Le,
        Comparison::Gt,
        Comparison::Ge,
    ];

    /// Apply it under the money rule.
    pub fn apply(self, a: &Value, b: &Value, tolerance: f64) -> Result<bool, Failure> {
        use std::cmp::Ordering;
        let both_ints = matches!(a, Value::Int(_) | Value::UInt(_))
            && matches!(b, Value::Int(_) | Value::UInt(_));
        let order = match (number(a), number(b)) {
            // Ints compare exactly (counts, sizes, a macro's own `== 1`): the money rule is for
            // doubles.
            (Some(_), Some(_)) if both_ints => a.partial_cmp(b),
            // An infinity (a division by zero) is equal only to itself.
            (Some(x), Some(y)) if !x.is_finite() || !y.is_finite() => x.partial_cmp(&y),
            (Some(x), Some(y)) => {
                let slack = tolerance + x.abs().max(y.abs()) * ROUNDING;
                if (x - y).abs() <= slack {
                    Some(Ordering::Equal)
                } else {
                    x.partial_cmp(&y)
                }
            }
            _ => match self {
                Comparison::Eq => return Ok(a == b),
                Comparison::Ne => return Ok(a != b),
                _ => {
                    let comparable = std::mem::discriminant(a) == std::mem::discriminant(b)
                        && !matches!(a, Value::List(_) | Value::Map(_));
                    if !comparable {
                        return Err(Failure::Types);
                    }
                    a.partial_cmp(b)
                }
            },
        };
        let Some(order) = order else {
            // NaN compares with nothing; only != holds.
            return Ok(self == Comparison::Ne);
        };
        Ok(match self {
            Comparison::Eq => order == Ordering::Equal,
            Comparison::Ne => order != Ordering::Equal,
            Comparison::Lt => order == Ordering::Less,
            Comparison::Le => order != Ordering::Greater,
            Comparison::Gt => order == Ordering::Greater,
            Comparison::Ge => order != Ordering::Less,
        })
    }
}

/// The relative rounding slack of the money rule: 2⁻⁵⁰.
const ROUNDING: f64 = 1.0 / (1u64 << 50) as f64;

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Why a clause could not be evaluated; names no caller text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A field it reads is not in the output.
    Missing,
    /// Values of types it cannot combine.
    Types,
    DivisionByZero,
    Overflow,
    IndexOutOfBounds,
    /// A date, timestamp or duration it reads is not valid.
    BadTime,
    /// A conversion (int(), double() …) of a value that does not convert.
    BadConversion,
    /// It ran past its budget and was stopped.
    Budget,
    /// Any other evaluation error.
    Other,
}

impl Failure {
    /// The reason, for a finding.
    pub fn describe(self) -> &'static str {
        match self {
            Failure::Missing => "a field it reads is missing from the output",
            Failure::Types => "it combines values of types that do not go together",
            Failure::DivisionByZero => "it divides by zero",
            Failure::Overflow => "an int overflowed",
            Failure::IndexOutOfBounds => "an index is past the end of a list",
            Failure::BadTime => "a date, timestamp or duration it reads is not valid",
            Failure::BadConversion => "a value it converts does not convert",
            Failure::Budget => "it ran past its budget and was stopped",
            Failure::Other => "it could not be evaluated",
        }
    }

    fn of(error: &ExecutionError) -> Failure {
        match error {
            ExecutionError::NoSuchKey(_) => Failure::Missing,
            ExecutionError::DivisionByZero(_) | ExecutionError::RemainderByZero(_) => {
                Failure::DivisionByZero
            }
            ExecutionError::Overflow(..) => Failure::Overflow,
            ExecutionError::IndexOutOfBounds(_) => Failure::IndexOutOfBounds,
            ExecutionError::FunctionError { function, message } => {
                if function == TICK {
                    Failure::Budget
                } else if message == TYPES_MESSAGE {
                    Failure::Types
                } else if matches!(function.as_str(), "timestamp" | "duration" | "date") {
                    Failure::BadTime
                } else if matches!(function.as_str(), "int" | "uint" | "double" | "bool") {
                    Failure::BadConversion
                } else {
                    Failure::Other
                }
            }
            ExecutionError::UnsupportedBinaryOperator(..)
            | ExecutionError::NoSuchOverload(_)
            | ExecutionError::UnexpectedType { .. }
            | ExecutionError::ValuesNotComparable(..)
            | ExecutionError::UnsupportedIndex(..)
            | ExecutionError::UnsupportedTargetType { .. }
            | ExecutionError::NotSupportedAsMethod { .. }
            | ExecutionError::UnsupportedKeyType(_) => Failure::Types,
            _ => Failure::Other,
        }
    }
}

const TYPES_MESSAGE: &str = "types";

/// The outcome of one clause.
#[derive(Debug, Clone, PartialEq)]
pub enum ClauseOutcome {
    Holds,
    /// False; for a comparison, its two sides as they may be shown; for an `all()`, the
    /// element (and the elements of the `all()`s inside it) where it was false.
    False {
        sides: Option<(String, &'static str, String)>,
        at: Vec<usize>,
    },
    Error(Failure),
}

/// One clause's outcome and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ClauseResult {
    pub pos: SourcePos,
    pub outcome: ClauseOutcome,
}

/// What a run may spend: comprehension steps, and CPU nanoseconds of this thread.
#[derive(Debug, Clone, Copy)]
pub struct RunBudget {
    pub steps: u64,
    pub cpu_ns: u64,
}

/// The output, converted once for every expression of a request and lent to each run as
/// `self` (never copied again).
pub struct Subject(Box<dyn Val>);

impl Subject {
    /// Convert the submitted output (numbers become doubles).
    pub fn of(output: &serde_json::Value) -> Subject {
        let converted: Result<Box<dyn Val>, ExecutionError> = to_cel(output).try_into();
        let null: Box<dyn Val> = Box::new(cel::common::types::CelNull);
        Subject(converted.unwrap_or(null))
    }
}

impl VariableResolver for Subject {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        (variable == "self").then(|| CowVal::Borrowed(self.0.as_ref()))
    }
}

fn to_cel(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_cel).collect()))
        }
        serde_json::Value::Object(map) => {
            let members: HashMap<String, Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            Value::from(members)
        }
    }
}

/// The standard environment, built once.
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// Run every clause of `expr` over `subject`.
pub fn run(expr: &Expression, subject: &Subject, budget: RunBudget) -> Vec<ClauseResult> {
    let meter = Arc::new(StepMeter {
        ticks: AtomicU64::new(0),
        started: thread_cpu_ns(),
        budget,
    });
    let mut ctx = Context::with_env(ENV.clone());
    ctx.set_variable_resolver(subject);
    if register(&mut ctx, expr, meter.clone()).is_err() {
        return expr
            .clauses
            .iter()
            .map(|c| ClauseResult {
                pos: c.pos,
                outcome: ClauseOutcome::Error(Failure::Other),
            })
            .collect();
    }
    expr.clauses
        .iter()
        .map(|clause| ClauseResult {
            pos: clause.pos,
            outcome: outcome(&clause.form, &ctx, expr.tolerance, &meter),
        })
        .collect()
}

/// What a run has spent, shared with its tick function.
struct StepMeter {
    ticks: AtomicU64,
    started: u64,
    budget: RunBudget,
}

impl StepMeter {
    /// Count a step; `Err` past the budget.
    fn tick(&self) -> Result<(), ExecutionError> {
        let n = self.ticks.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        let past_cpu = n.is_multiple_of(256)
            && thread_cpu_ns().saturating_sub(self.started) > self.budget.cpu_ns;
        if n > self.budget.steps || past_cpu {
            return Err(ExecutionError::function_error(TICK, "budget"));
        }
        Ok(())
    }
}

fn outcome(
    form: &ClauseForm,
    ctx: &Context<'_, '_>,
    tolerance: f64,
    meter: &StepMeter,
) -> ClauseOutcome {
    match form {
        ClauseForm::Condition(e) => match Value::resolve(e, ctx) {
            Ok(Value::Bool(true)) => ClauseOutcome::Holds,
            Ok(Value::Bool(false)) => ClauseOutcome::False {
                sides: None,
                at: Vec::new(),
            },
            Ok(_) => ClauseOutcome::Error(Failure::Types),
            Err(e) => ClauseOutcome::Error(Failure::of(&e)),
        },
        ClauseForm::Comparison { op, left, right } => {
            let sides =
                Value::resolve(left, ctx).and_then(|l| Value::resolve(right, ctx).map(|r| (l, r)));
            match sides {
                Err(e) => ClauseOutcome::Error(Failure::of(&e)),
                Ok((l, r)) => match op.apply(&l, &r, tolerance) {
                    Ok(true) => ClauseOutcome::Holds,
                    Ok(false) => ClauseOutcome::False {
                        sides: Some((shown(&l), op.symbol(), shown(&r))),
                        at: Vec::new(),
                    },
                    Err(f) => ClauseOutcome::Error(f),
                },
            }
        }
        ClauseForm::All {
            range,
            var,
            each,
            whole,
        } => {
            let items = match Value::resolve(range, ctx) {
                Ok(Value::List(items)) => items,
                // A map (its keys) or a value that is not a list: as the macro itself runs.
                Ok(_) => {
                    return outcome(&ClauseForm::Condition(whole.clone()), ctx, tolerance, meter);
                }
                Err(e) => return ClauseOutcome::Error(Failure::of(&e)),
            };
            // CEL's all(): false wins over an error at any element.
            let mut error = None;
            for (i, item) in items.iter().enumerate() {
                if let Err(e) = meter.tick() {
                    return ClauseOutcome::Error(Failure::of(&e));
                }
                let mut scope = ctx.new_inner_scope();
                scope.add_variable_from_value(var.as_str(), item.clone());
                match outcome(each, &scope, tolerance, meter) {
                    ClauseOutcome::Holds => {}
                    ClauseOutcome::False { sides, mut at } => {
                        at.insert(0, i);
                        return ClauseOutcome::False { sides, at };
                    }
                    ClauseOutcome::Error(Failure::Budget) => {
                        return ClauseOutcome::Error(Failure::Budget);
                    }
                    ClauseOutcome::Error(f) => error = error.or(Some(f)),
                }
            }
            error.map_or(ClauseOutcome::Holds, ClauseOutcome::Error)
        }
    }
}

fn register(
    ctx: &mut Context<'_, '_>,
    expr: &Expression,
    meter: Arc<StepMeter>,
) -> Result<(), cel::DeclarationError> {
    for op in Comparison::ALL {
        let tolerance = expr.tolerance;
        ctx.add_function(
            op.function(),
            move |a: Value, b: Value| -> Result<bool, ExecutionError> {
                op.apply(&a, &b, tolerance)
                    .map_err(|_| ExecutionError::function_error(op.function(), TYPES_MESSAGE))
            },
        )?;
    }
    ctx.add_function(TICK, move || -> Result<bool, ExecutionError> {
        meter.tick().map(|()| true)
    })?;
    let patterns: Arc<Vec<(String, regex::Regex)>> = Arc::new(
        expr.patterns
            .iter()
            .map(|(t, r, _)| (t.clone(), r.clone()))
            .collect(),
    );
    ctx.add_function(
        MATCHES,
        move |s: Arc<String>, p: Arc<String>| -> Result<bool, ExecutionError> {
            patterns
                .iter()
                .find(|(t, _)| t.as_str() == p.as_str())
                .map(|(_, r)| r.is_match(&s))
                .ok_or_else(|| ExecutionError::function_error(MATCHES, TYPES_MESSAGE))
        },
    )?;
    ctx.add_function("date", |s: Arc<String>| -> Result<Value, ExecutionError> {
        parse_date(&s)
            .map(Value::Timestamp)
            .ok_or_else(|| ExecutionError::function_error("date", "not a date"))
    })?;
    Ok(())
}

/// `YYYY-MM-DD` as midnight UTC, or an RFC 3339 timestamp; years 0001 to 9999 only, as CEL's
/// timestamps (chrono would read signed years up to ±262143, whose arithmetic overflows it).
fn parse_date(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    use chrono::Datelike;
    let four_digit_year = s.len() >= 10 && s.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    if !four_digit_year {
        return None;
    }
    let parsed = if s.len() == 10 {
        let day = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
        day.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset()
    } else {
        chrono::DateTime::parse_from_rfc3339(s).ok()?
    };
    (1..=9999).contains(&parsed.year()).then_some(parsed)
}

/// A value as a finding may show it: numbers, booleans, null, timestamps and durations in
/// full; strings, lists and maps only by their size (never the caller's text).
fn shown(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => crate::checks::numbers::py_float(*f),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Timestamp(t) => t.to_rfc3339(),
        Value::Duration(d) => format!("{}s", d.num_milliseconds() as f64 / 1000.0),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Bytes(b) => format!("{} bytes", b.len()),
        Value::List(l) => format!("a list of {}", l.len()),
        Value::Map(m) => format!("a map of {}", m.map.len()),
        _ => "a value".into(),
    }
}
