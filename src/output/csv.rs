//! CSV results: a header of dotted names with `time` first, then one row per
//! output point (an event gives two rows at the same time: before and after).

use crate::solve::Results;
use std::io::Write;
use std::path::Path;

pub fn write(r: &Results, path: &Path) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(f);
    write!(w, "\"time\"")?;
    for n in &r.names {
        write!(w, ",\"{}\"", n.replace('"', "\"\""))?;
    }
    writeln!(w)?;
    for (t, row) in r.times.iter().zip(&r.rows) {
        write!(w, "{t:?}")?;
        for v in row {
            write!(w, ",{v:?}")?;
        }
        writeln!(w)?;
    }
    w.flush()
}

/// Reads a CSV result written by [`write`] (for `rmoc plot` and tests).
pub fn read(path: &Path) -> std::io::Result<(Vec<String>, Vec<Vec<f64>>)> {
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    let head = lines.next().unwrap_or("");
    let names: Vec<String> = split_csv(head)
        .into_iter()
        .map(|s| s.trim().trim_matches('"').replace("\"\"", "\""))
        .collect();
    let mut rows = Vec::new();
    for (k, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Result<Vec<f64>, _> = line.split(',').map(|x| x.trim().parse::<f64>()).collect();
        match row {
            Ok(r) => rows.push(r),
            Err(e) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("line {}: {e}", k + 2),
                ));
            }
        }
    }
    Ok((names, rows))
}

fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                cur.push(ch);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    out.push(cur);
    out
}
