//! The hybrid loop: one loop drives every [`Integrator`] through a run.
//! It owns the output grid, the detection and location of state events
//! (zero crossings of frozen relations by the Illinois variant of regula
//! falsi, Dowell & Jarratt 1971; rising when-conditions of live relations by
//! bisection), samples (time events bound the steps), the event iteration to
//! a fixed point of the discrete variables with `reinit`, the integrator's
//! own events (contacts), asserts and non-finite values located by
//! bisection on the dense output, `terminate`, the chattering and
//! event-count guards, and progress (`Run::poll`).
//!
//! Invariants: a step never passes the next time event or the stop time;
//! an event writes its left and right limits as two rows at its time; after
//! an event iteration the integrator restarts from the point it left
//! (`Integrator::restart`); every evaluation of the model outside a step
//! goes through `Integrator::evaluate`, so contact forces are in every row.

use super::bdf::Dense;
use super::integrator::{Behaviour, DenseOutput, Integrator, Outputs, Relations, StopReason};
use super::model::Entry;
use super::{Options, Run, STOPPED};
use crate::diag::{Diagnostic, DiagnosticKind};
use std::cell::RefCell;

/// Output rows a run may write: 10 million rows of a few columns are
/// gigabytes of CSV. The command line refuses an interval that would give
/// more; the output grid never holds more.
pub const MAX_OUTPUT_ROWS: usize = 10_000_000;

pub(super) fn output_grid(opts: &Options) -> Vec<f64> {
    let span = opts.stop - opts.start;
    let n = if opts.interval > 0.0 {
        (span / opts.interval).round().max(1.0) as usize
    } else {
        500
    };
    let n = n.min(MAX_OUTPUT_ROWS);
    (1..=n)
        .map(|k| {
            if k == n {
                opts.stop
            } else {
                opts.start + span * k as f64 / n as f64
            }
        })
        .collect()
}

/// What happens at the end of a step (or inside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// A relation crossed or a when-condition rose.
    State,
    /// The integrator's own event ([`StopReason::RootFound`]).
    Root,
    /// A sample instant.
    Time,
}

/// The last step as the loop sees it: the integrator that evaluates the
/// model, and the dense output (the integrator's, or a constant one where
/// no step was taken).
struct StepView<'a> {
    integrator: &'a dyn Integrator,
    dense: &'a dyn DenseOutput,
    /// The states at the time evaluated last (one buffer for the run).
    x: &'a RefCell<Vec<f64>>,
}

impl StepView<'_> {
    /// Evaluates the model at time `t` of the step.
    fn evaluate(&self, run: &mut Run, t: f64) -> Result<(), Diagnostic> {
        let mut x = self.x.borrow_mut();
        self.dense.eval(t, &mut x);
        self.integrator.evaluate(run, t, &x)
    }
}

/// Runs `integrator` from the initialized point to the stop time (or
/// `terminate`). With `resume`, the integrator goes on from where its last
/// call ended (at `opts.start`, with its history: an FMU's next
/// communication step); otherwise it starts afresh there.
pub(super) fn integrate(
    run: &mut Run,
    opts: &Options,
    integrator: &mut dyn Integrator,
    resume: bool,
) -> Result<(), Diagnostic> {
    let behaviour = integrator.behaviour();
    let live = behaviour.relations == Relations::Live;
    let snap = match behaviour.outputs {
        Outputs::Interpolated => 0.0,
        Outputs::AtStepEnds { snap } => snap,
    };
    let grid = output_grid(opts);
    let mut next_out = 0usize;
    let n = run.c.states.len();
    let mut t = opts.start;
    let mut x = run.states();
    if !resume {
        integrator.start(run, t, &mut x)?;
    }
    // The start row again, with what the integrator adds (contact forces).
    integrator.evaluate(run, t, &x)?;
    run.check_asserts()?;
    run.replace_last_row(t);
    if live {
        run.call(Entry::Conditions)?;
        run.keep_conditions();
    }
    let mut recent_events: Vec<f64> = Vec::new();
    let scratch = RefCell::new(vec![0.0; n]);
    // (A time-stepper's step within `snap` of the stop time would do
    // nothing useful.)
    while opts.stop - t > snap {
        run.poll(t)?;
        // What is left is below the resolution of time there (a host's
        // communication points, sums of steps, miss a sample instant by an
        // ulp): no step can cover it, and the stop time counts as reached.
        if opts.stop - t <= 4.0 * f64::EPSILON * opts.stop.abs() {
            t = opts.stop;
            integrator.evaluate(run, t, &x)?;
            if next_out < grid.len() {
                run.record(t);
            }
            if run.sample_due(t) {
                handle_event(run, integrator, Event::Time, t, &mut x, live)?;
            }
            break;
        }
        let t_time_event = run.next_time_event(opts.stop).max(t);
        // Advance: one step of the integrator; for a model without states a
        // jump to the next output time; for a sample due now (`sample(t0,
        // dt)` at the start time) no step at all.
        let mut root = false;
        let still = if n == 0 {
            let target = grid
                .get(next_out)
                .copied()
                .unwrap_or(opts.stop)
                .min(t_time_event)
                .max(t);
            let target = if target <= t { t_time_event } else { target };
            Some(Dense::constant(t, target, Vec::new()))
        } else if t_time_event <= t {
            Some(Dense::constant(t, t, x.clone()))
        } else {
            root = integrator.step(run, t, &x, t_time_event)? == StopReason::RootFound;
            None
        };
        let view = StepView {
            integrator: &*integrator,
            dense: match &still {
                Some(d) => d,
                None => integrator.dense(),
            },
            x: &scratch,
        };
        let t_new = view.dense.span().1;
        let time_due = t_new >= t_time_event && run.sample_due(t_new);
        let mut evaluated_end = false;
        // Whether anything evaluated the model since the step (the frame
        // then no longer holds the integrator's last iterate).
        let mut moved = false;
        // State events.
        let mut t_state = None;
        match behaviour.relations {
            Relations::Frozen => {
                view.evaluate(run, t_new)?;
                evaluated_end = true;
                for k in run.crossed()? {
                    let te = locate(run, &view, k)?;
                    t_state = Some(t_state.map_or(te, |a: f64| a.min(te)));
                }
            }
            // A time-stepper's sample instant fires the rising conditions
            // in its own event iteration.
            Relations::Live if run.c.whens.is_empty() => {}
            Relations::Live if time_due && snap > 0.0 => {}
            Relations::Live => {
                t_state = rising(run, &view, &behaviour)?;
                evaluated_end = t_state.is_none();
                moved = true;
            }
        }
        let event = if t_state.is_some() {
            Some(Event::State)
        } else if root {
            Some(Event::Root)
        } else if time_due {
            Some(Event::Time)
        } else {
            None
        };
        let t_end = t_state.unwrap_or(t_new);
        // Outputs up to the end of this step or the event (whose time has
        // its two rows).
        let mut last_row = None;
        while next_out < grid.len() && grid[next_out] <= t_end + snap {
            let to = match behaviour.outputs {
                Outputs::Interpolated => grid[next_out],
                Outputs::AtStepEnds { .. } => t_end,
            };
            next_out += 1;
            if (event.is_some() && to == t_end) || last_row == Some(to) {
                continue;
            }
            if !(evaluated_end && to == t_new) {
                view.evaluate(run, to)?;
                evaluated_end = to == t_new;
                moved = true;
            }
            run.record(to);
            last_row = Some(to);
        }
        t = t_end;
        view.dense.eval(t, &mut x);
        let Some(event) = event else {
            match behaviour.outputs {
                Outputs::Interpolated => {
                    // (An output row at the step's end evaluated it
                    // exactly, and leaves the frame there.)
                    if !evaluated_end && (moved || !behaviour.frame_at_last_iterate) {
                        view.evaluate(run, t)?;
                    }
                    check_finite_over(run, &view, t)?;
                    check_asserts_over(run, &view, t)?;
                }
                Outputs::AtStepEnds { .. } if run.asserts_due() => {
                    if !evaluated_end {
                        view.evaluate(run, t)?;
                    }
                    run.check_asserts()?;
                }
                Outputs::AtStepEnds { .. } => {}
            }
            continue;
        };
        handle_event(run, integrator, event, t, &mut x, live)?;
        if event != Event::Time {
            // Chattering: many events in a vanishing time span.
            recent_events.push(t);
            if recent_events.len() > behaviour.chatter_events {
                recent_events.remove(0);
                let span = t - recent_events[0];
                if span <= 1e-9 * (1.0 + t.abs()) {
                    return Err(Diagnostic::error_nospan(
                        DiagnosticKind::Solver,
                        format!(
                            "chattering: {} events within {span:e} s at t = {t}",
                            behaviour.chatter_events
                        ),
                    )
                    .with_hint(behaviour.chatter_hint)
                    .with_note(STOPPED));
                }
            }
            if run.stats.state_events as usize > opts.max_events {
                return Err(Diagnostic::error_nospan(
                    DiagnosticKind::Solver,
                    format!("more than {} events; stopping at t = {t}", opts.max_events),
                )
                .with_note(STOPPED));
            }
        }
        if run.terminated() {
            break;
        }
    }
    Ok(())
}

/// An event a host located (an FMU's model exchange) at the frame's point:
/// the samples due, or the event iteration after a crossing. Returns the
/// next sample instant (infinite when none).
pub(super) fn host_event(run: &mut Run) -> Result<f64, Diagnostic> {
    let t = run.frame.time();
    if run.sample_due(t) {
        run.sample_event(t)?;
    } else {
        run.event_iteration(false)?;
    }
    Ok(run.next_time_event(f64::INFINITY))
}

/// An event at (t, x): the left limit, the integrator's own event, the
/// event iteration (or the samples' one), the integrator's restart and the
/// right limit. `x` is the point after it.
fn handle_event(
    run: &mut Run,
    integrator: &mut dyn Integrator,
    event: Event,
    t: f64,
    x: &mut Vec<f64>,
    live: bool,
) -> Result<(), Diagnostic> {
    run.stats.restarts += 1;
    integrator.evaluate(run, t, x)?;
    run.record(t);
    let iterate = match event {
        Event::Time => {
            run.stats.time_events += 1;
            true
        }
        Event::State => {
            run.stats.state_events += 1;
            true
        }
        Event::Root => {
            run.stats.state_events += 1;
            let whens = live && !run.c.whens.is_empty();
            // The when-conditions' reference for this event is their left
            // limit: a condition that fell during the step (a rebound's
            // `v > 0` at the apex) was seen at no step end when one step
            // spans the whole flight.
            if whens {
                run.call(Entry::Conditions)?;
                run.keep_conditions();
            }
            integrator.handle_root(run, t, x)?;
            integrator.evaluate(run, t, x)?;
            run.check_asserts()?;
            run.record(t);
            // The integrator's event is an event for the when-clauses too
            // (a rebound makes `v > 0` true at the impact); without a rise,
            // the conditions here are the new reference. Frozen relations
            // are re-evaluated by an event iteration.
            let rose = whens && run.conditions_rise()?;
            if whens && !rose {
                run.keep_conditions();
            }
            !live || rose
        }
    };
    if iterate {
        match event {
            Event::Time => run.sample_event(t)?,
            _ => {
                run.event_iteration(false)?;
            }
        }
        *x = run.states();
        integrator.restart(run, t, x)?;
        integrator.evaluate(run, t, x)?;
        run.check_asserts()?;
        run.record(t);
        if live {
            run.call(Entry::Conditions)?;
            run.keep_conditions();
        }
    }
    Ok(())
}

/// The first time in the step at which a when-condition rises (live
/// relations): by bisection on the dense output, to rounding (conditions
/// are Boolean, so there is no function value to interpolate); at the end
/// of a time-stepper's step, which has no interpolant. Without a rise, the
/// conditions at the step's end become the reference.
fn rising(
    run: &mut Run,
    view: &StepView,
    behaviour: &Behaviour,
) -> Result<Option<f64>, Diagnostic> {
    let (t0, t1) = view.dense.span();
    view.evaluate(run, t1)?;
    if !run.conditions_rise()? {
        run.keep_conditions();
        return Ok(None);
    }
    if let Outputs::AtStepEnds { .. } = behaviour.outputs {
        return Ok(Some(t1));
    }
    let (mut a, mut b) = (t0, t1);
    let tol = 4.0 * f64::EPSILON * a.abs().max(b.abs()).max(1.0);
    while b - a > tol {
        let m = 0.5 * (a + b);
        if m <= a || m >= b {
            break;
        }
        view.evaluate(run, m)?;
        if run.conditions_rise()? {
            b = m;
        } else {
            a = m;
        }
    }
    Ok(Some(b))
}

/// Finds the first time in the step at which relation `k` differs from its
/// frozen value, by the Illinois method on its zero-crossing function.
fn locate(run: &mut Run, view: &StepView, k: usize) -> Result<f64, Diagnostic> {
    let op = run.p.relations[k].op;
    let frozen = run.frame.relation(k);
    let g_at = |run: &mut Run, t: f64| -> Result<f64, Diagnostic> {
        view.evaluate(run, t)?;
        run.call(Entry::ZeroCrossings)?;
        Ok(run.frame.zero_crossing(k))
    };
    let (mut a, mut b) = view.dense.span();
    let mut ga = g_at(run, a)?;
    let mut gb = g_at(run, b)?;
    let tol = 4.0 * f64::EPSILON * a.abs().max(b.abs()).max(1.0);
    let mut side = 0i32;
    for _ in 0..200 {
        if b - a <= tol {
            break;
        }
        // Illinois: regula falsi, halving the weight of a retained end.
        let mut tc = if ga != gb {
            (a * gb - b * ga) / (gb - ga)
        } else {
            0.5 * (a + b)
        };
        if !(tc > a && tc < b) {
            tc = 0.5 * (a + b);
        }
        let gc = g_at(run, tc)?;
        if op.apply(gc, 0.0) == frozen {
            a = tc;
            ga = gc;
            if side == -1 {
                gb *= 0.5;
            }
            side = -1;
        } else {
            b = tc;
            gb = gc;
            if side == 1 {
                ga *= 0.5;
            }
            side = 1;
        }
    }
    Ok(b)
}

/// A model value that becomes NaN or infinite (`sqrt` or `log` of a
/// negative number, a division by zero) ends the run with the first such
/// variable, the equation computing it and the time, found by bisection on
/// the step's dense output. The frame holds the step's end `t`.
fn check_finite_over(run: &mut Run, view: &StepView, t: f64) -> Result<(), Diagnostic> {
    let Some(v) = run.first_non_finite() else {
        return Ok(());
    };
    let b = first_time_in_step(run, view, t, |run| Ok(run.first_non_finite().is_some()))?;
    view.evaluate(run, b)?;
    let culprit = run.first_non_finite().unwrap_or(v);
    Err(run.non_finite_error(culprit, b))
}

/// Asserts checked at the end of a step (the frame holds it) and, where
/// one fails, the first failing time located by bisection on the step's
/// dense output, so the reported time does not depend on how long the step
/// was.
fn check_asserts_over(run: &mut Run, view: &StepView, t: f64) -> Result<(), Diagnostic> {
    if !run.asserts_due() {
        return Ok(());
    }
    let (error, warnings) = run.failed_asserts()?;
    let fails = |k: usize| {
        move |run: &mut Run| -> Result<bool, Diagnostic> {
            run.call(Entry::Asserts)?;
            Ok(!run.frame.assert_holds(k))
        }
    };
    for k in warnings {
        let tk = first_time_in_step(run, view, t, fails(k))?;
        run.warn(k, tk);
    }
    if let Some(k) = error {
        let tk = first_time_in_step(run, view, t, fails(k))?;
        return Err(run.assert_error(k, tk));
    }
    // Leave the frame at the step's end.
    view.evaluate(run, t)
}

/// Bisection on the step's dense output for the first time in (t_old, t]
/// at which `fails` holds (after evaluating the model there), given that it
/// does not at t_old and does at `t`.
fn first_time_in_step(
    run: &mut Run,
    view: &StepView,
    t: f64,
    mut fails: impl FnMut(&mut Run) -> Result<bool, Diagnostic>,
) -> Result<f64, Diagnostic> {
    let (mut a, mut b) = (view.dense.span().0, t);
    for _ in 0..64 {
        let m = 0.5 * (a + b);
        if m <= a || m >= b {
            break;
        }
        view.evaluate(run, m)?;
        if fails(run)? {
            b = m;
        } else {
            a = m;
        }
    }
    Ok(b)
}
