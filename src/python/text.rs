//! Bindings of the text and binary models' kernels: counting and scoring scipy sparse
//! matrices, and smoothing the summed count tables (Multinomial, Complement, Bernoulli).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{matrix, row_major, run, run_scoring, to_py_err, Array1Py, Array2Py};
use crate::counts::class_indices;
use crate::multinomial::{self, SmoothedFit, Smoothing};
use crate::naive_bayes::PriorMean;
use crate::solver::SolverSettings;
use crate::sparse_rows::{self, Major, SparseMatrix, Values};
use crate::tempering::{self, LeaveOneOutPrior, LeaveOneOutRows, TokenModel};

/// What a stored value counts as: itself, or `1[x > t]` (a NaN threshold is refused:
/// every comparison with it is false).
fn values(binarize: Option<f64>) -> PyResult<Values> {
    match binarize {
        Some(t) if t.is_nan() => Err(PyValueError::new_err("binarize threshold is NaN")),
        Some(t) => Ok(Values::Binarize(t)),
        None => Ok(Values::Counts),
    }
}

fn mean_kind(kind: &str) -> PyResult<PriorMean> {
    match kind {
        "uniform" => Ok(PriorMean::Uniform),
        "marginal" => Ok(PriorMean::PooledMarginal),
        other => Err(PyValueError::new_err(format!(
            "unknown prior mean {other:?}: expected 'uniform' or 'marginal'"
        ))),
    }
}

/// The training rows (a CSR matrix, their classes and weights) and the fitted token model
/// that the leave-one-out bindings read, borrowed from the caller's arrays.
struct TrainingRows<'a> {
    matrix: SparseMatrix<'a>,
    classes: Vec<usize>,
    weights: &'a [f64],
    model: TokenModel<'a>,
}

impl<'a> TrainingRows<'a> {
    #[allow(clippy::too_many_arguments)]
    fn borrow(
        indptr: &'a PyReadonlyArray1<'_, i64>,
        indices: &'a PyReadonlyArray1<'_, i32>,
        data: &'a PyReadonlyArray1<'_, f64>,
        labels: &'a PyReadonlyArray1<'_, i64>,
        weights: &'a PyReadonlyArray1<'_, f64>,
        counts: &'a PyReadonlyArray2<'_, f64>,
        concentration: &'a PyReadonlyArray1<'_, f64>,
        log_probability: &'a PyReadonlyArray2<'_, f64>,
        pooled_mean: bool,
    ) -> PyResult<Self> {
        let indptr = indptr.as_slice()?;
        let counts = counts.as_array();
        let (n_classes, n_tokens) = counts.dim();
        if log_probability.as_array().dim() != (n_tokens, n_classes) {
            return Err(PyValueError::new_err(format!(
                "log-probability table of shape {:?}, expected (tokens, classes) = {:?}",
                log_probability.as_array().dim(),
                (n_tokens, n_classes)
            )));
        }
        Ok(Self {
            matrix: SparseMatrix {
                indptr,
                indices: indices.as_slice()?,
                data: data.as_slice()?,
                n_rows: indptr.len().saturating_sub(1),
                n_columns: counts.ncols(),
                major: Major::Rows,
            },
            classes: class_indices(labels.as_array(), counts.nrows()).map_err(to_py_err)?,
            weights: weights.as_slice()?,
            model: TokenModel {
                counts,
                concentration: concentration.as_slice()?,
                log_probability_by_token: row_major(log_probability, "log-probability table")?,
                pooled_mean,
            },
        })
    }

    fn leave_one_out_log_likelihood(&self) -> crate::error::Result<ndarray::Array2<f64>> {
        tempering::leave_one_out_log_likelihood(
            &self.matrix,
            &self.classes,
            self.weights,
            &self.model,
        )
    }
}

/// `alpha = Some(a)`: fixed smoothing; `None`: Type-II ML within the bounds.
fn smoothing(alpha: Option<f64>, min_count: f64, bounds: (f64, f64)) -> PyResult<Smoothing> {
    Ok(match alpha {
        Some(alpha) => Smoothing::Fixed { alpha },
        None => Smoothing::EmpiricalBayes {
            min_count,
            settings: SolverSettings::new(bounds.0, bounds.1).map_err(to_py_err)?,
        },
    })
}

fn smoothed_dict<'py>(py: Python<'py>, fit: SmoothedFit, out: &Bound<'py, PyDict>) -> PyResult<()> {
    out.set_item("prior_mean", fit.prior_mean.into_pyarray(py))?;
    out.set_item("concentration", fit.concentration.into_pyarray(py))?;
    out.set_item("log_evidence", fit.log_evidence.into_pyarray(py))?;
    out.set_item("n_iter", fit.n_iter.mapv(|n| n as i64).into_pyarray(py))?;
    out.set_item("converged", fit.converged.into_pyarray(py))?;
    out.set_item("log_probability", fit.log_probability.into_pyarray(py))?;
    Ok(())
}

/// `(N_c, n_{c,v})` of a CSR (`by_columns=False`) or CSC matrix of shape `(n_rows,
/// n_columns)`; `binarize=t` counts `1[x > t]` instead of the values.
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, labels, weights, /, *, n_rows, n_columns, by_columns, n_classes, binarize, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn count_tokens<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    data: PyReadonlyArray1<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    n_rows: usize,
    n_columns: usize,
    by_columns: bool,
    n_classes: usize,
    binarize: Option<f64>,
    n_jobs: usize,
) -> PyResult<(Array1Py<'py>, Array2Py<'py>)> {
    let matrix = SparseMatrix {
        indptr: indptr.as_slice()?,
        indices: indices.as_slice()?,
        data: data.as_slice()?,
        n_rows,
        n_columns,
        major: if by_columns {
            Major::Columns
        } else {
            Major::Rows
        },
    };
    let classes = class_indices(labels.as_array(), n_classes).map_err(to_py_err)?;
    let weights = weights.as_slice()?;
    let counted = values(binarize)?;
    let counts = run(py, n_jobs, || {
        sparse_rows::count_tokens(&matrix, &classes, weights, n_classes, counted)
    })?;
    Ok((
        counts.class_totals.into_pyarray(py),
        counts.table.into_pyarray(py),
    ))
}

/// Joint log-likelihood `(S, C)` of a CSR matrix: `bias + X table` (`table` is `(V, C)`).
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, table, bias, /, *, n_columns, binarize, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn score_rows<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    data: PyReadonlyArray1<'py, f64>,
    table: PyReadonlyArray2<'py, f64>,
    bias: PyReadonlyArray1<'py, f64>,
    n_columns: usize,
    binarize: Option<f64>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let indptr = indptr.as_slice()?;
    let matrix = SparseMatrix {
        indptr,
        indices: indices.as_slice()?,
        data: data.as_slice()?,
        n_rows: indptr.len().saturating_sub(1),
        n_columns,
        major: Major::Rows,
    };
    let bias = bias.as_slice()?;
    if table.as_array().dim() != (n_columns, bias.len()) {
        return Err(PyValueError::new_err(format!(
            "score table of shape {:?}, expected (n_columns, classes) = {:?}",
            table.as_array().dim(),
            (n_columns, bias.len())
        )));
    }
    let table = row_major(&table, "score table")?;
    let counted = values(binarize)?;
    let size = (matrix.n_rows, matrix.data.len().saturating_mul(bias.len()));
    let joint = run_scoring(py, n_jobs, size, || {
        sparse_rows::score_rows(&matrix, table, bias, counted)
    })?;
    Ok(joint.into_pyarray(py))
}

/// Multinomial (or, with `complement`, Complement) NB from the `(C, V)` counts: a dict of
/// `prior_mean`, `concentration` / `log_evidence` / `n_iter` / `converged` (C, 1),
/// `log_probability` (C, V) and, for Complement NB, its `weights` (C, V).
#[pyfunction]
#[pyo3(signature = (counts, class_rows, /, *, prior_mean, alpha, min_count, concentration_bounds, complement, normalise, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_token_distributions<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    class_rows: PyReadonlyArray1<'py, f64>,
    prior_mean: &str,
    alpha: Option<f64>,
    min_count: f64,
    concentration_bounds: (f64, f64),
    complement: bool,
    normalise: bool,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = mean_kind(prior_mean)?;
    let rule = smoothing(alpha, min_count, concentration_bounds)?;
    let counts = counts.as_array();
    let class_rows = class_rows.as_slice()?;
    let (fit, weights) = run(py, n_jobs, || {
        if complement {
            let (table, rows) = multinomial::complement_counts(counts, class_rows);
            let fit = multinomial::fit_token_distributions(table.view(), &rows, kind, &rule)?;
            let weights = multinomial::complement_weights(fit.log_probability.view(), normalise);
            Ok((fit, Some(weights)))
        } else {
            let fit = multinomial::fit_token_distributions(counts, class_rows, kind, &rule)?;
            Ok((fit, None))
        }
    })?;
    let out = PyDict::new(py);
    smoothed_dict(py, fit, &out)?;
    if let Some(weights) = weights {
        out.set_item("weights", weights.into_pyarray(py))?;
    }
    Ok(out)
}

/// Bernoulli NB from the `(C, F)` per-class document frequencies: a dict of the smoothed
/// two-category models (`prior_mean`, `log_probability` with (absent, present) columns
/// side by side, `concentration` etc. (C, F)), `log_present`, `log_absent` (C, F),
/// `score_table` (F, C) and `absent_sum` (C).
#[pyfunction]
#[pyo3(signature = (present, class_rows, /, *, prior_mean, alpha, min_count, concentration_bounds, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_binary_features<'py>(
    py: Python<'py>,
    present: PyReadonlyArray2<'py, f64>,
    class_rows: PyReadonlyArray1<'py, f64>,
    prior_mean: &str,
    alpha: Option<f64>,
    min_count: f64,
    concentration_bounds: (f64, f64),
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = mean_kind(prior_mean)?;
    let rule = smoothing(alpha, min_count, concentration_bounds)?;
    let present = present.as_array();
    let class_rows = class_rows.as_slice()?;
    let fit = run(py, n_jobs, || {
        multinomial::fit_binary_features(present, class_rows, kind, &rule)
    })?;
    let out = PyDict::new(py);
    smoothed_dict(py, fit.smoothed, &out)?;
    out.set_item("log_present", fit.log_present.into_pyarray(py))?;
    out.set_item("log_absent", fit.log_absent.into_pyarray(py))?;
    out.set_item("score_table", fit.score_table.into_pyarray(py))?;
    out.set_item("absent_sum", fit.absent_sum.into_pyarray(py))?;
    Ok(out)
}

/// The training rows (a CSR matrix with their labels and weights) as the posterior power
/// of Multinomial NB reads them: `(shifted_joint (rows, C), classes, weights)` of the rows
/// that enter the leave-one-out likelihood, each row's leave-one-out joint
/// log-likelihoods shifted by their maximum. `class_counts` given: the prior is the
/// class frequencies, left one row out; else `class_log_prior` is fixed.
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, labels, weights, counts, concentration, log_probability, /, *, pooled_mean, class_counts, class_log_prior, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn leave_one_out_rows<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    data: PyReadonlyArray1<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    counts: PyReadonlyArray2<'py, f64>,
    concentration: PyReadonlyArray1<'py, f64>,
    log_probability: PyReadonlyArray2<'py, f64>,
    pooled_mean: bool,
    class_counts: Option<PyReadonlyArray1<'py, f64>>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    n_jobs: usize,
) -> PyResult<(Array2Py<'py>, Bound<'py, PyArray1<i64>>, Array1Py<'py>)> {
    let rows = TrainingRows::borrow(
        &indptr,
        &indices,
        &data,
        &labels,
        &weights,
        &counts,
        &concentration,
        &log_probability,
        pooled_mean,
    )?;
    let frequencies = match &class_counts {
        Some(array) => Some(array.as_slice()?),
        None => None,
    };
    let log_prior = class_log_prior.as_slice()?;
    let prior = match frequencies {
        Some(counts) => LeaveOneOutPrior::Frequencies(counts),
        None => LeaveOneOutPrior::Fixed(log_prior),
    };
    let n_classes = rows.model.counts.nrows();
    let kept = run(py, n_jobs, || {
        let scores = rows.leave_one_out_log_likelihood()?;
        LeaveOneOutRows::new(scores.view(), &rows.classes, rows.weights, &prior)
    })?;
    let (joint, classes, weights) = kept.parts();
    let joint = matrix(py, (classes.len(), n_classes), joint.to_vec())?;
    let classes: Vec<i64> = classes.iter().map(|&c| c as i64).collect();
    Ok((
        joint,
        classes.into_pyarray(py),
        weights.to_vec().into_pyarray(py),
    ))
}

/// The posterior power that maximises the leave-one-out likelihood of the rows of
/// [`leave_one_out_rows`] (of one batch, or of several concatenated): a dict of `power`,
/// `log_loss` (the leave-one-out log-loss at it) and `n_iter`.
#[pyfunction]
#[pyo3(signature = (shifted_joint, classes, weights, /, *, n_jobs))]
pub(super) fn fit_posterior_power<'py>(
    py: Python<'py>,
    shifted_joint: PyReadonlyArray2<'py, f64>,
    classes: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let n_classes = shifted_joint.as_array().ncols();
    let classes = class_indices(classes.as_array(), n_classes).map_err(to_py_err)?;
    let rows = LeaveOneOutRows::from_parts(
        shifted_joint.as_array().iter().copied().collect(),
        classes,
        weights.as_slice()?.to_vec(),
        n_classes,
    )
    .map_err(to_py_err)?;
    let fit = run(py, n_jobs, || Ok(rows.fit()))?;
    let out = PyDict::new(py);
    out.set_item("power", fit.power)?;
    out.set_item("log_loss", fit.log_loss)?;
    out.set_item("n_iter", fit.n_iter)?;
    Ok(out)
}

/// The leave-one-out class log-likelihoods `(S, C)` of the training rows (a CSR matrix),
/// exposed for tests against an independent computation.
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, labels, weights, counts, concentration, log_probability, /, *, pooled_mean, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn leave_one_out_log_likelihood<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    data: PyReadonlyArray1<'py, f64>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    counts: PyReadonlyArray2<'py, f64>,
    concentration: PyReadonlyArray1<'py, f64>,
    log_probability: PyReadonlyArray2<'py, f64>,
    pooled_mean: bool,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let rows = TrainingRows::borrow(
        &indptr,
        &indices,
        &data,
        &labels,
        &weights,
        &counts,
        &concentration,
        &log_probability,
        pooled_mean,
    )?;
    let scores = run(py, n_jobs, || rows.leave_one_out_log_likelihood())?;
    Ok(scores.into_pyarray(py))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(score_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fit_token_distributions, m)?)?;
    m.add_function(wrap_pyfunction!(fit_binary_features, m)?)?;
    m.add_function(wrap_pyfunction!(leave_one_out_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fit_posterior_power, m)?)?;
    m.add_function(wrap_pyfunction!(leave_one_out_log_likelihood, m)?)?;
    Ok(())
}
