//! Bindings of the Naive Bayes kernels: counting, prior means, Type-II ML concentrations,
//! log-probability tables, scoring and mutual information.

use ndarray::{Array2, ArrayView2};
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{layout, run, run_scoring, to_py_err, Array1Py, Array2Py};
use crate::counts::count_categories as count_kernel;
use crate::layout::FeatureLayout;
use crate::mutual_information::mutual_information as mutual_information_kernel;
use crate::naive_bayes::{self, PriorMean};
use crate::scoring;
use crate::solver::SolverSettings;

/// Class totals `N_c` and the `(C, sum K_f)` table of `N_{c,f,v}`.
#[pyfunction]
pub(super) fn count_categories<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_classes: usize,
    n_jobs: usize,
) -> PyResult<(Array1Py<'py>, Array2Py<'py>)> {
    let layout = layout(offsets)?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let counts = run(py, n_jobs, || {
        count_kernel(codes, labels, weights, &layout, n_classes)
    })?;
    Ok((
        counts.class_totals.into_pyarray(py),
        counts.table.into_pyarray(py),
    ))
}

/// The prior mean of every category: `kind` is "uniform" or "marginal".
#[pyfunction]
pub(super) fn prior_mean<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    offsets: Vec<usize>,
    kind: &str,
) -> PyResult<Array1Py<'py>> {
    let kind = match kind {
        "uniform" => PriorMean::Uniform,
        "marginal" => PriorMean::PooledMarginal,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown prior mean {other:?}: expected 'uniform' or 'marginal'"
            )))
        }
    };
    let layout = layout(offsets)?;
    if counts.as_array().ncols() != layout.n_columns() {
        return Err(PyValueError::new_err(
            "count table width disagrees with the offsets",
        ));
    }
    Ok(naive_bayes::prior_mean(counts.as_array(), &layout, kind).into_pyarray(py))
}

/// Type-II ML concentrations: `(concentration, log_evidence, n_iter, converged)`, each
/// (C, F); `start` (C, F) warm-starts each refinement (`fit_concentrations_from`).
#[pyfunction]
#[pyo3(signature = (
    counts, class_totals, prior_mean, offsets, min_count, min_concentration,
    max_concentration, n_jobs, *, start=None
))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn fit_concentrations<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    class_totals: PyReadonlyArray1<'py, f64>,
    prior_mean: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    min_count: f64,
    min_concentration: f64,
    max_concentration: f64,
    n_jobs: usize,
    start: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<(
    Array2Py<'py>,
    Array2Py<'py>,
    Bound<'py, PyArray2<i64>>,
    Bound<'py, PyArray2<bool>>,
)> {
    let layout = layout(offsets)?;
    let settings = SolverSettings::new(min_concentration, max_concentration).map_err(to_py_err)?;
    let counts = counts.as_array();
    let class_totals = class_totals.as_slice()?;
    let prior_mean = prior_mean.as_slice()?;
    let start = start.as_ref().map(|s| s.as_array());
    let fit = run(py, n_jobs, || {
        naive_bayes::fit_concentrations_from(
            counts,
            class_totals,
            prior_mean,
            &layout,
            min_count,
            &settings,
            start,
        )
    })?;
    Ok((
        fit.concentration.into_pyarray(py),
        fit.log_evidence.into_pyarray(py),
        fit.n_iter.mapv(|n| n as i64).into_pyarray(py),
        fit.converged.into_pyarray(py),
    ))
}

/// `ln theta`, shape `(C, sum K_f)`.
#[pyfunction]
pub(super) fn log_probability_table<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    prior_mean: PyReadonlyArray1<'py, f64>,
    concentration: PyReadonlyArray2<'py, f64>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let layout = layout(offsets)?;
    let (counts, concentration) = (counts.as_array(), concentration.as_array());
    let prior_mean = prior_mean.as_slice()?;
    let table = run(py, n_jobs, || {
        naive_bayes::log_probability_table(counts, prior_mean, concentration, &layout)
    })?;
    Ok(table.into_pyarray(py))
}

/// The arguments of scoring coded rows, borrowed from Python: feature-major codes
/// `(F, S)`, the `(sum K_f, C)` log-probability table, the class log prior, optional
/// per-feature weights and the layout of the features' columns.
pub(super) struct ScoringInputs<'a> {
    codes: ArrayView2<'a, i32>,
    log_table: ArrayView2<'a, f64>,
    class_log_prior: &'a [f64],
    feature_weights: Option<&'a [f64]>,
    layout: FeatureLayout,
}

impl<'a> ScoringInputs<'a> {
    /// Borrows the arrays (the class log prior and the weights must be contiguous).
    pub(super) fn new(
        codes: &'a PyReadonlyArray2<'_, i32>,
        log_table: &'a PyReadonlyArray2<'_, f64>,
        class_log_prior: &'a PyReadonlyArray1<'_, f64>,
        feature_weights: &'a Option<PyReadonlyArray1<'_, f64>>,
        offsets: Vec<usize>,
    ) -> PyResult<Self> {
        Ok(Self {
            codes: codes.as_array(),
            log_table: log_table.as_array(),
            class_log_prior: class_log_prior.as_slice()?,
            feature_weights: match feature_weights {
                Some(w) => Some(w.as_slice()?),
                None => None,
            },
            layout: layout(offsets)?,
        })
    }

    /// Rows, and the table entries scoring them reads (rows x features x classes).
    pub(super) fn size(&self) -> (usize, usize) {
        let (n_features, n_rows) = self.codes.dim();
        let n_classes = self.class_log_prior.len();
        (
            n_rows,
            n_rows.saturating_mul(n_features).saturating_mul(n_classes),
        )
    }

    /// The joint log-likelihood `(S, C)` (SPEC eq. 1).
    pub(super) fn joint_log_likelihood(&self) -> crate::error::Result<Array2<f64>> {
        scoring::joint_log_likelihood(
            self.codes,
            self.log_table,
            self.class_log_prior,
            self.feature_weights,
            &self.layout,
        )
    }
}

/// Joint log-likelihood `(S, C)` of feature-major codes `(F, S)` under a `(sum K_f, C)` table.
#[pyfunction]
#[pyo3(signature = (codes, log_table, class_log_prior, feature_weights, offsets, n_jobs))]
pub(super) fn joint_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    log_table: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    feature_weights: Option<PyReadonlyArray1<'py, f64>>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let inputs = ScoringInputs::new(
        &codes,
        &log_table,
        &class_log_prior,
        &feature_weights,
        offsets,
    )?;
    let joint = run_scoring(py, n_jobs, inputs.size(), || inputs.joint_log_likelihood())?;
    Ok(joint.into_pyarray(py))
}

/// Row-wise log-softmax of joint log-likelihoods.
#[pyfunction]
pub(super) fn log_posterior<'py>(
    py: Python<'py>,
    joint: PyReadonlyArray2<'py, f64>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let joint = joint.as_array();
    let size = (joint.nrows(), joint.len());
    let out = run_scoring(py, n_jobs, size, || scoring::log_posterior(joint))?;
    Ok(out.into_pyarray(py))
}

/// Plug-in mutual information (nats) of every feature with the class, length F.
#[pyfunction]
pub(super) fn mutual_information<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Array1Py<'py>> {
    let layout = layout(offsets)?;
    let counts = counts.as_array();
    let information = run(py, n_jobs, || mutual_information_kernel(counts, &layout))?;
    Ok(information.into_pyarray(py))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_categories, m)?)?;
    m.add_function(wrap_pyfunction!(prior_mean, m)?)?;
    m.add_function(wrap_pyfunction!(fit_concentrations, m)?)?;
    m.add_function(wrap_pyfunction!(log_probability_table, m)?)?;
    m.add_function(wrap_pyfunction!(joint_log_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(log_posterior, m)?)?;
    m.add_function(wrap_pyfunction!(mutual_information, m)?)?;
    Ok(())
}
