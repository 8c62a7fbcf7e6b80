//! Interpolation tables (`stdlib/Tables`): 1-D and 2-D, linear and
//! monotone cubic, inline or read from a CSV file, against closed forms.

mod common;

use common::{Run, simulate, value_at};

/// Rows every 1/100 s with `u = time` driving the tables.
fn run(src: &str, stop: f64) -> rmoc::solve::Results {
    let run = Run {
        stop: Some(stop),
        interval: Some(0.01),
        tolerance: Some(1e-10),
        ..Default::default()
    };
    simulate(src, None, &run)
}

/// Linear interpolation is exact on a piecewise-linear function (1-D,
/// uneven grid) and bilinear interpolation on a bilinear one (2-D); the
/// smooth 2-D option reproduces a linear function exactly.
#[test]
fn linear_tables_interpolate_exactly() {
    let r = run(
        r#"
model Linear
  // y = |u - 1| + 0.5 u on the grid 0, 0.3, 1, 2.5, 4 (a kink at 1).
  Tables.CombiTable1Ds one(table = [0, 1; 0.3, 0.85; 1, 0.5; 2.5, 2.75; 4, 5]);
  // f = 2 u1 + 3 u2 + u1 u2 on an uneven grid.
  Tables.CombiTable2Ds two(table = [0, 0, 1, 3;
                                    0, 0, 3, 9;
                                    2, 4, 9, 19;
                                    5, 10, 18, 34]);
  // g = 2 u1 - u2, cubic along both directions.
  Tables.CombiTable2Ds smooth(table = [0, 0, 1, 3;
                                       0, 0, -1, -3;
                                       2, 4, 3, 1;
                                       5, 10, 9, 7], smoothness = Tables.Smoothness.MonotoneContinuousDerivative1);
equation
  one.u = time;
  two.u1 = 1.2*time;
  two.u2 = 0.7*time;
  smooth.u1 = 1.2*time;
  smooth.u2 = 0.7*time;
end Linear;
"#,
        4.0,
    );
    for k in 0..=400 {
        let t = k as f64 * 0.01;
        let one = (t - 1.0).abs() + 0.5 * t;
        assert!(
            (value_at(&r, "one.y[1]", t) - one).abs() < 1e-9,
            "1-D at {t}"
        );
        let (u1, u2) = (1.2 * t, 0.7 * t);
        let two = 2.0 * u1 + 3.0 * u2 + u1 * u2;
        assert!((value_at(&r, "two.y", t) - two).abs() < 1e-9, "2-D at {t}");
        let g = 2.0 * u1 - u2;
        assert!(
            (value_at(&r, "smooth.y", t) - g).abs() < 1e-9,
            "smooth 2-D at {t}"
        );
    }
}

/// The monotone cubic goes through the points, keeps monotone data
/// monotone without overshoot where the linear one would kink, and has a
/// continuous slope at the points.
#[test]
fn the_monotone_cubic_passes_through_the_points_without_overshoot() {
    let r = run(
        r#"
model Smooth
  Tables.CombiTable1Ds t(table = [0, 0; 1, 0.1; 2, 0.2; 3, 2; 4, 2.05; 5, 2.1], smoothness = Tables.Smoothness.MonotoneContinuousDerivative1);
equation
  t.u = time;
end Smooth;
"#,
        5.0,
    );
    let points = [
        (0.0, 0.0),
        (1.0, 0.1),
        (2.0, 0.2),
        (3.0, 2.0),
        (4.0, 2.05),
        (5.0, 2.1),
    ];
    for (x, y) in points {
        assert!(
            (value_at(&r, "t.y[1]", x) - y).abs() < 1e-9,
            "through ({x}, {y})"
        );
    }
    let ys: Vec<f64> = (0..=500)
        .map(|k| value_at(&r, "t.y[1]", k as f64 * 0.01))
        .collect();
    for w in ys.windows(2) {
        assert!(w[1] >= w[0] - 1e-12, "monotone: {} then {}", w[0], w[1]);
    }
    assert!(
        ys.iter().all(|&y| (0.0..=2.1 + 1e-12).contains(&y)),
        "no overshoot"
    );
    // Slopes either side of the points 2 and 3 (where the data bend
    // hardest) agree to the difference step.
    // (Second-order one-sided differences; the linear table's slopes there
    // differ by a factor of 9 and more.)
    let y = |x: f64| value_at(&r, "t.y[1]", x);
    for x in [2.0, 3.0] {
        let h = 0.01;
        let left = (3.0 * y(x) - 4.0 * y(x - h) + y(x - 2.0 * h)) / (2.0 * h);
        let right = (-3.0 * y(x) + 4.0 * y(x + h) - y(x + 2.0 * h)) / (2.0 * h);
        assert!(
            (left - right).abs() < 0.02 * left.abs().max(right.abs()),
            "C1 at {x}: {left} against {right}"
        );
    }
}

/// Periodic extrapolation repeats the table; a table from a CSV file beside
/// the model is the same as the inline one.
#[test]
fn periodic_tables_and_tables_from_files() {
    let src = r#"
model Periodic
  Tables.CombiTable1Ds inline(table = [0, 1; 0.25, 3; 0.5, 2; 1, 1], extrapolation = Tables.Extrapolation.Periodic);
  Tables.CombiTable1Ds file(table = Tables.readCSV("mesh.csv"), extrapolation = Tables.Extrapolation.Periodic);
equation
  inline.u = time;
  file.u = time;
end Periodic;
"#;
    let path = common::model_file("Periodic", src);
    let csv = "# position in the cycle, value\n0, 1\n0.25, 3\n\n0.5;2\n1 1\n";
    std::fs::write(path.with_file_name("mesh.csv"), csv).expect("write table");
    let c = common::compile_file(&path, None);
    let r = common::simulate_compiled(
        &c,
        &Run {
            stop: Some(3.0),
            interval: Some(0.01),
            ..Default::default()
        },
    );
    for k in 0..=100 {
        let t = k as f64 * 0.01;
        let y = value_at(&r, "inline.y[1]", t);
        for period in [1.0, 2.0] {
            let again = value_at(&r, "inline.y[1]", t + period);
            assert!((again - y).abs() < 1e-9, "period at {t}: {y} then {again}");
        }
        assert_eq!(
            value_at(&r, "file.y[1]", t),
            y,
            "file against inline at {t}"
        );
    }
}

/// The table's slope reaches the Newton matrix: der(x) = f(x) with f
/// linear in a table decays as the exponential.
#[test]
fn a_table_in_a_state_equation_decays_as_its_closed_form() {
    let r = run(
        r#"
model Decay
  Tables.CombiTable1Ds f(table = [-1, 2; 0, 0; 3, -6]);
  Real x(start = 2.5, fixed = true);
equation
  f.u = x;
  der(x) = f.y[1];
end Decay;
"#,
        2.0,
    );
    for t in [0.5f64, 1.0, 2.0] {
        let want = 2.5 * (-2.0 * t).exp();
        let got = value_at(&r, "x", t);
        assert!(
            (got / want - 1.0).abs() < 1e-6,
            "x({t}) = {got}, closed form {want}"
        );
    }
    assert!(r.stats.integrator.jacobians <= 3, "{}", r.stats);
}

/// A table's argument outside its range with NoExtrapolation (the default)
/// stops the run with the table's message; an abscissa that does not
/// increase is refused at initialization.
#[test]
fn out_of_range_and_unordered_tables_are_refused() {
    let run = |src: &str| {
        let path = common::model_file("Bad", src);
        std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .args(["simulate", &path.display().to_string(), "-o"])
            .arg(path.with_extension("csv"))
            .output()
            .expect("run rmoc")
    };
    let out = run(r#"
model Outside
  Tables.CombiTable1Ds t(table = [0, 0; 1, 1]);
equation
  t.u = time;
  annotation(experiment(StopTime = 2));
end Outside;
"#);
    let (code, text) = common::exit_and_text(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("a table's argument left its range") && text.contains("at t = 1"),
        "{text}"
    );
    assert!(!text.contains("escape to infinity"), "{text}");
    let out = run(r#"
model Unordered
  Tables.CombiTable1Ds t(table = [0, 0; 2, 1; 1, 3]);
equation
  t.u = 0.5;
end Unordered;
"#);
    let (code, text) = common::exit_and_text(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("must increase strictly"), "{text}");
}
