//! The compiled model as the solvers see it: a value buffer and entry points.

use super::bdf::{EvalFail, OdeProblem};
use super::dense_rows::DenseRowSplit;
use super::jacobian::{Jacobian, JacobianPattern};
use crate::jit::frame::{Frame, status};
use crate::jit::interp;
use crate::jit::lower::Program;
use std::borrow::Cow;
use std::sync::Arc;

pub use crate::jit::frame::Entry;

/// Something that runs the model's entry points on a buffer: the JIT, or the
/// reference interpreter.
pub trait Backend {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32;
}

/// The IR interpreter as a backend.
pub struct Interpreter<'p> {
    pub program: &'p Program,
}

impl Backend for Interpreter<'_> {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        interp::run(entry.func(self.program), buf, &self.program.user)
    }
}

/// Where the states, their derivatives and both tangents live in the frame.
#[derive(Clone, Debug)]
pub struct StateSlots {
    pub states: Vec<u32>,
    pub ders: Vec<u32>,
    pub tangent_states: Vec<u32>,
    pub tangent_ders: Vec<u32>,
    /// The unknowns Newton's method iterates on (nonlinear loops' tearing
    /// variables and nonlinear equations' unknowns): their values are the
    /// next evaluation's first guesses.
    pub guesses: Vec<u32>,
}

impl StateSlots {
    pub fn of(c: &crate::structure::Causal, l: &crate::jit::frame::Layout) -> StateSlots {
        StateSlots {
            states: c.states.iter().map(|&s| l.var(s)).collect(),
            ders: c.state_ders.iter().map(|&s| l.var(s)).collect(),
            tangent_states: c.states.iter().map(|&s| l.tan(s)).collect(),
            tangent_ders: c.state_ders.iter().map(|&s| l.tan(s)).collect(),
            guesses: c
                .blocks
                .iter()
                .flat_map(|b| match b {
                    crate::structure::Block::Implicit { var, .. } => vec![*var],
                    crate::structure::Block::Torn {
                        tear,
                        linear: false,
                        ..
                    } => tear.clone(),
                    _ => Vec::new(),
                })
                .map(|v| l.var(v))
                .collect(),
        }
    }
}

/// The model's continuous part as an ODE in its states, for the BDF.
pub struct ModelOde<'a> {
    pub backend: &'a dyn Backend,
    pub frame: &'a mut Frame,
    pub slots: &'a StateSlots,
    /// The pattern of df/dx and its column colouring.
    pub pattern: &'a Arc<JacobianPattern>,
    pub evaluations: u64,
    /// Runs of the tangent code (one per colour of a Jacobian).
    pub tangent_runs: u64,
    /// The guesses of the last successful evaluation: a failed one (a
    /// trial step too long for Newton's method) leaves its diverged
    /// iterates in the frame, and the next, shorter trial must not start
    /// from them.
    good_guesses: Vec<f64>,
}

impl<'a> ModelOde<'a> {
    /// Evaluations in frozen mode (relations keep their stored values).
    pub fn new(
        backend: &'a dyn Backend,
        frame: &'a mut Frame,
        slots: &'a StateSlots,
        pattern: &'a Arc<JacobianPattern>,
    ) -> ModelOde<'a> {
        frame.set_event_mode(false);
        let good_guesses = slots
            .guesses
            .iter()
            .map(|&g| frame.slots()[g as usize])
            .collect();
        ModelOde {
            backend,
            frame,
            slots,
            pattern,
            evaluations: 0,
            tangent_runs: 0,
            good_guesses,
        }
    }

    pub fn load(&mut self, t: f64, x: &[f64]) {
        self.frame.set_time(t);
        let values = self.frame.values();
        for (&s, &v) in self.slots.states.iter().zip(x) {
            values[s as usize] = v;
        }
    }

    /// One run of the tangent code with the seeds of `colour`'s states
    /// set: since no two of them reach the same row, each row's tangent is
    /// the entry of the one column of the colour that reaches it; those
    /// entries are stored in `jac`, but for the rows `skip` marks.
    fn coloured_run(
        &mut self,
        pattern: &JacobianPattern,
        colour: &[u32],
        skip: Option<&[bool]>,
        jac: &mut Jacobian,
    ) -> Result<(), EvalFail> {
        let values = self.frame.values();
        for &j in colour {
            values[self.slots.tangent_states[j as usize] as usize] = 1.0;
        }
        self.tangent_runs += 1;
        let code = self.backend.run(Entry::Tangent, values);
        for &j in colour {
            values[self.slots.tangent_states[j as usize] as usize] = 0.0;
        }
        if code != status::OK {
            return Err(EvalFail(code));
        }
        for &j in colour {
            let j = j as usize;
            for k in pattern.column(j) {
                let i = pattern.row_idx[k];
                if !skip.is_some_and(|s| s[i]) {
                    jac.set_entry(k, i, j, values[self.slots.tangent_ders[i] as usize]);
                }
            }
        }
        Ok(())
    }

    /// df/dx at the evaluated point with the dense rows by the chain rule
    /// ([`DenseRowSplit`]): one tangent run per colour of the split's
    /// colouring gives the sparse rows and the leaves' derivatives, and a
    /// backward sweep over the expanded variables each dense row. False
    /// (nothing usable written) if a partial derivative cannot be
    /// evaluated at the point.
    fn jacobian_split(
        &mut self,
        split: &DenseRowSplit,
        jac: &mut Jacobian,
    ) -> Result<bool, EvalFail> {
        let layout = self.frame.layout().clone();
        let (vars, pre, n_vars) = (
            layout.vars as usize,
            layout.pre as usize,
            layout.n_vars as usize,
        );
        let mut partials = Vec::new();
        {
            let slots = self.frame.slots();
            let mut values = Cow::Borrowed(&slots[vars..vars + n_vars]);
            let mut pres = Cow::Borrowed(&slots[pre..pre + n_vars]);
            if !split.aliases.is_empty() {
                let (values, pres) = (values.to_mut(), pres.to_mut());
                for &(a, of, sign) in &split.aliases {
                    values[a as usize] = sign * values[of as usize];
                    pres[a as usize] = sign * pres[of as usize];
                }
            }
            if !split.eval_partials(&values, &pres, self.frame.time(), &mut partials) {
                return Ok(false);
            }
        }
        let pattern = self.pattern.clone();
        let mut leaf = vec![0.0; split.leaf_entries];
        for (colour, leaves) in split.colours.iter().zip(&split.colour_leaves) {
            self.coloured_run(&pattern, colour, Some(&split.dense), jac)?;
            for &(entry, var) in leaves {
                leaf[entry] = self.frame.tangent(var);
            }
        }
        let n = self.slots.states.len();
        let mut adjoint = vec![0.0; split.nodes.len()];
        let mut acc = vec![0.0; n];
        for (r, &(i, _, _)) in split.rows.iter().enumerate() {
            split.row(r, &partials, &leaf, &mut adjoint, &mut acc);
            for (j, a) in acc.iter_mut().enumerate() {
                if *a != 0.0 {
                    if let Some(k) = pattern.entry(i, j) {
                        jac.set_entry(k, i, j, *a);
                    }
                    *a = 0.0;
                }
            }
        }
        Ok(true)
    }

    /// Evaluates all algebraic variables at (t, x).
    pub fn eval(&mut self, t: f64, x: &[f64]) -> Result<(), EvalFail> {
        self.load(t, x);
        self.evaluations += 1;
        let code = self.backend.run(Entry::Ode, self.frame.values());
        let values = self.frame.values();
        if code != status::OK {
            for (&g, &v) in self.slots.guesses.iter().zip(&self.good_guesses) {
                values[g as usize] = v;
            }
            return Err(EvalFail(code));
        }
        for (&g, v) in self.slots.guesses.iter().zip(self.good_guesses.iter_mut()) {
            *v = values[g as usize];
        }
        Ok(())
    }
}

impl OdeProblem for ModelOde<'_> {
    fn n(&self) -> usize {
        self.slots.states.len()
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFail> {
        self.eval(t, x)?;
        let values = self.frame.slots();
        for (d, &s) in dx.iter_mut().zip(&self.slots.ders) {
            *d = values[s as usize];
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
        self.frame.clear_tangents();
        jac.clear();
        let pattern = self.pattern.clone();
        if let Some(split) = &pattern.split
            && self.jacobian_split(split, jac)?
        {
            return Ok(());
        }
        for colour in &pattern.colours {
            self.coloured_run(&pattern, colour, None, jac)?;
        }
        Ok(())
    }
}

/// Compiled code as a backend.
impl Backend for crate::jit::codegen::Jit {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        self.run_index(entry.index(), buf)
    }
}

/// Compiled code for the hot entries, the interpreter for the rest: what
/// `rmoc simulate` runs. Both work on the same buffer layout.
pub struct Hybrid<'p> {
    pub jit: &'p crate::jit::codegen::Jit,
    pub program: &'p Program,
}

impl Hybrid<'_> {
    /// Compiles the hot entries of `program` (the other half of a
    /// [`Hybrid`]).
    pub fn compile(program: &Program) -> Result<crate::jit::codegen::Jit, String> {
        crate::jit::codegen::compile_entries(program, &Entry::ALL.map(Entry::hot))
    }
}

impl Backend for Hybrid<'_> {
    fn run(&self, entry: Entry, buf: &mut [f64]) -> i32 {
        if self.jit.has(entry.index()) {
            self.jit.run_index(entry.index(), buf)
        } else {
            interp::run(entry.func(self.program), buf, &self.program.user)
        }
    }
}
