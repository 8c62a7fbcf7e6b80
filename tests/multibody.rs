//! `Mechanics.MultiBody` against closed forms, an independent integration
//! and the conservation laws of free rigid-body motion.

mod common;

use common::{Run, assert_close, last, value_at};

fn run(src: &str) -> rmoc::solve::Results {
    common::simulate(src, None, &Run::default())
}

/// A physical pendulum on a pin about z under gravity -y:
/// (Izz + m L^2) phi'' = -m g L cos(phi), integrated here by classical RK4.
#[test]
fn physical_pendulum_matches_an_independent_integration() {
    let r = run(r#"
model Pendulum
  import MB = Mechanics.MultiBody;
  MB.Fixed ground(r = {1, 2, 3});
  MB.Revolute pin(n = {0, 0, 1}, phi(start = 0.3, fixed = true), w(start = 0, fixed = true));
  MB.Body rod(m = 2, r_CM = {0.5, 0, 0}, I = {{0.1, 0, 0}, {0, 0.2, 0}, {0, 0, 0.3}}, g = {0, -9.81, 0});
equation
  connect(ground.frame_b, pin.frame_a);
  connect(pin.frame_b, rod.frame_a);
  annotation(experiment(StopTime = 2, Tolerance = 1e-10));
end Pendulum;
"#);
    let (m, l, g, izz) = (2.0, 0.5, 9.81, 0.3);
    let accel = |phi: f64| -m * g * l * phi.cos() / (izz + m * l * l);
    let (mut phi, mut w, h) = (0.3f64, 0.0f64, 1e-5);
    let mut steps_done = 0u32;
    for check in [0.5f64, 1.0, 2.0] {
        // Count steps (not accumulated time) so that no extra step is taken.
        let steps = (check / h).round() as u32;
        while steps_done < steps {
            steps_done += 1;
            let (k1p, k1w) = (w, accel(phi));
            let (k2p, k2w) = (w + h / 2.0 * k1w, accel(phi + h / 2.0 * k1p));
            let (k3p, k3w) = (w + h / 2.0 * k2w, accel(phi + h / 2.0 * k2p));
            let (k4p, k4w) = (w + h * k3w, accel(phi + h * k3p));
            phi += h / 6.0 * (k1p + 2.0 * k2p + 2.0 * k3p + k4p);
            w += h / 6.0 * (k1w + 2.0 * k2w + 2.0 * k3w + k4w);
        }
        assert_close(value_at(&r, "pin.phi", check), phi, 1e-7, 1e-8);
        assert_close(value_at(&r, "pin.w", check), w, 1e-7, 1e-8);
        // The centre of mass, in the world (the ground frame sits at {1, 2, 3}).
        assert_close(
            value_at(&r, "rod.r_0[1]", check),
            1.0 + l * phi.cos(),
            1e-7,
            1e-8,
        );
        assert_close(
            value_at(&r, "rod.r_0[2]", check),
            2.0 + l * phi.sin(),
            1e-7,
            1e-8,
        );
        assert_close(value_at(&r, "rod.r_0[3]", check), 3.0, 0.0, 1e-12);
    }
}

/// A point fixed in a body spinning at constant speed about a tilted axis:
/// position, velocity and centripetal acceleration in closed form.
#[test]
fn point_kinematics_on_a_spinning_body() {
    let r = run(r#"
model Spin
  import MB = Mechanics.MultiBody;
  MB.Fixed ground;
  MB.Revolute pin(n = {0, 1, 1}, phi(start = 0, fixed = true), w(start = 2, fixed = true));
  MB.Body disc(m = 1, I = identity(3));
  MB.PointKinematics point(r = {1, 0, 0});
  MB.AngularVelocitySensor sensor;
equation
  connect(ground.frame_b, pin.frame_a);
  connect(pin.frame_b, disc.frame_a);
  connect(pin.frame_b, point.frame_a);
  connect(pin.frame_b, sensor.frame_a);
  annotation(experiment(StopTime = 1, Tolerance = 1e-10));
end Spin;
"#);
    // e = (0, 1, 1)/sqrt 2; p = (1, 0, 0) is perpendicular to e. Rotating p
    // about e by 2t: p cos + (e x p) sin, with e x p = (0, 1, -1)/sqrt 2.
    let s = std::f64::consts::FRAC_1_SQRT_2;
    for t in [0.25f64, 1.0] {
        let (c, sn) = ((2.0 * t).cos(), (2.0 * t).sin());
        let pos = [c, s * sn, -s * sn];
        let vel = [-2.0 * sn, 2.0 * s * c, -2.0 * s * c];
        for k in 0..3 {
            assert_close(
                value_at(&r, &format!("point.r_0[{}]", k + 1), t),
                pos[k],
                1e-7,
                1e-8,
            );
            assert_close(
                value_at(&r, &format!("point.v_0[{}]", k + 1), t),
                vel[k],
                1e-7,
                1e-8,
            );
            assert_close(
                value_at(&r, &format!("point.a_0[{}]", k + 1), t),
                -4.0 * pos[k],
                1e-6,
                1e-7,
            );
        }
    }
    // Angular velocity: 2 e in the world, and (since e is the joint axis) 2 e in the body.
    for (k, e) in [0.0, s, s].iter().enumerate() {
        assert_close(
            last(&r, &format!("sensor.w_0[{}]", k + 1)),
            2.0 * e,
            1e-9,
            1e-10,
        );
        assert_close(
            last(&r, &format!("sensor.w[{}]", k + 1)),
            2.0 * e,
            1e-9,
            1e-10,
        );
    }
}

/// Two pins in series (z, then x at an offset) carry a body with an
/// unsymmetric inertia tensor and an offset centre of mass. Without gravity
/// or joint torques the kinetic energy and the angular momentum about the
/// world z axis (the first pin) are conserved, while the speeds exchange.
#[test]
fn a_free_gimbal_conserves_energy_and_angular_momentum() {
    let r = run(r#"
model Gimbal
  import MB = Mechanics.MultiBody;
  MB.Fixed ground;
  MB.Revolute yaw(n = {0, 0, 1}, phi(fixed = true), w(start = 1, fixed = true));
  MB.FixedTranslation arm(r = {0.3, 0, 0});
  MB.Revolute roll(n = {1, 0, 0}, phi(start = 0.2, fixed = true), w(start = 2, fixed = true));
  MB.Body body(m = 2, r_CM = {0, 0.2, 0.1}, I = {{1, 0.1, 0}, {0.1, 2, 0}, {0, 0, 3}});
  Real spin0[3] = transpose(body.frame_a.R)*(body.I*body.w_a) "spin angular momentum, in the world";
  Real Lz "angular momentum about the world z axis through the origin";
equation
  connect(ground.frame_b, yaw.frame_a);
  connect(yaw.frame_b, arm.frame_a);
  connect(arm.frame_b, roll.frame_a);
  connect(roll.frame_b, body.frame_a);
  Lz = spin0[3] + body.m*(body.r_0[1]*body.v_0[2] - body.r_0[2]*body.v_0[1]);
  annotation(experiment(StopTime = 3, Tolerance = 1e-9));
end Gimbal;
"#);
    let col = |n: &str| {
        let k = r.column(n).expect("column");
        r.rows.iter().map(move |row| row[k]).collect::<Vec<_>>()
    };
    for name in ["body.kineticEnergy", "Lz"] {
        let v = col(name);
        let drift = v.iter().map(|x| (x - v[0]).abs()).fold(0.0, f64::max);
        assert!(
            drift <= 1e-6 * v[0].abs(),
            "{name} drifts by {drift:e} of {}",
            v[0]
        );
    }
    // The motion is not trivial: the yaw speed changes by several percent.
    let yaw = col("yaw.w");
    let spread =
        yaw.iter().cloned().fold(f64::MIN, f64::max) - yaw.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 0.03, "yaw speed spread {spread}");
}

/// Orientation is not minimal: a closed loop of frames is over-determined,
/// and rmoc says so instead of producing a wrong answer.
#[test]
fn a_closed_loop_of_frames_is_rejected() {
    let out = common::check(
        r#"
model Loop
  import MB = Mechanics.MultiBody;
  MB.Fixed ground;
  MB.Revolute j(n = {0, 0, 1});
  MB.Body body;
equation
  connect(ground.frame_b, j.frame_a);
  connect(j.frame_b, body.frame_a);
  connect(ground.frame_b, body.frame_a);
end Loop;
"#,
    );
    assert!(out.contains("over-determined"), "{out}");
}
