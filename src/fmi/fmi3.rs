//! The FMI 3.0 C functions of an rmoc FMU (model exchange and
//! co-simulation without event mode), over [`FmuInstance`]. Signatures as in
//! the standard's `fmi3FunctionTypes.h`: `fmi3Boolean` is a C `bool`,
//! counts are `size_t`, value references `uint32_t`. Every function of the
//! standard is exported (hosts look all of them up); those of capabilities
//! the description does not claim (FMU state serialization, clocks,
//! scheduled execution,
//! the integer types rmoc has no variables of) log why and return
//! `fmi3Error`.
//!
//! Invariants: as [`super::fmi2`]'s.
// The safety contract of every function here is the FMI standard's: the
// host passes the instance it was given and arrays of the lengths it says.
#![allow(clippy::missing_safety_doc)]

use super::ffi::{
    completed_step, derivatives, directional, event_indicators, free_state, get_state, get_states,
    get_values, nominals, set_state, set_states, set_values, text, unsupported, with,
};
use super::instance::{FmiStatus, FmuInstance, InstanceKind};
use crate::flat::ScalarType;
use std::ffi::{CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

type Fmi3Logger = unsafe extern "C" fn(
    env: *mut c_void,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
);

#[unsafe(no_mangle)]
pub extern "C" fn fmi3GetVersion() -> *const c_char {
    c"3.0".as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetDebugLogging(
    c: *mut c_void,
    logging_on: bool,
    _n: usize,
    _categories: *const *const c_char,
) -> c_int {
    unsafe {
        with(c, |i| {
            i.logging = logging_on;
            FmiStatus::Ok
        })
    }
}

unsafe fn instantiate(
    kind: InstanceKind,
    instance_name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    logging_on: bool,
    env: *mut c_void,
    logger: Option<Fmi3Logger>,
) -> *mut c_void {
    let made = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the host's strings, as the standard says.
        let name = unsafe { text(instance_name) }.unwrap_or_default();
        let log = Box::new(move |status: FmiStatus, category: &str, message: &str| {
            let Some(logger) = logger else {
                return;
            };
            let category = CString::new(category).unwrap_or_default();
            let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
            // SAFETY: the host's logger.
            unsafe { logger(env, status as c_int, category.as_ptr(), message.as_ptr()) };
        });
        let Some(path) = (unsafe { text(resource_path) }) else {
            log(FmiStatus::Error, "logStatusError", "no resourcePath given");
            return None;
        };
        let token = unsafe { text(token) };
        let dir = super::instance::resource_dir(&path);
        let mut inst = FmuInstance::new(&name, kind, token.as_deref(), &dir, log)?;
        inst.logging = logging_on;
        Some(Box::into_raw(Box::new(inst)) as *mut c_void)
    }));
    match made {
        Ok(Some(p)) => p,
        _ => std::ptr::null_mut(),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3InstantiateModelExchange(
    instance_name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    _visible: bool,
    logging_on: bool,
    env: *mut c_void,
    logger: Option<Fmi3Logger>,
) -> *mut c_void {
    unsafe {
        instantiate(
            InstanceKind::ModelExchange,
            instance_name,
            token,
            resource_path,
            logging_on,
            env,
            logger,
        )
    }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn fmi3InstantiateCoSimulation(
    instance_name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    _visible: bool,
    logging_on: bool,
    event_mode_used: bool,
    _early_return_allowed: bool,
    _required: *const u32,
    _n_required: usize,
    env: *mut c_void,
    logger: Option<Fmi3Logger>,
    _intermediate_update: *mut c_void,
) -> *mut c_void {
    if event_mode_used {
        if let Some(logger) = logger {
            // SAFETY: the host's logger.
            unsafe {
                logger(
                    env,
                    FmiStatus::Error as c_int,
                    c"logStatusError".as_ptr(),
                    c"rmoc's FMUs handle events inside fmi3DoStep (hasEventMode=\"false\")"
                        .as_ptr(),
                )
            };
        }
        return std::ptr::null_mut();
    }
    unsafe {
        instantiate(
            InstanceKind::CoSimulation,
            instance_name,
            token,
            resource_path,
            logging_on,
            env,
            logger,
        )
    }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn fmi3InstantiateScheduledExecution(
    _instance_name: *const c_char,
    _token: *const c_char,
    _resource_path: *const c_char,
    _visible: bool,
    _logging_on: bool,
    env: *mut c_void,
    logger: Option<Fmi3Logger>,
    _clock_update: *mut c_void,
    _lock: *mut c_void,
    _unlock: *mut c_void,
) -> *mut c_void {
    if let Some(logger) = logger {
        // SAFETY: the host's logger.
        unsafe {
            logger(
                env,
                FmiStatus::Error as c_int,
                c"logStatusError".as_ptr(),
                c"rmoc's FMUs offer model exchange and co-simulation, not scheduled execution"
                    .as_ptr(),
            )
        };
    }
    std::ptr::null_mut()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3FreeInstance(c: *mut c_void) {
    if !c.is_null() {
        // SAFETY: the pointer an fmi3Instantiate* returned, freed once.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(c as *mut FmuInstance) })
        }));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3EnterInitializationMode(
    c: *mut c_void,
    tolerance_defined: bool,
    tolerance: f64,
    start_time: f64,
    stop_time_defined: bool,
    stop_time: f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            i.setup(
                tolerance_defined.then_some(tolerance),
                start_time,
                stop_time_defined.then_some(stop_time),
            )
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3ExitInitializationMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.initialize()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3EnterEventMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3Terminate(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.terminate()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3Reset(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.reset()) }
}

/// FMI 3's getters and setters take `nValues` too: arrays are not
/// supported, so it must equal `nValueReferences`.
unsafe fn one_value_each(
    c: *mut c_void,
    n: usize,
    n_values: usize,
    f: impl FnOnce() -> c_int,
) -> c_int {
    if n == n_values {
        return f();
    }
    unsafe {
        with(c, |i| {
            i.misuse("arrays are not supported: nValues must equal nValueReferences")
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetFloat64(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut f64,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            get_values(c, vr, n, v, ScalarType::Real, |x| x)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetInt32(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut i32,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            get_values(c, vr, n, v, ScalarType::Integer, |x| x as i32)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetBoolean(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut bool,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            get_values(c, vr, n, v, ScalarType::Boolean, |x| x != 0.0)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetFloat64(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const f64,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            set_values(c, vr, n, v, ScalarType::Real, |x| x)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetInt32(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const i32,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            set_values(c, vr, n, v, ScalarType::Integer, |x| x as f64)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetBoolean(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const bool,
    nv: usize,
) -> c_int {
    unsafe {
        one_value_each(c, n, nv, || {
            set_values(c, vr, n, v, ScalarType::Boolean, |x| x as u8 as f64)
        })
    }
}

/// Getters and setters of types rmoc has no variables of: fine for no
/// variables, an error for any.
macro_rules! no_variables_of_type {
    ($($name:ident($vt:ty);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(c: *mut c_void, _vr: *const u32, n: usize, _v: $vt, _nv: usize) -> c_int {
            unsafe {
                with(c, |i| {
                    if n == 0 {
                        FmiStatus::Ok
                    } else {
                        i.misuse(concat!(stringify!($name), ": the model has no variables of this type"))
                    }
                })
            }
        }
    )*};
}

no_variables_of_type! {
    fmi3GetFloat32(*mut f32);
    fmi3GetInt8(*mut i8);
    fmi3GetUInt8(*mut u8);
    fmi3GetInt16(*mut i16);
    fmi3GetUInt16(*mut u16);
    fmi3GetUInt32(*mut u32);
    fmi3GetInt64(*mut i64);
    fmi3GetUInt64(*mut u64);
    fmi3GetString(*mut *const c_char);
    fmi3SetFloat32(*const f32);
    fmi3SetInt8(*const i8);
    fmi3SetUInt8(*const u8);
    fmi3SetInt16(*const i16);
    fmi3SetUInt16(*const u16);
    fmi3SetUInt32(*const u32);
    fmi3SetInt64(*const i64);
    fmi3SetUInt64(*const u64);
    fmi3SetString(*const *const c_char);
}

/// Functions of capabilities the description does not claim.
macro_rules! not_supported {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(c: *mut c_void, $($arg: $ty),*) -> c_int {
            $(let _ = $arg;)*
            unsafe { unsupported(c, stringify!($name)) }
        }
    )*};
}

not_supported! {
    fmi3GetBinary(vr: *const u32, n: usize, sizes: *mut usize, v: *mut *const u8, nv: usize);
    fmi3SetBinary(vr: *const u32, n: usize, sizes: *const usize, v: *const *const u8, nv: usize);
    fmi3GetClock(vr: *const u32, n: usize, v: *mut bool);
    fmi3SetClock(vr: *const u32, n: usize, v: *const bool);
    fmi3GetNumberOfVariableDependencies(vr: u32, n: *mut usize);
    fmi3GetVariableDependencies(dependent: u32, element: *mut usize, independents: *mut u32, elements: *mut usize, kinds: *mut c_int, n: usize);
    fmi3SerializedFMUStateSize(state: *mut c_void, size: *mut usize);
    fmi3SerializeFMUState(state: *mut c_void, bytes: *mut u8, size: usize);
    fmi3DeserializeFMUState(bytes: *const u8, size: usize, state: *mut *mut c_void);
    fmi3GetAdjointDerivative(unknowns: *const u32, nu: usize, knowns: *const u32, nk: usize, seed: *const f64, ns: usize, sensitivity: *mut f64, nsens: usize);
    fmi3EnterConfigurationMode();
    fmi3ExitConfigurationMode();
    fmi3GetIntervalDecimal(vr: *const u32, n: usize, intervals: *mut f64, qualifiers: *mut c_int);
    fmi3GetIntervalFraction(vr: *const u32, n: usize, counters: *mut u64, resolutions: *mut u64, qualifiers: *mut c_int);
    fmi3GetShiftDecimal(vr: *const u32, n: usize, shifts: *mut f64);
    fmi3GetShiftFraction(vr: *const u32, n: usize, counters: *mut u64, resolutions: *mut u64);
    fmi3SetIntervalDecimal(vr: *const u32, n: usize, intervals: *const f64);
    fmi3SetIntervalFraction(vr: *const u32, n: usize, counters: *const u64, resolutions: *const u64);
    fmi3SetShiftDecimal(vr: *const u32, n: usize, shifts: *const f64);
    fmi3SetShiftFraction(vr: *const u32, n: usize, counters: *const u64, resolutions: *const u64);
    fmi3GetOutputDerivatives(vr: *const u32, n: usize, orders: *const i32, v: *mut f64, nv: usize);
    fmi3ActivateModelPartition(clock: u32, time: f64);
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn fmi3GetDirectionalDerivative(
    c: *mut c_void,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    seed: *const f64,
    n_seed: usize,
    sensitivity: *mut f64,
    n_sensitivity: usize,
) -> c_int {
    if n_seed != n_knowns || n_sensitivity != n_unknowns {
        return unsafe {
            with(c, |i| {
                i.misuse(
                    "arrays are not supported: nSeed must equal nKnowns, nSensitivity nUnknowns",
                )
            })
        };
    }
    unsafe { directional(c, unknowns, n_unknowns, knowns, n_knowns, seed, sensitivity) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetFMUState(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    unsafe { get_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetFMUState(c: *mut c_void, s: *mut c_void) -> c_int {
    unsafe { set_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3FreeFMUState(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    unsafe { free_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3EvaluateDiscreteStates(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3UpdateDiscreteStates(
    c: *mut c_void,
    need_update: *mut bool,
    terminate: *mut bool,
    nominals_changed: *mut bool,
    values_changed: *mut bool,
    next_defined: *mut bool,
    next_time: *mut f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            let out = [
                need_update,
                terminate,
                nominals_changed,
                values_changed,
                next_defined,
            ];
            if out.iter().any(|p| p.is_null()) || next_time.is_null() {
                return i.misuse("fmi3UpdateDiscreteStates: null argument");
            }
            match i.event_update() {
                Ok(u) => {
                    *need_update = false;
                    *terminate = u.terminate;
                    *nominals_changed = false;
                    *values_changed = u.states_changed;
                    *next_defined = u.next_time_event.is_some();
                    *next_time = u.next_time_event.unwrap_or(0.0);
                    FmiStatus::Ok
                }
                Err(s) => s,
            }
        })
    }
}

// Model exchange.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3EnterContinuousTimeMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3CompletedIntegratorStep(
    c: *mut c_void,
    _no_set_prior: bool,
    enter_event_mode: *mut bool,
    terminate: *mut bool,
) -> c_int {
    unsafe {
        completed_step(
            c,
            enter_event_mode,
            terminate,
            "fmi3CompletedIntegratorStep",
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetTime(c: *mut c_void, t: f64) -> c_int {
    unsafe { with(c, |i| i.set_time(t)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetContinuousStates(c: *mut c_void, x: *const f64, n: usize) -> c_int {
    unsafe { set_states(c, x, n, "fmi3SetContinuousStates") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetContinuousStateDerivatives(
    c: *mut c_void,
    x: *mut f64,
    n: usize,
) -> c_int {
    unsafe { derivatives(c, x, n, "fmi3GetContinuousStateDerivatives") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetEventIndicators(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    unsafe { event_indicators(c, x, n, "fmi3GetEventIndicators") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetContinuousStates(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    unsafe { get_states(c, x, n, "fmi3GetContinuousStates") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetNominalsOfContinuousStates(
    c: *mut c_void,
    x: *mut f64,
    n: usize,
) -> c_int {
    unsafe { nominals(c, x, n, "fmi3GetNominalsOfContinuousStates") }
}

/// `GetNumberOf...`: `count` of the instance into `*n`.
unsafe fn put_count(
    c: *mut c_void,
    n: *mut usize,
    what: &str,
    count: impl FnOnce(&FmuInstance) -> usize,
) -> c_int {
    unsafe {
        with(c, |i| {
            if n.is_null() {
                return i.misuse(&format!("{what}: null argument"));
            }
            *n = count(i);
            FmiStatus::Ok
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetNumberOfEventIndicators(c: *mut c_void, n: *mut usize) -> c_int {
    unsafe {
        put_count(c, n, "fmi3GetNumberOfEventIndicators", |i| {
            i.iface.indicators.len()
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetNumberOfContinuousStates(c: *mut c_void, n: *mut usize) -> c_int {
    unsafe {
        put_count(c, n, "fmi3GetNumberOfContinuousStates", |i| {
            i.iface.states.len()
        })
    }
}

// Co-simulation.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3EnterStepMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn fmi3DoStep(
    c: *mut c_void,
    t: f64,
    h: f64,
    _no_set_prior: bool,
    event_handling_needed: *mut bool,
    terminate: *mut bool,
    early_return: *mut bool,
    last_successful_time: *mut f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            let out = [event_handling_needed, terminate, early_return];
            if out.iter().any(|p| p.is_null()) || last_successful_time.is_null() {
                return i.misuse("fmi3DoStep: null argument");
            }
            let mut s = i.do_step(t, h);
            // (FMI 3 reports the end through terminateSimulation.)
            if s == FmiStatus::Discard && i.terminated {
                s = FmiStatus::Ok;
            }
            *event_handling_needed = false;
            *terminate = i.terminated;
            *early_return = false;
            *last_successful_time = i.last_time;
            s
        })
    }
}
