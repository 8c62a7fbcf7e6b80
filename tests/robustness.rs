//! Property tests: valid models mutated at random (tokens deleted,
//! duplicated, swapped; text truncated) never make rmoc panic or crash:
//! `rmoc check` always ends with status 0 or 1.

use proptest::prelude::*;
use std::process::Command;

const SEEDS: &[&str] = &[
    "model Pendulum\n  parameter Real L = 1;\n  Real x(start = 0.8, fixed = true);\n  Real y(start = -0.6);\n  Real vx(start = 0, fixed = true);\n  Real vy;\n  Real F;\nequation\n  der(x) = vx;\n  der(y) = vy;\n  der(vx) = -x/L*F;\n  der(vy) = -y/L*F - 9.81;\n  x^2 + y^2 = L^2;\nend Pendulum;\n",
    "connector Flange\n  Real phi;\n  flow Real tau;\nend Flange;\nmodel Inertia\n  parameter Real J = 1;\n  Flange a;\n  Flange b;\n  Real w(start = 0, fixed = true);\nequation\n  a.phi = b.phi;\n  der(a.phi) = w;\n  J*der(w) = a.tau + b.tau;\nend Inertia;\nmodel M\n  Inertia i1(a(phi(start = 0, fixed = true)));\n  Inertia i2[2](each J = 2);\nequation\n  connect(i1.b, i2[1].a);\n  connect(i2[1].b, i2[2].a);\nend M;\n",
    "function f\n  input Real x;\n  output Real y;\nprotected\n  Real r;\nalgorithm\n  r := x;\n  while abs(r*r - x) > 1e-12 loop\n    r := 0.5*(r + x/r);\n  end while;\n  y := r;\nend f;\nmodel M\n  Real h(start = 1, fixed = true);\n  Real v(start = 0, fixed = true);\n  Integer n(start = 0, fixed = true);\n  Real s;\nequation\n  der(h) = v;\n  der(v) = -9.81;\n  s = f(2 + time);\n  when h <= 0 then\n    reinit(v, -0.8*pre(v));\n    n = pre(n) + 1;\n  end when;\n  annotation(experiment(StopTime = 1));\nend M;\n",
    "partial model Law\n  input Real s;\n  output Real f;\nend Law;\nmodel Lin\n  extends Law;\n  parameter Real k = 1;\nequation\n  f = k*s;\nend Lin;\nmodel M\n  replaceable Lin law constrainedby Law;\n  parameter Integer n = 3;\n  Real x[n](each start = 1, each fixed = true);\nequation\n  law.s = x[1];\n  for i in 1:n loop\n    der(x[i]) = -law.f*i;\n  end for;\n  if n > 2 then\n    assert(x[1] > -10, \"bounded\");\n  end if;\nend M;\n",
];

fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Truncate(usize),
}

fn apply(src: &str, muts: &[Mutation]) -> String {
    let mut t = tokens(src);
    for m in muts {
        let n = t.len().max(1);
        match *m {
            Mutation::Delete(i) => {
                if !t.is_empty() {
                    t.remove(i % n);
                }
            }
            Mutation::Duplicate(i) => {
                if !t.is_empty() {
                    let x = t[i % n].clone();
                    t.insert(i % n, x);
                }
            }
            Mutation::Swap(i, j) => {
                if !t.is_empty() {
                    t.swap(i % n, j % n);
                }
            }
            Mutation::Truncate(i) => t.truncate(i % n),
        }
    }
    t.concat()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..10_000).prop_map(Mutation::Delete),
        (0usize..10_000).prop_map(Mutation::Duplicate),
        (0usize..10_000, 0usize..10_000).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (0usize..10_000).prop_map(Mutation::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]
    #[test]
    fn mutated_models_never_crash_rmoc(seed in 0usize..SEEDS.len(), muts in proptest::collection::vec(mutation(), 1..4)) {
        let src = apply(SEEDS[seed], &muts);
        let dir = std::env::temp_dir().join(format!("rmoc-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("mutant.rmo");
        std::fs::write(&path, &src).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_rmoc")).arg("check").arg(&path).output().expect("run rmoc");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        prop_assert!(!text.contains("panicked"), "panic on:\n{}\n{}", src, text);
        prop_assert!(matches!(out.status.code(), Some(0) | Some(1)), "exit {:?} on:\n{}\n{}", out.status.code(), src, text);
    }
}

#[test]
fn deep_nesting_and_long_sums_do_not_crash() {
    let deep = format!(
        "model M\n  Real x = {}1{};\nend M;\n",
        "(".repeat(400),
        ")".repeat(400)
    );
    let long = format!(
        "model M\n  Real x = {};\nend M;\n",
        (0..20_000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    for src in [deep, long] {
        let dir = std::env::temp_dir().join(format!("rmoc-deep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("deep.rmo");
        std::fs::write(&path, &src).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .arg("check")
            .arg(&path)
            .output()
            .expect("run rmoc");
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "exit {:?}",
            out.status.code()
        );
    }
}

/// Chains of operators deeper than the worker stack could walk (a tree as
/// deep as the chain: 800 000 unary minus signs overflowed it) are
/// reported at the first operator over the limit, with exit status 1.
#[test]
fn operator_chains_beyond_the_limit_are_reported_not_a_stack_overflow() {
    let chains = [
        format!(
            "model M\n  Real x;\nequation\n  x = {}1;\nend M;\n",
            "-".repeat(1_000_000)
        ),
        format!(
            "model M\n  Boolean b = {}true;\nend M;\n",
            "not ".repeat(1_000_000)
        ),
        format!(
            "model M\n  parameter Real p = 1{};\nend M;\n",
            " + 1".repeat(500_000)
        ),
    ];
    let dir = std::env::temp_dir().join(format!("rmoc-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for (k, src) in chains.iter().enumerate() {
        let path = dir.join(format!("chain{k}.rmo"));
        std::fs::write(&path, src).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .arg("check")
            .arg(&path)
            .output()
            .expect("run rmoc");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "chain {k}: {text}");
        assert!(
            text.contains("more than 100000 operators in one statement")
                && text.contains(&format!("chain{k}.rmo:"))
                && text.contains("intermediate variables"),
            "chain {k}: {text}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `rmoc analyze big.rmo | head`: the reader closes the pipe after a few
/// lines; rmoc stops quietly (no panic message, status 0) instead of
/// reporting an internal failure.
#[test]
fn a_closed_stdout_pipe_is_not_an_internal_failure() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args([
            "analyze",
            "examples/humpage.rmo",
            "--model",
            "VelocityAnalysis",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rmoc runs");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("a line");
    // The reader is dropped here: the pipe closes with 150 kB still to come.
    let out = child.wait_with_output().expect("rmoc ends");
    assert_eq!(first, "model VelocityAnalysis\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// A sum of 20 000 terms of an unknown: its tangent code is as deep, and
/// is lowered on a thread of its own (`jit::lower`), which must have the
/// pipeline's stack, not a default one (2 MiB overflowed: the process
/// aborted). y = x (n + 1) / 2, so x(1) = exp(-(n + 1) / (2 n)).
#[test]
fn a_long_sum_of_an_unknown_simulates() {
    let n = 20_000;
    let src = format!(
        "model Deep\n  parameter Integer n = {n};\n  Real x(start = 1, fixed = true);\n  Real y;\n\
         equation\n  der(x) = -y / n;\n  y = sum(x * k / n for k in 1:n);\nend Deep;\n"
    );
    let dir = std::env::temp_dir().join(format!("rmoc-long-sum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (path, csv) = (dir.join("deep.rmo"), dir.join("deep.csv"));
    std::fs::write(&path, &src).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["simulate", "-q", "-o"])
        .arg(&csv)
        .arg(&path)
        .output()
        .expect("run rmoc");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).expect("result");
    let last = text.lines().last().expect("rows");
    let x: f64 = last.split(',').nth(1).expect("x").parse().expect("number");
    let exact = (-(n as f64 + 1.0) / (2.0 * n as f64)).exp();
    assert!((x / exact - 1.0).abs() < 1e-5, "x(1) = {x}, exact {exact}");
    let _ = std::fs::remove_dir_all(&dir);
}
