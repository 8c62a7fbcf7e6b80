//! Simulation: consistent initialization, BDF integration, state and time
//! events, and the result table.
//!
//! The driver integrates the states with [`bdf::Bdf`] between events. After
//! each step it evaluates the zero-crossing functions at the new point; a
//! relation whose live value differs from its frozen value has crossed, and
//! the crossing is located on the step's dense output by the Illinois
//! variant of regula falsi (Dowell & Jarratt 1971). At the event the relations
//! are re-evaluated and when-clauses fire, iterating until the discrete
//! variables reach a fixed point (MLS 8.6); the BDF history restarts after.

pub mod bdf;
pub mod columns;
pub mod dense_rows;
pub mod event_driven;
pub mod generalized_alpha;
pub mod hybrid;
pub mod init;
pub mod integrator;
pub mod jacobian;
pub mod lcp;
pub mod linalg;
pub mod linearize;
pub mod model;
pub mod monitor;
pub mod moreau;
pub mod session;
pub mod settings;
pub mod sparse_lu;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::jit::frame::{Frame, Layout};
use crate::jit::ir::status;
use crate::jit::lower::{self, Program};
use crate::structure::{Block, Causal, Role};
pub use hybrid::MAX_OUTPUT_ROWS;
use model::{Backend, Entry};

/// Run settings (defaults come from the `experiment` annotation).
#[derive(Clone, Debug)]
pub struct Options {
    pub start: f64,
    pub stop: f64,
    /// Relative tolerance.
    pub tolerance: f64,
    /// Absolute tolerance of every state; `None`: tolerance x nominal.
    pub atol: Option<f64>,
    pub interval: f64,
    /// Parameter values set on the command line: (variable, value).
    pub overrides: Vec<(u32, f64)>,
    pub max_events: usize,
    pub solver: Solver,
    /// Dense or sparse LU for the BDF's Newton matrix (`--linear-solver`).
    pub linear_solver: jacobian::LinearSolver,
    /// Hears of the run's progress and may stop it (`None`: nobody asks).
    pub monitor: Option<monitor::MonitorHandle>,
    /// Takes the rows as the run records them, all but the last (which
    /// stays in `Results`): results stream to a file instead of being held.
    pub rows: Option<RowSinkHandle>,
    /// Keep the model's frame at the stop time in [`Results::frame`] (for
    /// a linearization there).
    pub keep_frame: bool,
    /// The result columns to keep, by pattern ([`chosen_columns`]); empty:
    /// every column.
    pub outputs: Vec<String>,
}

/// Where a run's rows go as it records them.
pub trait RowSink: Send {
    /// The columns, once, before any row.
    fn begin(&mut self, names: &[String]) -> std::io::Result<()>;
    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()>;
}

/// A row sink shared with the run: `Options` stays `Clone` and `Debug`.
#[derive(Clone)]
pub struct RowSinkHandle(pub std::sync::Arc<std::sync::Mutex<dyn RowSink>>);

impl std::fmt::Debug for RowSinkHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowSinkHandle")
    }
}

/// The integrator of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Solver {
    /// Variable-order BDF with event location (`solve::bdf`).
    #[default]
    Bdf,
    /// Moreau-Jean time-stepping with fixed step `step`, for unilateral
    /// contacts (`solve::moreau`).
    Moreau { step: f64 },
    /// The BDF between contact events, with the impact law at each
    /// (`solve::event_driven`), for isolated impacts without friction.
    EventDriven,
    /// The generalized-alpha family (`solve::generalized_alpha`): Newmark's
    /// method or Chung-Hulbert's, with fixed steps `step`, or steps chosen by
    /// the local error estimate when `None`.
    GeneralizedAlpha {
        step: Option<f64>,
        parameters: generalized_alpha::AlphaParameters,
    },
}

/// Where an output column's value comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColumnSource {
    Slot(u32),
    Negated(u32),
}

#[derive(Clone, Debug, Default)]
pub struct Results {
    pub names: Vec<String>,
    pub units: Vec<Option<String>>,
    /// Each column's type (Integer and Boolean columns hold whole numbers).
    pub types: Vec<crate::flat::ScalarType>,
    pub descriptions: Vec<Option<String>>,
    pub times: Vec<f64>,
    pub rows: Vec<Vec<f64>>,
    /// Parameter names and values (constant over the run).
    pub parameters: Vec<(String, f64)>,
    /// Parallel to `parameters`: each one's type.
    pub parameter_types: Vec<crate::flat::ScalarType>,
    /// Parallel to `parameters`: each one's description and unit.
    pub parameter_texts: Vec<(Option<String>, Option<String>)>,
    pub stats: RunStats,
    /// Warning-level asserts that failed, each once, at its first failure.
    pub warnings: Vec<Diagnostic>,
    /// The time a monitor stopped the run at: the rows end there and the
    /// run did not reach its stop time.
    pub interrupted: Option<f64>,
    /// Rows handed to `Options::rows` before the ones in `times`/`rows`.
    pub streamed: usize,
    /// The frame at the stop time, when `Options::keep_frame` asked for it.
    pub frame: Option<Frame>,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RunStats {
    pub integrator: bdf::Stats,
    pub state_events: u64,
    pub time_events: u64,
    pub event_iterations: u64,
    pub restarts: u64,
    pub model_evaluations: u64,
    /// The Moreau-Jean stepper's counters (set-valued contacts only).
    pub contacts: Option<moreau::ContactStats>,
    /// The generalized-alpha family's own counters (its steps and Newton
    /// work are in `integrator`).
    pub alpha: Option<generalized_alpha::AlphaStats>,
}

impl std::fmt::Display for RunStats {
    /// The work of one run, as `--stats` prints it and the tests pin it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.integrator;
        write!(
            f,
            "steps {} (rejected {}), Newton iterations {} (failed {}), right-hand sides {}, Jacobians {}, factorizations {}; \
             state events {}, time events {}, event iterations {}, restarts {}",
            i.steps,
            i.rejected,
            i.newton_iterations,
            i.newton_failures,
            i.rhs_evaluations,
            i.jacobians,
            i.factorizations,
            self.state_events,
            self.time_events,
            self.event_iterations,
            self.restarts
        )?;
        if let Some(c) = &self.contacts {
            write!(f, "; {c}")?;
        }
        if let Some(a) = &self.alpha {
            write!(
                f,
                "; step halvings {} ({} at discontinuities), active-set changes {}, position states {}",
                a.halvings + a.discontinuity_halvings,
                a.discontinuity_halvings,
                a.active_set_changes,
                a.positions
            )?;
        }
        Ok(())
    }
}

impl Results {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// The result columns matching any of `patterns` (all of them when there
/// are none), as positions in `names`, with their names: what
/// `--outputs` keeps (`rmoc simulate`'s result file, `rmoc sweep`'s
/// summary and saved results). A pattern that matches nothing is an
/// error that names the closest column.
pub fn chosen_columns(
    names: &[String],
    patterns: &[String],
) -> Result<Vec<(usize, String)>, Diagnostic> {
    if patterns.is_empty() {
        return Ok(names.iter().cloned().enumerate().collect());
    }
    for p in patterns {
        if !names.iter().any(|n| columns::glob(p, n)) {
            let d = Diagnostic::error_nospan(
                DiagnosticKind::UnresolvedName,
                format!("`--outputs {p}` matches no result column"),
            );
            let near = crate::diag::closest(p, names.iter().map(String::as_str));
            return Err(match near {
                Some(n) => d.with_hint(format!("did you mean `{n}`?")),
                None => d.with_hint(
                    "`*` matches within one dotted component, `**` across them, an array's name its elements: `--outputs 'gear.*' 'mesh.**' T`",
                ),
            });
        }
    }
    Ok(names
        .iter()
        .enumerate()
        .filter(|(_, n)| patterns.iter().any(|p| columns::glob(p, n)))
        .map(|(k, n)| (k, n.clone()))
        .collect())
}

/// The columns of the result: every variable of the model except
/// parameters and internal ones, aliases included.
pub fn output_columns(c: &Causal, l: &Layout) -> Vec<(String, ColumnSource, usize)> {
    let mut out = Vec::new();
    // Looked up per variable: maps, not scans (models have 1e5 variables).
    let alias_of: rustc_hash::FxHashMap<u32, &crate::structure::Alias> =
        c.aliases.iter().map(|a| (a.var, a)).collect();
    let state_ders: rustc_hash::FxHashSet<u32> = c.state_ders.iter().copied().collect();
    let contact_forces: Vec<u32> = c
        .contacts
        .iter()
        .map(|k| k.force)
        .chain(c.frictions.iter().map(|f| f.force))
        .collect();
    for (v, var) in c.vars.iter().enumerate() {
        // Internal variables (`$der1`, `$contact1.gap`, `der($...)`) are not shown.
        if var.name.contains('$') {
            continue;
        }
        match c.roles[v] {
            // A contact force is a slot the Moreau stepper writes: a result.
            Role::Parameter if contact_forces.contains(&(v as u32)) => {
                out.push((var.name.clone(), ColumnSource::Slot(l.var(v as u32)), v));
            }
            Role::Parameter | Role::Constant => {}
            Role::Alias => {
                if let Some(a) = alias_of.get(&(v as u32)) {
                    let s = l.var(a.of);
                    out.push((
                        var.name.clone(),
                        if a.negated {
                            ColumnSource::Negated(s)
                        } else {
                            ColumnSource::Slot(s)
                        },
                        v,
                    ));
                }
            }
            _ => {
                // Derivative variables only for states (der(x) of the integrator).
                if var.name.starts_with("der(") && !state_ders.contains(&(v as u32)) {
                    continue;
                }
                out.push((var.name.clone(), ColumnSource::Slot(l.var(v as u32)), v));
            }
        }
    }
    out
}

/// State of one run.
struct Run<'a> {
    c: &'a Causal,
    p: &'a Program,
    backend: &'a dyn Backend,
    frame: Frame,
    columns: Vec<(String, ColumnSource, usize)>,
    results: Results,
    cond_pre: Vec<bool>,
    /// Variables whose `pre` follows them during event iteration.
    discrete: Vec<u32>,
    stats: RunStats,
    next_sample: Vec<f64>,
    /// Warning-level asserts already reported.
    warned: Vec<usize>,
    /// Whether the initial point's asserts were checked (the asserts of
    /// initial equations are checked only there).
    initial_checked: bool,
    /// Whether any assert is checked after the initial point.
    step_asserts: bool,
    /// The variables the BLT blocks compute, in evaluation order.
    computed: Vec<u32>,
    poll: monitor::Poll,
    /// `Options::rows`, and the first failure writing to it.
    sink: Option<RowSinkHandle>,
    sink_error: Option<std::io::Error>,
    /// Where a monitor stopped the run.
    interrupted_at: Option<f64>,
}

/// A [`Run`] between two calls of a session: everything but the model.
/// A copy (an FMU's saved state) has no row sink error of its own.
struct Parked {
    frame: Frame,
    columns: Vec<(String, ColumnSource, usize)>,
    results: Results,
    cond_pre: Vec<bool>,
    discrete: Vec<u32>,
    stats: RunStats,
    next_sample: Vec<f64>,
    warned: Vec<usize>,
    initial_checked: bool,
    step_asserts: bool,
    computed: Vec<u32>,
    poll: monitor::Poll,
    sink: Option<RowSinkHandle>,
    sink_error: Option<std::io::Error>,
    interrupted_at: Option<f64>,
}

impl Clone for Parked {
    fn clone(&self) -> Parked {
        Parked {
            frame: self.frame.clone(),
            columns: self.columns.clone(),
            results: self.results.clone(),
            cond_pre: self.cond_pre.clone(),
            discrete: self.discrete.clone(),
            stats: self.stats,
            next_sample: self.next_sample.clone(),
            warned: self.warned.clone(),
            initial_checked: self.initial_checked,
            step_asserts: self.step_asserts,
            computed: self.computed.clone(),
            poll: self.poll.clone(),
            sink: self.sink.clone(),
            sink_error: None,
            interrupted_at: self.interrupted_at,
        }
    }
}

impl<'a> Run<'a> {
    /// A run of `c` with a zeroed frame, no output columns and no discrete
    /// variables to iterate (`simulate` sets those).
    fn new(c: &'a Causal, p: &'a Program, backend: &'a dyn Backend, opts: &Options) -> Run<'a> {
        Run {
            c,
            p,
            backend,
            frame: Frame::new(&p.layout),
            columns: Vec::new(),
            results: Results::default(),
            cond_pre: vec![false; p.branches.len()],
            // Variables that change only at events: discrete ones, and
            // the Booleans and Integers the blocks compute.
            discrete: (0..c.vars.len() as u32)
                .filter(|&v| {
                    c.roles[v as usize] == Role::Discrete
                        || (c.roles[v as usize] == Role::Algebraic
                            && c.vars[v as usize].ty != crate::flat::ScalarType::Real)
                })
                .collect(),
            stats: RunStats::default(),
            next_sample: Vec::new(),
            warned: Vec::new(),
            initial_checked: false,
            step_asserts: c.asserts.iter().any(|a| !a.initial),
            computed: c.blocks.iter().flat_map(|b| b.vars()).collect(),
            poll: monitor::Poll::new(opts.monitor.clone(), opts.start, opts.stop),
            sink: opts.rows.clone(),
            sink_error: None,
            interrupted_at: None,
        }
    }

    fn l(&self) -> &Layout {
        &self.p.layout
    }

    /// The run without its model, kept between the calls of a
    /// [`session::Session`].
    fn park(self) -> Parked {
        Parked {
            frame: self.frame,
            columns: self.columns,
            results: self.results,
            cond_pre: self.cond_pre,
            discrete: self.discrete,
            stats: self.stats,
            next_sample: self.next_sample,
            warned: self.warned,
            initial_checked: self.initial_checked,
            step_asserts: self.step_asserts,
            computed: self.computed,
            poll: self.poll,
            sink: self.sink,
            sink_error: self.sink_error,
            interrupted_at: self.interrupted_at,
        }
    }

    /// The parked run `s` of the model (c, p) again.
    fn unpark(c: &'a Causal, p: &'a Program, backend: &'a dyn Backend, s: Parked) -> Run<'a> {
        Run {
            c,
            p,
            backend,
            frame: s.frame,
            columns: s.columns,
            results: s.results,
            cond_pre: s.cond_pre,
            discrete: s.discrete,
            stats: s.stats,
            next_sample: s.next_sample,
            warned: s.warned,
            initial_checked: s.initial_checked,
            step_asserts: s.step_asserts,
            computed: s.computed,
            poll: s.poll,
            sink: s.sink,
            sink_error: s.sink_error,
            interrupted_at: s.interrupted_at,
        }
    }

    /// Once per step of every solver: reports progress to the monitor and
    /// stops the run (an error that [`simulate`] turns into the results so
    /// far, marked interrupted) when it asks.
    fn poll(&mut self, t: f64) -> Result<(), Diagnostic> {
        if self.poll.due(t, &self.stats) {
            self.interrupted_at = Some(t);
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Interrupted,
                format!("interrupted at t = {t}"),
            ));
        }
        Ok(())
    }

    /// Whether `v` changes only at events (a discrete variable, or a
    /// Boolean or Integer the blocks compute).
    fn is_discrete(&self, v: u32) -> bool {
        self.discrete.binary_search(&v).is_ok()
    }

    fn call(&mut self, e: Entry) -> Result<(), Diagnostic> {
        self.stats.model_evaluations += 1;
        let code = self.backend.run(e, self.frame.values());
        if code == status::OK {
            Ok(())
        } else {
            Err(self.status_error(code, e))
        }
    }

    /// A diagnostic for a failure code of the generated code.
    fn status_error(&self, code: i32, e: Entry) -> Diagnostic {
        let t = self.frame.time();
        status_diagnostic(self.c, self.p, code, e, t)
    }

    fn record(&mut self, t: f64) {
        let values = self.frame.slots();
        let row: Vec<f64> = self
            .columns
            .iter()
            .map(|(_, s, _)| match s {
                ColumnSource::Slot(k) => values[*k as usize],
                ColumnSource::Negated(k) => -values[*k as usize],
            })
            .collect();
        // Two rows at one time (an event's left and right limits) are kept;
        // an exact repeat is not.
        if let (Some(&lt), Some(lr)) = (self.results.times.last(), self.results.rows.last())
            && lt == t
            && *lr == row
        {
            return;
        }
        self.results.times.push(t);
        self.results.rows.push(row);
        // Streaming: all but the last row (an event's left limit may still
        // be compared with, or replaced) go to the sink.
        if let Some(sink) = &self.sink
            && self.results.rows.len() > 1
            && self.sink_error.is_none()
        {
            let n = self.results.rows.len() - 1;
            let Ok(mut sink) = sink.0.lock() else {
                self.sink_error = Some(std::io::Error::other("the row sink is poisoned"));
                return;
            };
            for (t, row) in self
                .results
                .times
                .drain(..n)
                .zip(self.results.rows.drain(..n))
            {
                if let Err(e) = sink.row(t, &row) {
                    self.sink_error = Some(e);
                    break;
                }
            }
            self.results.streamed += n;
        }
    }

    /// Records `t` in place of the last row if that is at `t` too (the
    /// start row, written before the integrator added its unknowns).
    fn replace_last_row(&mut self, t: f64) {
        if self.results.times.last() == Some(&t) {
            self.results.times.pop();
            self.results.rows.pop();
        }
        self.record(t);
    }

    fn states(&self) -> Vec<f64> {
        self.c.states.iter().map(|&s| self.frame.var(s)).collect()
    }

    fn set_states(&mut self, t: f64, x: &[f64]) {
        self.frame.set_time(t);
        for (&s, v) in self.c.states.iter().zip(x) {
            self.frame.set_var(s, *v);
        }
    }

    /// Values at (t, x) with frozen relations, for output.
    fn evaluate_at(&mut self, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        self.set_states(t, x);
        self.frame.set_event_mode(false);
        self.call(Entry::Ode)
    }

    /// Where `v` is computed: the when-clause assigning it, or the equation
    /// of its BLT block.
    fn defining_span(&self, v: u32) -> Option<crate::diag::Span> {
        for w in &self.c.whens {
            for (_, stmts) in &w.branches {
                for st in stmts {
                    if let crate::flat::WhenStatement::Assign { var, .. } = st
                        && *var == v
                    {
                        return Some(w.span);
                    }
                }
            }
        }
        let eq = self.c.blocks.iter().find_map(|b| match b {
            Block::Explicit { var, eq, .. } | Block::Implicit { var, eq, .. } => {
                (*var == v).then_some(*eq)
            }
            Block::Torn {
                tear,
                inner,
                residuals,
                ..
            } => {
                if let Some((_, _, eq)) = inner.iter().find(|x| x.0 == v) {
                    Some(*eq)
                } else if tear.contains(&v) {
                    residuals.first().map(|r| r.1)
                } else {
                    None
                }
            }
        })?;
        Some(self.c.equations[eq].span)
    }

    /// The first variable, in evaluation order, that is NaN or infinite at
    /// the buffer's point.
    fn first_non_finite(&self) -> Option<u32> {
        // Nearly always all are finite: checked in one pass over the frame
        // before the search (the scan of a large model's computed variables
        // was 4% of a generalized-alpha step).
        if self.frame.all_vars_finite() {
            return None;
        }
        self.computed
            .iter()
            .copied()
            .find(|&v| !self.frame.var(v).is_finite())
    }

    /// The error for model variable `culprit`, found not finite at `t`.
    fn non_finite_error(&self, culprit: u32, t: f64) -> Diagnostic {
        let name = &self.c.vars[culprit as usize].name;
        let value = self.frame.var(culprit);
        let message = format!("`{name}` became {value} at t = {t}");
        let d = match self.defining_span(culprit) {
            Some(span) => Diagnostic::error(DiagnosticKind::Solver, span, message)
                .with_label(format!("`{name}` is computed here")),
            None => Diagnostic::error_nospan(DiagnosticKind::Solver, message),
        };
        d
            .with_hint("an argument left the domain of its function here (sqrt or log of a negative number, division by zero, asin of more than 1); guard it, or stop the run before")
            .with_note(STOPPED)
    }

    /// Adds to a step-size failure the state that changes fastest relative
    /// to its size, pointing at the equation of its derivative: the usual
    /// culprit of a solution that runs away.
    fn fastest_state(&mut self, t: f64, x: &[f64], d: Diagnostic) -> Diagnostic {
        if self.evaluate_at(t, x).is_err() {
            return d;
        }
        let rate = |k: usize| {
            let v = self.frame.var(self.c.state_ders[k]);
            v.abs() / x[k].abs().max(1e-300)
        };
        let Some(k) = (0..x.len()).max_by(|&a, &b| rate(a).total_cmp(&rate(b))) else {
            return d;
        };
        let name = &self.c.vars[self.c.states[k] as usize].name;
        let der = self.frame.var(self.c.state_ders[k]);
        let note = format!(
            "fastest changing state: `{name}` = {:e} with der({name}) = {der:e}",
            x[k]
        );
        match self.defining_span(self.c.state_ders[k]) {
            Some(span) if d.span.is_none() => {
                let mut d = d.with_note(note);
                d.span = Some(span);
                d.label = format!("der({name}) is computed here");
                d
            }
            _ => d.with_note(note),
        }
    }

    /// Checks the asserts at the buffer's point (after evaluating the model
    /// there).
    fn check_asserts(&mut self) -> Result<(), Diagnostic> {
        let t = self.frame.time();
        let (error, warnings) = self.failed_asserts()?;
        self.initial_checked = true;
        for k in warnings {
            self.warn(k, t);
        }
        match error {
            Some(k) => Err(self.assert_error(k, t)),
            None => Ok(()),
        }
    }

    /// The first failing error-level assert, and the warning-level ones that
    /// fail here for the first time.
    fn failed_asserts(&mut self) -> Result<(Option<usize>, Vec<usize>), Diagnostic> {
        if !self.asserts_due() {
            return Ok((None, Vec::new()));
        }
        // The initial point's check computes the asserts of the initial
        // equations too (they are computed only under the initial flag).
        let initial = !self.initial_checked;
        if initial {
            self.frame.set_initial(true);
        }
        let called = self.call(Entry::Asserts);
        if initial {
            self.frame.set_initial(false);
        }
        called?;
        let mut warnings = Vec::new();
        for (k, a) in self.c.asserts.iter().enumerate() {
            // (An initial equation's assert holds outside the initial
            // point's check: the entry computes it only there.)
            if self.frame.assert_holds(k) {
                continue;
            }
            if a.level == crate::flat::AssertLevel::Error {
                return Ok((Some(k), warnings));
            }
            if !self.warned.contains(&k) {
                warnings.push(k);
            }
        }
        Ok((None, warnings))
    }

    /// Whether a check of the asserts here has any to check.
    fn asserts_due(&self) -> bool {
        self.step_asserts || (!self.initial_checked && !self.c.asserts.is_empty())
    }

    fn warn(&mut self, k: usize, t: f64) {
        let a = &self.c.asserts[k];
        self.warned.push(k);
        self.results.warnings.push(
            Diagnostic::warning(
                DiagnosticKind::Assertion,
                a.span,
                format!("assertion failed at t = {t}: {}", a.message),
            )
            .with_label("this assert (level = AssertionLevel.warning)")
            .with_note("the simulation went on; this warning is shown once"),
        );
    }

    fn assert_error(&self, k: usize, t: f64) -> Diagnostic {
        let a = &self.c.asserts[k];
        Diagnostic::error(
            DiagnosticKind::Assertion,
            a.span,
            format!("assertion failed at t = {t}: {}", a.message),
        )
        .with_label("this assert")
        .with_note(STOPPED)
    }

    /// Relations that must be re-evaluated: live value differs from frozen.
    fn crossed(&mut self) -> Result<Vec<usize>, Diagnostic> {
        if self.p.relations.iter().all(|r| !r.crossing) {
            return Ok(vec![]);
        }
        self.call(Entry::ZeroCrossings)?;
        let mut out = Vec::new();
        for (k, r) in self.p.relations.iter().enumerate() {
            if !r.crossing {
                continue;
            }
            let live = r.op.apply(self.frame.zero_crossing(k), 0.0);
            let frozen = self.frame.relation(k);
            if live != frozen {
                out.push(k);
            }
        }
        Ok(out)
    }

    /// Event iteration at the current time: re-evaluate relations, fire
    /// when-clauses, until the discrete variables settle. Returns whether a
    /// state was reinitialized.
    fn event_iteration(&mut self, initial: bool) -> Result<bool, Diagnostic> {
        let n_vars = self.l().n_vars;
        self.frame.set_event_mode(true);
        // pre(v) is the left limit for every variable.
        self.frame.keep_all_pre();
        let mut reinit = false;
        let mut last_changed: Vec<u32> = Vec::new();
        for iter in 0..100 {
            self.stats.event_iterations += 1;
            self.call(Entry::Ode)?;
            self.call(Entry::Conditions)?;
            let nb = self.p.branches.len();
            let cond: Vec<bool> = (0..nb).map(|b| self.frame.condition(b)).collect();
            // The first branch of each when-clause whose condition became true.
            let mut any = false;
            let mut fired_clause = vec![false; self.c.whens.len()];
            for (b, br) in self.p.branches.iter().enumerate().take(nb) {
                // At the initial event, `initial()` and conditions already true
                // fire once, in the first iteration; later iterations use the
                // rising-edge rule like any event.
                let rising = if initial && iter == 0 {
                    cond[b] && self.branch_initial(b)
                } else {
                    cond[b] && !self.cond_pre[b]
                };
                let fires = rising && !fired_clause[br.clause];
                self.frame.set_active(b, fires);
                if fires {
                    fired_clause[br.clause] = true;
                    any = true;
                    if !br.reinits.is_empty() {
                        reinit = true;
                    }
                }
            }
            if any {
                self.call(Entry::Actions)?;
                // An assignment or reinit that made a variable not a number
                // (`reinit(v, 0/0)`) would otherwise go on silently, or
                // keep the iteration from settling (NaN != NaN).
                if let Some(v) =
                    (0..n_vars).find(|&v| self.frame.var(v).is_nan() && !self.frame.pre(v).is_nan())
                {
                    let clause = self
                        .p
                        .branches
                        .iter()
                        .enumerate()
                        .find(|&(b, _)| self.frame.active(b))
                        .map(|(_, br)| self.c.whens[br.clause].span);
                    let message = format!(
                        "at the event at t = {}, `{}` became NaN (not a number)",
                        self.frame.time(),
                        self.c.vars[v as usize].name
                    );
                    let d = match clause {
                        Some(span) => Diagnostic::error(DiagnosticKind::Solver, span, message)
                            .with_label("the when-clause that fired"),
                        None => Diagnostic::error_nospan(DiagnosticKind::Solver, message),
                    };
                    return Err(d
                        .with_hint("check the assignments and reinits of the when-clause (a 0/0, a sqrt of a negative number)")
                        .with_note(STOPPED));
                }
                if self.frame.terminate() != 0 {
                    self.cond_pre = cond;
                    return Ok(reinit);
                }
            }
            self.cond_pre = cond;
            // Discrete variables changed since the last iteration?
            let changed: Vec<u32> = self
                .discrete
                .iter()
                .copied()
                .filter(|&v| self.frame.var(v) != self.frame.pre(v))
                .collect();
            for &v in &self.discrete {
                self.frame.keep_pre(v);
            }
            if !any && changed.is_empty() {
                self.call(Entry::Ode)?;
                self.frame.set_event_mode(false);
                return Ok(reinit);
            }
            last_changed = changed;
        }
        let names: Vec<String> = last_changed
            .iter()
            .take(5)
            .map(|&v| format!("`{}`", self.c.vars[v as usize].name))
            .collect();
        let t = self.frame.time();
        let span = last_changed
            .first()
            .and_then(|&v| self.defining_span(v))
            .or_else(|| self.c.whens.first().map(|w| w.span))
            .unwrap_or_default();
        let what = if names.len() == 1 { "keeps" } else { "keep" };
        Err(Diagnostic::error(DiagnosticKind::Solver, span, format!("event iteration does not settle at t = {t}: {} {what} changing", names.join(", ")))
            .with_hint("a when-clause or relation flips back and forth at the same instant; check for circular discrete assignments"))
    }

    /// Whether `terminate(msg)` ended the run: a successful end, then
    /// reported to the user with its message, place and time.
    fn terminated(&mut self) -> bool {
        let b = self.frame.terminate();
        let t = self.frame.time();
        let Some(br) = b.checked_sub(1).and_then(|b| self.p.branches.get(b)) else {
            return false;
        };
        let (_, statements) = &self.c.whens[br.clause].branches[br.index];
        for st in statements {
            if let crate::flat::WhenStatement::Terminate { message, span } = st {
                self.results.warnings.push(
                    Diagnostic::warning(
                        DiagnosticKind::Terminated,
                        *span,
                        format!("terminate at t = {t}: {message}"),
                    )
                    .with_label("the run ended here")
                    .with_note("the results up to this time were written"),
                );
            }
        }
        true
    }

    /// The time event at `t`: the samples due fire (their `sample()` is true
    /// for this event iteration only) and are rescheduled.
    fn sample_event(&mut self, t: f64) -> Result<(), Diagnostic> {
        for k in 0..self.next_sample.len() {
            let hit = self.next_sample[k] <= t;
            self.frame.set_sample_due(k, hit);
        }
        self.event_iteration(false)?;
        for k in 0..self.next_sample.len() {
            if self.frame.sample_due(k) {
                let (_, interval) = self.frame.sample_timing(k);
                // (A period too short to advance start + j period was
                // refused before the run: `simulate_inner`.)
                self.next_sample[k] = if interval > 0.0 {
                    self.next_sample[k] + interval
                } else {
                    f64::INFINITY
                };
            }
            self.frame.set_sample_due(k, false);
        }
        // Conditions like sample() are false again right after the event.
        self.settle_conditions()
    }

    /// Takes the current when-conditions as the left limits for the next
    /// event's rising-edge test (after initialization or a time event).
    fn settle_conditions(&mut self) -> Result<(), Diagnostic> {
        self.frame.set_event_mode(true);
        self.call(Entry::Ode)?;
        self.call(Entry::Conditions)?;
        self.keep_conditions();
        self.frame.set_event_mode(false);
        Ok(())
    }

    /// Whether a when-condition is true now, initialization over, that was
    /// false in the initial event iteration (its `cond_pre`).
    fn conditions_rise_after_initialization(&mut self) -> Result<bool, Diagnostic> {
        if self.p.branches.is_empty() {
            return Ok(false);
        }
        self.frame.set_event_mode(true);
        self.call(Entry::Ode)?;
        self.call(Entry::Conditions)?;
        self.frame.set_event_mode(false);
        Ok((0..self.p.branches.len()).any(|b| self.frame.condition(b) && !self.cond_pre[b]))
    }

    /// Evaluates the when-conditions at the point the buffer holds: whether
    /// one is true that was false in `cond_pre` (a rising edge, an event).
    /// The contact solvers check this at step ends and contact events.
    fn conditions_rise(&mut self) -> Result<bool, Diagnostic> {
        self.call(Entry::Conditions)?;
        Ok((0..self.p.branches.len()).any(|b| self.frame.condition(b) && !self.cond_pre[b]))
    }

    /// Takes the conditions last evaluated (held in the buffer) as the left
    /// limits of the next rising-edge test.
    fn keep_conditions(&mut self) {
        self.cond_pre = (0..self.p.branches.len())
            .map(|b| self.frame.condition(b))
            .collect();
    }

    /// Whether a sample instant is due at `t`.
    fn sample_due(&self, t: f64) -> bool {
        self.next_sample.iter().any(|&s| s <= t)
    }

    /// The next sample instant, or `bound` if none comes before it.
    fn next_time_event(&self, bound: f64) -> f64 {
        self.next_sample.iter().copied().fold(bound, f64::min)
    }

    /// Whether when-branch `b` is active during initialization: its
    /// condition is `initial()` itself (`when initial()`, or an element of
    /// `when {..., initial(), ...}`, one branch each), not an expression
    /// of it (MLS 8.6: `when initial() and c` or `when f(initial())` is not).
    fn branch_initial(&self, b: usize) -> bool {
        let br = &self.p.branches[b];
        let (cond, _) = &self.c.whens[br.clause].branches[br.index];
        matches!(self.c.arena.node(*cond), crate::flat::Node::Initial)
    }
}

/// Names the block, equations and variables behind a failure code.
pub fn status_diagnostic(c: &Causal, p: &Program, code: i32, e: Entry, t: f64) -> Diagnostic {
    let (kind, idx) = status::decode(code);
    let block_info = |bi: u32| -> (Option<crate::diag::Span>, String) {
        match c.blocks.get(bi as usize) {
            Some(b) => {
                let eqs: Vec<usize> = match b {
                    Block::Explicit { eq, .. } | Block::Implicit { eq, .. } => vec![*eq],
                    Block::Torn {
                        inner, residuals, ..
                    } => inner
                        .iter()
                        .map(|x| x.2)
                        .chain(residuals.iter().map(|x| x.1))
                        .collect(),
                };
                let vars: Vec<String> = b
                    .vars()
                    .iter()
                    .take(6)
                    .map(|&v| format!("`{}`", c.vars[v as usize].name))
                    .collect();
                (eqs.first().map(|&e| c.equations[e].span), vars.join(", "))
            }
            None => (None, String::new()),
        }
    };
    let d = match kind {
        status::NEWTON | status::NAN | status::SINGULAR | status::MIXED
            if matches!(e, Entry::Ode | Entry::Tangent) =>
        {
            let (span, vars) = block_info(idx);
            let what = match kind {
                status::NEWTON => "Newton's method did not converge",
                status::NAN => "Newton's method produced NaN",
                status::MIXED => {
                    "no consistent mode was found (the loop's relations kept changing)"
                }
                _ => "the linear system is singular",
            };
            let msg = format!("at t = {t}: {what} while solving for {vars}");
            match span {
                Some(s) => Diagnostic::error(DiagnosticKind::Solver, s, msg).with_label("in the block of this equation"),
                None => Diagnostic::error_nospan(DiagnosticKind::Solver, msg),
            }
            .with_hint("check the start values of these variables (they are the first guess) and that the equations have a solution here")
        }
        status::ASSERT if e == Entry::Actions => {
            // The error-level asserts of the branch that ran; the code names
            // the branch, not which of its asserts failed.
            let asserts: Vec<&crate::flat::Assert> = p
                .branches
                .get(idx as usize)
                .map(|b| {
                    c.whens[b.clause].branches[b.index]
                        .1
                        .iter()
                        .filter_map(|st| match st {
                            crate::flat::WhenStatement::Assert(a)
                                if a.level == crate::flat::AssertLevel::Error =>
                            {
                                Some(a)
                            }
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            match asserts.as_slice() {
                [a] => Diagnostic::error(
                    DiagnosticKind::Assertion,
                    a.span,
                    format!("assertion failed at t = {t}: {}", a.message),
                )
                .with_label("this assert, in a when-clause"),
                [a, ..] => Diagnostic::error(
                    DiagnosticKind::Assertion,
                    a.span,
                    format!("an assertion of this when-clause failed at t = {t}"),
                )
                .with_note(format!(
                    "one of: {}",
                    asserts
                        .iter()
                        .map(|a| format!("\"{}\"", a.message))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                [] => Diagnostic::error_nospan(
                    DiagnosticKind::Assertion,
                    format!("assertion failed at t = {t} in a when-clause"),
                ),
            }
        }
        status::FN_ASSERT | status::LOOP => {
            let check = p.function_checks.get(idx as usize);
            let function = check.map(|k| k.function.as_str()).unwrap_or("?");
            let msg = if kind == status::LOOP {
                format!(
                    "a while loop in function `{function}` did not end after {:e} iterations (at t = {t})",
                    lower::MAX_WHILE_ITERATIONS
                )
            } else if let Some(k) = check.filter(|k| k.kind != DiagnosticKind::Assertion) {
                // A guard rmoc added (a zero for step), not the function's assert.
                format!("in function `{function}` at t = {t}: {}", k.message)
            } else {
                let message = check.map(|k| k.message.as_str()).unwrap_or("");
                format!("assertion in function `{function}` failed at t = {t}: {message}")
            };
            // The function's own assert, or a guard rmoc added (a runaway
            // while loop, a zero for step).
            let what = check.map_or(DiagnosticKind::Assertion, |k| k.kind);
            let d = match check {
                Some(k) => Diagnostic::error(what, k.span, msg).with_label(k.label),
                None => Diagnostic::error_nospan(what, msg),
            };
            if kind == status::LOOP {
                d.with_hint("each pass of the loop body must move the condition toward false; a convergence test needs a positive tolerance, as in `abs(r*r - x) > 1e-12`")
            } else {
                d
            }
        }
        status::INDEX => Diagnostic::error_nospan(
            DiagnosticKind::OutOfRange,
            format!("array index out of bounds in a function at t = {t}"),
        ),
        _ => Diagnostic::error_nospan(
            DiagnosticKind::Solver,
            format!("model evaluation failed at t = {t} (code {code})"),
        ),
    };
    d.with_note(STOPPED)
}

/// The note on every error that ends a run.
const STOPPED: &str = "the simulation stopped; no result file was written";

/// Evaluates parameters and start values and solves the initial system only
/// (`rmoc check` uses it to catch inconsistent initial conditions); its
/// warnings (initial conditions not fully specified).
pub fn initialize_only(
    c: &Causal,
    p: &Program,
    backend: &dyn Backend,
    start: f64,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let opts = Options {
        start,
        stop: start,
        tolerance: 1e-6,
        atol: None,
        interval: 1.0,
        overrides: Vec::new(),
        max_events: 0,
        solver: Solver::Bdf,
        linear_solver: jacobian::LinearSolver::Auto,
        monitor: None,
        rows: None,
        keep_frame: false,
        outputs: Vec::new(),
    };
    let mut run = Run::new(c, p, backend, &opts);
    run.frame.set_time(start);
    // `check` runs no simulation, so its errors do not speak of one.
    let without_run_note = |mut d: Diagnostic| {
        d.notes.retain(|n| n != STOPPED);
        d
    };
    run.call(Entry::Parameters).map_err(without_run_note)?;
    init::check_parameter_ranges(&run, &[]).map_err(without_run_note)?;
    run.call(Entry::Starts).map_err(without_run_note)?;
    init::initialize(&mut run, &opts).map_err(without_run_note)?;
    Ok(std::mem::take(&mut run.results.warnings))
}

/// Runs a simulation.
pub fn simulate(
    c: &Causal,
    p: &Program,
    backend: &dyn Backend,
    opts: &Options,
) -> Result<Results, Vec<Diagnostic>> {
    // A failed run still shows the model's warnings (an unconnected
    // connector may be why it failed).
    simulate_inner(c, p, backend, opts).map_err(|d| {
        let mut all = c.warnings.clone();
        all.push(d);
        all
    })
}

fn simulate_inner(
    c: &Causal,
    p: &Program,
    backend: &dyn Backend,
    opts: &Options,
) -> Result<Results, Diagnostic> {
    if !p.has_tangent {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Internal,
            "internal error: this program was lowered for `check`, without the tangent code a simulation needs",
        ));
    }
    let l = p.layout.clone();
    let mut columns = output_columns(c, &l);
    if !opts.outputs.is_empty() {
        let names: Vec<String> = columns.iter().map(|x| x.0.clone()).collect();
        let kept = chosen_columns(&names, &opts.outputs).map_err(|d| d.with_note(STOPPED))?;
        columns = kept.iter().map(|&(k, _)| columns[k].clone()).collect();
    }
    let mut run = Run::new(c, p, backend, opts);
    run.results = Results {
        names: columns.iter().map(|x| x.0.clone()).collect(),
        units: columns.iter().map(|x| c.vars[x.2].unit.clone()).collect(),
        types: columns.iter().map(|x| c.vars[x.2].ty).collect(),
        descriptions: columns
            .iter()
            .map(|x| c.vars[x.2].description.clone())
            .collect(),
        // Flattening's and analysis's warnings come first.
        warnings: c.warnings.clone(),
        ..Results::default()
    };
    run.columns = columns;
    if let Some(sink) = &run.sink {
        let begun = match sink.0.lock() {
            Ok(mut s) => s.begin(&run.results.names),
            Err(_) => Err(std::io::Error::other("the row sink is poisoned")),
        };
        if let Err(e) = begun {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!("cannot write the result rows: {e}"),
            )
            .with_note(STOPPED));
        }
    }
    prepare(&mut run, opts)?;
    let shown: Vec<usize> = (0..c.vars.len())
        .filter(|&v| {
            matches!(c.roles[v], Role::Parameter)
                && !c.vars[v].name.contains('$')
                && !c.contacts.iter().any(|k| k.force == v as u32)
                && !c.frictions.iter().any(|k| k.force == v as u32)
        })
        .collect();
    run.results.parameters = shown
        .iter()
        .map(|&v| (c.vars[v].name.clone(), run.frame.var(v as u32)))
        .collect();
    run.results.parameter_types = shown.iter().map(|&v| c.vars[v].ty).collect();
    run.results.parameter_texts = shown
        .iter()
        .map(|&v| (c.vars[v].description.clone(), c.vars[v].unit.clone()))
        .collect();
    start(&mut run, opts)?;
    run.record(opts.start);
    let outcome = integrator::for_solver(&mut run, opts)
        .and_then(|mut integrator| hybrid::integrate(&mut run, opts, integrator.as_mut(), false));
    if let Some(e) = run.sink_error.take() {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Io,
            format!("cannot write the result rows: {e}"),
        )
        .with_note(STOPPED));
    }
    if let Some(t) = run.interrupted_at {
        let mut results = std::mem::take(&mut run.results);
        results.stats = run.stats;
        results.interrupted = Some(t);
        return Ok(results);
    }
    outcome?;
    let frame = opts.keep_frame.then(|| run.frame.clone());
    let _ = terminal(&mut run);
    let mut results = std::mem::take(&mut run.results);
    results.stats = run.stats;
    results.frame = frame;
    Ok(results)
}

/// The parameters (with the run's overrides) and start values of a run at
/// its start time, before its initialization.
fn prepare(run: &mut Run, opts: &Options) -> Result<(), Diagnostic> {
    for &(v, val) in &opts.overrides {
        run.frame.set_override(v, val);
    }
    run.frame.set_time(opts.start);
    run.call(Entry::Parameters)?;
    init::check_parameter_ranges(run, &opts.overrides)?;
    run.call(Entry::Starts)?;
    Ok(())
}

/// The initialization of a prepared run ([`prepare`]): the initial system,
/// the sample instants, the initial point's asserts.
fn start(run: &mut Run, opts: &Options) -> Result<(), Diagnostic> {
    let l = run.p.layout.clone();
    init::initialize(run, opts)?;
    // Sample times.
    run.next_sample = (0..l.n_samples)
        .map(|k| {
            let (start, interval) = run.frame.sample_timing(k as usize);
            let mut t = start;
            if interval > 0.0 && t < opts.start {
                t += ((opts.start - t) / interval).ceil() * interval;
            }
            t
        })
        .collect();
    // A period below the time resolution of the run never advances the
    // sample instants (or takes 1e300 events to cross it).
    let resolution = 4.0 * f64::EPSILON * opts.start.abs().max(opts.stop.abs());
    for k in 0..l.n_samples {
        let (_, interval) = run.frame.sample_timing(k as usize);
        if interval > 0.0 && interval < resolution {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "a sample period of {interval:e} s is below the time resolution of the run \
                 ({resolution:e} s over [{}, {}])",
                    opts.start, opts.stop
                ),
            )
            .with_hint("use a longer period in `sample(start, period)`")
            .with_note(STOPPED));
        }
    }
    run.check_asserts()
}

/// The end of a run: `terminal()` is true for one event iteration.
fn terminal(run: &mut Run) -> Result<(), Diagnostic> {
    run.frame.set_terminal(true);
    run.event_iteration(false).map(|_| ())
}
