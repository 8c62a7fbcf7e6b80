//! The reference interpreter of the IR: a direct tree walk, used by the
//! differential tests against the JIT and by `rmoc simulate --no-jit`.

use super::ir::{Expr, Func, Op1, Op2, Stmt, status};

enum Flow {
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
        Flow::Return(c) => c,
        Flow::Next | Flow::Break => status::OK,
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
fn eval(e: &Expr, frame: &[f64], locals: &[f64], k: i64) -> Result<f64, i32> {
    let eval = |e, frame, locals| eval(e, frame, locals, k);
    Ok(match e {
        Expr::Const(c) => *c,
        Expr::Load(s) => frame[*s as usize],
        Expr::LoadElem { base, len, index } => {
            let i = eval(index, frame, locals)?;
            if !(i >= 1.0 && i <= *len as f64) {
                return Err(status::encode(status::INDEX, 0));
            }
            frame[(*base + i as u32 - 1) as usize]
        }
        Expr::Local(l) => locals[*l as usize],
        Expr::LoadStrided { base, stride } => frame[strided(*base, *stride, k)],
        Expr::Un(op, a) => apply1(*op, eval(a, frame, locals)?),
        Expr::Bin(op, a, c) => apply2(*op, eval(a, frame, locals)?, eval(c, frame, locals)?),
        Expr::Select(c, a, d) => {
            let cv = eval(c, frame, locals)?;
            let av = eval(a, frame, locals)?;
            let dv = eval(d, frame, locals)?;
            if cv != 0.0 { av } else { dv }
        }
    })
}

/// Runs `body`; `k` is the index of the enclosing repeat.
fn exec(body: &[Stmt], frame: &mut [f64], locals: &mut [f64], user: &[Func], k: i64) -> Flow {
    macro_rules! ev {
        ($e:expr) => {
            match eval($e, frame, locals, k) {
                Ok(v) => v,
                Err(c) => return Flow::Return(c),
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
                    return Flow::Return(status::encode(status::INDEX, 0));
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
                        Flow::Next => {}
                        other => return other,
                    }
                }
            }
            Stmt::If(c, t, e) => {
                let branch = if ev!(c) != 0.0 { t } else { e };
                match exec(branch, frame, locals, user, k) {
                    Flow::Next => {}
                    other => return other,
                }
            }
            Stmt::Loop(body) => loop {
                match exec(body, frame, locals, user, k) {
                    Flow::Next => {}
                    Flow::Break => break,
                    Flow::Return(c) => return Flow::Return(c),
                }
            },
            Stmt::Break => return Flow::Break,
            Stmt::Return(c) => return Flow::Return(*c),
            Stmt::Call { func, args, outs } => {
                let callee = &user[*func as usize];
                let mut callee_frame = vec![0.0; callee.frame_size as usize];
                for (a, &slot) in args.iter().zip(&callee.inputs) {
                    callee_frame[slot as usize] = ev!(a);
                }
                let code = run(callee, &mut callee_frame, user);
                if code != status::OK {
                    return Flow::Return(code);
                }
                for (&o, &slot) in outs.iter().zip(&callee.outputs) {
                    locals[o as usize] = callee_frame[slot as usize];
                }
            }
            Stmt::Solve { n, a, b, x, fail } => {
                let n = *n as usize;
                let mut m: Vec<f64> = a.iter().map(|&l| locals[l as usize]).collect();
                let mut r: Vec<f64> = b.iter().map(|&l| locals[l as usize]).collect();
                if !solve_dense(n, &mut m, &mut r) {
                    return Flow::Return(*fail);
                }
                for (k, &l) in x.iter().enumerate() {
                    locals[l as usize] = r[k];
                }
            }
        }
    }
    Flow::Next
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
    for k in (0..n).rev() {
        let mut s = b[k];
        for j in k + 1..n {
            s -= a[k * n + j] * b[j];
        }
        b[k] = s / a[k * n + k];
    }
    true
}
