//! The work each integrator does on small models, pinned.
//!
//! `solver_statistics_are_pinned` snapshots the statistics of every
//! integrator on at least two models each (the BDF on the gearbox, the
//! Cartesian pendulum and the mass chain; Moreau-Jean and the event-driven
//! contact solver on two contact models each; the generalized-alpha family
//! as Newmark on a 3-DOF chain, as Chung-Hulbert on the pendulum and, with
//! adaptive steps, on a ball dropped on a penalty floor), so
//! that a change in the integrators' work shows up as a diff.
//!
//! `no_model_does_more_work_than_before_the_sparse_solver_core` compares the
//! same runs, and the reference problems of `tests/models/reference/`,
//! against `tests/solver_stats_budget.txt`: the counts measured before the
//! solver core was rewritten for large models (issue 15). Steps, Newton
//! iterations, factorizations and events may not grow by more than 10%.

mod common;

use common::Run;
use rmoc::solve::generalized_alpha::AlphaParameters;
use rmoc::solve::{self, RunStats, Solver};

struct Case {
    label: &'static str,
    file: &'static str,
    model: Option<&'static str>,
    solver: Solver,
    stop: Option<f64>,
}

fn cases() -> Vec<Case> {
    let bdf = |label, file, model| Case {
        label,
        file,
        model,
        solver: Solver::Bdf,
        stop: None,
    };
    vec![
        bdf("bdf gearbox", "examples/gearbox.rmo", Some("Gearbox")),
        bdf("bdf pendulum", "tests/models/pendulum.rmo", None),
        bdf("bdf chain", "tests/models/chain.rmo", None),
        // 49 states: the sparse path (its LU, its Newton test).
        bdf("bdf grid 7 x 7 (sparse)", "tests/models/grid.rmo", None),
        Case {
            label: "moreau ball",
            file: "tests/models/contacts/ball.rmo",
            model: None,
            solver: Solver::Moreau { step: 1e-4 },
            stop: None,
        },
        Case {
            label: "moreau block",
            file: "tests/models/contacts/block.rmo",
            model: None,
            solver: Solver::Moreau { step: 1e-4 },
            stop: None,
        },
        Case {
            label: "event-driven table",
            file: "tests/models/contacts/table.rmo",
            model: None,
            solver: Solver::EventDriven,
            stop: None,
        },
        Case {
            label: "newmark three-dof",
            file: "tests/models/structural/three_dof.rmo",
            model: None,
            solver: Solver::GeneralizedAlpha {
                step: Some(1e-3),
                parameters: AlphaParameters::newmark(0.25, 0.5),
            },
            stop: None,
        },
        Case {
            label: "generalized-alpha pendulum",
            file: "tests/models/pendulum.rmo",
            model: None,
            solver: Solver::GeneralizedAlpha {
                step: Some(1e-3),
                parameters: AlphaParameters::chung_hulbert(0.8),
            },
            stop: None,
        },
        Case {
            label: "generalized-alpha penalty ball (adaptive)",
            file: "tests/models/structural/penalty_ball.rmo",
            model: None,
            solver: Solver::GeneralizedAlpha {
                step: None,
                parameters: AlphaParameters::chung_hulbert(0.8),
            },
            stop: None,
        },
        Case {
            label: "event-driven liftoff",
            file: "tests/models/contacts/liftoff.rmo",
            model: None,
            solver: Solver::EventDriven,
            stop: Some(3.0),
        },
    ]
}

fn run(case: &Case) -> RunStats {
    let c = common::compile_file(&common::project(case.file), case.model);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("jit");
    let mut opts = common::options(
        &c,
        &Run {
            stop: case.stop,
            ..Run::default()
        },
    );
    opts.solver = case.solver;
    match solve::simulate(&c.causal, &c.program, &jit, &opts) {
        Ok(r) => r.stats,
        Err(d) => panic!(
            "{}: {:?}",
            case.label,
            d.iter().map(|x| x.message.clone()).collect::<Vec<_>>()
        ),
    }
}

#[test]
fn solver_statistics_are_pinned() {
    let lines: Vec<String> = cases()
        .iter()
        .map(|c| format!("{}: {}", c.label, run(c)))
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

/// The counts of `stats` that may not grow: steps, Newton iterations,
/// factorizations, state and time events (contact solvers: their steps and
/// impacts are in the contact statistics, compared as printed).
fn counts(stats: &str) -> Vec<(String, u64)> {
    let keys = [
        "steps ",
        "Newton iterations ",
        "factorizations ",
        "state events ",
        "time events ",
    ];
    keys.iter()
        .filter_map(|k| {
            let at = stats.find(k)? + k.len();
            let digits: String = stats[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            Some((k.trim().to_string(), digits.parse().ok()?))
        })
        .collect()
}

#[test]
fn no_model_does_more_work_than_before_the_sparse_solver_core() {
    let budget_text =
        std::fs::read_to_string(common::project("tests/solver_stats_budget.txt")).expect("budget");
    let budget: Vec<(&str, &str)> = budget_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once(": "))
        .collect();
    let mut now: Vec<(String, String)> = cases()
        .iter()
        .map(|c| (c.label.to_string(), run(c).to_string()))
        .collect();
    // The reference problems, at their own settings (labelled as in
    // tests/simulate.rs).
    let text = std::fs::read_to_string(common::project("tests/models/reference/expected.json"))
        .expect("expected.json");
    let refs: Vec<serde_json::Value> = serde_json::from_str(&text).expect("expected.json parses");
    for r in &refs {
        let file = r["file"].as_str().expect("file");
        let model = r["model"].as_str().expect("model");
        let c = common::compile_file(
            &common::project(&format!("tests/models/reference/{file}")),
            Some(model),
        );
        let stop = r["run"]["stop_time"].as_f64();
        let result = common::simulate_compiled(
            &c,
            &Run {
                stop,
                ..Run::default()
            },
        );
        let end = result.times.last().copied().unwrap_or(f64::NAN);
        now.push((
            format!("{file} {model} to t = {end}"),
            result.stats.to_string(),
        ));
    }
    let mut checked = 0;
    let mut grown = Vec::new();
    for (label, before) in &budget {
        let after = &now
            .iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no run labelled {label}"))
            .1;
        for ((key, b), (_, a)) in counts(before).iter().zip(counts(after)) {
            if a as f64 > 1.1 * *b as f64 {
                grown.push(format!(
                    "{label}: {key} grew from {b} to {a}\n  before: {before}\n  now:    {after}"
                ));
            }
            checked += 1;
        }
    }
    assert!(grown.is_empty(), "{}", grown.join("\n"));
    assert!(checked >= 50, "only {checked} counts compared");
}
