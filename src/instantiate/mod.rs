//! Instantiation: from the class tree to one flat model.
//!
//! Two phases. Phase 1 builds the instance tree of the chosen model: every
//! component with its class (after `redeclare`), its merged modifier and its
//! array dimensions; primitive components become flat variables. Components
//! are created on demand, so a declaration may use a parameter declared later
//! (`Real x[n]; parameter Integer n = 3;`). Phase 2 evaluates bindings and
//! attributes, flattens the equations of every instance (scalarizing arrays,
//! expanding `for`, choosing parameter-decided `if` branches), turns
//! `connect` into equations, and sets unconnected flow variables to zero.
//!
//! API boundary: [`flatten`] takes a parsed file and a [`Library`] and returns
//! a [`FlatModel`] or the diagnostics. Nothing downstream sees instances.

mod classes;
mod equations;
mod eval;
mod experiment;
mod functions;
mod instances;
pub mod library;
pub mod modifier;
mod parameters;
mod restrictions;

use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{
    self, ExprArena, FlatModel, ScalarType, StateSelect, VarId, Variability, Variable,
};
use crate::syntax::ast::{self, ClassBody, ClassKind, Element};
use library::{Builtin, ClassId, Library};
use modifier::{Binding, Modifier, Scope, SubMod, merge};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

pub use eval::Value;

pub type InstId = u32;

/// A component's place in the instance tree.
#[derive(Clone, Debug)]
enum CompNode {
    Var(VarId),
    Inst(InstId),
    /// Elements in row-major order, each a `Var` or `Inst`. Shared, so that
    /// naming one element of a large component array (`inertia[i]` in a
    /// for-loop) does not copy the array.
    Array(Vec<usize>, std::rc::Rc<[CompNode]>),
}

#[derive(Clone, Debug)]
struct Comp {
    node: CompNode,
    connector: bool,
    /// Declared under `protected` (or inherited through `protected
    /// extends`): not reachable by dot notation from outside (MLS 4.1).
    protected: bool,
    /// Its class is a connector (`Flange`, or a short `connector RealInput
    /// = input Real`): it may be an argument of `connect` (MLS 9.1).
    connector_class: bool,
    /// The class whose body declares it (`PendingComp::declared_in`).
    declared_in: ClassId,
}

/// A declared component not yet instantiated.
#[derive(Clone, Debug)]
struct PendingComp {
    decl: Rc<ast::Component>,
    /// Outer modifiers for this component (from the instance's modifier and
    /// from `extends` clauses), to merge over the declaration's own.
    outer: Modifier,
    /// Class scope in which the component's type name is looked up.
    type_scope: Option<ClassId>,
    /// Scope of the declaration's own modifier.
    decl_scope: Scope,
    /// The class whose body declares it (for a redeclared component, the
    /// class of the declaration it replaces): its name is visible to that
    /// class and to the classes extending it, not to its base classes.
    declared_in: ClassId,
}

#[derive(Debug)]
struct Instance {
    /// Dotted path; empty for the top-level model.
    path: String,
    class: ClassId,
    kind: ClassKind,
    parent: Option<InstId>,
    components: HashMap<String, Comp>,
    pending: HashMap<String, PendingComp>,
    /// Component names in declaration order (for messages and output order).
    order: Vec<String>,
    /// Classes replaced by `redeclare model X = ...` for this instance.
    class_overrides: HashMap<String, ClassId>,
    equations: Vec<ClassEquation>,
    prefix: ast::TypePrefix,
}

/// Attributes of a primitive variable still to evaluate (phase 2).
#[derive(Clone, Debug)]
struct PendingAttrs {
    var: VarId,
    modifier: Modifier,
    /// Binding is a declaration equation (`Real E = ...`), not a parameter value.
    equation: bool,
}

/// An equation of a class as written, the class it is written in, and
/// whether it is an initial equation.
type ClassEquation = (Rc<ast::Equation>, Option<ClassId>, bool);

/// What a class contributes once `extends` is resolved.
#[derive(Default)]
struct Contents {
    components: Vec<PendingComp>,
    equations: Vec<ClassEquation>,
    algorithms: Vec<(Rc<ast::AlgorithmSection>, Option<ClassId>)>,
    class_overrides: HashMap<String, ClassId>,
}

/// A package constant, folded to numbers. Not expression ids: those
/// belong to the arena they were made in, and a function body is compiled
/// in its own (a constant read first by the model, then by a function, was
/// another node there).
#[derive(Clone, Debug)]
struct PackageConstant {
    ty: ScalarType,
    dims: Vec<usize>,
    numbers: Vec<f64>,
}

/// An array binding's expression (held, so that its address stays unique
/// while cached) and its whole value.
type EvaluatedBinding = (Rc<ast::Expr>, Rc<eval::Value>);

pub struct Flattener<'l> {
    lib: &'l mut Library,
    arena: ExprArena,
    vars: Vec<Variable>,
    equations: Vec<flat::FlatEquation>,
    initial_equations: Vec<flat::FlatEquation>,
    whens: Vec<flat::WhenClause>,
    asserts: Vec<flat::Assert>,
    contacts: Vec<flat::UnilateralContact>,
    frictions: Vec<flat::FrictionContact>,
    functions: Vec<flat::Function>,
    function_index: HashMap<String, (u32, Vec<Vec<usize>>)>,
    function_out_types: HashMap<u32, Vec<(Vec<usize>, ScalarType)>>,
    functions_in_progress: Vec<String>,
    instances: Vec<Instance>,
    pending_attrs: Vec<PendingAttrs>,
    pending_binding: HashMap<VarId, Binding>,
    /// The value of an array binding, evaluated once for all its elements
    /// (each element's binding selects from it; evaluating the whole
    /// expression per element was quadratic: a 400-point curve took 0.45
    /// s). Keyed by the expression's address and scope; the entry holds
    /// the expression, so the address is not reused while it is cached.
    pub(super) array_binding_values: HashMap<(*const ast::Expr, Scope), EvaluatedBinding>,
    /// Call sites whose arguments passed the variability check of a
    /// binding, with `true` when as a constant's: the other elements of
    /// an array bound to that call pass without another walk
    /// (`check_binding_variability`).
    pub(super) variability_checked_calls: rustc_hash::FxHashSet<(u32, bool)>,
    evaluating: Vec<VarId>,
    /// Package constants by class and name, as numbers (see
    /// [`PackageConstant`]).
    package_constants: HashMap<(ClassId, String), PackageConstant>,
    /// The names `package_constant` found to be parameters, not constants:
    /// visible in their own class only, never from a nested class or
    /// through a class name (MLS 5.3).
    class_parameters: std::collections::HashSet<(ClassId, String)>,
    connections: equations::Connections,
    diags: Vec<Diagnostic>,
    depth: usize,
    aux_count: usize,
    /// Where each redeclared short class was written (its modifiers' scope).
    synthetic_scopes: HashMap<ClassId, Scope>,
    /// Classes being instantiated, outermost first (a class on it twice is recursive).
    class_stack: Vec<ClassId>,
    /// Where each parameter's binding was written.
    binding_spans: HashMap<VarId, Span>,
    /// Variables with a declaration equation (`Real E = ...`).
    bound_by_equation: std::collections::HashSet<VarId>,
    /// Conditional components whose condition is false (instance, name):
    /// connections to them are dropped (MLS 4.4.5).
    disabled: std::collections::HashSet<(InstId, String)>,
    /// String parameters and constants: their texts, by instance and name
    /// (looked up for every name a numeric expression reads: no key is
    /// built for the lookup).
    strings: HashMap<InstId, HashMap<String, String>>,
    /// External objects (the MSL's tables), by instance and name.
    table_objects: HashMap<(InstId, String), eval::TableObject>,
    /// The element names the modifier of the component being instantiated
    /// names (`a(x = 3)`: `x`), taken by `instantiate_model` to refuse
    /// modifiers of protected elements (MLS 4.1).
    component_modifier_names: Vec<(String, Span)>,
    /// The call node of the last call of a function without outputs (its
    /// hidden output), taken by a call equation (`check(x);`).
    effect_call: Option<flat::ExprId>,
    /// The `extends` clauses being expanded, outermost first: the class
    /// and where it names its base (a base among them is a cycle).
    extending: Vec<(ClassId, Span)>,
    /// Classes `extends_only_a_type` is following (a loop among them is
    /// a cycle of inheritance, not a type).
    type_chain: Vec<ClassId>,
    /// Names of components whose declaration failed (their errors are
    /// shown; errors of declarations naming them are consequences).
    failed_names: Vec<String>,
    /// `extends` edges met while expanding classes: a class and the
    /// classes it extends directly (through short classes too).
    base_classes: HashMap<ClassId, Vec<ClassId>>,
    /// For each side of the `connect` being flattened: a public connector
    /// of the simulated model itself, seen from outside (its inputs are
    /// sources, MLS 9.3).
    connecting_top_public: [bool; 2],
}

/// At most this many errors are reported for one model; the rest would be
/// consequences of the first ones more often than news.
const MAX_ERRORS: usize = 20;

/// Flattens model `model` (a class of the user's file, or a dotted name).
pub fn flatten(lib: &mut Library, model: ClassId) -> Result<FlatModel, Vec<Diagnostic>> {
    let mut f = Flattener {
        lib,
        arena: ExprArena::new(),
        vars: Vec::new(),
        equations: Vec::new(),
        initial_equations: Vec::new(),
        whens: Vec::new(),
        asserts: Vec::new(),
        contacts: Vec::new(),
        frictions: Vec::new(),
        functions: Vec::new(),
        function_index: HashMap::new(),
        function_out_types: HashMap::new(),
        functions_in_progress: Vec::new(),
        instances: Vec::new(),
        pending_attrs: Vec::new(),
        pending_binding: HashMap::new(),
        array_binding_values: HashMap::new(),
        variability_checked_calls: Default::default(),
        evaluating: Vec::new(),
        package_constants: HashMap::new(),
        class_parameters: Default::default(),
        connections: equations::Connections::default(),
        diags: Vec::new(),
        depth: 0,
        aux_count: 0,
        class_stack: Vec::new(),
        synthetic_scopes: HashMap::new(),
        binding_spans: HashMap::new(),
        bound_by_equation: Default::default(),
        disabled: Default::default(),
        strings: HashMap::new(),
        table_objects: HashMap::new(),
        component_modifier_names: Vec::new(),
        connecting_top_public: [false; 2],
        base_classes: HashMap::new(),
        type_chain: Vec::new(),
        failed_names: Vec::new(),
        extending: Vec::new(),
        effect_call: None,
    };
    let name = f.lib.entry(model).full_name.clone();
    let def = match f.lib.def(model) {
        Ok(Some(d)) => d,
        Ok(None) => {
            return Err(vec![Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("`{name}` is a builtin type, not a model"),
            )]);
        }
        Err(d) => return Err(vec![d]),
    };
    let mut experiment_errors = Vec::new();
    let experiment = experiment::inherited_experiment(f.lib, model, 0, &mut experiment_errors);
    if !experiment_errors.is_empty() {
        return Err(experiment_errors);
    }
    // `model Fast = Decay(k = 10)`: the short class's base, with its modifier.
    let top = match f.resolve_short(model, Modifier::default(), None) {
        Ok(r) => r,
        Err(d) => return Err(vec![d]),
    };
    match f.instantiate_class(
        top.class,
        &top.modifier,
        String::new(),
        None,
        ast::TypePrefix::default(),
        def.span,
    ) {
        Ok(_) => {}
        Err(d) => f.diags.push(d),
    }
    if !crate::diag::has_errors(&f.diags) {
        f.phase2();
    }
    if crate::diag::has_errors(&f.diags) {
        if f.diags.len() > MAX_ERRORS {
            let more = f.diags.len() - MAX_ERRORS;
            f.diags.truncate(MAX_ERRORS);
            if let Some(last) = f.diags.last_mut() {
                last.notes
                    .push(format!("{more} more error(s) not shown; fix these first"));
            }
        }
        return Err(f.diags);
    }
    let top_connectors = f.top_connectors();
    let warnings = std::mem::take(&mut f.diags);
    Ok(FlatModel {
        warnings,
        top_connectors,
        name,
        exprs: f.arena,
        vars: f.vars,
        equations: f.equations,
        initial_equations: f.initial_equations,
        whens: f.whens,
        asserts: f.asserts,
        contacts: f.contacts,
        frictions: f.frictions,
        functions: f.functions,
        experiment,
    })
}

/// The class chain of a short class definition resolved to its end.
struct Resolved {
    class: ClassId,
    modifier: Modifier,
    dims: Vec<ast::Subscript>,
    dims_scope: Scope,
    prefix: ast::TypePrefix,
}

impl<'l> Flattener<'l> {
    fn err<T>(
        &self,
        kind: DiagnosticKind,
        span: Span,
        msg: impl Into<String>,
    ) -> Result<T, Diagnostic> {
        Err(Diagnostic::error(kind, span, msg))
    }

    /// Phase 2: bindings and attributes, equations, connections.
    fn phase2(&mut self) {
        let attrs = std::mem::take(&mut self.pending_attrs);
        for pa in &attrs {
            if let Err(d) = self.apply_attributes(pa) {
                self.diags.push(d);
            }
        }
        let pending: Vec<VarId> = {
            let mut k: Vec<VarId> = self.pending_binding.keys().copied().collect();
            k.sort_unstable();
            k
        };
        for v in pending {
            if let Err(d) = self.binding_of(v) {
                self.diags.push(d);
            }
        }
        for i in 0..self.instances.len() {
            let eqs = std::mem::take(&mut self.instances[i].equations);
            for (eq, class, initial) in eqs {
                let ctx = eval::Ctx::model(Scope {
                    inst: Some(i as InstId),
                    class,
                });
                if let Err(d) = self.flatten_equation(&eq, &ctx, initial) {
                    self.diags.push(d);
                }
            }
        }
        self.connection_equations();
        self.classify_discrete();
        self.bind_top_level_inputs();
        if let Err(d) = self.check_parameter_cycles() {
            self.diags.push(d);
        }
    }

    fn apply_attributes(&mut self, pa: &PendingAttrs) -> Result<(), Diagnostic> {
        let v = pa.var;
        let name = self.vars[v as usize].name.clone();
        for s in &pa.modifier.subs {
            let Some(b) = &s.modifier.binding else {
                continue;
            };
            match s.name.as_str() {
                "start" | "nominal" | "min" | "max" => {
                    let ty = if s.name == "start" {
                        self.vars[v as usize].ty
                    } else {
                        ScalarType::Real
                    };
                    let e = self.eval_binding_scalar(b, &format!("{name}.{}", s.name), ty)?;
                    let var = &mut self.vars[v as usize];
                    match s.name.as_str() {
                        "start" => var.start = Some(e),
                        "nominal" => var.nominal = Some(e),
                        "min" => var.min = Some(e),
                        _ => var.max = Some(e),
                    }
                }
                "fixed" => {
                    let e =
                        self.eval_binding_scalar(b, &format!("{name}.fixed"), ScalarType::Boolean)?;
                    let val = self.const_value(e, b.expr.span)?;
                    self.vars[v as usize].fixed = Some(val != 0.0);
                }
                "unit" | "displayUnit" | "quantity" if s.name == "unit" => {
                    let text = self.eval_string(&b.expr, &eval::Ctx::model(b.scope))?;
                    self.vars[v as usize].unit = Some(text);
                }
                "stateSelect" => {
                    let sel = match &b.expr.kind {
                        ast::ExprKind::Ref(r) => {
                            match r.parts.last().map(|p| p.ident.name.as_str()) {
                                Some("never") => Some(StateSelect::Never),
                                Some("avoid") => Some(StateSelect::Avoid),
                                Some("default") => Some(StateSelect::Default),
                                Some("prefer") => Some(StateSelect::Prefer),
                                Some("always") => Some(StateSelect::Always),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    // Otherwise a parameter of type StateSelect
                    // (`stateSelect = stateSelect`, as the MSL's
                    // components pass it on): its literal's number.
                    let literal = matches!(&b.expr.kind, ast::ExprKind::Ref(r)
                        if r.parts.iter().any(|p| p.ident.name == "StateSelect"));
                    let sel = match sel {
                        Some(sel) => Some(sel),
                        None if literal => None,
                        None => {
                            let e = self.eval_binding_scalar(
                                b,
                                &format!("{name}.stateSelect"),
                                ScalarType::Integer,
                            )?;
                            let k = self.const_value(e, b.expr.span)?;
                            [
                                StateSelect::Never,
                                StateSelect::Avoid,
                                StateSelect::Default,
                                StateSelect::Prefer,
                                StateSelect::Always,
                            ]
                            .get((k as usize).wrapping_sub(1))
                            .copied()
                            .filter(|_| k == k.trunc())
                        }
                    };
                    let Some(sel) = sel else {
                        return self.err(DiagnosticKind::Type, b.expr.span, "stateSelect must be StateSelect.never, avoid, default, prefer or always");
                    };
                    self.vars[v as usize].state_select = sel;
                }
                _ => {}
            }
        }
        if pa.equation
            && let Some(b) = &pa.modifier.binding
        {
            let ty = self.vars[v as usize].ty;
            // (eval_binding_scalar refuses a value that is not a scalar.)
            let rhs = self.eval_binding_scalar(b, &name, ty)?;
            let lhs = self.arena.var(v);
            let scope = self.inst_path(b.scope.inst);
            self.bound_by_equation.insert(v);
            self.equations.push(flat::FlatEquation {
                lhs,
                rhs,
                span: b.expr.span,
                scope,
            });
        }
        Ok(())
    }

    fn inst_path(&self, inst: Option<InstId>) -> String {
        inst.map(|i| self.instances[i as usize].path.clone())
            .unwrap_or_default()
    }

    /// Names of the top-level model's own connectors: a model with any is a
    /// component, meant to be connected, not a closed system.
    fn top_connectors(&self) -> Vec<String> {
        let Some(top) = self.instances.first() else {
            return Vec::new();
        };
        let mut v: Vec<String> = top
            .components
            .iter()
            .filter(|(_, c)| c.connector)
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v
    }

    /// Top-level inputs without a binding are external inputs: with no
    /// environment to drive them, they keep their start value (0 by default),
    /// as parameters, so that `-p u=...` sets them.
    fn bind_top_level_inputs(&mut self) {
        for v in 0..self.vars.len() {
            let var = &self.vars[v];
            let top_level = !var.name.contains('.');
            if top_level
                && var.causality == flat::Causality::Input
                && !var.is_parameter()
                && !self.bound_by_equation.contains(&(v as VarId))
            {
                let value = var.start.unwrap_or_else(|| self.arena.zero());
                let var = &mut self.vars[v];
                var.variability = Variability::Parameter;
                var.binding = Some(value);
            }
        }
    }

    /// Reals assigned in when-clauses are discrete.
    fn classify_discrete(&mut self) {
        for w in &self.whens {
            for (_, stmts) in &w.branches {
                for s in stmts {
                    if let flat::WhenStatement::Assign { var, .. } = s {
                        let v = &mut self.vars[*var as usize];
                        if v.variability == Variability::Continuous {
                            v.variability = Variability::Discrete;
                        }
                    }
                }
            }
        }
    }
}

fn merge_prefix(outer: ast::TypePrefix, inner: ast::TypePrefix) -> ast::TypePrefix {
    use ast::VariabilityPrefix as V;
    let rank = |v: V| match v {
        V::Continuous => 0,
        V::Discrete => 1,
        V::Parameter => 2,
        V::Constant => 3,
    };
    ast::TypePrefix {
        flow: outer.flow || inner.flow,
        stream: outer.stream || inner.stream,
        variability: if rank(outer.variability) >= rank(inner.variability) {
            outer.variability
        } else {
            inner.variability
        },
        causality: if inner.causality != ast::CausalityPrefix::None {
            inner.causality
        } else {
            outer.causality
        },
    }
}

/// Adds the contents of a base class to a class's. `protected extends A`
/// makes A's elements protected here (MLS 7.1.2). An element inherited
/// twice through two bases from the same declaration, under the same
/// modifiers, is one element (MLS 7.1: identical inherited elements are
/// merged); so are the equations and algorithms of a class inherited
/// twice.
fn absorb_base(out: &mut Contents, sub: Contents, protected: bool) {
    for (k, v) in sub.class_overrides {
        out.class_overrides.entry(k).or_insert(v);
    }
    for mut pc in sub.components {
        let twin = out.components.iter().any(|o| {
            o.decl.name.name == pc.decl.name.name
                && o.decl.span == pc.decl.span
                && o.declared_in == pc.declared_in
                && format!("{:?}", o.outer) == format!("{:?}", pc.outer)
        });
        if twin {
            continue;
        }
        if protected && !pc.decl.protected {
            Rc::make_mut(&mut pc.decl).protected = true;
        }
        out.components.push(pc);
    }
    for eq in sub.equations {
        let seen = out
            .equations
            .iter()
            .any(|o| o.1 == eq.1 && o.2 == eq.2 && o.0.span == eq.0.span);
        if !seen {
            out.equations.push(eq);
        }
    }
    for alg in sub.algorithms {
        if !out
            .algorithms
            .iter()
            .any(|o| o.1 == alg.1 && o.0.span == alg.0.span)
        {
            out.algorithms.push(alg);
        }
    }
}

/// 1-based multi-index of the row-major position `k` in an array of `dims`.
pub(crate) fn unflatten_index(mut k: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        idx[d] = k % dims[d] + 1;
        k /= dims[d];
    }
    idx
}

/// An algorithm section of a model (or its `initial algorithm`) as the
/// equations it is equivalent to: a sequence of assignments `v := e;`, each
/// variable assigned once and not read by an earlier statement, computes
/// what the equations `v = e` do (MLS 11.1.2: an algorithm section is an
/// equation system whose unknowns are the variables it assigns). Blocks of
/// the MSL's sources (`Pulse`, `Trapezoid`) initialize their period counter
/// so. Other sections are refused.
fn algorithm_as_equations(
    alg: &ast::AlgorithmSection,
    class: Option<ClassId>,
) -> Result<Vec<ClassEquation>, Diagnostic> {
    let refuse = |span: Span, why: &str| {
        Err(Diagnostic::error(DiagnosticKind::Unsupported,
            span,
            format!("this algorithm section cannot be written as equations: {why}"),
        )
        .with_label("in an algorithm section of a model")
        .with_hint(
            "rmoc supports algorithm sections in models that are a sequence of assignments, each variable assigned once and not read before it; write equations, or call a function",
        ))
    };
    // The base names assigned by each statement, in order.
    let mut targets: Vec<String> = Vec::new();
    for st in &alg.statements {
        // `check(x);` and `assert(...)`: a call for its effect, as the
        // equation of the same form (MLS 11.2.6, 8.3.7); it assigns nothing.
        if matches!(st.kind, ast::StatementKind::Call { .. }) {
            targets.push(String::new());
            continue;
        }
        let ast::StatementKind::Assign { target, .. } = &st.kind else {
            return refuse(st.span, "it holds a statement other than `v := e`");
        };
        let name = target.dotted();
        if targets
            .iter()
            .any(|t| !t.is_empty() && names_overlap(t, &name))
        {
            return refuse(st.span, &format!("`{name}` is assigned twice"));
        }
        targets.push(name);
    }
    let mut out = Vec::new();
    for (k, st) in alg.statements.iter().enumerate() {
        if let ast::StatementKind::Call { func, args } = &st.kind {
            let mut read = Vec::new();
            for a in args {
                match a {
                    ast::Arg::Positional(x) | ast::Arg::Named(_, x) => refs_in(x, &mut read),
                }
            }
            if let Some(late) = read.iter().find(|r| {
                targets[k..]
                    .iter()
                    .any(|t| !t.is_empty() && names_overlap(r, t))
            }) {
                return refuse(
                    st.span,
                    &format!("`{late}` is read before the statement that assigns it"),
                );
            }
            let eq = ast::Equation {
                kind: ast::EquationKind::Call {
                    func: func.clone(),
                    args: args.clone(),
                },
                span: st.span,
            };
            out.push((Rc::new(eq), class, alg.initial));
            continue;
        }
        let ast::StatementKind::Assign { target, value } = &st.kind else {
            continue;
        };
        let mut read = Vec::new();
        refs_in(value, &mut read);
        // The target's own subscripts are read too (`a[i] := ...`).
        subscript_refs(target, &mut read);
        if let Some(late) = read
            .iter()
            .find(|r| targets[k..].iter().any(|t| names_overlap(r, t)))
        {
            return refuse(
                st.span,
                &format!("`{late}` is read before the statement that assigns it"),
            );
        }
        let lhs = ast::Expr {
            kind: ast::ExprKind::Ref(target.clone()),
            span: target.span,
        };
        let eq = ast::Equation {
            kind: ast::EquationKind::Simple {
                lhs,
                rhs: value.clone(),
            },
            span: st.span,
        };
        out.push((Rc::new(eq), class, alg.initial));
    }
    Ok(out)
}

/// Whether two dotted names denote overlapping data: equal, or one a
/// component of the other (`r` and `r.x`).
fn names_overlap(a: &str, b: &str) -> bool {
    let inside = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with('.'));
    a == b || inside(a, b) || inside(b, a)
}

/// The names read by the subscripts of a reference.
fn subscript_refs(r: &ast::ComponentRef, out: &mut Vec<String>) {
    for p in &r.parts {
        for s in &p.subscripts {
            if let ast::Subscript::Index(i) = s {
                refs_in(i, out);
            }
        }
    }
}

/// The base names of the references in `e` (conservatively: every name,
/// also those in subscripts and call arguments).
fn refs_in(e: &ast::Expr, out: &mut Vec<String>) {
    use ast::ExprKind as K;
    match &e.kind {
        K::Ref(r) => {
            subscript_refs(r, out);
            out.push(r.dotted());
        }
        K::Call { args, .. } => {
            for a in args {
                match a {
                    ast::Arg::Positional(x) | ast::Arg::Named(_, x) => refs_in(x, out),
                }
            }
        }
        K::FunctionPartial { args, .. } => args.iter().for_each(|(_, x)| refs_in(x, out)),
        K::Comprehension { body, indices, .. } => {
            refs_in(body, out);
            for i in indices {
                if let Some(r) = &i.range {
                    refs_in(r, out);
                }
            }
        }
        K::Unary { operand, .. } => refs_in(operand, out),
        K::Binary { lhs, rhs, .. } => {
            refs_in(lhs, out);
            refs_in(rhs, out);
        }
        K::If { branches, else_ } => {
            for (c, v) in branches {
                refs_in(c, out);
                refs_in(v, out);
            }
            refs_in(else_, out);
        }
        K::Range { start, step, stop } => {
            refs_in(start, out);
            if let Some(s) = step {
                refs_in(s, out);
            }
            refs_in(stop, out);
        }
        K::Array(xs) => xs.iter().for_each(|x| refs_in(x, out)),
        K::Matrix(rows) => rows.iter().flatten().for_each(|x| refs_in(x, out)),
        K::Tuple(xs) => xs.iter().flatten().for_each(|x| refs_in(x, out)),
        K::Real(_) | K::Integer(_) | K::Bool(_) | K::String(_) | K::End => {}
    }
}
