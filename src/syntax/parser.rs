//! The pest parser of `grammar/rmo.pest` and the conversion of its parse tree
//! into the [`ast`](super::ast).
//!
//! The grammar accepts exactly the syntax; this module only builds nodes and
//! turns pest's failure (the furthest position reached, the rules expected
//! there) into a diagnostic a Modelica user can act on.

use super::ast::*;
use crate::diag::Diagnostic;
use pest::Parser as _;
use pest::iterators::Pair;

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/rmo.pest"]
struct RmoParser;

type P<'a> = Pair<'a, Rule>;

/// Parses one file. `file` is the source-map id used in every span.
pub fn parse(text: &str, file: u32) -> Result<StoredDefinition, Diagnostic> {
    check_nesting(text, file, 0)?;
    let mut pairs =
        RmoParser::parse(Rule::stored_definition, text).map_err(|e| syntax_error(text, file, e))?;
    let root = pairs
        .next()
        .expect("the grammar's root rule always yields one pair");
    let b = Builder::new(file, 0);
    let def = b.stored_definition(root);
    match b.errors.into_inner().into_iter().next() {
        Some(d) => Err(d),
        None => Ok(def),
    }
}

/// Parses a single expression (used for `-p name=value` and tests).
pub fn parse_expression(text: &str, file: u32) -> Result<Expr, Diagnostic> {
    check_nesting(text, file, 0)?;
    let mut pairs =
        RmoParser::parse(Rule::single_expression, text).map_err(|e| syntax_error(text, file, e))?;
    let root = pairs.next().expect("single_expression yields one pair");
    let p = root
        .into_inner()
        .find(|x| x.as_rule() == Rule::expression)
        .expect("single_expression holds an expression");
    let b = Builder::new(file, 0);
    let e = b.expression(p);
    match b.errors.into_inner().into_iter().next() {
        Some(d) => Err(d),
        None => Ok(e),
    }
}

/// Parses one element that starts at byte `offset` of file `file`: `text` is
/// the element's text alone, and every span is shifted by `offset` so it
/// points into the whole file. The library index uses this to parse one class
/// of a library file.
pub fn parse_element(text: &str, file: u32, offset: usize) -> Result<Composition, Diagnostic> {
    check_nesting(text, file, offset)?;
    let mut pairs = RmoParser::parse(Rule::single_element, text).map_err(|e| {
        let mut d = syntax_error(text, file, e);
        if let Some(s) = d.span.as_mut() {
            s.start += offset as u32;
            s.end += offset as u32;
        }
        d
    })?;
    let root = pairs.next().expect("single_element yields one pair");
    let b = Builder::new(file, offset);
    let mut comp = Composition::default();
    for e in root.into_inner() {
        if e.as_rule() == Rule::element {
            b.element(e, false, &mut comp);
        }
    }
    match b.errors.into_inner().into_iter().next() {
        Some(d) => Err(d),
        None => Ok(comp),
    }
}

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

fn syntax_error(text: &str, file: u32, e: pest::error::Error<Rule>) -> Diagnostic {
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
            point(pos, pos + 1),
            "unterminated string: this `\"` has no closing quote",
        )
        .with_label("the string starts here")
        .with_hint("close the string with `\"` on the same statement");
    }
    if let Some(open) = unclosed_block_comment(text) {
        return Diagnostic::error(
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
            point(start, end),
            format!("malformed number `{}`", &text[start..end]),
        )
        .with_label("an exponent needs digits")
        .with_hint("write e.g. `1.5e3`");
    }
    if rest.starts_with('=') && text[..pos].trim_end().ends_with(':') {
        let colon = text[..pos].trim_end().len() - 1;
        return Diagnostic::error(
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
        let mut d = Diagnostic::error(point(start, end), format!("expected {word}"))
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
            Diagnostic::error(point(text.len(), text.len()), "unexpected end of file")
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
        && let Some(open) = super::scan::unclosed_class(&text[..pos])
    {
        return Diagnostic::error(
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
    let mut d = Diagnostic::error(point(pos, end), message).with_label("here");
    if found == "`end`" || found.starts_with("`end") {
        d = d.with_hint(
            "check that every `if`, `for`, `when` and class is closed with its own `end ...;`",
        );
    }
    if let Some(h) = unbalanced_paren(text, pos) {
        d = d.with_hint(h);
    }
    if let Some(k) = misspelled_keyword(text, pos) {
        d = d.with_hint(k);
    }
    d
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

fn is_class_keyword(found: &str) -> bool {
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
fn misspelled_keyword(text: &str, pos: usize) -> Option<String> {
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
fn check_nesting(text: &str, file: u32, offset: usize) -> Result<(), Diagnostic> {
    let b = text.as_bytes();
    let too_deep = |i: usize, what: String, label: &str| {
        let at = (offset + i) as u32;
        Diagnostic::error(
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

/// A `(` opened on the current statement and not closed before `pos`.
fn unbalanced_paren(text: &str, pos: usize) -> Option<String> {
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
fn string_closes(s: &str) -> bool {
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
fn unclosed_block_comment(text: &str) -> Option<usize> {
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
fn last_unclosed(text: &str, pos: usize, kw: &str) -> Option<usize> {
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

fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => a.to_string(),
        _ => {
            let (last, rest) = items.split_last().expect("non-empty");
            format!("{} or {}", rest.join(", "), last)
        }
    }
}

fn token_len(text: &str, pos: usize) -> usize {
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

fn describe_token_at(text: &str, pos: usize) -> String {
    if pos >= text.len() {
        return "end of file".into();
    }
    let n = token_len(text, pos);
    format!("`{}`", &text[pos..pos + n])
}

/// At end of file: finds the class that was opened and never closed, using the
/// token scanner (a full parse has just failed, so the tree is unavailable).
fn unterminated_class(text: &str, file: u32) -> Option<Diagnostic> {
    let open = super::scan::unclosed_class(text)?;
    Some(
        Diagnostic::error(
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

// ---------------------------------------------------------------- tree building

struct Builder {
    file: u32,
    /// Added to every position: the parsed text starts at this byte of the file.
    offset: usize,
    /// Problems found while building (literals out of range).
    errors: std::cell::RefCell<Vec<Diagnostic>>,
}

fn unescape(s: &str) -> String {
    let inner = &s[1..s.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Builder {
    fn new(file: u32, offset: usize) -> Builder {
        Builder {
            file,
            offset,
            errors: Default::default(),
        }
    }

    fn span(&self, p: &P) -> Span {
        let s = p.as_span();
        Span::new(self.file, s.start() + self.offset, s.end() + self.offset)
    }

    fn ident(&self, p: P) -> Ident {
        Ident {
            name: p.as_str().to_string(),
            span: self.span(&p),
        }
    }

    fn name(&self, p: P) -> Name {
        let span = self.span(&p);
        Name {
            parts: p.into_inner().map(|i| self.ident(i)).collect(),
            global: false,
            span,
        }
    }

    fn type_specifier(&self, p: P) -> Name {
        let global = p.as_str().starts_with('.');
        let inner = p.into_inner().next().expect("type_specifier holds a name");
        let mut n = self.name(inner);
        n.global = global;
        n
    }

    fn stored_definition(&self, p: P) -> StoredDefinition {
        let mut within = None;
        let mut classes = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::within_clause => {
                    within = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::name)
                        .map(|n| self.name(n))
                }
                Rule::top_class => {
                    let cd = c
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::class_definition)
                        .expect("top_class holds a class_definition");
                    classes.push(self.class_definition(cd));
                }
                _ => {}
            }
        }
        StoredDefinition { within, classes }
    }

    fn class_kind(&self, p: &P) -> ClassKind {
        let s = p.as_str();
        let last = s.split_whitespace().last().unwrap_or(s);
        match last {
            "model" => ClassKind::Model,
            "block" => ClassKind::Block,
            "connector" => ClassKind::Connector,
            "record" => ClassKind::Record,
            "type" => ClassKind::Type,
            "package" => ClassKind::Package,
            "function" => ClassKind::Function,
            "operator" => ClassKind::Operator,
            _ => ClassKind::Class,
        }
    }

    fn class_definition(&self, p: P) -> ClassDef {
        let span = self.span(&p);
        let mut partial = false;
        let mut encapsulated = false;
        let mut kind = ClassKind::Class;
        let mut spec = None;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::K_PARTIAL => partial = true,
                Rule::K_ENCAPSULATED => encapsulated = true,
                Rule::class_kind => {
                    kind = self.class_kind(&c);
                    if c.as_str().starts_with("expandable") {
                        self.errors.borrow_mut().push(
                            Diagnostic::error(
                                self.span(&c),
                                "expandable connectors are not supported",
                            )
                            .with_label("expandable")
                            .with_hint("declare the connector's variables in a plain `connector`"),
                        );
                    }
                }
                Rule::class_specifier => spec = c.into_inner().next(),
                _ => {}
            }
        }
        let spec = spec.expect("class_definition holds a class_specifier");
        let (name, description, body) = self.class_specifier(spec);
        ClassDef {
            name,
            kind,
            partial,
            encapsulated,
            description,
            body,
            span,
        }
    }

    fn class_specifier(&self, p: P) -> (Ident, Option<String>, ClassBody) {
        match p.as_rule() {
            Rule::long_class_specifier => {
                let mut it = p.into_inner();
                let head = it.next().expect("class name");
                let mut class_extends = None;
                let name = if head.as_rule() == Rule::class_extends {
                    let mut h = head.into_inner();
                    let kw = h.next().expect("extends keyword");
                    let name = self.ident(h.next().expect("class extends name"));
                    let modification = h.next().map(|m| self.class_modification(m));
                    // From `extends` through the name or its modification
                    // (the rule's own span runs on over the blanks after it).
                    let mut span = self.span(&kw);
                    span.end = modification.as_ref().map_or(name.span.end, |m| m.span.end);
                    class_extends = Some(Box::new(ClassExtends { modification, span }));
                    name
                } else {
                    self.ident(head)
                };
                let mut description = None;
                let mut comp = Composition::default();
                for c in it {
                    match c.as_rule() {
                        Rule::string_comment => description = self.string_comment(c),
                        Rule::composition => comp = self.composition(c),
                        Rule::end_clause => {
                            comp.end_name = c
                                .into_inner()
                                .find(|x| x.as_rule() == Rule::ident)
                                .map(|i| self.ident(i))
                        }
                        _ => {}
                    }
                }
                comp.class_extends = class_extends;
                (name, description, ClassBody::Long(comp))
            }
            Rule::short_class_specifier => {
                let (name, short, description) = self.short_class_specifier(p);
                (name, description, ClassBody::Short(short))
            }
            Rule::enumeration_specifier => {
                let mut it = p.into_inner();
                let name = self.ident(it.next().expect("enumeration name"));
                let mut lits = Vec::new();
                let mut description = None;
                for c in it {
                    match c.as_rule() {
                        Rule::enum_list => {
                            for l in c.into_inner() {
                                if let Some(i) = l.into_inner().next() {
                                    lits.push(self.ident(i));
                                }
                            }
                        }
                        Rule::comment => description = self.comment(c),
                        _ => {}
                    }
                }
                (name, description, ClassBody::Enumeration(lits))
            }
            r => unreachable!("class_specifier alternative {r:?}"),
        }
    }

    fn short_class_specifier(&self, p: P) -> (Ident, ShortClass, Option<String>) {
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("short class name"));
        let mut causality = Causality::None;
        let mut base = None;
        let mut dims = Vec::new();
        let mut modification = None;
        let mut description = None;
        for c in it {
            match c.as_rule() {
                Rule::base_prefix => {
                    causality = match c.as_str().trim() {
                        "input" => Causality::Input,
                        "output" => Causality::Output,
                        _ => Causality::None,
                    }
                }
                Rule::type_specifier => base = Some(self.type_specifier(c)),
                Rule::array_subscripts => dims = self.subscripts(c),
                Rule::class_modification => modification = Some(self.class_modification(c)),
                Rule::comment => description = self.comment(c),
                _ => {}
            }
        }
        (
            name,
            ShortClass {
                causality,
                base: base.expect("short class has a base"),
                dims,
                modification,
            },
            description,
        )
    }

    fn string_comment(&self, p: P) -> Option<String> {
        let parts: Vec<String> = p
            .into_inner()
            .filter(|x| x.as_rule() == Rule::string)
            .map(|s| unescape(s.as_str()))
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.concat())
        }
    }

    fn comment(&self, p: P) -> Option<String> {
        p.into_inner()
            .find(|x| x.as_rule() == Rule::string_comment)
            .and_then(|s| self.string_comment(s))
    }

    fn composition(&self, p: P) -> Composition {
        let mut comp = Composition::default();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::element_list => self.element_list(c, false, &mut comp),
                Rule::public_section => {
                    for x in c.into_inner() {
                        if x.as_rule() == Rule::element_list {
                            self.element_list(x, false, &mut comp)
                        }
                    }
                }
                Rule::protected_section => {
                    for x in c.into_inner() {
                        if x.as_rule() == Rule::element_list {
                            self.element_list(x, true, &mut comp)
                        }
                    }
                }
                Rule::equation_section => {
                    let mut initial = false;
                    let mut equations = Vec::new();
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_INITIAL => initial = true,
                            Rule::equation => equations.push(self.equation(x)),
                            _ => {}
                        }
                    }
                    comp.equations.push(EquationSection { initial, equations });
                }
                Rule::algorithm_section => {
                    let span = self.span(&c);
                    let mut initial = false;
                    let mut statements = Vec::new();
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_INITIAL => initial = true,
                            Rule::statement => statements.push(self.statement(x)),
                            _ => {}
                        }
                    }
                    comp.algorithms.push(AlgorithmSection {
                        initial,
                        statements,
                        span,
                    });
                }
                Rule::external_clause => comp.external = Some(Box::new(self.external_clause(c))),
                Rule::class_modification => comp.annotations.push(self.class_modification(c)),
                _ => {}
            }
        }
        comp
    }

    fn external_clause(&self, p: P) -> External {
        let span = self.span(&p);
        let mut ext = External {
            language: None,
            function: None,
            output: None,
            args: Vec::new(),
            span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::string => ext.language = Some(unescape(c.as_str())),
                Rule::external_function_call => {
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::component_reference => {
                                ext.output = Some(self.component_reference(x))
                            }
                            Rule::ident => ext.function = Some(self.ident(x)),
                            Rule::expression_list => {
                                ext.args = x.into_inner().map(|e| self.expression(e)).collect()
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        ext
    }

    fn element_list(&self, p: P, protected: bool, comp: &mut Composition) {
        for e in p.into_inner() {
            if e.as_rule() == Rule::element {
                self.element(e, protected, comp);
            }
        }
    }

    fn element(&self, p: P, protected: bool, comp: &mut Composition) {
        let span = self.span(&p);
        let mut redeclare = false;
        let mut final_ = false;
        let mut inner_outer = false;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::K_REDECLARE => redeclare = true,
                Rule::K_FINAL => final_ = true,
                Rule::K_INNER | Rule::K_OUTER => inner_outer = true,
                Rule::import_clause => comp.elements.push(Element::Import(self.import(c))),
                Rule::extends_clause => {
                    let mut it = c.into_inner();
                    let _kw = it.next();
                    let base = self.type_specifier(it.next().expect("extends base"));
                    let modification = it
                        .find(|x| x.as_rule() == Rule::class_modification)
                        .map(|m| self.class_modification(m));
                    comp.elements.push(Element::Extends(Extends {
                        base,
                        modification,
                        protected,
                        span,
                    }))
                }
                Rule::annotation_element => {
                    if let Some(m) = c.into_inner().next().and_then(|a| {
                        a.into_inner()
                            .find(|x| x.as_rule() == Rule::class_modification)
                    }) {
                        comp.annotations.push(self.class_modification(m));
                    }
                }
                Rule::element_body => {
                    let mut replaceable = false;
                    let mut constraint = None;
                    let mut body = None;
                    let mut description = None;
                    for x in c.into_inner() {
                        match x.as_rule() {
                            Rule::K_REPLACEABLE => replaceable = true,
                            Rule::constraining_clause => constraint = Some(self.constraint(x)),
                            Rule::comment => description = self.comment(x),
                            Rule::class_definition | Rule::component_clause => body = Some(x),
                            _ => {}
                        }
                    }
                    let body = body.expect("element body holds a class or component");
                    if body.as_rule() == Rule::class_definition {
                        let mut def = self.class_definition(body);
                        if def.description.is_none() {
                            def.description = description;
                        }
                        comp.elements.push(Element::Class(ClassElement {
                            def,
                            replaceable,
                            redeclare,
                            final_,
                            protected,
                            constrainedby: constraint,
                        }));
                    } else {
                        for mut comp_decl in self.component_clause(body) {
                            comp_decl.protected = protected;
                            comp_decl.replaceable = replaceable;
                            comp_decl.redeclare = redeclare;
                            comp_decl.final_ = final_;
                            comp_decl.inner_outer = inner_outer;
                            comp_decl.constrainedby = constraint.clone();
                            if comp_decl.description.is_none() {
                                comp_decl.description = description.clone();
                            }
                            comp.elements.push(Element::Component(comp_decl));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn constraint(&self, p: P) -> Constraint {
        let mut base = None;
        let mut modification = None;
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::type_specifier => base = Some(self.type_specifier(x)),
                Rule::class_modification => modification = Some(self.class_modification(x)),
                _ => {}
            }
        }
        Constraint {
            base: base.expect("constrainedby names a class"),
            modification,
        }
    }

    fn import(&self, p: P) -> Import {
        let body = p
            .into_inner()
            .find(|x| {
                matches!(
                    x.as_rule(),
                    Rule::import_alias
                        | Rule::import_list
                        | Rule::import_wildcard
                        | Rule::import_name
                )
            })
            .expect("import clause has a body");
        match body.as_rule() {
            Rule::import_alias => {
                let mut it = body.into_inner();
                let alias = self.ident(it.next().expect("alias"));
                let target = self.name(it.next().expect("target"));
                Import::Named { alias, target }
            }
            Rule::import_wildcard => Import::Wildcard {
                package: self.name(body.into_inner().next().expect("package")),
            },
            Rule::import_list => {
                let mut it = body.into_inner();
                let package = self.name(it.next().expect("package"));
                Import::List {
                    package,
                    names: it.map(|i| self.ident(i)).collect(),
                }
            }
            _ => {
                let target = self.name(body.into_inner().next().expect("name"));
                let alias = target.parts.last().expect("name has parts").clone();
                Import::Named { alias, target }
            }
        }
    }

    fn type_prefix(&self, p: P) -> TypePrefix {
        let mut t = TypePrefix::default();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::K_FLOW => t.flow = true,
                Rule::K_STREAM => t.stream = true,
                Rule::K_DISCRETE => t.variability = Variability::Discrete,
                Rule::K_PARAMETER => t.variability = Variability::Parameter,
                Rule::K_CONSTANT => t.variability = Variability::Constant,
                Rule::K_INPUT => t.causality = Causality::Input,
                Rule::K_OUTPUT => t.causality = Causality::Output,
                _ => {}
            }
        }
        t
    }

    fn component_clause(&self, p: P) -> Vec<Component> {
        let mut prefix = TypePrefix::default();
        let mut type_name = None;
        let mut type_dims = Vec::new();
        let mut out = Vec::new();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::type_prefix => prefix = self.type_prefix(x),
                Rule::type_specifier => type_name = Some(self.type_specifier(x)),
                Rule::array_subscripts => type_dims = self.subscripts(x),
                Rule::component_list => {
                    for d in x.into_inner() {
                        let tn = type_name.clone().expect("type before declarations");
                        out.push(self.component_declaration(d, prefix, tn, type_dims.clone()));
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn component_declaration(
        &self,
        p: P,
        prefix: TypePrefix,
        type_name: Name,
        type_dims: Vec<Subscript>,
    ) -> Component {
        let span = self.span(&p);
        let mut c = Component {
            prefix,
            type_name,
            type_dims,
            name: Ident {
                name: String::new(),
                span,
            },
            dims: Vec::new(),
            modification: None,
            condition: None,
            description: None,
            protected: false,
            replaceable: false,
            redeclare: false,
            final_: false,
            inner_outer: false,
            constrainedby: None,
            span,
        };
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::declaration => {
                    for y in x.into_inner() {
                        match y.as_rule() {
                            Rule::ident => c.name = self.ident(y),
                            Rule::array_subscripts => c.dims = self.subscripts(y),
                            Rule::modification => c.modification = Some(self.modification(y)),
                            _ => {}
                        }
                    }
                }
                Rule::condition_attribute => {
                    c.condition = x
                        .into_inner()
                        .find(|y| y.as_rule() == Rule::expression)
                        .map(|e| self.expression(e))
                }
                Rule::comment => c.description = self.comment(x),
                _ => {}
            }
        }
        c
    }

    fn modification(&self, p: P) -> Modification {
        let span = self.span(&p);
        let mut m = Modification {
            class_mod: None,
            binding: None,
            span,
        };
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::class_modification => m.class_mod = Some(self.class_modification(x)),
                Rule::expression => m.binding = Some(self.expression(x)),
                _ => {}
            }
        }
        m
    }

    fn class_modification(&self, p: P) -> ClassMod {
        let span = self.span(&p);
        let args = p.into_inner().map(|a| self.argument(a)).collect();
        ClassMod { args, span }
    }

    fn argument(&self, p: P) -> ModArg {
        let span = self.span(&p);
        let inner = p.into_inner().next().expect("argument has a body");
        let mut each = false;
        let mut final_ = false;
        let redeclare = inner.as_rule() == Rule::element_redeclaration;
        let mut result = None;
        for x in inner.into_inner() {
            match x.as_rule() {
                Rule::K_EACH => each = true,
                Rule::K_FINAL => final_ = true,
                Rule::element_modification => {
                    let mut path = None;
                    let mut modification = None;
                    for y in x.into_inner() {
                        match y.as_rule() {
                            Rule::name => path = Some(self.name(y)),
                            Rule::modification => modification = Some(self.modification(y)),
                            _ => {}
                        }
                    }
                    result = Some(ModArg::Modify {
                        each,
                        final_,
                        path: path.expect("modified name"),
                        modification,
                        span,
                    });
                }
                Rule::element_replaceable
                | Rule::short_class_definition
                | Rule::component_clause1 => {
                    let element = self.redeclared(x);
                    result = Some(if redeclare {
                        ModArg::Redeclare {
                            each,
                            final_,
                            element,
                            span,
                        }
                    } else {
                        // `replaceable` inside a modification without `redeclare`:
                        // treat as a redeclaration (it only makes sense as one).
                        ModArg::Redeclare {
                            each,
                            final_,
                            element,
                            span,
                        }
                    });
                }
                _ => {}
            }
        }
        result.expect("argument holds a modification or redeclaration")
    }

    fn redeclared(&self, p: P) -> Redeclared {
        match p.as_rule() {
            Rule::element_replaceable => {
                let x = p
                    .into_inner()
                    .find(|y| {
                        matches!(
                            y.as_rule(),
                            Rule::short_class_definition | Rule::component_clause1
                        )
                    })
                    .expect("replaceable body");
                self.redeclared(x)
            }
            Rule::short_class_definition => {
                let span = self.span(&p);
                let mut kind = ClassKind::Class;
                let mut result = None;
                for y in p.into_inner() {
                    match y.as_rule() {
                        Rule::class_kind => kind = self.class_kind(&y),
                        Rule::short_class_specifier => {
                            let (name, short, description) = self.short_class_specifier(y);
                            result = Some(ClassDef {
                                name,
                                kind,
                                partial: false,
                                encapsulated: false,
                                description,
                                body: ClassBody::Short(short),
                                span,
                            });
                        }
                        _ => {}
                    }
                }
                Redeclared::Class(Box::new(result.expect("short class")))
            }
            Rule::component_clause1 => {
                let mut prefix = TypePrefix::default();
                let mut type_name = None;
                let mut comp = None;
                for y in p.into_inner() {
                    match y.as_rule() {
                        Rule::type_prefix => prefix = self.type_prefix(y),
                        Rule::type_specifier => type_name = Some(self.type_specifier(y)),
                        Rule::component_declaration1 => {
                            let tn = type_name.clone().expect("type before declaration");
                            comp = Some(self.component_declaration(y, prefix, tn, Vec::new()));
                        }
                        _ => {}
                    }
                }
                Redeclared::Component(Box::new(comp.expect("redeclared component")))
            }
            r => unreachable!("redeclared element {r:?}"),
        }
    }

    // ------------------------------------------------------------ equations

    fn equation(&self, p: P) -> Equation {
        let span = self.span(&p);
        let body = p.into_inner().next().expect("equation body");
        let kind = match body.as_rule() {
            Rule::simple_equation => {
                let mut it = body.into_inner();
                let lhs = self.expression(it.next().expect("lhs"));
                match it.next() {
                    Some(r) => EquationKind::Simple {
                        lhs,
                        rhs: self.expression(r),
                    },
                    None => match lhs.kind {
                        ExprKind::Call { func, args } => EquationKind::Call { func, args },
                        _ => {
                            self.errors.borrow_mut().push(
                                Diagnostic::error(lhs.span, "expected `=`: an equation is `lhs = rhs`")
                                    .with_label("an expression alone is not an equation")
                                    .with_hint("write `expression = expression;`, or a call such as `assert(...)`"),
                            );
                            EquationKind::Call {
                                func: ComponentRef {
                                    parts: vec![],
                                    global: false,
                                    span: lhs.span,
                                },
                                args: vec![],
                            }
                        }
                    },
                }
            }
            Rule::connect_clause => {
                let mut refs = body
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::component_reference)
                    .map(|x| self.component_reference(x));
                let a = refs.next().expect("connect a");
                let b = refs.next().expect("connect b");
                EquationKind::Connect { a, b }
            }
            Rule::if_equation => {
                let (branches, else_) = self.conditional_blocks(body, |b, x| b.equations(x));
                EquationKind::If { branches, else_ }
            }
            Rule::for_equation => {
                let mut indices = Vec::new();
                let mut eqs = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::for_indices => indices = self.for_indices(x),
                        Rule::equation_block => eqs = self.equations(x),
                        _ => {}
                    }
                }
                EquationKind::For { indices, body: eqs }
            }
            Rule::when_equation => {
                let (branches, _) = self.conditional_blocks(body, |b, x| b.equations(x));
                EquationKind::When { branches }
            }
            r => unreachable!("equation alternative {r:?}"),
        };
        Equation { kind, span }
    }

    fn equations(&self, p: P) -> Vec<Equation> {
        p.into_inner()
            .filter(|x| x.as_rule() == Rule::equation)
            .map(|x| self.equation(x))
            .collect()
    }

    fn statements(&self, p: P) -> Vec<Statement> {
        p.into_inner()
            .filter(|x| x.as_rule() == Rule::statement)
            .map(|x| self.statement(x))
            .collect()
    }

    /// `if`/`when` forms: condition, block pairs, and an optional else block.
    #[allow(clippy::type_complexity)]
    fn conditional_blocks<T>(
        &self,
        p: P,
        block: impl Fn(&Self, P) -> Vec<T>,
    ) -> (Vec<(Expr, Vec<T>)>, Vec<T>) {
        let mut branches = Vec::new();
        let mut else_ = Vec::new();
        let mut cond = None;
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::expression => cond = Some(self.expression(x)),
                Rule::equation_block | Rule::statement_block => {
                    let c = cond.take().expect("condition before block");
                    branches.push((c, block(self, x)));
                }
                Rule::else_equation_block | Rule::else_statement_block => else_ = block(self, x),
                _ => {}
            }
        }
        (branches, else_)
    }

    fn for_indices(&self, p: P) -> Vec<ForIndex> {
        p.into_inner()
            .map(|fi| {
                let mut it = fi.into_inner();
                let name = self.ident(it.next().expect("index name"));
                let range = it
                    .find(|x| x.as_rule() == Rule::expression)
                    .map(|e| self.expression(e));
                ForIndex { name, range }
            })
            .collect()
    }

    fn statement(&self, p: P) -> Statement {
        let span = self.span(&p);
        let body = p.into_inner().next().expect("statement body");
        let kind = match body.as_rule() {
            Rule::K_BREAK => StatementKind::Break,
            Rule::K_RETURN => StatementKind::Return,
            Rule::ref_statement => {
                let mut it = body.into_inner();
                let target = self.component_reference(it.next().expect("target"));
                let rest = it.next().expect("value or arguments");
                if rest.as_rule() == Rule::assign_value {
                    let value = self.expression(rest.into_inner().next().expect("value"));
                    StatementKind::Assign { target, value }
                } else {
                    StatementKind::Call {
                        func: target,
                        args: self.call_args(rest),
                    }
                }
            }
            Rule::tuple_assignment => {
                let mut it = body.into_inner();
                let targets = self.output_list(it.next().expect("targets"));
                let func = self.component_reference(it.next().expect("function"));
                let args = self.call_args(it.next().expect("args"));
                StatementKind::TupleAssign {
                    targets,
                    func,
                    args,
                }
            }
            Rule::if_statement => {
                let (branches, else_) = self.conditional_blocks(body, |b, x| b.statements(x));
                StatementKind::If { branches, else_ }
            }
            Rule::for_statement => {
                let mut indices = Vec::new();
                let mut stmts = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::for_indices => indices = self.for_indices(x),
                        Rule::statement_block => stmts = self.statements(x),
                        _ => {}
                    }
                }
                StatementKind::For {
                    indices,
                    body: stmts,
                }
            }
            Rule::while_statement => {
                let mut cond = None;
                let mut stmts = Vec::new();
                for x in body.into_inner() {
                    match x.as_rule() {
                        Rule::expression => cond = Some(self.expression(x)),
                        Rule::statement_block => stmts = self.statements(x),
                        _ => {}
                    }
                }
                StatementKind::While {
                    cond: cond.expect("while condition"),
                    body: stmts,
                }
            }
            Rule::when_statement => {
                let (branches, _) = self.conditional_blocks(body, |b, x| b.statements(x));
                StatementKind::When { branches }
            }
            r => unreachable!("statement alternative {r:?}"),
        };
        Statement { kind, span }
    }

    fn output_list(&self, p: P) -> Vec<Option<Expr>> {
        // `(a, , c)`: commas are not pairs, so rebuild the slots from the text
        // positions of the expressions between them.
        let text = p.as_str();
        let base = p.as_span().start();
        let exprs: Vec<P> = p.into_inner().collect();
        let mut slots = Vec::new();
        let mut cursor = 0usize;
        let mut iter = exprs.into_iter().peekable();
        loop {
            // The next slot ends at the next top-level comma.
            let next_expr_start = iter.peek().map(|e| e.as_span().start() - base);
            let comma = find_top_level_comma(text, cursor);
            match (next_expr_start, comma) {
                (Some(s), Some(c)) if s < c => {
                    slots.push(Some(self.expression(iter.next().expect("peeked"))));
                    cursor = c + 1;
                }
                (Some(_), Some(c)) => {
                    slots.push(None);
                    cursor = c + 1;
                }
                (Some(_), None) => {
                    slots.push(Some(self.expression(iter.next().expect("peeked"))));
                    break;
                }
                (None, Some(c)) => {
                    slots.push(None);
                    cursor = c + 1;
                }
                (None, None) => {
                    if !slots.is_empty() {
                        slots.push(None);
                    }
                    break;
                }
            }
        }
        slots
    }

    // ------------------------------------------------------------ expressions

    fn expression(&self, p: P) -> Expr {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::expression => {
                let inner = p.into_inner().next().expect("expression body");
                self.expression(inner)
            }
            Rule::if_expression => {
                let mut exprs: Vec<Expr> = p
                    .into_inner()
                    .filter(|x| x.as_rule() == Rule::expression)
                    .map(|x| self.expression(x))
                    .collect();
                let else_ = exprs.pop().expect("else branch");
                let mut branches = Vec::new();
                let mut it = exprs.into_iter();
                while let (Some(c), Some(v)) = (it.next(), it.next()) {
                    branches.push((c, v));
                }
                Expr {
                    kind: ExprKind::If {
                        branches,
                        else_: Box::new(else_),
                    },
                    span,
                }
            }
            Rule::simple_expression => {
                let mut parts: Vec<Expr> = p.into_inner().map(|x| self.expression(x)).collect();
                match parts.len() {
                    1 => parts.pop().expect("one part"),
                    2 => {
                        let stop = parts.pop().expect("stop");
                        let start = parts.pop().expect("start");
                        Expr {
                            kind: ExprKind::Range {
                                start: Box::new(start),
                                step: None,
                                stop: Box::new(stop),
                            },
                            span,
                        }
                    }
                    _ => {
                        let stop = parts.pop().expect("stop");
                        let step = parts.pop().expect("step");
                        let start = parts.pop().expect("start");
                        Expr {
                            kind: ExprKind::Range {
                                start: Box::new(start),
                                step: Some(Box::new(step)),
                                stop: Box::new(stop),
                            },
                            span,
                        }
                    }
                }
            }
            Rule::op_expression => self.operators(p),
            Rule::primary => self.expression(p.into_inner().next().expect("primary body")),
            Rule::unsigned_integer => {
                match p.as_str().parse::<i64>() {
                    Ok(v) if v <= (1i64 << 53) => Expr {
                        kind: ExprKind::Integer(v),
                        span,
                    },
                    _ => {
                        self.errors.borrow_mut().push(
                        Diagnostic::error(span, format!("integer literal `{}` is out of range", p.as_str()))
                            .with_label("too large")
                            .with_hint("integers must be below 2^53; write a Real (`1e20`) for a large value"),
                    );
                        Expr {
                            kind: ExprKind::Integer(0),
                            span,
                        }
                    }
                }
            }
            Rule::unsigned_real => {
                let v = p.as_str().parse::<f64>().unwrap_or(f64::NAN);
                if !v.is_finite() {
                    self.errors.borrow_mut().push(
                        Diagnostic::error(
                            span,
                            format!("real literal `{}` is out of range", p.as_str()),
                        )
                        .with_label("not a finite double-precision number")
                        .with_hint("the largest finite value is about 1.8e308"),
                    );
                }
                Expr {
                    kind: ExprKind::Real(v),
                    span,
                }
            }
            Rule::string => Expr {
                kind: ExprKind::String(unescape(p.as_str())),
                span,
            },
            Rule::K_TRUE => Expr {
                kind: ExprKind::Bool(true),
                span,
            },
            Rule::K_FALSE => Expr {
                kind: ExprKind::Bool(false),
                span,
            },
            Rule::K_END => Expr {
                kind: ExprKind::End,
                span,
            },
            Rule::function_partial => {
                let mut it = p.into_inner();
                let _kw = it.next();
                let func = self.type_specifier(it.next().expect("function name"));
                let args = it
                    .filter(|x| x.as_rule() == Rule::named_argument)
                    .map(|x| {
                        let mut a = x.into_inner();
                        let name = self.ident(a.next().expect("name"));
                        (name, self.expression(a.next().expect("value")))
                    })
                    .collect();
                Expr {
                    kind: ExprKind::FunctionPartial { func, args },
                    span,
                }
            }
            Rule::component_reference => Expr {
                kind: ExprKind::Ref(self.component_reference(p)),
                span,
            },
            Rule::ref_or_call => {
                let mut it = p.into_inner();
                let f = it.next().expect("function name");
                let func = if f.as_rule() == Rule::K_INITIAL {
                    ComponentRef {
                        parts: vec![RefPart {
                            ident: Ident {
                                name: "initial".into(),
                                span: self.span(&f),
                            },
                            subscripts: vec![],
                        }],
                        global: false,
                        span: self.span(&f),
                    }
                } else {
                    self.component_reference(f)
                };
                let Some(args_pair) = it.next() else {
                    // A name without arguments.
                    return Expr {
                        kind: ExprKind::Ref(func),
                        span,
                    };
                };
                if let Some((body, indices)) = self.comprehension_args(args_pair.clone()) {
                    return Expr {
                        kind: ExprKind::Comprehension {
                            func: Some(func),
                            body: Box::new(body),
                            indices,
                        },
                        span,
                    };
                }
                let args = self.call_args(args_pair);
                Expr {
                    kind: ExprKind::Call { func, args },
                    span,
                }
            }
            Rule::parenthesized => {
                let list = p.into_inner().next().expect("parenthesized list");
                let slots = self.output_list(list);
                if slots.len() == 1 {
                    if let Some(Some(e)) = slots.into_iter().next() {
                        return Expr { kind: e.kind, span };
                    }
                    return Expr {
                        kind: ExprKind::Tuple(vec![None]),
                        span,
                    };
                }
                Expr {
                    kind: ExprKind::Tuple(slots),
                    span,
                }
            }
            Rule::matrix_constructor => {
                let rows = p
                    .into_inner()
                    .map(|row| row.into_inner().map(|e| self.expression(e)).collect())
                    .collect();
                Expr {
                    kind: ExprKind::Matrix(rows),
                    span,
                }
            }
            Rule::array_constructor => {
                let parts: Vec<P> = p.into_inner().collect();
                if let Some(tail) = parts
                    .iter()
                    .find(|x| x.as_rule() == Rule::comprehension_tail)
                {
                    let body = self.expression(parts[0].clone());
                    let indices = tail
                        .clone()
                        .into_inner()
                        .find(|y| y.as_rule() == Rule::for_indices)
                        .map(|y| self.for_indices(y))
                        .unwrap_or_default();
                    return Expr {
                        kind: ExprKind::Comprehension {
                            func: None,
                            body: Box::new(body),
                            indices,
                        },
                        span,
                    };
                }
                Expr {
                    kind: ExprKind::Array(parts.into_iter().map(|e| self.expression(e)).collect()),
                    span,
                }
            }
            r => unreachable!("expression rule {r:?}"),
        }
    }

    /// Applies operator precedence to an `op_expression` (see the grammar).
    fn operators(&self, p: P) -> Expr {
        self.check_non_associative(&p);
        pratt()
            .map_primary(|x| self.expression(x))
            .map_prefix(|op, operand| {
                let span = self.span(&op).to(operand.span);
                let op = match op.as_rule() {
                    Rule::op_not => UnOp::Not,
                    Rule::op_neg => UnOp::Neg,
                    _ => UnOp::Plus,
                };
                Expr {
                    kind: ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                }
            })
            .map_infix(|lhs, op, rhs| {
                let op = match op.as_rule() {
                    Rule::op_or => BinOp::Or,
                    Rule::op_and => BinOp::And,
                    Rule::op_le => BinOp::Le,
                    Rule::op_ge => BinOp::Ge,
                    Rule::op_eq => BinOp::Eq,
                    Rule::op_ne => BinOp::Ne,
                    Rule::op_lt => BinOp::Lt,
                    Rule::op_gt => BinOp::Gt,
                    Rule::op_eadd => BinOp::ElemAdd,
                    Rule::op_esub => BinOp::ElemSub,
                    Rule::op_add => BinOp::Add,
                    Rule::op_sub => BinOp::Sub,
                    Rule::op_emul => BinOp::ElemMul,
                    Rule::op_ediv => BinOp::ElemDiv,
                    Rule::op_mul => BinOp::Mul,
                    Rule::op_div => BinOp::Div,
                    Rule::op_epow => BinOp::ElemPow,
                    _ => BinOp::Pow,
                };
                binary(op, lhs, rhs)
            })
            .parse(p.into_inner())
    }

    /// Modelica's grammar has `factor = primary ["^" primary]` and
    /// `relation = arithmetic_expression [rel-op arithmetic_expression]`:
    /// `a^b^c` and `a < b < c` are not expressions (the first is read
    /// differently by different tools, the second is a bug). The flat operator
    /// sequence would give them a meaning, so they are rejected here.
    fn check_non_associative(&self, p: &P) {
        let is_pow = |r: Rule| matches!(r, Rule::op_pow | Rule::op_epow);
        let is_rel = |r: Rule| {
            matches!(
                r,
                Rule::op_le | Rule::op_ge | Rule::op_eq | Rule::op_ne | Rule::op_lt | Rule::op_gt
            )
        };
        let mut last_infix: Option<Rule> = None;
        let mut relation_seen = false;
        for x in p.clone().into_inner() {
            let r = x.as_rule();
            if matches!(
                r,
                Rule::primary | Rule::op_not | Rule::op_neg | Rule::op_plus
            ) {
                continue;
            }
            if matches!(r, Rule::op_or | Rule::op_and) {
                relation_seen = false;
            }
            if is_pow(r) && last_infix.is_some_and(is_pow) {
                self.errors.borrow_mut().push(
                    Diagnostic::error(self.span(&x), "`^` cannot follow `^` without parentheses")
                        .with_label("second power")
                        .with_hint(
                            "write `(a^b)^c` or `a^(b^c)`: Modelica gives `a^b^c` no meaning",
                        ),
                );
            }
            if is_rel(r) {
                if relation_seen {
                    self.errors.borrow_mut().push(
                        Diagnostic::error(self.span(&x), "relations cannot be chained")
                            .with_label("second comparison")
                            .with_hint("write `a < b and b < c`"),
                    );
                }
                relation_seen = true;
            }
            last_infix = Some(r);
        }
    }

    /// `f(expr for i in range)`: the body and its indices.
    fn comprehension_args(&self, p: P) -> Option<(Expr, Vec<ForIndex>)> {
        let fa = p.into_inner().next()?;
        let parts: Vec<P> = fa.into_inner().collect();
        let tail = parts
            .iter()
            .find(|x| x.as_rule() == Rule::comprehension_tail)?;
        let item = parts[0].clone().into_inner().next()?;
        let body = self.expression(item);
        let indices = tail
            .clone()
            .into_inner()
            .find(|y| y.as_rule() == Rule::for_indices)
            .map(|y| self.for_indices(y))?;
        Some((body, indices))
    }

    fn call_args(&self, p: P) -> Vec<Arg> {
        let Some(fa) = p.into_inner().next() else {
            return vec![];
        };
        fa.into_inner()
            .filter(|x| x.as_rule() == Rule::argument_item)
            .map(|item| {
                let x = item.into_inner().next().expect("argument item body");
                if x.as_rule() == Rule::named_argument {
                    let mut it = x.into_inner();
                    let name = self.ident(it.next().expect("name"));
                    let value = self.expression(it.next().expect("value"));
                    Arg::Named(name, value)
                } else {
                    Arg::Positional(self.expression(x))
                }
            })
            .collect()
    }

    fn component_reference(&self, p: P) -> ComponentRef {
        let span = self.span(&p);
        let global = p.as_str().starts_with('.');
        let mut parts: Vec<RefPart> = Vec::new();
        for x in p.into_inner() {
            match x.as_rule() {
                Rule::ident => parts.push(RefPart {
                    ident: self.ident(x),
                    subscripts: vec![],
                }),
                Rule::array_subscripts => {
                    if let Some(last) = parts.last_mut() {
                        last.subscripts = self.subscripts(x);
                    }
                }
                _ => {}
            }
        }
        ComponentRef {
            parts,
            global,
            span,
        }
    }

    fn subscripts(&self, p: P) -> Vec<Subscript> {
        p.into_inner()
            .map(|s| {
                let x = s.into_inner().next().expect("subscript body");
                if x.as_rule() == Rule::colon {
                    Subscript::All(self.span(&x))
                } else {
                    Subscript::Index(self.expression(x))
                }
            })
            .collect()
    }
}

/// Modelica's operator precedence, lowest first (MLS 3.2): later levels bind
/// tighter. Unary minus sits between additive and multiplicative operators,
/// so `-a*b` is `-(a*b)` and `-a^2` is `-(a^2)`.
fn pratt() -> &'static pest::pratt_parser::PrattParser<Rule> {
    use pest::pratt_parser::{Assoc, Op, PrattParser};
    static P: std::sync::OnceLock<PrattParser<Rule>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::op_or, Assoc::Left))
            .op(Op::infix(Rule::op_and, Assoc::Left))
            .op(Op::prefix(Rule::op_not))
            .op(Op::infix(Rule::op_le, Assoc::Left)
                | Op::infix(Rule::op_ge, Assoc::Left)
                | Op::infix(Rule::op_eq, Assoc::Left)
                | Op::infix(Rule::op_ne, Assoc::Left)
                | Op::infix(Rule::op_lt, Assoc::Left)
                | Op::infix(Rule::op_gt, Assoc::Left))
            .op(Op::infix(Rule::op_add, Assoc::Left)
                | Op::infix(Rule::op_sub, Assoc::Left)
                | Op::infix(Rule::op_eadd, Assoc::Left)
                | Op::infix(Rule::op_esub, Assoc::Left))
            .op(Op::prefix(Rule::op_neg) | Op::prefix(Rule::op_plus))
            .op(Op::infix(Rule::op_mul, Assoc::Left)
                | Op::infix(Rule::op_div, Assoc::Left)
                | Op::infix(Rule::op_emul, Assoc::Left)
                | Op::infix(Rule::op_ediv, Assoc::Left))
            .op(Op::infix(Rule::op_pow, Assoc::Left) | Op::infix(Rule::op_epow, Assoc::Left))
    })
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span.to(rhs.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    }
}

/// Byte index of the next comma at nesting depth 0 at or after `from`.
fn find_top_level_comma(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut in_string = false;
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_string = false;
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth == 0 => return Some(i),
                _ => {}
            }
        }
        i += 1;
    }
    None
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
