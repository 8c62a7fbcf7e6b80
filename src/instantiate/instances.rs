//! Phase 1 of flattening: the instance tree of the chosen model. Every
//! component gets its class (after `redeclare`), its merged modifier and
//! its array dimensions, on demand (a declaration may use a parameter
//! declared later); primitive components become flat variables
//! (`primitive`), their attributes and bindings left for phase 2.

use super::*;

impl<'l> Flattener<'l> {
    /// Instantiates class `class` as a component at `path`, returning its node.
    pub(super) fn instantiate_class(
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
            return Err(Diagnostic::error(DiagnosticKind::Restriction, span, format!("recursive model structure: a `{cname}` contains itself (component `{}...`)", short.join(".")))
                .with_label("this component's class leads back to itself")
                .with_hint("a class name may resolve to a different class than intended here; qualify it (e.g. `SI.Torque`)"));
        }
        let r = self.instantiate_class_inner(class, m, path, parent, prefix, span);
        self.depth -= 1;
        r
    }

    pub(super) fn instantiate_class_inner(
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
                DiagnosticKind::Restriction,
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
    pub(super) fn redeclared_member(
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
    pub(super) fn record_binding_as_fields(
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
                                    DiagnosticKind::Modifier,
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
                                    DiagnosticKind::UnresolvedName,
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
                return Err(Diagnostic::error(DiagnosticKind::Modifier,
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
    pub(super) fn instantiate_model(
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
                    DiagnosticKind::Restriction,
                    span,
                    format!(
                        "`{}` is a function and cannot be used as a component type",
                        def.name.name
                    ),
                );
            }
            ClassKind::Package => {
                return self.err(
                    DiagnosticKind::Restriction,
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
        if prefix.causality != ast::CausalityPrefix::None || prefix.flow {
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
                        DiagnosticKind::DuplicateName,
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
    pub(super) fn ensure_component(&mut self, inst: InstId, name: &str) -> Result<(), Diagnostic> {
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
    pub(super) fn component_class(
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
                    Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        p.span,
                        format!("no class `{}` in `{first}`", p.name),
                    )
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

    pub(super) fn instantiate_component(
        &mut self,
        inst: InstId,
        pc: &PendingComp,
    ) -> Result<Option<Comp>, Diagnostic> {
        let decl = pc.decl.clone();
        if decl.inner_outer {
            return Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
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
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
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
                DiagnosticKind::Modifier,
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
                    DiagnosticKind::Modifier,
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
                    DiagnosticKind::Variability,
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
        if decl.prefix.causality != ast::CausalityPrefix::None {
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
    pub(super) fn span_names_any(&self, span: Span, names: &[String]) -> bool {
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
    pub(super) fn inside_connector(
        &mut self,
        inst: InstId,
        class: ClassId,
    ) -> Result<bool, Diagnostic> {
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

    pub(super) fn describe(&mut self, node: &CompNode, text: &str) {
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
    pub(super) fn sizes_from_binding(
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
                DiagnosticKind::Shape,
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
                DiagnosticKind::Shape,
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

    pub(super) fn eval_dim(
        &mut self,
        s: &ast::Subscript,
        scope: Scope,
        decl: &ast::Component,
    ) -> Result<usize, Diagnostic> {
        match s {
            ast::Subscript::All(sp) => self.err(DiagnosticKind::Shape,
                *sp,
                format!("`{}`: a component's array size must be given (`:` is only allowed for function inputs)", decl.name.name),
            ),
            ast::Subscript::Index(e) => {
                let v = self.eval_structural(e, scope)?;
                if v < 0.0 || v.fract() != 0.0 {
                    return self.err(DiagnosticKind::Shape, e.span, format!("array size must be a non-negative integer, got {v}"));
                }
                Ok(v as usize)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn build_node(
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
                DiagnosticKind::Limit,
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
    pub(super) fn primitive(
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
                    DiagnosticKind::Unsupported,
                    span,
                    "String components are not supported (strings may only appear in messages)",
                );
            }
            Builtin::ExternalObject => {
                return self.err(DiagnosticKind::Restriction,
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
                    DiagnosticKind::UnresolvedName,
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
                ast::CausalityPrefix::Input => flat::Causality::Input,
                ast::CausalityPrefix::Output => flat::Causality::Output,
                ast::CausalityPrefix::None => flat::Causality::Local,
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
}
