//! Long runs from the command line: Ctrl-C ends a run cleanly, keeping the
//! rows computed so far under a name that marks them incomplete, and no
//! progress output appears when the output is not a terminal.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A chain of 2 000 masses simulated for 1e4 s: many seconds of work.
fn long_model(dir_name: &str) -> std::path::PathBuf {
    let src = std::fs::read_to_string(common::project("tests/models/chain.rmo"))
        .expect("chain")
        .replace("parameter Integer n = 8;", "parameter Integer n = 2000;")
        .replace("StopTime = 4", "StopTime = 10000");
    common::model_file(dir_name, &src)
}

#[test]
fn ctrl_c_stops_the_run_and_keeps_the_rows_marked_incomplete() {
    let model = long_model("Chain");
    let dir = model.parent().expect("dir").to_path_buf();
    let out = dir.join("chain.csv");
    let child = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["simulate", model.to_str().expect("utf-8"), "-o"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rmoc starts");
    // Wait until the run has written its start (compiling takes a moment).
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let output = child.wait_with_output().expect("rmoc ends");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the run did not stop"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "stderr: {stderr}");
    assert!(
        stderr.contains("interrupted at t = ") && stderr.contains("chain.incomplete.csv"),
        "{stderr}"
    );
    // Nothing under the complete name; the incomplete file holds rows from
    // the start up to the time of the interruption.
    assert!(!out.exists(), "a complete-looking chain.csv was written");
    let text = std::fs::read_to_string(dir.join("chain.incomplete.csv")).expect("incomplete file");
    let mut lines = text.lines();
    assert!(lines.next().expect("header").starts_with("\"time\","));
    let times: Vec<f64> = lines
        .map(|l| l.split(',').next().expect("time").parse().expect("number"))
        .collect();
    assert_eq!(times.first(), Some(&0.0));
    let t_end = *times.last().expect("rows");
    assert!(t_end < 10000.0, "the rows reach the stop time: {t_end}");
    let said: f64 = stderr
        .split("interrupted at t = ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("time in the message");
    assert!(
        t_end <= said,
        "rows beyond the interruption: {t_end} > {said}"
    );
}

#[test]
fn no_progress_output_when_not_on_a_terminal() {
    // Over a second of simulation (about 3 s here) with both streams piped.
    let model = long_model("Chain");
    let dir = model.parent().expect("dir").to_path_buf();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args([
            "simulate",
            model.to_str().expect("utf-8"),
            "--stop-time",
            "1000",
            "-o",
        ])
        .arg(dir.join("chain.csv"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("rmoc runs");
    assert!(output.status.success(), "{output:?}");
    assert!(
        started.elapsed() > rmoc::output::progress::SHOW_AFTER,
        "the run was too short to show a bar"
    );
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
    // Only the closing line, no bar.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("wrote ") && stderr.lines().count() == 1,
        "stderr: {stderr}"
    );
}

/// Stops a run at its `after`-th step.
struct StopAfter {
    after: usize,
    polls: std::sync::atomic::AtomicUsize,
}

impl rmoc::solve::monitor::Monitor for StopAfter {
    fn interrupted(&self) -> bool {
        self.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= self.after
    }
}

/// Every solver stops where the monitor asks, returning the rows so far
/// (marked interrupted) with its statistics up to then.
#[test]
fn each_solver_returns_its_rows_and_counts_when_stopped() {
    use rmoc::solve::Solver;
    for (file, solver) in [
        ("tests/models/chain.rmo", Solver::Bdf),
        (
            "tests/models/contacts/ball.rmo",
            Solver::Moreau { step: 1e-4 },
        ),
        ("tests/models/contacts/ball.rmo", Solver::EventDriven),
    ] {
        let c = common::compile_file(&common::project(file), None);
        let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
        let mut opts = common::options(&c, &common::Run::default());
        opts.solver = solver;
        opts.monitor = Some(rmoc::solve::monitor::MonitorHandle(std::sync::Arc::new(
            StopAfter {
                after: 40,
                polls: Default::default(),
            },
        )));
        let r = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs");
        let t = r
            .interrupted
            .unwrap_or_else(|| panic!("{file} {solver:?}: not interrupted"));
        assert!(
            t > opts.start && t < opts.stop,
            "{file} {solver:?}: stopped at {t}"
        );
        let last = *r.times.last().expect("rows");
        assert!(
            last <= t,
            "{file} {solver:?}: a row at {last} after the stop at {t}"
        );
        let steps = r.stats.integrator.steps + r.stats.contacts.map_or(0, |s| s.steps);
        assert!(steps >= 30, "{file} {solver:?}: {} steps counted", steps);
    }
}
