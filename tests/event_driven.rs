//! The event-driven variant for set-valued contacts
//! (`solve::event_driven`): impact times to the BDF's tolerance, the end of
//! a Zeno sequence in a resting contact, lift-off by the sign of the force,
//! and the per-model choice and refusals.

mod common;

use rmoc::solve::{Results, Solver};

fn run(file: &str, tolerance: f64, stop: Option<f64>) -> Results {
    common::simulate_with(
        file,
        Solver::EventDriven,
        &common::Run {
            tolerance: Some(tolerance),
            stop,
            ..common::Run::default()
        },
    )
}

fn col(r: &Results, name: &str) -> Vec<f64> {
    let k = r.column(name).unwrap_or_else(|| panic!("no column {name}"));
    r.rows.iter().map(|row| row[k]).collect()
}

/// The rows of an event: the results hold its left and right limits at one
/// time.
fn events(r: &Results) -> Vec<usize> {
    (1..r.times.len())
        .filter(|&i| r.times[i] == r.times[i - 1])
        .collect()
}

/// A ball dropped from 1 m with e = 0.8: impacts at t1 = sqrt(2/g),
/// t_{k+1} = t_k + 2 e^k v1/g, to 1e-10 at tolerance 1e-12; each impact
/// reverses the speed times e exactly; after the accumulation point
/// t1 (1 + 2e/(1-e)) = 4.0637 s the ball rests with N = m g.
#[test]
fn a_bouncing_ball_hits_at_the_closed_form_times_and_comes_to_rest() {
    let r = run("tests/models/contacts/ball.rmo", 1e-12, Some(6.0));
    let (y, v, n) = (col(&r, "y"), col(&r, "v"), col(&r, "N"));
    let g: f64 = 9.81;
    let mut t = (2.0 / g).sqrt();
    let mut speed = g * t;
    let ev = events(&r);
    assert!(ev.len() >= 10, "{} events", ev.len());
    for (k, &i) in ev.iter().take(10).enumerate() {
        assert!(
            (r.times[i] - t).abs() <= 1e-10,
            "impact {k}: {} against {t} ({:e})",
            r.times[i],
            r.times[i] - t
        );
        assert!(
            ((v[i - 1] + speed) / speed).abs() < 1e-9,
            "speed before {k}"
        );
        assert!((v[i] + 0.8 * v[i - 1]).abs() < 1e-12 * speed, "rebound {k}");
        speed *= 0.8;
        t += 2.0 * speed / g;
    }
    let lowest = y.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(lowest >= -1e-12, "the ball went {lowest:e} below the plane");
    let t_rest = (2.0 / g).sqrt() * (1.0 + 2.0 * 0.8 / 0.2);
    for i in (0..r.times.len()).filter(|&i| r.times[i] > t_rest + 1e-6) {
        assert!(
            y[i].abs() < 1e-12 && v[i] == 0.0,
            "t = {}: y {}, v {}",
            r.times[i],
            y[i],
            v[i]
        );
        assert!((n[i] - g).abs() < 1e-12, "t = {}: N = {}", r.times[i], n[i]);
    }
    let stats = r.stats.contacts.expect("contact statistics");
    assert!(stats.event_driven && stats.impacts >= 10);
}

/// 1 000 elastic impacts between two walls: the speed is exact and the
/// mass never enters a wall.
#[test]
fn elastic_impacts_between_walls_keep_the_speed_exactly() {
    let r = run("tests/models/contacts/walls.rmo", 1e-10, None);
    assert_eq!(r.stats.contacts.expect("stats").impacts, 1000);
    let worst = col(&r, "v")
        .iter()
        .map(|v| (v.abs() - 1.0).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1e-12, "speed drifts by {worst:e}");
    let least_gap = col(&r, "x")
        .iter()
        .map(|x| x.min(0.01 - x))
        .fold(f64::INFINITY, f64::min);
    assert!(least_gap >= -1e-9 * 0.01, "gap {least_gap:e}");
}

/// A unit mass resting on a plane, pulled up by a force t: the contact
/// force is g - t until it reaches zero at t = g (the sign test), where the
/// mass lifts off and then rises as (t - g)^3 / 6.
#[test]
fn a_resting_mass_lifts_off_when_its_contact_force_reaches_zero() {
    let r = run("tests/models/contacts/liftoff.rmo", 1e-10, None);
    let g = 9.81;
    let ev = events(&r);
    assert_eq!(ev.len(), 1, "one event");
    assert!(
        (r.times[ev[0]] - g).abs() < 1e-9,
        "lift-off at {}",
        r.times[ev[0]]
    );
    let (y, n) = (col(&r, "y"), col(&r, "N"));
    for (i, &t) in r.times.iter().enumerate() {
        let (y_exact, n_exact) = if t < g {
            (0.0, g - t)
        } else {
            ((t - g).powi(3) / 6.0, 0.0)
        };
        assert!(
            (y[i] - y_exact).abs() < 1e-9,
            "t = {t}: y {} vs {y_exact}",
            y[i]
        );
        assert!(
            (n[i] - n_exact).abs() < 1e-9,
            "t = {t}: N {} vs {n_exact}",
            n[i]
        );
    }
    let stats = r.stats.contacts.expect("stats");
    assert_eq!((stats.impacts, stats.lift_offs), (0, 1));
}

/// A rod falling flat on two supports: both contacts close at one event
/// and take equal impulses, as the Moreau stepper's test pins.
#[test]
fn a_rod_falling_flat_closes_both_contacts_at_one_event() {
    let r = run("tests/models/contacts/rod.rmo", 1e-10, None);
    let ev = events(&r);
    assert!(!ev.is_empty());
    let i = ev[0];
    let (w, vy) = (col(&r, "w"), col(&r, "vy"));
    assert!(w[i].abs() < 1e-12, "the rod turns: w = {}", w[i]);
    assert!(vy[i] > 0.0 && (vy[i] + 0.5 * vy[i - 1]).abs() < 1e-9 * vy[i - 1].abs());
}

fn rmoc(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("rmoc runs")
}

/// `experiment(__rmoc_solver = "event-driven")` chooses the solver for the
/// model; `--solver` overrides it.
#[test]
fn the_model_chooses_the_event_driven_solver() {
    let out = std::env::temp_dir().join(format!("rmoc_ed_{}.csv", std::process::id()));
    let o = rmoc(&[
        "simulate",
        "tests/models/contacts/liftoff.rmo",
        "--stats",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Statistics go to stderr, beside the diagnostics.
    let stats = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stats}");
    assert!(
        stats.contains("contact events: impacts 0, lift-offs 1"),
        "{stats}"
    );
    let o = rmoc(&[
        "simulate",
        "tests/models/contacts/liftoff.rmo",
        "--solver",
        "moreau",
        "--stats",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Moreau-Jean steps"));
    let _ = std::fs::remove_file(&out);
}

/// Friction, `--step` and an unknown solver are refused with exit 1 and no
/// result file.
#[test]
fn the_event_driven_solver_refuses_what_it_cannot_do() {
    let out = std::env::temp_dir().join(format!("rmoc_ed_bad_{}.csv", std::process::id()));
    let o_str = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["tests/models/contacts/slide_stop.rmo"],
            "does not handle friction",
        ),
        (
            &[
                "tests/models/contacts/ball.rmo",
                "--solver",
                "event-driven",
                "--step",
                "1e-3",
            ],
            "`--step` sets the step of a fixed-step solver",
        ),
        (
            &["tests/models/contacts/ball.rmo", "--solver", "events"],
            "unknown solver `events`",
        ),
    ];
    for (args, words) in cases {
        let mut all = vec!["simulate"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", o_str]);
        let o = rmoc(&all);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(words), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} left a result");
    }
    let o = rmoc(&[
        "simulate",
        "tests/models/contacts/slide_stop.rmo",
        "-o",
        o_str,
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("slide_stop.rmo:14:"));
}

/// The rigid backlash of `Contact.Unilateral.RotationalClearance`: after
/// the impacts die out, driver and load turn together, so their speed is
/// the closed form t tau / (J1 + J2) = 1.2 rad/s at t = 3; the load's angle
/// agrees with the Moreau stepper at h = 1e-5 (they differ by about 1e-11).
#[test]
fn a_rigid_backlash_ends_with_the_closed_form_speed() {
    let r = run("tests/models/contacts/clearance.rmo", 1e-10, None);
    let last = |name: &str| *col(&r, name).last().expect("rows");
    for name in ["driver.w", "load.w"] {
        assert!((last(name) - 1.2).abs() < 1e-9, "{name} = {}", last(name));
    }
    let m = common::simulate_with(
        "tests/models/contacts/clearance.rmo",
        Solver::Moreau { step: 1e-5 },
        &common::Run::default(),
    );
    let k = m.column("load.phi").expect("load.phi");
    let moreau = m.rows.last().expect("rows")[k];
    assert!(
        (last("load.phi") - moreau).abs() < 1e-8,
        "{} vs {moreau}",
        last("load.phi")
    );
    assert!(r.stats.contacts.expect("stats").impacts > 10);
}

/// A mass resting on a table that moves as A sin(w t) with A w^2 = 16 >
/// g: the contact force g - A w^2 sin(w t) holds it until it reaches zero
/// at t = asin(g / (A w^2)) / w, where it lifts off; it never goes below
/// the table. The gap depends on time explicitly, so this pins the time
/// term of the held contact's acceleration.
#[test]
fn a_mass_on_a_shaken_table_lifts_off_where_its_force_vanishes() {
    let r = run("tests/models/contacts/table.rmo", 1e-10, None);
    let (g, a, w): (f64, f64, f64) = (9.81, 0.01, 40.0);
    let t_off = (g / (a * w * w)).asin() / w;
    let ev = events(&r);
    assert!(!ev.is_empty());
    assert!(
        (r.times[ev[0]] - t_off).abs() < 1e-9,
        "lift-off at {} against {t_off}",
        r.times[ev[0]]
    );
    let (y, n) = (col(&r, "y"), col(&r, "N"));
    for (i, &t) in r.times.iter().enumerate() {
        let table = a * (w * t).sin();
        assert!(
            y[i] - table >= -1e-9,
            "t = {t}: {:e} below the table",
            y[i] - table
        );
        if t < t_off {
            let exact = g - a * w * w * (w * t).sin();
            assert!(
                (n[i] - exact).abs() < 1e-6,
                "t = {t}: N {} against {exact}",
                n[i]
            );
        }
    }
    assert_eq!(r.stats.contacts.expect("stats").lift_offs, 1);
}

/// The shaken table with its contact declared twice: the held system is
/// singular, so Lemke's algorithm splits the force between the two, and a
/// contact it leaves without force reports its opening gap acceleration as
/// the lift-off function. Over 0.5 s (four flights) the mass lifts off,
/// lands and rebounds at the single table's instants and ends in its state.
#[test]
fn a_redundant_contact_lifts_off_and_lands_as_a_single_one() {
    let single = run("tests/models/contacts/table.rmo", 1e-10, Some(0.5));
    let doubled = run("tests/models/contacts/doubled_table.rmo", 1e-10, None);
    let instants = |r: &Results| {
        let mut ts: Vec<f64> = events(r).iter().map(|&i| r.times[i]).collect();
        ts.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        ts
    };
    let (a, b) = (instants(&single), instants(&doubled));
    assert!(a.len() >= 6, "{} events", a.len());
    assert_eq!(a.len(), b.len(), "{a:?} against {b:?}");
    for (ta, tb) in a.iter().zip(&b) {
        assert!((ta - tb).abs() < 1e-9, "event at {tb} against {ta}");
    }
    for name in ["y", "v"] {
        let (x, y) = (col(&single, name), col(&doubled, name));
        let (x, y) = (x.last().expect("rows"), y.last().expect("rows"));
        assert!((x - y).abs() < 1e-9, "{name}(0.5) = {y} against {x}");
    }
    let n = col(&single, "N");
    let (n1, n2) = (col(&doubled, "N1"), col(&doubled, "N2"));
    // Forces compared at the output instants away from events (an event's
    // rows hold its left and right limits).
    let once = |r: &Results, t: f64| r.times.iter().filter(|&&s| s == t).count() == 1;
    for (i, &t) in doubled.times.iter().enumerate() {
        assert!(n1[i] >= 0.0 && n2[i] >= 0.0, "t = {t}: a pulling force");
        if !once(&doubled, t) || !once(&single, t) {
            continue;
        }
        if let Some(k) = single.times.iter().position(|&s| s == t) {
            assert!(
                (n1[i] + n2[i] - n[k]).abs() < 1e-6,
                "t = {t}: N1 + N2 = {} against {}",
                n1[i] + n2[i],
                n[k]
            );
        }
    }
}

/// When-clauses between contact events: a rebound (a contact event) makes
/// `vy > 0` true at the impact instant, so the bounces of a ball dropped
/// from 1 m (e = 0.5) are counted at the closed-form times t1 = sqrt(2/g),
/// t2 = 2 t1, and the reinit at the second sends it up at 5 m/s exactly:
/// apex 25/(2g), third impact at t2 + 10/g.
#[test]
fn when_clauses_fire_at_contact_events() {
    let r = run("tests/models/contacts/counted.rmo", 1e-10, None);
    let g: f64 = 9.81;
    let (bounces, seen, y) = (col(&r, "bounces"), col(&r, "tBounce"), col(&r, "y"));
    let first_seen = |n: f64| seen[bounces.iter().position(|&b| b == n).expect("bounce")];
    let t1 = (2.0 / g).sqrt();
    for (n, t) in [(1.0, t1), (2.0, 2.0 * t1), (3.0, 2.0 * t1 + 10.0 / g)] {
        let s = first_seen(n);
        assert!((s - t).abs() <= 1e-9, "bounce {n} at {s}, closed form {t}");
    }
    let apex = y.iter().cloned().fold(0.0, f64::max);
    assert!((apex - 25.0 / (2.0 * g)).abs() <= 1e-6, "apex {apex}");
    assert_eq!(*bounces.last().expect("rows"), 3.0);
}

/// A sampled reinit kicks a resting ball up at 2 m/s every 0.5 s; it lands
/// (e = 0) after 4/g s and rests until the next sample. The sample instants
/// bound the BDF's steps, so the hops follow y = 2 s - g s^2/2 exactly.
#[test]
fn samples_kick_a_resting_ball_between_contact_events() {
    let r = run("tests/models/contacts/hops.rmo", 1e-10, None);
    common::check_hops(&r, 1e-9);
    assert_eq!((r.stats.time_events, r.stats.state_events), (3, 2));
}

/// Samples at the start and at the stop time fire, and a when-condition
/// rising at a sample instant fires with it (five samples, one rise).
#[test]
fn samples_fire_at_the_start_the_stop_and_beside_a_when_event() {
    let r = run("tests/models/contacts/sample_edges.rmo", 1e-8, None);
    common::check_sample_edges(&r);
}

/// `terminate` in the event of a sample at the start time ends the run
/// there, as on the BDF.
#[test]
fn terminate_at_a_start_time_sample_ends_the_run() {
    let r = run("tests/models/contacts/terminate_at_start.rmo", 1e-8, None);
    common::check_terminated_at_start(&r);
}

/// A column of 40 masses on a floor (80 states, one contact), pulled up
/// until it lifts off: the held motion's Jacobian on its sparse pattern
/// (coloured differences, sparse LU) gives the run of the dense one (a
/// difference per state, dense LU) to the tolerance, with the same contact
/// events. A pattern that missed an entry would make the Newton matrix
/// wrong there and the runs part.
#[test]
fn a_column_on_a_floor_runs_alike_on_the_sparse_and_the_dense_jacobian() {
    let file = "tests/models/contacts/stack_on_floor.rmo";
    let c = common::compile_file(&common::project(file), None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let run = |linear_solver| {
        let request = rmoc::solve::settings::RunRequest {
            linear_solver,
            ..Default::default()
        };
        let opts = request.resolve(&c.causal).expect("settings");
        rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs")
    };
    use rmoc::solve::jacobian::LinearSolver;
    let (sparse, dense) = (run(LinearSolver::Sparse), run(LinearSolver::Dense));
    let (cs, cd) = (
        sparse.stats.contacts.expect("contact statistics"),
        dense.stats.contacts.expect("contact statistics"),
    );
    assert_eq!((cs.impacts, cs.lift_offs), (cd.impacts, cd.lift_offs));
    assert!(cs.lift_offs > 0, "{}", sparse.stats);
    for name in ["y[1]", "y[40]", "v[1]", "N"] {
        let (a, b) = (col(&sparse, name), col(&dense, name));
        let last = (a[a.len() - 1], b[b.len() - 1]);
        assert!(
            (last.0 - last.1).abs() <= 1e-4 * (1.0 + last.1.abs()),
            "{name}: {} sparse, {} dense",
            last.0,
            last.1
        );
    }
}
