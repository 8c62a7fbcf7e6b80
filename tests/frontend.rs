//! Front end: every construct of the language subset, parsed and flattened,
//! pinned as a snapshot of `rmoc flatten` output (one line per test).

mod common;

fn flat(src: &str) -> String {
    common::flatten(src, None)
}

fn flat_model(src: &str, model: &str) -> String {
    common::flatten(src, Some(model))
}

#[test]
fn parameters_and_bindings() {
    insta::assert_snapshot!(flat(
        "model M \"doc\"\n  parameter Real k = 2 \"rate\";\n  parameter Real k2 = 2*k;\n  constant Real c = 3;\n  Real x(start = c, fixed = true, nominal = 10, min = -1, max = k2, unit = \"m\");\nequation\n  der(x) = -k*x + c;\nend M;"
    ));
}

#[test]
fn extends_with_nested_modifiers_each_and_final() {
    insta::assert_snapshot!(flat(
        "partial model Base\n  parameter Real a = 1;\n  final parameter Real f = 2;\n  Real x[2](each start = a, each fixed = true);\nequation\n  der(x) = {-a*x[1], -f*x[2]};\nend Base;\nmodel M\n  extends Base(a = 3, x(start = {1, 2}));\nend M;"
    ));
}

#[test]
fn short_class_definitions_and_types() {
    insta::assert_snapshot!(flat(
        "type Angle = Real(unit = \"rad\");\ntype Vec2 = Real[2];\nconnector RealOutput = output Real;\nmodel M\n  Angle phi(start = 0.5, fixed = true);\n  Vec2 v;\n  RealOutput y;\nequation\n  der(phi) = 1;\n  v = {phi, 2*phi};\n  y = v[2];\nend M;"
    ));
}

#[test]
fn short_model_alias_with_modifier() {
    insta::assert_snapshot!(flat_model(
        "model Decay\n  parameter Real k = 1;\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -k*x;\nend Decay;\nmodel Fast = Decay(k = 10);",
        "Fast"
    ));
}

#[test]
fn redeclare_component_and_class() {
    insta::assert_snapshot!(flat_model(
        "partial model Law\n  input Real s;\n  output Real f;\nend Law;\nmodel Linear\n  extends Law;\n  parameter Real k = 1;\nequation\n  f = k*s;\nend Linear;\nmodel Cubic\n  extends Law;\n  parameter Real k3 = 1;\nequation\n  f = k3*s^3;\nend Cubic;\nmodel Spring\n  replaceable Linear law constrainedby Law;\n  replaceable model Other = Linear;\n  Other o;\n  Real x(start = 1, fixed = true);\nequation\n  law.s = x;\n  o.s = x;\n  der(x) = -law.f - o.f;\nend Spring;\nmodel M\n  extends Spring(redeclare Cubic law(k3 = 5), redeclare model Other = Cubic(k3 = 7));\nend M;",
        "M"
    ));
}

#[test]
fn arrays_of_components_with_split_modifiers() {
    insta::assert_snapshot!(flat_model(
        "model Mass\n  parameter Real m = 1;\n  Real x(start = 0, fixed = true);\n  Real v(start = 0, fixed = true);\n  input Real f;\nequation\n  der(x) = v;\n  m*der(v) = f;\nend Mass;\nmodel M\n  Mass b[3](m = {1, 2, 3}, each x(start = 1));\nequation\n  for i in 1:3 loop\n    b[i].f = -b[i].x;\n  end for;\nend M;",
        "M"
    ));
}

#[test]
fn matrices_and_array_builtins() {
    insta::assert_snapshot!(flat(
        "model M\n  parameter Real A[2, 2] = [1, 2; 3, 4];\n  parameter Real b[2] = {1, 1};\n  Real x[2](each start = 0, each fixed = true);\n  Real s;\n  Real c[3];\n  Real z[2, 3];\nequation\n  der(x) = A*x + b;\n  s = sum(x) + x*x + size(A, 1) + ndims(A);\n  c = cross({1, 0, 0}, {0, x[1], x[2]});\n  z = fill(s, 2, 3) + zeros(2, 3) + [transpose(A)*b, ones(2, 2)];\nend M;"
    ));
}

#[test]
fn ranges_slices_end_and_comprehensions() {
    insta::assert_snapshot!(flat(
        "model M\n  parameter Integer n = 4;\n  Real x[n];\n  Real y[2];\n  Real p;\nequation\n  x = {i^2 for i in 1:n};\n  y = x[end - 1:end];\n  p = sum(x[i] for i in 1:2:n) + product(x[2:3]) + max(x) + min(y[1], y[2]);\nend M;"
    ));
}

#[test]
fn if_equations_with_parameter_and_runtime_conditions() {
    insta::assert_snapshot!(flat(
        "model M\n  parameter Boolean linear = false;\n  Real x(start = 1, fixed = true);\n  Real f;\nequation\n  if linear then\n    f = -x;\n  else\n    f = -x^3;\n  end if;\n  if x > 0.5 then\n    der(x) = f;\n  elseif x > 0.1 then\n    der(x) = 2*f;\n  else\n    der(x) = 0;\n  end if;\nend M;"
    ));
}

#[test]
fn when_elsewhen_reinit_pre_edge_change() {
    insta::assert_snapshot!(flat(
        "model M\n  Real h(start = 1, fixed = true);\n  Real v(start = 0, fixed = true);\n  Integer n(start = 0, fixed = true);\n  Boolean down;\n  discrete Real tHit(start = 0, fixed = true);\nequation\n  der(h) = v;\n  der(v) = -9.81;\n  down = v < 0;\n  when h <= 0 and down then\n    reinit(v, -0.8*pre(v));\n    n = pre(n) + 1;\n    tHit = time;\n  elsewhen edge(down) then\n    tHit = -1;\n    n = pre(n);\n  end when;\n  when change(n) then\n    assert(n < 100, \"too many bounces\", AssertionLevel.warning);\n  end when;\n  when n >= 10 then\n    terminate(\"done\");\n  end when;\nend M;"
    ));
}

#[test]
fn initial_equations_and_sample() {
    insta::assert_snapshot!(flat(
        "model M\n  Real x;\n  Real y(start = 2);\n  discrete Real d(start = 0, fixed = true);\ninitial equation\n  x = 1;\n  der(y) = 0;\nequation\n  der(x) = -x;\n  der(y) = x - y;\n  when sample(0, 0.1) then\n    d = x;\n  end when;\nend M;"
    ));
}

#[test]
fn functions_with_loops_early_return_and_several_outputs() {
    insta::assert_snapshot!(flat(
        "function f\n  input Real x;\n  input Real tol = 1e-12;\n  output Real y;\n  output Real iters;\nprotected\n  Real r;\nalgorithm\n  if x <= 0 then\n    y := 0;\n    iters := 0;\n    return;\n  end if;\n  r := x;\n  iters := 0;\n  while abs(r*r - x) > tol*x loop\n    r := 0.5*(r + x/r);\n    iters := iters + 1;\n  end while;\n  y := r;\nend f;\nfunction g\n  input Real v[:];\n  output Real s;\nalgorithm\n  s := 0;\n  for i in 1:size(v, 1) loop\n    s := s + v[i]^2;\n  end for;\nend g;\nmodel M\n  Real a;\n  Real b;\n  Real c;\nequation\n  (a, b) = f(2 + time);\n  c = g({a, b, time});\nend M;"
    ));
}

#[test]
fn connect_potentials_flows_and_unconnected_flows() {
    insta::assert_snapshot!(flat_model(
        "connector Pin\n  Real v;\n  flow Real i;\nend Pin;\nmodel Resistor\n  parameter Real R = 1;\n  Pin p;\n  Pin n;\nequation\n  p.v - n.v = R*p.i;\n  p.i + n.i = 0;\nend Resistor;\nmodel Ground\n  Pin p;\nequation\n  p.v = 0;\nend Ground;\nmodel Source\n  Pin p;\n  Pin n;\nequation\n  p.v - n.v = 1;\n  p.i + n.i = 0;\nend Source;\nmodel Circuit\n  Source s;\n  Resistor r1(R = 2);\n  Resistor r2;\n  Ground g;\n  Pin probe;\nequation\n  connect(s.p, r1.p);\n  connect(r1.n, r2.p);\n  connect(r2.n, s.n);\n  connect(s.n, g.p);\n  connect(probe, r1.n);\nend Circuit;",
        "Circuit"
    ));
}

#[test]
fn hierarchical_connectors_inside_and_outside() {
    insta::assert_snapshot!(flat_model(
        "connector Flange\n  Real phi;\n  flow Real tau;\nend Flange;\nmodel Inertia\n  parameter Real J = 1;\n  Flange a;\n  Flange b;\n  Real w;\nequation\n  a.phi = b.phi;\n  der(a.phi) = w;\n  J*der(w) = a.tau + b.tau;\nend Inertia;\nmodel Shaft\n  Flange a;\n  Flange b;\n  Inertia i1;\n  Inertia i2;\nequation\n  connect(a, i1.a);\n  connect(i1.b, i2.a);\n  connect(i2.b, b);\nend Shaft;\nmodel M\n  Shaft s;\n  Inertia load(J = 3);\nequation\n  connect(s.b, load.a);\nend M;",
        "M"
    ));
}

#[test]
fn packages_imports_within_and_enumerations() {
    insta::assert_snapshot!(flat_model(
        "package P\n  constant Real g = 9.81;\n  package Units\n    type Length = Real(unit = \"m\");\n  end Units;\n  model Fall\n    import P.Units.Length;\n    import C = P.g;\n    Length h(start = 10, fixed = true, stateSelect = StateSelect.prefer);\n    Real v(start = 0, fixed = true);\n  equation\n    der(h) = v;\n    der(v) = -g;\n  end Fall;\nend P;\nmodel M\n  import P.*;\n  Fall f;\n  Real e = P.g*f.h;\nend M;",
        "M"
    ));
}

#[test]
fn der_of_expressions_and_math_builtins() {
    insta::assert_snapshot!(flat(
        "model M\n  Real x(start = 0.5, fixed = true);\n  Real y;\nequation\n  der(x) = -sin(x) + cos(x)*tan(0.1) + asin(0.2) + acos(0.3) + atan(x) + atan2(x, 2) + sinh(x) - cosh(x) + tanh(x) + exp(-x) + log(2 + x) + log10(3) + sqrt(4) + abs(x) + sign(x) + floor(x) + ceil(x) + mod(5, 3) + rem(5, 3) + div(5, 3) + integer(2.5);\n  y = der(x*x) + noEvent(if x > 0 then x else -x) + smooth(1, x);\nend M;"
    ));
}

#[test]
fn conditional_components() {
    insta::assert_snapshot!(flat(
        "model M\n  parameter Boolean withDamper = false;\n  Real x(start = 1, fixed = true);\n  Real d if withDamper;\nequation\n  der(x) = -x;\nend M;"
    ));
}

#[test]
fn declaration_equations_of_variables() {
    insta::assert_snapshot!(flat(
        "model M\n  Real x(start = 1, fixed = true);\n  Real e = 0.5*x^2 \"energy\";\n  Real v[2] = {x, -x};\nequation\n  der(x) = -x;\nend M;"
    ));
}

#[test]
fn comments_descriptions_and_annotations_are_accepted() {
    insta::assert_snapshot!(flat(
        "// line comment\nmodel M \"a \" + \"model\"\n  /* block\n     comment */\n  Real x(start = 1, fixed = true) \"state\" annotation(Dialog(group = \"x\"));\nequation\n  der(x) = -x \"decay\";\n  annotation(Documentation(info = \"<html>text</html>\"), experiment(StopTime = 2, Tolerance = 1e-8));\nend M;"
    ));
}

#[test]
fn several_models_need_a_choice() {
    insta::assert_snapshot!(flat(
        "model A\n  Real x = 1;\nend A;\nmodel B\n  Real y = 2;\nend B;"
    ));
}

#[test]
fn check_reports_every_model_of_a_file() {
    insta::assert_snapshot!(common::check(
        "model A\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend A;\nmodel B\n  Real y = 2;\nend B;\npartial model C\n  Real z;\nend C;"
    ));
}

#[test]
fn json_dump_is_valid_json() {
    let path = common::model_file(
        "m",
        "model M\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend M;",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["flatten", "--json"])
        .arg(&path)
        .output()
        .expect("run rmoc");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["name"], "M");
    assert_eq!(v["vars"][0]["name"], "x");
}

#[test]
fn the_library_is_found_from_any_directory() {
    // The embedded standard library needs no files beside the binary.
    let path = common::model_file(
        "m",
        "model M\n  Mechanics.Rotational.Inertia i(J = 2, phi(start = 0, fixed = true), w(start = 1, fixed = true));\nend M;",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(std::env::temp_dir())
        .arg("check")
        .arg(&path)
        .output()
        .expect("run rmoc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rmocpath_roots_and_the_model_folder_are_searched() {
    let lib = std::env::temp_dir().join(format!("rmoc-lib-{}", std::process::id()));
    std::fs::create_dir_all(lib.join("MyLib")).expect("dir");
    std::fs::write(
        lib.join("MyLib/package.rmo"),
        "package MyLib\n  constant Real k = 4;\nend MyLib;\n",
    )
    .expect("write");
    std::fs::write(lib.join("MyLib/Decay.rmo"), "within MyLib;\nmodel Decay\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -k*x;\nend Decay;\n").expect("write");
    let path = common::model_file("m", "model M\n  MyLib.Decay d;\n  Helper h;\nend M;");
    std::fs::write(
        path.with_file_name("Helper.rmo"),
        "model Helper\n  Real y = 1;\nend Helper;\n",
    )
    .expect("write");
    std::fs::write(path.with_file_name("Unrelated.rmo"), "this is not a model").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .env("RMOCPATH", &lib)
        .arg("flatten")
        .arg(&path)
        .output()
        .expect("run rmoc");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("der(d.x) = -4*d.x"), "{text}");
    assert!(text.contains("h.y = 1"), "{text}");
}

#[test]
fn checking_a_library_file_says_there_is_no_model_to_check() {
    let path = common::model_file(
        "p",
        "package P\n  function f\n    input Real x;\n    output Real y;\n  algorithm\n    y := x;\n  end f;\nend P;\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .arg("check")
        .arg(&path)
        .output()
        .expect("run rmoc");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("parsed 1 class(es); no model to check"),
        "{text}"
    );
}

#[test]
fn unilateral_and_friction_contacts() {
    insta::assert_snapshot!(flat(
        "model M\n  parameter Real mu = 0.3;\n  Real x(start = 0, fixed = true);\n  Real v(start = 1, fixed = true);\n  Real y(start = 0, fixed = true);\n  Real w(start = 0, fixed = true);\n  Real N;\n  Real T;\nequation\n  der(x) = v;\n  der(y) = w;\n  der(v) = T;\n  der(w) = N - 9.81;\n  unilateral(y, N, 0.5);\n  friction(v, T, N, mu);\nend M;"
    ));
}

/// A record bound as a whole takes its constructor's arguments (by
/// position, by name, the rest their defaults) or another record's fields
/// (issue 21: `One o = One(1984)` once gave the default 1, exit 0).
#[test]
fn a_record_bound_to_its_constructor_or_another_record_takes_their_values() {
    let flat = flat_model(
        "record One\n  Real x = 1;\nend One;\nrecord Two\n  Real a = 1;\n  Real b = 2;\n  constant Real c = 3;\nend Two;\nmodel R\n  One o = One(1984);\n  Two p = Two(b = 20);\n  Two q = p;\n  Two r = Two(7, 8);\nend R;\n",
        "R",
    );
    common::assert_contains_all(
        &flat,
        &[
            "o.x = 1984",
            "p.a = 1",
            "p.b = 20",
            "q.a = p.a",
            "q.b = p.b",
            "r.a = 7",
            "r.b = 8",
        ],
    );
}

/// A record bound to anything but its constructor or a record is refused
/// where it is written, not ignored.
#[test]
fn a_record_bound_to_a_number_is_refused() {
    let text = flat_model(
        "record One\n  Real x = 1;\nend One;\nmodel R\n  One o = 3;\nend R;\n",
        "R",
    );
    assert!(
        text.contains("can be bound only to its constructor or to another record"),
        "{text}"
    );
    assert!(text.contains(":5:11"), "{text}");
}

/// `extends P2.A` where `package P2 = P(redeclare model A = B)` extends B
/// (issue 21: the redeclaration was ignored, A's y = 1 taken silently).
#[test]
fn extends_through_a_package_that_redeclares_takes_the_redeclared_class() {
    let flat = flat_model(
        "package P\n  replaceable model A\n    Real y = 1;\n  end A;\nend P;\nmodel B\n  Real y = 2;\nend B;\npackage P2 = P(redeclare model A = B);\nmodel M\n  extends P2.A;\nend M;\n",
        "M",
    );
    assert!(flat.contains("y = 2;"), "{flat}");
}

/// A modifier of an extends clause that names another inherited parameter
/// (`extends A(x5 = x3)`) takes its value (issue 21 lists it among silent
/// wrong answers; right here, kept so).
#[test]
fn an_extends_modifier_naming_an_inherited_parameter_takes_its_value() {
    let flat = flat_model(
        "model A\n  parameter Real x3 = 3;\n  parameter Real x5 = 5;\nend A;\nmodel E\n  extends A(x5 = x3);\n  Real y = x5;\nend E;\n",
        "E",
    );
    assert!(
        flat.contains("parameter Real x5 = x3;") || flat.contains("x5 = 3"),
        "{flat}"
    );
}

/// Subscripts made of literals, loop indices, `+`, `-` and `*` (`x[i - 1]`,
/// `m[n - i + 1, 2*i]`) are computed on a fast path; wrapped in `max(_, 1)`
/// the same subscripts take the general one. Both flatten alike, and both
/// refuse an index out of bounds in the same words.
#[test]
fn fast_and_general_subscripts_flatten_alike() {
    let model = |name: &str, w: &dyn Fn(&str) -> String| {
        format!(
            "model {name}\n  parameter Integer n = 3;\n  Real x[n];\n  Real m[n, n];\nequation\n  for i in 1:n loop\n    for j in 1:n loop\n      m[{}, {}] = 10*i + j;\n    end for;\n  end for;\n  x[{}] = m[n, 2*1];\n  for i in 2:n loop\n    x[{}] = x[{}] + m[{}, {}];\n  end for;\nend {name};\n",
            w("i"),
            w("j"),
            w("1"),
            w("i"),
            w("i - 1"),
            w("n - i + 1"),
            w("i*1 + 0"),
        )
    };
    let fast = flat(&model("M", &|e| e.to_string()));
    let general = flat(&model("M", &|e| format!("max({e}, 1)")));
    common::assert_contains_all(
        &fast,
        &[
            "m[2,3] = 23;",
            "x[1] = m[3,2];",
            "x[2] = x[1] + m[2,2];",
            "x[3] = x[2] + m[1,3];",
        ],
    );
    assert_eq!(fast, general);
    let oob = |w: &dyn Fn(&str) -> String| {
        common::check(&format!(
            "model M\n  Real x[3];\nequation\n  for i in 1:3 loop\n    x[{}] = i;\n  end for;\nend M;\n",
            w("i + 1")
        ))
    };
    let fast = oob(&|e| e.to_string());
    let general = oob(&|e| format!("max({e}, 1)"));
    assert!(
        fast.contains("index 4 is out of bounds for `x`, which has size 3 here"),
        "{fast}"
    );
    assert!(
        general.contains("index 4 is out of bounds for `x`, which has size 3 here"),
        "{general}"
    );
}
