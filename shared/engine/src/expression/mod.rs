//! The `expression` rule type: a CEL (Common Expression Language) expression over the submitted
//! output, `self`, that must be true — `self.total == self.subtotal + self.tax`.
//!
//! Like everything else it is read and priced before it runs:
//! - [`Expression::compile`] parses it (at most [`MAX_EXPRESSION_BYTES`], nesting at most
//!   [`MAX_NESTING`]) and type-checks it ([`check`]): an unknown function or name, a type error
//!   the checker can prove, or a result that cannot be a boolean is an error with its line and
//!   column, never with the caller's text;
//! - [`price`] bounds its CPU and memory from its syntax tree and the output's sizes
//!   (comprehensions multiply by the lengths of what they iterate);
//! - [`eval`] runs it over the output with this service's money rule (numbers within the rule's
//!   tolerance are equal) and stops it at its budget.
//!
//! Numbers in the output are CEL `double`s (JSON has one number type). Literals written without
//! a decimal point are `int`s: CEL compares the two freely but does not mix them in arithmetic
//! (`self.qty * 2.0`, or `double(size(self.lines))`); the checker says so where it can.

pub mod cache;
pub mod check;
pub mod eval;
pub mod price;
mod rewrite;
pub mod rule;

pub use rule::ExpressionRule;

use cel::IdedExpr;
use cel::common::ast::SourceInfo;
use std::fmt;

/// What an agent needs to write expression rules (the documents print it).
pub const GUIDE: &str = "`{\"type\": \"expression\", \"rule\": \"<CEL>\"}`: a CEL expression (cel.dev) over the output, `self`, that must be true. \
It is parsed and type-checked when the request arrives (a bad one is a 422 on rules[i].rule naming the line and column; nothing is charged), \
priced from its syntax tree and the output's sizes before it runs (nested comprehensions multiply: past the unpaid ceiling it is a 402, past the paid one a 422), and stopped if it outlasts its price. \
Numbers in the output are doubles; literals without a decimal point are ints, and CEL does not mix them in arithmetic (write `self.qty * 2.0`, `double(size(self.lines))`). \
Money rule: two numbers of which one is a double are equal when they differ by at most the rule's `tolerance` (default 1e-9) plus 2^-50 of the larger, so `0.1 * 3 == 0.3`; `<` holds only past that distance; ints (sizes, counts) compare exactly. `\"tolerance\": 0.005` compares amounts to the cent. \
Dates: `date(\"2026-02-15\")` is midnight UTC and also reads RFC 3339; `timestamp()`, `duration()` and the timestamp parts (`getFullYear()` …) as in CEL. \
Functions: size, contains, startsWith, endsWith, matches (a string-literal RE2 pattern, at most 256 bytes), has, all, exists, exists_one, filter, map, in, ?:, int, uint, double, string, bool, dyn, type, timestamp, duration, date. \
Each top-level `&&` operand is one integrity check; a finding names the rule (rules[i]) and the first clause that failed by line and column, with the two sides of a failed comparison when they are numbers, booleans or dates (strings, lists and maps only by size). \
Limits: 1,024 bytes per expression, 4,096 per request, nesting 32 deep, a syntax tree 64 deep. Dates: years 0001 to 9999. \
Examples: `self.total == self.subtotal + self.tax`; `self.lines.all(l, l.line_total == l.qty * l.unit_price)`; `date(self.due_date) > date(self.issue_date)`; `self.currency != 'EUR' || has(self.vat_id)`; `size(self.lines) >= 1 && self.discount <= 0.2 * self.subtotal`.";

/// Longest expression, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 1_024;
/// Most bytes of expressions in one request (parsing them is work done before pricing).
pub const MAX_EXPRESSION_BYTES_PER_REQUEST: usize = 4_096;
/// Deepest nesting of the parser's grammar rules (parentheses, operators, calls).
pub const MAX_NESTING: u16 = 32;
/// The function the budget tick calls (in every comprehension's loop).
pub(crate) const TICK: &str = "@tick";
/// The function `matches` is routed to (the patterns compiled at check time).
pub(crate) const MATCHES: &str = "@matches";
/// Deepest syntax tree (macros add about three levels each).
pub const MAX_TREE_DEPTH: usize = 64;
/// Longest `matches` pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256;

/// A place in an expression: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourcePos {
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for SourcePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Why an expression was refused before it ran; never contains the caller's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpressionError {
    #[error("is longer than {MAX_EXPRESSION_BYTES} bytes")]
    TooLong,
    #[error("is empty")]
    Empty,
    #[error("does not parse at {0}")]
    Syntax(SourcePos),
    #[error(
        "nests deeper than allowed ({MAX_NESTING} levels of parentheses and calls, a tree {MAX_TREE_DEPTH} deep)"
    )]
    TooDeep,
    #[error("calls a function this service does not offer at {0}")]
    UnknownFunction(SourcePos),
    #[error("names something other than self or a macro's variable at {0}")]
    UnknownName(SourcePos),
    #[error("uses syntax this service does not offer at {0} ({1})")]
    Unsupported(SourcePos, &'static str),
    #[error("has a type error at {0}: {1}")]
    Type(SourcePos, &'static str),
    #[error("yields {0}, not a boolean")]
    NotBoolean(&'static str),
    #[error("has a matches() pattern at {0} that {1}")]
    Pattern(SourcePos, &'static str),
}

impl ExpressionError {
    /// How to fix it, for the caller.
    pub fn fix(&self) -> &'static str {
        match self {
            ExpressionError::TooLong | ExpressionError::TooDeep => {
                "Split it into several expression rules."
            }
            ExpressionError::Empty => {
                "Send a CEL expression over self, e.g. \"self.total == self.subtotal + self.tax\"."
            }
            ExpressionError::Syntax(_) => {
                "Check the CEL syntax there: operators, quotes, parentheses, commas."
            }
            ExpressionError::UnknownFunction(_) => {
                "Use the functions the rule reference lists (size, contains, startsWith, endsWith, matches, has, all, exists, exists_one, filter, map, int, double, string, timestamp, duration, date, getFullYear…)."
            }
            ExpressionError::UnknownName(_) => {
                "Start paths at self (self.total), or use a variable a macro binds (self.lines.all(l, l.qty > 0.0))."
            }
            ExpressionError::Unsupported(..) => {
                "Write it with the syntax the rule reference lists."
            }
            ExpressionError::Type(..) => {
                "Numbers in the output are doubles: write literals with a decimal point (2.0) or convert with double(); compare dates through date() or timestamp()."
            }
            ExpressionError::NotBoolean(_) => {
                "Make the expression a condition, e.g. a comparison (==, <, >=…) or a macro such as all()."
            }
            ExpressionError::Pattern(..) => {
                "Write the pattern as a string literal of at most 256 bytes in RE2 syntax."
            }
        }
    }
}

/// A parsed, checked expression, ready to price and run.
#[derive(Debug)]
pub struct Expression {
    /// Its top-level `&&` operands, each checked and counted on its own.
    clauses: Vec<Clause>,
    /// The syntax tree as parsed (priced from).
    parsed: IdedExpr,
    /// Compiled `matches` patterns, by their text.
    patterns: Vec<(String, regex::Regex, u64)>,
    /// Numbers within this distance are equal.
    tolerance: f64,
    /// About how much memory it holds (its trees and patterns), for the cache.
    held_bytes: u64,
}

/// One top-level operand of `&&`.
#[derive(Debug)]
struct Clause {
    /// Where it starts.
    pos: SourcePos,
    /// A comparison whose two sides a finding may show, or any other condition.
    form: ClauseForm,
}

#[derive(Debug)]
enum ClauseForm {
    Comparison {
        op: eval::Comparison,
        left: IdedExpr,
        right: IdedExpr,
    },
    Condition(IdedExpr),
    /// `range.all(var, each)` over a list: run element by element to name the first one for
    /// which it is false; `whole` is the macro as written, for a range that is not a list.
    All {
        range: IdedExpr,
        var: String,
        each: Box<ClauseForm>,
        whole: IdedExpr,
    },
}

impl Expression {
    /// Parse and check `source`; numbers compare equal within `tolerance`.
    pub fn compile(source: &str, tolerance: f64) -> Result<Expression, ExpressionError> {
        if source.len() > MAX_EXPRESSION_BYTES {
            return Err(ExpressionError::TooLong);
        }
        if source.trim().is_empty() {
            return Err(ExpressionError::Empty);
        }
        let parser = cel::parser::Parser::new()
            .enable_optional_syntax(false)
            .max_recursion_depth(MAX_NESTING);
        let (parsed, info) = parser.parse_with_source_info(source).map_err(|errors| {
            let first = errors.errors.first();
            let too_deep = |e: &cel::ParseError| e.msg.to_ascii_lowercase().contains("recursion");
            if errors.errors.iter().any(too_deep) {
                return ExpressionError::TooDeep;
            }
            let pos = first.map_or(SourcePos { line: 1, column: 1 }, |e| SourcePos {
                line: e.pos.0.max(1) as u32,
                column: e.pos.1.max(1) as u32,
            });
            ExpressionError::Syntax(pos)
        })?;
        // The parser's limit counts nested parentheses and arguments, not chains of operators
        // or field selections (`a + b + c …`, `self.a.a.a …`): the tree's depth is bounded
        // here, before anything walks it recursively.
        let (depth, nodes) = tree_size(&parsed);
        if depth > MAX_TREE_DEPTH {
            return Err(ExpressionError::TooDeep);
        }
        let locate = Locator::new(source, &info);
        let patterns = check::check(&parsed, &locate)?;
        let clauses = rewrite::clauses(&parsed, &locate);
        // The parsed tree and the rewritten clauses (a copy of it with a few nodes added), about
        // 200 bytes a node; a compiled pattern up to its size limit.
        let held_bytes = (nodes as u64)
            .saturating_mul(2 * 200)
            .saturating_add(
                (patterns.len() as u64).saturating_mul(check::PATTERN_SIZE_LIMIT as u64),
            )
            .saturating_add(source.len() as u64);
        Ok(Expression {
            clauses,
            parsed,
            patterns,
            tolerance,
            held_bytes,
        })
    }

    /// How many clauses (top-level `&&` operands) it counts as integrity checks.
    pub fn clause_count(&self) -> usize {
        self.clauses.len()
    }
}

/// A map or struct entry's children.
fn entry_children(entry: &cel::common::ast::IdedEntryExpr) -> Vec<&IdedExpr> {
    use cel::common::ast::EntryExpr;
    match &entry.expr {
        EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
        EntryExpr::StructField(f) => vec![&f.value],
    }
}

/// A node's children.
pub(crate) fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    use cel::common::ast::Expr;
    match &e.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(call.args.iter())
            .collect(),
        Expr::Comprehension(c) => {
            vec![
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]
        }
        Expr::Select(s) => vec![&s.operand],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m.entries.iter().flat_map(entry_children).collect(),
        Expr::Struct(s) => s.entries.iter().flat_map(entry_children).collect(),
        _ => Vec::new(),
    }
}

/// The depth of a syntax tree and its nodes, found without recursion (its depth is not known
/// yet).
fn tree_size(root: &IdedExpr) -> (usize, usize) {
    let (mut deepest, mut nodes) = (0, 0);
    let mut stack = vec![(root, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        nodes += 1;
        stack.extend(children(e).into_iter().map(|c| (c, depth + 1)));
    }
    (deepest, nodes)
}

/// Finds the line and column of a syntax-tree node.
pub(crate) struct Locator<'a> {
    source: &'a str,
    info: &'a SourceInfo,
}

impl<'a> Locator<'a> {
    fn new(source: &'a str, info: &'a SourceInfo) -> Self {
        Locator { source, info }
    }

    /// Where node `id` starts (1:1 when the parser did not record it).
    pub(crate) fn pos(&self, id: u64) -> SourcePos {
        self.pos_at(self.offset(id).unwrap_or(0))
    }

    /// The character offset node `id` starts at.
    pub(crate) fn offset(&self, id: u64) -> Option<u32> {
        self.info.offset_for(id).map(|(start, _)| start)
    }

    /// Line and column (in characters) of a byte offset (the parser's offsets are bytes).
    pub(crate) fn pos_at(&self, start: u32) -> SourcePos {
        let (mut line, mut column) = (1u32, 1u32);
        let before = self
            .source
            .char_indices()
            .take_while(|(i, _)| *i < start as usize)
            .map(|(_, c)| c);
        for c in before {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        SourcePos { line, column }
    }
}

#[cfg(test)]
mod tests;
