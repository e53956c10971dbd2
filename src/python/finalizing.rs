//! Daemon threads at interpreter exit. While Python finalizes, CPython 3.11-3.13 end a
//! thread other than the finalizing one with `pthread_exit` when it takes the GIL back,
//! including a thread that was already waiting for the GIL when finalization began. The
//! forced unwinding then crosses this module's frames: the panic guard around every
//! binding aborts the process ("FATAL: exception not rethrown"), and in the release
//! wheel, whose unwinder is linked in statically, the foreign unwind jumps to a wild
//! address (SIGSEGV). A daemon thread finishing a kernel, polling for signals or waiting
//! for a model's lock when the program ends would do exactly that.
//!
//! So no thread of ours may be on its way back to the GIL once finalization can begin.
//! A thread about to take the GIL back first announces its return ([`Return`]) and is
//! counted until it holds the GIL. hebnb's `atexit` callback, which runs before CPython
//! marks the interpreter as finalizing, closes the door and, with the GIL released, waits
//! until every counted thread has arrived. From then on a returning thread is parked for
//! good instead, as CPython 3.14 itself does, and the process ends around it. The
//! counter and the door are atomics, so a child forked at any moment can reset them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::OnceLock;
use std::thread::{self, ThreadId};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

/// Set by the `atexit` callback: from then on a returning thread parks.
static EXIT_STARTED: AtomicBool = AtomicBool::new(false);
/// Threads that announced their return and do not hold the GIL yet.
static RETURNING: AtomicUsize = AtomicUsize::new(0);
/// The thread that ran the `atexit` callback: the one that finalizes, never parked.
static EXITING_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// A thread's announced return to the GIL: counted from [`Return::announce`] until it is
/// dropped, which must happen once the thread holds the GIL again.
#[must_use = "drop the announcement once the GIL is held again"]
pub(super) struct Return(());

impl Return {
    /// Announces a return to the GIL, or parks the calling thread for good if the program
    /// is ending and this is not the finalizing thread. Call it without the GIL.
    pub(super) fn announce() -> Self {
        // Sequentially consistent on both sides: either the exit callback sees this
        // increment and waits for the arrival, or this thread sees the door closed.
        RETURNING.fetch_add(1, SeqCst);
        if EXIT_STARTED.load(SeqCst) && EXITING_THREAD.get() != Some(&thread::current().id()) {
            RETURNING.fetch_sub(1, SeqCst);
            loop {
                thread::park();
            }
        }
        Return(())
    }
}

impl Drop for Return {
    fn drop(&mut self) {
        RETURNING.fetch_sub(1, SeqCst);
    }
}

/// `f()` run without the GIL, returning to it through a [`Return`].
pub(super) fn without_gil<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    let (out, _arrived) = py.detach(|| (f(), Return::announce()));
    out
}

/// `f(py)` with the GIL taken from a thread that does not hold it, through a [`Return`].
pub(super) fn with_gil<T>(f: impl for<'py> FnOnce(Python<'py>) -> T) -> T {
    let returning = Return::announce();
    Python::attach(|py| {
        drop(returning);
        f(py)
    })
}

/// Registered with `atexit` when the module loads: notes the finalizing thread, closes
/// the door and waits, without the GIL, for the threads already on their way back.
#[pyfunction]
fn _close_for_exit(py: Python<'_>) {
    let _ = EXITING_THREAD.set(thread::current().id());
    py.detach(|| {
        EXIT_STARTED.store(true, SeqCst);
        while RETURNING.load(SeqCst) > 0 {
            thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Registered with `os.register_at_fork`: a forked child has only the forking thread, so
/// no return of another thread is pending there and its own exit has not begun.
#[pyfunction]
fn _reset_after_fork() {
    RETURNING.store(0, SeqCst);
    EXIT_STARTED.store(false, SeqCst);
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let close = wrap_pyfunction!(_close_for_exit, m)?;
    py.import("atexit")?.call_method1("register", (close,))?;
    let reset = wrap_pyfunction!(_reset_after_fork, m)?;
    let keywords = [("after_in_child", reset)].into_py_dict(py)?;
    let os = py.import("os")?;
    if os.hasattr("register_at_fork")? {
        os.call_method("register_at_fork", (), Some(&keywords))?;
    }
    Ok(())
}
