//! Result files: CSV and MAT v4 (the Dymola/OpenModelica layout), written to
//! a temporary name and renamed on success, so that a failed run never
//! leaves a file that looks complete.

pub mod csv;
pub mod hysteresis;
pub mod mat;
pub mod plot;
pub mod progress;

use crate::solve::Results;
use std::path::Path;

/// Writes `results` to `path`, choosing the format by extension.
pub fn write(results: &Results, path: &Path) -> std::io::Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    replace_file(path, |tmp| match ext.as_str() {
        "mat" => mat::write(results, tmp),
        _ => csv::write(results, tmp),
    })
}

/// A result file read back (`rmoc plot`, `rmoc hysteresis`): columns with
/// `time` first, their units where the file records them (MAT), and the
/// rows.
#[derive(Clone, Debug, Default)]
pub struct ResultTable {
    pub names: Vec<String>,
    pub units: Vec<Option<String>>,
    pub rows: Vec<Vec<f64>>,
}

/// Reads a CSV or MAT result (by the extension), as `rmoc simulate` writes
/// them; a MAT file's parameters come as constant columns.
pub fn read(path: &Path) -> std::io::Result<ResultTable> {
    if is_mat(path) {
        mat::read(path)
    } else {
        let (names, rows) = csv::read(path)?;
        Ok(ResultTable {
            units: vec![None; names.len()],
            names,
            rows,
        })
    }
}

/// Removes `target` if it is a regular file that begins as a result of
/// rmoc's does (Dymola's and OpenModelica's begin alike: `csv::
/// begins_as_result`, `mat::begins_as_result`). That is the result of an
/// earlier run, which the new one will replace; removing it when a run
/// starts writing means that a run that fails leaves no file there, not
/// the last run's looking like its own. Anything else at the path is left
/// to the rename at the end. The CSV writer calls it on its own thread (on
/// ext4, freeing a large file's blocks cost 7 ms of a 190 ms run); the MAT
/// stream on the run's, where the rename over the old file at the end
/// freed them before.
pub(crate) fn remove_earlier_result(target: &Path) {
    use std::io::Read;
    let is_file = std::fs::symlink_metadata(target).is_ok_and(|m| m.is_file());
    if !is_file {
        return;
    }
    let mut start = Vec::with_capacity(mat::SIGNATURE_LEN);
    let read = std::fs::File::open(target)
        .and_then(|f| f.take(mat::SIGNATURE_LEN as u64).read_to_end(&mut start));
    let ours = read.is_ok()
        && if is_mat(target) {
            mat::begins_as_result(&start)
        } else {
            csv::begins_as_result(&start)
        };
    if ours {
        let _ = std::fs::remove_file(target);
    }
}

/// Whether results for `path` can stream ([`ResultStream`]): a regular
/// file or one that does not exist yet (a device, a FIFO or a link are
/// written at the end through [`replace_file`]).
pub fn can_stream(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Err(_) => true,
        Ok(m) => m.is_file(),
    }
}

fn is_mat(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("mat"))
}

/// A result file written while the run goes, in the format of its
/// extension (as [`write`] chooses).
pub enum ResultStream {
    Csv(csv::CsvStream),
    Mat(mat::MatStream),
}

impl ResultStream {
    /// Opens the temporary file(s) beside `target`.
    pub fn create(target: &Path) -> std::io::Result<ResultStream> {
        Ok(if is_mat(target) {
            ResultStream::Mat(mat::MatStream::create(target)?)
        } else {
            ResultStream::Csv(csv::CsvStream::create(target)?)
        })
    }

    /// Writes what `r` still holds and puts the file at `target`.
    pub fn finish(&mut self, r: &Results, target: &Path) -> std::io::Result<()> {
        match self {
            ResultStream::Csv(s) => s.finish(r, target),
            ResultStream::Mat(s) => s.finish(r, target),
        }
    }
}

impl crate::solve::RowSink for ResultStream {
    fn begin(&mut self, names: &[String]) -> std::io::Result<()> {
        match self {
            ResultStream::Csv(s) => s.begin(names),
            ResultStream::Mat(s) => s.begin(names),
        }
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        match self {
            ResultStream::Csv(s) => s.row(t, values),
            ResultStream::Mat(s) => s.row(t, values),
        }
    }
}

/// Where the results of an interrupted run go: `out.csv` becomes
/// `out.incomplete.csv` (`out` becomes `out.incomplete`), so that a file
/// cut short never stands under the name of a complete one.
pub fn incomplete_path(path: &Path) -> std::path::PathBuf {
    // A device or FIFO (`-o /dev/stdout`) is written as it is: it was
    // never a file that could look complete.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.incomplete.{}", ext.to_string_lossy()),
        None => format!("{stem}.incomplete"),
    };
    path.with_file_name(name)
}

/// Writes a file at `path` through `write`, so that a failure never
/// leaves a file that looks complete: into a temporary file beside the
/// target, renamed over it on success and removed on failure. A symbolic
/// link is followed (the file it names is replaced, the link kept). A
/// target that exists and is not a regular file (`/dev/null`,
/// `/dev/stdout`, a FIFO) is written directly: renaming over it would
/// replace a device with a plain file.
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        // Nothing there yet, or a regular file.
        Err(_) => path.to_path_buf(),
        Ok(m) if m.is_file() => path.to_path_buf(),
        // A link to a regular file: replace that file.
        Ok(m) if m.is_symlink() => match std::fs::canonicalize(path) {
            Ok(real) if real.is_file() => real,
            // A link to a device or pipe (`/dev/stdout`), or one that
            // does not resolve: write through it.
            _ => return write(path),
        },
        // A device, FIFO or socket.
        Ok(_) => return write(path),
    };
    let tmp = temp_path(&target);
    if let Err(e) = write(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

pub(crate) fn temp_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "result".into());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

#[cfg(test)]
mod earlier_result_tests {
    use super::remove_earlier_result;

    /// A CSV or MAT result of rmoc's at the target is removed; a file of
    /// another kind (or too short to tell, or a MAT result under a CSV
    /// name) and a folder are left alone.
    #[test]
    fn only_an_earlier_result_of_rmocs_is_removed() {
        let d = std::env::temp_dir().join(format!("rmoc-earlier-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("folder.csv")).expect("dir");
        let mut mat = Vec::new();
        for word in [51u32, 4, 11, 0, 7] {
            mat.extend_from_slice(&word.to_le_bytes());
        }
        mat.extend_from_slice(b"Aclass\0Atrajectory");
        let cases: [(&str, &[u8], bool); 7] = [
            ("old.csv", b"\"time\",\"x\"\n0,1\n", true),
            ("old.mat", &mat, true),
            ("notes.csv", b"time,x\n0,1\n", false),
            ("short.mat", &mat[..20], false),
            (
                "other.mat",
                b"MATLAB 5.0 MAT-file, Platform: GLNXA64",
                false,
            ),
            ("mat_named.csv", &mat, false),
            ("empty.csv", b"", false),
        ];
        for (name, bytes, _) in cases {
            std::fs::write(d.join(name), bytes).expect("write");
        }
        for (name, _, _) in cases {
            remove_earlier_result(&d.join(name));
        }
        remove_earlier_result(&d.join("folder.csv"));
        remove_earlier_result(&d.join("absent.mat"));
        for (name, _, removed) in cases {
            assert_eq!(!d.join(name).exists(), removed, "{name}");
        }
        assert!(d.join("folder.csv").is_dir());
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[cfg(test)]
mod incomplete_tests {
    use super::incomplete_path;
    use std::path::Path;

    #[test]
    fn an_interrupted_run_writes_under_a_marked_name_except_to_a_device() {
        assert_eq!(
            incomplete_path(Path::new("runs/out.csv")),
            Path::new("runs/out.incomplete.csv")
        );
        assert_eq!(
            incomplete_path(Path::new("runs/out")),
            Path::new("runs/out.incomplete")
        );
        // A device stays what it is.
        assert_eq!(
            incomplete_path(Path::new("/dev/null")),
            Path::new("/dev/null")
        );
    }
}
