//! Names during flattening: component references (with subscripts, through
//! instances and arrays of instances), function locals, for-loop indices,
//! and the lexical scope: constants of enclosing classes and packages,
//! imported constants, enumeration literals.

use super::*;
use crate::instantiate::PackageConstant;

impl Flattener<'_> {
    /// Component nodes named by a reference in the context's instance, if the
    /// first identifier is a component there.
    pub(in crate::instantiate) fn resolve_nodes(
        &mut self,
        r: &ComponentRef,
        ctx: &Ctx,
    ) -> Result<Option<NodeArray>, Diagnostic> {
        let Some(inst) = ctx.scope.inst else {
            return Ok(None);
        };
        if r.global {
            return Ok(None);
        }
        let first = &r.parts[0];
        let Some(node) = self.component_node(inst, &first.ident.name)? else {
            return Ok(None);
        };
        if let Some(from) = ctx.scope.class {
            self.check_visible_from(inst, &first.ident.name, from, first.ident.span)?;
        }
        let mut cur = NodeArray::from_node(&node);
        let mut path = first.ident.name.clone();
        cur = self.apply_node_subscripts(cur, &first.subscripts, ctx, &path)?;
        for part in &r.parts[1..] {
            let mut leaves = Vec::new();
            let mut inner_dims: Option<Vec<usize>> = None;
            for leaf in cur.leaves.iter() {
                let CompNode::Inst(i) = leaf else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        part.ident.span,
                        format!(
                            "`{path}` is a variable and has no component `{}`",
                            part.ident.name
                        ),
                    ));
                };
                let Some(n) = self.component_node(*i, &part.ident.name)? else {
                    let class = self.instances[*i as usize].class;
                    let cname = self.lib.entry(class).full_name.clone();
                    let names = self.instances[*i as usize].order.clone();
                    let mut d = Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        part.ident.span,
                        format!(
                            "`{path}` (a `{cname}`) has no component `{}`",
                            part.ident.name
                        ),
                    )
                    .with_label("unknown component");
                    if let Some(c) =
                        crate::diag::closest(&part.ident.name, names.iter().map(|s| s.as_str()))
                    {
                        d = d.with_hint(format!("did you mean `{path}.{c}`?"));
                    }
                    return Err(d);
                };
                self.check_not_protected(*i, &part.ident.name, &path, part.ident.span)?;
                let na = NodeArray::from_node(&n);
                match &inner_dims {
                    None => inner_dims = Some(na.dims.clone()),
                    Some(d) if *d != na.dims => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            part.ident.span,
                            "array components of different sizes cannot be combined",
                        ));
                    }
                    _ => {}
                }
                leaves.extend(na.leaves.iter().cloned());
            }
            let mut dims = cur.dims.clone();
            dims.extend(inner_dims.unwrap_or_default());
            path = format!("{path}.{}", part.ident.name);
            cur = self.apply_node_subscripts(
                NodeArray {
                    dims,
                    leaves: leaves.into(),
                },
                &part.subscripts,
                ctx,
                &path,
            )?;
        }
        Ok(Some(cur))
    }

    /// The node of component `name` of instance `inst`, instantiating it if needed.
    pub(in crate::instantiate) fn component_node(
        &mut self,
        inst: InstId,
        name: &str,
    ) -> Result<Option<CompNode>, Diagnostic> {
        self.ensure_component(inst, name)?;
        Ok(self.instances[inst as usize]
            .components
            .get(name)
            .map(|c| c.node.clone()))
    }

    pub(super) fn apply_node_subscripts(
        &mut self,
        a: NodeArray,
        subs: &[Subscript],
        ctx: &Ctx,
        path: &str,
    ) -> Result<NodeArray, Diagnostic> {
        if subs.is_empty() {
            return Ok(a);
        }
        if subs.len() > a.dims.len() {
            let span = match &subs[0] {
                Subscript::All(s) => *s,
                Subscript::Index(e) => e.span,
            };
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                span,
                format!(
                    "`{path}` has {} dimension(s) but {} subscript(s) are given",
                    a.dims.len(),
                    subs.len()
                ),
            ));
        }
        let mut sel = Vec::new();
        for (k, s) in subs.iter().enumerate() {
            match self.eval_index(s, a.dims[k], ctx, path)? {
                Index::Dynamic(_) => {
                    let span = match s {
                        Subscript::All(s) => *s,
                        Subscript::Index(e) => e.span,
                    };
                    return Err(Diagnostic::error(
                        DiagnosticKind::Variability,
                        span,
                        "the index of a component array must be a parameter expression",
                    ));
                }
                i => sel.push(i),
            }
        }
        let (dims, picks) = pick_positions(&a.dims, &sel);
        let leaves = picks.into_iter().map(|p| a.leaves[p].clone()).collect();
        Ok(NodeArray { dims, leaves })
    }

    pub(super) fn eval_index(
        &mut self,
        s: &Subscript,
        size: usize,
        ctx: &Ctx,
        path: &str,
    ) -> Result<Index, Diagnostic> {
        match s {
            Subscript::All(_) => Ok(Index::Many((1..=size).collect())),
            Subscript::Index(e) => {
                if let Some(k) = self.simple_index(e, ctx) {
                    if k < 1 || k as usize > size {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            e.span,
                            format!(
                                "index {k} is out of bounds for `{path}`, which has size {size} here"
                            ),
                        ));
                    }
                    return Ok(Index::One(k as usize));
                }
                let mut c = ctx.clone();
                c.end = Some(size);
                let v = self.eval_expr(e, &c)?;
                if v.ty == ScalarType::Boolean {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        e.span,
                        "an index must be an Integer",
                    ));
                }
                let mut idx = Vec::new();
                for &x in &v.elems {
                    let val = match self.arena.as_const(x) {
                        Some(val) => val,
                        None => {
                            if ctx.in_function() && v.is_scalar() {
                                return Ok(Index::Dynamic(x));
                            }
                            self.const_value(x, e.span)?
                        }
                    };
                    if val.fract() != 0.0 || val < 1.0 || val as usize > size {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            e.span,
                            format!(
                                "index {} is out of bounds for `{path}`, which has size {size} here",
                                crate::flat::expr::format_number(val)
                            ),
                        ));
                    }
                    idx.push(val as usize);
                }
                if v.is_scalar() {
                    Ok(Index::One(idx[0]))
                } else {
                    Ok(Index::Many(idx))
                }
            }
        }
    }

    /// The value of a subscript made of Integer literals, for-loop indices,
    /// `+`, `-` and `*` (`T[i, j - 1]`), computed without building values;
    /// `None` for any other subscript, which is evaluated in full. The
    /// subscripts of for-equations over large arrays are nearly all of
    /// this form.
    fn simple_index(&self, e: &ast::Expr, ctx: &Ctx) -> Option<i64> {
        // Values stay below 1e15, where the general path's f64 arithmetic
        // is exact and its diagnostics print them as integers.
        let small = |k: i64| (k.abs() < 1_000_000_000_000_000).then_some(k);
        match &e.kind {
            ExprKind::Integer(k) => small(*k),
            ExprKind::Ref(r)
                if !r.global && r.parts.len() == 1 && r.parts[0].subscripts.is_empty() =>
            {
                let name = r.parts[0].ident.name.as_str();
                if ctx
                    .scope
                    .inst
                    .is_some_and(|i| self.string_parameter(i, name).is_some())
                {
                    return None;
                }
                let (_, v) = ctx.loops.iter().rev().find(|(n, _)| n == name)?;
                if v.ty != ScalarType::Integer || !v.is_scalar() {
                    return None;
                }
                let x = self.arena.as_const(v.elems[0])?;
                (x.fract() == 0.0 && x.abs() < 1e15).then_some(x as i64)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.simple_index(lhs, ctx)?;
                let b = self.simple_index(rhs, ctx)?;
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    _ => None,
                }
                .and_then(small)
            }
            _ => None,
        }
    }

    pub(in crate::instantiate) fn resolve_ref(
        &mut self,
        r: &ComponentRef,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let first = &r.parts[0];
        let name = first.ident.name.as_str();
        if let Some(i) = ctx.scope.inst
            && r.parts.len() == 1
            && self.string_parameter(i, name).is_some()
        {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                r.span,
                format!("`{name}` is a String parameter, which has no numeric value"),
            )
            .with_hint(
                "String parameters may only appear in messages and in other String bindings",
            ));
        }
        if !r.global
            && r.parts.len() == 1
            && let Some((_, v)) = ctx.loops.iter().rev().find(|(n, _)| n == name)
        {
            let v = v.clone();
            return self.apply_value_subscripts(v, &first.subscripts, ctx, name);
        }
        if !r.global
            && let Some(locals) = &ctx.locals
            && let Some(l) = locals.get(name).cloned()
        {
            if r.parts.len() > 1 {
                return Err(Diagnostic::error(
                    DiagnosticKind::Unsupported,
                    r.span,
                    "records are not supported in functions",
                ));
            }
            return self.local_value(&l, &first.subscripts, ctx, name);
        }
        if let Some(v) = self.element_ref(r, ctx)? {
            return Ok(v);
        }
        if let Some(nodes) = self.resolve_nodes(r, ctx)? {
            return self.nodes_value(nodes, r);
        }
        if !r.global && r.parts.len() == 1 && name == "time" && first.subscripts.is_empty() {
            self.check_time_allowed(r.span, ctx)?;
            let t = self.arena.intern(Node::Time);
            return Ok(Value::scalar(ScalarType::Real, t));
        }
        if let Some(v) = self.resolve_lexical(r, ctx)? {
            return Ok(v);
        }
        Err(self.unknown_name(r, ctx))
    }

    /// A reference to one variable of the context's instance, or one
    /// element of an array of them, by indices known while flattening
    /// (`T[i, j - 1]` in a for-equation, the usual reference of a large
    /// model): the variable, without the node lists of [`Self::resolve_nodes`].
    /// `None` for anything else (a constant, a component, a slice, an
    /// index out of range), which the general path resolves or reports.
    fn element_ref(&mut self, r: &ComponentRef, ctx: &Ctx) -> Result<Option<Value>, Diagnostic> {
        let (Some(inst), false, [part]) = (ctx.scope.inst, r.global, r.parts.as_slice()) else {
            return Ok(None);
        };
        let name = part.ident.name.as_str();
        self.ensure_component(inst, name)?;
        let Some(c) = self.instances[inst as usize].components.get(name) else {
            return Ok(None);
        };
        let v = match &c.node {
            CompNode::Var(v) if part.subscripts.is_empty() => *v,
            CompNode::Array(dims, leaves) if part.subscripts.len() == dims.len() => {
                let mut position = 0;
                for (s, &size) in part.subscripts.iter().zip(dims) {
                    let Subscript::Index(e) = s else {
                        return Ok(None);
                    };
                    match self.simple_index(e, ctx) {
                        Some(k) if k >= 1 && k as usize <= size => {
                            position = position * size + (k as usize - 1)
                        }
                        _ => return Ok(None),
                    }
                }
                match leaves[position] {
                    CompNode::Var(v) => v,
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        if self.vars[v as usize].variability == Variability::Constant {
            return Ok(None);
        }
        if let Some(from) = ctx.scope.class {
            self.check_visible_from(inst, name, from, part.ident.span)?;
        }
        Ok(Some(Value::scalar(
            self.vars[v as usize].ty,
            self.arena.var(v),
        )))
    }

    /// `time` is a variable of models and blocks only: not of a function,
    /// a record or a connector (MLS 3.6.7, 12.2).
    fn check_time_allowed(&self, span: Span, ctx: &Ctx) -> Result<(), Diagnostic> {
        let what = if ctx.in_function() {
            "a function"
        } else {
            match ctx.scope.inst.map(|i| self.instances[i as usize].kind) {
                Some(ast::ClassKind::Record) => "a record",
                Some(ast::ClassKind::Connector) => "a connector",
                _ => return Ok(()),
            }
        };
        Err(Diagnostic::error(
            DiagnosticKind::Variability,
            span,
            format!("`time` used in {what}"),
        )
        .with_label(format!(
            "{what} cannot read the simulation time (MLS 3.6.7)"
        ))
        .with_hint(
            "pass the time in: as a function input, or by a binding in the model that uses it",
        ))
    }

    pub(super) fn unknown_name(&mut self, r: &ComponentRef, ctx: &Ctx) -> Diagnostic {
        let name = &r.parts[0].ident.name;
        let mut candidates: Vec<String> = ctx.loops.iter().map(|(n, _)| n.clone()).collect();
        if let Some(l) = &ctx.locals {
            candidates.extend(l.keys().cloned());
        }
        if let Some(i) = ctx.scope.inst {
            candidates.extend(self.instances[i as usize].order.iter().cloned());
        }
        let mut d = Diagnostic::error(
            DiagnosticKind::UnresolvedName,
            r.parts[0].ident.span,
            format!("unknown name `{name}`"),
        )
        .with_label("not declared in this scope");
        if let Some(c) = crate::diag::closest(name, candidates.iter().map(|s| s.as_str())) {
            d = d.with_hint(format!("did you mean `{c}`?"));
        } else {
            d = d.with_hint(format!("declare it, e.g. `parameter Real {name} = ...;`"));
        }
        d
    }

    pub(super) fn nodes_value(
        &mut self,
        nodes: NodeArray,
        r: &ComponentRef,
    ) -> Result<Value, Diagnostic> {
        let mut elems = Vec::with_capacity(nodes.leaves.len());
        let mut ty = None;
        for leaf in nodes.leaves.iter() {
            let CompNode::Var(v) = leaf else {
                return Err(Diagnostic::error(
                    DiagnosticKind::Type,
                    r.span,
                    format!(
                        "`{}` is a component, not a variable, and cannot be used in an expression",
                        r.dotted()
                    ),
                )
                .with_hint("refer to one of its variables, e.g. `a.phi`"));
            };
            let var = &self.vars[*v as usize];
            let t = var.ty;
            ty = Some(ty.map_or(t, |x: ScalarType| {
                unify_ty(x, t).unwrap_or(ScalarType::Real)
            }));
            if var.variability == Variability::Constant {
                // Constants are replaced by their values.
                match self.binding_of(*v)? {
                    Some(b) => {
                        let c = self.const_value(b, r.span)?;
                        elems.push(self.arena.constant(c));
                    }
                    None => {
                        let n = self.vars[*v as usize].name.clone();
                        let decl = self.vars[*v as usize].span;
                        return Err(Diagnostic::error(
                            DiagnosticKind::Evaluation,
                            decl,
                            format!("constant `{n}` has no value"),
                        )
                        .with_label("declared without a value")
                        .with_secondary(r.span, "used here")
                        .with_hint(format!("give it a value: `constant Real {n} = ...;`")));
                    }
                }
            } else {
                elems.push(self.arena.var(*v));
            }
        }
        Ok(Value {
            ty: ty.unwrap_or(ScalarType::Real),
            dims: nodes.dims,
            elems,
        })
    }

    pub(super) fn local_value(
        &mut self,
        l: &Local,
        subs: &[Subscript],
        ctx: &Ctx,
        name: &str,
    ) -> Result<Value, Diagnostic> {
        let n: usize = l.dims.iter().product();
        let elems: Vec<ExprId> = (0..n as u32).map(|k| self.arena.var(l.base + k)).collect();
        let v = Value {
            ty: l.ty,
            dims: l.dims.clone(),
            elems,
        };
        if subs.is_empty() {
            return Ok(v);
        }
        // A single run-time index into a vector (or a row-major position in a
        // matrix) becomes an `Elem` node; constant indices select statically.
        let mut sel = Vec::new();
        let mut dynamic = false;
        for (k, s) in subs.iter().enumerate() {
            if k >= l.dims.len() {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    r_span(s),
                    format!(
                        "`{name}` has {} dimension(s) but more subscripts are given",
                        l.dims.len()
                    ),
                ));
            }
            let i = self.eval_index(s, l.dims[k], ctx, name)?;
            if matches!(i, Index::Dynamic(_)) {
                dynamic = true;
            }
            sel.push(i);
        }
        if !dynamic {
            let (dims, picks) = pick_positions(&v.dims, &sel);
            return Ok(Value {
                ty: v.ty,
                dims,
                elems: picks.into_iter().map(|p| v.elems[p]).collect(),
            });
        }
        let pos = self.run_time_position(&l.dims, &sel, subs)?;
        let one = self.arena.one();
        let index = self.arena.add(pos, one);
        let e = self.arena.intern(Node::Elem {
            base: l.base,
            len: n as u32,
            index,
        });
        Ok(Value::scalar(l.ty, e))
    }

    pub(super) fn apply_value_subscripts(
        &mut self,
        v: Value,
        subs: &[Subscript],
        ctx: &Ctx,
        name: &str,
    ) -> Result<Value, Diagnostic> {
        if subs.is_empty() {
            return Ok(v);
        }
        if subs.len() > v.dims.len() {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                r_span(&subs[0]),
                format!("`{name}` has {} dimension(s)", v.dims.len()),
            ));
        }
        let mut sel = Vec::new();
        for (k, s) in subs.iter().enumerate() {
            sel.push(self.eval_index(s, v.dims[k], ctx, name)?);
        }
        if sel.iter().any(|i| matches!(i, Index::Dynamic(_))) {
            return self.select_at_run_time(v, &sel, subs);
        }
        let (dims, picks) = pick_positions(&v.dims, &sel);
        Ok(Value {
            ty: v.ty,
            dims,
            elems: picks.into_iter().map(|p| v.elems[p]).collect(),
        })
    }

    /// The 0-based row-major position of the single element `sel` picks
    /// from an array of `dims`, some of its indices known only at run time.
    fn run_time_position(
        &mut self,
        dims: &[usize],
        sel: &[Index],
        subs: &[Subscript],
    ) -> Result<ExprId, Diagnostic> {
        if sel.len() != dims.len() || sel.iter().any(|s| matches!(s, Index::Many(_))) {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                r_span(&subs[0]),
                "a run-time index must select a single element (give every subscript)",
            ));
        }
        let mut pos = self.arena.zero();
        for (k, s) in sel.iter().enumerate() {
            let ik = match s {
                Index::One(i) => self.arena.constant(*i as f64),
                Index::Dynamic(e) => *e,
                Index::Many(_) => unreachable!("checked above"),
            };
            let one = self.arena.one();
            let im1 = self.arena.sub(ik, one);
            let stride: usize = dims[k + 1..].iter().product();
            let st = self.arena.constant(stride as f64);
            let term = self.arena.mul(im1, st);
            pos = self.arena.add(pos, term);
        }
        Ok(pos)
    }

    /// One element of a value held as expressions (a constant array of a
    /// function, Gauss points read in a loop) at a run-time index: a chain
    /// of selections on the element's row-major position. An index out of
    /// bounds selects NaN, which the run reports where it is used.
    fn select_at_run_time(
        &mut self,
        v: Value,
        sel: &[Index],
        subs: &[Subscript],
    ) -> Result<Value, Diagnostic> {
        let pos = self.run_time_position(&v.dims, sel, subs)?;
        let mut out = self.arena.constant(f64::NAN);
        for (k, &e) in v.elems.iter().enumerate().rev() {
            let at = self.arena.constant(k as f64);
            let here = self.arena.rel(RelOp::Eq, pos, at, false);
            out = self.arena.if_(here, e, out);
        }
        Ok(Value::scalar(v.ty, out))
    }

    /// A name of class `class` found from a nested class or through the
    /// class's name must be a constant (MLS 5.3): a parameter belongs to
    /// the instances of its class.
    fn check_constant_from_outside(
        &self,
        class: ast_class::ClassId,
        name: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if !self.class_parameters.contains(&(class, name.to_string())) {
            return Ok(());
        }
        Err(Diagnostic::error(
            DiagnosticKind::UnresolvedName,
            span,
            format!(
                "`{name}` is a parameter of `{}`, not a constant",
                self.lib.entry(class).full_name
            ),
        )
        .with_label(
            "only constants are found in an enclosing class or through a class name (MLS 5.3)",
        )
        .with_hint("declare it `constant`, or pass the value in by a modifier"))
    }

    /// Constants of enclosing classes and packages, and enumeration literals.
    pub(super) fn resolve_lexical(
        &mut self,
        r: &ComponentRef,
        ctx: &Ctx,
    ) -> Result<Option<Value>, Diagnostic> {
        let first = &r.parts[0].ident.name;
        // A constant declared in an enclosing class.
        if !r.global {
            let mut s = ctx.scope.class;
            while let Some(c) = s {
                let span = r.parts[0].ident.span;
                let found = match self.package_constant(c, first, span)? {
                    Some(v) => Some(v),
                    None => self.imported_constant(c, first, span)?,
                };
                if let Some(v) = found {
                    if Some(c) != ctx.scope.class {
                        self.check_constant_from_outside(c, first, span)?;
                    }
                    if r.parts.len() > 1 {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Unsupported,
                            r.span,
                            "record constants are not supported",
                        ));
                    }
                    return self
                        .apply_value_subscripts(v, &r.parts[0].subscripts, ctx, first)
                        .map(Some);
                }
                s = self.lib.entry(c).parent;
            }
        }
        // A class path ending in a constant or an enumeration literal.
        if r.parts.len() < 2 {
            return Ok(None);
        }
        let start = if r.global { None } else { ctx.scope.class };
        // A package redeclared for this instance or an enclosing one
        // (`redeclare package Medium = Water`) replaces the declared one.
        let declared = self.lib.lookup_simple(start, first)?;
        let inst = if r.global { None } else { ctx.scope.inst };
        let found = self.redeclared_class(inst, first, declared).or(declared);
        let Some(mut class) = found else {
            return Ok(None);
        };
        for (k, part) in r.parts.iter().enumerate().skip(1) {
            let last = k == r.parts.len() - 1;
            let pname = &part.ident.name;
            // A name is not looked up inside a partial class (MLS 5.3.2):
            // `Medium.k` needs `Medium` redeclared to a complete package.
            if let Some(d) = self.lib.def(class)?
                && d.partial
            {
                let cname = self.lib.entry(class).full_name.clone();
                return Err(Diagnostic::error(
                    DiagnosticKind::UnresolvedName,
                    r.parts[k - 1].ident.span,
                    format!("`{cname}` is partial: `{pname}` cannot be looked up in it"),
                )
                .with_label("lookup inside a partial class (MLS 5.3.2)")
                .with_hint("redeclare it to a class that completes it, or name that class"));
            }
            if last {
                let cname = self.lib.entry(class).full_name.clone();
                match cname.as_str() {
                    "StateSelect" => {
                        let v = ["never", "avoid", "default", "prefer", "always"]
                            .iter()
                            .position(|x| x == pname);
                        if let Some(i) = v {
                            return Ok(Some(Value::scalar(
                                ScalarType::Integer,
                                self.arena.constant(i as f64 + 1.0),
                            )));
                        }
                    }
                    "AssertionLevel" => {
                        let v = ["error", "warning"].iter().position(|x| x == pname);
                        if let Some(i) = v {
                            return Ok(Some(Value::scalar(
                                ScalarType::Integer,
                                self.arena.constant(i as f64 + 1.0),
                            )));
                        }
                    }
                    _ => {}
                }
                if let Some(def) = self.lib.def(class)?
                    && let ast::ClassBody::Enumeration(lits) = &def.body
                {
                    if let Some(i) = lits.iter().position(|l| l.name == *pname) {
                        return Ok(Some(Value::scalar(
                            ScalarType::Integer,
                            self.arena.constant(i as f64 + 1.0),
                        )));
                    }
                    return Err(Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        part.ident.span,
                        format!("enumeration `{cname}` has no literal `{pname}`"),
                    ));
                }
                if let Some(v) = self.package_constant(class, pname, part.ident.span)? {
                    self.check_constant_from_outside(class, pname, part.ident.span)?;
                    return self
                        .apply_value_subscripts(v, &part.subscripts, ctx, pname)
                        .map(Some);
                }
                return Err(Diagnostic::error(
                    DiagnosticKind::UnresolvedName,
                    part.ident.span,
                    format!("`{cname}` has no constant `{pname}`"),
                ));
            }
            class = match self.lib.member_class(class, pname)? {
                Some(c) => c,
                None => {
                    let cname = self.lib.entry(class).full_name.clone();
                    return Err(Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        part.ident.span,
                        format!("`{cname}` has no class `{pname}`"),
                    ));
                }
            };
        }
        Ok(None)
    }

    /// A constant that an import of `class` binds to `name`: `import
    /// Modelica.Constants.pi;`, `import g = P.g;`, `import P.*;` or
    /// `import P.{g, h};` (MLS 13.2.2). Class imports are the library's.
    pub(super) fn imported_constant(
        &mut self,
        class: ast_class::ClassId,
        name: &str,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        let Some(def) = self.lib.def(class)? else {
            return Ok(None);
        };
        let ast::ClassBody::Long(comp) = &def.body else {
            return Ok(None);
        };
        for e in &comp.elements {
            let ast::Element::Import(imp) = e else {
                continue;
            };
            // The package and the constant's name in it.
            let (package, constant) = match imp {
                ast::Import::Named { alias, target } if alias.name == name => {
                    let Some((last, prefix)) = target.parts.split_last() else {
                        continue;
                    };
                    if prefix.is_empty() {
                        continue;
                    }
                    let package = ast::Name {
                        parts: prefix.to_vec(),
                        global: false,
                        span: target.span,
                    };
                    (package, last.name.clone())
                }
                ast::Import::Wildcard { package } => (package.clone(), name.to_string()),
                ast::Import::List { package, names } if names.iter().any(|n| n.name == name) => {
                    (package.clone(), name.to_string())
                }
                _ => continue,
            };
            // An import that names no class here binds a class or nothing:
            // the library reports it where it is used as one.
            let Ok(p) = self.lib.lookup(None, &package) else {
                continue;
            };
            if let Some(v) = self.package_constant(p, &constant, span)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// The value of constant `name` declared in class `class` (a package or
    /// an enclosing model), evaluated in that class's scope.
    pub(super) fn package_constant(
        &mut self,
        class: ast_class::ClassId,
        name: &str,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        // Kept as numbers and interned into the arena of the moment: a
        // function body is compiled in its own arena, where the ids of the
        // model's would be other nodes (or none: a panic).
        if let Some(c) = self.package_constants.get(&(class, name.to_string())) {
            let c = c.clone();
            return Ok(Some(self.constant_value(&c)));
        }
        if self.lib.builtin(class).is_some() {
            return Ok(None);
        }
        let Some(def) = self.lib.def(class)? else {
            return Ok(None);
        };
        // `package P2 = P(k = 5)`: P's constants under P2's modifier.
        let (target, modifier) = match def.body {
            ast::ClassBody::Long(_) => (class, Default::default()),
            ast::ClassBody::Short(_) => {
                let r = self.resolve_short(class, Default::default(), None)?;
                (r.class, r.modifier)
            }
            ast::ClassBody::Enumeration(_) => return Ok(None),
        };
        if self.lib.builtin(target).is_some()
            || !matches!(
                self.lib
                    .def(target)?
                    .map(|d| matches!(d.body, ast::ClassBody::Long(_))),
                Some(true)
            )
        {
            return Ok(None);
        }
        let contents = self.contents(target, &modifier, None, 0)?;
        let Some(pc) = contents
            .components
            .into_iter()
            .find(|c| c.decl.name.name == name)
        else {
            return Ok(None);
        };
        if !matches!(
            pc.decl.prefix.variability,
            ast::VariabilityPrefix::Constant | ast::VariabilityPrefix::Parameter
        ) {
            return Ok(None);
        }
        if pc.decl.prefix.variability == ast::VariabilityPrefix::Parameter {
            self.class_parameters.insert((class, name.to_string()));
        }
        // A modifier from an `extends` (`package P extends Q(k = 4)`) wins
        // over the declaration's binding and is evaluated where it is
        // written. The declaration's binding sees the class asked about
        // first (`k2 = 2*k` in Q, asked of P, reads P's k = 4), then the
        // scope it is written in (Q's own imports and packages).
        let (b, scope) = match &pc.outer.binding {
            Some(outer) => (outer.expr.clone(), outer.scope),
            None => {
                let Some(b) = pc
                    .decl
                    .modification
                    .as_ref()
                    .and_then(|m| m.binding.as_ref())
                else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Evaluation,
                        span,
                        format!("constant `{name}` has no value"),
                    ));
                };
                (std::rc::Rc::new(b.clone()), pc.decl_scope)
            }
        };
        let own = Scope {
            inst: None,
            class: Some(class),
        };
        let v = match self.eval_expr(&b, &Ctx::model(own)) {
            Ok(v) => v,
            Err(_) if scope != own => self.eval_expr(&b, &Ctx::model(scope))?,
            Err(e) => return Err(e),
        };
        // Fold to numbers: package constants are compile-time values.
        let numbers = v
            .elems
            .iter()
            .map(|&e| self.const_value(e, b.span))
            .collect::<Result<Vec<f64>, Diagnostic>>()?;
        let c = PackageConstant {
            ty: v.ty,
            dims: v.dims,
            numbers,
        };
        let v = self.constant_value(&c);
        self.package_constants.insert((class, name.to_string()), c);
        Ok(Some(v))
    }

    /// A package constant's value, its numbers interned into the arena of
    /// the moment.
    fn constant_value(&mut self, c: &PackageConstant) -> Value {
        Value {
            ty: c.ty,
            dims: c.dims.clone(),
            elems: c.numbers.iter().map(|&x| self.arena.constant(x)).collect(),
        }
    }

    // ------------------------------------------------------------ calls
}
