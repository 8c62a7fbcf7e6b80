//! Syntax: the pest parser, the AST with byte spans, and the logos token scanner.
//!
//! API boundary: [`parse`] turns one file's text into a [`ast::StoredDefinition`]
//! or one diagnostic; [`scan`] finds class ranges without parsing. Nothing here
//! resolves names or evaluates expressions.

pub mod ast;
pub mod parser;
pub mod scan;

pub use parser::{parse, parse_expression};

use crate::diag::{Diagnostic, DiagnosticKind};

/// Parses class `idx` of a scanned library file on its own: its text with its
/// nested classes blanked out (they are parsed when used), spans those of the
/// file. The library does this when a class is first used; `build.rs` does it
/// for every standard-library class when rmoc is built.
pub fn parse_class(
    text: &str,
    file: u32,
    scanned: &scan::ScannedFile,
    idx: usize,
) -> Result<ast::ClassElement, Diagnostic> {
    let sc = &scanned.classes[idx];
    let nested: Vec<(usize, usize)> = sc
        .children
        .iter()
        .map(|&c| (scanned.classes[c].element_start, scanned.classes[c].end))
        .collect();
    let blanked = scan::blanked(text, (sc.element_start, sc.end), &nested);
    let comp = parser::parse_element(&blanked, file, sc.element_start)?;
    comp.elements
        .into_iter()
        .find_map(|e| match e {
            ast::Element::Class(ce) => Some(ce),
            _ => None,
        })
        .ok_or_else(|| {
            Diagnostic::error(
                DiagnosticKind::Syntax,
                crate::diag::Span::new(file, sc.start, sc.start),
                format!("`{}` could not be read as a class definition", sc.name),
            )
        })
}
