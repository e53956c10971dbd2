//! What the estimators' thread-safety guard (`hebnb._base`) needs to be safe from
//! Ctrl-C: the model lock taken and given back by single calls; the state an update
//! computed installed in one step; the undos of a failed update run to their end.
//! Python raises `KeyboardInterrupt` wherever it looks for signals in Python code (on
//! entering a function, on a backward jump, after a call returns), so each of these,
//! written in Python, could be cut in the middle and leave a lock held forever or a
//! model half-updated.

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::finalizing::without_gil;
use super::SIGNAL_POLL;
use crate::model_lock::{Access, ModelLock as CoreLock, WriteWhileReading};

/// A readers-writer lock for one model (`crate::model_lock`), used from Python as
///
/// ```python
/// kept = lock.holds()
/// try:
///     lock.hold(writing=False)
///     ...
/// finally:
///     lock.release_to(kept)
/// ```
///
/// Taking it and giving it back are single calls no interrupt splits, and `release_to`
/// gives back whatever the calling thread took since `holds()` was read, so an interrupt
/// anywhere in that pattern (even as `hold` returns) leaves nothing held. A thread
/// waiting for it still answers Ctrl-C, then holding nothing. The guarded Python code
/// runs in Python frames, not under this call: a daemon thread running it when the
/// interpreter exits ends as Python ends it, with no Rust frame in the way.
#[pyclass(module = "hebnb._core", frozen)]
pub(super) struct ModelLock(CoreLock);

#[pymethods]
impl ModelLock {
    #[new]
    fn new() -> Self {
        Self(CoreLock::new())
    }

    /// Takes the lock, for writing (nothing else reads or updates) or for reading (no
    /// update runs, other reads may).
    #[pyo3(signature = (*, writing))]
    fn hold(&self, py: Python<'_>, writing: bool) -> PyResult<()> {
        let access = if writing { Access::Write } else { Access::Read };
        let taken = self.0.enter(access).map_err(|WriteWhileReading| {
            PyRuntimeError::new_err("this thread reads the model and cannot update it meanwhile")
        })?;
        if !taken {
            while !without_gil(py, || self.0.wait(access, SIGNAL_POLL)) {
                if let Err(raised) = py.check_signals() {
                    self.0.give_up(access);
                    return Err(raised);
                }
            }
        }
        Ok(())
    }

    /// How many times the calling thread holds the lock.
    fn holds(&self) -> usize {
        self.0.holds()
    }

    /// Gives back the calling thread's holds beyond its first `kept`.
    #[pyo3(signature = (kept, /))]
    fn release_to(&self, kept: usize) {
        self.0.release_to(kept);
    }

    /// Whether the calling thread holds the lock (for reading or writing).
    fn held(&self) -> bool {
        self.0.held()
    }

    /// Whether the calling thread holds the lock for writing.
    fn held_for_writing(&self) -> bool {
        self.0.held_for_writing()
    }

    /// Whether some thread may hold the lock for writing (never waits: for a forked
    /// process, whose copy of the lock may be held by a thread it does not have).
    fn maybe_written(&self) -> bool {
        self.0.maybe_written()
    }
}

/// Installs the state an update computed, in one step no interrupt can split: every
/// entry of `state` set in `target`, then every entry of `target` in neither `state` nor
/// `keep` removed (new entries first, so a reader never misses an attribute), then
/// `undos` emptied, since the update is now done and nothing must roll it back.
#[pyfunction]
#[pyo3(signature = (target, state, keep, undos, /))]
fn commit_state(
    target: &Bound<'_, PyDict>,
    state: &Bound<'_, PyDict>,
    keep: &Bound<'_, PyAny>,
    undos: &Bound<'_, PyList>,
) -> PyResult<()> {
    for (key, value) in state.iter() {
        target.set_item(key, value)?;
    }
    let mut stale = Vec::new();
    for key in target.keys() {
        if !state.contains(&key)? && !keep.contains(&key)? {
            stale.push(key);
        }
    }
    for key in stale {
        target.del_item(key)?;
    }
    undos.del_slice(0, undos.len())
}

/// Calls the undos in reverse order, each to its end: an undo cut short by Ctrl-C is
/// called again, which is sound because an undo writes back saved values. Then raises
/// the `KeyboardInterrupt` if one came, else the first error an undo raised.
#[pyfunction]
#[pyo3(signature = (undos, /))]
fn run_undos(py: Python<'_>, undos: &Bound<'_, PyList>) -> PyResult<()> {
    let mut interrupted = None;
    let mut failed = None;
    for undo in undos.iter().rev() {
        loop {
            match undo.call0() {
                Ok(_) => break,
                Err(error) if error.is_instance_of::<PyKeyboardInterrupt>(py) => {
                    interrupted.get_or_insert(error);
                }
                Err(error) => {
                    failed.get_or_insert(error);
                    break;
                }
            }
        }
    }
    interrupted.or(failed).map_or(Ok(()), Err)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ModelLock>()?;
    m.add_function(wrap_pyfunction!(commit_state, m)?)?;
    m.add_function(wrap_pyfunction!(run_undos, m)?)?;
    Ok(())
}
