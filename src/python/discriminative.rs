//! Bindings of the discriminative-weighting kernel: the conditional log-likelihood of a
//! weighted score table and its residual sums (src/discriminative.rs).

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::{layout, run, Array1Py, Array2Py};
use crate::discriminative;

/// `(loss, table_residuals (sum K_f, C), class_residuals (C,))` of a training set under the
/// score table `(sum K_f, C)` and class scores.
#[pyfunction]
#[pyo3(signature = (codes, labels, weights, table, class_scores, offsets, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn conditional_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    table: PyReadonlyArray2<'py, f64>,
    class_scores: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<(f64, Array2Py<'py>, Array1Py<'py>)> {
    let layout = layout(offsets)?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let table = table.as_array();
    let class_scores = class_scores.as_slice()?;
    let fit = run(py, n_jobs, || {
        discriminative::conditional_log_likelihood(
            codes,
            labels,
            weights,
            table,
            class_scores,
            &layout,
        )
    })?;
    Ok((
        fit.negative_log_likelihood,
        fit.table_residuals.into_pyarray(py),
        fit.class_residuals.into_pyarray(py),
    ))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conditional_log_likelihood, m)?)?;
    Ok(())
}
