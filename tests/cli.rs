//! The command line as a user meets it: `--help` (every option described),
//! the line a successful `simulate` prints, `-p` suggestions, `--print` of
//! whole numbers and Booleans, `--outputs`, and the documentation's command list and
//! solvers kept equal to the binary's.

mod common;

use common::{exit_and_text, model_file, rmoc_cli, scratch_dir};

fn help(sub: &[&str]) -> String {
    let mut args = sub.to_vec();
    args.push("--help");
    let (code, text) = exit_and_text(&rmoc_cli(&args));
    assert_eq!(code, Some(0), "{text}");
    text
}

/// The subcommands `rmoc --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let text = help(&[]);
    let list = text
        .split("Commands:\n")
        .nth(1)
        .and_then(|t| t.split("\n\n").next())
        .expect("a command list");
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

#[test]
fn the_help_lists_the_commands() {
    insta::assert_snapshot!(help(&[]));
    insta::assert_snapshot!(help(&["simulate"]));
}

#[test]
fn every_option_of_every_command_has_a_description() {
    for sub in subcommands() {
        let text = help(&[&sub]);
        for line in text.lines() {
            let item = line.trim_start();
            // An option or argument line: its name, then (after two
            // spaces) what it does.
            if (item.starts_with('-') || item.starts_with('<')) && line.starts_with(' ') {
                let described = item
                    .split_once("  ")
                    .is_some_and(|(_, rest)| !rest.trim().is_empty());
                assert!(described, "`rmoc {sub}`: `{item}` has no description");
            }
        }
    }
}

#[test]
fn a_successful_run_says_what_it_wrote_unless_quiet() {
    let model = model_file("oscillator", include_str!("models/oscillator.rmo"));
    let dir = scratch_dir("cli");
    let out = dir.join("osc.csv");
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    let shown = text.replace(&dir.display().to_string(), "<dir>");
    // The time varies: keep its form, not its digits.
    let (head, tail) = shown.rsplit_once(", ").expect("a time");
    assert!(tail.trim_end().ends_with(" s)"), "{shown}");
    let seconds = tail.trim_end().trim_end_matches(" s)");
    assert!(seconds.parse::<f64>().is_ok(), "{shown}");
    insta::assert_snapshot!(format!("{head}, <seconds> s)"));
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
        "--quiet",
    ]));
    assert_eq!((code, text.as_str()), (Some(0), ""));
    // Thousands are grouped: 20 001 rows.
    let (_, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
        "--interval",
        "1e-4",
    ]));
    assert!(text.contains("(20 001 rows x 5 columns, "), "{text}");
}

#[test]
fn an_unknown_parameter_suggests_the_nearest() {
    let model = model_file("oscillator", include_str!("models/oscillator.rmo"));
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-p",
        "forcd=true",
        "-o",
        "/dev/null",
    ]));
    assert_eq!(code, Some(1));
    insta::assert_snapshot!(text);
}

#[test]
fn print_shows_integers_and_booleans_as_such() {
    let model = model_file("oscillator", include_str!("models/oscillator.rmo"));
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "simulate",
        model.to_str().expect("path"),
        "-p",
        "forced=true",
        "-p",
        "n=3",
        "--print",
        "n",
        "--print",
        "forced",
        "--print",
        "k",
        "-o",
        "/dev/null",
        "-q",
    ]));
    assert_eq!(code, Some(0), "{text}");
    insta::assert_snapshot!(text);
}

/// The first word after `rmoc` on each line of the first code block
/// under `heading` in a Markdown file.
fn documented_commands(file: &str, heading: &str) -> Vec<String> {
    let text = std::fs::read_to_string(common::project(file)).expect("doc");
    let section = text.split(heading).nth(1).expect("the heading");
    let block = section.split("```").nth(1).expect("a code block");
    let mut out: Vec<String> = block
        .lines()
        .filter_map(|l| l.strip_prefix("rmoc "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    out.dedup();
    out
}

#[test]
fn the_documented_commands_and_solvers_are_the_binarys() {
    let mut commands = subcommands();
    commands.sort();
    for (file, heading) in [
        ("docs/language.md", "## Command line"),
        ("README.md", "## Commands"),
    ] {
        let mut documented = documented_commands(file, heading);
        documented.sort();
        assert_eq!(documented, commands, "{file}, {heading}");
    }
    // Every solver is in `--help` and in the language reference's table.
    let simulate = help(&["simulate"]);
    let language = std::fs::read_to_string(common::project("docs/language.md")).expect("doc");
    let row = language
        .lines()
        .find(|l| l.starts_with("| `--solver "))
        .expect("the --solver row");
    for solver in rmoc::solve::settings::SOLVERS {
        assert!(simulate.contains(solver), "`--help` does not name {solver}");
        assert!(
            row.contains(solver),
            "docs/language.md's --solver row does not name {solver}"
        );
    }
    // The "Not supported" table names no command or solver that exists.
    let unsupported = language
        .split("## Not supported")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("the table");
    for c in &commands {
        assert!(
            !unsupported.contains(&format!("`rmoc {c}`")),
            "`rmoc {c}` is listed as not supported"
        );
    }
    assert!(!unsupported.contains("solvers other than BDF"));
}

/// `--outputs` writes the chosen columns alone, with the values of the
/// same columns in a run that writes every column; a pattern that matches
/// no column stops the run before it writes anything, naming the nearest.
#[test]
fn outputs_write_the_chosen_columns_alone() {
    let model = model_file("oscillator", include_str!("models/oscillator.rmo"));
    let model = model.to_str().expect("path");
    let dir = scratch_dir("cli-outputs");
    let all = dir.join("all.csv");
    let some = dir.join("some.csv");
    let run = |out: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["simulate", model, "-q", "-o", out.to_str().expect("path")];
        args.extend_from_slice(extra);
        exit_and_text(&rmoc_cli(&args))
    };
    let (code, text) = run(&all, &[]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run(&some, &["--outputs", "v", "der(?)"]);
    assert_eq!(code, Some(0), "{text}");
    let table = |p: &std::path::Path| -> Vec<Vec<String>> {
        std::fs::read_to_string(p)
            .expect("result")
            .lines()
            .map(|l| {
                l.split(',')
                    .map(|c| c.trim_matches('"').to_string())
                    .collect()
            })
            .collect()
    };
    let (all, some) = (table(&all), table(&some));
    assert_eq!(some[0], ["time", "v", "der(x)", "der(v)"]);
    assert!(all[0].len() > some[0].len(), "{:?}", all[0]);
    assert_eq!(all.len(), some.len());
    for (a, s) in all.iter().zip(&some).skip(1) {
        for (k, name) in some[0].iter().enumerate() {
            let j = all[0].iter().position(|n| n == name).expect("column");
            assert_eq!(a[j], s[k], "{name}");
        }
    }
    let none = dir.join("none.csv");
    let (code, text) = run(&none, &["--outputs", "vv"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("`--outputs vv` matches no result column"),
        "{text}"
    );
    assert!(text.contains("did you mean `v`?"), "{text}");
    assert!(!none.exists(), "a result file after the refusal");
}

/// `--outputs` with an array's name keeps the array's elements (and only
/// them: not a longer name that starts alike).
#[test]
fn outputs_take_an_arrays_elements_by_its_name() {
    let model = model_file(
        "array_outputs",
        "model A\n  Real T[2, 2](each start = 1, each fixed = true);\n  Real T2 = 2*T[1, 1];\nequation\n  der(T) = -T;\n  annotation(experiment(StopTime = 0.1));\nend A;\n",
    );
    let out = scratch_dir("cli-array-outputs").join("a.csv");
    let args = [
        "simulate",
        model.to_str().expect("path"),
        "-q",
        "-o",
        out.to_str().expect("path"),
        "--outputs",
        "T",
    ];
    let (code, text) = exit_and_text(&rmoc_cli(&args));
    assert_eq!(code, Some(0), "{text}");
    let result = std::fs::read_to_string(&out).expect("result");
    let header = result.lines().next().expect("header");
    assert_eq!(
        header,
        "\"time\",\"T[1,1]\",\"T[1,2]\",\"T[2,1]\",\"T[2,2]\""
    );
}
