//! The hybrid loop of smooth models: one loop drives any [`Integrator`]
//! through a run, with the output grid, zero crossings located on the
//! step's dense output (the Illinois variant of regula falsi, Dowell &
//! Jarratt 1971), event iteration to a fixed point of the discrete
//! variables, samples (time events bound the steps), `reinit` (the
//! integrator restarts after every event), asserts and non-finite values
//! located by bisection on the dense output, `terminate`, the chattering
//! and event-count guards, and progress (`Run::poll`).
//!
//! Invariants: a step never passes the next time event or the stop time;
//! an event writes two rows at its time (left and right limits); after an
//! event the integrator's history is discarded (`Integrator::restart`).

use super::bdf::Dense;
use super::integrator::{DenseOutput, Integrator};
use super::{Options, Run};
use crate::diag::Diagnostic;

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

/// Runs `integrator` from the start to the stop time (or `terminate`).
pub(super) fn integrate(
    run: &mut Run,
    opts: &Options,
    integrator: &mut dyn Integrator,
) -> Result<(), Diagnostic> {
    let grid = output_grid(opts);
    let mut next_out = 0usize;
    let n = run.c.states.len();
    let mut t = opts.start;
    let mut recent_events: Vec<f64> = Vec::new();
    // The "dense output" of a model without states, or of a time event
    // handled before any step.
    let mut still = Dense::constant(opts.start, opts.start, Vec::new());
    let mut restart = false;
    while t < opts.stop {
        run.poll(t)?;
        let t_time_event = run.next_time_event(opts.stop).max(t);
        let x0 = run.states();
        // Advance: one step of the integrator, or for a model without
        // states a jump to the next output time.
        let stepped = n > 0 && t_time_event > t;
        if n == 0 {
            let target = grid
                .get(next_out)
                .copied()
                .unwrap_or(opts.stop)
                .min(t_time_event)
                .max(t);
            let target = if target <= t { t_time_event } else { target };
            still = Dense::constant(t, target, Vec::new());
        } else if t_time_event <= t {
            // A sample due now (`sample(t0, dt)` at the start time): handle
            // the time event before any step, which would have zero length.
            still = Dense::constant(t, t, x0.clone());
        } else {
            integrator.step(run, t, &x0, t_time_event)?;
        }
        let dense: &dyn DenseOutput = if stepped { integrator.dense() } else { &still };
        let t_new = dense.span().1;
        // State events.
        let mut x = vec![0.0; n];
        dense.eval(t_new, &mut x);
        run.evaluate_at(t_new, &x)?;
        let crossed = run.crossed()?;
        let mut t_event = None;
        for k in crossed {
            let te = run.locate(dense, k)?;
            t_event = Some(t_event.map_or(te, |a: f64| a.min(te)));
        }
        let t_end = t_event.unwrap_or(t_new);
        // Outputs up to the end of this step (or the event).
        while next_out < grid.len() && grid[next_out] <= t_end {
            let to = grid[next_out];
            if !(t_event.is_some() && to == t_end) {
                dense.eval(to, &mut x);
                run.evaluate_at(to, &x)?;
                run.record(to);
            }
            next_out += 1;
        }
        let time_event = t_event.is_none() && t_new >= t_time_event && run.sample_due(t_new);
        if let Some(te) = t_event {
            run.stats.state_events += 1;
            dense.eval(te, &mut x);
            run.evaluate_at(te, &x)?;
            run.record(te);
            run.event_iteration(false)?;
            run.record(te);
            t = te;
            restart = true;
            run.stats.restarts += 1;
            // Chattering: many events in a vanishing time span.
            recent_events.push(te);
            if recent_events.len() > 50 {
                recent_events.remove(0);
                let span = te - recent_events[0];
                if span <= 1e-9 * (1.0 + te.abs()) {
                    return Err(Diagnostic::error_nospan(format!(
                        "chattering: 50 events within {span:e} s at t = {te}"
                    ))
                    .with_hint("a relation switches back and forth without time passing; add hysteresis or use noEvent where no event is needed"));
                }
            }
            if run.stats.state_events as usize > opts.max_events {
                return Err(Diagnostic::error_nospan(format!(
                    "more than {} events; stopping at t = {te}",
                    opts.max_events
                )));
            }
        } else if time_event {
            run.stats.time_events += 1;
            // Output points inside the step moved the buffer off its end.
            dense.eval(t_new, &mut x);
            run.evaluate_at(t_new, &x)?;
            run.record(t_new);
            run.sample_event(t_new)?;
            run.record(t_new);
            t = t_new;
            restart = true;
            run.stats.restarts += 1;
        } else {
            t = t_new;
        }
        if t_event.is_none() && !time_event {
            if run.frame.time() != t {
                // Outputs inside the step moved the buffer off its end.
                dense.eval(t, &mut x);
                run.evaluate_at(t, &x)?;
            }
            run.check_finite_over(dense, t)?;
            run.check_asserts_over(dense, t)?;
        } else {
            run.check_asserts()?;
        }
        if restart {
            integrator.restart();
            restart = false;
        }
        if run.terminated() {
            break;
        }
    }
    Ok(())
}
