//! Diagnostics as plain data, and their rendering with ariadne.
//!
//! Every stage reports user errors as [`Diagnostic`] values; only the CLI (and
//! tests) render them. A diagnostic has a [`DiagnosticKind`] (what sort of
//! mistake, stable across rewordings), a primary span (file, byte range), a
//! message, optional secondary labels, and a hint. Rendering gives
//! `Error[kind]: message` (`error[kind]:` for one without a place),
//! `file:line:col`, the source snippet with the span underlined, and the
//! hint, in the manner of rustc and the Gleam compiler.
//!
//! The spans ([`Span`]) and the texts they index ([`SourceMap`]) live here
//! too: every stage from the parser on uses them, and only diagnostics read
//! the texts.

mod render;
mod source_map;
mod span;

pub use render::{one_line, render};
pub use source_map::{SourceFile, SourceMap};
pub use span::{Span, with_span_file};

/// Declares [`DiagnosticKind`] from one list, so that its variants, their
/// codes and [`DiagnosticKind::ALL`] cannot disagree.
macro_rules! diagnostic_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $code:literal,)*) => {
        /// What sort of mistake a diagnostic reports. The kind is stable
        /// across rewordings of the message: tests, scripts and editors
        /// match on it ([`DiagnosticKind::code`], shown as `error[code]`),
        /// and a new message gets the kind of the mistake it names, not a
        /// new kind of its own. `docs/language.md` lists them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DiagnosticKind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl DiagnosticKind {
            /// Every kind, in the order of the stages that report them.
            pub const ALL: &'static [DiagnosticKind] = &[$(DiagnosticKind::$variant,)*];

            /// The kind's stable name, as printed: `error[unresolved-name]`.
            pub fn code(self) -> &'static str {
                match self {
                    $(DiagnosticKind::$variant => $code,)*
                }
            }
        }
    };
}

diagnostic_kinds! {
    /// The text is not valid `.rmo` or Modelica: a parse error, a malformed literal, an unclosed class.
    Syntax => "syntax",
    /// Valid, but beyond one of rmoc's limits: nesting depth, array or range size, inheritance depth, sweep size.
    Limit => "limit",
    /// Valid Modelica that rmoc does not implement (expandable connectors, stream variables, external C functions, ...).
    Unsupported => "unsupported",
    /// A name that refers to nothing visible from where it is used: a class, component, function, field, attribute or enumeration literal.
    UnresolvedName => "unresolved-name",
    /// A name declared, modified or set twice.
    DuplicateName => "duplicate-name",
    /// A modification or redeclaration that cannot apply: a final or non-replaceable element, a record binding of the wrong form.
    Modifier => "modifier",
    /// A construct where the language forbids it: a class restriction (MLS 4.6), an equation or statement outside the section or clause it needs, a cycle of inheritance or of containment.
    Restriction => "restriction",
    /// A value of the wrong type: a Boolean where a number is expected, a Real given to an Integer, a String outside a message.
    Type => "type",
    /// Array sizes or dimensions that do not agree, or a subscript out of the declared range.
    Shape => "shape",
    /// A call with the wrong arguments: their number, names, sizes or kinds.
    Call => "call",
    /// A value needed while compiling cannot be computed: a parameter without a value, a circular binding, a failed call.
    Evaluation => "evaluation",
    /// A variable used against its variability: a parameter assigned at an event, a discrete variable that changes continuously, a time-varying value where a parameter expression is needed.
    Variability => "variability",
    /// A `connect` of incompatible connectors, a connection set with more than one source, an unconnected flow.
    Connection => "connection",
    /// The equations and unknowns do not match in number, or an equation has no unknown.
    Balance => "balance",
    /// The system is structurally singular, or index reduction and state selection fail.
    Singular => "singular",
    /// A table (inline or from a file) of the wrong shape or content.
    Table => "table",
    /// A file that cannot be read or written.
    Io => "io",
    /// A bad command-line value or run setting: the experiment annotation, a solver option, `-p`, `--model`, a sweep.
    Setting => "setting",
    /// The initial values cannot be found: the initial equations have no solution near the start values, or a state is left free.
    Initialization => "initialization",
    /// The integration cannot go on: the step size falls to nothing, Newton fails, a value becomes NaN, events do not settle.
    Solver => "solver",
    /// An `assert` of the model fails during the run.
    Assertion => "assertion",
    /// A value outside its declared `min`/`max`, or an index outside an array at run time.
    OutOfRange => "out-of-range",
    /// The model called `terminate` (a warning: the run ends there, its result complete).
    Terminated => "terminated",
    /// The run was interrupted (Ctrl-C); its partial result is marked incomplete.
    Interrupted => "interrupted",
    /// A bug in rmoc: an invariant that should hold did not. Please report it.
    Internal => "internal",
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: DiagnosticKind,
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
    pub fn error(kind: DiagnosticKind, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            kind,
            message: message.into(),
            span: Some(span),
            label: String::new(),
            secondary: Vec::new(),
            hint: None,
            notes: Vec::new(),
        }
    }
    pub fn error_nospan(kind: DiagnosticKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span: None,
            ..Diagnostic::error(kind, Span::default(), message)
        }
    }
    pub fn warning(kind: DiagnosticKind, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(kind, span, message)
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
