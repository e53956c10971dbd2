//! Bindings of the discriminative-weighting kernel: the conditional log-likelihood of a
//! weighted score table and its residual sums, and of weighted cells with their own values
//! (src/discriminative.rs).

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

/// `(loss, weight_gradient (cells, C), class_residuals (C,))` of the cell-weighted scores
/// `class_scores + offset + sum_k cell_weights[cells[k]] * values[cells[k]]` (`cells` (K, S))
/// (src/discriminative.rs, `cell_weighted_log_likelihood`).
#[pyfunction]
#[pyo3(signature = (cells, values, column_starts, cell_weights, offset, labels, sample_weights, class_scores, /, *, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn cell_weighted_log_likelihood<'py>(
    py: Python<'py>,
    cells: PyReadonlyArray2<'py, i64>,
    values: PyReadonlyArray2<'py, f64>,
    column_starts: Vec<usize>,
    cell_weights: PyReadonlyArray2<'py, f64>,
    offset: PyReadonlyArray2<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    sample_weights: PyReadonlyArray1<'py, f64>,
    class_scores: PyReadonlyArray1<'py, f64>,
    n_jobs: usize,
) -> PyResult<(f64, Array2Py<'py>, Array1Py<'py>)> {
    let terms = discriminative::CellTerms {
        cells: cells.as_array(),
        values: values.as_array(),
        column_starts: &column_starts,
    };
    let (cell_weights, offset) = (cell_weights.as_array(), offset.as_array());
    let (labels, sample_weights) = (labels.as_array(), sample_weights.as_array());
    let class_scores = class_scores.as_slice()?;
    let fit = run(py, n_jobs, || {
        discriminative::cell_weighted_log_likelihood(
            terms,
            cell_weights,
            offset,
            labels,
            sample_weights,
            class_scores,
        )
    })?;
    Ok((
        fit.negative_log_likelihood,
        fit.weight_gradient.into_pyarray(py),
        fit.class_residuals.into_pyarray(py),
    ))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conditional_log_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(cell_weighted_log_likelihood, m)?)?;
    Ok(())
}
