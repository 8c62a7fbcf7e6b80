//! Strings, which rmoc knows only while flattening: String parameters
//! and constants are texts (`Flattener::strings`), and an expression of
//! them is a text too: literals, `+`, `String(x)` of a number, an
//! if-expression on parameters, and the functions of
//! `Modelica.Utilities.Strings` that the MSL's blocks apply to file and
//! table names (`length`, `isEmpty`, `find`, `findLast`), given native
//! meaning by their names (in the MSL they are `external "C"`). Comparing
//! two texts (`fileName <> "NoName"`) gives a Boolean constant.

use super::*;
use crate::instantiate::library::ClassId;

/// The `Modelica.Utilities.Strings` functions evaluated here.
const STRING_FUNCTIONS: [&str; 4] = ["length", "isEmpty", "find", "findLast"];

impl Flattener<'_> {
    /// The text of String parameter or constant `name` of instance `inst`.
    pub(in crate::instantiate) fn string_parameter(
        &self,
        inst: InstId,
        name: &str,
    ) -> Option<&String> {
        self.strings.get(&inst).and_then(|m| m.get(name))
    }

    /// The text of a String expression: in messages, names, and the MSL's
    /// table constructors.
    pub(in crate::instantiate) fn eval_string(
        &mut self,
        e: &ast::Expr,
        ctx: &Ctx,
    ) -> Result<String, Diagnostic> {
        match &e.kind {
            ExprKind::String(s) => Ok(s.clone()),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } => Ok(format!(
                "{}{}",
                self.eval_string(lhs, ctx)?,
                self.eval_string(rhs, ctx)?
            )),
            ExprKind::Call { func, args } if func.dotted() == "String" => {
                let text = match args.first() {
                    Some(Arg::Positional(x)) => {
                        let v = self.eval_expr(x, ctx)?;
                        match v.elems.first().and_then(|&e| self.arena.as_const(e)) {
                            Some(c) => crate::flat::expr::format_number(c),
                            None => "?".into(),
                        }
                    }
                    _ => String::new(),
                };
                Ok(text)
            }
            // `if c then "a" else "b"`, the condition known now.
            ExprKind::If { branches, else_ } => {
                for (cond, value) in branches {
                    if self.condition_now(cond, ctx)? {
                        return self.eval_string(value, ctx);
                    }
                }
                self.eval_string(else_, ctx)
            }
            // A String parameter of the current instance.
            ExprKind::Ref(r) if r.parts.len() == 1 && r.parts[0].subscripts.is_empty() => {
                let name = &r.parts[0].ident.name;
                let Some(inst) = ctx.scope.inst else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        e.span,
                        "expected a string",
                    ));
                };
                self.ensure_component(inst, name)?;
                self.string_parameter(inst, name).cloned().ok_or_else(|| {
                    Diagnostic::error(DiagnosticKind::Type, e.span, "expected a string")
                })
            }
            _ => Err(Diagnostic::error(
                DiagnosticKind::Type,
                e.span,
                "expected a string",
            )),
        }
    }

    /// Whether `e` is a String expression (so that a relation on it
    /// compares texts).
    pub(super) fn is_string_expr(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<bool, Diagnostic> {
        Ok(match &e.kind {
            ExprKind::String(_) => true,
            ExprKind::Call { func, .. } => func.dotted() == "String",
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } => self.is_string_expr(lhs, ctx)? || self.is_string_expr(rhs, ctx)?,
            ExprKind::If { branches, else_ } => {
                self.is_string_expr(else_, ctx)?
                    || branches
                        .iter()
                        .map(|(_, v)| v)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .try_fold(false, |any, v| {
                            Ok::<_, Diagnostic>(any || self.is_string_expr(v, ctx)?)
                        })?
            }
            ExprKind::Ref(r) if r.parts.len() == 1 && r.parts[0].subscripts.is_empty() => {
                let name = &r.parts[0].ident.name;
                match ctx.scope.inst {
                    Some(inst) => {
                        self.ensure_component(inst, name)?;
                        self.string_parameter(inst, name).is_some()
                    }
                    None => false,
                }
            }
            _ => false,
        })
    }

    /// A relation between two texts, as a Boolean constant.
    pub(super) fn compare_strings(
        &mut self,
        op: BinOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let (a, b) = (self.eval_string(lhs, ctx)?, self.eval_string(rhs, ctx)?);
        let holds = match op {
            BinOp::Eq => a == b,
            BinOp::Ne => a != b,
            BinOp::Lt => a < b,
            BinOp::Le => a <= b,
            BinOp::Gt => a > b,
            _ => a >= b,
        };
        Ok(Value::scalar(
            ScalarType::Boolean,
            self.arena.constant(f64::from(holds)),
        ))
    }

    /// A condition that must be known while flattening.
    fn condition_now(&mut self, cond: &ast::Expr, ctx: &Ctx) -> Result<bool, Diagnostic> {
        let v = self.eval_expr(cond, ctx)?;
        match v.elems.first() {
            Some(&x) if v.is_scalar() => Ok(self.const_value(x, cond.span)? != 0.0),
            _ => Err(Diagnostic::error(
                DiagnosticKind::Shape,
                cond.span,
                "expected a scalar condition",
            )),
        }
    }

    /// A call of one of `Modelica.Utilities.Strings`' functions on texts
    /// known now, or `None` for any other function.
    pub(super) fn string_function(
        &mut self,
        class: ClassId,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Option<Value>, Diagnostic> {
        let full = self.lib.entry(class).full_name.clone();
        let Some(name) = full
            .strip_prefix("Modelica.Utilities.Strings.")
            .filter(|n| STRING_FUNCTIONS.contains(n))
        else {
            return Ok(None);
        };
        // (string, searchString, startIndex, caseSensitive), by position
        // or name.
        let names = ["string", "searchString", "startIndex", "caseSensitive"];
        let mut given: [Option<&ast::Expr>; 4] = [None; 4];
        let mut k = 0;
        for a in args {
            match a {
                Arg::Positional(e) if k < 4 => {
                    given[k] = Some(e);
                    k += 1;
                }
                Arg::Named(n, e) => match names.iter().position(|x| *x == n.name) {
                    Some(i) => given[i] = Some(e),
                    None => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            n.span,
                            format!("`{full}` has no input `{}`", n.name),
                        ));
                    }
                },
                Arg::Positional(e) => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        e.span,
                        format!("`{full}` takes at most 4 arguments"),
                    ));
                }
            }
        }
        let Some(text) = given[0] else {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("`{full}` needs input `string`"),
            ));
        };
        let text = self.eval_string(text, ctx)?;
        let integer =
            |f: &mut Self, v: i64| Value::scalar(ScalarType::Integer, f.arena.constant(v as f64));
        let value = match name {
            "length" => integer(self, text.chars().count() as i64),
            "isEmpty" => {
                let empty = text.trim().is_empty();
                Value::scalar(ScalarType::Boolean, self.arena.constant(f64::from(empty)))
            }
            _ => {
                let Some(search) = given[1] else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        format!("`{full}` needs input `searchString`"),
                    ));
                };
                let search = self.eval_string(search, ctx)?;
                let number = |f: &mut Self,
                              e: Option<&ast::Expr>,
                              default: f64|
                 -> Result<f64, Diagnostic> {
                    match e {
                        Some(e) => {
                            let v = f.eval_expr(e, ctx)?;
                            match v.elems.first() {
                                Some(&x) => f.const_value(x, e.span),
                                None => Err(Diagnostic::error(
                                    DiagnosticKind::Shape,
                                    e.span,
                                    "expected a scalar",
                                )),
                            }
                        }
                        None => Ok(default),
                    }
                };
                let case = number(self, given[3], 1.0)? != 0.0;
                let (hay, needle): (Vec<char>, Vec<char>) = if case {
                    (text.chars().collect(), search.chars().collect())
                } else {
                    (
                        text.to_lowercase().chars().collect(),
                        search.to_lowercase().chars().collect(),
                    )
                };
                let at = |i: usize| {
                    i + needle.len() <= hay.len() && hay[i..i + needle.len()] == needle[..]
                };
                // 1-based indices; 0 when not found.
                let found = if name == "find" {
                    let start = (number(self, given[2], 1.0)?.max(1.0) as usize) - 1;
                    (start..hay.len()).find(|&i| at(i)).map_or(0, |i| i + 1)
                } else {
                    let start = number(self, given[2], 0.0)?;
                    let last = if start <= 0.0 {
                        hay.len()
                    } else {
                        (start as usize).min(hay.len())
                    };
                    (0..last).rev().find(|&i| at(i)).map_or(0, |i| i + 1)
                };
                integer(self, found as i64)
            }
        };
        Ok(Some(value))
    }
}
