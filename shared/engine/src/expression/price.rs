//! What an expression will cost, from its syntax tree and the output's sizes, before it runs.
//!
//! Every value an expression can hold is bounded in *units* (one per value, one per string
//! byte): a value read from the output by the output's own size; a literal by its size; `a + b`
//! by the sum; a `map` by its range's length times its body's; a filter by its range. Every node
//! costs its evaluation (`NODE_NS`) times how often it runs — the product of the lengths of the
//! comprehensions around it — plus, where it copies, compares or scans values, a price per unit
//! of them. So nested comprehensions multiply, `s + s + s` grows linearly, and a `matches` on a
//! long string pays for its length. Memory is bounded the same way by everything the run
//! allocates (a sum, never freed in the bound). The constants are measured with a margin
//! ([`crate::cost::calibration`]); `tests/cost_bound.rs` checks the bound against real runs.

use super::Expression;
use crate::cost::Cost;
use crate::cost::calibration as c;
use crate::cost::size::Shape;
use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue, operators};

/// An expression's price, and the comprehension steps its run may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpressionCost {
    pub cost: Cost,
    pub steps: u64,
}

/// Converting the output for the expressions of a request (once per request).
pub fn subject_cost(output: &Shape) -> Cost {
    let units = units_of(output);
    Cost::new(
        c::EXPR_CONVERT_NS_PER_UNIT.saturating_mul(units),
        c::EXPR_BYTES_PER_UNIT.saturating_mul(units),
    )
}

fn units_of(output: &Shape) -> u64 {
    output
        .values
        .saturating_add(output.string_bytes)
        .saturating_add(output.key_bytes)
}

/// Price `expr` over an output of `output`'s shape; `source_len` bytes were parsed.
pub fn estimate(expr: &Expression, output: &Shape, source_len: usize) -> ExpressionCost {
    let mut pricer = Pricer {
        doc: units_of(output),
        scope: Vec::new(),
        patterns: &expr.patterns,
        steps: 0,
    };
    let walked = pricer.walk(&expr.parsed, 1);
    let patterns =
        (expr.patterns.len() as u64).saturating_mul(super::check::PATTERN_SIZE_LIMIT as u64 * 2);
    let base = Cost::new(
        c::EXPR_BASE_NS.saturating_add(c::EXPR_PARSE_NS_PER_BYTE.saturating_mul(source_len as u64)),
        c::EXPR_BASE_BYTES.saturating_add(patterns),
    );
    ExpressionCost {
        cost: base.plus(walked.cost),
        steps: pricer.steps,
    }
}

/// A node's bound: the units of its value, and what evaluating it costs in all.
#[derive(Debug, Clone, Copy)]
struct Walked {
    units: u64,
    cost: Cost,
}

struct Pricer<'p> {
    /// Units of the output.
    doc: u64,
    /// Bound variables: name, units, whether it is an accumulator a `map`/`filter` appends to.
    scope: Vec<(String, u64, bool)>,
    patterns: &'p [(String, regex::Regex, u64)],
    steps: u64,
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

impl Pricer<'_> {
    /// Price `e` evaluated `times` times.
    fn walk(&mut self, e: &IdedExpr, times: u64) -> Walked {
        let node = |units: u64, extra_ns: u64, bytes: u64| Walked {
            units,
            cost: Cost::new(
                mul(times, c::EXPR_NODE_NS.saturating_add(extra_ns)),
                mul(times, bytes),
            ),
        };
        match &e.expr {
            Expr::Literal(l) => {
                let units = match l {
                    LiteralValue::String(s) => 1 + s.inner().len() as u64,
                    LiteralValue::Bytes(b) => 1 + b.inner().len() as u64,
                    _ => 1,
                };
                node(units, 0, 0)
            }
            Expr::Ident(name) => {
                let units = self
                    .scope
                    .iter()
                    .rev()
                    .find(|(n, _, _)| n == name)
                    .map_or(if name == "self" { self.doc } else { 1 }, |(_, u, _)| *u);
                node(units, 0, 0)
            }
            Expr::Select(s) => {
                let operand = self.walk(&s.operand, times);
                let here = node(operand.units, c::EXPR_CALL_NS, c::EXPR_NODE_BYTES);
                Walked {
                    units: if s.test { 1 } else { operand.units },
                    cost: operand.cost.plus(here.cost),
                }
            }
            Expr::List(list) => {
                let mut total = Cost::ZERO;
                let mut units = 1u64;
                for el in &list.elements {
                    let w = self.walk(el, times);
                    total = total.plus(w.cost);
                    units = units.saturating_add(w.units);
                }
                let here = node(units, 0, mul(units, c::EXPR_BYTES_PER_UNIT));
                Walked {
                    units,
                    cost: total.plus(here.cost),
                }
            }
            Expr::Map(map) => {
                let mut total = Cost::ZERO;
                let mut units = 1u64;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        for part in [&me.key, &me.value] {
                            let w = self.walk(part, times);
                            total = total.plus(w.cost);
                            units = units.saturating_add(w.units);
                        }
                    }
                }
                let here = node(
                    units,
                    mul(units, c::EXPR_COPY_NS_PER_UNIT),
                    mul(units, c::EXPR_BYTES_PER_UNIT),
                );
                Walked {
                    units,
                    cost: total.plus(here.cost),
                }
            }
            Expr::Comprehension(comp) => {
                let range = self.walk(&comp.iter_range, times);
                let init = self.walk(&comp.accu_init, times);
                let n = range.units;
                self.steps = self.steps.saturating_add(mul(times, n));
                let inner = mul(times, n);
                let appends = matches!(comp.loop_cond.expr, Expr::Literal(_));
                // The accumulator first as it starts, to learn what one step adds; then as
                // large as n steps can make it.
                self.scope
                    .push((comp.accu_var.clone(), init.units, appends));
                self.scope.push((comp.iter_var.clone(), range.units, false));
                if let Some(v2) = &comp.iter_var2 {
                    self.scope.push((v2.clone(), range.units, false));
                }
                let steps_before = self.steps;
                let first = self.walk(&comp.loop_step, 1);
                self.steps = steps_before;
                let accu_units = init
                    .units
                    .saturating_add(mul(n, first.units.saturating_sub(init.units).max(1)));
                let bound = self.scope.len() - 2 - usize::from(comp.iter_var2.is_some());
                self.scope[bound].1 = accu_units;
                let cond = self.walk(&comp.loop_cond, inner);
                let step = self.walk(&comp.loop_step, inner);
                let result = self.walk(&comp.result, times);
                self.scope.truncate(bound);
                let iterations = Cost::new(
                    mul(inner, c::EXPR_ITERATION_NS),
                    mul(inner, c::EXPR_ITERATION_BYTES)
                        .saturating_add(mul(times, mul(accu_units, c::EXPR_BYTES_PER_UNIT))),
                );
                Walked {
                    units: result.units,
                    cost: range
                        .cost
                        .plus(init.cost)
                        .plus(cond.cost)
                        .plus(step.cost)
                        .plus(result.cost)
                        .plus(iterations),
                }
            }
            Expr::Call(call) => {
                let target = call.target.as_deref().map(|t| self.walk(t, times));
                let args: Vec<Walked> = call.args.iter().map(|a| self.walk(a, times)).collect();
                let mut total = target.map_or(Cost::ZERO, |t| t.cost);
                for a in &args {
                    total = total.plus(a.cost);
                }
                let operands: Vec<u64> =
                    target.iter().chain(args.iter()).map(|w| w.units).collect();
                let sum: u64 = operands.iter().fold(0u64, |a, b| a.saturating_add(*b));
                let first = operands.first().copied().unwrap_or(1);
                let (units, extra_ns, bytes) = self.call_price(call, &operands, sum, first);
                Walked {
                    units,
                    cost: total.plus(node(units, extra_ns, bytes).cost),
                }
            }
            Expr::Struct(_) | Expr::Unspecified => node(1, 0, 0),
        }
    }

    /// One call's own price: (units of its result, CPU beyond a node, bytes it allocates).
    fn call_price(
        &self,
        call: &cel::common::ast::CallExpr,
        operands: &[u64],
        sum: u64,
        first: u64,
    ) -> (u64, u64, u64) {
        let copy = |units: u64| {
            (
                mul(units, c::EXPR_COPY_NS_PER_UNIT),
                mul(units, c::EXPR_BYTES_PER_UNIT),
            )
        };
        match call.func_name.as_str() {
            operators::ADD => {
                // Appending to a map/filter accumulator is amortised per element.
                let appended = matches!(
                    call.args.first().map(|a| &a.expr),
                    Some(Expr::Ident(name)) if self.scope.iter().rev().any(|(n, _, appends)| n == name && *appends)
                );
                let copied = if appended {
                    operands.get(1).copied().unwrap_or(1)
                } else {
                    sum
                };
                let (ns, bytes) = copy(copied);
                (sum, ns, bytes)
            }
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
            | operators::IN => {
                let (ns, bytes) = copy(sum);
                (1, c::EXPR_CALL_NS.saturating_add(ns), bytes)
            }
            operators::INDEX => (first, c::EXPR_CALL_NS, c::EXPR_NODE_BYTES),
            operators::CONDITIONAL => (operands.iter().skip(1).copied().max().unwrap_or(1), 0, 0),
            "size" | "contains" | "startsWith" | "endsWith" => (
                1,
                c::EXPR_CALL_NS.saturating_add(mul(sum, c::EXPR_SCAN_NS_PER_UNIT)),
                0,
            ),
            "matches" => {
                let states = match call.args.last().map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(p))) => self
                        .patterns
                        .iter()
                        .find(|(t, _, _)| t.as_str() == p.inner())
                        .map_or(0, |(_, _, s)| *s),
                    _ => 0,
                };
                let per_byte = c::MATCH_PIKE_NS_PER_BYTE
                    .saturating_add(mul(c::MATCH_PIKE_NS_PER_STATE_BYTE, states));
                let text = if call.target.is_some() {
                    first
                } else {
                    operands.first().copied().unwrap_or(1)
                };
                (
                    1,
                    c::EXPR_CALL_NS
                        .saturating_add(c::MATCH_BASE_NS)
                        .saturating_add(mul(text, per_byte)),
                    0,
                )
            }
            "string" => {
                let units = first.max(32);
                let (ns, bytes) = copy(units);
                (units, c::EXPR_CALL_NS.saturating_add(ns), bytes)
            }
            "dyn" => (first, 0, 0),
            _ => {
                // Conversions, timestamps, dates, durations, date parts, logic, arithmetic:
                // a call that reads its operands once and makes a small value.
                (
                    1,
                    c::EXPR_CALL_NS.saturating_add(mul(sum, c::EXPR_SCAN_NS_PER_UNIT)),
                    c::EXPR_NODE_BYTES,
                )
            }
        }
    }
}
