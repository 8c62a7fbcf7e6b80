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
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a CSV result"));
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
