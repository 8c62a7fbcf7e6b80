//! Keeps docs/architecture.md honest: every source file and every
//! environment variable the code reads is described there, and the layering
//! it states holds.

mod common;

use std::path::Path;

fn architecture() -> String {
    std::fs::read_to_string(common::project("docs/architecture.md")).expect("architecture.md")
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every file of `src/` is named in the code map: `mod.rs` by its folder
/// (`src/solve/`), the others by their file name (`bdf.rs`) or path.
#[test]
fn every_source_file_is_in_the_code_map() {
    let doc = architecture();
    let src = common::project("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut missing = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(common::project(""))
            .expect("in project")
            .to_string_lossy()
            .replace('\\', "/");
        let name = f.file_name().expect("name").to_string_lossy().to_string();
        let named = if name == "mod.rs" {
            let folder = rel.trim_end_matches("mod.rs");
            doc.contains(folder)
        } else {
            doc.contains(&format!("`{name}`")) || doc.contains(&rel)
        };
        if !named {
            missing.push(rel);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not describe: {missing:?}"
    );
    assert!(files.len() > 40, "only {} files found", files.len());
}

/// Every `RMOC_*` environment variable read in `src/` is in the table of
/// environment variables, and the table names none that the code does not
/// read.
#[test]
fn every_environment_variable_is_documented() {
    let doc = architecture();
    let src = common::project("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut read: Vec<String> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("source");
        for (at, _) in text.match_indices("\"RMOC_") {
            let name: String = text[at + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            read.push(name);
        }
    }
    read.sort();
    read.dedup();
    assert!(read.len() >= 5, "{read:?}");
    for name in &read {
        assert!(
            doc.contains(&format!("| `{name}")),
            "{name} is read in src/ but not in the environment table of docs/architecture.md"
        );
    }
    for line in doc.lines().filter(|l| l.starts_with("| `RMOC_")) {
        let name: String = line[3..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        assert!(
            read.contains(&name),
            "docs/architecture.md documents {name}, which src/ does not read"
        );
    }
}

/// The hybrid loop is written once (issue 15): in `src/solve/`, only
/// `hybrid.rs` writes result rows, walks the output grid, scans the sample
/// instants and runs the event iteration; `mod.rs` defines them (and
/// writes the start row and runs `terminal()`), `init.rs` runs the initial
/// event iteration. An integrator that called one of them would have
/// grown a loop of its own.
#[test]
fn only_the_hybrid_loop_drives_events_and_outputs() {
    let services = [
        ".record(",
        "output_grid(",
        "sample_due(",
        "next_time_event(",
        "sample_event(",
        "event_iteration(",
        "conditions_rise(",
    ];
    let mut files = Vec::new();
    rust_files(&common::project("src/solve"), &mut files);
    let mut offenders = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if matches!(name, "hybrid.rs" | "mod.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for s in services {
                let allowed = name == "init.rs" && s == "event_iteration(";
                if code.contains(s) && !allowed {
                    offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "only src/solve/hybrid.rs may drive outputs and events:\n{}",
        offenders.join("\n")
    );
    assert!(files.len() >= 10, "src/solve/ not found");
}

/// The table of diagnostic kinds in docs/language.md lists every
/// `DiagnosticKind` by its code, and no code that does not exist; codes are
/// distinct and kebab-case.
#[test]
fn every_diagnostic_kind_is_documented() {
    use rmoc::diag::DiagnosticKind;
    let doc = std::fs::read_to_string(common::project("docs/language.md")).expect("language.md");
    let section = doc
        .split("### Diagnostic kinds")
        .nth(1)
        .expect("docs/language.md has a section `Diagnostic kinds`");
    let section = section.split("\n#").next().unwrap_or(section);
    let documented: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let codes: Vec<&str> = DiagnosticKind::ALL.iter().map(|k| k.code()).collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        codes.len(),
        "two kinds share a code: {codes:?}"
    );
    for c in &codes {
        assert!(
            !c.is_empty() && c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'),
            "`{c}` is not kebab-case"
        );
    }
    assert_eq!(
        documented, codes,
        "docs/language.md's table of diagnostic kinds differs from DiagnosticKind (same order)"
    );
}

/// No two types of `src/` share a name (structs, enums, traits and type
/// aliases, private ones included): a name says what a thing is, so two
/// things with one name are one too many (`flat::FlatEquation` and
/// `structure::ReducedEquation`, not two `Equation`s).
#[test]
fn no_two_types_share_a_name() {
    let mut files = Vec::new();
    rust_files(&common::project("src"), &mut files);
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("source");
        for line in text.lines() {
            let words: Vec<&str> = line
                .trim_start()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            // `pub`, `pub(crate)`, ... then the keyword, then the name.
            let rest = match words.first() {
                Some(&"pub") => match words.get(1) {
                    Some(&("crate" | "super" | "self" | "in")) => &words[2..],
                    _ => &words[1..],
                },
                _ => &words[..],
            };
            if let [kw @ ("struct" | "enum" | "trait" | "type"), name, ..] = rest
                && name.starts_with(|c: char| c.is_ascii_uppercase())
                && (line.trim_start().starts_with(kw) || line.trim_start().starts_with("pub"))
            {
                let rel = f
                    .strip_prefix(common::project(""))
                    .expect("in project")
                    .display()
                    .to_string();
                seen.entry(name.to_string()).or_default().push(rel);
            }
        }
    }
    let shared: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(seen.len() > 100, "only {} types found", seen.len());
    assert!(
        shared.is_empty(),
        "types sharing a name:\n{}",
        shared.join("\n")
    );
}

/// The layering docs/architecture.md states holds: every `crate::X`
/// reference from a folder (or file) of `src/` to another is in the
/// table of what each module may use (`| module | may use |`), and the
/// table names every module of `src/`.
#[test]
fn the_modules_use_only_what_the_layering_allows() {
    let doc = architecture();
    let table = doc
        .split("| module | may use |")
        .nth(1)
        .expect("docs/architecture.md has the table `| module | may use |`");
    let mut allowed: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for row in table.lines().skip(2) {
        let Some(row) = row.strip_prefix("| `") else {
            break;
        };
        let mut cells = row.split('|');
        let module = cells.next().unwrap_or("").trim().trim_end_matches('`');
        let uses = cells
            .next()
            .unwrap_or("")
            .split(',')
            .map(|u| u.trim().trim_matches('`').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        allowed.insert(module.to_string(), uses);
    }
    let src = common::project("src");
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .expect("name")
            .to_string_lossy()
            .to_string();
        if !matches!(name.as_str(), "lib" | "main") {
            modules.push((name, path));
        }
    }
    let names: Vec<String> = modules.iter().map(|(n, _)| n.clone()).collect();
    let mut problems = Vec::new();
    for (module, path) in &modules {
        let Some(may) = allowed.get(module) else {
            problems.push(format!("`{module}` has no row in the table"));
            continue;
        };
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(path, &mut files);
        } else {
            files.push(path.clone());
        }
        for f in &files {
            let text = std::fs::read_to_string(f).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for used in code.split("crate::").skip(1) {
                    let target: String = used
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if target != *module && names.contains(&target) && !may.contains(&target) {
                        problems.push(format!(
                            "{}:{}: `{module}` uses `{target}`",
                            f.display(),
                            i + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(modules.len() >= 10, "only {} modules found", modules.len());
    assert!(
        problems.is_empty(),
        "references the layering table does not allow:\n{}",
        problems.join("\n")
    );
}
