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
    // ryu: the shortest text that reads back to the same f64, several times
    // faster than `{:?}` (a tenth of writing a large model's result).
    let mut text = ryu::Buffer::new();
    for (t, row) in r.times.iter().zip(&r.rows) {
        w.write_all(number(&mut text, *t).as_bytes())?;
        for v in row {
            w.write_all(b",")?;
            w.write_all(number(&mut text, *v).as_bytes())?;
        }
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// `v` as the shortest text that reads back to it (`NaN`, `inf` and
/// `-inf` as Rust writes them).
fn number(text: &mut ryu::Buffer, v: f64) -> &str {
    if v.is_finite() {
        text.format_finite(v)
    } else if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
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
