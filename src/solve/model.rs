//! The compiled model as the solvers see it: a value buffer and entry points.

use super::bdf::{EvalFail, OdeProblem};
use super::jacobian::{Jacobian, JacobianPattern};
use crate::jit::interp;
use crate::jit::ir::{Func, status};
use crate::jit::lower::{self, Layout, Program};
use std::sync::Arc;

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

/// Something that runs the model's entry points on a buffer: the JIT, or the
/// reference interpreter.
pub trait Backend {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32;
}

pub fn entry_func(p: &Program, e: Entry) -> &Func {
    match e {
        Entry::Parameters => &p.parameters,
        Entry::Starts => &p.starts,
        Entry::Ode => &p.ode,
        Entry::Tangent => &p.tangent,
        Entry::ZeroCrossings => &p.zero_crossings,
        Entry::Conditions => &p.conditions,
        Entry::Actions => &p.actions,
        Entry::InitialResiduals => &p.initial_residuals,
        Entry::Asserts => &p.asserts,
        Entry::Residuals => &p.residuals,
    }
}

/// The IR interpreter as a backend.
pub struct Interpreter<'p> {
    pub program: &'p Program,
}

impl Backend for Interpreter<'_> {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        interp::run(entry_func(self.program, entry), buf, &self.program.user)
    }
}

/// The model's continuous part as an ODE in its states, for the BDF.
pub struct ModelOde<'a> {
    pub backend: &'a dyn Backend,
    pub layout: &'a Layout,
    pub buf: &'a mut Vec<f64>,
    /// Buffer slots of the states and of their derivatives.
    pub state_slots: &'a [u32],
    pub der_slots: &'a [u32],
    pub tangent_state_slots: &'a [u32],
    pub tangent_der_slots: &'a [u32],
    /// The pattern of df/dx and its column colouring.
    pub pattern: &'a Arc<JacobianPattern>,
    pub evaluations: u64,
}

impl ModelOde<'_> {
    pub fn load(&mut self, t: f64, x: &[f64]) {
        self.buf[lower::TIME as usize] = t;
        for (&s, &v) in self.state_slots.iter().zip(x) {
            self.buf[s as usize] = v;
        }
    }

    /// Evaluates all algebraic variables at (t, x).
    pub fn eval(&mut self, t: f64, x: &[f64]) -> Result<(), EvalFail> {
        self.load(t, x);
        self.evaluations += 1;
        let code = self.backend.run(Entry::Ode, self.buf);
        if code != status::OK {
            return Err(EvalFail(code));
        }
        Ok(())
    }
}

impl OdeProblem for ModelOde<'_> {
    fn n(&self) -> usize {
        self.state_slots.len()
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFail> {
        self.eval(t, x)?;
        for (d, &s) in dx.iter_mut().zip(self.der_slots) {
            *d = self.buf[s as usize];
        }
        Ok(())
    }

    fn pattern(&self) -> Option<Arc<JacobianPattern>> {
        Some(self.pattern.clone())
    }

    /// One run of the tangent code per colour of the pattern: the seeds of
    /// all the colour's states are set at once, and since no two of them
    /// reach the same derivative, each derivative's tangent is the entry of
    /// the one column that reaches it.
    fn jacobian(&mut self, t: f64, x: &[f64], jac: &mut Jacobian) -> Result<(), EvalFail> {
        self.eval(t, x)?;
        let t0 = self.layout.tangent as usize;
        let n = self.layout.n_vars as usize;
        for v in &mut self.buf[t0..t0 + n] {
            *v = 0.0;
        }
        jac.clear();
        let pattern = self.pattern.clone();
        for colour in &pattern.colours {
            for &j in colour {
                self.buf[self.tangent_state_slots[j as usize] as usize] = 1.0;
            }
            let code = self.backend.run(Entry::Tangent, self.buf);
            for &j in colour {
                self.buf[self.tangent_state_slots[j as usize] as usize] = 0.0;
            }
            if code != status::OK {
                return Err(EvalFail(code));
            }
            for &j in colour {
                let j = j as usize;
                for k in pattern.column(j) {
                    let i = pattern.row_idx[k];
                    jac.set_entry(k, i, j, self.buf[self.tangent_der_slots[i] as usize]);
                }
            }
        }
        Ok(())
    }
}

/// Compiled code as a backend.
impl Backend for crate::jit::codegen::Jit {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        self.run_index(entry_index(entry), buf)
    }
}

/// The entries the solver calls at every step or event; the others run a
/// handful of times (parameters, start values, initialization), where the
/// interpreter is cheaper than compiling them.
pub const HOT_ENTRIES: [bool; 10] = [
    false, // parameters
    false, // starts
    true,  // ode
    true,  // tangent
    true,  // zero crossings
    true,  // conditions
    true,  // actions
    false, // initial residuals
    true,  // asserts
    false, // residuals (tests and tools; not used by the BDF)
];

/// Compiled code for the hot entries, the interpreter for the rest: what
/// `rmoc simulate` runs. Both work on the same buffer layout.
pub struct Hybrid<'p> {
    pub jit: crate::jit::codegen::Jit,
    pub program: &'p Program,
}

impl<'p> Hybrid<'p> {
    pub fn compile(program: &'p Program) -> Result<Hybrid<'p>, String> {
        let jit = crate::jit::codegen::compile_entries(program, &HOT_ENTRIES)?;
        Ok(Hybrid { jit, program })
    }
}

impl Backend for Hybrid<'_> {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        if self.jit.has(entry_index(entry)) {
            self.jit.run_index(entry_index(entry), buf)
        } else {
            interp::run(entry_func(self.program, entry), buf, &self.program.user)
        }
    }
}

/// The position of `entry` in [`Program::entries`].
fn entry_index(entry: Entry) -> usize {
    match entry {
        Entry::Parameters => 0,
        Entry::Starts => 1,
        Entry::Ode => 2,
        Entry::Tangent => 3,
        Entry::ZeroCrossings => 4,
        Entry::Conditions => 5,
        Entry::Actions => 6,
        Entry::InitialResiduals => 7,
        Entry::Asserts => 8,
        Entry::Residuals => 9,
    }
}
