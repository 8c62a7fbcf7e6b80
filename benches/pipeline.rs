//! rmoc's speed, stage by stage: `cargo bench --bench pipeline`
//! (`-- --quick` skips the N = 10 000 chain).
//!
//! Every figure is printed beside a baseline measured in the same run, so
//! that the ratios mean something on a shared, noisy machine:
//! - parsing against the logos token scan of the same text (the scan is the
//!   floor: it reads every byte once);
//! - `rmoc check` of the contact-library gearbox against starting the same
//!   binary with `--version`;
//! - structural analysis of a chain of N inertias against the same at N / 10
//!   (about 10 is linear, about 13 is N log N);
//! - JIT compile time against the model's flattening and analysis;
//! - compiled evaluation against the reference interpreter;
//! - the compiled right-hand side of the N = 1 000 chain against the same
//!   equations written by hand in Rust;
//! - the four gearbox variants of Kosenko and Gusev's Table 1 against the CPU
//!   times the paper reports (20.4 / 16.1 / 13 / 11.4 s; another machine, so
//!   a speed-up, not a like-for-like ratio).
//!
//! Output is a set of markdown tables, ready for `docs/benchmarks.md`.

// The allocator of the `rmoc` binary, so that in-process figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use common::median;
use rmoc::solve::model::{Backend, Entry, Interpreter};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn project(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn ms(d: Duration) -> String {
    let x = d.as_secs_f64() * 1e3;
    if x < 1.0 {
        format!("{x:.3}")
    } else if x < 100.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.0}")
    }
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}", a.as_secs_f64() / b.as_secs_f64())
}

/// Loads `path` and compiles `model` (or the file's default model).
fn compile(path: &Path, model: Option<&str>) -> rmoc::Compiled {
    let (mut lib, loaded) = rmoc::load(path);
    let loaded = loaded.unwrap_or_else(|_| panic!("{} parses", path.display()));
    let m = rmoc::select_model(&mut lib, &loaded, model).expect("model");
    rmoc::compile(&mut lib, m).unwrap_or_else(|_| panic!("{} compiles", path.display()))
}

/// A buffer at the start values with consistent algebraic variables.
fn start_buffer(c: &rmoc::Compiled, b: &dyn Backend) -> Vec<f64> {
    let mut buf = vec![0.0; c.program.layout.len as usize];
    for e in [Entry::Parameters, Entry::Starts, Entry::Ode] {
        assert_eq!(b.run(e, &mut buf), 0, "{e:?} evaluates");
    }
    buf
}

/// The models of the examples and tests, by file and model name.
fn models() -> Vec<(&'static str, Option<&'static str>)> {
    vec![
        ("examples/gearbox.rmo", Some("Gearbox")),
        ("examples/gearbox.rmo", Some("GearboxRigid")),
        ("examples/humpage.rmo", Some("Dynamic")),
        ("tests/models/pendulum.rmo", None),
        ("tests/models/chain.rmo", None),
        ("tests/models/ball.rmo", None),
        ("tests/models/circuit.rmo", Some("Rectifier")),
        ("tests/models/reference/robertson.rmo", None),
    ]
}

/// A chain of `n` rotational inertias joined by spring-dampers and driven by
/// a constant torque: the scaling model of the structure benchmark.
fn chain_model(n: usize) -> String {
    format!(
        r#"model InertiaChain "{n} inertias joined by spring-dampers"
  import Mechanics.Rotational;
  parameter Integer n = {n};
  Rotational.Inertia inertia[n](each J = 0.01);
  Rotational.SpringDamper coupling[n - 1](each c = 1e4, each d = 1);
  Rotational.ConstantTorque drive(tau_constant = 1);
equation
  connect(drive.flange, inertia[1].flange_a);
  for i in 1:n - 1 loop
    connect(inertia[i].flange_b, coupling[i].flange_a);
    connect(coupling[i].flange_b, inertia[i + 1].flange_a);
  end for;
  annotation(experiment(StopTime = 1));
end InertiaChain;
"#
    )
}

fn write_chain(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join(format!("chain{n}.rmo"));
    std::fs::write(&p, chain_model(n)).expect("write chain model");
    p
}

fn front_end() {
    println!("## Front end\n");
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![project("stdlib"), project("examples")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rmo") {
                files.push(p);
            }
        }
    }
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read"))
        .collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let scan = median(|| {
        for t in &texts {
            std::hint::black_box(rmoc::syntax::scan::scan(t));
        }
    });
    let parse = median(|| {
        for t in &texts {
            std::hint::black_box(rmoc::syntax::parse(t, 0).expect("parses"));
        }
    });
    println!("| work | time (ms) | baseline | baseline (ms) | ratio |");
    println!("|---|---|---|---|---|");
    println!(
        "| parse all of `stdlib/` and `examples/` ({} files, {} kB) | {} | logos token scan of the same text | {} | {} |",
        files.len(),
        bytes / 1000,
        ms(parse),
        ms(scan),
        ratio(parse, scan)
    );
    let gearbox = project("examples/gearbox.rmo");
    let flatten = median(|| {
        let (mut lib, loaded) = rmoc::load(&gearbox);
        let loaded = loaded.expect("parses");
        let m = rmoc::select_model(&mut lib, &loaded, None).expect("model");
        std::hint::black_box(rmoc::instantiate::flatten(&mut lib, m).expect("flattens"));
    });
    let exe = env!("CARGO_BIN_EXE_rmoc");
    let version = median(|| {
        let ok = Command::new(exe).arg("--version").output().expect("run");
        assert!(ok.status.success());
    });
    let check = median(|| {
        let ok = Command::new(exe)
            .arg("check")
            .arg(&gearbox)
            .args(["--model", "Gearbox"])
            .output()
            .expect("run");
        assert!(ok.status.success());
    });
    println!(
        "| parse + flatten `examples/gearbox.rmo` (in process; stdlib classes decoded from the trees stored at build time) | {} | logos scan of all files above | {} | {} |",
        ms(flatten),
        ms(scan),
        ratio(flatten, scan)
    );
    println!(
        "| `rmoc check examples/gearbox.rmo --model Gearbox` (process: parse, flatten, analyse, initialize) | {} | `rmoc --version` (process start) | {} | {} |",
        ms(check),
        ms(version),
        ratio(check, version)
    );
    println!();
}

fn structure(quick: bool) {
    println!("## Structural analysis: a chain of N inertias with spring-dampers\n");
    let dir = std::env::temp_dir().join(format!("rmoc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!("| N | equations | flatten (ms) | structure (ms) | structure / structure at N/10 |");
    println!("|---|---|---|---|---|");
    let mut previous: Option<Duration> = None;
    let sizes: &[usize] = if quick {
        &[10, 100, 1000]
    } else {
        &[10, 100, 1000, 10000]
    };
    for &n in sizes {
        let path = write_chain(&dir, n);
        let flat_of = || {
            let (mut lib, loaded) = rmoc::load(&path);
            let loaded = loaded.expect("parses");
            let m = rmoc::select_model(&mut lib, &loaded, None).expect("model");
            rmoc::instantiate::flatten(&mut lib, m).expect("flattens")
        };
        let flatten = median(|| {
            std::hint::black_box(flat_of());
        });
        let equations = flat_of().equations.len();
        // Each run analyses a fresh copy of the flat model (the copy is not timed).
        let mut total = Duration::ZERO;
        let mut runs = 0u32;
        let mut times = Vec::new();
        while runs < 3 || (total < Duration::from_millis(500) && runs < 21) {
            let flat = flat_of();
            let t = Instant::now();
            std::hint::black_box(rmoc::structure::analyze(flat).expect("analyses"));
            let d = t.elapsed();
            times.push(d);
            total += d;
            runs += 1;
            if d > Duration::from_secs(2) {
                break;
            }
        }
        times.sort();
        let analysis = times[times.len() / 2];
        println!(
            "| {n} | {equations} | {} | {} | {} |",
            ms(flatten),
            ms(analysis),
            previous
                .map(|p| ratio(analysis, p))
                .unwrap_or_else(|| "-".into())
        );
        previous = Some(analysis);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

fn codegen() {
    println!("## Code generation: JIT compile time and evaluation speed\n");
    println!(
        "| model | flatten + analyse + lower (ms) | JIT compile, all entries (ms) | JIT / front | JIT compile, hot entries as `simulate` (ms) | interpreter eval (µs) | JIT eval (µs) | interpreter / JIT |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (file, model) in models() {
        let path = project(file);
        let front = median(|| {
            std::hint::black_box(compile(&path, model));
        });
        let c = compile(&path, model);
        let jit_time = median(|| {
            std::hint::black_box(rmoc::jit::codegen::compile(&c.program).expect("JIT"));
        });
        let hot_time = median(|| {
            std::hint::black_box(rmoc::solve::model::Hybrid::compile(&c.program).expect("JIT"));
        });
        let jit = rmoc::jit::codegen::compile(&c.program).expect("JIT");
        let interp = Interpreter {
            program: &c.program,
        };
        let base = start_buffer(&c, &jit);
        let mut buf = base.clone();
        // The `ode` entry recomputes every unknown from the states,
        // parameters and time, so repeated calls on one buffer do the same
        // work; no copy inside the loop (it would dominate tiny models).
        buf.copy_from_slice(&base);
        let eval = |b: &dyn Backend, buf: &mut Vec<f64>| {
            median(|| {
                for _ in 0..1000 {
                    std::hint::black_box(b.run(Entry::Ode, std::hint::black_box(&mut buf[..])));
                }
            }) / 1000
        };
        let t_interp = eval(&interp, &mut buf);
        let t_jit = eval(&jit, &mut buf);
        println!(
            "| `{}`{} | {} | {} | {} | {} | {:.2} | {:.3} | {} |",
            file,
            model.map(|m| format!(" {m}")).unwrap_or_default(),
            ms(front),
            ms(jit_time),
            ratio(jit_time, front),
            ms(hot_time),
            t_interp.as_secs_f64() * 1e6,
            t_jit.as_secs_f64() * 1e6,
            ratio(t_interp, t_jit)
        );
    }
    println!();
}

/// The chain's right-hand side written by hand: angles and speeds of the
/// inertias, relative angles and speeds of the couplings.
fn chain_rhs(phi: &[f64], w: &[f64], a: &mut [f64], tau: &mut [f64]) {
    let (j, c, d, drive) = (0.01, 1e4, 1.0, 1.0);
    let n = phi.len();
    for i in 0..n - 1 {
        tau[i] = c * (phi[i + 1] - phi[i]) + d * (w[i + 1] - w[i]);
    }
    for i in 0..n {
        let left = if i == 0 { drive } else { -tau[i - 1] };
        let right = if i + 1 < n { tau[i] } else { 0.0 };
        a[i] = (left + right) / j;
    }
}

fn rhs_per_unknown() {
    println!("## One right-hand side of the N = 1 000 chain\n");
    let dir = std::env::temp_dir().join(format!("rmoc-bench-rhs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = write_chain(&dir, 1000);
    let c = compile(&path, None);
    let jit = rmoc::jit::codegen::compile(&c.program).expect("JIT");
    let base = start_buffer(&c, &jit);
    let mut buf = base.clone();
    let t_jit = median(|| {
        for _ in 0..100 {
            buf.copy_from_slice(&base);
            std::hint::black_box(jit.run(Entry::Ode, &mut buf));
        }
    }) / 100;
    let unknowns = c.causal.blocks.iter().map(|b| b.size()).sum::<usize>();
    let n = 1000;
    let phi: Vec<f64> = (0..n).map(|i| 1e-3 * i as f64).collect();
    let w: Vec<f64> = (0..n).map(|i| 1e-2 * (i % 7) as f64).collect();
    let (mut a, mut tau) = (vec![0.0; n], vec![0.0; n]);
    let t_hand = median(|| {
        for _ in 0..100 {
            chain_rhs(
                std::hint::black_box(&phi),
                std::hint::black_box(&w),
                &mut a,
                &mut tau,
            );
            std::hint::black_box(&a);
        }
    }) / 100;
    println!("| work | time (µs) | per unknown (ns) | ratio to hand-written |");
    println!("|---|---|---|---|");
    println!(
        "| JIT `Ode` entry: all {unknowns} computed unknowns (states' derivatives, aliases resolved, couplings) | {:.2} | {:.2} | {} |",
        t_jit.as_secs_f64() * 1e6,
        t_jit.as_secs_f64() * 1e9 / unknowns as f64,
        ratio(t_jit, t_hand)
    );
    println!(
        "| hand-written Rust: accelerations of the same chain (2N - 1 values) | {:.2} | {:.2} | 1.00 |",
        t_hand.as_secs_f64() * 1e6,
        t_hand.as_secs_f64() * 1e9 / (2 * n - 1) as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

fn gearbox() {
    println!("## The Kosenko-Gusev gearbox, 5 s of model time (Table 1)\n");
    println!(
        "| model | contact, friction | compile (ms) | simulate (ms) | total (ms) | steps | paper CPU time (s) | speed-up |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let variants = [
        ("Gearbox", "Johnson, f = 0.3", 20.4),
        ("GearboxFrictionless", "Johnson, f = 0", 16.1),
        ("GearboxRigid", "rigid, f = 0.3", 13.0),
        ("GearboxRigidFrictionless", "rigid, f = 0", 11.4),
    ];
    let path = project("examples/gearbox.rmo");
    for (model, what, paper) in variants {
        let mut steps = 0;
        let mut compile_t = Duration::ZERO;
        let mut sim_t = Duration::ZERO;
        let total = median(|| {
            let t0 = Instant::now();
            let c = compile(&path, Some(model));
            let jit = rmoc::solve::model::Hybrid::compile(&c.program).expect("JIT");
            let jit = rmoc::solve::model::Hybrid {
                jit: &jit,
                program: &c.program,
            };
            compile_t = t0.elapsed();
            let e = &c.causal.experiment;
            let start = e.start_time.unwrap_or(0.0);
            let stop = e.stop_time.unwrap_or(1.0);
            let opts = rmoc::solve::Options {
                start,
                stop,
                tolerance: e.tolerance.unwrap_or(1e-6),
                interval: e.interval.unwrap_or((stop - start) / 500.0),
                overrides: Vec::new(),
                max_events: 1_000_000,
                solver: rmoc::solve::Solver::Bdf,
                linear_solver: Default::default(),
                atol: None,
                monitor: None,
                rows: None,
                keep_frame: false,
                outputs: Vec::new(),
            };
            let t1 = Instant::now();
            let r = rmoc::solve::simulate(&c.causal, &c.program, &jit, &opts).expect("runs");
            sim_t = t1.elapsed();
            steps = r.stats.integrator.steps;
        });
        println!(
            "| `{model}` | {what} | {} | {} | {} | {steps} | {paper} | {:.0}x |",
            ms(compile_t),
            ms(sim_t),
            ms(total),
            paper / total.as_secs_f64()
        );
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `cargo bench` passes `--bench`; a filter word picks one section.
    let only: Vec<&str> = args[1..]
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(|s| s.as_str())
        .collect();
    let want = |s: &str| only.is_empty() || only.contains(&s);
    println!(
        "rmoc pipeline benchmark, {} (medians; ratios against baselines of the same run)\n",
        if quick { "quick" } else { "full" }
    );
    if want("frontend") {
        front_end();
    }
    if want("structure") {
        structure(quick);
    }
    if want("codegen") {
        codegen();
    }
    if want("rhs") {
        rhs_per_unknown();
    }
    if want("gearbox") {
        gearbox();
    }
}
