//! A failed parse as a diagnostic a Modelica user can act on: the furthest
//! position pest reached and the rules it expected there, read together
//! with the text (misspelled keywords, unclosed brackets, strings, comments
//! and classes).

use super::Rule;
use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};

fn rule_name(r: Rule) -> Option<&'static str> {
    Some(match r {
        Rule::SEMI => "`;`",
        Rule::K_END | Rule::end_clause => "`end`",
        Rule::ident => "a name",
        Rule::expression | Rule::simple_expression | Rule::primary | Rule::op_expression => {
            "an expression"
        }
        Rule::equation | Rule::simple_equation => "an equation",
        Rule::statement => "a statement",
        Rule::element | Rule::component_clause => "a declaration",
        Rule::K_THEN => "`then`",
        Rule::K_LOOP => "`loop`",
        Rule::K_IN => "`in`",
        Rule::K_IF => "`if`",
        Rule::K_FOR => "`for`",
        Rule::K_WHEN => "`when`",
        Rule::K_WHILE => "`while`",
        Rule::K_ELSE => "`else`",
        Rule::K_EQUATION => "`equation`",
        Rule::K_ALGORITHM => "`algorithm`",
        Rule::class_definition | Rule::top_class | Rule::class_kind => "a class definition",
        Rule::class_modification | Rule::function_call_args => "`(`",
        Rule::modification => "a modification",
        Rule::array_subscripts => "`[`",
        Rule::op_le | Rule::op_ge | Rule::op_eq | Rule::op_ne | Rule::op_lt | Rule::op_gt => {
            "a relation"
        }
        Rule::op_or
        | Rule::op_and
        | Rule::op_eadd
        | Rule::op_esub
        | Rule::op_add
        | Rule::op_sub
        | Rule::op_emul
        | Rule::op_ediv
        | Rule::op_mul
        | Rule::op_div
        | Rule::op_epow
        | Rule::op_pow => "an operator",
        Rule::string | Rule::string_comment => "a description string",
        Rule::annotation | Rule::K_ANNOTATION => "`annotation`",
        Rule::EOI => "end of file",
        _ => return None,
    })
}

pub(super) fn syntax_error(text: &str, file: u32, e: pest::error::Error<Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let (positives, negatives) = match &e.variant {
        ErrorVariant::ParsingError {
            positives,
            negatives,
        } => (positives.clone(), negatives.clone()),
        ErrorVariant::CustomError { .. } => (vec![], vec![]),
    };
    let mut expected: Vec<&str> = positives.iter().filter_map(|r| rule_name(*r)).collect();
    expected.dedup();
    let mut seen = std::collections::HashSet::new();
    expected.retain(|x| seen.insert(*x));
    let found = describe_token_at(text, pos);
    let rest = &text[pos.min(text.len())..];
    let point = |a: usize, b: usize| Span::new(file, a, b);

    // Lexical problems first: they explain the failure better than any rule.
    if rest.starts_with('"') && !string_closes(rest) {
        return Diagnostic::error(
            DiagnosticKind::Syntax,
            point(pos, pos + 1),
            "unterminated string: this `\"` has no closing quote",
        )
        .with_label("the string starts here")
        .with_hint("close the string with `\"` on the same statement");
    }
    if let Some(open) = unclosed_block_comment(text) {
        return Diagnostic::error(
            DiagnosticKind::Syntax,
            point(open, open + 2),
            "unterminated comment: this `/*` has no closing `*/`",
        )
        .with_label("the comment starts here");
    }
    if (rest.starts_with('e') || rest.starts_with('E'))
        && text[..pos].ends_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        let start = text[..pos]
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map(|i| i + 1)
            .unwrap_or(0);
        let end = pos + token_len(text, pos);
        return Diagnostic::error(
            DiagnosticKind::Syntax,
            point(start, end),
            format!("malformed number `{}`", &text[start..end]),
        )
        .with_label("an exponent needs digits")
        .with_hint("write e.g. `1.5e3`");
    }
    if rest.starts_with('=') && text[..pos].trim_end().ends_with(':') {
        let colon = text[..pos].trim_end().len() - 1;
        return Diagnostic::error(
            DiagnosticKind::Syntax,
            point(colon, pos + 1),
            "`:=` is an assignment, which belongs in an algorithm section",
        )
        .with_label("in an equation section")
        .with_hint("equations are written with `=`; statements in `algorithm` sections with `:=`");
    }

    // A missing `;`, `then` or `loop` is reported at the end of the line that
    // lacks it, not at the start of the next token (usually on the next line).
    let missing = if positives.contains(&Rule::SEMI) {
        Some("`;`")
    } else if positives.contains(&Rule::K_THEN) {
        Some("`then`")
    } else if positives.contains(&Rule::K_LOOP) {
        Some("`loop`")
    } else {
        None
    };
    if let Some(word) = missing {
        let before = text[..pos].trim_end();
        let end = before.len();
        let start = before
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
            .unwrap_or(end);
        let mut d = Diagnostic::error(
            DiagnosticKind::Syntax,
            point(start, end),
            format!("expected {word}"),
        )
        .with_label(format!("{word} missing after this"));
        d = match word {
            "`;`" => d.with_hint(format!(
                "every declaration, equation and statement ends with `;` (found {found} next)"
            )),
            "`then`" => d.with_hint("write `if condition then` (and `when condition then`)"),
            _ => d.with_hint("write `for i in 1:n loop` (and `while condition loop`)"),
        };
        if let Some(h) = unbalanced_paren(text, pos) {
            d = d.with_note(h);
        }
        if let Some(k) = misspelled_keyword(text, pos) {
            d = d.with_note(k);
        }
        return d;
    }
    if pos >= text.trim_end().len() {
        return unterminated_class(text, file).unwrap_or_else(|| {
            Diagnostic::error(
                DiagnosticKind::Syntax,
                point(text.len(), text.len()),
                "unexpected end of file",
            )
            .with_label("the file ends here")
        });
    }
    // `end X;` where an `end for;` (if, when, while) was expected.
    let before_words: Vec<&str> = text[..pos].split_whitespace().rev().take(1).collect();
    if before_words.first() == Some(&"end") {
        for (rule, kw) in [
            (Rule::K_FOR, "for"),
            (Rule::K_IF, "if"),
            (Rule::K_WHEN, "when"),
            (Rule::K_WHILE, "while"),
        ] {
            if positives.contains(&rule)
                && let Some(open) = last_unclosed(text, pos, kw)
            {
                let end_kw = text[..pos].trim_end().len() - 3;
                return Diagnostic::error(
                    DiagnosticKind::Syntax,
                    point(end_kw, end_kw + 3),
                    format!("`end {kw};` is missing: the `{kw}` opened earlier is not closed"),
                )
                .with_label(
                    "this `end` closes the enclosing class, but the loop or branch is still open",
                )
                .with_secondary(point(open, open + kw.len()), format!("`{kw}` opened here"))
                .with_hint(format!("add `end {kw};` after the last line of its body"));
            }
        }
    }
    // A class keyword where a statement or `end` was expected: the class
    // before it is not closed.
    if is_class_keyword(&found)
        && let Some(open) = crate::syntax::scan::unclosed_class(&text[..pos])
    {
        return Diagnostic::error(
            DiagnosticKind::Syntax,
            point(open.start, open.end),
            format!("`{}` is not closed before the next class begins", open.name),
        )
        .with_label("opened here")
        .with_secondary(point(pos, pos + token_len(text, pos)), "next class")
        .with_hint(format!("add `end {};` before this line", open.name));
    }
    let _ = negatives;
    let end = (pos + token_len(text, pos)).min(text.len());
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}, found {found}", join_or(&expected))
    };
    let mut d =
        Diagnostic::error(DiagnosticKind::Syntax, point(pos, end), message).with_label("here");
    if found == "`end`" || found.starts_with("`end") {
        d = d.with_hint(
            "check that every `if`, `for`, `when` and class is closed with its own `end ...;`",
        );
    }
    if let Some(h) = unbalanced_paren(text, pos) {
        d = d.with_hint(h);
    }
    let word = found.trim_matches('`');
    if expected.iter().any(|e| e.contains("a name")) && is_reserved(word) {
        d = d.with_hint(format!(
            "`{word}` is a reserved word of the language and cannot name a component or class; choose another name"
        ));
    } else if let Some(k) = misspelled_keyword(text, pos) {
        d = d.with_hint(k);
    }
    d
}

/// Whether `word` is one of the grammar's reserved words (its `keyword`
/// rule, which `ident` excludes).
fn is_reserved(word: &str) -> bool {
    use pest::Parser;
    super::RmoParser::parse(Rule::keyword, word)
        .is_ok_and(|pairs| pairs.as_str().len() == word.len())
}

/// Keywords a misspelling is compared against.
pub const KEYWORDS: &[&str] = &[
    "algorithm",
    "annotation",
    "connect",
    "connector",
    "constant",
    "constrainedby",
    "discrete",
    "each",
    "else",
    "elseif",
    "elsewhen",
    "encapsulated",
    "equation",
    "extends",
    "final",
    "flow",
    "function",
    "import",
    "initial",
    "input",
    "loop",
    "model",
    "output",
    "package",
    "parameter",
    "partial",
    "protected",
    "public",
    "record",
    "redeclare",
    "replaceable",
    "return",
    "then",
    "when",
    "while",
    "within",
    "block",
];

pub(super) fn is_class_keyword(found: &str) -> bool {
    [
        "`model`",
        "`block`",
        "`connector`",
        "`record`",
        "`package`",
        "`function`",
        "`type`",
        "`class`",
    ]
    .contains(&found)
}

/// A word on the lines around `pos` that looks like a misspelled keyword.
pub(super) fn misspelled_keyword(text: &str, pos: usize) -> Option<String> {
    let line_start = text[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let prev_start = text[..line_start.saturating_sub(1)]
        .rfind('\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let line_end = text[pos..]
        .find('\n')
        .map(|i| pos + i)
        .unwrap_or(text.len());
    for word in text[prev_start..line_end].split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.len() < 4 || KEYWORDS.contains(&word) {
            continue;
        }
        if let Some(k) = crate::diag::closest(word, KEYWORDS.iter().copied())
            && k != word
        {
            return Some(format!("`{word}` is not a keyword; did you mean `{k}`?"));
        }
    }
    None
}

/// A `(` opened on the current statement and not closed before `pos`.
pub(super) fn unbalanced_paren(text: &str, pos: usize) -> Option<String> {
    let stmt_start = text[..pos].rfind(';').map(|i| i + 1).unwrap_or(0);
    let mut depth = 0i32;
    for c in text[stmt_start..pos].chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
    }
    (depth > 0).then(|| format!("{depth} `(` not closed: a `)` is missing"))
}

/// Whether a string starting at the beginning of `s` has a closing quote.
pub(super) fn string_closes(s: &str) -> bool {
    let mut it = s.chars().skip(1);
    while let Some(c) = it.next() {
        match c {
            '\\' => {
                it.next();
            }
            '"' => return true,
            _ => {}
        }
    }
    false
}

/// The byte offset of a `/*` that is never closed (outside strings and line comments).
pub(super) fn unclosed_block_comment(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match text[i + 2..].find("*/") {
                Some(k) => i += k + 3,
                None => return Some(i),
            }
        }
        i += 1;
    }
    None
}

/// The last `kw` (for, if, when, while) before `pos` not matched by `end kw`.
pub(super) fn last_unclosed(text: &str, pos: usize, kw: &str) -> Option<usize> {
    let words: Vec<(usize, &str)> = text[..pos]
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .scan(0usize, |off, w| {
            let start = *off;
            *off += w.len() + 1;
            Some((start, w))
        })
        .filter(|(_, w)| !w.is_empty())
        .collect();
    let mut open: Vec<usize> = Vec::new();
    let first_on_line = |at: usize| {
        let ls = text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
        text[ls..at].trim().is_empty()
    };
    for (k, &(at, w)) in words.iter().enumerate() {
        // An `if` inside an expression is not a block; blocks start lines.
        if w == kw && (kw != "if" || first_on_line(at) || (k > 0 && words[k - 1].1 == "end")) {
            let after_end = k > 0 && words[k - 1].1 == "end";
            if after_end {
                open.pop();
            } else {
                open.push(at);
            }
        }
    }
    open.pop()
}

pub(super) fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => a.to_string(),
        _ => {
            let (last, rest) = items.split_last().expect("non-empty");
            format!("{} or {}", rest.join(", "), last)
        }
    }
}

pub(super) fn token_len(text: &str, pos: usize) -> usize {
    let rest = &text[pos..];
    let n = rest
        .char_indices()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    if n > 0 {
        n
    } else {
        rest.chars().next().map(|c| c.len_utf8()).unwrap_or(0)
    }
}

pub(super) fn describe_token_at(text: &str, pos: usize) -> String {
    if pos >= text.len() {
        return "end of file".into();
    }
    let n = token_len(text, pos);
    format!("`{}`", &text[pos..pos + n])
}

/// At end of file: finds the class that was opened and never closed, using the
/// token scanner (a full parse has just failed, so the tree is unavailable).
pub(super) fn unterminated_class(text: &str, file: u32) -> Option<Diagnostic> {
    let open = crate::syntax::scan::unclosed_class(text)?;
    Some(
        Diagnostic::error(
            DiagnosticKind::Syntax,
            Span::new(file, open.start, open.end),
            format!(
                "`{}` is not closed: the file ends before `end {};`",
                open.name, open.name
            ),
        )
        .with_label("opened here")
        .with_hint(format!("add `end {};` after its last equation", open.name)),
    )
}
