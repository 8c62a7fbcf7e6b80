//! Expressions: operands, operator precedence (a Pratt parser over the
//! grammar's flat operator sequence), calls, component references and
//! subscripts.

use super::tree::{TreeBuilder, unescape};
use super::{P, Rule};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::syntax::ast::*;

impl TreeBuilder {
    pub(super) fn expression(&self, p: P) -> Expr {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::expression => {
                let inner = p.into_inner().next().expect("expression body");
                self.expression(inner)
            }
            Rule::if_expression => {
                let mut exprs: Vec<Expr> = p
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::expression)
                    .map(|x| self.expression(x))
                    .collect();
                let else_ = exprs.pop().expect("else branch");
                let mut branches = Vec::new();
                let mut it = exprs.into_iter();
                while let (Some(c), Some(v)) = (it.next(), it.next()) {
                    branches.push((c, v));
                }
                Expr {
                    kind: ExprKind::If {
                        branches,
                        else_: Box::new(else_),
                    },
                    span,
                }
            }
            Rule::simple_expression => {
                let mut parts: Vec<Expr> = p.into_inner().map(|x| self.expression(x)).collect();
                match parts.len() {
                    1 => parts.pop().expect("one part"),
                    2 => {
                        let stop = parts.pop().expect("stop");
                        let start = parts.pop().expect("start");
                        Expr {
                            kind: ExprKind::Range {
                                start: Box::new(start),
                                step: None,
                                stop: Box::new(stop),
                            },
                            span,
                        }
                    }
                    _ => {
                        let stop = parts.pop().expect("stop");
                        let step = parts.pop().expect("step");
                        let start = parts.pop().expect("start");
                        Expr {
                            kind: ExprKind::Range {
                                start: Box::new(start),
                                step: Some(Box::new(step)),
                                stop: Box::new(stop),
                            },
                            span,
                        }
                    }
                }
            }
            Rule::op_expression => self.operators(p),
            Rule::primary => self.expression(p.into_inner().next().expect("primary body")),
            Rule::unsigned_integer => {
                match p.as_str().parse::<i64>() {
                    Ok(v) if v <= (1i64 << 53) => Expr {
                        kind: ExprKind::Integer(v),
                        span,
                    },
                    _ => {
                        self.errors.borrow_mut().push(
                        Diagnostic::error(DiagnosticKind::Syntax, span, format!("integer literal `{}` is out of range", p.as_str()))
                            .with_label("too large")
                            .with_hint("integers must be below 2^53; write a Real (`1e20`) for a large value"),
                    );
                        Expr {
                            kind: ExprKind::Integer(0),
                            span,
                        }
                    }
                }
            }
            Rule::unsigned_real => {
                let v = p.as_str().parse::<f64>().unwrap_or(f64::NAN);
                if !v.is_finite() {
                    self.errors.borrow_mut().push(
                        Diagnostic::error(
                            DiagnosticKind::Syntax,
                            span,
                            format!("real literal `{}` is out of range", p.as_str()),
                        )
                        .with_label("not a finite double-precision number")
                        .with_hint("the largest finite value is about 1.8e308"),
                    );
                }
                Expr {
                    kind: ExprKind::Real(v),
                    span,
                }
            }
            Rule::string => Expr {
                kind: ExprKind::String(unescape(p.as_str())),
                span,
            },
            Rule::K_TRUE => Expr {
                kind: ExprKind::Bool(true),
                span,
            },
            Rule::K_FALSE => Expr {
                kind: ExprKind::Bool(false),
                span,
            },
            Rule::K_END => Expr {
                kind: ExprKind::End,
                span,
            },
            Rule::function_partial => {
                let mut it = p.into_inner();
                let _kw = it.next();
                let func = self.type_specifier(it.next().expect("function name"));
                let args = it
                    .filter(|x| x.as_rule() == Rule::named_argument)
                    .map(|x| {
                        let mut a = x.into_inner();
                        let name = self.ident(a.next().expect("name"));
                        (name, self.expression(a.next().expect("value")))
                    })
                    .collect();
                Expr {
                    kind: ExprKind::FunctionPartial { func, args },
                    span,
                }
            }
            Rule::component_reference => Expr {
                kind: ExprKind::Ref(self.component_reference(p)),
                span,
            },
            Rule::ref_or_call => {
                let mut it = p.into_inner();
                let f = it.next().expect("function name");
                let func = if f.as_rule() == Rule::K_INITIAL {
                    ComponentRef {
                        parts: vec![RefPart {
                            ident: Ident {
                                name: "initial".into(),
                                span: self.span(&f),
                            },
                            subscripts: vec![],
                        }],
                        global: false,
                        span: self.span(&f),
                    }
                } else {
                    self.component_reference(f)
                };
                let Some(args_pair) = it.next() else {
                    // A name without arguments.
                    return Expr {
                        kind: ExprKind::Ref(func),
                        span,
                    };
                };
                if let Some((body, indices)) = self.comprehension_args(args_pair.clone()) {
                    return Expr {
                        kind: ExprKind::Comprehension {
                            func: Some(func),
                            body: Box::new(body),
                            indices,
                        },
                        span,
                    };
                }
                let args = self.call_args(args_pair);
                Expr {
                    kind: ExprKind::Call { func, args },
                    span,
                }
            }
            Rule::parenthesized => {
                let list = p.into_inner().next().expect("parenthesized list");
                let slots = self.output_list(list);
                if slots.len() == 1 {
                    if let Some(Some(e)) = slots.into_iter().next() {
                        return Expr { kind: e.kind, span };
                    }
                    return Expr {
                        kind: ExprKind::Tuple(vec![None]),
                        span,
                    };
                }
                Expr {
                    kind: ExprKind::Tuple(slots),
                    span,
                }
            }
            Rule::matrix_constructor => {
                let rows = p
                    .into_inner()
                    .map(|row| row.into_inner().map(|e| self.expression(e)).collect())
                    .collect();
                Expr {
                    kind: ExprKind::Matrix(rows),
                    span,
                }
            }
            Rule::array_constructor => {
                let parts: Vec<P> = p.into_inner().collect();
                if let Some(tail) = parts
                    .iter()
                    .find(|x| x.as_rule() == Rule::comprehension_tail)
                {
                    let body = self.expression(parts[0].clone());
                    let indices = tail
                        .clone()
                        .into_inner()
                        .find(|y| y.as_rule() == Rule::for_indices)
                        .map(|y| self.for_indices(y))
                        .unwrap_or_default();
                    return Expr {
                        kind: ExprKind::Comprehension {
                            func: None,
                            body: Box::new(body),
                            indices,
                        },
                        span,
                    };
                }
                Expr {
                    kind: ExprKind::Array(parts.into_iter().map(|e| self.expression(e)).collect()),
                    span,
                }
            }
            r => unreachable!("expression rule {r:?}"),
        }
    }

    /// Applies operator precedence to an `op_expression` (see the grammar).
    pub(super) fn operators(&self, p: P) -> Expr {
        self.check_non_associative(&p);
        pratt()
            .map_primary(|x| self.expression(x))
            .map_prefix(|op, operand| {
                let span = self.span(&op).to(operand.span);
                let op = match op.as_rule() {
                    Rule::op_not => UnOp::Not,
                    Rule::op_neg => UnOp::Neg,
                    _ => UnOp::Plus,
                };
                Expr {
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                }
            })
            .map_infix(|lhs, op, rhs| {
                let op = match op.as_rule() {
                    Rule::op_or => BinOp::Or,
                    Rule::op_and => BinOp::And,
                    Rule::op_le => BinOp::Le,
                    Rule::op_ge => BinOp::Ge,
                    Rule::op_eq => BinOp::Eq,
                    Rule::op_ne => BinOp::Ne,
                    Rule::op_lt => BinOp::Lt,
                    Rule::op_gt => BinOp::Gt,
                    Rule::op_eadd => BinOp::ElemAdd,
                    Rule::op_esub => BinOp::ElemSub,
                    Rule::op_add => BinOp::Add,
                    Rule::op_sub => BinOp::Sub,
                    Rule::op_emul => BinOp::ElemMul,
                    Rule::op_ediv => BinOp::ElemDiv,
                    Rule::op_mul => BinOp::Mul,
                    Rule::op_div => BinOp::Div,
                    Rule::op_epow => BinOp::ElemPow,
                    _ => BinOp::Pow,
                };
                binary(op, lhs, rhs)
            })
            .parse(p.into_inner())
    }

    /// Modelica's grammar has `factor = primary ["^" primary]` and
    /// `relation = arithmetic_expression [rel-op arithmetic_expression]`:
    /// `a^b^c` and `a < b < c` are not expressions (the first is read
    /// differently by different tools, the second is a bug). The flat operator
    /// sequence would give them a meaning, so they are rejected here.
    pub(super) fn check_non_associative(&self, p: &P) {
        let is_pow = |r: Rule| matches!(r, Rule::op_pow | Rule::op_epow);
        let is_rel = |r: Rule| {
            matches!(
                r,
                Rule::op_le | Rule::op_ge | Rule::op_eq | Rule::op_ne | Rule::op_lt | Rule::op_gt
            )
        };
        let mut last_infix: Option<Rule> = None;
        let mut relation_seen = false;
        for x in p.clone().into_inner() {
            let r = x.as_rule();
            if matches!(
                r,
                Rule::primary | Rule::op_not | Rule::op_neg | Rule::op_plus
            ) {
                continue;
            }
            if matches!(r, Rule::op_or | Rule::op_and) {
                relation_seen = false;
            }
            if is_pow(r) && last_infix.is_some_and(is_pow) {
                self.errors.borrow_mut().push(
                    Diagnostic::error(
                        DiagnosticKind::Syntax,
                        self.span(&x),
                        "`^` cannot follow `^` without parentheses",
                    )
                    .with_label("second power")
                    .with_hint("write `(a^b)^c` or `a^(b^c)`: Modelica gives `a^b^c` no meaning"),
                );
            }
            if is_rel(r) {
                if relation_seen {
                    self.errors.borrow_mut().push(
                        Diagnostic::error(
                            DiagnosticKind::Syntax,
                            self.span(&x),
                            "relations cannot be chained",
                        )
                        .with_label("second comparison")
                        .with_hint("write `a < b and b < c`"),
                    );
                }
                relation_seen = true;
            }
            last_infix = Some(r);
        }
    }

    /// `f(expr for i in range)`: the body and its indices.
    pub(super) fn comprehension_args(&self, p: P) -> Option<(Expr, Vec<ForIndex>)> {
        let fa = p.into_inner().next()?;
        let parts: Vec<P> = fa.into_inner().collect();
        let tail = parts
            .iter()
            .find(|x| x.as_rule() == Rule::comprehension_tail)?;
        let item = parts[0].clone().into_inner().next()?;
        let body = self.expression(item);
        let indices = tail
            .clone()
            .into_inner()
            .find(|y| y.as_rule() == Rule::for_indices)
            .map(|y| self.for_indices(y))?;
        Some((body, indices))
    }

    pub(super) fn call_args(&self, p: P) -> Vec<Arg> {
        let Some(fa) = p.into_inner().next() else {
            return vec![];
        };
        fa.into_inner()
            .filter(|x| x.as_rule() == Rule::argument_item)
            .map(|item| {
                let x = item.into_inner().next().expect("argument item body");
                if x.as_rule() == Rule::named_argument {
                    let mut it = x.into_inner();
                    let name = self.ident(it.next().expect("name"));
                    let value = self.expression(it.next().expect("value"));
                    Arg::Named(name, value)
                } else {
                    Arg::Positional(self.expression(x))
                }
            })
            .collect()
    }

    pub(super) fn component_reference(&self, p: P) -> ComponentRef {
        let span = self.span(&p);
        let global = p.as_str().starts_with('.');
        let mut parts: Vec<RefPart> = Vec::new();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::ident => parts.push(RefPart {
                    ident: self.ident(x),
                    subscripts: vec![],
                }),
                Rule::array_subscripts => {
                    if let Some(last) = parts.last_mut() {
                        last.subscripts = self.subscripts(x);
                    }
                }
                _ => {}
            }
        }
        ComponentRef {
            parts,
            global,
            span,
        }
    }

    pub(super) fn subscripts(&self, p: P) -> Vec<Subscript> {
        p.into_inner()
            .map(|s| {
                let x = s.into_inner().next().expect("subscript body");
                if x.as_rule() == Rule::colon {
                    Subscript::All(self.span(&x))
                } else {
                    Subscript::Index(self.expression(x))
                }
            })
            .collect()
    }
}

/// Modelica's operator precedence, lowest first (MLS 3.2): later levels bind
/// tighter. Unary minus sits between additive and multiplicative operators,
/// so `-a*b` is `-(a*b)` and `-a^2` is `-(a^2)`.
fn pratt() -> &'static pest::pratt_parser::PrattParser<Rule> {
    use pest::pratt_parser::{Assoc, Op, PrattParser};
    static P: std::sync::OnceLock<PrattParser<Rule>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::op_or, Assoc::Left))
            .op(Op::infix(Rule::op_and, Assoc::Left))
            .op(Op::prefix(Rule::op_not))
            .op(Op::infix(Rule::op_le, Assoc::Left)
                | Op::infix(Rule::op_ge, Assoc::Left)
                | Op::infix(Rule::op_eq, Assoc::Left)
                | Op::infix(Rule::op_ne, Assoc::Left)
                | Op::infix(Rule::op_lt, Assoc::Left)
                | Op::infix(Rule::op_gt, Assoc::Left))
            .op(Op::infix(Rule::op_add, Assoc::Left)
                | Op::infix(Rule::op_sub, Assoc::Left)
                | Op::infix(Rule::op_eadd, Assoc::Left)
                | Op::infix(Rule::op_esub, Assoc::Left))
            .op(Op::prefix(Rule::op_neg) | Op::prefix(Rule::op_plus))
            .op(Op::infix(Rule::op_mul, Assoc::Left)
                | Op::infix(Rule::op_div, Assoc::Left)
                | Op::infix(Rule::op_emul, Assoc::Left)
                | Op::infix(Rule::op_ediv, Assoc::Left))
            .op(Op::infix(Rule::op_pow, Assoc::Left) | Op::infix(Rule::op_epow, Assoc::Left))
    })
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span.to(rhs.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    }
}
