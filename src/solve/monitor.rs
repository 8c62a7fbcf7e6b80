//! Watching a run from outside: progress reports and interruption.
//!
//! A [`Monitor`] is handed to a run in its [`super::Options`]. The solvers
//! call [`super::Run::poll`] once per step; it reports the simulated time
//! and the work so far to the monitor (at most every [`POLL_INTERVAL`]) and
//! asks whether the run should stop. A stopped run is not an error: its
//! results up to the last step are returned with
//! [`super::Results::interrupted`] set, and the caller writes them under a
//! name that says they are incomplete.

use super::RunStats;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a monitor hears of a run's progress.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// What a run reports while it goes, and how it is stopped from outside.
pub trait Monitor: Send + Sync {
    /// The run is at simulated time `t` of [start, stop] with `stats` so far.
    fn progress(&self, _t: f64, _start: f64, _stop: f64, _stats: &RunStats) {}
    /// Whether the run should stop now.
    fn interrupted(&self) -> bool {
        false
    }
    /// The run has ended (successfully, by an error or interrupted).
    fn finish(&self) {}
}

/// A monitor shared with the solver: `Options` stays `Clone` and `Debug`.
#[derive(Clone)]
pub struct MonitorHandle(pub Arc<dyn Monitor>);

impl std::fmt::Debug for MonitorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MonitorHandle")
    }
}

/// A flag that stops a run: set it from a signal handler or another thread.
#[derive(Default)]
pub struct StopFlag(pub AtomicBool);

impl StopFlag {
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Monitor for StopFlag {
    fn interrupted(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The polling state a run keeps.
#[derive(Clone)]
pub(super) struct Poll {
    pub monitor: Option<MonitorHandle>,
    /// The run's interval, for progress reports.
    start: f64,
    stop: f64,
    last: Instant,
    /// Steps until the clock is read again (reading it every step of a
    /// small model would cost more than the step).
    countdown: u32,
}

impl Poll {
    pub fn new(monitor: Option<MonitorHandle>, start: f64, stop: f64) -> Poll {
        Poll {
            monitor,
            start,
            stop,
            last: Instant::now(),
            countdown: 0,
        }
    }

    /// Reports progress when it is time; whether the run must stop.
    pub fn due(&mut self, t: f64, stats: &RunStats) -> bool {
        let Some(m) = &self.monitor else {
            return false;
        };
        // Every step: an interruption stops the run at its next step.
        if m.0.interrupted() {
            return true;
        }
        if self.countdown > 0 {
            self.countdown -= 1;
            return false;
        }
        self.countdown = 16;
        if self.last.elapsed() >= POLL_INTERVAL {
            self.last = Instant::now();
            m.0.progress(t, self.start, self.stop, stats);
        }
        false
    }
}
