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
    let mut line = Vec::new();
    for (t, row) in r.times.iter().zip(&r.rows) {
        line.clear();
        row_text(&mut line, &mut text, *t, row);
        w.write_all(&line)?;
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

/// Appends the CSV line of the row at `t` to `out`.
fn row_text(out: &mut Vec<u8>, text: &mut ryu::Buffer, t: f64, row: &[f64]) {
    out.extend_from_slice(number(text, t).as_bytes());
    for v in row {
        out.push(b',');
        out.extend_from_slice(number(text, *v).as_bytes());
    }
    out.push(b'\n');
}

/// A CSV result written while the run goes (`solve::Options::rows`): into
/// a temporary file beside the target, renamed by [`CsvStream::finish`]
/// once the run is over; dropped unfinished (a failed run), the temporary
/// file is removed, so a file that looks complete never appears.
///
/// Formatting numbers is most of the cost of writing (a 2 500-cell grid's
/// 10 000 columns: about 45 ms of a 190 ms run), so it runs on a writer
/// thread of its own, beside the integrator: rows go to it in batches of
/// about [`BATCH_VALUES`] values (a per-row message would cost more than a
/// small model's row). Rows come fastest at the end of a run, when the
/// steps are long, and the batches left then are formatted by the writer
/// and by the run's own thread together ([`CsvStream::finish`]); the
/// writer writes the texts in order.
pub struct CsvStream {
    /// The rows not yet handed to the writer, and their times.
    batch: Batch,
    /// The queue shared with the writer.
    shared: std::sync::Arc<WriterQueue>,
    /// The sequence number of the next text (the header is 0).
    next: u64,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    tmp: std::path::PathBuf,
}

/// Values a batch of rows holds before it goes to the writer.
pub const BATCH_VALUES: usize = 1 << 16;

/// Batches queued or formatted but not yet written, at most: memory stays
/// bounded when the integrator outruns the disk (about 16 x 0.5 MB of
/// values and their text).
const IN_FLIGHT: usize = 16;

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

impl Batch {
    /// The batch's rows as CSV lines.
    fn text(&self, text: &mut ryu::Buffer) -> Vec<u8> {
        let width = self.values.len() / self.times.len().max(1);
        debug_assert_eq!(width * self.times.len(), self.values.len());
        let mut out = Vec::with_capacity(24 * (self.values.len() + self.times.len()));
        for (k, &t) in self.times.iter().enumerate() {
            row_text(&mut out, text, t, &self.values[k * width..(k + 1) * width]);
        }
        out
    }
}

/// The writer's queue, shared with the run's thread.
#[derive(Default)]
struct WriterQueue {
    queue: std::sync::Mutex<QueuedTexts>,
    /// Signalled on every change of the queue.
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct QueuedTexts {
    /// Batches not yet formatted, by sequence number.
    waiting: std::collections::VecDeque<(u64, Batch)>,
    /// Texts not yet written, by sequence number.
    formatted: std::collections::BTreeMap<u64, Vec<u8>>,
    /// Batches taken from `waiting` and being formatted.
    formatting: usize,
    /// The number of texts in all, once the run has sent its last batch.
    total: Option<u64>,
    /// The writer stopped (a write error, which its thread returns).
    stopped: bool,
}

/// What the run hands the writer: a text made already (the header) or
/// rows to format.
enum Queued {
    Text(Vec<u8>),
    Rows(Batch),
}

impl QueuedTexts {
    fn in_flight(&self) -> usize {
        self.waiting.len() + self.formatted.len() + self.formatting
    }
}

impl WriterQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueuedTexts> {
        // A thread that panicked holding the lock left the queue as it
        // was between two whole changes: it is still consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(
        &self,
        q: std::sync::MutexGuard<'a, QueuedTexts>,
    ) -> std::sync::MutexGuard<'a, QueuedTexts> {
        self.changed.wait(q).unwrap_or_else(|e| e.into_inner())
    }

    /// Formats one waiting batch, if there is one; whether there was.
    fn format_one(&self, text: &mut ryu::Buffer) -> bool {
        let (seq, batch) = {
            let mut q = self.lock();
            if q.stopped {
                return false;
            }
            match q.waiting.pop_front() {
                Some(x) => {
                    q.formatting += 1;
                    x
                }
                None => return false,
            }
        };
        let bytes = batch.text(text);
        drop(batch);
        let mut q = self.lock();
        q.formatting -= 1;
        q.formatted.insert(seq, bytes);
        self.changed.notify_all();
        true
    }

    /// The writer's loop: the texts in order into `w`, formatting waiting
    /// batches while the next text is not ready.
    fn write_all(&self, w: &mut std::fs::File) -> std::io::Result<()> {
        enum Next {
            Write(Vec<u8>),
            Format,
            Done,
        }
        let mut text = ryu::Buffer::new();
        let (mut next, mut written, mut written_back) = (0u64, 0u64, 0u64);
        loop {
            let todo = {
                let mut q = self.lock();
                loop {
                    if q.stopped {
                        break Next::Done;
                    }
                    if let Some(bytes) = q.formatted.remove(&next) {
                        break Next::Write(bytes);
                    }
                    if q.total == Some(next) {
                        break Next::Done;
                    }
                    if !q.waiting.is_empty() {
                        break Next::Format;
                    }
                    q = self.wait(q);
                }
            };
            match todo {
                Next::Done => return Ok(()),
                Next::Format => {
                    self.format_one(&mut text);
                }
                Next::Write(bytes) => {
                    // Room in the queue for the run.
                    self.changed.notify_all();
                    w.write_all(&bytes)?;
                    next += 1;
                    written += bytes.len() as u64;
                    if written - written_back >= START_WRITEBACK {
                        start_writeback(w);
                        written_back = written;
                    }
                }
            }
        }
    }
}

/// Whether `start`, a file's first bytes, is how [`write`] begins: the
/// quoted name of its first column, `"time"`.
pub(super) fn begins_as_result(start: &[u8]) -> bool {
    start.starts_with(b"\"time\"")
}

impl CsvStream {
    /// Opens the temporary file beside `target` (a regular file or a new
    /// one) and starts its writer; the run writes the header when it knows
    /// its columns. An earlier result at `target` is removed.
    pub fn create(target: &Path) -> std::io::Result<CsvStream> {
        let tmp = super::temp_path(target);
        let mut file = std::fs::File::create(&tmp)?;
        let shared = std::sync::Arc::new(WriterQueue::default());
        let queue = shared.clone();
        let earlier = target.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("csv writer".into())
            .spawn(move || {
                // However the writer ends (an error, a panic), the run's
                // thread must not wait for it any more.
                struct StopOnExit(std::sync::Arc<WriterQueue>);
                impl Drop for StopOnExit {
                    fn drop(&mut self) {
                        self.0.lock().stopped = true;
                        self.0.changed.notify_all();
                    }
                }
                let _stop = StopOnExit(queue.clone());
                super::remove_earlier_result(&earlier);
                queue.write_all(&mut file).and_then(|()| {
                    // On disk before the file is renamed into place: after
                    // a crash the target is whole or absent, never cut
                    // short.
                    file.sync_all()
                })
            });
        let writer = match writer {
            Ok(w) => w,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        Ok(CsvStream {
            batch: Batch::default(),
            shared,
            next: 0,
            writer: Some(writer),
            tmp,
        })
    }

    /// Hands a text or a batch to the writer, waiting while the queue is
    /// full. An error means the writer stopped: its own error comes from
    /// [`Self::close`].
    fn send(&mut self, item: Queued) -> std::io::Result<()> {
        let stopped = {
            let mut q = self.shared.lock();
            while !q.stopped && self.writer.is_some() && q.in_flight() >= IN_FLIGHT {
                q = self.shared.wait(q);
            }
            let stopped = q.stopped || self.writer.is_none() || q.total.is_some();
            if !stopped {
                match item {
                    Queued::Text(bytes) => {
                        q.formatted.insert(self.next, bytes);
                    }
                    Queued::Rows(batch) => q.waiting.push_back((self.next, batch)),
                }
                self.next += 1;
                self.shared.changed.notify_all();
            }
            stopped
        };
        if !stopped {
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
        self.send(Queued::Rows(b))
    }

    /// Ends the writer: the batches still waiting are formatted here and
    /// by the writer together, and the file is written and closed. Its
    /// error, if any.
    fn close(&mut self) -> std::io::Result<()> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        {
            let mut q = self.shared.lock();
            q.total.get_or_insert(self.next);
            self.shared.changed.notify_all();
        }
        let mut text = ryu::Buffer::new();
        while self.shared.format_one(&mut text) {}
        writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the result writer failed")))
    }

    /// Writes the rows `r` still holds and renames the file to `target`.
    pub fn finish(&mut self, r: &Results, target: &Path) -> std::io::Result<()> {
        if self.writer.is_none() {
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
        let mut text = Vec::new();
        header(&mut text, names)?;
        self.send(Queued::Text(text))
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        if self.writer.is_none() {
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
        // Unfinished, or the rename failed: the writer is stopped (what it
        // has not written yet is dropped) and the file must not stay.
        if self.writer.is_some() {
            let mut q = self.shared.lock();
            q.stopped = true;
            q.waiting.clear();
            self.shared.changed.notify_all();
        }
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

#[cfg(test)]
mod stream_tests {
    use super::{CsvStream, IN_FLIGHT, write};
    use crate::solve::{Results, RowSink};

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("rmoc-csv-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    /// Rows of `width` values that no two share, the last held back as a
    /// run holds it (for `--print`).
    fn rows(n: usize, width: usize) -> (Results, Vec<(f64, Vec<f64>)>) {
        let all: Vec<(f64, Vec<f64>)> = (0..n)
            .map(|i| {
                let t = i as f64 / 7.0;
                let row = (0..width)
                    .map(|j| (t + 1.0).sin() * (j as f64 + 0.5).ln() / 3.0)
                    .collect();
                (t, row)
            })
            .collect();
        let r = Results {
            names: (0..width).map(|j| format!("x[{j}]")).collect(),
            times: all.iter().map(|(t, _)| *t).collect(),
            rows: all.iter().map(|(_, r)| r.clone()).collect(),
            ..Results::default()
        };
        (r, all)
    }

    /// More batches than the queue holds, formatted by the writer and, at
    /// the end, by the caller's thread: the file `write` gives, byte for
    /// byte.
    #[test]
    fn a_stream_of_many_batches_writes_what_write_does() {
        let d = dir("many");
        let (whole, streamed) = (d.join("whole.csv"), d.join("streamed.csv"));
        let width = 2000;
        let n = (IN_FLIGHT + 4) * super::BATCH_VALUES / width;
        let (all, rows) = rows(n, width);
        write(&all, &whole).expect("write");
        let mut s = CsvStream::create(&streamed).expect("stream");
        s.begin(&all.names).expect("header");
        for (t, row) in &rows[..n - 1] {
            s.row(*t, row).expect("row");
        }
        let last = Results {
            names: all.names.clone(),
            times: vec![rows[n - 1].0],
            rows: vec![rows[n - 1].1.clone()],
            ..Results::default()
        };
        assert!(!streamed.exists(), "the file appears only when finished");
        s.finish(&last, &streamed).expect("finish");
        let (a, b) = (
            std::fs::read(&whole).expect("whole"),
            std::fs::read(&streamed).expect("streamed"),
        );
        assert_eq!(a.len(), b.len());
        assert!(a == b, "the streamed CSV differs from the written one");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The result of an earlier run at the target is removed when the
    /// stream starts (a run that then fails leaves no file there, not the
    /// last run's); any other file is left to the rename at the end.
    #[test]
    fn a_stream_removes_an_earlier_result_and_nothing_else() {
        let d = dir("earlier");
        let (old, other) = (d.join("old.csv"), d.join("notes.csv"));
        std::fs::write(&old, "\"time\",\"x\"\n0,1\n").expect("old");
        std::fs::write(&other, "my notes\n").expect("other");
        for target in [&old, &other] {
            let mut s = CsvStream::create(target).expect("stream");
            s.begin(&["x".to_string()]).expect("header");
            s.row(0.0, &[2.0]).expect("row");
            // The run fails: the stream is dropped unfinished.
            drop(s);
        }
        assert!(!old.exists(), "the earlier result is gone");
        assert_eq!(
            std::fs::read_to_string(&other).expect("other"),
            "my notes\n",
            "a file that is not a result is kept"
        );
        let left: Vec<_> = std::fs::read_dir(&d).expect("dir").collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        let _ = std::fs::remove_dir_all(&d);
    }
}
