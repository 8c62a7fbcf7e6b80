//! The cycloid disc's profile (seed 000, eqs. 1-3): the unmodified profile
//! is the offset by the pin radius of the curve a pin's centre traces, and
//! the equal-arc-length resampling agrees with an independent one written
//! here (Simpson's rule on the closed form, bisection on the arc length).

mod common;

use common::Run;

const ZP: f64 = 40.0;
const A: f64 = 1.5e-3;
const RP: f64 = 0.064;
const PIN: f64 = 3e-3;

/// Eqs. 1-2 (radial and pin-radius modifications and the angle delta).
fn point(phi: f64, rp: f64, d_rp: f64, dr: f64, delta: f64) -> (f64, f64) {
    let (r_big, r) = (RP - d_rp, rp + dr);
    let ih = ZP / (ZP - 1.0);
    let k1 = A * ZP / r_big;
    let s = (1.0 + k1 * k1 - 2.0 * k1 * phi.cos()).sqrt();
    let (a1, a2) = ((1.0 - ih) * phi - delta, ih * phi + delta);
    (
        -(r_big - r / s) * a1.sin() - A / r_big * (r_big - ZP * r / s) * a2.sin(),
        (r_big - r / s) * a1.cos() - A / r_big * (r_big - ZP * r / s) * a2.cos(),
    )
}

fn speed(phi: f64, mods: (f64, f64, f64)) -> f64 {
    let h = 1e-6;
    let (x0, y0) = point(phi - h, PIN, mods.0, mods.1, mods.2);
    let (x1, y1) = point(phi + h, PIN, mods.0, mods.1, mods.2);
    (x1 - x0).hypot(y1 - y0) / (2.0 * h)
}

/// The points at fractions k/n of the length, by composite Simpson on a
/// fine grid of the rolling angle and bisection within it.
fn resampled(n: usize, mods: (f64, f64, f64)) -> Vec<(f64, f64)> {
    let end = 2.0 * std::f64::consts::PI * (ZP - 1.0);
    let m = 800_000;
    let h = end / m as f64;
    let arc = |a: f64, b: f64| {
        (b - a) / 6.0 * (speed(a, mods) + 4.0 * speed((a + b) / 2.0, mods) + speed(b, mods))
    };
    let mut s = vec![0.0; m + 1];
    for j in 0..m {
        s[j + 1] = s[j] + arc(h * j as f64, h * (j + 1) as f64);
    }
    let total = s[m];
    (0..=n)
        .map(|k| {
            let target = total * k as f64 / n as f64;
            let j = s.partition_point(|&x| x <= target).clamp(1, m) - 1;
            let (mut lo, mut hi) = (h * j as f64, h * (j + 1) as f64);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if s[j] + arc(h * j as f64, mid) < target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            point(0.5 * (lo + hi), PIN, mods.0, mods.1, mods.2)
        })
        .collect()
}

/// With no modification, each point of the profile lies at exactly the
/// pin radius from the point the pin's centre traces at the same rolling
/// angle (eqs. 1-2 with rp = 0), along the traced curve's normal.
#[test]
fn the_unmodified_profile_is_the_pin_centre_curve_offset_by_the_pin_radius() {
    let src = r#"
model Offset
  parameter Integer n = 500;
  parameter Real phi[n] = {39*2*3.141592653589793*(i - 0.5)/n for i in 1:n};
  Real d[n];
  Real cosine[n];
protected
  Real p[n, 2];
  Real c[n, 2];
  Real c1[n, 2];
equation
  for i in 1:n loop
    (p[i, 1], p[i, 2]) = Gears.cycloidPoint(phi[i], 40, 1.5e-3, 0.064, 3e-3);
    (c[i, 1], c[i, 2]) = Gears.cycloidPoint(phi[i], 40, 1.5e-3, 0.064, 0);
    (c1[i, 1], c1[i, 2]) = Gears.cycloidPoint(phi[i] + 1e-6, 40, 1.5e-3, 0.064, 0);
    d[i] = sqrt((p[i, 1] - c[i, 1])^2 + (p[i, 2] - c[i, 2])^2);
    cosine[i] = ((p[i, 1] - c[i, 1])*(c1[i, 1] - c[i, 1]) + (p[i, 2] - c[i, 2])*(c1[i, 2] - c[i, 2]))
      /(d[i]*sqrt((c1[i, 1] - c[i, 1])^2 + (c1[i, 2] - c[i, 2])^2));
  end for;
  annotation(experiment(StopTime = 1, Interval = 1));
end Offset;
"#;
    let r = common::simulate(src, Some("Offset"), &Run::default());
    for i in 1..=500 {
        common::assert_close(common::last(&r, &format!("d[{i}]")), PIN, 1e-12, 0.0);
        let c = common::last(&r, &format!("cosine[{i}]"));
        assert!(
            c.abs() < 1e-4,
            "offset not along the normal at {i}: cos {c}"
        );
    }
}

/// Eq. 3: the resampled profile (with every modification) against the
/// independent resampling above, to 10 nm; the curve closes.
#[test]
fn cycloid_profile_is_resampled_at_equal_arc_length() {
    let mods = (2e-5, -1e-5, 1e-3);
    let n = 120;
    let src = format!(
        r#"
model Profile
  parameter Integer n = {n};
  parameter Real profile[n + 1, 2] = Gears.cycloidProfile({{i/n for i in 0:n}}, 40, 1.5e-3, 0.064, 3e-3,
    dRp = {}, dr = {}, delta = {});
  Real x = profile[1, 1];
  annotation(experiment(StopTime = 1, Interval = 1));
end Profile;
"#,
        mods.0, mods.1, mods.2
    );
    let r = common::simulate(&src, Some("Profile"), &Run::default());
    let want = resampled(n, mods);
    let p = |i: usize, j: usize| {
        r.parameters
            .iter()
            .find(|(name, _)| *name == format!("profile[{i},{j}]"))
            .map(|p| p.1)
            .unwrap_or_else(|| panic!("no profile[{i},{j}]"))
    };
    let worst: f64 = want
        .iter()
        .enumerate()
        .map(|(k, &(x, y))| (p(k + 1, 1) - x).hypot(p(k + 1, 2) - y))
        .fold(0.0, f64::max);
    // 10 nm on a profile 0.4 m long (the library's quadrature, 32 768
    // chords of 5 Gauss points, against Simpson on 800 000 intervals: 7 nm;
    // with 8 192 chords 18 nm).
    assert!(worst < 1e-8, "largest distance {worst:e} m");
    common::assert_close(p(n + 1, 1), p(1, 1), 0.0, 1e-12);
    common::assert_close(p(n + 1, 2), p(1, 2), 0.0, 1e-12);
}

/// One pitch of an involute spur gear (Gears.involuteTooth, z = 20, m = 2
/// mm, 20 degrees, profile shift 0.2): every flank point's normal (from
/// its neighbours) is tangent to the base circle (the involute's defining
/// property), the tooth is 2 r theta(r) = pi m/2 + 2 x m tan(alpha) thick
/// at the pitch circle (the textbook's), and the pitch is symmetric about
/// the tooth's axis.
#[test]
fn an_involute_tooth_has_its_base_circle_and_textbook_thickness() {
    let nf = 400;
    let src = format!(
        r#"
model Tooth
  parameter Real p[2*2 + 2*{nf} + 3, 2] = Gears.involuteTooth({{0, 0.5}}, {{i/({nf} - 1) for i in 0:{nf} - 1}},
    {{0.25, 0.5, 0.75}}, 20, 2e-3, 20*3.141592653589793/180, x = 0.2);
  Real y = p[1, 1];
  annotation(experiment(StopTime = 1, Interval = 1));
end Tooth;
"#
    );
    let r = common::simulate(&src, Some("Tooth"), &Run::default());
    let n = 2 * 2 + 2 * nf + 3;
    let pt = |i: usize| {
        let get = |j: usize| {
            r.parameters
                .iter()
                .find(|(name, _)| *name == format!("p[{i},{j}]"))
                .map(|p| p.1)
                .unwrap_or_else(|| panic!("no p[{i},{j}]"))
        };
        (get(1), get(2))
    };
    let (m, z, alpha, x) = (2e-3, 20.0, 20f64.to_radians(), 0.2);
    let (rp, rb) = (m * z / 2.0, m * z / 2.0 * alpha.cos());
    // The upper flank runs from tip to root: rows 2 + nf + 3 + 1 ...
    let upper: Vec<(f64, f64)> = (2 + nf + 3 + 1..=2 + 2 * nf + 3).map(pt).collect();
    // Away from the base circle, where the involute's curvature is
    // unbounded and a tangent from neighbours is poor.
    for w in upper
        .windows(3)
        .filter(|w| w[1].0.hypot(w[1].1) > 1.01 * rb)
    {
        let (a, p, c) = (w[0], w[1], w[2]);
        let (tx, ty) = (c.0 - a.0, c.1 - a.1);
        let len = tx.hypot(ty);
        // Distance from the centre to the normal line through p.
        let d = (p.0 * tx + p.1 * ty).abs() / len;
        // (The neighbours are 10 um apart: the chord's direction is off by
        // about (h / rho)^2, 1e-5 where rho is smallest.)
        common::assert_close(d, rb, 2e-5, 0.0);
    }
    // Thickness at the pitch circle, from the upper flank's angle there.
    let polar: Vec<(f64, f64)> = upper
        .iter()
        .map(|&(a, b)| (a.hypot(b), b.atan2(a)))
        .collect();
    let k = polar
        .windows(2)
        .position(|w| (w[0].0 - rp) * (w[1].0 - rp) <= 0.0)
        .expect("the flank crosses the pitch circle");
    let (r0, t0) = polar[k];
    let (r1, t1) = polar[k + 1];
    let theta = t0 + (rp - r0) / (r1 - r0) * (t1 - t0);
    common::assert_close(
        2.0 * rp * theta,
        std::f64::consts::PI * m / 2.0 + 2.0 * x * m * alpha.tan(),
        1e-6,
        0.0,
    );
    for i in 1..=n {
        let (a, b) = pt(i);
        let (c, d) = pt(n + 1 - i);
        common::assert_close(c, a, 0.0, 1e-15);
        common::assert_close(d, -b, 0.0, 1e-15);
    }
}
