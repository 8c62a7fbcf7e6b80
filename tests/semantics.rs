//! Modelica semantics (issue 21): the valid side of each rule the front end
//! enforces. Every rule refused in `tests/bad/` (a case per rule, naming its
//! section of the specification) has here the nearest construct the
//! specification allows, which must still check: a rule that refuses too
//! much fails here.

mod common;

/// Each model of the file checks (no diagnostic).
fn accepts(src: &str) {
    let out = common::check(src);
    assert!(
        !out.contains("Error") && out.contains(": ok"),
        "expected every model to check:\n{out}"
    );
}

/// The file is refused with a diagnostic containing every one of `words`.
fn refuses(src: &str, words: &[&str]) {
    let out = common::check(src);
    for w in words {
        assert!(out.contains(w), "expected {w:?} in:\n{out}");
    }
}

/// MLS 7.1.3: a model may extend a block and a record, a block a record, a
/// connector a record or a type, any kind a `class`.
#[test]
fn base_classes_of_the_kinds_the_table_allows() {
    accepts(
        "record Data\n  parameter Real k = 2;\nend Data;\n\
         block Gain\n  extends Data;\n  input Real u = 1;\n  output Real y = k*u;\nend Gain;\n\
         model Plant\n  extends Gain;\nend Plant;\n\
         class Shared\n  Real z = 3;\nend Shared;\n\
         model Uses\n  extends Shared;\nend Uses;\n\
         type Torque = Real(unit = \"N.m\");\n\
         connector Shaft\n  Real phi;\n  flow Torque tau;\nend Shaft;\n\
         record Pose\n  Real x;\nend Pose;\n\
         connector PosePort\n  extends Pose;\nend PosePort;\n\
         model Rig\n  Shaft s;\n  PosePort p;\nequation\n  s.phi = 0;\n  p.x = 1;\nend Rig;\n",
    );
}

/// MLS 4.1, 7.1.2: a protected element is read by its own class and by
/// classes extending it, and modified by an `extends` clause (the
/// specification's own example: `extends A.B(x = 2)` is legal).
#[test]
fn protected_elements_inside_their_class_and_through_extends() {
    accepts(
        "model B\n  Real y = 2*x;\nprotected\n  parameter Real x = 1;\nend B;\n\
         model D\n  extends B(x = 2);\n  Real z = x + y;\nend D;\n\
         model E\n  D d;\n  Real w = d.z;\nend E;\n",
    );
}

/// MLS 4.4.2.2: `flow` on a record whose elements carry none, and `input`
/// on a connector whose elements carry none, are allowed; the prefix goes
/// to every element.
#[test]
fn prefixes_on_structured_components_whose_elements_carry_none() {
    accepts(
        "record Wrench\n  Real f;\n  Real t;\nend Wrench;\n\
         connector Port\n  Real phi;\n  flow Wrench w;\nend Port;\n\
         connector Signal\n  Real s;\nend Signal;\n\
         block Source\n  output Signal y;\nequation\n  y.s = time;\nend Source;\n\
         model M\n  Port p;\n  Source src;\nequation\n  p.phi = 0;\nend M;\n",
    );
}

/// MLS 12.2: a function with protected locals, public constants and one
/// algorithm section; `time` is passed in as an input.
#[test]
fn functions_with_protected_locals_and_time_passed_in() {
    accepts(
        "function ramp\n  input Real k;\n  input Real t;\n  output Real y;\nprotected\n  Real tmp;\nalgorithm\n  tmp := k*t;\n  y := tmp;\nend ramp;\n\
         model M\n  Real y = ramp(2, time);\nend M;\n",
    );
}

/// MLS 3.4: `div` gives the Integer quotient; an Integer bound to an
/// Integer expression stays Integer; `/` and `^` give Reals to Reals.
#[test]
fn integer_arithmetic_that_stays_integer() {
    accepts(
        "model M\n  constant Integer teeth = div(4000, 100);\n  parameter Integer n = 2*teeth + 1;\n  parameter Real r = 4001/100;\n  parameter Real q = 2^3;\n  Real x = n + r + q;\nend M;\n",
    );
}

/// MLS 3.7.5: `sample` with parameter expressions (a parameter start, an
/// interval from a parameter and a constant).
#[test]
fn sample_with_parameter_expressions() {
    accepts(
        "model M\n  parameter Real t0 = 0.1;\n  parameter Real T = 0.5;\n  discrete Real x(start = 0, fixed = true);\nequation\n  when sample(t0, 2*T) then\n    x = pre(x) + 1;\n  end when;\nend M;\n",
    );
}

/// MLS 7.3: a replaceable component, redeclared once (not final), and a
/// replaceable class redeclared by a short class definition.
#[test]
fn redeclarations_of_replaceable_elements_that_are_not_final() {
    accepts(
        "model Soft\n  Real k = 1;\nend Soft;\nmodel Stiff\n  Real k = 100;\nend Stiff;\n\
         model Mount\n  replaceable model Law = Soft;\n  Law law;\n  replaceable Real p = 1;\nend Mount;\n\
         model M\n  Mount m(redeclare model Law = Stiff, redeclare Real p = 3);\nend M;\n",
    );
}

/// MLS 4.4.2: a partial class is a base class; the class completing it is
/// instantiated.
#[test]
fn a_partial_class_used_as_a_base_class() {
    accepts(
        "partial model Body\n  Real x;\nend Body;\nmodel Ball\n  extends Body;\nequation\n  x = 1;\nend Ball;\nmodel M\n  Ball b;\nend M;\n",
    );
}

/// A protected element reached through an array of components is refused
/// as through a scalar one (MLS 4.1: `a[1].P`).
#[test]
fn a_protected_element_through_an_array_of_components_is_refused() {
    refuses(
        "model Motor\nprotected\n  Real loss = 1;\nend Motor;\nmodel M\n  Motor m[2];\n  Real l = m[1].loss;\nend M;\n",
        &["`loss` is a protected element of `Motor`", "MLS 4.1"],
    );
}

/// MLS 9.1-9.3: one output to several inputs; a block's output driven by
/// an inner block's output and its input fed on to inner inputs
/// (hierarchical block diagrams); connections under a parameter `if`;
/// connected parameters of both connectors.
#[test]
fn connections_the_specification_allows() {
    accepts(
        "connector RealOutput = output Real;\nconnector RealInput = input Real;\n\
         block Src\n  RealOutput y = time;\nend Src;\n\
         block Sink\n  RealInput u;\n  Real z = u;\nend Sink;\n\
         block Chain\n  RealInput u;\n  RealOutput y;\n  Sink s1;\n  Src src;\nequation\n  connect(u, s1.u);\n  connect(src.y, y);\nend Chain;\n\
         connector P\n  parameter Real k = 1;\n  Real v;\n  flow Real i;\nend P;\n\
         model Ground\n  P p;\nequation\n  p.v = 0;\nend Ground;\n\
         model Load\n  P p;\nequation\n  p.i = p.k*(p.v - 1);\nend Load;\n\
         model M\n  parameter Boolean second = true;\n  Src a, b;\n  Sink s1, s2, s3;\n  Chain c;\n  Ground g;\n  Load l;\nequation\n  connect(a.y, s1.u);\n  connect(a.y, s2.u);\n  connect(a.y, c.u);\n  if second then\n    connect(b.y, s3.u);\n  else\n    connect(a.y, s3.u);\n  end if;\n  connect(g.p, l.p);\nend M;\n",
    );
}

/// MLS 3.8, 5.3: a parameter bound to a function of parameters, a constant
/// of an enclosing package read from a nested class, a base class's own
/// names read by the class extending it, `der` of a Real expression with
/// an Integer factor.
#[test]
fn variability_and_lookup_the_specification_allows() {
    accepts(
        "function twice\n  input Real u;\n  output Real y;\nalgorithm\n  y := 2*u;\nend twice;\n\
         package P\n  constant Real k = 2;\n  model Inner\n    Real z = k;\n  end Inner;\nend P;\n\
         model Base\n  parameter Real a = 1;\n  Real y = a;\nend Base;\n\
         model M\n  extends Base;\n  parameter Real p = twice(a);\n  constant Real c = 3*P.k;\n  P.Inner inn;\n  Real w = y + p + c;\n  Integer i(start = 1, fixed = true);\n  Real x(start = 0, fixed = true);\nequation\n  der(x) = der(i*time);\n  when sample(0, 0.5) then\n    i = pre(i) + 1;\n  end when;\nend M;\n",
    );
}

// ---------------------------------------------------------------------
// Valid models rmoc once rejected (issue 21's list), each with its values.

fn run(src: &str, model: &str, stop: f64) -> rmoc::solve::Results {
    common::simulate(
        src,
        Some(model),
        &common::Run {
            stop: Some(stop),
            interval: Some(0.05),
            ..Default::default()
        },
    )
}

/// A record constructor with named arguments; the other fields keep
/// their defaults.
#[test]
fn a_record_constructor_binding_takes_the_defaults_of_the_fields_it_omits() {
    let r = run(
        "record R\n  Real a = 1;\n  Real b = 2;\nend R;\nmodel M\n  R r = R(b = 5);\n  Real y = r.a + 10*r.b;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "y"), 51.0);
}

/// `A^n` of a square matrix (MLS 10.6.6): n products, the identity for 0.
#[test]
fn the_power_of_a_square_matrix() {
    let r = run(
        "model M\n  parameter Real A[2, 2] = [1, 2; 3, 4];\n  Real P0[2, 2] = A^0;\n  Real P2[2, 2] = A^2;\n  Real P3[2, 2] = A^3;\nend M;\n",
        "M",
        0.1,
    );
    // A^2 = [7, 10; 15, 22], A^3 = [37, 54; 81, 118].
    for (name, want) in [
        ("P0[1,1]", 1.0),
        ("P0[1,2]", 0.0),
        ("P2[1,1]", 7.0),
        ("P2[2,2]", 22.0),
        ("P3[1,2]", 54.0),
        ("P3[2,1]", 81.0),
    ] {
        assert_eq!(common::last(&r, name), want, "{name}");
    }
}

/// Quoted identifiers (MLS 2.3.1) name variables like any other.
#[test]
fn quoted_identifiers() {
    let r = run(
        "model M\n  Real 'x+y' = 1;\n  Real z = 'x+y'*2;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "z"), 2.0);
}

/// `check(x);` as an equation: a function without outputs, called at every
/// step for its asserts (MLS 8.3.7). It passes while its assert holds and
/// stops the run when it does not.
#[test]
fn a_function_without_outputs_called_as_an_equation() {
    let src = |limit: &str| {
        format!(
            "function check\n  input Real u;\nalgorithm\n  assert(u < {limit}, \"too large\");\nend check;\nmodel M\n  Real x = time + 1;\nequation\n  check(x);\nend M;\n"
        )
    };
    let r = run(&src("10"), "M", 1.0);
    assert_eq!(common::last(&r, "x"), 2.0);
    let (code, text) = simulate_cli(&src("1.5"), "M", 1.0);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("assertion in function `check` failed at t = 0.5"),
        "{text}"
    );
}

/// A protected class of a base class, used in the class extending it
/// (MLS 7.1.2: protected elements are inherited as protected).
#[test]
fn a_protected_class_inherited_from_a_base_class() {
    let r = run(
        "model Base\nprotected\n  record Data\n    Real k = 2;\n  end Data;\nend Base;\nmodel M\n  extends Base;\n  Data d;\n  Real y = 3*d.k;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "y"), 6.0);
}

/// `pre(x)` of a discrete variable set by an initial equation starts from
/// that value.
#[test]
fn pre_of_a_discrete_variable_set_by_an_initial_equation() {
    let r = run(
        "model M\n  discrete Real x;\ninitial equation\n  x = 3;\nequation\n  when sample(0, 0.1) then\n    x = pre(x) + 1;\n  end when;\nend M;\n",
        "M",
        0.35,
    );
    assert_eq!(r.rows[0][r.column("x").expect("x")], 3.0);
    assert_eq!(common::value_at(&r, "x", 0.05), 4.0);
    assert_eq!(common::value_at(&r, "x", 0.25), 6.0);
}

/// `each` with an array value on an array of components: every element's
/// array takes the whole value (MLS 7.2.5).
#[test]
fn each_with_an_array_value_on_an_array_of_components() {
    let r = run(
        "model A\n  parameter Real v[2] = {0, 0};\n  Real s = v[1] + 10*v[2];\nend A;\nmodel M\n  A a[3](each v = {1, 2});\nend M;\n",
        "M",
        0.1,
    );
    for k in 1..=3 {
        assert_eq!(common::last(&r, &format!("a[{k}].s")), 21.0);
    }
}

/// Package constants through a package modified by a short class
/// definition, through `extends` with a modifier, and through a package
/// redeclared for a component (MLS 7.3).
#[test]
fn package_constants_through_modified_and_redeclared_packages() {
    let r = run(
        "package P\n  constant Real k = 1;\n  constant Real k2 = 2*k;\nend P;\n\
         package P2 = P(k = 5);\n\
         package P3\n  extends P(k = 4);\nend P3;\n\
         package Oil\n  constant Real density = 870;\nend Oil;\n\
         package Water\n  constant Real density = 1000;\nend Water;\n\
         model Tank\n  replaceable package Medium = Oil;\n  Real m = 2*Medium.density;\nend Tank;\n\
         model M\n  Real y2 = P2.k;\n  Real y3 = P3.k2;\n  Tank t(redeclare package Medium = Water);\n  Tank oil;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "y2"), 5.0);
    assert_eq!(common::last(&r, "y3"), 8.0);
    assert_eq!(common::last(&r, "t.m"), 2000.0);
    assert_eq!(common::last(&r, "oil.m"), 1740.0);
}

/// A class inherited twice through two bases gives its elements and
/// equations once (identical inherited elements are merged, MLS 7.1).
#[test]
fn identical_inherited_elements_are_merged() {
    let r = run(
        "model A\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend A;\nmodel B\n  extends A;\nend B;\nmodel C\n  extends A;\nend C;\nmodel M\n  extends B;\n  extends C;\nend M;\n",
        "M",
        1.0,
    );
    assert!((common::last(&r, "x") - (-1.0f64).exp()).abs() < 1e-4);
}

/// A long connector class extending a type is a connector of that type.
#[test]
fn a_long_connector_class_extending_a_type() {
    let flat = common::flatten(
        "type Voltage = Real(unit = \"V\");\nconnector VIn\n  extends Voltage;\nend VIn;\nmodel M\n  VIn u = time;\nend M;\n",
        Some("M"),
    );
    assert!(flat.contains("Real u(unit = \"V\");"), "{flat}");
}

/// `b.f1(3)`: a function of a component's class called through the
/// component (MLS 5.3.2).
#[test]
fn a_function_called_through_a_component() {
    let r = run(
        "model B\n  function f1\n    input Real u;\n    output Real y;\n  algorithm\n    y := 2*u;\n  end f1;\nend B;\nmodel M\n  B b;\n  Real y = b.f1(3);\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "y"), 6.0);
}

/// `flow` outside a connector has no effect (no zero-flow equation).
#[test]
fn a_flow_variable_outside_a_connector_is_an_ordinary_variable() {
    let r = run(
        "model M\n  flow Real f;\nequation\n  f = 1 + time;\nend M;\n",
        "M",
        1.0,
    );
    assert_eq!(common::last(&r, "f"), 2.0);
}

// ---------------------------------------------------------------------
// Diagnostics (issue 21): pinned as the user sees them.

/// Cyclic inheritance is reported at the `extends` clause that closes the
/// cycle, with the whole cycle and where each class extends.
#[test]
fn cyclic_inheritance_shows_the_whole_cycle_at_the_clause() {
    insta::assert_snapshot!(common::check(
        "model A\n  extends B;\n  Real x = 1;\nend A;\nmodel B\n  extends A;\nend B;\nmodel M\n  A a;\nend M;\n"
    ));
}

/// Independent errors of one model are all reported in one run: every
/// failing declaration (model `M`; one that names a declaration that
/// failed adds nothing), or, when the declarations are sound, every failing
/// binding and equation (model `N`; `q`'s error would repeat `p`'s).
#[test]
fn several_independent_errors_are_reported_in_one_run() {
    insta::assert_snapshot!(common::check(
        "record A\n  Real x;\nend A;\nmodel M\n  A a1(z = 1);\n  A a2(w = 2);\n  parameter Real k = a1.x;\n  Real y = 1;\nend M;\nmodel N\n  parameter Integer n = 2.5;\n  parameter Real p = undefinedName;\n  Real q = p + 1;\n  Real r;\nequation\n  r = alsoUndefined;\nend N;\n"
    ));
}

/// With several models in a file, each error names the model it belongs
/// to; an error shared by several models (one base class) is shown once.
#[test]
fn errors_name_their_models_when_a_file_has_several() {
    insta::assert_snapshot!(common::check(
        "model Base\n  Real x = unknownThing;\nend Base;\nmodel One\n  extends Base;\nend One;\nmodel Two\n  extends Base;\nend Two;\nmodel Three\n  Real y = 2*z;\nend Three;\n"
    ));
}

// ---------------------------------------------------------------------
// Warnings a Modelica user expects (issue 21): printed, and the run goes on.

const CIRCUIT: &str = "connector Pin\n  Real v;\n  flow Real i;\nend Pin;\n\
model R\n  Pin p, n;\n  parameter Real r(min = 0) = 1;\nequation\n  p.v - n.v = r*p.i;\n  p.i + n.i = 0;\nend R;\n\
model Ground\n  Pin p;\nequation\n  p.v = 0;\nend Ground;\n\
model M\n  R r1(r = 5);\n  R r2;\n  Ground g;\nequation\n  connect(r1.n, g.p);\n  connect(r2.n, g.p);\nend M;\n";

/// `rmoc check` of `src`: exit status, stdout and stderr.
fn check_cli(src: &str, model: &str) -> (Option<i32>, String, String) {
    let path = common::model_file("warn", src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["check", path.to_str().expect("path"), "--model", model])
        .output()
        .expect("run rmoc");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Connectors of components left unconnected: one warning listing them
/// (their flows are zero); the check succeeds.
#[test]
fn unconnected_connectors_are_a_warning() {
    let (code, stdout, stderr) = check_cli(CIRCUIT, "M");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("M: ok"), "{stdout}");
    assert!(
        stderr.contains("Warning[connection]: 2 connectors are not connected"),
        "{stderr}"
    );
    insta::assert_snapshot!(common::check(CIRCUIT));
}

/// States without `fixed = true` and without initial equations: one
/// warning naming them and their start values; the check succeeds.
#[test]
fn initial_conditions_not_fully_specified_are_a_warning() {
    let src = "model M\n  parameter Real k = 2;\n  Real x(start = 1);\n  Real v(start = 0, fixed = true);\n  Real y(start = 3);\nequation\n  der(x) = v;\n  der(v) = -k*x;\n  der(y) = -y;\nend M;\n";
    let (code, _, stderr) = check_cli(src, "M");
    assert_eq!(code, Some(0), "{stderr}");
    insta::assert_snapshot!(common::check(src));
}

/// A parameter outside its `min`/`max` is an error at initialization that
/// names the parameter and points at the modifier that set it.
#[test]
fn a_parameter_outside_its_range_is_an_error_naming_the_modifier() {
    let src = CIRCUIT.replace("R r1(r = 5);", "R r1(r = -5);");
    let (code, _, stderr) = check_cli(&src, "M");
    assert_eq!(code, Some(1), "{stderr}");
    insta::assert_snapshot!(common::check(&src));
}

/// `check(x);` as a statement of a model's algorithm section and of a
/// function: called for its asserts, as the equation form is.
#[test]
fn a_function_without_outputs_called_as_a_statement() {
    let src = "function check\n  input Real u;\nalgorithm\n  assert(u < 10, \"too large\");\nend check;\n\
               function g\n  input Real u;\n  output Real y;\nalgorithm\n  check(u);\n  y := 2*u;\nend g;\n\
               model M\n  Real x = time + 1;\n  Real z = g(x);\n  Real w;\nalgorithm\n  check(x);\n  w := x;\nend M;\n";
    let r = run(src, "M", 2.0);
    assert_eq!(common::last(&r, "w"), 3.0);
    assert_eq!(common::last(&r, "z"), 6.0);
    let (code, text) = simulate_cli(src, "M", 12.0);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("failed at t = 9: too large"), "{text}");
    // The function's own call of `check` runs too: with the model's
    // statement gone, the run still stops at t = 9.
    let only_g = src.replace("  check(x);\n  w := x;", "  w := x;");
    let (code, text) = simulate_cli(&only_g, "M", 12.0);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("failed at t = 9: too large"), "{text}");
}

/// `rmoc simulate` of `src` (model `model`, to `stop`): exit status and
/// stderr.
fn simulate_cli(src: &str, model: &str, stop: f64) -> (Option<i32>, String) {
    let path = common::model_file("cli", src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["simulate", path.to_str().expect("path"), "--model", model])
        .args(["--stop-time", &stop.to_string()])
        .output()
        .expect("run rmoc");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A partial package is looked inside once it is redeclared to a complete
/// one (MLS 5.3.2), as the MSL's media are; and an if-expression whose
/// parameter condition chooses between arrays of different sizes is
/// decided while flattening (the MSL's `BooleanTable` builds its table so).
#[test]
fn a_redeclared_partial_package_and_an_if_of_arrays_of_different_sizes() {
    let r = run(
        "partial package PartialMedium\n  constant Real density;\nend PartialMedium;\n\
         package Water\n  extends PartialMedium(density = 1000);\nend Water;\n\
         model Tank\n  replaceable package Medium = PartialMedium;\n  Real m = 2*Medium.density;\nend Tank;\n\
         model M\n  parameter Integer n = 2;\n  parameter Real t[:] = if n > 0 then {1, 2, 3} else {0};\n  Tank t1(redeclare package Medium = Water);\n  Real s = sum(t);\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "t1.m"), 2000.0);
    assert_eq!(common::last(&r, "s"), 6.0);
}

// ---------------------------------------------------------------------
// Regressions found in review of the rules above.

/// `model A extends A; end A;` is a cycle (it once overflowed the stack
/// through the type-extension path), and so is a mutual pair.
#[test]
fn a_class_extending_itself_is_a_cycle_not_a_crash() {
    let out = common::check("model A\n  extends A;\nend A;\n");
    assert!(out.contains("cyclic inheritance: A extends A"), "{out}");
    let out = common::check("model A\n  extends B;\nend A;\nmodel B\n  extends A;\nend B;\n");
    assert!(out.contains("cyclic inheritance"), "{out}");
}

/// `connect(c.y, bus.y)` with `bus` the class's own connector: `bus.y` is
/// outside (MLS 9.1.2), so the set has one source.
#[test]
fn an_element_of_an_own_connector_is_outside() {
    accepts(
        "connector RO = output Real;\nconnector Bus\n  RO y;\nend Bus;\n\
         block C\n  RO y;\nequation\n  y = 1;\nend C;\n\
         model Src\n  Bus bus;\n  C c;\nequation\n  connect(c.y, bus.y);\nend Src;\n\
         model Top\n  Src s;\n  Real z;\nequation\n  z = s.bus.y;\nend Top;\n",
    );
}

/// The modifier names checked against protected elements belong to one
/// component: an array's later elements do not inherit those of a
/// primitive inside the first (`max` here is an attribute, not the
/// protected parameter).
#[test]
fn attribute_modifiers_inside_array_elements_are_not_protected_modifiers() {
    accepts(
        "model A\nprotected\n  parameter Real max = 10;\npublic\n  Real y(max = max) = 1;\nend A;\nmodel M\n  A a[2];\nend M;\n",
    );
}

/// `each` belongs to the component whose modification holds it: in
/// `b[2](a(each v = 1))` it is a's, not b's (MLS 7.2.5); `each a(...)` on
/// b's array gives every b[i] the whole value.
#[test]
fn each_belongs_to_the_component_whose_modification_holds_it() {
    let flat = common::flatten(
        "model A\n  parameter Real v = 0;\nend A;\nmodel B\n  A a[3];\nend B;\n\
         model M\n  B b[2](a(each v = 1));\n  B c[2](a(v = {{10, 20, 30}, {40, 50, 60}}));\n  B d[2](each a(v = {7, 8, 9}));\nend M;\n",
        Some("M"),
    );
    common::assert_contains_all(
        &flat,
        &[
            "b[2].a[3].v = 1;",
            "c[2].a[1].v = 40;",
            "c[1].a[3].v = 30;",
            "d[1].a[1].v = 7;",
            "d[2].a[3].v = 9;",
        ],
    );
}

/// A component keeping its own default package is not reached by an
/// enclosing redeclaration of a package of the same name.
#[test]
fn a_redeclared_package_reaches_only_the_component_redeclaring_it() {
    let r = run(
        "package Water\n  constant Real cp = 4184;\nend Water;\npackage Air\n  constant Real cp = 1005;\nend Air;\n\
         model Pipe\n  replaceable package Medium = Water;\n  Real c = Medium.cp;\nend Pipe;\n\
         model Sys\n  replaceable package Medium = Water;\n  Pipe p;\n  Real c = Medium.cp;\nend Sys;\n\
         model M\n  Sys sys(redeclare package Medium = Air);\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "sys.c"), 1005.0);
    assert_eq!(common::last(&r, "sys.p.c"), 4184.0);
}

/// An error in a component's declaration does not bring errors of the
/// declarations that use it, in the same instance or an enclosing one.
#[test]
fn consequences_of_a_failed_declaration_are_not_reported() {
    let out = common::check(
        "model A\n  parameter Intger n = 2;\nend A;\nmodel M\n  A a;\n  Real x[a.n];\nend M;\n",
    );
    assert!(out.contains("unknown class `Intger`"), "{out}");
    assert!(!out.contains("has no component"), "{out}");
}

/// A large matrix power is computed by squaring.
#[test]
fn a_large_matrix_power_is_computed_by_squaring() {
    let r = run(
        "model M\n  parameter Real A[2, 2] = [1, 1; 0, 1];\n  Real P[2, 2] = A^1000000;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "P[1,2]"), 1e6);
}

/// The same bound for component types: a component whose class keeps its
/// own default of a replaceable model is not reached by an enclosing
/// redeclaration of a model of the same name (it took Stiff silently).
#[test]
fn a_redeclared_model_reaches_only_the_component_redeclaring_it() {
    let r = run(
        "model Soft\n  Real k = 1;\nend Soft;\nmodel Stiff\n  Real k = 100;\nend Stiff;\n\
         model Mount\n  replaceable model Law = Soft;\n  Law law;\nend Mount;\n\
         model Frame\n  replaceable model Law = Soft;\n  Mount m;\n  Law own;\nend Frame;\n\
         model M\n  Frame f(redeclare model Law = Stiff);\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "f.own.k"), 100.0);
    assert_eq!(common::last(&r, "f.m.law.k"), 1.0);
}

/// A class that only extends an array class is that array class (MLS
/// 4.5.2): `record More extends Pairs; end More;` with `Pairs = Pair[2]`
/// makes `More m` an array of two Pairs (the dimensions were dropped
/// silently).
#[test]
fn a_class_that_only_extends_an_array_class_is_an_array_class() {
    let r = run(
        "record Pair\n  Real a;\n  Real b;\nend Pair;\nrecord Pairs = Pair[2];\nrecord More\n  extends Pairs;\nend More;\n\
         model M\n  More m(a = {1, 2}, b = {3, 4});\n  Real y = m[2].a + 10*m[1].b;\nend M;\n",
        "M",
        0.1,
    );
    assert_eq!(common::last(&r, "y"), 32.0);
}

/// MLS 10.4.2.2: an array constructor with several iterators is nested
/// constructors, the last iterator outermost: `{e for k in 1:3, d in 1:2}`
/// is `{{e for k in 1:3} for d in 1:2}`, a 2 x 3 matrix whose element
/// [d, k] is e. (rmoc flattened it to a vector of 6, first iterator
/// outermost, and bound that to a [6, 2] declaration without a word:
/// tests/bad/156.) `array(...)` is the same constructor; a reduction runs
/// over every combination.
#[test]
fn array_constructors_with_several_iterators_nest_the_last_outermost() {
    let src = "model Nest\n\
      Real a[2, 3] = {10*k + d for k in 1:3, d in 1:2};\n\
      Real b[2, 3, 2] = {{k, d} for k in 1:3, d in 1:2};\n\
      Real c[2, 3] = array(10*k + d for k in 1:3, d in 1:2);\n\
      Real s = sum(10*k + d for k in 1:3, d in 1:2);\n\
      Real y = a[2, 3] + b[1, 3, 1] + c[1, 2] + s;\n\
    end Nest;\n";
    let res = common::simulate(src, Some("Nest"), &common::Run::default());
    for d in 1..=2 {
        for k in 1..=3 {
            let want = (10 * k + d) as f64;
            assert_eq!(common::last(&res, &format!("a[{d},{k}]")), want);
            assert_eq!(common::last(&res, &format!("c[{d},{k}]")), want);
            assert_eq!(common::last(&res, &format!("b[{d},{k},1]")), k as f64);
            assert_eq!(common::last(&res, &format!("b[{d},{k},2]")), d as f64);
        }
    }
    assert_eq!(common::last(&res, "s"), 129.0);
    assert_eq!(common::last(&res, "y"), 32.0 + 3.0 + 21.0 + 129.0);
}
