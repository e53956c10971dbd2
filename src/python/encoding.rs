//! Bindings of the integer encoders.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::run;
use crate::encoding::{self, Categories};

/// Factorises integer columns `(F, S)`: `(codes (F, S), categories (flat), offsets)`.
#[pyfunction]
#[pyo3(signature = (values, missing, n_jobs))]
#[allow(clippy::type_complexity)]
pub(super) fn factorize_integers<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'py, i64>,
    missing: Option<PyReadonlyArray2<'py, bool>>,
    n_jobs: usize,
) -> PyResult<(
    Bound<'py, PyArray2<i32>>,
    Bound<'py, PyArray1<i64>>,
    Vec<usize>,
)> {
    let values = values.as_array();
    let missing = missing.as_ref().map(|m| m.as_array());
    let (codes, categories) = run(py, n_jobs, || encoding::factorize(values, missing))?;
    Ok((
        codes.into_pyarray(py),
        categories.values.into_pyarray(py),
        categories.offsets,
    ))
}

/// Codes integer columns `(F, S)` against known categories: -1 missing, -2 unknown.
#[pyfunction]
#[pyo3(signature = (values, missing, categories, offsets, n_jobs))]
pub(super) fn encode_integers<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'py, i64>,
    missing: Option<PyReadonlyArray2<'py, bool>>,
    categories: PyReadonlyArray1<'py, i64>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyArray2<i32>>> {
    let values = values.as_array();
    let missing = missing.as_ref().map(|m| m.as_array());
    let categories = Categories {
        values: categories.as_array().to_vec(),
        offsets,
    };
    let codes = run(py, n_jobs, || {
        encoding::encode(values, missing, &categories)
    })?;
    Ok(codes.into_pyarray(py))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(factorize_integers, m)?)?;
    m.add_function(wrap_pyfunction!(encode_integers, m)?)?;
    Ok(())
}
