//! `rmoc plot`: the curves land where the data says, phase portraits use
//! `--x`, and every bad request exits 1 with a message and no file.

mod common;

use common::rmoc_cli as rmoc;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    common::scratch_dir("plot").join(name)
}

/// A CSV result: time, a = t, b = 2 t + 1, c = t^2 on 0..=1000 ms.
/// Each test writes its own (tests run in parallel).
fn line_result(name: &str) -> PathBuf {
    let path = scratch(name);
    let mut text = String::from("\"time\",\"a\",\"b\",\"c\"\n");
    for i in 0..=1000 {
        let t = i as f64 / 1000.0;
        text.push_str(&format!("{t},{t},{},{}\n", 2.0 * t + 1.0, t * t));
    }
    std::fs::write(&path, text).expect("write csv");
    path
}

/// The data polylines of an SVG: the coloured ones (axes and grid are
/// black) of more than two points (a legend's sample line has two).
fn curves(svg: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline")
        .skip(1)
        .map(|p| &p[..p.find("/>").expect("element end")])
        .filter(|p| !p.contains("stroke=\"#000000\""))
        .map(|p| {
            let points = p.split("points=\"").nth(1).expect("points");
            let points = &points[..points.find('"').expect("end")];
            points
                .split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').expect("x,y");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect::<Vec<(f64, f64)>>()
        })
        .filter(|c| c.len() > 2)
        .collect()
}

/// `rmoc plot CSV ARGS... -o OUT`, which must succeed; the SVG's text.
fn plot_ok(csv: &Path, args: &[&str], out: &str) -> String {
    text(&plot_to(csv, args, out))
}

/// `rmoc plot CSV ARGS... -o OUT` (OUT in the scratch folder), which must
/// succeed; the file written.
fn plot_to(csv: &Path, args: &[&str], out: &str) -> PathBuf {
    let out = scratch(out);
    let mut all = vec!["plot", csv.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", out.to_str().expect("utf-8 path")]);
    let o = rmoc(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// b = 2 a + 1 against time is a straight line: every drawn point is on
/// the segment through the first and last (to a pixel of rounding), and the
/// curve runs from the left of the plot to the right, rising.
#[test]
fn a_straight_line_is_drawn_straight() {
    let csv = line_result("line1.csv");
    let svg = plot_ok(&csv, &["b"], "line.svg");
    let c = curves(&svg);
    assert_eq!(c.len(), 1);
    let pts = &c[0];
    let (x0, y0) = pts[0];
    let (x1, y1) = *pts.last().expect("points");
    assert!(
        x1 > x0 + 600.0 && y1 < y0 - 400.0,
        "{:?} .. {:?}",
        pts[0],
        pts.last()
    );
    for &(x, y) in pts {
        let on_line = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
        assert!((y - on_line).abs() <= 1.5, "({x}, {y}) is off the line");
    }
    assert!(
        svg.contains(">\nb\n</text>") || svg.contains(">b</text>"),
        "no axis label b"
    );
}

/// A phase portrait: c = a^2 against a. The points satisfy the parabola
/// after mapping the pixel coordinates back through the axis ranges that
/// the first and last points fix (a from 0 to 1, c from 0 to 1).
#[test]
fn a_phase_portrait_plots_one_column_against_another() {
    let svg = plot_ok(
        &line_result("line2.csv"),
        &["c", "--x", "a", "--from", "0"],
        "phase.svg",
    );
    let c = curves(&svg);
    let pts = &c[0];
    let (x0, y0) = pts[0];
    let (x1, y1) = *pts.last().expect("points");
    for &(x, y) in pts {
        let a = (x - x0) / (x1 - x0);
        let c = (y - y0) / (y1 - y0);
        assert!((c - a * a).abs() < 0.01, "({a}, {c}) is off c = a^2");
    }
}

/// Two patterns give two curves and a legend; a time window keeps only
/// its rows.
#[test]
fn several_columns_get_a_legend_and_a_window_cuts_the_rows() {
    let svg = plot_ok(
        &line_result("line3.csv"),
        &["a", "c", "--from", "0.5", "--title", "two curves"],
        "two.svg",
    );
    assert_eq!(curves(&svg).len(), 2);
    assert!(svg.contains("two curves"));
    // The legend names both.
    for name in ["a", "c"] {
        let label = svg.matches(&format!(">\n{name}\n</text>")).count()
            + svg.matches(&format!(">{name}</text>")).count();
        assert!(label >= 1, "no legend entry {name}");
    }
    // The window: curve a (= t) starts at t = 0.5, so its first point is
    // at the left edge with c's first point (0.25) below it; a full range
    // would start both at 0.
    let c = curves(&svg);
    assert!(
        c[0][0].1 < c[1][0].1,
        "a starts at {:?}, c at {:?}",
        c[0][0],
        c[1][0]
    );
}

/// Bad requests: exit 1, a message naming the problem, and no SVG left.
#[test]
fn bad_requests_exit_1_and_leave_no_file() {
    let csv = line_result("line4.csv");
    let csv = csv.to_str().unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["nope"],
            "bad1.svg",
            "no column of the result matches `nope`",
        ),
        (
            &["b", "--x", "zz"],
            "bad2.svg",
            "the result has no column `zz`",
        ),
        (
            &["b", "--from", "5"],
            "bad3.svg",
            "no rows of the result lie in the time window",
        ),
        (&["b"], "bad4.pdf", "rmoc plot writes SVG or PNG"),
    ];
    for (args, file, words) in cases {
        let out = scratch(file);
        let mut all = vec!["plot", csv];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", out.to_str().unwrap()]);
        let o = rmoc(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
    // A result that is not CSV, or not there.
    let out = scratch("bad5.svg");
    let o = rmoc(&[
        "plot",
        "examples/gearbox.rmo",
        "x",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a CSV or MAT result"));
    let o = rmoc(&["plot", "no/such.csv", "x", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
    assert!(!out.exists());
    // Values no axis can hold (the plot used to hang on them), and none to
    // draw at all.
    for (name, body, words) in [
        (
            "huge.csv",
            "0,1e308\n1,-1e308\n",
            "spans -1e308 to 1e308, beyond the range of a plot axis",
        ),
        (
            "nan.csv",
            "0,nan\n1,inf\n",
            "`x` has no finite value in the time window",
        ),
    ] {
        let csv = scratch(name);
        std::fs::write(&csv, format!("time,x\n{body}")).expect("write");
        let o = rmoc(&[
            "plot",
            csv.to_str().unwrap(),
            "x",
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(words), "{name}: {err}");
        assert!(!out.exists());
    }
}

/// The seed's Figure 6 for C = 10 um: simulate the U-joint, then plot its
/// steady-state phase portrait; the curve spans the orbit (phi1c about
/// +-1.15e-3 rad, w1c up to about 0.2 rad/s, read back from the axes).
#[test]
fn the_ujoint_phase_portrait_is_plotted_from_a_simulation() {
    let csv = scratch("ujoint.csv");
    let o = rmoc(&[
        "simulate",
        "examples/ujoint_clearance.rmo",
        "-p",
        "C=10e-6",
        "--stop-time",
        "0.5",
        "--interval",
        "1e-5",
        "-o",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = plot_ok(
        &csv,
        &["w1c", "--x", "phi1c", "--from", "0.3"],
        "ujoint.svg",
    );
    let c = curves(&svg);
    assert_eq!(c.len(), 1);
    // 20 000 rows, thinned to what the drawing resolves.
    assert!(
        c[0].len() > 500 && c[0].len() < 20_000,
        "{} points",
        c[0].len()
    );
    assert!(svg.contains("phi1c") && svg.contains("w1c"));
}

/// The same straight line as PNG: a 900 x 640 image whose coloured pixels
/// rise from left to right along one line, with text (tick labels and the
/// axis names, in the font rmoc carries) below the plot.
#[test]
fn a_png_plot_draws_the_line_and_its_labels() {
    let csv = line_result("line_png.csv");
    let out = plot_to(&csv, &["b"], "line.png");
    let img = image::open(&out).expect("a PNG").to_rgb8();
    assert_eq!(img.dimensions(), (900, 640));
    // The series' pixels: strongly coloured (not grey, not white).
    let mut by_column: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for (x, y, p) in img.enumerate_pixels() {
        let [r, g, b] = p.0;
        let spread = r.max(g).max(b) - r.min(g).min(b);
        if spread > 100 {
            by_column.entry(x).or_default().push(y);
        }
    }
    assert!(
        by_column.len() > 600,
        "{} columns with the curve",
        by_column.len()
    );
    let mids: Vec<(f64, f64)> = by_column
        .iter()
        .map(|(&x, ys)| {
            (
                x as f64,
                ys.iter().map(|&y| y as f64).sum::<f64>() / ys.len() as f64,
            )
        })
        .collect();
    let (first, last) = (mids[0], mids[mids.len() - 1]);
    assert!(
        last.1 < first.1 - 300.0,
        "the line does not rise: {first:?} -> {last:?}"
    );
    for &(x, y) in &mids {
        let on_line = first.1 + (last.1 - first.1) * (x - first.0) / (last.0 - first.0);
        assert!(
            (y - on_line).abs() < 3.0,
            "pixel ({x}, {y}) off the line by {}",
            y - on_line
        );
    }
    // Text: dark pixels in the band of the x axis' labels.
    let dark = (0..900)
        .flat_map(|x| (570..640).map(move |y| (x, y)))
        .filter(|&(x, y)| img.get_pixel(x, y).0.iter().all(|&c| c < 160))
        .count();
    assert!(dark > 50, "no text below the plot ({dark} dark pixels)");
}

/// A model with units, simulated once to CSV and once to MAT.
fn unit_results() -> (PathBuf, PathBuf) {
    let model = common::model_file(
        "units",
        r#"model Units
  parameter Real k(unit = "N/m") = 3 "stiffness";
  Real x(unit = "m", start = 1, fixed = true) "position";
  Real v(unit = "m/s", start = 0, fixed = true);
equation
  der(x) = v;
  der(v) = -k*x;
  annotation(experiment(StopTime = 2));
end Units;
"#,
    );
    let csv = scratch("units.csv");
    let mat = scratch("units.mat");
    for out in [&csv, &mat] {
        let o = rmoc(&[
            "simulate",
            model.to_str().expect("path"),
            "-q",
            "-o",
            out.to_str().expect("path"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    (csv, mat)
}

/// A MAT result reads back as its CSV twin (same columns, same numbers),
/// plus the parameters as constant columns and the units; its plot draws
/// the same curve, with the unit on the axis.
#[test]
fn a_mat_result_plots_as_its_csv_with_units() {
    let (csv, mat) = unit_results();
    let from_csv = rmoc::output::read(&csv).expect("csv");
    let from_mat = rmoc::output::read(&mat).expect("mat");
    let n = from_csv.names.len();
    assert_eq!(from_mat.names[..n], from_csv.names[..]);
    assert_eq!(from_mat.names[n..], ["k".to_string()]);
    let unit = |name: &str| {
        let k = from_mat
            .names
            .iter()
            .position(|n| n == name)
            .expect("column");
        from_mat.units[k].clone()
    };
    assert_eq!(unit("time").as_deref(), Some("s"));
    assert_eq!(unit("x").as_deref(), Some("m"));
    assert_eq!(unit("v").as_deref(), Some("m/s"));
    assert_eq!(unit("k").as_deref(), Some("N/m"));
    assert!(from_csv.units.iter().all(Option::is_none));
    assert_eq!(from_mat.rows.len(), from_csv.rows.len());
    for (a, b) in from_mat.rows.iter().zip(&from_csv.rows) {
        assert_eq!(a[..n], b[..]);
        assert_eq!(a[n], 3.0);
    }
    let svg_csv = plot_ok(&csv, &["x"], "units_csv.svg");
    let svg_mat = plot_ok(&mat, &["x"], "units_mat.svg");
    assert_eq!(curves(&svg_csv), curves(&svg_mat));
    assert!(svg_mat.contains("x [m]"), "no unit on the axis");
    assert!(svg_mat.contains("time [s]"));
    assert!(!svg_csv.contains("[m]"), "a CSV result has no units");
    // Parameters are columns of a MAT result: a flat line.
    let k = curves(&plot_ok(&mat, &["k"], "units_k.svg"));
    assert_eq!(k.len(), 1);
    assert!(k[0].iter().all(|p| (p.1 - k[0][0].1).abs() < 1e-9));
    // Not of a CSV result.
    let out = scratch("units_k_csv.svg");
    let o = rmoc(&[
        "plot",
        csv.to_str().expect("path"),
        "k",
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    // A broken MAT file is an error, not a panic.
    let broken = scratch("broken.mat");
    let bytes = std::fs::read(&mat).expect("mat");
    std::fs::write(&broken, &bytes[..bytes.len() / 2]).expect("write");
    let o = rmoc(&[
        "plot",
        broken.to_str().expect("path"),
        "x",
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot read") && err.contains("ends inside a matrix"),
        "{err}"
    );
    assert!(!out.exists());
}

/// `*` and `?` stay within one dotted component, `**` crosses them.
#[test]
fn wildcards_match_within_one_component_and_double_stars_across() {
    let path = scratch("dotted.csv");
    let mut text = String::from("\"time\",\"a.b.c\",\"a.x\",\"a.y\",\"b.x\",\"a.xy\"\n");
    for i in 0..=100 {
        let t = i as f64 / 100.0;
        text.push_str(&format!(
            "{t},{t},{},{},{},{}\n",
            2.0 * t,
            3.0 * t,
            4.0 * t,
            5.0 * t
        ));
    }
    std::fs::write(&path, text).expect("write");
    for (pattern, count) in [
        ("a.*", 3),
        ("a.**", 4),
        ("*.x", 2),
        ("?.x", 2),
        ("a.?", 2),
        ("**.c", 1),
        ("**", 5),
    ] {
        let svg = plot_ok(&path, &[pattern], &format!("dotted{count}.svg"));
        assert_eq!(curves(&svg).len(), count, "pattern {pattern}");
    }
    let out = scratch("dotted_none.svg");
    let o = rmoc(&[
        "plot",
        path.to_str().expect("path"),
        "*.c",
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no column of the result matches `*.c`"));
}

/// `--panels`: one panel per column, stacked; each curve fills its own
/// panel's height (its own axis), and the panels do not overlap.
#[test]
fn panels_stack_one_axis_per_column() {
    let csv = line_result("panels.csv");
    let svg = plot_ok(&csv, &["a", "b", "c", "--panels"], "panels.svg");
    let c = curves(&svg);
    assert_eq!(c.len(), 3);
    let bands: Vec<(f64, f64)> = c
        .iter()
        .map(|pts| {
            let ys = pts.iter().map(|p| p.1);
            (
                ys.clone().fold(f64::MAX, f64::min),
                ys.fold(f64::MIN, f64::max),
            )
        })
        .collect();
    for w in bands.windows(2) {
        assert!(w[0].1 < w[1].0, "panels overlap: {bands:?}");
    }
    // a (0..1) and b (1..3) have different ranges and the same drawn height.
    let height = |b: (f64, f64)| b.1 - b.0;
    assert!(
        (height(bands[0]) - height(bands[1])).abs() < 2.0,
        "{bands:?}"
    );
    // Three panels make a taller image.
    let png = plot_to(&csv, &["a", "b", "c", "--panels"], "panels.png");
    let img = image::open(&png).expect("a PNG").to_rgb8();
    assert_eq!(img.dimensions(), (900, 720));
    let coloured = img
        .pixels()
        .filter(|p| p.0.iter().max() != p.0.iter().min())
        .count();
    assert!(coloured > 1000, "{coloured} coloured pixels");
}

/// `--also`: the same columns of another result, named in the legend by
/// the file names; a column missing from it is an error naming it.
#[test]
fn also_draws_the_same_columns_of_other_results() {
    let first = line_result("first.csv");
    let second = scratch("second.csv");
    let mut text = String::from("\"time\",\"b\"\n");
    for i in 0..=100 {
        let t = i as f64 / 100.0;
        text.push_str(&format!("{t},{}\n", 3.0 - 2.0 * t));
    }
    std::fs::write(&second, text).expect("write");
    let second_s = second.to_str().expect("path");
    let svg = plot_ok(&first, &["b", "--also", second_s], "also.svg");
    let c = curves(&svg);
    assert_eq!(c.len(), 2);
    // b = 2t + 1 rises, the other's b = 3 - 2t falls (SVG y grows down).
    assert!(c[0].last().expect("points").1 < c[0][0].1);
    assert!(c[1].last().expect("points").1 > c[1][0].1);
    assert!(
        svg.contains("b (first)") && svg.contains("b (second)"),
        "legend"
    );
    let out = scratch("also_bad.svg");
    let o = rmoc(&[
        "plot",
        first.to_str().expect("path"),
        "c",
        "--also",
        second_s,
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no column of `second` matches `c`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.exists());
}
