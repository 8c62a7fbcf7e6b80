//! CSV results: a header of dotted names with `time` first, then one row per
//! output point (an event gives two rows at the same time: before and after).

use crate::solve::Results;
use std::io::Write;
use std::path::Path;

pub fn write(r: &Results, path: &Path) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(f);
    header(&mut w, &r.names)?;
    // ryu: the shortest text that reads back to the same f64, several times
    // faster than `{:?}` (a tenth of writing a large model's result).
    let mut text = ryu::Buffer::new();
    for (t, row) in r.times.iter().zip(&r.rows) {
        row_line(&mut w, &mut text, *t, row)?;
    }
    w.flush()
}

fn header(w: &mut impl Write, names: &[String]) -> std::io::Result<()> {
    write!(w, "\"time\"")?;
    for n in names {
        write!(w, ",\"{}\"", n.replace('"', "\"\""))?;
    }
    writeln!(w)
}

fn row_line(
    w: &mut impl Write,
    text: &mut ryu::Buffer,
    t: f64,
    row: &[f64],
) -> std::io::Result<()> {
    w.write_all(number(text, t).as_bytes())?;
    for v in row {
        w.write_all(b",")?;
        w.write_all(number(text, *v).as_bytes())?;
    }
    w.write_all(b"\n")
}

/// A CSV result written while the run goes (`solve::Options::rows`): into
/// a temporary file beside the target, renamed by [`CsvStream::finish`]
/// once the run is over; dropped unfinished (a failed run), the temporary
/// file is removed, so a file that looks complete never appears.
pub struct CsvStream {
    w: Option<std::io::BufWriter<std::fs::File>>,
    tmp: std::path::PathBuf,
    text: ryu::Buffer,
}

impl CsvStream {
    /// Opens the temporary file beside `target` (a regular file or a new
    /// one); the run writes the header when it knows its columns.
    pub fn create(target: &Path) -> std::io::Result<CsvStream> {
        let tmp = super::temp_path(target);
        let w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        Ok(CsvStream {
            w: Some(w),
            tmp,
            text: ryu::Buffer::new(),
        })
    }

    /// Writes the rows `r` still holds and renames the file to `target`.
    pub fn finish(&mut self, r: &Results, target: &Path) -> std::io::Result<()> {
        let Some(mut w) = self.w.take() else {
            return Err(std::io::Error::other(
                "the result stream was already closed",
            ));
        };
        for (t, row) in r.times.iter().zip(&r.rows) {
            row_line(&mut w, &mut self.text, *t, row)?;
        }
        w.flush()?;
        drop(w);
        std::fs::rename(&self.tmp, target)
    }
}

impl crate::solve::RowSink for CsvStream {
    fn begin(&mut self, names: &[String]) -> std::io::Result<()> {
        match self.w.as_mut() {
            Some(w) => header(w, names),
            None => Err(std::io::Error::other("the result stream is closed")),
        }
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        match self.w.as_mut() {
            Some(w) => row_line(w, &mut self.text, t, values),
            None => Err(std::io::Error::other("the result stream is closed")),
        }
    }
}

impl Drop for CsvStream {
    fn drop(&mut self) {
        // Unfinished, or the rename failed: the file must not stay.
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
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
