//! Parameter studies (`rmoc sweep`, the Python package's `sweep`): one
//! compiled model run at many parameter points in parallel, each point
//! summarized as it runs (final values, extremes, time averages of chosen
//! columns) into one table.
//!
//! The model is compiled once; the points share its [`Simulator`] (each run
//! has its own buffers) on a rayon pool. A point that fails is a row of the
//! table with its diagnostic; the others go on. Nothing of a run is held
//! but its statistics ([`summary::SummarySink`]), unless its result file is
//! asked for.

pub mod plan;
pub mod summary;

use crate::Simulator;
use crate::diag::{Diagnostic, DiagnosticKind, SourceMap};
use crate::solve::monitor::{MonitorHandle, StopFlag};
use crate::solve::{Options, RowSinkHandle};
use plan::Plan;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use summary::{Statistic, SummarySink};

/// What a sweep keeps and where it writes.
#[derive(Clone, Debug)]
pub struct SweepSettings {
    /// The statistics of every chosen column.
    pub statistics: Vec<Statistic>,
    /// Patterns of the result columns to summarize (`solve::columns::glob`:
    /// `*` and `?` within one dotted component, `**` across); empty: every
    /// column.
    pub outputs: Vec<String>,
    /// Worker threads; `None`: one per core.
    pub jobs: Option<usize>,
    /// Where the result files of chosen points go, if anywhere.
    pub save: Option<SaveResults>,
}

impl Default for SweepSettings {
    fn default() -> Self {
        SweepSettings {
            statistics: vec![Statistic::Final],
            outputs: Vec::new(),
            jobs: None,
            save: None,
        }
    }
}

/// Per-point result files: `dir/point_K.csv` for the chosen points.
#[derive(Clone, Debug)]
pub struct SaveResults {
    pub dir: PathBuf,
    /// Point numbers (from 0); `None`: every point.
    pub points: Option<Vec<usize>>,
}

/// How one point ended.
#[derive(Clone, Debug, PartialEq)]
pub enum PointStatus {
    Ok,
    /// The run failed: its diagnostic on one line.
    Failed(String),
    /// Stopped from outside (Ctrl-C) while it ran.
    Interrupted,
    /// The sweep stopped before this point started.
    NotRun,
}

impl PointStatus {
    pub fn word(&self) -> &'static str {
        match self {
            PointStatus::Ok => "ok",
            PointStatus::Failed(_) => "failed",
            PointStatus::Interrupted => "interrupted",
            PointStatus::NotRun => "not run",
        }
    }
}

/// One point's row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub status: PointStatus,
    /// The statistics, column by column ([`Table::columns`]); empty unless
    /// the run ended.
    pub values: Vec<f64>,
    /// Warnings of the run (failed warning-level asserts), on one line each.
    pub warnings: Vec<String>,
    /// Where its result file went, if it was asked for.
    pub result_file: Option<PathBuf>,
}

/// A sweep's summary: the plan's parameters and, per point, its outcome.
#[derive(Clone, Debug)]
pub struct Table {
    pub plan: Plan,
    /// Names of the statistic columns (`x`, `max(x)`, ...).
    pub columns: Vec<String>,
    pub outcomes: Vec<Outcome>,
}

impl Table {
    pub fn failed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| matches!(o.status, PointStatus::Failed(_)))
            .count()
    }

    /// Writes the table as CSV: `point`, the parameters, `status`, the
    /// statistics, `message` (the diagnostic of a failed point). Written
    /// to a temporary name and renamed, as result files are.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        crate::output::replace_file(path, |tmp| {
            let mut w = std::io::BufWriter::new(std::fs::File::create(tmp)?);
            let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
            let mut header = vec![quote("point")];
            header.extend(self.plan.names.iter().map(|n| quote(n)));
            header.push(quote("status"));
            header.extend(self.columns.iter().map(|n| quote(n)));
            header.push(quote("message"));
            writeln!(w, "{}", header.join(","))?;
            let mut text = ryu::Buffer::new();
            for (k, o) in self.outcomes.iter().enumerate() {
                write!(w, "{k}")?;
                for i in 0..self.plan.names.len() {
                    write!(w, ",{}", self.plan.shown(k, i))?;
                }
                write!(w, ",{}", o.status.word())?;
                for c in 0..self.columns.len() {
                    match o.values.get(c) {
                        Some(x) => write!(w, ",{}", crate::output::csv::number(&mut text, *x))?,
                        None => write!(w, ",")?,
                    }
                }
                let message = match &o.status {
                    PointStatus::Failed(m) => m.clone(),
                    _ => o.warnings.join("; "),
                };
                if message.is_empty() {
                    writeln!(w, ",")?;
                } else {
                    writeln!(w, ",{}", quote(&message))?;
                }
            }
            w.flush()
        })
    }
}

/// Runs every point of `plan` with the options `base` (whose own
/// parameter overrides hold at every point unless the plan sets the same
/// parameter). `on_point` hears of each point as it ends (progress);
/// `stop` ends the sweep: running points stop at their next step, the
/// rest do not start.
pub fn run(
    sim: &Simulator,
    sources: &SourceMap,
    base: &Options,
    plan: &Plan,
    settings: &SweepSettings,
    on_point: &(dyn Fn(&Outcome) + Sync),
    stop: &Arc<StopFlag>,
) -> Result<Table, Diagnostic> {
    let names: Vec<String> =
        crate::solve::output_columns(sim.causal(), &sim.compiled.program.layout)
            .into_iter()
            .map(|c| c.0)
            .collect();
    let chosen = crate::solve::chosen_columns(&names, &settings.outputs)?;
    let columns: Vec<String> = chosen
        .iter()
        .flat_map(|(_, n)| settings.statistics.iter().map(move |s| s.column(n)))
        .collect();
    // The runs keep the chosen columns alone (their saved results too).
    let mut base = base.clone();
    base.outputs = settings.outputs.clone();
    let base = &base;
    let positions: Vec<usize> = if settings.outputs.is_empty() {
        chosen.iter().map(|c| c.0).collect()
    } else {
        (0..chosen.len()).collect()
    };
    if let Some(save) = &settings.save {
        std::fs::create_dir_all(&save.dir).map_err(|e| {
            Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!("cannot make the folder `{}`: {e}", save.dir.display()),
            )
        })?;
        remove_earlier_points(&save.dir)?;
    }
    let width = plan.points.len().saturating_sub(1).to_string().len();
    let one = |k: usize| -> Outcome {
        if stop.0.load(std::sync::atomic::Ordering::Relaxed) {
            return Outcome {
                status: PointStatus::NotRun,
                values: Vec::new(),
                warnings: Vec::new(),
                result_file: None,
            };
        }
        let file = settings
            .save
            .as_ref()
            .filter(|s| s.points.as_ref().is_none_or(|p| p.contains(&k)))
            .map(|s| s.dir.join(format!("point_{k:0width$}.csv")));
        let o = run_point(
            sim, sources, base, plan, k, &positions, settings, file, stop,
        );
        on_point(&o);
        o
    };
    let jobs = settings
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let outcomes = if jobs == 1 {
        (0..plan.points.len()).map(one).collect()
    } else {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            // As the CLI's main thread: deep expressions recurse.
            .stack_size(64 << 20)
            .build()
            .map_err(|e| {
                Diagnostic::error_nospan(
                    DiagnosticKind::Limit,
                    format!("cannot start {jobs} worker threads: {e}"),
                )
                .with_hint("use fewer with -j")
            })?;
        pool.install(|| (0..plan.points.len()).into_par_iter().map(one).collect())
    };
    Ok(Table {
        plan: plan.clone(),
        columns,
        outcomes,
    })
}

/// Removes the `point_K.csv` files an earlier sweep left in `dir`: one of
/// this sweep's points that fails (or is not saved) must not leave an old
/// file that looks like its result.
fn remove_earlier_points(dir: &Path) -> Result<(), Diagnostic> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let earlier = name
            .strip_prefix("point_")
            .and_then(|r| r.strip_suffix(".csv"))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
        if earlier {
            std::fs::remove_file(e.path()).map_err(|err| {
                Diagnostic::error_nospan(
                    DiagnosticKind::Io,
                    format!(
                        "cannot remove the earlier sweep's `{}`: {err}",
                        e.path().display()
                    ),
                )
            })?;
        }
    }
    Ok(())
}

/// Runs point `k` of `plan`.
#[allow(clippy::too_many_arguments)]
fn run_point(
    sim: &Simulator,
    sources: &SourceMap,
    base: &Options,
    plan: &Plan,
    k: usize,
    positions: &[usize],
    settings: &SweepSettings,
    file: Option<PathBuf>,
    stop: &Arc<StopFlag>,
) -> Outcome {
    let failed = |d: &Diagnostic| Outcome {
        status: PointStatus::Failed(crate::diag::one_line(sources, d)),
        values: Vec::new(),
        warnings: Vec::new(),
        result_file: None,
    };
    let mut opts = base.clone();
    let point = &plan.points[k];
    opts.overrides.retain(|(v, _)| !plan.vars.contains(v));
    opts.overrides
        .extend(plan.vars.iter().copied().zip(point.iter().copied()));
    opts.monitor = Some(MonitorHandle(stop.clone()));
    let forward = match &file {
        Some(f) => match crate::output::ResultStream::create(f) {
            Ok(s) => Some(s),
            Err(e) => {
                return failed(&Diagnostic::error_nospan(
                    DiagnosticKind::Io,
                    format!("cannot write `{}`: {e}", f.display()),
                ));
            }
        },
        None => None,
    };
    let sink = Arc::new(Mutex::new(SummarySink::new(positions.to_vec(), forward)));
    let shared: Arc<Mutex<dyn crate::solve::RowSink>> = sink.clone();
    opts.rows = Some(RowSinkHandle(shared));
    let results = match sim.simulate(&opts) {
        Ok(r) => r,
        // The model's own warnings come first; the error is the last.
        Err(ds) => {
            let d = ds.iter().rev().find(|d| d.is_error()).or(ds.last());
            return match d {
                Some(d) => failed(d),
                None => failed(&Diagnostic::error_nospan(
                    DiagnosticKind::Solver,
                    "the run failed",
                )),
            };
        }
    };
    let Ok(mut sink) = sink.lock() else {
        return failed(&Diagnostic::error_nospan(
            DiagnosticKind::Internal,
            "internal error: the summary of this point is poisoned",
        ));
    };
    if results.interrupted.is_some() {
        return Outcome {
            status: PointStatus::Interrupted,
            values: Vec::new(),
            warnings: Vec::new(),
            result_file: None,
        };
    }
    // The rows the run kept (at least its last) after those it streamed.
    for (t, row) in results.times.iter().zip(&results.rows) {
        sink.take(*t, row);
    }
    let mut result_file = None;
    if let (Some(f), Some(stream)) = (file, sink.forward.as_mut()) {
        if let Err(e) = stream.finish(&results, &f) {
            return failed(&Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!("cannot write `{}`: {e}", f.display()),
            ));
        }
        result_file = Some(f);
    }
    let values = sink
        .values(&settings.statistics)
        .unwrap_or_else(|| vec![f64::NAN; positions.len() * settings.statistics.len()]);
    Outcome {
        status: PointStatus::Ok,
        values,
        warnings: results
            .warnings
            .iter()
            .map(|d| crate::diag::one_line(sources, d))
            .collect(),
        result_file,
    }
}
