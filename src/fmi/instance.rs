//! One FMU instance: the carried model compiled at instantiation, its
//! variable table, and a [`Session`] that runs it. The C functions of
//! [`super::fmi2`] and [`super::fmi3`] are thin layers over this type; it
//! knows no C.
//!
//! Invariants: an error is reported once, through the logger, with the
//! rendered diagnostic (file, line, snippet, hint where the model has
//! them); after an error in a run the instance refuses to go on (the
//! standards' Error state) until it is reset; model exchange evaluates the
//! model lazily, when a value is read after time, states or inputs were
//! set. Compilation and the parts of a run the interpreter executes
//! (parameters, start values, the initial system) run on a thread with a
//! 512 MiB stack, not the host's: the front end and the interpreter
//! recurse on deep expressions. The run's own entries are compiled code
//! (with `--no-jit` they too are interpreted, on the host's stack).

use super::{FmiCausality, Interface, Resources, ValueSource};
use crate::diag::{Diagnostic, DiagnosticKind, SourceMap};
use crate::flat::ScalarType;
use crate::solve::Options;
use crate::solve::session::Session;
use std::path::{Path, PathBuf};

/// The status every FMI function returns (both versions share the codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FmiStatus {
    Ok = 0,
    Warning = 1,
    Discard = 2,
    Error = 3,
    Fatal = 4,
}

/// The interface an instance was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceKind {
    ModelExchange,
    CoSimulation,
}

/// The host's logger: status, category, message.
pub type HostLogger = Box<dyn Fn(FmiStatus, &str, &str)>;

pub struct FmuInstance {
    pub name: String,
    pub kind: InstanceKind,
    sources: SourceMap,
    /// Dropped on a large stack (`Drop`): its code's expression trees are
    /// as deep as the model's expressions.
    sim: std::mem::ManuallyDrop<crate::Simulator>,
    pub iface: Interface,
    base: Options,
    session: Session,
    logger: HostLogger,
    /// Debug logging on (`SetDebugLogging`): warnings are logged too.
    pub logging: bool,
    start_time: f64,
    stop_time: Option<f64>,
    tolerance: Option<f64>,
    /// An error ended what the instance can do (until a reset).
    failed: bool,
    /// `terminate` fired in the model.
    pub terminated: bool,
    /// The end of the last successful communication step.
    pub last_time: f64,
    /// Model exchange: time, states or inputs changed since the model was
    /// last evaluated.
    dirty: bool,
    /// The event indicators' values (FMI 3 reads them as variables).
    indicators: Vec<f64>,
}

/// The folder a resource location names: a `file:` URI (FMI 2) or a path
/// (FMI 3).
pub fn resource_dir(location: &str) -> PathBuf {
    let rest = location
        .strip_prefix("file://localhost")
        .or_else(|| location.strip_prefix("file://"))
        .or_else(|| location.strip_prefix("file:"));
    match rest {
        Some(r) => {
            // Percent-decoding.
            let b = r.as_bytes();
            let mut out = Vec::with_capacity(b.len());
            let mut k = 0;
            while k < b.len() {
                if b[k] == b'%'
                    && let Some(v) = b
                        .get(k + 1..k + 3)
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    out.push(v);
                    k += 3;
                    continue;
                }
                out.push(b[k]);
                k += 1;
            }
            PathBuf::from(String::from_utf8_lossy(&out).to_string())
        }
        None => PathBuf::from(location),
    }
}

/// Runs `f` on a thread with a large stack (the front end recurses on deep
/// expressions, as `rmoc simulate` does on its worker thread).
fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn_scoped(scope, f)
            .ok()?
            .join()
            .ok()
    })
}

impl FmuInstance {
    /// Compiles the model in `resources` (checking `token` when given);
    /// `None` after logging why not.
    pub fn new(
        name: &str,
        kind: InstanceKind,
        token: Option<&str>,
        resources: &Path,
        logger: HostLogger,
    ) -> Option<FmuInstance> {
        let fail = |message: String| {
            logger(FmiStatus::Error, "logStatusError", &message);
            None
        };
        let read = |file: &str| {
            std::fs::read_to_string(resources.join(file))
                .map_err(|e| format!("cannot read {}: {e}", resources.join(file).display()))
        };
        let settings = match read("rmoc.json") {
            Ok(s) => s,
            Err(e) => {
                return fail(format!(
                    "{e} (is the resource location the FMU's resources folder?)"
                ));
            }
        };
        let settings: Resources = match serde_json::from_str(&settings) {
            Ok(s) => s,
            Err(e) => return fail(format!("resources/rmoc.json is not rmoc's: {e}")),
        };
        let text = match read("model.rmo") {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let expected = super::token(&settings.model, &text);
        if token.is_some_and(|t| t != expected) {
            return fail(format!(
                "the instantiation token {} does not match this FMU's model ({expected}): the description and the resources come from different exports",
                token.unwrap_or_default()
            ));
        }
        // Diagnostics name the file as the user wrote it; other top-level
        // names are looked up beside it, in the resources.
        let path = resources.join(&settings.file);
        let model = settings.model.clone();
        let interpreted = settings.interpreted;
        let compiled = on_big_stack(move || {
            let (mut lib, loaded) = crate::load_source_in(&path, &text, false);
            let sim = loaded
                .and_then(|l| crate::select_model(&mut lib, &l, Some(&model)).map_err(|d| vec![d]))
                .and_then(|m| crate::compile(&mut lib, m))
                .and_then(|c| crate::Simulator::new(c, interpreted).map_err(|d| vec![d]));
            (lib.sources, sim)
        });
        let Some((sources, sim)) = compiled else {
            return fail("the model's compilation failed unexpectedly".into());
        };
        let sim = match sim {
            Ok(s) => s,
            Err(d) => return fail(crate::diag::render(&sources, &d, false)),
        };
        let c = sim.causal();
        let settled = match crate::solve::settings::RunRequest::default().resolve(c) {
            Err(d) => Err(crate::diag::render(&sources, &[d], false)),
            Ok(_)
                if kind == InstanceKind::ModelExchange
                    && !(c.contacts.is_empty() && c.frictions.is_empty()) =>
            {
                Err(format!(
                    "model `{}` has set-valued contacts, which only rmoc's own integrators solve: use its co-simulation interface",
                    c.name
                ))
            }
            Ok(o) => Ok(o),
        };
        let base = match settled {
            Ok(o) => o,
            Err(message) => {
                // (The compiled model is dropped on a large stack too.)
                let _ = on_big_stack(move || drop(sim));
                return fail(message);
            }
        };
        let mut session = sim.with_model(|m| Session::new(m, base.clone()));
        // Values read before initialization are the parameters' and the
        // start values (a failure here is reported by the initialization);
        // the variable table's start values are the same.
        let _ = on_big_stack(|| sim.with_model(|m| session.prepare(m)));
        let iface = super::interface(sim.causal(), &sim.compiled.program, &|v| session.var(v));
        let n_indicators = iface.indicators.len();
        Some(FmuInstance {
            name: name.to_string(),
            kind,
            sources,
            start_time: base.start,
            stop_time: None,
            tolerance: None,
            sim: std::mem::ManuallyDrop::new(sim),
            iface,
            base,
            session,
            logger,
            logging: false,
            failed: false,
            terminated: false,
            last_time: 0.0,
            dirty: true,
            indicators: vec![0.0; n_indicators],
        })
    }

    /// Logs `d` as an error and refuses further runs.
    fn error(&mut self, d: Diagnostic) -> FmiStatus {
        self.failed = true;
        let text = crate::diag::render(&self.sources, &[d], false);
        (self.logger)(FmiStatus::Error, "logStatusError", text.trim_end());
        FmiStatus::Error
    }

    /// Logs a misuse of the interface (the instance stays usable).
    pub fn misuse(&self, message: &str) -> FmiStatus {
        (self.logger)(FmiStatus::Error, "logStatusError", message);
        FmiStatus::Error
    }

    /// Logs the session's warnings (asserts, terminate) when logging is on.
    fn flush_warnings(&mut self) {
        let warnings = self.session.take_warnings();
        if self.logging && !warnings.is_empty() {
            let text = crate::diag::render(&self.sources, &warnings, false);
            (self.logger)(FmiStatus::Warning, "logStatusWarning", text.trim_end());
        }
    }

    fn refuse_if_failed(&self) -> Option<FmiStatus> {
        self.failed
            .then(|| self.misuse("an earlier error stopped this instance; reset or free it"))
    }

    /// Starts initialization with the host's experiment.
    pub fn setup(&mut self, tolerance: Option<f64>, start: f64, stop: Option<f64>) -> FmiStatus {
        if let Some(t) = tolerance.filter(|t| *t > 0.0) {
            self.tolerance = Some(t);
            self.session.set_tolerance(t);
        }
        self.start_time = start;
        self.stop_time = stop;
        FmiStatus::Ok
    }

    /// Ends initialization: parameters, starts and the initial system.
    pub fn initialize(&mut self) -> FmiStatus {
        if let Some(s) = self.refuse_if_failed() {
            return s;
        }
        let (start, stop) = (self.start_time, self.stop_time);
        let session = &mut self.session;
        // (Parameters, starts and the initial system run on the
        // interpreter, which recurses on deep expressions: on a large
        // stack, not the host's.)
        let sim = &self.sim;
        let done = on_big_stack(|| sim.with_model(|m| session.initialize(m, start, stop)))
            .unwrap_or_else(|| {
                Err(Diagnostic::error_nospan(
                    DiagnosticKind::Internal,
                    "internal error: the initialization failed unexpectedly",
                ))
            });
        self.last_time = start;
        self.dirty = true;
        match done {
            Ok(()) => {
                self.flush_warnings();
                FmiStatus::Ok
            }
            Err(d) => self.error(d),
        }
    }

    /// Co-simulation: one communication step.
    pub fn do_step(&mut self, t: f64, h: f64) -> FmiStatus {
        if let Some(s) = self.refuse_if_failed() {
            return s;
        }
        if self.terminated {
            return self.misuse("the model terminated; no more steps");
        }
        if !(h > 0.0 && h.is_finite() && t.is_finite()) {
            return self.misuse(&format!("doStep: invalid step {h} at {t}"));
        }
        let session = &mut self.session;
        let done = self.sim.with_model(|m| session.do_step(m, t, h));
        match done {
            Ok(terminated) => {
                self.flush_warnings();
                if terminated {
                    // (The run ended inside the step, at the model's time.)
                    self.last_time = self.session.time();
                    self.terminated = true;
                    return FmiStatus::Discard;
                }
                self.last_time = t + h;
                FmiStatus::Ok
            }
            Err(d) => self.error(d),
        }
    }

    /// Evaluates the model where time, states or inputs changed since
    /// (model exchange, after initialization).
    ///
    /// In co-simulation that is after an input was set between steps (an
    /// output that depends on it directly changes at once). An evaluation
    /// that fails in model exchange is `Discard` (the host's solver may try
    /// a shorter step), not the end of the instance.
    fn refresh(&mut self) -> Result<(), FmiStatus> {
        if !(self.dirty && self.session.initialized()) {
            return Ok(());
        }
        let session = &mut self.session;
        let done = match self.kind {
            InstanceKind::ModelExchange => {
                let indicators = &mut self.indicators;
                self.sim
                    .with_model(|m| session.event_indicators(m, indicators))
            }
            InstanceKind::CoSimulation => self.sim.with_model(|m| session.evaluate(m)),
        };
        self.dirty = false;
        match done {
            Ok(()) => Ok(()),
            Err(d) if self.kind == InstanceKind::ModelExchange => {
                self.dirty = true;
                let text = crate::diag::render(&self.sources, &[d], false);
                (self.logger)(FmiStatus::Discard, "logStatusDiscard", text.trim_end());
                Err(FmiStatus::Discard)
            }
            Err(d) => Err(self.error(d)),
        }
    }

    fn variable(&self, vr: u32, ty: ScalarType) -> Result<&super::FmiVariable, FmiStatus> {
        match self.iface.variable(vr) {
            Some(v) if v.ty == ty => Ok(v),
            Some(v) => Err(self.misuse(&format!(
                "value reference {vr} is `{}`, a {}, not a {}",
                v.name,
                v.ty.name(),
                ty.name()
            ))),
            None => Err(self.misuse(&format!("no variable has value reference {vr}"))),
        }
    }

    /// The value of variable `vr` of type `ty` (Integers and Booleans as
    /// whole numbers).
    pub fn get(&mut self, vr: u32, ty: ScalarType) -> Result<f64, FmiStatus> {
        self.refresh()?;
        let source = self.variable(vr, ty)?.source;
        Ok(match source {
            ValueSource::Frame(s) => self.session.value(s),
            ValueSource::Indicator(j) => self.indicators.get(j).copied().unwrap_or(0.0),
            ValueSource::Time => self.session.time(),
        })
    }

    /// Sets variable `vr`: a parameter or a state's start value before
    /// initialization ends, an input at any time.
    pub fn set(&mut self, vr: u32, ty: ScalarType, x: f64) -> FmiStatus {
        let v = match self.variable(vr, ty) {
            Ok(v) => v,
            Err(s) => return s,
        };
        let (Some(target), causality) = (v.settable, v.causality) else {
            let name = v.name.clone();
            return self.misuse(&format!(
                "`{name}` is computed by the model and cannot be set (only parameters, inputs and the start values of states with fixed = true can)"
            ));
        };
        if causality != FmiCausality::Input && self.session.initialized() {
            let name = v.name.clone();
            let what = if causality == FmiCausality::Parameter {
                format!("parameter `{name}` is fixed")
            } else {
                format!("the start value of `{name}` is used")
            };
            return self.misuse(&format!("{what}: set it before initialization ends"));
        }
        let x = match ty {
            ScalarType::Real => x,
            _ => x.round(),
        };
        if self.iface.states.contains(&(vr as usize)) {
            self.session.set_start(target, x);
        } else {
            self.session.set_var(target, x);
        }
        self.dirty = true;
        FmiStatus::Ok
    }

    /// Model exchange: the time of the next evaluation.
    pub fn set_time(&mut self, t: f64) -> FmiStatus {
        self.session.set_time(t);
        self.dirty = true;
        FmiStatus::Ok
    }

    pub fn states(&self) -> Vec<f64> {
        self.session.states(self.sim.causal())
    }

    pub fn set_states(&mut self, x: &[f64]) -> FmiStatus {
        if x.len() != self.iface.states.len() {
            return self.misuse(&format!(
                "{} states given, the model has {}",
                x.len(),
                self.iface.states.len()
            ));
        }
        self.session.set_states(self.sim.causal(), x);
        self.dirty = true;
        FmiStatus::Ok
    }

    pub fn derivatives(&mut self, out: &mut [f64]) -> FmiStatus {
        if let Some(s) = self.refuse_if_failed() {
            return s;
        }
        if out.len() != self.iface.states.len() {
            return self.misuse(&format!(
                "{} derivatives asked for, the model has {} states",
                out.len(),
                self.iface.states.len()
            ));
        }
        if let Err(s) = self.refresh() {
            return s;
        }
        let c = self.sim.causal();
        for (o, &d) in out.iter_mut().zip(&c.state_ders) {
            *o = self.session.var(d);
        }
        FmiStatus::Ok
    }

    pub fn event_indicators(&mut self, out: &mut [f64]) -> FmiStatus {
        if let Some(s) = self.refuse_if_failed() {
            return s;
        }
        if out.len() != self.indicators.len() {
            return self.misuse(&format!(
                "{} event indicators asked for, the model has {}",
                out.len(),
                self.indicators.len()
            ));
        }
        if let Err(s) = self.refresh() {
            return s;
        }
        out.copy_from_slice(&self.indicators);
        FmiStatus::Ok
    }

    /// Directional derivatives (`GetDirectionalDerivative`): the
    /// derivatives of `unknowns` along `seed` over `knowns`, which are
    /// states or inputs.
    pub fn directional(
        &mut self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        out: &mut [f64],
    ) -> FmiStatus {
        if let Some(s) = self.refuse_if_failed() {
            return s;
        }
        if !self.session.initialized() {
            return self.misuse("directional derivatives are available after initialization");
        }
        let mut seeds = Vec::with_capacity(knowns.len());
        for (&vr, &x) in knowns.iter().zip(seed) {
            let Some(v) = self.iface.variable(vr) else {
                return self.misuse(&format!("no variable has value reference {vr}"));
            };
            let is_state = self.iface.states.contains(&(vr as usize));
            match v.var {
                Some(var) if is_state || v.causality == FmiCausality::Input => seeds.push((var, x)),
                _ => {
                    let name = v.name.clone();
                    return self.misuse(&format!(
                        "directional derivatives are taken with respect to states and inputs, not `{name}`"
                    ));
                }
            }
        }
        let mut vars = Vec::with_capacity(unknowns.len());
        for &vr in unknowns {
            match self.iface.variable(vr).map(|v| v.var) {
                Some(Some(var)) => vars.push(var),
                Some(None) => {
                    return self.misuse(&format!("value reference {vr} has no derivative here"));
                }
                None => return self.misuse(&format!("no variable has value reference {vr}")),
            }
        }
        let session = &mut self.session;
        let done = self
            .sim
            .with_model(|m| session.directional(m, &seeds, &vars, out));
        self.dirty = true;
        match done {
            Ok(()) => FmiStatus::Ok,
            Err(d) if self.kind == InstanceKind::ModelExchange => {
                let text = crate::diag::render(&self.sources, &[d], false);
                (self.logger)(FmiStatus::Discard, "logStatusDiscard", text.trim_end());
                FmiStatus::Discard
            }
            Err(d) => self.error(d),
        }
    }

    /// Model exchange: the event at the current point.
    pub fn event_update(&mut self) -> Result<crate::solve::session::EventUpdate, FmiStatus> {
        if let Some(s) = self.refuse_if_failed() {
            return Err(s);
        }
        let session = &mut self.session;
        let done = self.sim.with_model(|m| session.event_update(m));
        self.dirty = true;
        match done {
            Ok(u) => {
                self.flush_warnings();
                self.terminated |= u.terminate;
                Ok(u)
            }
            Err(d) => Err(self.error(d)),
        }
    }

    /// The state a host saves (`GetFMUstate`) to come back to.
    pub fn save(&self) -> Result<SavedInstance, FmiStatus> {
        if let Some(s) = self.refuse_if_failed() {
            return Err(s);
        }
        Ok(SavedInstance {
            session: self.session.save(),
            terminated: self.terminated,
            last_time: self.last_time,
            start_time: self.start_time,
            stop_time: self.stop_time,
            tolerance: self.tolerance,
        })
    }

    /// Back to a saved state (`SetFMUstate`).
    pub fn restore(&mut self, s: &SavedInstance) -> FmiStatus {
        self.session.restore(&s.session);
        self.terminated = s.terminated;
        self.last_time = s.last_time;
        self.start_time = s.start_time;
        self.stop_time = s.stop_time;
        self.tolerance = s.tolerance;
        self.failed = false;
        self.dirty = true;
        FmiStatus::Ok
    }

    /// The end of the run (`terminal()` fires).
    pub fn terminate(&mut self) -> FmiStatus {
        if self.failed {
            return FmiStatus::Ok;
        }
        let session = &mut self.session;
        let done = self.sim.with_model(|m| session.finish(m));
        match done {
            Ok(()) => FmiStatus::Ok,
            Err(d) => self.error(d),
        }
    }

    /// Back to the state after instantiation (parameters at their defaults).
    pub fn reset(&mut self) -> FmiStatus {
        let base = self.base.clone();
        self.session = self.sim.with_model(|m| Session::new(m, base));
        let (sim, session) = (&self.sim, &mut self.session);
        let _ = on_big_stack(|| sim.with_model(|m| session.prepare(m)));
        self.failed = false;
        self.terminated = false;
        self.dirty = true;
        self.tolerance = None;
        self.start_time = self.base.start;
        self.stop_time = None;
        FmiStatus::Ok
    }
}

/// An instance's state as a host saved it (the FMI state pointer points to
/// one of these).
pub struct SavedInstance {
    session: crate::solve::session::SavedSession,
    terminated: bool,
    last_time: f64,
    start_time: f64,
    stop_time: Option<f64>,
    tolerance: Option<f64>,
}

impl Drop for FmuInstance {
    fn drop(&mut self) {
        // SAFETY: `sim` is taken here, once, and not used after.
        let sim = unsafe { std::mem::ManuallyDrop::take(&mut self.sim) };
        let _ = on_big_stack(move || drop(sim));
    }
}

/// The variable table of `sim`'s model (run with `opts`), with the start
/// values its parameters and starts give.
pub fn starts_and_interface(sim: &crate::Simulator, opts: &Options) -> Interface {
    let c = sim.causal();
    let p = &sim.compiled.program;
    let mut session = sim.with_model(|m| Session::new(m, opts.clone()));
    // (Start values that cannot be computed stay 0; the run reports why.)
    let _ = on_big_stack(|| sim.with_model(|m| session.prepare(m)));
    super::interface(c, p, &|v| session.var(v))
}
