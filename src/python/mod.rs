//! The Python bindings (feature `python`): borrow numpy arrays as views, run the core
//! kernel with the GIL released inside a pool of `n_jobs` threads, map the error, and
//! return numpy arrays. No statistics here. One file per family of kernels; this one holds
//! what they share and registers them.

use std::sync::mpsc;
use std::time::Duration;

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::error::HebError;
use crate::layout::FeatureLayout;
use crate::parallel::lease;

mod aode;
mod discriminative;
mod encoding;
mod finalizing;
mod groups;
mod model_guard;
mod naive_bayes;
mod posterior;
mod streaming;
mod text;
mod vocabulary;

/// The one place where core errors become Python exceptions.
pub(super) fn to_py_err(error: HebError) -> PyErr {
    match error {
        HebError::Allocation { .. } => PyMemoryError::new_err(error.to_string()),
        HebError::ThreadPool(_) => PyRuntimeError::new_err(error.to_string()),
        HebError::Interrupted => PyKeyboardInterrupt::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    }
}

/// The entries of a 2-D array in row-major order. A Fortran-order or strided array is
/// refused (its memory holds another order), never read transposed.
pub(super) fn row_major<'a, T: numpy::Element>(
    array: &'a numpy::PyReadonlyArray2<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    array.as_array().to_slice().ok_or_else(|| {
        PyValueError::new_err(format!("{what} must be a C-contiguous (row-major) array"))
    })
}

/// A row-major vector of `shape.0 * shape.1` entries as a numpy array of that shape.
pub(super) fn matrix<'py, T: numpy::Element>(
    py: Python<'py>,
    shape: (usize, usize),
    entries: Vec<T>,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    use numpy::IntoPyArray;
    let array = numpy::ndarray::Array2::from_shape_vec(shape, entries)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(array.into_pyarray(py))
}

pub(super) fn layout(offsets: Vec<usize>) -> PyResult<FeatureLayout> {
    FeatureLayout::from_offsets(offsets).map_err(to_py_err)
}

/// How often a thread waiting for a kernel takes the GIL back to look for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs a fallible kernel without the GIL in a pool of `n_jobs` threads.
///
/// The calling thread waits for the kernel and, every [`SIGNAL_POLL`], briefly takes the
/// GIL to run Python's signal handlers (`check_signals`). When one raises (Ctrl-C gives
/// `KeyboardInterrupt`), the kernel is cancelled through its pool's token, its partial
/// result is dropped once it stops at its next check, and the handler's exception is
/// raised: nothing the kernel computed reaches Python, so the estimator calling it is
/// left as it was.
pub(super) fn run<T: Send>(
    py: Python<'_>,
    n_jobs: usize,
    work: impl FnOnce() -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    finalizing::without_gil(py, || {
        let lease = lease(n_jobs).map_err(to_py_err)?;
        let (done, finished) = mpsc::channel();
        let mut outcome = None;
        let mut signal = None;
        lease.pool().in_place_scope(|scope| {
            let outcome = &mut outcome;
            scope.spawn(move |_| {
                *outcome = Some(work());
                // the receiver lives until the scope ends
                let _ = done.send(());
            });
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(SIGNAL_POLL) {
                if signal.is_none() {
                    if let Err(raised) = finalizing::with_gil(|py| py.check_signals()) {
                        lease.token().cancel();
                        signal = Some(raised);
                    }
                }
            }
        });
        match (signal, outcome) {
            (Some(raised), _) => Err(raised),
            (None, Some(result)) => result.map_err(to_py_err),
            (None, None) => Err(PyRuntimeError::new_err("the kernel ended without a result")),
        }
    })
}

/// Most rows a scoring call runs on the calling thread (one chunk of the scoring kernels)
/// and most table entries it reads there (rows x features x classes, about a millisecond):
/// handing a tiny job to a pool thread and waiting for it costs more than the job (a
/// context switch, far more on a loaded machine). The kernels then see one chunk and run
/// it in the same order of operations as in the pool, so the result is the same bit for
/// bit; a call this small ends long before Ctrl-C would need answering.
pub(super) const INLINE_ROWS: usize = 2048;
/// See [`INLINE_ROWS`].
pub(super) const INLINE_ENTRIES: usize = 1 << 20;

/// [`run`], or `work` on the calling thread where it scores at most [`INLINE_ROWS`] rows
/// reading at most [`INLINE_ENTRIES`] table entries.
pub(super) fn run_scoring<T: Send>(
    py: Python<'_>,
    n_jobs: usize,
    (n_rows, entries): (usize, usize),
    work: impl FnOnce() -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    if n_rows <= INLINE_ROWS && entries <= INLINE_ENTRIES {
        work().map_err(to_py_err)
    } else {
        run(py, n_jobs, work)
    }
}

pub(super) type Array1Py<'py> = Bound<'py, PyArray1<f64>>;
pub(super) type Array2Py<'py> = Bound<'py, PyArray2<f64>>;
/// The compiled core of hebnb.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The one version of the package: Cargo.toml's, also read by maturin for the wheel.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    encoding::register(m)?;
    naive_bayes::register(m)?;
    aode::register(m)?;
    groups::register(m)?;
    finalizing::register(m)?;
    model_guard::register(m)?;
    discriminative::register(m)?;
    vocabulary::register(m)?;
    streaming::register(m)?;
    posterior::register(m)?;
    text::register(m)?;
    Ok(())
}
