//! Symbolic manipulation of flat expressions: differentiation (time,
//! partial and directional: `tangent.rs` forms the Jacobians' pieces),
//! solving an equation that is linear in one variable, substitution and
//! numeric evaluation.
//!
//! Differentiation is forward mode over the hash-consed arena, memoized per
//! node, so the derivative of an expression with shared subexpressions costs
//! time linear in the number of distinct nodes. Simplification is that of
//! the arena's constructors (constant folding and the ring identities), which
//! keeps derivatives readable without a separate rewriting pass.

pub mod eval;
pub mod fndiff;
pub mod tangent;

use crate::flat::{ExprArena, ExprId, Fn1, Fn2, Node, RelOp, VarId};
use rustc_hash::FxHashMap as HashMap;

/// What the derivative of a leaf or a user-function call is.
pub trait DiffRules {
    /// The derivative of a leaf node (`Var`, `Der`, `Pre`, `Time`, `Elem`);
    /// `None` means zero.
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String>;

    /// The derivative functions of the model's user functions.
    fn derivatives(&mut self) -> &mut crate::symbolic::fndiff::Derivatives;

    /// The derivative of output `output` of user-function call `call`, given
    /// the derivatives of its arguments.
    fn call(
        &mut self,
        arena: &mut ExprArena,
        call: u32,
        output: u32,
        arg_derivatives: &[ExprId],
    ) -> Result<ExprId, String> {
        self.derivatives()
            .call_derivative(arena, call, output, arg_derivatives)
    }
}

/// Differentiates `e` by the chain rule; `memo` caches per node.
pub fn differentiate(
    arena: &mut ExprArena,
    e: ExprId,
    rules: &mut dyn DiffRules,
    memo: &mut HashMap<ExprId, ExprId>,
) -> Result<ExprId, String> {
    if let Some(&d) = memo.get(&e) {
        return Ok(d);
    }
    // Iterative post-order over the nodes reachable from e, so very long
    // sums (a chain of 10 000 elements) do not overflow the stack.
    for id in arena.reachable(&[e]) {
        if memo.contains_key(&id) {
            continue;
        }
        let d = diff_node(arena, id, rules, memo)?;
        memo.insert(id, d);
    }
    Ok(memo[&e])
}

fn diff_node(
    arena: &mut ExprArena,
    id: ExprId,
    rules: &mut dyn DiffRules,
    memo: &HashMap<ExprId, ExprId>,
) -> Result<ExprId, String> {
    let d = |x: ExprId| memo[&x];
    let n = arena.node(id);
    Ok(match n {
        Node::Const(_) | Node::Initial | Node::Terminal | Node::Sample(..) => arena.zero(),
        Node::Not(_) | Node::And(..) | Node::Or(..) | Node::Rel { .. } => arena.zero(),
        Node::Var(_) | Node::Der(_) | Node::Pre(_) | Node::Time | Node::Elem { .. } => {
            match rules.leaf(arena, n)? {
                Some(x) => x,
                None => arena.zero(),
            }
        }
        Node::Neg(a) => arena.neg(d(a)),
        Node::Add(a, b) => arena.add(d(a), d(b)),
        Node::Sub(a, b) => arena.sub(d(a), d(b)),
        Node::Mul(a, b) => {
            let l = arena.mul(d(a), b);
            let r = arena.mul(a, d(b));
            arena.add(l, r)
        }
        Node::Div(a, b) => {
            // (a/b)' = a'/b - a b'/b^2 = (a' - (a/b) b')/b
            let q = arena.div(a, b);
            let t = arena.mul(q, d(b));
            let num = arena.sub(d(a), t);
            arena.div(num, b)
        }
        Node::Pow(a, b) => {
            if let Some(c) = arena.as_const(b) {
                // c a^(c-1) a'
                let cm1 = arena.constant(c - 1.0);
                let p = arena.pow(a, cm1);
                let cc = arena.constant(c);
                let k = arena.mul(cc, p);
                arena.mul(k, d(a))
            } else if arena.as_const(a).is_some() {
                // a^b ln(a) b'
                let ln = arena.call1(Fn1::Log, a);
                let t = arena.mul(id, ln);
                arena.mul(t, d(b))
            } else {
                // a^b (b' ln a + b a'/a)
                let ln = arena.call1(Fn1::Log, a);
                let t1 = arena.mul(d(b), ln);
                let q = arena.div(d(a), a);
                let t2 = arena.mul(b, q);
                let s = arena.add(t1, t2);
                arena.mul(id, s)
            }
        }
        Node::If(c, a, b) => arena.if_(c, d(a), d(b)),
        Node::Call1(f, a) => {
            let da = d(a);
            if arena.is_const(da, 0.0) {
                return Ok(arena.zero());
            }
            let inner = match f {
                Fn1::Abs => arena.call1(Fn1::Sign, a),
                Fn1::Sign | Fn1::Floor | Fn1::Ceil | Fn1::Integer => return Ok(arena.zero()),
                Fn1::Sqrt => {
                    let two = arena.constant(2.0);
                    let s = arena.mul(two, id);
                    let one = arena.one();
                    arena.div(one, s)
                }
                Fn1::Sin => arena.call1(Fn1::Cos, a),
                Fn1::Cos => {
                    let s = arena.call1(Fn1::Sin, a);
                    arena.neg(s)
                }
                Fn1::Tan => {
                    let c = arena.call1(Fn1::Cos, a);
                    let two = arena.constant(2.0);
                    let c2 = arena.pow(c, two);
                    let one = arena.one();
                    arena.div(one, c2)
                }
                Fn1::Asin | Fn1::Acos => {
                    let two = arena.constant(2.0);
                    let a2 = arena.pow(a, two);
                    let one = arena.one();
                    let r = arena.sub(one, a2);
                    let s = arena.call1(Fn1::Sqrt, r);
                    let q = arena.div(one, s);
                    if f == Fn1::Acos { arena.neg(q) } else { q }
                }
                Fn1::Atan => {
                    let two = arena.constant(2.0);
                    let a2 = arena.pow(a, two);
                    let one = arena.one();
                    let r = arena.add(one, a2);
                    arena.div(one, r)
                }
                Fn1::Sinh => arena.call1(Fn1::Cosh, a),
                Fn1::Cosh => arena.call1(Fn1::Sinh, a),
                Fn1::Tanh => {
                    let two = arena.constant(2.0);
                    let t2 = arena.pow(id, two);
                    let one = arena.one();
                    arena.sub(one, t2)
                }
                Fn1::Exp => id,
                Fn1::Log => {
                    let one = arena.one();
                    arena.div(one, a)
                }
                Fn1::Log10 => {
                    let ln10 = arena.constant(std::f64::consts::LN_10);
                    let m = arena.mul(ln10, a);
                    let one = arena.one();
                    arena.div(one, m)
                }
            };
            arena.mul(inner, da)
        }
        Node::Call2(f, a, b) => {
            let (da, db) = (d(a), d(b));
            match f {
                Fn2::Atan2 => {
                    // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
                    let p = arena.mul(b, da);
                    let q = arena.mul(a, db);
                    let num = arena.sub(p, q);
                    let two = arena.constant(2.0);
                    let a2 = arena.pow(a, two);
                    let b2 = arena.pow(b, two);
                    let den = arena.add(a2, b2);
                    arena.div(num, den)
                }
                Fn2::Min | Fn2::Max => {
                    let op = if f == Fn2::Min { RelOp::Lt } else { RelOp::Gt };
                    let c = arena.rel(op, a, b, false);
                    arena.if_(c, da, db)
                }
                Fn2::Mod | Fn2::Rem => {
                    // x - k y with k piecewise constant.
                    let q = arena.div(a, b);
                    let k = if f == Fn2::Mod {
                        arena.call1(Fn1::Floor, q)
                    } else {
                        let fl = arena.call1(Fn1::Floor, q);
                        let ce = arena.call1(Fn1::Ceil, q);
                        let zero = arena.zero();
                        let c = arena.rel(RelOp::Ge, q, zero, false);
                        arena.if_(c, fl, ce)
                    };
                    let t = arena.mul(k, db);
                    arena.sub(da, t)
                }
                Fn2::Div => arena.zero(),
            }
        }
        Node::Call { call, output } => {
            let args = arena.calls[call as usize].args.clone();
            let dargs: Vec<ExprId> = args.iter().map(|&x| d(x)).collect();
            if dargs.iter().all(|&x| arena.is_const(x, 0.0)) {
                return Ok(arena.zero());
            }
            rules.call(arena, call, output, &dargs)?
        }
    })
}

/// Rules for the partial derivative with respect to one variable; calls are
/// differentiated through the derivative functions of `fndiff`.
pub struct Partial<'a> {
    pub var: VarId,
    pub functions: &'a mut fndiff::Derivatives,
}

impl DiffRules for Partial<'_> {
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String> {
        Ok(match node {
            Node::Var(v) if v == self.var => Some(arena.one()),
            _ => None,
        })
    }
    fn derivatives(&mut self) -> &mut crate::symbolic::fndiff::Derivatives {
        self.functions
    }
}

/// The partial derivative of `e` with respect to variable `v`.
pub fn partial(
    arena: &mut ExprArena,
    e: ExprId,
    v: VarId,
    functions: &mut fndiff::Derivatives,
) -> Result<ExprId, String> {
    let mut memo = HashMap::default();
    differentiate(arena, e, &mut Partial { var: v, functions }, &mut memo)
}

/// Whether expression `e` mentions variable `v`.
pub fn mentions(arena: &ExprArena, e: ExprId, v: VarId) -> bool {
    arena.any_node(e, |n| matches!(n, Node::Var(x) if x == v))
}

/// Replaces variable `v` by expression `by` in `e`.
pub fn substitute(arena: &mut ExprArena, e: ExprId, v: VarId, by: ExprId) -> ExprId {
    let mut memo = crate::flat::RewriteMemo::default();
    arena.rewrite(e, &mut memo, &mut |_, n| match n {
        Node::Var(x) if x == v => Some(by),
        _ => None,
    })
}

/// Solves `residual = 0` for `v` when the residual is linear in `v` (its
/// coefficient does not mention `v`): `v = -r(v=0) / (dr/dv)`. Returns
/// `None` when it is not linear or the coefficient is identically zero.
pub fn solve_linear(
    arena: &mut ExprArena,
    residual: ExprId,
    v: VarId,
    functions: &mut fndiff::Derivatives,
) -> Option<ExprId> {
    let a = partial(arena, residual, v, functions).ok()?;
    if arena.is_const(a, 0.0) || mentions(arena, a, v) {
        return None;
    }
    // A relation or condition involving v makes the equation piecewise: not linear.
    let nodes = arena.reachable(&[residual]);
    for id in nodes {
        match arena.node(id) {
            Node::Rel { lhs, rhs, .. } if mentions(arena, lhs, v) || mentions(arena, rhs, v) => {
                return None;
            }
            Node::If(c, _, _) if mentions(arena, c, v) => return None,
            Node::Call { .. } if mentions(arena, id, v) => return None,
            _ => {}
        }
    }
    let zero = arena.zero();
    let b = substitute(arena, residual, v, zero);
    let nb = arena.neg(b);
    Some(arena.div(nb, a))
}

/// Solves `lhs = rhs` for `v`, preferring the written form `v = expr` so
/// that the generated code computes exactly what the user wrote.
pub fn solve_equation(
    arena: &mut ExprArena,
    lhs: ExprId,
    rhs: ExprId,
    v: VarId,
    functions: &mut fndiff::Derivatives,
) -> Option<ExprId> {
    let var = arena.var(v);
    if lhs == var && !mentions(arena, rhs, v) {
        return Some(rhs);
    }
    if rhs == var && !mentions(arena, lhs, v) {
        return Some(lhs);
    }
    let r = arena.sub(lhs, rhs);
    solve_linear(arena, r, v, functions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivative_matches_finite_difference() {
        // f(x) = sin(x)^2 * exp(x/3) + atan2(x, 2) + sqrt(x^3 + 1)
        let mut a = ExprArena::new();
        let x = a.var(0);
        let s = a.call1(Fn1::Sin, x);
        let two = a.constant(2.0);
        let s2 = a.pow(s, two);
        let three = a.constant(3.0);
        let x3 = a.div(x, three);
        let e = a.call1(Fn1::Exp, x3);
        let p = a.mul(s2, e);
        let at = a.call2(Fn2::Atan2, x, two);
        let xc = a.pow(x, three);
        let one = a.one();
        let r = a.add(xc, one);
        let sq = a.call1(Fn1::Sqrt, r);
        let f1 = a.add(p, at);
        let f = a.add(f1, sq);
        let mut fns = fndiff::Derivatives::default();
        let df = partial(&mut a, f, 0, &mut fns).expect("differentiable");
        for &x0 in &[0.3, 1.1, 2.7] {
            let val = |a: &ExprArena, e: ExprId, x: f64| eval::eval_simple(a, e, &[x]);
            let h = 1e-6;
            let fd = (val(&a, f, x0 + h) - val(&a, f, x0 - h)) / (2.0 * h);
            let an = val(&a, df, x0);
            assert!(
                (fd - an).abs() < 1e-7 * an.abs().max(1.0),
                "x={x0}: {fd} vs {an}"
            );
        }
    }

    #[test]
    fn solves_linear_equations_and_refuses_nonlinear_ones() {
        let mut a = ExprArena::new();
        let mut fns = fndiff::Derivatives::default();
        let (x, y) = (a.var(0), a.var(1));
        // 2*x + y = 4  ->  x = (4 - y)/2
        let two = a.constant(2.0);
        let four = a.constant(4.0);
        let t = a.mul(two, x);
        let l = a.add(t, y);
        let sol = solve_equation(&mut a, l, four, 0, &mut fns).expect("linear");
        assert_eq!(eval::eval_simple(&a, sol, &[0.0, 1.0]), 1.5);
        // x^2 = y is not linear in x
        let x2 = a.pow(x, two);
        assert!(solve_equation(&mut a, x2, y, 0, &mut fns).is_none());
    }
}
