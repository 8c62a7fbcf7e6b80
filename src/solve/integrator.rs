//! The one interface of the integrators of smooth models, and the BDF's
//! implementation of it.
//!
//! An [`Integrator`] advances the run's states one step at a time toward a
//! bound (the next time event or the stop time) and gives the step's dense
//! output; [`super::hybrid::integrate`] does everything else (outputs,
//! events, asserts, progress). To add one: write a file in `src/solve/`
//! with a type implementing `Integrator` (it reads the model through
//! `run` and `ModelOde`, and reports failures as located diagnostics), add
//! a variant to [`super::Solver`] and its arm in `simulate`, which hands it
//! to the hybrid loop.

use super::bdf::{self, Bdf, Dense, EvalFail, StepError};
use super::jacobian::JacobianPattern;
use super::model::{Entry, ModelOde, StateSlots};
use super::{Options, Run};
use crate::diag::Diagnostic;
use std::sync::Arc;

/// A step's interpolant over (t_old, t].
pub trait DenseOutput {
    /// (t_old, t).
    fn span(&self) -> (f64, f64);
    /// The states at `t` in the span.
    fn eval(&self, t: f64, out: &mut [f64]);
}

impl DenseOutput for Dense {
    fn span(&self) -> (f64, f64) {
        (self.t_old, self.t)
    }
    fn eval(&self, t: f64, out: &mut [f64]) {
        Dense::eval(self, t, out)
    }
}

/// Why a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// An ordinary step, short of the bound.
    InternalStep,
    /// The step reached the bound it was given (a time event or the stop).
    BoundReached,
}

/// An integrator of the states of a smooth model.
pub(super) trait Integrator {
    /// One step from (t, x), the run's current point, toward `t_bound`,
    /// never past it. Afterwards [`Integrator::dense`] covers the step.
    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic>;
    /// The dense output of the last step.
    fn dense(&self) -> &dyn DenseOutput;
    /// Forgets the history: the next step starts afresh from the point it
    /// is given (after an event changed the state or the equations).
    fn restart(&mut self);
}

/// [`Bdf`] on the model's states, with the sparse Jacobian of
/// [`JacobianPattern`].
pub(super) struct BdfIntegrator {
    bdf: Option<Bdf>,
    settings: bdf::Settings,
    slots: StateSlots,
    pattern: Arc<JacobianPattern>,
    dense: Dense,
    debug_steps: bool,
}

impl BdfIntegrator {
    pub(super) fn new(run: &Run, opts: &Options) -> BdfIntegrator {
        let c = run.c;
        // atol: the request's, else tolerance x nominal (1 unless given).
        let atol = c
            .states
            .iter()
            .map(|&s| {
                let nominal = c.vars[s as usize]
                    .nominal
                    .and_then(|e| c.arena.as_const(e))
                    .map(f64::abs)
                    .unwrap_or(1.0);
                opts.atol.unwrap_or(opts.tolerance * nominal)
            })
            .collect();
        BdfIntegrator {
            bdf: None,
            settings: bdf::Settings {
                rtol: opts.tolerance,
                atol,
                max_step: (opts.stop - opts.start).abs().max(f64::MIN_POSITIVE),
                first_step: None,
                linear_solver: opts.linear_solver,
                taylor_start: true,
            },
            slots: StateSlots::of(c, run.l()),
            pattern: Arc::new(JacobianPattern::of_model(c)),
            dense: Dense::constant(opts.start, opts.start, Vec::new()),
            debug_steps: std::env::var_os("RMOC_DEBUG_STEPS").is_some(),
        }
    }
}

impl Integrator for BdfIntegrator {
    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic> {
        if self.bdf.is_none() {
            let mut ode = ModelOde::new(run.backend, &mut run.frame, &self.slots, &self.pattern);
            let b = Bdf::new(&mut ode, t, x, t_bound, self.settings.clone());
            run.stats.model_evaluations += ode.evaluations;
            match b {
                Ok(mut b) => {
                    run.stats.integrator.add(&b.stats);
                    b.stats = bdf::Stats::default();
                    self.bdf = Some(b);
                }
                Err(EvalFail(code)) => return Err(run.status_error(code, Entry::Ode)),
            }
        }
        let Some(b) = self.bdf.as_mut() else {
            return Err(Diagnostic::error_nospan(
                "internal error: the BDF did not start",
            ));
        };
        b.t_bound = t_bound;
        let mut ode = ModelOde::new(run.backend, &mut run.frame, &self.slots, &self.pattern);
        let r = b.step(&mut ode);
        run.stats.model_evaluations += ode.evaluations;
        run.stats.integrator.add(&b.stats);
        b.stats = bdf::Stats::default();
        if let Err(StepError::TooSmallStep { t, h, last_failure }) = r {
            run.frame.set_time(t);
            let mut d = match last_failure {
                Some(EvalFail(code)) => run.status_error(code, Entry::Ode),
                None => Diagnostic::error_nospan(format!(
                    "the step size fell to {h:e} at t = {t}: the integrator cannot proceed"
                )),
            };
            d = d.with_note(format!("step size {h:e} at t = {t}"));
            if last_failure.is_none() {
                let y = b.y.clone();
                d = run.fastest_state(t, &y, d);
            }
            return Err(d.with_hint("the solution may escape to infinity here (x' = x^2 does at a finite time), or the model is singular or stiffer than the tolerance allows; try --tolerance"));
        }
        if self.debug_steps {
            eprintln!(
                "step t={:.9} h={:.3e} order={}",
                b.t,
                b.step_size(),
                b.order()
            );
        }
        b.dense_into(&mut self.dense);
        Ok(if b.t >= t_bound {
            StopReason::BoundReached
        } else {
            StopReason::InternalStep
        })
    }

    fn dense(&self) -> &dyn DenseOutput {
        &self.dense
    }

    fn restart(&mut self) {
        self.bdf = None;
    }
}
