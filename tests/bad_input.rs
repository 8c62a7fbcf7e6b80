//! The bad-input corpus: every file under `tests/bad/` must be rejected by
//! `rmoc check` with exit status 1, a diagnostic of the kind and at the line
//! the manifest (`tests/bad/expected.json`) names, with the words it lists,
//! and no panic. The kind (`Error[shape]`) is matched as well as the words:
//! it stays the same when a message is reworded.
//! The rendered diagnostics of the whole corpus are pinned in one snapshot.

mod common;

use std::path::PathBuf;
use std::process::Command;

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    line: Option<u32>,
    /// The code of the diagnostic's `DiagnosticKind` (`unresolved-name`).
    kind: String,
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

/// Each diagnostic's kind and line in rendered text: `Error[kind]: ...`
/// followed by its location `[ file:line:col ]` (none without a place).
fn headings(text: &str) -> Vec<(String, Option<u32>)> {
    let mut out: Vec<(String, Option<u32>)> = Vec::new();
    for l in text.lines() {
        let heading = ["Error[", "error[", "Warning[", "warning["]
            .iter()
            .find_map(|p| l.strip_prefix(p));
        if let Some(rest) = heading {
            out.push((rest.split(']').next().unwrap_or("").to_string(), None));
        } else if let (Some(at), Some(last)) = (l.split("─[ ").nth(1), out.last_mut())
            && last.1.is_none()
        {
            last.1 = at.split(':').nth(1).and_then(|n| n.trim().parse().ok());
        }
    }
    out
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
        if !rmoc::diag::DiagnosticKind::ALL
            .iter()
            .any(|k| k.code() == c.kind)
        {
            why.push(format!(
                "the manifest's kind `{}` is not a DiagnosticKind",
                c.kind
            ));
        }
        if !headings(&text)
            .iter()
            .any(|(kind, line)| *kind == c.kind && (c.line.is_none() || *line == c.line))
        {
            why.push(match c.line {
                Some(l) => format!("no diagnostic of kind `{}` at line {l}", c.kind),
                None => format!("no diagnostic of kind `{}`", c.kind),
            });
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

/// Issue 21's rule groups, one section of the Modelica specification each
/// (or one of the group's sections): every group has a case in the corpus
/// whose diagnostic names it.
#[test]
fn every_rule_group_of_the_specification_has_a_case() {
    let cases: Vec<Case> = serde_json::from_str(
        &std::fs::read_to_string(dir().join("expected.json")).expect("manifest"),
    )
    .expect("valid manifest");
    let groups: &[(&str, &[&str])] = &[
        ("kind of a base class", &["7.1.3"]),
        ("connect restrictions", &["9.1", "9.2", "9.3"]),
        ("connections under a run-time if", &["8.3.4"]),
        ("variability", &["3.8", "4.4.4"]),
        ("protected elements", &["4.1", "7.1.2"]),
        ("restricted classes", &["4.6"]),
        (
            "prefixes on structured components, flow on Real",
            &["4.4.2.2"],
        ),
        ("reserved names", &["4.8"]),
        ("a component named like its type", &["4.2"]),
        ("redeclare of final elements", &["7.3.3"]),
        ("replaceable base classes", &["7.1.4"]),
        ("partial classes", &["4.4.2", "12.2", "5.3.2"]),
        ("static typing of operators", &["3.4"]),
        ("der and sample arguments", &["3.7.4", "3.7.5"]),
        ("lexical lookup", &["5.3"]),
        ("time in connectors, records, functions", &["3.6.7"]),
        ("the shape of a function", &["12.2"]),
        ("short class definitions", &["4.5.2"]),
    ];
    let missing: Vec<&str> = groups
        .iter()
        .filter(|(_, secs)| {
            !cases
                .iter()
                .any(|c| c.section.as_deref().is_some_and(|s| secs.contains(&s)))
        })
        .map(|(g, _)| *g)
        .collect();
    assert!(missing.is_empty(), "no case for: {missing:?}");
}
