//! The `rmoc` command line: argument parsing and rendering only; the
//! pipeline lives in the library (`rmoc::`).

/// mimalloc: the pipeline allocates many small nodes and vectors (arena
/// indexes, incidence lists, IR trees); glibc's malloc spent a third of the
/// analysis time of large models in allocation and consolidation.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use rmoc::diag::{self, Diagnostic, DiagnosticKind};
use rmoc::solve::columns::glob;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rmoc",
    version,
    about = "Compile and simulate Modelica-style acausal models of gears and contacts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a model file: syntax, names, types, dimensions and balance.
    Check {
        /// The model file (.rmo or .mo).
        file: PathBuf,
        /// The model to check (default: every non-partial model of the file).
        #[arg(long)]
        model: Option<String>,
        /// Only parse the file.
        #[arg(long)]
        parse_only: bool,
    },
    /// Print the flat model: scalar variables and equations.
    Flatten {
        /// The model file (.rmo or .mo).
        file: PathBuf,
        /// The model to flatten (default: the file's only model, or the one named as the file).
        #[arg(long)]
        model: Option<String>,
        /// Print the flat model as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Simulate a model and write its results (CSV or MAT by the -o extension).
    Simulate(SimulateArgs),
    /// Linearize a model about its state at a time (after initialization by
    /// default): A, B, C, D over the states, top-level inputs and outputs,
    /// and the modes (natural frequencies and damping ratios).
    Linearize(LinearizeArgs),
    /// Run a model at many parameter points (compiled once, in parallel) and
    /// write one summary row per point.
    Sweep(SweepArgs),
    /// Export a model as an FMU (FMI 2.0 or 3.0; model exchange,
    /// co-simulation or both) for Linux x86-64, with rmoc inside.
    Fmu(FmuArgs),
    /// Show the structural analysis: index, states, dummy states, BLT blocks.
    Analyze {
        /// The model file (.rmo or .mo).
        file: PathBuf,
        /// The model to analyse (default: the file's only model, or the one named as the file).
        #[arg(long)]
        model: Option<String>,
    },
    /// Plot columns of a CSV or MAT result against time, or against another column
    /// (`--x`, a phase portrait), as SVG or PNG (by the -o extension).
    Plot {
        /// A CSV or MAT result (`rmoc simulate ... -o res.csv`); a MAT
        /// file's parameters are columns too.
        result: PathBuf,
        /// Columns to plot, one curve each: `*` and `?` match within one
        /// dotted component (`gear.*`), `**` across them (`mesh.**`).
        #[arg(required = true, value_name = "VAR")]
        vars: Vec<String>,
        /// The column on the horizontal axis (default: time).
        #[arg(long, value_name = "VAR")]
        x: Option<String>,
        /// Only rows from this time on (e.g. to leave out a transient).
        #[arg(long, value_name = "T")]
        from: Option<f64>,
        /// Only rows up to this time.
        #[arg(long, value_name = "T")]
        to: Option<f64>,
        /// A title above the plot.
        #[arg(long)]
        title: Option<String>,
        /// One panel per column, stacked, each with its own axis.
        #[arg(long)]
        panels: bool,
        /// Another result whose same columns are drawn too, named in the
        /// legend by its file name (repeatable: compare runs).
        #[arg(long, value_name = "RESULT")]
        also: Vec<PathBuf>,
        /// The file to write: .svg or .png.
        #[arg(short = 'o', value_name = "FILE")]
        output: PathBuf,
    },
    /// Torque-angle hysteresis of a CSV or MAT result (a reducer driven through a
    /// loading sequence such as Mechanics.Rotational.TorqueSequence):
    /// torsional stiffness, lost motion and backlash, and the loop as SVG or PNG.
    Hysteresis {
        /// A CSV or MAT result (`rmoc simulate ... -o res.csv`).
        result: PathBuf,
        /// The column of the output torque.
        #[arg(long, value_name = "VAR")]
        torque: String,
        /// The column of the output angle.
        #[arg(long, value_name = "VAR")]
        angle: String,
        /// The rated torque Tr the sequence reaches both ways (the stiffness
        /// is fitted between 66% and 100% of it, the lost motion read at 3%).
        #[arg(long, value_name = "TR")]
        rated: f64,
        /// The unit of the angle column (the indicators are in arc minutes).
        #[arg(long, value_enum, default_value_t = AngleUnitArg::Rad)]
        angle_unit: AngleUnitArg,
        /// Print the indicators as JSON.
        #[arg(long)]
        json: bool,
        /// Also draw the centred loop (torque against angle in arcmin): .svg or .png.
        #[arg(short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum AngleUnitArg {
    Rad,
    Deg,
    Arcmin,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LinearSolverArg {
    Auto,
    Dense,
    Sparse,
}

#[derive(clap::Args)]
struct SimulateArgs {
    /// The model file (.rmo or .mo).
    file: PathBuf,
    /// The model to simulate (default: the file's only model, or the one named as the file).
    #[arg(long)]
    model: Option<String>,
    /// Set a parameter: -p NAME=VALUE (repeatable).
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Result file: .csv or .mat (default: MODEL_res.csv).
    #[arg(short = 'o')]
    output: Option<PathBuf>,
    /// Print the final values of the variables and parameters matching a pattern (`*` and `?` within one dotted component, `**` across them, an array's name its elements).
    #[arg(long = "print", value_name = "PATTERN")]
    print: Vec<String>,
    /// The result columns to write, by pattern (`*` and `?` within one dotted component, `**` across them, an array's name its elements; default: all); `--print` sees only these.
    #[arg(long, value_name = "PATTERN", num_args = 1..)]
    outputs: Vec<String>,
    /// Print solver statistics.
    #[arg(long)]
    stats: bool,
    /// No progress bar (shown on a terminal for runs over a second) and no closing `wrote ...` line.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    run: RunArgs,
}

/// The settings of a run, shared by `simulate` and `sweep`.
#[derive(clap::Args)]
struct RunArgs {
    /// Start time (default: the experiment's StartTime, or 0).
    #[arg(long, allow_hyphen_values = true)]
    start_time: Option<f64>,
    /// Stop time (default: the experiment's StopTime, or 1).
    #[arg(long, allow_hyphen_values = true)]
    stop_time: Option<f64>,
    /// Relative tolerance of the integrator (default: the experiment's, or 1e-6).
    #[arg(long, allow_hyphen_values = true)]
    tolerance: Option<f64>,
    /// Output interval (default: the experiment's, or 500 intervals).
    #[arg(long, allow_hyphen_values = true)]
    interval: Option<f64>,
    /// Integrator: bdf; for unilateral contacts moreau (time-stepping, their
    /// default) or event-driven (the BDF between impacts); for structural
    /// dynamics newmark or generalized-alpha (fixed steps with --step, else
    /// steps whose local error meets the tolerance). Default: the
    /// experiment's `__rmoc_solver`.
    #[arg(long)]
    solver: Option<String>,
    /// Fixed step of moreau, newmark and generalized-alpha (default: the experiment's `__rmoc_step`; else moreau takes (stop - start)/10000 and the others choose their steps by the tolerance).
    #[arg(long)]
    step: Option<f64>,
    /// Generalized-alpha's spectral radius at infinite frequency, in [0, 1]
    /// (default: the experiment's `__rmoc_rho_inf`, or 0.8).
    #[arg(long)]
    rho_inf: Option<f64>,
    /// Newmark's beta (default 1/4).
    #[arg(long)]
    beta: Option<f64>,
    /// Newmark's gamma (default 1/2).
    #[arg(long)]
    gamma: Option<f64>,
    /// Linear solver of the BDF's Newton matrix: dense, sparse (faer's sparse
    /// LU on the Jacobian's structural pattern) or auto (sparse above 48
    /// states when the pattern is at most a quarter full).
    #[arg(long, value_enum, default_value_t = LinearSolverArg::Auto)]
    linear_solver: LinearSolverArg,
    /// Absolute tolerance of every state (default: the relative tolerance
    /// times the state's nominal value, 1 unless the model gives one).
    #[arg(long)]
    atol: Option<f64>,
    /// Run the reference interpreter instead of compiled code.
    #[arg(long)]
    no_jit: bool,
}

impl RunArgs {
    /// The library's run request of these settings, with parameters `params`.
    fn request(&self, params: Vec<String>) -> rmoc::solve::settings::RunRequest {
        rmoc::solve::settings::RunRequest {
            start_time: self.start_time,
            stop_time: self.stop_time,
            tolerance: self.tolerance,
            atol: self.atol,
            interval: self.interval,
            params,
            solver: self.solver.clone(),
            step: self.step,
            rho_inf: self.rho_inf,
            newmark_beta: self.beta,
            newmark_gamma: self.gamma,
            linear_solver: match self.linear_solver {
                LinearSolverArg::Auto => rmoc::solve::jacobian::LinearSolver::Auto,
                LinearSolverArg::Dense => rmoc::solve::jacobian::LinearSolver::Dense,
                LinearSolverArg::Sparse => rmoc::solve::jacobian::LinearSolver::Sparse,
            },
            outputs: Vec::new(),
        }
    }
}

#[derive(clap::Args)]
struct LinearizeArgs {
    /// The model file (.rmo or .mo).
    file: PathBuf,
    /// The model to linearize (default: the file's only model, or the one named as the file).
    #[arg(long)]
    model: Option<String>,
    /// The time of the operating point: the model runs to it first (default: the start, after initialization).
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    at: Option<f64>,
    /// Set a parameter or a top-level input: -p NAME=VALUE (repeatable).
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// Also print each mode's shape: the eigenvector over the states (magnitude and phase).
    #[arg(long)]
    modes: bool,
    /// Write A, B, C, D, the operating point and the names: .json, or .mat (MAT v4, as scipy.io.loadmat reads it).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FmiVersionArg {
    #[value(name = "2")]
    Two,
    #[value(name = "3")]
    Three,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum FmuKindArg {
    Me,
    Cs,
    Both,
}

#[derive(clap::Args)]
struct FmuArgs {
    /// The model file (.rmo or .mo).
    file: PathBuf,
    /// The model to export (default: the file's only model, or the one named as the file).
    #[arg(long)]
    model: Option<String>,
    /// The FMI version.
    #[arg(long = "fmi", value_enum, default_value = "2")]
    version: FmiVersionArg,
    /// The interfaces: model exchange (the host integrates), co-simulation (rmoc's integrators inside), or both.
    #[arg(long, value_enum, default_value = "both")]
    kind: FmuKindArg,
    /// The FMU file (default: MODEL.fmu).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Run the model with the interpreter in the FMU (no machine code).
    #[arg(long)]
    no_jit: bool,
    /// No closing `wrote ...` line.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(clap::Args)]
struct SweepArgs {
    /// The model file (.rmo or .mo).
    file: PathBuf,
    /// The model to sweep (default: the file's only model, or the one named as the file).
    #[arg(long)]
    model: Option<String>,
    /// A parameter axis: NAME=START:STOP:N (N values from START to STOP),
    /// NAME=v1,v2,... or NAME=v (repeatable; one value holds at every point).
    #[arg(short = 'p', value_name = "NAME=VALUES")]
    params: Vec<String>,
    /// Every combination of the axes' values (the default; the first axis varies slowest).
    #[arg(long, conflicts_with = "zip")]
    grid: bool,
    /// The k-th values of all axes together (the axes have one length).
    #[arg(long)]
    zip: bool,
    /// The points from a CSV file: a header of parameter names, then one row per point.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["grid", "zip"])]
    samples: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// The result columns to summarize and to save with `--save-results`, by pattern (`*` and `?` within one dotted component, `**` across them, an array's name its elements; default: all).
    #[arg(long, value_name = "PATTERN", num_args = 1..)]
    outputs: Vec<String>,
    /// The statistics of every summarized column: final, max, min, mean, rms
    /// (time averages by the trapezoidal rule over the output rows).
    #[arg(long, value_name = "LIST", default_value = "final")]
    summary: String,
    /// Folder of the summary (`summary.csv`) and of saved results (default: MODEL_sweep).
    #[arg(short = 'o', value_name = "DIR")]
    output: Option<PathBuf>,
    /// Also write the result file of every point (`DIR/point_K.csv`), or of
    /// the points listed (`--save-results 0,5,17`); the `point_*.csv` files
    /// of an earlier sweep in DIR are removed first.
    #[arg(long, value_name = "POINTS", num_args = 0..=1, default_missing_value = "all")]
    save_results: Option<String>,
    /// No progress bar and no closing line.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> ExitCode {
    // Deeply nested expressions recurse in the parser and the flattener; a
    // large stack keeps "very long" from becoming "crash".
    let worker = std::thread::Builder::new().stack_size(512 << 20).spawn(run);
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error[internal]: internal failure (please report this model)");
            ExitCode::from(1)
        }
    }
}

/// Writes command output to stdout. A reader that went away (`rmoc analyze
/// m.rmo | head`) is not an error of rmoc's: the rest is dropped quietly
/// instead of panicking in `println!`.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                // Bad input exits with 1, like every other rejection.
                _ => ExitCode::from(1),
            };
        }
    };
    match cli.command {
        Command::Check {
            file,
            model,
            parse_only,
        } => check(&file, model.as_deref(), parse_only),
        Command::Flatten { file, model, json } => flatten(&file, model.as_deref(), json),
        Command::Analyze { file, model } => analyze(&file, model.as_deref()),
        Command::Simulate(a) => simulate(&a),
        Command::Sweep(a) => sweep(&a),
        Command::Linearize(a) => linearize(&a),
        Command::Fmu(a) => fmu(&a),
        Command::Plot {
            result,
            vars,
            x,
            from,
            to,
            title,
            panels,
            also,
            output,
        } => {
            let req = rmoc::output::plot::PlotRequest {
                ys: &vars,
                x: x.as_deref(),
                from,
                to,
                title: title.as_deref(),
                panels,
            };
            plot(&result, &also, &req, &output)
        }
        Command::Hysteresis {
            result,
            torque,
            angle,
            rated,
            angle_unit,
            json,
            output,
        } => {
            let unit = match angle_unit {
                AngleUnitArg::Rad => rmoc::output::hysteresis::AngleUnit::Radian,
                AngleUnitArg::Deg => rmoc::output::hysteresis::AngleUnit::Degree,
                AngleUnitArg::Arcmin => rmoc::output::hysteresis::AngleUnit::Arcmin,
            };
            hysteresis(
                &result,
                &torque,
                &angle,
                rated,
                unit,
                json,
                output.as_deref(),
            )
        }
    }
}

/// `rmoc check --parse-only`: the file's syntax, and nothing looked up.
fn parse_only_check(file: &std::path::Path) -> ExitCode {
    let (sources, parsed) = rmoc::parse_file(file);
    match parsed {
        Ok(def) if def.classes.is_empty() => {
            let d = Diagnostic::error_nospan(
                DiagnosticKind::Syntax,
                format!("`{}` defines no class", file.display()),
            )
            .with_hint("a model file holds at least one `model ... end ...;`");
            eprint!("{}", diag::render(&sources, &[d], color()));
            ExitCode::from(1)
        }
        Ok(def) => {
            emit(&format!(
                "{}: parsed {} class(es)\n",
                file.display(),
                def.classes.len()
            ));
            ExitCode::SUCCESS
        }
        Err(d) => {
            eprint!("{}", diag::render(&sources, &d, color()));
            ExitCode::from(1)
        }
    }
}

/// A command-line or result-file error (no source span): rendered, exit 1.
fn fail_nospan(kind: DiagnosticKind, msg: String, hint: &str) -> ExitCode {
    eprint!(
        "{}",
        diag::render(
            &Default::default(),
            &[Diagnostic::error_nospan(kind, msg).with_hint(hint)],
            color()
        )
    );
    ExitCode::from(1)
}

/// Reads a CSV result for a post-processing command; errors are rendered.
fn read_result(result: &std::path::Path) -> Result<rmoc::output::ResultTable, ExitCode> {
    let known = ["csv", "mat"].iter().any(|x| {
        result
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(x))
    });
    if !known {
        return Err(fail_nospan(
            DiagnosticKind::Setting,
            format!("`{}` is not a CSV or MAT result", result.display()),
            "give a result file: write one with `rmoc simulate MODEL -o res.csv` (or res.mat)",
        ));
    }
    let table = rmoc::output::read(result).map_err(|e| {
        fail_nospan(
            DiagnosticKind::Io,
            format!("cannot read `{}`: {e}", result.display()),
            "give a result file written by `rmoc simulate -o res.csv` (or res.mat)",
        )
    })?;
    if table.rows.iter().any(|r| r.len() != table.names.len()) {
        return Err(fail_nospan(
            DiagnosticKind::Table,
            format!("`{}`: rows and header differ in length", result.display()),
            "give a result file written by `rmoc simulate -o res.csv`",
        ));
    }
    Ok(table)
}

/// The first columns of a result, as a hint.
fn columns_hint(names: &[String]) -> String {
    let mut columns: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    columns.truncate(12);
    format!(
        "the result's columns are: {}{}",
        columns.join(", "),
        if names.len() > 12 { ", ..." } else { "" }
    )
}

/// `rmoc hysteresis`: the loop's indicators, printed; the loop drawn.
fn hysteresis(
    result: &std::path::Path,
    torque: &str,
    angle: &str,
    rated: f64,
    unit: rmoc::output::hysteresis::AngleUnit,
    json: bool,
    out: Option<&std::path::Path>,
) -> ExitCode {
    use rmoc::output::hysteresis as hy;
    if let Some(out) = out
        && let Some(refused) = refuse_plot_format(out, "the loop is drawn as", "loop")
    {
        return refused;
    }
    let rmoc::output::ResultTable { names, units, rows } = match read_result(result) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let column = |name: &str| names.iter().position(|n| n == name);
    let (Some(kt), Some(ka)) = (column(torque), column(angle)) else {
        let missing = if column(torque).is_none() {
            torque
        } else {
            angle
        };
        return fail_nospan(
            DiagnosticKind::UnresolvedName,
            format!("the result has no column `{missing}`"),
            &columns_hint(&names),
        );
    };
    let t: Vec<f64> = rows.iter().map(|r| r[kt]).collect();
    let a: Vec<f64> = rows.iter().map(|r| r[ka] * unit.to_arcmin()).collect();
    let ind = match hy::indicators(&t, &a, rated) {
        Ok(i) => i,
        Err(msg) => {
            return fail_nospan(
                DiagnosticKind::Setting,
                format!("{}: {msg}", result.display()),
                "drive the output through a loading sequence that reaches the rated torque both ways (Mechanics.Rotational.TorqueSequence) and give --rated its peak",
            );
        }
    };
    if json {
        let v = serde_json::json!({
            "rated_torque": ind.rated_torque,
            "stiffness_positive": ind.stiffness_positive,
            "stiffness_negative": ind.stiffness_negative,
            "stiffness_mean": ind.stiffness_mean,
            "lost_motion_arcmin": ind.lost_motion,
            "backlash_arcmin": ind.backlash,
            "offset_arcmin": ind.offset,
        });
        emit(&format!("{v}\n"));
    } else {
        emit(&hy::report(&ind, torque, angle));
    }
    if let Some(out) = out {
        let time = column("time").unwrap_or(0);
        let table = rmoc::output::ResultTable {
            names: vec![
                "time".to_string(),
                format!("{angle} (centred)"),
                torque.to_string(),
            ],
            units: vec![
                units[time].clone(),
                Some("arcmin".to_string()),
                units[kt].clone(),
            ],
            rows: rows
                .iter()
                .zip(&a)
                .map(|(r, a)| vec![r[time], a - ind.offset, r[kt]])
                .collect(),
        };
        let req = rmoc::output::plot::PlotRequest {
            ys: std::slice::from_ref(&table.names[2]),
            x: Some(&table.names[1]),
            from: None,
            to: None,
            title: Some("torque-angle hysteresis"),
            panels: false,
        };
        let source = rmoc::output::plot::PlotSource {
            label: String::new(),
            table: &table,
        };
        if let Err(msg) = rmoc::output::plot::plot(&[source], &req, out) {
            return fail_nospan(DiagnosticKind::Io, msg, "check the output path");
        }
    }
    ExitCode::SUCCESS
}

/// The refusal of a plot file that is neither SVG nor PNG: `what` says
/// who draws (`rmoc plot writes`), `stem` names the example file.
fn refuse_plot_format(out: &std::path::Path, what: &str, stem: &str) -> Option<ExitCode> {
    (!rmoc::output::plot::writable_format(out)).then(|| {
        fail_nospan(
            DiagnosticKind::Setting,
            format!("cannot write `{}`: {what} SVG or PNG", out.display()),
            &format!("name the output `.svg` or `.png`, e.g. `-o {stem}.png`"),
        )
    })
}

/// `rmoc plot`: errors are about the command line or the result file, so
/// they carry no source span.
fn plot(
    result: &std::path::Path,
    also: &[PathBuf],
    req: &rmoc::output::plot::PlotRequest,
    out: &std::path::Path,
) -> ExitCode {
    if let Some(refused) = refuse_plot_format(out, "rmoc plot writes", "plot") {
        return refused;
    }
    let mut tables = Vec::new();
    for path in std::iter::once(result).chain(also.iter().map(PathBuf::as_path)) {
        match read_result(path) {
            Ok(t) => tables.push((path, t)),
            Err(code) => return code,
        }
    }
    // A result is named in the legend by its file name without extension
    // (the whole path where two share one).
    let stem = |p: &std::path::Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    let shared =
        |p: &std::path::Path| tables.iter().filter(|(q, _)| stem(q) == stem(p)).count() > 1;
    let sources: Vec<rmoc::output::plot::PlotSource> = tables
        .iter()
        .map(|(path, table)| rmoc::output::plot::PlotSource {
            label: if shared(path) {
                path.display().to_string()
            } else {
                stem(path)
            },
            table,
        })
        .collect();
    match rmoc::output::plot::plot(&sources, req, out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            // The columns of the result a pattern found nothing in.
            let missing = tables.iter().find(|(_, t)| {
                req.ys.iter().any(|p| {
                    !t.names
                        .iter()
                        .any(|n| n != "time" && rmoc::solve::columns::glob(p, n))
                }) || req.x.is_some_and(|x| !t.names.iter().any(|n| n == x))
            });
            let names = &missing.unwrap_or(&tables[0]).1.names;
            fail_nospan(DiagnosticKind::UnresolvedName, msg, &columns_hint(names))
        }
    }
}

fn color() -> bool {
    std::io::stderr().is_terminal()
}

/// Prints diagnostics to stderr; returns exit status 1 if any is an error.
fn report(lib: &rmoc::instantiate::library::Library, diags: &[Diagnostic]) -> ExitCode {
    eprint!("{}", diag::render(&lib.sources, diags, color()));
    if diag::has_errors(diags) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn check(file: &std::path::Path, model: Option<&str>, parse_only: bool) -> ExitCode {
    if parse_only {
        return parse_only_check(file);
    }
    let (mut lib, loaded) = rmoc::load(file);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return report(&lib, &d),
    };
    if loaded.classes.is_empty() {
        return report(
            &lib,
            &[Diagnostic::error_nospan(
                DiagnosticKind::Syntax,
                format!("`{}` defines no class", file.display()),
            )
            .with_hint("a model file holds at least one `model ... end ...;`")],
        );
    }
    let targets: Vec<_> = match model {
        Some(_) => match rmoc::select_model(&mut lib, &loaded, model) {
            Ok(m) => vec![m],
            Err(d) => return report(&lib, &[d]),
        },
        None => {
            let names: Vec<String> = rmoc::candidate_models(&loaded.file)
                .iter()
                .map(|c| c.name.name.clone())
                .collect();
            loaded
                .classes
                .iter()
                .zip(&loaded.file.classes)
                .filter(|(_, c)| names.contains(&c.name.name))
                .map(|(id, _)| *id)
                .collect()
        }
    };
    if targets.is_empty() {
        // A library file: its classes parse, and are checked where used.
        emit(&format!(
            "{}: parsed {} class(es); no model to check (packages, functions and partial models are checked when a model uses them)\n",
            file.display(),
            loaded.classes.len()
        ));
        return ExitCode::SUCCESS;
    }
    let (summaries, diags) = match rmoc::check_models(&mut lib, &targets) {
        Ok(checked) => checked,
        Err(d) => (Vec::new(), d),
    };
    let code = report(&lib, &diags);
    if code == ExitCode::SUCCESS {
        for s in summaries {
            emit(&format!("{s}\n"));
        }
    }
    code
}

fn flatten(file: &std::path::Path, model: Option<&str>, json: bool) -> ExitCode {
    let (mut lib, loaded) = rmoc::load(file);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return report(&lib, &d),
    };
    let m = match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => m,
        Err(d) => return report(&lib, &[d]),
    };
    match rmoc::instantiate::flatten(&mut lib, m) {
        Ok(flat) => {
            report(&lib, &flat.warnings);
            if json {
                match serde_json::to_string_pretty(&flat) {
                    Ok(s) => emit(&format!("{s}\n")),
                    Err(e) => {
                        return report(
                            &lib,
                            &[Diagnostic::error_nospan(
                                DiagnosticKind::Io,
                                format!("cannot write JSON: {e}"),
                            )],
                        );
                    }
                }
            } else {
                emit(&flat.to_text());
            }
            ExitCode::SUCCESS
        }
        Err(d) => report(&lib, &d),
    }
}

fn analyze(file: &std::path::Path, model: Option<&str>) -> ExitCode {
    let (mut lib, loaded) = rmoc::load(file);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return report(&lib, &d),
    };
    let m = match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => m,
        Err(d) => return report(&lib, &[d]),
    };
    let flat = match rmoc::instantiate::flatten(&mut lib, m) {
        Ok(f) => f,
        Err(d) => return report(&lib, &d),
    };
    match rmoc::structure::analyze(flat) {
        Ok(c) => {
            emit(&c.report(&lib.sources));
            ExitCode::SUCCESS
        }
        Err(d) => report(&lib, &d),
    }
}

/// A value as `--print` shows it: a Real in scientific notation, an
/// Integer as a whole number, a Boolean as true or false.
fn printed(x: f64, ty: rmoc::flat::ScalarType) -> String {
    match ty {
        rmoc::flat::ScalarType::Real => format!("{x:.12e}"),
        _ if x.is_nan() => "NaN".to_string(),
        other => rmoc::sweep::plan::show(x, other),
    }
}

/// `n` with its digits in groups of three (`5 001`).
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(ch);
    }
    out
}

fn simulate(a: &SimulateArgs) -> ExitCode {
    let started = std::time::Instant::now();
    // Progress on a terminal; Ctrl-C stops the run at its next step (and
    // a second one at once); during compilation, at its first step.
    let progress = std::sync::Arc::new(rmoc::output::progress::TerminalProgress::new(a.quiet));
    let on_signal = progress.clone();
    // Without a handler (another one is installed) Ctrl-C ends the process
    // as it always did.
    let _ = ctrlc::set_handler(move || {
        if on_signal.on_ctrl_c() {
            std::process::exit(130);
        }
    });
    let (mut lib, m) = match load_model(&a.file, a.model.as_deref()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut request = a.run.request(a.params.clone());
    request.outputs = a.outputs.clone();
    if let Err(d) = request.check() {
        return report(&lib, &[d]);
    }
    let t_compile = std::time::Instant::now();
    let compiled = match rmoc::compile(&mut lib, m) {
        Ok(c) => c,
        Err(d) => return report(&lib, &d),
    };
    let c = &compiled.causal;
    let mut opts = match request.resolve(c) {
        Ok(o) => o,
        Err(d) => return report(&lib, &[d]),
    };
    opts.monitor = Some(rmoc::solve::monitor::MonitorHandle(progress.clone()));
    let (start, stop) = (opts.start, opts.stop);
    let t_jit = std::time::Instant::now();
    let simulator = match rmoc::Simulator::new(compiled, a.run.no_jit) {
        Ok(s) => s,
        Err(d) => return report(&lib, &[d]),
    };
    let jit_time = t_jit.elapsed();
    let c = simulator.causal();
    let compile_time = t_compile.elapsed();
    let mut out = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}_res.csv", c.name.replace('.', "_"))));
    // A result file streams to a temporary file while the run goes (the
    // rows are not held in memory) and is put in place when it ends.
    let stream = if rmoc::output::can_stream(&out) {
        match rmoc::output::ResultStream::create(&out) {
            Ok(s) => Some(std::sync::Arc::new(std::sync::Mutex::new(s))),
            Err(e) => {
                return report(
                    &lib,
                    &[Diagnostic::error_nospan(
                        DiagnosticKind::Io,
                        format!("cannot write `{}`: {e}", out.display()),
                    )],
                );
            }
        }
    } else {
        None
    };
    if let Some(s) = &stream {
        let sink: std::sync::Arc<std::sync::Mutex<dyn rmoc::solve::RowSink>> = s.clone();
        opts.rows = Some(rmoc::solve::RowSinkHandle(sink));
    }
    let t_sim = std::time::Instant::now();
    let results = simulator.simulate(&opts);
    rmoc::solve::monitor::Monitor::finish(&*progress);
    let results = match results {
        Ok(r) => r,
        Err(d) => return report(&lib, &d),
    };
    let sim_time = t_sim.elapsed();
    if !results.warnings.is_empty() {
        eprint!("{}", diag::render(&lib.sources, &results.warnings, color()));
    }
    if results.interrupted.is_some() {
        out = rmoc::output::incomplete_path(&out);
    }
    let written = match &stream {
        Some(s) => match s.lock() {
            Ok(mut s) => s.finish(&results, &out),
            Err(_) => Err(std::io::Error::other("the result stream is poisoned")),
        },
        None => rmoc::output::write(&results, &out),
    };
    if let Err(e) = written {
        return report(
            &lib,
            &[Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!("cannot write `{}`: {e}", out.display()),
            )],
        );
    }
    if !a.quiet && results.interrupted.is_none() {
        eprintln!(
            "wrote {} ({} rows x {} columns, {:.2} s)",
            out.display(),
            grouped(results.streamed + results.rows.len()),
            grouped(results.names.len() + 1),
            started.elapsed().as_secs_f64()
        );
    }
    if !a.print.is_empty() {
        let last = results.rows.last();
        let mut width = 4;
        let mut lines = Vec::new();
        for (k, n) in results.names.iter().enumerate() {
            if a.print.iter().any(|p| glob(p, n)) {
                width = width.max(n.len());
                let v = last.map(|r| r[k]).unwrap_or(f64::NAN);
                lines.push((n.clone(), printed(v, results.types[k])));
            }
        }
        for ((n, v), ty) in results.parameters.iter().zip(&results.parameter_types) {
            if a.print.iter().any(|p| glob(p, n)) {
                width = width.max(n.len());
                lines.push((n.clone(), printed(*v, *ty)));
            }
        }
        let t = results.times.last().copied().unwrap_or(start);
        let mut table = format!("{:<width$}  value at t = {t}\n", "name");
        for (n, v) in lines {
            table.push_str(&format!("{n:<width$}  {v}\n"));
        }
        emit(&table);
    }
    if let Some(t) = results.interrupted {
        eprintln!(
            "interrupted at t = {t} of [{start}, {stop}]: the rows up to then were written to `{}`",
            out.display()
        );
        return ExitCode::from(130);
    }
    if a.stats {
        eprintln!("{}", results.stats);
        eprintln!("model evaluations {}", results.stats.model_evaluations);
        eprintln!(
            "compile {:.1} ms (of which JIT {:.1} ms), simulate {:.1} ms{}",
            compile_time.as_secs_f64() * 1e3,
            jit_time.as_secs_f64() * 1e3,
            sim_time.as_secs_f64() * 1e3,
            rmoc::peak_memory()
        );
    }
    ExitCode::SUCCESS
}

/// Loads `file` and picks its model (`--model`); on failure the
/// diagnostics are reported and the exit code returned.
fn load_model(
    file: &std::path::Path,
    model: Option<&str>,
) -> Result<
    (
        rmoc::instantiate::library::Library,
        rmoc::instantiate::library::ClassId,
    ),
    ExitCode,
> {
    let (mut lib, loaded) = rmoc::load(file);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return Err(report(&lib, &d)),
    };
    match rmoc::select_model(&mut lib, &loaded, model) {
        Ok(m) => Ok((lib, m)),
        Err(d) => Err(report(&lib, &[d])),
    }
}

/// Compiles model `m` and its machine code (none with `--no-jit`); on
/// failure the diagnostics are reported and the exit code returned.
fn compile_simulator(
    lib: &mut rmoc::instantiate::library::Library,
    m: rmoc::instantiate::library::ClassId,
    no_jit: bool,
) -> Result<rmoc::Simulator, ExitCode> {
    let compiled = rmoc::compile(lib, m).map_err(|d| report(lib, &d))?;
    rmoc::Simulator::new(compiled, no_jit).map_err(|d| report(lib, &[d]))
}

fn sweep(a: &SweepArgs) -> ExitCode {
    let stop = std::sync::Arc::new(rmoc::solve::monitor::StopFlag::default());
    let on_signal = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if on_signal.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let started = std::time::Instant::now();
    let (mut lib, m) = match load_model(&a.file, a.model.as_deref()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let statistics = match rmoc::sweep::summary::Statistic::parse_list(&a.summary) {
        Ok(s) => s,
        Err(d) => return report(&lib, &[d]),
    };
    let request = a.run.request(Vec::new());
    if let Err(d) = request.check() {
        return report(&lib, &[d]);
    }
    if a.params.is_empty() && a.samples.is_none() {
        return fail_nospan(
            DiagnosticKind::Setting,
            "nothing to sweep: give -p axes or --samples".to_string(),
            "-p NAME=START:STOP:N, -p NAME=v1,v2,... or --samples points.csv",
        );
    }
    let simulator = match compile_simulator(&mut lib, m, a.run.no_jit) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let c = simulator.causal();
    let base = match request.resolve(c) {
        Ok(o) => o,
        Err(d) => return report(&lib, &[d]),
    };
    use rmoc::sweep::plan::{Combine, Plan};
    let plan = match &a.samples {
        Some(path) => Plan::from_samples(c, &mut lib.sources, path, &a.params),
        None => Plan::from_axes(
            c,
            &a.params,
            if a.zip { Combine::Zip } else { Combine::Grid },
        ),
    };
    let plan = match plan {
        Ok(p) => p,
        Err(d) => return report(&lib, &[d]),
    };
    let dir = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}_sweep", c.name.replace('.', "_"))));
    let save = match a.save_results.as_deref() {
        None => None,
        Some("all") => Some(None),
        Some(list) => {
            let parsed: Result<Vec<usize>, _> =
                list.split(',').map(|k| k.trim().parse::<usize>()).collect();
            match parsed {
                Ok(ks) if ks.iter().all(|&k| k < plan.points.len()) => Some(Some(ks)),
                _ => {
                    return fail_nospan(DiagnosticKind::Setting,
                        format!("`--save-results {list}`: not a list of point numbers below {}", plan.points.len()),
                        "point numbers count from 0, as the summary's `point` column; `--save-results` alone saves every point",
                    );
                }
            }
        }
    }
    .map(|points| rmoc::sweep::SaveResults {
        dir: dir.clone(),
        points,
    });
    let settings = rmoc::sweep::SweepSettings {
        statistics,
        outputs: a.outputs.clone(),
        jobs: a.jobs,
        save,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail_nospan(
            DiagnosticKind::Io,
            format!("cannot make the folder `{}`: {e}", dir.display()),
            "give a folder you can write to with -o",
        );
    }
    let bar = rmoc::output::progress::BatchProgress::new(plan.points.len(), a.quiet);
    let table = rmoc::sweep::run(
        &simulator,
        &lib.sources,
        &base,
        &plan,
        &settings,
        &|o| bar.point_done(matches!(o.status, rmoc::sweep::PointStatus::Failed(_))),
        &stop,
    );
    bar.finish();
    let table = match table {
        Ok(t) => t,
        Err(d) => return report(&lib, &[d]),
    };
    // Ctrl-C after the last point ended changes nothing.
    let interrupted = table.outcomes.iter().any(|o| {
        matches!(
            o.status,
            rmoc::sweep::PointStatus::Interrupted | rmoc::sweep::PointStatus::NotRun
        )
    });
    let mut out = dir.join("summary.csv");
    if interrupted {
        out = rmoc::output::incomplete_path(&out);
    }
    if let Err(e) = table.write_csv(&out) {
        return fail_nospan(
            DiagnosticKind::Io,
            format!("cannot write `{}`: {e}", out.display()),
            "give a folder you can write to with -o",
        );
    }
    let failed = table.failed();
    let points = table.outcomes.len();
    if interrupted {
        eprintln!(
            "interrupted: the points run so far are in `{}` (the others say `not run`)",
            out.display()
        );
        return ExitCode::from(130);
    }
    if !a.quiet {
        let failures = match failed {
            0 => String::new(),
            n => format!(", {n} failed (see their `message`)"),
        };
        eprintln!(
            "wrote {} ({points} points{failures}, {:.2} s)",
            out.display(),
            started.elapsed().as_secs_f64()
        );
    }
    if failed == points {
        if let Some(m) = table.outcomes.iter().find_map(|o| match &o.status {
            rmoc::sweep::PointStatus::Failed(m) => Some(m.clone()),
            _ => None,
        }) {
            eprintln!("error: every point failed; the first: {m}");
        }
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn fmu(a: &FmuArgs) -> ExitCode {
    let started = std::time::Instant::now();
    if let Some(out) = &a.output
        && !out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("fmu"))
    {
        return fail_nospan(
            DiagnosticKind::Setting,
            format!("`{}`: an FMU's file name ends in .fmu", out.display()),
            "-o Model.fmu",
        );
    }
    let (mut lib, m) = match load_model(&a.file, a.model.as_deref()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let text = match rmoc::read_source(&a.file) {
        Ok(t) => t,
        Err(d) => return report(&lib, &[d]),
    };
    let simulator = match compile_simulator(&mut lib, m, a.no_jit) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let name = a
        .model
        .clone()
        .unwrap_or_else(|| simulator.causal().name.clone());
    let (files, outside) = match rmoc::fmi::carried_files(&lib) {
        Ok(x) => x,
        Err(d) => return report(&lib, &[d]),
    };
    for path in outside {
        eprintln!(
            "warning: {} is named by an absolute path: the FMU reads it from there",
            path.display()
        );
    }
    let req = rmoc::fmi::ExportRequest {
        version: match a.version {
            FmiVersionArg::Two => rmoc::fmi::FmiVersion::Two,
            FmiVersionArg::Three => rmoc::fmi::FmiVersion::Three,
        },
        kinds: rmoc::fmi::FmuKinds {
            model_exchange: matches!(a.kind, FmuKindArg::Me | FmuKindArg::Both),
            co_simulation: matches!(a.kind, FmuKindArg::Cs | FmuKindArg::Both),
        },
        model: name.clone(),
        // The file's place under its root: a file of a library (`within`)
        // keeps its folders, where its relative names are taken from.
        file: lib.relative_to_root(&a.file, 0).unwrap_or_else(|| {
            a.file
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_else(|| "model.rmo".into())
        }),
        text,
        interpreted: a.no_jit,
        files,
    };
    let exported = match rmoc::fmi::export(&simulator, &req) {
        Ok(e) => e,
        Err(d) => return report(&lib, &[d]),
    };
    let out = a
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.fmu", rmoc::fmi::model_identifier(&name))));
    if let Err(e) = rmoc::output::replace_file(&out, |tmp| std::fs::write(tmp, &exported.bytes)) {
        return fail_nospan(
            DiagnosticKind::Io,
            format!("cannot write {}: {e}", out.display()),
            "check that the folder exists and is writable",
        );
    }
    if !a.quiet {
        let kinds = match a.kind {
            FmuKindArg::Me => "model exchange",
            FmuKindArg::Cs => "co-simulation",
            FmuKindArg::Both => "model exchange and co-simulation",
        };
        let version = match a.version {
            FmiVersionArg::Two => "2.0",
            FmiVersionArg::Three => "3.0",
        };
        eprintln!(
            "wrote {} (FMI {version}, {kinds}; {} variables, {} states, {} event indicators; {:.1} MB, {:.2} s)",
            out.display(),
            exported.variables,
            exported.states,
            exported.event_indicators,
            exported.bytes.len() as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}

fn linearize(a: &LinearizeArgs) -> ExitCode {
    if let Some(out) = &a.output {
        let ok = ["json", "mat"]
            .iter()
            .any(|x| out.extension().is_some_and(|e| e.eq_ignore_ascii_case(x)));
        if !ok {
            return fail_nospan(
                DiagnosticKind::Setting,
                format!("`{}`: rmoc linearize writes .json or .mat", out.display()),
                "-o lin.json or -o lin.mat",
            );
        }
    }
    if a.at.is_some() && a.run.stop_time.is_some() {
        return fail_nospan(
            DiagnosticKind::Setting,
            "--at and --stop-time both set the time of the operating point".to_string(),
            "give one of them (--at T)",
        );
    }
    let (mut lib, m) = match load_model(&a.file, a.model.as_deref()) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut request = a.run.request(a.params.clone());
    if let Err(d) = request.check() {
        return report(&lib, &[d]);
    }
    let simulator = match compile_simulator(&mut lib, m, a.run.no_jit) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let c = simulator.causal();
    // The run goes from the start to the operating point.
    let start = a.run.start_time.or(c.experiment.start_time).unwrap_or(0.0);
    request.stop_time = Some(a.at.or(a.run.stop_time).unwrap_or(start));
    let opts = match request.resolve(c) {
        Ok(o) => o,
        Err(d) => return report(&lib, &[d]),
    };
    let lin = match simulator.linearize(&opts) {
        Ok(l) => l,
        Err(d) => return report(&lib, &d),
    };
    let modes = match rmoc::solve::linearize::modes(&lin.a) {
        Ok(m) => m,
        Err(d) => return report(&lib, &[d]),
    };
    if let Some(out) = &a.output {
        let written = if out
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            let value = serde_json::json!({ "linearization": &lin, "modes": &modes });
            rmoc::output::replace_file(out, |tmp| std::fs::write(tmp, format!("{value:#}\n")))
        } else {
            let column = |v: &[f64]| v.iter().map(|x| vec![*x]).collect::<Vec<_>>();
            let (x0, u0, y0) = (column(&lin.x0), column(&lin.u0), column(&lin.y0));
            let (n, m) = (lin.states.len(), lin.inputs.len());
            rmoc::output::mat::write_matrices(
                out,
                &[
                    ("A", &lin.a, n),
                    ("B", &lin.b, m),
                    ("C", &lin.c, n),
                    ("D", &lin.d, m),
                    ("x0", &x0, 1),
                    ("u0", &u0, 1),
                    ("y0", &y0, 1),
                ],
                &[
                    ("stateNames", &lin.states),
                    ("inputNames", &lin.inputs),
                    ("outputNames", &lin.outputs),
                ],
            )
        };
        if let Err(e) = written {
            return fail_nospan(
                DiagnosticKind::Io,
                format!("cannot write `{}`: {e}", out.display()),
                "give a path you can write to",
            );
        }
    }
    emit(&rmoc::solve::linearize::report(&lin, &modes, a.modes));
    ExitCode::SUCCESS
}
