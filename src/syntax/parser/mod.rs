//! The pest parser of `grammar/rmo.pest` and the conversion of its parse tree
//! into the [`ast`](super::ast).
//!
//! The grammar accepts exactly the syntax; this module only builds nodes and
//! turns pest's failure (the furthest position reached, the rules expected
//! there) into a diagnostic a Modelica user can act on. Its rooms:
//! - `recovery.rs`: a failed parse as a diagnostic (expected tokens,
//!   misspelled keywords, unclosed brackets, strings, comments and classes);
//! - `limits.rs`: nesting and operator-count limits checked before parsing;
//! - `tree.rs`: [`TreeBuilder`], the parse tree to classes, elements,
//!   modifications, equations and statements;
//! - `expressions.rs`: expressions, operator precedence (a Pratt parser),
//!   calls and component references.

mod expressions;
mod limits;
mod recovery;
mod tree;

pub use limits::{MAX_NESTING, MAX_OPERATORS};
pub use recovery::KEYWORDS;

use super::ast::*;
use crate::diag::Diagnostic;
use limits::check_nesting;
use pest::Parser as _;
use pest::iterators::Pair;
use recovery::syntax_error;
use tree::TreeBuilder;

#[derive(pest_derive::Parser)]
#[grammar = "../grammar/rmo.pest"]
pub(super) struct RmoParser;

type P<'a> = Pair<'a, Rule>;

/// Parses one file. `file` is the source-map id used in every span.
pub fn parse(text: &str, file: u32) -> Result<StoredDefinition, Diagnostic> {
    check_nesting(text, file, 0)?;
    let mut pairs =
        RmoParser::parse(Rule::stored_definition, text).map_err(|e| syntax_error(text, file, e))?;
    let root = pairs
        .next()
        .expect("the grammar's root rule always yields one pair");
    let b = TreeBuilder::new(file, 0);
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
    let b = TreeBuilder::new(file, 0);
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
    let b = TreeBuilder::new(file, offset);
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
