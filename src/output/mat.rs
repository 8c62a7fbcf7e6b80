//! MAT v4 results in the layout Dymola and OpenModelica write.
//!
//! Matrices, each a level-4 MAT record (header of five little-endian i32:
//! type, rows, columns, imaginary flag, name length with NUL; the name; the
//! data column-major): `Aclass` (4 strings: "Atrajectory", "1.1", "",
//! "binTrans"), `name` and `description` (the variable names and texts,
//! stored transposed as in binTrans files), `dataInfo` (4 x nvars: which
//! data matrix, signed column, interpolation, extrapolation), `data_1`
//! (parameters at start and end time) and `data_2` (trajectories, one column
//! per output time, time first).

use crate::solve::Results;
use std::io::Write;
use std::path::Path;

fn header(
    w: &mut impl Write,
    ty: i32,
    rows: usize,
    cols: usize,
    name: &str,
) -> std::io::Result<()> {
    w.write_all(&ty.to_le_bytes())?;
    w.write_all(&(rows as i32).to_le_bytes())?;
    w.write_all(&(cols as i32).to_le_bytes())?;
    w.write_all(&0i32.to_le_bytes())?;
    w.write_all(&((name.len() + 1) as i32).to_le_bytes())?;
    w.write_all(name.as_bytes())?;
    w.write_all(&[0])
}

/// The bytes `begins_as_result` reads.
pub(super) const SIGNATURE_LEN: usize = 27;

/// Whether `start`, a file's first bytes, is how [`write`] begins: the
/// `header` of the matrix `Aclass` (type, rows, columns and imaginary
/// flag, then the name's length with its NUL, 7, and the name).
pub(super) fn begins_as_result(start: &[u8]) -> bool {
    start.len() >= SIGNATURE_LEN && &start[16..SIGNATURE_LEN] == b"\x07\0\0\0Aclass\0"
}

/// A char matrix of strings padded with NULs; `transposed` stores one string
/// per column (binTrans).
fn strings(
    w: &mut impl Write,
    name: &str,
    items: &[String],
    transposed: bool,
) -> std::io::Result<()> {
    let width = items.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
    // Type 51: text, stored as u8.
    if transposed {
        header(w, 51, width, items.len(), name)?;
        for s in items {
            let mut b = s.as_bytes().to_vec();
            b.resize(width, 0);
            w.write_all(&b)?;
        }
    } else {
        header(w, 51, items.len(), width, name)?;
        for j in 0..width {
            for s in items {
                w.write_all(&[*s.as_bytes().get(j).unwrap_or(&b' ')])?;
            }
        }
    }
    Ok(())
}

pub fn write(r: &Results, path: &Path) -> std::io::Result<()> {
    let t0 = r.times.first().copied().unwrap_or(0.0);
    let t1 = r.times.last().copied().unwrap_or(t0);
    write_with(r, path, r.times.len(), (t0, t1), |w| {
        for (t, row) in r.times.iter().zip(&r.rows) {
            w.write_all(&t.to_le_bytes())?;
            for v in row {
                w.write_all(&v.to_le_bytes())?;
            }
        }
        Ok(())
    })
}

/// Writes the file with `n_times` trajectory points over `span` (first and
/// last time), whose data `data_2` writes: for each point the time and the
/// values of `r.names`, as little-endian f64.
fn write_with(
    r: &Results,
    path: &Path,
    n_times: usize,
    span: (f64, f64),
    data_2: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(f);
    let aclass = ["Atrajectory", "1.1", "", "binTrans"].map(String::from);
    strings(&mut w, "Aclass", &aclass, false)?;
    let mut names = vec!["time".to_string()];
    names.extend(r.parameters.iter().map(|p| p.0.clone()));
    names.extend(r.names.iter().cloned());
    // "text [unit]", as Dymola writes it.
    let text = |d: &Option<String>, u: &Option<String>| match (d.as_deref(), u.as_deref()) {
        (Some(d), Some(u)) => format!("{d} [{u}]"),
        (None, Some(u)) => format!("[{u}]"),
        (d, None) => d.unwrap_or_default().to_string(),
    };
    let mut descr = vec!["Simulation time [s]".to_string()];
    descr.extend(
        (0..r.parameters.len()).map(|k| match r.parameter_texts.get(k) {
            Some((d, u)) => text(d, u),
            None => String::new(),
        }),
    );
    for (d, u) in r.descriptions.iter().zip(&r.units) {
        descr.push(text(d, u));
    }
    strings(&mut w, "name", &names, true)?;
    strings(&mut w, "description", &descr, true)?;
    // dataInfo: 4 x nvars int32, column-major (one column per variable).
    let nvars = names.len();
    header(&mut w, 20, 4, nvars, "dataInfo")?;
    let mut info: Vec<[i32; 4]> = vec![[0, 1, 0, -1]];
    for k in 0..r.parameters.len() {
        info.push([1, (k + 2) as i32, 0, 0]);
    }
    for k in 0..r.names.len() {
        info.push([2, (k + 2) as i32, 0, -1]);
    }
    for col in &info {
        for v in col {
            w.write_all(&v.to_le_bytes())?;
        }
    }
    // data_1: parameters at start and end (2 columns, stored transposed:
    // rows = 1 + nparams, cols = 2).
    let (t0, t1) = span;
    header(&mut w, 0, 1 + r.parameters.len(), 2, "data_1")?;
    for t in [t0, t1] {
        w.write_all(&t.to_le_bytes())?;
        for p in &r.parameters {
            w.write_all(&p.1.to_le_bytes())?;
        }
    }
    // data_2: trajectories, rows = 1 + nout, one column per time point.
    header(&mut w, 0, 1 + r.names.len(), n_times, "data_2")?;
    data_2(&mut w)?;
    w.flush()
}

/// A MAT result written while the run goes (`solve::Options::rows`): the
/// trajectory rows go to a raw temporary file beside the target (the
/// `data_2` block, which comes last, needs the number of rows in its
/// header), and [`MatStream::finish`] writes the file around them once the
/// run is over. The rows are never all in memory; dropped unfinished, the
/// temporary files are removed.
pub struct MatStream {
    rows: Option<std::io::BufWriter<std::fs::File>>,
    raw: std::path::PathBuf,
    n_rows: usize,
    span: Option<(f64, f64)>,
}

impl MatStream {
    /// Opens the raw temporary file beside `target`; an earlier result at
    /// `target` is removed ([`super::remove_earlier_result`]).
    pub fn create(target: &Path) -> std::io::Result<MatStream> {
        let mut raw = super::temp_path(target).into_os_string();
        raw.push(".rows");
        let raw = std::path::PathBuf::from(raw);
        let rows = std::io::BufWriter::new(std::fs::File::create(&raw)?);
        super::remove_earlier_result(target);
        Ok(MatStream {
            rows: Some(rows),
            raw,
            n_rows: 0,
            span: None,
        })
    }

    /// Adds the rows `r` still holds and writes the file at `target`.
    pub fn finish(&mut self, r: &Results, target: &Path) -> std::io::Result<()> {
        for (t, row) in r.times.iter().zip(&r.rows) {
            crate::solve::RowSink::row(self, *t, row)?;
        }
        let Some(mut rows) = self.rows.take() else {
            return Err(std::io::Error::other(
                "the result stream was already closed",
            ));
        };
        rows.flush()?;
        drop(rows);
        let span = self.span.unwrap_or((0.0, 0.0));
        let raw = &self.raw;
        let written = super::replace_file(target, |tmp| {
            write_with(r, tmp, self.n_rows, span, |w| {
                std::io::copy(&mut std::fs::File::open(raw)?, w).map(|_| ())
            })
        });
        let _ = std::fs::remove_file(raw);
        written
    }
}

impl crate::solve::RowSink for MatStream {
    fn begin(&mut self, _names: &[String]) -> std::io::Result<()> {
        Ok(())
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        let Some(w) = self.rows.as_mut() else {
            return Err(std::io::Error::other("the result stream is closed"));
        };
        w.write_all(&t.to_le_bytes())?;
        for v in values {
            w.write_all(&v.to_le_bytes())?;
        }
        self.n_rows += 1;
        self.span = Some((self.span.map_or(t, |s| s.0), t));
        Ok(())
    }
}

impl Drop for MatStream {
    fn drop(&mut self) {
        if self.raw.exists() {
            let _ = std::fs::remove_file(&self.raw);
        }
    }
}

/// One matrix of a MAT v4 file: its name, shape and values (as f64,
/// column-major; text as its byte values).
struct MatVariable {
    name: String,
    rows: usize,
    cols: usize,
    data: Vec<f64>,
    text: bool,
}

impl MatVariable {
    fn at(&self, r: usize, c: usize) -> f64 {
        self.data[c * self.rows + r]
    }

    /// The strings of a text matrix: one per column when `transposed`
    /// (binTrans), else one per row; trailing NULs and blanks dropped.
    fn strings(&self, transposed: bool) -> Vec<String> {
        let (count, width) = if transposed {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        };
        (0..count)
            .map(|k| {
                let bytes: Vec<u8> = (0..width)
                    .map(|j| {
                        let v = if transposed {
                            self.at(j, k)
                        } else {
                            self.at(k, j)
                        };
                        v as u8
                    })
                    .collect();
                String::from_utf8_lossy(&bytes)
                    .trim_end_matches(['\0', ' '])
                    .to_string()
            })
            .collect()
    }
}

fn bad(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

/// The matrices of a little-endian MAT v4 file.
fn matrices(bytes: &[u8]) -> std::io::Result<Vec<MatVariable>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let take = |at: &mut usize, n: usize| -> std::io::Result<&[u8]> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| bad("the file ends inside a matrix"))?;
        let s = &bytes[*at..end];
        *at = end;
        Ok(s)
    };
    while at < bytes.len() {
        let mut head = [0i32; 5];
        for h in &mut head {
            let b = take(&mut at, 4)?;
            *h = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        let [ty, rows, cols, imag, namelen] = head;
        if !(0..10000).contains(&ty) || ty / 1000 != 0 {
            return Err(bad(format!(
                "matrix type {ty}: only little-endian MAT v4 files are read"
            )));
        }
        if rows < 0 || cols < 0 || namelen < 1 || imag != 0 {
            return Err(bad(
                "a matrix header is not MAT v4 (negative size or complex data)",
            ));
        }
        let name = String::from_utf8_lossy(take(&mut at, namelen as usize)?)
            .trim_end_matches('\0')
            .to_string();
        let n = (rows as usize)
            .checked_mul(cols as usize)
            .ok_or_else(|| bad("a matrix is too large"))?;
        let precision = (ty / 10) % 10;
        let size = match precision {
            0 => 8,
            1 | 2 => 4,
            3 | 4 => 2,
            5 => 1,
            _ => {
                return Err(bad(format!(
                    "matrix `{name}`: unknown precision {precision}"
                )));
            }
        };
        let raw = take(
            &mut at,
            n.checked_mul(size)
                .ok_or_else(|| bad("a matrix is too large"))?,
        )?;
        let data = raw
            .chunks_exact(size)
            .map(|c| match precision {
                0 => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
                1 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                2 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64,
                3 => i16::from_le_bytes([c[0], c[1]]) as f64,
                4 => u16::from_le_bytes([c[0], c[1]]) as f64,
                _ => c[0] as f64,
            })
            .collect();
        out.push(MatVariable {
            name,
            rows: rows as usize,
            cols: cols as usize,
            data,
            text: ty % 10 == 1,
        });
    }
    Ok(out)
}

/// A named matrix read from a MAT v4 file: name, rows, columns and the
/// values in row-major order (text as byte values).
pub type NamedMatrix = (String, usize, usize, Vec<f64>);

/// The matrices of a MAT v4 file, for tests and tools.
pub fn read_matrices(path: &Path) -> std::io::Result<Vec<NamedMatrix>> {
    let bytes = std::fs::read(path)?;
    Ok(matrices(&bytes)?
        .into_iter()
        .map(|m| {
            let values = (0..m.rows)
                .flat_map(|r| (0..m.cols).map(move |c| (r, c)))
                .map(|(r, c)| m.at(r, c))
                .collect();
            (m.name, m.rows, m.cols, values)
        })
        .collect())
}

/// A result read back from a MAT file in the Dymola/OpenModelica layout
/// (as [`write`] writes it, `binTrans` or `binNormal`): the trajectories
/// with `time` first, then the parameters as constant columns, each with
/// its unit (the `[unit]` ending its description).
pub fn read(path: &Path) -> std::io::Result<super::ResultTable> {
    let bytes = std::fs::read(path)?;
    let ms = matrices(&bytes)?;
    let find = |name: &str| {
        ms.iter().find(|m| m.name == name).ok_or_else(|| {
            bad(format!(
                "no matrix `{name}`: not a result file in the Dymola/OpenModelica layout"
            ))
        })
    };
    let aclass = find("Aclass")?;
    let transposed = aclass
        .strings(false)
        .get(3)
        .is_some_and(|s| s.trim() == "binTrans");
    let names_m = find("name")?;
    if !names_m.text {
        return Err(bad("matrix `name` is not text"));
    }
    let names = names_m.strings(transposed);
    let mut descriptions = match ms.iter().find(|m| m.name == "description") {
        Some(d) => d.strings(transposed),
        None => Vec::new(),
    };
    descriptions.resize(names.len(), String::new());
    let info = find("dataInfo")?;
    // One column of dataInfo per variable (binTrans), else one row.
    let info_of = |k: usize| -> (f64, f64) {
        if transposed {
            (info.at(0, k), info.at(1, k))
        } else {
            (info.at(k, 0), info.at(k, 1))
        }
    };
    let count = if transposed { info.cols } else { info.rows };
    if count != names.len() || (if transposed { info.rows } else { info.cols }) < 2 {
        return Err(bad("`dataInfo` does not match `name`"));
    }
    let data_1 = ms.iter().find(|m| m.name == "data_1");
    let data_2 = find("data_2")?;
    // Points of data_2: columns when transposed, else rows.
    let (points, width) = if transposed {
        (data_2.cols, data_2.rows)
    } else {
        (data_2.rows, data_2.cols)
    };
    let value2 = |p: usize, c: usize| {
        if transposed {
            data_2.at(c, p)
        } else {
            data_2.at(p, c)
        }
    };
    let unit = |d: &str| -> Option<String> {
        let d = d.trim_end();
        let open = d.rfind('[')?;
        d.ends_with(']')
            .then(|| d[open + 1..d.len() - 1].to_string())
    };
    let mut table = super::ResultTable::default();
    let mut trajectory = Vec::new();
    let mut constant = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let (matrix, signed) = info_of(k);
        let column = signed.abs() as usize;
        let sign = if signed < 0.0 { -1.0 } else { 1.0 };
        // The abscissa (matrix 0) is data_2's first row.
        let matrix = if matrix == 0.0 { 2.0 } else { matrix };
        if column == 0 {
            return Err(bad(format!("`dataInfo` of `{name}` names column 0")));
        }
        if matrix == 2.0 && column <= width {
            trajectory.push((k, column - 1, sign));
        } else if matrix == 1.0 {
            let d1 = data_1.ok_or_else(|| bad("no matrix `data_1`"))?;
            let (length, points) = if transposed {
                (d1.rows, d1.cols)
            } else {
                (d1.cols, d1.rows)
            };
            if column > length || points == 0 {
                return Err(bad(format!(
                    "`dataInfo` of `{name}` points outside `data_1`"
                )));
            }
            let value = if transposed {
                d1.at(column - 1, 0)
            } else {
                d1.at(0, column - 1)
            };
            constant.push((k, sign * value));
        } else {
            return Err(bad(format!(
                "`dataInfo` of `{name}` points outside the data"
            )));
        }
    }
    // `time` first, as in a CSV result.
    trajectory.sort_by_key(|&(k, c, _)| (names[k] != "time", c, k));
    for &(k, _, _) in &trajectory {
        table.names.push(names[k].clone());
        table.units.push(unit(&descriptions[k]));
    }
    for &(k, _) in &constant {
        table.names.push(names[k].clone());
        table.units.push(unit(&descriptions[k]));
    }
    table.rows = (0..points)
        .map(|p| {
            trajectory
                .iter()
                .map(|&(_, c, s)| s * value2(p, c))
                .chain(constant.iter().map(|&(_, v)| v))
                .collect()
        })
        .collect();
    Ok(table)
}

/// A MAT v4 file of named real matrices (row-major `rows x cols`) and
/// string lists (one string per row, as `scipy.io.loadmat` reads them), in
/// that order: the linearization's `A`, `B`, `C`, `D` and names.
pub fn write_matrices(
    path: &Path,
    matrices: &[(&str, &[Vec<f64>], usize)],
    texts: &[(&str, &[String])],
) -> std::io::Result<()> {
    super::replace_file(path, |tmp| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(tmp)?);
        for &(name, rows, cols) in matrices {
            header(&mut w, 0, rows.len(), cols, name)?;
            // Column-major.
            for j in 0..cols {
                for r in rows {
                    w.write_all(&r[j].to_le_bytes())?;
                }
            }
        }
        for &(name, items) in texts {
            strings(&mut w, name, items, false)?;
        }
        w.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result in the `binNormal` layout (one string per row), written
    /// with `write_matrices`: `dataInfo` decides what each name reads.
    fn result_file(info: &[Vec<f64>]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!(
            "rmoc-mat-read-{}-{}.mat",
            std::process::id(),
            info.len() * 100
                + info
                    .iter()
                    .flatten()
                    .map(|x| x.abs() as usize)
                    .sum::<usize>()
        ));
        let text = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let aclass = text(&["Atrajectory", "1.1", "", "binNormal"]);
        let names = text(&["time", "k", "x"]);
        let descriptions = text(&["Simulation time [s]", "stiffness [N/m]", "position [m]"]);
        let data_1 = vec![vec![0.0, 3.0], vec![1.0, 3.0]];
        let data_2 = vec![vec![0.0, 1.0], vec![0.5, 2.0], vec![1.0, 4.0]];
        write_matrices(
            &path,
            &[
                ("dataInfo", info, 4),
                ("data_1", &data_1, 2),
                ("data_2", &data_2, 2),
            ],
            &[
                ("Aclass", &aclass),
                ("name", &names),
                ("description", &descriptions),
            ],
        )
        .expect("write");
        path
    }

    #[test]
    fn a_bin_normal_result_reads_back() {
        let info = vec![
            vec![0.0, 1.0, 0.0, -1.0],
            vec![1.0, 2.0, 0.0, 0.0],
            vec![2.0, -2.0, 0.0, -1.0],
        ];
        let t = read(&result_file(&info)).expect("reads");
        assert_eq!(t.names, ["time", "x", "k"]);
        assert_eq!(t.units[1].as_deref(), Some("m"));
        assert_eq!(t.units[2].as_deref(), Some("N/m"));
        // x is stored negated (column -2).
        assert_eq!(
            t.rows,
            vec![
                vec![0.0, -1.0, 3.0],
                vec![0.5, -2.0, 3.0],
                vec![1.0, -4.0, 3.0]
            ]
        );
    }

    #[test]
    fn a_data_info_outside_the_data_is_an_error_not_a_panic() {
        for bad in [
            vec![
                vec![0.0, 1.0, 0.0, -1.0],
                vec![1.0, 99.0, 0.0, 0.0],
                vec![2.0, 2.0, 0.0, -1.0],
            ],
            vec![
                vec![0.0, 1.0, 0.0, -1.0],
                vec![1.0, 2.0, 0.0, 0.0],
                vec![2.0, 99.0, 0.0, -1.0],
            ],
            vec![
                vec![0.0, 1.0, 0.0, -1.0],
                vec![7.0, 2.0, 0.0, 0.0],
                vec![2.0, 2.0, 0.0, -1.0],
            ],
            vec![
                vec![0.0, 1.0, 0.0, -1.0],
                vec![1.0, 0.0, 0.0, 0.0],
                vec![2.0, 2.0, 0.0, -1.0],
            ],
        ] {
            let e = read(&result_file(&bad)).expect_err("refused");
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        }
    }
}
