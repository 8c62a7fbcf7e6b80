//! `rmoc._rmoc`: the native half of the Python package. A compiled model
//! (`NativeModel`) is an `rmoc::Simulator` with its source map; runs release
//! the GIL. The Python half (`python/rmoc/__init__.py`) shapes the results
//! into NumPy arrays and DataFrames, pickles models by their source text,
//! and sends sweeps to Dask.

// A `Diagnostic` is returned only on the cold path (as in rmoc itself).
#![allow(clippy::result_large_err)]

use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rmoc::diag::{Diagnostic, DiagnosticKind, SourceMap};
use rmoc::solve::settings::RunRequest;
use rmoc::solve::{Results, RowSink, RowSinkHandle};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

pyo3::create_exception!(
    _rmoc,
    Error,
    PyException,
    "An rmoc diagnostic: `str(e)` is the rendered message (file:line:col, the source, a hint); `file`, `line`, `column`, `message` and `hint` its parts."
);
pyo3::create_exception!(
    _rmoc,
    CompileError,
    Error,
    "The model could not be read, checked or compiled."
);
pyo3::create_exception!(
    _rmoc,
    SimulationError,
    Error,
    "The run failed (a failed assert, no convergence, bad settings)."
);

/// A Python exception of type `E` carrying the first error of `diags`,
/// rendered as the command line renders it.
fn raise<E: pyo3::PyTypeInfo>(py: Python<'_>, sources: &SourceMap, diags: &[Diagnostic]) -> PyErr {
    let text = rmoc::diag::render(sources, diags, false);
    let first = diags
        .iter()
        .find(|d| d.is_error())
        .or(diags.first())
        .cloned()
        .unwrap_or_else(|| Diagnostic::error_nospan(DiagnosticKind::Internal, "unknown failure"));
    let err = PyErr::from_type(py.get_type::<E>(), text.trim_end().to_string());
    let value = err.value(py);
    let (file, line, column) = match first.span {
        Some(span) if (span.file as usize) < sources.files.len() => {
            let (l, c) = sources.line_col(span.file, span.start);
            (Some(sources.file(span.file).path.clone()), Some(l), Some(c))
        }
        _ => (None, None, None),
    };
    let _ = value.setattr("file", file);
    let _ = value.setattr("line", line);
    let _ = value.setattr("column", column);
    let _ = value.setattr("kind", first.kind.code());
    let _ = value.setattr("message", first.message.clone());
    let _ = value.setattr("hint", first.hint.clone());
    err
}

/// Runs `f` on a thread with the stack the command line gives its work
/// (deeply nested expressions recurse in the compiler and the
/// interpreter), and waits for it: Python's and Dask's threads have small
/// stacks.
fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn_scoped(scope, f);
        match worker {
            Ok(handle) => match handle.join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread to be had: on this one.
            Err(_) => panic!("cannot start a worker thread"),
        }
    })
}

/// A compiled model.
#[pyclass(frozen, module = "rmoc._rmoc")]
struct NativeModel {
    sources: SourceMap,
    /// Dropped on a large stack (`Drop`): its code's expression trees are as
    /// deep as the model's expressions, and Python's threads have 8 MiB.
    simulator: std::mem::ManuallyDrop<rmoc::Simulator>,
    /// The parameters' values at the start (computed once, when asked).
    parameters: OnceLock<Vec<(String, f64)>>,
}

impl Drop for NativeModel {
    fn drop(&mut self) {
        // SAFETY: `simulator` is taken here, once, and not used after.
        let simulator = unsafe { std::mem::ManuallyDrop::take(&mut self.simulator) };
        on_big_stack(move || drop(simulator));
    }
}

/// Compiles `model` (or the file's only one) of the file `path`, whose
/// text is `text`.
#[pyfunction]
#[pyo3(signature = (path, text, model=None))]
fn compile(
    py: Python<'_>,
    path: PathBuf,
    text: String,
    model: Option<String>,
) -> PyResult<NativeModel> {
    let outcome = py.detach(|| {
        on_big_stack(|| {
            let (mut lib, loaded) = rmoc::load_source(&path, &text);
            let compiled = loaded
                .and_then(|l| {
                    rmoc::select_model(&mut lib, &l, model.as_deref()).map_err(|d| vec![d])
                })
                .and_then(|m| rmoc::compile(&mut lib, m))
                .and_then(|c| rmoc::Simulator::new(c, false).map_err(|d| vec![d]));
            (std::mem::take(&mut lib.sources), compiled)
        })
    });
    match outcome {
        (sources, Ok(simulator)) => Ok(NativeModel {
            sources,
            simulator: std::mem::ManuallyDrop::new(simulator),
            parameters: OnceLock::new(),
        }),
        (sources, Err(diags)) => Err(raise::<CompileError>(py, &sources, &diags)),
    }
}

/// Keeps the times and the chosen columns of the rows a run streams.
struct ColumnSink {
    columns: Vec<usize>,
    times: Vec<f64>,
    values: Vec<f64>,
}

impl ColumnSink {
    fn take(&mut self, t: f64, row: &[f64]) {
        self.times.push(t);
        self.values.extend(self.columns.iter().map(|&c| row[c]));
    }
}

impl RowSink for ColumnSink {
    fn begin(&mut self, _names: &[String]) -> std::io::Result<()> {
        Ok(())
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        self.take(t, values);
        Ok(())
    }
}

/// The run settings a Python call gives: a dict with every key (None
/// where the model's experiment or the default holds).
#[derive(Clone, Default, FromPyObject)]
#[pyo3(from_item_all)]
struct Settings {
    start_time: Option<f64>,
    stop_time: Option<f64>,
    tolerance: Option<f64>,
    atol: Option<f64>,
    interval: Option<f64>,
    solver: Option<String>,
    step: Option<f64>,
    rho_inf: Option<f64>,
}

impl Settings {
    fn request(&self, params: Vec<String>) -> RunRequest {
        RunRequest {
            start_time: self.start_time,
            stop_time: self.stop_time,
            tolerance: self.tolerance,
            atol: self.atol,
            interval: self.interval,
            params,
            solver: self.solver.clone(),
            step: self.step,
            rho_inf: self.rho_inf,
            ..RunRequest::default()
        }
    }
}

/// `NAME=VALUE` of a Python value: a bool as true/false, a number as the
/// shortest text that reads back to it.
fn parameter_spec(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.cast::<pyo3::types::PyBool>() {
        return Ok(format!("{name}={}", b.is_true()));
    }
    let x: f64 = value.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "parameter `{name}`: {} is not a number or a bool",
            value.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(format!(
        "{name}={}",
        rmoc::output::csv::number(&mut ryu::Buffer::new(), x)
    ))
}

#[pymethods]
impl NativeModel {
    /// The model's full name.
    #[getter]
    fn name(&self) -> String {
        self.simulator.causal().name.clone()
    }

    /// The names of the result's columns (time aside).
    #[getter]
    fn variables(&self) -> Vec<String> {
        self.columns()
    }

    /// Each parameter's value at the start (bindings evaluated).
    fn parameter_values(&self, py: Python<'_>) -> PyResult<Vec<(String, f64)>> {
        if let Some(p) = self.parameters.get() {
            return Ok(p.clone());
        }
        // A run of no length evaluates the parameters.
        let request = RunRequest {
            stop_time: Some(self.simulator.causal().experiment.start_time.unwrap_or(0.0)),
            ..RunRequest::default()
        };
        let run = py.detach(|| {
            on_big_stack(|| {
                let opts = request
                    .resolve(self.simulator.causal())
                    .map_err(|d| vec![d])?;
                self.simulator.simulate(&opts)
            })
        });
        match run {
            Ok(r) => Ok(self.parameters.get_or_init(|| r.parameters).clone()),
            Err(d) => Err(raise::<SimulationError>(py, &self.sources, &d)),
        }
    }

    /// The names, types (`Real`, `Integer`, `Boolean`) and whether each
    /// parameter can be set between runs.
    fn parameter_types(&self) -> Vec<(String, &'static str, bool)> {
        let c = self.simulator.causal();
        c.vars
            .iter()
            .filter(|v| v.is_parameter())
            .map(|v| {
                let settable =
                    rmoc::solve::settings::settable_parameter(c, &v.name, &v.name).is_ok();
                let ty = match v.ty {
                    rmoc::flat::ScalarType::Real => "Real",
                    rmoc::flat::ScalarType::Integer => "Integer",
                    rmoc::flat::ScalarType::Boolean => "Boolean",
                };
                (v.name.clone(), ty, settable)
            })
            .collect()
    }

    /// One run. Returns a dict: `time` (1-D array), `names`, `values`
    /// (2-D array, one column per name), `parameters`, `units`, `stats`.
    #[pyo3(signature = (settings, parameters=None, outputs=None))]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        settings: Settings,
        parameters: Option<&Bound<'py, PyDict>>,
        outputs: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut params = Vec::new();
        if let Some(p) = parameters {
            for (k, v) in p.iter() {
                params.push(parameter_spec(&k.extract::<String>()?, &v)?);
            }
        }
        let names = self.columns();
        let chosen = rmoc::solve::chosen_columns(&names, outputs.as_deref().unwrap_or(&[]))
            .map_err(|d| PyValueError::new_err(rmoc::diag::one_line(&self.sources, &d)))?;
        let columns: Vec<usize> = chosen.iter().map(|c| c.0).collect();
        let request = settings.request(params);
        let run = py.detach(|| {
            on_big_stack(|| -> Result<(Results, ColumnSink), Vec<Diagnostic>> {
                let mut opts = request
                    .resolve(self.simulator.causal())
                    .map_err(|d| vec![d])?;
                let sink = Arc::new(Mutex::new(ColumnSink {
                    columns: columns.clone(),
                    times: Vec::new(),
                    values: Vec::new(),
                }));
                let shared: Arc<Mutex<dyn RowSink>> = sink.clone();
                opts.rows = Some(RowSinkHandle(shared));
                let results = self.simulator.simulate(&opts)?;
                drop(opts);
                let mut sink = Arc::try_unwrap(sink)
                    .ok()
                    .and_then(|m| m.into_inner().ok())
                    .ok_or_else(|| {
                        vec![Diagnostic::error_nospan(
                            DiagnosticKind::Internal,
                            "internal error: the rows are still shared",
                        )]
                    })?;
                for (t, row) in results.times.iter().zip(&results.rows) {
                    sink.take(*t, row);
                }
                Ok((results, sink))
            })
        });
        let (results, sink) = match run {
            Ok(r) => r,
            Err(d) => return Err(raise::<SimulationError>(py, &self.sources, &d)),
        };
        let out = PyDict::new(py);
        let rows = sink.times.len();
        out.set_item("time", PyArray1::from_vec(py, sink.times))?;
        let values = PyArray1::from_vec(py, sink.values).reshape([rows, columns.len()])?;
        out.set_item("values", values)?;
        out.set_item(
            "names",
            chosen.iter().map(|c| c.1.clone()).collect::<Vec<_>>(),
        )?;
        out.set_item(
            "units",
            columns
                .iter()
                .map(|&k| results.units[k].clone())
                .collect::<Vec<_>>(),
        )?;
        let p = PyDict::new(py);
        for (n, v) in &results.parameters {
            p.set_item(n, v)?;
        }
        out.set_item("parameters", p)?;
        let stats = serde_json::to_string(&results.stats).unwrap_or_default();
        out.set_item("stats", stats)?;
        let warnings: Vec<String> = results
            .warnings
            .iter()
            .map(|d| rmoc::diag::one_line(&self.sources, d))
            .collect();
        out.set_item("warnings", warnings)?;
        Ok(out)
    }

    /// Runs every point (rows of `values` for the parameters `names`) on
    /// `jobs` threads. Returns a dict: `parameters`, `types`, `columns`,
    /// `values` (2-D array, NaN where a point failed), `status`, `message`.
    #[pyo3(signature = (names, values, settings, outputs=None, statistics=None, jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn sweep<'py>(
        &self,
        py: Python<'py>,
        names: Vec<String>,
        values: Vec<Vec<f64>>,
        settings: Settings,
        outputs: Option<Vec<String>>,
        statistics: Option<Vec<String>>,
        jobs: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let statistics = match statistics {
            None => vec![rmoc::sweep::summary::Statistic::Final],
            Some(s) => rmoc::sweep::summary::Statistic::parse_list(&s.join(","))
                .map_err(|d| PyValueError::new_err(rmoc::diag::one_line(&self.sources, &d)))?,
        };
        let c = self.simulator.causal();
        let plan = rmoc::sweep::plan::Plan::from_points(c, &names, values)
            .map_err(|d| raise::<SimulationError>(py, &self.sources, &[d]))?;
        let base = settings
            .request(Vec::new())
            .resolve(c)
            .map_err(|d| raise::<SimulationError>(py, &self.sources, &[d]))?;
        let sweep_settings = rmoc::sweep::SweepSettings {
            statistics,
            outputs: outputs.unwrap_or_default(),
            jobs,
            save: None,
        };
        let stop = Arc::new(rmoc::solve::monitor::StopFlag::default());
        let table = py
            .detach(|| {
                on_big_stack(|| {
                    rmoc::sweep::run(
                        &self.simulator,
                        &self.sources,
                        &base,
                        &plan,
                        &sweep_settings,
                        &|_| {},
                        &stop,
                    )
                })
            })
            .map_err(|d| raise::<SimulationError>(py, &self.sources, &[d]))?;
        let out = PyDict::new(py);
        let width = table.columns.len();
        let mut flat = Vec::with_capacity(table.outcomes.len() * width);
        for o in &table.outcomes {
            if o.values.len() == width {
                flat.extend_from_slice(&o.values);
            } else {
                flat.extend(std::iter::repeat_n(f64::NAN, width));
            }
        }
        let rows = table.outcomes.len();
        out.set_item("parameters", table.plan.names.clone())?;
        out.set_item(
            "types",
            table
                .plan
                .types
                .iter()
                .map(|t| match t {
                    rmoc::flat::ScalarType::Real => "Real",
                    rmoc::flat::ScalarType::Integer => "Integer",
                    rmoc::flat::ScalarType::Boolean => "Boolean",
                })
                .collect::<Vec<_>>(),
        )?;
        out.set_item(
            "points",
            PyArray1::from_vec(py, table.plan.points.concat())
                .reshape([rows, table.plan.names.len()])?,
        )?;
        out.set_item("columns", table.columns.clone())?;
        out.set_item(
            "values",
            PyArray1::from_vec(py, flat).reshape([rows, width])?,
        )?;
        let status = PyList::empty(py);
        let message = PyList::empty(py);
        for o in &table.outcomes {
            status.append(o.status.word())?;
            message.append(match &o.status {
                rmoc::sweep::PointStatus::Failed(m) => m.clone(),
                _ => o.warnings.join("; "),
            })?;
        }
        out.set_item("status", status)?;
        out.set_item("message", message)?;
        Ok(out)
    }
}

impl NativeModel {
    fn columns(&self) -> Vec<String> {
        rmoc::solve::output_columns(
            self.simulator.causal(),
            &self.simulator.compiled.program.layout,
        )
        .into_iter()
        .map(|c| c.0)
        .collect()
    }
}

#[pymodule]
fn _rmoc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<NativeModel>()?;
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
