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
///
/// Formatting numbers is most of the cost of writing (a 2 500-cell grid's
/// 12 500 columns: 25 ms of a 200 ms run), so it runs on a thread of its
/// own, beside the integrator: rows go to it in batches of about
/// [`BATCH_VALUES`] values (a per-row message would cost more than a
/// small model's row).
pub struct CsvStream {
    /// The rows not yet handed to the writer, and their times.
    batch: Batch,
    /// To the writer; `None` once closed.
    to_writer: Option<std::sync::mpsc::SyncSender<Message>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    tmp: std::path::PathBuf,
}

/// Values a batch of rows holds before it goes to the writer.
pub const BATCH_VALUES: usize = 1 << 16;

/// Bytes written between two requests to the kernel to start writing the
/// file to disk (`start_writeback`).
const START_WRITEBACK: u64 = 4 << 20;

/// Asks the kernel to start writing `f`'s dirty pages to disk without
/// waiting (Linux's `sync_file_range`), so that the `fsync` before the
/// rename has little left to wait for: the 50 x 50 grid's run waited 21 ms
/// for its 19 MB at the end, 12 ms with this. Elsewhere nothing is done
/// here.
fn start_writeback(f: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the call only schedules
        // writeback of the file's pages and reads no memory of ours.
        unsafe {
            libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

#[derive(Default)]
struct Batch {
    times: Vec<f64>,
    values: Vec<f64>,
}

enum Message {
    Header(Vec<String>),
    Rows(Batch),
}

/// Appends the rows of `b` as CSV lines.
fn batch_lines(w: &mut impl Write, text: &mut ryu::Buffer, b: &Batch) -> std::io::Result<()> {
    let width = b.values.len() / b.times.len().max(1);
    debug_assert_eq!(width * b.times.len(), b.values.len());
    for (k, &t) in b.times.iter().enumerate() {
        row_line(w, text, t, &b.values[k * width..(k + 1) * width])?;
    }
    Ok(())
}

impl CsvStream {
    /// Opens the temporary file beside `target` (a regular file or a new
    /// one) and starts its writer; the run writes the header when it knows
    /// its columns.
    pub fn create(target: &Path) -> std::io::Result<CsvStream> {
        let tmp = super::temp_path(target);
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        let remove_tmp = |e: std::io::Error| {
            let _ = std::fs::remove_file(&tmp);
            e
        };
        // A few batches in flight at most: memory stays bounded when the
        // integrator outruns the disk.
        let (to_writer, messages) = std::sync::mpsc::sync_channel::<Message>(4);
        let writer = std::thread::Builder::new()
            .name("csv writer".into())
            .spawn(move || {
                let mut text = ryu::Buffer::new();
                let mut written_back = 0u64;
                for m in messages {
                    match m {
                        Message::Header(names) => header(&mut w, &names)?,
                        Message::Rows(b) => batch_lines(&mut w, &mut text, &b)?,
                    }
                    let written = std::io::Seek::stream_position(&mut w)?;
                    if written - written_back >= START_WRITEBACK {
                        w.flush()?;
                        start_writeback(w.get_ref());
                        written_back = written;
                    }
                }
                // On disk before the file is renamed into place: after a
                // crash the target is whole or absent, never cut short.
                w.flush()?;
                w.get_ref().sync_all()
            })
            .map_err(remove_tmp)?;
        Ok(CsvStream {
            batch: Batch::default(),
            to_writer: Some(to_writer),
            writer: Some(writer),
            tmp,
        })
    }

    /// Hands the batch to the writer. An error means the writer stopped:
    /// its own error comes from [`Self::close`].
    fn send(&mut self, m: Message) -> std::io::Result<()> {
        let sent = match &self.to_writer {
            Some(tx) => tx.send(m).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        match self.close() {
            Err(e) => Err(e),
            Ok(()) => Err(std::io::Error::other("the result stream is closed")),
        }
    }

    fn send_batch(&mut self) -> std::io::Result<()> {
        if self.batch.times.is_empty() {
            return Ok(());
        }
        let b = std::mem::take(&mut self.batch);
        self.send(Message::Rows(b))
    }

    /// Ends the writer: the file is flushed and closed. Its error, if any.
    fn close(&mut self) -> std::io::Result<()> {
        self.to_writer = None;
        match self.writer.take() {
            Some(w) => w
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the result writer failed"))),
            None => Ok(()),
        }
    }

    /// Writes the rows `r` still holds and renames the file to `target`.
    pub fn finish(&mut self, r: &Results, target: &Path) -> std::io::Result<()> {
        if self.to_writer.is_none() {
            return Err(std::io::Error::other(
                "the result stream was already closed",
            ));
        }
        for (t, row) in r.times.iter().zip(&r.rows) {
            crate::solve::RowSink::row(self, *t, row)?;
        }
        self.send_batch()?;
        self.close()?;
        std::fs::rename(&self.tmp, target)
    }
}

impl crate::solve::RowSink for CsvStream {
    fn begin(&mut self, names: &[String]) -> std::io::Result<()> {
        self.send(Message::Header(names.to_vec()))
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        if self.to_writer.is_none() {
            return Err(std::io::Error::other("the result stream is closed"));
        }
        self.batch.times.push(t);
        self.batch.values.extend_from_slice(values);
        if self.batch.values.len() >= BATCH_VALUES {
            self.send_batch()?;
        }
        Ok(())
    }
}

impl Drop for CsvStream {
    fn drop(&mut self) {
        // Unfinished, or the rename failed: the writer is stopped and the
        // file must not stay.
        let _ = self.close();
        if self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// `v` as the shortest text that reads back to it (`NaN`, `inf` and
/// `-inf` as Rust writes them).
pub fn number(text: &mut ryu::Buffer, v: f64) -> &str {
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
