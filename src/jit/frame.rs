//! The compiled model's interface, in one place: the layout of the value
//! buffer (the *frame*) every entry point works on, its fixed slots, the
//! list of entry points, and [`Frame`], the typed access the solvers use.
//!
//! Invariants: the frame is `layout.len` values; slots `0..HEADER` are
//! the fixed ones below; variable `v` is at `vars + v`, its left limit
//! `pre(v)` at `pre + v`, its tangent at `tangent + v`; relation `k`'s
//! frozen truth value at `rel + k` and its zero-crossing function at
//! `zc + k`; when-branch `b`'s condition at `cond + b` and its "fires now"
//! flag at `active + b`; sample `k`'s "due now" flag at `sample + k` and its
//! start and interval at `sample_param + 2k` and `+ 2k + 1`; the
//! warm-start values of the function call sites that keep them from `warm`
//! (`n_warm` in all, a site's in one run, zero at the start). Truth values
//! are 0 or 1. No solver computes an offset: they go through [`Frame`].

use super::ir::Func;
pub use super::ir::status;
use super::lower::Program;
use crate::flat::VarId;

/// Fixed slots at the start of the buffer.
pub const TIME: u32 = 0;
pub const MODE: u32 = 1;
pub const INITIAL: u32 = 2;
pub const TERMINAL: u32 = 3;
pub const TERMINATE: u32 = 4;
/// Nonzero while a mixed system (a loop whose equations hold event
/// relations) is solved in event mode: its relations read their stored
/// values, as between events, and are updated between solves (set and
/// cleared by the generated code only; every entry clears it first).
pub const FREEZE: u32 = 5;
pub const HEADER: u32 = 8;

/// Where each kind of value lives in the model buffer.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Layout {
    pub n_vars: u32,
    pub vars: u32,
    pub pre: u32,
    pub tangent: u32,
    pub rel: u32,
    pub n_rel: u32,
    pub zc: u32,
    pub cond: u32,
    pub active: u32,
    pub n_branches: u32,
    pub sample: u32,
    pub sample_param: u32,
    pub n_samples: u32,
    pub override_flag: u32,
    pub residual: u32,
    pub n_residuals: u32,
    pub init_res: u32,
    pub n_init_res: u32,
    pub assert: u32,
    pub n_asserts: u32,
    /// The warm-start values of each call site of a function that declares
    /// them (`__rmoc_warmStart`): written by the call, read by the next.
    pub warm: u32,
    pub n_warm: u32,
    pub len: u32,
}

impl Layout {
    pub fn var(&self, v: VarId) -> u32 {
        self.vars + v
    }
    pub fn pre(&self, v: VarId) -> u32 {
        self.pre + v
    }
    pub fn tan(&self, v: VarId) -> u32 {
        self.tangent + v
    }
}

/// The entry points of a compiled model, in the order of
/// [`Program::entries`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Parameters,
    Starts,
    Ode,
    Tangent,
    ZeroCrossings,
    Conditions,
    Actions,
    InitialResiduals,
    Asserts,
    Residuals,
}

impl Entry {
    pub const ALL: [Entry; 10] = [
        Entry::Parameters,
        Entry::Starts,
        Entry::Ode,
        Entry::Tangent,
        Entry::ZeroCrossings,
        Entry::Conditions,
        Entry::Actions,
        Entry::InitialResiduals,
        Entry::Asserts,
        Entry::Residuals,
    ];

    /// The position in [`Program::entries`] (and of the JIT's functions).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Called at every step or event (compiled); the others run a handful
    /// of times (parameters, start values, initialization), where the
    /// interpreter is cheaper than compiling them.
    pub fn hot(self) -> bool {
        matches!(
            self,
            Entry::Ode
                | Entry::Tangent
                | Entry::ZeroCrossings
                | Entry::Conditions
                | Entry::Actions
                | Entry::Asserts
        )
    }

    pub fn func(self, p: &Program) -> &Func {
        p.entries()[self.index()]
    }
}

/// The value buffer of one run with typed access to its slots.
#[derive(Clone, Debug)]
pub struct Frame {
    layout: Layout,
    buf: Vec<f64>,
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

impl Frame {
    /// A zeroed frame for `layout`.
    pub fn new(layout: &Layout) -> Frame {
        Frame {
            layout: layout.clone(),
            buf: vec![0.0; layout.len as usize],
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The raw values, for the entry points.
    pub fn values(&mut self) -> &mut [f64] {
        &mut self.buf
    }

    /// The raw values, read-only (output columns read slots by index).
    pub fn slots(&self) -> &[f64] {
        &self.buf
    }

    pub fn time(&self) -> f64 {
        self.buf[TIME as usize]
    }
    pub fn set_time(&mut self, t: f64) {
        self.buf[TIME as usize] = t;
    }
    /// Event mode: relations are evaluated (and stored) instead of frozen.
    pub fn set_event_mode(&mut self, on: bool) {
        self.buf[MODE as usize] = flag(on);
    }
    pub fn set_initial(&mut self, on: bool) {
        self.buf[INITIAL as usize] = flag(on);
    }
    pub fn set_terminal(&mut self, on: bool) {
        self.buf[TERMINAL as usize] = flag(on);
    }
    /// The when-branch (1-based) whose `terminate()` ran, 0 if none.
    pub fn terminate(&self) -> usize {
        self.buf[TERMINATE as usize] as usize
    }

    pub fn var(&self, v: VarId) -> f64 {
        self.buf[self.layout.var(v) as usize]
    }

    /// Whether every model variable is finite: one pass without branches,
    /// in lanes that the compiler vectorizes.
    pub fn all_vars_finite(&self) -> bool {
        let start = self.layout.vars as usize;
        let vars = &self.buf[start..start + self.layout.n_vars as usize];
        // x * 0 is 0 for a finite x and NaN otherwise; the sums run in
        // independent lanes so that the loop vectorizes.
        let mut lanes = [0.0f64; 8];
        let chunks = vars.chunks_exact(8);
        let rest = chunks.remainder();
        for chunk in chunks {
            for (l, x) in lanes.iter_mut().zip(chunk) {
                *l += x * 0.0;
            }
        }
        let rest = rest.iter().fold(0.0, |s, x| s + x * 0.0);
        (lanes.iter().sum::<f64>() + rest).is_finite()
    }
    pub fn set_var(&mut self, v: VarId, x: f64) {
        let k = self.layout.var(v) as usize;
        self.buf[k] = x;
    }
    pub fn pre(&self, v: VarId) -> f64 {
        self.buf[self.layout.pre(v) as usize]
    }
    /// `pre(v) := v`.
    pub fn keep_pre(&mut self, v: VarId) {
        let (from, to) = (self.layout.var(v) as usize, self.layout.pre(v) as usize);
        self.buf[to] = self.buf[from];
    }
    /// `pre(v) := v` for every variable.
    pub fn keep_all_pre(&mut self) {
        let (vars, pre, n) = (
            self.layout.vars as usize,
            self.layout.pre as usize,
            self.layout.n_vars as usize,
        );
        self.buf.copy_within(vars..vars + n, pre);
    }
    /// Marks `v` as set by the user (`-p`): `parameters` keeps its value.
    pub fn set_override(&mut self, v: VarId, x: f64) {
        self.set_var(v, x);
        let k = (self.layout.override_flag + v) as usize;
        self.buf[k] = 1.0;
    }

    /// The stored (frozen) truth value of relation `k`.
    pub fn relation(&self, k: usize) -> bool {
        self.buf[(self.layout.rel + k as u32) as usize] != 0.0
    }
    /// Sets the stored truth value of relation `k` (an integrator that
    /// evaluates the model under another active set of relations).
    pub fn set_relation(&mut self, k: usize, on: bool) {
        self.buf[(self.layout.rel + k as u32) as usize] = flag(on);
    }
    /// The zero-crossing function of relation `k` (lhs - rhs).
    pub fn zero_crossing(&self, k: usize) -> f64 {
        self.buf[(self.layout.zc + k as u32) as usize]
    }
    /// Whether when-branch `b`'s condition holds (after `conditions`).
    pub fn condition(&self, b: usize) -> bool {
        self.buf[(self.layout.cond + b as u32) as usize] != 0.0
    }
    pub fn active(&self, b: usize) -> bool {
        self.buf[(self.layout.active + b as u32) as usize] != 0.0
    }
    /// Whether `actions` runs when-branch `b`.
    pub fn set_active(&mut self, b: usize, on: bool) {
        self.buf[(self.layout.active + b as u32) as usize] = flag(on);
    }
    /// Whether sample `k` is due at this event.
    pub fn sample_due(&self, k: usize) -> bool {
        self.buf[(self.layout.sample + k as u32) as usize] != 0.0
    }
    pub fn set_sample_due(&mut self, k: usize, on: bool) {
        self.buf[(self.layout.sample + k as u32) as usize] = flag(on);
    }
    /// `sample(start, interval)` of sample `k`, after `parameters`.
    pub fn sample_timing(&self, k: usize) -> (f64, f64) {
        let at = (self.layout.sample_param + 2 * k as u32) as usize;
        (self.buf[at], self.buf[at + 1])
    }
    /// Whether assert `k` holds (after `asserts`).
    pub fn assert_holds(&self, k: usize) -> bool {
        self.buf[(self.layout.assert + k as u32) as usize] != 0.0
    }
    /// Initial residual `k` (after `initial_residuals`).
    pub fn initial_residual(&self, k: usize) -> f64 {
        self.buf[(self.layout.init_res + k as u32) as usize]
    }
    /// Variable `v`'s tangent (after a run of the tangent code).
    pub fn tangent(&self, v: VarId) -> f64 {
        self.buf[self.layout.tan(v) as usize]
    }
    /// Seeds variable `v`'s tangent.
    pub fn set_tangent(&mut self, v: VarId, x: f64) {
        let k = self.layout.tan(v) as usize;
        self.buf[k] = x;
    }
    /// Zeroes every tangent slot.
    pub fn clear_tangents(&mut self) {
        let (t0, n) = (self.layout.tangent as usize, self.layout.n_vars as usize);
        self.buf[t0..t0 + n].fill(0.0);
    }
}
