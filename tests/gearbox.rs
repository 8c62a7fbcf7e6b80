//! The Kosenko-Gusev spur gearbox (`examples/gearbox.rmo`): the acceptance
//! checks of the contact library against the paper's invariants and closed
//! forms (seed 001, sections 5-7).

mod common;

use common::{Run, last, value_at};
use rmoc::solve::Results;

fn gearbox(model: &str, stop: f64, interval: f64) -> (rmoc::Compiled, Results) {
    let c = common::compile_file(&common::project("examples/gearbox.rmo"), Some(model));
    let r = common::simulate_compiled(
        &c,
        &Run {
            stop: Some(stop),
            interval: Some(interval),
            experiment_solver: true,
            ..Run::default()
        },
    );
    (c, r)
}

fn param(c: &rmoc::Compiled, r: &Results, name: &str) -> f64 {
    let _ = c;
    r.parameters
        .iter()
        .find(|p| p.0 == name)
        .map(|p| p.1)
        .unwrap_or_else(|| panic!("no parameter {name}"))
}

fn col(r: &Results, name: &str) -> Vec<f64> {
    let k = r.column(name).unwrap_or_else(|| panic!("no column {name}"));
    r.rows.iter().map(|row| row[k]).collect()
}

/// Times at which an integer column changes (the rows before and after an event share the time).
fn changes(r: &Results, name: &str) -> Vec<(f64, f64)> {
    let v = col(r, name);
    (1..v.len())
        .filter(|&i| v[i] != v[i - 1])
        .map(|i| (r.times[i], v[i]))
        .collect()
}

#[test]
fn lambda_is_an_integral_of_motion_and_delta_equals_the_penetration() {
    let (c, r) = gearbox("Gearbox", 5.0, 0.001);
    let rab = param(&c, &r, "rAb");
    let rbb = param(&c, &r, "rBb");
    // Assertion 2: lambda = -rBb/rAb = -1.5 at every output point, across every switch.
    let lam0 = -rbb / rab;
    assert!((lam0 + 1.5).abs() < 1e-12);
    let worst = col(&r, "lambda")
        .iter()
        .map(|l| ((l - lam0) / lam0).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-8, "lambda deviates by {worst:e} (relative)");
    // Section 7.2: Delta(t) (from the angles) is the penetration depth |PA PB| (from the tracking).
    let delta = col(&r, "Delta");
    let depth = col(&r, "depth");
    let scale = depth.iter().fold(0.0f64, |a, d| a.max(d.abs()));
    let dev = delta
        .iter()
        .zip(&depth)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        dev <= 1e-3 * scale,
        "max |Delta - depth| = {dev:e} > 1e-3 * {scale:e}"
    );
}

#[test]
fn tooth_pairs_switch_exactly_at_each_pitch() {
    let (c, r) = gearbox("Gearbox", 5.0, 0.01);
    let pitch = 2.0 * std::f64::consts::PI / 20.0;
    let phi5 = last(&r, "phiA").abs();
    let switches = changes(&r, "pair");
    assert_eq!(
        switches.len(),
        (phi5 / pitch).floor() as usize,
        "switches at {switches:?}, |phiA(5)| = {phi5}"
    );
    for (k, &(t, pair)) in switches.iter().enumerate() {
        assert_eq!(pair as usize, k + 1);
        let phi = value_at(&r, "phiA", t).abs();
        assert!(
            (phi - (k + 1) as f64 * pitch).abs() < 1e-6,
            "switch {} at phiA = {phi}, pitch angle {}",
            k + 1,
            (k + 1) as f64 * pitch
        );
    }
    let _ = c;
}

#[test]
fn dte_settles_to_the_static_johnson_penetration() {
    // Without friction the transmitted normal force tends to the pinion
    // torque over the base radius; the DTE tends to Johnson's approach at that
    // load, eq. (13), computed here in closed form.
    let (c, r) = gearbox("GearboxFrictionless", 20.0, 0.01);
    let rab = param(&c, &r, "rAb");
    let e = param(&c, &r, "E");
    let nu = param(&c, &r, "nu");
    let width = param(&c, &r, "width");
    let alpha = param(&c, &r, "alpha");
    let ra = param(&c, &r, "rA");
    let estar = e / (2.0 * (1.0 - nu * nu));
    let n = 1.0 / rab / width; // N/m
    let kk = ra * 2.5 * alpha.sin(); // |KA KB|
    let pi = std::f64::consts::PI;
    // rhoA + rhoB = |KA KB| - h: solve eq. (13) with that curvature by fixed point.
    let mut h: f64 = 3e-9;
    for _ in 0..50 {
        h = n / (pi * estar) * ((4.0 * pi * estar * (kk - h) / n).ln() - 1.0);
    }
    let dte = last(&r, "Delta");
    assert!(
        (dte - h).abs() <= 5e-3 * h,
        "DTE {dte:e}, static Johnson approach {h:e}"
    );
    let force = last(&r, "normalForce");
    assert!(
        (force - 1.0 / rab).abs() < 1e-3 / rab,
        "normal force {force}, expected {}",
        1.0 / rab
    );
}

fn dte_at(r: &Results, t: f64) -> f64 {
    value_at(r, "Delta", t)
}

/// Instants where `v` falls through `level`, interpolated between rows.
fn falls_through(r: &Results, v: &[f64], level: f64) -> Vec<f64> {
    (1..v.len())
        .filter(|&i| v[i - 1] > level && v[i] <= level)
        .map(|i| {
            let (a, b) = (v[i - 1] - level, v[i] - level);
            let (t0, t1) = (r.times[i - 1], r.times[i]);
            if a == b {
                t1
            } else {
                t0 + (t1 - t0) * a / (a - b)
            }
        })
        .collect()
}

#[test]
fn friction_makes_the_dte_jump_at_switches_and_at_the_pitch_point() {
    let (_, rf) = gearbox("Gearbox", 5.0, 0.0005);
    let (_, r0) = gearbox("GearboxFrictionless", 5.0, 0.0005);
    let v_eps = 1e-4;
    let mut friction_jumps = Vec::new();
    // Tooth switches: the contact jumps from b to a and the friction's moment
    // arm with it; compare the DTE change over 5 ms around the event with the
    // change over the 10 ms before.
    let w = 0.005;
    let switches: Vec<f64> = changes(&rf, "pair").iter().map(|x| x.0).collect();
    assert!(!switches.is_empty());
    for &t in &switches {
        let j = (dte_at(&rf, t + w) - dte_at(&rf, t - w)).abs();
        let trend = (dte_at(&rf, t - w) - dte_at(&rf, t - 3.0 * w)).abs();
        assert!(
            j > 5.0 * trend,
            "no jump at the switch at t = {t}: {j:e} vs trend {trend:e}"
        );
        friction_jumps.push(j);
    }
    // The pitch point: the sliding velocity passes through the regularization
    // band (+v_eps to -v_eps, two events) and the friction force reverses.
    let vt = col(&rf, "mesh.vt");
    let enters = falls_through(&rf, &vt, v_eps);
    let leaves = falls_through(&rf, &vt, -v_eps);
    let mut passages = 0;
    for &t1 in &enters {
        let Some(&t2) = leaves.iter().find(|&&t2| t2 > t1 && t2 - t1 < 0.1) else {
            continue;
        };
        if switches.iter().any(|&s| (s - t1).abs() < 1e-6) {
            continue;
        }
        passages += 1;
        let j = (dte_at(&rf, t2) - dte_at(&rf, t1)).abs();
        let trend = (dte_at(&rf, t1) - dte_at(&rf, t1 - (t2 - t1))).abs();
        assert!(
            j > 5.0 * trend,
            "no jump at the pitch point passage {t1}..{t2}: {j:e} vs trend {trend:e}"
        );
        friction_jumps.push(j);
    }
    assert!(passages >= 2, "pitch point passages found: {passages}");
    // Without friction the switches leave the DTE smooth.
    let smallest = friction_jumps.iter().copied().fold(f64::INFINITY, f64::min);
    for (t, _) in changes(&r0, "pair") {
        let j = (dte_at(&r0, t + w) - dte_at(&r0, t - w)).abs();
        assert!(
            j < 0.1 * smallest,
            "frictionless DTE changes by {j:e} at the switch at t = {t} (friction jumps are at least {smallest:e})"
        );
    }
}

#[test]
fn rigid_contact_force_is_the_mean_of_the_compliant_one() {
    // Section 7.3: the rigid model's normal force is the average of Johnson's
    // over a mesh cycle (Fig. 5).
    let (_, rj) = gearbox("Gearbox", 5.0, 0.0005);
    let (_, rr) = gearbox("GearboxRigid", 5.0, 0.0005);
    let cycle = |r: &Results| {
        let s = changes(r, "pair");
        (s[0].0, s[1].0)
    };
    let mean = |r: &Results, (a, b): (f64, f64)| {
        let n = col(r, "normalForce");
        let mut sum = 0.0;
        for i in 1..r.times.len() {
            let (t0, t1) = (r.times[i - 1], r.times[i]);
            if t0 >= a && t1 <= b {
                sum += 0.5 * (n[i - 1] + n[i]) * (t1 - t0);
            }
        }
        sum / (b - a)
    };
    let mj = mean(&rj, cycle(&rj));
    let mr = mean(&rr, cycle(&rr));
    assert!(
        (mj - mr).abs() <= 0.02 * mr,
        "Johnson mean {mj}, rigid mean {mr}"
    );
}

#[test]
fn the_default_run_is_the_johnson_model_with_friction() {
    let dir = std::env::temp_dir().join(format!("rmoc-gearbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(&dir)
        .arg("simulate")
        .arg(common::project("examples/gearbox.rmo"))
        .output()
        .expect("run rmoc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (names, rows) = rmoc::output::csv::read(&dir.join("Gearbox_res.csv")).expect("result file");
    for c in [
        "time",
        "Delta",
        "depth",
        "kappa",
        "lambda",
        "normalForce",
        "pair",
        "mesh.Ft",
    ] {
        assert!(names.iter().any(|n| n == c), "no column {c}");
    }
    let ft = names
        .iter()
        .position(|n| n == "mesh.Ft")
        .expect("friction column");
    assert!(
        rows.iter().any(|r| r[ft].abs() > 0.1),
        "the default run has friction"
    );
    assert_eq!(rows.last().map(|r| r[0]), Some(5.0));
}

/// The default run on the structural integrator (`GearboxAlpha`:
/// generalized-alpha, rho_inf 0.8, adaptive steps at the experiment's
/// tolerance, relations live): the DTE agrees with the BDF's to 1% of its
/// largest value at every output time over 5 s, and the tooth pairs switch
/// at the same times.
#[test]
fn generalized_alpha_gives_the_dte_of_the_bdf() {
    let (_, bdf) = gearbox("Gearbox", 5.0, 0.001);
    let (_, alpha) = gearbox("GearboxAlpha", 5.0, 0.001);
    assert!(
        alpha.stats.alpha.is_some_and(|a| a.positions == 3),
        "not the structural integrator: {}",
        alpha.stats
    );
    let largest = col(&bdf, "Delta")
        .iter()
        .fold(0.0f64, |m, d| m.max(d.abs()));
    let mut worst = (0.0, 0.0);
    for k in 1..=5000 {
        let t = k as f64 * 1e-3;
        let d = (dte_at(&alpha, t) - dte_at(&bdf, t)).abs();
        if d > worst.1 {
            worst = (t, d);
        }
    }
    assert!(
        worst.1 <= 0.01 * largest,
        "DTE differs by {:e} at t = {} (largest DTE {largest:e})",
        worst.1,
        worst.0
    );
    let (sa, sb) = (changes(&alpha, "pair"), changes(&bdf, "pair"));
    assert_eq!(sa.len(), sb.len(), "{sa:?} against {sb:?}");
    for ((ta, _), (tb, _)) in sa.iter().zip(&sb) {
        assert!((ta - tb).abs() <= 1e-6, "{sa:?} against {sb:?}");
    }
}
