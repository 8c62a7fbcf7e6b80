//! Events and discrete semantics against closed forms: each test runs one
//! model of `tests/models/events/` and compares final values with the value
//! its header comment derives.

mod common;

use common::{Run, assert_close, compile_file, last, project, simulate_compiled};

/// Simulates `tests/models/events/FILE` with its experiment settings.
fn run(file: &str) -> rmoc::solve::Results {
    let c = compile_file(&project(&format!("tests/models/events/{file}")), None);
    simulate_compiled(&c, &Run::default())
}

#[test]
fn when_initial_fires_once_at_the_start() {
    let r = run("when_initial.rmo");
    assert_eq!(last(&r, "k"), 2.0);
    assert_close(last(&r, "x"), (-2.0f64).exp(), 1e-7, 0.0);
}

#[test]
fn a_sample_at_the_start_time_ticks_at_the_start() {
    let r = run("sample_at_start.rmo");
    assert_eq!(last(&r, "n"), 11.0);
    assert_close(last(&r, "x"), 1.0, 1e-12, 1e-12);
}

#[test]
fn samples_off_the_output_grid_keep_the_state_of_the_step_end() {
    let r = run("sample_off_grid.rmo");
    assert_eq!(last(&r, "k"), 5.0);
    // The slope is piecewise constant, so BDF is exact up to rounding.
    assert_close(last(&r, "x"), 1.5, 1e-12, 1e-12);
}

#[test]
fn a_parameter_without_binding_takes_its_start_value() {
    let r = run("parameter_start.rmo");
    let k = r
        .parameters
        .iter()
        .find(|p| p.0 == "k")
        .map(|p| p.1)
        .expect("k");
    assert_eq!(k, 3.0);
    assert_close(last(&r, "x"), (-3.0f64).exp(), 1e-7, 0.0);
}

#[test]
fn terminate_ends_the_run_where_its_condition_fires_and_says_so() {
    let r = run("terminate.rmo");
    assert_close(*r.times.last().expect("rows"), 0.3, 1e-9, 0.0);
    assert_close(last(&r, "x"), 0.3, 1e-9, 0.0);
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].message.contains("x reached 0.3"));
}

#[test]
fn der_in_a_when_condition_is_the_derivative() {
    let r = run("der_in_when.rmo");
    assert_close(last(&r, "tFall"), std::f64::consts::FRAC_PI_2, 1e-8, 0.0);
}

#[test]
fn a_vector_when_condition_fires_for_each_element_that_becomes_true() {
    let r = run("when_vector.rmo");
    assert_eq!(last(&r, "n"), 2.0);
    assert_eq!(last(&r, "m"), 1.0);
}

#[test]
fn a_loop_switches_on_a_relation_of_its_own_unknown() {
    let r = run("kink_in_a_loop.rmo");
    assert_close(last(&r, "x"), 1.5, 1e-9, 1e-12);
    assert_close(last(&r, "y"), 2.5, 1e-9, 1e-12);
    assert_close(last(&r, "z"), 0.875, 1e-6, 0.0);
}

#[test]
fn an_initial_equation_sets_a_left_limit() {
    let r = run("pre_initial.rmo");
    assert_eq!(last(&r, "n"), 5.0);
    assert_close(last(&r, "x"), 4.5, 1e-8, 1e-10);
}

#[test]
fn when_not_initial_fires_once_as_initialization_ends() {
    let r = run("when_not_initial.rmo");
    assert_eq!(last(&r, "n"), 1.0);
    assert_eq!(last(&r, "m"), 1.0);
    assert_eq!(last(&r, "k"), 1.0);
}

#[test]
fn only_initial_itself_makes_a_when_active_at_initialization() {
    let r = run("when_initial_expression.rmo");
    assert_eq!(last(&r, "k"), 0.0);
    assert_eq!(last(&r, "j"), 2.0);
}

#[test]
fn parameter_bindings_and_start_values_evaluate_their_relations() {
    let c = compile_file(
        &project("tests/models/events/parameter_relations.rmo"),
        Some("ParameterRelations"),
    );
    let r = simulate_compiled(&c, &Run::default());
    let p = |name: &str| {
        r.parameters
            .iter()
            .find(|p| p.0 == name)
            .map(|p| p.1)
            .unwrap_or_else(|| panic!("no parameter {name}"))
    };
    assert_eq!(
        (p("bore.sg"), p("bore.bore"), p("bore.w")),
        (-1.0, 1.0, 2.0)
    );
    assert_eq!((p("disc.sg"), p("disc.bore"), p("disc.w")), (1.0, 0.0, 3.0));
    assert_eq!((last(&r, "bore.x"), last(&r, "disc.x")), (4.0, 5.0));
}

#[test]
fn a_boolean_parameter_is_set_with_true_or_false() {
    let c = compile_file(
        &project("tests/models/events/parameter_relations.rmo"),
        Some("ParameterRelations"),
    );
    // The overrides, or the diagnostic's message.
    let resolve = |p: &str| {
        rmoc::solve::settings::RunRequest {
            params: vec![p.to_string()],
            ..Default::default()
        }
        .resolve(&c.causal)
        .map(|o| o.overrides)
        .map_err(|d| d.message)
    };
    for (p, value) in [
        ("disc.bore=true", 1.0),
        ("bore.bore=false", 0.0),
        ("disc.bore=1", 1.0),
    ] {
        let overrides = resolve(p).unwrap_or_else(|m| panic!("{p}: {m}"));
        assert_eq!(overrides.len(), 1, "{p}");
        assert_eq!(overrides[0].1, value, "{p}");
    }
    let words = |p: &str| resolve(p).expect_err(p);
    assert!(words("disc.bore=yes").contains("`yes` is not a number, true or false"));
    assert!(words("disc.bore=2").contains("takes true or false (1 or 0), not 2"));
    assert!(words("disc.sg=true").contains("`true` is not a number"));
}

/// An array constant of a function is read at a run-time index (Gauss
/// points in a loop): 5-point Gauss-Legendre integrates x^4 over [0, 1]
/// exactly, to 1/5; a scalar constant computed from its size still sizes
/// the loop; unsized constants, constant elements that size a local, and a
/// 2-D constant read at a run-time index (whose index changes in the run)
/// work too, and an index out of bounds stops the run.
#[test]
fn a_function_reads_its_array_constants_at_run_time_indices() {
    let src = r#"
function gauss "integral of x^p over [0, 1] by 5-point Gauss-Legendre"
  input Real p;
  output Real L;
protected
  constant Real xg[5] = {-0.9061798459386640, -0.5384693101056831, 0, 0.5384693101056831, 0.9061798459386640};
  constant Real wg[5] = {0.2369268850561891, 0.4786286704993665, 0.5688888888888889, 0.4786286704993665, 0.2369268850561891};
  constant Integer n = size(xg, 1);
algorithm
  L := 0;
  for j in 1:n loop
    L := L + wg[j]*((1 + xg[j])/2)^p/2;
  end for;
end gauss;

function f1
  input Real x;
  output Real y;
protected
  constant Real c[:] = {1, 2, 3};
  constant Integer n[2] = {3, 4};
  Real w[n[1]];
algorithm
  for j in 1:n[1] loop
    w[j] := c[j]*x;
  end for;
  y := sum(w);
end f1;

function f2
  input Integer k;
  output Real y;
protected
  constant Real m[2, 3] = {{1, 2, 3}, {4, 5, 6}};
algorithm
  y := m[2, k] + m[k - 1, 1];
end f2;

model G
  Real x = gauss(4);
  Real y = gauss(2 + time);
  Real a = f1(2);
  Real b = f2(integer(2 + time));
  annotation(experiment(StopTime = 1));
end G;

model OutOfBounds
  Real b = f2(integer(3 + time));
  annotation(experiment(StopTime = 1));
end OutOfBounds;
"#;
    let r = common::simulate(src, Some("G"), &Run::default());
    assert_close(last(&r, "x"), 0.2, 1e-14, 0.0);
    assert_close(last(&r, "y"), 0.25, 1e-12, 0.0);
    assert_eq!(last(&r, "a"), 12.0);
    // k = 2 until t = 1 (m[2, 2] + m[1, 1]), then 3 (m[2, 3] + m[2, 1]).
    assert_eq!(common::value_at(&r, "b", 0.5), 6.0);
    assert_eq!(last(&r, "b"), 10.0);
    let c = common::compile(src, Some("OutOfBounds"));
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let opts = common::options(&c, &Run::default());
    let err = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts)
        .expect_err("an index out of bounds");
    assert!(
        err.iter().any(|d| d.message.contains("became NaN")),
        "{err:?}"
    );
}

/// The interpreter's reuse of a call site's last outputs does not reach
/// from one model to the next: two models of one file fold calls of
/// different functions at the same call site and index (fb(1) returned
/// the 101 of fa's ga, and n was -98).
#[test]
fn folded_calls_of_one_model_do_not_answer_for_the_next() {
    let src = r#"
function ga
  input Real x;
  output Real y;
algorithm
  y := x + 100;
end ga;
function fa
  input Real x;
  output Real y;
algorithm
  y := ga(x);
end fa;
function gb
  input Real x;
  output Real y;
algorithm
  y := x + 200;
end gb;
function fb
  input Real x;
  output Real y;
algorithm
  y := gb(x);
end fb;
model A
  parameter Real q = 1;
  parameter Real p(max = fa(q)) = 1;
  Real x = time;
end A;
model B
  constant Integer n = integer(fb(1.0)) - 199;
  Real x[n];
equation
  x = fill(time, n);
end B;
"#;
    let out = common::check(src);
    assert!(
        out.contains("A: ok") && out.contains("B: ok (2 equations"),
        "{out}"
    );
}

/// A package constant read by a model and by a function: its value was
/// cached as ids of the arena it was first evaluated in, and a function
/// body (compiled in its own arena) then read another node (a wrong
/// value) or none (a panic). Each use sees the number.
#[test]
fn a_package_constant_reads_the_same_in_a_model_and_in_a_function() {
    let src = r#"
package P
  constant Real c = 3.5;
  constant Real v[3] = {1, 2, 4};
  function f
    input Real x;
    output Real y;
  protected
    Real a = x + 1;
    Real b = 2*a;
  algorithm
    y := b + c*x + v[3];
  end f;
end P;

model M
  Real u = P.c + P.v[2];
  Real w = P.f(2);
  annotation(experiment(StopTime = 1));
end M;
"#;
    let r = common::simulate(src, Some("M"), &Run::default());
    assert_eq!(last(&r, "u"), 5.5);
    assert_eq!(last(&r, "w"), 6.0 + 7.0 + 4.0);
}
