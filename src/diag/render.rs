//! Diagnostics as text: one line for a table or a log, or a report with the
//! source snippet underlined (ariadne) for a terminal and for snapshots.

use super::{Diagnostic, Severity, SourceMap, Span};
use std::fmt::Write as _;

/// A diagnostic on one line, for a table cell or a log:
/// `path:line:col: error[kind]: message (hint: ...)`, as rustc's short
/// format (a sweep's failed points can be filtered by kind).
pub fn one_line(map: &SourceMap, d: &Diagnostic) -> String {
    let heading = heading(d);
    let mut out = match d.span {
        Some(span) if (span.file as usize) < map.files.len() => {
            format!("{}: {heading}: {}", map.location(span), d.message)
        }
        _ => format!("{heading}: {}", d.message),
    };
    if let Some(h) = &d.hint {
        out.push_str(&format!(" (hint: {h})"));
    }
    out.replace(['\n', '\r'], " ")
}

/// `error[kind]` or `warning[kind]`: how a diagnostic begins without a
/// report around it.
fn heading(d: &Diagnostic) -> String {
    let word = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!("{word}[{}]", d.kind.code())
}

/// Renders diagnostics for a terminal (`color`) or for logs and snapshots.
pub fn render(map: &SourceMap, diags: &[Diagnostic], color: bool) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&render_one(map, d, color));
    }
    out
}

fn render_one(map: &SourceMap, d: &Diagnostic, color: bool) -> String {
    use ariadne::{Color, Config, Label, Report, ReportKind};
    // `Error[unresolved-name]`, as rustc prints `error[E0425]`.
    let (word, tint) = match d.severity {
        Severity::Error => ("Error", Color::Red),
        Severity::Warning => ("Warning", Color::Yellow),
    };
    let title = format!("{word}[{}]", d.kind.code());
    let kind = ReportKind::Custom(&title, tint);
    let Some(span) = d.span else {
        let mut s = format!("{}: {}\n", heading(d), d.message);
        if let Some(h) = &d.hint {
            let _ = writeln!(s, "  help: {h}");
        }
        for n in &d.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        return s;
    };
    let path = |s: Span| map.file(s.file).path.clone();
    let range = |s: Span| {
        let len = map.file(s.file).text.len();
        let start = (s.start as usize).min(len);
        start..(s.end as usize).clamp(start, len)
    };
    let mut report = Report::build(kind, (path(span), range(span)))
        .with_config(
            Config::default()
                .with_color(color)
                .with_index_type(ariadne::IndexType::Byte),
        )
        .with_message(&d.message)
        .with_label(
            Label::new((path(span), range(span))).with_message(if d.label.is_empty() {
                "here"
            } else {
                d.label.as_str()
            }),
        );
    for (s, l) in &d.secondary {
        report = report.with_label(Label::new((path(*s), range(*s))).with_message(l));
    }
    if let Some(h) = &d.hint {
        report = report.with_help(h);
    }
    for n in &d.notes {
        report = report.with_note(n);
    }
    let mut buf = Vec::new();
    let cache = ariadne::sources(
        map.files
            .iter()
            .map(|f| (f.path.clone(), f.text.to_string())),
    );
    // Writing into a Vec cannot fail; a failure would only lose the snippet.
    let _ = report.finish().write(cache, &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    if color {
        text
    } else {
        // ariadne colours a custom heading (`Error[kind]`) whatever its
        // config says; without colour the text has no escape sequences.
        without_escapes(&text)
    }
}

/// `text` without its ANSI escape sequences (`ESC [ ... letter`).
fn without_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_removed_and_text_kept() {
        assert_eq!(
            without_escapes("\u{1b}[31mError[syntax]:\u{1b}[0m expected `;`"),
            "Error[syntax]: expected `;`"
        );
        assert_eq!(without_escapes("plain │ text"), "plain │ text");
    }
}
