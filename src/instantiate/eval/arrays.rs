//! Arrays during flattening: array and matrix constructors, if-expressions
//! over arrays, element-wise and matrix arithmetic with their dimension
//! checks, reductions.

use super::*;

impl Flattener<'_> {
    /// `{a, b, c}`: a new leading dimension.
    pub(in crate::instantiate) fn array_of(
        &mut self,
        vals: Vec<Value>,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        let Some(first) = vals.first() else {
            return Ok(Value {
                ty: ScalarType::Real,
                dims: vec![0],
                elems: vec![],
            });
        };
        let inner = first.dims.clone();
        let mut ty = first.ty;
        let mut elems = Vec::new();
        for v in &vals {
            if !same_dims(&v.dims, &inner) {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    span,
                    format!(
                        "the elements of an array must have the same size, found {} and {}",
                        shape_text(&inner),
                        shape_text(&v.dims)
                    ),
                ));
            }
            ty = unify_ty(ty, v.ty).ok_or_else(|| {
                Diagnostic::error(
                    DiagnosticKind::Type,
                    span,
                    "an array cannot mix Boolean and numeric elements",
                )
            })?;
            elems.extend_from_slice(&v.elems);
        }
        let mut dims = vec![vals.len()];
        dims.extend(inner);
        Ok(Value { ty, dims, elems })
    }

    pub(super) fn eval_matrix(
        &mut self,
        rows: &[Vec<ast::Expr>],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        // Each element is promoted to a matrix (scalar 1x1, vector n x 1);
        // a row concatenates along columns, the rows along rows.
        let mut row_mats: Vec<(usize, usize, Vec<ExprId>, ScalarType)> = Vec::new();
        for row in rows {
            let mut r: Option<(usize, usize, Vec<ExprId>, ScalarType)> = None;
            for x in row {
                let v = self.eval_expr(x, ctx)?;
                let (nr, nc) = match v.dims.len() {
                    0 => (1, 1),
                    1 => (v.dims[0], 1),
                    2 => (v.dims[0], v.dims[1]),
                    _ => {
                        return Err(Diagnostic::error(
                            DiagnosticKind::Shape,
                            x.span,
                            "matrix elements may have at most two dimensions",
                        ));
                    }
                };
                r = Some(match r {
                    None => (nr, nc, v.elems.clone(), v.ty),
                    Some((rr, rc, re, rt)) => {
                        if rr != nr {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Shape,
                                x.span,
                                format!(
                                    "cannot place a block of {nr} rows beside one of {rr} rows"
                                ),
                            ));
                        }
                        let mut out = Vec::with_capacity(rr * (rc + nc));
                        for i in 0..rr {
                            out.extend_from_slice(&re[i * rc..(i + 1) * rc]);
                            out.extend_from_slice(&v.elems[i * nc..(i + 1) * nc]);
                        }
                        (
                            rr,
                            rc + nc,
                            out,
                            unify_ty(rt, v.ty).unwrap_or(ScalarType::Real),
                        )
                    }
                });
            }
            if let Some(r) = r {
                row_mats.push(r);
            }
        }
        let Some(first) = row_mats.first() else {
            return Ok(Value {
                ty: ScalarType::Real,
                dims: vec![0, 0],
                elems: vec![],
            });
        };
        let cols = first.1;
        let mut ty = first.3;
        let mut nrows = 0;
        let mut elems = Vec::new();
        for (r, c, e, t) in &row_mats {
            if *c != cols {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    span,
                    format!("matrix rows have different numbers of columns: {cols} and {c}"),
                ));
            }
            ty = unify_ty(ty, *t).unwrap_or(ScalarType::Real);
            nrows += r;
            elems.extend_from_slice(e);
        }
        Ok(Value {
            ty,
            dims: vec![nrows, cols],
            elems,
        })
    }

    pub(super) fn eval_if(
        &mut self,
        branches: &[(ast::Expr, ast::Expr)],
        else_: &ast::Expr,
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        // Branches whose condition is known while flattening are chosen now, so
        // that the untaken branch may be ill-formed for this parameter set.
        let mut conds = Vec::new();
        for (c, v) in branches {
            let cv = self.eval_expr(c, ctx)?;
            self.expect_boolean(&cv, c.span, "the condition of `if`")?;
            if !cv.is_scalar() {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    c.span,
                    "the condition of `if` must be a scalar",
                ));
            }
            match self.arena.as_const(cv.elems[0]) {
                Some(x) if x != 0.0 => {
                    if conds.is_empty() {
                        return self.eval_expr(v, ctx);
                    }
                    let val = self.eval_expr(v, ctx)?;
                    return self.fold_if(conds, val, span);
                }
                Some(_) => continue,
                None => {
                    let val = self.eval_expr(v, ctx)?;
                    conds.push((cv.elems[0], val));
                }
            }
        }
        let other = self.eval_expr(else_, ctx)?;
        self.fold_if(conds, other, span)
    }

    pub(super) fn fold_if(
        &mut self,
        conds: Vec<(ExprId, Value)>,
        mut acc: Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        for (c, v) in conds.into_iter().rev() {
            // Branches of different sizes under a parameter condition: the
            // condition is decided now (MLS 10.6.13: the sizes must then be
            // known while flattening), and the parameters it reads become
            // structural.
            if !same_dims(&v.dims, &acc.dims) && self.is_parameter_expr(c) {
                if self.const_value(c, span)? != 0.0 {
                    acc = v;
                }
                continue;
            }
            if !same_dims(&v.dims, &acc.dims) {
                return Err(Diagnostic::error(
                    DiagnosticKind::Shape,
                    span,
                    format!(
                        "the branches of an if-expression have different sizes: {} and {}",
                        shape_text(&v.dims),
                        shape_text(&acc.dims)
                    ),
                ));
            }
            let ty = unify_ty(v.ty, acc.ty).ok_or_else(|| {
                Diagnostic::error(
                    DiagnosticKind::Type,
                    span,
                    "the branches of an if-expression have different types",
                )
            })?;
            let elems = v
                .elems
                .iter()
                .zip(&acc.elems)
                .map(|(&a, &b)| self.arena.if_(c, a, b))
                .collect();
            acc = Value {
                ty,
                dims: v.dims,
                elems,
            };
        }
        Ok(acc)
    }

    pub(super) fn eval_binary(
        &mut self,
        op: BinOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let relation = matches!(
            op,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
        );
        if relation && (self.is_string_expr(lhs, ctx)? || self.is_string_expr(rhs, ctx)?) {
            return self.compare_strings(op, lhs, rhs, ctx);
        }
        let a = self.eval_expr(lhs, ctx)?;
        let b = self.eval_expr(rhs, ctx)?;
        match op {
            BinOp::And | BinOp::Or => {
                self.expect_boolean(&a, lhs.span, &format!("`{}`", op.symbol()))?;
                self.expect_boolean(&b, rhs.span, &format!("`{}`", op.symbol()))?;
                self.elementwise(&a, &b, span, ScalarType::Boolean, false, |ar, x, y| {
                    if op == BinOp::And {
                        ar.and(x, y)
                    } else {
                        ar.or(x, y)
                    }
                })
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                if !a.is_scalar() || !b.is_scalar() {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Shape,
                        span,
                        "relations compare scalars; index the arrays",
                    ));
                }
                let rop = match op {
                    BinOp::Lt => RelOp::Lt,
                    BinOp::Le => RelOp::Le,
                    BinOp::Gt => RelOp::Gt,
                    BinOp::Ge => RelOp::Ge,
                    BinOp::Eq => RelOp::Eq,
                    _ => RelOp::Ne,
                };
                if (a.ty == ScalarType::Boolean) != (b.ty == ScalarType::Boolean) {
                    return Err(Diagnostic::error(
                        DiagnosticKind::Type,
                        span,
                        format!("cannot compare a {} with a {}", a.ty.name(), b.ty.name()),
                    ));
                }
                let event = !ctx.no_event && !ctx.in_function();
                let e = self.arena.rel(rop, a.elems[0], b.elems[0], event);
                Ok(Value::scalar(ScalarType::Boolean, e))
            }
            _ => {
                self.expect_numeric(&a, lhs.span)?;
                self.expect_numeric(&b, rhs.span)?;
                let int = a.ty == ScalarType::Integer && b.ty == ScalarType::Integer;
                let ty = if int {
                    ScalarType::Integer
                } else {
                    ScalarType::Real
                };
                match op {
                    BinOp::Add | BinOp::Sub => {
                        if !same_dims(&a.dims, &b.dims) {
                            return Err(dim_error(span, op, &a, &b));
                        }
                        self.elementwise(&a, &b, span, ty, false, |ar, x, y| {
                            if op == BinOp::Add {
                                ar.add(x, y)
                            } else {
                                ar.sub(x, y)
                            }
                        })
                    }
                    BinOp::ElemAdd => {
                        self.elementwise(&a, &b, span, ty, true, |ar, x, y| ar.add(x, y))
                    }
                    BinOp::ElemSub => {
                        self.elementwise(&a, &b, span, ty, true, |ar, x, y| ar.sub(x, y))
                    }
                    BinOp::ElemMul => {
                        self.elementwise(&a, &b, span, ty, true, |ar, x, y| ar.mul(x, y))
                    }
                    BinOp::ElemDiv => {
                        self.elementwise(&a, &b, span, ScalarType::Real, true, |ar, x, y| {
                            ar.div(x, y)
                        })
                    }
                    BinOp::ElemPow => {
                        self.elementwise(&a, &b, span, ScalarType::Real, true, |ar, x, y| {
                            ar.pow(x, y)
                        })
                    }
                    BinOp::Mul => self.multiply(&a, &b, span, ty),
                    BinOp::Div => {
                        if !b.is_scalar() {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Shape,
                                rhs.span,
                                "division is only defined by a scalar",
                            ));
                        }
                        self.elementwise(&a, &b, span, ScalarType::Real, true, |ar, x, y| {
                            ar.div(x, y)
                        })
                    }
                    BinOp::Pow => {
                        if a.dims.len() == 2 && b.is_scalar() {
                            return self.matrix_power(&a, &b, rhs.span, span);
                        }
                        if !a.is_scalar() || !b.is_scalar() {
                            return Err(Diagnostic::error(
                                DiagnosticKind::Shape,
                                span,
                                "`^` is defined for scalars and square matrices; use `.^` for element-wise powers",
                            ));
                        }
                        let e = self.arena.pow(a.elems[0], b.elems[0]);
                        Ok(Value::scalar(ScalarType::Real, e))
                    }
                    _ => unreachable!("handled above"),
                }
            }
        }
    }

    /// `A^n` of a square matrix and a non-negative Integer exponent known
    /// while flattening (MLS 10.6.6): `identity` for n = 0, else the
    /// product of n factors.
    fn matrix_power(
        &mut self,
        a: &Value,
        n: &Value,
        n_span: Span,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        if a.dims[0] != a.dims[1] {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                span,
                format!(
                    "`^` of a matrix needs a square matrix, not one of size {}",
                    shape_text(&a.dims)
                ),
            ));
        }
        let k = self.const_value(n.elems[0], n_span)?;
        if n.ty != ScalarType::Integer || k < 0.0 || k.fract() != 0.0 {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                n_span,
                "the exponent of a matrix power must be a non-negative Integer",
            )
            .with_hint("`A^n` multiplies n copies of A; use `.^` for element-wise powers"));
        }
        let size = a.dims[0];
        let mut out = Value {
            ty: a.ty,
            dims: a.dims.clone(),
            elems: (0..size * size)
                .map(|i| {
                    self.arena
                        .constant(if i / size == i % size { 1.0 } else { 0.0 })
                })
                .collect(),
        };
        // By squaring: about log2(n) products, whatever n is.
        let mut n = k as u64;
        let mut base = a.clone();
        while n > 0 {
            if n & 1 == 1 {
                out = self.multiply(&out, &base, span, a.ty)?;
            }
            n >>= 1;
            if n > 0 {
                base = self.multiply(&base, &base, span, a.ty)?;
            }
        }
        Ok(out)
    }

    /// Element-wise operation; with `broadcast`, a scalar combines with each element.
    pub(super) fn elementwise(
        &mut self,
        a: &Value,
        b: &Value,
        span: Span,
        ty: ScalarType,
        broadcast: bool,
        f: impl Fn(&mut crate::flat::ExprArena, ExprId, ExprId) -> ExprId,
    ) -> Result<Value, Diagnostic> {
        if same_dims(&a.dims, &b.dims) {
            let elems = a
                .elems
                .iter()
                .zip(&b.elems)
                .map(|(&x, &y)| f(&mut self.arena, x, y))
                .collect();
            return Ok(Value {
                ty,
                dims: a.dims.clone(),
                elems,
            });
        }
        if broadcast && b.is_scalar() {
            let elems = a
                .elems
                .iter()
                .map(|&x| f(&mut self.arena, x, b.elems[0]))
                .collect();
            return Ok(Value {
                ty,
                dims: a.dims.clone(),
                elems,
            });
        }
        if broadcast && a.is_scalar() {
            let elems = b
                .elems
                .iter()
                .map(|&y| f(&mut self.arena, a.elems[0], y))
                .collect();
            return Ok(Value {
                ty,
                dims: b.dims.clone(),
                elems,
            });
        }
        Err(Diagnostic::error(
            DiagnosticKind::Shape,
            span,
            format!(
                "the operands have different sizes: {} and {}",
                shape_text(&a.dims),
                shape_text(&b.dims)
            ),
        ))
    }

    /// `*`: scalar products, dot product, matrix-vector and matrix-matrix.
    pub(super) fn multiply(
        &mut self,
        a: &Value,
        b: &Value,
        span: Span,
        ty: ScalarType,
    ) -> Result<Value, Diagnostic> {
        if a.is_scalar() || b.is_scalar() {
            return self.elementwise(a, b, span, ty, true, |ar, x, y| ar.mul(x, y));
        }
        let dot = |s: &mut Self, xs: &[ExprId], ys: &[ExprId]| -> ExprId {
            let mut acc = s.arena.zero();
            for (&x, &y) in xs.iter().zip(ys) {
                let p = s.arena.mul(x, y);
                acc = s.arena.add(acc, p);
            }
            acc
        };
        match (a.dims.len(), b.dims.len()) {
            (1, 1) => {
                if a.dims[0] != b.dims[0] {
                    return Err(dim_error(span, BinOp::Mul, a, b));
                }
                let e = dot(self, &a.elems, &b.elems);
                Ok(Value::scalar(ty, e))
            }
            (2, 1) => {
                let (n, m) = (a.dims[0], a.dims[1]);
                if m != b.dims[0] {
                    return Err(dim_error(span, BinOp::Mul, a, b));
                }
                let elems = (0..n)
                    .map(|i| dot(self, &a.elems[i * m..(i + 1) * m], &b.elems))
                    .collect();
                Ok(Value {
                    ty,
                    dims: vec![n],
                    elems,
                })
            }
            (1, 2) => {
                let (n, m) = (b.dims[0], b.dims[1]);
                if a.dims[0] != n {
                    return Err(dim_error(span, BinOp::Mul, a, b));
                }
                let elems = (0..m)
                    .map(|j| {
                        let col: Vec<ExprId> = (0..n).map(|i| b.elems[i * m + j]).collect();
                        dot(self, &a.elems, &col)
                    })
                    .collect();
                Ok(Value {
                    ty,
                    dims: vec![m],
                    elems,
                })
            }
            (2, 2) => {
                let (n, k) = (a.dims[0], a.dims[1]);
                let (k2, m) = (b.dims[0], b.dims[1]);
                if k != k2 {
                    return Err(dim_error(span, BinOp::Mul, a, b));
                }
                let mut elems = Vec::with_capacity(n * m);
                for i in 0..n {
                    for j in 0..m {
                        let col: Vec<ExprId> = (0..k).map(|l| b.elems[l * m + j]).collect();
                        elems.push(dot(self, &a.elems[i * k..(i + 1) * k], &col));
                    }
                }
                Ok(Value {
                    ty,
                    dims: vec![n, m],
                    elems,
                })
            }
            _ => Err(dim_error(span, BinOp::Mul, a, b)),
        }
    }

    pub(super) fn reduce(&mut self, v: Value, op: Node, unit: f64) -> Result<Value, Diagnostic> {
        let mut acc = self.arena.constant(unit);
        for &x in &v.elems {
            acc = match op {
                Node::Add(..) => self.arena.add(acc, x),
                _ => self.arena.mul(acc, x),
            };
        }
        Ok(Value::scalar(v.ty, acc))
    }

    pub(super) fn minmax(&mut self, v: Value, f: Fn2, span: Span) -> Result<Value, Diagnostic> {
        let Some((&first, rest)) = v.elems.split_first() else {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
                span,
                format!("`{}` of an empty array", f.name()),
            ));
        };
        let mut acc = first;
        for &x in rest {
            acc = self.arena.call2(f, acc, x);
        }
        Ok(Value::scalar(v.ty, acc))
    }

    // ------------------------------------------------------------ names
}
