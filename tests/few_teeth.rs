//! The analytic involute contact of seed 000 (Miao et al. 2026, section
//! 3.4, eqs. 16-22): `Contact.fewTeethContact` for external and internal
//! (small-tooth-difference) pairs against closed forms of involute
//! geometry, and `Contact.FewTeeth` holding a torque at the penalty law's
//! static penetration.

mod common;

use common::{Run, last};
use std::f64::consts::PI;

/// The contact of two standard gears (module 2 mm, 20 degrees, no profile
/// shift): gear 0 at the origin, gear 1 at (distance, 0) turned by half a
/// pitch plus `delta`, gear 0 turned by `delta0`. With a ring (gear 1
/// internal) the pinion is gear 0 and sits at (distance, 0) in the ring.
fn contact(z0: u32, z1: u32, ring: bool, distance: f64, delta0: f64, delta: f64) -> [f64; 5] {
    contact_shifted(z0, z1, 0.0, 0.0, ring, distance, delta0, delta)
}

/// As [`contact`], with profile shift coefficients x0 and x1.
#[allow(clippy::too_many_arguments)]
fn contact_shifted(
    z0: u32,
    z1: u32,
    x0: f64,
    x1: f64,
    ring: bool,
    distance: f64,
    delta0: f64,
    delta: f64,
) -> [f64; 5] {
    let src = format!(
        r#"
model Pair
  constant Real pi = 3.141592653589793;
  Real g;
  Real nx;
  Real ny;
  Real qx;
  Real qy;
equation
  (g, nx, ny, qx, qy) = Contact.fewTeethContact({z0}, {z1}, 0.002, 20*pi/180, {x0}, {x1}, false, {ring}, 1, 0.25,
    {cx0}, 0, {delta0}, {cx1}, 0, pi/{z1} + {delta});
end Pair;
"#,
        cx0 = if ring { distance } else { 0.0 },
        cx1 = if ring { 0.0 } else { distance },
        x0 = x0,
        x1 = x1,
    );
    let r = common::simulate(
        &src,
        Some("Pair"),
        &Run {
            stop: Some(0.0),
            ..Run::default()
        },
    );
    ["g", "nx", "ny", "qx", "qy"].map(|v| last(&r, v))
}

fn inv(a: f64) -> f64 {
    a.tan() - a
}

const M: f64 = 0.002;
const ALPHA: f64 = 20.0 * PI / 180.0;

/// External pair at the standard centre distance: no backlash (gap 0 on
/// both flanks); the normal is the line of action, the contact point on
/// it; turning either gear by delta closes a flank by rb delta; moving the
/// centres apart by da opens each flank by a cos(alpha) (inv alpha' - inv
/// alpha), the involute's backlash at the working pressure angle alpha'.
#[test]
fn an_external_pair_has_the_involute_backlash_in_closed_form() {
    let (z0, z1) = (20, 30);
    let a = M * (z0 + z1) as f64 / 2.0;
    let (rb0, rb1) = (
        M * z0 as f64 / 2.0 * ALPHA.cos(),
        M * z1 as f64 / 2.0 * ALPHA.cos(),
    );
    let [g, nx, ny, qx, qy] = contact(z0, z1, false, a, 0.0, 0.0);
    assert!(g.abs() < 1e-15, "gap {g}");
    // The line of action through the pitch point (r0, 0), at alpha.
    // (The deepest point of a flat minimum is found to about the square
    // root of the rounding: the normal to 1e-6.)
    assert!((nx.abs() - ALPHA.sin()).abs() < 1e-6 && (ny.abs() - ALPHA.cos()).abs() < 1e-6);
    let off =
        (qx - M * z0 as f64 / 2.0) * ALPHA.cos() - qy * ALPHA.sin() * (ny.signum() * nx.signum());
    assert!(
        off.abs() < 1e-8,
        "contact point ({qx}, {qy}) off the line of action by {off}"
    );
    for delta in [1e-3, -1e-3, 1e-2] {
        let [g, ..] = contact(z0, z1, false, a, 0.0, delta);
        assert!(
            (g + rb1 * f64::abs(delta)).abs() < 1e-15,
            "gear 1 by {delta}: {g}"
        );
        let [g, ..] = contact(z0, z1, false, a, delta, 0.0);
        assert!(
            (g + rb0 * f64::abs(delta)).abs() < 1e-15,
            "gear 0 by {delta}: {g}"
        );
    }
    for da in [1e-5, 1e-4] {
        let [g, ..] = contact(z0, z1, false, a + da, 0.0, 0.0);
        let working = (a * ALPHA.cos() / (a + da)).acos();
        let want = a * ALPHA.cos() * (inv(working) - inv(ALPHA));
        assert!(
            (g - want).abs() < 1e-12 * want.max(1e-9) + 1e-17,
            "da {da}: {g} vs {want}"
        );
    }
}

/// Profile-shifted pairs mesh without backlash at the working centre
/// distance of involute geometry: inv(alpha') = inv(alpha) + 2 tan(alpha)
/// (x1 +- x0)/(z1 +- z0) and a' = a cos(alpha)/cos(alpha') (the sum for an
/// external pair, the difference for an internal one), and the backlash
/// opens from there as for unshifted teeth at alpha'. (Gear 1 has an even
/// number of teeth, so that half a pitch turns a space to gear 0; the
/// shifts are free of tip interference, which a pair such as 20 in 40
/// with 0.2 and 0.5 has: 5 um near the ring's tip, off the line of
/// action.)
#[test]
fn profile_shifted_pairs_mesh_at_the_working_centre_distance() {
    for (z0, z1, x0, x1, ring) in [
        (20u32, 30u32, 0.3, 0.1, false),
        (25, 44, 0.4, 0.1, false),
        (20, 40, 0.3, 0.3, true),
        (36, 40, 0.0, 0.3, true),
    ] {
        let (a, sum) = if ring {
            (M * (z1 - z0) as f64 / 2.0, (x1 - x0) / (z1 - z0) as f64)
        } else {
            (M * (z1 + z0) as f64 / 2.0, (x1 + x0) / (z1 + z0) as f64)
        };
        let target = inv(ALPHA) + 2.0 * ALPHA.tan() * sum;
        // inv(alpha') = target by Newton's method.
        let mut w = ALPHA;
        for _ in 0..50 {
            w -= (inv(w) - target) / w.tan().powi(2);
        }
        let aw = a * ALPHA.cos() / w.cos();
        let [g, ..] = contact_shifted(z0, z1, x0, x1, ring, aw, 0.0, 0.0);
        assert!(
            g.abs() < 1e-12,
            "{z0}/{z1} x {x0}/{x1}: gap {g} at a' = {aw}"
        );
        // Turning gear 1 by delta closes a flank by rb1 delta.
        let rb1 = M * z1 as f64 / 2.0 * ALPHA.cos();
        let [g, ..] = contact_shifted(z0, z1, x0, x1, ring, aw, 0.0, 1e-3);
        assert!((g + rb1 * 1e-3).abs() < 1e-12, "{z0}/{z1}: {g}");
        // Away from a', the backlash of the working geometry.
        let da = 1e-5;
        let [g, ..] = contact_shifted(z0, z1, x0, x1, ring, aw + da, 0.0, 0.0);
        let w2 = (aw * w.cos() / (aw + da)).acos();
        let want = aw * w.cos() * (inv(w2) - inv(w)) * if ring { -1.0 } else { 1.0 };
        assert!(
            (g - want).abs() < 1e-9 * want.abs(),
            "{z0}/{z1} x {x0}/{x1}: {g} vs {want}"
        );
    }
}

/// A pinion in a ring (20 in 40 teeth): the same closed forms with the
/// signs of an internal pair, whose backlash closes as the centres move
/// apart.
#[test]
fn an_internal_pair_has_the_involute_backlash_in_closed_form() {
    let (z0, z1) = (20, 40);
    let e = M * (z1 - z0) as f64 / 2.0;
    let (rb0, rb1) = (
        M * z0 as f64 / 2.0 * ALPHA.cos(),
        M * z1 as f64 / 2.0 * ALPHA.cos(),
    );
    let [g, nx, ny, ..] = contact(z0, z1, true, e, 0.0, 0.0);
    assert!(g.abs() < 1e-15, "gap {g}");
    // (The deepest point of a flat minimum is found to about the square
    // root of the rounding: the normal to 1e-6.)
    assert!((nx.abs() - ALPHA.sin()).abs() < 1e-6 && (ny.abs() - ALPHA.cos()).abs() < 1e-6);
    for delta in [1e-3, -1e-3] {
        let [g, ..] = contact(z0, z1, true, e, 0.0, delta);
        assert!(
            (g + rb1 * f64::abs(delta)).abs() < 1e-15,
            "ring by {delta}: {g}"
        );
        let [g, ..] = contact(z0, z1, true, e, 2.0 * delta, 0.0);
        assert!(
            (g + rb0 * 2.0 * f64::abs(delta)).abs() < 1e-15,
            "pinion by {delta}: {g}"
        );
    }
    let de = 1e-4;
    let [g, ..] = contact(z0, z1, true, e + de, 0.0, 0.0);
    let working = (e * ALPHA.cos() / (e + de)).acos();
    let want = -e * ALPHA.cos() * (inv(working) - inv(ALPHA));
    assert!((g - want).abs() < 1e-12 * want.abs(), "{g} vs {want}");
}

/// A pinion on a fixed centre in a fixed ring, turned by a torque T: at
/// rest the mesh force is T / rb0 along the line of action and the
/// penetration is (F / k)^(9/10) (eq. 11), the pinion's rotation that over
/// rb0.
#[test]
fn a_pinion_in_a_ring_holds_a_torque_at_the_penalty_penetration() {
    let r = holding(false);
    let rb0 = M * 20.0 / 2.0 * ALPHA.cos();
    let force = 5.0 / rb0;
    let depth = (force / 2e9f64).powf(0.9);
    let (fn_, g, theta) = (last(&r, "mesh.fn"), last(&r, "mesh.g"), last(&r, "theta"));
    assert!((fn_ - force).abs() < 1e-6 * force, "force {fn_} vs {force}");
    assert!((g + depth).abs() < 1e-6 * depth, "gap {g} vs {}", -depth);
    assert!(
        (theta - depth / rb0).abs() < 1e-6 * theta,
        "rotation {theta} vs {}",
        depth / rb0
    );
}

/// With `series = true` the mesh stiffness is eq. 22's at the contact:
/// the pinion tooth's compliance (Gears.toothCompliance, from the table,
/// at the contact point's radius; the ring's teeth rigid here) in series
/// with kHertz, and the penetration follows from it.
#[test]
fn the_series_mesh_stiffness_is_the_teeth_and_hertz_in_series() {
    let r = holding(true);
    let (force, g, k) = held(&r);
    let radius = (last(&r, "mesh.pc[1]") - M * 10.0).hypot(last(&r, "mesh.pc[2]"));
    let c = pinion_tooth_compliance(radius);
    let want = 1.0 / (c + 1.0 / 2e9);
    // Linear interpolation over 64 radii of the flank.
    assert!((k - want).abs() < 1e-4 * want, "kmesh {k} vs {want}");
    let depth = (force / k).powf(0.9);
    assert!((g + depth).abs() < 1e-6 * depth, "gap {g} vs {}", -depth);
}

/// The held pinion's contact force (checked to be the 5 N m torque over
/// its base radius), gap and mesh stiffness at rest.
fn held(r: &rmoc::solve::Results) -> (f64, f64, f64) {
    let force = 5.0 / (M * 20.0 / 2.0 * ALPHA.cos());
    let fn_ = last(r, "mesh.fn");
    assert!((fn_ - force).abs() < 1e-6 * force, "force {fn_} vs {force}");
    (fn_, last(r, "mesh.g"), last(r, "mesh.kmesh"))
}

/// `Gears.toothCompliance` of the held pinion's tooth (20 teeth, module
/// 2 mm, 20 degrees, 10 mm wide) at `radius`.
fn pinion_tooth_compliance(radius: f64) -> f64 {
    let src = format!(
        r#"
model Tooth
  constant Real pi = 3.141592653589793;
  Real c = Gears.toothCompliance({radius}, 20, 0.002, 20*pi/180, 0.01);
end Tooth;
"#
    );
    last(&at_start(&src, "Tooth"), "c")
}

/// The values of `model` (of `src`) at its start.
fn at_start(src: &str, model: &str) -> rmoc::solve::Results {
    let run = Run {
        stop: Some(0.0),
        ..Run::default()
    };
    common::simulate(src, Some(model), &run)
}

/// A pinion on a fixed centre in a fixed ring, turned by 5 N m against a
/// viscous loss, run to rest (0.1 s).
fn holding(series: bool) -> rmoc::solve::Results {
    holding_with(series, false)
}

/// As [`holding`], with `hertzFromLoad` (eq. 8 at the contact's load).
fn holding_with(series: bool, hertz_from_load: bool) -> rmoc::solve::Results {
    let src = r#"
model Holding
  constant Real pi = 3.141592653589793;
  parameter Real m = 0.002;
  Mechanics.Planar.Fixed ring(phi = pi/40);
  Mechanics.Planar.Fixed centre(r = {m*(40 - 20)/2, 0});
  Mechanics.Planar.Revolute bearing;
  Mechanics.Planar.Body pinion(m = 0.1, J = 1e-4, phi(start = 0, fixed = true), w(start = 0, fixed = true));
  parameter Boolean series = false;
  parameter Boolean fromLoad = false;
  Contact.FewTeeth mesh(z0 = 20, z1 = 40, m = m, internal1 = true, k = 2e9, dc = 50,
    series = series, width = 0.01, kHertz = 2e9, hertzFromLoad = fromLoad);
  Mechanics.Rotational.ConstantTorque drive(tau_constant = 5);
  Mechanics.Rotational.LinearSpeedDependentTorque loss(d = 0.05);
  Real theta = bearing.phi;
equation
  connect(centre.frame, bearing.frame_a);
  connect(bearing.frame_b, pinion.frame);
  connect(drive.flange, bearing.axis);
  connect(loss.flange, bearing.axis);
  connect(pinion.frame, mesh.frame_a);
  connect(ring.frame, mesh.frame_b);
  annotation(experiment(StopTime = 0.1, Interval = 1e-3, __rmoc_solver = "generalized-alpha", __rmoc_step = 2e-5));
end Holding;
"#;
    common::simulate(
        src,
        Some("Holding"),
        &Run {
            experiment_solver: true,
            params: vec![
                ("series", if series { 1.0 } else { 0.0 }),
                ("fromLoad", if hertz_from_load { 1.0 } else { 0.0 }),
            ],
            ..Run::default()
        },
    )
}

/// `Gears.toothCompliance` (the series model, eqs. 5-7) against the NumPy
/// implementation of examples/gear_whine/tvms.py (computed there: module
/// 3 mm, 50 teeth, 20 degrees, 20 mm face width, at the middle of the
/// flank, the pitch circle and the tip of that example's addendum).
#[test]
fn tooth_compliance_matches_the_numpy_series_model() {
    let src = r#"
model Compliance
  constant Real pi = 3.141592653589793;
  Real c1 = Gears.toothCompliance(0.07462056757515641, 50, 3e-3, 20*pi/180, 0.020);
  Real c2 = Gears.toothCompliance(0.075, 50, 3e-3, 20*pi/180, 0.020);
  Real c3 = Gears.toothCompliance(0.07799113515031282, 50, 3e-3, 20*pi/180, 0.020);
end Compliance;
"#;
    let r = at_start(src, "Compliance");
    for (name, want) in [
        ("c1", 1.3963862750677563e-09),
        ("c2", 1.5936060688980626e-09),
        ("c3", 4.267348781062932e-09),
    ] {
        let got = last(&r, name);
        assert!((got - want).abs() < 1e-12 * want, "{name}: {got} vs {want}");
    }
}

/// One tooth pair through the mesh (`onlyTooth0 = 0`), the gears turning
/// together, gear 1 turned back by 1e-10 rad so that one flank pair is in
/// contact: the tooth touches over the path of contact, a turn of
/// 2 pi / z0 times the textbook contact ratio
/// (sqrt(ra0^2 - rb0^2) + sqrt(ra1^2 - rb1^2) - a sin(alpha)) / pb, pb
/// the base pitch, and nowhere else; within it the gap is the rb1 delta of
/// the turn.
#[test]
fn one_tooth_pair_is_in_contact_over_the_textbook_contact_ratio() {
    let src = r#"
model ContactRatio
  constant Real pi = 3.141592653589793;
  parameter Integer z0 = 20;
  parameter Integer z1 = 30;
  parameter Real m = 0.002;
  Real phi0 = -0.6 + 1.2*time "gear 0's turn through the mesh";
  Real g;
  Real nx;
  Real ny;
  Real qx;
  Real qy;
equation
  (g, nx, ny, qx, qy) = Contact.fewTeethContact(z0, z1, m, 20*pi/180, 0, 0, false, false, 1, 0.25,
    0, 0, phi0, m*(z0 + z1)/2, 0, pi/z1 - phi0*z0/z1 + 1e-10, onlyTooth0 = 0);
end ContactRatio;
"#;
    let r = common::simulate(
        src,
        Some("ContactRatio"),
        &Run {
            stop: Some(1.0),
            interval: Some(1e-4),
            ..Run::default()
        },
    );
    let (phi, g) = (common::column(&r, "phi0"), common::column(&r, "g"));
    let touching: Vec<usize> = (0..g.len()).filter(|&k| g[k] < 0.0).collect();
    let (first, last_) = (touching[0], touching[touching.len() - 1]);
    assert_eq!(
        touching.len(),
        last_ - first + 1,
        "the contact is one interval"
    );
    let (z0, z1) = (20.0, 30.0);
    let (r0, r1) = (M * z0 / 2.0, M * z1 / 2.0);
    let (rb0, rb1) = (r0 * ALPHA.cos(), r1 * ALPHA.cos());
    let (ra0, ra1) = (r0 + M, r1 + M);
    let pb = PI * M * ALPHA.cos();
    let ratio = ((ra0 * ra0 - rb0 * rb0).sqrt() + (ra1 * ra1 - rb1 * rb1).sqrt()
        - (r0 + r1) * ALPHA.sin())
        / pb;
    let measured = (phi[last_] - phi[first]) * z0 / (2.0 * PI);
    // The turn is sampled every 1.2e-4 rad: the ratio to 4e-4.
    assert!(
        (measured - ratio).abs() < 4e-4,
        "contact ratio {measured} vs {ratio}"
    );
    let middle = (first + last_) / 2;
    assert!(
        (g[middle] + rb1 * 1e-10).abs() < 1e-15,
        "gap {} in the middle",
        g[middle]
    );
}

/// `examples/few_teeth.rmo` (a 36-tooth pinion in a 40-tooth ring, the
/// centres 10 um close, driven through the torque sequence; here with
/// stages of 0.05 s and a 50 us step): the loop's backlash is the pair's
/// free play in closed form, 2 e cos(alpha)(inv alpha - inv alpha') / rb0,
/// and both branches are equally stiff.
#[test]
fn the_few_teeth_example_loop_has_the_closed_form_backlash() {
    let request = rmoc::solve::settings::RunRequest {
        stop_time: Some(0.25),
        interval: Some(1e-4),
        step: Some(5e-5),
        params: vec!["tseg=0.05".into()],
        ..Default::default()
    };
    let r = common::run_request(&common::project("examples/few_teeth.rmo"), None, request);
    let to_arcmin = 180.0 * 60.0 / PI;
    let angle: Vec<f64> = common::column(&r, "theta")
        .iter()
        .map(|a| a * to_arcmin)
        .collect();
    let ind = rmoc::output::hysteresis::indicators(&common::column(&r, "T"), &angle, 100.0)
        .expect("a loop");
    let m = 1.5e-3;
    let e = m * 4.0 / 2.0;
    let working = (e * ALPHA.cos() / (e - 10e-6)).acos();
    let gap = e * ALPHA.cos() * (inv(ALPHA) - inv(working));
    let rb0 = m * 36.0 / 2.0 * ALPHA.cos();
    let play = 2.0 * gap / rb0 * to_arcmin;
    assert!(
        (ind.backlash - play).abs() < 1e-3 * play,
        "backlash {} arcmin vs {play}",
        ind.backlash
    );
    let (kp, kn) = (ind.stiffness_positive, ind.stiffness_negative);
    assert!((kp - kn).abs() < 1e-3 * kp, "branches {kp} and {kn}");
}

/// Eq. 8 of seed 000, written here from the paper: the approach of two
/// steel cylinders in line contact under force `f` over `width`, with
/// equivalent radius `rho`.
fn hertz_approach(f: f64, rho: f64, width: f64) -> f64 {
    let e_star = 206e9 / (2.0 * (1.0 - 0.3f64 * 0.3));
    let p = f / width;
    let b = (4.0 * p * rho / (PI * e_star)).sqrt();
    2.0 * p / (PI * e_star) * ((2.0 * rho / b).ln() + 0.407)
}

/// `Gears.hertzLineApproach` is eq. 8, and `Gears.loadedMeshStiffness`
/// solves eq. 22 with it at the load it carries: k = 1/(cs + delta_H(f)/f)
/// with f = k pen^(10/9), to rounding; zero when apart; and it stiffens
/// with the load (the Hertzian secant stiffness grows as the contact widens).
#[test]
fn the_hertzian_stiffness_follows_the_load() {
    let src = r#"
model Hertz
  Real d1 = Gears.hertzLineApproach(500, 0.004, 0.01);
  Real d2 = Gears.hertzLineApproach(20000, 0.03, 0.02);
  Real k1 = Gears.loadedMeshStiffness(2e-6, 1.5e-9, 0.004, 0.01);
  Real k2 = Gears.loadedMeshStiffness(8e-6, 1.5e-9, 0.004, 0.01);
  Real k0 = Gears.loadedMeshStiffness(-1e-6, 1.5e-9, 0.004, 0.01);
  Real k00 = Gears.loadedMeshStiffness(1e-300, 1.5e-9, 0.004, 0.01);
  Real d3 = Gears.hertzLineApproach(1000, 0.01, 0.02);
  Real convex = Contact.flankCurvature(0.021, 0.018, false, 0.04, 0.035, false);
  Real concave = Contact.flankCurvature(0.021, 0.018, false, 0.04, 0.035, true);
  Real atBase = Contact.flankCurvature(0.018, 0.018, false, 0.04, 0.035, false);
end Hertz;
"#;
    let r = at_start(src, "Hertz");
    for (name, want) in [
        ("d1", hertz_approach(500.0, 0.004, 0.01)),
        ("d2", hertz_approach(20000.0, 0.03, 0.02)),
    ] {
        let got = last(&r, name);
        assert!((got - want).abs() < 1e-12 * want, "{name}: {got} vs {want}");
    }
    // By hand: E* = 206e9/(2 (1 - 0.3^2)) = 1.131868e11 Pa, p = 5e4 N/m,
    // b = sqrt(4 p rho/(pi E*)) = 7.49967e-5 m, ln(2 rho/b) + 0.407 =
    // 5.993043, 2 p/(pi E*) = 2.812262e-7 m: 1.685395e-6 m.
    let d3 = last(&r, "d3");
    assert!((d3 - 1.685395e-6).abs() < 1e-6 * d3, "d3 {d3}");
    assert_eq!(last(&r, "k0"), 0.0);
    // A penetration whose power underflows carries nothing (not NaN).
    assert_eq!(last(&r, "k00"), 0.0);
    // Involute flanks: sqrt(r^2 - rb^2) each; a ring's (internal) concave.
    let (rho0, rho1) = (
        (0.021f64.powi(2) - 0.018f64.powi(2)).sqrt(),
        (0.04f64.powi(2) - 0.035f64.powi(2)).sqrt(),
    );
    for (name, want) in [
        ("convex", rho0 * rho1 / (rho0 + rho1)),
        ("concave", rho0 * rho1 / (rho1 - rho0)),
        ("atBase", 0.0),
    ] {
        let got = last(&r, name);
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "{name}: {got} vs {want}"
        );
    }
    for (name, pen) in [("k1", 2e-6f64), ("k2", 8e-6)] {
        let k = last(&r, name);
        let f = k * pen.powf(10.0 / 9.0);
        let want = 1.0 / (1.5e-9 + hertz_approach(f, 0.004, 0.01) / f);
        assert!(
            (k - want).abs() < 1e-12 * want,
            "{name}: {k} vs {want} at {f} N"
        );
    }
    assert!(last(&r, "k2") > last(&r, "k1"), "stiffer under more load");
}

/// With `hertzFromLoad` the pinion held in its ring carries the torque at
/// the penetration where eq. 22 with eq. 8 at that load balances it: the
/// pinion tooth's compliance at the contact's radius, the flanks' curvature
/// there (a 20-tooth pinion in a 40-tooth ring, the ring's flank concave),
/// and the Hertzian approach under the contact's force, all recomputed here.
#[test]
fn a_mesh_with_the_hertzian_stiffness_from_the_load_holds_its_torque() {
    let r = holding_with(true, true);
    let (force, g, k) = held(&r);
    let rb0 = M * 20.0 / 2.0 * ALPHA.cos();
    let rb1 = M * 40.0 / 2.0 * ALPHA.cos();
    let (px, py) = (last(&r, "mesh.pc[1]"), last(&r, "mesh.pc[2]"));
    // The pinion's centre is at (m (40 - 20)/2, 0), the ring's at the origin.
    let r0 = (px - M * 10.0).hypot(py);
    let r1 = px.hypot(py);
    let (rho0, rho1) = ((r0 * r0 - rb0 * rb0).sqrt(), (r1 * r1 - rb1 * rb1).sqrt());
    let rho = rho0 * rho1 / (rho1 - rho0);
    assert!(
        (last(&r, "mesh.rho") - rho).abs() < 1e-9 * rho,
        "rho {} vs {rho}",
        last(&r, "mesh.rho")
    );
    let c = pinion_tooth_compliance(r0);
    // The compliance comes from a table over 64 radii of the flank.
    let want = 1.0 / (c + hertz_approach(force, rho, 0.01) / force);
    assert!((k - want).abs() < 1e-4 * want, "kmesh {k} vs {want}");
    let depth = (force / k).powf(0.9);
    assert!((g + depth).abs() < 1e-6 * depth, "gap {g} vs {}", -depth);
}
