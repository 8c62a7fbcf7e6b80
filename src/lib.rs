//! rmoc: a compiler and simulator for a Modelica-style acausal modelling
//! language, built for gear and contact dynamics.
//!
//! The pipeline, one module per stage (see `docs/architecture.md`):
//! `syntax` -> `instantiate` -> `flat` -> `structure` -> `jit` -> `solve` ->
//! `output`. This file is the library API that drives it: load a file, pick a
//! model, flatten it. The CLI (`main.rs`) only parses arguments and renders.

// A `Diagnostic` is plain data of about 150 bytes returned only on the cold
// path (once per compile failure); boxing every one would buy nothing.
#![allow(clippy::result_large_err)]

pub mod diag;
pub mod flat;
pub mod fmi;
pub mod instantiate;
pub mod jit;
pub mod output;
pub mod solve;
pub mod structure;
pub mod sweep;
pub mod symbolic;
pub mod syntax;

use diag::{Diagnostic, DiagnosticKind, SourceMap};
use instantiate::library::{ClassId, Library};
use std::path::Path;
use syntax::ast;

/// Reads and parses `path` and nothing else (`rmoc check --parse-only`):
/// no name is looked up, not even its `within`. The parsed file, or its
/// syntax errors; the source map renders either.
/// Lowering or JIT compilation failed. Both fail only on an inconsistency
/// of rmoc's own (a derivative function not found, code cranelift refuses):
/// the model's mistakes were reported by the stages before them.
fn codegen_failed(why: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error_nospan(
        DiagnosticKind::Internal,
        format!("code generation failed: {why}"),
    )
}

pub fn parse_file(path: &Path) -> (SourceMap, Result<ast::StoredDefinition, Vec<Diagnostic>>) {
    let (sources, parsed) = read_and_parse(path);
    let parsed = parsed.and_then(|p| {
        let diags = check_end_names(&p);
        if diag::has_errors(&diags) {
            Err(diags)
        } else {
            Ok(p)
        }
    });
    (sources, parsed)
}

/// Reads `path` into a new source map and parses it.
fn read_and_parse(path: &Path) -> (SourceMap, Result<ast::StoredDefinition, Vec<Diagnostic>>) {
    match read_source(path) {
        Ok(text) => parse_source(path, &text),
        Err(d) => (SourceMap::default(), Err(vec![d])),
    }
}

/// The text of a model file.
pub fn read_source(path: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::error_nospan(
            DiagnosticKind::Io,
            format!("cannot read `{}`: {e}", path.display()),
        )
        .with_hint("check the file name and that it is readable")
    })
}

/// Parses `text` as the file `path` into a new source map.
fn parse_source(
    path: &Path,
    text: &str,
) -> (SourceMap, Result<ast::StoredDefinition, Vec<Diagnostic>>) {
    let mut sources = SourceMap::default();
    let id = sources.add(path.display().to_string(), text.to_string());
    let parsed = syntax::parse(text, id).map_err(|d| vec![d]);
    (sources, parsed)
}

/// Reads and parses `path`, and sets up the library lookup around it. On a
/// syntax error the diagnostics are returned with the library (whose source
/// map renders them).
pub fn load(path: &Path) -> (Library, Result<Loaded, Vec<Diagnostic>>) {
    match read_source(path) {
        Ok(text) => load_source(path, &text),
        Err(d) => (Library::new(SourceMap::default(), None), Err(vec![d])),
    }
}

/// As [`load`], with the file's text given (the Python package recompiles
/// a model shipped to another process from its text): `path` names it in
/// diagnostics and its folder is where other top-level names are looked up.
pub fn load_source(path: &Path, text: &str) -> (Library, Result<Loaded, Vec<Diagnostic>>) {
    load_source_in(path, text, true)
}

/// As [`load_source`], with library roots from RMOCPATH and MODELICAPATH
/// only when `env` (an FMU's model finds its libraries in its resources,
/// whatever the host's environment says).
pub fn load_source_in(
    path: &Path,
    text: &str,
    env: bool,
) -> (Library, Result<Loaded, Vec<Diagnostic>>) {
    let (sources, parsed) = parse_source(path, text);
    let dir = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".").to_path_buf()
        } else {
            p.to_path_buf()
        }
    });
    let parsed = match parsed {
        Ok(p) => p,
        Err(d) => return (Library::with_roots(sources, dir, env), Err(d)),
    };
    // A file of a library (`within Modelica.Mechanics;` in
    // `.../Modelica/Mechanics/X.mo`) looks up top-level names in the folder
    // that holds its library, not in its own.
    let package_file = path.file_stem().is_some_and(|s| s == "package");
    let dir = match (&parsed.within, &dir) {
        (Some(w), Some(d)) if !w.parts.is_empty() => {
            // A `package.mo` is its folder's class: its library is above
            // that folder.
            let from = if package_file {
                d.parent()
            } else {
                Some(d.as_path())
            };
            from.and_then(|f| library_root(f, w)).or(Some(d.clone()))
        }
        _ => dir,
    };
    let mut lib = Library::with_roots(sources, dir, env);
    let mut diags = check_end_names(&parsed);
    let classes = match lib.add_user_file(&parsed) {
        Ok(c) => c,
        Err(d) => {
            diags.push(d);
            return (lib, Err(diags));
        }
    };
    if diag::has_errors(&diags) {
        return (lib, Err(diags));
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_string());
    (
        lib,
        Ok(Loaded {
            file: parsed,
            classes,
            stem,
        }),
    )
}

/// The folder that holds the library of a file in `dir` that says `within
/// w;`: `dir` must end in the folders named by `w`'s parts (the top one may
/// carry a version, `Modelica 4.0.0`, MLS 13.4.1). The path is taken as
/// given, then as resolved (a link named `Modelica` to a versioned folder
/// matches the first way).
fn library_root(dir: &Path, w: &ast::Name) -> Option<std::path::PathBuf> {
    let walk = |dir: &Path| -> Option<std::path::PathBuf> {
        let mut d = dir;
        for (k, part) in w.parts.iter().rev().enumerate() {
            let folder = d.file_name()?.to_str()?;
            let top = k + 1 == w.parts.len();
            let versioned = top
                && folder
                    .strip_prefix(part.name.as_str())
                    .is_some_and(|rest| rest.starts_with(' '));
            if folder != part.name && !versioned {
                return None;
            }
            d = d.parent()?;
        }
        Some(d.to_path_buf())
    };
    let absolute = std::path::absolute(dir).ok()?;
    walk(&absolute).or_else(|| walk(&dir.canonicalize().ok()?))
}

/// The parsed user file and its classes.
pub struct Loaded {
    pub file: ast::StoredDefinition,
    pub classes: Vec<ClassId>,
    /// The file name without extension: the default model's name.
    pub stem: Option<String>,
}

/// `model A ... end B;` is an error (MLS 4.5).
fn check_end_names(def: &ast::StoredDefinition) -> Vec<Diagnostic> {
    fn walk(c: &ast::ClassDef, out: &mut Vec<Diagnostic>) {
        if let ast::ClassBody::Long(comp) = &c.body {
            if let Some(end) = &comp.end_name
                && end.name != c.name.name
            {
                out.push(
                    Diagnostic::error(
                        DiagnosticKind::Syntax,
                        end.span,
                        format!("`{}` is closed by `end {};`", c.name.name, end.name),
                    )
                    .with_secondary(c.name.span, "opened here")
                    .with_hint(format!("write `end {};`", c.name.name)),
                );
            }
            for e in &comp.elements {
                if let ast::Element::Class(ce) = e {
                    walk(&ce.def, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    for c in &def.classes {
        walk(c, &mut out);
    }
    out
}

/// The models of a file that can be simulated: non-partial models, blocks
/// and classes at the top level.
pub fn candidate_models(file: &ast::StoredDefinition) -> Vec<&ast::ClassDef> {
    file.classes
        .iter()
        .filter(|c| {
            !c.partial
                && matches!(
                    c.kind,
                    ast::ClassKind::Model | ast::ClassKind::Block | ast::ClassKind::Class
                )
        })
        .collect()
}

/// Picks the model to work on: `--model NAME`, or the only candidate.
pub fn select_model(
    lib: &mut Library,
    loaded: &Loaded,
    name: Option<&str>,
) -> Result<ClassId, Diagnostic> {
    let candidates = candidate_models(&loaded.file);
    match name {
        Some(n) => {
            if let Some(pos) = loaded.file.classes.iter().position(|c| c.name.name == n) {
                return Ok(loaded.classes[pos]);
            }
            // A dotted name of a library model (`Mechanics.Examples.X`).
            let parts: Vec<ast::Ident> = n
                .split('.')
                .map(|p| ast::Ident {
                    name: p.to_string(),
                    span: crate::diag::Span::default(),
                })
                .collect();
            let dotted = ast::Name {
                parts,
                global: false,
                span: crate::diag::Span::default(),
            };
            lib.lookup(None, &dotted).map_err(|_| {
                let names: Vec<String> = candidates.iter().map(|c| c.name.name.clone()).collect();
                Diagnostic::error_nospan(
                    DiagnosticKind::Setting,
                    format!("no model `{n}` in this file"),
                )
                .with_hint(if names.is_empty() {
                    "the file defines no model".to_string()
                } else {
                    format!("the file defines: {}", names.join(", "))
                })
            })
        }
        None => match candidates.as_slice() {
            [one] => {
                let pos = loaded
                    .file
                    .classes
                    .iter()
                    .position(|c| std::ptr::eq(c, *one))
                    .expect("candidate is a class of the file");
                Ok(loaded.classes[pos])
            }
            [] => Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                "the file defines no model to simulate (all are partial, or packages)",
            )
            .with_hint("add a non-partial `model`, or name one with --model")),
            many => {
                // A file `gearbox.rmo` defaults to its model `Gearbox`, as a
                // library file `X.rmo` defines `X` (and `gear_whine.rmo` to
                // `GearWhine`: underscores of the file name aside).
                let plain = |s: &str| s.replace('_', "").to_ascii_lowercase();
                if let Some(stem) = &loaded.stem
                    && let Some(pos) = loaded.file.classes.iter().position(|c| {
                        plain(&c.name.name) == plain(stem)
                            && many.iter().any(|m| std::ptr::eq(*m, c))
                    })
                {
                    return Ok(loaded.classes[pos]);
                }
                let names: Vec<String> = many.iter().map(|c| c.name.name.clone()).collect();
                Err(Diagnostic::error(
                    DiagnosticKind::Setting,
                    many[1].name.span,
                    format!(
                        "the file defines {} models; choose one with --model",
                        many.len()
                    ),
                )
                .with_hint(format!("--model {}", names.join(" | --model "))))
            }
        },
    }
}

/// Checks several models of one file (`rmoc check` without `--model`):
/// their summaries, or every error. With more than one model, each error
/// names the model it was found in; one error found in several (a shared
/// base class) is reported once, naming them all.
pub fn check_models(
    lib: &mut Library,
    models: &[ClassId],
) -> Result<(Vec<String>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut summaries = Vec::new();
    let mut found: Vec<(Diagnostic, Vec<String>)> = Vec::new();
    for &m in models {
        let ds = match check_model(lib, m) {
            Ok((s, warnings)) => {
                summaries.push(s);
                warnings
            }
            Err(ds) => ds,
        };
        let name = lib.entry(m).full_name.clone();
        for d in ds {
            match found
                .iter_mut()
                .find(|(x, _)| x.message == d.message && x.span == d.span)
            {
                Some((_, names)) => {
                    if !names.contains(&name) {
                        names.push(name.clone());
                    }
                }
                None => found.push((d, vec![name.clone()])),
            }
        }
    }
    let errors = found.iter().any(|(d, _)| d.is_error());
    let diags: Vec<Diagnostic> = found
        .into_iter()
        .map(|(d, names)| {
            if models.len() < 2 {
                return d;
            }
            let shown: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            let which = if names.len() == 1 { "model" } else { "models" };
            d.with_note(format!("in {which} {}", shown.join(", ")))
        })
        .collect();
    if errors {
        return Err(diags);
    }
    Ok((summaries, diags))
}

/// Checks one model: flattening, then the balance of equations and unknowns.
/// Returns a one-line summary and the warnings.
pub fn check_model(
    lib: &mut Library,
    model: ClassId,
) -> Result<(String, Vec<Diagnostic>), Vec<Diagnostic>> {
    let flat = instantiate::flatten(lib, model)?;
    let diags = structure::balance::check(&flat);
    if diag::has_errors(&diags) {
        // The warnings first: an unconnected connector (its flows set to
        // zero) is often why a model does not balance.
        let mut all = flat.warnings.clone();
        all.extend(diags);
        return Err(all);
    }
    let unknowns = structure::balance::unknowns(&flat).len();
    // A closed model (no connectors of its own) is analysed as `simulate` would.
    if flat.top_connectors.is_empty() {
        let summary = (
            flat.name.clone(),
            flat.equations.len(),
            flat.vars.iter().filter(|v| v.is_parameter()).count(),
        );
        let mut causal = structure::analyze(flat)?;
        // Initialization is part of checking: inconsistent initial conditions
        // are found at the start values, with the interpreter (no JIT needed).
        let program =
            jit::lower::lower_for_check(&mut causal).map_err(|m| vec![codegen_failed(m)])?;
        let interp = solve::model::Interpreter { program: &program };
        let mut warnings = std::mem::take(&mut causal.warnings);
        warnings.extend(
            solve::initialize_only(
                &causal,
                &program,
                &interp,
                causal.experiment.start_time.unwrap_or(0.0),
            )
            .map_err(|d| vec![d])?,
        );
        let line = format!(
            "{}: ok ({} equations, {} unknowns, {} parameters; index {}, {} states)",
            summary.0,
            summary.1,
            unknowns,
            summary.2,
            causal.summary.index,
            causal.states.len()
        );
        return Ok((line, warnings));
    }
    let line = format!(
        "{}: ok ({} equations, {} unknowns, {} parameters)",
        flat.name,
        flat.equations.len(),
        unknowns,
        flat.vars.iter().filter(|v| v.is_parameter()).count()
    );
    Ok((line, flat.warnings))
}

/// For `RMOC_TIMING`: the process's peak resident memory so far
/// (`, peak memory N MB`), where the system reports it (Linux).
pub fn peak_memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| format!(", peak memory {:.0} MB", kb / 1024.0))
        .unwrap_or_default()
}

/// A model ready to run: its causal form and its IR program.
pub struct Compiled {
    pub causal: structure::Causal,
    pub program: jit::lower::Program,
}

/// Flattens, analyses and lowers a model.
pub fn compile(lib: &mut Library, model: ClassId) -> Result<Compiled, Vec<Diagnostic>> {
    let timing = std::env::var_os("RMOC_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let flat = instantiate::flatten(lib, model)?;
    let t1 = std::time::Instant::now();
    let mut causal = structure::analyze(flat)?;
    let t2 = std::time::Instant::now();
    if timing {
        eprintln!(
            "flatten {:.1} ms (parsing library classes {:.1} ms, {} bytes), structure {:.1} ms{}",
            (t1 - t0).as_secs_f64() * 1e3,
            lib.parse_time.as_secs_f64() * 1e3,
            lib.parsed_bytes,
            (t2 - t1).as_secs_f64() * 1e3,
            peak_memory()
        );
    }
    let program = jit::lower::lower_rerolled(&mut causal).map_err(|m| vec![codegen_failed(m)])?;
    if timing {
        eprintln!(
            "lower {:.1} ms (rerolled){}",
            t2.elapsed().as_secs_f64() * 1e3,
            peak_memory()
        );
    }
    if let Some(which) = std::env::var_os("RMOC_DUMP_IR") {
        let which = which.to_string_lossy().to_string();
        for f in program.user.iter().chain(program.entries()) {
            if f.name.contains(&which) {
                eprintln!("{}", jit::ir::display(f));
            }
        }
    }
    if let Err(e) = jit::ir::verify(program.entries(), &program.user) {
        return Err(vec![Diagnostic::error_nospan(
            DiagnosticKind::Internal,
            format!(
                "internal error: generated code failed verification: {}",
                e.0
            ),
        )]);
    }
    Ok(Compiled { causal, program })
}

/// A compiled model with its machine code, ready for any number of runs
/// (one `rmoc simulate`, the points of a sweep, a Python session's calls).
/// Runs share it: each has its own buffers, and the compiled functions
/// touch only the buffer they are given.
pub struct Simulator {
    pub compiled: Compiled,
    /// `None`: every entry runs on the reference interpreter (`--no-jit`).
    jit: Option<jit::codegen::Jit>,
}

impl Simulator {
    /// Compiles the hot entries to machine code (unless `interpreted`).
    pub fn new(compiled: Compiled, interpreted: bool) -> Result<Simulator, Diagnostic> {
        let jit = if interpreted {
            None
        } else {
            Some(
                solve::model::Hybrid::compile(&compiled.program).map_err(|e| {
                    codegen_failed(e).with_hint("--no-jit runs the model with the interpreter")
                })?,
            )
        };
        Ok(Simulator { compiled, jit })
    }

    pub fn causal(&self) -> &structure::Causal {
        &self.compiled.causal
    }

    /// One run with the options `opts` (see [`solve::settings::RunRequest`]).
    pub fn simulate(&self, opts: &solve::Options) -> Result<solve::Results, Vec<Diagnostic>> {
        self.with_backend(|backend| {
            solve::simulate(&self.compiled.causal, &self.compiled.program, backend, opts)
        })
    }

    /// Runs `f` with the backend of this simulator: the compiled code
    /// (with the interpreter for the cold entries), or the interpreter.
    fn with_backend<R>(&self, f: impl FnOnce(&dyn solve::model::Backend) -> R) -> R {
        let program = &self.compiled.program;
        match &self.jit {
            Some(jit) => f(&solve::model::Hybrid { jit, program }),
            None => f(&solve::model::Interpreter { program }),
        }
    }

    /// Runs `f` with the model lent to a [`solve::session::Session`].
    pub fn with_model<R>(&self, f: impl FnOnce(solve::session::ModelRef) -> R) -> R {
        self.with_backend(|backend| {
            f(solve::session::ModelRef {
                causal: &self.compiled.causal,
                program: &self.compiled.program,
                backend,
            })
        })
    }

    /// Runs to `opts.stop` (the start: after initialization only) and
    /// linearizes the model there (`solve::linearize`).
    pub fn linearize(
        &self,
        opts: &solve::Options,
    ) -> Result<solve::linearize::Linearization, Vec<Diagnostic>> {
        let mut opts = opts.clone();
        opts.keep_frame = true;
        // Two rows: the operating point is all that is kept.
        opts.interval = if opts.stop > opts.start {
            opts.stop - opts.start
        } else {
            1.0
        };
        opts.rows = None;
        let results = self.simulate(&opts)?;
        let Some(frame) = results.frame else {
            return Err(vec![Diagnostic::error_nospan(
                DiagnosticKind::Solver,
                "the run stopped before the operating point",
            )]);
        };
        self.with_backend(|backend| {
            solve::linearize::linearize(&self.compiled.causal, backend, &frame)
        })
        .map_err(|d| vec![d])
    }
}

#[cfg(test)]
mod tests {
    /// Sweeps and the Python package share one simulator between threads.
    #[test]
    fn a_simulator_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Simulator>();
    }
}
