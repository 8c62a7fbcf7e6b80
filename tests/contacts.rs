//! Set-valued contacts on the Moreau-Jean time-stepper (`solve::moreau`):
//! conservation, no penetration, closed-form impact times, and the BDF's
//! refusal.

mod common;

use rmoc::solve::{Results, Solver};

fn run_moreau(file: &str, step: f64, interval: Option<f64>) -> Results {
    common::simulate_with(
        file,
        Solver::Moreau { step },
        &common::Run {
            interval,
            ..common::Run::default()
        },
    )
}

fn col(r: &Results, name: &str) -> Vec<f64> {
    let k = r.column(name).unwrap_or_else(|| panic!("no column {name}"));
    r.rows.iter().map(|row| row[k]).collect()
}

/// A point mass between two walls with e = 1 and no friction: 1 000 impacts
/// in 10 s; the speed (so the kinetic energy) is exactly conserved and the
/// mass never enters a wall.
#[test]
fn elastic_impacts_conserve_energy_and_never_penetrate() {
    let r = run_moreau("tests/models/contacts/walls.rmo", 1e-5, None);
    let contacts = r.stats.contacts.expect("Moreau statistics");
    assert_eq!(contacts.steps, 1_000_000);
    assert!(
        (999..=1001).contains(&contacts.impact_steps),
        "{} impacts",
        contacts.impact_steps
    );
    let v = col(&r, "v");
    let energy0 = 0.5;
    let worst = v
        .iter()
        .map(|v| ((0.5 * v * v - energy0) / energy0).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1e-9, "kinetic energy drifts by {worst:e}");
    let x = col(&r, "x");
    let least_gap = x
        .iter()
        .map(|x| x.min(0.01 - x))
        .fold(f64::INFINITY, f64::min);
    assert!(least_gap >= -1e-9 * 0.01, "gap {least_gap:e}");
}

/// A ball dropped from 1 m with e = 0.8: never below the plane, and its
/// impacts at the closed-form times t1 = sqrt(2/g), t_{k+1} = t_k + 2 e^k
/// v1/g. The stepper locates an impact inside its step; the instant is
/// read back from the first output row after it by the free-flight
/// solution (y = v s + g s^2/2 with s the time since the impact).
#[test]
fn a_bouncing_ball_stays_above_the_plane() {
    let h = 1e-5;
    let r = run_moreau("tests/models/contacts/ball.rmo", h, Some(h));
    let y = col(&r, "y");
    let lowest = y.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(lowest >= -1e-9, "the ball went {lowest:e} below the plane");
    let v = col(&r, "v");
    let g: f64 = 9.81;
    let impacts: Vec<f64> = (1..v.len())
        .filter(|&i| v[i - 1] < 0.0 && v[i] > 0.0)
        .map(|i| {
            let s = (-v[i] + (v[i] * v[i] + 2.0 * g * y[i]).sqrt()) / g;
            r.times[i] - s
        })
        .collect();
    let mut t = (2.0 / g).sqrt();
    let mut speed = g * t;
    assert!(impacts.len() >= 10, "{} impacts", impacts.len());
    for (k, got) in impacts.iter().take(10).enumerate() {
        assert!(
            (got - t).abs() <= 1e-6,
            "impact {k}: {got} against {t} ({:e})",
            got - t
        );
        speed *= 0.8;
        t += 2.0 * speed / g;
    }
    // The contact force while in contact: an impulse of (1 + e) m v over one step.
    let n = col(&r, "N");
    let first = n.iter().cloned().fold(0.0, f64::max);
    let expected = (1.0 + 0.8) * (2.0 * g).sqrt() / h;
    assert!(
        (first - expected).abs() <= 0.01 * expected,
        "peak force {first}, expected {expected}"
    );
}

fn rmoc(args: &[&str], out_file: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(args)
        .arg("-o")
        .arg(out_file)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rmoc runs")
}

/// The BDF cannot integrate a set-valued contact: it says so and writes
/// nothing.
#[test]
fn the_bdf_refuses_a_model_with_unilateral_contacts() {
    let out_file = std::env::temp_dir().join("rmoc_contacts_bdf.csv");
    let _ = std::fs::remove_file(&out_file);
    let out = rmoc(
        &[
            "simulate",
            "tests/models/contacts/ball.rmo",
            "--solver",
            "bdf",
        ],
        &out_file,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unilateral contacts"), "{stderr}");
    assert!(stderr.contains("--solver moreau"), "{stderr}");
    assert!(stderr.contains("ball.rmo:10:"), "{stderr}");
    assert!(!out_file.exists());
}

/// Without `--solver`, a model with contacts runs on the Moreau stepper.
#[test]
fn contacts_choose_the_moreau_stepper_by_default() {
    let out_file = std::env::temp_dir().join("rmoc_contacts_default.csv");
    let out = rmoc(
        &[
            "simulate",
            "tests/models/contacts/ball.rmo",
            "--stats",
            "--stop-time",
            "1",
        ],
        &out_file,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Moreau-Jean steps 10000"), "{stderr}");
    let _ = std::fs::remove_file(&out_file);
}

/// A block thrown at v0 = 2 m/s along a plane with Coulomb friction
/// mu = 0.3 decelerates at mu g and stops at t = v0/(mu g) after
/// v0^2/(2 mu g); while sliding, the friction force is -mu N with N = m g.
#[test]
fn coulomb_friction_stops_a_sliding_block_at_the_closed_form_distance() {
    let h = 1e-5;
    let r = run_moreau("tests/models/contacts/block.rmo", h, None);
    let (g, mu, v0) = (9.81, 0.3, 2.0);
    let stop = v0 / (mu * g);
    let distance = v0 * v0 / (2.0 * mu * g);
    let vx = col(&r, "vx");
    let first_rest = (0..vx.len())
        .find(|&i| vx[i] <= 1e-12)
        .map(|i| r.times[i])
        .expect("the block stops");
    assert!(
        (first_rest - stop).abs() <= h,
        "stops at {first_rest}, closed form {stop}"
    );
    let x = col(&r, "x");
    let last = *x.last().expect("rows");
    assert!(
        (last - distance).abs() <= 1e-6,
        "slides {last}, closed form {distance}"
    );
    // Sliding: N = m g and T = -mu N; at rest: no friction force.
    let k = r.times.iter().position(|&t| t >= 0.3).expect("t = 0.3");
    let (n, t) = (col(&r, "N")[k], col(&r, "T")[k]);
    assert!((n - 2.0 * g).abs() <= 1e-9 * n, "N = {n}");
    assert!((t + mu * n).abs() <= 1e-9 * n, "T = {t}");
    assert!(col(&r, "T").last().expect("rows").abs() <= 1e-9);
    // Never below the plane.
    let lowest = col(&r, "y").iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(lowest >= -1e-12, "y = {lowest:e}");
}

/// A rod falling flat onto two supports: both contacts close at the same
/// instant, and the LCP gives the symmetric impulses (1 + e) m |v| / 2 with
/// no rotation. The impact instant tau inside the step follows from the
/// velocities before and after it (free fall on both sides).
#[test]
fn a_rod_falling_flat_gets_symmetric_impulses() {
    let (h, g, e) = (1e-5, 9.81, 0.5);
    let r = run_moreau("tests/models/contacts/rod.rmo", h, None);
    let (n1, n2, vy, w) = (col(&r, "N1"), col(&r, "N2"), col(&r, "vy"), col(&r, "w"));
    let k = (0..n1.len())
        .max_by(|&a, &b| n1[a].total_cmp(&n1[b]))
        .expect("rows");
    assert!(n1[k] > 0.0);
    assert!(
        (n1[k] - n2[k]).abs() <= 1e-12 * n1[k],
        "{} vs {}",
        n1[k],
        n2[k]
    );
    let (before, after) = (vy[k - 1], vy[k]);
    // after = e |v_imp| - g (h - tau), v_imp = before - g tau.
    let tau = (after + e * before + g * h) / (g * (1.0 + e));
    assert!(
        (-1e-12..=h + 1e-12).contains(&tau),
        "impact at {tau:e} into the step"
    );
    let v_impact = (before - g * tau).abs();
    let impulse = n1[k] * h;
    let expected = (1.0 + e) * v_impact / 2.0;
    assert!(
        (impulse - expected).abs() <= 1e-9,
        "impulse {impulse}, expected {expected}"
    );
    // The closed-form instant of the first impact: y0 = 0.1 in free fall.
    let t_impact = r.times[k - 1] + tau;
    assert!(
        (t_impact - (0.2f64 / g).sqrt()).abs() <= 1e-9,
        "impact at {t_impact}"
    );
    assert!(w.iter().all(|w| w.abs() <= 1e-12), "the rod turned");
}

/// `Contact.Unilateral.Stop`: an inertia driven into its upper stop never
/// passes it and comes to rest on it.
#[test]
fn the_stop_component_holds_the_flange() {
    let r = run_moreau("tests/models/contacts/stop.rmo", 1e-4, None);
    let phi = col(&r, "rotor.phi");
    let highest = phi.iter().cloned().fold(f64::MIN, f64::max);
    assert!(highest <= 1.0 + 1e-9, "phi reached {highest}");
    // First contact at phi = a t^2/2 = 1 with a = 2: t = 1.
    let first = (0..phi.len())
        .find(|&i| phi[i] >= 1.0 - 1e-9)
        .map(|i| r.times[i])
        .expect("reaches the stop");
    assert!((first - 1.0).abs() <= 2e-3, "first contact at {first}");
    assert!((phi.last().expect("rows") - 1.0).abs() <= 1e-9);
    // At rest on the stop: no residual hopping from the restitution.
    let w = *col(&r, "rotor.w").last().expect("rows");
    assert!(w.abs() <= 1e-9, "w = {w:e} at rest");
}

/// `Contact.Unilateral.RotationalClearance`: the play stays within its
/// bounds, and since the contact impulses are internal the total angular
/// momentum grows exactly as the drive torque's impulse (tau t).
#[test]
fn a_rigid_backlash_conserves_angular_momentum() {
    let r = run_moreau("tests/models/contacts/clearance.rmo", 1e-4, None);
    let play = col(&r, "play.phi_rel");
    assert!(
        play.iter()
            .all(|p| (-0.05 - 1e-9..=0.05 + 1e-9).contains(p))
    );
    let (wd, wl) = (col(&r, "driver.w"), col(&r, "load.w"));
    let worst = (0..r.times.len())
        .map(|i| (0.5 * wd[i] + 2.0 * wl[i] - r.times[i]).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1e-10, "momentum balance off by {worst:e}");
    assert!(r.stats.contacts.expect("stats").impact_steps > 10);
}

/// `Contact.Unilateral.PointOnPlane` on a planar body: the sliding-block
/// closed form again, through components and connections.
#[test]
fn a_planar_body_slides_to_the_closed_form_distance() {
    let r = run_moreau("tests/models/contacts/slider.rmo", 1e-5, None);
    let distance = 4.0 / (2.0 * 0.3 * 9.81);
    let x = *col(&r, "body.x").last().expect("rows");
    assert!(
        (x - distance).abs() <= 1e-6,
        "slides {x}, closed form {distance}"
    );
    let lowest = col(&r, "body.y")
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    assert!(lowest >= -1e-12);
}

/// Two opposed walls closed at once (no clearance) and an approach into
/// one of them: Newton's law with e = 0.5 would drive the mass into the
/// other wall, so that LCP has no solution; the impact is taken as plastic
/// (v = 0 after it), said in the statistics, and the mass stays put.
#[test]
fn opposed_contacts_without_clearance_take_a_plastic_impact() {
    let r = run_moreau("tests/models/contacts/pinched.rmo", 1e-4, None);
    let contacts = r.stats.contacts.expect("Moreau statistics");
    assert_eq!((contacts.impacts, contacts.plastic_impacts), (1, 1));
    for name in ["x", "v"] {
        let worst = col(&r, name)
            .iter()
            .skip(1)
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(worst < 1e-15, "{name} reaches {worst:e}");
    }
}

/// A sampled force on a block with Coulomb friction (mu m g = 4.905): the
/// staircase F = 2, 4, 6, 8 at t = 0, 0.25, 0.5, 0.75 holds the block until
/// t = 0.5, then drives it with (F - mu m g)/m. The sample instants are hit
/// exactly, so the piecewise-constant motion is exact: x(0.75) = 1.095/32,
/// x(1) = 0.199375.
#[test]
fn a_sampled_force_moves_a_block_once_it_overcomes_friction() {
    let r = run_moreau("tests/models/contacts/pushed.rmo", 1e-4, None);
    let (x, t) = (col(&r, "x"), &r.times);
    let at = |time: f64| {
        // The last row at `time` (an event records the point twice).
        let k = t
            .iter()
            .rposition(|&s| (s - time).abs() < 1e-12)
            .expect("row");
        x[k]
    };
    let stuck = (0..t.len())
        .filter(|&k| t[k] <= 0.5)
        .map(|k| x[k].abs())
        .fold(0.0, f64::max);
    assert!(stuck <= 1e-15, "moved {stuck:e} before t = 0.5");
    assert!(
        (at(0.75) - 1.095 / 32.0).abs() <= 1e-12,
        "x(0.75) = {}",
        at(0.75)
    );
    assert!((at(1.0) - 0.199375).abs() <= 1e-12, "x(1) = {}", at(1.0));
    let f = col(&r, "F");
    assert_eq!(*f.last().expect("rows"), 10.0, "samples at 0, 0.25, .., 1");
    assert_eq!((r.stats.time_events, r.stats.state_events), (5, 0));
}

/// A when-clause on a contact's rebound counts the bounces of a ball
/// dropped from 1 m (e = 0.5) and a reinit boosts the second rebound to
/// 5 m/s. Time-stepping sees a condition at the end of the step where it
/// became true: each bounce is recorded within one step after the closed
/// form t1 = sqrt(2/g), t2 = 2 t1 (the first rebound flies 2 e g t1 / g),
/// t3 = t2 + (5 + sqrt(25 + 2 g y(t2)))/g.
#[test]
fn when_clauses_count_bounces_and_reinit_a_rebound() {
    let h = 1e-5;
    let r = run_moreau("tests/models/contacts/counted.rmo", h, None);
    let g: f64 = 9.81;
    let (bounces, seen, y) = (col(&r, "bounces"), col(&r, "tBounce"), col(&r, "y"));
    let first_at = |n: f64| {
        let k = bounces.iter().position(|&b| b == n).expect("bounce");
        (seen[k], y[k])
    };
    let t1 = (2.0 / g).sqrt();
    let (s1, _) = first_at(1.0);
    assert!(
        s1 >= t1 && s1 - t1 <= h,
        "bounce 1 seen at {s1}, hit at {t1}"
    );
    let t2 = 2.0 * t1;
    let (s2, y2) = first_at(2.0);
    assert!(
        s2 >= t2 && s2 - t2 <= h,
        "bounce 2 seen at {s2}, hit at {t2}"
    );
    let t3 = s2 + (5.0 + (25.0 + 2.0 * g * y2).sqrt()) / g;
    let (s3, _) = first_at(3.0);
    assert!(
        s3 >= t3 - 1e-9 && s3 - t3 <= h,
        "bounce 3 seen at {s3}, hit at {t3}"
    );
    assert_eq!(*bounces.last().expect("rows"), 3.0);
    let apex = y.iter().cloned().fold(0.0, f64::max);
    let boosted = y2 + 25.0 / (2.0 * g);
    assert!(
        (apex - boosted).abs() <= 1e-5,
        "apex {apex}, closed form {boosted}"
    );
    assert_eq!(r.stats.state_events, 3);
}

/// A sampled reinit kicks a resting ball up at 2 m/s every 0.5 s; it lands
/// (e = 0) after 4/g s and rests until the next sample. Samples end a step
/// exactly, so the hops follow y = 2 s - g s^2/2 to rounding.
#[test]
fn samples_kick_a_resting_ball() {
    let r = run_moreau("tests/models/contacts/hops.rmo", 1e-5, None);
    common::check_hops(&r, 1e-12);
    assert_eq!((r.stats.time_events, r.stats.state_events), (3, 0));
}

/// Samples at the start and at the stop time fire, and a when-condition
/// rising at a sample instant fires with it (five samples, one rise).
#[test]
fn samples_fire_at_the_start_the_stop_and_beside_a_when_event() {
    let r = run_moreau("tests/models/contacts/sample_edges.rmo", 1e-4, None);
    common::check_sample_edges(&r);
}

/// `terminate` in the event of a sample at the start time ends the run
/// there, as on the BDF.
#[test]
fn terminate_at_a_start_time_sample_ends_the_run() {
    let r = run_moreau("tests/models/contacts/terminate_at_start.rmo", 1e-4, None);
    common::check_terminated_at_start(&r);
}
