//! A run that advances on request, kept between calls: the engine of an
//! FMU (`crate::fmi`). Co-simulation advances it by communication steps
//! through the one hybrid loop ([`super::hybrid::integrate`], with the
//! integrator resumed where the last step ended unless a state or an input
//! was changed in between); model exchange sets time and states from
//! outside and asks for derivatives, event indicators and event updates.
//!
//! Invariants: between calls the run is parked ([`super::Parked`]) with its
//! frame at the last point computed; parameters are set before
//! initialization only (as overrides, so that what depends on them is
//! computed from them); the rows a step records are dropped (the host keeps
//! its own).

use super::integrator::{self, Integrator};
use super::model::{Backend, Entry};
use super::{ColumnSource, Options, Parked, Run, hybrid, prepare, start, terminal};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::jit::lower::Program;
use crate::structure::Causal;

/// The model a session runs, lent to each call.
#[derive(Clone, Copy)]
pub struct ModelRef<'a> {
    pub causal: &'a Causal,
    pub program: &'a Program,
    pub backend: &'a dyn Backend,
}

/// What an event update found (model exchange).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventUpdate {
    /// A `reinit` (or the event iteration) changed a state.
    pub states_changed: bool,
    /// The next sample instant.
    pub next_time_event: Option<f64>,
    /// `terminate` fired.
    pub terminate: bool,
}

/// A session's state saved by its host (an FMU's `GetFMUstate`): all of
/// it but the integrator's history, which restarts from the saved point.
#[derive(Clone)]
pub struct SavedSession {
    opts: Options,
    run: Parked,
    inputs_changed: bool,
    starts: Vec<(u32, f64)>,
    initialized: bool,
}

/// One run advanced by its host.
pub struct Session {
    opts: Options,
    /// `None` only while a call has it (or after a call panicked).
    run: Option<Parked>,
    integrator: Option<Box<dyn Integrator + Send>>,
    /// Whether the integrator may go on with its history.
    resume: bool,
    /// An input changed since the last step: its relations are evaluated
    /// anew (an event iteration) before the next.
    inputs_changed: bool,
    /// Start values set before initialization (states with `fixed =
    /// true`): they replace the model's after its starts are computed.
    starts: Vec<(u32, f64)>,
    initialized: bool,
}

impl Session {
    /// A session of `m` with the settings `opts` (start and stop are the
    /// defaults of [`Session::initialize`]).
    pub fn new(m: ModelRef, opts: Options) -> Session {
        let mut opts = opts;
        opts.monitor = None;
        opts.rows = None;
        let run = Run::new(m.causal, m.program, m.backend, &opts);
        Session {
            opts,
            run: Some(run.park()),
            integrator: None,
            resume: false,
            inputs_changed: false,
            starts: Vec::new(),
            initialized: false,
        }
    }

    /// Runs `f` on the unparked run.
    fn with<R>(
        &mut self,
        m: ModelRef,
        f: impl FnOnce(&mut Run, &mut Self) -> Result<R, Diagnostic>,
    ) -> Result<R, Diagnostic> {
        let Some(parked) = self.run.take() else {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Solver,
                "this instance failed earlier and cannot go on",
            ));
        };
        let mut run = Run::unpark(m.causal, m.program, m.backend, parked);
        let out = f(&mut run, self);
        self.run = Some(run.park());
        out
    }

    fn parked(&self) -> &Parked {
        // (`with` parks the run again before it returns.)
        self.run
            .as_ref()
            .expect("a session's run is parked between calls")
    }

    fn parked_mut(&mut self) -> &mut Parked {
        self.run
            .as_mut()
            .expect("a session's run is parked between calls")
    }

    pub fn initialized(&self) -> bool {
        self.initialized
    }

    pub fn time(&self) -> f64 {
        self.parked().frame.time()
    }

    /// The value of variable `v` (a frame slot) now.
    pub fn var(&self, v: u32) -> f64 {
        self.parked().frame.var(v)
    }

    /// The value behind an output column's source.
    pub fn value(&self, s: ColumnSource) -> f64 {
        let values = self.parked().frame.slots();
        match s {
            ColumnSource::Slot(k) => values[k as usize],
            ColumnSource::Negated(k) => -values[k as usize],
        }
    }

    /// Sets variable `v`: before initialization as a parameter override
    /// (what depends on it follows), after it in place (an input; the
    /// integrator then restarts from the point).
    pub fn set_var(&mut self, v: u32, x: f64) {
        if !self.initialized {
            self.opts.overrides.retain(|o| o.0 != v);
            self.opts.overrides.push((v, x));
        } else if self.parked().frame.var(v) != x {
            self.resume = false;
            self.inputs_changed = true;
        }
        self.parked_mut().frame.set_var(v, x);
    }

    /// Sets the start value of state `v` (before initialization; a state
    /// with `fixed = true` starts there).
    pub fn set_start(&mut self, v: u32, x: f64) {
        self.starts.retain(|o| o.0 != v);
        self.starts.push((v, x));
        self.parked_mut().frame.set_var(v, x);
    }

    /// The state to come back to ([`Session::restore`]).
    pub fn save(&self) -> SavedSession {
        SavedSession {
            opts: self.opts.clone(),
            run: self.parked().clone(),
            inputs_changed: self.inputs_changed,
            starts: self.starts.clone(),
            initialized: self.initialized,
        }
    }

    /// Back to a saved state: the next step restarts the integrator there.
    pub fn restore(&mut self, s: &SavedSession) {
        self.opts = s.opts.clone();
        self.run = Some(s.run.clone());
        self.inputs_changed = s.inputs_changed;
        self.starts = s.starts.clone();
        self.initialized = s.initialized;
        // A fixed-step integrator keeps its step grid: a new one starts at
        // the restored point.
        self.integrator = None;
        self.resume = false;
    }

    /// Sets the relative tolerance (before initialization).
    pub fn set_tolerance(&mut self, tolerance: f64) {
        self.opts.tolerance = tolerance;
    }

    /// Parameters and start values only (an FMU's description lists them).
    pub fn prepare(&mut self, m: ModelRef) -> Result<(), Diagnostic> {
        let opts = self.opts.clone();
        self.with(m, |run, s| {
            prepare(run, &opts)?;
            for &(v, x) in &s.starts {
                run.frame.set_var(v, x);
            }
            Ok(())
        })
    }

    /// Parameters, start values and the initial system at `start`;
    /// `stop` bounds the run (for the resolution of sample periods).
    pub fn initialize(
        &mut self,
        m: ModelRef,
        start_time: f64,
        stop: Option<f64>,
    ) -> Result<(), Diagnostic> {
        self.opts.start = start_time;
        if let Some(stop) = stop {
            self.opts.stop = stop;
        }
        self.opts.stop = self.opts.stop.max(start_time);
        let opts = self.opts.clone();
        self.with(m, |run, s| {
            prepare(run, &opts)?;
            for &(v, x) in &s.starts {
                run.frame.set_var(v, x);
            }
            start(run, &opts)?;
            s.initialized = true;
            s.resume = false;
            Ok(())
        })
    }

    /// Co-simulation: advances from `t` by `h` through the hybrid loop
    /// (events inside are handled). Returns whether `terminate` ended the
    /// run.
    pub fn do_step(&mut self, m: ModelRef, t: f64, h: f64) -> Result<bool, Diagnostic> {
        let mut o = self.opts.clone();
        o.start = t;
        o.stop = t + h;
        o.interval = h;
        // The integrator's own settings (its largest step, say) come from
        // the whole run, not from the first communication step.
        let mut whole = self.opts.clone();
        whole.start = t;
        whole.stop = self.opts.stop.max(t + h);
        self.with(m, |run, s| {
            run.frame.set_time(t);
            if s.inputs_changed {
                // Relations on an input see its new value: an event.
                s.inputs_changed = false;
                hybrid::host_event(run)?;
            }
            let mut integrator = match s.integrator.take() {
                Some(i) => i,
                None => {
                    s.resume = false;
                    integrator::for_solver(run, &whole)?
                }
            };
            let done = hybrid::integrate(run, &o, integrator.as_mut(), s.resume);
            s.integrator = Some(integrator);
            run.results.times.clear();
            run.results.rows.clear();
            s.resume = done.is_ok();
            done?;
            // (The hybrid loop reported `terminate`, once.)
            Ok(run.frame.terminate() != 0)
        })
    }

    /// Model exchange: the time of the next evaluation.
    pub fn set_time(&mut self, t: f64) {
        self.parked_mut().frame.set_time(t);
    }

    /// The states, in the order of `Causal::states`.
    pub fn states(&self, c: &Causal) -> Vec<f64> {
        let frame = &self.parked().frame;
        c.states.iter().map(|&s| frame.var(s)).collect()
    }

    /// Model exchange: the states of the next evaluation.
    pub fn set_states(&mut self, c: &Causal, x: &[f64]) {
        self.resume = false;
        let frame = &mut self.parked_mut().frame;
        for (&s, &v) in c.states.iter().zip(x) {
            frame.set_var(s, v);
        }
    }

    /// Model exchange: evaluates the model at the frame's time and states
    /// (relations as at the last event) into the frame.
    pub fn evaluate(&mut self, m: ModelRef) -> Result<(), Diagnostic> {
        self.with(m, |run, _| {
            run.frame.set_event_mode(false);
            run.call(Entry::Ode)
        })
    }

    /// Model exchange: the derivatives of the states at the frame's point.
    pub fn derivatives(&mut self, m: ModelRef, out: &mut [f64]) -> Result<(), Diagnostic> {
        self.evaluate(m)?;
        let frame = &self.parked().frame;
        for (o, &d) in out.iter_mut().zip(&m.causal.state_ders) {
            *o = frame.var(d);
        }
        Ok(())
    }

    /// Model exchange: the event indicators at the frame's point, one per
    /// relation of [`event_indicators`] (a sign change is an event).
    pub fn event_indicators(&mut self, m: ModelRef, out: &mut [f64]) -> Result<(), Diagnostic> {
        self.evaluate(m)?;
        self.with(m, |run, _| run.call(Entry::ZeroCrossings))?;
        let frame = &self.parked().frame;
        for (o, k) in out.iter_mut().zip(event_indicators(m.program)) {
            let g = frame.zero_crossing(k);
            *o = if g != 0.0 {
                g
            } else {
                // A host sees an event where an indicator changes sign; at
                // zero the sign is the side the relation's value there
                // belongs to (`g > 0` is false at 0: the negative side),
                // so that leaving zero for the other side is an event.
                let op = m.program.relations[k].op;
                if op.apply(0.0, 0.0) == op.apply(1.0, 0.0) {
                    f64::MIN_POSITIVE
                } else {
                    -f64::MIN_POSITIVE
                }
            };
        }
        Ok(())
    }

    /// Directional derivatives at the frame's point (relations as at the
    /// last event): the tangents of `unknowns` for the seeds `knowns`
    /// (states and top-level inputs, with their seed values), from one run
    /// of the compiled tangent code.
    pub fn directional(
        &mut self,
        m: ModelRef,
        knowns: &[(u32, f64)],
        unknowns: &[u32],
        out: &mut [f64],
    ) -> Result<(), Diagnostic> {
        self.with(m, |run, _| {
            run.frame.set_event_mode(false);
            run.call(Entry::Ode)?;
            run.frame.clear_tangents();
            for &(v, seed) in knowns {
                // (A known listed twice adds its seeds.)
                let now = run.frame.tangent(v);
                run.frame.set_tangent(v, now + seed);
            }
            let done = run.call(Entry::Tangent);
            for (o, &u) in out.iter_mut().zip(unknowns) {
                *o = match super::linearize::source(m.causal, u) {
                    Some((s, sign)) => sign * run.frame.tangent(s),
                    None => 0.0,
                };
            }
            run.frame.clear_tangents();
            done
        })
    }

    /// Model exchange: the event at the frame's point (a sample instant
    /// due, or a crossing): the event iteration to a fixed point of the
    /// discrete variables, with `reinit`.
    pub fn event_update(&mut self, m: ModelRef) -> Result<EventUpdate, Diagnostic> {
        let before = self.states(m.causal);
        let next = self.with(m, |run, _| hybrid::host_event(run))?;
        self.resume = false;
        let after = self.states(m.causal);
        let terminate =
            self.parked().frame.terminate() != 0 && self.with(m, |run, _| Ok(run.terminated()))?;
        Ok(EventUpdate {
            states_changed: before != after,
            next_time_event: next.is_finite().then_some(next),
            terminate,
        })
    }

    /// The end of the run: `terminal()` fires.
    pub fn finish(&mut self, m: ModelRef) -> Result<(), Diagnostic> {
        if !self.initialized {
            return Ok(());
        }
        self.with(m, |run, _| terminal(run))
    }

    /// Warnings (failed warning-level asserts, `terminate`) since the last
    /// call.
    pub fn take_warnings(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.parked_mut().results.warnings)
    }
}

/// The relations whose zero crossings are events: model exchange's event
/// indicators, in this order.
pub fn event_indicators(p: &Program) -> impl Iterator<Item = usize> + '_ {
    p.relations
        .iter()
        .enumerate()
        .filter(|(_, r)| r.crossing)
        .map(|(k, _)| k)
}
