//! What the benchmarks share.

use std::time::{Duration, Instant};

/// Median wall time of `f`: one warm-up call, then runs until 0.5 s have
/// passed (at least 3, at most 51); a call longer than 2 s runs once.
pub fn median(mut f: impl FnMut()) -> Duration {
    let t0 = Instant::now();
    f();
    let first = t0.elapsed();
    if first > Duration::from_secs(2) {
        return first;
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < Duration::from_millis(500) && times.len() < 51) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}
