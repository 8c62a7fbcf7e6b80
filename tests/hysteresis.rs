//! `rmoc hysteresis` (seed 000, section 5.2 and Table 8): on a synthetic
//! loop whose stiffness, play and offset are known it returns them; on a
//! simulated reducer stand-in (an inertia behind free play and a spring,
//! driven by Mechanics.Rotational.TorqueSequence) it returns the spring's
//! stiffness and the play; bad requests exit 1 with a message.

mod common;

use common::rmoc_cli as rmoc;
use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    common::scratch_dir("hysteresis").join(name)
}

const ARCMIN: f64 = std::f64::consts::PI / 10_800.0;

/// Eq. 25's torque at time t (rated tr, stage length tseg), restated.
fn sequence(t: f64, tr: f64, tseg: f64) -> f64 {
    let s = t / tseg;
    match s {
        s if s < 1.0 => tr * s,
        s if s < 2.0 => tr * (2.0 - s),
        s if s < 3.0 => -tr * (s - 2.0),
        s if s < 4.0 => -tr * (4.0 - s),
        s => tr * (s - 4.0),
    }
}

/// The five-stage sequence applied quasi-statically to a shaft with free
/// play `b` (arcmin) and stiffness `k` (N m/arcmin) beyond it, its angle
/// shifted by `offset` (arcmin): `rows` rows at times that never land on a
/// zero of the torque. Written in radians.
fn synthetic(name: &str, tr: f64, k: f64, b: f64, offset: f64, rows: usize) -> PathBuf {
    let path = scratch(name);
    let mut text = String::from("\"time\",\"T\",\"theta\"\n");
    let mut side = 1.0;
    for i in 0..rows {
        let t = 2.5 * (i as f64 + 0.37) / rows as f64;
        let torque = sequence(t, tr, 0.5);
        if torque != 0.0 {
            side = torque.signum();
        }
        let theta = offset + side * b / 2.0 + torque / k;
        text.push_str(&format!(
            "{},{},{}\n",
            ryu::Buffer::new().format(t),
            ryu::Buffer::new().format(torque),
            ryu::Buffer::new().format(theta * ARCMIN)
        ));
    }
    std::fs::write(&path, text).expect("write csv");
    path
}

/// `rmoc hysteresis CSV --torque T --angle theta --rated TR --json`.
fn indicators_of(csv: &Path, rated: &str) -> serde_json::Value {
    indicators(&rmoc(&[
        "hysteresis",
        csv.to_str().unwrap(),
        "--torque",
        "T",
        "--angle",
        "theta",
        "--rated",
        rated,
        "--json",
    ]))
}

fn indicators(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "rmoc hysteresis failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn get(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

/// Play b plus stiffness k, both known: k and b to 1e-6, the lost motion
/// b + 0.06 Tr/k (the median curve at +-3% of rated torque), the offset
/// removed.
#[test]
fn a_synthetic_loop_gives_its_stiffness_play_and_lost_motion() {
    let (tr, k, b, offset) = (3200.0, 1250.0, 1.0, 0.3);
    let csv = synthetic("loop.csv", tr, k, b, offset, 5000);
    let v = indicators_of(&csv, "3200");
    for key in ["stiffness_positive", "stiffness_negative", "stiffness_mean"] {
        common::assert_close(get(&v, key), k, 1e-6, 0.0);
    }
    common::assert_close(get(&v, "backlash_arcmin"), b, 1e-6, 0.0);
    common::assert_close(get(&v, "lost_motion_arcmin"), b + 0.06 * tr / k, 1e-6, 0.0);
    common::assert_close(get(&v, "offset_arcmin"), offset, 1e-6, 0.0);

    // The same loop in degrees, printed as text, and drawn.
    let svg = scratch("loop.svg");
    let path = scratch("loop_deg.csv");
    let text = std::fs::read_to_string(&csv).expect("read");
    let mut deg = String::from("\"time\",\"T\",\"theta\"\n");
    for line in text.lines().skip(1) {
        let f: Vec<f64> = line
            .split(',')
            .map(|x| x.parse().expect("number"))
            .collect();
        deg.push_str(&format!("{},{},{}\n", f[0], f[1], f[2] / ARCMIN / 60.0));
    }
    std::fs::write(&path, deg).expect("write");
    let o = rmoc(&[
        "hysteresis",
        path.to_str().unwrap(),
        "--torque",
        "T",
        "--angle",
        "theta",
        "--rated",
        "3200",
        "--angle-unit",
        "deg",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    common::assert_contains_all(
        &out,
        &[
            "torsional stiffness  K+ 1.250000e3",
            "backlash             1.000000e0 arcmin",
            "lost motion          1.153600e0 arcmin",
        ],
    );
    let drawn = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        drawn.contains("<svg") && drawn.contains("polyline"),
        "{drawn}"
    );
}

/// A reducer stand-in simulated: an output inertia turned by the sequence
/// against a spring beyond free play (Mechanics.Rotational.ElastoBacklash
/// semantics written out), slow enough to be quasi-static. The indicators
/// are the spring's stiffness and the play, within what the inertia and
/// the damper's lag leave (1e-3).
#[test]
fn a_simulated_play_and_spring_give_their_stiffness_and_play() {
    let src = include_str!("models/play_and_spring.rmo");
    let model = common::model_file("play.rmo", src);
    let csv = scratch("play.csv");
    let o = rmoc(&[
        "simulate",
        model.to_str().unwrap(),
        "-q",
        "-o",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = indicators_of(&csv, "3200");
    common::assert_close(get(&v, "stiffness_mean"), 1200.0, 1e-3, 0.0);
    common::assert_close(get(&v, "backlash_arcmin"), 2.0, 1e-3, 0.0);
}

#[test]
fn bad_requests_exit_1_with_a_message() {
    let csv = synthetic("bad.csv", 100.0, 10.0, 0.5, 0.0, 400);
    let c = csv.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--torque", "T", "--angle", "phi", "--rated", "100"],
            "the result has no column `phi`",
        ),
        (
            &["--torque", "T", "--angle", "theta", "--rated", "150"],
            "does not reach the rated torque 150 both ways",
        ),
        (
            &["--torque", "T", "--angle", "theta", "--rated", "0"],
            "the rated torque must be positive",
        ),
        (
            &[
                "--torque", "T", "--angle", "theta", "--rated", "100", "-o", "x.pdf",
            ],
            "the loop is drawn as SVG or PNG",
        ),
        (
            &["--torque", "time", "--angle", "theta", "--rated", "1"],
            "the torque never falls",
        ),
    ];
    for (args, words) in cases {
        let mut all = vec!["hysteresis", c];
        all.extend_from_slice(args);
        let o = rmoc(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let o = rmoc(&[
        "hysteresis",
        "examples/gearbox.rmo",
        "--torque",
        "T",
        "--angle",
        "theta",
        "--rated",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a CSV or MAT result"));
}
