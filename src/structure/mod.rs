//! Structural analysis: from the flat model to a causal, index-1 model.
//!
//! Steps, in order: the balance check ([`balance`]); derivative variables
//! (`der(x)` becomes a variable `der(x)`); alias elimination ([`alias`]);
//! Pantelides' index reduction ([`pantelides`]); dummy-derivative state
//! selection (Mattsson & Söderlind 1993, in [`pantelides`]); matching, BLT
//! sorting by Tarjan's strongly connected components and tearing of the
//! algebraic loops ([`blt`]).
//!
//! API boundary: [`analyze`] consumes a [`FlatModel`] and returns a
//! [`Causal`] model. Invariants of the result: `blocks`, evaluated in order,
//! compute every unknown that is not a state from the states, parameters,
//! discrete variables and time; each state `states[i]` has the derivative
//! variable `state_ders[i]`, computed by some block.

pub mod alias;
pub mod balance;
pub mod blt;
pub mod matching;
pub mod pantelides;

use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{self, ExprArena, ExprId, FlatModel, Node, VarId, Variability, Variable};
use crate::symbolic::fndiff::Derivatives;
use rustc_hash::FxHashMap as HashMap;

pub use alias::Alias;
pub use blt::Block;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Role {
    Constant,
    Parameter,
    /// Changes only at events: assigned in `when`, or a discrete Real.
    Discrete,
    /// Integrated by the solver.
    State,
    /// Computed by the blocks (including derivatives and dummy states).
    Algebraic,
    /// Eliminated: equal to ± another variable.
    Alias,
}

/// One equation of the index-reduced system, `residual = 0`.
#[derive(Clone, Debug)]
pub struct ReducedEquation {
    pub lhs: ExprId,
    pub rhs: ExprId,
    pub span: Span,
    pub scope: String,
    /// The equation this one is the time derivative of.
    pub diff_of: Option<usize>,
}

impl ReducedEquation {
    pub fn residual(&self, arena: &mut ExprArena) -> ExprId {
        arena.sub(self.lhs, self.rhs)
    }
}

/// What index reduction did, for `rmoc analyze` and tests.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    pub index: usize,
    /// Equations added by differentiation.
    pub differentiated: usize,
    /// Variables that have derivatives in the system but are not states.
    pub dummy_states: Vec<VarId>,
    pub aliases: usize,
}

#[derive(Clone, Debug)]
pub struct Causal {
    pub name: String,
    pub arena: ExprArena,
    /// The flat variables followed by the derivative variables `der(x)`.
    pub vars: Vec<Variable>,
    pub roles: Vec<Role>,
    /// `der[v]`: the variable that is the time derivative of `v`.
    pub der: Vec<Option<VarId>>,
    pub states: Vec<VarId>,
    pub state_ders: Vec<VarId>,
    pub equations: Vec<ReducedEquation>,
    pub blocks: Vec<Block>,
    pub aliases: Vec<Alias>,
    pub initial_equations: Vec<flat::FlatEquation>,
    pub whens: Vec<flat::WhenClause>,
    pub asserts: Vec<flat::Assert>,
    /// Unilateral contacts (their variables keep their flat ids).
    pub contacts: Vec<flat::UnilateralContact>,
    pub frictions: Vec<flat::FrictionContact>,
    pub functions: Derivatives,
    pub experiment: flat::Experiment,
    pub summary: Summary,
    /// Warnings of flattening and analysis, shown before a run.
    pub warnings: Vec<crate::diag::Diagnostic>,
}

impl Causal {
    pub fn name_of(&self, v: VarId) -> &str {
        &self.vars[v as usize].name
    }

    /// Whether `v` is a top-level `input` without a binding: a parameter of
    /// a run (0 unless set), the value a host drives in an FMU.
    pub fn is_top_level_input(&self, v: VarId) -> bool {
        let var = &self.vars[v as usize];
        var.causality == flat::Causality::Input
            && self.roles[v as usize] == Role::Parameter
            && top_level(&var.name)
            && !var.name.contains('$')
    }
    pub fn show(&self, e: ExprId) -> String {
        let names = |v: VarId| self.vars[v as usize].name.clone();
        let mut s = self.arena.display(e, &names);
        for (k, f) in self.functions.functions.iter().enumerate().rev() {
            s = s.replace(&format!("$fn{k}("), &format!("{}(", f.name));
        }
        s
    }
}

/// The analysis of a flat model, or diagnostics naming the culprits.
pub fn analyze(flat: FlatModel) -> Result<Causal, Vec<Diagnostic>> {
    let timing = std::env::var_os("RMOC_TIMING").is_some();
    let mut clock = std::time::Instant::now();
    let diags = balance::check(&flat);
    if crate::diag::has_errors(&diags) {
        return Err(diags);
    }
    let mut lap = |what: &str| {
        if timing {
            eprintln!(
                "  structure: {what} {:.2} ms",
                clock.elapsed().as_secs_f64() * 1e3
            );
        }
        clock = std::time::Instant::now();
    };
    lap("balance");
    let mut s = Analysis::new(flat);
    s.derivative_variables();
    s.derivatives_in_events().map_err(|d| vec![d])?;
    lap("derivative variables");
    s.eliminate_aliases();
    lap("aliases");
    let mut p = pantelides::Pantelides::new(&mut s);
    p.run().map_err(|d| vec![d])?;
    lap("pantelides");
    let dummies = p.select_dummy_derivatives().map_err(|d| vec![d])?;
    lap("dummy derivatives");
    s.classify(&dummies);
    s.check_reinits().map_err(|d| vec![d])?;
    let blocks = blt::sort(&mut s).map_err(|d| vec![d])?;
    lap("blt and tearing");
    s.check_discrete_blocks(&blocks).map_err(|d| vec![d])?;
    Ok(s.finish(blocks))
}

/// Per output of a function, the argument positions it reads.
type CallDeps = std::rc::Rc<Vec<Vec<u32>>>;

/// Working state of the structural analysis (shared by the sub-modules:
/// Pantelides, dummy derivatives, BLT and tearing), consumed by `finish`
/// into the causal model.
pub struct Analysis {
    pub name: String,
    pub arena: ExprArena,
    pub vars: Vec<Variable>,
    pub roles: Vec<Role>,
    pub unknown: Vec<bool>,
    pub der: Vec<Option<VarId>>,
    pub integral: Vec<Option<VarId>>,
    pub equations: Vec<ReducedEquation>,
    pub initial_equations: Vec<flat::FlatEquation>,
    pub whens: Vec<flat::WhenClause>,
    pub asserts: Vec<flat::Assert>,
    pub contacts: Vec<flat::UnilateralContact>,
    pub frictions: Vec<flat::FrictionContact>,
    pub functions: Derivatives,
    pub experiment: flat::Experiment,
    pub aliases: Vec<Alias>,
    pub states: Vec<VarId>,
    pub summary: Summary,
    warnings: Vec<crate::diag::Diagnostic>,
    /// Per function, which arguments each output depends on (computed on
    /// first use; see [`flat::Function::output_dependencies`]).
    call_deps: std::cell::RefCell<HashMap<u32, Option<CallDeps>>>,
    /// The start point ([`pantelides::start_point`]), evaluated when first
    /// needed ([`Self::start`]).
    start: std::cell::OnceCell<Vec<f64>>,
}

impl Analysis {
    /// The start point of every variable, evaluated once: by the dummy
    /// derivatives' choice and then by the BLT sort, between which neither
    /// the variables nor the equations change (it must not be asked for
    /// before index reduction has added its equations). Evaluating it can
    /// run long functions (a cycloid profile of thousands of points).
    pub fn start(&self) -> &[f64] {
        self.start.get_or_init(|| pantelides::start_point(self))
    }

    fn new(flat: FlatModel) -> Analysis {
        let unknowns = balance::unknowns(&flat);
        let n = flat.vars.len();
        let mut unknown = vec![false; n];
        for v in unknowns {
            unknown[v as usize] = true;
        }
        let roles = flat
            .vars
            .iter()
            .enumerate()
            .map(|(i, v)| match v.variability {
                Variability::Constant => Role::Constant,
                Variability::Parameter => Role::Parameter,
                _ if unknown[i] => Role::Algebraic,
                _ => Role::Discrete,
            })
            .collect();
        let equations = flat
            .equations
            .iter()
            .map(|e| ReducedEquation {
                lhs: e.lhs,
                rhs: e.rhs,
                span: e.span,
                scope: e.scope.clone(),
                diff_of: None,
            })
            .collect();
        Analysis {
            name: flat.name,
            arena: flat.exprs,
            vars: flat.vars,
            roles,
            unknown,
            der: vec![None; n],
            integral: vec![None; n],
            equations,
            initial_equations: flat.initial_equations,
            whens: flat.whens,
            asserts: flat.asserts,
            contacts: flat.contacts,
            frictions: flat.frictions,
            functions: Derivatives::new(flat.functions),
            experiment: flat.experiment,
            warnings: flat.warnings,
            aliases: Vec::new(),
            states: Vec::new(),
            summary: Summary::default(),
            call_deps: Default::default(),
            start: Default::default(),
        }
    }

    /// The derivative variable of `v`, created on first use.
    pub fn der_var(&mut self, v: VarId) -> VarId {
        if let Some(d) = self.der[v as usize] {
            return d;
        }
        let base = &self.vars[v as usize];
        let d = self.vars.len() as VarId;
        let unit = base.unit.as_ref().map(|u| format!("{u}/s"));
        let mut der = Variable::internal(
            format!("der({})", base.name),
            Variability::Continuous,
            "",
            base.span,
        );
        der.unit = unit;
        der.description = None;
        self.vars.push(der);
        self.roles.push(Role::Algebraic);
        self.unknown.push(true);
        self.der.push(None);
        self.integral.push(Some(v));
        self.der[v as usize] = Some(d);
        d
    }

    /// Rewrites `e` with each `der(v)` node replaced by the variable
    /// `der_of(v)` names (or the error it returns).
    fn replace_ders<E>(
        &mut self,
        e: ExprId,
        memo: &mut flat::RewriteMemo,
        mut der_of: impl FnMut(&mut Analysis, VarId) -> Result<VarId, E>,
    ) -> Result<ExprId, E> {
        let ders: Vec<VarId> = self
            .arena
            .reachable(&[e])
            .into_iter()
            .filter_map(|id| match self.arena.node(id) {
                Node::Der(v) => Some(v),
                _ => None,
            })
            .collect();
        if ders.is_empty() {
            return Ok(e);
        }
        let mut map: HashMap<VarId, VarId> = HashMap::default();
        for v in ders {
            let d = der_of(self, v)?;
            map.insert(v, d);
        }
        Ok(self.arena.rewrite(e, memo, &mut |a, n| match n {
            Node::Der(v) => Some(a.var(map[&v])),
            _ => None,
        }))
    }

    /// Replaces every `der(v)` node of the equations by the variable `der(v)`.
    fn derivative_variables(&mut self) {
        let mut memo = flat::RewriteMemo::default();
        let mut replace = |this: &mut Analysis, e: ExprId| -> ExprId {
            let Ok(x) = this.replace_ders(e, &mut memo, |b, v| {
                Ok::<VarId, std::convert::Infallible>(b.der_var(v))
            });
            x
        };
        for i in 0..self.equations.len() {
            let (l, r) = (self.equations[i].lhs, self.equations[i].rhs);
            self.equations[i].lhs = replace(self, l);
            self.equations[i].rhs = replace(self, r);
        }
        for i in 0..self.initial_equations.len() {
            let (l, r) = (self.initial_equations[i].lhs, self.initial_equations[i].rhs);
            self.initial_equations[i].lhs = replace(self, l);
            self.initial_equations[i].rhs = replace(self, r);
        }
    }

    /// Replaces `der(v)` in when-clauses and asserts by the variable
    /// `der(v)`, which the equations must already define: a derivative that
    /// only a condition or an assert asks for has no equation to compute it.
    fn derivatives_in_events(&mut self) -> Result<(), Diagnostic> {
        let mut memo = flat::RewriteMemo::default();
        let mut replace = |this: &mut Analysis, e: ExprId, span: Span| {
            this.replace_ders(e, &mut memo, |b, v| {
                b.der[v as usize].ok_or_else(|| {
                    let name = &b.vars[v as usize].name;
                    Diagnostic::error(
                        DiagnosticKind::Singular,
                        span,
                        format!(
                            "`der({name})` is used here but no equation differentiates `{name}`"
                        ),
                    )
                    .with_hint(format!(
                        "add `Real d = der({name});` to the equations and use `d` here"
                    ))
                })
            })
        };
        let mut whens = std::mem::take(&mut self.whens);
        for w in &mut whens {
            for (cond, statements) in &mut w.branches {
                *cond = replace(self, *cond, w.span)?;
                for st in statements {
                    match st {
                        flat::WhenStatement::Assign { value, span, .. }
                        | flat::WhenStatement::Reinit { value, span, .. } => {
                            *value = replace(self, *value, *span)?;
                        }
                        flat::WhenStatement::Assert(a) => {
                            a.condition = replace(self, a.condition, a.span)?;
                        }
                        flat::WhenStatement::Terminate { .. } => {}
                    }
                }
            }
        }
        self.whens = whens;
        let mut asserts = std::mem::take(&mut self.asserts);
        for a in &mut asserts {
            a.condition = replace(self, a.condition, a.span)?;
        }
        self.asserts = asserts;
        Ok(())
    }

    /// Removes `a = ±b` equations between unknowns (see [`alias`]).
    fn eliminate_aliases(&mut self) {
        let n = self.vars.len();
        let mut sets = alias::AliasSets::new(n);
        let mut removed = vec![false; self.equations.len()];
        let unknown = self.unknown.clone();
        let integral = self.integral.clone();
        let is_plain = |v: VarId| unknown[v as usize] && integral[v as usize].is_none();
        for (i, eq) in self.equations.iter().enumerate() {
            let Some((a, b, neg)) = alias::alias_pair(&self.arena, eq.lhs, eq.rhs, &is_plain)
            else {
                continue;
            };
            // Only Real variables; a Boolean alias is rare and not worth the care.
            if self.vars[a as usize].ty != flat::ScalarType::Real
                || self.vars[b as usize].ty != flat::ScalarType::Real
            {
                continue;
            }
            let der = &self.der;
            let vars = &self.vars;
            let prefer = |x: VarId, y: VarId| {
                alias::better_representative(vars, &|v| der[v as usize].is_some(), x, y)
            };
            // Two state candidates: their derivatives alias too; both must exist
            // or neither (else the representative would need a new derivative).
            let (ra, _) = sets.find(a);
            let (rb, _) = sets.find(b);
            if ra == rb {
                continue;
            }
            let (da, db) = (
                self.der[ra as usize].is_some(),
                self.der[rb as usize].is_some(),
            );
            if da && db {
                continue;
            }
            if sets.union(a, b, neg, &prefer) {
                removed[i] = true;
            }
        }
        // The substitution v -> ±root for every eliminated variable.
        let mut subst: rustc_hash::FxHashMap<VarId, (VarId, bool)> = Default::default();
        for v in 0..n as VarId {
            let (r, s) = sets.find(v);
            if r != v {
                subst.insert(v, (r, s));
            }
        }
        if subst.is_empty() {
            return;
        }
        // Carry the eliminated variable's initial condition to its representative.
        for (&v, &(r, neg)) in &subst {
            let vv = &self.vars[v as usize];
            let (fixed, start, nominal, state_select) =
                (vv.fixed, vv.start, vv.nominal, vv.state_select);
            let rv = &mut self.vars[r as usize];
            if fixed == Some(true) && rv.fixed != Some(true) {
                if let Some(s) = start {
                    rv.start = Some(if neg { self.arena.neg(s) } else { s });
                    rv.fixed = Some(true);
                }
            } else if rv.start.is_none()
                && let Some(s) = start
            {
                rv.start = Some(if neg { self.arena.neg(s) } else { s });
            }
            if rv.nominal.is_none() {
                rv.nominal = nominal;
            }
            rv.state_select = rv.state_select.max(state_select);
        }
        let mut memo = flat::RewriteMemo::default();
        let mut apply = |arena: &mut ExprArena, e: ExprId| {
            arena.rewrite(e, &mut memo, &mut |a, node| match node {
                Node::Var(v) => subst.get(&v).map(|&(r, neg)| {
                    let x = a.var(r);
                    if neg { a.neg(x) } else { x }
                }),
                Node::Pre(v) => subst.get(&v).map(|&(r, neg)| {
                    let x = a.intern(Node::Pre(r));
                    if neg { a.neg(x) } else { x }
                }),
                _ => None,
            })
        };
        let mut kept = Vec::new();
        for (i, eq) in std::mem::take(&mut self.equations).into_iter().enumerate() {
            if removed[i] {
                continue;
            }
            let lhs = apply(&mut self.arena, eq.lhs);
            let rhs = apply(&mut self.arena, eq.rhs);
            kept.push(ReducedEquation { lhs, rhs, ..eq });
        }
        self.equations = kept;
        for eq in &mut self.initial_equations {
            eq.lhs = apply(&mut self.arena, eq.lhs);
            eq.rhs = apply(&mut self.arena, eq.rhs);
        }
        for a in &mut self.asserts {
            a.condition = apply(&mut self.arena, a.condition);
        }
        for w in &mut self.whens {
            for (c, stmts) in &mut w.branches {
                *c = apply(&mut self.arena, *c);
                for s in stmts {
                    match s {
                        flat::WhenStatement::Assign { value, .. }
                        | flat::WhenStatement::Reinit { value, .. } => {
                            *value = apply(&mut self.arena, *value);
                        }
                        flat::WhenStatement::Assert(a) => {
                            a.condition = apply(&mut self.arena, a.condition)
                        }
                        flat::WhenStatement::Terminate { .. } => {}
                    }
                }
            }
        }
        // A reinit of an eliminated state reinitializes its representative.
        for w in &mut self.whens {
            for (_, stmts) in &mut w.branches {
                for s in stmts {
                    if let flat::WhenStatement::Reinit { var, value, .. } = s
                        && let Some(&(r, neg)) = subst.get(var)
                    {
                        *var = r;
                        if neg {
                            *value = self.arena.neg(*value);
                        }
                    }
                }
            }
        }
        let mut list: Vec<Alias> = subst
            .into_iter()
            .map(|(v, (r, neg))| Alias {
                var: v,
                of: r,
                negated: neg,
            })
            .collect();
        list.sort_by_key(|a| a.var);
        for a in &list {
            self.unknown[a.var as usize] = false;
            self.roles[a.var as usize] = Role::Alias;
        }
        self.summary.aliases = list.len();
        self.aliases = list;
    }

    /// `reinit` may only reset a state.
    fn check_reinits(&self) -> Result<(), Diagnostic> {
        for w in &self.whens {
            for (_, stmts) in &w.branches {
                for st in stmts {
                    if let flat::WhenStatement::Reinit { var, span, .. } = st
                        && self.roles[*var as usize] != Role::State
                    {
                        let name = &self.vars[*var as usize].name;
                        let why = if self.der[*var as usize].is_some() {
                            "index reduction made it a dummy state (computed from the constraints)"
                        } else {
                            "it does not appear differentiated"
                        };
                        return Err(Diagnostic::error(DiagnosticKind::Call, *span, format!("`reinit({name}, ...)`: `{name}` is not a state: {why}"))
                            .with_label("reinit of a variable the solver does not integrate")
                            .with_hint("reinit the state that the equations integrate (a variable v with der(v) in the model)"));
                    }
                }
            }
        }
        Ok(())
    }

    /// A `discrete` Real given by an equation outside when-clauses must not
    /// change continuously.
    fn check_discrete_blocks(&self, blocks: &[Block]) -> Result<(), Diagnostic> {
        for b in blocks {
            for v in b.vars() {
                let var = &self.vars[v as usize];
                if var.variability != Variability::Discrete || var.ty != flat::ScalarType::Real {
                    continue;
                }
                let continuous = match b {
                    Block::Explicit { value, .. } => self
                        .arena
                        .reachable(&[*value])
                        .into_iter()
                        .any(|id| match self.arena.node(id) {
                            Node::Time => true,
                            Node::Var(u) => {
                                matches!(self.roles[u as usize], Role::State | Role::Algebraic)
                                    && self.vars[u as usize].variability == Variability::Continuous
                            }
                            _ => false,
                        }),
                    _ => true,
                };
                if continuous {
                    let eq = match b {
                        Block::Explicit { eq, .. } | Block::Implicit { eq, .. } => *eq,
                        Block::Torn { residuals, .. } => residuals[0].1,
                    };
                    return Err(Diagnostic::error(DiagnosticKind::Variability, self.equations[eq].span, format!("`{}` is declared discrete, but this equation makes it change continuously", var.name))
                        .with_label("a discrete variable changes only at events (MLS 4.4.4)")
                        .with_secondary(var.span, "declared discrete here")
                        .with_hint("assign a discrete variable inside a when-clause, or remove the `discrete` prefix"));
                }
            }
        }
        Ok(())
    }

    /// Roles after state selection: a variable with a derivative that is not a
    /// dummy derivative is a state.
    fn classify(&mut self, dummies: &[VarId]) {
        let mut is_dummy = vec![false; self.vars.len()];
        for &d in dummies {
            is_dummy[d as usize] = true;
        }
        let mut dummy_states = Vec::new();
        for v in 0..self.vars.len() {
            if !self.unknown[v] {
                continue;
            }
            if let Some(d) = self.der[v] {
                if is_dummy[d as usize] {
                    dummy_states.push(v as VarId);
                } else {
                    self.roles[v] = Role::State;
                    self.states.push(v as VarId);
                }
            }
        }
        self.summary.dummy_states = dummy_states;
    }

    fn finish(self, blocks: Vec<Block>) -> Causal {
        let state_ders = self
            .states
            .iter()
            .map(|&s| self.der[s as usize].expect("a state has a derivative"))
            .collect();
        Causal {
            name: self.name,
            arena: self.arena,
            vars: self.vars,
            roles: self.roles,
            der: self.der,
            states: self.states,
            state_ders,
            equations: self.equations,
            blocks,
            aliases: self.aliases,
            initial_equations: self.initial_equations,
            whens: self.whens,
            asserts: self.asserts,
            contacts: self.contacts,
            frictions: self.frictions,
            functions: self.functions,
            experiment: self.experiment,
            summary: self.summary,
            warnings: self.warnings,
        }
    }

    /// The unknowns an equation mentions.
    /// The unknowns equation `e` mentions: the incidence of index
    /// reduction. A call counts every argument, unless its function
    /// declares its derivative (`annotation(derivative(noDerivative = u) =
    /// f_der)`, the MSL's `Move`): then, as for causalization, only those
    /// its output reads. (With the exact dependences of every function,
    /// index reduction of the gearbox's rigid involute mesh fails: an
    /// open problem of the Pantelides pass, noted in issue 20.)
    pub fn eq_vars(&self, e: usize) -> Vec<VarId> {
        let eq = &self.equations[e];
        let deps = |f: u32| {
            let declared = self
                .functions
                .functions
                .get(f as usize)
                .is_some_and(|x| x.derivative.is_some());
            if declared {
                self.call_dependencies(f)
            } else {
                None
            }
        };
        self.unknowns_in(self.arena.reachable_through(&[eq.lhs, eq.rhs], &deps))
    }

    /// Per output of function `f`, the argument positions it reads.
    fn call_dependencies(&self, f: u32) -> Option<CallDeps> {
        self.call_deps
            .borrow_mut()
            .entry(f)
            .or_insert_with(|| {
                self.functions
                    .functions
                    .get(f as usize)
                    .and_then(|x| x.output_dependencies())
                    .map(std::rc::Rc::new)
            })
            .clone()
    }

    /// The unknowns equation `e` depends on, through a call only the
    /// arguments its output reads: the incidence of causalization (the
    /// MSL's `Move` solves `phi = position(u, time)`, which reads `u[1]`
    /// only, for the angle, not for the acceleration `u[3]`).
    pub fn eq_dependencies(&self, e: usize) -> Vec<VarId> {
        let eq = &self.equations[e];
        let deps = |f: u32| self.call_dependencies(f);
        self.unknowns_in(self.arena.reachable_through(&[eq.lhs, eq.rhs], &deps))
    }

    fn unknowns_in(&self, nodes: Vec<ExprId>) -> Vec<VarId> {
        let mut v: Vec<VarId> = nodes
            .into_iter()
            .filter_map(|id| match self.arena.node(id) {
                Node::Var(v) if self.unknown[v as usize] => Some(v),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Causal {
    /// The report printed by `rmoc analyze`.
    pub fn report(&self, sources: &crate::diag::SourceMap) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let names = |vs: &[VarId]| {
            if vs.is_empty() {
                "(none)".to_string()
            } else {
                vs.iter()
                    .map(|&v| self.vars[v as usize].name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let _ = writeln!(s, "model {}", self.name);
        let _ = writeln!(s, "  differentiation index: {}", self.summary.index);
        let _ = writeln!(
            s,
            "  equations differentiated: {}",
            self.summary.differentiated
        );
        let _ = writeln!(
            s,
            "  states ({}): {}",
            self.states.len(),
            names(&self.states)
        );
        let _ = writeln!(
            s,
            "  dummy states ({}): {}",
            self.summary.dummy_states.len(),
            names(&self.summary.dummy_states)
        );
        let _ = writeln!(s, "  aliases eliminated: {}", self.summary.aliases);
        let _ = writeln!(s, "  equations: {}", self.equations.len());
        let mut counts: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
        for b in &self.blocks {
            let e = counts.entry(b.kind()).or_default();
            e.0 += 1;
            e.1 = e.1.max(b.size());
        }
        let summary: Vec<String> = counts
            .iter()
            .map(|(k, (n, m))| format!("{n} {k} (largest {m})"))
            .collect();
        let _ = writeln!(
            s,
            "  blocks ({}): {}",
            self.blocks.len(),
            summary.join(", ")
        );
        for (i, b) in self.blocks.iter().enumerate() {
            let line = |eq: usize| {
                let (l, _) =
                    sources.line_col(self.equations[eq].span.file, self.equations[eq].span.start);
                let d = if self.equations[eq].diff_of.is_some() {
                    "'"
                } else {
                    ""
                };
                format!("line {l}{d}")
            };
            match b {
                Block::Explicit { var, value, eq } => {
                    let _ = writeln!(
                        s,
                        "    {:>3}. {} := {}   [{}]",
                        i + 1,
                        self.name_of(*var),
                        self.show(*value),
                        line(*eq)
                    );
                }
                Block::Implicit { var, residual, eq } => {
                    let _ = writeln!(
                        s,
                        "    {:>3}. solve 0 = {} for {}   [{}]",
                        i + 1,
                        self.show(*residual),
                        self.name_of(*var),
                        line(*eq)
                    );
                }
                Block::Torn {
                    tear,
                    inner,
                    residuals,
                    linear,
                } => {
                    let kind = if *linear { "linear" } else { "nonlinear" };
                    let _ = writeln!(
                        s,
                        "    {:>3}. {kind} loop of {}: iterate on {}",
                        i + 1,
                        tear.len() + inner.len(),
                        names(tear)
                    );
                    for (v, e, eq) in inner {
                        let _ = writeln!(
                            s,
                            "           {} := {}   [{}]",
                            self.name_of(*v),
                            self.show(*e),
                            line(*eq)
                        );
                    }
                    for (r, eq) in residuals {
                        let _ = writeln!(s, "           0 = {}   [{}]", self.show(*r), line(*eq));
                    }
                }
            }
        }
        s
    }
}

/// A top-level name: no dot outside brackets (`u`, `u[2]`, not `pi.u`).
pub fn top_level(name: &str) -> bool {
    let mut depth = 0i32;
    for ch in name.chars() {
        match ch {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            '.' if depth == 0 => return false,
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::top_level;

    #[test]
    fn names_with_dots_inside_brackets_are_top_level() {
        assert!(top_level("u"));
        assert!(top_level("u[2]"));
        assert!(top_level("der(x)"));
        assert!(!top_level("pi.u"));
        // Dots inside brackets or parentheses do not count.
        assert!(top_level("der(gear.w)"));
    }
}
