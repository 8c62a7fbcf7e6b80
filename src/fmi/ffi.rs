//! What the C functions of both FMI versions share: the instance behind
//! a host's pointer with panics caught, the host's arrays and strings read
//! without trusting a null pointer, and the answer to functions of
//! capabilities an rmoc FMU does not claim.

use super::instance::{Instance, SavedInstance, Status};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f` on the instance behind `c` (the pointer an instantiation
/// returned), with panics caught: a null instance is an error, a panic
/// `Fatal`.
pub(super) unsafe fn with(c: *mut c_void, f: impl FnOnce(&mut Instance) -> Status) -> c_int {
    if c.is_null() {
        return Status::Error as c_int;
    }
    // SAFETY: a non-null instance is the pointer an instantiation returned.
    let inst = unsafe { &mut *(c as *mut Instance) };
    match catch_unwind(AssertUnwindSafe(|| f(inst))) {
        Ok(s) => s as c_int,
        Err(_) => Status::Fatal as c_int,
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
            Status::Ok
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
            Status::Ok
        })
    }
}
