//! The BDF's Jacobian df/dx from the structural pattern and its column
//! colouring, against the Jacobian of one tangent run per state (the
//! pattern's result may not differ, and every nonzero the full Jacobian has
//! must lie in the pattern), on every model the BDF runs in the test suite.

mod common;

use rmoc::jit::frame::Frame;
use rmoc::solve::bdf::OdeProblem;
use rmoc::solve::jacobian::{Jacobian, JacobianPattern};
use rmoc::solve::model::{Backend, Entry, ModelOde, StateSlots};
use std::sync::Arc;

/// df/dx at the start values (after the parameters and start values are
/// evaluated), with `pattern`, dense.
fn jacobian_at_start(c: &rmoc::Compiled, pattern: Arc<JacobianPattern>) -> Vec<Vec<f64>> {
    jacobian_and_runs(c, pattern).0
}

/// As [`jacobian_at_start`], with the number of tangent runs it took.
fn jacobian_and_runs(c: &rmoc::Compiled, pattern: Arc<JacobianPattern>) -> (Vec<Vec<f64>>, u64) {
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut frame = Frame::new(&c.program.layout);
    assert_eq!(jit.run(Entry::Parameters, frame.values()), 0);
    assert_eq!(jit.run(Entry::Starts, frame.values()), 0);
    let slots = StateSlots::of(&c.causal, &c.program.layout);
    let x: Vec<f64> = c.causal.states.iter().map(|&s| frame.var(s)).collect();
    let n = x.len();
    let t = frame.time();
    let mut ode = ModelOde::new(&jit, &mut frame, &slots, &pattern);
    let mut jac = Jacobian::new(n, Some(pattern.clone()), true);
    ode.jacobian(t, &x, &mut jac).expect("jacobian");
    let runs = ode.tangent_runs;
    let values = (0..n)
        .map(|i| (0..n).map(|j| jac.get(i, j)).collect())
        .collect();
    (values, runs)
}

/// Every entry of `a` within 1e-12 (relative above 1) of `b`'s.
fn assert_same_jacobian(label: &str, a: &[Vec<f64>], b: &[Vec<f64>]) {
    assert_eq!(a.len(), b.len(), "{label}: sizes");
    for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
        for (j, (&x, &y)) in ra.iter().zip(rb).enumerate() {
            assert!(
                (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                "{label}: J[{i}, {j}] = {x} / {y}"
            );
        }
    }
}

fn check(label: &str, c: &rmoc::Compiled) -> usize {
    let n = c.causal.states.len();
    let pattern = Arc::new(JacobianPattern::of_model(&c.causal));
    let one_per_state = Arc::new(JacobianPattern::from_columns(n, vec![(0..n).collect(); n]));
    assert_eq!(one_per_state.colours.len(), n);
    let coloured = jacobian_at_start(c, pattern.clone());
    let full = jacobian_at_start(c, one_per_state);
    let label = format!("{label}: from the colouring / from one run per state");
    assert_same_jacobian(&label, &coloured, &full);
    let nonzeros = full.iter().flatten().filter(|&&b| b != 0.0).count();
    assert!(
        pattern.colours.len() <= n.max(1),
        "{label}: {} colours for {n} states",
        pattern.colours.len()
    );
    nonzeros
}

#[test]
fn coloured_jacobians_equal_one_tangent_run_per_state() {
    let files: &[(&str, Option<&str>)] = &[
        ("examples/gearbox.rmo", Some("Gearbox")),
        ("examples/gearbox.rmo", Some("GearboxRigid")),
        ("tests/models/pendulum.rmo", None),
        ("tests/models/chain.rmo", None),
        ("tests/models/circuit.rmo", Some("Rectifier")),
        ("tests/models/johnson.rmo", Some("Johnson")),
        ("tests/models/reference/robertson.rmo", None),
        ("tests/models/reference/hires.rmo", None),
        ("tests/models/reference/vanderpol.rmo", None),
        ("tests/models/reference/harmonic_oscillator.rmo", None),
        ("examples/humpage.rmo", Some("Dynamic")),
        ("tests/models/hub.rmo", None),
    ];
    let mut total = 0;
    for (file, model) in files {
        let c = common::compile_file(&common::project(file), *model);
        total += check(file, &c);
    }
    assert!(total > 100, "only {total} nonzeros compared");
}

/// A chain of 300 masses (600 states): the pattern is banded, takes a few
/// colours, and gives the same Jacobian as 600 tangent runs.
/// The hub's acceleration reads all 82 states: a dense row, which the
/// plain colouring can only give with a tangent run per state. Split
/// through the satellites' forces (`solve::dense_rows`), the Jacobian takes
/// a handful of runs and equals the plain colouring's (checked above for
/// every entry against one run per state, at a point where the springs'
/// cubic terms and the hub's cos(phi) make every partial count).
#[test]
fn a_dense_row_is_split_through_the_forces_it_sums() {
    let c = common::compile_file(&common::project("tests/models/hub.rmo"), None);
    let n = c.causal.states.len();
    assert_eq!(n, 82);
    let pattern = JacobianPattern::of_model(&c.causal);
    assert_eq!(pattern.colours.len(), n, "the plain colouring");
    let split = pattern.split.as_ref().expect("the dense row is split");
    assert_eq!(split.rows.len(), 1, "one dense row: der(w)");
    assert!(split.colours.len() <= 6, "{} colours", split.colours.len());
    // The split's result against the plain colouring's.
    let (split, runs) = jacobian_and_runs(&c, Arc::new(JacobianPattern::of_model(&c.causal)));
    assert!(runs <= 6, "{runs} tangent runs with the split");
    let mut plain = JacobianPattern::of_model(&c.causal);
    plain.split = None;
    let (plain, runs) = jacobian_and_runs(&c, Arc::new(plain));
    assert_eq!(runs, n as u64, "one run per state without it");
    assert_same_jacobian("split / plain", &split, &plain);
    let dense_row_nonzeros = plain[1].iter().filter(|&&b| b != 0.0).count();
    assert_eq!(dense_row_nonzeros, n, "der(w) reads every state");
    // A Coulomb-like term on an event relation in the hub's equation: the
    // compiled code reads the relation's stored value between events, the
    // symbolic partials would read it live, so the row is not split.
    let source = std::fs::read_to_string(common::project("tests/models/hub.rmo")).expect("hub");
    let with_relation = source.replace(
        "2*der(w) = torque*cos(phi) - 0.5*w;",
        "2*der(w) = torque*cos(phi) - 0.5*w - (if w > 0 then 0.1 else -0.1);",
    );
    assert_ne!(with_relation, source);
    let c = common::compile(&with_relation, None);
    assert!(JacobianPattern::of_model(&c.causal).split.is_none());
}

#[test]
fn a_long_chain_takes_a_few_colours() {
    let c = common::compile(
        &std::fs::read_to_string(common::project("tests/models/chain.rmo"))
            .expect("chain")
            .replace("parameter Integer n = 8;", "parameter Integer n = 300;"),
        None,
    );
    let pattern = JacobianPattern::of_model(&c.causal);
    assert_eq!(pattern.n, 600);
    assert!(
        pattern.colours.len() <= 6,
        "{} colours",
        pattern.colours.len()
    );
    assert!(pattern.nnz() < 600 * 8, "{} nonzeros", pattern.nnz());
    check("chain of 300", &c);
}
