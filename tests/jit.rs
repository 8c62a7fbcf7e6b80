//! Code generation: compiled code against the reference interpreter, the
//! analytic Jacobian against finite differences, and the ABI's safety.

mod common;

use rmoc::jit::ir::{self, Stmt, status};
use rmoc::jit::lower::{self, Program};
use rmoc::solve::model::{Backend, Entry, Interpreter};

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [-1, 1).
    fn sym(&mut self) -> f64 {
        2.0 * self.next() - 1.0
    }
}

/// The models every differential test runs on: the examples, the test models
/// and the standard library's contact example through the gearbox variants.
fn models() -> Vec<(std::path::PathBuf, Option<&'static str>)> {
    let p = common::project;
    let mut all = vec![
        (p("examples/gearbox.rmo"), Some("Gearbox")),
        (p("examples/gearbox.rmo"), Some("GearboxFrictionless")),
        (p("examples/gearbox.rmo"), Some("GearboxRigid")),
        (p("examples/humpage.rmo"), Some("PowerFlow")),
        (p("examples/humpage.rmo"), Some("Dynamic")),
        (p("examples/ujoint_clearance.rmo"), None),
        (p("tests/models/pendulum.rmo"), None),
        (p("tests/models/chain.rmo"), None),
        (p("tests/models/grid.rmo"), None),
        (p("tests/models/reference/chain10.rmo"), None),
        (p("tests/models/ball.rmo"), None),
        (p("tests/models/johnson.rmo"), Some("Johnson")),
        (p("tests/models/circuit.rmo"), Some("Rectifier")),
    ];
    // The event models of `tests/models/events/`.
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(p("tests/models/events"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_some_and(|x| x == "rmo"));
    files.sort();
    all.extend(files.into_iter().map(|f| (f, None)));
    // The public conformance models that simulate, as their manifest names
    // them, where the checkout has them beside it (`.ci/run` does).
    let manifest = p("../shared/conformance/expected.json");
    if let Ok(text) = std::fs::read_to_string(&manifest) {
        let v: serde_json::Value = serde_json::from_str(&text).expect("conformance manifest");
        for case in v["cases"].as_array().into_iter().flatten() {
            if case["command"] != "simulate" {
                continue;
            }
            let (Some(file), Some(model)) = (case["file"].as_str(), case["model"].as_str()) else {
                continue;
            };
            let model: &'static str = Box::leak(model.to_string().into_boxed_str());
            all.push((p(&format!("../shared/conformance/{file}")), Some(model)));
        }
    }
    all
}

/// A buffer at the model's start values, with parameters and states perturbed.
fn random_point(c: &rmoc::Compiled, base: &[f64], rng: &mut Rng, scale: f64) -> Vec<f64> {
    let l = &c.program.layout;
    let mut buf = base.to_vec();
    for &s in &c.causal.states {
        let k = l.var(s) as usize;
        let x = buf[k];
        buf[k] = x + scale * (x.abs().max(1e-3)) * rng.sym();
    }
    buf[lower::TIME as usize] += scale * rng.next();
    buf
}

fn start_buffer(c: &rmoc::Compiled, b: &dyn Backend) -> Vec<f64> {
    let mut buf = vec![0.0; c.program.layout.len as usize];
    assert_eq!(b.run(Entry::Parameters, &mut buf), status::OK);
    assert_eq!(b.run(Entry::Starts, &mut buf), status::OK);
    rmoc::solve::initialize_only(&c.causal, &c.program, b, 0.0).expect("initial values");
    // Initialization worked on its own buffer; redo it here for a consistent start.
    assert_eq!(b.run(Entry::Ode, &mut buf), status::OK);
    buf
}

fn rel_diff(a: f64, b: f64) -> f64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        0.0
    } else {
        (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
    }
}

#[test]
fn compiled_code_agrees_with_the_interpreter_at_random_points() {
    differential(rmoc::jit::codegen::compile);
}

/// Entries split into parts of a few statements (large models' entries
/// are, above 4 000 statements) compute what the interpreter does: the
/// cuts keep every local inside its part, and a part's status ends the
/// entry.
#[test]
fn entries_compiled_in_parts_agree_with_the_interpreter() {
    differential(|p| rmoc::jit::codegen::compile_in_parts(p, 3));
}

fn differential(compile: impl Fn(&Program) -> Result<rmoc::jit::codegen::Jit, String>) {
    for (path, model) in models() {
        let mut c = common::compile_file(&path, model);
        rmoc::jit::lower::lower_residuals(&mut c.causal, &mut c.program);
        // One store into the residual area per equation.
        let l = &c.program.layout;
        let stores = c
            .program
            .residuals
            .body
            .iter()
            .filter(|s| {
                matches!(s, Stmt::Store(slot, _)
                    if (l.residual..l.residual + l.n_residuals).contains(slot))
            })
            .count();
        assert_eq!(
            stores,
            c.causal.equations.len(),
            "{}: the residuals entry is filled",
            path.display()
        );
        let jit = compile(&c.program).expect("jit");
        let interp = Interpreter {
            program: &c.program,
        };
        let base = start_buffer(&c, &interp);
        let mut rng = Rng(0x9e3779b97f4a7c15);
        let mut worst = 0.0f64;
        let mut compared = 0usize;
        for k in 0..1000 {
            let point = random_point(&c, &base, &mut rng, if k % 2 == 0 { 1e-3 } else { 0.1 });
            for entry in [Entry::Ode, Entry::ZeroCrossings, Entry::Residuals] {
                let mut a = point.clone();
                let mut b = point.clone();
                let ca = jit.run(entry, &mut a);
                let cb = interp.run(entry, &mut b);
                assert_eq!(
                    ca,
                    cb,
                    "{}: status differs for {entry:?} at point {k}",
                    path.display()
                );
                if ca != status::OK {
                    continue;
                }
                for (x, y) in a.iter().zip(&b) {
                    worst = worst.max(rel_diff(*x, *y));
                    compared += 1;
                }
            }
            // Tangent code for a random direction.
            let mut a = point.clone();
            let mut b = point.clone();
            if jit.run(Entry::Ode, &mut a) == status::OK
                && interp.run(Entry::Ode, &mut b) == status::OK
            {
                for &s in &c.causal.states {
                    let dir = rng.sym();
                    a[c.program.layout.tan(s) as usize] = dir;
                    b[c.program.layout.tan(s) as usize] = dir;
                }
                assert_eq!(
                    jit.run(Entry::Tangent, &mut a),
                    interp.run(Entry::Tangent, &mut b)
                );
                for (x, y) in a.iter().zip(&b) {
                    worst = worst.max(rel_diff(*x, *y));
                }
            }
        }
        assert!(
            compared > 1000,
            "{}: only {compared} values compared",
            path.display()
        );
        assert!(
            worst <= 1e-12,
            "{}: JIT and interpreter differ by {worst:e}",
            path.display()
        );
    }
}

/// Rerolled code (`jit::reroll`: runs of statements of one shape made
/// loops over strided slots) computes bit for bit what the straight code of
/// the same model does, in every entry, at random points: the pass keeps
/// the order of execution. The grid and the chains must roll, or the test
/// checks nothing.
#[test]
fn rerolled_code_computes_what_the_straight_code_does() {
    let mut rolled_models = Vec::new();
    for (path, model) in models() {
        let c = common::compile_file(&path, model);
        // `compile` rerolls; lowering the same causal model again gives the
        // straight code it started from.
        let straight = lower::lower(&mut c.causal.clone()).expect("lowering");
        let rolled = &c.program;
        let count = |p: &Program| -> (usize, usize) {
            let top: usize = p.entries().iter().map(|f| f.body.len()).sum();
            let repeats = p
                .entries()
                .iter()
                .flat_map(|f| &f.body)
                .filter(|s| matches!(s, Stmt::Repeat { .. }))
                .count();
            (top, repeats)
        };
        let ((n_straight, _), (n_rolled, repeats)) = (count(&straight), count(rolled));
        if repeats > 0 {
            rolled_models.push((path.clone(), n_straight, n_rolled));
        }
        let a = Interpreter { program: rolled };
        let b = Interpreter { program: &straight };
        let base = start_buffer(&c, &a);
        let mut rng = Rng(0x2545f4914f6cdd1d);
        for k in 0..200 {
            let mut point = random_point(&c, &base, &mut rng, if k % 2 == 0 { 1e-3 } else { 0.1 });
            for slot in c.program.layout.tangent..c.program.layout.tangent + c.program.layout.n_vars
            {
                point[slot as usize] = rng.sym();
            }
            for entry in Entry::ALL {
                let (mut x, mut y) = (point.clone(), point.clone());
                let (cx, cy) = (a.run(entry, &mut x), b.run(entry, &mut y));
                assert_eq!(
                    cx,
                    cy,
                    "{}: status of {entry:?} at point {k}",
                    path.display()
                );
                let same = x
                    .iter()
                    .zip(&y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()));
                assert!(same, "{}: {entry:?} differs at point {k}", path.display());
            }
        }
    }
    let rolled = |name: &str| {
        rolled_models
            .iter()
            .find(|(p, _, _)| p.ends_with(name))
            .map(|&(_, a, b)| (a, b))
    };
    // The 7 x 7 grid's for-equations roll to a few repeats.
    let (straight, now) = rolled("tests/models/grid.rmo").expect("the grid rolls");
    assert!(
        now * 4 < straight,
        "grid: {straight} -> {now} top-level statements"
    );
    assert!(rolled("tests/models/reference/chain10.rmo").is_some());
}

#[test]
fn analytic_jacobian_agrees_with_central_differences() {
    for (path, model) in models() {
        let c = common::compile_file(&path, model);
        let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
        let l = &c.program.layout;
        let base = start_buffer(&c, &jit);
        let mut rng = Rng(12345);
        let n = c.causal.states.len();
        let mut worst = 0.0f64;
        let (mut checked, mut skipped, mut zeros) = (0usize, 0usize, 0usize);
        // Points near the start, not at it: a contact begins there (the
        // Johnson force has an infinite slope at zero approach); and close to
        // it: the gear's point a lies 6.5 um outside the pinion's base circle,
        // inside which the involute (and its derivatives) do not exist.
        for k in 0..20 {
            let point = random_point(&c, &base, &mut rng, 1e-5);
            let f = |x: &[f64]| -> Option<Vec<f64>> {
                let mut b = x.to_vec();
                (jit.run(Entry::Ode, &mut b) == status::OK).then(|| {
                    c.causal
                        .state_ders
                        .iter()
                        .map(|&d| b[l.var(d) as usize])
                        .collect()
                })
            };
            let Some(_) = f(&point) else { continue };
            // The analytic Jacobian, column by column.
            let mut jac = vec![vec![0.0; n]; n];
            for j in 0..n {
                let mut b = point.clone();
                assert_eq!(jit.run(Entry::Ode, &mut b), status::OK);
                for v in &mut b[l.tangent as usize..(l.tangent + l.n_vars) as usize] {
                    *v = 0.0;
                }
                b[l.tan(c.causal.states[j]) as usize] = 1.0;
                assert_eq!(jit.run(Entry::Tangent, &mut b), status::OK);
                for i in 0..n {
                    jac[i][j] = b[l.tan(c.causal.state_ders[i]) as usize];
                }
                if std::env::var_os("RMOC_DEBUG_JAC").is_some() && j == 0 {
                    for blk in &c.causal.blocks {
                        for v in blk.vars() {
                            if b[l.tan(v) as usize].is_nan() {
                                eprintln!(
                                    "first NaN tangent: {} (value {})",
                                    c.causal.vars[v as usize].name,
                                    b[l.var(v) as usize]
                                );
                                break;
                            }
                        }
                    }
                }
            }
            // Central differences at several steps (the best step depends on
            // the column: curvature wants small ones, cancellation large ones);
            // an entry agrees if one of them does, relative to the entry or,
            // for entries far below their row's largest, to that.
            let steps = [1e-5, 1e-6, 1e-7, 1e-8];
            let mut fds: Vec<Vec<Vec<f64>>> = Vec::new();
            for &rel in &steps {
                let mut cols = vec![vec![f64::NAN; n]; n];
                for (j, &state) in c.causal.states.iter().enumerate() {
                    let s = l.var(state) as usize;
                    let h = rel * point[s].abs().max(1e-3);
                    let mut xp = point.clone();
                    xp[s] += h;
                    let mut xm = point.clone();
                    xm[s] -= h;
                    if let (Some(fp), Some(fm)) = (f(&xp), f(&xm)) {
                        for i in 0..n {
                            cols[i][j] = (fp[i] - fm[i]) / (2.0 * h);
                        }
                    }
                }
                fds.push(cols);
            }
            for i in 0..n {
                let rowmax = jac[i].iter().fold(0.0f64, |a, x| a.max(x.abs()));
                for j in 0..n {
                    let an = jac[i][j];
                    let fd: Vec<f64> = fds.iter().map(|fd| fd[i][j]).collect();
                    // Entries far below their row's largest (differences
                    // resolve a row only to ~1e-7 of its scale), or on which the
                    // differences at the four steps disagree among themselves
                    // by more than 2e-5 (round-off: the rate of
                    // lambda, zero for involutes by Assertion 2, is such a
                    // row), cannot be checked by differences.
                    let lo = fd.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = fd.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let tiny = an.abs() <= 1e-7 * rowmax && hi.abs().max(lo.abs()) <= 1e-6 * rowmax;
                    let inconsistent = hi - lo > 2e-5 * an.abs().max(hi.abs());
                    if tiny {
                        // Both negligible: agreement on a (structural) zero.
                        zeros += 1;
                        continue;
                    }
                    if inconsistent {
                        skipped += 1;
                        continue;
                    }
                    checked += 1;
                    // Richardson extrapolation of neighbouring steps (ratio
                    // 10) removes the h^2 term of the central differences.
                    let extrapolated: Vec<f64> = fd
                        .windows(2)
                        .map(|w| (100.0 * w[1] - w[0]) / 99.0)
                        .collect();
                    let err = fd
                        .iter()
                        .chain(&extrapolated)
                        .map(|f| (f - an).abs() / an.abs().max(1e-300))
                        .fold(f64::INFINITY, f64::min);
                    if err > 1e-6 && std::env::var_os("RMOC_DEBUG_JAC").is_some() {
                        eprintln!(
                            "{} d {} / d {}: fd {fd:?} analytic {an:e} (point {k})",
                            path.display(),
                            c.causal.vars[c.causal.state_ders[i] as usize].name,
                            c.causal.vars[c.causal.states[j] as usize].name
                        );
                    }
                    worst = worst.max(err);
                }
            }
        }
        eprintln!(
            "{}: {checked} entries checked, {zeros} zero, {skipped} skipped",
            path.display()
        );
        // Entries where both sides vanish are compared too (a model such as
        // der(x) = cos(time) has only those).
        assert!(
            n == 0 || (checked + zeros > 0 && checked + zeros > 3 * skipped),
            "{}: {checked} entries checked, {skipped} skipped",
            path.display()
        );
        // Issue 4 asks for 1e-6 relative. Central differences (and their
        // extrapolations) resolve that on the entries whose four steps agree
        // to 1e-3; a wrong derivative is off by O(1).
        assert!(
            worst <= 1e-6,
            "{}: Jacobian differs from finite differences by {worst:e} (relative)",
            path.display()
        );
    }
}

fn has_loop(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Loop(_) => true,
        Stmt::If(_, a, b) => has_loop(a) || has_loop(b),
        _ => false,
    })
}

#[test]
fn the_while_loop_of_a_function_runs_in_compiled_code() {
    let c = common::compile_file(
        &common::project("tests/models/johnson.rmo"),
        Some("Johnson"),
    );
    let f = c
        .program
        .user
        .iter()
        .find(|f| f.name == "johnsonN")
        .expect("the function is compiled");
    assert!(has_loop(&f.body), "{}", ir::display(f));
    let r = common::simulate_compiled(&c, &common::Run::default());
    // The iteration inverts the closed form: h(N(h)) = h.
    common::assert_close(common::last(&r, "hBack"), 3e-9, 1e-9, 0.0);
}

#[test]
fn a_short_frame_is_refused_at_the_entry() {
    let c = common::compile_file(&common::project("tests/models/pendulum.rmo"), None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut short = vec![0.0; c.program.layout.len as usize - 1];
    for e in [
        Entry::Ode,
        Entry::Tangent,
        Entry::Parameters,
        Entry::Residuals,
    ] {
        assert_eq!(status::decode(jit.run(e, &mut short)).0, status::FRAME);
    }
}

#[test]
fn the_ir_verifier_rejects_out_of_frame_access() {
    let bad = ir::Func {
        name: "bad".into(),
        frame_size: 4,
        n_locals: 1,
        inputs: vec![],
        outputs: vec![],
        body: vec![Stmt::Store(4, ir::IrExpr::Const(1.0))],
    };
    assert!(ir::verify(&[bad], &[]).is_err());
    let bad_local = ir::Func {
        name: "bad".into(),
        frame_size: 4,
        n_locals: 1,
        inputs: vec![],
        outputs: vec![],
        body: vec![Stmt::Set(1, ir::IrExpr::Const(1.0))],
    };
    assert!(ir::verify(&[bad_local], &[]).is_err());
    let stray_break = ir::Func {
        name: "bad".into(),
        frame_size: 4,
        n_locals: 1,
        inputs: vec![],
        outputs: vec![],
        body: vec![Stmt::Break],
    };
    assert!(ir::verify(&[stray_break], &[]).is_err());
}

#[test]
fn a_failing_newton_iteration_is_reported_with_its_block() {
    // x^2 = -1 - time has no real solution: the block fails, by name.
    let src = "model NoRoot\n  Real x(start = 1);\n  Real y(start = 0, fixed = true);\nequation\n  x^2 + x^4 = -1 - time;\n  der(y) = x;\nend NoRoot;";
    let path = common::model_file("noroot", src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(path.parent().expect("dir"))
        .args(["simulate", "noroot.rmo", "-o", "out.csv"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("`x`") && text.contains(":5:"), "{text}");
    assert!(
        !path.with_file_name("out.csv").exists(),
        "a failed run leaves no result file"
    );
}

#[test]
fn compiled_programs_pass_the_ir_verifier() {
    for (path, model) in models() {
        let c = common::compile_file(&path, model);
        let p: &Program = &c.program;
        ir::verify(p.entries(), &p.user).expect("verified");
    }
}

/// The calls and loops of a statement list, recursively.
fn walk(stmts: &[Stmt], calls: &mut Vec<u32>, loops: &mut usize) {
    for s in stmts {
        match s {
            Stmt::Call { func, .. } => calls.push(*func),
            Stmt::Loop(body) => {
                *loops += 1;
                walk(body, calls, loops);
            }
            Stmt::If(_, a, b) => {
                walk(a, calls, loops);
                walk(b, calls, loops);
            }
            _ => {}
        }
    }
}

#[test]
fn the_johnson_fixed_point_loop_runs_in_compiled_code() {
    // Issue 4: the while loop of the Johnson contact law (eqs. 13-18 of
    // Kosenko and Gusev) is a compiled user function that the compiled `ode`
    // entry calls at run time, not something evaluated before compilation.
    let c = common::compile_file(
        &common::project("tests/models/johnson.rmo"),
        Some("Johnson"),
    );
    let looping: Vec<u32> = (0..c.program.user.len() as u32)
        .filter(|&k| {
            let (mut calls, mut loops) = (Vec::new(), 0);
            walk(&c.program.user[k as usize].body, &mut calls, &mut loops);
            loops > 0
        })
        .collect();
    assert!(!looping.is_empty(), "no user function with a loop");
    let (mut calls, mut loops) = (Vec::new(), 0);
    walk(&c.program.ode.body, &mut calls, &mut loops);
    assert!(
        calls.iter().any(|f| looping.contains(f)),
        "the ode entry calls {calls:?}, none of the looping functions {looping:?}"
    );
    // The compiled loop gives the interpreter's answer at the start point.
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let interp = Interpreter {
        program: &c.program,
    };
    let a = start_buffer(&c, &jit);
    let b = start_buffer(&c, &interp);
    assert_eq!(a, b);
}

/// `(p, q) := f(x)` is one call in the generated code, not one per output;
/// the same call written again after a store to its argument runs again
/// (`a := twice(a); a := twice(a)` doubles twice).
#[test]
fn a_tuple_assignment_calls_its_function_once() {
    let src = r#"
function pair
  input Real x;
  output Real s;
  output Real d;
algorithm
  s := x + 1;
  d := x - 1;
end pair;

function twice
  input Real x;
  output Real y;
algorithm
  y := 2*x;
end twice;

function use
  input Real x;
  output Real z;
protected
  Real p;
  Real q;
  Real a;
algorithm
  (p, q) := pair(x);
  a := x;
  a := twice(a);
  a := twice(a);
  z := 10*p + q + 100*a;
end use;

model Tuple
  Real z = use(time + 2);
end Tuple;
"#;
    let c = common::compile(src, Some("Tuple"));
    let body = c
        .program
        .user
        .iter()
        .find(|f| f.name.contains("use"))
        .map(rmoc::jit::ir::display)
        .expect("the function `use`");
    let calls = |name: &str| {
        let id = c
            .program
            .user
            .iter()
            .position(|f| f.name.ends_with(name))
            .expect("function");
        body.matches(&format!("call f{id}(")).count()
    };
    assert_eq!(calls("pair"), 1, "{body}");
    assert_eq!(calls("twice"), 2, "{body}");
    let r = common::simulate_compiled(
        &c,
        &common::Run {
            stop: Some(0.0),
            ..Default::default()
        },
    );
    // x = 2: p = 3, q = 1, a = 8.
    assert_eq!(common::last(&r, "z"), 10.0 * 3.0 + 1.0 + 800.0);
}

/// A derivative function is linear in its tangent arguments, so the
/// tangent code does not call it when they are all zero (a Jacobian
/// colour whose seeds do not reach the call) and sets its outputs to
/// zero instead. On a chain of five masses whose middle spring's force is
/// a user function, the coloured Jacobian (three colours: two of them
/// miss the spring) equals central differences, and the call to the
/// derivative function in the tangent entry is guarded.
#[test]
fn a_derivative_call_whose_tangents_vanish_is_skipped() {
    use rmoc::solve::bdf::OdeProblem;
    use rmoc::solve::jacobian::{Jacobian, JacobianPattern};
    use rmoc::solve::model::{ModelOde, StateSlots};
    use std::sync::Arc;
    let src = r#"
function springForce "a hardening spring, written as an algorithm"
  input Real d;
  output Real f;
algorithm
  f := 100*d;
  for i in 1:3 loop
    f := f + 10*d^3/i;
  end for;
end springForce;

model Chain
  parameter Integer n = 5;
  Real x[n](start = {0.1*i + 0.01*i^2 for i in 1:n}, each fixed = true);
  Real v[n](each start = 0, each fixed = true);
  Real f[n + 1];
equation
  f[1] = 50*x[1];
  f[n + 1] = 0;
  for i in 2:n loop
    f[i] = if i == 3 then springForce(x[i] - x[i - 1]) else 50*(x[i] - x[i - 1]);
  end for;
  for i in 1:n loop
    der(x[i]) = v[i];
    der(v[i]) = f[i + 1] - f[i] - 0.1*v[i];
  end for;
end Chain;
"#;
    let c = common::compile(src, Some("Chain"));
    // The tangent entry guards its calls of derivative functions.
    fn guarded(stmts: &[Stmt]) -> bool {
        stmts.iter().any(|s| match s {
            Stmt::If(_, then, els) => {
                matches!(then.as_slice(), [Stmt::Call { .. }])
                    && els
                        .iter()
                        .all(|e| matches!(e, Stmt::Set(_, ir::IrExpr::Const(z)) if *z == 0.0))
                    || guarded(then)
                    || guarded(els)
            }
            Stmt::Loop(b) => guarded(b),
            _ => false,
        })
    }
    let tangent_bodies: Vec<&[Stmt]> = c
        .program
        .entries()
        .into_iter()
        .filter(|f| f.name.starts_with("tangent"))
        .map(|f| f.body.as_slice())
        .collect();
    assert!(!tangent_bodies.is_empty());
    assert!(
        tangent_bodies.iter().any(|b| guarded(b)),
        "no guarded call in the tangent code"
    );
    let pattern = Arc::new(JacobianPattern::of_model(&c.causal));
    assert!(pattern.colours.len() < c.causal.states.len());
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut frame = rmoc::jit::frame::Frame::new(&c.program.layout);
    assert_eq!(jit.run(Entry::Parameters, frame.values()), 0);
    assert_eq!(jit.run(Entry::Starts, frame.values()), 0);
    let slots = StateSlots::of(&c.causal, &c.program.layout);
    let x: Vec<f64> = c.causal.states.iter().map(|&s| frame.var(s)).collect();
    let n = x.len();
    let mut ode = ModelOde::new(&jit, &mut frame, &slots, &pattern);
    let mut jac = Jacobian::new(n, Some(pattern.clone()), false);
    ode.jacobian(0.0, &x, &mut jac).expect("jacobian");
    for j in 0..n {
        let h = 1e-6;
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[j] += h;
        xm[j] -= h;
        let (mut fp, mut fm) = (vec![0.0; n], vec![0.0; n]);
        ode.rhs(0.0, &xp, &mut fp).expect("rhs");
        ode.rhs(0.0, &xm, &mut fm).expect("rhs");
        for i in 0..n {
            let fd = (fp[i] - fm[i]) / (2.0 * h);
            assert!(
                (jac.get(i, j) - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "d f{i} / d x{j}: {} against {fd}",
                jac.get(i, j)
            );
        }
    }
}

/// A table lookup whose interval search starts where the last call from
/// the same call site ended (`__rmoc_warmStart`), and reports how many
/// intervals it looked at.
const WARM_LOOKUP: &str = r#"
function lookup "y(x) by linear interpolation in a sorted table"
  input Real xs[:];
  input Real ys[size(xs, 1)];
  input Real x;
  output Real y;
  output Real probes "intervals looked at";
protected
  Integer hint;
  Integer i;
algorithm
  i := if hint >= 1 and hint < size(xs, 1) then hint else 1;
  probes := 1;
  while i > 1 and x < xs[i] loop
    i := i - 1;
    probes := probes + 1;
  end while;
  while i < size(xs, 1) - 1 and x > xs[i + 1] loop
    i := i + 1;
    probes := probes + 1;
  end while;
  y := ys[i] + (ys[i + 1] - ys[i])*(x - xs[i])/(xs[i + 1] - xs[i]);
  hint := i;
  annotation(__rmoc_warmStart = {"hint"});
end lookup;

function lookupInside "calls lookup from a function body: no warm start there"
  input Real xs[:];
  input Real ys[size(xs, 1)];
  input Real x;
  output Real y;
  output Real probes;
algorithm
  (y, probes) := lookup(xs, ys, x);
end lookupInside;

model Warm
  parameter Integer n = 1001;
  parameter Real xs[n] = {(k - 1)/(n - 1) for k in 1:n};
  parameter Real ys[n] = {sin(xs[k]) for k in 1:n};
  Real up;
  Real upProbes;
  Real down;
  Real downProbes;
  Real inside;
  Real insideProbes;
equation
  (up, upProbes) = lookup(xs, ys, time);
  (down, downProbes) = lookup(xs, ys, 1 - time);
  (inside, insideProbes) = lookupInside(xs, ys, time);
  annotation(experiment(StopTime = 1, Interval = 0.01));
end Warm;
"#;

/// The model's default run, compiled and interpreted.
fn run_both_ways(c: &rmoc::Compiled) -> Vec<(&'static str, rmoc::solve::Results)> {
    let opts = common::options(c, &common::Run::default());
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let interp = Interpreter {
        program: &c.program,
    };
    let backends: [(&str, &dyn Backend); 2] = [("compiled", &jit), ("interpreted", &interp)];
    backends
        .into_iter()
        .map(|(which, b)| {
            let r = rmoc::solve::simulate(&c.causal, &c.program, b, &opts).expect("simulates");
            (which, r)
        })
        .collect()
}

#[test]
fn a_warm_start_variable_is_kept_by_each_call_site_of_the_model() {
    let c = common::compile(WARM_LOOKUP, Some("Warm"));
    for (which, r) in run_both_ways(&c) {
        for (k, &t) in r.times.iter().enumerate() {
            let col = |n: &str| r.rows[k][r.column(n).expect("column")];
            // The same table values with or without a warm start.
            let exact = |x: f64| {
                let i = ((x * 1000.0).floor() as usize).min(999);
                let (x0, x1) = (i as f64 / 1000.0, (i + 1) as f64 / 1000.0);
                x0.sin() + (x1.sin() - x0.sin()) * (x - x0) / (x1 - x0)
            };
            for (name, x) in [("up", t), ("down", 1.0 - t), ("inside", t)] {
                assert!(
                    (col(name) - exact(x)).abs() < 1e-12,
                    "{which}: {name} at t = {t}"
                );
            }
            // Each site starts from its own last interval: the rows are
            // 0.01 apart, ten intervals of the table (the first row
            // searches from the start; the two sites run opposite ways,
            // so a shared hint would cost about a thousand probes).
            if k > 0 {
                assert!(
                    col("upProbes") <= 12.0,
                    "{which}: t = {t}: {}",
                    col("upProbes")
                );
                assert!(
                    col("downProbes") <= 12.0,
                    "{which}: t = {t}: {}",
                    col("downProbes")
                );
            }
            // A call from a function body starts at zero every time.
            let from_start = ((t * 1000.0).floor()).clamp(0.0, 999.0) + 1.0;
            assert!(
                (col("insideProbes") - from_start).abs() <= 1.0,
                "{which}: t = {t}: {} probes from the start",
                col("insideProbes")
            );
        }
    }
}

/// A derivative function with warm-start variables: the tangent code's
/// calls to it, which lowering adds after the layout is made, have no
/// slots of their own (they start at zero, as the docs say), and every
/// slot given lies inside the layout's warm area; the run is the closed
/// form, compiled and interpreted.
#[test]
fn calls_added_by_lowering_get_no_warm_start_slots() {
    let src = r#"
function sq
  input Real x;
  output Real y;
algorithm
  y := x*x;
  annotation(derivative = sqDer);
end sq;

function sqDer
  input Real x;
  input Real dx;
  output Real dy;
protected
  Real calls;
algorithm
  calls := calls + 1;
  dy := 2*x*dx;
  annotation(__rmoc_warmStart = {"calls"});
end sqDer;

model Decay
  Real x(start = 2, fixed = true);
equation
  der(x) = -sq(x);
  annotation(experiment(StopTime = 1, Tolerance = 1e-8));
end Decay;
"#;
    let c = common::compile(src, Some("Decay"));
    let l = &c.program.layout;
    for &slot in c.program.warm_sites.values() {
        assert!(
            slot >= l.warm && slot < l.warm + l.n_warm && l.warm + l.n_warm <= l.len,
            "slot {slot} outside the warm area {}..{}",
            l.warm,
            l.warm + l.n_warm
        );
    }
    for (which, r) in run_both_ways(&c) {
        // x' = -x^2, x(0) = 2: x = 2 / (1 + 2 t).
        let x = common::last(&r, "x");
        assert!((x - 2.0 / 3.0).abs() < 1e-6, "{which}: x(1) = {x}");
    }
}
