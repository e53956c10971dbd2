//! Bindings of the discriminative-weighting kernel: the conditional log-likelihood of a
//! weighted score table and its residual sums, and of weighted cells with their own values
//! (src/discriminative.rs), and the whole weight fits, objective and L-BFGS in one call
//! (src/weight_fit.rs).

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::prelude::*;

use super::{layout, run, Array1Py, Array2Py};
use crate::discriminative;
use crate::lbfgs::{LbfgsResult, LbfgsSettings};
use crate::weight_fit;

/// `(weights, objective, largest gradient entry, iterations, converged)` of a weight fit.
type FitPy<'py> = (Array1Py<'py>, f64, f64, usize, bool);

fn fit_to_py(py: Python<'_>, fit: LbfgsResult) -> FitPy<'_> {
    let largest = fit.gradient.iter().fold(0.0_f64, |m, g| m.max(g.abs()));
    (
        fit.theta.into_pyarray(py),
        fit.value,
        largest,
        fit.n_iter,
        fit.converged,
    )
}

/// The weights `[a, w, d]` of a weighted Naive Bayes model (src/weight_fit.rs,
/// `fit_naive_bayes_weights`): `cell_weights` adds `d`, `held_out = (numerator,
/// denominator)` scores every training row without its own count; the penalty
/// `1/2 sum precision (theta - start)^2`, L-BFGS from `start` with the diagonal initial
/// inverse Hessian `inverse_curvature`.
#[pyfunction]
#[pyo3(signature = (codes, labels, sample_weights, log_table, class_log_prior, offsets, /, *, cell_weights, start, precision, inverse_curvature, gradient_tolerance, max_iter, memory, n_jobs, held_out=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn fit_naive_bayes_weights<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    sample_weights: PyReadonlyArray1<'py, f64>,
    log_table: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    cell_weights: bool,
    start: PyReadonlyArray1<'py, f64>,
    precision: PyReadonlyArray1<'py, f64>,
    inverse_curvature: PyReadonlyArray1<'py, f64>,
    gradient_tolerance: f64,
    max_iter: usize,
    memory: usize,
    n_jobs: usize,
    held_out: Option<(PyReadonlyArray2<'py, f64>, PyReadonlyArray2<'py, f64>)>,
) -> PyResult<FitPy<'py>> {
    let layout = layout(offsets)?;
    let (codes, labels) = (codes.as_array(), labels.as_array());
    let sample_weights = sample_weights.as_array();
    let tables = weight_fit::NaiveBayesTables {
        log_table: log_table.as_array(),
        class_log_prior: class_log_prior.as_slice()?,
        layout: &layout,
        held_out: held_out
            .as_ref()
            .map(|(numerator, denominator)| (numerator.as_array(), denominator.as_array())),
    };
    let fit = weight_fit::WeightFit {
        start: start.as_slice()?,
        precision: precision.as_slice()?,
        inverse_curvature: inverse_curvature.as_slice()?,
        settings: LbfgsSettings {
            gradient_tolerance,
            max_iter,
            memory,
        },
    };
    let result = run(py, n_jobs, || {
        weight_fit::fit_naive_bayes_weights(
            codes,
            labels,
            sample_weights,
            tables,
            cell_weights,
            fit,
        )
    })?;
    Ok(fit_to_py(py, result))
}

/// The weights `[a, v, d]` of a weighted AODE (src/weight_fit.rs, `fit_aode_weights`):
/// `parent_terms` (S, P, C), the cells `cells` (K, S) with `column_starts` and `values`
/// (cells, C) (K = 0: super-parent weights only); penalty and L-BFGS as in
/// `fit_naive_bayes_weights`.
#[pyfunction]
#[pyo3(signature = (parent_terms, cells, column_starts, values, labels, sample_weights, class_log_prior, /, *, start, precision, inverse_curvature, gradient_tolerance, max_iter, memory, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_aode_weights<'py>(
    py: Python<'py>,
    parent_terms: PyReadonlyArray3<'py, f64>,
    cells: PyReadonlyArray2<'py, i64>,
    column_starts: Vec<usize>,
    values: PyReadonlyArray2<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    sample_weights: PyReadonlyArray1<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    start: PyReadonlyArray1<'py, f64>,
    precision: PyReadonlyArray1<'py, f64>,
    inverse_curvature: PyReadonlyArray1<'py, f64>,
    gradient_tolerance: f64,
    max_iter: usize,
    memory: usize,
    n_jobs: usize,
) -> PyResult<FitPy<'py>> {
    let terms = weight_fit::AodeTerms {
        parent_terms: parent_terms.as_array(),
        cells: discriminative::CellTerms {
            cells: cells.as_array(),
            values: values.as_array(),
            column_starts: &column_starts,
        },
        class_log_prior: class_log_prior.as_slice()?,
    };
    let (labels, sample_weights) = (labels.as_array(), sample_weights.as_array());
    let fit = weight_fit::WeightFit {
        start: start.as_slice()?,
        precision: precision.as_slice()?,
        inverse_curvature: inverse_curvature.as_slice()?,
        settings: LbfgsSettings {
            gradient_tolerance,
            max_iter,
            memory,
        },
    };
    let result = run(py, n_jobs, || {
        weight_fit::fit_aode_weights(terms, labels, sample_weights, fit)
    })?;
    Ok(fit_to_py(py, result))
}

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
    m.add_function(wrap_pyfunction!(fit_naive_bayes_weights, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aode_weights, m)?)?;
    Ok(())
}
