//! Syntax: the pest parser, the AST with byte spans, and the logos token scanner.
//!
//! API boundary: [`parse`] turns one file's text into a [`ast::StoredDefinition`]
//! or one diagnostic; [`scan`] finds class ranges without parsing. Nothing here
//! resolves names or evaluates expressions.

pub mod ast;
pub mod parser;
pub mod scan;

pub use parser::{parse, parse_expression};
