//! The one interface of rmoc's integrators, and the BDF's implementation
//! of it.
//!
//! An [`Integrator`] advances the run's states one step at a time toward a
//! bound (the next time event or the stop time) and gives the step's dense
//! output; [`super::hybrid::integrate`] does everything else (the output
//! grid, zero crossings and when-conditions, samples, event iteration and
//! `reinit`, asserts, `terminate`, the event guards, progress). The
//! integrators: [`BdfIntegrator`] (smooth models), the Moreau-Jean
//! time-stepper ([`super::moreau::MoreauIntegrator`]) and the event-driven
//! contact solver ([`super::event_driven::EventDrivenIntegrator`]).
//!
//! To add one: write a file in `src/solve/` with a type implementing
//! `Integrator` (it reads the model through `run` and `ModelOde`, adds its
//! work to `run.stats`, and reports failures as located diagnostics), and
//! add its variant to [`super::Solver`] with its arm in
//! [`for_solver`]: one line of registration.

use super::bdf::{self, Bdf, Dense, EvalFail, StepError};
use super::jacobian::JacobianPattern;
use super::model::{Entry, ModelOde, StateSlots};
use super::{Options, Run, Solver};
use crate::diag::{Diagnostic, DiagnosticKind};
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

/// The BDF's own table, read in place: no copy of (order + 1) x n values
/// a step (120 kB a step for the 50 x 50 grid, up to 960 kB for the
/// 10 000-body chain).
impl DenseOutput for Bdf {
    fn span(&self) -> (f64, f64) {
        self.dense_span()
    }
    fn eval(&self, t: f64, out: &mut [f64]) {
        self.dense_eval(t, out)
    }
}

/// Why a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// An ordinary step, short of the bound.
    InternalStep,
    /// The step reached the bound it was given (a time event or the stop
    /// time).
    BoundReached,
    /// The integrator's own event (a contact closing or opening) at the end
    /// of the step's dense output, which [`Integrator::handle_root`]
    /// applies.
    RootFound,
}

/// How the model's relations behave between events, and so which events
/// the hybrid loop looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relations {
    /// Relations keep the value of the last event between events; the
    /// zero crossings of their functions are the state events, located on
    /// the dense output (the BDF: its Newton iteration needs equations that
    /// do not switch inside a step).
    Frozen,
    /// The integrator evaluates the model in event mode, with live
    /// relations; a when-condition that rises is the state event (the
    /// contact solvers, whose steps cross discontinuities anyway).
    Live,
}

/// Where output rows are written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outputs {
    /// At the output times, interpolated on the dense output.
    Interpolated,
    /// A time-stepper without an interpolant: a step that reaches an output
    /// time (within `snap`) writes one row at its end, and a
    /// when-condition that rose during a step fires at its end.
    AtStepEnds { snap: f64 },
}

/// Which output rows and events an integrator asks of the hybrid loop, and
/// how often events may come before the loop calls them chattering.
#[derive(Clone, Copy, Debug)]
pub struct Behaviour {
    pub relations: Relations,
    pub outputs: Outputs,
    /// More than this many state events within 1e-9 (1 + |t|) seconds are
    /// chattering, reported with `chatter_hint`.
    pub chatter_events: usize,
    pub chatter_hint: &'static str,
    /// After a step the frame holds the model at the step's last Newton
    /// iterate, within the Newton tolerance of the step's end, evaluated
    /// in event mode: the per-step checks (non-finite values, asserts)
    /// read it there instead of evaluating the end once more. (They sample
    /// the trajectory at each step either way; output rows and events
    /// still evaluate at their exact times.)
    pub frame_at_last_iterate: bool,
}

/// The hint of the chattering guard for smooth models.
pub const CHATTER_HINT: &str = "a relation switches back and forth without time passing; add hysteresis or use noEvent where no event is needed";

/// An integrator of a model's states.
///
/// Contract: [`Integrator::step`] never passes `t_bound`; afterwards
/// [`Integrator::dense`] covers (t, end of step] (or, after
/// [`StopReason::RootFound`], up to the root). [`Integrator::evaluate`]
/// leaves every variable of the model in the frame at a point of that span,
/// with the integrator's own unknowns (contact forces) written.
pub(super) trait Integrator {
    fn behaviour(&self) -> Behaviour;
    /// The run starts at (t, x), just initialized. The integrator may check
    /// the point and move it onto its constraints (contacts that approach
    /// at the start take an impact); the default is [`Integrator::restart`].
    fn start(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.restart(run, t, x)
    }
    /// One step from (t, x), the run's current point, toward `t_bound`.
    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic>;
    /// The dense output of the last step.
    fn dense(&self) -> &dyn DenseOutput;
    /// Evaluates the model at (t, x) as this integrator sees it (relations
    /// as [`Behaviour::relations`] says, contact forces written).
    fn evaluate(&self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        run.evaluate_at(t, x)
    }
    /// Applies the event of a [`StopReason::RootFound`] step at its end
    /// (t, x) and starts afresh from the point after it.
    fn handle_root(
        &mut self,
        _run: &mut Run,
        _t: f64,
        _x: &mut Vec<f64>,
    ) -> Result<(), Diagnostic> {
        Err(Diagnostic::error_nospan(
            DiagnosticKind::Internal,
            "internal error: an integrator reported a root it does not handle",
        ))
    }
    /// An event iteration changed the states or the equations at t: the
    /// integrator forgets its history and starts afresh from (t, x), which
    /// it may move onto its constraints.
    fn restart(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic>;
}

/// The absolute tolerance of each state: the request's, else the
/// tolerance times the state's nominal value (1 unless the model gives
/// one).
pub(super) fn absolute_tolerances(run: &Run, opts: &Options) -> Vec<f64> {
    let c = run.c;
    c.states
        .iter()
        .map(|&s| {
            let nominal = c.vars[s as usize]
                .nominal
                .and_then(|e| c.arena.as_const(e))
                .map(f64::abs)
                .unwrap_or(1.0);
            opts.atol.unwrap_or(opts.tolerance * nominal)
        })
        .collect()
}

/// The integrator of a solver choice: the one place an integrator is
/// registered.
pub(super) fn for_solver(
    run: &mut Run,
    opts: &Options,
) -> Result<Box<dyn Integrator + Send>, Diagnostic> {
    Ok(match opts.solver {
        Solver::Bdf => Box::new(BdfIntegrator::new(run, opts)?),
        Solver::Moreau { step } => Box::new(super::moreau::MoreauIntegrator::new(run, opts, step)?),
        Solver::EventDriven => {
            Box::new(super::event_driven::EventDrivenIntegrator::new(run, opts)?)
        }
        Solver::GeneralizedAlpha { step, parameters } => Box::new(
            super::generalized_alpha::GeneralizedAlpha::new(run, opts, parameters, step)?,
        ),
    })
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
    /// The BDF for `run`'s model; a model with unilateral contacts is
    /// refused (they need a contact solver).
    pub(super) fn new(run: &Run, opts: &Options) -> Result<BdfIntegrator, Diagnostic> {
        let c = run.c;
        if let Some(k) = c.contacts.first() {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                k.span,
                "this model has unilateral contacts, which the BDF integrator cannot handle",
            )
            .with_label("a set-valued contact")
            .with_hint(
                "simulate it with `--solver moreau --step H` (the default for such models), or `--solver event-driven` for isolated impacts",
            )
            .with_note(super::STOPPED));
        }
        let atol = absolute_tolerances(run, opts);
        Ok(BdfIntegrator {
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
        })
    }
}

impl Integrator for BdfIntegrator {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            relations: Relations::Frozen,
            outputs: Outputs::Interpolated,
            chatter_events: 50,
            chatter_hint: CHATTER_HINT,
            frame_at_last_iterate: false,
        }
    }

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
                DiagnosticKind::Internal,
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
                None => Diagnostic::error_nospan(
                    DiagnosticKind::Solver,
                    format!(
                        "the step size fell to {h:e} at t = {t}: the integrator cannot proceed"
                    ),
                ),
            };
            d = d.with_note(format!("step size {h:e} at t = {t}"));
            if last_failure.is_none() {
                let y = b.y.clone();
                d = run.fastest_state(t, &y, d);
            }
            // A function's assertion (a table's argument out of range) is
            // its own explanation.
            let assertion = last_failure.is_some_and(|EvalFail(code)| {
                crate::jit::ir::status::decode(code).0 == crate::jit::ir::status::FN_ASSERT
            });
            if assertion {
                return Err(d);
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
        Ok(if b.t >= t_bound {
            StopReason::BoundReached
        } else {
            StopReason::InternalStep
        })
    }

    /// The `Bdf`'s own table, valid after a successful step (the
    /// contract: the hybrid loop reads it only then; after a restart the
    /// next read follows the next step). Before any step: a constant.
    fn dense(&self) -> &dyn DenseOutput {
        match &self.bdf {
            Some(b) => b,
            None => &self.dense,
        }
    }

    fn restart(&mut self, _run: &mut Run, _t: f64, _x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.bdf = None;
        Ok(())
    }
}
