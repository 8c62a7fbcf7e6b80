//! Equations: scalarization, `for` expansion, `if` with parameter or run-time
//! conditions, `when` clauses, and the connection semantics of MLS 9.2
//! (potentials equal, flows summed with inside/outside signs, unconnected
//! inside flows zero).

use super::eval::{BUILTINS, Ctx, NodeArray, Value, same_dims, shape_text};
use super::{CompNode, Flattener};
use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{
    self, AssertLevel, ExprId, Node, ScalarType, VarId, Variability, Variable, WhenStatement,
};
use crate::syntax::ast::{self, Arg, EquationKind, ExprKind};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Connection sets as union-find forests.
#[derive(Default)]
pub(super) struct Connections {
    potential: HashMap<VarId, VarId>,
    potential_span: HashMap<VarId, Span>,
    /// Flow elements: (variable, is-inside).
    flow: HashMap<(VarId, bool), (VarId, bool)>,
    flow_span: HashMap<(VarId, bool), Span>,
    connected_inside: HashSet<VarId>,
    /// Causal variables (inputs and outputs) met in connections: whether
    /// seen inside (through a component), outside (the instance's own
    /// connector), and outside at the top level (MLS 9.3).
    causal: HashMap<VarId, CausalUse>,
    /// `connect` equations flattened so far (one inside an if-equation
    /// with a run-time condition is refused).
    pub(super) count: usize,
}

#[derive(Clone, Copy, Default)]
struct CausalUse {
    inside: bool,
    outside: bool,
    top_outside: bool,
}

impl Connections {
    fn find_p(&mut self, v: VarId) -> VarId {
        let p = *self.potential.get(&v).unwrap_or(&v);
        if p == v {
            return v;
        }
        let r = self.find_p(p);
        self.potential.insert(v, r);
        r
    }
    fn union_p(&mut self, a: VarId, b: VarId, span: Span) {
        let (ra, rb) = (self.find_p(a), self.find_p(b));
        self.potential.entry(a).or_insert(a);
        self.potential.entry(b).or_insert(b);
        self.potential_span.entry(a).or_insert(span);
        self.potential_span.entry(b).or_insert(span);
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.potential.insert(hi, lo);
        }
    }
    fn find_f(&mut self, e: (VarId, bool)) -> (VarId, bool) {
        let p = *self.flow.get(&e).unwrap_or(&e);
        if p == e {
            return e;
        }
        let r = self.find_f(p);
        self.flow.insert(e, r);
        r
    }
    fn union_f(&mut self, a: (VarId, bool), b: (VarId, bool), span: Span) {
        let (ra, rb) = (self.find_f(a), self.find_f(b));
        self.flow.entry(a).or_insert(a);
        self.flow.entry(b).or_insert(b);
        self.flow_span.entry(a).or_insert(span);
        self.flow_span.entry(b).or_insert(span);
        for (v, inside) in [a, b] {
            if inside {
                self.connected_inside.insert(v);
            }
        }
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.flow.insert(hi, lo);
        }
    }
}

impl<'l> Flattener<'l> {
    fn push_eq(&mut self, lhs: ExprId, rhs: ExprId, span: Span, ctx: &Ctx, initial: bool) {
        let scope = self.inst_path(ctx.scope.inst);
        let e = flat::FlatEquation {
            lhs,
            rhs,
            span,
            scope,
        };
        if initial {
            self.initial_equations.push(e);
        } else {
            self.equations.push(e);
        }
    }

    pub(super) fn flatten_equation(
        &mut self,
        eq: &ast::Equation,
        ctx: &Ctx,
        initial: bool,
    ) -> Result<(), Diagnostic> {
        match &eq.kind {
            EquationKind::Simple { lhs, rhs } if matches!(lhs.kind, ExprKind::Tuple(_)) => {
                // `(a, b) = f(x)`: each output of the call equals its slot.
                let (ExprKind::Tuple(slots), ExprKind::Call { func, args }) =
                    (&lhs.kind, &rhs.kind)
                else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        eq.span,
                        "a parenthesized list on the left needs a function call on the right: `(a, b) = f(x)`",
                    ));
                };
                let outs = self.call_user_function(func, args, rhs.span, ctx)?;
                if slots.len() > outs.len() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        eq.span,
                        format!(
                            "`{}` has {} output(s), {} are used",
                            func.dotted(),
                            outs.len(),
                            slots.len()
                        ),
                    ));
                }
                for (slot, out) in slots.iter().zip(outs) {
                    let Some(target) = slot else { continue };
                    let t = self.eval_expr(target, ctx)?;
                    if !same_dims(&t.dims, &out.dims) {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            target.span,
                            format!(
                                "dimension mismatch: this has size {}, the function output has size {}",
                                shape_text(&t.dims),
                                shape_text(&out.dims)
                            ),
                        ));
                    }
                    for (&a, &b) in t.elems.iter().zip(&out.elems) {
                        self.push_eq(a, b, eq.span, ctx, initial);
                    }
                }
                Ok(())
            }
            EquationKind::Simple { lhs, rhs } => {
                let l = self.eval_expr(lhs, ctx)?;
                let r = self.eval_expr(rhs, ctx)?;
                if !same_dims(&l.dims, &r.dims) {
                    return Err(Diagnostic::error(DiagnosticKind::Shape,
                        eq.span,
                        format!(
                            "dimension mismatch: the left side has size {}, the right side has size {}",
                            shape_text(&l.dims),
                            shape_text(&r.dims)
                        ),
                    )
                    .with_secondary(lhs.span, format!("size {}", shape_text(&l.dims)))
                    .with_secondary(rhs.span, format!("size {}", shape_text(&r.dims)))
                    .with_label("both sides of an equation must have the same size"));
                }
                if (l.ty == ScalarType::Boolean) != (r.ty == ScalarType::Boolean) {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        eq.span,
                        "type mismatch: one side of the equation is Boolean, the other a number",
                    ));
                }
                for (&a, &b) in l.elems.iter().zip(&r.elems) {
                    self.push_eq(a, b, eq.span, ctx, initial);
                }
                Ok(())
            }
            EquationKind::Connect { a, b } => {
                if initial {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        eq.span,
                        "`connect` is not allowed in an initial equation section",
                    ));
                }
                self.connect(a, b, eq.span, ctx)
            }
            EquationKind::For { indices, body } => self.flatten_for(indices, body, ctx, initial),
            EquationKind::If { branches, else_ } => {
                self.flatten_if(branches, else_, eq.span, ctx, initial)
            }
            EquationKind::When { branches } => {
                if initial {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        eq.span,
                        "`when` is not allowed in an initial equation section",
                    ));
                }
                let mut out = Vec::new();
                let mut assigned: Vec<Vec<VarId>> = Vec::new();
                for (cond, body) in branches {
                    let conditions = self.when_condition(cond, ctx)?;
                    let mut stmts = Vec::new();
                    for e in body {
                        self.when_statement(e, ctx, &mut stmts)?;
                    }
                    let mut vs: Vec<VarId> = stmts
                        .iter()
                        .filter_map(|s| match s {
                            WhenStatement::Assign { var, .. } => Some(*var),
                            _ => None,
                        })
                        .collect();
                    vs.sort_unstable();
                    vs.dedup();
                    assigned.push(vs);
                    for c in conditions {
                        out.push((c, stmts.clone()));
                    }
                }
                // Every branch of a when-equation defines the same variables (MLS 8.3.5).
                if let Some(first) = assigned.first() {
                    for (k, other) in assigned.iter().enumerate().skip(1) {
                        if other != first {
                            let diff: Vec<String> = first
                                .iter()
                                .filter(|v| !other.contains(v))
                                .chain(other.iter().filter(|v| !first.contains(v)))
                                .map(|&v| format!("`{}`", self.vars[v as usize].name))
                                .collect();
                            return Err(Diagnostic::error(DiagnosticKind::Restriction, branches[k].0.span, format!("the branches of this when-equation assign different variables: {}", diff.join(", ")))
                                .with_label("this elsewhen branch")
                                .with_hint("in a when-equation every branch must assign the same variables; assign the others to `pre(v)`"));
                        }
                    }
                }
                self.whens.push(flat::WhenClause {
                    branches: out,
                    span: eq.span,
                });
                Ok(())
            }
            EquationKind::Call { func, args } => match func.dotted().as_str() {
                "assert" => {
                    let a = self.assert_of(args, eq.span, ctx)?;
                    self.asserts.push(flat::Assert { initial, ..a });
                    Ok(())
                }
                "unilateral" if !initial => self.unilateral(args, eq.span, ctx),
                "friction" if !initial => self.friction(args, eq.span, ctx),
                "reinit" => Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    eq.span,
                    "`reinit` is only allowed inside a `when` equation",
                )
                .with_label("reinit outside when")
                .with_hint("write `when condition then reinit(x, value); end when;`")),
                "terminate" => Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    eq.span,
                    "`terminate` is only supported inside a `when` equation",
                )
                .with_hint("write `when condition then terminate(\"reason\"); end when;`")),
                other => self.call_equation(other, func, args, eq.span, ctx, initial),
            },
        }
    }

    /// `f(x);` as an equation: a function without outputs, called for its
    /// asserts at every step (MLS 8.3.7: a function call equation whose
    /// function has no outputs). Its hidden output is an assert that holds.
    fn call_equation(
        &mut self,
        name: &str,
        func: &ast::ComponentRef,
        args: &[ast::Arg],
        span: Span,
        ctx: &Ctx,
        initial: bool,
    ) -> Result<(), Diagnostic> {
        if BUILTINS.contains(&name) {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("a call of `{name}` is not an equation; use its result in an equation"),
            ));
        }
        self.effect_call = None;
        let outs = self.call_user_function(func, args, span, ctx)?;
        let Some(condition) = self.effect_call.take().filter(|_| outs.is_empty()) else {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("a call of `{name}` is not an equation; use its result in an equation"),
            )
            .with_hint("only a function without outputs can be called as an equation"));
        };
        self.asserts.push(flat::Assert {
            condition,
            message: format!("`{name}` failed"),
            level: flat::AssertLevel::Error,
            span,
            initial,
        });
        Ok(())
    }

    /// `unilateral(gap, force, e)`: a unilateral contact (see
    /// [`flat::UnilateralContact`]). The gap and its rate become variables
    /// `$contactK.gap` and `$contactK.gapRate` with their equations; the
    /// force becomes a parameter-like slot written by the solver.
    fn unilateral(&mut self, args: &[Arg], span: Span, ctx: &Ctx) -> Result<(), Diagnostic> {
        let hint = "write `unilateral(gap, force, e);` with a scalar gap expression, a Real force variable of this model and a restitution coefficient";
        let (required, e) = contact_args(
            args,
            2,
            span,
            "`unilateral` takes two or three arguments",
            hint,
        )?;
        let (gap, force) = (required[0], required[1]);
        let g = self.contact_scalar(gap, ctx, hint)?;
        let e = self.contact_coefficient(e, ctx, hint)?;
        let force_var = self.contact_force(force, ctx, hint)?;
        let prefix = self.contact_prefix(ctx);
        let scope = self.inst_path(ctx.scope.inst);
        let gap_var = self.contact_var(format!("{prefix}.gap"), "contact gap", None, span);
        let rate_var = self.contact_var(
            format!("{prefix}.gapRate"),
            "rate of the contact gap",
            None,
            span,
        );
        let e_var = self.contact_var(
            format!("{prefix}.restitution"),
            "restitution coefficient",
            Some(e),
            span,
        );
        self.contact_equation(gap_var, g, span, scope.clone());
        let rate = self.arena.intern(Node::Der(gap_var));
        self.contact_equation(rate_var, rate, span, scope);
        self.contacts.push(flat::UnilateralContact {
            gap: gap_var,
            gap_rate: rate_var,
            force: force_var,
            restitution: e_var,
            span,
        });
        Ok(())
    }

    /// `friction(slip, force, normalForce, mu, eT)`: Coulomb friction at
    /// the unilateral contact whose force is `normalForce` (see
    /// [`flat::FrictionContact`]). The slip velocity becomes
    /// `$contactK.slip`; the friction force a solver-written slot.
    fn friction(&mut self, args: &[Arg], span: Span, ctx: &Ctx) -> Result<(), Diagnostic> {
        let hint = "write `friction(slip, force, normalForce, mu, eT);`: the sliding velocity, a Real force variable that increases it, the force of a unilateral contact, the friction coefficient and (optionally) the tangential restitution";
        let (required, e) = contact_args(
            args,
            4,
            span,
            "`friction` takes four or five arguments",
            hint,
        )?;
        let (slip, force, normal, mu) = (required[0], required[1], required[2], required[3]);
        let slip = self.contact_scalar(slip, ctx, hint)?;
        let mu = self.contact_scalar(mu, ctx, hint)?;
        let e = self.contact_coefficient(e, ctx, hint)?;
        let nv = self.eval_expr(normal, ctx)?;
        let normal_force = match nv.elems.as_slice() {
            &[x] => match self.arena.node(x) {
                Node::Var(v) => v,
                _ => {
                    return Err(Diagnostic::error(DiagnosticKind::Call,
                        normal.span,
                        "the third argument of `friction` must be the force variable of a `unilateral` contact",
                    )
                    .with_hint(hint));
                }
            },
            _ => {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    normal.span,
                    "the normal force must be a scalar",
                )
                .with_hint(hint));
            }
        };
        let force_var = self.contact_force(force, ctx, hint)?;
        let prefix = self.contact_prefix(ctx);
        let scope = self.inst_path(ctx.scope.inst);
        let slip_var = self.contact_var(format!("{prefix}.slip"), "sliding velocity", None, span);
        let mu_var = self.contact_var(
            format!("{prefix}.mu"),
            "friction coefficient",
            Some(mu),
            span,
        );
        let e_var = self.contact_var(
            format!("{prefix}.restitution"),
            "tangential restitution coefficient",
            Some(e),
            span,
        );
        self.contact_equation(slip_var, slip, span, scope);
        self.frictions.push(flat::FrictionContact {
            slip: slip_var,
            force: force_var,
            normal_force,
            mu: mu_var,
            restitution: e_var,
            span,
        });
        Ok(())
    }

    /// The optional last coefficient of a contact declaration (a
    /// restitution), zero when left out.
    fn contact_coefficient(
        &mut self,
        e: Option<&ast::Expr>,
        ctx: &Ctx,
        hint: &str,
    ) -> Result<ExprId, Diagnostic> {
        match e {
            Some(e) => self.contact_scalar(e, ctx, hint),
            None => Ok(self.arena.zero()),
        }
    }

    /// `var = rhs`, an equation a contact declaration introduces.
    fn contact_equation(&mut self, var: VarId, rhs: ExprId, span: Span, scope: String) {
        let lhs = self.arena.var(var);
        self.equations.push(flat::FlatEquation {
            lhs,
            rhs,
            span,
            scope,
        });
    }

    /// A scalar argument of a contact declaration.
    fn contact_scalar(
        &mut self,
        e: &ast::Expr,
        ctx: &Ctx,
        hint: &str,
    ) -> Result<ExprId, Diagnostic> {
        let v = self.eval_expr(e, ctx)?;
        match v.elems.as_slice() {
            &[x] => Ok(x),
            _ => Err(
                Diagnostic::error(DiagnosticKind::Shape, e.span, "a scalar is expected here")
                    .with_hint(hint),
            ),
        }
    }

    /// The force variable of a contact: a continuous Real of the model that
    /// no other contact owns. It becomes a parameter slot (value 0) that
    /// the Moreau stepper writes.
    fn contact_force(
        &mut self,
        force: &ast::Expr,
        ctx: &Ctx,
        hint: &str,
    ) -> Result<VarId, Diagnostic> {
        let f = self.contact_scalar(force, ctx, hint)?;
        let Node::Var(v) = self.arena.node(f) else {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                force.span,
                "a contact force must be a Real variable of the model",
            )
            .with_hint(hint));
        };
        let var = &self.vars[v as usize];
        let owned = self.contacts.iter().any(|c| c.force == v)
            || self.frictions.iter().any(|c| c.force == v);
        if owned {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                force.span,
                format!("`{}` is already the force of another contact", var.name),
            ));
        }
        if var.ty != ScalarType::Real || var.variability != Variability::Continuous {
            return Err(Diagnostic::error(
                DiagnosticKind::Variability,
                force.span,
                format!(
                    "`{}` must be a continuous Real variable to be a contact force",
                    var.name
                ),
            )
            .with_hint(hint));
        }
        let zero = self.arena.zero();
        let var = &mut self.vars[v as usize];
        var.variability = Variability::Parameter;
        var.binding = Some(zero);
        Ok(v)
    }

    /// `$contactK` (in the instance's scope) for the next contact.
    fn contact_prefix(&self, ctx: &Ctx) -> String {
        let k = self.contacts.len() + self.frictions.len() + 1;
        let scope = self.inst_path(ctx.scope.inst);
        if scope.is_empty() {
            format!("$contact{k}")
        } else {
            format!("{scope}.$contact{k}")
        }
    }

    /// A variable of a contact: continuous (no binding) or a parameter.
    fn contact_var(
        &mut self,
        name: String,
        description: &str,
        binding: Option<ExprId>,
        span: Span,
    ) -> VarId {
        let v = self.vars.len() as VarId;
        let variability = if binding.is_some() {
            Variability::Parameter
        } else {
            Variability::Continuous
        };
        let mut var = Variable::internal(name, variability, description, span);
        var.binding = binding;
        var.state_select = flat::StateSelect::Never;
        self.vars.push(var);
        v
    }

    fn flatten_for(
        &mut self,
        indices: &[ast::ForIndex],
        body: &[ast::Equation],
        ctx: &Ctx,
        initial: bool,
    ) -> Result<(), Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            for e in body {
                self.flatten_equation(e, ctx, initial)?;
            }
            return Ok(());
        };
        let range = self.for_range(first, ctx)?;
        for &x in &range.elems {
            let c = ctx.with_loop(&first.name.name, Value::scalar(range.ty, x));
            self.flatten_for(rest, body, &c, initial)?;
        }
        Ok(())
    }

    fn flatten_if(
        &mut self,
        branches: &[(ast::Expr, Vec<ast::Equation>)],
        else_: &[ast::Equation],
        span: Span,
        ctx: &Ctx,
        initial: bool,
    ) -> Result<(), Diagnostic> {
        // Parameter conditions choose a branch now; run-time conditions make
        // each equation an if-expression (the branches must have equally
        // many equations, MLS 8.3.4).
        let mut dynamic: Vec<(ExprId, &[ast::Equation])> = Vec::new();
        let mut dynamic_conds: Vec<&ast::Expr> = Vec::new();
        let mut chosen: Option<&[ast::Equation]> = None;
        for (c, body) in branches {
            let v = self.eval_expr(c, ctx)?;
            if v.ty != ScalarType::Boolean || !v.is_scalar() {
                return Err(Diagnostic::error(
                    DiagnosticKind::Type,
                    c.span,
                    "the condition of an if-equation must be a Boolean scalar",
                ));
            }
            let cond = v.elems[0];
            let known = match self.arena.as_const(cond) {
                Some(x) => Some(x),
                None if self.is_parameter_expr(cond) => Some(self.const_value(cond, c.span)?),
                None => None,
            };
            match known {
                Some(x) if x != 0.0 => {
                    chosen = Some(body);
                    break;
                }
                Some(_) => continue,
                None => {
                    dynamic.push((cond, body));
                    dynamic_conds.push(c);
                }
            }
        }
        if dynamic.is_empty() {
            for e in chosen.unwrap_or(else_) {
                self.flatten_equation(e, ctx, initial)?;
            }
            return Ok(());
        }
        let tail = chosen.unwrap_or(else_);
        // An assert inside a branch holds only while the branch is taken:
        // its condition becomes `not guard or condition`.
        let guard_asserts = |s: &mut Self, from: usize, guard: ExprId| {
            let skip = s.arena.not(guard);
            for a in &mut s.asserts[from..] {
                a.condition = s.arena.or(skip, a.condition);
            }
        };
        let collect = |s: &mut Self, eqs: &[ast::Equation]| -> Result<Vec<ExprId>, Diagnostic> {
            let saved = std::mem::take(if initial {
                &mut s.initial_equations
            } else {
                &mut s.equations
            });
            let saved_whens = s.whens.len();
            let saved_connects = s.connections.count;
            let r = eqs
                .iter()
                .try_for_each(|e| s.flatten_equation(e, ctx, initial));
            let got = std::mem::replace(
                if initial {
                    &mut s.initial_equations
                } else {
                    &mut s.equations
                },
                saved,
            );
            r?;
            if s.connections.count != saved_connects {
                return Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    span,
                    "`connect` inside an if-equation whose condition changes during the simulation",
                )
                .with_label(
                    "the connection structure must be fixed before the simulation (MLS 8.3.4)",
                )
                .with_hint(
                    "make the condition a parameter expression, or use a conditional component",
                ));
            }
            if s.whens.len() != saved_whens {
                return Err(Diagnostic::error(
                    DiagnosticKind::Unsupported,
                    span,
                    "`when` inside an if-equation with a run-time condition is not supported",
                ));
            }
            Ok(got.into_iter().map(|e| s.arena.sub(e.lhs, e.rhs)).collect())
        };
        // The guard of each branch: its condition and none before it, with
        // the relations live, as in any assert's condition.
        let mut live = ctx.clone();
        live.no_event = true;
        let mut live_conds = Vec::with_capacity(dynamic_conds.len());
        for c in &dynamic_conds {
            live_conds.push(self.eval_expr(c, &live)?.elems[0]);
        }
        let mut none_before = Vec::with_capacity(dynamic.len());
        let mut none = self.arena.constant(1.0);
        for &cond in &live_conds {
            none_before.push(none);
            let not_c = self.arena.not(cond);
            none = self.arena.and(none, not_c);
        }
        let first_assert = self.asserts.len();
        let mut acc = collect(self, tail)?;
        guard_asserts(self, first_assert, none);
        for (k, (cond, body)) in dynamic.into_iter().enumerate().rev() {
            let first_assert = self.asserts.len();
            let res = collect(self, body)?;
            let guard = self.arena.and(live_conds[k], none_before[k]);
            guard_asserts(self, first_assert, guard);
            if res.len() != acc.len() {
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    span,
                    format!(
                        "the branches of this if-equation have different numbers of equations ({} and {})",
                        res.len(),
                        acc.len()
                    ),
                )
                .with_hint("with a condition that changes during simulation every branch needs the same number of equations (add an `else` branch)"));
            }
            acc = res
                .iter()
                .zip(&acc)
                .map(|(&a, &b)| self.arena.if_(cond, a, b))
                .collect();
        }
        for r in acc {
            let zero = self.arena.zero();
            self.push_eq(r, zero, span, ctx, initial);
        }
        Ok(())
    }

    /// Whether an expression depends only on parameters and constants.
    pub(super) fn is_parameter_expr(&self, e: ExprId) -> bool {
        self.arena
            .reachable(&[e])
            .into_iter()
            .all(|id| match self.arena.node(id) {
                Node::Var(v) => self.vars[v as usize].is_parameter(),
                Node::Der(_)
                | Node::Pre(_)
                | Node::Time
                | Node::Initial
                | Node::Terminal
                | Node::Sample(..)
                | Node::Call { .. } => false,
                _ => true,
            })
    }

    fn when_condition(&mut self, cond: &ast::Expr, ctx: &Ctx) -> Result<Vec<ExprId>, Diagnostic> {
        let v = self.eval_expr(cond, ctx)?;
        if v.ty != ScalarType::Boolean {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                cond.span,
                "the condition of `when` must be Boolean",
            ));
        }
        // `when {c1, c2}` fires whenever one of them becomes true, even
        // while another is already true (MLS 8.3.5.1): one branch each.
        Ok(v.elems.clone())
    }

    fn when_statement(
        &mut self,
        eq: &ast::Equation,
        ctx: &Ctx,
        out: &mut Vec<WhenStatement>,
    ) -> Result<(), Diagnostic> {
        match &eq.kind {
            EquationKind::Simple { lhs, rhs } => {
                let ExprKind::Ref(_) = &lhs.kind else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        lhs.span,
                        "the left side of an equation in `when` must be a variable",
                    )
                    .with_hint("write `v = expression;` inside when-equations"));
                };
                let l = self.eval_expr(lhs, ctx)?;
                let r = self.eval_expr(rhs, ctx)?;
                if !same_dims(&l.dims, &r.dims) {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Shape,
                        eq.span,
                        format!(
                            "dimension mismatch: the left side has size {}, the right side has size {}",
                            shape_text(&l.dims),
                            shape_text(&r.dims)
                        ),
                    ));
                }
                for (&a, &b) in l.elems.iter().zip(&r.elems) {
                    let Node::Var(var) = self.arena.node(a) else {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Restriction,
                            lhs.span,
                            "the left side of an equation in `when` must be a variable",
                        ));
                    };
                    if self.vars[var as usize].is_parameter() {
                        let n = self.vars[var as usize].name.clone();
                        return Err(Diagnostic::error(
                            DiagnosticKind::Variability,
                            lhs.span,
                            format!("`{n}` is a parameter and cannot be assigned in `when`"),
                        ));
                    }
                    out.push(WhenStatement::Assign {
                        var,
                        value: b,
                        span: eq.span,
                    });
                }
                Ok(())
            }
            EquationKind::Call { func, args } => match func.dotted().as_str() {
                "reinit" => {
                    let [Arg::Positional(x), Arg::Positional(v)] = args.as_slice() else {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            eq.span,
                            "`reinit` takes two arguments: reinit(x, value)",
                        ));
                    };
                    let xv = self.eval_expr(x, ctx)?;
                    let vv = self.eval_expr(v, ctx)?;
                    if !same_dims(&xv.dims, &vv.dims) {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            eq.span,
                            "the two arguments of `reinit` must have the same size",
                        ));
                    }
                    for (&a, &b) in xv.elems.iter().zip(&vv.elems) {
                        let Node::Var(var) = self.arena.node(a) else {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Call,
                                x.span,
                                "the first argument of `reinit` must be a state variable",
                            ));
                        };
                        out.push(WhenStatement::Reinit {
                            var,
                            value: b,
                            span: eq.span,
                        });
                    }
                    Ok(())
                }
                "assert" => {
                    let a = self.assert_of(args, eq.span, ctx)?;
                    out.push(WhenStatement::Assert(a));
                    Ok(())
                }
                "terminate" => {
                    let message = match args.first() {
                        Some(Arg::Positional(m)) => self.eval_string(m, ctx)?,
                        _ => String::new(),
                    };
                    out.push(WhenStatement::Terminate {
                        message,
                        span: eq.span,
                    });
                    Ok(())
                }
                other => Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    eq.span,
                    format!("`{other}(...)` is not allowed as an equation in `when`"),
                )),
            },
            EquationKind::For { indices, body } => {
                let Some((first, rest)) = indices.split_first() else {
                    for e in body {
                        self.when_statement(e, ctx, out)?;
                    }
                    return Ok(());
                };
                let range = self.for_range(first, ctx)?;
                for &x in &range.elems {
                    let c = ctx.with_loop(&first.name.name, Value::scalar(range.ty, x));
                    if rest.is_empty() {
                        for e in body {
                            self.when_statement(e, &c, out)?;
                        }
                    } else {
                        let inner = ast::Equation {
                            kind: EquationKind::For {
                                indices: rest.to_vec(),
                                body: body.clone(),
                            },
                            span: eq.span,
                        };
                        self.when_statement(&inner, &c, out)?;
                    }
                }
                Ok(())
            }
            EquationKind::If { branches, else_ } => {
                // Each assigned variable takes its branch's value, or keeps its
                // previous value where a branch does not assign it.
                let mut arms: Vec<(Option<ExprId>, Vec<WhenStatement>)> = Vec::new();
                for (c, body) in branches {
                    let cv = self.eval_expr(c, ctx)?;
                    if cv.ty != ScalarType::Boolean || !cv.is_scalar() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Type,
                            c.span,
                            "the condition of `if` must be a Boolean scalar",
                        ));
                    }
                    let mut s = Vec::new();
                    for e in body {
                        self.when_statement(e, ctx, &mut s)?;
                    }
                    arms.push((Some(cv.elems[0]), s));
                }
                let mut s = Vec::new();
                for e in else_ {
                    self.when_statement(e, ctx, &mut s)?;
                }
                arms.push((None, s));
                let mut vars: Vec<VarId> = Vec::new();
                for (_, stmts) in &arms {
                    for st in stmts {
                        match st {
                            WhenStatement::Assign { var, .. } => vars.push(*var),
                            _ => {
                                return Err(Diagnostic::error(
                                    DiagnosticKind::Restriction,
                                    eq.span,
                                    "inside `when`, an if-equation may only assign variables (put reinit, assert and terminate in their own when-clauses)",
                                ));
                            }
                        }
                    }
                }
                vars.sort_unstable();
                vars.dedup();
                for v in vars {
                    let mut acc = self.arena.intern(Node::Pre(v));
                    for (cond, stmts) in arms.iter().rev() {
                        let val = stmts.iter().rev().find_map(|s| match s {
                            WhenStatement::Assign { var, value, .. } if *var == v => Some(*value),
                            _ => None,
                        });
                        match cond {
                            None => {
                                if let Some(x) = val {
                                    acc = x;
                                }
                            }
                            Some(c) => {
                                let x = val.unwrap_or_else(|| self.arena.intern(Node::Pre(v)));
                                acc = self.arena.if_(*c, x, acc);
                            }
                        }
                    }
                    out.push(WhenStatement::Assign {
                        var: v,
                        value: acc,
                        span: eq.span,
                    });
                }
                Ok(())
            }
            EquationKind::When { .. } => Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                eq.span,
                "`when` cannot be nested inside `when`",
            )),
            EquationKind::Connect { .. } => Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                eq.span,
                "`connect` is not allowed inside `when`",
            )),
        }
    }

    fn assert_of(
        &mut self,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<flat::Assert, Diagnostic> {
        let mut pos = Vec::new();
        let mut level = None;
        for a in args {
            match a {
                Arg::Positional(e) => pos.push(e),
                Arg::Named(n, e) if n.name == "level" => level = Some(e),
                Arg::Named(n, e) if n.name == "condition" => pos.insert(0, e),
                Arg::Named(n, e) if n.name == "message" => pos.push(e),
                Arg::Named(n, _) => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        n.span,
                        format!("`assert` has no argument `{}`", n.name),
                    ));
                }
            }
        }
        if pos.len() == 3 {
            level = Some(pos[2]);
        }
        if pos.len() < 2 {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                "`assert` takes a condition and a message: assert(x > 0, \"x must be positive\")",
            ));
        }
        // An assert checks the solution; it does not steer it. Its relations
        // are evaluated as they stand (as under `noEvent`), so they neither
        // add zero-crossings nor keep a frozen value from the last event.
        let mut live = ctx.clone();
        live.no_event = true;
        let c = self.eval_expr(pos[0], &live)?;
        if c.ty != ScalarType::Boolean || !c.is_scalar() {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                pos[0].span,
                "the condition of `assert` must be a Boolean scalar",
            ));
        }
        let message = self.eval_string(pos[1], ctx)?;
        let level = match level {
            None => AssertLevel::Error,
            Some(l) => {
                let v = self.eval_expr(l, ctx)?;
                match v.elems.first().and_then(|&e| self.arena.as_const(e)) {
                    Some(2.0) => AssertLevel::Warning,
                    _ => AssertLevel::Error,
                }
            }
        };
        Ok(flat::Assert {
            condition: c.elems[0],
            message,
            level,
            span,
            initial: false,
        })
    }

    // ------------------------------------------------------------ connect

    fn connect(
        &mut self,
        a: &ast::ComponentRef,
        b: &ast::ComponentRef,
        span: Span,
        ctx: &Ctx,
    ) -> Result<(), Diagnostic> {
        // A connection to a conditional component that is not there is
        // removed with it (MLS 4.4.5).
        let (Some(na), Some(nb)) = (self.connector_nodes(a, ctx)?, self.connector_nodes(b, ctx)?)
        else {
            return Ok(());
        };
        self.connections.count += 1;
        for r in [a, b] {
            self.check_connect_argument(r, ctx)?;
        }
        let top = ctx
            .scope
            .inst
            .is_some_and(|i| self.instances[i as usize].path.is_empty());
        // A connector is outside when the reference starts at one of this
        // class's own connectors (`p`, or `bus.y` inside a connector
        // `bus`), inside when it starts at a component (MLS 9.1.2).
        let (inside_a, public_a) = self.connect_side(a, ctx);
        let (inside_b, public_b) = self.connect_side(b, ctx);
        self.connecting_top_public = [top && !inside_a && public_a, top && !inside_b && public_b];
        if !same_dims(&na.dims, &nb.dims) {
            return Err(Diagnostic::error(
                DiagnosticKind::Connection,
                span,
                format!(
                    "cannot connect `{}` (size {}) to `{}` (size {})",
                    a.dotted(),
                    shape_text(&na.dims),
                    b.dotted(),
                    shape_text(&nb.dims)
                ),
            )
            .with_label("connected connectors of different sizes (MLS 9.3)")
            .with_hint("connect arrays of the same size, or name matching elements (`a[1:2]`)"));
        }
        // A connector named by one identifier is the instance's own (outside);
        // one reached through a component is inside (MLS 9.1.2).
        for (la, lb) in na.leaves.iter().zip(nb.leaves.iter()) {
            self.connect_nodes(la, lb, inside_a, inside_b, span, &a.dotted(), &b.dotted())?;
        }
        Ok(())
    }

    /// Whether `r` names a conditional component whose condition is false,
    /// or something inside one: `support`, or `sub.support` with `support`
    /// disabled inside `sub`.
    fn names_disabled(&mut self, r: &ast::ComponentRef, ctx: &Ctx) -> Result<bool, Diagnostic> {
        let Some(inst) = ctx.scope.inst else {
            return Ok(false);
        };
        if self
            .disabled
            .contains(&(inst, r.parts[0].ident.name.clone()))
        {
            return Ok(true);
        }
        for k in 1..r.parts.len() {
            let prefix = ast::ComponentRef {
                parts: r.parts[..k].to_vec(),
                ..r.clone()
            };
            let Ok(Some(nodes)) = self.resolve_nodes(&prefix, ctx) else {
                return Ok(false);
            };
            let name = &r.parts[k].ident.name;
            let inside = nodes.leaves.iter().any(
                |n| matches!(n, CompNode::Inst(i) if self.disabled.contains(&(*i, name.clone()))),
            );
            if inside {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The connector `r` names; `None` for one inside a conditional
    /// component that is not there (its connections are dropped).
    fn connector_nodes(
        &mut self,
        r: &ast::ComponentRef,
        ctx: &Ctx,
    ) -> Result<Option<NodeArray>, Diagnostic> {
        let resolved = match self.resolve_nodes(r, ctx) {
            Err(_) | Ok(None) if self.names_disabled(r, ctx)? => return Ok(None),
            other => other?,
        };
        match resolved {
            Some(n) => Ok(Some(n)),
            None => Err(Diagnostic::error(
                DiagnosticKind::UnresolvedName,
                r.span,
                format!("unknown connector `{}`", r.dotted()),
            )
            .with_label("no component of this name")),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn connect_nodes(
        &mut self,
        a: &CompNode,
        b: &CompNode,
        ia: bool,
        ib: bool,
        span: Span,
        an: &str,
        bn: &str,
    ) -> Result<(), Diagnostic> {
        match (a, b) {
            (CompNode::Var(x), CompNode::Var(y)) => {
                let (vx, vy) = (&self.vars[*x as usize], &self.vars[*y as usize]);
                if vx.flow != vy.flow {
                    let (f, p) = if vx.flow {
                        (&vx.name, &vy.name)
                    } else {
                        (&vy.name, &vx.name)
                    };
                    return Err(Diagnostic::error(
                        DiagnosticKind::Connection,
                        span,
                        format!("cannot connect flow variable `{f}` to potential variable `{p}`"),
                    )
                    .with_hint(
                        "connected connectors must have the same variables, flow with flow",
                    ));
                }
                if vx.ty != vy.ty {
                    let tn = |t: ScalarType| match t {
                        ScalarType::Real => "Real",
                        ScalarType::Integer => "Integer",
                        ScalarType::Boolean => "Boolean",
                    };
                    return Err(Diagnostic::error(
                        DiagnosticKind::Connection,
                        span,
                        format!(
                            "cannot connect `{}` ({}) to `{}` ({})",
                            vx.name,
                            tn(vx.ty),
                            vy.name,
                            tn(vy.ty)
                        ),
                    )
                    .with_label("connected variables of different types (MLS 9.3)")
                    .with_hint(
                        "connected connectors must declare their variables with the same type",
                    ));
                }
                if vx.is_parameter() != vy.is_parameter() {
                    let (p, c) = if vx.is_parameter() {
                        (&vx.name, &vy.name)
                    } else {
                        (&vy.name, &vx.name)
                    };
                    return Err(Diagnostic::error(
                        DiagnosticKind::Connection,
                        span,
                        format!(
                            "cannot connect parameter `{p}` to `{c}`, which is not a parameter"
                        ),
                    )
                    .with_label("connected variables of different variability (MLS 9.3)")
                    .with_hint("declare both `parameter`, or neither"));
                }
                if vx.is_parameter() {
                    return Ok(());
                }
                for (k, (v, inside)) in [(*x, ia), (*y, ib)].into_iter().enumerate() {
                    if self.vars[v as usize].causality != flat::Causality::Local {
                        let top_public = self.connecting_top_public[k];
                        let u = self.connections.causal.entry(v).or_default();
                        if inside {
                            u.inside = true;
                        } else {
                            u.outside = true;
                            u.top_outside |= top_public;
                        }
                    }
                }
                if vx.flow {
                    self.connections.union_f((*x, ia), (*y, ib), span);
                } else {
                    self.connections.union_p(*x, *y, span);
                }
                Ok(())
            }
            (CompNode::Inst(i), CompNode::Inst(j)) => {
                let (ki, kj) = (
                    self.instances[*i as usize].kind,
                    self.instances[*j as usize].kind,
                );
                for (k, n) in [(ki, an), (kj, bn)] {
                    if k != ast::ClassKind::Connector {
                        return Err(Diagnostic::error(DiagnosticKind::Connection, span, format!("`{n}` is not a connector and cannot be connected"))
                            .with_hint("connect the connectors of components, e.g. `connect(a.flange, b.flange)`"));
                    }
                }
                let mut names_a = self.instances[*i as usize].order.clone();
                let mut names_b = self.instances[*j as usize].order.clone();
                names_a.sort();
                names_b.sort();
                if names_a != names_b {
                    let ca = self
                        .lib
                        .entry(self.instances[*i as usize].class)
                        .full_name
                        .clone();
                    let cb = self
                        .lib
                        .entry(self.instances[*j as usize].class)
                        .full_name
                        .clone();
                    return Err(Diagnostic::error(
                        DiagnosticKind::Connection,
                        span,
                        format!(
                            "cannot connect `{an}` ({ca}) to `{bn}` ({cb}): their variables differ"
                        ),
                    )
                    .with_note(format!("{ca} has {}", names_a.join(", ")))
                    .with_note(format!("{cb} has {}", names_b.join(", "))));
                }
                for name in names_a {
                    let x = self.component_node(*i, &name)?;
                    let y = self.component_node(*j, &name)?;
                    let (Some(x), Some(y)) = (x, y) else { continue };
                    let xa = leaves_of(&x);
                    let ya = leaves_of(&y);
                    if xa.len() != ya.len() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Connection,
                            span,
                            format!("`{an}.{name}` and `{bn}.{name}` have different sizes"),
                        ));
                    }
                    for (p, q) in xa.iter().zip(&ya) {
                        self.connect_nodes(
                            p,
                            q,
                            ia,
                            ib,
                            span,
                            &format!("{an}.{name}"),
                            &format!("{bn}.{name}"),
                        )?;
                    }
                }
                Ok(())
            }
            _ => Err(Diagnostic::error(
                DiagnosticKind::Connection,
                span,
                format!(
                    "cannot connect `{an}` to `{bn}`: one is a variable, the other a connector"
                ),
            )),
        }
    }

    /// Whether a `connect` argument is inside (it starts at a component
    /// that is not a connector) and whether its first component is public.
    fn connect_side(&self, r: &ast::ComponentRef, ctx: &Ctx) -> (bool, bool) {
        let first = ctx.scope.inst.and_then(|i| {
            self.instances[i as usize]
                .components
                .get(&r.parts[0].ident.name)
        });
        let public = first.is_none_or(|c| !c.protected);
        let inside = r.parts.len() > 1 && first.is_none_or(|c| !c.connector_class);
        (inside, public)
    }

    /// An argument of `connect` names a connector: a component whose class
    /// is a connector, not a variable inside one (MLS 9.1).
    fn check_connect_argument(
        &mut self,
        r: &ast::ComponentRef,
        ctx: &Ctx,
    ) -> Result<(), Diagnostic> {
        let Some((last, prefix)) = r.parts.split_last() else {
            return Ok(());
        };
        let owner = if prefix.is_empty() {
            ctx.scope.inst
        } else {
            let pr = ast::ComponentRef {
                parts: prefix.to_vec(),
                ..r.clone()
            };
            match self.resolve_nodes(&pr, ctx)? {
                Some(n) => n.leaves.iter().find_map(|l| match l {
                    CompNode::Inst(i) => Some(*i),
                    _ => None,
                }),
                None => None,
            }
        };
        let Some(owner) = owner else {
            return Ok(());
        };
        match self.instances[owner as usize]
            .components
            .get(&last.ident.name)
        {
            Some(c) if !c.connector_class => Err(Diagnostic::error(
                DiagnosticKind::Connection,
                last.ident.span,
                format!("`{}` is not a connector", r.dotted()),
            )
            .with_label("an argument of `connect` must be a connector (MLS 9.1)")
            .with_hint(if !matches!(c.node, CompNode::Var(_)) {
                "connect the connectors of components, e.g. `connect(a.flange, b.flange)`"
                    .to_string()
            } else if prefix.is_empty() {
                "write an equation instead, e.g. `a = b`".to_string()
            } else {
                format!(
                    "connect the connector that holds it (`{}`), or write an equation",
                    pr_text(prefix)
                )
            })),
            _ => Ok(()),
        }
    }

    /// A connection set of inputs and outputs has at most one source: an
    /// output of a component inside, or an input of the simulated model
    /// from outside (MLS 9.3).
    fn check_one_source(&mut self, members: &[VarId]) {
        let sources: Vec<VarId> = members
            .iter()
            .copied()
            .filter(|v| {
                let Some(u) = self.connections.causal.get(v) else {
                    return false;
                };
                match self.vars[*v as usize].causality {
                    flat::Causality::Output => u.inside && !u.outside,
                    flat::Causality::Input => u.top_outside,
                    flat::Causality::Local => false,
                }
            })
            .collect();
        if sources.len() > 1 {
            let names: Vec<String> = sources
                .iter()
                .map(|v| format!("`{}`", self.vars[*v as usize].name))
                .collect();
            let span = self.connections.potential_span[&sources[1]];
            self.diags.push(
                Diagnostic::error(DiagnosticKind::Connection,
                    span,
                    format!("{} drive the same connection set", names.join(" and ")),
                )
                .with_label("more than one source in a connection set: two outputs, or an output and an input from outside (MLS 9.3)")
                .with_hint("connect each input to exactly one output"),
            );
        }
    }

    /// Equations of the connection sets, and zero flow for unconnected inside
    /// flow variables.
    pub(super) fn connection_equations(&mut self) {
        let mut groups: BTreeMap<VarId, Vec<VarId>> = BTreeMap::new();
        let keys: Vec<VarId> = self.connections.potential.keys().copied().collect();
        for v in keys {
            let r = self.connections.find_p(v);
            groups.entry(r).or_default().push(v);
        }
        for (_, mut members) in groups {
            members.sort_unstable();
            self.check_one_source(&members);
            let first = members[0];
            for &m in &members[1..] {
                let span = self.connections.potential_span[&m];
                let lhs = self.arena.var(first);
                let rhs = self.arena.var(m);
                let scope = String::new();
                self.equations.push(flat::FlatEquation {
                    lhs,
                    rhs,
                    span,
                    scope,
                });
            }
        }
        let mut fgroups: BTreeMap<(VarId, bool), Vec<(VarId, bool)>> = BTreeMap::new();
        let keys: Vec<(VarId, bool)> = self.connections.flow.keys().copied().collect();
        for e in keys {
            let r = self.connections.find_f(e);
            fgroups.entry(r).or_default().push(e);
        }
        for (_, mut members) in fgroups {
            members.sort_unstable();
            let span = self.connections.flow_span[&members[0]];
            let mut sum = self.arena.zero();
            for (v, inside) in &members {
                let x = self.arena.var(*v);
                sum = if *inside {
                    self.arena.add(sum, x)
                } else {
                    self.arena.sub(sum, x)
                };
            }
            let zero = self.arena.zero();
            self.equations.push(flat::FlatEquation {
                lhs: sum,
                rhs: zero,
                span,
                scope: String::new(),
            });
        }
        // Connectors of components left unconnected: their flow variables
        // are zero (MLS 9.2), which a user is told (once, listing them).
        let mut unconnected: Vec<(String, Span)> = Vec::new();
        for v in 0..self.vars.len() as VarId {
            let var = &self.vars[v as usize];
            if var.flow && !var.is_parameter() && !self.connections.connected_inside.contains(&v) {
                if let Some((connector, _)) = var.name.rsplit_once('.')
                    && connector.contains('.')
                    && !unconnected.iter().any(|(c, _)| c == connector)
                {
                    unconnected.push((connector.to_string(), var.span));
                }
                let span = var.span;
                let lhs = self.arena.var(v);
                let rhs = self.arena.zero();
                self.equations.push(flat::FlatEquation {
                    lhs,
                    rhs,
                    span,
                    scope: String::new(),
                });
            }
        }
        // (After an error a connection may be missing: no warning then.)
        if let Some((_, span)) = unconnected.first()
            && !crate::diag::has_errors(&self.diags)
        {
            let names = crate::diag::short_list(unconnected.iter().map(|(c, _)| format!("`{c}`")));
            let (what, verb) = if unconnected.len() == 1 {
                ("connector", "is")
            } else {
                ("connectors", "are")
            };
            self.diags.push(
                Diagnostic::warning(
                    DiagnosticKind::Connection,
                    *span,
                    format!(
                        "{} {what} {verb} not connected: {}",
                        unconnected.len(),
                        names
                    ),
                )
                .with_label("a flow variable of an unconnected connector")
                .with_note(
                    "their flow variables are set to zero (MLS 9.2): nothing flows through them",
                ),
            );
        }
    }
}

fn leaves_of(n: &CompNode) -> Vec<CompNode> {
    match n {
        CompNode::Array(_, e) => e.to_vec(),
        other => vec![other.clone()],
    }
}

/// The arguments of a contact declaration: `required` positional ones and
/// an optional last one; anything else is `wrong_count`.
fn contact_args<'a>(
    args: &'a [Arg],
    required: usize,
    span: Span,
    wrong_count: &str,
    hint: &str,
) -> Result<(Vec<&'a ast::Expr>, Option<&'a ast::Expr>), Diagnostic> {
    let positional: Option<Vec<&ast::Expr>> = args
        .iter()
        .map(|a| match a {
            Arg::Positional(e) => Some(e),
            _ => None,
        })
        .collect();
    match positional {
        Some(mut all) if all.len() == required || all.len() == required + 1 => {
            let optional = if all.len() > required {
                all.pop()
            } else {
                None
            };
            Ok((all, optional))
        }
        _ => Err(Diagnostic::error(DiagnosticKind::Call, span, wrong_count).with_hint(hint)),
    }
}

/// `a.b` of a reference's leading parts.
fn pr_text(parts: &[ast::RefPart]) -> String {
    parts
        .iter()
        .map(|p| p.ident.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}
