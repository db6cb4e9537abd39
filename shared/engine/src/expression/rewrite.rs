//! Turns a checked syntax tree into what [`super::eval`] runs: the top-level `&&` split into
//! clauses, comparisons routed to this service's money rule (`@eq`, `@lt` …), `matches` to the
//! patterns compiled at check time (`@matches`), and a budget tick (`@tick()`) in every
//! comprehension's loop so a run that outlasts its budget stops.

use super::eval::Comparison;
use super::{Clause, ClauseForm, Locator, MATCHES, TICK};
use cel::IdedExpr;
use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, LiteralValue, operators};

/// The clauses of a checked expression, each rewritten.
pub(super) fn clauses(parsed: &IdedExpr, at: &Locator<'_>) -> Vec<Clause> {
    let mut conjuncts = Vec::new();
    split_and(parsed, &mut conjuncts);
    conjuncts
        .into_iter()
        .map(|c| {
            let pos = at.pos_at(start_of(c, at));
            Clause {
                pos,
                form: form_of(c),
            }
        })
        .collect()
}

/// How a clause is run: a comparison (its sides shown when false), an `all()` (element by
/// element), or any other condition.
fn form_of(c: &IdedExpr) -> ClauseForm {
    match &c.expr {
        Expr::Call(call) if call.target.is_none() && call.args.len() == 2 => {
            match Comparison::of_operator(&call.func_name) {
                Some(op) => ClauseForm::Comparison {
                    op,
                    left: rewritten(&call.args[0]),
                    right: rewritten(&call.args[1]),
                },
                None => ClauseForm::Condition(rewritten(c)),
            }
        }
        Expr::Comprehension(comp) => match all_body(comp) {
            Some(each) => ClauseForm::All {
                range: rewritten(&comp.iter_range),
                var: comp.iter_var.clone(),
                each: Box::new(form_of(each)),
                whole: rewritten(c),
            },
            None => ClauseForm::Condition(rewritten(c)),
        },
        _ => ClauseForm::Condition(rewritten(c)),
    }
}

/// The predicate of an `all()` macro (`true` folded with `&&` over one variable).
fn all_body(comp: &ComprehensionExpr) -> Option<&IdedExpr> {
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if *n == comp.accu_var);
    let starts_true = matches!(
        comp.accu_init.expr,
        Expr::Literal(LiteralValue::Boolean(ref b)) if *b.inner()
    );
    if comp.iter_var2.is_some() || !starts_true || !is_accu(&comp.result) {
        return None;
    }
    match &comp.loop_step.expr {
        Expr::Call(call)
            if call.func_name == operators::LOGICAL_AND
                && call.target.is_none()
                && call.args.len() == 2
                && is_accu(&call.args[0]) =>
        {
            Some(&call.args[1])
        }
        _ => None,
    }
}

/// Where a clause starts: the least source offset in it (a global call's offset is at its
/// `(`, so its name's length is taken off).
fn start_of(e: &IdedExpr, at: &Locator<'_>) -> u32 {
    let own = at.offset(e.id).unwrap_or(u32::MAX);
    let own = match &e.expr {
        Expr::Call(call)
            if call.target.is_none() && !call.func_name.starts_with(['_', '@', '!', '-']) =>
        {
            own.saturating_sub(call.func_name.chars().count() as u32)
        }
        _ => own,
    };
    // A macro's own nodes (its accumulator, its loop) sit at or after its range.
    let children = match &e.expr {
        Expr::Comprehension(c) => vec![&c.iter_range],
        _ => super::children(e),
    };
    children
        .into_iter()
        .map(|c| start_of(c, at))
        .fold(own, u32::min)
}

fn split_and<'e>(e: &'e IdedExpr, out: &mut Vec<&'e IdedExpr>) {
    match &e.expr {
        Expr::Call(call) if call.func_name == operators::LOGICAL_AND && call.target.is_none() => {
            for a in &call.args {
                split_and(a, out);
            }
        }
        _ => out.push(e),
    }
}

fn rewritten(e: &IdedExpr) -> IdedExpr {
    let mut e = e.clone();
    rewrite(&mut e);
    e
}

fn rewrite(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Call(call) => {
            if let Some(op) = Comparison::of_operator(&call.func_name) {
                call.func_name = op.function().to_owned();
            } else if call.func_name == "matches" {
                call.func_name = MATCHES.to_owned();
                // `s.matches(p)` and `matches(s, p)` both become `@matches(s, p)`.
                if let Some(target) = call.target.take() {
                    call.args.insert(0, *target);
                }
            }
            if let Some(t) = &mut call.target {
                rewrite(t);
            }
            for a in &mut call.args {
                rewrite(a);
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                rewrite(part);
            }
            add_tick(c);
        }
        Expr::Select(s) => rewrite(&mut s.operand),
        Expr::List(l) => l.elements.iter_mut().for_each(rewrite),
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let cel::common::ast::EntryExpr::MapEntry(me) = &mut entry.expr {
                    rewrite(&mut me.key);
                    rewrite(&mut me.value);
                }
            }
        }
        _ => {}
    }
}

/// `@tick() ? e : otherwise`: `e`, after counting one step (the tick fails past the budget).
fn ticked(e: IdedExpr, otherwise: Expr) -> IdedExpr {
    let id = e.id;
    IdedExpr {
        id,
        expr: Expr::Call(CallExpr {
            func_name: operators::CONDITIONAL.to_owned(),
            target: None,
            args: vec![
                IdedExpr {
                    id,
                    expr: Expr::Call(CallExpr {
                        func_name: TICK.to_owned(),
                        target: None,
                        args: Vec::new(),
                    }),
                },
                e,
                IdedExpr {
                    id,
                    expr: otherwise,
                },
            ],
        }),
    }
}

/// Put a tick where the interpreter evaluates it once per iteration, keeping the shapes its
/// fast paths recognise: the loop condition when it is computed (`all`, `exists`), else inside
/// the step — the guard of a filter or `exists_one`, the appended element of a `map`.
fn add_tick(c: &mut ComprehensionExpr) {
    let null = || Expr::Literal(LiteralValue::Null);
    let falsy = || Expr::Literal(LiteralValue::Boolean(false.into()));
    if !matches!(c.loop_cond.expr, Expr::Literal(_)) {
        let cond = std::mem::take(&mut c.loop_cond);
        c.loop_cond = ticked(cond, falsy());
        return;
    }
    let step = &mut c.loop_step;
    if let Expr::Call(call) = &mut step.expr {
        if call.func_name == operators::CONDITIONAL && call.args.len() == 3 {
            let guard = std::mem::take(&mut call.args[0]);
            call.args[0] = ticked(guard, falsy());
            return;
        }
        if call.func_name == operators::ADD
            && call.args.len() == 2
            && let Expr::List(list) = &mut call.args[1].expr
            && let Some(first) = list.elements.first_mut()
        {
            let element = std::mem::take(first);
            *first = ticked(element, null());
            return;
        }
    }
    let whole = std::mem::take(step);
    *step = ticked(whole, null());
}
