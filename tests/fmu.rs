//! `rmoc fmu`: the FMUs' archives and descriptions, and their binaries
//! driven through the FMI 2.0 and 3.0 C functions as a host drives them
//! (loaded with dlopen from the unpacked FMU), against `rmoc simulate`
//! and closed forms. FMPy's runs and validation of the same FMUs are in
//! `tests/fmu/fmpy_check.py` (CI's virtual environment).

mod common;

use common::{Run, exit_and_text, last, project, rmoc_cli, scratch_dir, value_at};
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `rmoc fmu FILE ARGS -o NAME`: the FMU's path.
fn export(file: &str, name: &str, args: &[&str]) -> PathBuf {
    let out = scratch_dir("fmu").join(name);
    let path = project(file);
    let mut all = vec!["fmu", path.to_str().expect("path")];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", out.to_str().expect("path")]);
    let (code, text) = exit_and_text(&rmoc_cli(&all));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("wrote "), "{text}");
    out
}

/// `rmoc fmu` of a model text (in a file `NAME.rmo`): the FMU's path.
fn export_source(name: &str, src: &str) -> PathBuf {
    let file = common::model_file(name, src);
    let out = scratch_dir("fmu").join(format!("{name}.fmu"));
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "fmu",
        file.to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    out
}

/// An unpacked FMU's folder: it and the FMU file are removed when this is
/// dropped (each is tens of megabytes).
struct Unpacked {
    dir: PathBuf,
    fmu: PathBuf,
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.fmu);
    }
}

/// The FMU's files, unpacked into a folder of their own.
fn unpack(fmu: &Path) -> (Unpacked, Vec<(String, Vec<u8>)>) {
    let bytes = std::fs::read(fmu).expect("fmu");
    let files = rmoc::fmi::archive::unzip(&bytes).expect("a zip archive");
    let dir = fmu.with_extension("unpacked");
    let _ = std::fs::remove_dir_all(&dir);
    for (name, data) in &files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, data).expect("write");
    }
    (
        Unpacked {
            dir,
            fmu: fmu.to_path_buf(),
        },
        files,
    )
}

fn description(files: &[(String, Vec<u8>)]) -> String {
    let (_, xml) = files
        .iter()
        .find(|(n, _)| n == "modelDescription.xml")
        .expect("modelDescription.xml");
    String::from_utf8(xml.clone()).expect("utf-8")
}

/// The value reference of variable `name` in a description.
fn vr(xml: &str, name: &str) -> c_uint {
    let key = format!(" name=\"{name}\" valueReference=\"");
    let at = xml
        .find(&key)
        .unwrap_or_else(|| panic!("no variable {name}"))
        + key.len();
    xml[at..]
        .split('"')
        .next()
        .expect("number")
        .parse()
        .expect("vr")
}

/// An attribute of the root element.
fn root_attribute(xml: &str, attr: &str) -> String {
    let key = format!(" {attr}=\"");
    let at = xml.find(&key).expect("attribute") + key.len();
    xml[at..].split('"').next().expect("value").to_string()
}

/// Messages the FMUs logged, in every test (filtered by instance name).
static LOG: Mutex<Vec<(String, c_int, String)>> = Mutex::new(Vec::new());

extern "C" fn logger2(
    _env: *mut c_void,
    name: *const c_char,
    status: c_int,
    _category: *const c_char,
    message: *const c_char,
) {
    // SAFETY: strings from the FMU.
    let (name, message) = unsafe {
        (
            CStr::from_ptr(name).to_string_lossy().to_string(),
            CStr::from_ptr(message).to_string_lossy().to_string(),
        )
    };
    LOG.lock()
        .expect("log")
        .push((name, status, message.replace("%%", "%")));
}

fn logged(instance: &str) -> String {
    LOG.lock()
        .expect("log")
        .iter()
        .filter(|(n, _, _)| n == instance)
        .map(|(_, s, m)| format!("[{s}] {m}\n"))
        .collect()
}

/// `fmi2CallbackFunctions` (the logger declared without its variadic
/// part: the FMU passes no arguments after the message).
#[repr(C)]
struct Callbacks {
    logger: extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char, *const c_char),
    allocate: *const c_void,
    free: *const c_void,
    step_finished: *const c_void,
    env: *mut c_void,
}

#[repr(C)]
#[derive(Default, Debug)]
struct EventInfo {
    new_discrete_states_needed: c_int,
    terminate: c_int,
    nominals_changed: c_int,
    values_changed: c_int,
    next_event_time_defined: c_int,
    next_event_time: f64,
}

/// The binary of an unpacked FMU, opened.
struct Binary(*mut c_void);

impl Binary {
    fn open(dir: &Path, platform: &str, xml: &str) -> Binary {
        let id = root_attribute(xml, "modelIdentifier");
        let path = dir.join(format!("binaries/{platform}/{id}.so"));
        let c = CString::new(path.to_str().expect("path")).expect("c path");
        // SAFETY: loading the FMU's shared library.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "dlopen {}", path.display());
        Binary(h)
    }

    /// Function `name` as the type `F`.
    fn f<F: Copy>(&self, name: &str) -> F {
        let c = CString::new(name).expect("name");
        // SAFETY: the symbol exists (asserted) and has the standard's type.
        let p = unsafe { libc::dlsym(self.0, c.as_ptr()) };
        assert!(!p.is_null(), "no symbol {name}");
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
        unsafe { std::mem::transmute_copy(&p) }
    }
}

type Instantiate2 = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *const c_char,
    *const c_char,
    *const Callbacks,
    c_int,
    c_int,
) -> *mut c_void;
type Setup2 = unsafe extern "C" fn(*mut c_void, c_int, f64, f64, c_int, f64) -> c_int;
type Call = unsafe extern "C" fn(*mut c_void) -> c_int;
type Values2 = unsafe extern "C" fn(*mut c_void, *const c_uint, usize, *mut f64) -> c_int;
type Ints2 = unsafe extern "C" fn(*mut c_void, *const c_uint, usize, *mut c_int) -> c_int;
type SetValues2 = unsafe extern "C" fn(*mut c_void, *const c_uint, usize, *const f64) -> c_int;
type DoStep2 = unsafe extern "C" fn(*mut c_void, f64, f64, c_int) -> c_int;
type Array = unsafe extern "C" fn(*mut c_void, *mut f64, usize) -> c_int;
type SetArray = unsafe extern "C" fn(*mut c_void, *const f64, usize) -> c_int;
type NewDiscrete = unsafe extern "C" fn(*mut c_void, *mut EventInfo) -> c_int;
type SetTime = unsafe extern "C" fn(*mut c_void, f64) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void);

/// One FMI 2.0 instance of an unpacked FMU.
struct Fmu2 {
    bin: Binary,
    c: *mut c_void,
    xml: String,
    _callbacks: Box<Callbacks>,
    /// (Last: removed after the instance is freed.)
    _unpacked: Unpacked,
}

impl Fmu2 {
    /// Instantiates (kind 0: model exchange, 1: co-simulation) with the
    /// description's GUID, or `guid` when given.
    fn new(fmu: &Path, kind: c_int, instance: &str, guid: Option<&str>) -> Option<Fmu2> {
        let (unpacked, files) = unpack(fmu);
        let dir = unpacked.dir.clone();
        let xml = description(&files);
        let bin = Binary::open(&dir, "linux64", &xml);
        let callbacks = Box::new(Callbacks {
            logger: logger2,
            allocate: std::ptr::null(),
            free: std::ptr::null(),
            step_finished: std::ptr::null(),
            env: std::ptr::null_mut(),
        });
        let guid = CString::new(
            guid.map(str::to_string)
                .unwrap_or_else(|| root_attribute(&xml, "guid")),
        )
        .expect("guid");
        let uri = CString::new(format!("file://{}", dir.join("resources").display())).expect("uri");
        let name = CString::new(instance).expect("name");
        let instantiate: Instantiate2 = bin.f("fmi2Instantiate");
        // SAFETY: the standard's call.
        let c = unsafe {
            instantiate(
                name.as_ptr(),
                kind,
                guid.as_ptr(),
                uri.as_ptr(),
                &*callbacks,
                0,
                0,
            )
        };
        (!c.is_null()).then_some(Fmu2 {
            bin,
            c,
            xml,
            _callbacks: callbacks,
            _unpacked: unpacked,
        })
    }

    fn call(&self, name: &str) -> c_int {
        let f: Call = self.bin.f(name);
        unsafe { f(self.c) }
    }

    fn initialize(&self, start: f64, stop: f64, tolerance: Option<f64>) {
        let setup: Setup2 = self.bin.f("fmi2SetupExperiment");
        let t = unsafe {
            setup(
                self.c,
                tolerance.is_some() as c_int,
                tolerance.unwrap_or(0.0),
                start,
                1,
                stop,
            )
        };
        assert_eq!(t, 0);
        assert_eq!(self.call("fmi2EnterInitializationMode"), 0);
        assert_eq!(self.call("fmi2ExitInitializationMode"), 0);
    }

    fn get(&self, name: &str) -> f64 {
        let f: Values2 = self.bin.f("fmi2GetReal");
        let r = vr(&self.xml, name);
        let mut x = 0.0;
        assert_eq!(unsafe { f(self.c, &r, 1, &mut x) }, 0, "get {name}");
        x
    }

    fn get_integer(&self, name: &str) -> c_int {
        let f: Ints2 = self.bin.f("fmi2GetInteger");
        let r = vr(&self.xml, name);
        let mut x = 0;
        assert_eq!(unsafe { f(self.c, &r, 1, &mut x) }, 0, "get {name}");
        x
    }

    fn set(&self, name: &str, x: f64) -> c_int {
        let f: SetValues2 = self.bin.f("fmi2SetReal");
        let r = vr(&self.xml, name);
        unsafe { f(self.c, &r, 1, &x) }
    }

    fn do_step(&self, t: f64, h: f64) -> c_int {
        let f: DoStep2 = self.bin.f("fmi2DoStep");
        unsafe { f(self.c, t, h, 1) }
    }

    fn array(&self, name: &str, n: usize) -> Vec<f64> {
        let f: Array = self.bin.f(name);
        let mut x = vec![0.0; n];
        assert_eq!(unsafe { f(self.c, x.as_mut_ptr(), n) }, 0, "{name}");
        x
    }

    fn set_states(&self, x: &[f64]) {
        let f: SetArray = self.bin.f("fmi2SetContinuousStates");
        assert_eq!(unsafe { f(self.c, x.as_ptr(), x.len()) }, 0);
    }

    fn set_time(&self, t: f64) {
        let f: SetTime = self.bin.f("fmi2SetTime");
        assert_eq!(unsafe { f(self.c, t) }, 0);
    }

    fn new_discrete_states(&self) -> EventInfo {
        let f: NewDiscrete = self.bin.f("fmi2NewDiscreteStates");
        let mut info = EventInfo::default();
        assert_eq!(unsafe { f(self.c, &mut info) }, 0);
        info
    }

    /// Co-simulation from 0 to `stop` in steps of `h`: `name` at each
    /// communication point.
    fn co_simulate(&self, stop: f64, h: f64, name: &str) -> Vec<(f64, f64)> {
        let n = (stop / h).round() as usize;
        let mut out = vec![(0.0, self.get(name))];
        for k in 0..n {
            let t = k as f64 * h;
            assert_eq!(self.do_step(t, h), 0, "doStep at {t}: {}", logged("cs"));
            out.push((t + h, self.get(name)));
        }
        out
    }
}

impl Drop for Fmu2 {
    fn drop(&mut self) {
        let free: Free = self.bin.f("fmi2FreeInstance");
        unsafe { free(self.c) };
    }
}

fn pendulum_run(stop: f64) -> Run {
    Run {
        stop: Some(stop),
        interval: Some(0.01),
        ..Run::default()
    }
}

#[test]
fn the_archive_holds_the_description_the_binary_and_the_model() {
    let fmu = export("tests/models/pendulum.rmo", "pendulum_files.fmu", &[]);
    let (_, files) = unpack(&fmu);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "modelDescription.xml",
            "binaries/linux64/Pendulum.so",
            "resources/model.rmo",
            "resources/rmoc.json"
        ]
    );
    let text = std::fs::read_to_string(project("tests/models/pendulum.rmo")).expect("model");
    assert_eq!(files[2].1, text.as_bytes());
    // The binary is the runtime library beside rmoc, byte for byte.
    let runtime = rmoc::fmi::runtime_library().expect("the runtime library");
    assert!(files[1].1 == std::fs::read(runtime).expect("runtime"));
    let fmu3 = export(
        "tests/models/pendulum.rmo",
        "pendulum_files3.fmu",
        &["--fmi", "3"],
    );
    let (_, files) = unpack(&fmu3);
    assert_eq!(files[1].0, "binaries/x86_64-linux/Pendulum.so");
}

#[test]
fn descriptions_of_the_bouncing_ball() {
    for (version, name) in [("2", "ball2.fmu"), ("3", "ball3.fmu")] {
        let fmu = export("tests/models/ball.rmo", name, &["--fmi", version]);
        let (_, files) = unpack(&fmu);
        let xml = description(&files);
        // The token hashes rmoc's version: masked.
        let token = root_attribute(
            &xml,
            if version == "2" {
                "guid"
            } else {
                "instantiationToken"
            },
        );
        let xml = xml
            .replace(&token, "{TOKEN}")
            .replace(env!("CARGO_PKG_VERSION"), "VERSION");
        insta::assert_snapshot!(format!("ball_fmi{version}"), xml);
    }
}

#[test]
fn fmi2_co_simulation_of_the_pendulum_follows_simulate() {
    let fmu = export("tests/models/pendulum.rmo", "pendulum_cs.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "cs", None).expect("instance");
    f.initialize(0.0, 5.0, None);
    let got = f.co_simulate(5.0, 0.01, "x");
    let r = common::simulate(
        &std::fs::read_to_string(project("tests/models/pendulum.rmo")).expect("model"),
        None,
        &pendulum_run(5.0),
    );
    let worst = got
        .iter()
        .map(|&(t, x)| (x - value_at(&r, "x", t)).abs())
        .fold(0.0, f64::max);
    // The model's tolerance is 1e-8; the FMU's steps end at each
    // communication point.
    assert!(worst < 1e-6, "largest difference {worst:e}");
    assert_eq!(f.call("fmi2Terminate"), 0);
}

#[test]
fn a_parameter_set_before_initialization_changes_the_run_as_p_does() {
    let fmu = export("tests/models/pendulum.rmo", "pendulum_p.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "param", None).expect("instance");
    assert_eq!(f.set("g", 3.71), 0);
    assert_eq!(f.set("L", 2.0), 0);
    f.initialize(0.0, 2.0, None);
    let got = f.co_simulate(2.0, 0.01, "y");
    let src = std::fs::read_to_string(project("tests/models/pendulum.rmo")).expect("model");
    let r = common::simulate(
        &src,
        None,
        &Run {
            params: vec![("g", 3.71), ("L", 2.0)],
            ..pendulum_run(2.0)
        },
    );
    assert!((f.get("g") - 3.71).abs() == 0.0);
    let (t, y) = *got.last().expect("rows");
    common::assert_close(y, value_at(&r, "y", t), 1e-6, 1e-8);
    // Not the default run's.
    assert!((y - (-0.5)).abs() > 1e-3);
    // A parameter is fixed after initialization.
    assert_eq!(f.set("g", 1.0), 3);
    assert!(
        logged("param").contains("parameter `g` is fixed"),
        "{}",
        logged("param")
    );
}

#[test]
fn fmi2_model_exchange_gives_derivatives_indicators_and_the_bounce() {
    let fmu = export("tests/models/ball.rmo", "ball_me.fmu", &[]);
    let f = Fmu2::new(&fmu, 0, "me", None).expect("instance");
    // h has fixed = true: its start is exact and settable before
    // initialization (and back to the model's).
    assert_eq!(f.get("h"), 1.0);
    assert_eq!(f.set("h", 2.0), 0);
    assert_eq!(f.get("h"), 2.0);
    assert_eq!(f.set("h", 1.0), 0);
    f.initialize(0.0, 3.0, None);
    assert_eq!(f.set("h", 2.0), 3);
    assert!(
        logged("me").contains("the start value of `h` is used: set it before initialization ends")
    );
    let info = f.new_discrete_states();
    assert_eq!(info.next_event_time_defined, 0);
    assert_eq!(f.call("fmi2EnterContinuousTimeMode"), 0);
    assert_eq!(f.array("fmi2GetContinuousStates", 2), [1.0, 0.0]);
    assert_eq!(f.array("fmi2GetDerivatives", 2), [0.0, -9.81]);
    let z0 = f.array("fmi2GetEventIndicators", 1);
    // Free fall to the floor in closed form, then just past it.
    let t_hit = (2.0f64 / 9.81).sqrt();
    f.set_time(t_hit + 1e-9);
    let v = -9.81 * (t_hit + 1e-9);
    f.set_states(&[-1e-9 * v.abs(), v]);
    let z1 = f.array("fmi2GetEventIndicators", 1);
    assert!(z0[0] * z1[0] < 0.0, "indicator {z0:?} -> {z1:?}");
    assert_eq!(f.call("fmi2EnterEventMode"), 0);
    let info = f.new_discrete_states();
    assert_eq!(info.values_changed, 1, "{info:?}");
    assert_eq!(info.terminate, 0);
    let x = f.array("fmi2GetContinuousStates", 2);
    common::assert_close(x[1], -0.8 * v, 1e-12, 0.0);
    assert_eq!(f.get_integer("bounces"), 1);
    assert_eq!(f.call("fmi2EnterContinuousTimeMode"), 0);
    // After the event the indicator is the reference: on the floor, rising.
    assert_eq!(f.array("fmi2GetDerivatives", 2)[0], x[1]);
}

#[test]
fn an_input_drives_the_chain_as_its_value_in_simulate() {
    let fmu = export("tests/models/linearize/chain4.rmo", "chain4.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "input", None).expect("instance");
    f.initialize(0.0, 1.0, Some(1e-10));
    let mut got = Vec::new();
    let h = 0.01;
    for k in 0..100 {
        let t = k as f64 * h;
        // A step of the torque at t = 0.5: piecewise constant between
        // communication points.
        assert_eq!(f.set("tau", if t < 0.5 { 2.0 } else { -1.0 }), 0);
        assert_eq!(f.do_step(t, h), 0, "{}", logged("input"));
        got.push((t + h, f.get("w4")));
    }
    // The same input as a model: tau from time.
    let src = std::fs::read_to_string(project("tests/models/linearize/chain4.rmo")).expect("model");
    let src = src.replace(
        "input Real tau \"torque on the last inertia, N m\";",
        "Real tau = if time < 0.5 then 2 else -1;",
    );
    let r = common::simulate(
        &src,
        None,
        &Run {
            stop: Some(1.0),
            interval: Some(0.01),
            tolerance: Some(1e-10),
            ..Run::default()
        },
    );
    let worst = got
        .iter()
        .map(|&(t, w)| (w - value_at(&r, "w4", t)).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-7, "largest difference {worst:e}");
    assert!(last(&r, "w4").abs() > 1e-3);
}

type Instantiate3Cs = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    bool,
    bool,
    bool,
    bool,
    *const c_uint,
    usize,
    *mut c_void,
    Option<extern "C" fn(*mut c_void, c_int, *const c_char, *const c_char)>,
    *mut c_void,
) -> *mut c_void;
type EnterInit3 = unsafe extern "C" fn(*mut c_void, bool, f64, f64, bool, f64) -> c_int;
type DoStep3 = unsafe extern "C" fn(
    *mut c_void,
    f64,
    f64,
    bool,
    *mut bool,
    *mut bool,
    *mut bool,
    *mut f64,
) -> c_int;
type GetF64 = unsafe extern "C" fn(*mut c_void, *const c_uint, usize, *mut f64, usize) -> c_int;
type GetI32 = unsafe extern "C" fn(*mut c_void, *const c_uint, usize, *mut i32, usize) -> c_int;

extern "C" fn logger3(
    _env: *mut c_void,
    status: c_int,
    _category: *const c_char,
    message: *const c_char,
) {
    let message = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .to_string();
    LOG.lock()
        .expect("log")
        .push(("fmi3".into(), status, message));
}

#[test]
fn fmi3_co_simulation_of_the_ball_bounces_as_simulate_does() {
    let fmu = export(
        "tests/models/ball.rmo",
        "ball_cs3.fmu",
        &["--fmi", "3", "--kind", "cs"],
    );
    let (unpacked, files) = unpack(&fmu);
    let dir = unpacked.dir.clone();
    let xml = description(&files);
    assert!(!xml.contains("<ModelExchange"));
    let bin = Binary::open(&dir, "x86_64-linux", &xml);
    let instantiate: Instantiate3Cs = bin.f("fmi3InstantiateCoSimulation");
    let token = CString::new(root_attribute(&xml, "instantiationToken")).expect("token");
    let res = CString::new(format!("{}/", dir.join("resources").display())).expect("path");
    let c = unsafe {
        instantiate(
            c"ball".as_ptr(),
            token.as_ptr(),
            res.as_ptr(),
            false,
            false,
            false,
            false,
            std::ptr::null(),
            0,
            std::ptr::null_mut(),
            Some(logger3),
            std::ptr::null_mut(),
        )
    };
    assert!(!c.is_null());
    let enter: EnterInit3 = bin.f("fmi3EnterInitializationMode");
    assert_eq!(unsafe { enter(c, false, 0.0, 0.0, true, 3.0) }, 0);
    let exit: Call = bin.f("fmi3ExitInitializationMode");
    assert_eq!(unsafe { exit(c) }, 0);
    let step: DoStep3 = bin.f("fmi3DoStep");
    let get: GetF64 = bin.f("fmi3GetFloat64");
    let get_i: GetI32 = bin.f("fmi3GetInt32");
    let (h_ref, bounces_ref) = (vr(&xml, "h"), vr(&xml, "bounces"));
    let src = std::fs::read_to_string(project("tests/models/ball.rmo")).expect("model");
    let r = common::simulate(
        &src,
        None,
        &Run {
            stop: Some(3.0),
            interval: Some(0.01),
            ..Run::default()
        },
    );
    let mut worst = 0.0f64;
    for k in 0..300 {
        let t = k as f64 * 0.01;
        let (mut event, mut terminate, mut early, mut last) = (false, false, false, 0.0);
        let s = unsafe {
            step(
                c,
                t,
                0.01,
                true,
                &mut event,
                &mut terminate,
                &mut early,
                &mut last,
            )
        };
        assert_eq!(s, 0);
        assert!(!terminate && !early && !event);
        assert_eq!(last, t + 0.01);
        let mut h = 0.0;
        assert_eq!(unsafe { get(c, &h_ref, 1, &mut h, 1) }, 0);
        worst = worst.max((h - value_at(&r, "h", t + 0.01)).abs());
    }
    assert!(worst < 1e-8, "largest difference in h {worst:e}");
    let mut bounces = 0;
    assert_eq!(unsafe { get_i(c, &bounces_ref, 1, &mut bounces, 1) }, 0);
    assert_eq!(bounces as f64, last(&r, "bounces"));
    assert_eq!(bounces, 6);
    let free: Free = bin.f("fmi3FreeInstance");
    unsafe { free(c) };
}

#[test]
fn a_wrong_token_is_refused_through_the_logger() {
    let fmu = export("tests/models/pendulum.rmo", "pendulum_token.fmu", &[]);
    assert!(
        Fmu2::new(
            &fmu,
            1,
            "token",
            Some("{00000000-0000-0000-0000-000000000000}")
        )
        .is_none()
    );
    let log = logged("token");
    assert!(log.contains("[3] the instantiation token"), "{log}");
}

#[test]
fn misuse_is_an_error_status_with_a_message_not_a_crash() {
    let fmu = export("tests/models/pendulum.rmo", "pendulum_misuse.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "misuse", None).expect("instance");
    // A computed variable cannot be set.
    assert_eq!(f.set("F", 1.0), 3);
    // No such value reference.
    let get: Values2 = f.bin.f("fmi2GetReal");
    let mut x = 0.0;
    assert_eq!(unsafe { get(f.c, &9999, 1, &mut x) }, 3);
    // A null array with a nonzero length.
    assert_eq!(unsafe { get(f.c, std::ptr::null(), 2, &mut x) }, 3);
    // A state-only function is refused for what the FMU does not claim.
    assert_eq!(f.call("fmi2CancelStep"), 3);
    // A null instance.
    let exit: Call = f.bin.f("fmi2ExitInitializationMode");
    assert_eq!(unsafe { exit(std::ptr::null_mut()) }, 3);
    f.initialize(0.0, 1.0, None);
    assert_eq!(f.do_step(0.0, -1.0), 3);
    assert_eq!(f.do_step(0.0, 0.1), 0);
    let log = logged("misuse");
    for needle in [
        "`F` is computed by the model and cannot be set",
        "no variable has value reference 9999",
        "a null array with a nonzero length",
        "fmi2CancelStep is not supported",
        "doStep: invalid step -1",
    ] {
        assert!(log.contains(needle), "{needle} not in\n{log}");
    }
}

#[test]
fn a_run_that_fails_inside_the_fmu_is_reported_with_the_models_diagnostic() {
    let src = "model Blowup\n  Real x(start = 1, fixed = true);\n  Real y;\nequation\n  der(x) = -1;\n  y = sqrt(x);\nend Blowup;\n";
    let out = export_source("fmu_blowup", src);
    let f = Fmu2::new(&out, 1, "blowup", None).expect("instance");
    f.initialize(0.0, 2.0, None);
    assert_eq!(f.do_step(0.0, 0.5), 0);
    assert_eq!(f.do_step(0.5, 1.0), 3);
    let log = logged("blowup");
    assert!(log.contains("`y` became NaN at t = 1"), "{log}");
    assert!(log.contains("fmu_blowup.rmo:6:3"), "{log}");
    // The instance refuses to go on.
    assert_eq!(f.do_step(1.5, 0.5), 3);
}

#[test]
fn bad_requests_exit_1_with_a_diagnostic() {
    let pendulum = project("tests/models/pendulum.rmo");
    let p = pendulum.to_str().expect("path");
    let contacts = project("examples/ujoint_clearance.rmo");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["fmu", p, "-o", "x.zip"],
            "an FMU's file name ends in .fmu",
        ),
        (vec!["fmu", p, "--fmi", "4"], "invalid value '4'"),
        (
            vec!["fmu", p, "--kind", "scheduled"],
            "invalid value 'scheduled'",
        ),
        (
            vec![
                "fmu",
                contacts.to_str().expect("path"),
                "--kind",
                "me",
                "-o",
                "/nonexistent/u.fmu",
            ],
            "cannot be a model-exchange FMU",
        ),
    ];
    for (args, needle) in cases {
        let (code, text) = exit_and_text(&rmoc_cli(&args));
        assert_eq!(code, Some(1), "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: {text}");
    }
    // Without the runtime library.
    let out = rmoc_cli_env(
        &["fmu", p, "-o", "/tmp/never.fmu"],
        "RMOC_FMU_RUNTIME",
        "/nonexistent/librmoc.so",
    );
    let (code, text) = exit_and_text(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("cannot read /nonexistent/librmoc.so"),
        "{text}"
    );
}

fn rmoc_cli_env(args: &[&str], key: &str, value: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(args)
        .env(key, value)
        .output()
        .expect("rmoc runs")
}

type BoolStatus2 = unsafe extern "C" fn(*mut c_void, c_int, *mut c_int) -> c_int;
type RealStatus2 = unsafe extern "C" fn(*mut c_void, c_int, *mut f64) -> c_int;

#[test]
fn terminate_in_the_model_ends_co_simulation_as_fmi2_says() {
    let fmu = export("tests/models/events/terminate.rmo", "terminate.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "terminate", None).expect("instance");
    let logging: unsafe extern "C" fn(*mut c_void, c_int, usize, *const *const c_char) -> c_int =
        f.bin.f("fmi2SetDebugLogging");
    assert_eq!(unsafe { logging(f.c, 1, 0, std::ptr::null()) }, 0);
    f.initialize(0.0, 1.0, None);
    // fmi2Discard at the step that reaches x = 0.3, then fmi2Terminated.
    let mut last = 0;
    for k in 0..10 {
        last = f.do_step(k as f64 * 0.1, 0.1);
        if last != 0 {
            break;
        }
    }
    assert_eq!(last, 2);
    let status: BoolStatus2 = f.bin.f("fmi2GetBooleanStatus");
    let mut terminated = 0;
    assert_eq!(unsafe { status(f.c, 3, &mut terminated) }, 0);
    assert_eq!(terminated, 1);
    let time: RealStatus2 = f.bin.f("fmi2GetRealStatus");
    let mut t = 0.0;
    assert_eq!(unsafe { time(f.c, 2, &mut t) }, 0);
    common::assert_close(t, 0.3, 1e-9, 1e-12);
    common::assert_close(f.get("x"), 0.3, 1e-9, 1e-12);
    common::assert_close(f.get("time"), 0.3, 1e-9, 1e-12);
    // A further step is refused.
    assert_eq!(f.do_step(0.4, 0.1), 3);
    let log = logged("terminate");
    assert!(log.contains("terminate at t = 0.3"), "{log}");
}

#[test]
fn an_input_switches_a_relation_and_feeds_an_output_through_at_once() {
    let src = "model Switch\n  parameter Real k = 2;\n  input Real u;\n  output Real y;\n  Real x(start = 0, fixed = true);\nequation\n  y = k*u;\n  der(x) = if u > 0.5 then 1 else 0;\nend Switch;\n";
    let out = export_source("fmu_switch", src);
    let f = Fmu2::new(&out, 1, "switch", None).expect("instance");
    // Before initialization: the parameters' values, not zeros.
    assert_eq!(f.get("k"), 2.0);
    f.initialize(0.0, 2.0, None);
    assert_eq!(f.do_step(0.0, 0.5), 0);
    assert_eq!(f.get("x"), 0.0);
    // The output follows the input before the next step.
    assert_eq!(f.set("u", 1.0), 0);
    assert_eq!(f.get("y"), 2.0);
    // The relation sees the new input: x grows from t = 0.5.
    assert_eq!(f.do_step(0.5, 0.5), 0);
    common::assert_close(f.get("x"), 0.5, 1e-9, 1e-12);
    assert_eq!(f.set("u", 0.0), 0);
    assert_eq!(f.do_step(1.0, 1.0), 0);
    common::assert_close(f.get("x"), 0.5, 1e-9, 1e-12);
}

#[test]
fn a_model_with_an_internal_state_exports_it() {
    // der(x + y) makes the state `$der0`: the state vector has it.
    let src = "model Internal\n  Real x(start = 1, fixed = true);\n  Real y(start = 0, fixed = true);\nequation\n  der(x + y) = -x;\n  der(y) = x;\nend Internal;\n";
    let out = export_source("fmu_internal", src);
    let f = Fmu2::new(&out, 0, "internal", None).expect("instance");
    assert!(f.xml.contains("name=\"der($der0)\""), "{}", f.xml);
    f.initialize(0.0, 1.0, None);
    let _ = f.new_discrete_states();
    // d(x + y)/dt = -x and dy/dt = x at x = 1, y = 0.
    let mut dx = f.array("fmi2GetDerivatives", 2);
    dx.sort_by(f64::total_cmp);
    assert_eq!(dx, [-1.0, 1.0]);
}

#[test]
fn the_fmu_carries_a_library_from_modelicapath_and_its_table() {
    // The model exported by its bare file name from its folder, a library
    // on MODELICAPATH inside that folder, and a table its library file
    // names: in the FMU each is where its name finds it, and the host's
    // MODELICAPATH does not matter.
    let dir = scratch_dir("fmu").join("nested");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("libs/Rates")).expect("dir");
    std::fs::write(
        dir.join("libs/Rates/package.rmo"),
        "package Rates\n  constant Real table[1, 1] = Tables.readCSV(\"k.csv\");\nend Rates;\n",
    )
    .expect("write");
    std::fs::write(dir.join("libs/Rates/k.csv"), "4\n").expect("write");
    std::fs::write(
        dir.join("Nested.rmo"),
        "model Nested\n  parameter Real k = Rates.table[1, 1];\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -k*x;\nend Nested;\n",
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmoc"))
        .args(["fmu", "Nested.rmo", "-o", "Nested.fmu"])
        .current_dir(&dir)
        .env("MODELICAPATH", dir.join("libs"))
        .output()
        .expect("rmoc runs");
    let (code, text) = exit_and_text(&out);
    assert_eq!(code, Some(0), "{text}");
    let moved = scratch_dir("fmu").join("nested_moved.fmu");
    std::fs::rename(dir.join("Nested.fmu"), &moved).expect("move");
    std::fs::remove_dir_all(&dir).expect("remove");
    let (_unpacked, files) = unpack(&moved);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"resources/Rates/package.rmo"), "{names:?}");
    assert!(names.contains(&"resources/Rates/k.csv"), "{names:?}");
    let f = Fmu2::new(&moved, 1, "nested", None).expect("instance");
    f.initialize(0.0, 1.0, Some(1e-10));
    assert_eq!(f.do_step(0.0, 1.0), 0, "{}", logged("nested"));
    common::assert_close(f.get("x"), (-4.0f64).exp(), 1e-7, 0.0);
}

#[test]
fn the_fmu_carries_the_library_classes_and_tables_the_model_read() {
    // A library beside the model and a table file: the FMU runs where
    // neither is (its resources hold them under the same names).
    let dir = scratch_dir("fmu").join("carried");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("Lib")).expect("dir");
    std::fs::write(
        dir.join("Lib/package.rmo"),
        "package Lib\n  model Decay\n    parameter Real k = 2;\n    Real x(start = 1, fixed = true);\n  equation\n    der(x) = -k*x;\n  end Decay;\nend Lib;\n",
    )
    .expect("write");
    std::fs::write(dir.join("rates.csv"), "# k\n3\n").expect("write");
    std::fs::write(
        dir.join("Carried.rmo"),
        "model Carried\n  parameter Real rates[1, 1] = Tables.readCSV(\"rates.csv\");\n  Lib.Decay decay(k = rates[1, 1]);\nend Carried;\n",
    )
    .expect("write");
    let out = dir.join("Carried.fmu");
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "fmu",
        dir.join("Carried.rmo").to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    // Unpacked elsewhere, and the originals gone.
    let moved = scratch_dir("fmu").join("carried_moved.fmu");
    std::fs::rename(&out, &moved).expect("move");
    std::fs::remove_dir_all(&dir).expect("remove");
    let (_unpacked, files) = unpack(&moved);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"resources/Lib/package.rmo"), "{names:?}");
    assert!(names.contains(&"resources/rates.csv"), "{names:?}");
    let f = Fmu2::new(&moved, 1, "carried", None).expect("instance");
    f.initialize(0.0, 1.0, Some(1e-10));
    assert_eq!(f.do_step(0.0, 1.0), 0, "{}", logged("carried"));
    common::assert_close(f.get("decay.x"), (-3.0f64).exp(), 1e-7, 0.0);
}

#[test]
fn a_deep_parameter_expression_does_not_need_the_hosts_stack() {
    // A sum of 20 000 terms of a parameter (a tree 20 000 deep): the
    // interpreter evaluates the binding recursively at initialization. A
    // host thread with a 256 KiB stack instantiates and initializes the FMU.
    let depth = 20_000;
    let expr = vec!["a"; depth + 1].join(" + ");
    let src = format!(
        "model Deep\n  parameter Real a = 1e-3;\n  parameter Real p = {expr};\n  Real x(start = 0, fixed = true);\nequation\n  der(x) = p;\nend Deep;\n"
    );
    let out = export_source("fmu_deep", &src);
    let x = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let f = Fmu2::new(&out, 1, "deep", None).expect("instance");
            f.initialize(0.0, 1.0, None);
            assert_eq!(f.do_step(0.0, 1.0), 0, "{}", logged("deep"));
            (f.get("p"), f.get("x"))
        })
        .expect("thread")
        .join()
        .expect("no overflow");
    common::assert_close(x.0, 20.001, 1e-12, 0.0);
    common::assert_close(x.1, 20.001, 1e-9, 0.0);
}

type GetState = unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> c_int;
type SetState = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;

#[test]
fn a_saved_state_takes_the_run_back_to_where_it_was() {
    let fmu = export("tests/models/ball.rmo", "ball_state.fmu", &[]);
    let f = Fmu2::new(&fmu, 1, "state", None).expect("instance");
    assert!(f.xml.contains("canGetAndSetFMUstate=\"true\""));
    let (get, set, free): (GetState, SetState, GetState) = (
        f.bin.f("fmi2GetFMUstate"),
        f.bin.f("fmi2SetFMUstate"),
        f.bin.f("fmi2FreeFMUstate"),
    );
    f.initialize(0.0, 3.0, None);
    // Past the first bounce (t = 0.4515 s), then saved.
    for k in 0..10 {
        assert_eq!(f.do_step(k as f64 * 0.1, 0.1), 0);
    }
    let mut saved: *mut c_void = std::ptr::null_mut();
    assert_eq!(unsafe { get(f.c, &mut saved) }, 0);
    assert!(!saved.is_null());
    let (h1, b1) = (f.get("h"), f.get_integer("bounces"));
    // On to 2 s: the second and third bounces.
    for k in 10..20 {
        assert_eq!(f.do_step(k as f64 * 0.1, 0.1), 0);
    }
    let (h2, b2) = (f.get("h"), f.get_integer("bounces"));
    assert!(b2 > b1);
    // Back to 1 s: the values and the bounce count of then, and the same
    // way on (the integrator restarts at the saved point).
    assert_eq!(unsafe { set(f.c, saved) }, 0);
    assert_eq!((f.get("h"), f.get_integer("bounces")), (h1, b1));
    for k in 10..20 {
        assert_eq!(f.do_step(k as f64 * 0.1, 0.1), 0);
    }
    common::assert_close(f.get("h"), h2, 1e-7, 1e-9);
    assert_eq!(f.get_integer("bounces"), b2);
    // Restored a second time: the same again.
    assert_eq!(unsafe { set(f.c, saved) }, 0);
    for k in 10..20 {
        assert_eq!(f.do_step(k as f64 * 0.1, 0.1), 0);
    }
    common::assert_close(f.get("h"), h2, 1e-7, 1e-9);
    // A state saved again into the same place, then freed.
    assert_eq!(unsafe { get(f.c, &mut saved) }, 0);
    assert_eq!(unsafe { free(f.c, &mut saved) }, 0);
    assert!(saved.is_null());
}

#[test]
fn a_saved_state_restores_model_exchange_states_and_a_fixed_step_run() {
    // Model exchange: the states set after saving are back after restoring.
    let fmu = export("tests/models/ball.rmo", "ball_state_me.fmu", &[]);
    let f = Fmu2::new(&fmu, 0, "state_me", None).expect("instance");
    let (get, set): (GetState, SetState) = (f.bin.f("fmi2GetFMUstate"), f.bin.f("fmi2SetFMUstate"));
    f.initialize(0.0, 3.0, None);
    let _ = f.new_discrete_states();
    assert_eq!(f.call("fmi2EnterContinuousTimeMode"), 0);
    f.set_time(0.2);
    f.set_states(&[0.8, -1.962]);
    let mut saved: *mut c_void = std::ptr::null_mut();
    assert_eq!(unsafe { get(f.c, &mut saved) }, 0);
    f.set_time(0.3);
    f.set_states(&[0.5, -2.9]);
    assert_eq!(unsafe { set(f.c, saved) }, 0);
    assert_eq!(f.array("fmi2GetContinuousStates", 2), [0.8, -1.962]);
    assert_eq!(f.get("time"), 0.2);
    let free: GetState = f.bin.f("fmi2FreeFMUstate");
    assert_eq!(unsafe { free(f.c, &mut saved) }, 0);
    drop(f);
    // A fixed-step integrator (Moreau-Jean, the U-joint's contacts: a
    // co-simulation FMU only) restarts its step grid at the restored point.
    let fmu = export(
        "examples/ujoint_clearance.rmo",
        "ujoint_state.fmu",
        &["--kind", "cs"],
    );
    let f = Fmu2::new(&fmu, 1, "state_moreau", None).expect("instance");
    let (get, set): (GetState, SetState) = (f.bin.f("fmi2GetFMUstate"), f.bin.f("fmi2SetFMUstate"));
    f.initialize(0.0, 0.2, None);
    let variable = "w1";
    assert_eq!(f.do_step(0.0, 0.05), 0, "{}", logged("state_moreau"));
    let mut saved: *mut c_void = std::ptr::null_mut();
    assert_eq!(unsafe { get(f.c, &mut saved) }, 0);
    assert_eq!(f.do_step(0.05, 0.05), 0);
    let first = f.get(variable);
    assert!(first.abs() > 1e-3, "w1 = {first}");
    assert_eq!(unsafe { set(f.c, saved) }, 0);
    assert_eq!(f.do_step(0.05, 0.05), 0);
    common::assert_close(f.get(variable), first, 1e-9, 1e-12);
}

type Directional2 = unsafe extern "C" fn(
    *mut c_void,
    *const c_uint,
    usize,
    *const c_uint,
    usize,
    *const f64,
    *mut f64,
) -> c_int;

#[test]
fn directional_derivatives_are_the_linearization() {
    // The chain's A, B, C, D column by column through
    // fmi2GetDirectionalDerivative, against `rmoc linearize`.
    let lin_file = scratch_dir("fmu").join("chain4_lin.json");
    let (code, text) = exit_and_text(&rmoc_cli(&[
        "linearize",
        "tests/models/linearize/chain4.rmo",
        "-p",
        "tau=2",
        "-o",
        lin_file.to_str().expect("path"),
    ]));
    assert_eq!(code, Some(0), "{text}");
    let lin: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lin_file).expect("json")).expect("parses");
    let lin = &lin["linearization"];
    let names = |k: &str| common::json_names(&lin[k]);
    let matrix = |k: &str| common::json_matrix(&lin[k]);
    let (states, inputs, outputs) = (names("states"), names("inputs"), names("outputs"));
    let fmu = export("tests/models/linearize/chain4.rmo", "chain4_dd.fmu", &[]);
    let f = Fmu2::new(&fmu, 0, "directional", None).expect("instance");
    assert!(f.xml.contains("providesDirectionalDerivative=\"true\""));
    assert_eq!(f.set("tau", 2.0), 0);
    f.initialize(0.0, 1.0, None);
    let _ = f.new_discrete_states();
    assert_eq!(f.call("fmi2EnterContinuousTimeMode"), 0);
    let dd: Directional2 = f.bin.f("fmi2GetDirectionalDerivative");
    let unknowns: Vec<c_uint> = states
        .iter()
        .map(|s| vr(&f.xml, &format!("der({s})")))
        .chain(outputs.iter().map(|y| vr(&f.xml, y)))
        .collect();
    let n = states.len();
    let (a, b, c, d) = (matrix("a"), matrix("b"), matrix("c"), matrix("d"));
    for (j, known) in states.iter().chain(&inputs).enumerate() {
        let k = vr(&f.xml, known);
        let mut out = vec![0.0; unknowns.len()];
        let s = unsafe {
            dd(
                f.c,
                unknowns.as_ptr(),
                unknowns.len(),
                &k,
                1,
                &1.0,
                out.as_mut_ptr(),
            )
        };
        assert_eq!(s, 0, "{}", logged("directional"));
        for (i, got) in out.iter().enumerate() {
            let want = match (i < n, j < n) {
                (true, true) => a[i][j],
                (true, false) => b[i][j - n],
                (false, true) => c[i - n][j],
                (false, false) => d[i - n][j - n],
            };
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "d {} / d {known}: {got} vs {want}",
                i
            );
        }
    }
    // And in closed form (rmoc linearize's A matches NumPy's on the
    // hand-assembled M, C, K: benches/linearize/chain_numpy.py): the first
    // inertia's acceleration over its angle, -(c1 + c2)/J1.
    let (u, k) = (vr(&f.xml, "der(i1.w)"), vr(&f.xml, "i1.phi"));
    let mut out = 0.0;
    assert_eq!(unsafe { dd(f.c, &u, 1, &k, 1, &1.0, &mut out) }, 0);
    assert_eq!(out, -(4000.0 + 2500.0) / 0.02);
    // With respect to a parameter: refused, with a message.
    let (u, p) = (unknowns[0], vr(&f.xml, "J[1]"));
    let mut out = 0.0;
    assert_eq!(unsafe { dd(f.c, &u, 1, &p, 1, &1.0, &mut out) }, 3);
    assert!(logged("directional").contains("with respect to states and inputs, not `J[1]`"));
}

#[test]
fn communication_points_a_rounding_away_from_a_sample_do_not_stall() {
    // A host that sums its steps (t += 0.01) reaches 0.20000000000000004
    // where the sample instant is 0.2: the step's remainder after the
    // sample is below the resolution of time, and the step must end there
    // (it hung before).
    let fmu = export(
        "tests/models/events/sample_at_start.rmo",
        "sample_cs.fmu",
        &[],
    );
    let f = Fmu2::new(&fmu, 1, "samples", None).expect("instance");
    f.initialize(0.0, 1.0, None);
    let mut t = 0.0;
    for _ in 0..100 {
        assert_eq!(f.do_step(t, 0.01), 0, "at {t}: {}", logged("samples"));
        t += 0.01;
    }
    assert!(t > 1.0);
    // sample(0, 0.1): 0, 0.1, ..., 1.0 (the tenth sum of 0.1 is below 1).
    assert_eq!(f.get_integer("n"), 11);
    common::assert_close(f.get("x"), t, 1e-9, 0.0);
}
