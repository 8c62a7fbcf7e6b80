//! Expression evaluation during flattening: an AST expression becomes an array
//! of scalar flat expressions with a shape.
//!
//! This is where arrays are scalarized and where dimensions are checked:
//! `A*x` of a 2x3 matrix and a 3-vector becomes two scalar sums of products;
//! `x = {1, 2}` with `x[3]` is reported with both sizes. Names resolve in the
//! context's instance (components), function locals, for-loop indices, then
//! lexically enclosing classes (constants, enumerations).
//!
//! Rooms: this file has the values (`Value`, typed by `flat::ScalarType`), the context (`Ctx`)
//! and the dispatch over expression kinds; `names.rs` resolves references,
//! `arrays.rs` does array construction and arithmetic, `builtins.rs` the
//! builtin operators and functions, `calls.rs` calls of user functions,
//! `tables.rs` data files read at compile time (`Tables.readCSV`),
//! `msl_tables.rs` the MSL's table objects and their C functions,
//! `strings.rs` String expressions, known while flattening.

mod arrays;
mod builtins;
mod calls;
mod msl_tables;
mod names;
mod strings;
mod tables;

pub(super) use msl_tables::TableObject;

use super::modifier::Scope;
use super::{CompNode, Flattener, InstId};
use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{CallSite, ExprId, Fn1, Fn2, Node, RelOp, ScalarType, Variability};
use crate::syntax::ast::{self, Arg, BinOp, ComponentRef, ExprKind, Subscript, UnOp};
use std::collections::HashMap;
use std::rc::Rc;

/// A value during flattening: an array (possibly 0-dimensional) of scalar
/// expressions in row-major order.
#[derive(Clone, Debug)]
pub struct Value {
    pub ty: ScalarType,
    pub dims: Vec<usize>,
    pub elems: Vec<ExprId>,
}

/// Whether two shapes are equal, compared element by element: slice
/// equality calls `memcmp`, whose calls were a third of the time spent
/// flattening a large model of scalar equations (the 50 x 50 grid of
/// benches/grid: 33 -> 23 ms), although their shapes are empty.
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Value {
    pub fn scalar(ty: ScalarType, e: ExprId) -> Value {
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
            DiagnosticKind::Shape,
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
            return Err(Diagnostic::error(DiagnosticKind::Shape,
                span,
                format!(
                    "this value has size {} but is given to an array component of another size (it has no element {})",
                    shape_text(&v.dims),
                    shape_text(index)
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
    pub ty: ScalarType,
    pub input: bool,
}

/// Where names resolve and how relations behave.
#[derive(Clone)]
pub struct Ctx {
    pub scope: Scope,
    /// For-loop indices in scope, innermost last (shared: a context is
    /// copied for every subscript it evaluates).
    pub loops: Rc<Vec<(String, Value)>>,
    pub no_event: bool,
    pub locals: Option<Rc<HashMap<String, Local>>>,
    /// Size of the dimension being subscripted, for `end`.
    pub end: Option<usize>,
}

impl Ctx {
    pub fn model(scope: Scope) -> Ctx {
        Ctx {
            scope,
            loops: Rc::default(),
            no_event: false,
            locals: None,
            end: None,
        }
    }
    pub fn with_loop(&self, name: &str, v: Value) -> Ctx {
        let mut c = self.clone();
        Rc::make_mut(&mut c.loops).push((name.to_string(), v));
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

pub(super) const BUILTINS: &[&str] = &[
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
            ExprKind::Real(v) => Ok(Value::scalar(ScalarType::Real, self.arena.constant(*v))),
            ExprKind::Integer(v) => Ok(Value::scalar(ScalarType::Integer, self.arena.constant(*v as f64))),
            ExprKind::Bool(b) => Ok(Value::scalar(ScalarType::Boolean, self.arena.constant(f64::from(*b)))),
            ExprKind::String(_) => Err(Diagnostic::error(DiagnosticKind::Type, e.span, "a string is not allowed here")
                .with_hint("strings may only appear in descriptions and in the messages of assert and terminate")),
            ExprKind::Ref(r) => self.resolve_ref(r, ctx),
            ExprKind::FunctionPartial { func, .. } => Err(Diagnostic::error(DiagnosticKind::Unsupported,
                e.span,
                format!(
                    "functions passed as arguments (`function {}(...)`) are not supported",
                    func.dotted()
                ),
            )
            .with_label("a function argument")
            .with_hint("call a function written for this one purpose instead")),
            ExprKind::End => match ctx.end {
                Some(n) => Ok(Value::scalar(ScalarType::Integer, self.arena.constant(n as f64))),
                None => Err(Diagnostic::error(DiagnosticKind::Restriction, e.span, "`end` is only allowed inside a subscript")),
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
                    return Err(Diagnostic::error(DiagnosticKind::Evaluation, e.span, "the step of a range cannot be zero"));
                }
                let n = (((b - a) / s).floor() + 1.0).max(0.0) as usize;
                if n > 10_000_000 {
                    return Err(Diagnostic::error(DiagnosticKind::Limit, e.span, format!("range of {n} elements is too large")));
                }
                let int = a.fract() == 0.0 && s.fract() == 0.0;
                let elems = (0..n).map(|k| self.arena.constant(a + s * k as f64)).collect();
                Ok(Value {
                    ty: if int { ScalarType::Integer } else { ScalarType::Real },
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
                let f = match func {
                    Some(f) if f.dotted() != "array" => f,
                    _ => return self.array_comprehension(body, indices, e.span, ctx),
                };
                let vals = self.comprehension(body, indices, ctx)?;
                // (No values: array_of gives the empty Real vector.)
                let arr = self.array_of(vals, e.span)?;
                match f.dotted().as_str() {
                    "sum" => self.reduce(arr, Node::Add(0, 0), 0.0),
                    "product" => self.reduce(arr, Node::Mul(0, 0), 1.0),
                    "min" => self.minmax(arr, Fn2::Min, e.span),
                    "max" => self.minmax(arr, Fn2::Max, e.span),
                    other => Err(Diagnostic::error(DiagnosticKind::Unsupported,
                        f.span,
                        format!("`{other}(... for ...)` is not supported; use sum, product, min, max or an array constructor"),
                    )),
                }
            }
            ExprKind::Call { func, args } => self.eval_call(func, args, e.span, ctx),
            ExprKind::Tuple(_) => Err(Diagnostic::error(DiagnosticKind::Restriction,
                e.span,
                "a parenthesized list is only allowed on the left of `:=` with a function call",
            )),
        }
    }

    /// An array constructor with iterators. Several iterators nest, the
    /// last one outermost (Modelica 3.6, 10.4.2.2: `{e for i in A, j in B}`
    /// is `{{e for i in A} for j in B}`), so the result has one dimension
    /// per iterator, the last iterator's first.
    fn array_comprehension(
        &mut self,
        body: &ast::Expr,
        indices: &[ast::ForIndex],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let Some((last, rest)) = indices.split_last() else {
            return self.eval_expr(body, ctx);
        };
        let range = self.for_range(last, ctx)?;
        let mut vals = Vec::with_capacity(range.elems.len());
        for v in range.elems.iter().map(|&x| Value::scalar(range.ty, x)) {
            let c = ctx.with_loop(&last.name.name, v);
            vals.push(if rest.is_empty() {
                self.eval_expr(body, &c)?
            } else {
                self.array_comprehension(body, rest, span, &c)?
            });
        }
        self.array_of(vals, span)
    }

    /// The values of a reduction's body over every combination of its
    /// iterators, the first iterator outermost.
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
                DiagnosticKind::Unsupported,
                fi.name.span,
                "a for-loop without `in range` is not supported",
            )
            .with_hint(format!("write `for {} in 1:n loop`", fi.name.name)));
        };
        let v = self.eval_expr(r, ctx)?;
        if v.dims.len() != 1 {
            return Err(Diagnostic::error(
                DiagnosticKind::Shape,
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
                DiagnosticKind::Shape,
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
        if v.ty == ScalarType::Boolean {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                span,
                "a Boolean is used where a number is expected",
            ));
        }
        Ok(())
    }

    fn expect_boolean(&self, v: &Value, span: Span, what: &str) -> Result<(), Diagnostic> {
        if v.ty != ScalarType::Boolean {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                span,
                format!("{what} needs a Boolean, found a {}", v.ty.name()),
            ));
        }
        Ok(())
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

fn unify_ty(a: ScalarType, b: ScalarType) -> Option<ScalarType> {
    match (a, b) {
        (ScalarType::Boolean, ScalarType::Boolean) => Some(ScalarType::Boolean),
        (ScalarType::Boolean, _) | (_, ScalarType::Boolean) => None,
        (ScalarType::Integer, ScalarType::Integer) => Some(ScalarType::Integer),
        _ => Some(ScalarType::Real),
    }
}

fn dim_error(span: Span, op: BinOp, a: &Value, b: &Value) -> Diagnostic {
    Diagnostic::error(
        DiagnosticKind::Shape,
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
    // One element (`T[i, j]`, the usual subscript of a for-equation): its
    // row-major position, without the lists of the general case.
    if sel.len() == dims.len() && sel.iter().all(|s| matches!(s, Index::One(_))) {
        let mut position = 0;
        for (s, &d) in sel.iter().zip(dims) {
            if let Index::One(i) = s {
                position = position * d + (i - 1);
            }
        }
        return (Vec::new(), vec![position]);
    }
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
