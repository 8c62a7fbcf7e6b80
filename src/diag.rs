//! Diagnostics as plain data, and their rendering with ariadne.
//!
//! Every stage reports user errors as [`Diagnostic`] values; only the CLI (and
//! tests) render them. A diagnostic names a primary span (file, byte range), a
//! message, optional secondary labels, and a hint. Rendering gives
//! `file:line:col`, the source snippet with the span underlined, and the hint,
//! in the manner of rustc and the Gleam compiler.

use crate::syntax::ast::Span;
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// Where the problem is; `None` for errors with no place in a source
    /// (an unreadable file, a bad command-line value).
    pub span: Option<Span>,
    /// Text under the primary span.
    pub label: String,
    pub secondary: Vec<(Span, String)>,
    pub hint: Option<String>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: Some(span),
            label: String::new(),
            secondary: Vec::new(),
            hint: None,
            notes: Vec::new(),
        }
    }
    pub fn error_nospan(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span: None,
            ..Diagnostic::error(Span::default(), message)
        }
    }
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(span, message)
        }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.secondary.push((span, label.into()));
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// A list of diagnostics from one run; errors and warnings together.
pub type Diagnostics = Vec<Diagnostic>;

pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(Diagnostic::is_error)
}

/// One source text known to the session: a user file or a library file.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as it should be shown to the user.
    pub path: String,
    pub text: Arc<str>,
    /// Byte offsets of line starts, for `line:col`.
    line_starts: Vec<usize>,
}

/// All source texts read in one run; `Span::file` indexes `files`.
#[derive(Debug, Default)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn add(&mut self, path: impl Into<String>, text: impl Into<Arc<str>>) -> u32 {
        let text: Arc<str> = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        self.files.push(SourceFile {
            path: path.into(),
            text,
            line_starts,
        });
        (self.files.len() - 1) as u32
    }

    pub fn file(&self, id: u32) -> &SourceFile {
        &self.files[id as usize]
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: u32, offset: u32) -> (usize, usize) {
        let f = self.file(file);
        let offset = (offset as usize).min(f.text.len());
        let line = f.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = f.line_starts[line];
        let col = f.text[start..offset].chars().count();
        (line + 1, col + 1)
    }

    /// `path:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        let (l, c) = self.line_col(span.file, span.start);
        format!("{}:{}:{}", self.file(span.file).path, l, c)
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        let f = self.file(span.file);
        let end = (span.end as usize).min(f.text.len());
        let start = (span.start as usize).min(end);
        &f.text[start..end]
    }
}

/// A diagnostic on one line, for a table cell or a log:
/// `path:line:col: message (hint: ...)`.
pub fn one_line(map: &SourceMap, d: &Diagnostic) -> String {
    let mut out = match d.span {
        Some(span) if (span.file as usize) < map.files.len() => {
            format!("{}: {}", map.location(span), d.message)
        }
        _ => d.message.clone(),
    };
    if let Some(h) = &d.hint {
        out.push_str(&format!(" (hint: {h})"));
    }
    out.replace(['\n', '\r'], " ")
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
    use ariadne::{Config, Label, Report, ReportKind};
    let kind = match d.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
    };
    let Some(span) = d.span else {
        let word = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut s = format!("{word}: {}\n", d.message);
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
    String::from_utf8_lossy(&buf).into_owned()
}

/// At most eight items of a list, joined by commas, then `and N more`
/// (the items are formatted only as far as they are shown).
pub fn short_list<I>(items: I) -> String
where
    I: IntoIterator<Item = String>,
    I::IntoIter: ExactSizeIterator,
{
    const SHOWN: usize = 8;
    let items = items.into_iter();
    let total = items.len();
    let shown: Vec<String> = items.take(SHOWN).collect();
    let more = if total > SHOWN {
        format!(" and {} more", total - SHOWN)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// The candidate closest to `name` by edit distance, if close enough to be a
/// likely typo.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    // Ties go to the candidate sharing the longest prefix (`sinn` -> `sin`, not `sign`).
    let prefix = |c: &str| {
        name.chars()
            .zip(c.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut best: Option<(usize, usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(&name.to_lowercase(), &c.to_lowercase());
        let limit = (name.len().max(c.len()) + 1) / 3;
        let p = prefix(c);
        if d <= limit && best.is_none_or(|(bd, bp, _)| d < bd || (d == bd && p > bp)) {
            best = Some((d, p, c));
        }
    }
    best.map(|(_, _, c)| c.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}
