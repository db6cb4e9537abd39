//! The static check of an expression, before anything is charged: every name is `self`, a
//! macro's variable or a type name; every function is one this service offers and prices; the
//! types it can prove are combined as CEL allows; the result can be a boolean. Values from the
//! output have a JSON type (`Json`: null, bool, double, string, list or map — never an int), so
//! `self.qty * 2` is refused here with the fix, instead of failing on every request.

use super::{ExpressionError, Locator, MAX_PATTERN_BYTES};
use cel::IdedExpr;
use cel::common::ast::{Expr, LiteralValue, operators};

/// What the checker knows of a value's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    List,
    Map,
    Timestamp,
    Duration,
    Type,
    /// A value from the output: null, bool, double, string, list or map.
    Json,
    /// Unknown.
    Dyn,
}

impl Ty {
    /// Whether a value of this type can be a `target` at run time.
    fn can_be(self, target: Ty) -> bool {
        match self {
            Ty::Dyn => true,
            Ty::Json => matches!(
                target,
                Ty::Null | Ty::Bool | Ty::Double | Ty::String | Ty::List | Ty::Map
            ),
            t => t == target,
        }
    }

    fn known(self) -> bool {
        !matches!(self, Ty::Dyn | Ty::Json)
    }

    fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The type's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Bool => "a boolean",
            Ty::Int => "an int",
            Ty::Uint => "a uint",
            Ty::Double => "a double",
            Ty::String => "a string",
            Ty::Bytes => "bytes",
            Ty::Null => "null",
            Ty::List => "a list",
            Ty::Map => "a map",
            Ty::Timestamp => "a timestamp",
            Ty::Duration => "a duration",
            Ty::Type => "a type",
            Ty::Json => "a value from the output",
            Ty::Dyn => "a value",
        }
    }
}

/// The names an expression may use without binding them: `self` and CEL's type names.
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "timestamp",
    "duration",
];

/// Member functions of timestamps (and durations, for the last four).
const TIME_PARTS: &[&str] = &[
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

pub(crate) const MIX_INT_TEXT: &str = "numbers in the output are doubles and CEL does not mix int and double in arithmetic: write the literal with a decimal point (2.0) or convert with double()";
const MIX: &str =
    "CEL does not mix int, uint and double in arithmetic: convert with double() or int()";

/// Check an expression; returns its compiled `matches` patterns (text, regex, NFA states).
pub(crate) fn check(
    expr: &IdedExpr,
    at: &Locator<'_>,
) -> Result<Vec<(String, regex::Regex, u64)>, ExpressionError> {
    let mut checker = Checker {
        at,
        scope: Vec::new(),
        patterns: Vec::new(),
    };
    let ty = checker.ty(expr)?;
    if !ty.can_be(Ty::Bool) {
        return Err(ExpressionError::NotBoolean(ty.name()));
    }
    Ok(checker.patterns)
}

struct Checker<'a, 'l> {
    at: &'a Locator<'l>,
    scope: Vec<(String, Ty)>,
    patterns: Vec<(String, regex::Regex, u64)>,
}

impl Checker<'_, '_> {
    fn type_error(&self, e: &IdedExpr, what: &'static str) -> ExpressionError {
        ExpressionError::Type(self.at.pos(e.id), what)
    }

    fn ty(&mut self, e: &IdedExpr) -> Result<Ty, ExpressionError> {
        match &e.expr {
            Expr::Literal(l) => Ok(match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            }),
            Expr::Ident(name) => {
                if name == "self" {
                    return Ok(Ty::Json);
                }
                if let Some((_, ty)) = self.scope.iter().rev().find(|(n, _)| n == name) {
                    return Ok(*ty);
                }
                if TYPE_NAMES.contains(&name.as_str()) {
                    return Ok(Ty::Type);
                }
                Err(ExpressionError::UnknownName(self.at.pos(e.id)))
            }
            Expr::Select(select) => {
                let operand = self.ty(&select.operand)?;
                if !operand.can_be(Ty::Map) {
                    return Err(
                        self.type_error(e, "a field is selected from a value that is not a map")
                    );
                }
                if select.test {
                    return Ok(Ty::Bool);
                }
                Ok(if operand == Ty::Json {
                    Ty::Json
                } else {
                    Ty::Dyn
                })
            }
            Expr::List(list) => {
                if !list.optional_indices.is_empty() {
                    return Err(ExpressionError::Unsupported(
                        self.at.pos(e.id),
                        "optional elements",
                    ));
                }
                for element in &list.elements {
                    self.ty(element)?;
                }
                Ok(Ty::List)
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        cel::common::ast::EntryExpr::MapEntry(m) if !m.optional => {
                            self.ty(&m.key)?;
                            self.ty(&m.value)?;
                        }
                        _ => {
                            return Err(ExpressionError::Unsupported(
                                self.at.pos(entry.id),
                                "this map entry",
                            ));
                        }
                    }
                }
                Ok(Ty::Map)
            }
            Expr::Struct(_) => Err(ExpressionError::Unsupported(
                self.at.pos(e.id),
                "message construction",
            )),
            Expr::Unspecified => Err(ExpressionError::Unsupported(
                self.at.pos(e.id),
                "an empty expression",
            )),
            Expr::Comprehension(c) => {
                let range = self.ty(&c.iter_range)?;
                if !(range.can_be(Ty::List) || range.can_be(Ty::Map)) {
                    return Err(self.type_error(
                        &c.iter_range,
                        "a macro iterates over a value that is not a list or map",
                    ));
                }
                let item = if range == Ty::Json { Ty::Json } else { Ty::Dyn };
                let accu = self.ty(&c.accu_init)?;
                self.scope.push((c.accu_var.clone(), accu));
                self.scope.push((c.iter_var.clone(), item));
                if let Some(second) = &c.iter_var2 {
                    self.scope.push((second.clone(), item));
                }
                let result = (|| {
                    self.ty(&c.loop_cond)?;
                    self.ty(&c.loop_step)?;
                    self.ty(&c.result)
                })();
                self.scope
                    .truncate(self.scope.len() - 2 - usize::from(c.iter_var2.is_some()));
                result
            }
            Expr::Call(call) => self.call(e, &call.func_name, call.target.as_deref(), &call.args),
        }
    }

    fn call(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> Result<Ty, ExpressionError> {
        let target_ty = match target {
            Some(t) => Some(self.ty(t)?),
            None => None,
        };
        let mut tys = Vec::with_capacity(args.len());
        for a in args {
            tys.push(self.ty(a)?);
        }
        let arity = |n: usize| -> Result<(), ExpressionError> {
            if tys.len() == n {
                Ok(())
            } else {
                Err(ExpressionError::UnknownFunction(self.at.pos(e.id)))
            }
        };
        if let Some(target_ty) = target_ty {
            return self.member(e, name, target_ty, &tys, args);
        }
        match name {
            operators::LOGICAL_AND | operators::LOGICAL_OR | operators::LOGICAL_NOT => {
                if tys.iter().any(|t| !t.can_be(Ty::Bool)) {
                    return Err(self.type_error(e, "&&, || and ! take booleans"));
                }
                Ok(Ty::Bool)
            }
            operators::NOT_STRICTLY_FALSE => Ok(Ty::Bool),
            operators::NEGATE => {
                arity(1)?;
                match tys[0] {
                    Ty::Json => Ok(Ty::Double),
                    t if t.numeric() || t == Ty::Duration || t == Ty::Dyn => Ok(t),
                    _ => Err(self.type_error(e, "- negates numbers and durations")),
                }
            }
            operators::ADD
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO => {
                arity(2)?;
                self.arithmetic(e, name, tys[0], tys[1])
            }
            operators::EQUALS | operators::NOT_EQUALS => {
                arity(2)?;
                let time = |t: Ty| matches!(t, Ty::Timestamp | Ty::Duration);
                if (time(tys[0]) && tys[1] == Ty::Json) || (time(tys[1]) && tys[0] == Ty::Json) {
                    return Err(self.type_error(e, "a timestamp or duration never equals a value from the output: convert it with date(), timestamp() or duration()"));
                }
                Ok(Ty::Bool)
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                arity(2)?;
                self.ordering(e, tys[0], tys[1])?;
                Ok(Ty::Bool)
            }
            operators::IN => {
                arity(2)?;
                if !(tys[1].can_be(Ty::List) || tys[1].can_be(Ty::Map)) {
                    return Err(self.type_error(e, "in needs a list or map on its right"));
                }
                Ok(Ty::Bool)
            }
            operators::INDEX => {
                arity(2)?;
                let (on, index) = (tys[0], tys[1]);
                if !(on.can_be(Ty::List) || on.can_be(Ty::Map)) {
                    return Err(self.type_error(e, "only lists and maps can be indexed"));
                }
                if on == Ty::List && index.known() && !matches!(index, Ty::Int | Ty::Uint) {
                    return Err(self.type_error(e, "a list index is an int: convert with int()"));
                }
                if on.known() && on != Ty::Map && index == Ty::Json {
                    return Err(self.type_error(e, "a list index is an int and numbers in the output are doubles: convert with int()"));
                }
                Ok(if on == Ty::Json { Ty::Json } else { Ty::Dyn })
            }
            operators::CONDITIONAL => {
                arity(3)?;
                if !tys[0].can_be(Ty::Bool) {
                    return Err(self.type_error(e, "the condition of ?: is a boolean"));
                }
                Ok(if tys[1] == tys[2] { tys[1] } else { Ty::Dyn })
            }
            "size" => {
                arity(1)?;
                self.sized(e, tys[0])
            }
            "int" | "uint" | "double" | "string" | "bool" | "bytes" => {
                arity(1)?;
                Ok(match name {
                    "int" => Ty::Int,
                    "uint" => Ty::Uint,
                    "double" => Ty::Double,
                    "string" => Ty::String,
                    "bool" => Ty::Bool,
                    _ => Ty::Bytes,
                })
            }
            "dyn" => {
                arity(1)?;
                Ok(Ty::Dyn)
            }
            "type" => {
                arity(1)?;
                Ok(Ty::Type)
            }
            "timestamp" | "date" | "duration" => {
                arity(1)?;
                let t = tys[0];
                let ok = match name {
                    "timestamp" => {
                        t.can_be(Ty::String) || t.can_be(Ty::Timestamp) || t.can_be(Ty::Int)
                    }
                    "date" => t.can_be(Ty::String),
                    _ => t.can_be(Ty::String) || t.can_be(Ty::Duration),
                };
                if !ok {
                    return Err(
                        self.type_error(e, "timestamp(), date() and duration() read strings")
                    );
                }
                Ok(if name == "duration" {
                    Ty::Duration
                } else {
                    Ty::Timestamp
                })
            }
            "matches" => {
                arity(2)?;
                if !tys[0].can_be(Ty::String) {
                    return Err(self.type_error(e, "matches() tests a string"));
                }
                self.pattern(&args[1])?;
                Ok(Ty::Bool)
            }
            _ => Err(ExpressionError::UnknownFunction(self.at.pos(e.id))),
        }
    }

    fn member(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Ty,
        tys: &[Ty],
        args: &[IdedExpr],
    ) -> Result<Ty, ExpressionError> {
        match (name, tys.len()) {
            ("contains" | "startsWith" | "endsWith", 1) => {
                if !target.can_be(Ty::String) || !tys[0].can_be(Ty::String) {
                    return Err(
                        self.type_error(e, "contains(), startsWith() and endsWith() take strings")
                    );
                }
                Ok(Ty::Bool)
            }
            ("matches", 1) => {
                if !target.can_be(Ty::String) {
                    return Err(self.type_error(e, "matches() tests a string"));
                }
                self.pattern(&args[0])?;
                Ok(Ty::Bool)
            }
            ("size", 0) => self.sized(e, target),
            (part, 0 | 1) if TIME_PARTS.contains(&part) => {
                let on_duration = matches!(
                    part,
                    "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
                );
                let fits =
                    target.can_be(Ty::Timestamp) || (on_duration && target.can_be(Ty::Duration));
                if !fits || target == Ty::Json {
                    return Err(self.type_error(e, "date parts are read from timestamps: call it on date(...) or timestamp(...)"));
                }
                if tys.len() == 1 && (!tys[0].can_be(Ty::String) || target == Ty::Duration) {
                    return Err(self.type_error(e, "a date part takes a time zone name, a string"));
                }
                Ok(Ty::Int)
            }
            _ => Err(ExpressionError::UnknownFunction(self.at.pos(e.id))),
        }
    }

    fn sized(&self, e: &IdedExpr, t: Ty) -> Result<Ty, ExpressionError> {
        if [Ty::List, Ty::Map, Ty::String, Ty::Bytes]
            .iter()
            .any(|k| t.can_be(*k))
        {
            Ok(Ty::Int)
        } else {
            Err(self.type_error(e, "size() measures strings, bytes, lists and maps"))
        }
    }

    fn arithmetic(&self, e: &IdedExpr, op: &str, a: Ty, b: Ty) -> Result<Ty, ExpressionError> {
        let modulo = op == operators::MODULO;
        let plus = op == operators::ADD;
        let minus = op == operators::SUBSTRACT;
        // A number from the output is a double, and % takes ints.
        if modulo && (a == Ty::Json || b == Ty::Json) {
            return Err(self.type_error(
                e,
                "% takes ints and numbers in the output are doubles: convert with int()",
            ));
        }
        match (a, b) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => Ok(Ty::Dyn),
            (Ty::Json, Ty::Json) => Ok(if plus { Ty::Json } else { Ty::Double }),
            (Ty::Json, k) | (k, Ty::Json) => match k {
                Ty::Int | Ty::Uint => Err(self.type_error(e, MIX_INT_TEXT)),
                Ty::Double if !modulo => Ok(Ty::Double),
                Ty::String | Ty::List if plus => Ok(k),
                _ => Err(self.type_error(
                    e,
                    "these types cannot be combined with a value from the output",
                )),
            },
            (x, y) if x.numeric() && y.numeric() => {
                if x != y {
                    Err(self.type_error(e, MIX))
                } else if modulo && x == Ty::Double {
                    Err(self.type_error(e, "% takes ints"))
                } else {
                    Ok(x)
                }
            }
            (Ty::String, Ty::String) | (Ty::Bytes, Ty::Bytes) | (Ty::List, Ty::List) if plus => {
                Ok(a)
            }
            (Ty::Timestamp, Ty::Duration) if plus || minus => Ok(Ty::Timestamp),
            (Ty::Duration, Ty::Timestamp) if plus => Ok(Ty::Timestamp),
            (Ty::Duration, Ty::Duration) if plus || minus => Ok(Ty::Duration),
            (Ty::Timestamp, Ty::Timestamp) if minus => Ok(Ty::Duration),
            _ => Err(self.type_error(e, "these types cannot be combined with this operator")),
        }
    }

    fn ordering(&self, e: &IdedExpr, a: Ty, b: Ty) -> Result<(), ExpressionError> {
        let class = |t: Ty| -> u8 {
            match t {
                Ty::Int | Ty::Uint | Ty::Double => 1,
                Ty::String => 2,
                Ty::Bool => 3,
                Ty::Timestamp => 4,
                Ty::Duration => 5,
                Ty::Bytes => 6,
                _ => 0,
            }
        };
        let (ca, cb) = (class(a), class(b));
        let time = |c: u8| c == 4 || c == 5;
        if (a == Ty::Json && time(cb)) || (b == Ty::Json && time(ca)) {
            return Err(self.type_error(
                e,
                "timestamps compare with timestamps: wrap the other side in date() or timestamp()",
            ));
        }
        if a.known() && b.known() && (ca == 0 || cb == 0 || ca != cb) {
            return Err(self.type_error(e, "these types cannot be ordered against each other"));
        }
        Ok(())
    }

    /// A `matches` pattern: a string literal that compiles, kept compiled.
    fn pattern(&mut self, arg: &IdedExpr) -> Result<(), ExpressionError> {
        let Expr::Literal(LiteralValue::String(text)) = &arg.expr else {
            return Err(ExpressionError::Pattern(
                self.at.pos(arg.id),
                "is not a string literal",
            ));
        };
        let text: &str = text.inner();
        if text.len() > MAX_PATTERN_BYTES {
            return Err(ExpressionError::Pattern(
                self.at.pos(arg.id),
                "is longer than 256 bytes",
            ));
        }
        if self.patterns.iter().any(|(t, _, _)| t == text) {
            return Ok(());
        }
        let compiled = regex::RegexBuilder::new(text)
            .size_limit(PATTERN_SIZE_LIMIT)
            .dfa_size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let why = match e {
                    regex::Error::CompiledTooBig(_) => "is too large to compile (over 256 KiB)",
                    _ => "does not compile",
                };
                ExpressionError::Pattern(self.at.pos(arg.id), why)
            })?;
        let states = regex_automata::nfa::thompson::NFA::new(text)
            .map(|nfa| nfa.states().len() as u64)
            .map_err(|_| ExpressionError::Pattern(self.at.pos(arg.id), "does not compile"))?;
        self.patterns.push((text.to_owned(), compiled, states));
        Ok(())
    }
}

/// Most memory one compiled `matches` pattern (and its lazy DFA) may take.
pub const PATTERN_SIZE_LIMIT: usize = 256 << 10;
