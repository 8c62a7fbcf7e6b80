//! What the C functions of both FMI versions share: the instance behind
//! a host's pointer with panics caught, the host's arrays and strings read
//! without trusting a null pointer, the answer to functions of
//! capabilities an rmoc FMU does not claim, and the bodies of the functions
//! the two versions have in common but for their names and Boolean type.

use super::instance::{FmiStatus, FmuInstance, SavedInstance};
use crate::flat::ScalarType;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f` on the instance behind `c` (the pointer an instantiation
/// returned), with panics caught: a null instance is an error, a panic
/// `Fatal`.
pub(super) unsafe fn with(c: *mut c_void, f: impl FnOnce(&mut FmuInstance) -> FmiStatus) -> c_int {
    if c.is_null() {
        return FmiStatus::Error as c_int;
    }
    // SAFETY: a non-null instance is the pointer an instantiation returned.
    let inst = unsafe { &mut *(c as *mut FmuInstance) };
    match catch_unwind(AssertUnwindSafe(|| f(inst))) {
        Ok(s) => s as c_int,
        Err(_) => FmiStatus::Fatal as c_int,
    }
}

/// The array `p` of `n` elements (empty when n is 0, whatever `p` is);
/// `None` for a null pointer with a nonzero length.
pub(super) unsafe fn slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if n == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: the host passes arrays of the length it states.
        Some(unsafe { std::slice::from_raw_parts(p, n) })
    }
}

/// As [`slice`], to write.
pub(super) unsafe fn slice_mut<'a, T>(p: *mut T, n: usize) -> Option<&'a mut [T]> {
    if n == 0 {
        Some(&mut [])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: as `slice`.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }
}

/// A host's string (`None` for a null pointer).
pub(super) unsafe fn text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the host passes NUL-terminated strings.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// The answer of a function whose capability the description does not
/// claim: logged, an error status.
pub(super) unsafe fn unsupported(c: *mut c_void, what: &str) -> c_int {
    unsafe {
        with(c, |i| {
            i.misuse(&format!("{what} is not supported by rmoc's FMUs"))
        })
    }
}

/// `GetFMUstate`: a new saved state in `*state`, or the one there
/// overwritten.
pub(super) unsafe fn get_state(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    unsafe {
        with(c, |i| {
            if state.is_null() {
                return i.misuse("GetFMUstate: no place for the state");
            }
            let saved = match i.save() {
                Ok(s) => s,
                Err(s) => return s,
            };
            if (*state).is_null() {
                *state = Box::into_raw(Box::new(saved)) as *mut c_void;
            } else {
                // SAFETY: a state this FMU made (the host passes it back).
                *(*state as *mut SavedInstance) = saved;
            }
            FmiStatus::Ok
        })
    }
}

/// `SetFMUstate`.
pub(super) unsafe fn set_state(c: *mut c_void, state: *mut c_void) -> c_int {
    unsafe {
        with(c, |i| {
            if state.is_null() {
                return i.misuse("SetFMUstate: no state given");
            }
            // SAFETY: a state this FMU made.
            i.restore(&*(state as *const SavedInstance))
        })
    }
}

/// `FreeFMUstate`: frees `*state` and sets it to null.
pub(super) unsafe fn free_state(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    unsafe {
        with(c, |_| {
            if !state.is_null() && !(*state).is_null() {
                // SAFETY: a state this FMU made, freed once.
                drop(Box::from_raw(*state as *mut SavedInstance));
                *state = std::ptr::null_mut();
            }
            FmiStatus::Ok
        })
    }
}

/// Reads `n` variables of type `ty` into `out` through `put`.
pub(super) unsafe fn get_values<T>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    out: *mut T,
    ty: ScalarType,
    put: impl Fn(f64) -> T,
) -> c_int {
    unsafe {
        with(c, |i| {
            let (Some(vr), Some(out)) = (slice(vr, n), slice_mut(out, n)) else {
                return i.misuse("a null array with a nonzero length");
            };
            for (o, &r) in out.iter_mut().zip(vr) {
                match i.get(r, ty) {
                    Ok(x) => *o = put(x),
                    Err(s) => return s,
                }
            }
            FmiStatus::Ok
        })
    }
}

/// Sets `n` variables of type `ty` from `values` through `take`.
pub(super) unsafe fn set_values<T: Copy>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    values: *const T,
    ty: ScalarType,
    take: impl Fn(T) -> f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            let (Some(vr), Some(values)) = (slice(vr, n), slice(values, n)) else {
                return i.misuse("a null array with a nonzero length");
            };
            for (&r, &x) in vr.iter().zip(values) {
                let s = i.set(r, ty, take(x));
                if s != FmiStatus::Ok {
                    return s;
                }
            }
            FmiStatus::Ok
        })
    }
}

/// `CompletedIntegratorStep`: never an event to enter; whether the model
/// terminated (`B`: `fmi2Boolean` or `fmi3Boolean`).
pub(super) unsafe fn completed_step<B: From<bool>>(
    c: *mut c_void,
    enter_event_mode: *mut B,
    terminate: *mut B,
    what: &str,
) -> c_int {
    unsafe {
        with(c, |i| {
            if enter_event_mode.is_null() || terminate.is_null() {
                return i.misuse(&format!("{what}: null argument"));
            }
            *enter_event_mode = false.into();
            *terminate = i.terminated.into();
            FmiStatus::Ok
        })
    }
}

/// `SetContinuousStates`.
pub(super) unsafe fn set_states(c: *mut c_void, x: *const f64, n: usize, what: &str) -> c_int {
    unsafe {
        with(c, |i| match slice(x, n) {
            Some(x) => i.set_states(x),
            None => i.misuse(&format!("{what}: null array")),
        })
    }
}

/// `GetDerivatives` (FMI 2), `GetContinuousStateDerivatives` (FMI 3).
pub(super) unsafe fn derivatives(c: *mut c_void, dx: *mut f64, n: usize, what: &str) -> c_int {
    unsafe {
        with(c, |i| match slice_mut(dx, n) {
            Some(dx) => i.derivatives(dx),
            None => i.misuse(&format!("{what}: null array")),
        })
    }
}

/// `GetEventIndicators`.
pub(super) unsafe fn event_indicators(c: *mut c_void, z: *mut f64, n: usize, what: &str) -> c_int {
    unsafe {
        with(c, |i| match slice_mut(z, n) {
            Some(z) => i.event_indicators(z),
            None => i.misuse(&format!("{what}: null array")),
        })
    }
}

/// `GetContinuousStates`.
pub(super) unsafe fn get_states(c: *mut c_void, x: *mut f64, n: usize, what: &str) -> c_int {
    unsafe {
        with(c, |i| {
            let states = i.states();
            match slice_mut(x, n) {
                Some(x) if x.len() == states.len() => {
                    x.copy_from_slice(&states);
                    FmiStatus::Ok
                }
                _ => i.misuse(&format!("{what}: {n} asked for, {} states", states.len())),
            }
        })
    }
}

/// `GetNominalsOfContinuousStates`.
pub(super) unsafe fn nominals(c: *mut c_void, x: *mut f64, n: usize, what: &str) -> c_int {
    unsafe {
        with(c, |i| match slice_mut(x, n) {
            Some(x) if x.len() == i.iface.nominals.len() => {
                x.copy_from_slice(&i.iface.nominals);
                FmiStatus::Ok
            }
            _ => i.misuse(&format!("{what}: wrong length")),
        })
    }
}

/// `GetDirectionalDerivative`: `sensitivity` (as long as `unknowns`) along
/// `seed` (as long as `knowns`).
pub(super) unsafe fn directional(
    c: *mut c_void,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    seed: *const f64,
    sensitivity: *mut f64,
) -> c_int {
    unsafe {
        with(c, |i| {
            let arrays = (
                slice(unknowns, n_unknowns),
                slice(knowns, n_knowns),
                slice(seed, n_knowns),
                slice_mut(sensitivity, n_unknowns),
            );
            let (Some(u), Some(k), Some(s), Some(out)) = arrays else {
                return i.misuse("a null array with a nonzero length");
            };
            i.directional(u, k, s, out)
        })
    }
}
