//! MAT result files: an independent level-4 MAT reader written from the
//! public format description (MATLAB "Level 4 MAT-file format"; the
//! Dymola/OpenModelica result layout `Aclass`, `name`, `description`,
//! `dataInfo`, `data_1`, `data_2` as DyMat and `scipy.io.loadmat` read it).
//! The reader is first checked against files built byte by byte here, then
//! used on rmoc's own results, whose trajectories must equal the CSV's.
//!
//! Nothing of rmoc's writer is used: only the `rmoc` binary is run.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------------------
// Level-4 MAT reader
// ---------------------------------------------------------------------------

/// One level-4 record: a 20-byte header of five little-endian i32 (type
/// `MOPT`, rows, columns, imaginary flag, name length with its NUL), the name,
/// then the real part column-major.
#[derive(Clone, Debug)]
struct Matrix {
    name: String,
    /// The type code `1000*M + 100*O + 10*P + T`.
    ty: i32,
    rows: usize,
    cols: usize,
    /// `T = 1`: the elements are character codes.
    text: bool,
    /// The elements column-major, as f64 (exact for every level-4 precision:
    /// double, single, int32, int16, uint16 and uint8).
    data: Vec<f64>,
}

impl Matrix {
    fn at(&self, r: usize, c: usize) -> f64 {
        assert!(r < self.rows && c < self.cols, "{}[{r}, {c}]", self.name);
        self.data[c * self.rows + r]
    }
}

fn parse_mat4(bytes: &[u8]) -> Result<Vec<Matrix>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let head = bytes
            .get(at..at + 20)
            .ok_or_else(|| format!("truncated header at byte {at}"))?;
        let field = |k: usize| i32::from_le_bytes(head[4 * k..4 * k + 4].try_into().unwrap());
        let (ty, rows, cols, imagf, namlen) = (field(0), field(1), field(2), field(3), field(4));
        if !(0..10000).contains(&ty) {
            return Err(format!("type {ty} at byte {at}: not a level-4 type code"));
        }
        let (m, o, p, t) = (ty / 1000, ty / 100 % 10, ty / 10 % 10, ty % 10);
        if m != 0 {
            return Err(format!("type {ty}: M = {m}, not little-endian IEEE"));
        }
        if o != 0 {
            return Err(format!("type {ty}: O = {o}, must be 0"));
        }
        if t > 1 {
            return Err(format!("type {ty}: T = {t}, neither numeric nor text"));
        }
        let size = match p {
            0 => 8,
            1 | 2 => 4,
            3 | 4 => 2,
            5 => 1,
            _ => return Err(format!("type {ty}: precision P = {p} unknown")),
        };
        if rows < 0 || cols < 0 {
            return Err(format!("negative dimensions {rows} x {cols}"));
        }
        if imagf != 0 {
            return Err("complex matrices are not used by result files".into());
        }
        if namlen < 1 {
            return Err(format!("name length {namlen}"));
        }
        at += 20;
        let raw = bytes
            .get(at..at + namlen as usize)
            .ok_or("truncated name")?;
        at += namlen as usize;
        let (last, name) = raw.split_last().unwrap();
        if *last != 0 {
            return Err("name not NUL-terminated".into());
        }
        let name = String::from_utf8(name.to_vec()).map_err(|e| e.to_string())?;
        if name.contains('\0') {
            return Err(format!("name {name:?} has an inner NUL"));
        }
        let (rows, cols) = (rows as usize, cols as usize);
        let len = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(size))
            .ok_or("size overflow")?;
        let body = bytes
            .get(at..at + len)
            .ok_or_else(|| format!("`{name}`: truncated data"))?;
        at += len;
        let data = body
            .chunks_exact(size)
            .map(|c| match p {
                0 => f64::from_le_bytes(c.try_into().unwrap()),
                1 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
                2 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
                3 => i16::from_le_bytes(c.try_into().unwrap()) as f64,
                4 => u16::from_le_bytes(c.try_into().unwrap()) as f64,
                _ => c[0] as f64,
            })
            .collect();
        out.push(Matrix {
            name,
            ty,
            rows,
            cols,
            text: t == 1,
            data,
        });
    }
    Ok(out)
}

/// A char matrix as strings: one per row, or one per column when
/// `transposed` (binTrans). Trailing NUL and blank padding is dropped (as
/// scipy drops NULs and DyMat strips the right end).
fn strings(m: &Matrix, transposed: bool) -> Result<Vec<String>, String> {
    if !m.text {
        return Err(format!("`{}` (type {}) is not a text matrix", m.name, m.ty));
    }
    let (count, len) = if transposed {
        (m.cols, m.rows)
    } else {
        (m.rows, m.cols)
    };
    (0..count)
        .map(|i| {
            let s = (0..len)
                .map(|j| {
                    let code = if transposed { m.at(j, i) } else { m.at(i, j) };
                    (code >= 0.0 && code.fract() == 0.0)
                        .then(|| char::from_u32(code as u32))
                        .flatten()
                        .ok_or_else(|| format!("`{}`: bad character code {code}", m.name))
                })
                .collect::<Result<String, String>>()?;
            let s = s.trim_end_matches(['\0', ' ']);
            if s.contains('\0') {
                return Err(format!("`{}`: string {s:?} has an inner NUL", m.name));
            }
            Ok(s.to_string())
        })
        .collect()
}

/// A Dymola/OpenModelica result file read through its `dataInfo`.
#[derive(Clone, Debug)]
struct DymolaResult {
    /// Every record, in file order.
    matrices: Vec<Matrix>,
    aclass: Vec<String>,
    names: Vec<String>,
    descriptions: Vec<String>,
    /// Per variable: data matrix (0 = abscissa), signed 1-based column,
    /// interpolation, extrapolation.
    info: Vec<[i32; 4]>,
    /// `data_j` by `j`, as signals: `blocks[j][k][t]` is column `k + 1` of
    /// Dymola's `data_j` (variable `k + 1`) at its `t`-th time point.
    blocks: HashMap<i32, Vec<Vec<f64>>>,
    index: HashMap<String, usize>,
}

fn read_result(bytes: &[u8]) -> Result<DymolaResult, String> {
    let matrices = parse_mat4(bytes)?;
    let get = |name: &str| {
        matrices
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| format!("no matrix `{name}`"))
    };
    // Aclass is always one string per row.
    let aclass = strings(get("Aclass")?, false)?;
    if aclass.first().map(String::as_str) != Some("Atrajectory") {
        return Err(format!("Aclass {aclass:?} is not a trajectory"));
    }
    let trans = match aclass.get(3).map(String::as_str) {
        Some("binTrans") => true,
        Some("binNormal") | None => false,
        Some(other) => return Err(format!("Aclass[3] = {other:?}")),
    };
    let names = strings(get("name")?, trans)?;
    let descriptions = strings(get("description")?, trans)?;
    if descriptions.len() != names.len() {
        return Err(format!(
            "{} names but {} descriptions",
            names.len(),
            descriptions.len()
        ));
    }
    let di = get("dataInfo")?;
    if di.text {
        return Err("dataInfo is text".into());
    }
    let (nvars, width) = if trans {
        (di.cols, di.rows)
    } else {
        (di.rows, di.cols)
    };
    if nvars != names.len() || width < 4 {
        return Err(format!(
            "dataInfo is {} x {} for {} names",
            di.rows,
            di.cols,
            names.len()
        ));
    }
    let mut info = Vec::new();
    for i in 0..nvars {
        let mut row = [0i32; 4];
        for (j, x) in row.iter_mut().enumerate() {
            let v = if trans { di.at(j, i) } else { di.at(i, j) };
            if v.fract() != 0.0 {
                return Err(format!("dataInfo entry {v} is not an integer"));
            }
            *x = v as i32;
        }
        info.push(row);
    }
    let mut blocks = HashMap::new();
    for m in &matrices {
        let Some(j) = m.name.strip_prefix("data_") else {
            continue;
        };
        let j: i32 = j.parse().map_err(|_| format!("matrix `{}`", m.name))?;
        if m.text {
            return Err(format!("`{}` is text", m.name));
        }
        let signals: Vec<Vec<f64>> = if trans {
            (0..m.rows)
                .map(|k| (0..m.cols).map(|t| m.at(k, t)).collect())
                .collect()
        } else {
            (0..m.cols)
                .map(|k| (0..m.rows).map(|t| m.at(t, k)).collect())
                .collect()
        };
        blocks.insert(j, signals);
    }
    let mut index = HashMap::new();
    for (i, (n, inf)) in names.iter().zip(&info).enumerate() {
        if index.insert(n.clone(), i).is_some() {
            return Err(format!("name `{n}` twice"));
        }
        let col = inf[1].unsigned_abs() as usize;
        if inf[0] == 0 {
            // The abscissa is the first column of every data matrix.
            if col != 1 {
                return Err(format!("abscissa `{n}` in column {}", inf[1]));
            }
        } else {
            let b = blocks
                .get(&inf[0])
                .ok_or_else(|| format!("`{n}` in missing data_{}", inf[0]))?;
            if col == 0 || col > b.len() {
                return Err(format!(
                    "`{n}`: column {} of data_{} with {} columns",
                    inf[1],
                    inf[0],
                    b.len()
                ));
            }
        }
    }
    Ok(DymolaResult {
        matrices,
        aclass,
        names,
        descriptions,
        info,
        blocks,
        index,
    })
}

impl DymolaResult {
    fn info(&self, name: &str) -> [i32; 4] {
        self.info[self.index[name]]
    }

    fn description(&self, name: &str) -> &str {
        &self.descriptions[self.index[name]]
    }

    /// The abscissa (time) of `data_j`.
    fn abscissa(&self, j: i32) -> &[f64] {
        &self.blocks[&j][0]
    }

    /// The values of `name` over the time points of its data matrix (the
    /// trajectory time of `data_2` for the abscissa itself), with the sign
    /// of its `dataInfo` column applied.
    fn values(&self, name: &str) -> Vec<f64> {
        let [j, col, ..] = self.info(name);
        if j == 0 {
            return self.abscissa(2).to_vec();
        }
        let v = &self.blocks[&j][col.unsigned_abs() as usize - 1];
        if col < 0 {
            v.iter().map(|x| -x).collect()
        } else {
            v.clone()
        }
    }

    fn record_names(&self) -> Vec<&str> {
        self.matrices.iter().map(|m| m.name.as_str()).collect()
    }
}

// ---------------------------------------------------------------------------
// Hand-built files, from the format description alone
// ---------------------------------------------------------------------------

/// Appends one record; `elems` are column-major and encoded with the
/// precision digit of `ty`.
fn record(out: &mut Vec<u8>, ty: i32, rows: usize, cols: usize, name: &str, elems: &[f64]) {
    assert_eq!(elems.len(), rows * cols, "{name}");
    for v in [ty, rows as i32, cols as i32, 0, name.len() as i32 + 1] {
        out.extend(v.to_le_bytes());
    }
    out.extend(name.as_bytes());
    out.push(0);
    for &x in elems {
        match ty / 10 % 10 {
            0 => out.extend(x.to_le_bytes()),
            1 => out.extend((x as f32).to_le_bytes()),
            2 => out.extend((x as i32).to_le_bytes()),
            3 => out.extend((x as i16).to_le_bytes()),
            4 => out.extend((x as u16).to_le_bytes()),
            _ => out.push(x as u8),
        }
    }
}

/// A numeric matrix given row by row, as (rows, cols, column-major data).
fn by_rows(m: &[Vec<f64>]) -> (usize, usize, Vec<f64>) {
    let (r, c) = (m.len(), m[0].len());
    let data = (0..c)
        .flat_map(|j| m.iter().map(move |row| row[j]))
        .collect();
    (r, c, data)
}

fn transpose(m: &[Vec<f64>]) -> Vec<Vec<f64>> {
    (0..m[0].len())
        .map(|j| m.iter().map(|row| row[j]).collect())
        .collect()
}

/// Strings as a char matrix, one per row, padded with `pad`.
fn char_rows(items: &[&str], pad: u8) -> Vec<Vec<f64>> {
    let width = items.iter().map(|s| s.len()).max().unwrap().max(1);
    items
        .iter()
        .map(|s| {
            let mut b = s.as_bytes().to_vec();
            b.resize(width, pad);
            b.into_iter().map(f64::from).collect()
        })
        .collect()
}

const HAND_NAMES: [&str; 6] = ["time", "a", "na", "x", "y", "mx"];
const HAND_DESCRIPTIONS: [&str; 6] = ["Time [s]", "a parameter", "minus a", "", "y [m]", ""];

/// A small result set: parameter `a` = 2.5 with a negated alias `na`,
/// trajectories `x`, `y` and a negated alias `mx` of `x`, over times
/// 0, 0.5, 0.5 (an event), 1.
fn hand_file(trans: bool) -> Vec<u8> {
    let info = vec![
        vec![0.0, 1.0, 0.0, -1.0],
        vec![1.0, 2.0, 0.0, 0.0],
        vec![1.0, -2.0, 0.0, 0.0],
        vec![2.0, 2.0, 0.0, -1.0],
        vec![2.0, 3.0, 0.0, -1.0],
        vec![2.0, -2.0, 0.0, -1.0],
    ];
    // Dymola's data_j: one row per time point, one column per signal.
    let data_1 = vec![vec![0.0, 2.5], vec![1.0, 2.5]];
    let data_2 = vec![
        vec![0.0, 1.0, -1.0],
        vec![0.5, 2.0, 0.25],
        vec![0.5, 3.0, 8.0],
        vec![1.0, -0.125, 1e6],
    ];
    let mut out = Vec::new();
    let store = |m: &[Vec<f64>]| if trans { transpose(m) } else { m.to_vec() };
    let kind = if trans { "binTrans" } else { "binNormal" };
    if trans {
        // As Dymola: uint8 text, blank padded; NUL-padded names; the
        // description as a double text matrix (MATLAB's own char storage);
        // int32 dataInfo, double parameters, single-precision trajectories.
        let (r, c, d) = by_rows(&char_rows(&["Atrajectory", "1.1", "", kind], b' '));
        record(&mut out, 51, r, c, "Aclass", &d);
        let (r, c, d) = by_rows(&transpose(&char_rows(&HAND_NAMES, 0)));
        record(&mut out, 51, r, c, "name", &d);
        let (r, c, d) = by_rows(&transpose(&char_rows(&HAND_DESCRIPTIONS, b' ')));
        record(&mut out, 1, r, c, "description", &d);
        let (r, c, d) = by_rows(&store(&info));
        record(&mut out, 20, r, c, "dataInfo", &d);
        let (r, c, d) = by_rows(&store(&data_1));
        record(&mut out, 0, r, c, "data_1", &d);
        let (r, c, d) = by_rows(&store(&data_2));
        record(&mut out, 10, r, c, "data_2", &d);
    } else {
        // Other precisions, and the records in another order.
        let (r, c, d) = by_rows(&store(&data_2));
        record(&mut out, 0, r, c, "data_2", &d);
        let (r, c, d) = by_rows(&char_rows(&HAND_NAMES, b' '));
        record(&mut out, 41, r, c, "name", &d);
        let (r, c, d) = by_rows(&char_rows(&["Atrajectory", "1.1", "", kind], 0));
        record(&mut out, 1, r, c, "Aclass", &d);
        let (r, c, d) = by_rows(&char_rows(&HAND_DESCRIPTIONS, 0));
        record(&mut out, 31, r, c, "description", &d);
        let (r, c, d) = by_rows(&store(&info));
        record(&mut out, 30, r, c, "dataInfo", &d);
        let (r, c, d) = by_rows(&store(&data_1));
        record(&mut out, 10, r, c, "data_1", &d);
    }
    out
}

#[test]
fn the_reader_decodes_a_literal_record() {
    // Type 20 (int32 numeric), 2 x 2, real, name "ab" + NUL; elements 1, 2,
    // -3, 4 column-major: [[1, -3], [2, 4]].
    let mut bytes = vec![
        20, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, b'a', b'b', 0,
    ];
    for v in [1i32, 2, -3, 4] {
        bytes.extend(v.to_le_bytes());
    }
    // Type 51 (uint8 text), 1 x 3, name "s": "hi" padded with a NUL.
    bytes.extend([
        51, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, b's', 0, b'h', b'i', 0,
    ]);
    let m = parse_mat4(&bytes).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!((m[0].name.as_str(), m[0].rows, m[0].cols), ("ab", 2, 2));
    assert_eq!(m[0].at(0, 1), -3.0);
    assert_eq!(m[0].at(1, 0), 2.0);
    assert!(!m[0].text && m[1].text);
    assert_eq!(strings(&m[1], false).unwrap(), ["hi"]);
    assert_eq!(strings(&m[1], true).unwrap(), ["h", "i", ""]);
    // Truncations, big-endian, complex and sparse matrices are refused.
    for cut in [5, 22, 30, bytes.len() - 1] {
        assert!(parse_mat4(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut be = bytes.clone();
    be[0..4].copy_from_slice(&1020i32.to_le_bytes());
    assert!(parse_mat4(&be).is_err());
    let mut cplx = bytes.clone();
    cplx[12] = 1;
    assert!(parse_mat4(&cplx).is_err());
    let mut sparse = bytes;
    sparse[0] = 22;
    assert!(parse_mat4(&sparse).is_err());
}

#[test]
fn the_reader_follows_the_documented_layout_of_hand_built_files() {
    for trans in [true, false] {
        let r = read_result(&hand_file(trans)).unwrap();
        let kind = if trans { "binTrans" } else { "binNormal" };
        assert_eq!(r.aclass, ["Atrajectory", "1.1", "", kind]);
        assert_eq!(r.names, HAND_NAMES);
        assert_eq!(r.descriptions, HAND_DESCRIPTIONS);
        assert_eq!(r.info("time"), [0, 1, 0, -1]);
        assert_eq!(r.info("mx"), [2, -2, 0, -1]);
        assert_eq!(r.values("time"), [0.0, 0.5, 0.5, 1.0]);
        assert_eq!(r.abscissa(1), [0.0, 1.0]);
        assert_eq!(r.values("a"), [2.5, 2.5]);
        assert_eq!(r.values("na"), [-2.5, -2.5]);
        assert_eq!(r.values("x"), [1.0, 2.0, 3.0, -0.125]);
        assert_eq!(r.values("mx"), [-1.0, -2.0, -3.0, 0.125]);
        assert_eq!(r.values("y"), [-1.0, 0.25, 8.0, 1e6]);
    }
    // A dataInfo column outside its data matrix is refused.
    let mut bad = hand_file(true);
    let at = find(&bad, b"dataInfo\0") + 9;
    // Variable 5 (`y`), second entry: column 3 -> 4 of a 3-signal data_2.
    let k = at + (4 * 4 + 1) * 4;
    assert_eq!(bad[k..k + 4], 3i32.to_le_bytes());
    bad[k..k + 4].copy_from_slice(&4i32.to_le_bytes());
    assert!(
        read_result(&bad)
            .unwrap_err()
            .contains("column 4 of data_2")
    );
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

// ---------------------------------------------------------------------------
// rmoc's results
// ---------------------------------------------------------------------------

struct Csv {
    names: Vec<String>,
    /// `columns[k][t]`.
    columns: Vec<Vec<f64>>,
}

/// A CSV of quoted names (`""` escapes a quote) and unquoted numbers.
fn read_csv(text: &str) -> Csv {
    let mut lines = text.lines();
    let head = lines.next().expect("header");
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = head.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => names.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    names.push(cur);
    let mut columns = vec![Vec::new(); names.len()];
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let row: Vec<f64> = line
            .split(',')
            .map(|x| x.parse().unwrap_or_else(|e| panic!("{x:?}: {e}")))
            .collect();
        assert_eq!(row.len(), names.len(), "{line}");
        for (c, v) in columns.iter_mut().zip(row) {
            c.push(v);
        }
    }
    Csv { names, columns }
}

fn project(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn out_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rmoc-mat-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Simulates `model` twice, to `.mat` and to `.csv`, and reads both.
fn simulate(model: &str, args: &[&str], dir: &Path, stem: &str) -> (DymolaResult, Csv) {
    let run = |ext: &str| {
        let out = dir.join(format!("{stem}.{ext}"));
        let o = Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .current_dir(dir)
            .arg("simulate")
            .arg(project(model))
            .args(args)
            .arg("-o")
            .arg(&out)
            .output()
            .expect("run rmoc");
        assert!(
            o.status.success(),
            "{model} -> {ext}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read(&out).expect("result file")
    };
    let mat = read_result(&run("mat")).unwrap_or_else(|e| panic!("{model}: {e}"));
    let csv = read_csv(&String::from_utf8(run("csv")).expect("UTF-8 CSV"));
    (mat, csv)
}

/// Bitwise equality (NaN equals NaN).
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The checks common to every model; returns the parameter names.
fn check_against_csv(model: &str, r: &DymolaResult, csv: &Csv) -> Vec<String> {
    assert_eq!(
        r.record_names(),
        [
            "Aclass",
            "name",
            "description",
            "dataInfo",
            "data_1",
            "data_2"
        ],
        "{model}"
    );
    assert_eq!(r.aclass, ["Atrajectory", "1.1", "", "binTrans"], "{model}");
    // Text records are text, the others numeric (scipy and DyMat rely on it).
    for m in &r.matrices {
        assert_eq!(
            m.text,
            ["Aclass", "name", "description"].contains(&m.name.as_str()),
            "{model}: `{}` type {}",
            m.name,
            m.ty
        );
    }
    // binTrans: dataInfo is 4 x nvars, data_j has one column per time point.
    let di = &r.matrices[3];
    assert_eq!((di.rows, di.cols), (4, r.names.len()), "{model}");

    // Names: time first; the trajectories (data_2 and the abscissa) are
    // exactly the CSV's columns, the parameters (data_1) none of them.
    assert_eq!(r.names[0], "time", "{model}");
    assert_eq!(csv.names[0], "time", "{model}");
    assert_eq!(r.info("time"), [0, 1, 0, -1], "{model}");
    let in_block = |j: i32| -> Vec<String> {
        r.names
            .iter()
            .filter(|n| r.info(n)[0] == j)
            .cloned()
            .collect()
    };
    let params = in_block(1);
    let mut traj = in_block(0);
    traj.extend(in_block(2));
    assert_eq!(
        traj.iter().collect::<HashSet<_>>(),
        csv.names.iter().collect::<HashSet<_>>(),
        "{model}: trajectory names"
    );
    assert_eq!(traj.len(), csv.names.len(), "{model}: duplicate CSV names");
    assert_eq!(
        params.len() + traj.len(),
        r.names.len(),
        "{model}: names outside data_1 and data_2"
    );
    // Dymola's conventions: parameters keep their value outside the time
    // range (extrapolation 0), trajectories are undefined there (-1); both
    // interpolate linearly (0).
    for n in &params {
        let [_, col, interp, extrap] = r.info(n);
        assert!(col.abs() >= 2, "{model}: `{n}` in data_1's time column");
        assert_eq!((interp, extrap), (0, 0), "{model}: `{n}`");
    }
    for n in &traj[1..] {
        let [_, col, interp, extrap] = r.info(n);
        assert!(col.abs() >= 2, "{model}: `{n}` in data_2's time column");
        assert_eq!((interp, extrap), (0, -1), "{model}: `{n}`");
    }
    // Every data column belongs to some variable.
    for (j, names) in [(1, &params), (2, &traj)] {
        let used: HashSet<u32> = names.iter().map(|n| r.info(n)[1].unsigned_abs()).collect();
        for k in 2..=r.blocks[&j].len() as u32 {
            assert!(used.contains(&k), "{model}: data_{j} column {k} unnamed");
        }
    }

    // Trajectories equal the CSV. The CSV prints every number with Rust's
    // `{:?}`, the shortest decimal that parses back to the same f64, so
    // parsing the CSV recovers the written doubles exactly and the MAT
    // (doubles, type 0) must agree bit for bit: no tolerance is needed, and
    // any difference is a real one.
    let time = r.abscissa(2);
    assert!(time.len() >= 2, "{model}: {} time points", time.len());
    for (k, n) in csv.names.iter().enumerate() {
        let v = r.values(n);
        let c = &csv.columns[k];
        assert_eq!(v.len(), c.len(), "{model}: `{n}` length");
        for (t, (a, b)) in v.iter().zip(c).enumerate() {
            assert!(
                same(*a, *b),
                "{model}: `{n}` at point {t} (t = {}): MAT {a:?}, CSV {b:?}",
                time[t]
            );
        }
    }
    assert!(
        time.windows(2).all(|w| w[0] <= w[1]),
        "{model}: data_2 time decreases"
    );

    // data_1: two columns, the start and end times, and each parameter the
    // same at both.
    let t1 = r.abscissa(1);
    assert_eq!(
        t1,
        [time[0], *time.last().unwrap()],
        "{model}: data_1 times"
    );
    for n in &params {
        let v = r.values(n);
        assert!(v.len() == 2 && same(v[0], v[1]), "{model}: `{n}` = {v:?}");
    }
    params
}

fn parameter(r: &DymolaResult, name: &str) -> f64 {
    assert_eq!(r.info(name)[0], 1, "`{name}` is not in data_1");
    r.values(name)[0]
}

#[test]
fn the_bouncing_ball_mat_file_matches_its_csv() {
    let dir = out_dir("ball");
    let (r, csv) = simulate("tests/models/ball.rmo", &[], &dir, "ball");
    let params = check_against_csv("ball", &r, &csv);
    assert_eq!(params, ["e", "g"]);
    assert_eq!(parameter(&r, "e"), 0.8);
    assert_eq!(parameter(&r, "g"), 9.81);
    assert_eq!(*r.abscissa(2).last().unwrap(), 3.0);
    // Events: a repeated time with the velocity reversed and the counter up.
    let time = r.values("time");
    let v = r.values("v");
    let bounces = r.values("bounces");
    let events: Vec<usize> = (1..time.len())
        .filter(|&i| time[i] == time[i - 1])
        .collect();
    assert!(events.len() >= 2, "{} events", events.len());
    for &i in &events {
        assert!(v[i - 1] < 0.0 && v[i] > 0.0, "t = {}", time[i]);
        assert_eq!(bounces[i], bounces[i - 1] + 1.0);
    }
    assert_eq!(r.description("time"), "Simulation time [s]");

    // A parameter set on the command line reaches data_1.
    let (r, csv) = simulate(
        "tests/models/ball.rmo",
        &["-p", "e=0.5", "--stop-time", "1.5", "--interval", "0.01"],
        &dir,
        "ball_e",
    );
    check_against_csv("ball -p e=0.5", &r, &csv);
    assert_eq!(parameter(&r, "e"), 0.5);
    assert_eq!(r.abscissa(1), [0.0, 1.5]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_pendulum_mat_file_matches_its_csv() {
    let dir = out_dir("pendulum");
    let (r, csv) = simulate("tests/models/pendulum.rmo", &[], &dir, "pendulum");
    let params = check_against_csv("pendulum", &r, &csv);
    assert_eq!(params, ["L", "m", "g"]);
    assert_eq!(
        [parameter(&r, "L"), parameter(&r, "m"), parameter(&r, "g")],
        [1.0, 1.0, 9.81]
    );
    assert_eq!(r.description("F"), "rod force");
    assert_eq!(r.description("E"), "energy");
    for n in ["x", "y", "vx", "vy", "F", "E"] {
        assert_eq!(r.info(n)[0], 2, "`{n}`");
    }
    // The checks have teeth: a sign flipped in dataInfo, two names swapped
    // or a parameter that changes between data_1's columns are caught.
    let rejects = |what: &str, tamper: &dyn Fn(&mut DymolaResult)| {
        let mut bad = r.clone();
        tamper(&mut bad);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_against_csv("tampered pendulum", &bad, &csv)
        }));
        assert!(caught.is_err(), "{what} went unnoticed");
    };
    rejects("a negated column", &|b| {
        let i = b.index["vx"];
        b.info[i][1] = -b.info[i][1];
    });
    rejects("swapped names", &|b| {
        let (i, j) = (b.index["x"], b.index["y"]);
        b.index.insert("x".into(), j);
        b.index.insert("y".into(), i);
    });
    rejects("a parameter changing in data_1", &|b| {
        let k = b.info[b.index["g"]][1] as usize - 1;
        b.blocks.get_mut(&1).unwrap()[k][1] = 9.8;
    });
    // The constraint holds in the MAT file's own numbers.
    let (x, y) = (r.values("x"), r.values("y"));
    for (a, b) in x.iter().zip(&y) {
        assert!((a * a + b * b - 1.0).abs() < 1e-5, "{a}, {b}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_gearbox_mat_file_matches_its_csv() {
    let dir = out_dir("gearbox");
    let (r, csv) = simulate(
        "examples/gearbox.rmo",
        &["--stop-time", "0.05"],
        &dir,
        "gearbox",
    );
    let params = check_against_csv("gearbox", &r, &csv);
    assert!(params.len() > 20, "{} parameters", params.len());
    // Integer and derived parameters are stored as doubles.
    assert_eq!(parameter(&r, "zA"), 20.0);
    assert_eq!(parameter(&r, "zB"), 30.0);
    assert_eq!(parameter(&r, "n"), 1.5);
    assert_eq!(parameter(&r, "rA"), 0.2);
    // Array elements keep their subscripts (with commas) in both files.
    assert_eq!(r.info("mesh.geometry.HA[1,2]")[0], 2);
    assert_eq!(r.description("pinion.w"), "angular velocity [rad/s]");
    assert_eq!(*r.abscissa(2).last().unwrap(), 0.05);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Dymola and OpenModelica write every variable's text, parameters
/// included (rmoc once wrote an empty one for every parameter).
#[test]
fn parameter_descriptions_reach_the_description_matrix() {
    let dir = out_dir("descr");
    let (r, _) = simulate(
        "tests/models/ball.rmo",
        &["--stop-time", "0.1"],
        &dir,
        "ball",
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.description("e"), "restitution");
}

/// A MAT result to a regular file is streamed while the run goes (its rows
/// go to a temporary file, the MAT file is written around them at the end);
/// through a symbolic link it is written whole at the end. Both files are
/// the same bytes, and no temporary file stays behind.
#[test]
fn a_streamed_mat_file_equals_one_written_at_the_end() {
    let dir = out_dir("streamed");
    let run = |out: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_rmoc"))
            .current_dir(&dir)
            .arg("simulate")
            .arg(project("examples/gearbox.rmo"))
            .arg("-o")
            .arg(out)
            .output()
            .expect("run rmoc");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let streamed = dir.join("streamed.mat");
    run(&streamed);
    let whole = dir.join("whole.mat");
    std::fs::write(&whole, b"old").expect("target");
    let link = dir.join("link.mat");
    std::os::unix::fs::symlink(&whole, &link).expect("symlink");
    run(&link);
    let a = std::fs::read(&streamed).expect("streamed");
    let b = std::fs::read(&whole).expect("whole");
    assert!(a.len() > 10_000, "{} bytes", a.len());
    assert!(
        a == b,
        "the streamed file differs from the one written whole"
    );
    read_result(&a).expect("a readable result");
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["link.mat", "streamed.mat", "whole.mat"]);
    let _ = std::fs::remove_dir_all(&dir);
}
