//! Result files: CSV and MAT v4 (the Dymola/OpenModelica layout), written to
//! a temporary name and renamed on success, so that a failed run never
//! leaves a file that looks complete.

pub mod csv;
pub mod mat;
pub mod plot;

use crate::solve::Results;
use std::path::Path;

/// Writes `results` to `path`, choosing the format by extension.
pub fn write(results: &Results, path: &Path) -> std::io::Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let tmp = temp_path(path);
    let r = match ext.as_str() {
        "mat" => mat::write(results, &tmp),
        _ => csv::write(results, &tmp),
    };
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path)
}

fn temp_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "result".into());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}
