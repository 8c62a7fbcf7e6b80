//! Loop rerolling: runs of statements that differ only in evenly spaced
//! frame slots become one [`Stmt::Repeat`].
//!
//! Flattening scalarizes array equations: a for-equation over the cells of
//! a grid becomes thousands of scalar equations, lowered one after the
//! other into statements of the same shape (`[50] = f([13], [14])`, `[51] =
//! f([14], [15])`, ...). Compiling each of them costs cranelift time and
//! memory in proportion to the model; rolled back into a loop over
//! `frame[base + stride k]`, the code is as large as one equation.
//!
//! The pass keeps the order of execution: pass k of a repeat does exactly
//! what statements k L .. (k + 1) L - 1 of the run did (L statements a
//! unit), so the result is bit for bit the same. Two units match when they
//! are equal but for
//! - frame slots: the i-th slot of unit k is `base_i + stride_i k` for every
//!   unit of the run (stride 0 for a slot every unit shares);
//! - locals private to their unit (written before any read, and not used
//!   outside it; the tangent code's shared subexpressions): unit k's are
//!   renamed to unit 0's, one for one. Any other local must be the same.
//!
//! Only `Store` and `Set` statements whose expressions hold no computed
//! index (`LoadElem`) are rolled, and only at the top level of a body.

use super::ir::{self, Func, IrExpr, Stmt};

/// The fewest units a run must have to become a repeat.
const MIN_UNITS: usize = 4;
/// The longest unit tried, in statements.
const MAX_UNIT: usize = 8;

/// Rolls the runs of `f`'s top-level body into repeats (the entries of a
/// program; user functions are small and keep their form).
pub fn reroll(f: &mut Func) {
    let body = std::mem::take(&mut f.body);
    f.body = reroll_body(body, f.n_locals as usize);
}

/// Where each local is used among a body's top-level statements.
struct LocalUse {
    /// Top-level statement of the first access.
    first: Vec<usize>,
    /// Top-level statement of the last access.
    last: Vec<usize>,
    /// Whether the first access writes it (a `Set` whose value does not
    /// read it).
    written_first: Vec<bool>,
}

impl LocalUse {
    fn of(body: &[Stmt], n_locals: usize) -> LocalUse {
        let mut u = LocalUse {
            first: vec![usize::MAX; n_locals],
            last: vec![0; n_locals],
            written_first: vec![false; n_locals],
        };
        for (k, s) in body.iter().enumerate() {
            ir::for_each_local(s, &mut |l, write| {
                let l = l as usize;
                if l >= n_locals {
                    return;
                }
                if u.first[l] == usize::MAX {
                    u.first[l] = k;
                    u.written_first[l] = write && matches!(s, Stmt::Set(..));
                }
                u.last[l] = k;
            });
        }
        u
    }

    /// Whether local `l` lives inside statements `range` only, written
    /// before it is read.
    fn private_to(&self, l: u32, range: &std::ops::Range<usize>) -> bool {
        let l = l as usize;
        l < self.first.len()
            && self.written_first[l]
            && range.contains(&self.first[l])
            && range.contains(&self.last[l])
    }
}

fn reroll_body(body: Vec<Stmt>, n_locals: usize) -> Vec<Stmt> {
    let uses = LocalUse::of(&body, n_locals);
    let eligible: Vec<bool> = body.iter().map(rollable).collect();
    let mut out = Vec::with_capacity(body.len());
    let mut runs: Vec<(usize, usize, usize, Vec<i64>)> = Vec::new();
    let mut p = 0;
    while p < body.len() {
        match longest_run(&body, &eligible, &uses, p) {
            Some((unit, units, strides)) => {
                runs.push((p, unit, units, strides));
                p += unit * units;
            }
            None => p += 1,
        }
    }
    // Build the output: statements outside runs are moved, each run is
    // rewritten from its first unit.
    let mut body: Vec<Option<Stmt>> = body.into_iter().map(Some).collect();
    let mut next = 0;
    for (start, unit, units, strides) in runs {
        out.extend(body[next..start].iter_mut().filter_map(Option::take));
        let mut strides = strides.into_iter();
        let repeat: Vec<Stmt> = body[start..start + unit]
            .iter_mut()
            .filter_map(Option::take)
            .map(|s| strided_stmt(s, &mut strides))
            .collect();
        out.push(Stmt::Repeat {
            count: units as u32,
            body: repeat,
        });
        next = start + unit * units;
    }
    out.extend(body[next..].iter_mut().filter_map(Option::take));
    out
}

/// A statement the pass may roll.
fn rollable(s: &Stmt) -> bool {
    fn plain(e: &IrExpr) -> bool {
        match e {
            IrExpr::Const(_) | IrExpr::Load(_) | IrExpr::Local(_) => true,
            IrExpr::LoadElem { .. } | IrExpr::LoadStrided { .. } => false,
            IrExpr::Un(_, a) => plain(a),
            IrExpr::Bin(_, a, b) => plain(a) && plain(b),
            IrExpr::Select(c, a, b) => plain(c) && plain(a) && plain(b),
        }
    }
    match s {
        Stmt::Store(_, e) | Stmt::Set(_, e) => plain(e),
        _ => false,
    }
}

/// The run that covers the most statements from `p`: (unit length, number
/// of units, the stride of each frame slot of a unit in visiting order).
fn longest_run(
    body: &[Stmt],
    eligible: &[bool],
    uses: &LocalUse,
    p: usize,
) -> Option<(usize, usize, Vec<i64>)> {
    let mut best: Option<(usize, usize, Vec<i64>)> = None;
    let mut m = Match::new(uses);
    let mut next = Vec::new();
    for unit in 1..=MAX_UNIT {
        if p + unit * MIN_UNITS > body.len() || !eligible[p + unit - 1] {
            break;
        }
        // A multiple of a unit that made a run regroups the same statements.
        if best.as_ref().is_some_and(|(u, _, _)| unit % u == 0) {
            continue;
        }
        if !m.units(body, p, p + unit, unit) {
            continue;
        }
        let strides = std::mem::take(&mut m.strides);
        let mut units = 2;
        while p + (units + 1) * unit <= body.len() {
            let (a, b) = (p + (units - 1) * unit, p + units * unit);
            if !eligible[b..b + unit].iter().all(|&e| e) || !m.units(body, a, b, unit) {
                break;
            }
            std::mem::swap(&mut next, &mut m.strides);
            if next != strides {
                break;
            }
            units += 1;
        }
        let better = best.as_ref().is_none_or(|(u, n, _)| unit * units > u * n);
        if units >= MIN_UNITS && better {
            best = Some((unit, units, strides));
        }
    }
    best
}

/// Compares two units statement by statement.
struct Match<'a> {
    uses: &'a LocalUse,
    unit_a: std::ops::Range<usize>,
    unit_b: std::ops::Range<usize>,
    /// Private locals of unit a and the ones of unit b they stand for, one
    /// for one.
    locals: Vec<(u32, u32)>,
    /// The difference of each pair of frame slots, in visiting order.
    strides: Vec<i64>,
}

impl<'a> Match<'a> {
    fn new(uses: &'a LocalUse) -> Match<'a> {
        Match {
            uses,
            unit_a: 0..0,
            unit_b: 0..0,
            locals: Vec::new(),
            strides: Vec::new(),
        }
    }

    /// Whether the units of `len` statements at `a` and `b` match; their
    /// slot differences are left in `strides`.
    fn units(&mut self, body: &[Stmt], a: usize, b: usize, len: usize) -> bool {
        self.unit_a = a..a + len;
        self.unit_b = b..b + len;
        self.locals.clear();
        self.strides.clear();
        (0..len).all(|k| self.stmt(&body[a + k], &body[b + k]))
    }

    fn slot(&mut self, x: u32, y: u32) -> bool {
        self.strides.push(y as i64 - x as i64);
        true
    }

    fn local(&mut self, x: u32, y: u32) -> bool {
        if x == y {
            // Shared by both units: not private to either.
            return !self.uses.private_to(x, &self.unit_a);
        }
        if !self.uses.private_to(x, &self.unit_a) || !self.uses.private_to(y, &self.unit_b) {
            return false;
        }
        match self.locals.iter().find(|&&(p, q)| p == x || q == y) {
            Some(&pair) => pair == (x, y),
            None => {
                self.locals.push((x, y));
                true
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, t: &Stmt) -> bool {
        match (s, t) {
            (Stmt::Store(x, e), Stmt::Store(y, g)) => self.slot(*x, *y) && self.expr(e, g),
            (Stmt::Set(x, e), Stmt::Set(y, g)) => self.expr(e, g) && self.local(*x, *y),
            _ => false,
        }
    }

    fn expr(&mut self, e: &IrExpr, g: &IrExpr) -> bool {
        match (e, g) {
            (IrExpr::Const(x), IrExpr::Const(y)) => x.to_bits() == y.to_bits(),
            (IrExpr::Load(x), IrExpr::Load(y)) => self.slot(*x, *y),
            (IrExpr::Local(x), IrExpr::Local(y)) => self.local(*x, *y),
            (IrExpr::Un(o, a), IrExpr::Un(p, b)) => o == p && self.expr(a, b),
            (IrExpr::Bin(o, a, c), IrExpr::Bin(p, b, d)) => {
                o == p && self.expr(a, b) && self.expr(c, d)
            }
            (IrExpr::Select(c, a, x), IrExpr::Select(d, b, y)) => {
                self.expr(c, d) && self.expr(a, b) && self.expr(x, y)
            }
            _ => false,
        }
    }
}

/// `s` with each frame slot, in visiting order, made strided by the next of
/// `strides` (a stride of 0 keeps the plain slot).
fn strided_stmt(s: Stmt, strides: &mut impl Iterator<Item = i64>) -> Stmt {
    let mut next = || strides.next().unwrap_or(0) as i32;
    fn expr(e: IrExpr, next: &mut impl FnMut() -> i32) -> IrExpr {
        match e {
            IrExpr::Load(base) => match next() {
                0 => IrExpr::Load(base),
                stride => IrExpr::LoadStrided { base, stride },
            },
            IrExpr::Un(o, a) => IrExpr::Un(o, Box::new(expr(*a, next))),
            IrExpr::Bin(o, a, b) => {
                let a = expr(*a, next);
                IrExpr::Bin(o, Box::new(a), Box::new(expr(*b, next)))
            }
            IrExpr::Select(c, a, b) => {
                let c = expr(*c, next);
                let a = expr(*a, next);
                IrExpr::Select(Box::new(c), Box::new(a), Box::new(expr(*b, next)))
            }
            other => other,
        }
    }
    match s {
        Stmt::Store(base, e) => {
            // The slot is visited before the value (as in `Match::stmt`).
            let stride = next();
            let value = expr(e, &mut next);
            match stride {
                0 => Stmt::Store(base, value),
                stride => Stmt::StoreStrided {
                    base,
                    stride,
                    value,
                },
            }
        }
        Stmt::Set(l, e) => Stmt::Set(l, expr(e, &mut next)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::interp;
    use crate::jit::ir::{Op2, status};

    fn load(s: u32) -> IrExpr {
        IrExpr::Load(s)
    }
    fn mul(a: IrExpr, b: IrExpr) -> IrExpr {
        IrExpr::Bin(Op2::Mul, Box::new(a), Box::new(b))
    }

    /// Rolls `body`, checks that the interpreter computes the same frame
    /// (every slot a distinct value) with and without rolling, and returns
    /// the rolled function's text.
    fn check(body: Vec<Stmt>, n_locals: u32) -> String {
        let straight = Func {
            name: "f".into(),
            frame_size: 100,
            n_locals,
            inputs: vec![],
            outputs: vec![],
            body,
        };
        let mut rolled = straight.clone();
        reroll(&mut rolled);
        ir::verify([&rolled], &[]).expect("verified");
        let start: Vec<f64> = (0..100).map(|k| 1.0 + k as f64 * 0.37).collect();
        let (mut a, mut b) = (start.clone(), start);
        assert_eq!(interp::run(&straight, &mut a, &[]), status::OK);
        assert_eq!(interp::run(&rolled, &mut b, &[]), status::OK);
        assert_eq!(a, b);
        ir::display(&rolled)
    }

    #[test]
    fn evenly_spaced_slots_roll_into_a_repeat() {
        let body = (0..6)
            .map(|i| Stmt::Store(10 + i, mul(load(40 + 2 * i), load(3))))
            .collect();
        assert_eq!(
            check(body, 0),
            "func f (frame 100, locals 0)\n  repeat k < 6 {\n    [10+1k] = Mul([40+2k], [3])\n  }\n"
        );
    }

    #[test]
    fn a_broken_spacing_ends_the_run() {
        let mut body: Vec<Stmt> = (0..5).map(|i| Stmt::Store(10 + i, load(40 + i))).collect();
        body.push(Stmt::Store(15, load(60)));
        assert_eq!(
            check(body, 0),
            "func f (frame 100, locals 0)\n  repeat k < 5 {\n    [10+1k] = [40+1k]\n  }\n  [15] = [60]\n"
        );
    }

    /// Each unit's own temporary is renamed to the first unit's.
    #[test]
    fn private_locals_are_renamed() {
        let body = (0..4)
            .flat_map(|i| {
                [
                    Stmt::Set(i, mul(load(40 + i), load(40 + i))),
                    Stmt::Store(10 + i, mul(IrExpr::Local(i), load(50 + i))),
                ]
            })
            .collect();
        assert_eq!(
            check(body, 4),
            "func f (frame 100, locals 4)\n  repeat k < 4 {\n    %0 = Mul([40+1k], [40+1k])\n    [10+1k] = Mul(%0, [50+1k])\n  }\n"
        );
    }

    /// A local read after the run, or one that two places of a unit share
    /// where the first unit has two, keeps the code straight.
    #[test]
    fn locals_that_are_not_private_one_for_one_do_not_roll() {
        let mut body: Vec<Stmt> = (0..4)
            .flat_map(|i| {
                [
                    Stmt::Set(i, load(40 + i)),
                    Stmt::Store(10 + i, IrExpr::Local(i)),
                ]
            })
            .collect();
        body.push(Stmt::Store(20, IrExpr::Local(3)));
        assert!(!check(body, 4).contains("repeat"));
        // Unit 0 writes %0 and %1; the others write one local twice.
        let mut body = vec![
            Stmt::Set(0, load(40)),
            Stmt::Set(1, load(41)),
            Stmt::Store(10, IrExpr::Local(0)),
        ];
        for i in 1..4u32 {
            body.extend([
                Stmt::Set(1 + i, load(40 + 2 * i)),
                Stmt::Set(1 + i, load(41 + 2 * i)),
                Stmt::Store(10 + i, IrExpr::Local(1 + i)),
            ]);
        }
        assert!(!check(body, 5).contains("repeat"));
    }
}
