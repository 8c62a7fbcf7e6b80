//! Modelica's library lookup and the Modelica Standard Library (issue 20):
//! `MODELICAPATH`, `.mo` files, `package.order`, `within`, and the syntax
//! of every MSL file. Tests that need the MSL read it from `MODELICAPATH`
//! (`.ci/run` sets it to `../shared/msl`) and skip, with a notice, where it
//! is absent.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `MODELICAPATH` root that holds `Modelica/package.mo`, or `None`
/// (with a notice) when there is none.
fn msl(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("MODELICAPATH")
        .and_then(|p| std::env::split_paths(&p).find(|r| r.join("Modelica/package.mo").is_file()));
    if found.is_none() {
        eprintln!("{test}: skipped, MODELICAPATH holds no Modelica Standard Library");
    }
    found
}

/// A fresh folder for a test's files.
fn folder(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rmoc-msl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("folder");
    d
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("folders");
    std::fs::write(p, text).expect("write");
}

/// `rmoc ARGS` with `MODELICAPATH` and `RMOCPATH` as given (unset if
/// `None`): exit code and both outputs.
fn rmoc(args: &[&str], modelicapath: Option<&Path>) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rmoc"));
    c.args(args)
        .env_remove("RMOCPATH")
        .env_remove("MODELICAPATH");
    if let Some(p) = modelicapath {
        c.env("MODELICAPATH", p);
    }
    common::exit_and_text(&c.output().expect("rmoc runs"))
}

/// The constructs of full Modelica that the MSL's files use and rmoc's
/// grammar once refused parse (`--parse-only` looks nothing up): operator
/// records and functions, quoted names, `external` clauses, `inner outer`,
/// `model extends`, and functions passed as arguments.
#[test]
fn the_syntax_the_msl_uses_parses() {
    let d = folder("syntax");
    write(
        &d,
        "Syntax.mo",
        r#"within;
package Syntax
  operator record Complex "complex number"
    Real re;
    Real im;
    encapsulated operator 'constructor'
      function fromReal
        input Real re;
        input Real im = 0;
        output Complex result(re = re, im = im);
      algorithm
        annotation(Inline = true);
      end fromReal;
    end 'constructor';
    encapsulated operator function '+'
      input Complex c1;
      input Complex c2;
      output Complex c3;
    algorithm
      c3 := Complex(c1.re + c2.re, c1.im + c2.im);
    end '+';
  end Complex;
  type Logic = enumeration('U' "uninitialized", '0' "zero", '1' "one");
  function seed
    input Integer s;
    output Integer y;
  external "C" y = rmocSeed(s) annotation(Library = "none");
  end seed;
  function twice
    input Real x;
    output Real y;
  external "C";
  end twice;
  model Root
    inner outer Real shared;
  end Root;
  partial model Base
    replaceable record Props
      Real p;
    end Props;
  end Base;
  model Derived
    extends Base;
    redeclare record extends Props
      Real q;
    end Props;
    Logic l = Logic.'1';
    Real y = apply(function square(k = 2), 3);
  end Derived;
end Syntax;
"#,
    );
    let (code, text) = rmoc(
        &[
            "check",
            "--parse-only",
            &d.join("Syntax.mo").display().to_string(),
        ],
        None,
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("parsed 1 class(es)"), "{text}");
    // The library index finds the same classes, quoted and extending ones
    // included, with the ranges a parse gives.
    let src = std::fs::read_to_string(d.join("Syntax.mo")).expect("read");
    let scan = rmoc::syntax::scan::scan(&src);
    let names: Vec<&str> = scan.classes.iter().map(|c| c.name.as_str()).collect();
    for n in [
        "Complex",
        "'constructor'",
        "'+'",
        "Logic",
        "seed",
        "Props",
        "Derived",
    ] {
        assert!(names.contains(&n), "{n} not among {names:?}");
    }
    let complex = &scan.classes[names.iter().position(|&n| n == "Complex").expect("Complex")];
    assert!(src[complex.start..complex.end].starts_with("operator record Complex"));
    assert!(src[complex.start..complex.end].ends_with("end Complex;"));
}

/// Every `.mo` file of the MSL parses (`rmoc check --parse-only`), but for
/// the expandable connectors, which docs/language.md lists as not
/// supported and which are refused with that diagnostic.
#[test]
fn every_msl_file_parses_but_expandable_connectors() {
    let Some(root) = msl("every_msl_file_parses_but_expandable_connectors") else {
        return;
    };
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "mo") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 2000, "{} .mo files", files.len());
    let mut refused = Vec::new();
    for f in &files {
        let (_, parsed) = rmoc::parse_file(f);
        if let Err(d) = parsed {
            let message = d.first().map(|d| d.message.clone()).unwrap_or_default();
            assert!(
                message.contains("expandable connectors are not supported"),
                "{}: {message}",
                f.display()
            );
            refused.push(f);
        }
    }
    eprintln!(
        "{} of {} MSL files parse; {} refused for expandable connectors",
        files.len() - refused.len(),
        files.len(),
        refused.len()
    );
    assert!(refused.len() <= 10, "{refused:?}");
}

/// A library on `MODELICAPATH` in Modelica's layout: `package.mo`
/// folders, `.mo` files, a `package.order`; classes are found through it,
/// and a file inside a library (`within Lib.Sub;`) finds its library from
/// its own path, with no `MODELICAPATH` at all.
#[test]
fn libraries_load_from_modelicapath_and_from_within() {
    let d = folder("lookup");
    let libs = d.join("libs");
    write(
        &libs,
        "Lib/package.mo",
        "package Lib\n  constant Real g = 9.81;\nend Lib;\n",
    );
    write(&libs, "Lib/package.order", "Sub\nDecay\n");
    write(
        &libs,
        "Lib/Decay.mo",
        "within Lib;\nmodel Decay\n  parameter Real k = 2;\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -k*x;\nend Decay;\n",
    );
    write(
        &libs,
        "Lib/Sub/package.mo",
        "within Lib;\npackage Sub\nend Sub;\n",
    );
    write(
        &libs,
        "Lib/Sub/Fall.mo",
        "within Lib.Sub;\nmodel Fall\n  Real v(start = 0, fixed = true);\nequation\n  der(v) = -Lib.g;\nend Fall;\n",
    );
    let user = d.join("user");
    write(
        &user,
        "Use.mo",
        "model Use\n  Lib.Decay decay(k = 3);\n  Lib.Sub.Fall fall;\nend Use;\n",
    );
    let use_mo = user.join("Use.mo").display().to_string();
    let (code, text) = rmoc(&["check", &use_mo], Some(&libs));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Use: ok (2 equations, 2 unknowns"), "{text}");
    // Without MODELICAPATH the library is unknown, and the hint says where
    // classes are looked for.
    let (code, text) = rmoc(&["check", &use_mo], None);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("unknown class `Lib`") && text.contains("MODELICAPATH"),
        "{text}"
    );
    // A library's own file: its `within` names the folders above it.
    let fall = libs.join("Lib/Sub/Fall.mo").display().to_string();
    let (code, text) = rmoc(&["check", &fall], None);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Fall: ok (1 equations, 1 unknowns"), "{text}");
}

/// A model written against the MSL finds it on `MODELICAPATH`: the first
/// stage of "your Modelica models run unchanged" (issue 20, acceptance 4
/// asks for the whole model to run).
#[test]
fn an_msl_class_is_found_through_modelicapath() {
    let Some(root) = msl("an_msl_class_is_found_through_modelicapath") else {
        return;
    };
    let d = folder("msl-units");
    write(
        &d,
        "Spin.mo",
        "model Spin\n  import SI = Modelica.Units.SI;\n  parameter SI.Inertia J = 2;\n  parameter SI.Torque tau = 4;\n  SI.AngularVelocity w(start = 0, fixed = true);\nequation\n  J*der(w) = tau;\nend Spin;\n",
    );
    let spin = d.join("Spin.mo").display().to_string();
    let (code, text) = rmoc(
        &[
            "simulate",
            &spin,
            "--stop-time",
            "1",
            "-o",
            &d.join("spin.csv").display().to_string(),
            "--print",
            "w",
        ],
        Some(&root),
    );
    assert_eq!(code, Some(0), "{text}");
    // w(1) = tau/J = 2.
    let w: f64 = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("w")
                .map(|r| r.trim().trim_start_matches('=').trim().to_string())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    assert!((w - 2.0).abs() < 1e-9, "w = {w}: {text}");
}

/// Simulates `Modelica.Mechanics.Rotational.Examples.NAME` of the MSL at
/// `root` unchanged, with `args`, into `dir/NAME.csv`; panics on failure.
fn simulate_example(root: &Path, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let model = root.join(format!("Modelica/Mechanics/Rotational/Examples/{name}.mo"));
    simulate_model(&model, dir, Some(root), args)
}

/// Simulates `model` (with `MODELICAPATH` as given) and `args` into
/// `dir/STEM.csv`; panics on failure.
fn simulate_model(model: &Path, dir: &Path, modelicapath: Option<&Path>, args: &[&str]) -> PathBuf {
    let stem = model
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let res = dir.join(format!("{stem}.csv"));
    let (model_s, res_s) = (model.display().to_string(), res.display().to_string());
    let mut all = vec!["simulate", model_s.as_str(), "-o", res_s.as_str()];
    all.extend_from_slice(args);
    let (code, text) = rmoc(&all, modelicapath);
    assert_eq!(code, Some(0), "{stem}: {text}");
    res
}

/// Reads column `name` of a CSV result.
fn column(path: &Path, name: &str) -> Vec<f64> {
    let (names, rows) = rmoc::output::csv::read(path).expect("result");
    let k = names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    rows.iter().map(|r| r[k]).collect()
}

/// `Modelica.Mechanics.Rotational.Examples.First`, unchanged from the MSL,
/// against the same drive train written as plain equations (the motor
/// inertia reduced through the ideal gear: (J2 + Jm i^2) w2' = i tau - d w2
/// + c (phi3 - phi2), J3 w3' = -c (phi3 - phi2)) over its whole run.
#[test]
fn the_msl_first_example_runs_unchanged() {
    let Some(root) = msl("the_msl_first_example_runs_unchanged") else {
        return;
    };
    let d = folder("first");
    let res = simulate_example(
        &root,
        &d,
        "First",
        &["--interval", "0.01", "--tolerance", "1e-8"],
    );
    write(
        &d,
        "Plain.mo",
        "model Plain\n  parameter Real Jm = 0.1, J2 = 2, J3 = 2, i = 10, damping = 10, c = 1e4, A = 10, f = 5;\n  constant Real pi = 3.141592653589793;\n  Real phi2(start = 0, fixed = true), w2(start = 0, fixed = true);\n  Real phi3(start = 0, fixed = true), w3(start = 0, fixed = true);\nequation\n  der(phi2) = w2;\n  der(phi3) = w3;\n  (J2 + Jm*i^2)*der(w2) = i*A*sin(2*pi*f*time) - damping*w2 + c*(phi3 - phi2);\n  J3*der(w3) = -c*(phi3 - phi2);\n  annotation(experiment(StopTime = 1));\nend Plain;\n",
    );
    let plain = simulate_model(
        &d.join("Plain.mo"),
        &d,
        None,
        &["--interval", "0.01", "--tolerance", "1e-8"],
    );
    for (msl_name, plain_name) in [
        ("inertia2.w", "w2"),
        ("inertia3.phi", "phi3"),
        ("inertia1.w", "w2"),
    ] {
        let (a, b) = (column(&res, msl_name), column(&plain, plain_name));
        assert_eq!(a.len(), b.len(), "{msl_name}: rows");
        // inertia1 turns `i` times as fast as inertia2.
        let scale = if msl_name == "inertia1.w" { 10.0 } else { 1.0 };
        let big = b.iter().fold(0.0f64, |m, v| m.max(v.abs())) * scale;
        assert!(big > 0.1, "{plain_name} stays near 0");
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - scale * y).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 1e-5 * big, "{msl_name}: off by {worst:e} of {big}");
    }
}

/// What the MSL's components need of names and bindings, without the MSL:
/// constants brought in by imports (`import P.g;`, `import h = P.h;`,
/// `import P.*;`), a function called in a constant binding and used where
/// a value must be known while compiling (an array size), and a parameter
/// of type StateSelect passed on as a `stateSelect` attribute; an array
/// sized `:` by its binding; a component of an enumeration type.
#[test]
fn imported_constants_functions_in_bindings_and_stateselect_parameters() {
    let flat = common::flatten(
        r#"package P
  constant Real g = 9.81;
  constant Real h = 2*halfOf(2);
  constant Integer n = integerOf(3.0);
  function halfOf
    input Real x;
    output Real y;
  algorithm
    y := x/2;
  end halfOf;
  function integerOf
    input Real x;
    output Integer k;
  algorithm
    k := integer(x);
  end integerOf;
end P;
type Mode = enumeration(slow, fast);
model M
  import P.g;
  import hh = P.h;
  import P.*;
  parameter StateSelect sel = StateSelect.prefer;
  parameter Real table[:, 2] = [0, 1; 1, 3; 2, 4];
  parameter Mode mode = Mode.fast;
  Real x[n](each stateSelect = sel, each start = 0, each fixed = true);
  Real y = if mode == Mode.fast then table[size(table, 1), 2] else 0;
equation
  der(x) = fill(g + hh, n);
end M;
"#,
        Some("M"),
    );
    // `table[:, 2]` takes 3 rows from its binding; `mode` is an Integer
    // (fast = 2), so y = table[3, 2] = 4.
    assert!(
        flat.contains("table[3,2]") && !flat.contains("table[4,"),
        "{flat}"
    );
    assert!(flat.contains("mode = 2"), "{flat}");
    assert!(flat.contains("x[3]"), "{flat}");
    assert!(!flat.contains("x[4]"), "{flat}");
    assert!(flat.contains("11.81"), "g + hh = 9.81 + 2: {flat}");
    assert!(
        flat.contains("prefer"),
        "stateSelect from the parameter: {flat}"
    );
}

/// `Modelica.Mechanics.Rotational.Examples.CompareBrakingTorque`
/// (components of an enumeration type: `SignTorque`'s `reg`), against the
/// closed forms of two of its brakes on J = 1, w(0) = 100: the linear one
/// (tau = -w) gives w = 100 e^-t, the quadratic one (tau = -w^2/100)
/// w = 100/(1 + t).
#[test]
fn the_msl_braking_torques_follow_their_closed_forms() {
    let Some(root) = msl("the_msl_braking_torques_follow_their_closed_forms") else {
        return;
    };
    let d = folder("braking");
    let res = simulate_example(&root, &d, "CompareBrakingTorque", &["--tolerance", "1e-9"]);
    let t = column(&res, "time");
    assert!(t.last().is_some_and(|&e| e >= 1.0), "{t:?}");
    let (linear, quadratic) = (column(&res, "inertia2.w"), column(&res, "inertia3.w"));
    for (k, &tk) in t.iter().enumerate() {
        let (wl, wq) = (100.0 * (-tk).exp(), 100.0 / (1.0 + tk));
        assert!(
            (linear[k] - wl).abs() <= 1e-5 * 100.0,
            "t = {tk}: {} against {wl}",
            linear[k]
        );
        assert!(
            (quadratic[k] - wq).abs() <= 1e-5 * 100.0,
            "t = {tk}: {} against {wq}",
            quadratic[k]
        );
    }
}

/// `Modelica.Mechanics.Rotational.Examples.RollingWheel` (conditional
/// support connectors, their connections dropped): wheel J = 1, r = 1 on a
/// mass m = 1 against the force -10 (v/5)^2, a torque of 10 from t = 0.1:
/// 2 v' = 10 (1 - v^2/25), so v = 5 tanh(t - 0.1).
#[test]
fn the_msl_rolling_wheel_follows_its_closed_form() {
    let Some(root) = msl("the_msl_rolling_wheel_follows_its_closed_form") else {
        return;
    };
    let d = folder("wheel");
    let res = simulate_example(
        &root,
        &d,
        "RollingWheel",
        &["--tolerance", "1e-9", "--interval", "0.01"],
    );
    let (t, v) = (column(&res, "time"), column(&res, "mass.v"));
    assert!(t.last().is_some_and(|&e| e >= 5.0 - 1e-9), "{t:?}");
    for (&tk, &vk) in t.iter().zip(&v) {
        let want = if tk < 0.1 {
            0.0
        } else {
            5.0 * (tk - 0.1).tanh()
        };
        assert!(
            (vk - want).abs() <= 1e-5 * 5.0,
            "t = {tk}: v = {vk}, closed form {want}"
        );
    }
}

/// A connection to a conditional component whose condition is false is
/// removed with it (MLS 4.4.5), inside the component (`support`) and from
/// outside (`shaft.support`); with the condition true it connects.
#[test]
fn connections_to_disabled_conditional_components_are_dropped() {
    let src = |use_support: bool| {
        format!(
            "connector Flange\n  Real phi;\n  flow Real tau;\nend Flange;\nmodel Fixed\n  Flange flange;\nequation\n  flange.phi = 0;\nend Fixed;\nmodel InternalSupport\n  input Real tau;\n  Real phi;\n  Flange flange;\nequation\n  flange.tau = tau;\n  flange.phi = phi;\nend InternalSupport;\nmodel Shaft\n  parameter Boolean useSupport = {use_support};\n  Flange support if useSupport;\n  Fixed fixed if not useSupport;\n  InternalSupport internal(tau = w);\n  Real w(start = 1, fixed = true);\nequation\n  connect(internal.flange, support);\n  connect(internal.flange, fixed.flange);\n  der(w) = -w + internal.phi;\nend Shaft;\nmodel M\n  Shaft shaft;\n  Fixed ground;\nequation\n  connect(shaft.support, ground.flange);\nend M;\n"
        )
    };
    let grounded = common::check(&src(false));
    assert!(grounded.contains("M: ok"), "{grounded}");
    // With the support there, `internal.flange` is connected to it instead
    // of the fixed point.
    let flat = common::flatten(&src(true), Some("M"));
    assert!(flat.contains("shaft.support.phi"), "{flat}");
    assert!(!flat.contains("shaft.fixed"), "{flat}");
}

/// A torsional model as a user writes it against MSL 4 (issue 20, "Why":
/// `import SI = Modelica.Units.SI`, `Rotational.Components.Inertia`,
/// `Modelica.Blocks.Sources.Sine`), unchanged, against the same two-mass
/// drive as plain equations: J1 w1' = tau - c (phi1 - phi2) - d (w1 - w2),
/// J2 w2' = c (phi1 - phi2) + d (w1 - w2), tau = 10 sin(2 pi 2 t).
#[test]
fn a_users_msl_model_runs_unchanged() {
    let Some(root) = msl("a_users_msl_model_runs_unchanged") else {
        return;
    };
    let d = folder("user-model");
    write(
        &d,
        "TorsionalDrive.mo",
        r#"model TorsionalDrive "A motor, a compliant shaft and a load, driven by a sine torque"
  import SI = Modelica.Units.SI;
  parameter SI.Inertia J1 = 0.5 "motor";
  parameter SI.Inertia J2 = 1.5 "load";
  parameter SI.RotationalSpringConstant c = 200;
  parameter SI.RotationalDampingConstant d = 2;
  Modelica.Mechanics.Rotational.Components.Inertia motor(J = J1,
    phi(start = 0, fixed = true), w(start = 0, fixed = true));
  Modelica.Mechanics.Rotational.Components.SpringDamper shaft(c = c, d = d,
    phi_rel(start = 0, fixed = true), w_rel(start = 0, fixed = true));
  Modelica.Mechanics.Rotational.Components.Inertia load(J = J2);
  Modelica.Mechanics.Rotational.Sources.Torque torque;
  Modelica.Blocks.Sources.Sine sine(amplitude = 10, f = 2);
equation
  connect(sine.y, torque.tau);
  connect(torque.flange, motor.flange_a);
  connect(motor.flange_b, shaft.flange_a);
  connect(shaft.flange_b, load.flange_a);
  annotation(experiment(StopTime = 2, Tolerance = 1e-8, Interval = 0.01));
end TorsionalDrive;
"#,
    );
    write(
        &d,
        "Plain.mo",
        "model Plain\n  parameter Real J1 = 0.5, J2 = 1.5, c = 200, d = 2;\n  constant Real pi = 3.141592653589793;\n  Real phi1(start = 0, fixed = true), w1(start = 0, fixed = true);\n  Real phi2(start = 0, fixed = true), w2(start = 0, fixed = true);\n  Real tau_shaft = c*(phi1 - phi2) + d*(w1 - w2);\nequation\n  der(phi1) = w1;\n  der(phi2) = w2;\n  J1*der(w1) = 10*sin(2*pi*2*time) - tau_shaft;\n  J2*der(w2) = tau_shaft;\n  annotation(experiment(StopTime = 2, Tolerance = 1e-8, Interval = 0.01));\nend Plain;\n",
    );
    let user = simulate_model(&d.join("TorsionalDrive.mo"), &d, Some(&root), &[]);
    let plain = simulate_model(&d.join("Plain.mo"), &d, None, &[]);
    // The MSL's shaft torque is c phi_rel + d w_rel with phi_rel = phi2 -
    // phi1: the opposite sign of `tau_shaft`.
    for (a, b, sign) in [
        ("load.w", "w2", 1.0),
        ("motor.phi", "phi1", 1.0),
        ("shaft.tau", "tau_shaft", -1.0),
    ] {
        let x = column(&user, a);
        let y: Vec<f64> = column(&plain, b).iter().map(|v| sign * v).collect();
        assert_eq!(x.len(), y.len(), "{a}: rows");
        let big = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(big > 1e-3, "{b} stays near 0");
        let worst = x
            .iter()
            .zip(&y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 1e-5 * big, "{a}: off by {worst:e} of {big}");
    }
}

/// A function's declared derivative (`annotation(derivative(noDerivative =
/// q) = pos_der)`, MLS 12.7.1, as the MSL's `Sources.Move` declares its
/// position function) is what index reduction uses. The speed signal given
/// here is deliberately twice the derivative of the position signal, so the
/// declared derivative (v = 2 cos t) and the body's (cos t) differ; the
/// second derivative differentiates `pos_der`'s body (f = m (-2 sin t)).
#[test]
fn index_reduction_uses_a_declared_derivative() {
    let r = common::simulate(
        r#"function pos "position from a signal vector {position, speed}"
  input Real q[2];
  input Real dummy;
  output Real y;
algorithm
  y := q[1];
  annotation(derivative(noDerivative = q) = pos_der);
end pos;
function pos_der
  input Real q[2];
  input Real dummy;
  input Real dummy_der;
  output Real yd;
algorithm
  yd := q[2];
end pos_der;
model M
  parameter Real m = 2;
  Real s;
  Real v;
  Real f;
equation
  der(s) = v;
  m*der(v) = f;
  s = pos({sin(time), 2*cos(time)}, time);
  annotation(experiment(StopTime = 1));
end M;
"#,
        Some("M"),
        &common::Run::default(),
    );
    common::assert_close(common::last(&r, "v"), 2.0 * 1f64.cos(), 1e-9, 1e-12);
    common::assert_close(common::last(&r, "f"), -4.0 * 1f64.sin(), 1e-9, 1e-12);
}

/// A package folder's member files are read when a member is used, not
/// when the package is opened (`Origin::Pending` in the library): a model
/// using `Lib.A` reads `Lib/package.mo` and `Lib/A.mo`, never `Lib/B.mo`;
/// a member file that does not define its class is reported as such.
#[test]
fn package_members_are_read_only_when_used() {
    let d = folder("lazy");
    write(&d, "Lib/package.mo", "package Lib\nend Lib;\n");
    write(
        &d,
        "Lib/A.mo",
        "within Lib;\nmodel A\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend A;\n",
    );
    write(
        &d,
        "Lib/B.mo",
        "within Lib;\nmodel B\n  Real y = 1;\nend B;\n",
    );
    write(&d, "Lib/Wrong.mo", "within Lib;\nmodel Other\nend Other;\n");
    write(&d, "Use.mo", "model Use\n  Lib.A a;\nend Use;\n");
    write(
        &d,
        "UseWrong.mo",
        "model UseWrong\n  Lib.Wrong w;\nend UseWrong;\n",
    );
    let (mut lib, loaded) = rmoc::load(&d.join("Use.mo"));
    let loaded = loaded.expect("parses");
    let m = rmoc::select_model(&mut lib, &loaded, None).expect("model");
    rmoc::check_model(&mut lib, m).expect("checks");
    let read: Vec<String> = lib.sources.files.iter().map(|f| f.path.clone()).collect();
    assert!(read.iter().any(|f| f.ends_with("A.mo")), "{read:?}");
    assert!(!read.iter().any(|f| f.ends_with("B.mo")), "{read:?}");
    let (code, text) = rmoc(
        &["check", &d.join("UseWrong.mo").display().to_string()],
        None,
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("the file does not define `Wrong`"), "{text}");
}

/// `Modelica.Blocks.Sources.Pulse` (an `initial algorithm` of assignments,
/// taken as the equations it is equivalent to) against the pulse train it
/// describes: offset 0.5, amplitude 2 for the first half of each 0.2 s
/// period. Rows at the switching instants are skipped (two rows each).
#[test]
fn the_msl_pulse_source_gives_its_pulse_train() {
    let Some(root) = msl("the_msl_pulse_source_gives_its_pulse_train") else {
        return;
    };
    let d = folder("pulse");
    write(
        &d,
        "PulseTest.mo",
        "model PulseTest\n  Modelica.Blocks.Sources.Pulse pulse(amplitude = 2, width = 50, period = 0.2, offset = 0.5);\n  annotation(experiment(StopTime = 1, Interval = 0.01));\nend PulseTest;\n",
    );
    let res = simulate_model(&d.join("PulseTest.mo"), &d, Some(&root), &[]);
    let (t, y) = (column(&res, "time"), column(&res, "pulse.y"));
    let mut compared = 0;
    for (&tk, &yk) in t.iter().zip(&y) {
        let phase = (tk + 1e-9) % 0.2;
        if phase < 1e-6 || (phase - 0.1).abs() < 1e-6 || (phase - 0.2).abs() < 1e-6 {
            continue;
        }
        let want = if phase < 0.1 { 2.5 } else { 0.5 };
        assert!(
            (yk - want).abs() < 1e-12,
            "t = {tk}: y = {yk}, pulse {want}"
        );
        compared += 1;
    }
    assert!(compared > 80, "{compared} rows compared");
}

/// An algorithm section of a model that is a sequence of assignments, each
/// variable assigned once and not read before, is the equations it is
/// equivalent to; `initial algorithm` gives initial equations.
#[test]
fn algorithm_sections_of_assignments_are_equations() {
    let r = common::simulate(
        "model M\n  parameter Real p = 3;\n  Real a;\n  Real b;\n  Real x;\ninitial algorithm\n  x := 2*p;\nalgorithm\n  a := p*time;\n  b := a + 1;\nequation\n  der(x) = b;\n  annotation(experiment(StopTime = 1));\nend M;\n",
        Some("M"),
        &common::Run::default(),
    );
    // x(0) = 2 p = 6 and b = 3 t + 1, so x(1) = 6 + 3/2 + 1.
    common::assert_close(common::last(&r, "x"), 8.5, 1e-6, 1e-9);
    common::assert_close(common::last(&r, "b"), 4.0, 1e-12, 1e-12);
}

/// A declaration with `zeroDerivative = k` is used only where k's
/// derivative is zero; where k varies, the body is differentiated. The
/// declared derivative here is deliberately twice the true one, so the
/// result tells which was used: with a constant k, v = 2 k cos t (the
/// declaration); with k = 1 + t, v = k cos t + sin t (the body).
#[test]
fn a_zero_derivative_declaration_holds_only_where_its_input_is_constant() {
    let model = |k: &str| {
        format!(
            "function f\n  input Real x;\n  input Real k;\n  output Real y;\nalgorithm\n  y := k*x;\n  annotation(derivative(zeroDerivative = k) = f_der);\nend f;\nfunction f_der\n  input Real x;\n  input Real k;\n  input Real dx;\n  output Real dy;\nalgorithm\n  dy := 2*k*dx;\nend f_der;\nmodel M\n  {k};\n  Real s;\n  Real v;\nequation\n  der(s) = v;\n  s = f(sin(time), k);\n  annotation(experiment(StopTime = 1));\nend M;\n"
        )
    };
    let constant = common::simulate(
        &model("parameter Real k = 3"),
        Some("M"),
        &common::Run::default(),
    );
    common::assert_close(common::last(&constant, "v"), 6.0 * 1f64.cos(), 1e-9, 1e-12);
    let varying = common::simulate(
        &model("Real k = 1 + time"),
        Some("M"),
        &common::Run::default(),
    );
    let want = 2.0 * 1f64.cos() + 1f64.sin();
    common::assert_close(common::last(&varying, "v"), want, 1e-9, 1e-12);
}

/// A library installed in a folder named with its version (`Ver 2.0/`, as
/// `Modelica 4.0.0/`, MLS 13.4.1) is found by its name, through
/// `MODELICAPATH` and from the `within` of its own files.
#[test]
fn a_versioned_library_folder_is_found() {
    let d = folder("versioned");
    let libs = d.join("libs");
    write(
        &libs,
        "Ver 2.0/package.mo",
        "package Ver\n  constant Real g = 2;\nend Ver;\n",
    );
    write(
        &libs,
        "Ver 1.0/package.mo",
        "package Ver\n  constant Real g = 1;\nend Ver;\n",
    );
    write(
        &libs,
        "Ver 2.0/Sub/M.mo",
        "within Ver.Sub;\nmodel M\n  Real x(start = 0, fixed = true);\nequation\n  der(x) = Ver.g;\nend M;\n",
    );
    write(
        &libs,
        "Ver 2.0/Sub/package.mo",
        "within Ver;\npackage Sub\nend Sub;\n",
    );
    write(
        &d,
        "Use.mo",
        "model Use\n  Ver.Sub.M m;\n  annotation(experiment(StopTime = 1));\nend Use;\n",
    );
    let res = simulate_model(&d.join("Use.mo"), &d, Some(&libs), &[]);
    // The highest version: g = 2.
    assert!((column(&res, "m.x").last().copied().unwrap_or(0.0) - 2.0).abs() < 1e-9);
    let own = libs.join("Ver 2.0/Sub/M.mo").display().to_string();
    let (code, text) = rmoc(&["check", &own], None);
    assert_eq!(code, Some(0), "{text}");
}

/// A constant of a package that extends another with a modifier takes the
/// modified value, and the base's constants that use it follow (as the
/// MSL's packages redefine constants through `extends`).
#[test]
fn package_constants_follow_extends_modifiers() {
    let flat = common::flatten(
        "package Q\n  constant Real k = 1;\n  constant Real k2 = 2*k;\nend Q;\npackage P\n  extends Q(k = 4);\nend P;\nmodel M\n  Real x = P.k + P.k2 + Q.k2;\nend M;\n",
        Some("M"),
    );
    // P.k = 4, P.k2 = 8, Q.k2 = 2.
    assert!(flat.contains("x = 14;"), "{flat}");
}

/// String parameters and constants are compile-time texts (the MSL's
/// blocks name their signals with them): modified from outside, joined
/// with `+`, and read by messages.
#[test]
fn string_parameters_reach_messages() {
    let src = "model S\n  parameter String name = \"motor\";\n  parameter String full = name + \" 1\";\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\n  assert(x > 2, \"too slow in \" + full);\nend S;\nmodel T\n  S s(name = \"pump\");\nend T;\n";
    let d = folder("strings");
    write(&d, "T.mo", src);
    let (code, text) = rmoc(
        &[
            "simulate",
            &d.join("T.mo").display().to_string(),
            "--model",
            "T",
            "-o",
            &d.join("t.csv").display().to_string(),
        ],
        None,
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("too slow in pump 1"), "{text}");
}

/// The MSL's table objects (`Modelica.Blocks.Types.ExternalCombiTable1D`
/// and `ExternalCombiTable2D`, made by their constructors while
/// flattening) and the functions of `Modelica.Blocks.Tables.Internal` that
/// read them, against the interpolants worked by hand: linear with
/// `LastTwoPoints` (both columns served, outside the range too), a
/// monotone cubic held at its ends, the same matrix read from a file in
/// the MSL's text format, and a bilinear 2-D table, which is
/// 1 + u1 + u2 + u1 u2 on [0, 0, 1; 0, 1, 2; 2, 3, 6].
#[test]
fn the_msl_table_objects_interpolate() {
    let Some(root) = msl("the_msl_table_objects_interpolate") else {
        return;
    };
    let d = folder("tables");
    write(
        &d,
        "tab.txt",
        "#1\n# two matrices; the second is used\ndouble tab0(1,2)\n0 1\ndouble tab1(3,2)  # the table\n0 0\n1 2\n3 4\n",
    );
    write(
        &d,
        "Tables.mo",
        r#"model Tables
  import Modelica.Blocks.Types.{ExternalCombiTable1D, ExternalCombiTable2D, Extrapolation, Smoothness};
  import Modelica.Blocks.Tables.Internal.{getTable1DValue, getTable1DValueNoDer, getTable2DValue, getTable1DAbscissaUmin, getTable1DAbscissaUmax};
  parameter Real tab[:, :] = [0, 0, 10; 1, 2, 20; 3, 4, 0];
  parameter ExternalCombiTable1D lin = ExternalCombiTable1D("NoName", "NoName", tab, {2, 3}, Smoothness.LinearSegments, Extrapolation.LastTwoPoints, false);
  parameter ExternalCombiTable1D mono = ExternalCombiTable1D(tableName = "NoName", fileName = "NoName", table = [0, 0; 1, 2; 3, 4; 4, 4.5], columns = {2}, smoothness = Smoothness.MonotoneContinuousDerivative1, extrapolation = Extrapolation.HoldLastPoint, verboseRead = false);
  parameter ExternalCombiTable1D file = ExternalCombiTable1D(tableName = "tab1", fileName = "tab.txt", table = fill(0.0, 0, 2), columns = {2}, smoothness = Smoothness.LinearSegments);
  parameter ExternalCombiTable2D t2 = ExternalCombiTable2D("NoName", "NoName", [0, 0, 1; 0, 1, 2; 2, 3, 6], Smoothness.LinearSegments, Extrapolation.LastTwoPoints, false);
  Real u = 4*time - 0.5;
  Real y1 = getTable1DValue(lin, 1, u);
  Real y2 = getTable1DValueNoDer(lin, 2, u);
  Real ym = getTable1DValue(mono, 1, u);
  Real yf = getTable1DValue(file, 1, u);
  Real z = getTable2DValue(t2, time, 2*time);
  Real range = getTable1DAbscissaUmax(lin) - getTable1DAbscissaUmin(lin);
  parameter Real lo2[2] = Modelica.Blocks.Tables.Internal.getTable2DAbscissaUmin(t2);
  parameter Real hi2[2] = Modelica.Blocks.Tables.Internal.getTable2DAbscissaUmax(t2);
  Real ranges2 = 1000*lo2[1] + 100*lo2[2] + 10*hi2[1] + hi2[2];
  annotation(experiment(StopTime = 1, Interval = 0.01));
end Tables;
"#,
    );
    let res = simulate_model(&d.join("Tables.mo"), &d, Some(&root), &[]);
    let t = column(&res, "time");
    let [u, y1, y2, ym, yf, z, range, ranges2] =
        ["u", "y1", "y2", "ym", "yf", "z", "range", "ranges2"].map(|n| column(&res, n));
    // Piecewise linear through (x, y), the end segments extended.
    let linear = |x: &[f64], y: &[f64], u: f64| {
        let i = (1..x.len() - 1).find(|&i| u < x[i]).unwrap_or(x.len() - 1) - 1;
        y[i] + (y[i + 1] - y[i]) * (u - x[i]) / (x[i + 1] - x[i])
    };
    for k in 0..t.len() {
        let (tk, uk) = (t[k], u[k]);
        let close = |a: f64, b: f64, what: &str| {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "t = {tk}, {what}: {a} against {b}"
            );
        };
        close(
            y1[k],
            linear(&[0.0, 1.0, 3.0], &[0.0, 2.0, 4.0], uk),
            "column 2",
        );
        close(
            y2[k],
            linear(&[0.0, 1.0, 3.0], &[10.0, 20.0, 0.0], uk),
            "column 3",
        );
        close(yf[k], y1[k], "from the file");
        close(z[k], 1.0 + tk + 2.0 * tk + tk * 2.0 * tk, "2-D");
        close(range[k], 3.0, "abscissa range");
        // u1's grid {0, 2}, u2's {0, 1}.
        close(ranges2[k], 21.0, "2-D abscissa ranges");
        // The monotone cubic: held outside [0, 4], through the points,
        // never beyond its neighbours, rising.
        if uk <= 0.0 {
            close(ym[k], 0.0, "held below");
        } else {
            let (lo, hi) = if uk <= 1.0 {
                (0.0, 2.0)
            } else if uk <= 3.0 {
                (2.0, 4.0)
            } else {
                (4.0, 4.5)
            };
            assert!(
                ym[k] >= lo && ym[k] <= hi,
                "t = {tk}: {} outside [{lo}, {hi}]",
                ym[k]
            );
            assert!(k == 0 || ym[k] >= ym[k - 1], "t = {tk}: not rising");
        }
    }
}

/// What the native MSL tables do not cover is refused where it is
/// written, with the alternative: a smoothness without an
/// implementation, a MAT or CSV file, a matrix missing from a text file, a
/// column the table does not have, an abscissa that does not rise (at
/// the initial point); exit 1, no result file.
#[test]
fn unsupported_msl_tables_are_refused_where_written() {
    let Some(root) = msl("unsupported_msl_tables_are_refused_where_written") else {
        return;
    };
    let d = folder("bad-tables");
    write(&d, "tab.txt", "#1\ndouble other(2,2)\n0 0\n1 1\n");
    let cases = [
        (
            "tableName = \"NoName\", fileName = \"NoName\", table = [0, 0; 1, 1], columns = {2}, smoothness = Smoothness.ContinuousDerivative",
            "table smoothness `ContinuousDerivative` is not supported",
            "MonotoneContinuousDerivative1",
        ),
        (
            "tableName = \"t\", fileName = \"t.mat\", table = fill(0.0, 0, 2), columns = {2}, smoothness = Smoothness.LinearSegments",
            "MAT files are not supported",
            "write the table as text",
        ),
        (
            "tableName = \"t\", fileName = \"t.csv\", table = fill(0.0, 0, 2), columns = {2}, smoothness = Smoothness.LinearSegments",
            "CSV files are not supported",
            "Tables.readCSV",
        ),
        (
            "tableName = \"tab1\", fileName = \"tab.txt\", table = fill(0.0, 0, 2), columns = {2}, smoothness = Smoothness.LinearSegments",
            "no matrix named `tab1`",
            "double NAME(rows, columns)",
        ),
        (
            "tableName = \"NoName\", fileName = \"NoName\", table = [0, 0; 1, 1], columns = {3}, smoothness = Smoothness.LinearSegments",
            "table column 3 does not exist",
            "",
        ),
        (
            "tableName = \"NoName\", fileName = \"NoName\", table = [0, 0; 0, 1], columns = {2}, smoothness = Smoothness.LinearSegments",
            "the table's abscissa (column 1) must be strictly increasing",
            "no result file was written",
        ),
    ];
    for (k, (args, message, hint)) in cases.iter().enumerate() {
        let file = format!("Bad{k}.mo");
        write(
            &d,
            &file,
            &format!(
                "model Bad{k}\n  import Modelica.Blocks.Types.{{ExternalCombiTable1D, Smoothness}};\n  parameter ExternalCombiTable1D t = ExternalCombiTable1D({args});\n  Real y = Modelica.Blocks.Tables.Internal.getTable1DValue(t, 1, time);\nend Bad{k};\n"
            ),
        );
        let out = d.join(format!("bad{k}.csv"));
        let (code, text) = rmoc(
            &[
                "simulate",
                &d.join(&file).display().to_string(),
                "-o",
                &out.display().to_string(),
            ],
            Some(&root),
        );
        assert_eq!(code, Some(1), "{file}: {text}");
        assert!(
            text.contains(message) && text.contains(hint),
            "{file}: {text}"
        );
        assert!(
            text.contains(&format!("Bad{k}.mo:3:")),
            "{file}: located in the model: {text}"
        );
        assert!(!out.exists(), "{file}: a result file was written");
    }
}

/// The MSL's friction components unchanged (`Rotational.Components.Brake`
/// and `Clutch`: mode logic with `pre`, `initial()` and a mixed loop of
/// Booleans and the friction torque), against closed forms. A brake of
/// torque mu fn = 0.5 * 8 = 4 on J = 2 from w = 10 stops at t = 5 after
/// 25 rad and stays stuck; a brake with peak 1.5 (breakaway at 6) under a
/// torque 2 t stays stuck until t = 3, then slides: J w' = 2 t - 4; a
/// clutch of torque 4 between J1 = 1 at 10 rad/s and J2 = 3 at rest locks
/// at t = 10 / (4 (1 + 1/3)) = 1.875 at the common speed 2.5.
#[test]
fn the_msl_friction_modes_follow_their_closed_forms() {
    let Some(root) = msl("the_msl_friction_modes_follow_their_closed_forms") else {
        return;
    };
    let d = folder("friction");
    write(
        &d,
        "Friction.mo",
        r#"model Friction
  import Modelica.Mechanics.Rotational.Components;
  Components.Inertia inertia(J = 2, w(start = 10, fixed = true), phi(start = 0, fixed = true));
  Components.Brake brake(mu_pos = [0, 0.5], fn_max = 8);
  Components.Inertia held(J = 1, w(start = 0, fixed = true), phi(start = 0, fixed = true));
  Components.Brake breakaway(mu_pos = [0, 0.5], fn_max = 8, peak = 1.5);
  Modelica.Mechanics.Rotational.Sources.Torque torque;
  Modelica.Blocks.Sources.Ramp ramp(height = 20, duration = 10);
  Components.Inertia j1(J = 1, w(start = 10, fixed = true), phi(start = 0, fixed = true));
  Components.Inertia j2(J = 3, w(start = 0, fixed = true), phi(start = 0, fixed = true));
  Components.Clutch clutch(mu_pos = [0, 0.5], fn_max = 8);
  Modelica.Blocks.Sources.Constant one(k = 1);
equation
  connect(inertia.flange_b, brake.flange_a);
  connect(one.y, brake.f_normalized);
  connect(torque.flange, held.flange_a);
  connect(held.flange_b, breakaway.flange_a);
  connect(ramp.y, torque.tau);
  connect(one.y, breakaway.f_normalized);
  connect(j1.flange_b, clutch.flange_a);
  connect(clutch.flange_b, j2.flange_a);
  connect(one.y, clutch.f_normalized);
  annotation(experiment(StopTime = 6, Interval = 0.01));
end Friction;
"#,
    );
    let res = simulate_model(
        &d.join("Friction.mo"),
        &d,
        Some(&root),
        &["--tolerance", "1e-8"],
    );
    let t = column(&res, "time");
    let [w, phi, mode, wh, w1, w2, cmode] = [
        "inertia.w",
        "inertia.phi",
        "brake.mode",
        "held.w",
        "j1.w",
        "j2.w",
        "clutch.mode",
    ]
    .map(|n| column(&res, n));
    assert!(t.last().is_some_and(|&e| e >= 6.0));
    for k in 0..t.len() {
        let tk = t[k];
        let close = |a: f64, b: f64, what: &str| {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                "t = {tk}, {what}: {a} against {b}"
            );
        };
        // The brake.
        let ts = tk.min(5.0);
        close(w[k], 10.0 - 2.0 * ts, "braked speed");
        close(phi[k], 10.0 * ts - ts * ts, "braked angle");
        if tk > 5.0 + 1e-6 {
            assert_eq!(mode[k], 0.0, "t = {tk}: stuck after stopping");
        } else if tk < 5.0 - 1e-6 {
            assert_eq!(mode[k], 1.0, "t = {tk}: sliding forward");
        }
        // Breakaway at t = 3.
        let wb = if tk <= 3.0 {
            0.0
        } else {
            (tk * tk - 9.0) - 4.0 * (tk - 3.0)
        };
        close(wh[k], wb, "breakaway speed");
        // The clutch.
        let tc = tk.min(1.875);
        close(w1[k], 10.0 - 4.0 * tc, "driving side");
        close(w2[k], 4.0 / 3.0 * tc, "driven side");
        if tk > 1.875 + 1e-6 {
            assert_eq!(cmode[k], 0.0, "t = {tk}: locked");
        }
    }
}

/// The MSL's friction, clutch and lossy-gear examples run unchanged to
/// their stop times, and what physics fixes whatever the mode logic does
/// holds: no friction element or lossy gear ever gives power back (its
/// loss power is never negative, to round-off; in HeatLosses all of it
/// leaves through the convection to the ambient), and where the only
/// external torque acts on one of the inertias (CoupledClutches,
/// OneWayClutch: four and two inertias of J = 1) their total angular
/// momentum changes by that torque's integral (trapezoids on the output
/// grid).
#[test]
fn the_msl_friction_examples_dissipate_and_keep_momentum() {
    let Some(root) = msl("the_msl_friction_examples_dissipate_and_keep_momentum") else {
        return;
    };
    let d = folder("friction-examples");
    let examples: [(&str, f64, &[&str], &[&str]); 9] = [
        (
            "HeatLosses",
            1.0,
            &[
                "damper.lossPower",
                "springDamper.lossPower",
                "elastoBacklash.lossPower",
                "bearingFriction.lossPower",
                "lossyGear.lossPower",
                "clutch.lossPower",
                "oneWayClutch.lossPower",
                "brake.lossPower",
            ],
            &[],
        ),
        (
            "Friction",
            3.0,
            &["clutch.lossPower", "brake.lossPower"],
            &[],
        ),
        (
            "CoupledClutches",
            1.5,
            &[
                "clutch1.lossPower",
                "clutch2.lossPower",
                "clutch3.lossPower",
            ],
            &["J1.w", "J2.w", "J3.w", "J4.w"],
        ),
        ("LossyGearDemo1", 0.5, &["gear.lossPower"], &[]),
        (
            "LossyGearDemo2",
            0.5,
            &["gear.lossPower", "bearingFriction.lossPower"],
            &[],
        ),
        ("LossyGearDemo3", 1.0, &["gear.lossPower"], &[]),
        (
            "SimpleGearShift",
            5.0,
            &["clutch.lossPower", "brake.lossPower"],
            &[],
        ),
        (
            "OneWayClutch",
            2.0,
            &["oneWayClutch.lossPower"],
            &["inertiaIn.w", "inertiaOut.w"],
        ),
        (
            "OneWayClutchDisengaged",
            2.0,
            &["oneWayClutch.lossPower"],
            &[],
        ),
    ];
    for (name, stop, losses, speeds) in examples {
        let res = simulate_example(&root, &d, name, &[]);
        let t = column(&res, "time");
        assert!(
            t.last().is_some_and(|&e| e >= stop),
            "{name}: ends at {:?}",
            t.last()
        );
        for loss in losses {
            let p = column(&res, loss);
            let big = p.iter().fold(1.0f64, |m, x| m.max(x.abs()));
            if let Some((k, x)) = p.iter().enumerate().find(|(_, x)| **x < -1e-9 * big) {
                panic!("{name}: {loss} = {x} < 0 at t = {}", t[k]);
            }
        }
        if name == "HeatLosses" {
            // Every loss leaves through the convection to the ambient.
            let q = column(&res, "convection.Q_flow");
            let p: Vec<Vec<f64>> = losses.iter().map(|l| column(&res, l)).collect();
            for k in 0..t.len() {
                let sum: f64 = p.iter().map(|c| c[k]).sum();
                assert!(
                    (sum - q[k]).abs() <= 1e-9 * (1.0 + sum.abs()),
                    "t = {}: {sum} against {}",
                    t[k],
                    q[k]
                );
            }
        }
        if speeds.is_empty() {
            continue;
        }
        let tau = column(&res, "torque.tau");
        let w: Vec<Vec<f64>> = speeds.iter().map(|s| column(&res, s)).collect();
        let momentum = |k: usize| w.iter().map(|c| c[k]).sum::<f64>();
        let mut impulse = 0.0;
        for k in 0..t.len() {
            if k > 0 {
                impulse += 0.5 * (tau[k] + tau[k - 1]) * (t[k] - t[k - 1]);
            }
            let drift = momentum(k) - momentum(0) - impulse;
            assert!(
                drift.abs() <= 1e-3,
                "{name}: t = {}: momentum off by {drift}",
                t[k]
            );
        }
    }
}

/// `GenerationOfFMUs` unchanged (`Sources.Move`'s `position(u, time)`
/// reads `u[1]` only, and its second derivative is declared with
/// `order = 2` on `position_der`): the upper pair, J = 1.1 + 2.2 driven by
/// 10 sin(4 pi t), turns at w = 10 / (3.3 * 4 pi) (1 - cos(4 pi t)); each
/// lower pair (J = 1.1 and 2.2 joined by an exported spring or spring-
/// damper) keeps its angular momentum against its drive torque's integral.
#[test]
fn the_msl_fmu_adaptors_example_follows_its_closed_form() {
    let Some(root) = msl("the_msl_fmu_adaptors_example_follows_its_closed_form") else {
        return;
    };
    let d = folder("fmus");
    let res = simulate_example(&root, &d, "GenerationOfFMUs", &["--tolerance", "1e-8"]);
    let t = column(&res, "time");
    assert!(t.last().is_some_and(|&e| e >= 1.0));
    let w = column(&res, "directInertia.inertia.w");
    for (k, &tk) in t.iter().enumerate() {
        let c = 10.0 / (3.3 * 4.0 * std::f64::consts::PI)
            * (1.0 - (4.0 * std::f64::consts::PI * tk).cos());
        assert!((w[k] - c).abs() <= 1e-6, "t = {tk}: {} against {c}", w[k]);
    }
    for (drive, a, b) in [
        ("torque2.tau", "inertia2a.w", "inertia2b.w"),
        ("force3.tau", "inertia3a.w", "inertia3b.w"),
    ] {
        let (tau, wa, wb) = (column(&res, drive), column(&res, a), column(&res, b));
        let mut impulse = 0.0;
        for k in 0..t.len() {
            if k > 0 {
                impulse += 0.5 * (tau[k] + tau[k - 1]) * (t[k] - t[k - 1]);
            }
            let drift = 1.1 * wa[k] + 2.2 * wb[k] - impulse;
            assert!(
                drift.abs() <= 1e-3,
                "{a}, {b}: t = {}: momentum off by {drift}",
                t[k]
            );
        }
    }
}

/// Every model of `Modelica.Mechanics.Rotational.Examples` (the 17
/// examples and the 5 of `Examples.Utilities`) passes `rmoc check`
/// unchanged (which initializes it).
#[test]
fn every_rotational_example_checks() {
    let Some(root) = msl("every_rotational_example_checks") else {
        return;
    };
    let dir = root.join("Modelica/Mechanics/Rotational/Examples");
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for d in [dir.clone(), dir.join("Utilities")] {
        for e in std::fs::read_dir(&d).expect("examples") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "mo")
                && p.file_stem().is_some_and(|s| s != "package")
            {
                files.push(p);
            }
        }
    }
    assert_eq!(files.len(), 22, "{files:?}");
    for f in files {
        let (code, text) = rmoc(&["check", &f.display().to_string()], Some(&root));
        assert_eq!(code, Some(0), "{}: {text}", f.display());
    }
}

/// Energy balances of four MSL examples run unchanged, from the result's
/// own columns (trapezoids on the output grid): the stored energy (kinetic
/// ½ J w², elastic ½ c phi_rel²) changes by the drive's work less what the
/// dampers dissipate (their `lossPower`), and the eddy-current brake's
/// lost kinetic energy is the heat its adiabatic capacitor (C = 1) stores.
#[test]
fn msl_examples_keep_their_energy_balances() {
    let Some(root) = msl("msl_examples_keep_their_energy_balances") else {
        return;
    };
    let d = folder("energy");
    // (example, [(J or c, speed or relative angle)], drive (torque, speed), losses)
    type Case<'a> = (
        &'a str,
        &'a [(f64, &'a str)],
        Option<(&'a str, &'a str)>,
        &'a [&'a str],
    );
    let cases: [Case; 3] = [
        (
            "FirstGrounded",
            &[
                (0.1, "inertia1.w"),
                (2.0, "inertia2.w"),
                (2.0, "inertia3.w"),
                (1e4, "spring.phi_rel"),
            ],
            Some(("torque.tau", "inertia1.w")),
            &["damper.lossPower"],
        ),
        (
            "ElasticBearing",
            &[
                (1.0, "shaft.w"),
                (50.0, "load.w"),
                (5.0, "housing.w"),
                (1e3, "spring.phi_rel"),
                (1e5, "springDamper.phi_rel"),
            ],
            Some(("torque.tau", "shaft.w")),
            &["springDamper.lossPower"],
        ),
        (
            "Backlash",
            &[(5.0, "inertia1.w"), (20e3, "springDamper.phi_rel")],
            None,
            &["springDamper.lossPower"],
        ),
    ];
    for (name, stores, drive, losses) in cases {
        let res = simulate_example(&root, &d, name, &["--tolerance", "1e-9"]);
        let t = column(&res, "time");
        let stored: Vec<(f64, Vec<f64>)> =
            stores.iter().map(|(k, c)| (*k, column(&res, c))).collect();
        let energy = |i: usize| {
            stored
                .iter()
                .map(|(k, x)| 0.5 * k * x[i] * x[i])
                .sum::<f64>()
        };
        let drive = drive.map(|(tau, w)| (column(&res, tau), column(&res, w)));
        let losses: Vec<Vec<f64>> = losses.iter().map(|l| column(&res, l)).collect();
        let net = |i: usize| {
            drive.as_ref().map_or(0.0, |(tau, w)| tau[i] * w[i])
                - losses.iter().map(|l| l[i]).sum::<f64>()
        };
        let scale = (0..t.len()).map(energy).fold(1e-9f64, f64::max);
        let mut work = 0.0;
        for i in 1..t.len() {
            work += 0.5 * (net(i) + net(i - 1)) * (t[i] - t[i - 1]);
            let off = energy(i) - energy(0) - work;
            assert!(
                off.abs() <= 2e-3 * scale,
                "{name}: t = {}: energy off by {off:e} of {scale:e}",
                t[i]
            );
        }
    }
    let res = simulate_example(&root, &d, "EddyCurrentBrake", &["--tolerance", "1e-9"]);
    let (w, temp) = (column(&res, "inertia.w"), column(&res, "heatCapacitor.T"));
    for i in 0..w.len() {
        let lost = 0.5 * (w[0] * w[0] - w[i] * w[i]);
        assert!(
            (lost - (temp[i] - temp[0])).abs() <= 1e-4 * (1.0 + lost),
            "EddyCurrentBrake: {lost} against {}",
            temp[i] - temp[0]
        );
    }
}

/// The MSL's table blocks unchanged (`Blocks.Tables.CombiTable1Ds`,
/// `CombiTable2Ds`), which compute their file and table names with String
/// expressions and `Modelica.Utilities.Strings` (evaluated while
/// flattening): an inline table, the same read from a file with
/// `tableOnFile = true`, and a 2-D table along u1 = u2 = t, where the
/// bilinear 1 + u1 + u2 + u1 u2 is (1 + t)^2. And the String functions
/// themselves: `findLast(".CSV")` without case against `length`, `find`,
/// `isEmpty` of blanks, and comparisons of texts.
#[test]
fn the_msl_table_blocks_and_string_functions_work() {
    let Some(root) = msl("the_msl_table_blocks_and_string_functions_work") else {
        return;
    };
    let d = folder("table-blocks");
    write(&d, "tab.txt", "#1\ndouble tab1(3,2)\n0 0\n1 2\n3 4\n");
    write(
        &d,
        "Blocks.mo",
        r#"model Blocks
  import S = Modelica.Utilities.Strings;
  Modelica.Blocks.Tables.CombiTable1Ds lin(table = [0, 0; 1, 2; 3, 4]);
  Modelica.Blocks.Tables.CombiTable1Ds file(tableOnFile = true, tableName = "tab1", fileName = "tab.txt");
  Modelica.Blocks.Tables.CombiTable2Ds t2(table = [0, 0, 1; 0, 1, 2; 2, 3, 6]);
  parameter String name = "data.CSV";
  parameter Boolean csv = S.findLast(name, ".csv", caseSensitive = false) + 3 == S.length(name);
  parameter Boolean blank = S.isEmpty("  ");
  parameter Integer at = S.find("abcabc", "bc", startIndex = 3);
  parameter Boolean same = name == "data.CSV" and name <> "data.csv";
  Real checks = (if csv then 1 else 0) + (if blank then 2 else 0) + 10*at + (if same then 100 else 0);
equation
  lin.u = 4*time - 0.5;
  file.u = 4*time - 0.5;
  t2.u1 = time;
  t2.u2 = time;
  annotation(experiment(StopTime = 1, Interval = 0.05));
end Blocks;
"#,
    );
    let res = simulate_model(&d.join("Blocks.mo"), &d, Some(&root), &[]);
    let t = column(&res, "time");
    let [lin, file, z, checks] =
        ["lin.y[1]", "file.y[1]", "t2.y", "checks"].map(|n| column(&res, n));
    for k in 0..t.len() {
        let u = 4.0 * t[k] - 0.5;
        let want = if u < 1.0 { 2.0 * u } else { 2.0 + (u - 1.0) };
        assert!(
            (lin[k] - want).abs() < 1e-12,
            "t = {}: {} against {want}",
            t[k],
            lin[k]
        );
        assert!(
            (file[k] - want).abs() < 1e-12,
            "t = {}: file {}",
            t[k],
            file[k]
        );
        let zt = (1.0 + t[k]) * (1.0 + t[k]);
        assert!(
            (z[k] - zt).abs() < 1e-12,
            "t = {}: {} against {zt}",
            t[k],
            z[k]
        );
        // csv 1, blank 2, "bc" from index 3 at 5, same 100.
        assert_eq!(checks[k], 153.0);
    }
}

/// The MSL's `Blocks.Sources.CombiTimeTable` unchanged, its external
/// object made natively: a linear table with a jump (a repeated time),
/// started at 0.5 and shifted by 0.5, whose time events fall on its
/// points (two rows at the jump: the left limit 2, then 5); constant
/// segments with an offset; a periodic triangle. The integral of the
/// first is 1 + 6 - 0.75 = 6.25 at t = 5.
#[test]
fn the_msl_time_table_follows_its_points() {
    let Some(root) = msl("the_msl_time_table_follows_its_points") else {
        return;
    };
    let d = folder("time-table");
    write(
        &d,
        "Times.mo",
        r#"model Times
  Modelica.Blocks.Sources.CombiTimeTable lin(table = [0, 0; 1, 2; 1, 5; 3, 1], startTime = 0.5, shiftTime = 0.5);
  Modelica.Blocks.Sources.CombiTimeTable step(table = [0, 1; 1, 3; 2, 4], smoothness = Modelica.Blocks.Types.Smoothness.ConstantSegments, offset = {10});
  Modelica.Blocks.Sources.CombiTimeTable per(table = [0, 0; 1, 1; 2, 0], extrapolation = Modelica.Blocks.Types.Extrapolation.Periodic);
  Real x(start = 0, fixed = true);
equation
  der(x) = lin.y[1];
  annotation(experiment(StopTime = 5, Interval = 0.25, Tolerance = 1e-9));
end Times;
"#,
    );
    let res = simulate_model(&d.join("Times.mo"), &d, Some(&root), &[]);
    let t = column(&res, "time");
    let [lin, step, per, x] = ["lin.y[1]", "step.y[1]", "per.y[1]", "x"].map(|n| column(&res, n));
    let mut jump_rows = Vec::new();
    for k in 0..t.len() {
        let tk = t[k];
        if tk == 1.5 {
            jump_rows.push(lin[k]);
        } else {
            let w = tk - 0.5;
            let want = if tk < 0.5 {
                0.0
            } else if w < 1.0 {
                2.0 * w
            } else {
                5.0 - 2.0 * (w - 1.0)
            };
            assert!(
                (lin[k] - want).abs() < 1e-12,
                "t = {tk}: {} against {want}",
                lin[k]
            );
        }
        if tk.fract() != 0.0 {
            let want = 10.0 + [1.0, 3.0, 4.0][(tk.floor() as usize).min(2)];
            assert_eq!(step[k], want, "t = {tk}");
            let phase = tk % 2.0;
            let tri = if phase <= 1.0 { phase } else { 2.0 - phase };
            assert!(
                (per[k] - tri).abs() < 1e-12,
                "t = {tk}: {} against {tri}",
                per[k]
            );
        }
    }
    assert_eq!(jump_rows, [2.0, 5.0], "the rows at the jump");
    let last = *x.last().expect("rows");
    assert!((last - 6.25).abs() < 1e-6, "{last}");
}
