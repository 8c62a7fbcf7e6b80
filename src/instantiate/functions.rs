//! User functions: specialization to the argument sizes of a call and
//! translation of the algorithm section into [`flat::FunctionStatement`]s over local
//! slots, in the function's own expression arena.

use super::eval::{Ctx, Local, Value};
use super::library::ClassId;
use super::modifier::Scope;
use super::{Flattener, Modifier};
use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::ScalarType;
use crate::flat::{self, ExprArena, ExprId, Node};
use crate::syntax::ast::{self, StatementKind};
use std::collections::HashMap;
use std::rc::Rc;

/// The shape and element type of each output of a specialized function.
type OutputShapes = Vec<(Vec<usize>, ScalarType)>;

pub(super) struct FnInput {
    pub name: String,
    pub default: Option<ast::Expr>,
}

pub(super) struct Signature {
    pub inputs: Vec<FnInput>,
}

/// State while translating one function body.
struct FnBuilder {
    slots: Vec<String>,
    locals: HashMap<String, Local>,
}

impl<'l> Flattener<'l> {
    pub(super) fn function_signature(
        &mut self,
        class: ClassId,
        _span: Span,
    ) -> Result<Signature, Diagnostic> {
        let contents = self.contents(class, &Modifier::default(), None, 0)?;
        let inputs = contents
            .components
            .iter()
            .filter(|c| c.decl.prefix.causality == ast::CausalityPrefix::Input)
            .map(|c| FnInput {
                name: c.decl.name.name.clone(),
                default: c.decl.modification.as_ref().and_then(|m| m.binding.clone()),
            })
            .collect();
        Ok(Signature { inputs })
    }

    /// Compiles function `class` for arguments of the given sizes; returns its
    /// index and the sizes and types of its outputs.
    pub(super) fn compile_function(
        &mut self,
        class: ClassId,
        arg_shapes: &[Vec<usize>],
        span: Span,
    ) -> Result<(u32, OutputShapes), Diagnostic> {
        let full = self.lib.entry(class).full_name.clone();
        // (The class id too: a user's class may share the full name of the
        // embedded library's, which the compiler calls itself.)
        let key = format!("{full}#{class}{arg_shapes:?}");
        if let Some((id, _)) = self.function_index.get(&key) {
            let id = *id;
            return Ok((id, self.function_outputs(id)));
        }
        if self.functions_in_progress.contains(&key) {
            return Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
                span,
                format!("function `{full}` calls itself; recursive functions are not supported"),
            ));
        }
        if let Some(def) = self.lib.def(class)?
            && def.partial
        {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("`{full}` is a partial function and cannot be called"),
            )
            .with_label("call of a partial function (MLS 12.2)")
            .with_hint("call a function that extends it and gives it an algorithm"));
        }
        self.functions_in_progress.push(key.clone());
        let saved = std::mem::replace(&mut self.arena, ExprArena::new());
        // Cached binding values and checked call sites hold ids of the
        // arena they were made in.
        let saved_bindings = std::mem::take(&mut self.array_binding_values);
        let saved_checked = std::mem::take(&mut self.variability_checked_calls);
        let r = self.compile_function_body(class, &full, arg_shapes, span);
        let arena = std::mem::replace(&mut self.arena, saved);
        self.array_binding_values = saved_bindings;
        self.variability_checked_calls = saved_checked;
        self.functions_in_progress.pop();
        let (mut f, outs) = r?;
        f.arena = arena;
        let id = self.functions.len() as u32;
        self.functions.push(f);
        self.function_index.insert(key, (id, arg_shapes.to_vec()));
        self.function_out_types.insert(id, outs.clone());
        self.functions[id as usize].derivative =
            self.declared_derivative(class, arg_shapes, &outs, span)?;
        Ok((id, outs))
    }

    /// The slots of the variables `class` names in its
    /// `annotation(__rmoc_warmStart = {"a", "b"})` (or one name as a
    /// string): protected variables without a binding, which each call site
    /// of the model keeps between calls ([`flat::Function::warm_start`]).
    fn warm_start_variables(
        &mut self,
        class: ClassId,
        b: &FnBuilder,
        init: &[(u32, ExprId)],
        outputs: &[std::ops::Range<u32>],
    ) -> Result<Vec<std::ops::Range<u32>>, Diagnostic> {
        let Some(def) = self.lib.def(class)? else {
            return Ok(Vec::new());
        };
        let ast::ClassBody::Long(comp) = &def.body else {
            return Ok(Vec::new());
        };
        let mut ranges = Vec::new();
        for (path, md) in annotation_entries(comp) {
            if path != "__rmoc_warmStart" {
                continue;
            }
            let names: Vec<&ast::Expr> = match md.binding.as_ref().map(|e| (e, &e.kind)) {
                Some((_, ast::ExprKind::Array(items))) => items.iter().collect(),
                Some((e, ast::ExprKind::String(_))) => vec![e],
                _ => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Modifier,
                        md.span,
                        "`__rmoc_warmStart` names the function's warm-start variables",
                    )
                    .with_hint("write `annotation(__rmoc_warmStart = {\"hint\"})`"));
                }
            };
            for e in names {
                let ast::ExprKind::String(name) = &e.kind else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Modifier,
                        e.span,
                        "`__rmoc_warmStart` takes the variables' names as strings",
                    )
                    .with_hint("write `annotation(__rmoc_warmStart = {\"hint\"})`"));
                };
                let Some(local) = b.locals.get(name.as_str()) else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        e.span,
                        format!(
                            "`__rmoc_warmStart` names `{name}`, which is not a variable of the function"
                        ),
                    )
                    .with_hint("declare it in the function's protected section, as a variable (not a constant or parameter)"));
                };
                let n: usize = local.dims.iter().product();
                let range = local.base..local.base + n as u32;
                if ranges.contains(&range) {
                    continue;
                }
                let is_output = outputs.iter().any(|o| o.contains(&range.start));
                if local.input || is_output {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        e.span,
                        format!("`{name}` is an input or an output; a warm-start variable is protected"),
                    )
                    .with_hint("declare a protected variable for the warm start and copy it where it is needed"));
                }
                if init.iter().any(|&(slot, _)| range.contains(&slot)) {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Modifier,
                        e.span,
                        format!("the warm-start variable `{name}` has a binding; it starts at zero at a call site's first call and then keeps what the last call left"),
                    )
                    .with_hint("remove the binding (treat zero as \"no warm start yet\")"));
                }
                ranges.push(range);
            }
        }
        Ok(ranges)
    }

    /// The derivative function `class` declares (`annotation(derivative(
    /// noDerivative = x, zeroDerivative = k) = f_der)`, MLS 12.7.1),
    /// compiled for the shapes it is called with. Only first derivatives
    /// are taken (`order = 1`, the default): a higher-order declaration
    /// holds for time derivatives only, and the same call rules also build
    /// partial and directional derivatives for the Jacobians. `None` when
    /// the class declares none, or one that does not fit (inputs, outputs,
    /// or a derivative function that does not compile): the body is then
    /// differentiated.
    fn declared_derivative(
        &mut self,
        class: ClassId,
        arg_shapes: &[Vec<usize>],
        out_shapes: &OutputShapes,
        span: Span,
    ) -> Result<Option<flat::DeclaredDerivative>, Diagnostic> {
        let Some(def) = self.lib.def(class)? else {
            return Ok(None);
        };
        let ast::ClassBody::Long(comp) = &def.body else {
            return Ok(None);
        };
        // The first-order `derivative` annotation that names a function:
        // its target, the inputs without a derivative argument, and those
        // whose derivative it assumes zero.
        let mut found = None;
        for (path, md) in annotation_entries(comp) {
            let Some(ast::Expr {
                kind: ast::ExprKind::Ref(target),
                ..
            }) = &md.binding
            else {
                continue;
            };
            if path != "derivative" {
                continue;
            }
            let (mut no, mut zero, mut order) = (Vec::new(), Vec::new(), 1);
            for x in md.class_mod.iter().flat_map(|c| &c.args) {
                if let ast::ModArg::Modify {
                    path,
                    modification: Some(v),
                    ..
                } = x
                    && let Some(b) = &v.binding
                {
                    match (path.dotted().as_str(), &b.kind) {
                        ("noDerivative", ast::ExprKind::Ref(r)) => no.push(r.dotted()),
                        ("zeroDerivative", ast::ExprKind::Ref(r)) => zero.push(r.dotted()),
                        ("order", ast::ExprKind::Integer(k)) => order = *k,
                        _ => {}
                    }
                }
            }
            // `order = 2` on a first derivative f_der names the second
            // derivative of the original function: the derivative of f_der
            // whose extra inputs are the derivatives of f_der's own
            // derivative inputs (its last ones; the MSL's Move:
            // position_der(q, d, d_der) -> position_der2(q, d, d_der,
            // der(d_der))). An order-1 declaration comes first.
            if order == 1 {
                found = Some((target.clone(), no, zero, 1));
                break;
            }
            if order == 2 && found.is_none() {
                found = Some((target.clone(), no, zero, 2));
            }
        }
        let Some((target, no, zero, order)) = found else {
            return Ok(None);
        };
        let Some(name) = target.as_name() else {
            return Ok(None);
        };
        let parent = self.lib.entry(class).parent;
        let Ok(der_class) = self.lib.lookup(parent, &name) else {
            return Ok(None);
        };
        let inputs: Vec<String> = self
            .function_signature(class, span)?
            .inputs
            .into_iter()
            .map(|i| i.name)
            .collect();
        let Ok(der_signature) = self.function_signature(der_class, span) else {
            return Ok(None);
        };
        let mut passed: Vec<bool> = inputs
            .iter()
            .map(|n| !no.contains(n) && !zero.contains(n))
            .collect();
        let extra = der_signature.inputs.len().saturating_sub(inputs.len());
        if order == 2 {
            // Only the last `extra` of those are derivative inputs.
            let mut keep = extra;
            for p in passed.iter_mut().rev() {
                if *p {
                    if keep == 0 {
                        *p = false;
                    } else {
                        keep -= 1;
                    }
                }
            }
        }
        if passed.iter().filter(|&&p| p).count() != extra || arg_shapes.len() != inputs.len() {
            return Ok(None);
        }
        let mut der_shapes = arg_shapes.to_vec();
        der_shapes.extend(
            (arg_shapes.iter().zip(&passed))
                .filter(|(_, p)| **p)
                .map(|(s, _)| s.clone()),
        );
        // f_der must return what f returns, output for output.
        let Ok((function, der_outs)) = self.compile_function(der_class, &der_shapes, span) else {
            return Ok(None);
        };
        let shapes = |o: &OutputShapes| o.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        if shapes(&der_outs) != shapes(out_shapes) {
            return Ok(None);
        }
        // Per-input flags, one per scalarized argument.
        let per_scalar = |flags: &[bool]| -> Vec<bool> {
            (arg_shapes.iter().zip(flags))
                .flat_map(|(s, &f)| std::iter::repeat_n(f, s.iter().product::<usize>()))
                .collect()
        };
        let zeroed: Vec<bool> = inputs.iter().map(|n| zero.contains(n)).collect();
        Ok(Some(flat::DeclaredDerivative {
            function,
            differentiated: per_scalar(&passed),
            assumed_zero: per_scalar(&zeroed),
        }))
    }

    fn function_outputs(&self, id: u32) -> Vec<(Vec<usize>, ScalarType)> {
        self.function_out_types
            .get(&id)
            .cloned()
            .unwrap_or_default()
    }

    fn compile_function_body(
        &mut self,
        class: ClassId,
        full: &str,
        arg_shapes: &[Vec<usize>],
        span: Span,
    ) -> Result<(flat::Function, OutputShapes), Diagnostic> {
        let contents = self.contents(class, &Modifier::default(), None, 0)?;
        if let Some(def) = self.lib.def(class)? {
            self.check_function_shape(&def, &contents)?;
        }
        if let Some((eq, _, _)) = contents.equations.first() {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                eq.span,
                "a function has an algorithm section, not equations",
            ));
        }
        let mut b = FnBuilder {
            slots: Vec::new(),
            locals: HashMap::new(),
        };
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        let mut out_types = Vec::new();
        let mut init: Vec<(u32, ExprId)> = Vec::new();
        let scope = Scope {
            inst: None,
            class: Some(class),
        };
        // Inputs first (their sizes come from the call), then outputs and
        // protected variables (sizes may use `size(input, k)`).
        let mut k = 0;
        let comps: Vec<_> = contents.components.iter().collect();
        for pass in 0..2 {
            for pc in &comps {
                let d = &pc.decl;
                let is_input = d.prefix.causality == ast::CausalityPrefix::Input;
                if (pass == 0) != is_input {
                    continue;
                }
                if matches!(
                    d.prefix.variability,
                    ast::VariabilityPrefix::Constant | ast::VariabilityPrefix::Parameter
                ) {
                    continue;
                }
                let tclass = self.lib.lookup(pc.type_scope, &d.type_name)?;
                let resolved = self.resolve_short(tclass, Modifier::default(), None)?;
                // A variable of an enumeration type is an Integer, as a
                // component of one is.
                let enumeration = self.lib.builtin(resolved.class).is_none()
                    && matches!(
                        self.lib.def(resolved.class)?.as_ref().map(|d| &d.body),
                        Some(ast::ClassBody::Enumeration(_))
                    );
                let ty = match self
                    .lib
                    .builtin(resolved.class)
                    .and_then(|b| b.scalar_type())
                {
                    Some(t) => t,
                    _ if enumeration => ScalarType::Integer,
                    _ => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Type,
                            d.type_name.span,
                            format!(
                                "function variables must be Real, Integer or Boolean (`{}`)",
                                d.type_name.dotted()
                            ),
                        ));
                    }
                };
                let decl_dims: Vec<&ast::Subscript> = d
                    .dims
                    .iter()
                    .chain(d.type_dims.iter())
                    .chain(resolved.dims.iter())
                    .collect();
                let dims = if is_input {
                    let shape = arg_shapes.get(k).cloned().unwrap_or_default();
                    k += 1;
                    if shape.len() != decl_dims.len() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            span,
                            format!(
                                "argument `{}` of `{full}` has {} dimension(s), the input is declared with {}",
                                d.name.name,
                                shape.len(),
                                decl_dims.len()
                            ),
                        ));
                    }
                    for (s, &n) in decl_dims.iter().zip(&shape) {
                        if let ast::Subscript::Index(e) = s {
                            let ctx = self.fn_ctx(scope, &b);
                            let want = self.eval_const_in(e, &ctx)?;
                            if want as usize != n {
                                return Err(Diagnostic::error(
                                    DiagnosticKind::Shape,
                                    span,
                                    format!(
                                        "argument `{}` of `{full}` has size {n}, the input is declared with size {want}",
                                        d.name.name
                                    ),
                                ));
                            }
                        }
                    }
                    shape
                } else {
                    let mut dims = Vec::new();
                    for s in &decl_dims {
                        match s {
                            ast::Subscript::All(sp) => {
                                return Err(Diagnostic::error(
                                    DiagnosticKind::Shape,
                                    *sp,
                                    "the size of a function output or local must be given (use size(input, k))",
                                ));
                            }
                            ast::Subscript::Index(e) => {
                                let ctx = self.fn_ctx(scope, &b);
                                dims.push(self.eval_const_in(e, &ctx)? as usize);
                            }
                        }
                    }
                    dims
                };
                let n: usize = dims.iter().product();
                let base = b.slots.len() as u32;
                for i in 0..n {
                    if n == 1 && dims.is_empty() {
                        b.slots.push(d.name.name.clone());
                    } else {
                        let idx = super::unflatten_index(i, &dims);
                        let s: Vec<String> = idx.iter().map(|x| x.to_string()).collect();
                        b.slots.push(format!("{}[{}]", d.name.name, s.join(",")));
                    }
                }
                b.locals.insert(
                    d.name.name.clone(),
                    Local {
                        base,
                        dims: dims.clone(),
                        ty,
                        input: is_input,
                    },
                );
                let range = base..base + n as u32;
                match d.prefix.causality {
                    ast::CausalityPrefix::Input => inputs.push(range),
                    ast::CausalityPrefix::Output => {
                        outputs.push(range);
                        out_types.push((dims.clone(), ty));
                    }
                    ast::CausalityPrefix::None => {}
                }
                if !is_input
                    && let Some(bind) = d.modification.as_ref().and_then(|m| m.binding.as_ref())
                {
                    let ctx = self.fn_ctx(scope, &b);
                    let v = self.eval_expr(bind, &ctx)?;
                    if v.dims != dims {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            bind.span,
                            format!("`{}` is given a value of the wrong size", d.name.name),
                        ));
                    }
                    for (i, &e) in v.elems.iter().enumerate() {
                        init.push((base + i as u32, e));
                    }
                }
            }
        }
        let mut body = Vec::new();
        for (alg, _) in &contents.algorithms {
            for s in &alg.statements {
                let ctx = self.fn_ctx(scope, &b);
                self.fn_statement(s, &ctx, &mut b, &mut body)?;
            }
        }
        // A function without outputs is called for its asserts (`check(x);`
        // as an equation): it gets one hidden output, 1 once the body has
        // run, that the caller's assert reads (`call_compiled`).
        if outputs.is_empty() {
            let slot = b.slots.len() as u32;
            b.slots.push("$done".to_string());
            outputs.push(slot..slot + 1);
            init.push((slot, self.arena.constant(1.0)));
        }
        let def_span = self.lib.def(class)?.map(|d| d.span).unwrap_or(span);
        let warm_start = self.warm_start_variables(class, &b, &init, &outputs)?;
        Ok((
            flat::Function {
                name: full.to_string(),
                slots: b.slots,
                inputs,
                outputs,
                arena: ExprArena::new(),
                init,
                body,
                span: def_span,
                derivative: None,
                warm_start,
                eval_orders: Default::default(),
            },
            out_types,
        ))
    }

    fn fn_ctx(&self, scope: Scope, b: &FnBuilder) -> Ctx {
        Ctx {
            scope,
            loops: Default::default(),
            no_event: true,
            locals: Some(Rc::new(b.locals.clone())),
            end: None,
        }
    }

    fn eval_const_in(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<f64, Diagnostic> {
        let v = self.eval_expr(e, ctx)?;
        if !v.is_scalar() {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                e.span,
                "expected a scalar",
            ));
        }
        match self.arena.as_const(v.elems[0]) {
            Some(c) => Ok(c),
            None => Err(Diagnostic::error(
                DiagnosticKind::Evaluation,
                e.span,
                "this size must be known when the function is compiled",
            )),
        }
    }

    fn assign_target(
        &mut self,
        target: &ast::ComponentRef,
        ctx: &Ctx,
        b: &FnBuilder,
    ) -> Result<Target, Diagnostic> {
        let name = &target.parts[0].ident.name;
        let Some(l) = b.locals.get(name).cloned() else {
            return Err(Diagnostic::error(
                DiagnosticKind::UnresolvedName,
                target.span,
                format!("unknown variable `{name}`"),
            )
            .with_hint("declare it as an output or in the protected section of the function"));
        };
        if target.parts.len() > 1 {
            return Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
                target.span,
                "records are not supported in functions",
            ));
        }
        if l.input {
            return Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                target.span,
                format!("`{name}` is an input and cannot be assigned"),
            ));
        }
        let r = ast::Expr {
            kind: ast::ExprKind::Ref(target.clone()),
            span: target.span,
        };
        let v = self.eval_expr(&r, ctx)?;
        // Each element is a slot (`Var`) or a run-time element (`Elem`).
        let mut slots = Vec::new();
        for &e in &v.elems {
            match self.arena.node(e) {
                Node::Var(s) => slots.push(TargetSlot::Slot(s)),
                Node::Elem { base, len, index } => {
                    slots.push(TargetSlot::Elem { base, len, index })
                }
                _ => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        target.span,
                        "cannot assign to this expression",
                    ));
                }
            }
        }
        Ok(Target {
            dims: v.dims,
            slots,
        })
    }

    fn fn_statement(
        &mut self,
        s: &ast::Statement,
        ctx: &Ctx,
        b: &mut FnBuilder,
        out: &mut Vec<flat::FunctionStatement>,
    ) -> Result<(), Diagnostic> {
        match &s.kind {
            StatementKind::Assign { target, value } => {
                let t = self.assign_target(target, ctx, b)?;
                let v = self.eval_expr(value, ctx)?;
                self.emit_assign(&t, &v, s.span, b, out)
            }
            StatementKind::TupleAssign {
                targets,
                func,
                args,
            } => {
                let outs = self.call_user_function(func, args, s.span, ctx)?;
                if targets.len() > outs.len() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        s.span,
                        format!("`{}` has only {} output(s)", func.dotted(), outs.len()),
                    ));
                }
                for (t, v) in targets.iter().zip(&outs) {
                    let Some(t) = t else { continue };
                    let ast::ExprKind::Ref(r) = &t.kind else {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Restriction,
                            t.span,
                            "expected a variable",
                        ));
                    };
                    let tg = self.assign_target(r, ctx, b)?;
                    self.emit_assign(&tg, v, t.span, b, out)?;
                }
                Ok(())
            }
            StatementKind::Call { func, args } => match func.dotted().as_str() {
                "assert" => {
                    let mut pos = args.iter().map(|a| match a {
                        ast::Arg::Positional(e) => e,
                        ast::Arg::Named(_, e) => e,
                    });
                    let (Some(c), Some(m)) = (pos.next(), pos.next()) else {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            s.span,
                            "`assert` takes a condition and a message",
                        ));
                    };
                    let cv = self.eval_expr(c, ctx)?;
                    let message = self
                        .eval_string(m, ctx)
                        .unwrap_or_else(|_| "assertion failed".into());
                    out.push(flat::FunctionStatement::Assert {
                        condition: cv.elems[0],
                        message,
                        span: s.span,
                    });
                    Ok(())
                }
                "terminate" | "reinit" => Err(Diagnostic::error(
                    DiagnosticKind::Restriction,
                    s.span,
                    format!("`{}` is not allowed in a function", func.dotted()),
                )),
                _ => {
                    // A call whose outputs are unused has no effect (functions
                    // are pure), but for the asserts of a function without
                    // outputs: its hidden output is read by an assert here.
                    self.effect_call = None;
                    let outs = self.call_user_function(func, args, s.span, ctx)?;
                    if let Some(condition) = self.effect_call.take().filter(|_| outs.is_empty()) {
                        out.push(flat::FunctionStatement::Assert {
                            condition,
                            message: format!("`{}` failed", func.dotted()),
                            span: s.span,
                        });
                    }
                    Ok(())
                }
            },
            StatementKind::If { branches, else_ } => {
                let mut arms = Vec::new();
                for (c, body) in branches {
                    let cv = self.eval_expr(c, ctx)?;
                    if cv.ty != ScalarType::Boolean || !cv.is_scalar() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Type,
                            c.span,
                            "the condition of `if` must be a Boolean scalar",
                        ));
                    }
                    let mut stmts = Vec::new();
                    for x in body {
                        self.fn_statement(x, ctx, b, &mut stmts)?;
                    }
                    arms.push((cv.elems[0], stmts));
                }
                let mut e = Vec::new();
                for x in else_ {
                    self.fn_statement(x, ctx, b, &mut e)?;
                }
                out.push(flat::FunctionStatement::If {
                    branches: arms,
                    else_: e,
                });
                Ok(())
            }
            StatementKind::While { cond, body } => {
                let cv = self.eval_expr(cond, ctx)?;
                if cv.ty != ScalarType::Boolean || !cv.is_scalar() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        cond.span,
                        "the condition of `while` must be a Boolean scalar",
                    ));
                }
                let mut stmts = Vec::new();
                for x in body {
                    self.fn_statement(x, ctx, b, &mut stmts)?;
                }
                out.push(flat::FunctionStatement::While {
                    cond: cv.elems[0],
                    body: stmts,
                    span: cond.span,
                });
                Ok(())
            }
            StatementKind::For { indices, body } => self.fn_for(indices, body, ctx, b, out),
            StatementKind::Break => {
                out.push(flat::FunctionStatement::Break);
                Ok(())
            }
            StatementKind::Return => {
                out.push(flat::FunctionStatement::Return);
                Ok(())
            }
            StatementKind::When { .. } => Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                s.span,
                "`when` is not allowed in a function",
            )),
        }
    }

    fn fn_for(
        &mut self,
        indices: &[ast::ForIndex],
        body: &[ast::Statement],
        ctx: &Ctx,
        b: &mut FnBuilder,
        out: &mut Vec<flat::FunctionStatement>,
    ) -> Result<(), Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            for x in body {
                self.fn_statement(x, ctx, b, out)?;
            }
            return Ok(());
        };
        let Some(range) = &first.range else {
            return Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
                first.name.span,
                "a for-loop needs `in range`",
            ));
        };
        // `a:b` or `a:s:b` becomes a run-time loop over a new Integer slot;
        // any other vector is unrolled.
        if let ast::ExprKind::Range { start, step, stop } = &range.kind {
            let scalar = |s: &mut Self, e: &ast::Expr| -> Result<ExprId, Diagnostic> {
                let v = s.eval_expr(e, ctx)?;
                if !v.is_scalar() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Shape,
                        e.span,
                        "a range bound must be a scalar",
                    ));
                }
                Ok(v.elems[0])
            };
            let a = scalar(self, start)?;
            let st = match step {
                Some(x) => scalar(self, x)?,
                None => self.arena.one(),
            };
            let z = scalar(self, stop)?;
            let slot = b.slots.len() as u32;
            b.slots.push(first.name.name.clone());
            let saved = b.locals.insert(
                first.name.name.clone(),
                Local {
                    base: slot,
                    dims: vec![],
                    ty: ScalarType::Integer,
                    input: true,
                },
            );
            let mut inner_ctx = ctx.clone();
            inner_ctx.locals = Some(Rc::new(b.locals.clone()));
            let mut stmts = Vec::new();
            let r = self.fn_for(rest, body, &inner_ctx, b, &mut stmts);
            match saved {
                Some(l) => {
                    b.locals.insert(first.name.name.clone(), l);
                }
                None => {
                    b.locals.remove(&first.name.name);
                }
            }
            r?;
            out.push(flat::FunctionStatement::For {
                slot,
                start: a,
                step: st,
                stop: z,
                body: stmts,
            });
            return Ok(());
        }
        let v = self.eval_expr(range, ctx)?;
        if v.dims.len() != 1 {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                range.span,
                "the range of a for-loop must be a vector",
            ));
        }
        for &x in &v.elems {
            let c = ctx.with_loop(&first.name.name, Value::scalar(v.ty, x));
            self.fn_for(rest, body, &c, b, out)?;
        }
        Ok(())
    }

    fn emit_assign(
        &mut self,
        t: &Target,
        v: &Value,
        span: Span,
        b: &mut FnBuilder,
        out: &mut Vec<flat::FunctionStatement>,
    ) -> Result<(), Diagnostic> {
        if t.dims != v.dims {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                span,
                format!(
                    "dimension mismatch: the target has size {}, the value has size {}",
                    super::eval::shape_text(&t.dims),
                    super::eval::shape_text(&v.dims)
                ),
            ));
        }
        // When an array is assigned from itself (`x := x[end:-1:1]`), go through
        // temporaries so no element is read after it was overwritten.
        let needs_temp = t.slots.len() > 1 && {
            let targets: Vec<u32> = t
                .slots
                .iter()
                .filter_map(|s| match s {
                    TargetSlot::Slot(x) => Some(*x),
                    _ => None,
                })
                .collect();
            v.elems
                .iter()
                .any(|&e| self.arena.vars_of(e).iter().any(|x| targets.contains(x)))
        };
        let mut values = v.elems.clone();
        if needs_temp {
            for val in values.iter_mut() {
                let tmp = b.slots.len() as u32;
                b.slots.push(format!("$tmp{tmp}"));
                out.push(flat::FunctionStatement::Assign {
                    slot: tmp,
                    value: *val,
                });
                *val = self.arena.var(tmp);
            }
        }
        for (slot, &value) in t.slots.iter().zip(&values) {
            match slot {
                TargetSlot::Slot(s) => {
                    out.push(flat::FunctionStatement::Assign { slot: *s, value })
                }
                TargetSlot::Elem { base, len, index } => {
                    out.push(flat::FunctionStatement::AssignElem {
                        base: *base,
                        len: *len,
                        index: *index,
                        value,
                    })
                }
            }
        }
        Ok(())
    }
}

struct Target {
    dims: Vec<usize>,
    slots: Vec<TargetSlot>,
}

enum TargetSlot {
    Slot(u32),
    Elem { base: u32, len: u32, index: ExprId },
}

/// The entries `name = value` (or `name(...) = value`) of a class's
/// annotations, by their dotted names.
fn annotation_entries(
    comp: &ast::Composition,
) -> impl Iterator<Item = (String, &ast::Modification)> {
    comp.annotations
        .iter()
        .flat_map(|m| &m.args)
        .filter_map(|a| match a {
            ast::ModArg::Modify {
                path,
                modification: Some(md),
                ..
            } => Some((path.dotted(), md)),
            _ => None,
        })
}
