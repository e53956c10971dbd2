//! Daemon threads at interpreter exit. While Python finalizes, a thread other than the
//! finalizing one that takes the GIL back is ended by CPython 3.11-3.13 with
//! `pthread_exit`, whose unwinding reaches the panic guard around every binding and
//! aborts the process ("FATAL: exception not rethrown"). A daemon thread still inside a
//! long kernel or waiting for a model's lock when the program ends would do exactly
//! that. Such a thread is parked instead, before it takes the GIL back, as CPython 3.14
//! itself does: the process ends around it.

use std::sync::OnceLock;
use std::thread::{self, ThreadId};

use pyo3::prelude::*;

/// The thread that ran hebnb's `atexit` callback: the one that finalizes, never parked.
static EXITING_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Whether the interpreter is finalizing, asked without the GIL through
/// `Py_IsFinalizing` (3.13+) or `_Py_IsFinalizing` (3.11, 3.12), looked up when first
/// needed: neither is in the stable ABI this module is built for.
#[cfg(unix)]
fn interpreter_finalizing() -> bool {
    type IsFinalizing = unsafe extern "C" fn() -> std::os::raw::c_int;
    static LOOKUP: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    let function = LOOKUP.get_or_init(|| {
        [c"Py_IsFinalizing", c"_Py_IsFinalizing"]
            .iter()
            .find_map(|name| {
                // SAFETY: dlsym with RTLD_DEFAULT only reads the loaded images' symbol
                // tables; a found symbol of either name has this signature in CPython.
                let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                (!address.is_null()).then(|| unsafe {
                    std::mem::transmute::<*mut std::ffi::c_void, IsFinalizing>(address)
                })
            })
    });
    // SAFETY: CPython documents both as callable without the GIL (an atomic read).
    function.is_some_and(|is_finalizing| unsafe { is_finalizing() } != 0)
}

#[cfg(not(unix))]
fn interpreter_finalizing() -> bool {
    false
}

/// Parks the calling thread for good if the interpreter is finalizing and this is not
/// the finalizing thread. Call it without the GIL, just before taking it back.
pub(super) fn park_if_finalizing() {
    let me = thread::current().id();
    if EXITING_THREAD.get().is_some_and(|exiting| *exiting != me) && interpreter_finalizing() {
        loop {
            thread::park();
        }
    }
}

/// `f()` run without the GIL (see [`park_if_finalizing`] for how it ends at exit).
pub(super) fn without_gil<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    py.detach(|| {
        let out = f();
        park_if_finalizing();
        out
    })
}

/// Registered with `atexit` when the module loads: notes the finalizing thread.
#[pyfunction]
fn _note_exiting_thread() {
    let _ = EXITING_THREAD.set(thread::current().id());
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let note = wrap_pyfunction!(_note_exiting_thread, m)?;
    m.py().import("atexit")?.call_method1("register", (note,))?;
    Ok(())
}
