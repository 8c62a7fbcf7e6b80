//! The bad-input corpus: every file under `tests/bad/` must be rejected by
//! `rmoc check` with exit status 1, a diagnostic at the line the manifest
//! (`tests/bad/expected.json`) names and the words it lists, and no panic.
//! The rendered diagnostics of the whole corpus are pinned in one snapshot.

mod common;

use std::path::PathBuf;
use std::process::Command;

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    line: Option<u32>,
    contains: Vec<String>,
    /// The section of the Modelica Language Specification 3.6 whose rule
    /// the file breaks; the diagnostic must name it (`MLS 7.1.3`).
    section: Option<String>,
    note: String,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bad")
}

fn run(file: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .current_dir(dir())
        .args(["check", file])
        .output()
        .expect("run rmoc");
    common::exit_and_text(&out)
}

#[test]
fn every_bad_file_is_rejected_with_the_expected_diagnostic() {
    let cases: Vec<Case> = serde_json::from_str(
        &std::fs::read_to_string(dir().join("expected.json")).expect("manifest"),
    )
    .expect("valid manifest");
    assert!(cases.len() >= 30, "the corpus must hold at least 30 cases");
    let mut failures = Vec::new();
    let mut snapshot = String::new();
    for c in &cases {
        let (code, text) = run(&c.file);
        snapshot.push_str(&format!("=== {} ({})\n{}\n", c.file, c.note, text));
        let mut why = Vec::new();
        if text.contains("panicked") || text.contains("RUST_BACKTRACE") {
            why.push("panicked".to_string());
        }
        if code != Some(1) {
            why.push(format!("exit {code:?}, expected 1"));
        }
        if let Some(l) = c.line
            && !text.contains(&format!(":{l}:"))
        {
            why.push(format!("no diagnostic at line {l}"));
        }
        if let Some(sec) = &c.section
            && !text.contains(&format!("MLS {sec}"))
        {
            why.push(format!("does not name MLS {sec}"));
        }
        for w in &c.contains {
            if !text.contains(w.as_str()) {
                why.push(format!("lacks {w:?}"));
            }
        }
        if !why.is_empty() {
            failures.push(format!("{}: {}\n{text}", c.file, why.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    insta::assert_snapshot!(snapshot);
}

#[test]
fn every_file_in_the_corpus_is_in_the_manifest() {
    let cases: Vec<Case> = serde_json::from_str(
        &std::fs::read_to_string(dir().join("expected.json")).expect("manifest"),
    )
    .expect("valid manifest");
    for e in std::fs::read_dir(dir()).expect("dir").flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.ends_with(".rmo") {
            assert!(
                cases.iter().any(|c| c.file == name),
                "{name} has no entry in expected.json"
            );
        }
    }
}
