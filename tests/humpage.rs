//! Humpage's reduction gear (`examples/humpage.rmo`): the SD/FAST
//! application note's three exercises (seed 002, section 5), a second
//! geometry checked against the note's velocity equations (EQ 1) solved
//! here, and a dynamic run checked against its energy balance and the closed
//! form of a first-order system.

mod common;

use common::{Run, assert_close, last};
use rmoc::solve::Results;

fn source() -> String {
    std::fs::read_to_string(common::project("examples/humpage.rmo")).expect("examples/humpage.rmo")
}

/// Runs `model` of the example (plus `extra` source) to `stop`.
fn run(model: &str, extra: &str, stop: f64) -> Results {
    let src = format!("{}\n{extra}", source());
    let c = common::compile(&src, Some(model));
    common::simulate_compiled(
        &c,
        &Run {
            stop: Some(stop),
            ..Run::default()
        },
    )
}

/// The note's geometry from the radii, as the example defines it: P1 on the
/// ring at x = 0, the planet's hinge at height h with P1 and P3 opposite on
/// its large wheel, P2 where its small wheel meets B.
struct Geometry {
    r_a: f64,
    r_b: f64,
    r_e: f64,
    x_b: f64,
    x_d: f64,
    x_e: f64,
    h: f64,
    axis_d: [f64; 3],
}

impl Geometry {
    fn new(r_a: f64, r_b: f64, h: f64, r_d1: f64, r_d2: f64) -> Geometry {
        let x_d = (r_d1 * r_d1 - (r_a - h) * (r_a - h)).sqrt();
        let axis_d = [(r_a - h) / r_d1, x_d / r_d1, 0.0];
        Geometry {
            r_a,
            r_b,
            r_e: 2.0 * h - r_a,
            x_b: x_d - (r_d2 - axis_d[0] * (r_b - h)) / axis_d[1],
            x_d,
            x_e: 2.0 * x_d,
            h,
            axis_d,
        }
    }

    /// Speeds (F, D relative to F, E) for B = 1 from EQ 1 at the three
    /// contacts: the material points of both gears under P have equal
    /// velocities along the normal z. B, E and F turn about x; D turns about
    /// its axis through (x_d, h, 0) and is carried by F.
    fn speeds(&self) -> [f64; 3] {
        let cross = |a: [f64; 3], b: [f64; 3]| {
            [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]
        };
        let x = [1.0, 0.0, 0.0];
        let centre_d = [self.x_d, self.h, 0.0];
        // z-velocity of a point p: about x at unit rate, and D about its axis at unit rate.
        let about_x = |p: [f64; 3]| cross(x, p)[2];
        let about_d = |p: [f64; 3]| {
            let r = [p[0] - centre_d[0], p[1] - centre_d[1], p[2] - centre_d[2]];
            cross(self.axis_d, r)[2]
        };
        let p1 = [0.0, self.r_a, 0.0];
        let p2 = [self.x_b, self.r_b, 0.0];
        let p3 = [self.x_e, self.r_e, 0.0];
        // Unknowns u = (wF, wD, wE); rows: A-D, B-D, E-D with wB = 1.
        //   0              = wF*about_x(p1) + wD*about_d(p1)
        //   1*about_x(p2)  = wF*about_x(p2) + wD*about_d(p2)
        //   wE*about_x(p3) = wF*about_x(p3) + wD*about_d(p3)
        let m = [
            [about_x(p1), about_d(p1), 0.0],
            [about_x(p2), about_d(p2), 0.0],
            [about_x(p3), about_d(p3), -about_x(p3)],
        ];
        let rhs = [0.0, about_x(p2), 0.0];
        solve3(m, rhs)
    }
}

/// Cramer's rule for a 3x3 system.
fn solve3(m: [[f64; 3]; 3], b: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(m);
    let mut x = [0.0; 3];
    for (k, xk) in x.iter_mut().enumerate() {
        let mut mk = m;
        for i in 0..3 {
            mk[i][k] = b[i];
        }
        *xk = det(mk) / d;
    }
    x
}

#[test]
fn the_note_geometry_gives_its_coordinates_and_ratios() {
    // TABLE 1 and FIGURE 2 of the note (rounded there to 1e-6 and 1e-14).
    let g = Geometry::new(60.0, 30.0, 40.0, 61.0, 30.0);
    assert!((g.x_b - 22.402258).abs() < 1e-6);
    assert!((g.x_d - 57.628117).abs() < 2e-6);
    assert!((g.x_e - 115.256236).abs() < 1e-6);
    assert!((g.axis_d[0] - 0.32786885245902).abs() < 1e-13);
    assert!((g.axis_d[1] - 0.94472324814583).abs() < 1e-13);
    assert!((g.axis_d[1].atan2(g.axis_d[0]).to_degrees() - 70.86053).abs() < 1e-5);
    let [w_f, w_d, w_e] = g.speeds();
    assert_close(w_f, 61.0, 1e-13, 0.0);
    assert_close(w_d, -60.0, 1e-13, 0.0);
    assert_close(w_e, 244.0, 1e-13, 0.0);
}

/// Exercise 1: B = 1 rad/s; the note prints F 60.99999017, E 243.99996162,
/// D -59.99999048 from its rounded data and a 1e-10 root finder.
#[test]
fn velocity_analysis_gives_the_exact_ratios() {
    let r = run("VelocityAnalysis", "", 0.0);
    assert_close(last(&r, "jointB.w"), 1.0, 1e-12, 0.0);
    assert_close(last(&r, "jointF.w"), 61.0, 1e-9, 0.0);
    assert_close(last(&r, "jointE.w"), 244.0, 1e-9, 0.0);
    assert_close(last(&r, "jointD.w"), -60.0, 1e-9, 0.0);
}

/// Exercise 2: unit torque on B, -1/244 on E, at the velocity analysis' state.
#[test]
fn static_test_has_no_joint_acceleration() {
    let r = run("StaticTest", "", 0.0);
    for j in ["jointB", "jointE", "jointF", "jointD"] {
        let a = last(&r, &format!("{j}.a"));
        assert!(a.abs() < 1e-10, "{j}.a = {a:e}");
    }
}

/// Exercise 3: the tooth forces times the contact velocities. The note
/// prints B_D 30.000000, 0.333333E-01, 1.000000 and E_D 4879.99923,
/// 0.20492E-03, 1.000000.
#[test]
fn power_flows_from_b_through_d_to_e() {
    let r = run("PowerFlow", "", 0.0);
    assert_close(last(&r, "meshBD.v_n"), 30.0, 1e-12, 0.0);
    assert_close(-last(&r, "meshBD.lambda"), 1.0 / 30.0, 1e-12, 0.0);
    assert_close(last(&r, "meshED.v_n"), 4880.0, 1e-12, 0.0);
    assert_close(last(&r, "meshED.lambda"), 1.0 / 4880.0, 1e-12, 0.0);
    let (p_bd, p_ed) = (last(&r, "powerBD"), last(&r, "powerED"));
    assert_close(p_bd, 1.0, 1e-12, 0.0);
    assert_close(p_ed, 1.0, 1e-12, 0.0);
    assert!(
        (p_bd - p_ed).abs() < 1e-9,
        "power lost in D: {:e}",
        p_bd - p_ed
    );
    // No power goes into the housing: its contact point does not move.
    assert!(last(&r, "meshAD.v_n").abs() < 1e-12);
}

#[test]
fn a_second_geometry_gives_the_ratios_of_the_velocity_equations() {
    let (r_d1, r_d2, h) = (50.0, 20.0, 45.0);
    let model = format!(
        "model SecondGeometry\n  extends VelocityAnalysis(rD1 = {r_d1}, rD2 = {r_d2}, h = {h});\nend SecondGeometry;\n"
    );
    let r = run("SecondGeometry", &model, 0.0);
    let [w_f, w_d, w_e] = Geometry::new(60.0, 30.0, h, r_d1, r_d2).speeds();
    // Not the note's 61/244: make sure the test exercises a new geometry.
    assert!((w_e - 244.0).abs() > 1.0, "w_e = {w_e}");
    assert_close(last(&r, "jointF.w"), w_f, 1e-9, 0.0);
    assert_close(last(&r, "jointD.w"), w_d, 1e-9, 0.0);
    assert_close(last(&r, "jointE.w"), w_e, 1e-9, 0.0);
}

/// Unit torque on B, viscous load d on E, from rest. The reflected inertia
/// at B is constant (every body has an isotropic inertia, and D's centre
/// circles at a fixed radius), so w_B(t) = tau/c (1 - exp(-c t/J)) with
/// c = d wE^2 and J the kinetic energy at w_B = 1 times 2. The energy
/// balance must hold to the solver tolerance (1e-8).
#[test]
fn dynamic_run_balances_energy_and_follows_the_first_order_response() {
    let r = run("Dynamic", "", 1.0);
    let input = last(&r, "energyInput");
    let error = last(&r, "energyError");
    assert!(input > 0.0);
    assert!(
        error.abs() <= 10.0 * 1e-8 * input,
        "energy error {error:e} of input {input:e}"
    );
    let g = Geometry::new(60.0, 30.0, 40.0, 61.0, 30.0);
    let [w_f, w_d, w_e] = g.speeds();
    // Twice the kinetic energy at w_B = 1 (unit masses and inertias):
    // B, E, F spin about x; D spins at w_F x + w_D axis and its centre moves
    // at w_F h.
    let omega_d = [w_f + w_d * g.axis_d[0], w_d * g.axis_d[1], 0.0];
    let j = 1.0
        + w_e * w_e
        + w_f * w_f
        + (w_f * g.h).powi(2)
        + omega_d.iter().map(|x| x * x).sum::<f64>();
    let (tau, d) = (1.0, 100.0);
    let c = d * w_e * w_e;
    for t in [0.1, 0.5, 1.0] {
        let want = tau / c * (1.0 - (-c * t / j).exp());
        assert_close(common::value_at(&r, "jointB.w", t), want, 1e-6, 0.0);
    }
}

/// The documented way to get a consistent initial state without a time
/// simulation.
#[test]
fn stop_time_zero_prints_the_velocity_analysis() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args([
            "simulate",
            "examples/humpage.rmo",
            "--model",
            "VelocityAnalysis",
            "--stop-time",
            "0",
            "--print",
            "joint*.w",
            "-o",
        ])
        .arg(std::env::temp_dir().join("rmoc_humpage_velocity.csv"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rmoc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}
