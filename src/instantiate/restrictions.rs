//! The specialized-class rules of the Modelica specification (MLS 3.6),
//! checked while classes are expanded and components instantiated: which
//! kind of class may extend which (7.1.3), what a record, connector,
//! package or block may contain (4.6), replaceable and partial classes
//! (7.1.4, 4.5.1), prefixes on structured components (4.4.2.2), reserved
//! and self-shadowing names (4.2, 4.8), and the shape of a function (12.2).
//!
//! Each check returns the diagnostic of the first violation; the message
//! names the section of the specification, so a user can look the rule up.

use super::*;
use crate::syntax::ast::Composition;

/// The predefined types, whose names a class or component may not take
/// (MLS 4.8: they are reserved).
pub(super) const RESERVED_NAMES: [&str; 5] =
    ["Real", "Integer", "Boolean", "String", "ExternalObject"];

/// Whether a class of kind `derived` may extend one of kind `base`
/// (MLS 7.1.3, table 7.1). Every kind may extend `class`; a `model` may
/// extend a `block` or a `record`, a `block` a `record`, a `connector` a
/// `type` or a `record`; every other kind only its own.
pub(super) fn may_extend(derived: ClassKind, base: ClassKind) -> bool {
    use ClassKind as K;
    base == K::Class
        || derived == base
        || matches!(
            (derived, base),
            (K::Model, K::Block | K::Record)
                | (K::Block, K::Record)
                | (K::Connector, K::Type | K::Record)
        )
}

/// Whether a class of kind `derived` may extend a type, predefined
/// (`Real`) or declared, by `extends` or by a short definition: a `type`
/// and a `connector` (table 7.1), and a `class`.
pub(super) fn may_extend_a_type(derived: ClassKind) -> bool {
    may_extend(derived, ClassKind::Type) || derived == ClassKind::Class
}

/// `a` or `an` before a class keyword.
fn article(k: ClassKind) -> &'static str {
    match k {
        ClassKind::Operator => "an",
        _ => "a",
    }
}

impl Flattener<'_> {
    /// The rules on an `extends` clause of class `derived` naming `base`:
    /// the kind of the base (7.1.3) and a base that is not replaceable
    /// (7.1.4).
    pub(super) fn check_extends(
        &mut self,
        derived: &ast::ClassDef,
        base: ClassId,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if self.lib.entry(base).replaceable {
            let name = self.lib.entry(base).full_name.clone();
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                span,
                format!(
                    "`{}` extends the replaceable class `{name}`",
                    derived.name.name
                ),
            )
            .with_label("a base class must not be replaceable (MLS 7.1.4)")
            .with_hint(
                "extend the class it is constrained by, or declare the class not replaceable",
            ));
        }
        let Some(bd) = self.lib.def(base)? else {
            return Ok(());
        };
        self.check_base_kind(derived, &bd, span)
    }

    /// A class extending an array class or a class with `input`/`output`
    /// in its short definition (`record Pairs = Pair[2]`, `connector In =
    /// input Pin`) adds nothing of its own (MLS 4.5.2): no components,
    /// equations, algorithms or protected elements.
    pub(super) fn check_extends_of_array_or_prefixed(
        &self,
        derived: &ast::ClassDef,
        comp: &Composition,
        base: ClassId,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let extra = comp.elements.iter().find_map(|e| match e {
            Element::Component(c) => Some(("component", c.name.span)),
            Element::Extends(x) if x.protected => Some(("protected element", x.span)),
            _ => None,
        });
        let extra = extra
            .or_else(|| {
                comp.equations
                    .iter()
                    .flat_map(|s| s.equations.first())
                    .next()
                    .map(|e| ("equation", e.span))
            })
            .or_else(|| comp.algorithms.first().map(|a| ("algorithm", a.span)));
        let Some((what, at)) = extra else {
            return Ok(());
        };
        Err(Diagnostic::error(DiagnosticKind::Restriction,
            at,
            format!(
                "`{}` extends `{}`, an array class or a class with `input`/`output` in its definition, and adds a {what}",
                derived.name.name,
                self.lib.entry(base).full_name
            ),
        )
        .with_label(format!("a {what} beside such an `extends` (MLS 4.5.2)"))
        .with_secondary(span, "extends it here")
        .with_hint("declare a component of that class instead of extending it"))
    }

    /// `class` extending `base` closes a cycle if `base` is `class` or a
    /// class whose `extends` is being expanded (MLS 7.1: the inheritance
    /// graph is acyclic). The diagnostic sits at the clause that closes
    /// it and shows the whole cycle, `A extends B extends A`.
    pub(super) fn check_inheritance_cycle(
        &self,
        class: ClassId,
        base: ClassId,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let start = if base == class {
            Some(self.extending.len())
        } else {
            self.extending.iter().position(|(c, _)| *c == base)
        };
        let Some(start) = start else {
            return Ok(());
        };
        let name = |c: ClassId| self.lib.entry(c).name.clone();
        let mut chain: Vec<String> = self.extending[start..]
            .iter()
            .map(|(c, _)| name(*c))
            .collect();
        chain.push(name(class));
        chain.push(name(base));
        let mut d = Diagnostic::error(DiagnosticKind::Restriction,
            span,
            format!("cyclic inheritance: {}", chain.join(" extends ")),
        )
        .with_label(format!(
            "`{}` extends `{}`, which is already among its bases (MLS 7.1)",
            name(class),
            name(base)
        ))
        .with_hint("a class cannot inherit from itself; break the cycle by removing one of these `extends` clauses");
        for (c, at) in &self.extending[start..] {
            d = d.with_secondary(*at, format!("`{}` extends here", name(*c)));
        }
        Err(d)
    }

    /// A class redeclared by one base and, under the same name, by another
    /// (a diamond `B1 extends A(redeclare package M = X)`, `B2 extends
    /// A(redeclare package M = Y)`): the inherited elements are not
    /// identical, so they cannot be merged (MLS 7.1). The same
    /// redeclaration reached twice is one.
    pub(super) fn check_inherited_redeclarations(
        &mut self,
        out: &Contents,
        sub: &Contents,
        span: Span,
    ) -> Result<(), Diagnostic> {
        for (name, &b) in &sub.class_overrides {
            let Some(&a) = out.class_overrides.get(name) else {
                continue;
            };
            let (da, db) = (self.lib.def(a)?, self.lib.def(b)?);
            let same = a == b || matches!((&da, &db), (Some(x), Some(y)) if x.span == y.span);
            if !same {
                let mut d = Diagnostic::error(DiagnosticKind::Restriction,
                    span,
                    format!("`{name}` is inherited twice, redeclared differently"),
                )
                .with_label("this base redeclares it one way, an earlier base another (MLS 7.1)")
                .with_hint("inherited elements of the same name must be identical; redeclare it once, in this class");
                if let (Some(x), Some(y)) = (da, db) {
                    d = d
                        .with_secondary(x.span, "one redeclaration")
                        .with_secondary(y.span, "the other");
                }
                return Err(d);
            }
        }
        Ok(())
    }

    /// Class `derived` may have a base of `base`'s kind (MLS 7.1.3).
    pub(super) fn check_base_kind(
        &self,
        derived: &ast::ClassDef,
        base: &ast::ClassDef,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if may_extend(derived.kind, base.kind) {
            return Ok(());
        }
        Err(Diagnostic::error(
            DiagnosticKind::Restriction,
            span,
            format!(
                "{} {} cannot extend {} {}: `{}` extends `{}`",
                article(derived.kind),
                derived.kind.keyword(),
                article(base.kind),
                base.kind.keyword(),
                derived.name.name,
                base.name.name
            ),
        )
        .with_label("base class of a kind this class may not inherit from (MLS 7.1.3)")
        .with_hint(match derived.kind {
            ClassKind::Model => "a model may extend a model, a block, a record or a class",
            ClassKind::Block => "a block may extend a block, a record or a class",
            ClassKind::Connector => {
                "a connector may extend a connector, a record, a type or a class"
            }
            _ => "this kind of class may only extend its own kind or a class",
        }))
    }

    /// What class `def` (of its kind) may contain (MLS 4.6): no equations,
    /// algorithms or protected elements in a record or a connector; only
    /// constants (and classes) in a package.
    pub(super) fn check_restricted_contents(
        &self,
        def: &ast::ClassDef,
        comp: &Composition,
    ) -> Result<(), Diagnostic> {
        let kind = def.kind;
        if matches!(kind, ClassKind::Record | ClassKind::Connector) {
            let what = kind.keyword();
            if let Some(eq) = comp
                .equations
                .iter()
                .flat_map(|s| s.equations.first())
                .next()
            {
                return Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    eq.span,
                    format!("{what} `{}` has an equation", def.name.name),
                )
                .with_label(format!("equations are not allowed in a {what} (MLS 4.6)"))
                .with_hint(format!(
                    "a {what} only declares variables; write the equation in the model that uses it"
                )));
            }
            if let Some(alg) = comp.algorithms.first() {
                return Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    alg.span,
                    format!("{what} `{}` has an algorithm section", def.name.name),
                )
                .with_label(format!("algorithms are not allowed in a {what} (MLS 4.6)")));
            }
            if kind == ClassKind::Record
                && let Some(c) = comp.elements.iter().find_map(|e| match e {
                    Element::Component(c) if c.prefix.causality != ast::CausalityPrefix::None => {
                        Some(c)
                    }
                    _ => None,
                })
            {
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    c.name.span,
                    format!(
                        "record `{}` declares `{}` as an input or output",
                        def.name.name, c.name.name
                    ),
                )
                .with_label("the elements of a record have no causality (MLS 4.6)")
                .with_hint("remove `input`/`output`; give the causality to the record component where it is used"));
            }
            for e in &comp.elements {
                let (protected, span) = match e {
                    Element::Component(c) => (c.protected, c.name.span),
                    Element::Extends(x) => (x.protected, x.span),
                    _ => continue,
                };
                if protected {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        span,
                        format!("{what} `{}` has a protected element", def.name.name),
                    )
                    .with_label(format!("a {what} has only public elements (MLS 4.6)"))
                    .with_hint("remove the `protected` heading"));
                }
            }
        }
        if kind == ClassKind::Package {
            for e in &comp.elements {
                if let Element::Component(c) = e
                    && c.prefix.variability != ast::VariabilityPrefix::Constant
                {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        c.name.span,
                        format!(
                            "package `{}` declares `{}`, which is not a constant",
                            def.name.name, c.name.name
                        ),
                    )
                    .with_label("a package may only contain classes and constants (MLS 4.6)")
                    .with_hint("declare it `constant`, or move it into a model"));
                }
            }
        }
        Ok(())
    }

    /// The rules on a component declaration `decl` whose type resolved to
    /// `resolved` (MLS 4.2, 4.4.2.2, 4.5.1, 4.8).
    pub(super) fn check_component_decl(
        &mut self,
        decl: &ast::Component,
        type_class: ClassId,
        resolved: ClassId,
    ) -> Result<(), Diagnostic> {
        let name = decl.name.name.as_str();
        if RESERVED_NAMES.contains(&name) {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                decl.name.span,
                format!("`{name}` is the name of a predefined type"),
            )
            .with_label("reserved name (MLS 4.8)")
            .with_hint("choose another name for the component"));
        }
        if decl.type_name.parts.len() == 1 && decl.type_name.parts[0].name == name {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                decl.name.span,
                format!("component `{name}` has the name of its own type"),
            )
            .with_label("a component may not be named like its type (MLS 4.2)")
            .with_hint("rename the component (for example in lower case)"));
        }
        if let Some(d) = self.lib.def(type_class)?
            && d.partial
        {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                decl.type_name.span,
                format!(
                    "`{}` is partial and cannot be the type of component `{name}`",
                    d.name.name
                ),
            )
            .with_label("a partial class cannot be instantiated (MLS 4.4.2)")
            .with_hint("use a class that extends it and completes it"));
        }
        let p = &decl.prefix;
        let prefixed = p.flow
            || p.stream
            || p.causality != ast::CausalityPrefix::None
            || p.variability != ast::VariabilityPrefix::Continuous;
        if prefixed
            && self.lib.builtin(resolved).is_none()
            && let Some(d) = self.lib.def(resolved)?
            && matches!(
                d.kind,
                ClassKind::Model | ClassKind::Block | ClassKind::Package
            )
        {
            return Err(Diagnostic::error(DiagnosticKind::Restriction,
                decl.name.span,
                format!(
                    "component `{name}` of {} {} `{}` has a type prefix",
                    article(d.kind),
                    d.kind.keyword(),
                    d.name.name
                ),
            )
            .with_label("`flow`, `discrete`, `parameter`, `constant`, `input` and `output` apply only to components of a type, record or connector (MLS 4.4.2.2)")
            .with_hint("remove the prefix; give it to the variables inside the class"));
        }
        if decl.prefix.flow {
            let real = match self.lib.builtin(resolved) {
                Some(b) => b == Builtin::Scalar(ScalarType::Real),
                // A structured component is checked element by element.
                None => !matches!(
                    self.lib
                        .def(resolved)?
                        .map(|d| matches!(d.body, ClassBody::Enumeration(_))),
                    Some(true)
                ),
            };
            if !real {
                return Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    decl.name.span,
                    format!("flow variable `{name}` is not of type Real"),
                )
                .with_label("`flow` applies only to Real variables (MLS 4.4.2.2)")
                .with_hint("a flow variable is summed to zero at connections; make it Real"));
            }
        }
        Ok(())
    }

    /// A structured component declared with prefix `prefix` (its causality
    /// or `flow`): no element of its class may carry the same kind of
    /// prefix again (MLS 4.4.2.2).
    pub(super) fn check_structured_prefix(
        &self,
        prefix: ast::TypePrefix,
        class_name: &str,
        path: &str,
        contents: &Contents,
        span: Span,
    ) -> Result<(), Diagnostic> {
        for pc in &contents.components {
            let d = &pc.decl.prefix;
            let outer = match prefix.causality {
                ast::CausalityPrefix::Input => "input",
                ast::CausalityPrefix::Output => "output",
                ast::CausalityPrefix::None => "flow",
            };
            let clash = d.causality != ast::CausalityPrefix::None || d.flow || d.stream;
            if clash {
                let p = outer;
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    span,
                    format!(
                        "`{path}` is declared `{p}`, but its class `{class_name}` gives element `{}` its own `flow`, `input` or `output`",
                        pc.decl.name.name
                    ),
                )
                .with_label(format!("`{p}` on a structured component whose elements carry such a prefix (MLS 4.4.2.2)"))
                .with_secondary(pc.decl.name.span, "declared with its own prefix here")
                .with_hint(format!("remove `{p}` from the declaration of `{path}`")));
            }
        }
        Ok(())
    }

    /// A public connector component `name` of block instance `inst`: every
    /// variable of it is an input or an output (MLS 4.6).
    pub(super) fn check_block_port(
        &self,
        inst: InstId,
        block: &str,
        name: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(comp) = self.instances[inst as usize].components.get(name) else {
            return Ok(());
        };
        if !comp.connector {
            return Ok(());
        }
        let mut vars = Vec::new();
        self.node_vars(&comp.node, &mut vars);
        for v in vars {
            let var = &self.vars[v as usize];
            if var.causality == flat::Causality::Local
                && matches!(
                    var.variability,
                    Variability::Continuous | Variability::Discrete
                )
            {
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    span,
                    format!(
                        "connector `{name}` of block `{block}` has `{}`, which is neither an input nor an output",
                        var.name
                    ),
                )
                .with_label("every variable of a block's public connector needs `input` or `output` (MLS 4.6)")
                .with_hint("declare the connector `input` or `output`, or make the class a `model`"));
            }
        }
        Ok(())
    }

    /// The flat variables under a node, nested instances included.
    fn node_vars(&self, node: &CompNode, out: &mut Vec<VarId>) {
        match node {
            CompNode::Var(v) => out.push(*v),
            CompNode::Inst(i) => {
                for c in self.instances[*i as usize].components.values() {
                    self.node_vars(&c.node, out);
                }
            }
            CompNode::Array(_, elems) => {
                for e in elems.iter() {
                    self.node_vars(e, out);
                }
            }
        }
    }

    /// A component's modifier may not name a protected element of its class
    /// (MLS 4.1; only an `extends` clause and the element's own declaration
    /// may modify it).
    pub(super) fn check_protected_modifiers(
        &self,
        names: &[(String, Span)],
        contents: &Contents,
        path: &str,
    ) -> Result<(), Diagnostic> {
        for (name, span) in names {
            if let Some(pc) = contents
                .components
                .iter()
                .find(|c| c.decl.protected && &c.decl.name.name == name)
            {
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    *span,
                    format!("`{path}.{name}` is protected and cannot be modified here"),
                )
                .with_label("a modifier of a protected element (MLS 4.1)")
                .with_secondary(pc.decl.name.span, "declared protected here")
                .with_hint("only an `extends` clause of the class, or the declaration itself, may modify a protected element; make it public to set it from outside"));
            }
        }
        Ok(())
    }

    /// Element `name` of instance `inst`, reached through a dot from
    /// `path`, must not be protected (MLS 4.1).
    pub(super) fn check_not_protected(
        &self,
        inst: InstId,
        name: &str,
        path: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        match self.instances[inst as usize].components.get(name) {
            Some(c) if c.protected => {
                let class = self.instances[inst as usize].class;
                Err(Diagnostic::error(DiagnosticKind::Restriction,
                    span,
                    format!(
                        "`{name}` is a protected element of `{}` and cannot be reached as `{path}.{name}`",
                        self.lib.entry(class).full_name
                    ),
                )
                .with_label("access to a protected element from outside (MLS 4.1)")
                .with_hint("make it public in its class, or use a public element that gives its value"))
            }
            _ => Ok(()),
        }
    }

    /// A parameter's binding is a parameter expression, a constant's a
    /// constant expression (MLS 3.8, 4.4.4): no variable of higher
    /// variability, no `time`, `der` or `pre`, in it or in the arguments
    /// of a function it calls.
    pub(super) fn check_binding_variability(
        &mut self,
        v: VarId,
        e: flat::ExprId,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let var = &self.vars[v as usize];
        let constant = match var.variability {
            Variability::Constant => true,
            Variability::Parameter => false,
            _ => return Ok(()),
        };
        // An element of an array bound to a call whose arguments passed.
        let site = match self.arena.node(e) {
            flat::Node::Call { call, .. } => Some((call, constant)),
            _ => None,
        };
        if site.is_some_and(|k| self.variability_checked_calls.contains(&k)) {
            return Ok(());
        }
        let what = if constant { "constant" } else { "parameter" };
        for id in self.arena.reachable(&[e]) {
            let culprit = match self.arena.node(id) {
                flat::Node::Var(x) => {
                    let xv = &self.vars[x as usize];
                    let too_varying = match xv.variability {
                        Variability::Constant => false,
                        Variability::Parameter => constant,
                        _ => true,
                    };
                    if !too_varying {
                        continue;
                    }
                    let kind = match xv.variability {
                        Variability::Parameter => "the parameter",
                        Variability::Discrete => "the discrete variable",
                        _ => "the variable",
                    };
                    format!("{kind} `{}`", xv.name)
                }
                flat::Node::Time => "`time`".to_string(),
                flat::Node::Der(_) => "a derivative".to_string(),
                flat::Node::Pre(_) => "`pre`".to_string(),
                _ => continue,
            };
            return Err(Diagnostic::error(DiagnosticKind::Variability,
                span,
                format!("{what} `{}` is bound to an expression of {culprit}", var.name),
            )
            .with_label(format!(
                "a {what} needs a {what} expression (MLS 3.8)"
            ))
            .with_hint(if constant {
                "declare it `parameter`, or bind it to constants only".to_string()
            } else {
                format!(
                    "declare it without `parameter` (`Real {} = ...` is an equation), or use `fixed = false` with an initial equation",
                    var.name.rsplit('.').next().unwrap_or(&var.name)
                )
            }));
        }
        if let Some(k) = site {
            self.variability_checked_calls.insert(k);
        }
        Ok(())
    }

    /// Component `name` of instance `inst`, named in the body of class
    /// `from`, must be declared in `from` or in a class `from` extends: a
    /// base class does not see the names of the class extending it
    /// (MLS 5.3, 7.1).
    pub(super) fn check_visible_from(
        &self,
        inst: InstId,
        name: &str,
        from: ClassId,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(c) = self.instances[inst as usize].components.get(name) else {
            return Ok(());
        };
        if c.declared_in == from || self.extends_transitively(from, c.declared_in) {
            return Ok(());
        }
        // Only a class that extends `from` can have put the name there.
        if !self.extends_transitively(c.declared_in, from) {
            return Ok(());
        }
        let lib = &self.lib;
        Err(Diagnostic::error(DiagnosticKind::UnresolvedName,
            span,
            format!(
                "`{name}` is declared in `{}`, which extends `{}`: the base class cannot see it",
                lib.entry(c.declared_in).full_name,
                lib.entry(from).full_name
            ),
        )
        .with_label("a name of the class extending this one (MLS 5.3)")
        .with_hint("declare it in the base class (perhaps as a parameter the extending class sets), or move this equation into the extending class"))
    }

    /// Whether class `a` extends `b`, directly or through other bases.
    pub(super) fn extends_transitively(&self, a: ClassId, b: ClassId) -> bool {
        let mut stack = vec![a];
        let mut seen = std::collections::HashSet::new();
        while let Some(c) = stack.pop() {
            if !seen.insert(c) {
                continue;
            }
            for &x in self
                .base_classes
                .get(&c)
                .map(|v| v.as_slice())
                .unwrap_or(&[])
            {
                if x == b {
                    return true;
                }
                stack.push(x);
            }
        }
        false
    }

    /// The shape of a function (MLS 12.2): at most one algorithm section,
    /// no initial algorithm, every public variable an input or an output.
    pub(super) fn check_function_shape(
        &self,
        def: &ast::ClassDef,
        contents: &Contents,
    ) -> Result<(), Diagnostic> {
        let name = &def.name.name;
        if let Some((alg, _)) = contents.algorithms.iter().find(|(a, _)| a.initial) {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                alg.span,
                format!("function `{name}` has an initial algorithm"),
            )
            .with_label("a function has no initialization (MLS 12.2)")
            .with_hint("give the variables their values in the algorithm section or by bindings"));
        }
        if let Some((second, _)) = contents.algorithms.get(1) {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                second.span,
                format!("function `{name}` has more than one algorithm section"),
            )
            .with_label("a second algorithm section (MLS 12.2)")
            .with_secondary(contents.algorithms[0].0.span, "the first")
            .with_hint("join the statements into one `algorithm` section"));
        }
        for pc in &contents.components {
            let d = &pc.decl;
            if !d.protected
                && d.prefix.causality == ast::CausalityPrefix::None
                && !matches!(
                    d.prefix.variability,
                    ast::VariabilityPrefix::Constant | ast::VariabilityPrefix::Parameter
                )
            {
                return Err(Diagnostic::error(DiagnosticKind::Restriction,
                    d.name.span,
                    format!(
                        "`{}` is a public variable of function `{name}` but neither an input nor an output",
                        d.name.name
                    ),
                )
                .with_label("public function variables must be inputs or outputs (MLS 12.2)")
                .with_hint("declare it `input` or `output`, or move it under `protected`"));
            }
        }
        Ok(())
    }
}

/// Classes of a user's file named like a predefined type (MLS 4.8).
pub(crate) fn reserved_class_name(def: &ast::ClassDef) -> Option<Diagnostic> {
    if RESERVED_NAMES.contains(&def.name.name.as_str()) {
        return Some(
            Diagnostic::error(
                DiagnosticKind::Restriction,
                def.name.span,
                format!("a class cannot be named `{}`", def.name.name),
            )
            .with_label("the name of a predefined type is reserved (MLS 4.8)")
            .with_hint("choose another name for the class"),
        );
    }
    if let ClassBody::Long(comp) = &def.body {
        for e in &comp.elements {
            if let Element::Class(c) = e
                && let Some(d) = reserved_class_name(&c.def)
            {
                return Some(d);
            }
        }
    }
    None
}
