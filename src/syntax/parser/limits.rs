//! Limits checked on the text before parsing, so that recursion stays
//! bounded in the parser and every later pass.

use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind};

/// Brackets nested deeper than this are refused before parsing: the parser
/// and every later pass recurse once (or more) per level, and no model
/// needs more than a few dozen.
pub const MAX_NESTING: usize = 1000;

/// Operators in one statement beyond this are refused before parsing: a
/// chain of them (`1 + 1 + ... + 1`, `- - ... - x`, `not not ... b`) is a
/// tree as deep as it is long, which every later pass walks recursively.
/// Far above any real model; far below the 600 000 levels the
/// 512 MiB worker stack holds.
pub const MAX_OPERATORS: usize = 100_000;

/// Refuses brackets (`(`, `[`, `{`) nested deeper than [`MAX_NESTING`],
/// statements with more than [`MAX_NESTING`] `if`s (`if a then 1 else
/// if b then ...` nests without brackets) and statements with more than
/// [`MAX_OPERATORS`] operators, outside strings and comments, at the first
/// one too many. This keeps recursion bounded (a stack overflow would abort
/// rmoc instead of reporting the input).
pub(super) fn check_nesting(text: &str, file: u32, offset: usize) -> Result<(), Diagnostic> {
    let b = text.as_bytes();
    let too_deep = |i: usize, what: String, label: &str| {
        let at = (offset + i) as u32;
        Diagnostic::error(
            DiagnosticKind::Limit,
            Span {
                file,
                start: at,
                end: at + 1,
            },
            what,
        )
        .with_label(label)
        .with_hint("split the expression with intermediate variables")
    };
    let is_id = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut depth = 0usize;
    let mut ifs = 0usize;
    let mut operators = 0usize;
    let word_at = |i: usize, w: &[u8]| {
        b[i..].starts_with(w)
            && (i == 0 || !is_id(b[i - 1]))
            && !b.get(i + w.len()).is_some_and(|&c| is_id(c))
    };
    let mut i = 0;
    while i < b.len() {
        let operator = matches!(b[i], b'+' | b'-' | b'*' | b'/' | b'^' | b'<' | b'>')
            && b.get(i + 1) != Some(&b'/')
            && b.get(i + 1) != Some(&b'*')
            || (matches!(b[i], b'n' | b'a' | b'o')
                && (word_at(i, b"not") || word_at(i, b"and") || word_at(i, b"or")));
        if operator {
            operators += 1;
            if operators > MAX_OPERATORS {
                return Err(too_deep(
                    i,
                    format!("more than {MAX_OPERATORS} operators in one statement"),
                    "one operator too many",
                ));
            }
        }
        match b[i] {
            b';' => (ifs, operators) = (0, 0),
            // `if`, and `elseif` (each branch nests one level more).
            b'i' if b.get(i + 1) == Some(&b'f')
                && (i == 0 || !is_id(b[i - 1]) || b[..i].ends_with(b"else"))
                && !b.get(i + 2).is_some_and(|&c| is_id(c)) =>
            {
                ifs += 1;
                if ifs > MAX_NESTING {
                    return Err(too_deep(
                        i,
                        format!("more than {MAX_NESTING} `if`s in one statement"),
                        "one level too many",
                    ));
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(
                        i,
                        format!("brackets nested more than {MAX_NESTING} levels deep"),
                        "one level too many",
                    ));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod nesting_tests {
    use super::*;

    #[test]
    fn nesting_is_limited_outside_strings_and_comments() {
        let n = MAX_NESTING;
        let ok = format!("x = {}1{};", "(".repeat(n), ")".repeat(n));
        assert!(check_nesting(&ok, 0, 0).is_ok());
        let deep = format!("x = {}1{};", "(".repeat(n + 1), ")".repeat(n + 1));
        let d = check_nesting(&deep, 0, 10).expect_err("too deep");
        // The first bracket too many: after `x = ` (4 bytes) and n brackets,
        // shifted by the offset 10.
        assert_eq!(d.span.map(|s| s.start), Some((10 + 4 + n) as u32));
        let quoted = format!(
            "s = \"{}\"; // {}\n/* {} */",
            "(".repeat(5000),
            "[".repeat(5000),
            "{".repeat(5000)
        );
        assert!(check_nesting(&quoted, 0, 0).is_ok());
        let chain = |k: usize| {
            format!(
                "x = {}1; y = if a then 1 else 2;",
                "if c then 1 else ".repeat(k)
            )
        };
        assert!(check_nesting(&chain(n), 0, 0).is_ok());
        let d = check_nesting(&chain(n + 1), 0, 0).expect_err("too many ifs");
        assert!(
            d.message.contains("`if`s in one statement"),
            "{}",
            d.message
        );
        let elseifs = format!(
            "x = if a then 0 {}else 1;",
            "elseif b then 1 ".repeat(n + 1)
        );
        assert!(check_nesting(&elseifs, 0, 0).is_err());
        let m = MAX_OPERATORS;
        let sum = |k: usize| format!("x = 1{}; y = x;", "+1".repeat(k));
        assert!(check_nesting(&sum(m), 0, 0).is_ok());
        let d = check_nesting(&sum(m + 1), 0, 0).expect_err("too many operators");
        assert_eq!(d.span.map(|s| s.start), Some((5 + 2 * m) as u32));
        let nots = |k: usize| format!("b = {}true;", "not ".repeat(k));
        assert!(check_nesting(&nots(m), 0, 0).is_ok());
        assert!(check_nesting(&nots(m + 1), 0, 0).is_err());
        // Identifiers that contain the keywords, and comments, count nothing.
        let words = format!("x = {}; // {}", "nota + ".repeat(m / 2), "-".repeat(2 * m));
        assert!(check_nesting(&words, 0, 0).is_ok());
        // `iff`, `elif_x` and `x_if` are names, not `if`.
        let names = "x = iff + elif_x + x_if;".repeat(2000);
        assert!(check_nesting(&names, 0, 0).is_ok());
    }
}
