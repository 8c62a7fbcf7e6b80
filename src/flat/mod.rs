//! The flat model: scalar variables with dotted names, scalar equations over
//! a shared expression arena, when-clauses, and the user functions they call.
//!
//! This is the contract between `instantiate` (which produces it) and
//! `structure` (which consumes it). Invariants:
//! - every array is scalarized: `x[3]` is three variables `x[1]`..`x[3]`;
//! - every equation is scalar, `lhs = rhs`, and mentions variables only through
//!   `Node::Var`/`Der`/`Pre` of this model's `vars`;
//! - parameters and constants keep their binding expressions (which mention only
//!   other parameters and constants), so parameter values can change between
//!   runs without re-flattening, except those marked `structural` (array sizes,
//!   for-ranges, if-equation conditions were evaluated with their value);
//! - function bodies live in their own arenas, where `Var(i)` is local slot `i`.

pub mod expr;

pub use expr::{CallSite, ExprArena, ExprId, Fn1, Fn2, Node, RelOp, RewriteMemo, VarId, VarsMemo};

use crate::diag::Span;
use fixedbitset::FixedBitSet;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Variability {
    Constant,
    Parameter,
    /// Changes only at events (assigned in `when`, declared `discrete`, or
    /// Integer/Boolean).
    Discrete,
    Continuous,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScalarType {
    Real,
    Integer,
    Boolean,
}

impl ScalarType {
    /// The type's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Real => "Real",
            ScalarType::Integer => "Integer",
            ScalarType::Boolean => "Boolean",
        }
    }
}

/// Modelica's `StateSelect`, in increasing preference to be a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
pub enum StateSelect {
    Never,
    Avoid,
    #[default]
    Default,
    Prefer,
    Always,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
pub enum Causality {
    #[default]
    Local,
    Input,
    Output,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variable {
    /// The dotted Modelica name: `i1.phi`, `x[3]`, `mesh.contact.N`.
    pub name: String,
    pub variability: Variability,
    pub ty: ScalarType,
    pub causality: Causality,
    pub flow: bool,
    /// Parameter/constant value, as an expression over other parameters.
    pub binding: Option<ExprId>,
    pub start: Option<ExprId>,
    pub fixed: Option<bool>,
    pub nominal: Option<ExprId>,
    pub min: Option<ExprId>,
    pub max: Option<ExprId>,
    pub unit: Option<String>,
    pub state_select: StateSelect,
    /// A parameter whose value was used during flattening (array size, range,
    /// branch choice): changing it needs a new flattening.
    pub structural: bool,
    pub description: Option<String>,
    pub span: Span,
    /// Where a parameter's value was written: its binding, or the modifier
    /// that set it (`Spring s(c = 1e4)`), for messages about the value.
    pub value_span: Option<Span>,
}

impl Variable {
    /// A local variable of type `ty` with no attributes, binding or
    /// description: what a declaration starts from before its modifiers.
    pub fn unattributed(
        name: String,
        variability: Variability,
        ty: ScalarType,
        span: Span,
    ) -> Variable {
        Variable {
            name,
            variability,
            ty,
            causality: Causality::Local,
            flow: false,
            binding: None,
            start: None,
            fixed: None,
            nominal: None,
            min: None,
            max: None,
            unit: None,
            state_select: StateSelect::Default,
            structural: false,
            description: None,
            span,
            value_span: None,
        }
    }

    /// A Real local variable the flattener introduces (`$der1`,
    /// `$contact1.gap`): no attributes but its description.
    pub fn internal(
        name: String,
        variability: Variability,
        description: &str,
        span: Span,
    ) -> Variable {
        Variable {
            description: Some(description.into()),
            ..Variable::unattributed(name, variability, ScalarType::Real, span)
        }
    }

    pub fn is_parameter(&self) -> bool {
        matches!(
            self.variability,
            Variability::Parameter | Variability::Constant
        )
    }
}

/// A scalar or array equation of the flat model, `lhs = rhs`.
#[derive(Clone, Debug, Serialize)]
pub struct FlatEquation {
    pub lhs: ExprId,
    pub rhs: ExprId,
    /// Where the equation was written (or the `connect` it came from).
    pub span: Span,
    /// The instance it belongs to, for messages: `i1` or `` at top level.
    pub scope: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AssertLevel {
    Error,
    Warning,
}

#[derive(Clone, Debug, Serialize)]
pub enum WhenStatement {
    /// `v = expr` in a when-equation, `v := expr` in a when-statement.
    Assign {
        var: VarId,
        value: ExprId,
        span: Span,
    },
    Reinit {
        var: VarId,
        value: ExprId,
        span: Span,
    },
    Assert(Assert),
    Terminate {
        message: String,
        span: Span,
    },
}

/// A unilateral contact, `unilateral(gap, force, e)` (docs/language.md):
/// `gap >= 0`, `force >= 0`, `gap*force = 0`, and Newton's impact law with
/// restitution `e` when the gap closes. The solver owns `force` (a
/// parameter-like slot it writes at every step); the model computes `gap`
/// and its rate `gap_rate = der(gap)` (index reduction differentiates the
/// gap's equation).
#[derive(Clone, Debug, Serialize)]
pub struct UnilateralContact {
    pub gap: VarId,
    pub gap_rate: VarId,
    pub force: VarId,
    pub restitution: VarId,
    pub span: Span,
}

/// Coulomb friction at a unilateral contact, `friction(slip, force,
/// normalForce, mu, eT)`: `|force| <= mu*normalForce`, and while the slip
/// velocity is nonzero the force opposes it at the limit. `restitution` is
/// the tangential restitution of an impact.
#[derive(Clone, Debug, Serialize)]
pub struct FrictionContact {
    pub slip: VarId,
    pub force: VarId,
    pub normal_force: VarId,
    pub mu: VarId,
    pub restitution: VarId,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct Assert {
    pub condition: ExprId,
    pub message: String,
    pub level: AssertLevel,
    pub span: Span,
    /// Written in an initial equation section: checked once, at the
    /// initial point.
    pub initial: bool,
}

/// `when c1 then ... elsewhen c2 then ... end when`: the first branch whose
/// condition becomes true at an event runs.
#[derive(Clone, Debug, Serialize)]
pub struct WhenClause {
    pub branches: Vec<(ExprId, Vec<WhenStatement>)>,
    pub span: Span,
}

/// The `experiment` annotation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Experiment {
    pub start_time: Option<f64>,
    pub stop_time: Option<f64>,
    pub tolerance: Option<f64>,
    pub interval: Option<f64>,
    /// The Moreau time-stepper's step (the vendor annotation `__rmoc_step`,
    /// as Dymola's `__Dymola_...` settings in `experiment`).
    pub step: Option<f64>,
    /// The integrator (`__rmoc_solver = "event-driven"`, say).
    pub solver: Option<String>,
    /// Generalized-alpha's spectral radius at infinity (`__rmoc_rho_inf`).
    pub rho_inf: Option<f64>,
}

/// A while loop in a user function that has run this many times is taken
/// not to end (a condition that cannot become false, like `abs(e) > -1`).
/// Part of the language's meaning, so every evaluator of functions (compiled
/// code, the interpreter, compile-time evaluation) uses this one limit.
pub const MAX_WHILE_ITERATIONS: f64 = 1e6;

/// A user function, specialized to the argument sizes it was called with.
#[derive(Clone, Debug, Serialize)]
pub struct Function {
    pub name: String,
    /// Local slots (scalars); inputs first, then outputs, then protected.
    pub slots: Vec<String>,
    /// Slot ranges of each input and output (arrays take several slots).
    pub inputs: Vec<std::ops::Range<u32>>,
    pub outputs: Vec<std::ops::Range<u32>>,
    pub arena: ExprArena,
    /// Initial values of outputs and protected locals (declaration bindings).
    pub init: Vec<(u32, ExprId)>,
    pub body: Vec<FunctionStatement>,
    pub span: Span,
    /// The derivative the function declares (`annotation(derivative = f_der)`,
    /// MLS 12.7.1), used by index reduction and Jacobians instead of
    /// differentiating the body.
    pub derivative: Option<DeclaredDerivative>,
    /// Slot ranges of the warm-start variables
    /// (`annotation(__rmoc_warmStart = {"hint"})`): protected variables that
    /// each call site of the model's equations keeps from one call to the
    /// next (zero at its first call), for a search to start where the last
    /// one ended. Calls from other functions and at translation start them
    /// at zero. A function's results must not depend on them.
    pub warm_start: Vec<std::ops::Range<u32>>,
    /// Evaluation orders of the arena's expressions, filled by the
    /// interpreter ([`crate::symbolic::eval`]) as it meets them.
    #[serde(skip)]
    pub eval_orders: EvalOrders,
}

impl Function {
    /// For each scalar output (in order), the positions of the scalar
    /// arguments (input slots) its value depends on, through assignments
    /// and the conditions of the branches and loops around them; `None`
    /// when that is not tracked (`break` or `return`: what follows them
    /// depends on where they are taken). Conservative: a slot keeps every
    /// dependence any assignment gave it.
    pub fn output_dependencies(&self) -> Option<Vec<Vec<u32>>> {
        fn has_jump(body: &[FunctionStatement]) -> bool {
            body.iter().any(|st| match st {
                FunctionStatement::Break | FunctionStatement::Return => true,
                FunctionStatement::If { branches, else_ } => {
                    branches.iter().any(|(_, b)| has_jump(b)) || has_jump(else_)
                }
                FunctionStatement::While { body, .. } | FunctionStatement::For { body, .. } => {
                    has_jump(body)
                }
                _ => false,
            })
        }
        if has_jump(&self.body) {
            return None;
        }
        // Sets of input positions as bitsets: a function that takes a
        // table or a curve has thousands of scalar inputs, and a loop that
        // reads it at a run-time index makes every slot depend on all of
        // them (with ordered sets this took a second for a 2 000-point
        // curve).
        let n_in: usize = self.inputs.iter().map(|r| r.len()).sum();
        let empty = FixedBitSet::with_capacity(n_in);
        let mut deps: Vec<FixedBitSet> = vec![empty.clone(); self.slots.len()];
        // The scalar arguments fill the inputs' slots in order.
        for (position, slot) in self.inputs.iter().flat_map(|r| r.clone()).enumerate() {
            if let Some(d) = deps.get_mut(slot as usize) {
                d.insert(position);
            }
        }
        let of = |deps: &Vec<FixedBitSet>, e: ExprId| {
            let mut out = FixedBitSet::with_capacity(n_in);
            for id in self.arena.reachable(&[e]) {
                match self.arena.node(id) {
                    Node::Var(v) => {
                        if let Some(d) = deps.get(v as usize) {
                            out.union_with(d);
                        }
                    }
                    // An element read at a run-time index reads any of them.
                    Node::Elem { base, len, .. } => {
                        for v in base..base + len {
                            if let Some(d) = deps.get(v as usize) {
                                out.union_with(d);
                            }
                        }
                    }
                    _ => {}
                }
            }
            out
        };
        type SlotDeps = Vec<FixedBitSet>;
        fn walk(
            body: &[FunctionStatement],
            control: &FixedBitSet,
            deps: &mut SlotDeps,
            of: &dyn Fn(&SlotDeps, ExprId) -> FixedBitSet,
        ) -> bool {
            let mut changed = false;
            let add = |deps: &mut SlotDeps, slot: u32, more: &FixedBitSet| {
                deps.get_mut(slot as usize).is_some_and(|d| {
                    let grows = !more.is_subset(d);
                    d.union_with(more);
                    grows
                })
            };
            for st in body {
                match st {
                    FunctionStatement::Assign { slot, value } => {
                        let mut d = of(deps, *value);
                        d.union_with(control);
                        changed |= add(deps, *slot, &d);
                    }
                    FunctionStatement::AssignElem {
                        base,
                        len,
                        index,
                        value,
                    } => {
                        let mut d = of(deps, *value);
                        d.union_with(&of(deps, *index));
                        d.union_with(control);
                        for slot in *base..base + len {
                            changed |= add(deps, slot, &d);
                        }
                    }
                    FunctionStatement::If { branches, else_ } => {
                        let mut c = control.clone();
                        for (cond, b) in branches {
                            c.union_with(&of(deps, *cond));
                            changed |= walk(b, &c, deps, of);
                        }
                        changed |= walk(else_, &c, deps, of);
                    }
                    FunctionStatement::While { cond, body, .. } => {
                        let mut c = control.clone();
                        c.union_with(&of(deps, *cond));
                        changed |= walk(body, &c, deps, of);
                    }
                    FunctionStatement::For {
                        slot,
                        start,
                        step,
                        stop,
                        body,
                    } => {
                        let mut c = control.clone();
                        for e in [start, step, stop] {
                            c.union_with(&of(deps, *e));
                        }
                        changed |= add(deps, *slot, &c);
                        changed |= walk(body, &c, deps, of);
                    }
                    FunctionStatement::Assert { .. }
                    | FunctionStatement::Break
                    | FunctionStatement::Return => {}
                }
            }
            changed
        }
        // Declaration bindings (in any order) and loops carry dependences
        // around: repeat until nothing grows.
        loop {
            let mut grew = false;
            for &(slot, e) in &self.init {
                let d = of(&deps, e);
                if let Some(x) = deps.get_mut(slot as usize) {
                    grew |= !d.is_subset(x);
                    x.union_with(&d);
                }
            }
            grew |= walk(&self.body, &empty, &mut deps, &of);
            if !grew {
                break;
            }
        }
        Some(
            self.outputs
                .iter()
                .flat_map(|r| r.clone())
                .map(|slot| {
                    deps.get(slot as usize)
                        .map(|d| d.ones().map(|p| p as u32).collect())
                        .unwrap_or_default()
                })
                .collect(),
        )
    }
}

/// A function's declared derivative: `f_der` takes f's arguments, then the
/// derivatives of some of them, and returns the derivatives of f's outputs.
#[derive(Clone, Debug, Serialize)]
pub struct DeclaredDerivative {
    /// The derivative function (an index into the model's functions).
    pub function: u32,
    /// Which of f's scalarized arguments have their derivative passed, in
    /// order: those of the inputs not named by `noDerivative` or
    /// `zeroDerivative`.
    pub differentiated: Vec<bool>,
    /// The arguments whose derivative the declaration assumes zero
    /// (`zeroDerivative`): where one is not, the body is differentiated.
    pub assumed_zero: Vec<bool>,
}

/// Each expression's [`ExprArena::reachable`] nodes, computed once per
/// function rather than once per call: start-point searches call the same
/// functions hundreds of times. Valid as long as the arena only grows (an
/// expression's nodes never change once interned).
#[derive(Debug, Default)]
pub struct EvalOrders(std::sync::Mutex<rustc_hash::FxHashMap<ExprId, std::sync::Arc<[ExprId]>>>);

impl EvalOrders {
    /// The evaluation order of `e`, computed on first use.
    pub fn get(&self, arena: &ExprArena, e: ExprId) -> std::sync::Arc<[ExprId]> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(e)
            .or_insert_with(|| arena.reachable(&[e]).into())
            .clone()
    }
}

impl Clone for EvalOrders {
    fn clone(&self) -> EvalOrders {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        EvalOrders(std::sync::Mutex::new(map.clone()))
    }
}

/// A statement of a function body, over local slots.
#[derive(Clone, Debug, Serialize)]
pub enum FunctionStatement {
    Assign {
        slot: u32,
        value: ExprId,
    },
    /// `x[i] := v` with a computed index: slots `base .. base + len`.
    AssignElem {
        base: u32,
        len: u32,
        index: ExprId,
        value: ExprId,
    },
    If {
        branches: Vec<(ExprId, Vec<FunctionStatement>)>,
        else_: Vec<FunctionStatement>,
    },
    While {
        cond: ExprId,
        body: Vec<FunctionStatement>,
        /// The condition's source, named when the loop runs away.
        span: Span,
    },
    /// A for loop with a run-time range: `slot` takes `start, start+step, ..`
    /// up to `stop`.
    For {
        slot: u32,
        start: ExprId,
        step: ExprId,
        stop: ExprId,
        body: Vec<FunctionStatement>,
    },
    Break,
    Return,
    Assert {
        condition: ExprId,
        message: String,
        span: Span,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct FlatModel {
    pub name: String,
    pub exprs: ExprArena,
    pub vars: Vec<Variable>,
    pub equations: Vec<FlatEquation>,
    pub initial_equations: Vec<FlatEquation>,
    pub whens: Vec<WhenClause>,
    /// Asserts outside when-clauses: checked after every accepted step.
    pub asserts: Vec<Assert>,
    /// Unilateral contacts: the model needs the Moreau time-stepper.
    pub contacts: Vec<UnilateralContact>,
    pub frictions: Vec<FrictionContact>,
    pub functions: Vec<Function>,
    pub experiment: Experiment,
    /// The model's own connectors: a model with connectors is a component,
    /// and its balance is checked locally (MLS 4.7), not as a closed system.
    pub top_connectors: Vec<String>,
    /// Warnings of flattening (connectors left unconnected), shown by
    /// `check` and `simulate`, which go on.
    #[serde(skip)]
    pub warnings: Vec<crate::diag::Diagnostic>,
}

impl FlatModel {
    pub fn var_name(&self, v: VarId) -> String {
        self.vars[v as usize].name.clone()
    }

    pub fn show(&self, e: ExprId) -> String {
        let names = |v: VarId| self.var_name(v);
        let s = self.exprs.display(e, &names);
        self.rename_calls(s)
    }

    fn rename_calls(&self, mut s: String) -> String {
        // `$fnK` placeholders become the function's name.
        for (k, f) in self.functions.iter().enumerate().rev() {
            s = s.replace(&format!("$fn{k}("), &format!("{}(", f.name));
        }
        s
    }

    /// Variables assigned in when-clauses (discrete by assignment).
    pub fn when_assigned(&self) -> Vec<VarId> {
        let mut out = Vec::new();
        for w in &self.whens {
            for (_, stmts) in &w.branches {
                for s in stmts {
                    if let WhenStatement::Assign { var, .. } = s {
                        out.push(*var);
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Modelica-like text of the flat model, as `rmoc flatten` prints it.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "class {}", self.name);
        for v in &self.vars {
            let mut line = String::from("  ");
            match v.variability {
                Variability::Constant => line.push_str("constant "),
                Variability::Parameter => line.push_str("parameter "),
                Variability::Discrete if v.ty == ScalarType::Real => line.push_str("discrete "),
                _ => {}
            }
            match v.causality {
                Causality::Input => line.push_str("input "),
                Causality::Output => line.push_str("output "),
                Causality::Local => {}
            }
            if v.flow {
                line.push_str("flow ");
            }
            line.push_str(match v.ty {
                ScalarType::Real => "Real ",
                ScalarType::Integer => "Integer ",
                ScalarType::Boolean => "Boolean ",
            });
            line.push_str(&v.name);
            let mut attrs = Vec::new();
            if let Some(e) = v.start {
                attrs.push(format!("start = {}", self.show(e)));
            }
            if let Some(f) = v.fixed {
                attrs.push(format!("fixed = {f}"));
            }
            if let Some(e) = v.nominal {
                attrs.push(format!("nominal = {}", self.show(e)));
            }
            if let Some(e) = v.min {
                attrs.push(format!("min = {}", self.show(e)));
            }
            if let Some(e) = v.max {
                attrs.push(format!("max = {}", self.show(e)));
            }
            if let Some(u) = &v.unit {
                attrs.push(format!("unit = \"{u}\""));
            }
            if v.state_select != StateSelect::Default {
                attrs.push(format!(
                    "stateSelect = StateSelect.{}",
                    format!("{:?}", v.state_select).to_lowercase()
                ));
            }
            if !attrs.is_empty() {
                let _ = write!(line, "({})", attrs.join(", "));
            }
            if let Some(b) = v.binding {
                let text = match (v.ty, self.exprs.as_const(b)) {
                    (ScalarType::Boolean, Some(c)) => {
                        (if c != 0.0 { "true" } else { "false" }).to_string()
                    }
                    _ => self.show(b),
                };
                let _ = write!(line, " = {text}");
            }
            if let Some(d) = &v.description {
                let _ = write!(line, " \"{d}\"");
            }
            let _ = writeln!(s, "{line};");
        }
        for f in &self.functions {
            let _ = writeln!(s, "  // function {} ({} slots)", f.name, f.slots.len());
        }
        if !self.initial_equations.is_empty() {
            let _ = writeln!(s, "initial equation");
            for e in &self.initial_equations {
                let _ = writeln!(s, "  {} = {};", self.show(e.lhs), self.show(e.rhs));
            }
        }
        let _ = writeln!(s, "equation");
        for e in &self.equations {
            let _ = writeln!(s, "  {} = {};", self.show(e.lhs), self.show(e.rhs));
        }
        for a in &self.asserts {
            let _ = writeln!(
                s,
                "  assert({}, \"{}\");",
                self.show(a.condition),
                a.message
            );
        }
        // Set-valued contacts, over the variables that hold their data.
        for c in &self.contacts {
            let _ = writeln!(
                s,
                "  unilateral({}, {}, {});",
                self.var_name(c.gap),
                self.var_name(c.force),
                self.var_name(c.restitution)
            );
        }
        for f in &self.frictions {
            let _ = writeln!(
                s,
                "  friction({}, {}, {}, {}, {});",
                self.var_name(f.slip),
                self.var_name(f.force),
                self.var_name(f.normal_force),
                self.var_name(f.mu),
                self.var_name(f.restitution)
            );
        }
        for w in &self.whens {
            for (i, (c, stmts)) in w.branches.iter().enumerate() {
                let kw = if i == 0 { "when" } else { "elsewhen" };
                let _ = writeln!(s, "  {kw} {} then", self.show(*c));
                for st in stmts {
                    let line = match st {
                        WhenStatement::Assign { var, value, .. } => {
                            format!("{} = {}", self.var_name(*var), self.show(*value))
                        }
                        WhenStatement::Reinit { var, value, .. } => {
                            format!("reinit({}, {})", self.var_name(*var), self.show(*value))
                        }
                        WhenStatement::Assert(a) => {
                            format!("assert({}, \"{}\")", self.show(a.condition), a.message)
                        }
                        WhenStatement::Terminate { message, .. } => {
                            format!("terminate(\"{message}\")")
                        }
                    };
                    let _ = writeln!(s, "    {line};");
                }
            }
            let _ = writeln!(s, "  end when;");
        }
        let _ = writeln!(s, "end {};", self.name);
        s
    }
}
