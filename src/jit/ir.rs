//! The intermediate representation between the causal model and machine
//! code: small structured programs over an f64 frame.
//!
//! A [`Func`] reads and writes its *frame* (for a model entry, the model's
//! value buffer; for a user function, its own slots) and has scalar *locals*
//! for temporaries. Expressions are trees; statements are structured (`If`,
//! `Loop`/`Break`, `Return`), so the same program is run by the reference
//! interpreter ([`super::interp`]) and compiled by cranelift
//! ([`super::codegen`]).
//!
//! The [`verify`] function is the IR's contract: every frame access in range
//! (dynamic ones are bounds-checked at run time), every local below
//! `n_locals`, `Break` only inside `Loop`, calls matching their callee. Code
//! generation may assume a verified program; with the frame length checked at
//! the entry, compiled code cannot touch memory outside its buffers.

use crate::flat::{Fn1, Fn2, RelOp};
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op1 {
    Neg,
    Not,
    F(Fn1),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op2 {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    And,
    Or,
    Rel(RelOp),
    F(Fn2),
}

#[derive(Clone, Debug, PartialEq)]
pub enum IrExpr {
    Const(f64),
    Load(u32),
    /// `frame[base + index - 1]`, with `1 <= index <= len` checked at run time.
    LoadElem {
        base: u32,
        len: u32,
        index: Box<IrExpr>,
    },
    Local(u32),
    /// `frame[base + stride * k]`, where k is the index of the enclosing
    /// [`Stmt::Repeat`]; its range is checked by [`verify`].
    LoadStrided {
        base: u32,
        stride: i32,
    },
    Un(Op1, Box<IrExpr>),
    Bin(Op2, Box<IrExpr>, Box<IrExpr>),
    /// Both branches are evaluated; the condition picks one.
    Select(Box<IrExpr>, Box<IrExpr>, Box<IrExpr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Store(u32, IrExpr),
    StoreElem {
        base: u32,
        len: u32,
        index: IrExpr,
        value: IrExpr,
    },
    Set(u32, IrExpr),
    /// `frame[base + stride * k] = value` inside a [`Stmt::Repeat`].
    StoreStrided {
        base: u32,
        stride: i32,
        value: IrExpr,
    },
    /// Runs `body` `count` times (count >= 1) with the repeat index k = 0,
    /// 1, ..., count - 1, which [`IrExpr::LoadStrided`] and
    /// [`Stmt::StoreStrided`] read. Made by [`super::reroll`] from runs of
    /// statements that differ only in evenly spaced frame slots; its body
    /// holds only `Store`, `StoreStrided` and `Set`, and repeats do not
    /// nest.
    Repeat {
        count: u32,
        body: Vec<Stmt>,
    },
    If(IrExpr, Vec<Stmt>, Vec<Stmt>),
    /// Repeats until a `Break` (of this loop) or a `Return`.
    Loop(Vec<Stmt>),
    Break,
    /// Ends the function with a status (0: success; negative: an error code).
    Return(i32),
    /// Calls user function `func`: `args` go to its input slots, its output
    /// slots come back in `outs`. A failing callee's status is returned.
    Call {
        func: u32,
        args: Vec<IrExpr>,
        outs: Vec<u32>,
    },
    /// Solves the dense system `a x = b` (n x n, row-major in locals);
    /// returns `fail` if the matrix is singular.
    Solve {
        n: u32,
        a: Vec<u32>,
        b: Vec<u32>,
        x: Vec<u32>,
        fail: i32,
    },
}

#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub frame_size: u32,
    pub n_locals: u32,
    /// Frame slots of the inputs and outputs (user functions only).
    pub inputs: Vec<u32>,
    pub outputs: Vec<u32>,
    pub body: Vec<Stmt>,
}

/// Status codes returned by compiled code. An error carries a kind and an
/// index (the BLT block, the function) so the solver can name the culprit.
pub mod status {
    pub const OK: i32 = 0;
    pub const NEWTON: i32 = 1;
    pub const SINGULAR: i32 = 2;
    pub const NAN: i32 = 3;
    pub const ASSERT: i32 = 4;
    pub const INDEX: i32 = 5;
    pub const FRAME: i32 = 6;
    pub const TERMINATE: i32 = 7;
    /// A JIT entry that was not compiled (the caller interprets it instead).
    pub const NOT_COMPILED: i32 = 10;
    /// An assert in a user function failed (index: `Program::function_checks`).
    pub const FN_ASSERT: i32 = 8;
    /// A while loop in a user function ran past its limit (same index).
    pub const LOOP: i32 = 9;
    /// A mixed system found no consistent set of relation values (index:
    /// the block).
    pub const MIXED: i32 = 11;

    pub fn encode(kind: i32, index: u32) -> i32 {
        -(kind * 1_000_000 + index as i32)
    }
    pub fn decode(code: i32) -> (i32, u32) {
        let c = -code;
        (c / 1_000_000, (c % 1_000_000) as u32)
    }
}

#[derive(Debug)]
pub struct VerifyError(pub String);

/// Checks a program (model entries and user functions) against the IR's rules.
pub fn verify<'a>(
    funcs: impl IntoIterator<Item = &'a Func>,
    user: &'a [Func],
) -> Result<(), VerifyError> {
    for f in funcs.into_iter().chain(user) {
        verify_body(f, &f.body, user, 0, None)?;
        for &s in f.inputs.iter().chain(&f.outputs) {
            if s >= f.frame_size {
                return Err(VerifyError(format!(
                    "{}: parameter slot {s} outside frame {}",
                    f.name, f.frame_size
                )));
            }
        }
    }
    Ok(())
}

/// Checks that `base + stride * k` is a frame slot for every repeat index
/// k of a repeat of `count` (none outside a repeat).
fn verify_strided(
    f: &Func,
    base: u32,
    stride: i32,
    repeat: Option<u32>,
) -> Result<(), VerifyError> {
    let Some(count) = repeat else {
        return Err(VerifyError(format!(
            "{}: strided access outside a repeat",
            f.name
        )));
    };
    let last = base as i64 + stride as i64 * (count as i64 - 1);
    if base >= f.frame_size || last < 0 || last >= f.frame_size as i64 {
        return Err(VerifyError(format!(
            "{}: strided access {base}+{stride}k, k < {count}, outside frame {}",
            f.name, f.frame_size
        )));
    }
    Ok(())
}

fn verify_expr(f: &Func, e: &IrExpr, repeat: Option<u32>) -> Result<(), VerifyError> {
    let verify_expr = |f, e| verify_expr(f, e, repeat);
    match e {
        IrExpr::Const(_) => Ok(()),
        IrExpr::Load(s) => {
            if *s >= f.frame_size {
                return Err(VerifyError(format!(
                    "{}: load of slot {s} outside frame {}",
                    f.name, f.frame_size
                )));
            }
            Ok(())
        }
        IrExpr::LoadElem { base, len, index } => {
            if base + len > f.frame_size {
                return Err(VerifyError(format!(
                    "{}: array {base}+{len} outside frame",
                    f.name
                )));
            }
            verify_expr(f, index)
        }
        IrExpr::Local(l) => {
            if *l >= f.n_locals {
                return Err(VerifyError(format!(
                    "{}: local {l} >= {}",
                    f.name, f.n_locals
                )));
            }
            Ok(())
        }
        IrExpr::LoadStrided { base, stride } => verify_strided(f, *base, *stride, repeat),
        IrExpr::Un(_, a) => verify_expr(f, a),
        IrExpr::Bin(_, a, b) => {
            verify_expr(f, a)?;
            verify_expr(f, b)
        }
        IrExpr::Select(c, a, b) => {
            verify_expr(f, c)?;
            verify_expr(f, a)?;
            verify_expr(f, b)
        }
    }
}

fn verify_body(
    f: &Func,
    body: &[Stmt],
    user: &[Func],
    loops: usize,
    repeat: Option<u32>,
) -> Result<(), VerifyError> {
    let verify_expr = |f, e| verify_expr(f, e, repeat);
    let local = |l: u32| {
        if l >= f.n_locals {
            Err(VerifyError(format!(
                "{}: local {l} >= {}",
                f.name, f.n_locals
            )))
        } else {
            Ok(())
        }
    };
    for s in body {
        match s {
            Stmt::Store(slot, e) => {
                if *slot >= f.frame_size {
                    return Err(VerifyError(format!(
                        "{}: store to slot {slot} outside frame",
                        f.name
                    )));
                }
                verify_expr(f, e)?;
            }
            Stmt::StoreElem {
                base,
                len,
                index,
                value,
            } => {
                if base + len > f.frame_size {
                    return Err(VerifyError(format!(
                        "{}: array store outside frame",
                        f.name
                    )));
                }
                verify_expr(f, index)?;
                verify_expr(f, value)?;
            }
            Stmt::Set(l, e) => {
                local(*l)?;
                verify_expr(f, e)?;
            }
            Stmt::StoreStrided {
                base,
                stride,
                value,
            } => {
                verify_strided(f, *base, *stride, repeat)?;
                verify_expr(f, value)?;
            }
            Stmt::Repeat { count, body } => {
                if repeat.is_some() || *count == 0 {
                    return Err(VerifyError(format!(
                        "{}: a repeat inside a repeat, or of no passes",
                        f.name
                    )));
                }
                if let Some(s) = body.iter().find(|s| {
                    !matches!(
                        s,
                        Stmt::Store(..) | Stmt::StoreStrided { .. } | Stmt::Set(..)
                    )
                }) {
                    return Err(VerifyError(format!(
                        "{}: a repeat's body holds {s:?}",
                        f.name
                    )));
                }
                verify_body(f, body, user, loops, Some(*count))?;
            }
            Stmt::If(c, a, b) => {
                verify_expr(f, c)?;
                verify_body(f, a, user, loops, repeat)?;
                verify_body(f, b, user, loops, repeat)?;
            }
            Stmt::Loop(b) => verify_body(f, b, user, loops + 1, repeat)?,
            Stmt::Break => {
                if loops == 0 {
                    return Err(VerifyError(format!("{}: break outside a loop", f.name)));
                }
            }
            Stmt::Return(_) => {}
            Stmt::Call { func, args, outs } => {
                let callee = user.get(*func as usize).ok_or_else(|| {
                    VerifyError(format!("{}: call of unknown function {func}", f.name))
                })?;
                if args.len() != callee.inputs.len() || outs.len() != callee.outputs.len() {
                    return Err(VerifyError(format!(
                        "{}: call of {} with wrong arity",
                        f.name, callee.name
                    )));
                }
                for a in args {
                    verify_expr(f, a)?;
                }
                for &o in outs {
                    local(o)?;
                }
            }
            Stmt::Solve { n, a, b, x, .. } => {
                let n = *n as usize;
                if a.len() != n * n || b.len() != n || x.len() != n {
                    return Err(VerifyError(format!(
                        "{}: solve with inconsistent sizes",
                        f.name
                    )));
                }
                for &l in a.iter().chain(b).chain(x) {
                    local(l)?;
                }
            }
        }
    }
    Ok(())
}

/// Text form, for debugging and snapshot tests.
pub fn display(f: &Func) -> String {
    let mut s = format!(
        "func {} (frame {}, locals {})\n",
        f.name, f.frame_size, f.n_locals
    );
    fn expr(e: &IrExpr) -> String {
        match e {
            IrExpr::Const(c) => crate::flat::expr::format_number(*c),
            IrExpr::Load(s) => format!("[{s}]"),
            IrExpr::LoadElem { base, len, index } => format!("[{base}+{}:{len}]", expr(index)),
            IrExpr::Local(l) => format!("%{l}"),
            IrExpr::LoadStrided { base, stride } => format!("[{base}{stride:+}k]"),
            IrExpr::Un(op, a) => format!("{op:?}({})", expr(a)),
            IrExpr::Bin(op, a, b) => format!("{op:?}({}, {})", expr(a), expr(b)),
            IrExpr::Select(c, a, b) => format!("select({}, {}, {})", expr(c), expr(a), expr(b)),
        }
    }
    fn body(b: &[Stmt], ind: usize, s: &mut String) {
        let pad = " ".repeat(ind);
        for st in b {
            match st {
                Stmt::Store(slot, e) => {
                    let _ = writeln!(s, "{pad}[{slot}] = {}", expr(e));
                }
                Stmt::StoreElem {
                    base,
                    len,
                    index,
                    value,
                } => {
                    let _ = writeln!(s, "{pad}[{base}+{}:{len}] = {}", expr(index), expr(value));
                }
                Stmt::Set(l, e) => {
                    let _ = writeln!(s, "{pad}%{l} = {}", expr(e));
                }
                Stmt::StoreStrided {
                    base,
                    stride,
                    value,
                } => {
                    let _ = writeln!(s, "{pad}[{base}{stride:+}k] = {}", expr(value));
                }
                Stmt::Repeat { count, body: b } => {
                    let _ = writeln!(s, "{pad}repeat k < {count} {{");
                    body(b, ind + 2, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Stmt::If(c, a, e) => {
                    let _ = writeln!(s, "{pad}if {} {{", expr(c));
                    body(a, ind + 2, s);
                    let _ = writeln!(s, "{pad}}} else {{");
                    body(e, ind + 2, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Stmt::Loop(b) => {
                    let _ = writeln!(s, "{pad}loop {{");
                    body(b, ind + 2, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Stmt::Break => {
                    let _ = writeln!(s, "{pad}break");
                }
                Stmt::Return(c) => {
                    let _ = writeln!(s, "{pad}return {c}");
                }
                Stmt::Call { func, args, outs } => {
                    let a: Vec<String> = args.iter().map(expr).collect();
                    let o: Vec<String> = outs.iter().map(|l| format!("%{l}")).collect();
                    let _ = writeln!(
                        s,
                        "{pad}({}) = call f{func}({})",
                        o.join(", "),
                        a.join(", ")
                    );
                }
                Stmt::Solve { n, .. } => {
                    let _ = writeln!(s, "{pad}solve {n}x{n}");
                }
            }
        }
    }
    body(&f.body, 2, &mut s);
    s
}

/// Calls `f(local, is_write)` for every local a statement reads or writes,
/// in the order of execution (an assignment's value before its target).
pub fn for_each_local(s: &Stmt, f: &mut impl FnMut(u32, bool)) {
    match s {
        Stmt::Store(_, e) => locals_in_expr(e, f),
        Stmt::StoreElem { index, value, .. } => {
            locals_in_expr(index, f);
            locals_in_expr(value, f);
        }
        Stmt::StoreStrided { value, .. } => locals_in_expr(value, f),
        Stmt::Set(l, e) => {
            locals_in_expr(e, f);
            f(*l, true);
        }
        Stmt::If(c, a, b) => {
            locals_in_expr(c, f);
            a.iter().chain(b).for_each(|s| for_each_local(s, f));
        }
        Stmt::Loop(body) | Stmt::Repeat { body, .. } => {
            body.iter().for_each(|s| for_each_local(s, f))
        }
        Stmt::Break | Stmt::Return(_) => {}
        Stmt::Call { args, outs, .. } => {
            args.iter().for_each(|e| locals_in_expr(e, f));
            outs.iter().for_each(|&l| f(l, true));
        }
        Stmt::Solve { a, b, x, .. } => {
            a.iter().chain(b).for_each(|&l| f(l, false));
            x.iter().for_each(|&l| f(l, true));
        }
    }
}

/// Renumbers every local of a statement `l -> l + by` (code appended after
/// a function's own, with locals of its own).
pub fn shift_locals(s: &mut Stmt, by: u32) {
    fn expr(e: &mut IrExpr, by: u32) {
        match e {
            IrExpr::Const(_) | IrExpr::Load(_) | IrExpr::LoadStrided { .. } => {}
            IrExpr::Local(l) => *l += by,
            IrExpr::LoadElem { index: a, .. } | IrExpr::Un(_, a) => expr(a, by),
            IrExpr::Bin(_, a, b) => {
                expr(a, by);
                expr(b, by);
            }
            IrExpr::Select(c, a, b) => {
                expr(c, by);
                expr(a, by);
                expr(b, by);
            }
        }
    }
    match s {
        Stmt::Store(_, e) | Stmt::StoreStrided { value: e, .. } => expr(e, by),
        Stmt::StoreElem { index, value, .. } => {
            expr(index, by);
            expr(value, by);
        }
        Stmt::Set(l, e) => {
            *l += by;
            expr(e, by);
        }
        Stmt::If(c, a, b) => {
            expr(c, by);
            a.iter_mut().chain(b).for_each(|s| shift_locals(s, by));
        }
        Stmt::Loop(body) | Stmt::Repeat { body, .. } => {
            body.iter_mut().for_each(|s| shift_locals(s, by))
        }
        Stmt::Break | Stmt::Return(_) => {}
        Stmt::Call { args, outs, .. } => {
            args.iter_mut().for_each(|e| expr(e, by));
            outs.iter_mut().for_each(|l| *l += by);
        }
        Stmt::Solve { a, b, x, .. } => {
            a.iter_mut().chain(b).chain(x).for_each(|l| *l += by);
        }
    }
}

fn locals_in_expr(e: &IrExpr, f: &mut impl FnMut(u32, bool)) {
    match e {
        IrExpr::Const(_) | IrExpr::Load(_) | IrExpr::LoadStrided { .. } => {}
        IrExpr::Local(l) => f(*l, false),
        IrExpr::LoadElem { index, .. } => locals_in_expr(index, f),
        IrExpr::Un(_, a) => locals_in_expr(a, f),
        IrExpr::Bin(_, a, b) => {
            locals_in_expr(a, f);
            locals_in_expr(b, f);
        }
        IrExpr::Select(c, a, b) => {
            locals_in_expr(c, f);
            locals_in_expr(a, f);
            locals_in_expr(b, f);
        }
    }
}
