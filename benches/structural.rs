//! The structural-dynamics integrators (issue 16): `cargo bench --bench
//! structural`.
//!
//! Every figure is printed beside a baseline measured in the same run:
//! - generalized-alpha (rho_inf 0.8, adaptive steps at the experiment's
//!   tolerance) against the BDF on the chain of benchmark P2
//!   (`../shared/bench/p2_chain.py`: N inertias and spring-dampers, a
//!   sinusoidal torque, 1 s, rtol 1e-6) at N = 100 and 1 000, and on the
//!   Kosenko-Gusev gearbox (`Gearbox` against `GearboxAlpha`, 5 s, rtol
//!   1e-8);
//! - the cost per step of rmoc's generalized-alpha on the N = 1 000 chain at
//!   a fixed step against a hand-written Rust loop of the same method on the
//!   same equations (the chain's stiffness and damping as tridiagonal
//!   matrices, the Newton matrix factored once by the Thomas algorithm: the
//!   floor for this problem). Both take the same steps; their results are
//!   compared before the times are printed.
//!
//! Times are in-process medians of `rmoc::solve::simulate` (compilation
//! excluded). Output is markdown for `docs/benchmarks.md`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use common::median;
use rmoc::solve::generalized_alpha::AlphaParameters;
use rmoc::solve::settings::RunRequest;
use rmoc::solve::{self, Results};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn project(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn compile(path: &Path, model: Option<&str>) -> rmoc::Compiled {
    let (mut lib, loaded) = rmoc::load(path);
    let loaded = loaded.unwrap_or_else(|_| panic!("{} parses", path.display()));
    let m = rmoc::select_model(&mut lib, &loaded, model).expect("model");
    rmoc::compile(&mut lib, m).unwrap_or_else(|_| panic!("{} compiles", path.display()))
}

/// Benchmark P2's chain, as `../shared/bench/p2_chain.py N` writes it.
fn p2_chain(n: usize) -> String {
    format!(
        r#"model P2Chain "Benchmark P2: chain of {n} inertias"
  parameter Integer n = {n};
  parameter Real J = 0.01;
  parameter Real c = 1e4;
  parameter Real d = 1;
  constant Real pi = 3.141592653589793;
  Real phi[n](each start = 0, each fixed = true);
  Real w[n](each start = 0, each fixed = true);
  Real T[n] "T[i]: torque of the joint between i and i+1; T[n]: joint of n to ground";
equation
  for i in 1:n-1 loop
    T[i] = c*(phi[i] - phi[i+1]) + d*(w[i] - w[i+1]);
  end for;
  T[n] = c*phi[n] + d*w[n];
  for i in 1:n loop
    der(phi[i]) = w[i];
  end for;
  J*der(w[1]) = 10*sin(2*pi*5*time) - T[1];
  for i in 2:n loop
    J*der(w[i]) = T[i-1] - T[i];
  end for;
  annotation(experiment(StopTime = 1, Tolerance = 1e-6, Interval = 0.01));
end P2Chain;
"#
    )
}

/// Compiles once, then times `simulate` with `request`'s settings.
fn time_run(c: &rmoc::Compiled, request: RunRequest) -> (Duration, Results) {
    let jit = rmoc::jit::codegen::compile(&c.program).expect("JIT");
    let opts = request
        .resolve(&c.causal)
        .unwrap_or_else(|d| panic!("settings: {}", d.message));
    let mut last = None;
    let t = median(|| {
        last = Some(solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs"));
    });
    (t, last.expect("ran"))
}

fn solver(name: &str) -> RunRequest {
    RunRequest {
        solver: Some(name.into()),
        ..Default::default()
    }
}

fn last(r: &Results, name: &str) -> f64 {
    let k = r.column(name).unwrap_or_else(|| panic!("no column {name}"));
    r.rows.last().expect("rows")[k]
}

/// Generalized-alpha against the BDF, both at the experiment's tolerance.
fn against_bdf(dir: &Path) {
    println!("## Generalized-alpha against the BDF (same tolerance)\n");
    println!(
        "| model | BDF (ms) | BDF steps | generalized-alpha (ms) | its steps | Newton its / step | GA / BDF | end value, GA against BDF |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut cases: Vec<(String, rmoc::Compiled, rmoc::Compiled, &str)> = Vec::new();
    for n in [100, 1000] {
        let p = dir.join(format!("p2_chain{n}.rmo"));
        std::fs::write(&p, p2_chain(n)).expect("write");
        let c = compile(&p, None);
        let c2 = compile(&p, None);
        cases.push((format!("P2 chain N = {n}"), c, c2, "phi[1]"));
    }
    let gearbox = project("examples/gearbox.rmo");
    cases.push((
        "gearbox (`Gearbox` / `GearboxAlpha`)".into(),
        compile(&gearbox, Some("Gearbox")),
        compile(&gearbox, Some("GearboxAlpha")),
        "Delta",
    ));
    for (label, c_bdf, c_alpha, check) in &cases {
        let (tb, rb) = time_run(c_bdf, solver("bdf"));
        let (ta, ra) = time_run(c_alpha, solver("generalized-alpha"));
        let (vb, va) = (last(&rb, check), last(&ra, check));
        // At the same tolerance the methods' global errors differ (a
        // second-order method's local error control lets phase errors of
        // an oscillatory model add up): the difference is printed.
        let difference = (va - vb).abs() / vb.abs().max(1e-300);
        assert!(
            difference <= 0.05,
            "{label}: {check} {va} against the BDF's {vb}"
        );
        let (sb, sa) = (rb.stats.integrator.steps, ra.stats.integrator.steps);
        println!(
            "| {label} | {:.1} | {sb} | {:.1} | {sa} | {:.2} | {:.2} | {check}: {:.1e} |",
            tb.as_secs_f64() * 1e3,
            ta.as_secs_f64() * 1e3,
            ra.stats.integrator.newton_iterations as f64 / sa as f64,
            ta.as_secs_f64() / tb.as_secs_f64(),
            difference
        );
    }
    println!();
}

/// The P2 chain by hand: generalized-alpha in the form rmoc uses (Arnold &
/// Brüls: the unknown is the end acceleration z, a the acceleration-like
/// vector), fixed step `h`, `steps` steps. The chain's accelerations are
/// (F(t) - c L phi - d L w) / J with L tridiagonal (1 then 2 on the
/// diagonal, -1 beside it), so the Newton matrix J I + s L is factored
/// once and each step is one tridiagonal product and one solve. Returns
/// (phi[1], w[1]) at the end.
fn hand_written(n: usize, h: f64, steps: usize, p: AlphaParameters) -> (f64, f64) {
    let (inertia, c, d) = (0.01, 1e4, 1.0);
    let force = |t: f64| 10.0 * (2.0 * std::f64::consts::PI * 5.0 * t).sin();
    let l_diag = |i: usize| if i == 0 { 1.0 } else { 2.0 };
    // L x into out.
    let l_times = |x: &[f64], out: &mut [f64]| {
        for i in 0..n {
            let mut s = l_diag(i) * x[i];
            if i > 0 {
                s -= x[i - 1];
            }
            if i + 1 < n {
                s -= x[i + 1];
            }
            out[i] = s;
        }
    };
    let cc = (1.0 - p.alpha_f) / (1.0 - p.alpha_m);
    let s = c * h * h * p.beta * cc + d * h * p.gamma * cc;
    // Thomas factors of J I + s L (sub- and super-diagonal -s), with the
    // reciprocals of the pivots.
    let mut inv_diag = vec![0.0; n];
    let mut upper = vec![0.0; n];
    for i in 0..n {
        let b = inertia + s * l_diag(i);
        let prev = if i > 0 { -s * upper[i - 1] } else { 0.0 };
        inv_diag[i] = 1.0 / (b - prev);
        upper[i] = -s * inv_diag[i];
    }
    let (wf, wm) = (p.alpha_f / (1.0 - p.alpha_m), p.alpha_m / (1.0 - p.alpha_m));
    let (mut phi, mut w) = (vec![0.0; n], vec![0.0; n]);
    // z = a = the accelerations at the start.
    let mut z = vec![0.0; n];
    z[0] = force(0.0) / inertia;
    let mut a = z.clone();
    let (mut pp, mut ww, mut comb, mut r) =
        (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for k in 1..=steps {
        let t1 = k as f64 * h;
        for i in 0..n {
            let g = wf * z[i] - wm * a[i];
            ww[i] = w[i] + h * ((1.0 - p.gamma) * a[i] + p.gamma * g);
            pp[i] = phi[i] + h * w[i] + h * h * ((0.5 - p.beta) * a[i] + p.beta * g);
            comb[i] = c * pp[i] + d * ww[i];
        }
        l_times(&comb, &mut r);
        for x in r.iter_mut() {
            *x = -*x;
        }
        r[0] += force(t1);
        // Forward elimination and back substitution.
        r[0] *= inv_diag[0];
        for i in 1..n {
            r[i] = (r[i] + s * r[i - 1]) * inv_diag[i];
        }
        for i in (0..n - 1).rev() {
            r[i] -= upper[i] * r[i + 1];
        }
        for i in 0..n {
            let g = wf * z[i] - wm * a[i];
            let a1 = cc * r[i] + g;
            w[i] = ww[i] + h * p.gamma * cc * r[i];
            phi[i] = pp[i] + h * h * p.beta * cc * r[i];
            z[i] = r[i];
            a[i] = a1;
        }
    }
    (phi[0], w[0])
}

/// rmoc's generalized-alpha per step against the hand-written loop.
fn per_step(dir: &Path) {
    println!("## Generalized-alpha per step: rmoc against a hand-written loop\n");
    println!(
        "| N | h | steps | rmoc (ms) | rmoc per step (µs) | hand-written (ms) | its per step (µs) | rmoc / hand-written |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let p = AlphaParameters::chung_hulbert(0.8);
    let h = 1e-4;
    for n in [100, 1000] {
        let path = dir.join(format!("p2_chain{n}.rmo"));
        std::fs::write(&path, p2_chain(n)).expect("write");
        let c = compile(&path, None);
        let request = RunRequest {
            solver: Some("generalized-alpha".into()),
            step: Some(h),
            ..Default::default()
        };
        let (t_rmoc, r) = time_run(&c, request);
        let steps = r.stats.integrator.steps as usize;
        let mut end = (0.0, 0.0);
        let t_hand = median(|| end = hand_written(n, h, steps, p));
        let (phi, w) = (last(&r, "phi[1]"), last(&r, "w[1]"));
        assert!(
            (phi - end.0).abs() <= 1e-6 * phi.abs()
                && (w - end.1).abs() <= 1e-6 * w.abs().max(1e-3),
            "N = {n}: rmoc phi[1] = {phi}, w[1] = {w}; by hand {end:?}"
        );
        let us = |d: Duration| d.as_secs_f64() * 1e6 / steps as f64;
        println!(
            "| {n} | {h:e} | {steps} | {:.1} | {:.2} | {:.2} | {:.2} | {:.1} |",
            t_rmoc.as_secs_f64() * 1e3,
            us(t_rmoc),
            t_hand.as_secs_f64() * 1e3,
            us(t_hand),
            t_rmoc.as_secs_f64() / t_hand.as_secs_f64()
        );
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only: Vec<&str> = args[1..]
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(|s| s.as_str())
        .collect();
    let want = |s: &str| only.is_empty() || only.contains(&s);
    let dir = std::env::temp_dir().join(format!("rmoc-bench-structural-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    println!("rmoc structural-integrator benchmark (medians; ratios within the run)\n");
    if want("bdf") {
        against_bdf(&dir);
    }
    if want("step") {
        per_step(&dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
