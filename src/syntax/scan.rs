//! The logos token layer: a fast scan of `.rmo` text that finds class
//! definitions and their byte ranges without a full parse.
//!
//! Uses: (1) the library index, so that a model using one stdlib class parses
//! only that class and its enclosing packages' own declarations, never the
//! whole library; (2) error recovery, to name the class left open when a file
//! ends early.
//!
//! Invariant: ranges found here are the exact byte ranges a full parse would
//! give the same class definitions (from the `encapsulated`/`partial`/kind
//! keyword through the `;` after `end Name`), so that blanking every byte
//! outside a range yields a file the parser accepts with unchanged spans.

use logos::Logos;

#[derive(Logos, Debug, PartialEq, Eq, Clone, Copy)]
#[logos(skip r"[ \t\r\n\f\u{FEFF}]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(skip r"/\*([^*]|\*+[^*/])*\*+/")]
pub enum Token {
    #[token("model")]
    #[token("block")]
    #[token("connector")]
    #[token("record")]
    #[token("type")]
    #[token("package")]
    #[token("function")]
    #[token("class")]
    #[token("operator")]
    ClassKind,
    #[token("end")]
    End,
    #[token("within")]
    Within,
    #[token("partial")]
    #[token("encapsulated")]
    #[token("expandable")]
    #[token("pure")]
    #[token("impure")]
    ClassPrefix,
    #[token("replaceable")]
    #[token("redeclare")]
    #[token("final")]
    #[token("inner")]
    #[token("outer")]
    ElementPrefix,
    #[token("if")]
    #[token("for")]
    #[token("when")]
    #[token("while")]
    BlockKeyword,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    #[regex(r"'([^'\\]|\\.)*'")]
    Ident,
    #[regex(r#""([^"\\]|\\.)*""#)]
    String,
    #[token(";")]
    Semi,
    #[token("=")]
    Equals,
    #[token("(")]
    #[token("[")]
    #[token("{")]
    Open,
    #[token(")")]
    #[token("]")]
    #[token("}")]
    Close,
    #[token(".")]
    Dot,
}

/// One class definition found by the scan.
#[derive(Clone, Debug)]
pub struct ScannedClass {
    pub name: String,
    /// Byte range from the class's own first keyword through the `;` that ends it.
    pub start: usize,
    pub end: usize,
    /// Start of the element, including `replaceable`/`redeclare`/`final` prefixes.
    pub element_start: usize,
    /// Indices (into the scan's list) of classes defined directly inside it.
    pub children: Vec<usize>,
    pub parent: Option<usize>,
}

#[derive(Clone, Debug, Default)]
pub struct ScannedFile {
    /// The `within` prefix, dotted.
    pub within: Option<String>,
    pub classes: Vec<ScannedClass>,
    /// Indices of the top-level classes.
    pub top: Vec<usize>,
}

struct Tok<'a> {
    kind: Option<Token>,
    text: &'a str,
    start: usize,
    end: usize,
}

fn tokens(text: &str) -> Vec<Tok<'_>> {
    let mut lex = Token::lexer(text);
    let mut out = Vec::new();
    while let Some(t) = lex.next() {
        let r = lex.span();
        out.push(Tok {
            kind: t.ok(),
            text: &text[r.clone()],
            start: r.start,
            end: r.end,
        });
    }
    out
}

/// Scans a file for class definitions. Never fails: text that is not valid
/// Modelica yields whatever classes could be delimited (the parser reports the
/// error when the class is actually used).
pub fn scan(text: &str) -> ScannedFile {
    let toks = tokens(text);
    let mut out = ScannedFile::default();
    let mut open: Vec<usize> = Vec::new(); // indices into out.classes of long classes
    let mut depth = 0i32;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match t.kind {
            Some(Token::Open) => depth += 1,
            Some(Token::Close) => depth -= 1,
            Some(Token::Within) if i == 0 => {
                let mut j = i + 1;
                let mut name = String::new();
                while j < toks.len() && toks[j].kind != Some(Token::Semi) {
                    name.push_str(toks[j].text);
                    j += 1;
                }
                out.within = (!name.is_empty()).then_some(name);
                i = j;
            }
            Some(Token::End) if depth == 0 => {
                // `end Name;` closes the innermost open class named Name.
                if let (Some(n), Some(s)) = (toks.get(i + 1), toks.get(i + 2))
                    && n.kind == Some(Token::Ident)
                    && s.kind == Some(Token::Semi)
                    && let Some(&top) = open.last()
                    && out.classes[top].name == n.text
                {
                    out.classes[top].end = s.end;
                    open.pop();
                    i += 3;
                    continue;
                }
            }
            Some(Token::ClassKind) if depth == 0 => {
                let prev = i.checked_sub(1).and_then(|p| toks[p].kind);
                // `model extends M`: the class is named M.
                let extends = toks.get(i + 1).is_some_and(|n| n.text == "extends");
                let name_at = if extends { i + 2 } else { i + 1 };
                if prev != Some(Token::End)
                    && let Some(n) = toks.get(name_at)
                    && n.kind == Some(Token::Ident)
                {
                    // Walk back over prefixes (and the `operator` of
                    // `operator record`) to find where the definition and
                    // the element start.
                    let mut s = i;
                    while s > 0
                        && (toks[s - 1].kind == Some(Token::ClassPrefix)
                            || toks[s - 1].text == "operator")
                    {
                        s -= 1;
                    }
                    let mut e = s;
                    while e > 0 && toks[e - 1].kind == Some(Token::ElementPrefix) {
                        e -= 1;
                    }
                    let idx = out.classes.len();
                    let parent = open.last().copied();
                    out.classes.push(ScannedClass {
                        name: n.text.to_string(),
                        start: toks[s].start,
                        end: text.len(),
                        element_start: toks[e].start,
                        children: Vec::new(),
                        parent,
                    });
                    match parent {
                        Some(p) => out.classes[p].children.push(idx),
                        None => out.top.push(idx),
                    }
                    let short = toks.get(name_at + 1).map(|x| x.kind) == Some(Some(Token::Equals));
                    if short {
                        // A short definition ends at the next `;` outside brackets.
                        let mut j = name_at + 1;
                        let mut d = 0;
                        while j < toks.len() {
                            match toks[j].kind {
                                Some(Token::Open) => d += 1,
                                Some(Token::Close) => d -= 1,
                                Some(Token::Semi) if d == 0 => break,
                                _ => {}
                            }
                            j += 1;
                        }
                        out.classes[idx].end = toks.get(j).map(|x| x.end).unwrap_or(text.len());
                        i = j + 1;
                        continue;
                    }
                    open.push(idx);
                    i = name_at + 1;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The innermost class that was opened and never closed, for "unexpected end of
/// file" diagnostics.
pub struct OpenClass {
    pub name: String,
    pub start: usize,
    pub end: usize,
}

pub fn unclosed_class(text: &str) -> Option<OpenClass> {
    let f = scan(text);
    // A class whose end stayed at the file's end and whose text does not end
    // with `end Name;` was never closed.
    f.classes
        .iter()
        .rev()
        .find(|c| {
            c.end == text.len() && {
                let t = text[c.start..].trim_end();
                !(t.ends_with(';') && t.trim_end_matches(';').trim_end().ends_with(&c.name))
            }
        })
        .map(|c| {
            let name_end = text[c.start..]
                .find(&c.name)
                .map(|p| c.start + p + c.name.len())
                .unwrap_or(c.start);
            OpenClass {
                name: c.name.clone(),
                start: c.start,
                end: name_end,
            }
        })
}

/// The text of `keep` (a class cut out of a file) with each range of `blank`
/// (its nested classes, parsed on their own when used) turned into a block
/// comment of the same length, newlines kept, so that spans stay valid: the
/// caller offsets them by `keep.0`. A comment, not spaces: pest skips a block
/// comment's body with one substring search, blanks one character at a time.
pub fn blanked(text: &str, keep: (usize, usize), blank: &[(usize, usize)]) -> String {
    let mut bytes: Vec<u8> = text.as_bytes()[keep.0..keep.1].to_vec();
    for &(a, b) in blank {
        let (a, b) = (a.max(keep.0) - keep.0, b.min(keep.1).saturating_sub(keep.0));
        if a >= b {
            continue;
        }
        for x in &mut bytes[a..b] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
        if b - a >= 4 {
            bytes[a..a + 2].copy_from_slice(b"/*");
            bytes[b - 2..b].copy_from_slice(b"*/");
        }
    }
    // Only ASCII bytes of whole tokens were replaced, but a multi-byte character
    // could straddle a range edge in malformed input; fall back to lossy.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_classes_and_ranges() {
        let src = "within Lib;\npackage P \"doc\"\n  constant Real c = 1;\n  model A\n    Real x;\n  equation\n    if x > 0 then x = 1; else x = 2; end if;\n  end A;\n  type T = Real(unit = \"m\");\n  replaceable model R = A;\nend P;\n";
        let f = scan(src);
        assert_eq!(f.within.as_deref(), Some("Lib"));
        let names: Vec<&str> = f.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["P", "A", "T", "R"]);
        assert_eq!(f.top, [0]);
        assert_eq!(f.classes[0].children, [1, 2, 3]);
        let a = &f.classes[1];
        assert!(src[a.start..a.end].starts_with("model A"));
        assert!(src[a.start..a.end].ends_with("end A;"));
        let r = &f.classes[3];
        assert!(src[r.element_start..r.end].starts_with("replaceable model R"));
        assert!(src[r.start..r.end].starts_with("model R"));
        assert!(src[0..f.classes[0].end].ends_with("end P;"));
    }

    #[test]
    fn redeclarations_inside_modifiers_are_not_classes() {
        let f = scan("model M\n  extends B(redeclare model L = C);\nend M;");
        assert_eq!(f.classes.len(), 1);
    }

    #[test]
    fn reports_the_unclosed_class() {
        let o = unclosed_class("model U\n  Real x;\nequation\n  der(x) = -x;\n").expect("open");
        assert_eq!(o.name, "U");
        assert!(unclosed_class("model U\nend U;\n").is_none());
    }
}
