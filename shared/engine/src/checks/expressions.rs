//! Findings and integrity checks of `expression` rules: one check per clause (top-level `&&`
//! operand), a finding per rule that does not hold, naming the rule by its position and the
//! first clause that failed by line and column, with the two sides of a comparison where they
//! are numbers, booleans, dates or sizes (never the caller's strings).

use super::tally::Tally;
use super::{Finding, Severity};
use crate::expression::ExpressionRule;
use crate::expression::eval::{self, ClauseOutcome, RunBudget, Subject};
use crate::expression::price::ExpressionCost;

/// How far past its estimate an expression's run may go before it is stopped.
const RUN_MARGIN: u64 = 8;
/// The least CPU a run is allowed (the thread's clock is read every 256 steps).
const RUN_FLOOR_NS: u64 = 2_000_000;

/// The check name findings carry.
pub const CHECK: &str = "consistency:expression";

/// Run one expression rule, priced at `priced`, under at most `cpu_ns`: its finding (`None`
/// when it holds) and its checks.
pub fn check_expression(
    rule: &ExpressionRule,
    subject: &Subject,
    priced: ExpressionCost,
    cpu_ns: u64,
    enforce: bool,
) -> (Option<Finding>, Tally) {
    let results = eval::run(
        &rule.expression,
        subject,
        RunBudget {
            steps: priced.steps,
            // The estimate is an upper bound (by 2.7× at least on the cost-bound corpus); a run
            // eight times past it, or past the request's ceiling, is stopped.
            cpu_ns: priced
                .cost
                .cpu_ns
                .saturating_mul(RUN_MARGIN)
                .max(RUN_FLOOR_NS)
                .min(cpu_ns),
        },
    );
    let mut tally = Tally::default();
    let failed = results
        .iter()
        .filter(|r| r.outcome != ClauseOutcome::Holds)
        .count();
    tally.add(results.len(), failed);
    // CEL's `&&`: false wins over an error.
    let first_false = results
        .iter()
        .enumerate()
        .find(|(_, r)| matches!(r.outcome, ClauseOutcome::False { .. }));
    let first_error = results
        .iter()
        .enumerate()
        .find(|(_, r)| matches!(r.outcome, ClauseOutcome::Error(_)));
    let Some((i, result)) = first_false.or(first_error) else {
        return (None, tally);
    };
    let clause = if results.len() > 1 {
        format!("clause {} of {} (at {})", i + 1, results.len(), result.pos)
    } else {
        format!("the expression (at {})", result.pos)
    };
    let (found, detail) = match &result.outcome {
        ClauseOutcome::False { sides, at } => {
            let element = if at.is_empty() {
                String::new()
            } else {
                let path: Vec<String> = at.iter().map(|i| format!("[{i}]")).collect();
                format!(" for element {} of all()", path.join(""))
            };
            let compared = match sides {
                Some((left, op, right)) => format!(": {left} {op} {right} does not hold"),
                None => String::new(),
            };
            (
                "false".to_owned(),
                format!("{clause} is false{element}{compared}"),
            )
        }
        ClauseOutcome::Error(f) => (
            "an error".to_owned(),
            format!("{clause} could not be evaluated: {}", f.describe()),
        ),
        ClauseOutcome::Holds => return (None, tally),
    };
    let name = rule.name();
    let prefix = if enforce { "enforce_rules: " } else { "" };
    let finding = Finding {
        check: CHECK.to_owned(),
        source: "integrity",
        path: "$".to_owned(),
        field: name.clone(),
        message: format!("{prefix}{CHECK} {name}: {detail}"),
        expected: "true".to_owned(),
        found,
        detail,
        severity: if enforce {
            Severity::Error
        } else {
            Severity::Warning
        },
        blocking: enforce,
    };
    (Some(finding), tally)
}
