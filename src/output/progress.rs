//! The progress bar of `rmoc simulate` on a terminal, and Ctrl-C.
//!
//! A [`TerminalProgress`] is the run's [`Monitor`]: it draws an indicatif
//! bar on standard error (simulated time, steps, events) once the run has
//! taken [`SHOW_AFTER`], only when both standard output and standard error
//! are terminals and the user did not ask for `--quiet`; and it stops the
//! run when Ctrl-C sets its flag (see [`TerminalProgress::on_ctrl_c`]).

use crate::solve::RunStats;
use crate::solve::monitor::Monitor;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Runs shorter than this show no bar.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Positions of the bar: the run's interval in this many parts.
const TICKS: u64 = 1000;

pub struct TerminalProgress {
    stop: AtomicBool,
    draw: bool,
    started: Instant,
    bar: Mutex<Option<ProgressBar>>,
}

impl TerminalProgress {
    /// A monitor that draws only when `!quiet` and both standard streams
    /// are terminals.
    pub fn new(quiet: bool) -> TerminalProgress {
        TerminalProgress {
            stop: AtomicBool::new(false),
            draw: !quiet && std::io::stderr().is_terminal() && std::io::stdout().is_terminal(),
            started: Instant::now(),
            bar: Mutex::new(None),
        }
    }

    /// Ctrl-C: the run stops at its next step. Returns whether it had been
    /// asked before (a second Ctrl-C ends the process at once).
    pub fn on_ctrl_c(&self) -> bool {
        self.stop.swap(true, Ordering::SeqCst)
    }
}

impl Monitor for TerminalProgress {
    fn progress(&self, t: f64, start: f64, stop: f64, stats: &RunStats) {
        if !self.draw || self.started.elapsed() < SHOW_AFTER {
            return;
        }
        let Ok(mut bar) = self.bar.lock() else {
            return;
        };
        let bar = bar.get_or_insert_with(|| {
            let b = ProgressBar::with_draw_target(Some(TICKS), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {percent:>3}% {msg} [{elapsed}, ~{eta} left]",
            ) {
                b.set_style(style);
            }
            b
        });
        let span = stop - start;
        let fraction = if span > 0.0 { (t - start) / span } else { 1.0 };
        bar.set_position((fraction.clamp(0.0, 1.0) * TICKS as f64) as u64);
        let steps = stats.integrator.steps + stats.contacts.map_or(0, |c| c.steps);
        bar.set_message(format!(
            "t = {t:.6} s, {steps} steps, {} events",
            stats.state_events + stats.time_events
        ));
    }

    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn finish(&self) {
        if let Ok(mut bar) = self.bar.lock()
            && let Some(b) = bar.take()
        {
            b.finish_and_clear();
        }
    }
}

/// The progress bar of `rmoc sweep`: points done of all, and how many
/// failed, on standard error when it is a terminal (and not `--quiet`).
pub struct BatchProgress {
    bar: Option<ProgressBar>,
    failed: std::sync::atomic::AtomicUsize,
}

impl BatchProgress {
    pub fn new(points: usize, quiet: bool) -> BatchProgress {
        let draw = !quiet && std::io::stderr().is_terminal();
        let bar = draw.then(|| {
            let b =
                ProgressBar::with_draw_target(Some(points as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} points {msg} [{elapsed}, ~{eta} left]",
            ) {
                b.set_style(style);
            }
            b
        });
        BatchProgress {
            bar,
            failed: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// One point has ended (`failed`: its run failed).
    pub fn point_done(&self, failed: bool) {
        if failed {
            let n = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(b) = &self.bar {
                b.set_message(format!("({n} failed)"));
            }
        }
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
