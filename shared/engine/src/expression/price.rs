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
use std::collections::HashMap;

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
        c::EXPR_SUBJECT_BYTES_PER_UNIT.saturating_mul(units),
    )
}

fn units_of(output: &Shape) -> u64 {
    output
        .values
        .saturating_add(output.string_bytes)
        .saturating_add(output.key_bytes)
}

/// Price `expr` over `output` (whose shape is `shape`); `source_len` bytes were parsed.
pub fn estimate(
    expr: &Expression,
    output: &serde_json::Value,
    shape: &Shape,
    source_len: usize,
) -> ExpressionCost {
    let mut pricer = Pricer {
        output,
        whole: shape,
        whole_units: units_of(shape),
        work_left: shape
            .values
            .saturating_mul(PRICER_WORK_PER_VALUE)
            .saturating_add(PRICER_WORK_FLOOR),
        resolved: HashMap::new(),
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

/// A step of a path into the output: a member by name, or any element or member.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Step {
    Key(String),
    Any,
}

/// What the pricer knows of a value: the most elements (or string bytes) it can have, its
/// units, and, when it is a value of the output, the path pattern it was read at (so its
/// elements are bounded by the output's own elements there, not by the whole output).
#[derive(Debug, Clone)]
struct Abs {
    len: u64,
    units: u64,
    path: Option<Vec<Step>>,
    /// Its elements, when they are known better than by `units` (a map's or filter's result).
    elem: Option<Box<Abs>>,
}

impl Abs {
    fn scalar() -> Abs {
        Abs::sized(1, 1)
    }

    fn sized(len: u64, units: u64) -> Abs {
        Abs {
            len,
            units,
            path: None,
            elem: None,
        }
    }

    /// The larger of two bounds.
    fn join(&self, other: &Abs) -> Abs {
        let path = match (&self.path, &other.path) {
            (Some(a), Some(b)) if a == b => Some(a.clone()),
            _ => None,
        };
        let elem = match (&self.elem, &other.elem) {
            (Some(a), Some(b)) => Some(Box::new(a.join(b))),
            _ if path.is_some() => self.elem.clone(),
            _ => None,
        };
        Abs {
            len: self.len.max(other.len),
            units: self.units.max(other.units),
            elem,
            path,
        }
    }
}

/// A node's bound: its value, and what evaluating it costs in all.
#[derive(Debug, Clone)]
struct Walked {
    abs: Abs,
    cost: Cost,
}

/// Output values the pricer may visit resolving paths, per value of the output (and a floor).
pub const PRICER_WORK_PER_VALUE: u64 = 8;
const PRICER_WORK_FLOOR: u64 = 10_000;

struct Pricer<'p> {
    output: &'p serde_json::Value,
    /// The output's shape, and its units: the bound of any value in it.
    whole: &'p Shape,
    whole_units: u64,
    /// Visits left for resolving paths.
    work_left: u64,
    /// Path patterns already resolved: (most elements, most units) of the values there.
    resolved: HashMap<Vec<Step>, (u64, u64)>,
    /// Bound variables: name, bound, whether it is an accumulator a `map`/`filter` appends to.
    scope: Vec<(String, Abs, bool)>,
    patterns: &'p [(String, regex::Regex, u64)],
    steps: u64,
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// Units of a value: one per value, one per string or key byte; `None` when counting them
/// would visit more than `work_left` values (which is charged for what was visited).
fn units(v: &serde_json::Value, work_left: &mut u64) -> Option<u64> {
    let mut n = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        *work_left = work_left.checked_sub(1)?;
        n = n.saturating_add(1);
        match v {
            serde_json::Value::String(s) => n = n.saturating_add(s.len() as u64),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => {
                for (k, item) in map {
                    n = n.saturating_add(k.len() as u64);
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    Some(n)
}

fn len_of(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::String(s) => s.len() as u64,
        serde_json::Value::Array(items) => items.len() as u64,
        serde_json::Value::Object(map) => map.len() as u64,
        _ => 1,
    }
}

impl Pricer<'_> {
    /// The value read at `path` in the output: the most elements and units of any value there.
    /// Resolving paths is work done before the price is known, so it is capped
    /// ([`PRICER_WORK_PER_VALUE`] visits per output value); past the cap a path is bounded by
    /// the whole output, which is coarser but still an upper bound.
    fn at_path(&mut self, path: Vec<Step>) -> Abs {
        let found = match self.resolved.get(&path) {
            Some(found) => Some(*found),
            None => {
                let found = self.resolve(&path);
                if let Some(found) = found {
                    self.resolved.insert(path.clone(), found);
                }
                found
            }
        };
        let (len, units_max) = found.unwrap_or((self.whole.values, self.whole_units));
        Abs {
            len,
            units: units_max,
            path: Some(path),
            elem: None,
        }
    }

    /// Walk `path` in the output within the work left: (most elements, most units) there.
    fn resolve(&mut self, path: &[Step]) -> Option<(u64, u64)> {
        let mut current = vec![self.output];
        // A macro over a map iterates its keys: they bound its elements too.
        let mut longest_key = 0u64;
        for step in path {
            let mut next = Vec::new();
            longest_key = 0;
            for v in current {
                self.work_left = self.work_left.checked_sub(1)?;
                match (step, v) {
                    (Step::Key(k), serde_json::Value::Object(map)) => next.extend(map.get(k)),
                    (Step::Any, serde_json::Value::Object(map)) => {
                        longest_key = map.keys().fold(longest_key, |m, k| m.max(k.len() as u64));
                        next.extend(map.values());
                    }
                    (Step::Any, serde_json::Value::Array(items)) => next.extend(items),
                    _ => {}
                }
            }
            current = next;
        }
        let mut found = (longest_key.max(1), longest_key.saturating_add(1));
        for v in current {
            let u = units(v, &mut self.work_left)?;
            found = (found.0.max(len_of(v)), found.1.max(u));
        }
        Some(found)
    }

    /// The bound of an element (or member value) of `container`.
    fn element(&mut self, container: &Abs) -> Abs {
        if let Some(elem) = &container.elem {
            return (**elem).clone();
        }
        match &container.path {
            Some(path) => {
                let mut p = path.clone();
                p.push(Step::Any);
                self.at_path(p)
            }
            None => Abs::sized(container.units, container.units),
        }
    }

    /// `operand.field`, or `operand[key]` with a literal key.
    fn member(&mut self, operand: &Abs, key: Option<&str>) -> Abs {
        match (&operand.path, key) {
            (Some(path), Some(k)) => {
                let mut p = path.clone();
                p.push(Step::Key(k.to_owned()));
                self.at_path(p)
            }
            _ => self.element(operand),
        }
    }

    /// Price `e` evaluated `times` times.
    fn walk(&mut self, e: &IdedExpr, times: u64) -> Walked {
        let node = |extra_ns: u64, bytes: u64| {
            Cost::new(
                mul(times, c::EXPR_NODE_NS.saturating_add(extra_ns)),
                mul(times, bytes),
            )
        };
        match &e.expr {
            Expr::Literal(l) => {
                let n = match l {
                    LiteralValue::String(s) => s.inner().len() as u64,
                    LiteralValue::Bytes(b) => b.inner().len() as u64,
                    _ => 0,
                };
                Walked {
                    abs: Abs::sized(n.max(1), 1 + n),
                    cost: node(0, 0),
                }
            }
            Expr::Ident(name) => {
                let abs = match self.scope.iter().rev().find(|(n, _, _)| n == name) {
                    Some((_, abs, _)) => abs.clone(),
                    None if name == "self" => self.at_path(Vec::new()),
                    None => Abs::scalar(),
                };
                Walked {
                    abs,
                    cost: node(0, 0),
                }
            }
            Expr::Select(s) => {
                let operand = self.walk(&s.operand, times);
                let abs = if s.test {
                    Abs::scalar()
                } else {
                    self.member(&operand.abs, Some(&s.field))
                };
                Walked {
                    abs,
                    cost: operand.cost.plus(node(c::EXPR_CALL_NS, c::EXPR_NODE_BYTES)),
                }
            }
            Expr::List(list) => {
                let mut total = Cost::ZERO;
                let mut units = 1u64;
                // An empty list's elements are nothing (a filter's accumulator starts as one).
                let mut elem: Option<Abs> = list.elements.is_empty().then(|| Abs::sized(0, 0));
                for el in &list.elements {
                    let w = self.walk(el, times);
                    total = total.plus(w.cost);
                    units = units.saturating_add(w.abs.units);
                    elem = Some(match elem {
                        Some(prev) => prev.join(&w.abs),
                        None => w.abs,
                    });
                }
                Walked {
                    abs: Abs {
                        len: list.elements.len().max(1) as u64,
                        units,
                        path: None,
                        elem: elem.map(Box::new),
                    },
                    cost: total.plus(node(
                        mul(units, c::EXPR_COPY_NS_PER_UNIT),
                        mul(units, c::EXPR_BYTES_PER_UNIT),
                    )),
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
                            units = units.saturating_add(w.abs.units);
                        }
                    }
                }
                Walked {
                    abs: Abs::sized(map.entries.len().max(1) as u64, units),
                    cost: total.plus(node(
                        mul(units, c::EXPR_COPY_NS_PER_UNIT),
                        mul(units, c::EXPR_BYTES_PER_UNIT),
                    )),
                }
            }
            Expr::Comprehension(comp) => self.comprehension(comp, times),
            Expr::Call(call) => {
                let target = call.target.as_deref().map(|t| self.walk(t, times));
                let args: Vec<Walked> = call.args.iter().map(|a| self.walk(a, times)).collect();
                let mut total = target.as_ref().map_or(Cost::ZERO, |t| t.cost);
                for a in &args {
                    total = total.plus(a.cost);
                }
                let operands: Vec<&Abs> =
                    target.iter().chain(args.iter()).map(|w| &w.abs).collect();
                let (abs, extra_ns, bytes) = self.call_price(call, &operands);
                Walked {
                    abs,
                    cost: total.plus(node(extra_ns, bytes)),
                }
            }
            Expr::Struct(_) | Expr::Unspecified => Walked {
                abs: Abs::scalar(),
                cost: node(0, 0),
            },
        }
    }

    fn comprehension(&mut self, comp: &cel::common::ast::ComprehensionExpr, times: u64) -> Walked {
        let range = self.walk(&comp.iter_range, times);
        let init = self.walk(&comp.accu_init, times);
        let n = range.abs.len;
        let inner = mul(times, n);
        self.steps = self.steps.saturating_add(inner);
        let appends = matches!(comp.loop_cond.expr, Expr::Literal(_));
        let item = self.element(&range.abs);
        // The accumulator first as it starts, to learn what one step adds; then as large as
        // n steps can make it.
        self.scope
            .push((comp.accu_var.clone(), init.abs.clone(), appends));
        let accu_at = self.scope.len() - 1;
        self.scope
            .push((comp.iter_var.clone(), item.clone(), false));
        if let Some(v2) = &comp.iter_var2 {
            self.scope.push((v2.clone(), item.clone(), false));
        }
        // The step is walked once, with the accumulator as it starts: the macros' steps only
        // fold a boolean or count into it, or append to it (priced per element appended), so
        // no step's cost depends on how large it has grown. Walking it twice would price nested
        // comprehensions in 2^depth walks.
        let cond = self.walk(&comp.loop_cond, inner);
        let step = self.walk(&comp.loop_step, inner);
        // A step that makes the accumulator larger (a map's or filter's append) may do so on
        // every one of the n steps; one that does not (all, exists) leaves it as large as one
        // step makes it.
        let grown = step.abs.units.saturating_sub(init.abs.units);
        let accu = Abs {
            len: init.abs.len.saturating_add(if grown > 0 { n } else { 0 }),
            units: init
                .abs
                .units
                .max(step.abs.units)
                .saturating_add(mul(n, grown)),
            path: None,
            elem: step.abs.elem.clone(),
        };
        self.scope[accu_at].1 = accu.clone();
        let result = self.walk(&comp.result, times);
        self.scope.truncate(accu_at);
        // Each step binds a copy of its element (the interpreter clones it), and the range
        // may be converted whole once (an `all()` clause run element by element).
        let copies = mul(inner, item.units).saturating_add(mul(times, range.abs.units));
        let iterations = Cost::new(
            mul(inner, c::EXPR_ITERATION_NS).saturating_add(mul(copies, c::EXPR_COPY_NS_PER_UNIT)),
            mul(inner, c::EXPR_ITERATION_BYTES)
                .saturating_add(mul(times, mul(accu.units, c::EXPR_BYTES_PER_UNIT)))
                .saturating_add(mul(
                    times,
                    mul(
                        item.units.saturating_add(range.abs.units),
                        c::EXPR_BYTES_PER_UNIT,
                    ),
                )),
        );
        Walked {
            abs: result.abs,
            cost: range
                .cost
                .plus(init.cost)
                .plus(cond.cost)
                .plus(step.cost)
                .plus(result.cost)
                .plus(iterations),
        }
    }

    /// One call's own price: (its result, CPU beyond a node, bytes it allocates).
    fn call_price(
        &mut self,
        call: &cel::common::ast::CallExpr,
        operands: &[&Abs],
    ) -> (Abs, u64, u64) {
        let sum: u64 = operands.iter().fold(0u64, |a, o| a.saturating_add(o.units));
        let first = operands.first().map_or_else(Abs::scalar, |a| (*a).clone());
        let copy = |units: u64| {
            (
                mul(units, c::EXPR_COPY_NS_PER_UNIT),
                mul(units, c::EXPR_BYTES_PER_UNIT),
            )
        };
        let scan =
            |units: u64| c::EXPR_CALL_NS.saturating_add(mul(units, c::EXPR_SCAN_NS_PER_UNIT));
        match call.func_name.as_str() {
            operators::ADD => {
                let second = operands.get(1).map_or_else(Abs::scalar, |a| (*a).clone());
                // Appending to a map/filter accumulator is amortised per element.
                let appended = matches!(
                    call.args.first().map(|a| &a.expr),
                    Some(Expr::Ident(name)) if self.scope.iter().rev().any(|(n, _, appends)| n == name && *appends)
                );
                let copied = if appended { second.units } else { sum };
                let (ns, bytes) = copy(copied);
                let elem = match (&first.elem, &second.elem) {
                    (Some(a), Some(b)) => Some(Box::new(a.join(b))),
                    (Some(a), None) | (None, Some(a)) if appended => Some(a.clone()),
                    _ => None,
                };
                let abs = Abs {
                    len: first.len.saturating_add(second.len),
                    units: sum,
                    path: None,
                    elem,
                };
                (abs, ns, bytes)
            }
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
            | operators::IN => {
                let (ns, bytes) = copy(sum);
                (Abs::scalar(), c::EXPR_CALL_NS.saturating_add(ns), bytes)
            }
            operators::INDEX => {
                let key = match call.args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(k))) => Some(k.inner().to_owned()),
                    _ => None,
                };
                let abs = self.member(&first, key.as_deref());
                (abs, c::EXPR_CALL_NS, c::EXPR_NODE_BYTES)
            }
            operators::CONDITIONAL => {
                let abs = match (operands.get(1), operands.get(2)) {
                    (Some(a), Some(b)) => a.join(b),
                    _ => Abs::scalar(),
                };
                (abs, 0, 0)
            }
            // The interpreter's own operators on booleans and numbers: nothing beyond the node.
            operators::LOGICAL_AND
            | operators::LOGICAL_OR
            | operators::LOGICAL_NOT
            | operators::NOT_STRICTLY_FALSE
            | operators::NEGATE
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO => (Abs::scalar(), 0, 0),
            "size" | "contains" | "startsWith" | "endsWith" => (Abs::scalar(), scan(sum), 0),
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
                let ns = c::EXPR_CALL_NS
                    .saturating_add(c::MATCH_BASE_NS)
                    .saturating_add(mul(first.units, per_byte));
                (Abs::scalar(), ns, 0)
            }
            // A conversion to text or bytes is as long as what it converts (a number or a
            // timestamp prints in at most 40 bytes).
            "string" | "bytes" => {
                let n = first.units.max(40);
                let (ns, bytes) = copy(n);
                (Abs::sized(n, n), c::EXPR_CALL_NS.saturating_add(ns), bytes)
            }
            "dyn" => (first, 0, 0),
            // Conversions, timestamps, dates, durations, date parts, logic, arithmetic: a
            // call that reads its operands once and makes a small value.
            _ => (Abs::scalar(), scan(sum), c::EXPR_NODE_BYTES),
        }
    }
}
