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
    (0..n)
        .map(|i| (0..n).map(|j| jac.get(i, j)).collect())
        .collect()
}

fn check(label: &str, c: &rmoc::Compiled) -> usize {
    let n = c.causal.states.len();
    let pattern = Arc::new(JacobianPattern::of_model(&c.causal));
    let one_per_state = Arc::new(JacobianPattern::from_columns(n, vec![(0..n).collect(); n]));
    assert_eq!(one_per_state.colours.len(), n);
    let coloured = jacobian_at_start(c, pattern.clone());
    let full = jacobian_at_start(c, one_per_state);
    let mut nonzeros = 0;
    for i in 0..n {
        for j in 0..n {
            let (a, b) = (coloured[i][j], full[i][j]);
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{label}: J[{i}, {j}] = {a} from the colouring, {b} from one run per state"
            );
            if b != 0.0 {
                nonzeros += 1;
            }
        }
    }
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
