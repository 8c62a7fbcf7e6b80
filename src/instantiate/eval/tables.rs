//! Data read at compile time: `Tables.readCSV(fileName)` (stdlib
//! `Tables`), a matrix of numbers from a CSV file, whose path is relative
//! to the file that names it. Its rows and columns are the table's; the
//! interpolation itself is written in the language (`stdlib/Tables`).
//!
//! Format: one row per line, values separated by commas (semicolons, tabs
//! or blanks also separate); lines that are empty or start with `#` are
//! skipped. Every other line must hold as many numbers as the first. An
//! empty field between separators, and a line with both `;` and `,` (a
//! decimal comma?), are errors rather than guesses.

use super::*;
use std::path::{Path, PathBuf};

/// The builtin behind `Tables.readCSV`, reached only through that
/// function's `external "builtin"` declaration.
pub(super) const READ_CSV: &str = "readCSV";

impl Flattener<'_> {
    /// `readCSV(fileName)`: the file's numbers as a Real matrix.
    pub(super) fn read_csv(
        &mut self,
        args: &[Arg],
        span: Span,
        ctx: &Ctx,
    ) -> Result<Value, Diagnostic> {
        let a = self.positional(args, span, READ_CSV, 1, 1)?;
        let name = self.eval_string(&a[0], ctx)?;
        let path = self.data_file_path(&name, a[0].span);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Diagnostic::error(
                DiagnosticKind::Io,
                a[0].span,
                format!("cannot read the table `{}`: {e}", path.display()),
            )
            .with_label("this file")
            .with_hint("a relative name is taken from the folder of the file that names it")
        })?;
        // (Relative to the root of the file that names it; an absolute
        // name is read where it is.)
        let root = if Path::new(&name).is_relative() {
            self.lib.root_of(a[0].span.file)
        } else {
            None
        };
        self.lib.files_read.push((path.clone(), root));
        let rows = parse_csv(&text).map_err(|(line, message)| {
            Diagnostic::error(DiagnosticKind::Table, a[0].span, format!("{}:{line}: {message}", path.display()))
                .with_label("the table read here")
                .with_hint("a table file holds one row of numbers per line, separated by commas; lines starting with # are comments")
        })?;
        let (m, n) = (rows.len(), rows[0].len());
        let elems = rows
            .into_iter()
            .flatten()
            .map(|x| self.arena.constant(x))
            .collect();
        Ok(Value {
            ty: ScalarType::Real,
            dims: vec![m, n],
            elems,
        })
    }

    /// `name` as a path: beside the source file of `span` (an absolute
    /// name as given: `join` keeps it).
    pub(super) fn data_file_path(&self, name: &str, span: Span) -> PathBuf {
        let source = Path::new(&self.lib.sources.file(span.file).path);
        source.parent().unwrap_or(Path::new("")).join(name)
    }
}

/// The rows of a CSV text; an error names its 1-based line.
fn parse_csv(text: &str) -> Result<Vec<Vec<f64>>, (usize, String)> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut first_line = 0;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.contains(';') && line.contains(',') {
            return Err((
                k + 1,
                "this row mixes `;` and `,` (a decimal comma? write numbers with a point)".into(),
            ));
        }
        // Fields between `,` or `;` (blanks around them are separators
        // too); an empty one is an error.
        let mut pieces = Vec::new();
        for part in line.split([',', ';']) {
            let words: Vec<&str> = part.split_whitespace().collect();
            if words.is_empty() {
                return Err((k + 1, "this row has an empty field".into()));
            }
            pieces.extend(words);
        }
        let fields = pieces.into_iter();
        let mut row = Vec::new();
        for (j, field) in fields.enumerate() {
            match field.parse::<f64>() {
                Ok(x) if x.is_finite() => row.push(x),
                _ => {
                    return Err((
                        k + 1,
                        format!(
                            "value {} of the row, `{field}`, is not a finite number",
                            j + 1
                        ),
                    ));
                }
            }
        }
        match rows.first() {
            Some(r) if r.len() != row.len() => {
                return Err((
                    k + 1,
                    format!(
                        "this row has {} values, the first (line {first_line}) has {}",
                        row.len(),
                        r.len()
                    ),
                ));
            }
            Some(_) => {}
            None => first_line = k + 1,
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err((1, "the file holds no rows of numbers".into()));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::parse_csv;

    #[test]
    fn rows_comments_and_separators() {
        let t = "# z, k\n0, 1.5e8\n\n0.5;2e8\n1\t1.5e8\n";
        assert_eq!(
            parse_csv(t),
            Ok(vec![vec![0.0, 1.5e8], vec![0.5, 2e8], vec![1.0, 1.5e8]])
        );
        assert_eq!(parse_csv("1,2\n3\n").unwrap_err().0, 2);
        assert_eq!(parse_csv("1,x\n").unwrap_err().0, 1);
        assert!(parse_csv("# only\n").is_err());
        assert!(parse_csv("1,nan\n").is_err());
        assert_eq!(parse_csv("\u{feff}1,2\n"), Ok(vec![vec![1.0, 2.0]]));
        assert_eq!(parse_csv("1,,2\n").unwrap_err().0, 1);
        assert!(
            parse_csv("0;1,5\n")
                .unwrap_err()
                .1
                .contains("decimal comma")
        );
    }
}
