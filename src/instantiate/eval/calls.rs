//! Calls: a function name resolved to a builtin or a user function (compiled
//! for the argument shapes, `external "builtin"` ones mapped to builtins),
//! its arguments matched by position and name.

use super::*;
use crate::instantiate::library::ClassId;

impl Flattener<'_> {
    pub(super) fn eval_call(
        &mut self,
        func: &ComponentRef,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let name = func.dotted();
        if func.parts.len() == 1 && BUILTINS.contains(&name.as_str()) {
            return self.eval_builtin(&name, args, span, ctx);
        }
        if name == "reinit" || name == "assert" || name == "terminate" {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("`{name}` is an equation or statement, not a function with a value"),
            ));
        }
        let outs = self.call_user_function(func, args, span, ctx)?;
        outs.into_iter().next().ok_or_else(|| {
            Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("function `{name}` has no output"),
            )
        })
    }

    /// `b.f1(x)`: function `f1` of the class of component `b` (a scalar
    /// component of this instance; MLS 5.3.2), with the class
    /// redeclarations of that instance.
    fn function_through_component(
        &mut self,
        func: &ComponentRef,
        ctx: &Ctx,
    ) -> Result<Option<ast_class::ClassId>, Diagnostic> {
        let Some((last, prefix)) = func.parts.split_last() else {
            return Ok(None);
        };
        if prefix.is_empty() || func.global {
            return Ok(None);
        }
        let Some(inst) = ctx.scope.inst else {
            return Ok(None);
        };
        if self.component_node(inst, &prefix[0].ident.name)?.is_none() {
            return Ok(None);
        }
        let owner = ComponentRef {
            parts: prefix.to_vec(),
            ..func.clone()
        };
        let Some(nodes) = self.resolve_nodes(&owner, ctx)? else {
            return Ok(None);
        };
        let [CompNode::Inst(i)] = &*nodes.leaves else {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                func.span,
                format!(
                    "`{}` is not a scalar component: a function is called through one component",
                    owner.dotted()
                ),
            ));
        };
        let i = *i;
        if let Some(&c) = self.instances[i as usize]
            .class_overrides
            .get(&last.ident.name)
        {
            return Ok(Some(c));
        }
        let class = self.instances[i as usize].class;
        self.lib.member_class(class, &last.ident.name)
    }

    /// Calls a user function; returns every output's value.
    pub(in crate::instantiate) fn call_user_function(
        &mut self,
        func: &ComponentRef,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Vec<Value>, Diagnostic> {
        let Some(fname) = func.as_name() else {
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                func.span,
                "a function name cannot have subscripts",
            ));
        };
        let through_component = self.function_through_component(func, ctx)?;
        let class = match through_component
            .map_or_else(|| self.lib.lookup(ctx.scope.class, &fname), Ok)
        {
            Ok(c) => c,
            Err(_) => {
                let mut d = Diagnostic::error(
                    DiagnosticKind::UnresolvedName,
                    func.span,
                    format!("unknown function `{}`", fname.dotted()),
                )
                .with_label("no function of this name is visible here");
                if let Some(c) = crate::diag::closest(&fname.dotted(), BUILTINS.iter().copied()) {
                    d = d.with_hint(format!("did you mean the builtin `{c}`?"));
                }
                return Err(d);
            }
        };
        if let Some(v) = self.string_function(class, args, span, ctx)? {
            return Ok(vec![v]);
        }
        let def = self.lib.def(class)?;
        // `external "builtin" y = asin(u);` (the MSL's Modelica.Math): the
        // builtin of that name (MLS 12.9.1.3).
        if let Some(d) = &def
            && let ast::ClassBody::Long(comp) = &d.body
            && let Some(ext) = &comp.external
            && ext.language.as_deref() == Some("builtin")
        {
            let builtin = ext
                .function
                .as_ref()
                .map_or(d.name.name.as_str(), |f| f.name.as_str());
            if BUILTINS.contains(&builtin) {
                return Ok(vec![self.eval_builtin(builtin, args, span, ctx)?]);
            }
            if builtin == tables::READ_CSV {
                return Ok(vec![self.read_csv(args, span, ctx)?]);
            }
        }
        // The MSL's table functions (`external "C"` into
        // ModelicaStandardTables): native, on the table object's data.
        if let Some(d) = &def
            && let ast::ClassBody::Long(comp) = &d.body
            && let Some(ext) = &comp.external
            && let Some(f) = &ext.function
            && f.name.starts_with(msl_tables::PREFIX)
        {
            let ext = ext.clone();
            return self.msl_table_function(class, &ext, func, args, span, ctx);
        }
        match def.as_ref().map(|d| d.kind) {
            Some(ast::ClassKind::Function) => {}
            Some(ast::ClassKind::Record) => {
                return Err(Diagnostic::error(
                    DiagnosticKind::Unsupported,
                    span,
                    format!(
                        "record constructor `{}` is not supported yet",
                        fname.dotted()
                    ),
                ));
            }
            _ => {
                return Err(Diagnostic::error(
                    DiagnosticKind::Call,
                    func.span,
                    format!("`{}` is not a function", fname.dotted()),
                ));
            }
        }
        let sig = self.function_signature(class, span)?;
        let names: Vec<&str> = sig.inputs.iter().map(|x| x.name.as_str()).collect();
        let mut given: Vec<Option<Value>> = vec![None; sig.inputs.len()];
        for (i, e) in match_arguments(&names, args, &fname.dotted())? {
            given[i] = Some(self.eval_expr(e, ctx)?);
        }
        let mut values = Vec::new();
        for (i, g) in given.into_iter().enumerate() {
            match g {
                Some(v) => values.push(v),
                None => match &sig.inputs[i].default {
                    Some(d) => {
                        let c = Ctx::model(Scope {
                            inst: None,
                            class: Some(class),
                        });
                        values.push(self.eval_expr(d, &c)?);
                    }
                    None => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            span,
                            format!("`{}` needs input `{}`", fname.dotted(), sig.inputs[i].name),
                        ));
                    }
                },
            }
        }
        self.call_compiled(class, &values, span)
    }

    /// Calls function `class` (compiled for the shapes of `values`) on
    /// evaluated arguments; returns every output's value.
    pub(super) fn call_compiled(
        &mut self,
        class: ClassId,
        values: &[Value],
        span: Span,
    ) -> Result<Vec<Value>, Diagnostic> {
        let shapes: Vec<Vec<usize>> = values.iter().map(|v| v.dims.clone()).collect();
        let (fid, out_shapes) = self.compile_function(class, &shapes, span)?;
        let mut flat_args = Vec::new();
        for v in values {
            flat_args.extend_from_slice(&v.elems);
        }
        let call = self.arena.call_site(CallSite {
            func: fid,
            args: flat_args,
        });
        if out_shapes.is_empty() {
            // The hidden output of a function without outputs.
            self.effect_call = Some(self.arena.intern(Node::Call { call, output: 0 }));
        }
        let mut outs = Vec::new();
        let mut output = 0u32;
        for (dims, ty) in out_shapes {
            let n: usize = dims.iter().product();
            let elems = (0..n)
                .map(|_| {
                    let e = self.arena.intern(Node::Call { call, output });
                    output += 1;
                    e
                })
                .collect();
            outs.push(Value { ty, dims, elems });
        }
        Ok(outs)
    }
}

/// The inputs (by position among `inputs`) that the arguments of a call of
/// `what` give, in the order written: positional ones in declaration order,
/// then named ones.
pub(super) fn match_arguments<'a>(
    inputs: &[&str],
    args: &'a [Arg],
    what: &str,
) -> Result<Vec<(usize, &'a ast::Expr)>, Diagnostic> {
    let mut out = Vec::with_capacity(args.len());
    let mut k = 0;
    for a in args {
        match a {
            Arg::Positional(e) => {
                if k >= inputs.len() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        e.span,
                        format!("`{what}` takes {} argument(s)", inputs.len()),
                    ));
                }
                out.push((k, e));
                k += 1;
            }
            Arg::Named(n, e) => {
                let Some(i) = inputs.iter().position(|x| *x == n.name) else {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        n.span,
                        format!("`{what}` has no input `{}`", n.name),
                    ));
                };
                out.push((i, e));
            }
        }
    }
    Ok(out)
}
