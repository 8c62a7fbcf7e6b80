//! The RV-type reducer of issue 18 (`examples/reducer.rmo`): two cycloid
//! discs on needle bearings whose 48 needles are bodies, the output loaded
//! by the five-stage torque sequence (Miao et al. 2026, seed 000, eq. 25).
//! The whole 2.5 s sequence is a benchmark (docs/benchmarks.md 3j); here a
//! shortened one, with stages of 20 ms.

mod common;

use std::f64::consts::PI;

/// The radians of one arcminute.
const ARCMIN: f64 = PI / (180.0 * 60.0);

/// The example as it stands: at least 100 degrees of freedom, every one a
/// position with its velocity (generalized-alpha's second-order form).
#[test]
fn the_reducer_has_more_than_a_hundred_degrees_of_freedom() {
    let c = common::compile_file(&common::project("examples/reducer.rmo"), None);
    // The carrier (one angle), two discs (x, y, phi) and 48 needles (x, y,
    // phi): 151 positions, 302 states.
    assert_eq!(c.causal.states.len(), 302);
}

/// The loop of a shortened sequence (stages of 20 ms instead of 0.5 s):
/// the torsional stiffness in the range the paper quotes for the class
/// (1 100-1 400 N m/arcmin) within the allowance its rigid bodies and the
/// short stages take (the full sequence gives 1 439, this one about 1 535);
/// both branches alike; and, the needle bearings having no clearance, a
/// backlash that is the pins' play: the radial modification dRp of the
/// profile turns the disc freely by 2 dRp sqrt(1 - K1^2) / (a zp), K1 = a zp
/// / (Rp - dRp) (0.385 arcmin), within 10% (the disc turns about the
/// output's axis here, not its own centre; the full sequence gives 0.357).
#[test]
fn the_reducer_loop_on_a_short_sequence() {
    let request = rmoc::solve::settings::RunRequest {
        stop_time: Some(0.1),
        interval: Some(1e-4),
        params: vec!["load.tseg=0.02".into()],
        ..Default::default()
    };
    let r = common::run_request(&common::project("examples/reducer.rmo"), None, request);
    let alpha = r.stats.alpha.expect("generalized-alpha statistics");
    assert_eq!(alpha.positions, 151);
    let angle: Vec<f64> = common::column(&r, "theta")
        .iter()
        .map(|a| a / ARCMIN)
        .collect();
    let ind = rmoc::output::hysteresis::indicators(&common::column(&r, "T"), &angle, 3200.0)
        .expect("a loop");
    let (kp, kn) = (ind.stiffness_positive, ind.stiffness_negative);
    assert!(
        (1100.0..1700.0).contains(&kp) && (kp - kn).abs() < 0.01 * kp,
        "stiffness {kp} and {kn} N m/arcmin"
    );
    let (zp, a, rp_circle, d_rp) = (40.0, 1.3e-3, 0.064, 5e-6);
    let k1: f64 = a * zp / (rp_circle - d_rp);
    let play = 2.0 * d_rp * (1.0 - k1 * k1).sqrt() / (a * zp) / ARCMIN;
    assert!(
        (ind.backlash - play).abs() < 0.1 * play,
        "backlash {} arcmin against the pins' play {play}",
        ind.backlash
    );
    assert!(
        ind.lost_motion > ind.backlash && ind.lost_motion < 3.0 * play,
        "lost motion {} arcmin (backlash {})",
        ind.lost_motion,
        ind.backlash
    );
}
