//! Expression evaluation during flattening: an AST expression becomes an array
//! of scalar flat expressions with a shape.
//!
//! This is where arrays are scalarized and where dimensions are checked:
//! `A*x` of a 2x3 matrix and a 3-vector becomes two scalar sums of products;
//! `x = {1, 2}` with `x[3]` is reported with both sizes. Names resolve in the
//! context's instance (components), function locals, for-loop indices, then
//! lexically enclosing classes (constants, enumerations).

use super::modifier::Scope;
use super::{CompNode, Flattener, InstId};
use crate::diag::Diagnostic;
use crate::flat::{CallSite, ExprId, Fn1, Fn2, Node, RelOp, ScalarType, Variability};
use crate::syntax::ast::{self, Arg, BinOp, ComponentRef, ExprKind, Span, Subscript, UnOp};
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Real,
    Integer,
    Boolean,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Real => "Real",
            Ty::Integer => "Integer",
            Ty::Boolean => "Boolean",
        }
    }
    pub fn from_scalar(t: ScalarType) -> Ty {
        match t {
            ScalarType::Real => Ty::Real,
            ScalarType::Integer => Ty::Integer,
            ScalarType::Boolean => Ty::Boolean,
        }
    }
}

/// A value during flattening: an array (possibly 0-dimensional) of scalar
/// expressions in row-major order.
#[derive(Clone, Debug)]
pub struct Value {
    pub ty: Ty,
    pub dims: Vec<usize>,
    pub elems: Vec<ExprId>,
}

impl Value {
    pub fn scalar(ty: Ty, e: ExprId) -> Value {
        Value {
            ty,
            dims: vec![],
            elems: vec![e],
        }
    }
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }
}

pub fn shape_text(dims: &[usize]) -> String {
    if dims.is_empty() {
        "1 (a scalar)".into()
    } else {
        let s: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        if dims.len() == 1 {
            s[0].clone()
        } else {
            format!("[{}]", s.join(", "))
        }
    }
}

/// Selects element `index` (1-based, one entry per leading dimension) of a value.
pub fn select(v: &Value, index: &[usize], span: Span) -> Result<Value, Diagnostic> {
    if index.is_empty() {
        return Ok(v.clone());
    }
    if v.dims.len() < index.len() {
        // A scalar value given to every element of an array component.
        if v.dims.is_empty() {
            return Ok(v.clone());
        }
        return Err(Diagnostic::error(
            span,
            format!(
                "a value of size {} cannot be split over an array of {} dimensions",
                shape_text(&v.dims),
                index.len()
            ),
        )
        .with_hint("use `each` to give the same value to every element"));
    }
    let mut offset = 0;
    let mut stride: usize = v.dims.iter().product();
    for (k, &i) in index.iter().enumerate() {
        stride /= v.dims[k].max(1);
        if i == 0 || i > v.dims[k] {
            return Err(Diagnostic::error(
                span,
                format!(
                    "this value has size {} but is given to an array component with more elements",
                    shape_text(&v.dims)
                ),
            )
            .with_hint("use `each` to give the same value to every element, or a value of the component's size"));
        }
        offset += (i - 1) * stride;
    }
    let rest: Vec<usize> = v.dims[index.len()..].to_vec();
    let n: usize = rest.iter().product();
    Ok(Value {
        ty: v.ty,
        dims: rest,
        elems: v.elems[offset..offset + n].to_vec(),
    })
}

/// A function-local variable: slots `base..base+len` of the function's frame.
#[derive(Clone, Debug)]
pub struct Local {
    pub base: u32,
    pub dims: Vec<usize>,
    pub ty: Ty,
    pub input: bool,
}

/// Where names resolve and how relations behave.
#[derive(Clone)]
pub struct Ctx {
    pub scope: Scope,
    /// For-loop indices in scope, innermost last.
    pub loops: Vec<(String, Value)>,
    pub no_event: bool,
    pub locals: Option<Rc<HashMap<String, Local>>>,
    /// Size of the dimension being subscripted, for `end`.
    pub end: Option<usize>,
}

impl Ctx {
    pub fn model(scope: Scope) -> Ctx {
        Ctx {
            scope,
            loops: Vec::new(),
            no_event: false,
            locals: None,
            end: None,
        }
    }
    pub fn with_loop(&self, name: &str, v: Value) -> Ctx {
        let mut c = self.clone();
        c.loops.push((name.to_string(), v));
        c
    }
    fn in_function(&self) -> bool {
        self.locals.is_some()
    }
}

/// A set of component nodes with a shape, while walking `a.b[2].c`.
pub(super) struct NodeArray {
    pub dims: Vec<usize>,
    pub leaves: std::rc::Rc<[CompNode]>,
}

impl NodeArray {
    fn from_node(n: &CompNode) -> NodeArray {
        match n {
            CompNode::Array(d, e) => NodeArray {
                dims: d.clone(),
                leaves: e.clone(),
            },
            other => NodeArray {
                dims: vec![],
                leaves: std::rc::Rc::new([other.clone()]),
            },
        }
    }
}

/// One subscript after evaluation.
enum Index {
    One(usize),
    Many(Vec<usize>),
    /// A run-time index (function bodies only).
    Dynamic(ExprId),
}

const BUILTINS: &[&str] = &[
    "der",
    "pre",
    "edge",
    "change",
    "initial",
    "terminal",
    "noEvent",
    "smooth",
    "sample",
    "abs",
    "sign",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "exp",
    "log",
    "log10",
    "min",
    "max",
    "sum",
    "product",
    "cross",
    "transpose",
    "size",
    "zeros",
    "ones",
    "identity",
    "fill",
    "floor",
    "ceil",
    "mod",
    "rem",
    "integer",
    "div",
    "ndims",
    "scalar",
    "vector",
    "homotopy",
    "linspace",
    "cat",
    "diagonal",
    "skew",
    "outerProduct",
    "Integer",
    "String",
    "semiLinear",
];

impl<'l> Flattener<'l> {
    pub(super) fn eval_expr(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<Value, Diagnostic> {
        match &e.kind {
            ExprKind::Real(v) => Ok(Value::scalar(Ty::Real, self.arena.constant(*v))),
            ExprKind::Integer(v) => Ok(Value::scalar(Ty::Integer, self.arena.constant(*v as f64))),
            ExprKind::Bool(b) => Ok(Value::scalar(Ty::Boolean, self.arena.constant(f64::from(*b)))),
            ExprKind::String(_) => Err(Diagnostic::error(e.span, "a string is not allowed here")
                .with_hint("strings may only appear in descriptions and in the messages of assert and terminate")),
            ExprKind::Ref(r) => self.resolve_ref(r, ctx),
            ExprKind::FunctionPartial { func, .. } => Err(Diagnostic::error(
                e.span,
                format!(
                    "functions passed as arguments (`function {}(...)`) are not supported",
                    func.dotted()
                ),
            )
            .with_label("a function argument")
            .with_hint("call a function written for this one purpose instead")),
            ExprKind::End => match ctx.end {
                Some(n) => Ok(Value::scalar(Ty::Integer, self.arena.constant(n as f64))),
                None => Err(Diagnostic::error(e.span, "`end` is only allowed inside a subscript")),
            },
            ExprKind::Unary { op, operand } => {
                let v = self.eval_expr(operand, ctx)?;
                match op {
                    UnOp::Plus => Ok(v),
                    UnOp::Neg => {
                        self.expect_numeric(&v, operand.span)?;
                        let elems = v.elems.iter().map(|&x| self.arena.neg(x)).collect();
                        Ok(Value { elems, ..v })
                    }
                    UnOp::Not => {
                        self.expect_boolean(&v, operand.span, "`not`")?;
                        let elems = v.elems.iter().map(|&x| self.arena.not(x)).collect();
                        Ok(Value { elems, ..v })
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => self.eval_binary(*op, lhs, rhs, e.span, ctx),
            ExprKind::If { branches, else_ } => self.eval_if(branches, else_, e.span, ctx),
            ExprKind::Range { start, step, stop } => {
                let a = self.eval_scalar_const(start, ctx)?;
                let s = match step {
                    Some(s) => self.eval_scalar_const(s, ctx)?,
                    None => 1.0,
                };
                let b = self.eval_scalar_const(stop, ctx)?;
                if s == 0.0 {
                    return Err(Diagnostic::error(e.span, "the step of a range cannot be zero"));
                }
                let n = (((b - a) / s).floor() + 1.0).max(0.0) as usize;
                if n > 10_000_000 {
                    return Err(Diagnostic::error(e.span, format!("range of {n} elements is too large")));
                }
                let int = a.fract() == 0.0 && s.fract() == 0.0;
                let elems = (0..n).map(|k| self.arena.constant(a + s * k as f64)).collect();
                Ok(Value {
                    ty: if int { Ty::Integer } else { Ty::Real },
                    dims: vec![n],
                    elems,
                })
            }
            ExprKind::Array(items) => {
                let vals = items
                    .iter()
                    .map(|x| self.eval_expr(x, ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                self.array_of(vals, e.span)
            }
            ExprKind::Matrix(rows) => self.eval_matrix(rows, e.span, ctx),
            ExprKind::Comprehension { func, body, indices } => {
                let vals = self.comprehension(body, indices, ctx)?;
                match func {
                    None => {
                        if vals.is_empty() {
                            return Ok(Value {
                                ty: Ty::Real,
                                dims: vec![0],
                                elems: vec![],
                            });
                        }
                        self.array_of(vals, e.span)
                    }
                    Some(f) => {
                        let arr = if vals.is_empty() {
                            Value {
                                ty: Ty::Real,
                                dims: vec![0],
                                elems: vec![],
                            }
                        } else {
                            self.array_of(vals, e.span)?
                        };
                        match f.dotted().as_str() {
                            "sum" => self.reduce(arr, Node::Add(0, 0), 0.0),
                            "product" => self.reduce(arr, Node::Mul(0, 0), 1.0),
                            "min" => self.minmax(arr, Fn2::Min, e.span),
                            "max" => self.minmax(arr, Fn2::Max, e.span),
                            other => Err(Diagnostic::error(
                                f.span,
                                format!("`{other}(... for ...)` is not supported; use sum, product, min, max or an array constructor"),
                            )),
                        }
                    }
                }
            }
            ExprKind::Call { func, args } => self.eval_call(func, args, e.span, ctx),
            ExprKind::Tuple(_) => Err(Diagnostic::error(
                e.span,
                "a parenthesized list is only allowed on the left of `:=` with a function call",
            )),
        }
    }

    fn comprehension(
        &mut self,
        body: &ast::Expr,
        indices: &[ast::ForIndex],
        ctx: &Ctx,
    ) -> Result<Vec<Value>, Diagnostic> {
        let Some((first, rest)) = indices.split_first() else {
            return Ok(vec![self.eval_expr(body, ctx)?]);
        };
        let range = self.for_range(first, ctx)?;
        let mut out = Vec::new();
        for v in range.elems.iter().map(|&x| Value::scalar(range.ty, x)) {
            let c = ctx.with_loop(&first.name.name, v);
            out.extend(self.comprehension(body, rest, &c)?);
        }
        Ok(out)
    }

    /// The values a for-index takes.
    pub(super) fn for_range(&mut self, fi: &ast::ForIndex, ctx: &Ctx) -> Result<Value, Diagnostic> {
        let Some(r) = &fi.range else {
            return Err(Diagnostic::error(
                fi.name.span,
                "a for-loop without `in range` is not supported",
            )
            .with_hint(format!("write `for {} in 1:n loop`", fi.name.name)));
        };
        let v = self.eval_expr(r, ctx)?;
        if v.dims.len() != 1 {
            return Err(Diagnostic::error(
                r.span,
                "the range of a for-loop must be a vector",
            ));
        }
        for &x in &v.elems {
            if self.arena.as_const(x).is_none() {
                let val = self.const_value(x, r.span)?;
                let _ = val;
            }
        }
        let elems = v
            .elems
            .iter()
            .map(|&x| match self.arena.as_const(x) {
                Some(_) => Ok(x),
                None => {
                    let c = self.const_value(x, r.span)?;
                    Ok(self.arena.constant(c))
                }
            })
            .collect::<Result<Vec<_>, Diagnostic>>()?;
        Ok(Value { elems, ..v })
    }

    fn eval_scalar_const(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<f64, Diagnostic> {
        let v = self.eval_expr(e, ctx)?;
        if !v.is_scalar() {
            return Err(Diagnostic::error(
                e.span,
                format!("expected a scalar, found size {}", shape_text(&v.dims)),
            ));
        }
        match self.arena.as_const(v.elems[0]) {
            Some(c) => Ok(c),
            None => self.const_value(v.elems[0], e.span),
        }
    }

    fn expect_numeric(&self, v: &Value, span: Span) -> Result<(), Diagnostic> {
        if v.ty == Ty::Boolean {
            return Err(Diagnostic::error(
                span,
                "a Boolean is used where a number is expected",
            ));
        }
        Ok(())
    }

    fn expect_boolean(&self, v: &Value, span: Span, what: &str) -> Result<(), Diagnostic> {
        if v.ty != Ty::Boolean {
            return Err(Diagnostic::error(
                span,
                format!("{what} needs a Boolean, found a {}", v.ty.name()),
            ));
        }
        Ok(())
    }

    /// `{a, b, c}`: a new leading dimension.
    pub(super) fn array_of(&mut self, vals: Vec<Value>, span: Span) -> Result<Value, Diagnostic> {
        let Some(first) = vals.first() else {
            return Ok(Value {
                ty: Ty::Real,
                dims: vec![0],
                elems: vec![],
            });
        };
        let inner = first.dims.clone();
        let mut ty = first.ty;
        let mut elems = Vec::new();
        for v in &vals {
            if v.dims != inner {
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "the elements of an array must have the same size, found {} and {}",
                        shape_text(&inner),
                        shape_text(&v.dims)
                    ),
                ));
            }
            ty = unify_ty(ty, v.ty).ok_or_else(|| {
                Diagnostic::error(span, "an array cannot mix Boolean and numeric elements")
            })?;
            elems.extend_from_slice(&v.elems);
        }
        let mut dims = vec![vals.len()];
        dims.extend(inner);
        Ok(Value { ty, dims, elems })
    }

    fn eval_matrix(
        &mut self,
        rows: &[Vec<ast::Expr>],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        // Each element is promoted to a matrix (scalar 1x1, vector n x 1);
        // a row concatenates along columns, the rows along rows.
        let mut row_mats: Vec<(usize, usize, Vec<ExprId>, Ty)> = Vec::new();
        for row in rows {
            let mut r: Option<(usize, usize, Vec<ExprId>, Ty)> = None;
            for x in row {
                let v = self.eval_expr(x, ctx)?;
                let (nr, nc) = match v.dims.len() {
                    0 => (1, 1),
                    1 => (v.dims[0], 1),
                    2 => (v.dims[0], v.dims[1]),
                    _ => {
                        return Err(Diagnostic::error(
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
                        (rr, rc + nc, out, unify_ty(rt, v.ty).unwrap_or(Ty::Real))
                    }
                });
            }
            if let Some(r) = r {
                row_mats.push(r);
            }
        }
        let Some(first) = row_mats.first() else {
            return Ok(Value {
                ty: Ty::Real,
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
                    span,
                    format!("matrix rows have different numbers of columns: {cols} and {c}"),
                ));
            }
            ty = unify_ty(ty, *t).unwrap_or(Ty::Real);
            nrows += r;
            elems.extend_from_slice(e);
        }
        Ok(Value {
            ty,
            dims: vec![nrows, cols],
            elems,
        })
    }

    fn eval_if(
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

    fn fold_if(
        &mut self,
        conds: Vec<(ExprId, Value)>,
        mut acc: Value,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        for (c, v) in conds.into_iter().rev() {
            if v.dims != acc.dims {
                return Err(Diagnostic::error(
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

    fn eval_binary(
        &mut self,
        op: BinOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let a = self.eval_expr(lhs, ctx)?;
        let b = self.eval_expr(rhs, ctx)?;
        match op {
            BinOp::And | BinOp::Or => {
                self.expect_boolean(&a, lhs.span, &format!("`{}`", op.symbol()))?;
                self.expect_boolean(&b, rhs.span, &format!("`{}`", op.symbol()))?;
                self.elementwise(&a, &b, span, Ty::Boolean, false, |ar, x, y| {
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
                if (a.ty == Ty::Boolean) != (b.ty == Ty::Boolean) {
                    return Err(Diagnostic::error(
                        span,
                        format!("cannot compare a {} with a {}", a.ty.name(), b.ty.name()),
                    ));
                }
                let event = !ctx.no_event && !ctx.in_function();
                let e = self.arena.rel(rop, a.elems[0], b.elems[0], event);
                Ok(Value::scalar(Ty::Boolean, e))
            }
            _ => {
                self.expect_numeric(&a, lhs.span)?;
                self.expect_numeric(&b, rhs.span)?;
                let int = a.ty == Ty::Integer && b.ty == Ty::Integer;
                let ty = if int { Ty::Integer } else { Ty::Real };
                match op {
                    BinOp::Add | BinOp::Sub => {
                        if a.dims != b.dims {
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
                        self.elementwise(&a, &b, span, Ty::Real, true, |ar, x, y| ar.div(x, y))
                    }
                    BinOp::ElemPow => {
                        self.elementwise(&a, &b, span, Ty::Real, true, |ar, x, y| ar.pow(x, y))
                    }
                    BinOp::Mul => self.multiply(&a, &b, span, ty),
                    BinOp::Div => {
                        if !b.is_scalar() {
                            return Err(Diagnostic::error(
                                rhs.span,
                                "division is only defined by a scalar",
                            ));
                        }
                        self.elementwise(&a, &b, span, Ty::Real, true, |ar, x, y| ar.div(x, y))
                    }
                    BinOp::Pow => {
                        if !a.is_scalar() || !b.is_scalar() {
                            return Err(Diagnostic::error(
                                span,
                                "`^` is defined for scalars; use `.^` for element-wise powers",
                            ));
                        }
                        let e = self.arena.pow(a.elems[0], b.elems[0]);
                        Ok(Value::scalar(Ty::Real, e))
                    }
                    _ => unreachable!("handled above"),
                }
            }
        }
    }

    /// Element-wise operation; with `broadcast`, a scalar combines with each element.
    fn elementwise(
        &mut self,
        a: &Value,
        b: &Value,
        span: Span,
        ty: Ty,
        broadcast: bool,
        f: impl Fn(&mut crate::flat::ExprArena, ExprId, ExprId) -> ExprId,
    ) -> Result<Value, Diagnostic> {
        if a.dims == b.dims {
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
            span,
            format!(
                "the operands have different sizes: {} and {}",
                shape_text(&a.dims),
                shape_text(&b.dims)
            ),
        ))
    }

    /// `*`: scalar products, dot product, matrix-vector and matrix-matrix.
    fn multiply(&mut self, a: &Value, b: &Value, span: Span, ty: Ty) -> Result<Value, Diagnostic> {
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

    fn reduce(&mut self, v: Value, op: Node, unit: f64) -> Result<Value, Diagnostic> {
        let mut acc = self.arena.constant(unit);
        for &x in &v.elems {
            acc = match op {
                Node::Add(..) => self.arena.add(acc, x),
                _ => self.arena.mul(acc, x),
            };
        }
        Ok(Value::scalar(v.ty, acc))
    }

    fn minmax(&mut self, v: Value, f: Fn2, span: Span) -> Result<Value, Diagnostic> {
        let Some((&first, rest)) = v.elems.split_first() else {
            return Err(Diagnostic::error(
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

    /// Component nodes named by a reference in the context's instance, if the
    /// first identifier is a component there.
    pub(super) fn resolve_nodes(
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
        let mut cur = NodeArray::from_node(&node);
        let mut path = first.ident.name.clone();
        cur = self.apply_node_subscripts(cur, &first.subscripts, ctx, &path)?;
        for part in &r.parts[1..] {
            let mut leaves = Vec::new();
            let mut inner_dims: Option<Vec<usize>> = None;
            for leaf in cur.leaves.iter() {
                let CompNode::Inst(i) = leaf else {
                    return Err(Diagnostic::error(
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
                let na = NodeArray::from_node(&n);
                match &inner_dims {
                    None => inner_dims = Some(na.dims.clone()),
                    Some(d) if *d != na.dims => {
                        return Err(Diagnostic::error(
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
    pub(super) fn component_node(
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

    fn apply_node_subscripts(
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

    fn eval_index(
        &mut self,
        s: &Subscript,
        size: usize,
        ctx: &Ctx,
        path: &str,
    ) -> Result<Index, Diagnostic> {
        match s {
            Subscript::All(_) => Ok(Index::Many((1..=size).collect())),
            Subscript::Index(e) => {
                let mut c = ctx.clone();
                c.end = Some(size);
                let v = self.eval_expr(e, &c)?;
                if v.ty == Ty::Boolean {
                    return Err(Diagnostic::error(e.span, "an index must be an Integer"));
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
                            e.span,
                            format!(
                                "index {} is out of bounds for `{path}`, which has size {size} here",
                                super::super::flat::expr::format_number(val)
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

    pub(super) fn resolve_ref(&mut self, r: &ComponentRef, ctx: &Ctx) -> Result<Value, Diagnostic> {
        let first = &r.parts[0];
        let name = first.ident.name.as_str();
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
                    r.span,
                    "records are not supported in functions",
                ));
            }
            return self.local_value(&l, &first.subscripts, ctx, name);
        }
        if let Some(nodes) = self.resolve_nodes(r, ctx)? {
            return self.nodes_value(nodes, r);
        }
        if !r.global && r.parts.len() == 1 && name == "time" && first.subscripts.is_empty() {
            let t = self.arena.intern(Node::Time);
            return Ok(Value::scalar(Ty::Real, t));
        }
        if let Some(v) = self.resolve_lexical(r, ctx)? {
            return Ok(v);
        }
        Err(self.unknown_name(r, ctx))
    }

    fn unknown_name(&mut self, r: &ComponentRef, ctx: &Ctx) -> Diagnostic {
        let name = &r.parts[0].ident.name;
        let mut candidates: Vec<String> = ctx.loops.iter().map(|(n, _)| n.clone()).collect();
        if let Some(l) = &ctx.locals {
            candidates.extend(l.keys().cloned());
        }
        if let Some(i) = ctx.scope.inst {
            candidates.extend(self.instances[i as usize].order.iter().cloned());
        }
        let mut d = Diagnostic::error(r.parts[0].ident.span, format!("unknown name `{name}`"))
            .with_label("not declared in this scope");
        if let Some(c) = crate::diag::closest(name, candidates.iter().map(|s| s.as_str())) {
            d = d.with_hint(format!("did you mean `{c}`?"));
        } else {
            d = d.with_hint(format!("declare it, e.g. `parameter Real {name} = ...;`"));
        }
        d
    }

    fn nodes_value(&mut self, nodes: NodeArray, r: &ComponentRef) -> Result<Value, Diagnostic> {
        let mut elems = Vec::with_capacity(nodes.leaves.len());
        let mut ty = None;
        for leaf in nodes.leaves.iter() {
            let CompNode::Var(v) = leaf else {
                return Err(Diagnostic::error(
                    r.span,
                    format!(
                        "`{}` is a component, not a variable, and cannot be used in an expression",
                        r.dotted()
                    ),
                )
                .with_hint("refer to one of its variables, e.g. `a.phi`"));
            };
            let var = &self.vars[*v as usize];
            let t = Ty::from_scalar(var.ty);
            ty = Some(ty.map_or(t, |x: Ty| unify_ty(x, t).unwrap_or(Ty::Real)));
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
            ty: ty.unwrap_or(Ty::Real),
            dims: nodes.dims,
            elems,
        })
    }

    fn local_value(
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
        if sel.len() != l.dims.len() || sel.iter().any(|s| matches!(s, Index::Many(_))) {
            return Err(Diagnostic::error(
                r_span(&subs[0]),
                "a run-time index must select a single element (give every subscript)",
            ));
        }
        // Row-major 1-based position.
        let mut pos = self.arena.zero();
        for (k, s) in sel.iter().enumerate() {
            let ik = match s {
                Index::One(i) => self.arena.constant(*i as f64),
                Index::Dynamic(e) => *e,
                Index::Many(_) => unreachable!("checked above"),
            };
            let im1 = {
                let one = self.arena.one();
                self.arena.sub(ik, one)
            };
            let stride: usize = l.dims[k + 1..].iter().product();
            let st = self.arena.constant(stride as f64);
            let term = self.arena.mul(im1, st);
            pos = self.arena.add(pos, term);
        }
        let one = self.arena.one();
        let index = self.arena.add(pos, one);
        let e = self.arena.intern(Node::Elem {
            base: l.base,
            len: n as u32,
            index,
        });
        Ok(Value::scalar(l.ty, e))
    }

    fn apply_value_subscripts(
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
                r_span(&subs[0]),
                format!("`{name}` has {} dimension(s)", v.dims.len()),
            ));
        }
        let mut sel = Vec::new();
        for (k, s) in subs.iter().enumerate() {
            match self.eval_index(s, v.dims[k], ctx, name)? {
                Index::Dynamic(_) => {
                    return Err(Diagnostic::error(
                        r_span(s),
                        "this index must be a parameter expression",
                    ));
                }
                i => sel.push(i),
            }
        }
        let (dims, picks) = pick_positions(&v.dims, &sel);
        Ok(Value {
            ty: v.ty,
            dims,
            elems: picks.into_iter().map(|p| v.elems[p]).collect(),
        })
    }

    /// Constants of enclosing classes and packages, and enumeration literals.
    fn resolve_lexical(
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
                    if r.parts.len() > 1 {
                        return Err(Diagnostic::error(
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
        let Some(mut class) = self.lib.lookup_simple(start, first)? else {
            return Ok(None);
        };
        for (k, part) in r.parts.iter().enumerate().skip(1) {
            let last = k == r.parts.len() - 1;
            let pname = &part.ident.name;
            if last {
                let cname = self.lib.entry(class).full_name.clone();
                match cname.as_str() {
                    "StateSelect" => {
                        let v = ["never", "avoid", "default", "prefer", "always"]
                            .iter()
                            .position(|x| x == pname);
                        if let Some(i) = v {
                            return Ok(Some(Value::scalar(
                                Ty::Integer,
                                self.arena.constant(i as f64 + 1.0),
                            )));
                        }
                    }
                    "AssertionLevel" => {
                        let v = ["error", "warning"].iter().position(|x| x == pname);
                        if let Some(i) = v {
                            return Ok(Some(Value::scalar(
                                Ty::Integer,
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
                            Ty::Integer,
                            self.arena.constant(i as f64 + 1.0),
                        )));
                    }
                    return Err(Diagnostic::error(
                        part.ident.span,
                        format!("enumeration `{cname}` has no literal `{pname}`"),
                    ));
                }
                if let Some(v) = self.package_constant(class, pname, part.ident.span)? {
                    return self
                        .apply_value_subscripts(v, &part.subscripts, ctx, pname)
                        .map(Some);
                }
                return Err(Diagnostic::error(
                    part.ident.span,
                    format!("`{cname}` has no constant `{pname}`"),
                ));
            }
            class = match self.lib.member_class(class, pname)? {
                Some(c) => c,
                None => {
                    let cname = self.lib.entry(class).full_name.clone();
                    return Err(Diagnostic::error(
                        part.ident.span,
                        format!("`{cname}` has no class `{pname}`"),
                    ));
                }
            };
        }
        Ok(None)
    }

    /// The value of constant `name` declared in class `class` (a package or
    /// an enclosing model), evaluated in that class's scope.
    /// A constant that an import of `class` binds to `name`: `import
    /// Modelica.Constants.pi;`, `import g = P.g;`, `import P.*;` or
    /// `import P.{g, h};` (MLS 13.2.2). Class imports are the library's.
    fn imported_constant(
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

    fn package_constant(
        &mut self,
        class: ast_class::ClassId,
        name: &str,
        span: Span,
    ) -> Result<Option<Value>, Diagnostic> {
        if let Some(v) = self.package_constants.get(&(class, name.to_string())) {
            return Ok(Some(v.clone()));
        }
        if self.lib.builtin(class).is_some() {
            return Ok(None);
        }
        let Some(def) = self.lib.def(class)? else {
            return Ok(None);
        };
        if !matches!(def.body, ast::ClassBody::Long(_)) {
            return Ok(None);
        }
        let contents = self.contents(class, &super::modifier::Modifier::default(), None, 0)?;
        let Some(pc) = contents
            .components
            .into_iter()
            .find(|c| c.decl.name.name == name)
        else {
            return Ok(None);
        };
        if !matches!(
            pc.decl.prefix.variability,
            ast::Variability::Constant | ast::Variability::Parameter
        ) {
            return Ok(None);
        }
        let Some(b) = pc
            .decl
            .modification
            .as_ref()
            .and_then(|m| m.binding.as_ref())
        else {
            return Err(Diagnostic::error(
                span,
                format!("constant `{name}` has no value"),
            ));
        };
        let ctx = Ctx::model(Scope {
            inst: None,
            class: Some(class),
        });
        let v = self.eval_expr(b, &ctx)?;
        // Fold to numbers: package constants are compile-time values.
        let mut elems = Vec::new();
        for &e in &v.elems {
            let c = self.const_value(e, b.span)?;
            elems.push(self.arena.constant(c));
        }
        let v = Value { elems, ..v };
        self.package_constants
            .insert((class, name.to_string()), v.clone());
        Ok(Some(v))
    }

    // ------------------------------------------------------------ calls

    fn positional(
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
                span,
                format!("`{name}` takes {expect} argument(s), {} given", out.len()),
            ));
        }
        Ok(out)
    }

    fn eval_call(
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
                span,
                format!("`{name}` is an equation or statement, not a function with a value"),
            ));
        }
        let outs = self.call_user_function(func, args, span, ctx)?;
        outs.into_iter()
            .next()
            .ok_or_else(|| Diagnostic::error(span, format!("function `{name}` has no output")))
    }

    fn eval_builtin(
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
                Fn1::Integer | Fn1::Sign if v.ty == Ty::Integer => Ty::Integer,
                Fn1::Integer => Ty::Integer,
                Fn1::Abs => v.ty,
                _ => Ty::Real,
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
                        span,
                        "`der` is not allowed in a function",
                    ));
                }
                let v = self.eval_expr(&a[0], ctx)?;
                self.expect_numeric(&v, a[0].span)?;
                let mut elems = Vec::new();
                for &x in &v.elems {
                    elems.push(self.der_of(x, a[0].span, ctx)?);
                }
                Ok(Value {
                    ty: Ty::Real,
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
                        _ => return Err(Diagnostic::error(a[0].span, "`pre` needs a variable")),
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
                    ty: Ty::Boolean,
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
                Ok(Value::scalar(Ty::Boolean, self.arena.intern(n)))
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
                let e = self.arena.intern(Node::Sample(s.elems[0], i.elems[0]));
                Ok(Value::scalar(Ty::Boolean, e))
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
                    return Ok(Value::scalar(Ty::Real, self.arena.if_(c, p, m)));
                }
                let f = match name {
                    "atan2" => Fn2::Atan2,
                    "mod" => Fn2::Mod,
                    "rem" => Fn2::Rem,
                    _ => Fn2::Div,
                };
                let ty = if f != Fn2::Atan2 && x.ty == Ty::Integer && y.ty == Ty::Integer {
                    Ty::Integer
                } else {
                    Ty::Real
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
                        span,
                        format!("`{name}(a, b)` takes two scalars"),
                    ));
                }
                let ty = unify_ty(x.ty, y.ty).unwrap_or(Ty::Real);
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
                            a[1].span,
                            format!(
                                "dimension {k} does not exist; the array has {}",
                                v.dims.len()
                            ),
                        ));
                    }
                    return Ok(Value::scalar(
                        Ty::Integer,
                        self.arena.constant(v.dims[k - 1] as f64),
                    ));
                }
                let elems = v
                    .dims
                    .iter()
                    .map(|&d| self.arena.constant(d as f64))
                    .collect();
                Ok(Value {
                    ty: Ty::Integer,
                    dims: vec![v.dims.len()],
                    elems,
                })
            }
            "ndims" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                Ok(Value::scalar(
                    Ty::Integer,
                    self.arena.constant(v.dims.len() as f64),
                ))
            }
            "zeros" | "ones" => {
                let a = self.positional(args, span, name, 1, 8)?;
                let dims = self.const_dims(&a, ctx)?;
                let c = self.arena.constant(if name == "zeros" { 0.0 } else { 1.0 });
                let n: usize = dims.iter().product();
                Ok(Value {
                    ty: Ty::Integer,
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
                    ty: Ty::Integer,
                    dims: vec![n, n],
                    elems,
                })
            }
            "diagonal" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.dims.len() != 1 {
                    return Err(Diagnostic::error(a[0].span, "`diagonal` takes a vector"));
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
                    ty: Ty::Real,
                    dims: vec![n],
                    elems,
                })
            }
            "transpose" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.dims.len() != 2 {
                    return Err(Diagnostic::error(a[0].span, "`transpose` takes a matrix"));
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
                    return Err(Diagnostic::error(span, "`cross` takes two 3-vectors"));
                }
                let mut elems = Vec::new();
                for (i, j) in [(1, 2), (2, 0), (0, 1)] {
                    let p = self.arena.mul(x.elems[i], y.elems[j]);
                    let q = self.arena.mul(x.elems[j], y.elems[i]);
                    elems.push(self.arena.sub(p, q));
                }
                Ok(Value {
                    ty: Ty::Real,
                    dims: vec![3],
                    elems,
                })
            }
            "skew" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let x = self.eval_expr(&a[0], ctx)?;
                if x.dims != [3] {
                    return Err(Diagnostic::error(span, "`skew` takes a 3-vector"));
                }
                let z = self.arena.zero();
                let [x1, x2, x3] = [x.elems[0], x.elems[1], x.elems[2]];
                let n1 = self.arena.neg(x1);
                let n2 = self.arena.neg(x2);
                let n3 = self.arena.neg(x3);
                Ok(Value {
                    ty: Ty::Real,
                    dims: vec![3, 3],
                    elems: vec![z, n3, x2, x3, z, n1, n2, x1, z],
                })
            }
            "outerProduct" => {
                let a = self.positional(args, span, name, 2, 2)?;
                let x = self.eval_expr(&a[0], ctx)?;
                let y = self.eval_expr(&a[1], ctx)?;
                if x.dims.len() != 1 || y.dims.len() != 1 {
                    return Err(Diagnostic::error(span, "`outerProduct` takes two vectors"));
                }
                let mut elems = Vec::new();
                for &p in &x.elems {
                    for &q in &y.elems {
                        elems.push(self.arena.mul(p, q));
                    }
                }
                Ok(Value {
                    ty: Ty::Real,
                    dims: vec![x.dims[0], y.dims[0]],
                    elems,
                })
            }
            "scalar" => {
                let a = self.positional(args, span, name, 1, 1)?;
                let v = self.eval_expr(&a[0], ctx)?;
                if v.elems.len() != 1 {
                    return Err(Diagnostic::error(
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
                        span,
                        "`cat` is supported for vectors along dimension 1",
                    ));
                }
                let ty = vals.first().map(|v| v.ty).unwrap_or(Ty::Real);
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
                    ty: Ty::Integer,
                    ..v
                })
            }
            "String" => Err(Diagnostic::error(
                span,
                "`String(...)` may only appear in messages",
            )),
            other => Err(Diagnostic::error(
                span,
                format!("builtin `{other}` is not supported here"),
            )),
        }
    }

    fn call_args_named(
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
                    Diagnostic::error(span, format!("`{name}` needs argument `{}`", params[i]))
                })
            })
            .collect()
    }

    fn const_dims(&mut self, a: &[ast::Expr], ctx: &Ctx) -> Result<Vec<usize>, Diagnostic> {
        let mut dims = Vec::new();
        for x in a {
            let v = self.eval_scalar_const(x, ctx)?;
            if v < 0.0 || v.fract() != 0.0 {
                return Err(Diagnostic::error(
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
    fn der_of(&mut self, x: ExprId, span: Span, ctx: &Ctx) -> Result<ExprId, Diagnostic> {
        match self.arena.node(x) {
            Node::Var(v) => {
                let var = &self.vars[v as usize];
                if var.is_parameter() {
                    return Ok(self.arena.zero());
                }
                if var.ty != ScalarType::Real {
                    let n = var.name.clone();
                    return Err(Diagnostic::error(
                        span,
                        format!("`der({n})`: `{n}` is not a Real variable"),
                    ));
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
                self.equations.push(crate::flat::Equation {
                    lhs,
                    rhs: x,
                    span,
                    scope,
                });
                Ok(self.arena.intern(Node::Der(v)))
            }
        }
    }

    /// Calls a user function; returns every output's value.
    pub(super) fn call_user_function(
        &mut self,
        func: &ComponentRef,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Vec<Value>, Diagnostic> {
        let Some(fname) = func.as_name() else {
            return Err(Diagnostic::error(
                func.span,
                "a function name cannot have subscripts",
            ));
        };
        let class = match self.lib.lookup(ctx.scope.class, &fname) {
            Ok(c) => c,
            Err(_) => {
                let mut d =
                    Diagnostic::error(func.span, format!("unknown function `{}`", fname.dotted()))
                        .with_label("no function of this name is visible here");
                if let Some(c) = crate::diag::closest(&fname.dotted(), BUILTINS.iter().copied()) {
                    d = d.with_hint(format!("did you mean the builtin `{c}`?"));
                }
                return Err(d);
            }
        };
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
        }
        match def.as_ref().map(|d| d.kind) {
            Some(ast::ClassKind::Function) => {}
            Some(ast::ClassKind::Record) => {
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "record constructor `{}` is not supported yet",
                        fname.dotted()
                    ),
                ));
            }
            _ => {
                return Err(Diagnostic::error(
                    func.span,
                    format!("`{}` is not a function", fname.dotted()),
                ));
            }
        }
        let sig = self.function_signature(class, span)?;
        // Match arguments to inputs: positional in declaration order, then named.
        let mut given: Vec<Option<Value>> = vec![None; sig.inputs.len()];
        let mut k = 0;
        for a in args {
            match a {
                Arg::Positional(e) => {
                    if k >= sig.inputs.len() {
                        return Err(Diagnostic::error(
                            e.span,
                            format!(
                                "`{}` takes {} argument(s)",
                                fname.dotted(),
                                sig.inputs.len()
                            ),
                        ));
                    }
                    given[k] = Some(self.eval_expr(e, ctx)?);
                    k += 1;
                }
                Arg::Named(n, e) => {
                    let Some(i) = sig.inputs.iter().position(|x| x.name == n.name) else {
                        return Err(Diagnostic::error(
                            n.span,
                            format!("`{}` has no input `{}`", fname.dotted(), n.name),
                        ));
                    };
                    given[i] = Some(self.eval_expr(e, ctx)?);
                }
            }
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
                            span,
                            format!("`{}` needs input `{}`", fname.dotted(), sig.inputs[i].name),
                        ));
                    }
                },
            }
        }
        let shapes: Vec<Vec<usize>> = values.iter().map(|v| v.dims.clone()).collect();
        let (fid, out_shapes) = self.compile_function(class, &shapes, span)?;
        let mut flat_args = Vec::new();
        for v in &values {
            flat_args.extend_from_slice(&v.elems);
        }
        let call = self.arena.call_site(CallSite {
            func: fid,
            args: flat_args,
        });
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

    /// Strings in messages: literals, `+`, and `String(x)` of numbers (as text
    /// of the expression, since values are only known at run time).
    pub(super) fn eval_string(&mut self, e: &ast::Expr, ctx: &Ctx) -> Result<String, Diagnostic> {
        match &e.kind {
            ExprKind::String(s) => Ok(s.clone()),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } => Ok(format!(
                "{}{}",
                self.eval_string(lhs, ctx)?,
                self.eval_string(rhs, ctx)?
            )),
            ExprKind::Call { func, args } if func.dotted() == "String" => {
                let text = match args.first() {
                    Some(Arg::Positional(x)) => {
                        let v = self.eval_expr(x, ctx)?;
                        match v.elems.first().and_then(|&e| self.arena.as_const(e)) {
                            Some(c) => crate::flat::expr::format_number(c),
                            None => "?".into(),
                        }
                    }
                    _ => String::new(),
                };
                Ok(text)
            }
            ExprKind::Ref(r) => match self.resolve_lexical(r, ctx) {
                Ok(Some(_)) | Ok(None) | Err(_) => {
                    Err(Diagnostic::error(e.span, "expected a string"))
                }
            },
            _ => Err(Diagnostic::error(e.span, "expected a string")),
        }
    }
}

mod ast_class {
    pub use super::super::library::ClassId;
}

fn r_span(s: &Subscript) -> Span {
    match s {
        Subscript::All(s) => *s,
        Subscript::Index(e) => e.span,
    }
}

fn unify_ty(a: Ty, b: Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Boolean, Ty::Boolean) => Some(Ty::Boolean),
        (Ty::Boolean, _) | (_, Ty::Boolean) => None,
        (Ty::Integer, Ty::Integer) => Some(Ty::Integer),
        _ => Some(Ty::Real),
    }
}

fn dim_error(span: Span, op: BinOp, a: &Value, b: &Value) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "dimension mismatch in `{}`: left operand has size {}, right operand has size {}",
            op.symbol(),
            shape_text(&a.dims),
            shape_text(&b.dims)
        ),
    )
}

/// Row-major positions selected by `sel` in an array of `dims`, and the
/// resulting shape (a scalar index drops its dimension).
fn pick_positions(dims: &[usize], sel: &[Index]) -> (Vec<usize>, Vec<usize>) {
    let mut out_dims = Vec::new();
    let mut lists: Vec<Vec<usize>> = Vec::new();
    for (k, &d) in dims.iter().enumerate() {
        match sel.get(k) {
            Some(Index::One(i)) => lists.push(vec![*i]),
            Some(Index::Many(v)) => {
                out_dims.push(v.len());
                lists.push(v.clone());
            }
            Some(Index::Dynamic(_)) => lists.push(vec![1]),
            None => {
                out_dims.push(d);
                lists.push((1..=d).collect());
            }
        }
    }
    let mut positions = vec![0usize];
    for (k, list) in lists.iter().enumerate() {
        let stride: usize = dims[k + 1..].iter().product();
        let mut next = Vec::with_capacity(positions.len() * list.len());
        for &p in &positions {
            for &i in list {
                next.push(p + (i - 1) * stride);
            }
        }
        positions = next;
    }
    (out_dims, positions)
}
