//! What a class contributes before it is instantiated: short class
//! definitions followed to their end (`resolve_short`), a class's
//! elements, equations and algorithms with its `extends` absorbed
//! (`contents`), and the checks of redeclarations and modifier names.

use super::*;

impl<'l> Flattener<'l> {
    /// Follows short class definitions (`type Angle = Real(unit = "rad")`,
    /// `connector RealInput = input Real`) down to a long class or builtin,
    /// merging their modifiers under `outer`.
    pub(super) fn resolve_short(
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
                        DiagnosticKind::Restriction,
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
                ast::CausalityPrefix::Input => prefix.causality = ast::CausalityPrefix::Input,
                ast::CausalityPrefix::Output => prefix.causality = ast::CausalityPrefix::Output,
                ast::CausalityPrefix::None => {}
            }
            let base = self.lib.lookup(parent, &s.base)?;
            // A short class definition is an `extends` (MLS 4.5.1).
            match self.lib.def(base)? {
                Some(bd) => self.check_base_kind(&def, &bd, s.base.span)?,
                None if !restrictions::may_extend_a_type(def.kind) => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
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
    pub(super) fn extends_only_a_type(
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
                || resolved.prefix.causality != ast::CausalityPrefix::None =>
            {
                Ok(Some((base, ext.clone(), false)))
            }
            None => Ok(None),
        }
    }

    /// The components, equations and class redeclarations of class `class`
    /// (a long class), with inherited ones, under modifier `m`.
    pub(super) fn contents(
        &mut self,
        class: ClassId,
        m: &Modifier,
        inst: Option<InstId>,
        depth: usize,
    ) -> Result<Contents, Diagnostic> {
        let mut out = Contents::default();
        if depth > 64 {
            let name = self.lib.entry(class).full_name.clone();
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Limit,
                format!("`{name}`: base classes nested more than 64 deep"),
            ));
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
                DiagnosticKind::Unsupported,
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
                DiagnosticKind::Unsupported,
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
                        DiagnosticKind::Modifier,
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
                        DiagnosticKind::Modifier,
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
                        return self.err(DiagnosticKind::Restriction, ext.span, "extending a predefined type is only allowed in a short class definition (`type T = Real(...)`)");
                    }
                    if !resolved.dims.is_empty()
                        || resolved.prefix.causality != ast::CausalityPrefix::None
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
                                DiagnosticKind::Modifier,
                                r.span,
                                format!("`{}` is final and cannot be redeclared", c.name.name),
                            )
                            .with_label("redeclaration of a final element (MLS 7.3.3)")
                            .with_secondary(c.name.span, "declared final here"));
                        }
                        if !c.replaceable {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Modifier,
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
    pub(super) fn interface_names(&mut self, class: ClassId) -> Result<Vec<String>, Diagnostic> {
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
    pub(super) fn check_redeclare_subtype(
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
                DiagnosticKind::Modifier,
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
    pub(super) fn check_modifier_names(
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
                    DiagnosticKind::UnresolvedName,
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
                    DiagnosticKind::UnresolvedName,
                    r.span,
                    format!("`{cname}` has no replaceable element `{n}` to redeclare"),
                );
            }
        }
        Ok(())
    }
}
