//! The points of a sweep: which parameters change, and their values at
//! every point, from `-p` axes (`NAME=START:STOP:N`, `NAME=v1,v2,...`,
//! `NAME=v`) combined as a grid or zipped, or from a CSV file of samples.

use crate::diag::Span;
use crate::diag::{Diagnostic, DiagnosticKind, SourceMap};
use crate::flat::ScalarType;
use crate::solve::settings::{check_parameter_value, settable_parameter};
use crate::structure::Causal;

/// The most points one sweep may have (a grid's size multiplies quickly).
pub const MAX_POINTS: usize = 10_000_000;

/// How several `-p` axes make points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Combine {
    /// Every combination; the first axis varies slowest.
    #[default]
    Grid,
    /// The k-th value of every axis together; the axes have one length
    /// (an axis of one value goes with every point).
    Zip,
}

/// The parameters a sweep sets and their values, one row per point.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The parameters' names, as given.
    pub names: Vec<String>,
    /// Their variables in the model.
    pub vars: Vec<u32>,
    /// Their types, for the table (`3`, not `3.0`; `true`).
    pub types: Vec<ScalarType>,
    /// One row per point, parallel to `names`.
    pub points: Vec<Vec<f64>>,
}

/// One `-p` axis: a name and its values.
struct Axis {
    name: String,
    var: u32,
    values: Vec<f64>,
    /// What the user wrote, for the messages.
    spec: String,
}

impl Plan {
    /// The points of the `-p` specs, combined by `combine`.
    pub fn from_axes(c: &Causal, specs: &[String], combine: Combine) -> Result<Plan, Diagnostic> {
        let axes = specs
            .iter()
            .map(|s| axis(c, s))
            .collect::<Result<Vec<_>, _>>()?;
        refuse_repeats(axes.iter().map(|a| a.name.as_str()))?;
        let lengths: Vec<usize> = axes.iter().map(|a| a.values.len()).collect();
        let count = match combine {
            Combine::Grid => lengths
                .iter()
                .try_fold(1usize, |n, &l| n.checked_mul(l))
                .unwrap_or(usize::MAX),
            Combine::Zip => {
                let longest = lengths.iter().copied().max().unwrap_or(1);
                if let Some(a) = axes
                    .iter()
                    .find(|a| a.values.len() != 1 && a.values.len() != longest)
                {
                    let shown: Vec<String> = axes
                        .iter()
                        .map(|a| format!("{} has {}", a.name, a.values.len()))
                        .collect();
                    return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                        "`--zip` pairs the k-th values of every axis, and `-p {}` has {} values where another has {longest}",
                        a.spec,
                        a.values.len()
                    ))
                    .with_hint(format!(
                        "give every axis the same number of values ({}), or use --grid",
                        shown.join(", ")
                    )));
                }
                longest
            }
        };
        if count > MAX_POINTS {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Limit,
                format!("the sweep has {count} points, more than {MAX_POINTS}"),
            )
            .with_hint("use fewer values per axis, or --zip"));
        }
        let points = (0..count)
            .map(|k| match combine {
                Combine::Zip => axes
                    .iter()
                    .map(|a| a.values[if a.values.len() == 1 { 0 } else { k }])
                    .collect(),
                Combine::Grid => {
                    // The last axis varies fastest, as nested loops in the
                    // order the axes were given.
                    let mut rest = k;
                    let mut row = vec![0.0; axes.len()];
                    for (i, a) in axes.iter().enumerate().rev() {
                        row[i] = a.values[rest % a.values.len()];
                        rest /= a.values.len();
                    }
                    row
                }
            })
            .collect();
        Ok(Plan {
            names: axes.iter().map(|a| a.name.clone()).collect(),
            vars: axes.iter().map(|a| a.var).collect(),
            types: axes.iter().map(|a| c.vars[a.var as usize].ty).collect(),
            points,
        })
    }

    /// The points of a CSV file of samples (`--samples`): a header of
    /// parameter names, then one row of values per point; `fixed` are `-p`
    /// specs of one value each, set at every point. The file is added to
    /// `sources`, so that a bad cell is shown where it is.
    pub fn from_samples(
        c: &Causal,
        sources: &mut SourceMap,
        path: &std::path::Path,
        fixed: &[String],
    ) -> Result<Plan, Diagnostic> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostic::error_nospan(DiagnosticKind::Io, format!("cannot read `{shown}`: {e}"))
                .with_hint("--samples takes a CSV file: a header of parameter names, then one row of values per point")
        })?;
        // A byte-order mark (spreadsheets write one) is not part of the
        // first name.
        let text = text
            .strip_prefix('\u{feff}')
            .map(str::to_string)
            .unwrap_or(text);
        let file = sources.add(shown.clone(), text.clone());
        let mut lines = cells_by_line(&text, file)
            .into_iter()
            .filter(|l| !l.is_empty());
        let Some(header) = lines.next() else {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("`{shown}` has no header: nothing to sweep"),
            )
            .with_hint("write the parameter names on the first line, separated by commas"));
        };
        let mut names = Vec::new();
        let mut vars = Vec::new();
        for (name, span) in &header {
            let v = settable_parameter(c, name, &format!("{name}=... (in {shown})"))
                .map_err(|d| located(d, *span))?;
            names.push(name.clone());
            vars.push(v);
        }
        let mut points = Vec::new();
        for row in lines {
            if row.len() != header.len() {
                let span = row.last().map(|c| c.1).unwrap_or(header[0].1);
                return Err(Diagnostic::error(
                    DiagnosticKind::Setting,
                    span,
                    format!(
                        "this row has {} values and the header {} names",
                        row.len(),
                        header.len()
                    ),
                )
                .with_hint("give one value per parameter on every row"));
            }
            let mut point = Vec::with_capacity(row.len());
            for ((raw, span), (&v, name)) in row.iter().zip(vars.iter().zip(&names)) {
                let value = number(c, v, raw)
                    .ok_or_else(|| {
                        Diagnostic::error(
                            DiagnosticKind::Setting,
                            *span,
                            format!("`{raw}` is not a value of `{name}`"),
                        )
                        .with_hint(hint_for(c, v))
                    })
                    .and_then(|x| {
                        check_parameter_value(c, v, x, raw, &format!("{name}={raw}"))
                            .map(|_| x)
                            .map_err(|d| located(d, *span))
                    })?;
                point.push(value);
            }
            points.push(point);
        }
        if points.is_empty() {
            return Err(Diagnostic::error(
                DiagnosticKind::Setting,
                header[0].1,
                format!("`{shown}` has a header and no rows: no points to run"),
            )
            .with_hint("add one row of values per point"));
        }
        // `-p NAME=v` beside the samples: the same value at every point.
        for spec in fixed {
            let a = axis(c, spec)?;
            if a.values.len() != 1 {
                return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                    "`-p {spec}` gives {} values, and the points come from --samples",
                    a.values.len()
                ))
                .with_hint("beside --samples, -p sets one value at every point; put the others in the file as a column"));
            }
            names.push(a.name);
            vars.push(a.var);
            for p in &mut points {
                p.push(a.values[0]);
            }
        }
        refuse_repeats(names.iter().map(String::as_str))?;
        Ok(Plan {
            types: vars.iter().map(|&v| c.vars[v as usize].ty).collect(),
            names,
            vars,
            points,
        })
    }

    /// The points given as values (the Python package's `sweep`): `names`
    /// of settable parameters, one row of values per point, each checked
    /// against its parameter's type.
    pub fn from_points(
        c: &Causal,
        names: &[String],
        points: Vec<Vec<f64>>,
    ) -> Result<Plan, Diagnostic> {
        refuse_repeats(names.iter().map(String::as_str))?;
        let vars = names
            .iter()
            .map(|n| settable_parameter(c, n, &format!("{n}=...")))
            .collect::<Result<Vec<u32>, _>>()?;
        let types: Vec<ScalarType> = vars.iter().map(|&v| c.vars[v as usize].ty).collect();
        for (k, p) in points.iter().enumerate() {
            if p.len() != names.len() {
                return Err(Diagnostic::error_nospan(
                    DiagnosticKind::Setting,
                    format!(
                        "point {k} has {} values for {} parameters",
                        p.len(),
                        names.len()
                    ),
                ));
            }
            for ((&x, &v), name) in p.iter().zip(&vars).zip(names) {
                let shown = plain(x);
                check_parameter_value(c, v, x, &shown, &format!("{name}={shown}"))
                    .map_err(|d| d.with_note(format!("at point {k}")))?;
            }
        }
        Ok(Plan {
            names: names.to_vec(),
            vars,
            types,
            points,
        })
    }

    /// The value of parameter `i` at point `k` as the table shows it: the
    /// shortest text that reads back to the same number (a whole number for
    /// an Integer, `true` or `false` for a Boolean).
    pub fn shown(&self, k: usize, i: usize) -> String {
        show(self.points[k][i], self.types[i])
    }
}

/// A parameter value as text, by its type.
pub fn show(x: f64, ty: ScalarType) -> String {
    match ty {
        ScalarType::Boolean => (if x != 0.0 { "true" } else { "false" }).to_string(),
        ScalarType::Integer if x.abs() < 2f64.powi(53) => format!("{}", x as i64),
        _ => ryu::Buffer::new().format(x).to_string(),
    }
}

/// `x` as the shortest text that reads back to it.
fn plain(x: f64) -> String {
    crate::output::csv::number(&mut ryu::Buffer::new(), x).to_string()
}

/// `-p NAME=START:STOP:N`, `-p NAME=v1,v2,...` or `-p NAME=v`.
fn axis(c: &Causal, spec: &str) -> Result<Axis, Diagnostic> {
    let Some((name, raw)) = spec.split_once('=') else {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Setting,
            format!("`-p {spec}`: expected NAME=VALUES"),
        )
        .with_hint(
            "-p NAME=START:STOP:N (N values from START to STOP), -p NAME=v1,v2,... or -p NAME=v",
        ));
    };
    let (name, raw) = (name.trim(), raw.trim());
    let var = settable_parameter(c, name, spec)?;
    let bad = |what: &str| {
        Diagnostic::error_nospan(DiagnosticKind::Setting, format!("`-p {spec}`: {what}"))
            .with_hint(hint_for(c, var))
    };
    let values = if raw.contains(':') {
        let parts: Vec<&str> = raw.split(':').map(str::trim).collect();
        let [a, b, n] = parts.as_slice() else {
            return Err(bad("a range is START:STOP:N"));
        };
        let (Ok(a), Ok(b)) = (a.parse::<f64>(), b.parse::<f64>()) else {
            return Err(bad("the ends of a range are numbers"));
        };
        let n: usize = match n.parse() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(bad(
                    "N, the number of values, is a whole number of at least 1",
                ));
            }
        };
        if n > MAX_POINTS {
            return Err(bad(&format!("N is at most {MAX_POINTS}")));
        }
        linspace(a, b, n)
    } else {
        raw.split(',')
            .map(|r| {
                let r = r.trim();
                number(c, var, r).ok_or_else(|| bad(&format!("`{r}` is not a value of `{name}`")))
            })
            .collect::<Result<Vec<f64>, _>>()?
    };
    for &x in &values {
        check_parameter_value(c, var, x, &plain(x), spec)?;
    }
    Ok(Axis {
        name: name.to_string(),
        var,
        values,
        spec: spec.to_string(),
    })
}

/// `n` values from `a` to `b`, both ends exact.
fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|k| match k {
            0 => a,
            _ if k + 1 == n => b,
            _ => a + (b - a) * (k as f64 / (n - 1) as f64),
        })
        .collect()
}

/// A number, or `true`/`false` for a Boolean parameter.
fn number(c: &Causal, v: u32, raw: &str) -> Option<f64> {
    match (c.vars[v as usize].ty, raw) {
        (ScalarType::Boolean, "true") => Some(1.0),
        (ScalarType::Boolean, "false") => Some(0.0),
        _ => raw.parse::<f64>().ok(),
    }
}

fn hint_for(c: &Causal, v: u32) -> &'static str {
    match c.vars[v as usize].ty {
        ScalarType::Boolean => "a Boolean parameter takes true or false (or 1 or 0)",
        ScalarType::Integer => "an Integer parameter takes whole numbers",
        ScalarType::Real => "write numbers such as 0.5, 2e-3 or -1",
    }
}

/// `d` placed at `span` when it has no place of its own (the message
/// names a value in a samples file).
fn located(mut d: Diagnostic, span: Span) -> Diagnostic {
    d.span = Some(span);
    d
}

fn refuse_repeats<'a>(names: impl Iterator<Item = &'a str>) -> Result<(), Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::DuplicateName,
                format!("the sweep sets `{n}` twice"),
            )
            .with_hint("give each parameter once: one -p axis or one column of --samples"));
        }
    }
    Ok(())
}

/// The comma-separated cells of every line of a CSV text, trimmed and
/// unquoted, each with its span; `#` starts a comment line.
fn cells_by_line(text: &str, file: u32) -> Vec<Vec<(String, Span)>> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() || body.trim_start().starts_with('#') {
            out.push(Vec::new());
            continue;
        }
        let mut cells = Vec::new();
        let mut at = start;
        for cell in body.split(',') {
            let lead = cell.len() - cell.trim_start().len();
            let trimmed = cell.trim();
            let span = Span {
                file,
                start: (at + lead) as u32,
                end: (at + lead + trimmed.len()) as u32,
            };
            let unquoted = trimmed
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(trimmed);
            cells.push((unquoted.to_string(), span));
            at += cell.len() + 1;
        }
        out.push(cells);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_has_both_ends_exactly() {
        let v = linspace(0.1, 0.7, 7);
        assert_eq!(v.len(), 7);
        assert_eq!(v[0], 0.1);
        assert_eq!(v[6], 0.7);
        assert!((v[3] - 0.4).abs() < 1e-15);
        assert_eq!(linspace(2.0, 5.0, 1), vec![2.0]);
    }

    #[test]
    fn cells_carry_their_place() {
        let text = "a, b\n# comment\n1,\"2\"\n";
        let lines = cells_by_line(text, 0);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0][1].0, "b");
        assert_eq!(
            &text[lines[0][1].1.start as usize..lines[0][1].1.end as usize],
            "b"
        );
        assert!(lines[1].is_empty());
        assert_eq!(lines[2][1].0, "2");
    }
}
