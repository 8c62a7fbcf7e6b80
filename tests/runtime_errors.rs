//! Failures at run time and on the command line: `rmoc simulate` must end with
//! a diagnostic that says where and when, exit status 1, and no result file.
//! Each case is one line: the model under `tests/runtime/` (or none), the
//! arguments, and a snapshot of what the user sees.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/runtime")
}

/// Runs `rmoc simulate FILE ARGS -o <fresh path>` in `tests/runtime/` and
/// renders the exit status, the output, and whether a result file exists.
fn check(file: &str, args: &[&str]) -> String {
    let out_dir = std::env::temp_dir().join(format!("rmoc-runtime-{}-{file}", std::process::id()));
    std::fs::create_dir_all(&out_dir).expect("temp dir");
    let result = out_dir.join("result.csv");
    let _ = std::fs::remove_file(&result);
    let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(dir())
        .arg("simulate")
        .arg(file)
        .args(args)
        .arg("-o")
        .arg(&result)
        .env("NO_COLOR", "1")
        .output()
        .expect("run rmoc");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "rmoc panicked:\n{text}");
    let files = leftovers(&out_dir);
    let _ = std::fs::remove_dir_all(&out_dir);
    format!(
        "exit {:?}\nfiles left: {files:?}\n{}",
        out.status.code(),
        text.replace(&out_dir.display().to_string(), "<out>")
    )
}

fn leftovers(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn initialization_without_a_solution() {
    insta::assert_snapshot!(check("init_no_solution.rmo", &[]));
}

#[test]
fn an_assert_fails_inside_a_long_step_and_is_reported_where_it_first_fails() {
    insta::assert_snapshot!(check("assert_error.rmo", &[]));
}

#[test]
fn a_warning_assert_is_reported_once_and_the_run_goes_on() {
    insta::assert_snapshot!(check("assert_warning.rmo", &[]));
}

#[test]
fn finite_escape_time_ends_with_the_step_size_failure() {
    insta::assert_snapshot!(check("finite_escape.rmo", &[]));
}

#[test]
fn an_event_iteration_that_does_not_settle() {
    insta::assert_snapshot!(check("chattering.rmo", &[]));
}

#[test]
fn sqrt_of_a_negative_number_names_the_variable_and_the_time() {
    insta::assert_snapshot!(check("sqrt_negative.rmo", &[]));
}

#[test]
fn unknown_model_name() {
    insta::assert_snapshot!(check("assert_error.rmo", &["--model", "Nope"]));
}

#[test]
fn parameter_override_without_a_value() {
    insta::assert_snapshot!(check("sqrt_negative.rmo", &["-p", "x"]));
}

#[test]
fn parameter_override_of_something_that_is_not_a_parameter() {
    insta::assert_snapshot!(check("sqrt_negative.rmo", &["-p", "y=2"]));
}

#[test]
fn stop_time_before_start_time() {
    insta::assert_snapshot!(check("assert_error.rmo", &["--stop-time", "-1"]));
}

#[test]
fn negative_tolerance() {
    insta::assert_snapshot!(check("assert_error.rmo", &["--tolerance", "-1e-6"]));
}

#[test]
fn missing_model_file() {
    insta::assert_snapshot!(check("no_such_file.rmo", &[]));
}

#[test]
fn result_folder_that_does_not_exist() {
    let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(dir())
        .args([
            "simulate",
            "assert_warning.rmo",
            "-o",
            "no/such/folder/result.csv",
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("run rmoc");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("cannot write `no/such/folder/result.csv`"),
        "{text}"
    );
}

#[test]
fn a_while_loop_that_never_ends_is_stopped_and_its_condition_named() {
    insta::assert_snapshot!(check("runaway_while.rmo", &[]));
}

#[test]
fn a_for_loop_with_step_zero_is_stopped() {
    insta::assert_snapshot!(check("for_zero_step.rmo", &[]));
}

#[test]
fn der_of_a_variable_no_equation_differentiates() {
    insta::assert_snapshot!(check("der_not_defined.rmo", &[]));
}

#[test]
fn an_assert_in_a_when_clause_shows_its_message() {
    insta::assert_snapshot!(check("assert_in_when.rmo", &[]));
}
