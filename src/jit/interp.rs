//! The reference interpreter of the IR: a direct tree walk, used by the
//! differential tests against the JIT and by `rmoc simulate --no-jit`.

use super::ir::{Func, IrExpr, Op1, Op2, Stmt, status};

/// How an IR statement ended: the next one runs, the loop is left, or the
/// function returns this status.
enum Completion {
    Next,
    Break,
    Return(i32),
}

/// Runs `f` on `frame`; `user` are the callable functions.
pub fn run(f: &Func, frame: &mut [f64], user: &[Func]) -> i32 {
    if frame.len() < f.frame_size as usize {
        return status::encode(status::FRAME, 0);
    }
    let mut locals = vec![0.0; f.n_locals as usize];
    match exec(&f.body, frame, &mut locals, user, 0) {
        Completion::Return(c) => c,
        Completion::Next | Completion::Break => status::OK,
    }
}

fn b(x: bool) -> f64 {
    if x { 1.0 } else { 0.0 }
}

/// The semantics of a binary operation, shared with constant folding in tests.
pub fn apply2(op: Op2, x: f64, y: f64) -> f64 {
    match op {
        Op2::Add => x + y,
        Op2::Sub => x - y,
        Op2::Mul => x * y,
        Op2::Div => x / y,
        Op2::Pow => crate::flat::expr::pow(x, y),
        Op2::And => b(x != 0.0 && y != 0.0),
        Op2::Or => b(x != 0.0 || y != 0.0),
        Op2::Rel(r) => b(r.apply(x, y)),
        Op2::F(f) => f.apply(x, y),
    }
}

pub fn apply1(op: Op1, x: f64) -> f64 {
    match op {
        Op1::Neg => -x,
        Op1::Not => b(x == 0.0),
        Op1::F(f) => f.apply(x),
    }
}

/// The frame slot of a strided access at repeat index `k`.
fn strided(base: u32, stride: i32, k: i64) -> usize {
    (base as i64 + stride as i64 * k) as usize
}

/// The value of `e`; `k` is the index of the enclosing repeat.
fn eval(e: &IrExpr, frame: &[f64], locals: &[f64], k: i64) -> Result<f64, i32> {
    let eval = |e, frame, locals| eval(e, frame, locals, k);
    Ok(match e {
        IrExpr::Const(c) => *c,
        IrExpr::Load(s) => frame[*s as usize],
        IrExpr::LoadElem { base, len, index } => {
            let i = eval(index, frame, locals)?;
            if !(i >= 1.0 && i <= *len as f64) {
                return Err(status::encode(status::INDEX, 0));
            }
            frame[(*base + i as u32 - 1) as usize]
        }
        IrExpr::Local(l) => locals[*l as usize],
        IrExpr::LoadStrided { base, stride } => frame[strided(*base, *stride, k)],
        IrExpr::Un(op, a) => apply1(*op, eval(a, frame, locals)?),
        IrExpr::Bin(op, a, c) => apply2(*op, eval(a, frame, locals)?, eval(c, frame, locals)?),
        IrExpr::Select(c, a, d) => {
            let cv = eval(c, frame, locals)?;
            let av = eval(a, frame, locals)?;
            let dv = eval(d, frame, locals)?;
            if cv != 0.0 { av } else { dv }
        }
    })
}

/// Runs `body`; `k` is the index of the enclosing repeat.
fn exec(body: &[Stmt], frame: &mut [f64], locals: &mut [f64], user: &[Func], k: i64) -> Completion {
    macro_rules! ev {
        ($e:expr) => {
            match eval($e, frame, locals, k) {
                Ok(v) => v,
                Err(c) => return Completion::Return(c),
            }
        };
    }
    for s in body {
        match s {
            Stmt::Store(slot, e) => {
                let v = ev!(e);
                frame[*slot as usize] = v;
            }
            Stmt::StoreElem {
                base,
                len,
                index,
                value,
            } => {
                let i = ev!(index);
                if !(i >= 1.0 && i <= *len as f64) {
                    return Completion::Return(status::encode(status::INDEX, 0));
                }
                let v = ev!(value);
                frame[(*base + i as u32 - 1) as usize] = v;
            }
            Stmt::Set(l, e) => {
                let v = ev!(e);
                locals[*l as usize] = v;
            }
            Stmt::StoreStrided {
                base,
                stride,
                value,
            } => {
                let v = ev!(value);
                frame[strided(*base, *stride, k)] = v;
            }
            Stmt::Repeat { count, body } => {
                for pass in 0..*count as i64 {
                    match exec(body, frame, locals, user, pass) {
                        Completion::Next => {}
                        other => return other,
                    }
                }
            }
            Stmt::If(c, t, e) => {
                let branch = if ev!(c) != 0.0 { t } else { e };
                match exec(branch, frame, locals, user, k) {
                    Completion::Next => {}
                    other => return other,
                }
            }
            Stmt::Loop(body) => loop {
                match exec(body, frame, locals, user, k) {
                    Completion::Next => {}
                    Completion::Break => break,
                    Completion::Return(c) => return Completion::Return(c),
                }
            },
            Stmt::Break => return Completion::Break,
            Stmt::Return(c) => return Completion::Return(*c),
            Stmt::Call { func, args, outs } => {
                let callee = &user[*func as usize];
                let mut callee_frame = vec![0.0; callee.frame_size as usize];
                for (a, &slot) in args.iter().zip(&callee.inputs) {
                    callee_frame[slot as usize] = ev!(a);
                }
                let code = run(callee, &mut callee_frame, user);
                if code != status::OK {
                    return Completion::Return(code);
                }
                for (&o, &slot) in outs.iter().zip(&callee.outputs) {
                    locals[o as usize] = callee_frame[slot as usize];
                }
            }
            Stmt::Solve { n, a, b, x, fail } => {
                let n = *n as usize;
                let mut m: Vec<f64> = a.iter().map(|&l| locals[l as usize]).collect();
                let mut r: Vec<f64> = b.iter().map(|&l| locals[l as usize]).collect();
                if !solve_consistent(n, &mut m, &mut r) {
                    return Completion::Return(*fail);
                }
                for (k, &l) in x.iter().enumerate() {
                    locals[l as usize] = r[k];
                }
            }
        }
    }
    Completion::Next
}

/// A solution of the Newton system `a x = b` of a block, in place (`b`
/// holds x): by Gaussian elimination with partial pivoting, or if that
/// meets a zero pivot, with complete pivoting. A singular matrix whose
/// system is consistent (b in its range, to round-off) gets its solution
/// of least norm: a statically
/// indeterminate mode, as two frictions both stuck in the MSL's
/// `LossyGearDemo2` at rest, has torques that any split satisfies (Modelica
/// tools also pick one). False for an inconsistent or non-finite system.
pub fn solve_consistent(n: usize, a: &mut [f64], b: &mut [f64]) -> bool {
    // The regular case as before, by partial pivoting (bit for bit the
    // results of every model that never meets a singular system), from a
    // copy kept for the fallback.
    const SMALL: usize = 16;
    let (mut sa, mut sb) = ([0.0; SMALL * SMALL], [0.0; SMALL]);
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let (ca, cb): (&mut [f64], &mut [f64]) = if n <= SMALL {
        (&mut sa[..n * n], &mut sb[..n])
    } else {
        va.resize(n * n, 0.0);
        vb.resize(n, 0.0);
        (&mut va, &mut vb)
    };
    ca.copy_from_slice(a);
    cb.copy_from_slice(b);
    // (A non-finite system keeps the old outcome: NaN reaches the Newton
    // iteration's own check.)
    if a.iter().chain(b.iter()).any(|v| !v.is_finite()) {
        return solve_dense(n, a, b);
    }
    if solve_dense(n, ca, cb) {
        b.copy_from_slice(cb);
        return true;
    }
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let tiny = 1e-13 * scale;
    // col[k]: the unknown eliminated at step k.
    let mut col: Vec<usize> = (0..n).collect();
    let mut rank = n;
    for k in 0..n {
        let (mut p, mut q, mut best) = (k, k, 0.0f64);
        for i in k..n {
            for j in k..n {
                let v = a[i * n + j].abs();
                if v > best {
                    (p, q, best) = (i, j, v);
                }
            }
        }
        if best <= tiny {
            rank = k;
            break;
        }
        if q != k {
            for i in 0..n {
                a.swap(i * n + k, i * n + q);
            }
            col.swap(k, q);
        }
        eliminate(n, a, b, k, p);
    }
    // The rows left must be (numerically) zero equations.
    let b_scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if b[rank..]
        .iter()
        .any(|v| v.abs() > 1e-10 * (b_scale + scale))
    {
        return false;
    }
    // In the eliminated order: U11 y1 + U12 y2 = c. The basic solution
    // (y2 = 0), then the null space's directions (y2 = e_j), and the
    // solution of least norm: the basic one less its part along them.
    let back = |rhs: &[f64], a: &[f64]| -> Vec<f64> {
        let mut y = vec![0.0; rank];
        for k in (0..rank).rev() {
            let mut s = rhs[k];
            for j in k + 1..rank {
                s -= a[k * n + j] * y[j];
            }
            y[k] = s / a[k * n + k];
        }
        y
    };
    let mut x = back(b, a);
    x.resize(n, 0.0);
    if rank < n {
        let nulls: Vec<Vec<f64>> = (rank..n)
            .map(|j| {
                let rhs: Vec<f64> = (0..rank).map(|k| -a[k * n + j]).collect();
                let mut z = back(&rhs, a);
                z.resize(n, 0.0);
                z[j] = 1.0;
                z
            })
            .collect();
        let m = nulls.len();
        let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(p, q)| p * q).sum::<f64>();
        let mut g: Vec<f64> = (0..m * m)
            .map(|k| dot(&nulls[k / m], &nulls[k % m]))
            .collect();
        let mut c: Vec<f64> = nulls.iter().map(|z| dot(z, &x)).collect();
        if solve_dense(m, &mut g, &mut c) {
            for (z, w) in nulls.iter().zip(&c) {
                for (xi, zi) in x.iter_mut().zip(z) {
                    *xi -= w * zi;
                }
            }
        }
    }
    for (k, &c) in col.iter().enumerate() {
        b[c] = x[k];
    }
    true
}

/// Step `k` of Gaussian elimination on `a x = b` (row-major n x n): row
/// `p` (the pivot's) swapped into row k, then column k cleared below it.
#[inline]
fn eliminate(n: usize, a: &mut [f64], b: &mut [f64], k: usize, p: usize) {
    if p != k {
        for j in 0..n {
            a.swap(k * n + j, p * n + j);
        }
        b.swap(k, p);
    }
    let d = a[k * n + k];
    for i in k + 1..n {
        let f = a[i * n + k] / d;
        if f != 0.0 {
            for j in k..n {
                a[i * n + j] -= f * a[k * n + j];
            }
            b[i] -= f * b[k];
        }
    }
}

/// Gaussian elimination with partial pivoting, in place: on success `b`
/// holds the solution. Returns false for a (numerically) singular matrix.
/// Shared by the interpreter and, through an exported symbol, by JIT code.
pub fn solve_dense(n: usize, a: &mut [f64], b: &mut [f64]) -> bool {
    for k in 0..n {
        let mut p = k;
        let mut best = a[k * n + k].abs();
        for i in k + 1..n {
            let v = a[i * n + k].abs();
            if v > best {
                best = v;
                p = i;
            }
        }
        if best == 0.0 || !best.is_finite() {
            return false;
        }
        eliminate(n, a, b, k, p);
    }
    for k in (0..n).rev() {
        let mut s = b[k];
        for j in k + 1..n {
            s -= a[k * n + j] * b[j];
        }
        b[k] = s / a[k * n + k];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::solve_consistent;

    fn residual(a: &[f64], x: &[f64], b: &[f64]) -> f64 {
        let n = b.len();
        (0..n)
            .map(|i| ((0..n).map(|j| a[i * n + j] * x[j]).sum::<f64>() - b[i]).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_regular_system_is_solved() {
        let a = [0.0, 2.0, 1.0, 3.0, 1.0, 0.0, 1.0, 0.0, 4.0];
        let b = [1.0, 2.0, 3.0];
        let (mut m, mut x) = (a, b);
        assert!(solve_consistent(3, &mut m, &mut x));
        assert!(residual(&a, &x, &b) < 1e-14);
    }

    /// Two frictions holding one torque: x1 + x2 = 2 (twice, and a third
    /// unknown fixed) has the solutions x1 = 2 - x2; the least-norm one
    /// splits it, x1 = x2 = 1. An inconsistent right-hand side is refused.
    #[test]
    fn a_consistent_singular_system_gets_its_least_norm_solution() {
        let a = [1.0, 1.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 5.0];
        let b = [2.0, 4.0, 10.0];
        let (mut m, mut x) = (a, b);
        assert!(solve_consistent(3, &mut m, &mut x));
        assert!(residual(&a, &x, &b) < 1e-14, "{x:?}");
        assert!(
            (x[0] - 1.0).abs() < 1e-14 && (x[1] - 1.0).abs() < 1e-14 && (x[2] - 2.0).abs() < 1e-14,
            "{x:?}"
        );
        let (mut m, mut x) = (a, [2.0, 5.0, 10.0]);
        assert!(!solve_consistent(3, &mut m, &mut x));
        let (mut m, mut x) = ([0.0; 4], [0.0, 0.0]);
        assert!(solve_consistent(2, &mut m, &mut x) && x == [0.0, 0.0]);
        // Not finite: as plain partial pivoting, NaN left for the caller.
        let (mut m, mut x) = ([1.0, f64::NAN, 0.0, 1.0], [1.0, 1.0]);
        assert!(!solve_consistent(2, &mut m, &mut x) || x.iter().any(|v| v.is_nan()));
    }
}
