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

mod equations;
mod eval;
mod experiment;
mod functions;
pub mod library;
pub mod modifier;
mod parameters;
mod restrictions;

use crate::diag::Diagnostic;
use crate::flat::{
    self, ExprArena, FlatModel, ScalarType, StateSelect, VarId, Variability, Variable,
};
use crate::syntax::ast::{self, ClassBody, ClassKind, Element, Span};
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
    equations: Vec<flat::Equation>,
    initial_equations: Vec<flat::Equation>,
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
            return Err(vec![Diagnostic::error_nospan(format!(
                "`{name}` is a builtin type, not a model"
            ))]);
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
    fn err<T>(&self, span: Span, msg: impl Into<String>) -> Result<T, Diagnostic> {
        Err(Diagnostic::error(span, msg))
    }

    /// Follows short class definitions (`type Angle = Real(unit = "rad")`,
    /// `connector RealInput = input Real`) down to a long class or builtin,
    /// merging their modifiers under `outer`.
    fn resolve_short(
        &mut self,
        class: ClassId,
        outer: Modifier,
        inst: Option<InstId>,
    ) -> Result<Resolved, Diagnostic> {
        let mut class = class;
        let mut modifier = outer;
        let mut dims = Vec::new();
        let mut dims_scope = Scope { inst, class: None };
        let mut prefix = ast::TypePrefix::default();
        for _ in 0..64 {
            let Some(def) = self.lib.def(class)? else {
                break;
            };
            // `connector VIn extends Voltage; end VIn;`: a long class that
            // only extends a predefined type is that type, as a short
            // definition would be.
            if let Some((base, ext, to_type)) = self.extends_only_a_type(class, &def)? {
                if !to_type && let Some(bd) = self.lib.def(base)? {
                    self.check_base_kind(&def, &bd, ext.base.span)?;
                }
                if to_type && !restrictions::may_extend_a_type(def.kind) {
                    return Err(Diagnostic::error(
                        ext.base.span,
                        format!(
                            "{} `{}` cannot extend the type `{}`",
                            def.kind.keyword(),
                            def.name.name,
                            ext.base.dotted()
                        ),
                    )
                    .with_label("only a type or a connector may extend a type (MLS 7.1.3)"));
                }
                if let Some(cm) = &ext.modification {
                    let inner = Modifier::from_class_mod(
                        cm,
                        Scope {
                            inst,
                            class: Some(class),
                        },
                    )?;
                    modifier = merge(&modifier, &inner);
                }
                class = base;
                continue;
            }
            let ClassBody::Short(s) = &def.body else {
                break;
            };
            let parent = self.lib.entry(class).parent;
            let scope = self.synthetic_scopes.get(&class).copied().unwrap_or(Scope {
                inst,
                class: parent,
            });
            if let Some(cm) = &s.modification {
                let inner = Modifier::from_class_mod(cm, scope)?;
                modifier = merge(&modifier, &inner);
            }
            if !s.dims.is_empty() {
                dims.extend(s.dims.iter().cloned());
                dims_scope = scope;
            }
            match s.causality {
                ast::Causality::Input => prefix.causality = ast::Causality::Input,
                ast::Causality::Output => prefix.causality = ast::Causality::Output,
                ast::Causality::None => {}
            }
            let base = self.lib.lookup(parent, &s.base)?;
            // A short class definition is an `extends` (MLS 4.5.1).
            match self.lib.def(base)? {
                Some(bd) => self.check_base_kind(&def, &bd, s.base.span)?,
                None if !restrictions::may_extend_a_type(def.kind) => {
                    return Err(Diagnostic::error(
                        s.base.span,
                        format!(
                            "{} `{}` cannot be defined as the predefined type `{}`",
                            def.kind.keyword(),
                            def.name.name,
                            s.base.dotted()
                        ),
                    )
                    .with_label(
                        "only a type or a connector may extend a predefined type (MLS 7.1.3)",
                    ));
                }
                None => {}
            }
            class = base;
        }
        Ok(Resolved {
            class,
            modifier,
            dims,
            dims_scope,
            prefix,
        })
    }

    /// A long class whose only element is `extends T` of a class that is
    /// (or is defined as) a predefined type, an array class (`record Pairs
    /// = Pair[2]`) or a class with `input`/`output` in its definition: it
    /// is that class, as a short definition would be (MLS 4.5.2). The
    /// base, the clause, and whether the base is a predefined type.
    fn extends_only_a_type(
        &mut self,
        class: ClassId,
        def: &ast::ClassDef,
    ) -> Result<Option<(ClassId, ast::Extends, bool)>, Diagnostic> {
        let ClassBody::Long(comp) = &def.body else {
            return Ok(None);
        };
        if !comp.equations.is_empty() || !comp.algorithms.is_empty() || comp.elements.len() != 1 {
            return Ok(None);
        }
        let Element::Extends(ext) = &comp.elements[0] else {
            return Ok(None);
        };
        let base = self.lib.lookup(self.lib.entry(class).parent, &ext.base)?;
        // A chain of such classes that loops (`model A extends A; end A;`)
        // is not a type: `contents` reports the cycle where it closes.
        if base == class || self.type_chain.contains(&base) || self.type_chain.len() > 64 {
            return Ok(None);
        }
        self.type_chain.push(class);
        let resolved = self.resolve_short(base, Modifier::default(), None);
        self.type_chain.pop();
        let resolved = resolved?;
        match self.lib.builtin(resolved.class) {
            Some(Builtin::ExternalObject) => Ok(None),
            Some(_) => Ok(Some((base, ext.clone(), true))),
            None if !resolved.dims.is_empty()
                || resolved.prefix.causality != ast::Causality::None =>
            {
                Ok(Some((base, ext.clone(), false)))
            }
            None => Ok(None),
        }
    }

    /// The components, equations and class redeclarations of class `class`
    /// (a long class), with inherited ones, under modifier `m`.
    fn contents(
        &mut self,
        class: ClassId,
        m: &Modifier,
        inst: Option<InstId>,
        depth: usize,
    ) -> Result<Contents, Diagnostic> {
        let mut out = Contents::default();
        if depth > 64 {
            let name = self.lib.entry(class).full_name.clone();
            return Err(Diagnostic::error_nospan(format!(
                "`{name}`: base classes nested more than 64 deep"
            )));
        }
        let Some(def) = self.lib.def(class)? else {
            return Ok(out);
        };
        let ClassBody::Long(comp) = &def.body else {
            return Ok(out);
        };
        self.check_restricted_contents(&def, comp)?;
        // `model extends M` here, or in a class declared here (it would
        // replace the inherited M of the components that use it).
        let nested = comp.elements.iter().filter_map(|e| match e {
            Element::Class(c) => match &c.def.body {
                ClassBody::Long(inner) => inner.class_extends.as_ref().map(|x| (&c.def, x)),
                _ => None,
            },
            _ => None,
        });
        let own = comp.class_extends.as_ref().map(|x| (&*def, x));
        if let Some((d, ce)) = own.into_iter().chain(nested).next() {
            return self.err(
                ce.span,
                format!(
                    "`{} extends {}` (extending the inherited class of that name) is not supported",
                    d.kind.keyword(),
                    d.name.name
                ),
            );
        }
        if let Some(ext) = &comp.external {
            let what = match &ext.function {
                Some(f) => format!(" (`{}`)", f.name),
                None => String::new(),
            };
            return Err(Diagnostic::error(
                ext.span,
                format!(
                    "`{}`: external functions are not supported{what}",
                    def.name.name
                ),
            )
            .with_label("rmoc compiles every function itself and needs no C compiler or library")
            .with_hint("write the function's body as an `algorithm` section in the `.rmo` file"));
        }
        let own_scope = Scope {
            inst,
            class: Some(class),
        };
        // Class redeclarations in the modifier replace local replaceable classes.
        for r in &m.redeclares {
            if let ast::Redeclared::Class(cd) = &*r.element {
                let target = self.lib.local_class(class, &cd.name.name);
                if let Some(t) = target
                    && self.lib.entry(t).final_
                {
                    return Err(Diagnostic::error(
                        cd.name.span,
                        format!("`{}` is final and cannot be redeclared", cd.name.name),
                    )
                    .with_label("redeclaration of a final class (MLS 7.3.3)")
                    .with_hint("remove `final` from its declaration, or do not redeclare it"));
                }
                if let Some(t) = target
                    && !self.lib.entry(t).replaceable
                {
                    return Err(Diagnostic::error(
                        cd.name.span,
                        format!(
                            "`{}` is not replaceable and cannot be redeclared",
                            cd.name.name
                        ),
                    )
                    .with_label("redeclaration of a class not declared replaceable (MLS 7.3)")
                    .with_hint(format!(
                        "declare it `replaceable {} {}`",
                        cd.kind.keyword(),
                        cd.name.name
                    )));
                }
                let id = self.lib.add_synthetic((**cd).clone(), r.scope.class);
                // Its modifiers were written where the redeclaration was.
                self.synthetic_scopes.insert(id, r.scope);
                out.class_overrides.insert(cd.name.name.clone(), id);
            }
        }
        for e in &comp.elements {
            match e {
                Element::Extends(ext) => {
                    let parent = self.lib.entry(class).parent;
                    let scope = match self.lib.local_class(class, &ext.base.parts[0].name) {
                        Some(_) => Some(class),
                        None => parent,
                    };
                    let base = match self.redeclared_member(scope, &ext.base)? {
                        Some(c) => c,
                        None => self.lib.lookup(scope, &ext.base)?,
                    };
                    self.check_extends(&def, base, ext.base.span)?;
                    let ext_mod = match &ext.modification {
                        Some(cm) => Modifier::from_class_mod(cm, own_scope)?,
                        None => Modifier::default(),
                    };
                    modifier::check_final(m, &ext_mod, &ext.base.dotted())?;
                    let resolved = self.resolve_short(base, merge(m, &ext_mod), inst)?;
                    let edges = self.base_classes.entry(class).or_default();
                    for b in [base, resolved.class] {
                        if !edges.contains(&b) {
                            edges.push(b);
                        }
                    }
                    // `extends ExternalObject` marks the class; it
                    // inherits nothing (eval/msl_tables.rs).
                    if self.lib.builtin(resolved.class) == Some(library::Builtin::ExternalObject) {
                        continue;
                    }
                    if self.lib.builtin(resolved.class).is_some() {
                        return self.err(ext.span, "extending a predefined type is only allowed in a short class definition (`type T = Real(...)`)");
                    }
                    if !resolved.dims.is_empty()
                        || resolved.prefix.causality != ast::Causality::None
                    {
                        self.check_extends_of_array_or_prefixed(&def, comp, base, ext.span)?;
                    }
                    let base_def = self.lib.def(resolved.class)?;
                    if let Some(bd) = &base_def
                        && matches!(bd.body, ClassBody::Long(_))
                    {
                        self.check_inheritance_cycle(class, resolved.class, ext.base.span)?;
                        self.extending.push((class, ext.base.span));
                        let sub =
                            self.contents(resolved.class, &resolved.modifier, inst, depth + 1);
                        self.extending.pop();
                        let sub = sub?;
                        // Every name the extends clause modifies must exist in the base.
                        let names: Vec<String> = sub
                            .components
                            .iter()
                            .map(|c| c.decl.name.name.clone())
                            .collect();
                        self.check_modifier_names(
                            &ext_mod,
                            &names,
                            resolved.class,
                            &sub.class_overrides,
                        )?;
                        self.check_inherited_redeclarations(&out, &sub, ext.span)?;
                        absorb_base(&mut out, sub, ext.protected);
                    }
                }
                Element::Component(c) => {
                    let outer = m
                        .sub(&c.name.name)
                        .map(|s| s.modifier.clone())
                        .unwrap_or_default();
                    if let Some(r) = m.redeclare(&c.name.name) {
                        let ast::Redeclared::Component(nc) = &*r.element else {
                            continue;
                        };
                        if c.final_ {
                            return Err(Diagnostic::error(
                                r.span,
                                format!("`{}` is final and cannot be redeclared", c.name.name),
                            )
                            .with_label("redeclaration of a final element (MLS 7.3.3)")
                            .with_secondary(c.name.span, "declared final here"));
                        }
                        if !c.replaceable {
                            return Err(Diagnostic::error(
                                r.span,
                                format!(
                                    "`{}` is not declared `replaceable` and cannot be redeclared",
                                    c.name.name
                                ),
                            )
                            .with_label(
                                "redeclaration of an element not declared replaceable (MLS 7.3)",
                            )
                            .with_secondary(c.name.span, "declared here")
                            .with_hint(format!(
                                "declare it as `replaceable {} {}`",
                                c.type_name.dotted(),
                                c.name.name
                            )));
                        }
                        self.check_redeclare_subtype(class, c, nc, r)?;
                        let mut decl = (**nc).clone();
                        // It keeps the visibility of the element it replaces.
                        decl.protected = c.protected;
                        decl.prefix = merge_prefix(c.prefix, nc.prefix);
                        if decl.dims.is_empty() {
                            decl.dims = c.dims.clone();
                        }
                        // Modifiers of the constraining clause still apply.
                        let mut outer = outer;
                        if let Some(cb) = &c.constrainedby
                            && let Some(cm) = &cb.modification
                        {
                            outer = merge(&outer, &Modifier::from_class_mod(cm, own_scope)?);
                        }
                        out.components.push(PendingComp {
                            decl: Rc::new(decl),
                            outer,
                            type_scope: r.scope.class,
                            decl_scope: r.scope,
                            declared_in: class,
                        });
                    } else {
                        out.components.push(PendingComp {
                            decl: Rc::new(c.clone()),
                            outer,
                            type_scope: Some(class),
                            decl_scope: own_scope,
                            declared_in: class,
                        });
                    }
                }
                Element::Class(_) | Element::Import(_) => {}
            }
        }
        for sec in &comp.equations {
            for eq in &sec.equations {
                out.equations
                    .push((Rc::new(eq.clone()), Some(class), sec.initial));
            }
        }
        for alg in &comp.algorithms {
            out.algorithms.push((Rc::new(alg.clone()), Some(class)));
        }
        Ok(out)
    }

    /// The public components of a class (its interface), with inherited ones.
    fn interface_names(&mut self, class: ClassId) -> Result<Vec<String>, Diagnostic> {
        let resolved = self.resolve_short(class, Modifier::default(), None)?;
        if self.lib.builtin(resolved.class).is_some() {
            return Ok(Vec::new());
        }
        let contents = self.contents(resolved.class, &Modifier::default(), None, 0)?;
        Ok(contents
            .components
            .iter()
            .filter(|c| !c.decl.protected)
            .map(|c| c.decl.name.name.clone())
            .collect())
    }

    /// A redeclared component's class must have every public element of the
    /// constraining class (the `constrainedby` class, else the original type).
    fn check_redeclare_subtype(
        &mut self,
        scope: ClassId,
        old: &ast::Component,
        new: &ast::Component,
        r: &modifier::Redecl,
    ) -> Result<(), Diagnostic> {
        let constraint_name = old
            .constrainedby
            .as_ref()
            .map(|cb| &cb.base)
            .unwrap_or(&old.type_name);
        let constraint = self.lib.lookup(Some(scope), constraint_name)?;
        let new_class = self.lib.lookup(r.scope.class, &new.type_name)?;
        let need = self.interface_names(constraint)?;
        let have = self.interface_names(new_class)?;
        let missing: Vec<String> = need
            .iter()
            .filter(|n| !have.contains(n))
            .map(|n| format!("`{n}`"))
            .collect();
        if !missing.is_empty() {
            return Err(Diagnostic::error(
                new.type_name.span,
                format!(
                    "`{}` cannot replace `{}`: it lacks {} of the constraining class `{}`",
                    new.type_name.dotted(),
                    old.name.name,
                    missing.join(", "),
                    constraint_name.dotted()
                ),
            )
            .with_label("not a subtype of the constraining class")
            .with_secondary(constraint_name.span, "constraining class"));
        }
        Ok(())
    }

    /// Every name a modifier sets must be an element of the class.
    fn check_modifier_names(
        &mut self,
        m: &Modifier,
        names: &[String],
        class: ClassId,
        overrides: &HashMap<String, ClassId>,
    ) -> Result<(), Diagnostic> {
        for s in &m.subs {
            if !names.contains(&s.name) {
                let cname = self.lib.entry(class).full_name.clone();
                let mut d = Diagnostic::error(
                    s.span,
                    format!("`{cname}` has no element `{}` to modify", s.name),
                )
                .with_label("unknown element");
                if let Some(c) = crate::diag::closest(&s.name, names.iter().map(|x| x.as_str())) {
                    d = d.with_hint(format!("did you mean `{c}`?"));
                } else if !names.is_empty() {
                    d = d.with_hint(format!("its elements are: {}", names.join(", ")));
                }
                return Err(d);
            }
        }
        for r in &m.redeclares {
            let n = r.name();
            let is_class = matches!(&*r.element, ast::Redeclared::Class(_));
            let known = if is_class {
                overrides.contains_key(n) || self.lib.member_class(class, n)?.is_some()
            } else {
                names.iter().any(|x| x == n)
            };
            if !known {
                let cname = self.lib.entry(class).full_name.clone();
                return self.err(
                    r.span,
                    format!("`{cname}` has no replaceable element `{n}` to redeclare"),
                );
            }
        }
        Ok(())
    }

    /// Instantiates class `class` as a component at `path`, returning its node.
    fn instantiate_class(
        &mut self,
        class: ClassId,
        m: &Modifier,
        path: String,
        parent: Option<InstId>,
        prefix: ast::TypePrefix,
        span: Span,
    ) -> Result<CompNode, Diagnostic> {
        self.depth += 1;
        if self.depth > 100 {
            self.depth -= 1;
            let cname = self.lib.entry(class).full_name.clone();
            let short: Vec<&str> = path.split('.').take(4).collect();
            return Err(Diagnostic::error(span, format!("recursive model structure: a `{cname}` contains itself (component `{}...`)", short.join(".")))
                .with_label("this component's class leads back to itself")
                .with_hint("a class name may resolve to a different class than intended here; qualify it (e.g. `SI.Torque`)"));
        }
        let r = self.instantiate_class_inner(class, m, path, parent, prefix, span);
        self.depth -= 1;
        r
    }

    fn instantiate_class_inner(
        &mut self,
        class: ClassId,
        m: &Modifier,
        path: String,
        parent: Option<InstId>,
        prefix: ast::TypePrefix,
        span: Span,
    ) -> Result<CompNode, Diagnostic> {
        if let Some(b) = self.lib.builtin(class) {
            return self.primitive(b, m, path, prefix, span).map(CompNode::Var);
        }
        let def = self
            .lib
            .def(class)?
            .expect("non-builtin class has a definition");
        // A component of an enumeration type is an Integer variable: its
        // literals are the Integers 1, 2, ... (as `StateSelect`'s are).
        if let ClassBody::Enumeration(_) = def.body {
            return self
                .primitive(library::Builtin::Enumeration, m, path, prefix, span)
                .map(CompNode::Var);
        }
        if self.class_stack.contains(&class) {
            let comp = path.rsplit('.').next().unwrap_or(&path).to_string();
            return Err(Diagnostic::error(
                span,
                format!(
                    "`{}` contains itself through component `{comp}`",
                    def.name.name
                ),
            )
            .with_label("a component of its own class")
            .with_hint(
                "a model cannot contain an instance of itself (the structure would be infinite)",
            ));
        }
        // A record bound as a whole (`One o = One(1984)`, `One o = p`):
        // its fields bound one by one (MLS 12.6).
        let fields;
        let m = match &m.binding {
            Some(b) if def.kind == ClassKind::Record => {
                fields = self.record_binding_as_fields(class, m, b)?;
                &fields
            }
            _ => m,
        };
        self.class_stack.push(class);
        let r = self.instantiate_model(class, &def, m, path, parent, prefix, span);
        self.class_stack.pop();
        r
    }

    /// `P2.A` where `P2` is a short class that redeclares `A`
    /// (`package P2 = P(redeclare model A = B)`): the redeclared class, as
    /// written in P2's scope. `None` for any other name.
    fn redeclared_member(
        &mut self,
        scope: Option<ClassId>,
        name: &ast::Name,
    ) -> Result<Option<ClassId>, Diagnostic> {
        let Some((last, prefix)) = name.parts.split_last() else {
            return Ok(None);
        };
        if prefix.is_empty() {
            return Ok(None);
        }
        let holder = ast::Name {
            parts: prefix.to_vec(),
            ..name.clone()
        };
        let Ok(c) = self.lib.lookup(scope, &holder) else {
            return Ok(None);
        };
        let Some(def) = self.lib.def(c)? else {
            return Ok(None);
        };
        let ClassBody::Short(short) = &def.body else {
            return Ok(None);
        };
        let redeclared = short
            .modification
            .iter()
            .flat_map(|m| &m.args)
            .find_map(|a| match a {
                ast::ModArg::Redeclare {
                    element: ast::Redeclared::Class(cd),
                    ..
                } if cd.name.name == last.name => Some(cd.clone()),
                _ => None,
            });
        let Some(cd) = redeclared else {
            return Ok(None);
        };
        let written_in = self.lib.entry(c).parent;
        let id = self.lib.add_synthetic((*cd).clone(), written_in);
        self.synthetic_scopes.insert(
            id,
            Scope {
                inst: None,
                class: written_in,
            },
        );
        Ok(Some(id))
    }

    /// Modifier `m` of a record with its binding `b` turned into bindings of
    /// the fields: a call of the record's constructor gives each field its
    /// argument (by position in declaration order, or by name; the others
    /// keep their defaults), a record reference `p` gives field `f` the
    /// value `p.f`.
    fn record_binding_as_fields(
        &mut self,
        class: ClassId,
        m: &Modifier,
        b: &Binding,
    ) -> Result<Modifier, Diagnostic> {
        let record = self.lib.entry(class).full_name.clone();
        let contents = self.contents(class, &Modifier::default(), None, 0)?;
        let fields: Vec<String> = contents
            .components
            .iter()
            .filter(|c| {
                !c.decl.protected && c.decl.prefix.variability != ast::VariabilityPrefix::Constant
            })
            .map(|c| c.decl.name.name.clone())
            .collect();
        let mut given: Vec<(String, ast::Expr)> = Vec::new();
        match &b.expr.kind {
            ast::ExprKind::Call { func, args }
                if func.as_name().is_some_and(|n| {
                    self.lib.lookup(b.scope.class, &n).ok().is_some_and(|c| {
                        self.lib
                            .def(c)
                            .ok()
                            .flatten()
                            .is_some_and(|d| d.kind == ClassKind::Record)
                    })
                }) =>
            {
                let mut k = 0;
                for a in args {
                    match a {
                        ast::Arg::Positional(e) => {
                            let Some(f) = fields.get(k) else {
                                return Err(Diagnostic::error(
                                    e.span,
                                    format!(
                                        "record `{record}` has {} field(s) to set",
                                        fields.len()
                                    ),
                                ));
                            };
                            given.push((f.clone(), e.clone()));
                            k += 1;
                        }
                        ast::Arg::Named(n, e) => {
                            if !fields.contains(&n.name) {
                                return Err(Diagnostic::error(
                                    n.span,
                                    format!("record `{record}` has no field `{}` to set", n.name),
                                ));
                            }
                            given.push((n.name.clone(), e.clone()));
                        }
                    }
                }
            }
            ast::ExprKind::Ref(r) => {
                for f in &fields {
                    let mut r = r.clone();
                    r.parts.push(ast::RefPart {
                        ident: ast::Ident {
                            name: f.clone(),
                            span: r.span,
                        },
                        subscripts: Vec::new(),
                    });
                    given.push((
                        f.clone(),
                        ast::Expr {
                            kind: ast::ExprKind::Ref(r.clone()),
                            span: b.expr.span,
                        },
                    ));
                }
            }
            _ => {
                return Err(Diagnostic::error(
                    b.expr.span,
                    format!("a record `{record}` can be bound only to its constructor or to another record"),
                )
                .with_hint(format!("write `{record}(field = value, ...)`, or modify the fields: `x(field = value)`")));
            }
        }
        let mut out = m.clone();
        out.binding = None;
        let subs = given.into_iter().map(|(name, e)| SubMod {
            name,
            span: e.span,
            modifier: Modifier {
                binding: Some(Binding {
                    expr: Rc::new(e),
                    scope: b.scope,
                    index: b.index.clone(),
                }),
                ..Modifier::default()
            },
        });
        out.subs = subs.chain(m.subs.iter().cloned()).collect();
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn instantiate_model(
        &mut self,
        class: ClassId,
        def: &ast::ClassDef,
        m: &Modifier,
        path: String,
        parent: Option<InstId>,
        prefix: ast::TypePrefix,
        span: Span,
    ) -> Result<CompNode, Diagnostic> {
        match def.kind {
            ClassKind::Function => {
                return self.err(
                    span,
                    format!(
                        "`{}` is a function and cannot be used as a component type",
                        def.name.name
                    ),
                );
            }
            ClassKind::Package => {
                return self.err(
                    span,
                    format!(
                        "`{}` is a package and cannot be used as a component type",
                        def.name.name
                    ),
                );
            }
            _ => {}
        }
        let id = self.instances.len() as InstId;
        self.instances.push(Instance {
            path: path.clone(),
            class,
            kind: def.kind,
            parent,
            components: HashMap::new(),
            pending: HashMap::new(),
            order: Vec::new(),
            class_overrides: HashMap::new(),
            equations: Vec::new(),
            prefix,
        });
        let modifier_names = std::mem::take(&mut self.component_modifier_names);
        let contents = self.contents(class, m, Some(id), 0)?;
        self.check_protected_modifiers(&modifier_names, &contents, &path)?;
        if prefix.causality != ast::Causality::None || prefix.flow {
            self.check_structured_prefix(prefix, &def.name.name, &path, &contents, span)?;
        }
        let block_ports: Vec<(String, Span)> = if def.kind == ClassKind::Block {
            contents
                .components
                .iter()
                .filter(|c| !c.decl.protected)
                .map(|c| (c.decl.name.name.clone(), c.decl.name.span))
                .collect()
        } else {
            Vec::new()
        };
        let names: Vec<String> = contents
            .components
            .iter()
            .map(|c| c.decl.name.name.clone())
            .collect();
        self.check_modifier_names(m, &names, class, &contents.class_overrides)?;
        let mut equations = contents.equations;
        for (alg, alg_class) in &contents.algorithms {
            equations.extend(algorithm_as_equations(alg, *alg_class)?);
        }
        {
            let inst = &mut self.instances[id as usize];
            inst.class_overrides = contents.class_overrides;
            inst.equations = equations;
            for pc in contents.components {
                let name = pc.decl.name.name.clone();
                if inst.pending.contains_key(&name) {
                    return Err(Diagnostic::error(
                        pc.decl.name.span,
                        format!("`{name}` is declared twice"),
                    ));
                }
                inst.order.push(name.clone());
                inst.pending.insert(name, pc);
            }
        }
        // An error in one component does not stop the others: the front
        // end reports every independent error of the declarations (up to
        // MAX_ERRORS), and flattening stops before the equations.
        let order = self.instances[id as usize].order.clone();
        for name in order {
            let decl_span = self.instances[id as usize]
                .pending
                .get(&name)
                .map(|pc| pc.decl.span);
            if let Err(d) = self.ensure_component(id, &name) {
                if self.diags.len() + 1 >= MAX_ERRORS {
                    return Err(d);
                }
                // An error of a declaration that names a component that
                // already failed is a consequence of that one: not shown.
                let cascade =
                    decl_span.is_some_and(|sp| self.span_names_any(sp, &self.failed_names));
                self.failed_names.push(name);
                if !cascade
                    && !self
                        .diags
                        .iter()
                        .any(|x| x.message == d.message && x.span == d.span)
                {
                    self.diags.push(d);
                }
            }
        }
        for (name, span) in block_ports {
            self.check_block_port(id, &def.name.name, &name, span)?;
        }
        Ok(CompNode::Inst(id))
    }

    /// Instantiates a pending component of instance `inst` (no-op if done).
    fn ensure_component(&mut self, inst: InstId, name: &str) -> Result<(), Diagnostic> {
        let Some(pc) = self.instances[inst as usize].pending.remove(name) else {
            return Ok(());
        };
        if let Some(c) = self.instantiate_component(inst, &pc)? {
            self.instances[inst as usize]
                .components
                .insert(name.to_string(), c);
        }
        Ok(())
    }

    /// Looks up a component's class from `scope`, honouring class
    /// redeclarations of the enclosing instances.
    fn component_class(
        &mut self,
        inst: Option<InstId>,
        scope: Option<ClassId>,
        name: &ast::Name,
    ) -> Result<ClassId, Diagnostic> {
        let first = &name.parts[0].name;
        let declared = if name.global {
            None
        } else {
            self.lib.lookup_simple(scope, first)?
        };
        if let Some(c) = self.redeclared_class(inst, first, declared) {
            let mut cur = c;
            for p in &name.parts[1..] {
                cur = self.lib.member_class(cur, &p.name)?.ok_or_else(|| {
                    Diagnostic::error(p.span, format!("no class `{}` in `{first}`", p.name))
                })?;
            }
            return Ok(cur);
        }
        self.lib.lookup(scope, name)
    }

    /// The class a `redeclare` of an instance from `inst` outward puts in
    /// place of class `first` (`redeclare model Law = Stiff`, `redeclare
    /// package Medium = Water`), searching only up to the instance of the
    /// class that declares `declared` (the class the name finds
    /// lexically): a component that keeps its own default is not reached
    /// by an enclosing redeclaration of a class of the same name.
    pub(super) fn redeclared_class(
        &self,
        inst: Option<InstId>,
        first: &str,
        declared: Option<ClassId>,
    ) -> Option<ClassId> {
        let owner = declared.and_then(|d| self.lib.entry(d).parent);
        let mut i = inst;
        while let Some(x) = i {
            if let Some(&c) = self.instances[x as usize].class_overrides.get(first) {
                return Some(c);
            }
            let class = self.instances[x as usize].class;
            if owner.is_some_and(|o| class == o || self.extends_transitively(class, o)) {
                return None;
            }
            i = self.instances[x as usize].parent;
        }
        None
    }

    fn instantiate_component(
        &mut self,
        inst: InstId,
        pc: &PendingComp,
    ) -> Result<Option<Comp>, Diagnostic> {
        let decl = pc.decl.clone();
        if decl.inner_outer {
            return Err(Diagnostic::error(
                decl.name.span,
                format!(
                    "`{}`: inner/outer components are not supported",
                    decl.name.name
                ),
            )
            .with_label("declared inner or outer")
            .with_hint(
                "pass the shared component through a connector, or its values as parameters",
            ));
        }
        if decl.prefix.stream {
            return Err(Diagnostic::error(
                decl.name.span,
                format!("`{}`: stream variables are not supported", decl.name.name),
            )
            .with_label("declared stream")
            .with_hint("rmoc has no fluid library; model the transported quantity with potential and flow variables"));
        }
        let scope_here = Scope {
            inst: Some(inst),
            class: pc.type_scope,
        };
        if let Some(cond) = &decl.condition {
            let v = self.eval_structural(cond, pc.decl_scope)?;
            if v == 0.0 {
                self.disabled.insert((inst, decl.name.name.clone()));
                return Ok(None);
            }
        }
        let type_class = self.component_class(Some(inst), pc.type_scope, &decl.type_name)?;
        let decl_mod = Modifier::from_modification(decl.modification.as_ref(), pc.decl_scope)?;
        if decl.final_
            && let Some(b) = &pc.outer.binding
        {
            return Err(Diagnostic::error(
                b.expr.span,
                format!(
                    "`{}` is declared final and cannot be modified",
                    decl.name.name
                ),
            )
            .with_label("modification of a final element (MLS 7.2.6)")
            .with_secondary(decl.name.span, "declared final here"));
        }
        modifier::check_final(&pc.outer, &decl_mod, &decl.name.name)?;
        let m = merge(&pc.outer, &decl_mod);
        let modifier_names: Vec<(String, Span)> = m
            .subs
            .iter()
            .map(|s| (s.name.clone(), s.span))
            .chain(m.redeclares.iter().map(|r| (r.name().to_string(), r.span)))
            .collect();
        let resolved = self.resolve_short(type_class, m, Some(inst))?;
        self.check_component_decl(&decl, type_class, resolved.class)?;
        // A String parameter or constant is a compile-time text, no
        // variable: messages and other String bindings read it.
        let constant = matches!(
            decl.prefix.variability,
            ast::VariabilityPrefix::Parameter | ast::VariabilityPrefix::Constant
        );
        if constant
            && self.lib.builtin(resolved.class) == Some(library::Builtin::String)
            && decl.dims.is_empty()
            && decl.type_dims.is_empty()
            && resolved.dims.is_empty()
        {
            let text = match &resolved.modifier.binding {
                Some(b) => self.eval_string(&b.expr, &eval::Ctx::model(b.scope))?,
                None => String::new(),
            };
            self.strings
                .entry(inst)
                .or_default()
                .insert(decl.name.name.clone(), text);
            return Ok(None);
        }
        // An external object (MLS 12.9.7) is made by its constructor while
        // flattening; it has no variable.
        if self.is_external_object(resolved.class)? {
            let Some(b) = &resolved.modifier.binding else {
                return Err(Diagnostic::error(
                    decl.name.span,
                    format!(
                        "external object `{}` has no constructor call",
                        decl.name.name
                    ),
                )
                .with_hint(
                    "bind it: `parameter T name = T(...)` with the constructor's arguments",
                ));
            };
            if !constant || !decl.dims.is_empty() {
                return Err(Diagnostic::error(
                    decl.name.span,
                    "an external object must be a scalar parameter or constant",
                ));
            }
            let obj =
                self.construct_table_object(resolved.class, &b.expr, &eval::Ctx::model(b.scope))?;
            self.table_objects
                .insert((inst, decl.name.name.clone()), obj);
            return Ok(None);
        }
        // `:` sizes come from the binding's shape (`parameter Real
        // table[:, 2] = [0, 1; 1, 2]`).
        let mut dims = Vec::new();
        let subscripts = (decl.dims.iter().chain(decl.type_dims.iter()))
            .map(|s| (s, pc.decl_scope))
            .chain(resolved.dims.iter().map(|s| (s, resolved.dims_scope)));
        for (s, scope) in subscripts.collect::<Vec<_>>() {
            dims.push(match s {
                ast::Subscript::All(_) => None,
                _ => Some(self.eval_dim(s, scope, &decl)?),
            });
        }
        let dims = self.sizes_from_binding(dims, &resolved, &decl)?;
        let _ = scope_here;
        let parent_prefix = self.instances[inst as usize].prefix;
        let mut prefix = merge_prefix(parent_prefix, decl.prefix);
        prefix = merge_prefix(prefix, resolved.prefix);
        if decl.prefix.causality != ast::Causality::None {
            prefix.causality = decl.prefix.causality;
        }
        // `flow` means something only in a connector (MLS 9.2: flows are
        // summed at connections and zero when unconnected); elsewhere the
        // variable is an ordinary one.
        if prefix.flow && !self.inside_connector(inst, resolved.class)? {
            prefix.flow = false;
        }
        let is_connector =
            |d: Option<Arc<ast::ClassDef>>| d.is_some_and(|d| d.kind == ClassKind::Connector);
        let resolved_connector = is_connector(self.lib.def(resolved.class)?);
        let connector_class = resolved_connector || is_connector(self.lib.def(type_class)?);
        let connector =
            resolved_connector || self.instances[inst as usize].kind == ClassKind::Connector;
        let base_path = {
            let p = &self.instances[inst as usize].path;
            if p.is_empty() {
                decl.name.name.clone()
            } else {
                format!("{p}.{}", decl.name.name)
            }
        };
        self.component_modifier_names = modifier_names;
        let node = self.build_node(
            &resolved,
            &dims,
            &base_path,
            Some(inst),
            prefix,
            decl.name.span,
            &decl,
        )?;
        if let Some(d) = &decl.description {
            self.describe(&node, d);
        }
        Ok(Some(Comp {
            node,
            connector,
            protected: decl.protected,
            connector_class,
            declared_in: pc.declared_in,
        }))
    }

    /// Whether the source text under `span` has one of `names` as a word.
    fn span_names_any(&self, span: Span, names: &[String]) -> bool {
        if names.is_empty() {
            return false;
        }
        let text = &self.lib.sources.file(span.file).text;
        let Some(slice) = text.get(span.start as usize..span.end as usize) else {
            return false;
        };
        slice
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| names.iter().any(|n| n == w))
    }

    /// Whether a component of class `class` declared in instance `inst`
    /// is part of a connector: it is one, or an enclosing instance is.
    fn inside_connector(&mut self, inst: InstId, class: ClassId) -> Result<bool, Diagnostic> {
        if self
            .lib
            .def(class)?
            .is_some_and(|d| d.kind == ClassKind::Connector)
        {
            return Ok(true);
        }
        let mut i = Some(inst);
        while let Some(x) = i {
            if self.instances[x as usize].kind == ClassKind::Connector {
                return Ok(true);
            }
            i = self.instances[x as usize].parent;
        }
        Ok(false)
    }

    fn describe(&mut self, node: &CompNode, text: &str) {
        match node {
            CompNode::Var(v) => {
                if self.vars[*v as usize].description.is_none() {
                    self.vars[*v as usize].description = Some(text.to_string());
                }
            }
            CompNode::Array(_, elems) => {
                for e in elems.iter() {
                    self.describe(e, text);
                }
            }
            CompNode::Inst(_) => {}
        }
    }

    /// The array sizes of a declaration, those written `:` taken from its
    /// binding's shape.
    fn sizes_from_binding(
        &mut self,
        dims: Vec<Option<usize>>,
        resolved: &Resolved,
        decl: &ast::Component,
    ) -> Result<Vec<usize>, Diagnostic> {
        if dims.iter().all(Option::is_some) {
            return Ok(dims.into_iter().flatten().collect());
        }
        let colon = (decl.dims.iter().chain(decl.type_dims.iter()))
            .find_map(|s| match s {
                ast::Subscript::All(sp) => Some(*sp),
                _ => None,
            })
            .unwrap_or(decl.name.span);
        let Some(b) = resolved.modifier.binding.clone() else {
            return self.err(
                colon,
                format!(
                    "`{}`: an array size `:` needs a binding to take it from",
                    decl.name.name
                ),
            );
        };
        let v = self.eval_expr(&b.expr, &eval::Ctx::model(b.scope))?;
        if v.dims.len() != dims.len() {
            return Err(Diagnostic::error(
                b.expr.span,
                format!(
                    "`{}` has {} dimension(s) but its binding has {}",
                    decl.name.name,
                    dims.len(),
                    v.dims.len()
                ),
            )
            .with_secondary(colon, "size taken from the binding"));
        }
        Ok(dims
            .iter()
            .zip(&v.dims)
            .map(|(d, &b)| d.unwrap_or(b))
            .collect())
    }

    fn eval_dim(
        &mut self,
        s: &ast::Subscript,
        scope: Scope,
        decl: &ast::Component,
    ) -> Result<usize, Diagnostic> {
        match s {
            ast::Subscript::All(sp) => self.err(
                *sp,
                format!("`{}`: a component's array size must be given (`:` is only allowed for function inputs)", decl.name.name),
            ),
            ast::Subscript::Index(e) => {
                let v = self.eval_structural(e, scope)?;
                if v < 0.0 || v.fract() != 0.0 {
                    return self.err(e.span, format!("array size must be a non-negative integer, got {v}"));
                }
                Ok(v as usize)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn build_node(
        &mut self,
        resolved: &Resolved,
        dims: &[usize],
        path: &str,
        parent: Option<InstId>,
        prefix: ast::TypePrefix,
        span: Span,
        decl: &ast::Component,
    ) -> Result<CompNode, Diagnostic> {
        if dims.is_empty() {
            return self.instantiate_class(
                resolved.class,
                &resolved.modifier,
                path.to_string(),
                parent,
                prefix,
                span,
            );
        }
        const MAX_ELEMENTS: usize = 10_000_000;
        let total = dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .filter(|&t| t <= MAX_ELEMENTS);
        let Some(total) = total else {
            let shown: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
            return Err(Diagnostic::error(
                span,
                format!("array `{path}` of size [{}] is too large", shown.join(", ")),
            )
            .with_label("too many elements")
            .with_hint(format!(
                "rmoc scalarizes arrays; at most {MAX_ELEMENTS} elements are supported"
            )));
        };
        let mut elems = Vec::with_capacity(total);
        // Every element is checked against the component's modifier names.
        let modifier_names = std::mem::take(&mut self.component_modifier_names);
        for flat_index in 0..total {
            let idx = unflatten_index(flat_index, dims);
            let name = format!(
                "{path}[{}]",
                idx.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let m = resolved.modifier.for_element(&idx);
            self.component_modifier_names = modifier_names.clone();
            let node = self.instantiate_class(resolved.class, &m, name, parent, prefix, span)?;
            elems.push(node);
        }
        let _ = decl;
        Ok(CompNode::Array(dims.to_vec(), elems.into()))
    }

    /// Creates the flat variable of a primitive component.
    fn primitive(
        &mut self,
        b: Builtin,
        m: &Modifier,
        path: String,
        prefix: ast::TypePrefix,
        span: Span,
    ) -> Result<VarId, Diagnostic> {
        // A primitive has no elements a modifier could reach unseen.
        self.component_modifier_names.clear();
        let ty = match b {
            Builtin::Scalar(t) => t,
            Builtin::Enumeration => ScalarType::Integer,
            Builtin::String => {
                return self.err(
                    span,
                    "String components are not supported (strings may only appear in messages)",
                );
            }
            Builtin::ExternalObject => {
                return self.err(
                    span,
                    "an external object is a parameter of a class that extends `ExternalObject`, bound to its constructor",
                );
            }
        };
        let variability = match prefix.variability {
            ast::VariabilityPrefix::Constant => Variability::Constant,
            ast::VariabilityPrefix::Parameter => Variability::Parameter,
            ast::VariabilityPrefix::Discrete => Variability::Discrete,
            ast::VariabilityPrefix::Continuous => {
                if ty == ScalarType::Real {
                    Variability::Continuous
                } else {
                    Variability::Discrete
                }
            }
        };
        for s in &m.subs {
            const ATTRS: [&str; 9] = [
                "start",
                "fixed",
                "nominal",
                "min",
                "max",
                "unit",
                "displayUnit",
                "quantity",
                "stateSelect",
            ];
            if !ATTRS.contains(&s.name.as_str()) {
                let tn = match ty {
                    ScalarType::Real => "Real",
                    ScalarType::Integer => "Integer",
                    ScalarType::Boolean => "Boolean",
                };
                let mut d = Diagnostic::error(
                    s.span,
                    format!("`{path}` is a {tn} and has no attribute `{}`", s.name),
                )
                .with_label("unknown attribute");
                if let Some(c) = crate::diag::closest(&s.name, ATTRS.iter().copied()) {
                    d = d.with_hint(format!("did you mean `{c}`?"));
                } else {
                    d = d.with_hint("the attributes of Real are start, fixed, nominal, min, max, unit, displayUnit, quantity, stateSelect");
                }
                return Err(d);
            }
        }
        let v = self.vars.len() as VarId;
        self.vars.push(Variable {
            causality: match prefix.causality {
                ast::Causality::Input => flat::Causality::Input,
                ast::Causality::Output => flat::Causality::Output,
                ast::Causality::None => flat::Causality::Local,
            },
            flow: prefix.flow,
            ..Variable::unattributed(path, variability, ty, span)
        });
        let is_param = matches!(variability, Variability::Parameter | Variability::Constant);
        if let Some(b) = &m.binding
            && is_param
        {
            self.pending_binding.insert(v, b.clone());
        }
        self.pending_attrs.push(PendingAttrs {
            var: v,
            modifier: m.clone(),
            equation: !is_param && m.binding.is_some(),
        });
        Ok(v)
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
                        return self.err(b.expr.span, "stateSelect must be StateSelect.never, avoid, default, prefer or always");
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
            let e = self.eval_binding_scalar(b, &name, ty)?;
            let val = eval::Value::scalar(ScalarType::Real, e);
            let lhs = self.arena.var(v);
            if !val.dims.is_empty() {
                return self.err(
                    b.expr.span,
                    format!(
                        "`{name}` is a scalar but its binding has size {}",
                        eval::shape_text(&val.dims)
                    ),
                );
            }
            let scope = self.inst_path(b.scope.inst);
            self.bound_by_equation.insert(v);
            self.equations.push(flat::Equation {
                lhs,
                rhs: val.elems[0],
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
        causality: if inner.causality != ast::Causality::None {
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
        Err(Diagnostic::error(
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
