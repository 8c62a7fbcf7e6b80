//! The FMI 2.0 C functions of an rmoc FMU (model exchange and
//! co-simulation in one binary), over [`FmuInstance`]. Signatures as in the
//! standard's `fmi2FunctionTypes.h`: `fmi2Boolean` is a C `int`, value
//! references `unsigned int`, statuses `fmi2OK` = 0 ... `fmi2Pending` = 5.
//!
//! Invariants: no function lets a panic cross into the host (it becomes
//! `fmi2Fatal`); a null instance or a null array with a nonzero count is an
//! `fmi2Error`, never a dereference.
// The safety contract of every function here is the FMI standard's: the
// host passes the instance it was given and arrays of the lengths it says.
#![allow(clippy::missing_safety_doc)]

use super::ffi::{
    completed_step, derivatives, directional, event_indicators, free_state, get_state, get_states,
    get_values, nominals, set_state, set_states, set_values, text, unsupported, with,
};
use super::instance::{FmiStatus, FmuInstance, InstanceKind, resource_dir};
use crate::flat::ScalarType;
use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

type Fmi2Logger = unsafe extern "C" fn(
    env: *mut c_void,
    instance_name: *const c_char,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
    ...
);

/// `fmi2CallbackFunctions`.
#[repr(C)]
pub struct CallbackFunctions {
    logger: Option<Fmi2Logger>,
    allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    step_finished: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    component_environment: *mut c_void,
}

/// `fmi2EventInfo`.
#[repr(C)]
pub struct EventInfo {
    new_discrete_states_needed: c_int,
    terminate_simulation: c_int,
    nominals_of_continuous_states_changed: c_int,
    values_of_continuous_states_changed: c_int,
    next_event_time_defined: c_int,
    next_event_time: f64,
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetTypesPlatform() -> *const c_char {
    c"default".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetVersion() -> *const c_char {
    c"2.0".as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetDebugLogging(
    c: *mut c_void,
    logging_on: c_int,
    _n_categories: usize,
    _categories: *const *const c_char,
) -> c_int {
    unsafe {
        with(c, |i| {
            i.logging = logging_on != 0;
            FmiStatus::Ok
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2Instantiate(
    instance_name: *const c_char,
    fmu_type: c_int,
    guid: *const c_char,
    resource_location: *const c_char,
    functions: *const CallbackFunctions,
    _visible: c_int,
    logging_on: c_int,
) -> *mut c_void {
    let made = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the host's strings and callbacks, as the standard says.
        let name = unsafe { text(instance_name) }.unwrap_or_default();
        let (logger, env) = if functions.is_null() {
            (None, std::ptr::null_mut())
        } else {
            let f = unsafe { &*functions };
            (f.logger, f.component_environment)
        };
        let c_name = CString::new(name.clone()).unwrap_or_default();
        let log = Box::new(move |status: FmiStatus, category: &str, message: &str| {
            let Some(logger) = logger else {
                return;
            };
            let category = CString::new(category).unwrap_or_default();
            // The message is a printf format to the host: a `%` in it is
            // written `%%`, and no arguments follow.
            let message =
                CString::new(message.replace('\0', " ").replace('%', "%%")).unwrap_or_default();
            // SAFETY: the host's logger.
            unsafe {
                logger(
                    env,
                    c_name.as_ptr(),
                    status as c_int,
                    category.as_ptr(),
                    message.as_ptr(),
                )
            };
        });
        let kind = match fmu_type {
            0 => InstanceKind::ModelExchange,
            1 => InstanceKind::CoSimulation,
            other => {
                log(
                    FmiStatus::Error,
                    "logStatusError",
                    &format!("unknown fmuType {other}"),
                );
                return None;
            }
        };
        let Some(location) = (unsafe { text(resource_location) }) else {
            log(
                FmiStatus::Error,
                "logStatusError",
                "no fmuResourceLocation given",
            );
            return None;
        };
        let token = unsafe { text(guid) };
        let mut inst =
            FmuInstance::new(&name, kind, token.as_deref(), &resource_dir(&location), log)?;
        inst.logging = logging_on != 0;
        Some(Box::into_raw(Box::new(inst)) as *mut c_void)
    }));
    match made {
        Ok(Some(p)) => p,
        _ => std::ptr::null_mut(),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2FreeInstance(c: *mut c_void) {
    if !c.is_null() {
        // SAFETY: the pointer fmi2Instantiate returned, freed once.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(c as *mut FmuInstance) })
        }));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetupExperiment(
    c: *mut c_void,
    tolerance_defined: c_int,
    tolerance: f64,
    start_time: f64,
    stop_time_defined: c_int,
    stop_time: f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            i.setup(
                (tolerance_defined != 0).then_some(tolerance),
                start_time,
                (stop_time_defined != 0).then_some(stop_time),
            )
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2EnterInitializationMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2ExitInitializationMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.initialize()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2Terminate(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.terminate()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2Reset(c: *mut c_void) -> c_int {
    unsafe { with(c, |i| i.reset()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetReal(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *mut f64,
) -> c_int {
    unsafe { get_values(c, vr, n, v, ScalarType::Real, |x| x) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetInteger(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *mut c_int,
) -> c_int {
    unsafe { get_values(c, vr, n, v, ScalarType::Integer, |x| x as c_int) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetBoolean(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *mut c_int,
) -> c_int {
    unsafe { get_values(c, vr, n, v, ScalarType::Boolean, |x| (x != 0.0) as c_int) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetString(
    c: *mut c_void,
    _vr: *const c_uint,
    n: usize,
    _v: *mut *const c_char,
) -> c_int {
    unsafe {
        with(c, |i| {
            if n == 0 {
                FmiStatus::Ok
            } else {
                i.misuse("the model has no String variables")
            }
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetReal(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *const f64,
) -> c_int {
    unsafe { set_values(c, vr, n, v, ScalarType::Real, |x| x) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetInteger(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *const c_int,
) -> c_int {
    unsafe { set_values(c, vr, n, v, ScalarType::Integer, |x| x as f64) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetBoolean(
    c: *mut c_void,
    vr: *const c_uint,
    n: usize,
    v: *const c_int,
) -> c_int {
    unsafe { set_values(c, vr, n, v, ScalarType::Boolean, |x| (x != 0) as u8 as f64) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetString(
    c: *mut c_void,
    _vr: *const c_uint,
    n: usize,
    _v: *const *const c_char,
) -> c_int {
    unsafe {
        with(c, |i| {
            if n == 0 {
                FmiStatus::Ok
            } else {
                i.misuse("the model has no String variables")
            }
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetFMUstate(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    unsafe { get_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetFMUstate(c: *mut c_void, s: *mut c_void) -> c_int {
    unsafe { set_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2FreeFMUstate(c: *mut c_void, s: *mut *mut c_void) -> c_int {
    unsafe { free_state(c, s) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SerializedFMUstateSize(
    c: *mut c_void,
    _s: *mut c_void,
    _n: *mut usize,
) -> c_int {
    unsafe { unsupported(c, "fmi2SerializedFMUstateSize") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SerializeFMUstate(
    c: *mut c_void,
    _s: *mut c_void,
    _b: *mut c_char,
    _n: usize,
) -> c_int {
    unsafe { unsupported(c, "fmi2SerializeFMUstate") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2DeSerializeFMUstate(
    c: *mut c_void,
    _b: *const c_char,
    _n: usize,
    _s: *mut *mut c_void,
) -> c_int {
    unsafe { unsupported(c, "fmi2DeSerializeFMUstate") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetDirectionalDerivative(
    c: *mut c_void,
    unknown: *const c_uint,
    n_unknown: usize,
    known: *const c_uint,
    n_known: usize,
    seed: *const f64,
    sensitivity: *mut f64,
) -> c_int {
    unsafe { directional(c, unknown, n_unknown, known, n_known, seed, sensitivity) }
}

// Model exchange.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2EnterEventMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2NewDiscreteStates(c: *mut c_void, info: *mut EventInfo) -> c_int {
    unsafe {
        with(c, |i| {
            if info.is_null() {
                return i.misuse("fmi2NewDiscreteStates: no event info");
            }
            match i.event_update() {
                Ok(u) => {
                    // SAFETY: checked not null; the host's struct.
                    let info = &mut *info;
                    info.new_discrete_states_needed = 0;
                    info.terminate_simulation = u.terminate as c_int;
                    info.nominals_of_continuous_states_changed = 0;
                    info.values_of_continuous_states_changed = u.states_changed as c_int;
                    info.next_event_time_defined = u.next_time_event.is_some() as c_int;
                    info.next_event_time = u.next_time_event.unwrap_or(0.0);
                    FmiStatus::Ok
                }
                Err(s) => s,
            }
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2EnterContinuousTimeMode(c: *mut c_void) -> c_int {
    unsafe { with(c, |_| FmiStatus::Ok) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2CompletedIntegratorStep(
    c: *mut c_void,
    _no_set_prior: c_int,
    enter_event_mode: *mut c_int,
    terminate: *mut c_int,
) -> c_int {
    unsafe {
        completed_step(
            c,
            enter_event_mode,
            terminate,
            "fmi2CompletedIntegratorStep",
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetTime(c: *mut c_void, t: f64) -> c_int {
    unsafe { with(c, |i| i.set_time(t)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetContinuousStates(c: *mut c_void, x: *const f64, n: usize) -> c_int {
    unsafe { set_states(c, x, n, "fmi2SetContinuousStates") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetDerivatives(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    unsafe { derivatives(c, x, n, "fmi2GetDerivatives") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetEventIndicators(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    unsafe { event_indicators(c, x, n, "fmi2GetEventIndicators") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetContinuousStates(c: *mut c_void, x: *mut f64, n: usize) -> c_int {
    unsafe { get_states(c, x, n, "fmi2GetContinuousStates") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetNominalsOfContinuousStates(
    c: *mut c_void,
    x: *mut f64,
    n: usize,
) -> c_int {
    unsafe { nominals(c, x, n, "fmi2GetNominalsOfContinuousStates") }
}

// Co-simulation.

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetRealInputDerivatives(
    c: *mut c_void,
    _vr: *const c_uint,
    _n: usize,
    _order: *const c_int,
    _v: *const f64,
) -> c_int {
    unsafe { unsupported(c, "fmi2SetRealInputDerivatives") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetRealOutputDerivatives(
    c: *mut c_void,
    _vr: *const c_uint,
    _n: usize,
    _order: *const c_int,
    _v: *mut f64,
) -> c_int {
    unsafe { unsupported(c, "fmi2GetRealOutputDerivatives") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2DoStep(c: *mut c_void, t: f64, h: f64, _no_set_prior: c_int) -> c_int {
    unsafe { with(c, |i| i.do_step(t, h)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2CancelStep(c: *mut c_void) -> c_int {
    unsafe { unsupported(c, "fmi2CancelStep") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetStatus(c: *mut c_void, _kind: c_int, _value: *mut c_int) -> c_int {
    unsafe { unsupported(c, "fmi2GetStatus") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetRealStatus(c: *mut c_void, kind: c_int, value: *mut f64) -> c_int {
    unsafe {
        with(c, |i| {
            // fmi2LastSuccessfulTime.
            if kind != 2 || value.is_null() {
                return i.misuse("fmi2GetRealStatus: only fmi2LastSuccessfulTime is known");
            }
            *value = i.last_time;
            FmiStatus::Ok
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetIntegerStatus(
    c: *mut c_void,
    _kind: c_int,
    _value: *mut c_int,
) -> c_int {
    unsafe { unsupported(c, "fmi2GetIntegerStatus") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetBooleanStatus(
    c: *mut c_void,
    kind: c_int,
    value: *mut c_int,
) -> c_int {
    unsafe {
        with(c, |i| {
            // fmi2Terminated.
            if kind != 3 || value.is_null() {
                return i.misuse("fmi2GetBooleanStatus: only fmi2Terminated is known");
            }
            *value = i.terminated as c_int;
            FmiStatus::Ok
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetStringStatus(
    c: *mut c_void,
    _kind: c_int,
    _value: *mut *const c_char,
) -> c_int {
    unsafe { unsupported(c, "fmi2GetStringStatus") }
}
