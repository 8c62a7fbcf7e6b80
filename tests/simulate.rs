//! The integrator against independent references: the classic stiff and
//! non-stiff test problems of `tests/models/reference/` (values from SciPy's
//! Radau at rtol 1e-12, checked there against Hairer & Wanner's test set and
//! closed forms; see its README). Every model's solver statistics are pinned
//! in a snapshot, so a change in the integrator's work shows up as a diff.

mod common;

use common::{Run, assert_close, value_at};
use rmoc::solve::Results;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    file: String,
    model: String,
    #[serde(default)]
    run: Option<RunSettings>,
    checks: Vec<Check>,
    #[serde(default)]
    impact_times: Vec<f64>,
    #[serde(default)]
    impact_atol: f64,
    #[serde(default)]
    period: Option<Tolerance>,
    #[serde(default)]
    zero_crossings_down: Vec<f64>,
    #[serde(default)]
    crossing_atol: f64,
}

#[derive(Deserialize)]
struct RunSettings {
    stop_time: f64,
}

#[derive(Deserialize)]
struct Tolerance {
    value: f64,
    atol: f64,
}

#[derive(Deserialize)]
struct Check {
    var: Option<String>,
    at: Option<f64>,
    value: Option<f64>,
    invariant: Option<String>,
    #[serde(default)]
    rtol: f64,
    #[serde(default)]
    atol: f64,
}

fn references() -> Vec<Reference> {
    let path = common::project("tests/models/reference/expected.json");
    let text = std::fs::read_to_string(&path).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

/// The invariants of `expected.json`, evaluated on one output row. They are
/// written there as Python expressions; each has its Rust twin here, and an
/// unknown one fails the test rather than being skipped.
fn invariant(expr: &str, r: &Results, row: usize) -> f64 {
    let v = |name: &str| r.rows[row][r.column(name).unwrap_or_else(|| panic!("no column {name}"))];
    let w = std::f64::consts::TAU;
    match expr {
        "y1 + y2 + y3 - 1" => v("y1") + v("y2") + v("y3") - 1.0,
        "min(y2, 0)" => v("y2").min(0.0),
        "min(h, 0)" => v("h").min(0.0),
        "x**2 + (v/6.283185307179586)**2 - 1" => v("x").powi(2) + (v("v") / w).powi(2) - 1.0,
        "x - math.cos(6.283185307179586*time)" => v("x") - (w * r.times[row]).cos(),
        other => panic!("invariant `{other}` has no Rust twin in tests/simulate.rs"),
    }
}

/// Simulates one reference problem, checks its values, invariants, event
/// times and period, and returns its solver statistics as text.
fn check(reference: &Reference) -> String {
    let path = common::project(&format!("tests/models/reference/{}", reference.file));
    let compiled = common::compile_file(&path, Some(&reference.model));
    let run = Run {
        stop: reference.run.as_ref().map(|r| r.stop_time),
        ..Run::default()
    };
    let r = common::simulate_compiled(&compiled, &run);
    for c in &reference.checks {
        if let (Some(var), Some(at), Some(value)) = (&c.var, c.at, c.value) {
            let got = value_at(&r, var, at);
            assert!(
                (got - value).abs() <= c.atol + c.rtol * value.abs(),
                "{} {var}({at}) = {got}, reference {value} (difference {:e})",
                reference.file,
                (got - value).abs()
            );
        } else if let Some(expr) = &c.invariant {
            for row in 0..r.times.len() {
                let e = invariant(expr, &r, row);
                assert!(
                    e.abs() <= c.atol,
                    "{}: invariant {expr} = {e:e} at t = {}",
                    reference.file,
                    r.times[row]
                );
            }
        } else {
            panic!(
                "{}: a check with neither a value nor an invariant",
                reference.file
            );
        }
    }
    if !reference.impact_times.is_empty() {
        // An event is written as two rows at the same time: before and after.
        let k = r.column("bounces").expect("bounces");
        let impacts: Vec<f64> = (1..r.times.len())
            .filter(|&i| r.rows[i][k] != r.rows[i - 1][k])
            .map(|i| r.times[i])
            .collect();
        assert_eq!(impacts.len(), reference.impact_times.len(), "{impacts:?}");
        for (got, want) in impacts.iter().zip(&reference.impact_times) {
            assert_close(*got, *want, 0.0, reference.impact_atol);
        }
    }
    if let Some(period) = &reference.period {
        // Downward zero crossings of y1, by linear interpolation between rows.
        let k = r.column("y1").expect("y1");
        let mut down = Vec::new();
        for i in 1..r.times.len() {
            let (a, b) = (r.rows[i - 1][k], r.rows[i][k]);
            if a > 0.0 && b <= 0.0 {
                down.push(r.times[i - 1] + (r.times[i] - r.times[i - 1]) * a / (a - b));
            }
        }
        assert_eq!(down.len(), reference.zero_crossings_down.len(), "{down:?}");
        for (got, want) in down.iter().zip(&reference.zero_crossings_down) {
            assert_close(*got, *want, 0.0, reference.crossing_atol);
        }
        assert_close(down[1] - down[0], period.value, 0.0, period.atol);
    }
    format!(
        "{} {} to t = {}: {}",
        reference.file,
        reference.model,
        r.times.last().copied().unwrap_or(f64::NAN),
        r.stats
    )
}

#[test]
fn reference_problems_match_their_references() {
    let refs = references();
    assert!(
        refs.len() >= 7,
        "expected.json lists {} problems",
        refs.len()
    );
    let stats: Vec<String> = refs.iter().map(check).collect();
    insta::assert_snapshot!(stats.join("\n"));
}

/// A program lowered for `rmoc check` has no tangent code (the BDF's
/// Jacobians): the simulator refuses it instead of integrating with an
/// empty Jacobian.
#[test]
fn a_program_lowered_for_check_is_not_simulated() {
    let mut c = common::compile(
        "model Decay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend Decay;\n",
        None,
    );
    c.program = rmoc::jit::lower::lower_for_check(&mut c.causal).expect("lowers");
    let interpreter = rmoc::solve::model::Interpreter {
        program: &c.program,
    };
    let opts = common::options(&c, &Run::default());
    let Err(e) = rmoc::solve::simulate(&c.causal, &c.program, &interpreter, &opts) else {
        panic!("simulated a program without tangent code");
    };
    assert!(format!("{e:?}").contains("lowered for `check`"), "{e:?}");
}

/// The benchmark chain of 10 inertias (`../shared/bench/p2_chain.py 10`,
/// copied to tests/models/reference/chain10.rmo) at the peers' tolerances,
/// rtol 1e-6 and atol 1e-8: every final angle within 1e-4 relative of an
/// independent reference, SciPy's DOP853 at rtol 1e-12, atol 1e-14
/// (`benches/ida/chain_scipy.py 10`; SUNDIALS IDA at the same tolerances
/// agrees with it to 5.6e-9 relative, `bash benches/ida/chain.sh
/// --reference 10`). With atol = rtol x nominal = 1e-6 the angles, about
/// 5e-4, are only held to 2e-3.
#[test]
fn the_chain_of_ten_matches_an_independent_reference_to_1e_4() {
    // (12 digits: the check is to 1e-4.)
    let reference = [
        5.62321395235e-4,
        5.52208042819e-4,
        5.29131146419e-4,
        4.93672986225e-4,
        4.46693574312e-4,
        3.89311261357e-4,
        3.22877571056e-4,
        2.48946833951e-4,
        1.69241306695e-4,
        8.56125602821e-5,
    ];
    let c = common::compile_file(&common::project("tests/models/reference/chain10.rmo"), None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut opts = common::options(&c, &Run::default());
    assert_eq!(opts.tolerance, 1e-6);
    opts.atol = Some(1e-8);
    let r = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs");
    assert_eq!(r.times.last(), Some(&1.0));
    for (i, want) in reference.iter().enumerate() {
        let got = common::last(&r, &format!("phi[{}]", i + 1));
        assert!(
            ((got - want) / want).abs() < 1e-4,
            "phi[{}] = {got}, reference {want} (relative {:e})",
            i + 1,
            (got - want) / want
        );
    }
}

/// A ball dropped from 1 m (e = 0.8) at rtol 1e-6: its first 20 impact
/// times within 1e-10 of the closed form t_n = t1 (1 + 2 e (1 - e^(n-1)) /
/// (1 - e)), t1 = sqrt(2/g). Free fall is a quadratic, which the BDF
/// integrates exactly from order 2, and every restart (the start and each
/// impact) begins at order 2 from the Taylor polynomial; the impacts are
/// located to machine precision on the dense output.
#[test]
fn twenty_impacts_of_a_bouncing_ball_at_the_closed_form_times() {
    let src = std::fs::read_to_string(common::project("tests/models/reference/bouncing_ball.rmo"))
        .expect("ball")
        .replace(
            "annotation(experiment(StopTime = 3.6, Tolerance = 1e-10));",
            "annotation(experiment(StopTime = 4.02, Tolerance = 1e-6));",
        );
    assert!(src.contains("StopTime = 4.02"));
    let r = common::simulate(&src, None, &Run::default());
    let k = r.column("bounces").expect("bounces");
    let impacts: Vec<f64> = (1..r.times.len())
        .filter(|&i| r.rows[i][k] != r.rows[i - 1][k])
        .map(|i| r.times[i])
        .collect();
    assert!(impacts.len() >= 20, "{} impacts", impacts.len());
    let (g, e) = (9.81f64, 0.8f64);
    let t1 = (2.0 / g).sqrt();
    for (n, got) in impacts.iter().take(20).enumerate() {
        let want = t1 * (1.0 + 2.0 * e * (1.0 - e.powi(n as i32)) / (1.0 - e));
        assert!(
            (got - want).abs() < 1e-10,
            "impact {}: {got}, closed form {want} (difference {:e})",
            n + 1,
            got - want
        );
    }
}

/// A CSV streamed while the run goes (`Options::rows`, what `rmoc
/// simulate` does: numbers formatted on a writer thread, in batches) is
/// byte for byte the file written from the results at the end, on a model
/// with events (two rows at each impact, the first compared with the
/// second) and on one whose rows fill several batches.
#[test]
fn a_streamed_csv_equals_the_one_written_at_the_end() {
    check_streamed_csv("tests/models/reference/bouncing_ball.rmo", None, 100);
    // The 7 x 7 grid: 1 001 rows of 211 values, about 3 batches.
    check_streamed_csv("tests/models/grid.rmo", Some(1e-3), 3 * (1 << 16) / 211);
}

/// Runs `model` twice, written at the end and streamed, and compares the
/// files; at least `rows` rows must have streamed.
fn check_streamed_csv(model: &str, interval: Option<f64>, rows: usize) {
    let path = common::project(model);
    let c = common::compile_file(&path, None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let name = path
        .file_stem()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let dir = std::env::temp_dir().join(format!("rmoc-stream-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (whole, streamed) = (dir.join("whole.csv"), dir.join("streamed.csv"));
    let run = common::Run {
        interval,
        ..Default::default()
    };
    let opts = common::options(&c, &run);
    let r = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs");
    rmoc::output::write(&r, &whole).expect("write");
    let stream = std::sync::Arc::new(std::sync::Mutex::new(
        rmoc::output::csv::CsvStream::create(&streamed).expect("stream"),
    ));
    let sink: std::sync::Arc<std::sync::Mutex<dyn rmoc::solve::RowSink>> = stream.clone();
    let mut opts = opts;
    opts.rows = Some(rmoc::solve::RowSinkHandle(sink));
    let s = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs");
    assert!(s.streamed > rows, "{model}: {} rows streamed", s.streamed);
    assert_eq!(s.rows.len(), 1, "only the last row is held");
    assert!(
        !streamed.exists(),
        "the streamed file appears only when finished"
    );
    stream
        .lock()
        .expect("lock")
        .finish(&s, &streamed)
        .expect("finish");
    let (a, b) = (
        std::fs::read(&whole).expect("whole"),
        std::fs::read(&streamed).expect("streamed"),
    );
    assert!(a == b, "the streamed CSV differs from the written one");
    // Nothing else is left in the folder (the temporary file was renamed).
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["streamed.csv", "whole.csv"]);
}

/// A square initial system of 200 free states (a chain of masses that
/// starts in its steady state, `tests/models/init/steady_chain.rmo`) is
/// solved on its sparse pattern: the start positions are those of the
/// tridiagonal system K x = F e_N, solved here by the Thomas algorithm, and
/// the whole run costs fewer model evaluations than a dense
/// finite-difference Jacobian of the initial system alone (one residual per
/// free state: 400 calls).
#[test]
fn a_large_square_initial_system_is_solved_on_its_sparse_pattern() {
    check_steady_chain("SteadyChain", 200);
}

/// The same chain with its velocities also set to zero at the start (300
/// initial equations for 200 free states, consistent): Levenberg-Marquardt
/// on the sparse pattern of J^T J finds the same start, again in fewer
/// model evaluations than one dense finite-difference Jacobian.
#[test]
fn an_over_determined_initial_system_is_solved_on_its_sparse_pattern() {
    check_steady_chain("SteadyChainRedundant", 200);
}

/// Runs `model` of `steady_chain.rmo` briefly: its start positions solve K
/// x = F e_N (by the Thomas algorithm here), in fewer than `evaluations`
/// model evaluations.
fn check_steady_chain(model: &str, evaluations: u64) {
    let c = common::compile_file(
        &common::project("tests/models/init/steady_chain.rmo"),
        Some(model),
    );
    let r = common::simulate_compiled(
        &c,
        &Run {
            stop: Some(1e-3),
            interval: Some(1e-3),
            ..Run::default()
        },
    );
    let (n, k, kg, f) = (100usize, 100.0f64, 1.0f64, 10.0f64);
    // Thomas algorithm: sub- and super-diagonal -k, diagonal kg + 2k (the
    // last mass has one neighbour: kg + k), right-hand side F e_N.
    let diag = |i: usize| if i + 1 < n { kg + 2.0 * k } else { kg + k };
    let mut cp = vec![0.0f64; n];
    let mut dp = vec![0.0f64; n];
    cp[0] = -k / diag(0);
    for i in 1..n {
        let m = diag(i) + k * cp[i - 1];
        cp[i] = -k / m;
        let rhs = if i + 1 == n { f } else { 0.0 };
        dp[i] = (rhs + k * dp[i - 1]) / m;
    }
    let mut x = vec![0.0f64; n];
    x[n - 1] = dp[n - 1];
    for i in (0..n - 1).rev() {
        x[i] = dp[i] - cp[i] * x[i + 1];
    }
    let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, want) in x.iter().enumerate() {
        let got = value_at(&r, &format!("x[{}]", i + 1), 0.0);
        assert_close(got, *want, 0.0, 1e-12 * scale);
    }
    assert!(
        r.stats.model_evaluations < evaluations,
        "{model}: {} model evaluations: the initial Jacobian was not coloured",
        r.stats.model_evaluations
    );
}
