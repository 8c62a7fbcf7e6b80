//! The explicit contact primitives of seed 000 (Miao et al. 2026) in
//! `stdlib/Contact`: each against a closed form computed here from the
//! same prescribed motion, and a penalty impact that conserves energy.

mod common;

use common::Run;

/// Two bodies on prescribed motions (every quantity a closed form in t),
/// their circles in contact through Contact.CircleCircle with friction.
fn kinematics_model(r1: f64, y_b: f64) -> String {
    format!(
        r#"
model Prescribed "a planar frame on a closed-form motion"
  parameter Real x0;
  parameter Real y0;
  parameter Real ax;
  parameter Real ay;
  parameter Real w;
  parameter Real phi0;
  parameter Real omega;
  Mechanics.Planar.Frame frame;
equation
  frame.x = x0 + ax*sin(w*time);
  frame.y = y0 + ay*cos(w*time);
  frame.phi = phi0 + omega*time;
end Prescribed;

model Kinematics
  Prescribed a(x0 = 0, y0 = 0, ax = 0.002, ay = 0.001, w = 3, phi0 = 0.2, omega = 1.5);
  Prescribed b(x0 = 0.001, y0 = {y_b}, ax = -0.001, ay = 0.002, w = 5, phi0 = -0.4, omega = -2);
  Contact.CircleCircle contact(r0 = 0.01, r1 = {r1}, c0 = {{0.002, 0.001}}, c1 = {{-0.001, 0.003}},
    k = 1e9, dc = 50, mu = 0.2, vreg = 1e-3);
equation
  connect(a.frame, contact.frame_a);
  connect(b.frame, contact.frame_b);
  annotation(experiment(StopTime = 2, Interval = 0.01));
end Kinematics;
"#
    )
}

/// (x, y, phi, vx, vy, w) of a prescribed frame at t.
#[allow(clippy::too_many_arguments)]
fn motion(t: f64, x0: f64, y0: f64, ax: f64, ay: f64, w: f64, phi0: f64, om: f64) -> [f64; 6] {
    [
        x0 + ax * (w * t).sin(),
        y0 + ay * (w * t).cos(),
        phi0 + om * t,
        ax * w * (w * t).cos(),
        -ay * w * (w * t).sin(),
        om,
    ]
}

/// The circle's centre and its velocity, from the frame's motion and the
/// centre's offset in the frame's axes.
fn centre(m: [f64; 6], c: [f64; 2]) -> ([f64; 2], [f64; 2]) {
    let (s, co) = m[2].sin_cos();
    let r = [co * c[0] - s * c[1], s * c[0] + co * c[1]];
    (
        [m[0] + r[0], m[1] + r[1]],
        [m[3] - m[5] * r[1], m[4] + m[5] * r[0]],
    )
}

/// What the contact should report at t: (g, dg, vt, pc, fn), restated from
/// the paper's Appendix A.1 with the sign conventions of the component.
fn closed_form(t: f64, r1: f64, y_b: f64) -> (f64, f64, f64, [f64; 2], f64) {
    let ma = motion(t, 0.0, 0.0, 0.002, 0.001, 3.0, 0.2, 1.5);
    let mb = motion(t, 0.001, y_b, -0.001, 0.002, 5.0, -0.4, -2.0);
    let (p0, v0) = centre(ma, [0.002, 0.001]);
    let (p1, v1) = centre(mb, [-0.001, 0.003]);
    let r0 = 0.01;
    let e = [p1[0] - p0[0], p1[1] - p0[1]];
    let d = e[0].hypot(e[1]);
    let u = [e[0] / d, e[1] / d];
    // Convex: the gap is the distance less both radii, and it opens as the
    // centres part; in a bore the gap is what is left of |r1| - r0, and it
    // closes as they part.
    let (g, dg) = if r1 > 0.0 {
        (
            d - (r0 + r1),
            u[0] * (v1[0] - v0[0]) + u[1] * (v1[1] - v0[1]),
        )
    } else {
        (
            -r1 - (d + r0),
            -(u[0] * (v1[0] - v0[0]) + u[1] * (v1[1] - v0[1])),
        )
    };
    let n = if r1 > 0.0 { [-u[0], -u[1]] } else { u };
    let pc = [p0[0] - (r0 + g / 2.0) * n[0], p0[1] - (r0 + g / 2.0) * n[1]];
    // Material points of each body at pc: the centre's velocity plus the
    // rotation about the centre.
    let at =
        |v: [f64; 2], p: [f64; 2], w: f64| [v[0] - w * (pc[1] - p[1]), v[1] + w * (pc[0] - p[0])];
    let va = at(v0, p0, ma[5]);
    let vb = at(v1, p1, mb[5]);
    let tan = [-n[1], n[0]];
    let vt = (vb[0] - va[0]) * tan[0] + (vb[1] - va[1]) * tan[1];
    let fn_ = if g < 0.0 {
        1e9 * (-g).powf(10.0 / 9.0) + 50.0 * (-dg).max(0.0)
    } else {
        0.0
    };
    (g, dg, vt, pc, fn_)
}

fn check_kinematics(r1: f64, y_b: f64) {
    let r = common::simulate(
        &kinematics_model(r1, y_b),
        Some("Kinematics"),
        &Run::default(),
    );
    let mut touching = 0;
    for (i, &t) in r.times.iter().enumerate() {
        let (g, dg, vt, pc, fn_) = closed_form(t, r1, y_b);
        let at = |name: &str| r.rows[i][r.column(name).expect(name)];
        common::assert_close(at("contact.g"), g, 0.0, 1e-13);
        common::assert_close(at("contact.dg"), dg, 0.0, 1e-12);
        common::assert_close(at("contact.vt"), vt, 0.0, 1e-12);
        common::assert_close(at("contact.pc[1]"), pc[0], 0.0, 1e-13);
        common::assert_close(at("contact.pc[2]"), pc[1], 0.0, 1e-13);
        common::assert_close(at("contact.fn"), fn_, 1e-9, 1e-9);
        // Friction opposes sliding, and never exceeds mu fn.
        let ft = at("contact.ft");
        assert!(ft * vt <= 0.0 && ft.abs() <= 0.2 * fn_ * (1.0 + 1e-12));
        touching += usize::from(g < 0.0);
    }
    // The motions make the circles touch part of the time, and part not.
    assert!(
        touching > 10 && touching + 10 < r.times.len(),
        "{touching} of {} rows in contact",
        r.times.len()
    );
}

/// Eqs. 30-33 outside each other (r1 > 0): gap, normal and tangential
/// velocity, contact point and the penalty force, at every output row.
#[test]
fn circle_circle_convex_matches_the_closed_form() {
    // The centres sit 0.0215 to 0.0288 apart (r0 + r1 = 0.025): the gap swings around zero.
    check_kinematics(0.015, 0.026);
}

/// The same inside a bore (r1 < 0).
#[test]
fn circle_circle_in_a_bore_matches_the_closed_form() {
    check_kinematics(-0.0135, 0.0);
}

/// A disc thrown at a wall (a fixed circle of radius 100 m) with no
/// damping and no friction: the penalty impact is elastic, so the energy
/// (kinetic plus the penalty's k (-g)^(19/9)/(19/9)) stays what it was at
/// every output row, to 1e-6, and the disc leaves at its arrival speed.
#[test]
fn a_penalty_impact_without_damping_conserves_energy() {
    let src = r#"
model DiscOnWall
  parameter Real k = 1e7;
  Mechanics.Planar.Body disc(m = 2, J = 1e-3, x(start = 0, fixed = true), y(start = 0, fixed = true),
    phi(start = 0, fixed = true), vx(start = 1.5, fixed = true), vy(start = 0, fixed = true), w(start = 3, fixed = true));
  Mechanics.Planar.Fixed wall(r = {100.02, 0});
  Contact.CircleCircle contact(r0 = 0.01, r1 = 100, k = k);
  Real energy = 0.5*disc.m*(disc.vx^2 + disc.vy^2) + 0.5*disc.J*disc.w^2
    + (if contact.g < 0 then k*(-contact.g)^(19/9)/(19/9) else 0);
equation
  connect(disc.frame, contact.frame_a);
  connect(wall.frame, contact.frame_b);
  annotation(experiment(StopTime = 0.015, Interval = 1e-5, Tolerance = 1e-10));
end DiscOnWall;
"#;
    let r = common::simulate(src, Some("DiscOnWall"), &Run::default());
    let e0 = 0.5 * 2.0 * 1.5f64.powi(2) + 0.5 * 1e-3 * 9.0;
    let energy = common::column(&r, "energy");
    let worst = energy
        .iter()
        .map(|e| ((e - e0) / e0).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1e-6, "energy drifts by {worst:e}");
    // It hit the wall and came back: the x speed reversed, no y speed and
    // the spin unchanged (no friction).
    let g = common::column(&r, "contact.g");
    assert!(g.iter().any(|&g| g < -1e-5), "no penetration");
    common::assert_close(common::last(&r, "disc.vx"), -1.5, 1e-6, 0.0);
    common::assert_close(common::last(&r, "disc.vy"), 0.0, 0.0, 1e-12);
    common::assert_close(common::last(&r, "disc.w"), 3.0, 1e-9, 0.0);
}

/// A regular polygon of `nseg` sides inscribed in a circle of radius R and
/// `m` circles of radius r on closed-form paths that touch it part of the
/// time, through Contact.CurveCircles.
fn ring_model(nseg: usize, m: usize, screening: bool) -> String {
    ring_model_with(nseg, m, &format!("screening = {screening}"))
}

/// [`ring_model`] with the contact's screening modifiers given whole.
fn ring_model_with(nseg: usize, m: usize, screening: &str) -> String {
    ring_model_of(nseg, m, "R", screening)
}

/// [`ring_model_with`] on the curve at `radius` (an expression in R and
/// the point's polar angle `a`) instead of the circle of radius R.
fn ring_model_of(nseg: usize, m: usize, radius: &str, screening: &str) -> String {
    format!(
        r#"
model Mover "a frame on a closed-form path around the ring"
  parameter Real R;
  parameter Real j;
  Mechanics.Planar.Frame frame;
equation
  frame.x = (R + 0.0009 + 0.0006*sin(3*time + j))*cos(0.7*time + 6.2831853/{m}*j);
  frame.y = (R + 0.0009 + 0.0006*sin(3*time + j))*sin(0.7*time + 6.2831853/{m}*j);
  frame.phi = 0.3*time;
end Mover;

function radius "the curve's distance from its origin at polar angle a"
  input Real R;
  input Real a;
  output Real r;
algorithm
  r := {radius};
end radius;

model Ring
  parameter Integer nseg = {nseg};
  parameter Real R = 0.05;
  parameter Integer m = {m};
  parameter Real curve[nseg + 1, 2] = {{{{radius(R, 2*3.141592653589793*i/nseg)*cos(2*3.141592653589793*i/nseg), radius(R, 2*3.141592653589793*i/nseg)*sin(2*3.141592653589793*i/nseg)}} for i in 0:nseg}};
  Mechanics.Planar.Fixed ground(phi = 0.1);
  Contact.CurveCircles contact(m = m, curve = curve, r = fill(0.001, m), k = 1e9, dc = 20, mu = 0.1,
    {screening});
  Mover mv[m](each R = R, j = 1:m);
equation
  connect(ground.frame, contact.frame_curve);
  for j in 1:m loop
    connect(mv[j].frame, contact.frame_circle[j]);
  end for;
  annotation(experiment(StopTime = 3, Interval = 0.01));
end Ring;
"#
    )
}

/// Screening (eq. 34 and the block skip) changes what is examined, not
/// what is found: wherever a circle touches the curve, its gap, forces and
/// sliding speed equal brute force over all segments; apart, both gaps are
/// positive and neither has a force; and far fewer segments are examined.
#[test]
fn curve_circles_screening_finds_what_brute_force_finds() {
    screening_finds_what_brute_force_finds("screening = true");
}

/// The polar screening (the paper's stage 1: a circle is compared only
/// with the segments within the polar angle it can reach from the curve's
/// origin, found by bisection) finds what brute force finds, examining
/// fewer segments still.
#[test]
fn curve_circles_polar_screening_finds_what_brute_force_finds() {
    screening_finds_what_brute_force_finds("polar = true");
}

/// Smooth segments are screened with room for their bulge: on a coarse
/// curve with inflections (a flower of 5 petals, 20 segments a petal,
/// whose curvature changes sign 10 times), the smooth contact screened by
/// blocks or by polar angle finds what the smooth contact without
/// screening finds. (The allowance is half a segment; a cubic segment
/// strays at most 0.35 of it. A quadratic with the vertices' tangents, an
/// earlier version, strayed up to 14 half segments here at the
/// inflections, and this test failed on it.)
#[test]
fn curve_circles_smooth_segments_are_screened_with_room_for_their_bulge() {
    let flower = "R*(1 + 0.06*cos(5*a))";
    for screening in ["smooth = true", "smooth = true, polar = true"] {
        screening_matches(
            &ring_model_of(100, 12, flower, screening),
            &ring_model_of(100, 12, flower, "smooth = true, screening = false"),
            100,
            12,
            0.25,
        );
    }
}

fn screening_finds_what_brute_force_finds(screening: &str) {
    let (nseg, m) = (800, 12);
    screening_matches(
        &ring_model_with(nseg, m, screening),
        &ring_model(nseg, m, false),
        nseg,
        m,
        0.02,
    );
}

/// The screened contact (`screened_src`) against brute force (`brute_src`)
/// over the same motion: equal wherever a circle touches, and far fewer
/// segments examined.
fn screening_matches(screened_src: &str, brute_src: &str, nseg: usize, m: usize, share: f64) {
    let screened = common::simulate(screened_src, Some("Ring"), &Run::default());
    let brute = common::simulate(brute_src, Some("Ring"), &Run::default());
    let mut touching = 0;
    for j in 1..=m {
        for name in ["g", "fn", "ft", "vt"] {
            let col = format!("contact.{name}[{j}]");
            let (a, b) = (
                common::column(&screened, &col),
                common::column(&brute, &col),
            );
            let gap = common::column(&brute, &format!("contact.g[{j}]"));
            for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                if gap[i] > 0.0 && name != "fn" && name != "ft" {
                    // Apart: the screened search may stop at another
                    // segment than the nearest, or report r out of reach.
                    assert!(name != "g" || *a > 0.0, "{col} at row {i}: {a}");
                    continue;
                }
                assert_eq!(a, b, "{col} at row {i}");
            }
        }
        touching += common::column(&brute, &format!("contact.fn[{j}]"))
            .iter()
            .filter(|&&f| f > 0.0)
            .count();
    }
    assert!(touching > 100, "only {touching} rows in contact");
    let examined = common::column(&screened, "contact.examined");
    let all = common::column(&brute, "contact.examined");
    assert!(all.iter().all(|&n| n == (nseg * m) as f64));
    let most = examined.iter().fold(0.0, |a: f64, &b| a.max(b));
    assert!(
        most <= share * (nseg * m) as f64,
        "screening examined up to {most} of {} segments",
        nseg * m
    );
}

/// A circle against the polygon of nseg sides inscribed in a circle of
/// radius R, its centre on the bisector of the first side: the gap is
/// d - R cos(pi/nseg) - r exactly, and it converges to the circle's gap
/// d - R - r at second order in the side length.
#[test]
fn curve_circles_gap_converges_at_second_order_on_a_polygon() {
    let (radius, d, r) = (0.05, 0.052, 0.005);
    let mut errors = Vec::new();
    for nseg in [50usize, 100, 200, 400] {
        let a = std::f64::consts::PI / nseg as f64;
        let g = polygon_gap(nseg, false);
        common::assert_close(g, d - radius * a.cos() - r, 0.0, 1e-15);
        errors.push(g - (d - radius - r));
    }
    for w in errors.windows(2) {
        let order = (w[0] / w[1]).log2();
        assert!((order - 2.0).abs() < 0.01, "order {order} from {errors:?}");
    }
}

/// The gap of a circle of radius 5 mm whose centre is 52 mm from the
/// centre of a polygon of nseg sides inscribed in a circle of 50 mm, on
/// the bisector of its first side; `smooth` chooses the contact's
/// segments.
fn polygon_gap(nseg: usize, smooth: bool) -> f64 {
    let (radius, d, r) = (0.05, 0.052, 0.005);
    let a = std::f64::consts::PI / nseg as f64;
    let src = format!(
        r#"
model Polygon
  parameter Integer nseg = {nseg};
  parameter Real curve[nseg + 1, 2] = {{{{{radius}*cos(2*3.141592653589793*i/nseg), {radius}*sin(2*3.141592653589793*i/nseg)}} for i in 0:nseg}};
  Mechanics.Planar.Fixed ground;
  Mechanics.Planar.Fixed centre(r = {{{x}, {y}}});
  Contact.CurveCircles contact(m = 1, curve = curve, r = {{{r}}}, k = 1e9, smooth = {smooth});
equation
  connect(ground.frame, contact.frame_curve);
  connect(centre.frame, contact.frame_circle[1]);
  annotation(experiment(StopTime = 1, Interval = 0.5));
end Polygon;
"#,
        x = d * a.cos(),
        y = d * a.sin(),
    );
    let res = common::simulate(&src, Some("Polygon"), &Run::default());
    common::last(&res, "contact.g[1]")
}

/// A disc centred in its bore (the normal undefined, no force) starts and
/// runs: benches/contact/disc_in_bore.rmo over its first 20 ms, where the
/// disc drifts across the clearance, hits the bore and is pressed into it
/// (SciPy checks the whole run in CI: benches/contact/disc_in_bore.py).
#[test]
fn a_disc_centred_in_its_bore_starts_and_hits_it() {
    let r = common::simulate_with(
        "benches/contact/disc_in_bore.rmo",
        rmoc::solve::Solver::Bdf,
        &Run {
            stop: Some(0.02),
            ..Run::default()
        },
    );
    let g = common::column(&r, "contact.g");
    common::assert_close(g[0], 0.0002, 1e-12, 0.0);
    assert!(g.iter().all(|g| g.is_finite()));
    assert!(common::last(&r, "contact.fn") > 10.0);
    // Friction has slowed the spin.
    assert!(common::last(&r, "disc.w") < 30.0);
}

/// A polygon of nseg sides inscribed in a circle of radius 50 mm, fixed,
/// and one circle of radius 1 mm inside it whose centre runs round at
/// 49.1 mm, pressed into the sides: `smooth` chooses the contact's
/// segments. One row per 1e-4 rad of the centre's angle.
fn inside_ring(nseg: usize, smooth: bool) -> String {
    format!(
        r#"
model Path "the circle's centre, running round at 49.1 mm"
  Mechanics.Planar.Frame frame;
equation
  frame.x = 0.0491*cos(time);
  frame.y = 0.0491*sin(time);
  frame.phi = 0;
end Path;

model Inside
  parameter Integer nseg = {nseg};
  parameter Real R = 0.05;
  parameter Real curve[nseg + 1, 2] = {{{{R*cos(2*3.141592653589793*i/nseg), R*sin(2*3.141592653589793*i/nseg)}} for i in 0:nseg}};
  Mechanics.Planar.Fixed ground;
  Contact.CurveCircles contact(m = 1, curve = curve, r = {{0.001}}, k = 1e9, polar = true, smooth = {smooth});
  Path centre;
  Real fx = contact.frame_circle[1].fx;
  Real fy = contact.frame_circle[1].fy;
equation
  connect(ground.frame, contact.frame_curve);
  connect(centre.frame, contact.frame_circle[1]);
  annotation(experiment(StopTime = 0.2, Interval = 1e-4));
end Inside;
"#
    )
}

/// The largest change of the force's direction from one row to the next.
fn largest_turn(res: &rmoc::solve::Results) -> f64 {
    let (fx, fy) = (common::column(res, "fx"), common::column(res, "fy"));
    let angles: Vec<f64> = fx.iter().zip(&fy).map(|(x, y)| y.atan2(*x)).collect();
    angles
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max)
}

/// Inside a polygon every vertex is concave: the nearest point of the
/// polyline jumps from one side's foot to the next where the centre
/// crosses a vertex's bisector, and the force turns by the polygon's
/// exterior angle 2 pi/nseg at once. With smooth segments (cubics
/// with a continuous tangent through the vertices) the force turns
/// continuously, as the centre does (1e-4 rad per row), and the gap is
/// that of the circle the polygon samples to O(h^4).
#[test]
fn curve_circles_smooth_segments_turn_the_force_continuously() {
    let nseg = 100;
    let plain = common::simulate(&inside_ring(nseg, false), Some("Inside"), &Run::default());
    let smooth = common::simulate(&inside_ring(nseg, true), Some("Inside"), &Run::default());
    let jump = 2.0 * std::f64::consts::PI / nseg as f64;
    let (p, s) = (largest_turn(&plain), largest_turn(&smooth));
    assert!(
        (p - jump).abs() < 0.1 * jump,
        "polyline: largest turn {p}, expected {jump}"
    );
    assert!(s < 3e-4, "smooth: largest turn {s} per 1e-4 rad");
    // The smooth gap against the circle's, R - 0.0491 - r = -0.1 mm: within
    // 1e-8 m, where the chords are up to R (1 - cos(pi/nseg)) = 2.5e-5 m off.
    for g in common::column(&smooth, "contact.g[1]") {
        common::assert_close(g, -1e-4, 0.0, 1e-8);
    }
    let worst = common::column(&plain, "contact.g[1]")
        .iter()
        .fold(0.0, |a: f64, g| a.max((g + 1e-4).abs()));
    assert!(worst > 2e-5, "the polyline's gap is off by {worst} at most");
}

/// The gap of a circle against a polygon inscribed in a circle, with
/// smooth segments, converges to the circle's gap at fourth order in the
/// side length (the chords' second order: the test above).
#[test]
fn curve_circles_smooth_gap_converges_at_fourth_order() {
    let (radius, d, r) = (0.05, 0.052, 0.005);
    let errors: Vec<f64> = [25usize, 50, 100, 200]
        .iter()
        .map(|&nseg| polygon_gap(nseg, true) - (d - radius - r))
        .collect();
    for w in errors.windows(2) {
        let order = (w[0] / w[1]).log2();
        assert!((order - 4.0).abs() < 0.2, "order {order} from {errors:?}");
    }
}

/// `Contact.curveStrays` bounds how far each smooth segment strays from
/// its chord, which is what lets `curveCircles` refine only the segments
/// near the nearest chord: on the flower of the screening test (5 petals,
/// 20 segments a petal, inflections), the cubic sampled at 200 points of
/// each segment never strays beyond its bound, the bound is within 4x of
/// the largest stray sampled, and far below the half segment that bounds
/// every cubic.
#[test]
fn curve_strays_bound_the_smooth_segments() {
    let src = r#"
function deviation "the largest distance, over 200 samples, of smooth segment i of curve from its chord"
  input Real curve[:, 2];
  input Integer i;
  output Real d;
protected
  Integer n = size(curve, 1) - 1;
  Integer v;
  Real ex = curve[i + 1, 1] - curve[i, 1];
  Real ey = curve[i + 1, 2] - curve[i, 2];
  Real bx;
  Real by;
  Real ux;
  Real uy;
  Real s;
algorithm
  v := if i > 1 then i - 1 else n;
  (bx, by) := Contact.hermiteOffset(ex, ey, curve[v + 1, 1] - curve[v, 1], curve[v + 1, 2] - curve[v, 2]);
  v := if i < n then i + 1 else 1;
  (ux, uy) := Contact.hermiteOffset(ex, ey, curve[v + 1, 1] - curve[v, 1], curve[v + 1, 2] - curve[v, 2]);
  d := 0;
  for k in 0:200 loop
    s := k/200;
    // c(s) - chord(s) = s (1 - s)^2 u0 - s^2 (1 - s) u1
    d := max(d, sqrt((s*(1 - s)^2*bx - s^2*(1 - s)*ux)^2 + (s*(1 - s)^2*by - s^2*(1 - s)*uy)^2));
  end for;
end deviation;

model Strays
  constant Real pi = 3.141592653589793;
  parameter Integer nseg = 100;
  parameter Real R = 0.05;
  parameter Real curve[nseg + 1, 2] = {{R*(1 + 0.06*cos(5*2*pi*i/nseg))*cos(2*pi*i/nseg), R*(1 + 0.06*cos(5*2*pi*i/nseg))*sin(2*pi*i/nseg)} for i in 0:nseg};
  Real stray[nseg] = Contact.curveStrays(curve);
  Real sampled[nseg] = {deviation(curve, i) for i in 1:nseg};
  Real half[nseg] = {0.5*sqrt((curve[i + 1, 1] - curve[i, 1])^2 + (curve[i + 1, 2] - curve[i, 2])^2) for i in 1:nseg};
end Strays;
"#;
    let res = common::simulate(src, Some("Strays"), &Run::default());
    let (mut tightest, mut loosest) = (f64::INFINITY, 0.0f64);
    for i in 1..=100 {
        let last = |name: &str| {
            *common::column(&res, &format!("{name}[{i}]"))
                .last()
                .expect("rows")
        };
        let (stray, sampled, half) = (last("stray"), last("sampled"), last("half"));
        assert!(
            sampled <= stray,
            "segment {i}: strays {sampled} beyond its bound {stray}"
        );
        assert!(
            stray < 0.05 * half,
            "segment {i}: bound {stray} against half a segment {half}"
        );
        tightest = tightest.min(stray / sampled.max(1e-300));
        loosest = loosest.max(stray / sampled.max(1e-300));
    }
    assert!(loosest < 4.0, "a bound {loosest} times the stray sampled");
    assert!(tightest >= 1.0);
}

/// Polar screening needs a curve that turns once round its body's origin;
/// any other is refused with a diagnostic, not searched wrongly.
#[test]
fn curve_circles_polar_screening_refuses_a_curve_not_round_the_origin() {
    // A zigzag whose polar angle goes back, and a circle traced twice.
    let curves = [
        "{{0.1, 0}, {0.2, 0.02}, {0.15, 0.01}}",
        "{{0.1*cos(4*3.141592653589793*i/60), 0.1*sin(4*3.141592653589793*i/60)} for i in 0:60}",
    ];
    for (k, curve) in curves.iter().enumerate() {
        let src = format!(
            r#"
model Off
  parameter Real curve[:, 2] = {curve};
  Mechanics.Planar.Fixed ground;
  Mechanics.Planar.Fixed centre(r = {{0.15, 0}});
  Contact.CurveCircles contact(m = 1, curve = curve, r = {{0.001}}, k = 1e9, polar = true);
equation
  connect(ground.frame, contact.frame_curve);
  connect(centre.frame, contact.frame_circle[1]);
end Off;
"#
        );
        let text = refused(&format!("polar-refused-{k}"), &src);
        assert!(
            text.contains("polar screening needs a curve that turns once round"),
            "{text}"
        );
    }
}

/// Runs `rmoc simulate` on `src` and checks that it refuses: exit status
/// 1 and no result file; returns what it printed.
fn refused(name: &str, src: &str) -> String {
    let path = common::model_file(name, src);
    let dir = common::scratch_dir(name);
    let result = dir.join("result.csv");
    let out = common::rmoc_cli(&[
        "simulate",
        path.to_str().expect("path"),
        "-o",
        result.to_str().expect("path"),
    ]);
    let (code, text) = common::exit_and_text(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(!result.exists(), "a result file was written");
    text
}

/// The compiled code gives a function the curve, an array parameter of
/// 802 numbers, by a copy loop into its frame (runs of 16 or more
/// consecutive slots); the reference interpreter reads it element by
/// element. Both give the same gaps and forces, with polar screening and
/// smooth segments.
#[test]
fn compiled_curve_contact_agrees_with_the_interpreter() {
    let path = common::model_file(
        "ring",
        &ring_model_with(400, 12, "polar = true, smooth = true"),
    );
    let dir = common::scratch_dir("ring-jit");
    let mut results = Vec::new();
    for jit in [true, false] {
        let out = dir.join(format!("ring-{jit}.csv"));
        let mut args = vec![
            "simulate",
            path.to_str().expect("path"),
            "--model",
            "Ring",
            "-q",
            "-o",
            out.to_str().expect("path"),
        ];
        if !jit {
            args.push("--no-jit");
        }
        let (code, text) = common::exit_and_text(&common::rmoc_cli(&args));
        assert_eq!(code, Some(0), "{text}");
        results.push(rmoc::output::read(&out).expect("result"));
    }
    let mut touching = 0;
    for j in 1..=12 {
        for name in ["g", "fn", "ft"] {
            let col = format!("contact.{name}[{j}]");
            let column = |r: &rmoc::output::ResultTable| {
                let k = r.names.iter().position(|n| *n == col).expect("column");
                r.rows.iter().map(|row| row[k]).collect::<Vec<f64>>()
            };
            let (a, b) = (column(&results[0]), column(&results[1]));
            assert_eq!(a.len(), b.len());
            for (a, b) in a.iter().zip(&b) {
                common::assert_close(*a, *b, 1e-12, 1e-18);
                if name == "fn" && *a > 0.0 {
                    touching += 1;
                }
            }
        }
    }
    assert!(touching > 100, "only {touching} rows in contact");
}

/// Eq. 14's area-integral force (`areaIntegral = true`): circles of radius
/// 3 mm held at penetrations from 1e-8 of the radius to its whole (the edge
/// through the centre) into a straight two-sided curve carry
/// eq. 11's force times (1/delta) times the integral of the arc's depth
/// beyond the edge over the arc's angle, here integrated by Simpson's rule
/// in the stable form delta - 2 r sin^2(s/2) (independent of the library's
/// closed form and its series below 3e-4 of the radius, both checked just
/// either side of that threshold); with the option off the force is eq. 11's.
#[test]
fn curve_circles_area_integral_force_matches_the_arc_integral() {
    let r = 3e-3;
    let k = 1e9;
    let depths = [
        1e-8 * r,
        1e-5 * r,
        (3e-4 - 1e-9) * r,
        (3e-4 + 1e-9) * r,
        1e-3 * r,
        0.05 * r,
        0.5 * r,
        0.9 * r,
        r,
    ];
    let m = depths.len();
    let centres: Vec<String> = depths
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{{{}, {:e}}}", 0.01 * i as f64, r - d))
        .collect();
    let model = |area: bool| {
        format!(
            r#"
model Edge
  Mechanics.Planar.Fixed ground;
  Mechanics.Planar.Fixed centre[{m}](r = {{{centres}}});
  Contact.CurveCircles contact(m = {m}, curve = [-1, 0; 1, 0], r = fill({r:e}, {m}), k = {k:e}, areaIntegral = {area});
equation
  connect(ground.frame, contact.frame_curve);
  for j in 1:{m} loop
    connect(centre[j].frame, contact.frame_circle[j]);
  end for;
  annotation(experiment(StopTime = 1, Interval = 0.5));
end Edge;
"#,
            centres = centres.join(", ")
        )
    };
    let with = common::simulate(&model(true), Some("Edge"), &Run::default());
    let without = common::simulate(&model(false), Some("Edge"), &Run::default());
    let factor = |delta: f64| {
        let d = delta.min(2.0 * r);
        let a = 2.0 * (0.5 * d / r).sqrt().asin();
        let n = 20_000;
        let h = 2.0 * a / n as f64;
        let f = |s: f64| d - 2.0 * r * (0.5 * s).sin().powi(2);
        let mut sum = f(-a) + f(a);
        for i in 1..n {
            let w = if i % 2 == 1 { 4.0 } else { 2.0 };
            sum += w * f(-a + i as f64 * h);
        }
        sum * h / 3.0 / d
    };
    let mut got = Vec::new();
    for (i, &held) in depths.iter().enumerate() {
        // The depth the contact found (the centre's y rounds off the
        // smallest ones by a few parts in 1e10).
        let delta = -common::last(&with, &format!("contact.g[{}]", i + 1));
        assert!(
            (delta - held).abs() <= 1e-9 * held + 1e-18,
            "{delta:e} against {held:e}"
        );
        let plain = k * delta.powf(10.0 / 9.0);
        let f_without = common::last(&without, &format!("contact.fn[{}]", i + 1));
        assert!(
            (f_without - plain).abs() <= 1e-12 * plain,
            "eq. 11 at {delta:e}: {f_without:e}"
        );
        let expected = plain * factor(delta);
        let f_with = common::last(&with, &format!("contact.fn[{}]", i + 1));
        assert!(
            (f_with - expected).abs() <= 1e-11 * expected,
            "eq. 14 at delta = {delta:e}: {f_with:e} against {expected:e}"
        );
        got.push(f_with / plain);
    }
    // The factor: (4/3) sqrt(2 u) at small u, 2 with the edge through the centre.
    assert!((got[0] / (4.0 / 3.0 * (2e-8f64).sqrt()) - 1.0).abs() < 1e-7);
    assert!((got[8] - 2.0).abs() < 1e-12);
}

/// A circle of zero radius (the area-integral factor divides by it) is
/// refused at the start: exit 1, the reason, no result file.
#[test]
fn curve_circles_refuses_a_circle_without_radius() {
    let src = r#"
model NoRadius
  Mechanics.Planar.Fixed ground;
  Mechanics.Planar.Fixed centre(r = {0, 0.001});
  Contact.CurveCircles contact(m = 1, curve = [-1, 0; 1, 0], r = {0}, k = 1e9, areaIntegral = true);
equation
  connect(ground.frame, contact.frame_curve);
  connect(centre.frame, contact.frame_circle[1]);
end NoRadius;
"#;
    let text = refused("no-radius", src);
    assert!(text.contains("radii r must be positive"), "{text}");
    assert!(text.contains("package.rmo:"), "{text}");
}
