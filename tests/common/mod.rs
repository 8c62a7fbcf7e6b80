//! Shared helpers of the integration tests: run one stage of the pipeline on
//! a model text and render its outcome as text, for snapshot and value checks.
#![allow(dead_code)]

use rmoc::diag;
use rmoc::solve::{self, Results};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The temporary folders this test process made, removed when it exits
/// (unless `RMOC_KEEP_TEST_FILES` is set, to look at them): a run of the
/// tests writes hundreds of megabytes of results.
static MADE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_made() {
    if std::env::var_os("RMOC_KEEP_TEST_FILES").is_some() {
        return;
    }
    if let Ok(dirs) = MADE.lock() {
        for d in dirs.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Creates `dir` and has it removed when the process exits.
fn temporary(dir: &std::path::Path) {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a function with no arguments that only removes
    // files, for the C runtime to call at exit.
    REGISTER.call_once(|| unsafe {
        libc::atexit(remove_made);
    });
    std::fs::create_dir_all(dir).expect("temp dir");
    if let Ok(mut made) = MADE.lock()
        && !made.iter().any(|d| d == dir)
    {
        made.push(dir.to_path_buf());
    }
}

/// Writes `src` to a fresh file named `name.rmo` in its own temporary folder.
pub fn model_file(name: &str, src: &str) -> PathBuf {
    let k = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("rmoc-test-{}-{k}", std::process::id()));
    temporary(&dir);
    let p = dir.join(format!("{name}.rmo"));
    std::fs::write(&p, src).expect("write model");
    p
}

/// A fresh temporary folder of this test process for files a test writes
/// (results, plots), named after `what`.
pub fn scratch_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rmoc-{what}-{}", std::process::id()));
    temporary(&dir);
    dir
}

/// Runs the `rmoc` binary with `args` in the project folder.
pub fn rmoc_cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rmoc runs")
}

/// Rendered diagnostics with the temporary folder replaced by `<dir>`.
fn render(
    lib: &rmoc::instantiate::library::Library,
    d: &[diag::Diagnostic],
    path: &std::path::Path,
) -> String {
    let text = diag::render(&lib.sources, d, false);
    let dir = path
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    text.replace(&dir, "<dir>")
}

/// `rmoc check` of every model of the file: the summaries, or the diagnostics.
pub fn check(src: &str) -> String {
    let path = model_file("model", src);
    let (mut lib, loaded) = rmoc::load(&path);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return render(&lib, &d, &path),
    };
    let names: Vec<String> = rmoc::candidate_models(&loaded.file)
        .iter()
        .map(|c| c.name.name.clone())
        .collect();
    let targets: Vec<_> = loaded
        .classes
        .iter()
        .zip(&loaded.file.classes)
        .filter(|(_, c)| names.contains(&c.name.name))
        .map(|(id, _)| *id)
        .collect();
    match rmoc::check_models(&mut lib, &targets) {
        Ok((summaries, warnings)) => {
            let mut out = render(&lib, &warnings, &path);
            for s in summaries {
                out.push_str(&s);
                out.push('\n');
            }
            out
        }
        Err(diags) => render(&lib, &diags, &path),
    }
}

/// The flat model's text (or the diagnostics).
pub fn flatten(src: &str, model: Option<&str>) -> String {
    let path = model_file("model", src);
    let (mut lib, loaded) = rmoc::load(&path);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return render(&lib, &d, &path),
    };
    let m = match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => m,
        Err(d) => return render(&lib, &[d], &path),
    };
    match rmoc::instantiate::flatten(&mut lib, m) {
        Ok(f) => f.to_text(),
        Err(d) => render(&lib, &d, &path),
    }
}

/// The `rmoc analyze` report (or the diagnostics).
pub fn analyze(src: &str, model: Option<&str>) -> String {
    let path = model_file("model", src);
    let (mut lib, loaded) = rmoc::load(&path);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return render(&lib, &d, &path),
    };
    let m = match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => m,
        Err(d) => return render(&lib, &[d], &path),
    };
    let flat = match rmoc::instantiate::flatten(&mut lib, m) {
        Ok(f) => f,
        Err(d) => return render(&lib, &d, &path),
    };
    match rmoc::structure::analyze(flat) {
        Ok(c) => c.report(&lib.sources),
        Err(d) => render(&lib, &d, &path),
    }
}

/// Compiles a model (panics with the rendered diagnostics on failure).
pub fn compile_file(path: &std::path::Path, model: Option<&str>) -> rmoc::Compiled {
    let (mut lib, loaded) = rmoc::load(path);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => panic!("{}", render(&lib, &d, path)),
    };
    let m = match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => m,
        Err(d) => panic!("{}", render(&lib, &[d], path)),
    };
    match rmoc::compile(&mut lib, m) {
        Ok(c) => c,
        Err(d) => panic!("{}", render(&lib, &d, path)),
    }
}

pub fn compile(src: &str, model: Option<&str>) -> rmoc::Compiled {
    let path = model_file("model", src);
    compile_file(&path, model)
}

/// Settings for [`simulate`]: the experiment's, unless given.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub stop: Option<f64>,
    pub tolerance: Option<f64>,
    pub interval: Option<f64>,
    pub params: Vec<(&'static str, f64)>,
    /// The experiment's integrator (`__rmoc_solver`) instead of the BDF.
    pub experiment_solver: bool,
}

pub fn options(c: &rmoc::Compiled, run: &Run) -> solve::Options {
    // The command line's resolution (solve::settings), with the BDF
    // unless the experiment's integrator is asked for.
    let request = solve::settings::RunRequest {
        stop_time: run.stop,
        tolerance: run.tolerance,
        interval: run.interval,
        params: run.params.iter().map(|(n, v)| format!("{n}={v}")).collect(),
        solver: (!run.experiment_solver).then(|| "bdf".into()),
        ..Default::default()
    };
    request
        .resolve(&c.causal)
        .unwrap_or_else(|d| panic!("run settings: {}", d.message))
}

/// Simulates with the JIT; panics with the diagnostics on failure.
pub fn simulate_compiled(c: &rmoc::Compiled, run: &Run) -> Results {
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let opts = options(c, run);
    match solve::simulate(&c.causal, &c.program, &jit, &opts) {
        Ok(r) => r,
        Err(d) => panic!(
            "simulation failed: {:?}",
            d.iter().map(|x| x.message.clone()).collect::<Vec<_>>()
        ),
    }
}

pub fn simulate(src: &str, model: Option<&str>, run: &Run) -> Results {
    let c = compile(src, model);
    simulate_compiled(&c, run)
}

/// The value of `var` at time `t` (linear interpolation between rows; the
/// last row at an event time).
pub fn value_at(r: &Results, var: &str, t: f64) -> f64 {
    let k = r
        .column(var)
        .unwrap_or_else(|| panic!("no column {var} in {:?}", r.names));
    let mut best = None;
    for i in 0..r.times.len() {
        if r.times[i] == t {
            best = Some(r.rows[i][k]);
        }
    }
    if let Some(b) = best {
        return b;
    }
    for i in 1..r.times.len() {
        let (a, b) = (r.times[i - 1], r.times[i]);
        if a <= t && t <= b && b > a {
            let w = (t - a) / (b - a);
            return r.rows[i - 1][k] * (1.0 - w) + r.rows[i][k] * w;
        }
    }
    panic!("time {t} outside the result");
}

pub fn last(r: &Results, var: &str) -> f64 {
    let k = r.column(var).unwrap_or_else(|| panic!("no column {var}"));
    r.rows.last().expect("rows")[k]
}

/// Every one of `lines` appears in `text` (a flat model, a message).
#[track_caller]
pub fn assert_contains_all(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
}

/// `|got - want| <= atol + rtol*|want|`, with a readable failure.
#[track_caller]
pub fn assert_close(got: f64, want: f64, rtol: f64, atol: f64) {
    assert!(
        (got - want).abs() <= atol + rtol * want.abs(),
        "got {got}, want {want} (difference {:e}, allowed {:e})",
        (got - want).abs(),
        atol + rtol * want.abs()
    );
}

pub fn project(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file)
}

/// Simulates the project file `file` (its only model) with `solver`;
/// panics with the diagnostics' messages if the run fails.
pub fn simulate_with(file: &str, solver: solve::Solver, run: &Run) -> solve::Results {
    let c = compile_file(&project(file), None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut opts = options(&c, run);
    opts.solver = solver;
    match solve::simulate(&c.causal, &c.program, &jit, &opts) {
        Ok(r) => r,
        Err(d) => panic!(
            "{:?}",
            d.iter().map(|x| x.message.clone()).collect::<Vec<_>>()
        ),
    }
}

/// `tests/models/contacts/hops.rmo`: kicked up at 2 m/s at t = 0.5 and 1.0,
/// the ball is at y = 2 s - g s^2/2 (to `tol`) 0.2 s after each kick, and
/// rests (y = 0, N = m g) at t = 0.95, between its landing and the next kick.
pub fn check_hops(r: &Results, tol: f64) {
    let (y, n) = (r.column("y").expect("y"), r.column("N").expect("N"));
    let at = |time: f64| {
        let k = r
            .times
            .iter()
            .position(|&s| (s - time).abs() < 1e-9)
            .unwrap_or_else(|| panic!("no row at {time}"));
        (r.rows[k][y], r.rows[k][n])
    };
    let hop = 2.0 * 0.2 - 9.81 / 2.0 * 0.04;
    for time in [0.7, 1.2] {
        let (yk, _) = at(time);
        assert!(
            (yk - hop).abs() <= tol,
            "y({time}) = {yk}, closed form {hop}"
        );
    }
    let (y_rest, n_rest) = at(0.95);
    assert!(
        y_rest.abs() <= 1e-12 && (n_rest - 9.81).abs() <= 1e-9,
        "y {y_rest}, N {n_rest}"
    );
}

/// `tests/models/contacts/sample_edges.rmo`: the samples at t = 0, 0.25,
/// 0.5, 0.75 and the stop time 1 all fire, and the when-condition rising at
/// the sample instant 0.25 fires once beside it.
pub fn check_sample_edges(r: &Results) {
    let last = |name: &str| r.rows.last().expect("rows")[r.column(name).expect("column")];
    assert_eq!((last("samples"), last("late")), (5.0, 1.0));
    assert_eq!(r.stats.time_events, 5);
}

/// `tests/models/contacts/terminate_at_start.rmo`: `terminate` in the
/// start-time sample's event ends the run at t = 0, reported as on the BDF.
pub fn check_terminated_at_start(r: &Results) {
    assert_eq!(r.times.last(), Some(&0.0), "{:?}", r.times);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.message.contains("terminate at t = 0"))
    );
}

/// A finished `rmoc` process: its exit code, and its standard output then
/// its standard error as one text.
pub fn exit_and_text(out: &std::process::Output) -> (Option<i32>, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Compiles `model` of `path` (its only one when `None`) and simulates it
/// with the settings of `request` (the experiment's where it says none);
/// panics with the diagnostics on failure.
pub fn run_request(
    path: &std::path::Path,
    model: Option<&str>,
    request: solve::settings::RunRequest,
) -> Results {
    let c = compile_file(path, model);
    let opts = request
        .resolve(&c.causal)
        .unwrap_or_else(|d| panic!("settings: {}", d.message));
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    solve::simulate(&c.causal, &c.program, &jit, &opts).unwrap_or_else(|d| {
        panic!(
            "{} ({model:?}): {:?}",
            path.display(),
            d.iter().map(|x| x.message.clone()).collect::<Vec<_>>()
        )
    })
}

/// Every row's value of `name`.
pub fn column(r: &Results, name: &str) -> Vec<f64> {
    let k = r.column(name).unwrap_or_else(|| panic!("no column {name}"));
    r.rows.iter().map(|row| row[k]).collect()
}

/// A JSON array of arrays of numbers (a matrix of `rmoc linearize -o
/// x.json`).
pub fn json_matrix(v: &serde_json::Value) -> Vec<Vec<f64>> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|x| x.as_f64().expect("number"))
                .collect()
        })
        .collect()
}

/// A JSON array of strings (names).
pub fn json_names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .expect("names")
        .iter()
        .map(|x| x.as_str().expect("name").to_string())
        .collect()
}
