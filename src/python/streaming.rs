//! Binding of the streaming counts (`crate::streaming`): a batch added in place.

use numpy::{
    IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyReadwriteArray1, PyReadwriteArray2,
};
use pyo3::prelude::*;

use super::{run, to_py_err};
use crate::streaming;

/// Adds coded rows `(F, S)` to per-feature count tables `(C, capacity_f)` and the class
/// totals in place, after multiplying them by `decay`.
#[pyfunction]
#[pyo3(signature = (tables, class_totals, codes, labels, weights, *, decay, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn add_counts<'py>(
    py: Python<'py>,
    mut tables: Vec<PyReadwriteArray2<'py, f64>>,
    mut class_totals: PyReadwriteArray1<'py, f64>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    decay: f64,
    n_jobs: usize,
) -> PyResult<()> {
    let mut views: Vec<_> = tables.iter_mut().map(|t| t.as_array_mut()).collect();
    let totals = class_totals.as_slice_mut()?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let mut work = move || streaming::add_batch(&mut views, totals, codes, labels, weights, decay);
    if n_jobs <= 1 {
        work().map_err(to_py_err) // one thread: the caller's, no hand-off to a pool
    } else {
        run(py, n_jobs, work)
    }
}

/// The values of the cells that `add_counts` of the same rows would add to, taken
/// before it (a flat float64 array), for `restore_counts` to undo it.
#[pyfunction]
#[pyo3(signature = (tables, codes, labels))]
pub(super) fn touched_counts<'py>(
    py: Python<'py>,
    mut tables: Vec<PyReadwriteArray2<'py, f64>>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let views: Vec<_> = tables.iter_mut().map(|t| t.as_array_mut()).collect();
    let saved =
        streaming::touched_cells(&views, codes.as_array(), labels.as_array()).map_err(to_py_err)?;
    Ok(saved.into_pyarray(py))
}

/// Writes back into the tables the values `touched_counts` saved for the same rows.
#[pyfunction]
#[pyo3(signature = (tables, codes, labels, saved))]
pub(super) fn restore_counts<'py>(
    mut tables: Vec<PyReadwriteArray2<'py, f64>>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    saved: PyReadonlyArray1<'py, f64>,
) -> PyResult<()> {
    let mut views: Vec<_> = tables.iter_mut().map(|t| t.as_array_mut()).collect();
    let saved = saved.as_array().to_vec();
    streaming::restore_cells(&mut views, codes.as_array(), labels.as_array(), &saved)
        .map_err(to_py_err)
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(add_counts, m)?)?;
    m.add_function(wrap_pyfunction!(touched_counts, m)?)?;
    m.add_function(wrap_pyfunction!(restore_counts, m)?)?;
    Ok(())
}
