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
    // One folder per call: tests that run one file with different
    // arguments run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out_dir =
        std::env::temp_dir().join(format!("rmoc-runtime-{}-{call}-{file}", std::process::id()));
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
        // Not the closing `wrote ...` line (its time varies).
        .arg("--quiet")
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

/// The generalized-alpha method checks values at its steps' last Newton
/// iterate (not at an extra evaluation of the end): the same variable and,
/// by bisection, the same time.
#[test]
fn sqrt_of_a_negative_number_is_caught_by_generalized_alpha_too() {
    let fixed = check(
        "sqrt_negative.rmo",
        &["--solver", "generalized-alpha", "--step", "0.03"],
    );
    let adaptive = check("sqrt_negative.rmo", &["--solver", "newmark"]);
    for out in [&fixed, &adaptive] {
        assert!(
            out.contains("`y` became NaN at t = 1") && out.contains("exit Some(1)"),
            "{out}"
        );
    }
}

/// An assert of an initial equation section is checked at the initial
/// point (it was once dropped without a word), and only there.
#[test]
fn an_assert_in_an_initial_equation_is_checked() {
    let fails = check("initial_assert.rmo", &[]);
    assert!(
        fails.contains("exit Some(1)")
            && fails.contains("assertion failed at t = 0: a must exceed 2")
            && fails.contains("initial_assert.rmo:5:3")
            && fails.contains("files left: []"),
        "{fails}"
    );
    let holds = check("initial_assert.rmo", &["-p", "a=3"]);
    assert!(holds.contains("exit Some(0)"), "{holds}");
}

/// A run that fails after its result began streaming leaves no file at
/// the target: not its own partial rows, and not the last run's result,
/// which would look like its own. CSV and MAT alike.
#[test]
fn a_failed_run_leaves_neither_its_rows_nor_the_last_runs_result() {
    for ext in ["csv", "mat"] {
        let out_dir =
            std::env::temp_dir().join(format!("rmoc-runtime-earlier-{}-{ext}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out_dir);
        std::fs::create_dir_all(&out_dir).expect("temp dir");
        let result = out_dir.join(format!("result.{ext}"));
        let run = |args: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_rmoc"))
                .current_dir(dir())
                .args(["simulate", "sqrt_negative.rmo", "--quiet", "-o"])
                .arg(&result)
                .args(args)
                .output()
                .expect("run rmoc")
        };
        // Until t = 0.5 the model is fine; to its stop time, y = sqrt(x)
        // becomes NaN at t = 1, after rows were streamed.
        let first = run(&["--stop-time", "0.5"]);
        assert_eq!(first.status.code(), Some(0), "{ext}: {first:?}");
        assert!(result.exists(), "{ext}: the first run's result");
        let failed = run(&[]);
        assert_eq!(failed.status.code(), Some(1), "{ext}: {failed:?}");
        assert!(
            String::from_utf8_lossy(&failed.stderr).contains("`y` became NaN at t = 1"),
            "{ext}: {failed:?}"
        );
        assert_eq!(leftovers(&out_dir), Vec::<String>::new(), "{ext}");
        let _ = std::fs::remove_dir_all(&out_dir);
    }
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

/// `-o` onto something that is not a plain file: the result goes through a
/// symbolic link into the file it names (the link stays a link), and
/// through a link to a device into the device (`/dev/null` takes it; a full
/// device fails with exit status 1). Before, the result was renamed over
/// the link, and `-o /dev/null` run as root replaced the device with a
/// plain file.
#[cfg(target_os = "linux")]
#[test]
fn a_result_goes_through_links_and_into_devices() {
    let dir = std::env::temp_dir().join(format!("rmoc-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let simulate = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")))
            .args([
                "simulate",
                "tests/models/contacts/ball.rmo",
                "--stop-time",
                "0.01",
                "-o",
            ])
            .arg(out)
            .output()
            .expect("run rmoc")
    };
    let is_link = |p: &Path| std::fs::symlink_metadata(p).expect("link").is_symlink();
    let (real, link) = (dir.join("real.csv"), dir.join("link.csv"));
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    for _ in 0..2 {
        // once with the file missing, once replacing it
        assert_eq!(simulate(&link).status.code(), Some(0));
        assert!(is_link(&link), "the link was replaced");
        let text = std::fs::read_to_string(&real).expect("result");
        assert!(text.starts_with("\"time\",\"y\""), "{text}");
    }
    let null = dir.join("null.csv");
    std::os::unix::fs::symlink("/dev/null", &null).expect("symlink");
    assert_eq!(simulate(&null).status.code(), Some(0));
    assert!(is_link(&null), "the link to /dev/null was replaced");
    let full = dir.join("full.csv");
    std::os::unix::fs::symlink("/dev/full", &full).expect("symlink");
    let out = simulate(&full);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(is_link(&full), "the link to /dev/full was replaced");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sample_period_below_the_time_resolution() {
    insta::assert_snapshot!(check("sample_below_resolution.rmo", &[]));
}

#[test]
fn an_output_interval_that_gives_too_many_rows() {
    insta::assert_snapshot!(check("sqrt_negative.rmo", &["--interval", "1e-300"]));
}

#[test]
fn a_moreau_step_that_needs_too_many_steps() {
    insta::assert_snapshot!(check("../models/contacts/ball.rmo", &["--step", "1e-300"]));
}

#[test]
fn a_restitution_above_one_is_reported_at_the_contact() {
    insta::assert_snapshot!(check("../models/contacts/ball.rmo", &["-p", "e=1.5"]));
}

#[test]
fn a_negative_friction_coefficient_is_reported_at_the_contact() {
    insta::assert_snapshot!(check("../models/contacts/block.rmo", &["-p", "mu=-1"]));
}

#[test]
fn a_contact_force_cannot_be_set_with_p() {
    insta::assert_snapshot!(check("../models/contacts/ball.rmo", &["-p", "N=2"]));
}

#[test]
fn parameter_override_that_is_not_finite() {
    insta::assert_snapshot!(check("../models/contacts/ball.rmo", &["-p", "e=nan"]));
}

#[test]
fn parameter_override_of_an_integer_with_a_fraction() {
    insta::assert_snapshot!(check(
        "../models/contacts/counted.rmo",
        &["-p", "boosted=2.5"]
    ));
}

#[test]
fn a_contact_force_with_the_wrong_sign_is_named() {
    insta::assert_snapshot!(check("contact_force_wrong_sign.rmo", &[]));
}

#[test]
fn a_friction_force_that_cannot_change_its_slip_is_named() {
    insta::assert_snapshot!(check("friction_slip_constant.rmo", &[]));
}

#[test]
fn a_contact_that_starts_penetrated_is_reported_on_the_time_stepper() {
    insta::assert_snapshot!(check("contact_starts_penetrated.rmo", &[]));
}

#[test]
fn a_contact_that_starts_penetrated_is_reported_event_driven() {
    insta::assert_snapshot!(check(
        "contact_starts_penetrated.rmo",
        &["--solver", "event-driven"]
    ));
}

#[test]
fn a_step_for_a_model_that_runs_on_the_bdf() {
    insta::assert_snapshot!(check("sqrt_negative.rmo", &["--step", "0.1"]));
}

#[test]
fn a_reinit_to_nan_is_reported_at_the_when_clause() {
    insta::assert_snapshot!(check("reinit_nan.rmo", &[]));
}

#[test]
fn an_assert_in_an_if_equation_holds_only_in_its_branch() {
    insta::assert_snapshot!(check("assert_in_if.rmo", &[]));
}
