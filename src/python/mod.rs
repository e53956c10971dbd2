//! The Python bindings (feature `python`): borrow numpy arrays as views, run the core
//! kernel with the GIL released inside a pool of `n_jobs` threads, map the error, and
//! return numpy arrays. No statistics here. One file per family of kernels; this one holds
//! what they share and registers them.

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::error::HebError;
use crate::layout::FeatureLayout;
use crate::parallel::with_threads;

mod aode;
mod discriminative;
mod encoding;
mod groups;
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
        _ => PyValueError::new_err(error.to_string()),
    }
}

pub(super) fn layout(offsets: Vec<usize>) -> PyResult<FeatureLayout> {
    FeatureLayout::from_offsets(offsets).map_err(to_py_err)
}

/// Runs a fallible kernel without the GIL in a pool of `n_jobs` threads.
pub(super) fn run<T: Send>(
    py: Python<'_>,
    n_jobs: usize,
    work: impl FnOnce() -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| with_threads(n_jobs, work).and_then(|r| r))
        .map_err(to_py_err)
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
    discriminative::register(m)?;
    vocabulary::register(m)?;
    streaming::register(m)?;
    posterior::register(m)?;
    text::register(m)?;
    Ok(())
}
