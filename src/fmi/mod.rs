//! FMU export (FMI 2.0 and 3.0, model exchange and co-simulation).
//!
//! `rmoc fmu` writes a zip with `modelDescription.xml`
//! ([`description`]), the model's source as `resources/model.rmo` with
//! `resources/rmoc.json` (the model's name and the token that ties the
//! description to it), and rmoc itself as the FMU's binary: the shared
//! library `librmoc.so` built beside the `rmoc` executable, whose C
//! functions ([`fmi2`], [`fmi3`]) compile the carried model when the host
//! instantiates it ([`instance`]). The user needs no C compiler, the host
//! no network.
//!
//! Invariants: the variable table ([`Interface`]) is computed by one
//! function from the compiled model, at export and again at instantiation,
//! so value references agree; a value reference is the variable's index
//! in the table (unique across types, as FMI 3 asks); every entry point
//! catches panics and reports errors through the host's logger.

pub mod archive;
pub mod description;
mod ffi;
pub mod fmi2;
pub mod fmi3;
pub mod instance;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::ScalarType;
use crate::solve::ColumnSource;
use crate::structure::{Causal, Role};

/// The FMI versions rmoc writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmiVersion {
    Two,
    Three,
}

/// Which interfaces an FMU offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FmuKinds {
    pub model_exchange: bool,
    pub co_simulation: bool,
}

/// An FMU variable's causality (FMI 2 and 3 share the words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmiCausality {
    /// Time.
    Independent,
    Parameter,
    CalculatedParameter,
    Input,
    Output,
    Local,
}

/// An FMU variable's variability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmiVariability {
    Fixed,
    Discrete,
    Continuous,
}

/// Where an FMU variable's value comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueSource {
    /// A slot of the model's frame (negated for a negated alias).
    Frame(ColumnSource),
    /// Event indicator k (FMI 3 lists them as variables), the zero-crossing
    /// function of the k-th relation of `solve::session::event_indicators`.
    Indicator(usize),
    /// The independent variable (FMI 3).
    Time,
}

/// One variable of the FMU.
#[derive(Clone, Debug)]
pub struct FmiVariable {
    pub name: String,
    pub ty: ScalarType,
    pub causality: FmiCausality,
    pub variability: FmiVariability,
    /// The start value written to the description (parameters, inputs,
    /// states with `fixed = true`); with it the variable's `initial` is
    /// `exact`.
    pub start: Option<f64>,
    pub source: ValueSource,
    /// The model variable a set writes (parameters, inputs, the start
    /// values of states with `fixed = true`).
    pub settable: Option<u32>,
    /// For a derivative: the index (in the table) of its state.
    pub derivative_of: Option<usize>,
    /// The model variable (none for `time` and the event indicators).
    pub var: Option<u32>,
    pub unit: Option<String>,
    pub description: Option<String>,
}

/// The FMU's variables and structure, from the compiled model.
#[derive(Clone, Debug)]
pub struct Interface {
    pub model_name: String,
    pub variables: Vec<FmiVariable>,
    /// Table index of each state, in the order of the state vector.
    pub states: Vec<usize>,
    /// Table index of each state's derivative, same order.
    pub derivatives: Vec<usize>,
    pub outputs: Vec<usize>,
    /// Table indices of the event-indicator variables (FMI 3).
    pub indicators: Vec<usize>,
    /// The nominal value of each state (model exchange).
    pub nominals: Vec<f64>,
    /// Whether model exchange can host the model: no set-valued contacts
    /// (their integrators are rmoc's own).
    pub model_exchange_possible: bool,
}

impl Interface {
    /// The variable of value reference `vr`.
    pub fn variable(&self, vr: u32) -> Option<&FmiVariable> {
        self.variables.get(vr as usize)
    }

    /// The value reference of the independent variable (FMI 3).
    pub fn time_reference(&self) -> Option<usize> {
        self.variables
            .iter()
            .position(|v| v.source == ValueSource::Time)
    }
}

/// The variable table of `sim`'s model. `starts` gives the values after
/// the parameters and start values were computed (the description's start
/// attributes): `starts(v)` of model variable v.
pub fn interface(
    c: &Causal,
    p: &crate::jit::lower::Program,
    starts: &dyn Fn(u32) -> f64,
) -> Interface {
    let l = &p.layout;
    let mut variables = Vec::new();
    variables.push(FmiVariable {
        name: "time".into(),
        ty: ScalarType::Real,
        causality: FmiCausality::Independent,
        variability: FmiVariability::Continuous,
        start: None,
        source: ValueSource::Time,
        settable: None,
        derivative_of: None,
        var: None,
        unit: Some("s".into()),
        description: Some("simulation time".into()),
    });
    let (inputs, outputs) = crate::solve::linearize::inputs_and_outputs(c);
    let force = |v: usize| {
        c.contacts.iter().any(|k| k.force as usize == v)
            || c.frictions.iter().any(|k| k.force as usize == v)
    };
    // Parameters: settable ones with their values; structural ones are
    // calculated (a new value needs a new flattening).
    for (v, var) in c.vars.iter().enumerate() {
        if c.roles[v] != Role::Parameter
            || var.name.contains('$')
            || force(v)
            || inputs.contains(&(v as u32))
        {
            continue;
        }
        let settable = !var.structural;
        variables.push(FmiVariable {
            name: var.name.clone(),
            ty: var.ty,
            causality: if settable {
                FmiCausality::Parameter
            } else {
                FmiCausality::CalculatedParameter
            },
            variability: FmiVariability::Fixed,
            start: settable.then(|| starts(v as u32)),
            source: ValueSource::Frame(ColumnSource::Slot(l.var(v as u32))),
            settable: settable.then_some(v as u32),
            derivative_of: None,
            var: Some(v as u32),
            unit: var.unit.clone(),
            description: var.description.clone(),
        });
    }
    for &v in &inputs {
        let var = &c.vars[v as usize];
        variables.push(FmiVariable {
            name: var.name.clone(),
            ty: var.ty,
            causality: FmiCausality::Input,
            variability: if var.ty == ScalarType::Real {
                FmiVariability::Continuous
            } else {
                FmiVariability::Discrete
            },
            start: Some(starts(v)),
            source: ValueSource::Frame(ColumnSource::Slot(l.var(v))),
            settable: Some(v),
            derivative_of: None,
            var: Some(v),
            unit: var.unit.clone(),
            description: var.description.clone(),
        });
    }
    // Everything a result file has, in its order.
    let mut table_of_var = vec![None; c.vars.len()];
    let mut out_rows = Vec::new();
    let columns = crate::solve::output_columns(c, l);
    // Internal states (`der(expr)` makes one) are the state vector's too.
    let internal = c
        .states
        .iter()
        .chain(&c.state_ders)
        .filter(|&&v| !columns.iter().any(|col| col.2 == v as usize))
        .map(|&v| {
            (
                c.vars[v as usize].name.clone(),
                ColumnSource::Slot(l.var(v)),
                v as usize,
            )
        })
        .collect::<Vec<_>>();
    for (name, source, v) in columns.into_iter().chain(internal) {
        let state_like = c.states.contains(&(v as u32)) || c.state_ders.contains(&(v as u32));
        if name.contains('$') && !state_like {
            continue;
        }
        let var = &c.vars[v];
        let continuous = var.ty == ScalarType::Real && c.roles[v] != Role::Discrete;
        let is_output = outputs.contains(&(v as u32));
        let k = variables.len();
        if table_of_var[v].is_none() {
            table_of_var[v] = Some(k);
        }
        if is_output {
            out_rows.push(k);
        }
        variables.push(FmiVariable {
            name,
            ty: var.ty,
            causality: if is_output {
                FmiCausality::Output
            } else {
                FmiCausality::Local
            },
            variability: if continuous {
                FmiVariability::Continuous
            } else {
                FmiVariability::Discrete
            },
            start: None,
            source: ValueSource::Frame(source),
            settable: None,
            derivative_of: None,
            var: Some(v as u32),
            unit: var.unit.clone(),
            description: var.description.clone(),
        });
    }
    let states: Vec<usize> = c
        .states
        .iter()
        .map(|&s| table_of_var[s as usize])
        .collect::<Option<_>>()
        .unwrap_or_default();
    let derivatives: Vec<usize> = c
        .state_ders
        .iter()
        .map(|&d| table_of_var[d as usize])
        .collect::<Option<_>>()
        .unwrap_or_default();
    for (&s, &d) in states.iter().zip(&derivatives) {
        variables[d].derivative_of = Some(s);
    }
    // A state with `fixed = true` starts at its start value: exact, and
    // settable before initialization.
    // (Only a constant start: one computed from parameters follows them, and
    // a host writing every start value back would undo a parameter's.)
    for (&s, &v) in states.iter().zip(&c.states) {
        let var = &c.vars[v as usize];
        let constant = var.start.is_some_and(|e| c.arena.as_const(e).is_some());
        if var.fixed == Some(true) && constant && !variables[s].name.contains('$') {
            variables[s].start = Some(starts(v));
            variables[s].settable = Some(v);
        }
    }
    let mut indicators = Vec::new();
    for (j, _) in crate::solve::session::event_indicators(p).enumerate() {
        indicators.push(variables.len());
        variables.push(FmiVariable {
            name: format!("_eventIndicator[{}]", j + 1),
            ty: ScalarType::Real,
            causality: FmiCausality::Local,
            variability: FmiVariability::Continuous,
            start: None,
            source: ValueSource::Indicator(j),
            settable: None,
            derivative_of: None,
            var: None,
            unit: None,
            description: Some("zero-crossing function of a relation".into()),
        });
    }
    let nominals = c
        .states
        .iter()
        .map(|&s| {
            c.vars[s as usize]
                .nominal
                .and_then(|e| c.arena.as_const(e))
                .map(f64::abs)
                .filter(|x| *x > 0.0)
                .unwrap_or(1.0)
        })
        .collect();
    Interface {
        model_name: c.name.clone(),
        variables,
        states,
        derivatives,
        outputs: out_rows,
        indicators,
        nominals,
        model_exchange_possible: c.contacts.is_empty() && c.frictions.is_empty(),
    }
}

/// The token that ties a description to the model it was written from:
/// a hash of rmoc's version, the model's name and its source text, as a
/// GUID.
pub fn token(model: &str, text: &str) -> String {
    // FNV-1a, twice with different bases, for 128 bits.
    let fnv = |seed: u64| {
        let mut h = seed;
        for b in env!("CARGO_PKG_VERSION")
            .bytes()
            .chain([0])
            .chain(model.bytes())
            .chain([0])
            .chain(text.bytes())
        {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h
    };
    let (a, b) = (fnv(0xcbf29ce484222325), fnv(0x84222325cbf29ce4));
    format!(
        "{{{:08x}-{:04x}-{:04x}-{:04x}-{:012x}}}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// What `resources/rmoc.json` says.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct Resources {
    /// The model's name in `model.rmo` (`--model`).
    pub model: String,
    /// The name of the source file the model came from (for messages).
    pub file: String,
    pub token: String,
    /// `--no-jit` at export.
    #[serde(default)]
    pub interpreted: bool,
}

/// The name of the shared library `rmoc fmu` packs: built beside the
/// `rmoc` executable by `cargo build --release`.
pub const RUNTIME_LIBRARY: &str = "librmoc.so";

/// Where the runtime library is: `RMOC_FMU_RUNTIME`, else the newest of
/// the copies beside the running executable and in its `deps/` folder
/// (cargo puts the library it built last there; a test binary runs from
/// `deps/` itself), so that `rmoc` packs the library of its own build.
pub fn runtime_library() -> Result<std::path::PathBuf, Diagnostic> {
    if let Some(p) = std::env::var_os("RMOC_FMU_RUNTIME") {
        return Ok(p.into());
    }
    let exe = std::env::current_exe().ok();
    let dir = exe.as_deref().and_then(|e| e.parent());
    let candidates = dir
        .into_iter()
        .flat_map(|d| {
            [
                Some(d.to_path_buf()),
                Some(d.join("deps")),
                d.parent().map(|p| p.to_path_buf()),
            ]
        })
        .flatten()
        .map(|d| d.join(RUNTIME_LIBRARY));
    let newest = candidates
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max_by_key(|(t, _)| *t);
    if let Some((_, p)) = newest {
        return Ok(p);
    }
    Err(Diagnostic::error_nospan(
        DiagnosticKind::Io,
        format!("cannot find rmoc's FMU runtime `{RUNTIME_LIBRARY}` beside the rmoc executable"),
    )
    .with_hint(
        "it is built with rmoc by `cargo build --release` (target/release/librmoc.so); \
         after `cargo install`, copy it beside the installed rmoc or name it in RMOC_FMU_RUNTIME",
    ))
}

/// The FMU of a compiled model as the bytes of a zip file: the
/// description, the model's text and settings, the files it read
/// (`carried`), and the runtime library `runtime` (its bytes) as the binary.
#[allow(clippy::too_many_arguments)]
pub fn package(
    iface: &Interface,
    c: &Causal,
    version: FmiVersion,
    kinds: FmuKinds,
    resources: &Resources,
    text: &str,
    carried: &[(String, Vec<u8>)],
    runtime: &[u8],
) -> Vec<u8> {
    let identifier = model_identifier(&iface.model_name);
    let xml = description::write(iface, c, version, kinds, &identifier, &resources.token);
    let platform = match version {
        FmiVersion::Two => "linux64",
        FmiVersion::Three => "x86_64-linux",
    };
    let json = serde_json::to_string_pretty(resources).unwrap_or_default();
    let mut files: Vec<(String, &[u8])> = vec![
        ("modelDescription.xml".into(), xml.as_bytes()),
        (format!("binaries/{platform}/{identifier}.so"), runtime),
        ("resources/model.rmo".into(), text.as_bytes()),
        ("resources/rmoc.json".into(), json.as_bytes()),
    ];
    for (rel, bytes) in carried {
        files.push((format!("resources/{rel}"), bytes));
    }
    archive::zip(&files)
}

/// The model identifier (the binary's name and the C prefix of FMI's
/// static linking): the model's name with every character that is not a
/// C identifier's replaced by `_`.
pub fn model_identifier(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|ch: char| ch.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// What `rmoc fmu` asks for.
#[derive(Clone, Debug)]
pub struct ExportRequest {
    pub version: FmiVersion,
    pub kinds: FmuKinds,
    /// The model's name as `--model` selects it.
    pub model: String,
    /// The source file's name (diagnostics name it).
    pub file: String,
    /// The source text carried in the FMU.
    pub text: String,
    /// Compile with the interpreter only (`--no-jit`).
    pub interpreted: bool,
    /// The other files the model read (library classes, tables): their
    /// paths relative to the model's folder or a library root, and bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The files besides the model's own that its FMU must carry: every file
/// `lib` read from disk, at its path relative to the root its name is
/// relative to (the library root it came from; for a table, the root of
/// the file naming it). In the FMU the resources folder is the only folder
/// root, so the same names find them. Files named by an absolute path are
/// read where they are: returned second.
#[allow(clippy::type_complexity)]
pub fn carried_files(
    lib: &crate::instantiate::library::Library,
) -> Result<(Vec<(String, Vec<u8>)>, Vec<std::path::PathBuf>), Diagnostic> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut outside = Vec::new();
    for (path, root) in &lib.files_read {
        let Some(rel) = root.and_then(|r| lib.relative_to_root(path, r)) else {
            outside.push(path.clone());
            continue;
        };
        let bytes = std::fs::read(path).map_err(|e| {
            Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        if let Some((_, other)) = files.iter().find(|f| f.0 == rel) {
            if *other != bytes {
                return Err(Diagnostic::error_nospan(
                    DiagnosticKind::Io,
                    format!(
                        "two different files would be resources/{rel} in the FMU (one is {})",
                        path.display()
                    ),
                )
                .with_hint(
                    "the model reads files of the same name from two library roots; rename one",
                ));
            }
            continue;
        }
        if rel == "model.rmo" || rel == "rmoc.json" {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Io,
                format!(
                    "`{}` would take the place of the FMU's own resources/{rel}",
                    path.display()
                ),
            )
            .with_hint("rename that file"));
        }
        files.push((rel, bytes));
    }
    Ok((files, outside))
}

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct Exported {
    pub bytes: Vec<u8>,
    pub variables: usize,
    pub states: usize,
    pub event_indicators: usize,
}

/// The FMU of `sim`'s model: checks that the interfaces asked for can host
/// it, and packs it with the runtime library.
pub fn export(sim: &crate::Simulator, req: &ExportRequest) -> Result<Exported, Diagnostic> {
    let c = sim.causal();
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Unsupported,
            "rmoc writes FMUs for Linux x86-64 only, and this rmoc was built for another platform",
        ));
    }
    if req.kinds.model_exchange && !(c.contacts.is_empty() && c.frictions.is_empty()) {
        return Err(Diagnostic::error_nospan(DiagnosticKind::Unsupported, format!(
            "model `{}` has set-valued contacts, which only rmoc's own integrators solve: it cannot be a model-exchange FMU",
            c.name
        ))
        .with_hint("export it for co-simulation: --kind cs"));
    }
    let opts = crate::solve::settings::RunRequest::default().resolve(c)?;
    let iface = instance::starts_and_interface(sim, &opts);
    if iface.states.len() != c.states.len() || iface.derivatives.len() != c.states.len() {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Internal,
            "internal error: a state or its derivative has no FMU variable",
        ));
    }
    let runtime_path = runtime_library()?;
    let runtime = std::fs::read(&runtime_path).map_err(|e| {
        Diagnostic::error_nospan(
            DiagnosticKind::Io,
            format!("cannot read {}: {e}", runtime_path.display()),
        )
    })?;
    let resources = Resources {
        model: req.model.clone(),
        file: req.file.clone(),
        token: token(&req.model, &req.text),
        interpreted: req.interpreted,
    };
    let bytes = package(
        &iface,
        c,
        req.version,
        req.kinds,
        &resources,
        &req.text,
        &req.files,
        &runtime,
    );
    Ok(Exported {
        bytes,
        variables: iface
            .variables
            .iter()
            .filter(|v| {
                req.version == FmiVersion::Three || !matches!(v.source, ValueSource::Indicator(_))
            })
            .count(),
        states: iface.states.len(),
        event_indicators: iface.indicators.len(),
    })
}
