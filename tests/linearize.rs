//! `rmoc linearize`: A, B, C, D from the compiled tangent code against a
//! hand-assembled chain and closed forms, the modes of the pendulum and of
//! the gearbox's mesh against its simulated ringing, and the files.

mod common;

use common::{
    exit_and_text, json_matrix as matrix, json_names as names, model_file, project, rmoc_cli,
    scratch_dir,
};

/// `rmoc linearize ARGS -o OUT.json`: the JSON.
fn linearize_json(args: &[&str]) -> serde_json::Value {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let out = scratch_dir("linearize").join(format!("lin{k}.json"));
    let mut all = vec!["linearize"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", out.to_str().expect("path")]);
    let (code, text) = exit_and_text(&rmoc_cli(&all));
    assert_eq!(code, Some(0), "{text}");
    serde_json::from_str(&std::fs::read_to_string(&out).expect("json")).expect("parses")
}

/// Eigenvalues (re, im) sorted by imaginary part, then real part.
fn eigenvalues(a: &[Vec<f64>]) -> Vec<(f64, f64)> {
    let mut e: Vec<(f64, f64)> = rmoc::solve::linearize::modes(a)
        .expect("modes")
        .iter()
        .map(|m| (m.re, m.im))
        .collect();
    e.sort_by(|p, q| p.1.total_cmp(&q.1).then(p.0.total_cmp(&q.0)));
    e
}

/// The chain's A equals [[0, I], [-M^-1 K, -M^-1 C]] assembled by hand
/// from its parameters (in the states' order), B and C select the last
/// inertia, and the eigenvalues agree to 1e-9 relative.
#[test]
fn a_torsional_chain_equals_its_hand_assembled_matrices() {
    let v = linearize_json(&[project("tests/models/linearize/chain4.rmo")
        .to_str()
        .expect("path")]);
    let lin = &v["linearization"];
    let states = names(&lin["states"]);
    assert_eq!(names(&lin["inputs"]), ["tau"]);
    assert_eq!(names(&lin["outputs"]), ["w4"]);
    let a = matrix(&lin["a"]);
    let (j, c, d) = (
        [0.02, 0.05, 0.03, 0.08],
        [4000.0, 2500.0, 3000.0, 1500.0],
        [0.8, 0.3, 0.5, 0.2],
    );
    // K and C of the chain: spring k joins inertia k-1 (the housing for
    // k = 0) and inertia k.
    let mut kk = [[0.0; 4]; 4];
    let mut cc = [[0.0; 4]; 4];
    for k in 0..4 {
        kk[k][k] += c[k];
        cc[k][k] += d[k];
        if k > 0 {
            kk[k - 1][k - 1] += c[k];
            cc[k - 1][k - 1] += d[k];
            kk[k - 1][k] -= c[k];
            kk[k][k - 1] -= c[k];
            cc[k - 1][k] -= d[k];
            cc[k][k - 1] -= d[k];
        }
    }
    let index = |name: &str| states.iter().position(|s| s == name).expect(name);
    let mut want = vec![vec![0.0f64; 8]; 8];
    for p in 0..4 {
        let (phi, w) = (
            index(&format!("i{}.phi", p + 1)),
            index(&format!("i{}.w", p + 1)),
        );
        want[phi][w] = 1.0;
        for q in 0..4 {
            let (phi_q, w_q) = (
                index(&format!("i{}.phi", q + 1)),
                index(&format!("i{}.w", q + 1)),
            );
            want[w][phi_q] = -kk[p][q] / j[p];
            want[w][w_q] = -cc[p][q] / j[p];
        }
    }
    for r in 0..8 {
        for s in 0..8 {
            let tol = 1e-12 * want[r][s].abs().max(1.0);
            assert!(
                (a[r][s] - want[r][s]).abs() <= tol,
                "A[{r}][{s}] = {} vs {}",
                a[r][s],
                want[r][s]
            );
        }
    }
    let b = matrix(&lin["b"]);
    let cm = matrix(&lin["c"]);
    let dm = matrix(&lin["d"]);
    for r in 0..8 {
        let expected = if r == index("i4.w") { 1.0 / j[3] } else { 0.0 };
        assert!((b[r][0] - expected).abs() < 1e-12, "B[{r}] = {}", b[r][0]);
        let expected = if r == index("i4.w") { 1.0 } else { 0.0 };
        assert_eq!(cm[0][r], expected, "C[{r}]");
    }
    assert_eq!(dm, vec![vec![0.0]]);
    let got = eigenvalues(&a);
    let wanted = eigenvalues(&want);
    for (g, w) in got.iter().zip(&wanted) {
        let size = w.0.hypot(w.1);
        assert!(
            (g.0 - w.0).hypot(g.1 - w.1) <= 1e-9 * size,
            "{g:?} vs {w:?}"
        );
    }
}

/// About its lower equilibrium the pendulum swings at sqrt(g/L) rad/s,
/// undamped.
#[test]
fn the_pendulum_swings_at_sqrt_g_over_l() {
    let model = model_file(
        "hanging",
        r#"model Hanging "a Cartesian pendulum at rest at the bottom"
  parameter Real L = 0.7;
  parameter Real g = 9.81;
  Real x(start = 0, fixed = true);
  Real y(start = -0.7);
  Real vx(start = 0, fixed = true);
  Real vy(start = 0);
  Real F;
equation
  der(x) = vx;
  der(y) = vy;
  der(vx) = -x/L*F;
  der(vy) = -y/L*F - g;
  x^2 + y^2 = L^2;
end Hanging;
"#,
    );
    let v = linearize_json(&[model.to_str().expect("path")]);
    let modes = v["modes"].as_array().expect("modes");
    assert_eq!(modes.len(), 2);
    let w = (9.81f64 / 0.7).sqrt();
    for m in modes {
        let (re, im) = (m["re"].as_f64().expect("re"), m["im"].as_f64().expect("im"));
        assert!(re.abs() < 1e-9 * w, "re {re}");
        assert!((im.abs() - w).abs() < 1e-9 * w, "im {im} vs {w}");
    }
}

/// The gearbox's mesh mode (loaded, at t = 0.1 s) is the ringing its
/// simulation shows after the load is applied: about 1.12 kHz.
#[test]
fn the_gearbox_mesh_mode_is_its_simulated_ringing() {
    let v = linearize_json(&[
        project("examples/gearbox.rmo").to_str().expect("path"),
        "--at",
        "0.1",
    ]);
    let mesh: Vec<f64> = v["modes"]
        .as_array()
        .expect("modes")
        .iter()
        .filter(|m| m["im"].as_f64().expect("im") > 0.0)
        .map(|m| m["natural_hz"].as_f64().expect("hz"))
        .filter(|f| (500.0..3000.0).contains(f))
        .collect();
    assert_eq!(mesh.len(), 1, "{mesh:?}");
    let f = mesh[0];
    assert!((1050.0..1200.0).contains(&f), "mesh mode {f} Hz");
    // The ringing: the spacing of Delta's peaks, sampled every 10 us.
    let out = scratch_dir("linearize").join("ringing.csv");
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        "examples/gearbox.rmo",
        "--stop-time",
        "0.02",
        "--interval",
        "1e-5",
        "-q",
        "-o",
        out.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    let (names, rows) = rmoc::output::csv::read(&out).expect("csv");
    let k = names.iter().position(|n| n == "Delta").expect("Delta");
    let peaks: Vec<f64> = rows
        .windows(3)
        .filter(|w| w[1][k] > w[0][k] && w[1][k] >= w[2][k])
        .map(|w| w[1][0])
        .collect();
    // The first ten periods (the ringing decays by e in about 3.5 ms; later
    // peaks are the slow drift's).
    assert!(peaks.len() > 10, "{peaks:?}");
    let ringing = 10.0 / (peaks[10] - peaks[0]);
    // Peaks read on a 10 us grid: agreement to 1%.
    assert!(
        (ringing - f).abs() < 0.01 * f,
        "ringing {ringing} Hz, mode {f} Hz"
    );
}

/// A first-order system with a direct feedthrough: exact A, B, C, D, at
/// an operating point reached by a run and set by -p, in JSON and in MAT.
#[test]
fn an_input_output_model_gives_exact_matrices_in_both_files() {
    let model = model_file(
        "io",
        r#"model Io
  input Real u;
  output Real y;
  output Real z;
  Real x(start = 1, fixed = true);
  parameter Real a = 2;
equation
  der(x) = -a*x + u^2;
  y = 3*x + 0.5*u;
  z = -y;
end Io;
"#,
    );
    let path = model.to_str().expect("path");
    let v = linearize_json(&[path, "--at", "1", "-p", "u=2", "-p", "a=4"]);
    let lin = &v["linearization"];
    assert_eq!(lin["time"].as_f64(), Some(1.0));
    // dx/dt = -4 x + u^2: B = 2 u = 4.
    assert_eq!(matrix(&lin["a"]), vec![vec![-4.0]]);
    assert_eq!(matrix(&lin["b"]), vec![vec![4.0]]);
    assert_eq!(matrix(&lin["c"]), vec![vec![3.0], vec![-3.0]]);
    assert_eq!(matrix(&lin["d"]), vec![vec![0.5], vec![-0.5]]);
    // x(0) = 1 is already the equilibrium u^2/a = 1: x stays there.
    let x0 = lin["x0"][0].as_f64().expect("x0");
    assert!((x0 - 1.0).abs() < 1e-6, "{x0}");
    assert_eq!(names(&lin["outputs"]), ["y", "z"]);
    let mat = scratch_dir("linearize").join("io.mat");
    // --stop-time sets the operating point as --at does.
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "linearize",
        path,
        "-p",
        "u=2",
        "-p",
        "a=4",
        "--stop-time",
        "0.5",
        "-o",
        mat.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("linearized at t = 0.5: 1 states, 1 inputs, 2 outputs"),
        "{text}"
    );
    let ms = rmoc::output::mat::read_matrices(&mat).expect("mat");
    let get = |name: &str| {
        ms.iter()
            .find(|m| m.0 == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    assert_eq!(get("A"), ("A".into(), 1, 1, vec![-4.0]));
    assert_eq!(get("C"), ("C".into(), 2, 1, vec![3.0, -3.0]));
    assert_eq!(get("D"), ("D".into(), 2, 1, vec![0.5, -0.5]));
    let outputs = get("outputNames");
    assert_eq!((outputs.1, outputs.2), (2, 1));
    assert_eq!(outputs.3, vec![b'y' as f64, b'z' as f64]);
}

#[test]
fn bad_linearizations_are_refused() {
    let path = project("tests/models/linearize/chain4.rmo");
    let path = path.to_str().expect("path");
    for (args, words) in [
        (vec!["-o", "lin.txt"], "writes .json or .mat"),
        (
            vec!["--at", "1", "--stop-time", "2"],
            "--at and --stop-time",
        ),
        (vec!["--at", "-1"], "invalid run settings"),
        (vec!["-p", "tauu=1"], "did you mean `tau`?"),
    ] {
        let mut all = vec!["linearize", path];
        all.extend(args.iter().copied());
        let (code, text) = exit_and_text(&rmoc_cli(&all));
        assert_eq!(code, Some(1), "{args:?}: {text}");
        assert!(text.contains(words), "{args:?}: {text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}
