//! `rmoc sweep`: the grid, zip and samples forms, failing points, the
//! equality of its summary with separate `rmoc simulate` runs, and the
//! equality of its table on one and on two worker threads.

mod common;

use common::{exit_and_text, model_file, rmoc_cli, scratch_dir};
use std::path::{Path, PathBuf};

/// A mass on a spring and a damper with Integer and Boolean parameters
/// and an assert on its stiffness (shared with the Python tests).
const OSCILLATOR: &str = include_str!("models/oscillator.rmo");

/// The summary's rows as cells, by column name.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn read(path: &Path) -> Table {
        let text = std::fs::read_to_string(path).expect("summary.csv");
        let mut lines = text.lines().map(cells);
        let header = lines.next().expect("header");
        Table {
            header,
            rows: lines.collect(),
        }
    }

    fn get(&self, row: usize, column: &str) -> &str {
        let k = self
            .header
            .iter()
            .position(|h| h == column)
            .unwrap_or_else(|| panic!("no column {column} in {:?}", self.header));
        &self.rows[row][k]
    }
}

/// The cells of one CSV line (quotes removed; a quoted cell may hold commas).
fn cells(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cell)),
            _ => cell.push(ch),
        }
    }
    out.push(cell);
    out
}

/// Runs `rmoc sweep` on `model` with `args` into a fresh folder: exit
/// code, text, and the folder.
fn sweep(model: &Path, args: &[&str]) -> (Option<i32>, String, PathBuf) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = scratch_dir("sweep").join(format!("run{k}"));
    let _ = std::fs::remove_dir_all(&dir);
    let model = model.to_str().expect("path");
    let dir_s = dir.to_str().expect("path");
    let mut all = vec!["sweep", model, "-o", dir_s];
    all.extend_from_slice(args);
    let (code, text) = exit_and_text(&rmoc_cli(&all));
    (code, text, dir)
}

/// The last row of `rmoc simulate` with `params`, by column name.
fn simulate_final(model: &Path, params: &[String]) -> (Vec<String>, Vec<String>) {
    let out = scratch_dir("sweep-single").join(format!(
        "{}.csv",
        params.join("_").replace(['=', '.', '-'], "_")
    ));
    let mut args = vec![
        "simulate".to_string(),
        model.display().to_string(),
        "-o".to_string(),
        out.display().to_string(),
    ];
    for p in params {
        args.push("-p".to_string());
        args.push(p.clone());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, text) = exit_and_text(&rmoc_cli(&refs));
    assert_eq!(code, Some(0), "{text}");
    let text = std::fs::read_to_string(&out).expect("result");
    let mut lines = text.lines();
    let header = cells(lines.next().expect("header"));
    let last = cells(lines.last().expect("rows"));
    (header, last)
}

/// Every column of every ok point equals the last row of a separate run
/// at that point's parameters, digit for digit.
fn assert_equals_separate_runs(model: &Path, t: &Table, params: &[&str]) {
    for row in 0..t.rows.len() {
        if t.get(row, "status") != "ok" {
            continue;
        }
        let given: Vec<String> = params
            .iter()
            .map(|p| format!("{p}={}", t.get(row, p)))
            .collect();
        let (names, last) = simulate_final(model, &given);
        let mut compared = 0;
        for (name, value) in names.iter().zip(&last).skip(1) {
            if !t.header.contains(name) {
                continue;
            }
            compared += 1;
            assert_eq!(t.get(row, name), value, "point {row} ({given:?}): {name}");
        }
        assert!(compared > 0, "no column of the run in {:?}", t.header);
    }
}

#[test]
fn a_grid_runs_every_combination_and_equals_separate_runs() {
    let model = model_file("oscillator", OSCILLATOR);
    let (code, text, dir) = sweep(&model, &["-p", "k=1:4:4", "-p", "d=0.1,0.2", "-q"]);
    assert_eq!(code, Some(0), "{text}");
    let t = Table::read(&dir.join("summary.csv"));
    assert_eq!(
        t.header,
        [
            "point", "k", "d", "status", "x", "v", "der(x)", "der(v)", "message"
        ]
    );
    assert_eq!(t.rows.len(), 8);
    // The first axis varies slowest.
    let pairs: Vec<(String, String)> = (0..8)
        .map(|r| (t.get(r, "k").to_string(), t.get(r, "d").to_string()))
        .collect();
    assert_eq!(pairs[0], ("1.0".into(), "0.1".into()));
    assert_eq!(pairs[1], ("1.0".into(), "0.2".into()));
    assert_eq!(pairs[2], ("2.0".into(), "0.1".into()));
    assert_eq!(pairs[7], ("4.0".into(), "0.2".into()));
    assert!((0..8).all(|r| t.get(r, "status") == "ok"));
    assert_equals_separate_runs(&model, &t, &["k", "d"]);
}

#[test]
fn zipped_axes_pair_their_values_and_one_value_goes_with_every_point() {
    let model = model_file("oscillator", OSCILLATOR);
    let (code, text, dir) = sweep(
        &model,
        &[
            "-p",
            "k=1,2,3",
            "-p",
            "d=0.1,0.2,0.3",
            "-p",
            "m=2",
            "--zip",
            "-q",
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    let t = Table::read(&dir.join("summary.csv"));
    assert_eq!(t.rows.len(), 3);
    assert_eq!(t.get(2, "k"), "3.0");
    assert_eq!(t.get(2, "d"), "0.3");
    assert_eq!(t.get(2, "m"), "2.0");
    assert_equals_separate_runs(&model, &t, &["k", "d", "m"]);

    let (code, text, _) = sweep(&model, &["-p", "k=1,2,3", "-p", "d=0.1,0.2", "--zip"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("`--zip` pairs the k-th values"), "{text}");
    assert!(text.contains("k has 3, d has 2"), "{text}");
}

#[test]
fn samples_come_from_a_csv_file_with_booleans_and_integers() {
    let model = model_file("oscillator", OSCILLATOR);
    let samples = model.with_file_name("points.csv");
    std::fs::write(
        &samples,
        // With the byte-order mark spreadsheets write.
        "\u{feff}k, forced, n\n# a comment line\n1.5, true, 3\n2.5, false, 3\n\n4, true, -1\n",
    )
    .expect("write");
    let (code, text, dir) = sweep(
        &model,
        &[
            "--samples",
            samples.to_str().expect("path"),
            "-p",
            "d=0.25",
            "--summary",
            "final,max,min,mean,rms",
            "--outputs",
            "x",
            "-q",
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    let t = Table::read(&dir.join("summary.csv"));
    assert_eq!(
        t.header,
        [
            "point", "k", "forced", "n", "d", "status", "x", "max(x)", "min(x)", "mean(x)",
            "rms(x)", "message"
        ]
    );
    assert_eq!(t.rows.len(), 3);
    assert_eq!(t.get(0, "forced"), "true");
    assert_eq!(t.get(0, "n"), "3");
    assert_eq!(t.get(2, "n"), "-1");
    assert_equals_separate_runs(&model, &t, &["k", "forced", "n", "d"]);
    // The statistics against the separate run's rows: max and min exactly,
    // the time averages by the trapezoidal rule.
    let out = scratch_dir("sweep-single").join("stats.csv");
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-p",
        "k=2.5",
        "-p",
        "forced=false",
        "-p",
        "n=3",
        "-p",
        "d=0.25",
        "-o",
        out.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    let (names, rows) = rmoc::output::csv::read(&out).expect("read");
    let x = names.iter().position(|n| n == "x").expect("x");
    let max = rows.iter().map(|r| r[x]).fold(f64::MIN, f64::max);
    let min = rows.iter().map(|r| r[x]).fold(f64::MAX, f64::min);
    let (mut integral, mut squares) = (0.0, 0.0);
    for w in rows.windows(2) {
        let dt = w[1][0] - w[0][0];
        integral += 0.5 * dt * (w[0][x] + w[1][x]);
        squares += 0.5 * dt * (w[0][x].powi(2) + w[1][x].powi(2));
    }
    let span = rows.last().expect("rows")[0] - rows[0][0];
    let read = |c: &str| t.get(1, c).parse::<f64>().expect("number");
    assert_eq!(read("max(x)"), max);
    assert_eq!(read("min(x)"), min);
    assert!((read("mean(x)") - integral / span).abs() < 1e-12);
    assert!((read("rms(x)") - (squares / span).sqrt()).abs() < 1e-12);
}

#[test]
fn a_failing_point_is_a_row_with_its_diagnostic_and_the_others_run() {
    let model = model_file("oscillator", OSCILLATOR);
    let (code, text, dir) = sweep(&model, &["-p", "k=2,-1,3", "-q"]);
    assert_eq!(code, Some(0), "{text}");
    let t = Table::read(&dir.join("summary.csv"));
    assert_eq!(t.get(0, "status"), "ok");
    assert_eq!(t.get(1, "status"), "failed");
    assert_eq!(t.get(2, "status"), "ok");
    assert_eq!(t.get(1, "x"), "");
    let message = t.get(1, "message");
    assert!(
        message.contains("oscillator.rmo:11:3: error[assertion]:")
            && message.contains("the spring stiffness k must be positive"),
        "{message}"
    );
    assert_equals_separate_runs(&model, &t, &["k"]);
    // Every point failing is an error of the whole command (its table is
    // still written).
    let (code, text, dir) = sweep(&model, &["-p", "k=-1,-2", "-q"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("every point failed"), "{text}");
    assert!(dir.join("summary.csv").exists());
}

#[test]
fn one_and_two_worker_threads_give_the_same_table() {
    let model = model_file("oscillator", OSCILLATOR);
    let args = [
        "-p",
        "k=0.5:8:13",
        "-p",
        "d=0,0.3,-0.1",
        "--summary",
        "final,rms",
        "-q",
    ];
    let (code1, text1, dir1) = sweep(&model, &[&args[..], &["-j", "1"]].concat());
    let (code2, text2, dir2) = sweep(&model, &[&args[..], &["-j", "2"]].concat());
    assert_eq!((code1, code2), (Some(0), Some(0)), "{text1}{text2}");
    let one = std::fs::read_to_string(dir1.join("summary.csv")).expect("table");
    let two = std::fs::read_to_string(dir2.join("summary.csv")).expect("table");
    assert_eq!(one.lines().count(), 1 + 39);
    assert_eq!(one, two);
}

#[test]
fn saved_results_equal_the_separate_runs_files() {
    let model = model_file("oscillator", OSCILLATOR);
    let (code, text, dir) = sweep(&model, &["-p", "k=1,3,5", "--save-results", "0,2", "-q"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!dir.join("point_1.csv").exists());
    // An earlier sweep's files do not survive into the next one's folder.
    let again = |args: &[&str]| {
        let mut all = vec![
            "sweep",
            model.to_str().expect("path"),
            "-o",
            dir.to_str().expect("path"),
            "-q",
        ];
        all.extend_from_slice(args);
        exit_and_text(&rmoc_cli(&all))
    };
    let (code, text) = again(&["-p", "k=2,-1", "--save-results"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(dir.join("point_0.csv").exists());
    assert!(!dir.join("point_1.csv").exists(), "the failed point's file");
    assert!(
        !dir.join("point_2.csv").exists(),
        "the earlier sweep's file"
    );
    let (code, text) = again(&["-p", "k=1,3,5", "--save-results", "0,2"]);
    assert_eq!(code, Some(0), "{text}");
    for (point, k) in [(0, "1"), (2, "5")] {
        let saved = std::fs::read(dir.join(format!("point_{point}.csv"))).expect("saved");
        let out = scratch_dir("sweep-single").join(format!("saved{point}.csv"));
        let (code, text) = exit_and_text(&rmoc_cli(&[
            "simulate",
            model.to_str().expect("path"),
            "-p",
            &format!("k={k}"),
            "-o",
            out.to_str().expect("path"),
        ]));
        assert_eq!(code, Some(0), "{text}");
        assert_eq!(saved, std::fs::read(&out).expect("single"), "point {point}");
    }
}

/// Bad input: a located diagnostic, exit 1, no summary written.
fn assert_refused(model: &Path, args: &[&str], wanted: &[&str]) {
    let (code, text, dir) = sweep(model, args);
    assert_eq!(code, Some(1), "{args:?}: {text}");
    for w in wanted {
        assert!(text.contains(w), "{args:?}: wanted `{w}` in:\n{text}");
    }
    assert!(!text.contains("panicked"), "{text}");
    assert!(!dir.join("summary.csv").exists(), "{args:?}");
}

#[test]
fn bad_sweeps_are_refused_with_a_diagnostic() {
    let model = model_file("oscillator", OSCILLATOR);
    assert_refused(
        &model,
        &["-p", "kk=1,2"],
        &["no parameter `kk`", "did you mean `k`?"],
    );
    assert_refused(&model, &["-p", "k=1:2"], &["a range is START:STOP:N"]);
    assert_refused(&model, &["-p", "k=1:2:0"], &["N, the number of values"]);
    assert_refused(&model, &["-p", "k=1,two"], &["`two` is not a value of `k`"]);
    assert_refused(
        &model,
        &["-p", "n=1:2:3"],
        &["`n` takes a whole number below 2^53, not 1.5"],
    );
    assert_refused(&model, &["-p", "x=1,2"], &["`x` is not a parameter"]);
    assert_refused(&model, &["-p", "k=1", "-p", "k=2"], &["sets `k` twice"]);
    assert_refused(
        &model,
        &["-p", "k=1,2", "--outputs", "xx"],
        &[
            "`--outputs xx` matches no result column",
            "did you mean `x`?",
        ],
    );
    assert_refused(
        &model,
        &["-p", "k=1", "--summary", "median"],
        &["not a statistic"],
    );
    assert_refused(&model, &[], &["nothing to sweep"]);
    assert_refused(
        &model,
        &["-p", "k=1,2", "--save-results", "5"],
        &["point numbers"],
    );
    let samples = model.with_file_name("bad.csv");
    std::fs::write(&samples, "k,d\n1,0.1\n2,zero\n").expect("write");
    assert_refused(
        &model,
        &["--samples", samples.to_str().expect("path")],
        &["bad.csv:3:3", "`zero` is not a value of `d`", "2,zero"],
    );
    std::fs::write(&samples, "k,d\n1,0.1,7\n").expect("write");
    assert_refused(
        &model,
        &["--samples", samples.to_str().expect("path")],
        &["bad.csv:2:", "this row has 3 values and the header 2 names"],
    );
    std::fs::write(&samples, "k,dd\n1,0.1\n").expect("write");
    assert_refused(
        &model,
        &["--samples", samples.to_str().expect("path")],
        &["bad.csv:1:3", "no parameter `dd`"],
    );
    assert_refused(
        &model,
        &["--samples", samples.to_str().expect("path"), "-p", "m=1,2"],
        &["no parameter `dd`"],
    );
    std::fs::write(&samples, "k\n1\n").expect("write");
    assert_refused(
        &model,
        &["--samples", samples.to_str().expect("path"), "-p", "m=1,2"],
        &["beside --samples, -p sets one value"],
    );
    assert_refused(
        &model,
        &["--samples", "/nonexistent/points.csv"],
        &["cannot read `/nonexistent/points.csv`"],
    );
}

/// With `--outputs`, the saved results hold the chosen columns alone (the
/// summary reads the same values).
#[test]
fn saved_results_hold_the_outputs_columns() {
    let model = model_file("oscillator", OSCILLATOR);
    let (code, text, dir) = sweep(
        &model,
        &["-p", "k=1,3", "--outputs", "x", "--save-results", "-q"],
    );
    assert_eq!(code, Some(0), "{text}");
    let summary = Table::read(&dir.join("summary.csv"));
    for point in 0..2 {
        let saved = Table::read(&dir.join(format!("point_{point}.csv")));
        assert_eq!(saved.header, ["time", "x"]);
        let last = saved.rows.last().expect("rows");
        assert_eq!(
            last[1].parse::<f64>().expect("x"),
            summary.get(point, "x").parse::<f64>().expect("x")
        );
    }
}
