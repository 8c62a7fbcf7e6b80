//! Parameter values: a parameter's binding evaluated on first use (an
//! array's binding once for all its elements), values that fix structure
//! (sizes, ranges, branches) and constant folding, and the check that no
//! parameter's binding depends on itself.

use super::*;

impl<'l> Flattener<'l> {
    /// The binding expression of a parameter, evaluating it on first use.
    pub(super) fn binding_of(&mut self, v: VarId) -> Result<Option<flat::ExprId>, Diagnostic> {
        if let Some(b) = self.vars[v as usize].binding {
            return Ok(Some(b));
        }
        let Some(b) = self.pending_binding.get(&v).cloned() else {
            return Ok(None);
        };
        if self.evaluating.contains(&v) {
            let name = self.vars[v as usize].name.clone();
            return self.err(
                DiagnosticKind::Evaluation,
                b.expr.span,
                format!("the value of `{name}` depends on itself"),
            );
        }
        self.evaluating.push(v);
        self.binding_spans.insert(v, b.expr.span);
        self.vars[v as usize].value_span = Some(b.expr.span);
        let name = self.vars[v as usize].name.clone();
        let ty = self.vars[v as usize].ty;
        let r = self.eval_binding_scalar(&b, &name, ty);
        self.evaluating.pop();
        let e = r?;
        self.check_binding_variability(v, e, b.expr.span)?;
        self.pending_binding.remove(&v);
        self.vars[v as usize].binding = Some(e);
        Ok(Some(e))
    }

    /// A scalar binding of type `ty` (Boolean values only for Booleans).
    pub(super) fn eval_binding_scalar(
        &mut self,
        b: &Binding,
        what: &str,
        ty: ScalarType,
    ) -> Result<flat::ExprId, Diagnostic> {
        let val = if b.index.is_empty() {
            let ctx = eval::Ctx::model(b.scope);
            self.eval_expr(&b.expr, &ctx)?
        } else {
            let key = (Rc::as_ptr(&b.expr), b.scope);
            let whole = match self.array_binding_values.get(&key) {
                Some((_, v)) => v.clone(),
                None => {
                    let ctx = eval::Ctx::model(b.scope);
                    let v = Rc::new(self.eval_expr(&b.expr, &ctx)?);
                    self.array_binding_values
                        .insert(key, (b.expr.clone(), v.clone()));
                    v
                }
            };
            eval::select(&whole, &b.index, b.expr.span)?
        };
        if !val.dims.is_empty() {
            return self.err(
                DiagnosticKind::Shape,
                b.expr.span,
                format!(
                    "`{what}` is a scalar but is given a value of size {}",
                    eval::shape_text(&val.dims)
                ),
            );
        }
        let got_bool = val.ty == ScalarType::Boolean;
        let want_bool = ty == ScalarType::Boolean;
        if got_bool != want_bool {
            let want = match ty {
                ScalarType::Real => "Real",
                ScalarType::Integer => "Integer",
                ScalarType::Boolean => "Boolean",
            };
            let got = if got_bool { "Boolean" } else { "number" };
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                b.expr.span,
                format!("type mismatch: `{what}` is {want} but is given a {got}"),
            )
            .with_label(format!("a {got}"))
            .with_hint(if want_bool {
                "write `true` or `false`, or a condition"
            } else {
                "write a number, or `if cond then 1 else 0`"
            }));
        }
        // The type of an expression is static (MLS 3.4, 3.7): `4000/100`
        // is a Real whatever its value, so an Integer cannot take it.
        if ty == ScalarType::Integer && val.ty == ScalarType::Real {
            let shown = match self.arena.as_const(val.elems[0]) {
                Some(c) => format!(" ({c})"),
                None => String::new(),
            };
            return Err(Diagnostic::error(DiagnosticKind::Type,
                b.expr.span,
                format!("type mismatch: `{what}` is Integer but is given a Real expression{shown}"),
            )
            .with_label("a Real expression (`/` and `^` always give a Real, MLS 3.4)")
            .with_hint("use `div(a, b)` for the Integer quotient, `integer(x)` to round down, or declare it Real"));
        }
        Ok(val.elems[0])
    }

    /// Evaluates an expression that must be known while flattening (array
    /// sizes, for-ranges, conditions); parameters it uses become structural.
    pub(super) fn eval_structural(
        &mut self,
        e: &ast::Expr,
        scope: Scope,
    ) -> Result<f64, Diagnostic> {
        let val = self.eval_expr(e, &eval::Ctx::model(scope))?;
        if !val.dims.is_empty() {
            return self.err(DiagnosticKind::Shape, e.span, "expected a scalar");
        }
        self.const_value(val.elems[0], e.span)
    }

    /// The numeric value of an expression of parameters and constants.
    pub(super) fn const_value(&mut self, e: flat::ExprId, span: Span) -> Result<f64, Diagnostic> {
        let mut memo = HashMap::new();
        self.const_value_memo(e, span, &mut memo)
    }

    pub(super) fn const_value_memo(
        &mut self,
        e: flat::ExprId,
        span: Span,
        memo: &mut HashMap<flat::ExprId, f64>,
    ) -> Result<f64, Diagnostic> {
        use flat::Node;
        if let Some(&v) = memo.get(&e) {
            return Ok(v);
        }
        let n = self.arena.node(e);
        let v = match n {
            Node::Const(b) => f64::from_bits(b),
            Node::Var(v) => {
                let var = &self.vars[v as usize];
                if !var.is_parameter() {
                    let name = var.name.clone();
                    return Err(Diagnostic::error(DiagnosticKind::Variability, span, format!("`{name}` is not a parameter or constant, so its value is not known here"))
                        .with_hint("array sizes, for-ranges and the conditions of if-equations must depend only on parameters and constants"));
                }
                let Some(b) = self.binding_of(v)? else {
                    let name = self.vars[v as usize].name.clone();
                    return Err(Diagnostic::error(
                        DiagnosticKind::Evaluation,
                        span,
                        format!("parameter `{name}` has no value"),
                    )
                    .with_hint(format!(
                        "give `{name}` a value in its declaration or a modifier"
                    )));
                };
                self.vars[v as usize].structural = true;
                self.const_value_memo(b, span, memo)?
            }
            Node::Neg(a) => -self.const_value_memo(a, span, memo)?,
            Node::Not(a) => f64::from(self.const_value_memo(a, span, memo)? == 0.0),
            Node::Add(a, b) => {
                self.const_value_memo(a, span, memo)? + self.const_value_memo(b, span, memo)?
            }
            Node::Sub(a, b) => {
                self.const_value_memo(a, span, memo)? - self.const_value_memo(b, span, memo)?
            }
            Node::Mul(a, b) => {
                self.const_value_memo(a, span, memo)? * self.const_value_memo(b, span, memo)?
            }
            Node::Div(a, b) => {
                self.const_value_memo(a, span, memo)? / self.const_value_memo(b, span, memo)?
            }
            Node::Pow(a, b) => crate::flat::expr::pow(
                self.const_value_memo(a, span, memo)?,
                self.const_value_memo(b, span, memo)?,
            ),
            Node::And(a, b) => f64::from(
                self.const_value_memo(a, span, memo)? != 0.0
                    && self.const_value_memo(b, span, memo)? != 0.0,
            ),
            Node::Or(a, b) => f64::from(
                self.const_value_memo(a, span, memo)? != 0.0
                    || self.const_value_memo(b, span, memo)? != 0.0,
            ),
            Node::Rel { op, lhs, rhs, .. } => f64::from(op.apply(
                self.const_value_memo(lhs, span, memo)?,
                self.const_value_memo(rhs, span, memo)?,
            )),
            Node::If(c, a, b) => {
                if self.const_value_memo(c, span, memo)? != 0.0 {
                    self.const_value_memo(a, span, memo)?
                } else {
                    self.const_value_memo(b, span, memo)?
                }
            }
            Node::Call1(f, a) => f.apply(self.const_value_memo(a, span, memo)?),
            Node::Call2(f, a, b) => f.apply(
                self.const_value_memo(a, span, memo)?,
                self.const_value_memo(b, span, memo)?,
            ),
            // A user function of known arguments (`pi = 2*Modelica.Math.asin(1.0)`):
            // run by the reference interpreter of flat functions.
            Node::Call { call, output } => {
                let site = self.arena.calls[call as usize].clone();
                let mut args = Vec::with_capacity(site.args.len());
                for &a in &site.args {
                    args.push(self.const_value_memo(a, span, memo)?);
                }
                let outs = crate::symbolic::eval::call_function(&self.functions, site.func, &args)
                    .map_err(|m| {
                        Diagnostic::error(
                            DiagnosticKind::Evaluation,
                            span,
                            format!("evaluating a function call here failed: {m}"),
                        )
                    })?;
                outs.get(output as usize).copied().ok_or_else(|| {
                    Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        "a function call here has too few outputs",
                    )
                })?
            }
            _ => {
                return Err(Diagnostic::error(DiagnosticKind::Variability, span, "this value must be known while compiling (a parameter expression)")
                    .with_hint("array sizes, for-ranges and the conditions of if-equations must depend only on parameters and constants"));
            }
        };
        memo.insert(e, v);
        Ok(v)
    }

    /// A parameter whose binding depends on itself (directly or through others)
    /// has no value.
    pub(super) fn check_parameter_cycles(&self) -> Result<(), Diagnostic> {
        let n = self.vars.len();
        let mut state = vec![0u8; n];
        let mut path: Vec<VarId> = Vec::new();
        let mut memo = flat::VarsMemo::default();
        fn visit(
            f: &Flattener,
            v: VarId,
            state: &mut [u8],
            path: &mut Vec<VarId>,
            memo: &mut flat::VarsMemo,
        ) -> Option<Vec<VarId>> {
            match state[v as usize] {
                2 => return None,
                1 => {
                    let k = path.iter().position(|&x| x == v).unwrap_or(0);
                    return Some(path[k..].to_vec());
                }
                _ => {}
            }
            state[v as usize] = 1;
            path.push(v);
            if let Some(b) = f.vars[v as usize].binding {
                for &d in f.arena.vars_of_memo(b, memo).iter() {
                    if f.vars[d as usize].is_parameter()
                        && let Some(c) = visit(f, d, state, path, memo)
                    {
                        return Some(c);
                    }
                }
            }
            path.pop();
            state[v as usize] = 2;
            None
        }
        for v in 0..n as VarId {
            if self.vars[v as usize].is_parameter()
                && let Some(cycle) = visit(self, v, &mut state, &mut path, &mut memo)
            {
                let first = cycle[0];
                let names: Vec<String> = cycle
                    .iter()
                    .chain(std::iter::once(&first))
                    .map(|&x| format!("`{}`", self.vars[x as usize].name))
                    .collect();
                let span = self
                    .binding_spans
                    .get(&first)
                    .copied()
                    .unwrap_or(self.vars[first as usize].span);
                let msg = if cycle.len() == 1 {
                    format!(
                        "the value of `{}` depends on itself",
                        self.vars[first as usize].name
                    )
                } else {
                    format!(
                        "the values of these parameters depend on each other: {}",
                        names.join(" -> ")
                    )
                };
                return Err(Diagnostic::error(DiagnosticKind::Evaluation, span, msg)
                    .with_label("circular binding")
                    .with_hint("give one of them a value that does not depend on the others"));
            }
        }
        Ok(())
    }
}
