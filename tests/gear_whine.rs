//! Gear whine (seed 003; issue 17): the speed sweep against its closed
//! form, the vibro-impact law of stdlib `Gears.SpurPair` against momentum
//! and restitution, the impulse test of `examples/gear_whine.rmo` (natural
//! frequency and damping by logarithmic decrement at three mesh
//! positions), and the refusal of bad parameters.

mod common;

use common::{Run, column, value_at};
use rmoc::solve::{self, Results};
use std::path::PathBuf;

fn example() -> PathBuf {
    common::project("examples/gear_whine.rmo")
}

/// Runs `model` of `path` on its experiment's settings with `params`.
fn run(path: &std::path::Path, model: &str, params: &[&str]) -> Results {
    let request = solve::settings::RunRequest {
        params: params.iter().map(|p| p.to_string()).collect(),
        ..Default::default()
    };
    common::run_request(path, Some(model), request)
}

/// The sweep's angle and speed are the closed form of constant angular
/// acceleration between the two speeds.
#[test]
fn the_speed_sweep_is_constant_angular_acceleration() {
    let r = common::simulate(
        r#"
model Sweep
  Mechanics.Rotational.SpeedSweep s(wStart = 10, wEnd = 30, duration = 2, startTime = 1, phiStart = 0.5);
end Sweep;
"#,
        None,
        &Run {
            stop: Some(4.0),
            interval: Some(0.05),
            ..Default::default()
        },
    );
    let (w0, w1, d, t0, p0) = (10.0, 30.0, 2.0, 1.0, 0.5);
    let alpha = (w1 - w0) / d;
    for k in 0..=80 {
        let t = k as f64 * 0.05;
        let tau = (t - t0).clamp(0.0, d);
        let w = w0 + alpha * tau;
        let phi = p0 + w0 * (t - t0) + alpha * (tau * tau / 2.0 + d * (t - t0 - d).max(0.0));
        assert!((value_at(&r, "s.w", t) - w).abs() < 1e-9, "w at {t}");
        assert!((value_at(&r, "s.phi", t) - phi).abs() < 1e-9, "phi at {t}");
    }
}

/// Two gears closing without torque at 0.02 - (-0.01) rad/s on base radii
/// 0.07 and 0.1 m; a reconnection with restitution `e` on `share` of the
/// equivalent masses.
const IMPACT: &str = r#"
model Impact
  parameter Real e = 0.5;
  parameter Real share = 1;
  Gears.SpurPair pair(zp = 50, rbp = 0.07, rbg = 0.1, Jp = 0.01, Jg = 0.04,
    pairTable = [0, 10, 100; 0, 3e8, 3e8; 1, 3e8, 3e8], pairs = 1, kLoad = 3e8, mu = 1e-6, e = e,
    impactShare = share, phiNominal = 0.3, phi_p(start = -1e-4), w_p(start = 0.02), w_g(start = -0.01));
  Mechanics.Rotational.Torque tp(tau = 0);
  Mechanics.Rotational.Torque tg(tau = 0);
equation
  connect(tp.flange, pair.flange_p);
  connect(tg.flange, pair.flange_g);
  annotation(experiment(StopTime = 0.02, Interval = 1e-4, __rmoc_solver = "newmark", __rmoc_step = 1e-6));
end Impact;
"#;

/// Two gears closing without torque: the reconnection's impact conserves
/// the momentum along the line of action and reverses the closing speed
/// times e (eq. 24).
#[test]
fn a_reconnection_conserves_momentum_and_reverses_the_speed_by_e() {
    let path = common::model_file("Impact", IMPACT);
    for e in [0.0, 0.5, 1.0] {
        let r = run(&path, "Impact", &[&format!("e={e}")]);
        let (rbp, rbg, jp, jg) = (0.07, 0.1, 0.01, 0.04);
        let (mp, mg) = (jp / (rbp * rbp), jg / (rbg * rbg));
        // Before: closing at rbp w_p - rbg w_g.
        let (vp0, vg0) = (rbp * 0.02, rbg * -0.01);
        let (wp, wg) = (column(&r, "pair.w_p"), column(&r, "pair.w_g"));
        let (vp1, vg1) = (rbp * wp[wp.len() - 1], rbg * wg[wg.len() - 1]);
        let momentum = |a: f64, b: f64| mp * a + mg * b;
        assert!(
            (momentum(vp1, vg1) - momentum(vp0, vg0)).abs()
                < 1e-9 * momentum(vp0, vg0).abs().max(1e-3),
            "e = {e}: momentum {} then {}",
            momentum(vp0, vg0),
            momentum(vp1, vg1)
        );
        let (close0, close1) = (vp0 - vg0, vp1 - vg1);
        if e > 0.0 {
            // (The spring acts for the instant the flanks take to part.)
            assert!(
                (close1 + e * close0).abs() < 1e-3 * close0.abs(),
                "e = {e}: closing {close0} then {close1}"
            );
        } else {
            // Plastic: the flanks stay together (the spring keeps them so).
            assert!(
                close1.abs() < 1e-3 * close0.abs(),
                "e = 0: closing {close0} then {close1}"
            );
        }
        assert!(r.stats.state_events >= 1, "{}", r.stats);
    }
}

/// An impact of the contact region only (`impactShare` s < 1): at the
/// reconnection's event the closing speed drops by s (1 + e) of itself,
/// not to -e of it, and the momentum along the line of action is kept
/// (the rows before and after the event, at one time).
#[test]
fn a_partial_impact_takes_its_share_of_the_closing_speed() {
    let path = common::model_file("Impact", IMPACT);
    let (rbp, rbg, jp, jg) = (0.07, 0.1, 0.01, 0.04);
    let (mp, mg) = (jp / (rbp * rbp), jg / (rbg * rbg));
    for share in [0.03, 0.25, 1.0] {
        let r = run(&path, "Impact", &["e=0.5", &format!("share={share}")]);
        let t = &r.times;
        let i = (0..t.len() - 1)
            .find(|&i| t[i] == t[i + 1])
            .expect("an event row pair");
        let (wp, wg) = (column(&r, "pair.w_p"), column(&r, "pair.w_g"));
        let (vp0, vg0, vp1, vg1) = (rbp * wp[i], rbg * wg[i], rbp * wp[i + 1], rbg * wg[i + 1]);
        let momentum = |a: f64, b: f64| mp * a + mg * b;
        assert!(
            (momentum(vp1, vg1) - momentum(vp0, vg0)).abs() < 1e-12,
            "share {share}: momentum {} then {}",
            momentum(vp0, vg0),
            momentum(vp1, vg1)
        );
        let (close0, close1) = (vp0 - vg0, vp1 - vg1);
        let expected = close0 * (1.0 - share * 1.5);
        assert!(
            (close1 - expected).abs() < 1e-12,
            "share {share}: closing {close0} then {close1}, expected {expected}"
        );
    }
}

/// The paper's numerical impulse test (40% more torque on both sides for
/// one step at a fixed mesh position): the DTE's decay gives the torsional
/// frequency and, by logarithmic decrement, the damping ratio; at three
/// positions of the double-contact zone 2650 +- 100 Hz and 8 +- 1%.
#[test]
fn the_impulse_test_gives_2650_hz_and_8_percent_damping() {
    let path = example();
    for z0 in [0.1, 0.35, 0.6] {
        let r = run(&path, "ImpulseTest", &[&format!("z0={z0}")]);
        let (t, dte) = (r.times.clone(), column(&r, "dte"));
        let after: Vec<usize> = (0..t.len()).filter(|&i| t[i] > 2.01e-3).collect();
        let tail = &after[after.len() - 200..];
        let rest = tail.iter().map(|&i| dte[i]).sum::<f64>() / tail.len() as f64;
        // Peaks of the oscillation about the rest value.
        let x: Vec<(f64, f64)> = after.iter().map(|&i| (t[i], dte[i] - rest)).collect();
        let peaks: Vec<(f64, f64)> = x
            .windows(3)
            .filter(|w| w[1].1 > w[0].1 && w[1].1 >= w[2].1 && w[1].1 > 0.0)
            .map(|w| {
                // The vertex of the parabola through the three samples.
                let (a, b, c) = (w[0].1, w[1].1, w[2].1);
                let h = w[1].0 - w[0].0;
                let shift = 0.5 * (a - c) / (a - 2.0 * b + c);
                (w[1].0 + shift * h, b - 0.25 * (a - c) * shift)
            })
            .collect();
        assert!(peaks.len() >= 6, "z0 = {z0}: {} peaks", peaks.len());
        let n = 5;
        let f = n as f64 / (peaks[n].0 - peaks[0].0);
        let delta = (peaks[0].1 / peaks[n].1).ln() / n as f64;
        let zeta = delta / (4.0 * std::f64::consts::PI.powi(2) + delta * delta).sqrt();
        eprintln!("z0 = {z0}: {f:.0} Hz, damping ratio {zeta:.4}");
        assert!((f - 2650.0).abs() <= 100.0, "z0 = {z0}: {f} Hz");
        assert!(
            (zeta - 0.08).abs() <= 0.01,
            "z0 = {z0}: damping ratio {zeta}"
        );
    }
}

/// A restitution or an impact share outside [0, 1], a mesh-stiffness
/// table with a non-positive stiffness and a sweep whose speed would be negative are
/// refused at the start with their reasons, exit status 1 and no result.
#[test]
fn bad_mesh_and_sweep_parameters_are_refused() {
    let cases = [
        (
            "-p pair.e=-0.1",
            "the coefficient of restitution e must lie in [0, 1]",
        ),
        (
            "-p pair.e=1.5",
            "the coefficient of restitution e must lie in [0, 1]",
        ),
        (
            "-p impactShare=1.2",
            "the impact share impactShare must lie in [0, 1]",
        ),
        ("-p rpmEnd=-100", "wStart and wEnd must not be negative"),
    ];
    for (args, words) in cases {
        let out_file =
            std::env::temp_dir().join(format!("rmoc-whine-bad-{}.csv", std::process::id()));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"));
        cmd.arg("simulate")
            .arg(example())
            .args(["--stop-time", "1e-4"]);
        cmd.args(args.split(' ')).arg("-o").arg(&out_file);
        let (code, text) = common::exit_and_text(&cmd.output().expect("run rmoc"));
        assert_eq!(code, Some(1), "{args}: {text}");
        assert!(
            text.contains(words) && text.contains("package.rmo:"),
            "{args}: {text}"
        );
        assert!(!out_file.exists(), "{args}: a result file");
    }
    let src = r#"
model BadTable
  Gears.SpurPair pair(zp = 50, rbp = 0.07, rbg = 0.07, Jp = 0.01, Jg = 0.01,
    pairTable = [0, 10, 100; 0, 3e8, 3e8; 0.8, 0, 3e8; 1.6, 3e8, 3e8], kLoad = 3e8, phiNominal = time);
  Mechanics.Rotational.Torque tp(tau = 10);
  Mechanics.Rotational.Torque tg(tau = -10);
equation
  connect(tp.flange, pair.flange_p);
  connect(tg.flange, pair.flange_g);
  annotation(experiment(StopTime = 1e-3));
end BadTable;
"#;
    let path = common::model_file("BadTable", src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .arg("simulate")
        .arg(&path)
        .arg("-o")
        .arg(path.with_extension("csv"))
        .output()
        .expect("run rmoc");
    let (code, text) = common::exit_and_text(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("every stiffness of a mesh-stiffness table must be positive"),
        "{text}"
    );
}

/// Four elements across the face with a lead mismatch of 8 um (their
/// separations 1, 3, 5 and 7 um) under 675 N at rest: the mesh deflects
/// by 6 um, so the elements carry k/4 (6 - g) = 375, 225 and 75 N and the
/// last nothing (the closed form of sum k/4 max(0, d - g) = F).
#[test]
fn a_lead_mismatch_loads_the_face_from_one_edge() {
    let src = r#"
model Face
  parameter Real rb = 0.07;
  Gears.SpurPair pair(zp = 50, rbp = rb, rbg = rb, Jp = 0.01, Jg = 0.01,
    pairTable = [0, 10, 100; 0, 3e8, 3e8; 1, 3e8, 3e8], pairs = 1, slices = 4, lead = 8e-6,
    kLoad = 3e8, mu = 2e-5, eta = 2000, phiNominal = 0.3,
    phi_p(start = 3e-6/rb), phi_g(start = -3e-6/rb));
  Mechanics.Rotational.Torque tp(tau = 675*rb);
  Mechanics.Rotational.Torque tg(tau = -675*rb);
equation
  connect(tp.flange, pair.flange_p);
  connect(tg.flange, pair.flange_g);
  annotation(experiment(StopTime = 0.05, Interval = 1e-3, __rmoc_solver = "newmark", __rmoc_step = 5e-6));
end Face;
"#;
    let path = common::model_file("Face", src);
    let r = run(&path, "Face", &[]);
    let want = [375.0, 225.0, 75.0, 0.0];
    for (m, w) in want.iter().enumerate() {
        let got = *column(&r, &format!("pair.element[1,{}]", m + 1))
            .last()
            .expect("rows");
        assert!(
            (got - w).abs() < 1e-6 * 675.0,
            "element {}: {got} N, closed form {w} N",
            m + 1
        );
    }
    let dte = *column(&r, "pair.dte").last().expect("rows");
    assert!((dte - 6e-6).abs() < 1e-12, "deflection {dte}");
}

/// The steady run on the BDF (which once chattered on the impact's speed
/// test) agrees with Newmark's method, the example's integrator, to a
/// percent of the DTE over 10 ms at 2400 Hz.
#[test]
fn the_steady_run_on_the_bdf_agrees_with_newmark() {
    let path = example();
    let request = |solver: &str| solve::settings::RunRequest {
        solver: Some(solver.into()),
        stop_time: Some(0.01),
        ..Default::default()
    };
    let bdf = common::run_request(&path, Some("SteadyRun"), request("bdf"));
    let newmark = common::run_request(&path, Some("SteadyRun"), request("newmark"));
    let (a, b) = (column(&bdf, "dte"), column(&newmark, "dte"));
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let worst = a
        .iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(
        worst < 0.01 * scale,
        "BDF against Newmark: {worst:e} of {scale:e}"
    );
}

/// The primary resonance's two branches at 2400 Hz (the paper's Fig. 12):
/// arriving from 2700 Hz at the sweeps' rate the pair stays on the upper
/// branch, where every contact element is unloaded once in each mesh
/// cycle, for part of it; arriving from 2000 Hz it stays on the lower,
/// where the teeth carry the load throughout and the DTE's RMS is lower.
/// The paper's upper branch is unloaded for about half of each cycle
/// (Fig. 12); issue 17 asks for 30-60% (this model: 31%, with the RMS
/// 1.9x the lower branch's).
#[test]
fn at_2400_hz_the_upper_branch_loses_contact_every_cycle_and_the_lower_never() {
    let path = example();
    let branch = |from: f64| {
        let request = solve::settings::RunRequest {
            params: vec![format!("fmFrom={from}")],
            ..Default::default()
        };
        // The model stops itself after its hold of 0.05 s (120 cycles).
        let r = common::run_request(&path, Some("BranchRun"), request);
        let last = |name: &str| common::last(&r, name);
        (
            last("losses"),
            last("unloadedTime"),
            last("heldCycles"),
            last("dteRms"),
        )
    };
    let (losses, unloaded, cycles, upper_rms) = branch(2700.0);
    assert!(
        (cycles - 120.0).abs() < 1e-6,
        "the run held {cycles} cycles"
    );
    assert_eq!(
        losses, 120.0,
        "upper branch: one total contact loss per mesh cycle"
    );
    let share = unloaded / (cycles / 2400.0);
    assert!(
        (0.3..0.6).contains(&share),
        "upper branch unloaded {share} of each cycle"
    );
    let (losses, unloaded, _, lower_rms) = branch(2000.0);
    assert_eq!(
        (losses, unloaded),
        (0.0, 0.0),
        "lower branch: never unloaded"
    );
    assert!(
        upper_rms > 1.5 * lower_rms,
        "RMS DTE upper {upper_rms:e}, lower {lower_rms:e}"
    );
}
