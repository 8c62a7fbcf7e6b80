//! The Jacobian of a model with a dense row: `cargo bench --bench jacobian`.
//!
//! `tests/models/hub.rmo` with n satellites (2n + 2 states): the hub's
//! acceleration reads every state. The plain column colouring needs a run
//! of the tangent code per state; split through the satellites' forces
//! (`solve::dense_rows`) it needs a handful. Both are measured in the same
//! run, in-process (`ModelOde::jacobian` at the start values, compiled
//! code), and their Jacobians are compared entry by entry before the times
//! are printed. Output is markdown for `docs/benchmarks.md`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use common::median;
use rmoc::jit::frame::Frame;
use rmoc::solve::bdf::OdeProblem;
use rmoc::solve::jacobian::{Jacobian, JacobianPattern};
use rmoc::solve::model::{Backend, Entry, ModelOde, StateSlots};
use std::path::Path;
use std::sync::Arc;

fn compile(src: &str) -> rmoc::Compiled {
    let dir = std::env::temp_dir().join(format!("rmoc-bench-jacobian-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let path = dir.join("hub.rmo");
    std::fs::write(&path, src).expect("model file");
    let (mut lib, loaded) = rmoc::load(&path);
    let loaded = loaded.unwrap_or_else(|_| panic!("{} parses", path.display()));
    let m = rmoc::select_model(&mut lib, &loaded, None).expect("model");
    rmoc::compile(&mut lib, m).unwrap_or_else(|_| panic!("{} compiles", path.display()))
}

/// Median time of one Jacobian with `pattern`, its tangent runs, and the
/// Jacobian (dense, by rows).
fn measure(c: &rmoc::Compiled, pattern: JacobianPattern) -> (f64, u64, Vec<f64>) {
    let pattern = Arc::new(pattern);
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
    let time = median(|| ode.jacobian(t, &x, &mut jac).expect("jacobian"));
    let runs = ode.tangent_runs;
    ode.tangent_runs = 0;
    ode.jacobian(t, &x, &mut jac).expect("jacobian");
    let runs_one = ode.tangent_runs;
    assert!(runs >= runs_one);
    let values = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| jac.get(i, j))
        .collect();
    (time.as_secs_f64(), runs_one, values)
}

fn main() {
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/hub.rmo"))
            .expect("tests/models/hub.rmo");
    println!(
        "| satellites | states | plain colouring: tangent runs | time (ms) | split: tangent runs | time (ms) | plain / split |"
    );
    println!("|---|---|---|---|---|---|---|");
    for sats in [50usize, 200, 800] {
        let c = compile(&source.replace(
            "parameter Integer n = 40;",
            &format!("parameter Integer n = {sats};"),
        ));
        let split = JacobianPattern::of_model(&c.causal);
        assert!(split.split.is_some(), "the dense row is split");
        let mut plain = JacobianPattern::of_model(&c.causal);
        plain.split = None;
        let (t_plain, r_plain, j_plain) = measure(&c, plain);
        let (t_split, r_split, j_split) = measure(&c, split);
        for (a, b) in j_split.iter().zip(&j_plain) {
            assert!(
                (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
                "{a} split, {b} plain"
            );
        }
        println!(
            "| {sats} | {} | {r_plain} | {:.3} | {r_split} | {:.3} | {:.0} |",
            c.causal.states.len(),
            t_plain * 1e3,
            t_split * 1e3,
            t_plain / t_split
        );
    }
}
