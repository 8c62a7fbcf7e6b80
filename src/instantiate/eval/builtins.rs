//! The builtin operators and functions (MLS 3.7): `der`, `pre`, `edge`,
//! math, array constructors and reductions, `size`, `sample`, ...

use super::*;

impl Flattener<'_> {
    pub(super) fn positional(
        &self,
        args: &[Arg],
        span: Span,
        name: &str,
        min: usize,
        max: usize,
    ) -> Result<Vec<ast::Expr>, Diagnostic> {
        let mut out = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) => out.push(e.clone()),
                Arg::Named(n, _) => {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        n.span,
                        format!("`{name}` takes no named argument `{}`", n.name),
                    ));
                }
            }
        }
        if out.len() < min || out.len() > max {
            let expect = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(Diagnostic::error(
                DiagnosticKind::Call,
                span,
                format!("`{name}` takes {expect} argument(s), {} given", out.len()),
            ));
        }
        Ok(out)
    }

    pub(super) fn eval_builtin(
        &mut self,
        name: &str,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        if let Some(f) = Fn1::from_name(name) {
            let a = self.positional(args, span, name, 1, 1)?;
            let v = self.eval_expr(&a[0], ctx)?;
            self.expect_numeric(&v, a[0].span)?;
            let elems = v.elems.iter().map(|&x| self.arena.call1(f, x)).collect();
            let ty = match f {
                Fn1::Integer | Fn1::Sign if v.ty == ScalarType::Integer => ScalarType::Integer,
                Fn1::Integer => ScalarType::Integer,
                Fn1::Abs => v.ty,
                _ => ScalarType::Real,
            };
            return Ok(Value {
                ty,
                dims: v.dims,
                elems,
            });
        }
        match name {
            "der" => {
                let a = self.positional(args, span, name, 1, 1)?;
                if ctx.in_function() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Restriction,
                        span,
                        "`der` is not allowed in a function",
                    ));
                }
                let v = self.eval_expr(&a[0], ctx)?;
                self.expect_numeric(&v, a[0].span)?;
                let single_var =
                    v.elems.len() == 1 && matches!(self.arena.node(v.elems[0]), Node::Var(_));
                if v.ty == ScalarType::Integer && !single_var {
                    return Err(Diagnostic::error(DiagnosticKind::Type,
                        a[0].span,
                        "`der` of an Integer expression",
                    )
                    .with_label("Integer expressions are discrete: `der` takes a Real expression (MLS 3.7.4)")
                    .with_hint("convert the Integer first if its rate is meant: a discrete value has no derivative"));
                }
                let mut elems = Vec::new();
                for &x in &v.elems {
                    elems.push(self.der_of(x, a[0].span, ctx)?);
                }
                Ok(Value {
                    ty: ScalarType::Real,
                    dims: v.dims,
                    elems,
                })
            }
            "pre" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                let mut elems = Vec::new();
                for &x in &v.elems {
                    match self.arena.node(x) {
                        Node::Var(var) => elems.push(self.arena.intern(Node::Pre(var))),
                        Node::Const(_) => elems.push(x),
                        _ => {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Call,
                                a[0].span,
                                "`pre` needs a variable",
                            ));
                        }
                    }
                }
                Ok(Value {
                    ty: v.ty,
                    dims: v.dims,
                    elems,
                })
            }
            "edge" | "change" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if name == "edge" {
                    self.expect_boolean(&v, a[0].span, "`edge`")?;
                }
                let mut elems = Vec::new();
                for &x in &v.elems {
                    let Node::Var(var) = self.arena.node(x) else {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            a[0].span,
                            format!("`{name}` needs a variable"),
                        ));
                    };
                    let p = self.arena.intern(Node::Pre(var));
                    let e = if name == "edge" {
                        let np = self.arena.not(p);
                        self.arena.and(x, np)
                    } else {
                        self.arena.rel(RelOp::Ne, x, p, false)
                    };
                    elems.push(e);
                }
                Ok(Value {
                    ty: ScalarType::Boolean,
                    dims: v.dims,
                    elems,
                })
            }
            "initial" | "terminal" => {
                self.positional(args, span, name, 0, 0)?;
                let n = if name == "initial" {
                    Node::Initial
                } else {
                    Node::Terminal
                };
                Ok(Value::scalar(ScalarType::Boolean, self.arena.intern(n)))
            }
            "noEvent" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let mut c = ctx.clone();
                c.no_event = true;
                self.eval_expr(&a[0], &c)
            }
            "smooth" => {
                let a = self.positional(args, span, name, 2, 2)?;
                self.eval_expr(&a[1], ctx)
            }
            "homotopy" => {
                let a = self.call_args_named(args, span, name, &["actual", "simplified"])?;
                self.eval_expr(&a[0], ctx)
            }
            "sample" => {
                let a = self.positional(args, span, name, 2, 2)?;
                let s = self.eval_expr(&a[0], ctx)?;
                let i = self.eval_expr(&a[1], ctx)?;
                for (v, arg, what) in [(&s, &a[0], "start"), (&i, &a[1], "interval")] {
                    self.check_sample_argument(v, arg.span, what)?;
                }
                let e = self.arena.intern(Node::Sample(s.elems[0], i.elems[0]));
                Ok(Value::scalar(ScalarType::Boolean, e))
            }
            "atan2" | "mod" | "rem" | "div" | "semiLinear" => {
                let a = self.positional(
                    args,
                    span,
                    name,
                    2,
                    if name == "semiLinear" { 3 } else { 2 },
                )?;
                let x = self.eval_expr(&a[0], ctx)?;
                let y = self.eval_expr(&a[1], ctx)?;
                if name == "semiLinear" {
                    // semiLinear(x, k+, k-) = if x >= 0 then k+*x else k-*x
                    let z = self.eval_expr(&a[2], ctx)?;
                    let zero = self.arena.zero();
                    let event = !ctx.no_event && !ctx.in_function();
                    let c = self.arena.rel(RelOp::Ge, x.elems[0], zero, event);
                    let p = self.arena.mul(y.elems[0], x.elems[0]);
                    let m = self.arena.mul(z.elems[0], x.elems[0]);
                    return Ok(Value::scalar(ScalarType::Real, self.arena.if_(c, p, m)));
                }
                let f = match name {
                    "atan2" => Fn2::Atan2,
                    "mod" => Fn2::Mod,
                    "rem" => Fn2::Rem,
                    _ => Fn2::Div,
                };
                let ty = if f != Fn2::Atan2
                    && x.ty == ScalarType::Integer
                    && y.ty == ScalarType::Integer
                {
                    ScalarType::Integer
                } else {
                    ScalarType::Real
                };
                self.elementwise(&x, &y, span, ty, true, |ar, p, q| ar.call2(f, p, q))
            }
            "min" | "max" => {
                let a = self.positional(args, span, name, 1, 2)?;
                let f = if name == "min" { Fn2::Min } else { Fn2::Max };
                if a.len() == 1 {
                    let v = self.eval_expr(&a[0], ctx)?;
                    return self.minmax(v, f, span);
                }
                let x = self.eval_expr(&a[0], ctx)?;
                let y = self.eval_expr(&a[1], ctx)?;
                if !x.is_scalar() || !y.is_scalar() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        format!("`{name}(a, b)` takes two scalars"),
                    ));
                }
                let ty = unify_ty(x.ty, y.ty).unwrap_or(ScalarType::Real);
                Ok(Value::scalar(
                    ty,
                    self.arena.call2(f, x.elems[0], y.elems[0]),
                ))
            }
            "sum" | "product" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if name == "sum" {
                    self.reduce(v, Node::Add(0, 0), 0.0)
                } else {
                    self.reduce(v, Node::Mul(0, 0), 1.0)
                }
            }
            "size" => {
                let a = self.positional(args, span, name, 1, 2)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if a.len() == 2 {
                    let k = self.eval_scalar_const(&a[1], ctx)?;
                    let k = k as usize;
                    if k == 0 || k > v.dims.len() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            a[1].span,
                            format!(
                                "dimension {k} does not exist; the array has {}",
                                v.dims.len()
                            ),
                        ));
                    }
                    return Ok(Value::scalar(
                        ScalarType::Integer,
                        self.arena.constant(v.dims[k - 1] as f64),
                    ));
                }
                let elems = v
                    .dims
                    .iter()
                    .map(|&d| self.arena.constant(d as f64))
                    .collect();
                Ok(Value {
                    ty: ScalarType::Integer,
                    dims: vec![v.dims.len()],
                    elems,
                })
            }
            "ndims" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                Ok(Value::scalar(
                    ScalarType::Integer,
                    self.arena.constant(v.dims.len() as f64),
                ))
            }
            "zeros" | "ones" => {
                let a = self.positional(args, span, name, 1, 8)?;
                let dims = self.const_dims(&a, ctx)?;
                let c = self.arena.constant(if name == "zeros" { 0.0 } else { 1.0 });
                let n: usize = dims.iter().product();
                Ok(Value {
                    ty: ScalarType::Integer,
                    dims,
                    elems: vec![c; n],
                })
            }
            "fill" => {
                let a = self.positional(args, span, name, 2, 9)?;
                let v = self.eval_expr(&a[0], ctx)?;
                let dims = self.const_dims(&a[1..], ctx)?;
                let n: usize = dims.iter().product();
                let mut elems = Vec::with_capacity(n * v.elems.len());
                for _ in 0..n {
                    elems.extend_from_slice(&v.elems);
                }
                let mut all = dims;
                all.extend(v.dims);
                Ok(Value {
                    ty: v.ty,
                    dims: all,
                    elems,
                })
            }
            "identity" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let n = self.eval_scalar_const(&a[0], ctx)? as usize;
                let one = self.arena.one();
                let zero = self.arena.zero();
                let elems = (0..n * n)
                    .map(|k| if k / n == k % n { one } else { zero })
                    .collect();
                Ok(Value {
                    ty: ScalarType::Integer,
                    dims: vec![n, n],
                    elems,
                })
            }
            "diagonal" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.dims.len() != 1 {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        a[0].span,
                        "`diagonal` takes a vector",
                    ));
                }
                let n = v.dims[0];
                let zero = self.arena.zero();
                let elems = (0..n * n)
                    .map(|k| if k / n == k % n { v.elems[k / n] } else { zero })
                    .collect();
                Ok(Value {
                    ty: v.ty,
                    dims: vec![n, n],
                    elems,
                })
            }
            "linspace" => {
                let a = self.positional(args, span, name, 3, 3)?;
                let x1 = self.eval_expr(&a[0], ctx)?;
                let x2 = self.eval_expr(&a[1], ctx)?;
                let n = self.eval_scalar_const(&a[2], ctx)? as usize;
                if n < 2 {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        a[2].span,
                        "`linspace` needs at least 2 points",
                    ));
                }
                let mut elems = Vec::new();
                for k in 0..n {
                    let f = self.arena.constant(k as f64 / (n - 1) as f64);
                    let d = self.arena.sub(x2.elems[0], x1.elems[0]);
                    let t = self.arena.mul(f, d);
                    elems.push(self.arena.add(x1.elems[0], t));
                }
                Ok(Value {
                    ty: ScalarType::Real,
                    dims: vec![n],
                    elems,
                })
            }
            "transpose" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.dims.len() != 2 {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        a[0].span,
                        "`transpose` takes a matrix",
                    ));
                }
                let (n, m) = (v.dims[0], v.dims[1]);
                let elems = (0..n * m).map(|k| v.elems[(k % n) * m + k / n]).collect();
                Ok(Value {
                    ty: v.ty,
                    dims: vec![m, n],
                    elems,
                })
            }
            "cross" => {
                let a = self.positional(args, span, name, 2, 2)?;
                let x = self.eval_expr(&a[0], ctx)?;
                let y = self.eval_expr(&a[1], ctx)?;
                if x.dims != [3] || y.dims != [3] {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        "`cross` takes two 3-vectors",
                    ));
                }
                let mut elems = Vec::new();
                for (i, j) in [(1, 2), (2, 0), (0, 1)] {
                    let p = self.arena.mul(x.elems[i], y.elems[j]);
                    let q = self.arena.mul(x.elems[j], y.elems[i]);
                    elems.push(self.arena.sub(p, q));
                }
                Ok(Value {
                    ty: ScalarType::Real,
                    dims: vec![3],
                    elems,
                })
            }
            "skew" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let x = self.eval_expr(&a[0], ctx)?;
                if x.dims != [3] {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        "`skew` takes a 3-vector",
                    ));
                }
                let z = self.arena.zero();
                let [x1, x2, x3] = [x.elems[0], x.elems[1], x.elems[2]];
                let n1 = self.arena.neg(x1);
                let n2 = self.arena.neg(x2);
                let n3 = self.arena.neg(x3);
                Ok(Value {
                    ty: ScalarType::Real,
                    dims: vec![3, 3],
                    elems: vec![z, n3, x2, x3, z, n1, n2, x1, z],
                })
            }
            "outerProduct" => {
                let a = self.positional(args, span, name, 2, 2)?;
                let x = self.eval_expr(&a[0], ctx)?;
                let y = self.eval_expr(&a[1], ctx)?;
                if x.dims.len() != 1 || y.dims.len() != 1 {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        "`outerProduct` takes two vectors",
                    ));
                }
                let mut elems = Vec::new();
                for &p in &x.elems {
                    for &q in &y.elems {
                        elems.push(self.arena.mul(p, q));
                    }
                }
                Ok(Value {
                    ty: ScalarType::Real,
                    dims: vec![x.dims[0], y.dims[0]],
                    elems,
                })
            }
            "scalar" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.elems.len() != 1 {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Shape,
                        a[0].span,
                        "`scalar` needs an array with one element",
                    ));
                }
                Ok(Value::scalar(v.ty, v.elems[0]))
            }
            "vector" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                let n = v.elems.len();
                Ok(Value {
                    ty: v.ty,
                    dims: vec![n],
                    elems: v.elems,
                })
            }
            "cat" => {
                let a = self.positional(args, span, name, 2, 64)?;
                let k = self.eval_scalar_const(&a[0], ctx)? as usize;
                let vals = a[1..]
                    .iter()
                    .map(|x| self.eval_expr(x, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                if k != 1 || vals.iter().any(|v| v.dims.len() != 1) {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Unsupported,
                        span,
                        "`cat` is supported for vectors along dimension 1",
                    ));
                }
                let ty = vals.first().map(|v| v.ty).unwrap_or(ScalarType::Real);
                let elems: Vec<ExprId> =
                    vals.iter().flat_map(|v| v.elems.iter().copied()).collect();
                Ok(Value {
                    ty,
                    dims: vec![elems.len()],
                    elems,
                })
            }
            "Integer" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                Ok(Value {
                    ty: ScalarType::Integer,
                    ..v
                })
            }
            "String" => Err(Diagnostic::error(
                DiagnosticKind::Restriction,
                span,
                "`String(...)` may only appear in messages",
            )),
            other => Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
                span,
                format!("builtin `{other}` is not supported here"),
            )),
        }
    }

    pub(super) fn call_args_named(
        &self,
        args: &[Arg],
        span: Span,
        name: &str,
        params: &[&str],
    ) -> Result<Vec<ast::Expr>, Diagnostic> {
        let mut out: Vec<Option<ast::Expr>> = vec![None; params.len()];
        let mut k = 0;
        for a in args {
            match a {
                Arg::Positional(e) => {
                    if k >= params.len() {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            e.span,
                            format!("too many arguments to `{name}`"),
                        ));
                    }
                    out[k] = Some(e.clone());
                    k += 1;
                }
                Arg::Named(n, e) => match params.iter().position(|p| *p == n.name) {
                    Some(i) => out[i] = Some(e.clone()),
                    None => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Call,
                            n.span,
                            format!("`{name}` has no argument `{}`", n.name),
                        ));
                    }
                },
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, e)| {
                e.ok_or_else(|| {
                    Diagnostic::error(
                        DiagnosticKind::Call,
                        span,
                        format!("`{name}` needs argument `{}`", params[i]),
                    )
                })
            })
            .collect()
    }

    pub(super) fn const_dims(
        &mut self,
        a: &[ast::Expr],
        ctx: &Ctx,
    ) -> Result<Vec<usize>, Diagnostic> {
        let mut dims = Vec::new();
        for x in a {
            let v = self.eval_scalar_const(x, ctx)?;
            if v < 0.0 || v.fract() != 0.0 {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    x.span,
                    "an array size must be a non-negative integer",
                ));
            }
            dims.push(v as usize);
        }
        Ok(dims)
    }

    /// `der(e)`: of a variable directly; of another expression through an
    /// auxiliary variable `$der.k` with the equation `$der.k = e`.
    pub(super) fn der_of(
        &mut self,
        x: ExprId,
        span: Span,
        ctx: &Ctx,
    ) -> Result<ExprId, Diagnostic> {
        match self.arena.node(x) {
            Node::Var(v) => {
                let var = &self.vars[v as usize];
                if var.is_parameter() {
                    return Ok(self.arena.zero());
                }
                if var.ty != ScalarType::Real {
                    let n = var.name.clone();
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        span,
                        format!("`der({n})`: `{n}` is not a Real variable"),
                    )
                    .with_label("`der` takes a Real expression (MLS 3.7.4)"));
                }
                if var.variability == Variability::Discrete {
                    let n = var.name.clone();
                    return Err(Diagnostic::error(DiagnosticKind::Variability,
                        span,
                        format!("`der({n})`: `{n}` is declared discrete"),
                    )
                    .with_label("a discrete variable is piecewise constant: `der` takes a continuous-time expression (MLS 3.7.4)")
                    .with_hint("remove `discrete` if the variable is meant to change continuously"));
                }
                Ok(self.arena.intern(Node::Der(v)))
            }
            Node::Const(_) => Ok(self.arena.zero()),
            _ => {
                let k = self.aux_count;
                self.aux_count += 1;
                let v = self.vars.len() as u32;
                self.vars.push(crate::flat::Variable::internal(
                    format!("$der{k}"),
                    Variability::Continuous,
                    "argument of der(...) on an expression",
                    span,
                ));
                let lhs = self.arena.var(v);
                let scope = self.inst_path(ctx.scope.inst);
                self.equations.push(crate::flat::FlatEquation {
                    lhs,
                    rhs: x,
                    span,
                    scope,
                });
                Ok(self.arena.intern(Node::Der(v)))
            }
        }
    }

    /// An argument of `sample(start, interval)`: a scalar Real (or Integer)
    /// parameter expression (MLS 3.7.5).
    fn check_sample_argument(&self, v: &Value, span: Span, what: &str) -> Result<(), Diagnostic> {
        if !v.dims.is_empty() || v.ty == ScalarType::Boolean {
            let got = if v.ty == ScalarType::Boolean {
                "a Boolean"
            } else {
                "an array"
            };
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                span,
                format!("the {what} of `sample` must be a Real number, not {got}"),
            )
            .with_label(format!("{got} (MLS 3.7.5)"))
            .with_hint("write `sample(start, interval)` with two Real parameter expressions"));
        }
        let varying =
            self.arena
                .reachable(&[v.elems[0]])
                .into_iter()
                .find(|&id| match self.arena.node(id) {
                    Node::Var(x) => !self.vars[x as usize].is_parameter(),
                    Node::Der(_) | Node::Pre(_) | Node::Time => true,
                    _ => false,
                });
        if varying.is_some() {
            return Err(Diagnostic::error(DiagnosticKind::Variability,
                span,
                format!("the {what} of `sample` changes during the simulation"),
            )
            .with_label("not a parameter expression (MLS 3.7.5)")
            .with_hint("the start and interval of `sample` must be known before the simulation starts: use parameters"));
        }
        Ok(())
    }
}
