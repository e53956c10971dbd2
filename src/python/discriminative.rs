//! Bindings of the discriminative-weighting kernel: the conditional log-likelihood of a
//! weighted score table and its residual sums (src/discriminative.rs).

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::{layout, run, Array1Py, Array2Py};
use crate::discriminative;

/// `(loss, table_residuals (sum K_f, C), class_residuals (C,), held_out_correction)` of a
/// training set under the score table `(sum K_f, C)` and class scores; with
/// `held_out = (cell_weights, numerator, denominator)` every row's own-class cells are
/// scored without the row (`held_out_correction` is then a table, else None).
#[pyfunction]
#[pyo3(signature = (codes, labels, weights, table, class_scores, offsets, n_jobs, /, *, held_out=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn conditional_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    table: PyReadonlyArray2<'py, f64>,
    class_scores: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_jobs: usize,
    held_out: Option<(
        PyReadonlyArray2<'py, f64>,
        PyReadonlyArray2<'py, f64>,
        PyReadonlyArray2<'py, f64>,
    )>,
) -> PyResult<(f64, Array2Py<'py>, Array1Py<'py>, Option<Array2Py<'py>>)> {
    let layout = layout(offsets)?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let table = table.as_array();
    let class_scores = class_scores.as_slice()?;
    let held_out = held_out
        .as_ref()
        .map(
            |(cell_weights, numerator, denominator)| discriminative::LeaveOneOut {
                cell_weights: cell_weights.as_array(),
                numerator: numerator.as_array(),
                denominator: denominator.as_array(),
            },
        );
    let fit = run(py, n_jobs, || {
        discriminative::conditional_log_likelihood(
            codes,
            labels,
            weights,
            table,
            class_scores,
            &layout,
            held_out,
        )
    })?;
    Ok((
        fit.negative_log_likelihood,
        fit.table_residuals.into_pyarray(py),
        fit.class_residuals.into_pyarray(py),
        fit.held_out_correction.map(|c| c.into_pyarray(py)),
    ))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conditional_log_likelihood, m)?)?;
    Ok(())
}
