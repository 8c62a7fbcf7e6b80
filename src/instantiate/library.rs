//! The class table: every class rmoc knows of, loaded on demand, and
//! Modelica's class lookup over it.
//!
//! Lookup of a top-level name, in order (docs/language.md, "Name lookup"):
//! classes of the model's own file; in the model's folder only `X.rmo`,
//! `X.mo`, `X/package.rmo` or `X/package.mo` (for a file that says `within
//! P.Q;`, the folder that holds its library `P` instead); then each
//! `RMOCPATH` root, then each `MODELICAPATH` root, the same way; then the
//! built-in standard library embedded in the binary. Unrelated files are
//! never read. A folder's `package.order` gives the order of its members.
//!
//! Library files are indexed with the logos scanner ([`crate::syntax::scan`]);
//! a class is parsed only when it is used, from the file text with every other
//! class blanked out, so spans stay those of the file. Classes of the embedded
//! standard library come already parsed: `build.rs` stored their trees.

use crate::diag::{Diagnostic, DiagnosticKind, SourceMap, closest};
use crate::flat::ScalarType;
use crate::syntax::ast::{self, ClassBody, ClassDef, Element};
use crate::syntax::scan::{self, ScannedFile};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

pub type ClassId = u32;

/// The predefined classes. Their values' types are the flat model's
/// [`ScalarType`]s: `Real`, `Integer`, `Boolean`, and an enumeration's
/// literals are Integers; Strings are texts known while flattening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// `Real`, `Integer`, `Boolean`.
    Scalar(ScalarType),
    String,
    /// Enumerations known to the compiler (`StateSelect`, `AssertionLevel`).
    Enumeration,
    /// `ExternalObject` (MLS 12.9.7), the base of classes whose instances
    /// are made by a `constructor` function: the MSL's tables
    /// (`eval/msl_tables.rs`).
    ExternalObject,
}

impl Builtin {
    /// The type of a component of this class, if it has a value (an
    /// enumeration's are Integers).
    pub fn scalar_type(self) -> Option<ScalarType> {
        match self {
            Builtin::Scalar(t) => Some(t),
            Builtin::Enumeration => Some(ScalarType::Integer),
            Builtin::String | Builtin::ExternalObject => None,
        }
    }
}

/// Where the library files of a root come from.
#[derive(Clone, Debug)]
pub enum Root {
    Dir(PathBuf),
    /// The standard library compiled into the binary.
    Embedded,
}

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/stdlib_files.rs"));
}

/// The embedded standard library: (path relative to `stdlib/`, text).
pub fn embedded_stdlib() -> &'static [(&'static str, &'static str)] {
    embedded::STDLIB_FILES
}

/// The class of scan index `idx` in embedded file `k`, as `build.rs` parsed
/// it when rmoc was built; `None` if it did not parse there (it is parsed
/// again, and its error reported, as for any library file). Spans come out in
/// `file`, the id the file got in this run's source map.
fn prebuilt_class(k: usize, idx: usize, file: u32) -> Option<ast::ClassElement> {
    let &(start, end) = embedded::STDLIB_TREES_INDEX.get(k)?.get(idx)?;
    let bytes = embedded::STDLIB_TREES.get(start as usize..end as usize)?;
    if bytes.is_empty() {
        return None;
    }
    crate::diag::with_span_file(file, || postcard::from_bytes(bytes).ok())
}

impl Root {
    /// The shown path and text of `rel`, and for an embedded file its index
    /// in [`embedded_stdlib`].
    fn read(&self, rel: &str) -> Option<(String, String, Option<usize>)> {
        self.read_exact(rel).or_else(|| {
            // Modelica's own extension: `X.mo` and `X/package.mo` beside
            // rmoc's `.rmo`.
            let mo = format!("{}.mo", rel.strip_suffix(".rmo")?);
            self.read_exact(&mo)
        })
    }

    fn read_exact(&self, rel: &str) -> Option<(String, String, Option<usize>)> {
        match self {
            Root::Dir(d) => {
                let p = d.join(rel);
                let text = std::fs::read_to_string(&p).ok()?;
                Some((p.display().to_string(), text, None))
            }
            Root::Embedded => embedded_stdlib()
                .iter()
                .enumerate()
                .find(|(_, (p, _))| *p == rel)
                .map(|(k, (p, t))| (format!("<stdlib>/{p}"), t.to_string(), Some(k))),
        }
    }

    /// For a top-level `name` with no folder of that name: the folder
    /// `name VERSION` with the highest version, if any.
    fn versioned(&self, dir: &str, name: &str) -> Option<String> {
        let Root::Dir(d) = self else {
            return None;
        };
        if !dir.is_empty() || d.join(name).is_dir() {
            return None;
        }
        let prefix = format!("{name} ");
        std::fs::read_dir(d)
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.starts_with(&prefix) && d.join(f).is_dir())
            .max()
    }

    /// Names `X` for which `dir/X.rmo`, `dir/X.mo`, `dir/X/package.rmo` or
    /// `dir/X/package.mo` exists: in the order of the folder's
    /// `package.order` where it has one (names it does not list follow, in
    /// alphabetical order), else alphabetical.
    fn entries(&self, dir: &str) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Root::Dir(d) => {
                let folder = d.join(dir);
                let Ok(rd) = std::fs::read_dir(&folder) else {
                    return out;
                };
                for e in rd.flatten() {
                    let name = e.file_name().to_string_lossy().to_string();
                    let stem = name
                        .strip_suffix(".rmo")
                        .or_else(|| name.strip_suffix(".mo"));
                    if let Some(stem) = stem {
                        if stem != "package" {
                            out.push(stem.to_string());
                        }
                    } else if e.path().join("package.rmo").is_file()
                        || e.path().join("package.mo").is_file()
                    {
                        out.push(name);
                    }
                }
                out.sort();
                out.dedup();
                if let Ok(order) = std::fs::read_to_string(folder.join("package.order")) {
                    let listed: Vec<String> = order
                        .lines()
                        .map(str::trim)
                        .filter(|l| out.iter().any(|n| n == l))
                        .map(str::to_string)
                        .collect();
                    let rest = out.into_iter().filter(|n| !listed.contains(n));
                    out = listed.iter().cloned().chain(rest).collect();
                    out.dedup();
                }
                return out;
            }
            Root::Embedded => {
                let prefix = if dir.is_empty() {
                    String::new()
                } else {
                    format!("{dir}/")
                };
                for (p, _) in embedded_stdlib() {
                    if let Some(rest) = p.strip_prefix(&prefix) {
                        let first = rest.split('/').next().unwrap_or(rest);
                        let name = if rest.contains('/') {
                            if rest == format!("{first}/package.rmo") {
                                first.to_string()
                            } else {
                                continue;
                            }
                        } else if let Some(stem) = first.strip_suffix(".rmo") {
                            if stem == "package" {
                                continue;
                            }
                            stem.to_string()
                        } else {
                            continue;
                        };
                        out.push(name);
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Where a class's definition and its nested classes come from.
#[derive(Clone, Debug)]
enum Origin {
    Builtin(Builtin),
    /// Parsed together with its file (the user's model file), nested classes in the AST.
    Ast,
    /// A class cut out of a scanned library file: `scan_idx` in `scan`.
    Scanned {
        file: u32,
        scan: Arc<ScannedFile>,
        scan_idx: usize,
        /// For a `package.rmo`, the folder whose files are further members.
        folder: Option<(usize, String)>,
    },
    /// Made by the flattener (a redeclared short class).
    Synthetic,
    /// A member file of a package folder not read yet: `name` in `dir` of
    /// root `root`. Read (and becomes `Scanned`) when its definition or
    /// members are first needed, so a package's other files are never read.
    Pending {
        root: usize,
        dir: String,
        name: String,
    },
    /// A pending member whose file turned out not to define it.
    NotInFile,
}

#[derive(Debug)]
pub struct ClassEntry {
    pub name: String,
    pub full_name: String,
    pub parent: Option<ClassId>,
    origin: Origin,
    def: Option<Arc<ClassDef>>,
    /// The element prefixes the class was declared with inside its parent.
    pub replaceable: bool,
    /// Declared `final` inside its parent: it cannot be redeclared.
    pub final_: bool,
    pub constrainedby: Option<ast::Constraint>,
    children: Option<HashMap<String, ClassId>>,
}

pub struct Library {
    pub sources: SourceMap,
    classes: Vec<ClassEntry>,
    roots: Vec<Root>,
    /// Top-level classes of the user's file.
    user_top: HashMap<String, ClassId>,
    /// Top-level classes already loaded from the roots.
    loaded_top: HashMap<String, Option<ClassId>>,
    /// Top-level classes loaded from the embedded standard library.
    embedded_top: HashMap<String, ClassId>,
    builtins: HashMap<&'static str, ClassId>,
    /// Source-map ids of the embedded standard-library files read, with their
    /// index in [`embedded_stdlib`]: their classes come parsed (`build.rs`).
    embedded_files: HashMap<u32, usize>,
    /// The folder of the model's file (where the MSL's tables read a
    /// relative file name).
    pub model_dir: Option<PathBuf>,
    /// Time spent parsing library classes, and their size (for `RMOC_TIMING`).
    pub parse_time: std::time::Duration,
    pub parsed_bytes: usize,
    /// Every file read from disk for the model: library classes and data
    /// files (tables), as read, with the root its name is relative to
    /// (`None`: an absolute name). An FMU carries them.
    pub files_read: Vec<(PathBuf, Option<usize>)>,
    /// The root each library file was read from (by source-map id).
    file_roots: HashMap<u32, usize>,
}

impl Library {
    /// The root a source file's relative names are taken from: the one it
    /// was read from, or for the user's file the model's folder.
    pub fn root_of(&self, file: u32) -> Option<usize> {
        match self.file_roots.get(&file) {
            Some(&r) => Some(r),
            None => self.model_dir.as_ref().map(|_| 0),
        }
    }

    /// `path` relative to folder root `root`, with `/` separators (both
    /// made absolute first: a model named `m.rmo` has the root `.`).
    pub fn relative_to_root(&self, path: &std::path::Path, root: usize) -> Option<String> {
        let Some(Root::Dir(d)) = self.roots.get(root) else {
            return None;
        };
        let (path, d) = (
            std::path::absolute(path).ok()?,
            std::path::absolute(d).ok()?,
        );
        let rel = path.strip_prefix(&d).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| match c {
                std::path::Component::Normal(p) => p.to_str().map(str::to_string),
                _ => None,
            })
            .collect::<Option<_>>()?;
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    /// A library whose roots are, in order: `model_dir` (if any), the
    /// `RMOCPATH` roots, the `MODELICAPATH` roots, and the embedded standard
    /// library.
    pub fn new(sources: SourceMap, model_dir: Option<PathBuf>) -> Library {
        Library::with_roots(sources, model_dir, true)
    }

    /// As [`Library::new`]; without `env`, RMOCPATH and MODELICAPATH are
    /// not roots (an FMU finds everything in its resources).
    pub fn with_roots(sources: SourceMap, model_dir: Option<PathBuf>, env: bool) -> Library {
        let mut roots = Vec::new();
        if let Some(d) = &model_dir {
            roots.push(Root::Dir(d.clone()));
        }
        for var in ["RMOCPATH", "MODELICAPATH"].into_iter().filter(|_| env) {
            if let Some(p) = std::env::var_os(var) {
                for part in std::env::split_paths(&p) {
                    if !part.as_os_str().is_empty() {
                        roots.push(Root::Dir(part));
                    }
                }
            }
        }
        roots.push(Root::Embedded);
        let mut lib = Library {
            sources,
            classes: Vec::new(),
            roots,
            user_top: HashMap::new(),
            loaded_top: HashMap::new(),
            embedded_top: HashMap::new(),
            builtins: HashMap::new(),
            embedded_files: HashMap::new(),
            model_dir,
            parse_time: std::time::Duration::ZERO,
            parsed_bytes: 0,
            files_read: Vec::new(),
            file_roots: HashMap::new(),
        };
        for (name, b) in [
            ("Real", Builtin::Scalar(ScalarType::Real)),
            ("Integer", Builtin::Scalar(ScalarType::Integer)),
            ("Boolean", Builtin::Scalar(ScalarType::Boolean)),
            ("String", Builtin::String),
            ("StateSelect", Builtin::Enumeration),
            ("AssertionLevel", Builtin::Enumeration),
            ("ExternalObject", Builtin::ExternalObject),
        ] {
            let id = lib.push(ClassEntry {
                name: name.into(),
                full_name: name.into(),
                parent: None,
                origin: Origin::Builtin(b),
                def: None,
                replaceable: false,
                final_: false,
                constrainedby: None,
                children: Some(HashMap::new()),
            });
            lib.builtins.insert(name, id);
        }
        lib
    }

    fn push(&mut self, e: ClassEntry) -> ClassId {
        self.classes.push(e);
        (self.classes.len() - 1) as ClassId
    }

    pub fn entry(&self, id: ClassId) -> &ClassEntry {
        &self.classes[id as usize]
    }

    pub fn builtin(&self, id: ClassId) -> Option<Builtin> {
        match self.classes[id as usize].origin {
            Origin::Builtin(b) => Some(b),
            _ => None,
        }
    }

    /// Registers the classes of the user's (fully parsed) model file.
    pub fn add_user_file(
        &mut self,
        def: &ast::StoredDefinition,
    ) -> Result<Vec<ClassId>, Diagnostic> {
        let parent = match &def.within {
            Some(w) if !w.parts.is_empty() => Some(self.lookup(None, w)?),
            _ => None,
        };
        let mut ids = Vec::new();
        for c in &def.classes {
            if let Some(d) = super::restrictions::reserved_class_name(c) {
                return Err(d);
            }
            let id = self.add_ast_class(Arc::new(c.clone()), parent, false, None);
            if parent.is_none() {
                self.user_top.insert(c.name.name.clone(), id);
            } else if let Some(p) = parent {
                self.ensure_children(p);
                if let Some(ch) = self.classes[p as usize].children.as_mut() {
                    ch.insert(c.name.name.clone(), id);
                }
            }
            ids.push(id);
        }
        Ok(ids)
    }

    fn add_ast_class(
        &mut self,
        def: Arc<ClassDef>,
        parent: Option<ClassId>,
        replaceable: bool,
        constrainedby: Option<ast::Constraint>,
    ) -> ClassId {
        let full_name = match parent {
            Some(p) => format!("{}.{}", self.classes[p as usize].full_name, def.name.name),
            None => def.name.name.clone(),
        };
        self.push(ClassEntry {
            name: def.name.name.clone(),
            full_name,
            parent,
            origin: Origin::Ast,
            def: Some(def),
            replaceable,
            final_: false,
            constrainedby,
            children: None,
        })
    }

    /// A class made during flattening (`redeclare model L = CubicLaw(k = 2)`),
    /// looked up from `parent`'s scope.
    pub fn add_synthetic(&mut self, def: ClassDef, parent: Option<ClassId>) -> ClassId {
        let full_name = match parent {
            Some(p) => format!("{}.{}", self.classes[p as usize].full_name, def.name.name),
            None => def.name.name.clone(),
        };
        self.push(ClassEntry {
            name: def.name.name.clone(),
            full_name,
            parent,
            origin: Origin::Synthetic,
            def: Some(Arc::new(def)),
            replaceable: false,
            final_: false,
            constrainedby: None,
            children: Some(HashMap::new()),
        })
    }

    /// The definition of a class (parsing it on first use). `None` for builtins.
    pub fn def(&mut self, id: ClassId) -> Result<Option<Arc<ClassDef>>, Diagnostic> {
        if let Some(d) = &self.classes[id as usize].def {
            return Ok(Some(d.clone()));
        }
        self.materialize(id);
        if let Origin::NotInFile = self.classes[id as usize].origin {
            let e = &self.classes[id as usize];
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::UnresolvedName,
                format!(
                    "`{}`: its package folder has a file for it, but the file does not define `{}`",
                    e.full_name, e.name
                ),
            )
            .with_hint("a library file `X.mo` must define the class `X`"));
        }
        let Origin::Scanned {
            file,
            scan,
            scan_idx,
            ..
        } = self.classes[id as usize].origin.clone()
        else {
            return Ok(None);
        };
        let ce = match self.prebuilt(file, scan_idx) {
            Some(ce) => ce,
            None => {
                let text = self.sources.file(file).text.clone();
                let t0 = std::time::Instant::now();
                let ce = crate::syntax::parse_class(&text, file, &scan, scan_idx)?;
                self.parse_time += t0.elapsed();
                let sc = &scan.classes[scan_idx];
                self.parsed_bytes += sc.end - sc.element_start;
                ce
            }
        };
        self.classes[id as usize].replaceable = ce.replaceable;
        self.classes[id as usize].final_ = ce.final_;
        self.classes[id as usize].constrainedby = ce.constrainedby;
        let def = Arc::new(ce.def);
        self.classes[id as usize].def = Some(def.clone());
        Ok(Some(def))
    }

    /// Class `scan_idx` of `file` as parsed when rmoc was built, if `file` is
    /// an embedded standard-library file.
    fn prebuilt(&self, file: u32, scan_idx: usize) -> Option<ast::ClassElement> {
        let k = *self.embedded_files.get(&file)?;
        prebuilt_class(k, scan_idx, file)
    }

    /// Reads the file of a pending package member (see `Origin::Pending`):
    /// it becomes `Scanned`, or `NotInFile` if the file does not define it.
    fn materialize(&mut self, id: ClassId) {
        let Origin::Pending { root, dir, name } = self.classes[id as usize].origin.clone() else {
            return;
        };
        self.classes[id as usize].origin = match self.read_class_file(root, &dir, &name) {
            Some((file, scan, scan_idx, folder)) => Origin::Scanned {
                file,
                scan,
                scan_idx,
                folder,
            },
            None => Origin::NotInFile,
        };
    }

    fn ensure_children(&mut self, id: ClassId) {
        if self.classes[id as usize].children.is_some() {
            return;
        }
        self.materialize(id);
        let mut children = HashMap::new();
        match self.classes[id as usize].origin.clone() {
            Origin::Ast => {
                let def = self.classes[id as usize].def.clone();
                if let Some(def) = def
                    && let ClassBody::Long(comp) = &def.body
                {
                    for e in &comp.elements {
                        if let Element::Class(ce) = e {
                            let cid = self.add_ast_class(
                                Arc::new(ce.def.clone()),
                                Some(id),
                                ce.replaceable,
                                ce.constrainedby.clone(),
                            );
                            self.classes[cid as usize].final_ = ce.final_;
                            children.insert(ce.def.name.name.clone(), cid);
                        }
                    }
                }
            }
            Origin::Scanned {
                file,
                scan,
                scan_idx,
                folder,
            } => {
                for &c in &scan.classes[scan_idx].children {
                    let name = scan.classes[c].name.clone();
                    let cid = self.add_scanned(file, scan.clone(), c, Some(id), None);
                    children.insert(name, cid);
                }
                if let Some((root, dir)) = folder {
                    for name in self.roots[root].entries(&dir) {
                        if children.contains_key(&name) {
                            continue;
                        }
                        let full_name = format!("{}.{name}", self.classes[id as usize].full_name);
                        let cid = self.push(ClassEntry {
                            name: name.clone(),
                            full_name,
                            parent: Some(id),
                            origin: Origin::Pending {
                                root,
                                dir: dir.clone(),
                                name: name.clone(),
                            },
                            def: None,
                            replaceable: false,
                            final_: false,
                            constrainedby: None,
                            children: None,
                        });
                        children.insert(name, cid);
                    }
                }
            }
            Origin::Builtin(_) | Origin::Synthetic | Origin::Pending { .. } | Origin::NotInFile => {
            }
        }
        self.classes[id as usize].children = Some(children);
    }

    fn add_scanned(
        &mut self,
        file: u32,
        scan: Arc<ScannedFile>,
        scan_idx: usize,
        parent: Option<ClassId>,
        folder: Option<(usize, String)>,
    ) -> ClassId {
        let sc = &scan.classes[scan_idx];
        let name = sc.name.clone();
        let text = self.sources.file(file).text.clone();
        let replaceable = text[sc.element_start..sc.start].contains("replaceable");
        let full_name = match parent {
            Some(p) => format!("{}.{}", self.classes[p as usize].full_name, name),
            None => name.clone(),
        };
        self.push(ClassEntry {
            name,
            full_name,
            parent,
            origin: Origin::Scanned {
                file,
                scan,
                scan_idx,
                folder,
            },
            def: None,
            replaceable,
            final_: false,
            constrainedby: None,
            children: None,
        })
    }

    /// Loads class `name` from `dir` of root `root`: `dir/name.rmo` or
    /// `dir/name/package.rmo`.
    fn load_from_root(
        &mut self,
        root: usize,
        dir: &str,
        name: &str,
        parent: Option<ClassId>,
    ) -> Option<ClassId> {
        let (file, scan, idx, folder) = self.read_class_file(root, dir, name)?;
        Some(self.add_scanned(file, scan, idx, parent, folder))
    }

    /// Reads and scans the file of class `name` in `dir` of root `root`:
    /// its source-map id, its scan, the class's index in it, and for a
    /// `package` file the folder of its further members.
    #[allow(clippy::type_complexity)]
    fn read_class_file(
        &mut self,
        root: usize,
        dir: &str,
        name: &str,
    ) -> Option<(u32, Arc<ScannedFile>, usize, Option<(usize, String)>)> {
        let join = |a: &str, b: &str| {
            if a.is_empty() {
                b.to_string()
            } else {
                format!("{a}/{b}")
            }
        };
        let file_rel = join(dir, &format!("{name}.rmo"));
        // A top-level library may sit in a folder named with its version,
        // `Modelica 4.0.0` (MLS 13.4.1): the highest such version.
        let folder = match self.roots[root].versioned(dir, name) {
            Some(v) => v,
            None => name.to_string(),
        };
        let pkg_dir = join(dir, &folder);
        let pkg_rel = format!("{pkg_dir}/package.rmo");
        let (rel, folder) = if let Some(x) = self.roots[root].read(&pkg_rel) {
            (x, Some((root, pkg_dir)))
        } else {
            (self.roots[root].read(&file_rel)?, None)
        };
        let (path, text, embedded) = rel;
        if embedded.is_none() {
            self.files_read.push((PathBuf::from(&path), Some(root)));
        }
        let scanned = Arc::new(scan::scan(&text));
        let file = self.sources.add(path, text);
        self.file_roots.insert(file, root);
        if let Some(k) = embedded {
            self.embedded_files.insert(file, k);
        }
        let idx = scanned
            .top
            .iter()
            .copied()
            .find(|&i| scanned.classes[i].name == name)?;
        Some((file, scanned, idx, folder))
    }

    fn top_level(&mut self, name: &str) -> Option<ClassId> {
        if let Some(&id) = self.user_top.get(name) {
            return Some(id);
        }
        if let Some(&id) = self.builtins.get(name) {
            return Some(id);
        }
        if let Some(r) = self.loaded_top.get(name) {
            return *r;
        }
        let mut found = None;
        for root in 0..self.roots.len() {
            let id = if matches!(self.roots[root], Root::Embedded) {
                self.embedded_top_level(name)
            } else {
                self.load_from_root(root, "", name, None)
            };
            if id.is_some() {
                found = id;
                break;
            }
        }
        self.loaded_top.insert(name.to_string(), found);
        found
    }

    /// Top-level class `name` of the embedded standard library, whatever
    /// the user's files and library paths hold.
    fn embedded_top_level(&mut self, name: &str) -> Option<ClassId> {
        if let Some(&id) = self.embedded_top.get(name) {
            return Some(id);
        }
        let root = self
            .roots
            .iter()
            .position(|r| matches!(r, Root::Embedded))?;
        let id = self.load_from_root(root, "", name, None)?;
        self.embedded_top.insert(name.to_string(), id);
        Some(id)
    }

    /// Class `path` (dotted, such as `Tables.interpolate1D`) of the
    /// embedded standard library: what the compiler itself calls, which a
    /// user's class of the same name must not replace.
    pub fn stdlib_class(&mut self, path: &str) -> Result<Option<ClassId>, Diagnostic> {
        let mut parts = path.split('.');
        let Some(mut cur) = parts.next().and_then(|p| self.embedded_top_level(p)) else {
            return Ok(None);
        };
        for p in parts {
            match self.member_class(cur, p)? {
                Some(c) => cur = c,
                None => return Ok(None),
            }
        }
        Ok(Some(cur))
    }

    /// The classes declared directly in `id` (not inherited).
    pub fn local_class(&mut self, id: ClassId, name: &str) -> Option<ClassId> {
        self.ensure_children(id);
        self.classes[id as usize]
            .children
            .as_ref()
            .and_then(|c| c.get(name).copied())
    }

    /// A member class of `id`, declared in it or inherited through `extends`.
    pub fn member_class(&mut self, id: ClassId, name: &str) -> Result<Option<ClassId>, Diagnostic> {
        self.member_class_depth(id, name, 0)
    }

    fn member_class_depth(
        &mut self,
        id: ClassId,
        name: &str,
        depth: usize,
    ) -> Result<Option<ClassId>, Diagnostic> {
        if depth > 64 {
            return Ok(None);
        }
        if let Some(c) = self.local_class(id, name) {
            return Ok(Some(c));
        }
        let Some(def) = self.def(id)? else {
            return Ok(None);
        };
        match &def.body {
            ClassBody::Long(comp) => {
                for e in &comp.elements {
                    if let Element::Extends(ext) = e {
                        let parent = self.classes[id as usize].parent;
                        if let Ok(base) = self.lookup_from(parent, &ext.base, Some(id))
                            && base != id
                            && let Some(c) = self.member_class_depth(base, name, depth + 1)?
                        {
                            return Ok(Some(c));
                        }
                    }
                }
            }
            ClassBody::Short(s) => {
                let parent = self.classes[id as usize].parent;
                if let Ok(base) = self.lookup(parent, &s.base)
                    && base != id
                {
                    return self.member_class_depth(base, name, depth + 1);
                }
            }
            ClassBody::Enumeration(_) => {}
        }
        Ok(None)
    }

    /// Classes bound by the imports of class `id`.
    fn import_lookup(&mut self, id: ClassId, name: &str) -> Result<Option<ClassId>, Diagnostic> {
        let Some(def) = self.def(id)? else {
            return Ok(None);
        };
        let ClassBody::Long(comp) = &def.body else {
            return Ok(None);
        };
        for e in &comp.elements {
            let Element::Import(imp) = e else { continue };
            match imp {
                ast::Import::Named { alias, target } if alias.name == name => {
                    return self.lookup(None, target).map(Some);
                }
                ast::Import::Wildcard { package } => {
                    let p = self.lookup(None, package)?;
                    if let Some(c) = self.member_class(p, name)? {
                        return Ok(Some(c));
                    }
                }
                ast::Import::List { package, names } if names.iter().any(|n| n.name == name) => {
                    let p = self.lookup(None, package)?;
                    if let Some(c) = self.member_class(p, name)? {
                        return Ok(Some(c));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// Looks up the first identifier of a name from scope `scope`: the scope
    /// and its enclosing classes (members, inherited members, imports), then
    /// the top level.
    pub fn lookup_simple(
        &mut self,
        scope: Option<ClassId>,
        name: &str,
    ) -> Result<Option<ClassId>, Diagnostic> {
        let mut s = scope;
        while let Some(c) = s {
            if self.classes[c as usize].name == name && self.classes[c as usize].parent.is_none() {
                // A top-level class may refer to itself by name (recursion is
                // caught later); fall through to the ordinary lookup.
            }
            if let Some(x) = self.member_class(c, name)? {
                return Ok(Some(x));
            }
            if let Some(x) = self.import_lookup(c, name)? {
                return Ok(Some(x));
            }
            let encapsulated = self.classes[c as usize]
                .def
                .as_ref()
                .map(|d| d.encapsulated)
                .unwrap_or(false);
            if encapsulated {
                break;
            }
            s = self.classes[c as usize].parent;
        }
        Ok(self.top_level(name))
    }

    /// Resolves a dotted class name from `scope`.
    pub fn lookup(
        &mut self,
        scope: Option<ClassId>,
        name: &ast::Name,
    ) -> Result<ClassId, Diagnostic> {
        self.lookup_from(scope, name, None)
    }

    /// As [`lookup`](Self::lookup); `skip` is a class whose own members must not
    /// be searched for the first identifier (an `extends` clause is looked up
    /// in the enclosing scope of the class that contains it).
    fn lookup_from(
        &mut self,
        scope: Option<ClassId>,
        name: &ast::Name,
        _skip: Option<ClassId>,
    ) -> Result<ClassId, Diagnostic> {
        let first = &name.parts[0];
        let found = if name.global {
            self.top_level(&first.name)
        } else {
            self.lookup_simple(scope, &first.name)?
        };
        let mut cur = found.ok_or_else(|| self.unknown_class(scope, first))?;
        for part in &name.parts[1..] {
            cur = match self.member_class(cur, &part.name)? {
                Some(c) => c,
                None => {
                    let full = self.classes[cur as usize].full_name.clone();
                    return Err(Diagnostic::error(
                        DiagnosticKind::UnresolvedName,
                        part.span,
                        format!("`{full}` has no class named `{}`", part.name),
                    )
                    .with_label("not found here"));
                }
            };
        }
        Ok(cur)
    }

    fn unknown_class(&mut self, scope: Option<ClassId>, id: &ast::Ident) -> Diagnostic {
        let mut d = Diagnostic::error(
            DiagnosticKind::UnresolvedName,
            id.span,
            format!("unknown class `{}`", id.name),
        )
        .with_label("no class of this name is visible here");
        let keyword = closest(&id.name, crate::syntax::parser::KEYWORDS.iter().copied())
            .filter(|k| id.name.len() >= 4 && *k != id.name);
        if let Some(k) = keyword {
            d = d.with_hint(format!(
                "`{}` is read as a type name here; did you mean the keyword `{k}`?",
                id.name
            ));
        } else if let Some(s) = self.suggest_class(scope, &id.name) {
            d = d.with_hint(format!("did you mean `{s}`?"));
        } else {
            d = d.with_hint(
                "classes are looked up in the model's file, then `NAME.rmo`, `NAME.mo` or \
                 `NAME/package.mo` in its folder, then RMOCPATH, then MODELICAPATH (the \
                 folder that holds a library such as `Modelica`), then the standard library",
            );
        }
        d
    }

    fn suggest_class(&mut self, scope: Option<ClassId>, name: &str) -> Option<String> {
        let mut candidates: Vec<String> = self.user_top.keys().cloned().collect();
        candidates.extend(self.builtins.keys().map(|s| s.to_string()));
        let mut s = scope;
        while let Some(c) = s {
            self.ensure_children(c);
            if let Some(ch) = &self.classes[c as usize].children {
                candidates.extend(ch.keys().cloned());
            }
            s = self.classes[c as usize].parent;
        }
        for r in 0..self.roots.len() {
            candidates.extend(self.roots[r].entries(""));
        }
        closest(name, candidates.iter().map(|s| s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trees `build.rs` stored are those the parser gives now, for every
    /// class of every embedded file, with spans in the file id of this run.
    #[test]
    fn prebuilt_stdlib_trees_equal_a_fresh_parse() {
        let file = 7;
        let mut classes = 0;
        for (k, (path, text)) in embedded_stdlib().iter().enumerate() {
            let scanned = scan::scan(text);
            for idx in 0..scanned.classes.len() {
                let fresh = crate::syntax::parse_class(text, file, &scanned, idx)
                    .unwrap_or_else(|d| panic!("{path}: {}", d.message));
                let stored = prebuilt_class(k, idx, file)
                    .unwrap_or_else(|| panic!("{path}: no stored tree for class {idx}"));
                assert_eq!(
                    serde_json::to_string(&stored).expect("json"),
                    serde_json::to_string(&fresh).expect("json"),
                    "{path}, class {}",
                    scanned.classes[idx].name
                );
                classes += 1;
            }
        }
        assert!(classes > 50, "only {classes} stdlib classes");
    }
}
