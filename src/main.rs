//! The `rmoc` command line: argument parsing and rendering only; the
//! pipeline lives in the library (`rmoc::`).

use clap::{Parser, Subcommand};
use rmoc::diag::{self, Diagnostic};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rmoc", version, about = "Compile and simulate Modelica-style acausal models of gears and contacts")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check a model file: syntax, names, types, dimensions and balance.
    Check {
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
        file: PathBuf,
        #[arg(long)]
        model: Option<String>,
        /// Print the flat model as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the structural analysis: index, states, dummy states, BLT blocks.
    Analyze {
        file: PathBuf,
        #[arg(long)]
        model: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ => ExitCode::from(2),
            };
        }
    };
    match cli.command {
        Command::Check { file, model, parse_only } => check(&file, model.as_deref(), parse_only),
        Command::Flatten { file, model, json } => flatten(&file, model.as_deref(), json),
        Command::Analyze { file, model } => analyze(&file, model.as_deref()),
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
    let (mut lib, loaded) = rmoc::load(file);
    let loaded = match loaded {
        Ok(l) => l,
        Err(d) => return report(&lib, &d),
    };
    if parse_only {
        println!("{}: parsed {} class(es)", file.display(), loaded.classes.len());
        return ExitCode::SUCCESS;
    }
    let targets: Vec<_> = match model {
        Some(_) => match rmoc::select_model(&mut lib, &loaded, model) {
            Ok(m) => vec![m],
            Err(d) => return report(&lib, &[d]),
        },
        None => {
            let names: Vec<String> = rmoc::candidate_models(&loaded.file).iter().map(|c| c.name.name.clone()).collect();
            loaded
                .classes
                .iter()
                .zip(&loaded.file.classes)
                .filter(|(_, c)| names.contains(&c.name.name))
                .map(|(id, _)| *id)
                .collect()
        }
    };
    let mut diags = Vec::new();
    let mut summaries = Vec::new();
    for t in targets {
        match rmoc::check_model(&mut lib, t) {
            Ok(s) => summaries.push(s),
            Err(d) => diags.extend(d),
        }
    }
    let code = report(&lib, &diags);
    if code == ExitCode::SUCCESS {
        for s in summaries {
            println!("{s}");
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
            if json {
                match serde_json::to_string_pretty(&flat) {
                    Ok(s) => println!("{s}"),
                    Err(e) => return report(&lib, &[Diagnostic::error_nospan(format!("cannot write JSON: {e}"))]),
                }
            } else {
                print!("{}", flat.to_text());
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
            print!("{}", c.report(&lib.sources));
            ExitCode::SUCCESS
        }
        Err(d) => report(&lib, &d),
    }
}
