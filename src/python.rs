//! The Python bindings (feature `python`): borrow numpy arrays as views, run the core
//! kernel with the GIL released inside a pool of `n_jobs` threads, map the error, and
//! return numpy arrays. No statistics here.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::aode::{self, AodeModel, AodeSettings, ChildSmoothing};
use crate::counts::count_categories as count_kernel;
use crate::dirichlet_groups;
use crate::encoding::{self, Categories};
use crate::error::HebError;
use crate::layout::FeatureLayout;
use crate::mutual_information::mutual_information as mutual_information_kernel;
use crate::naive_bayes::{self, PriorMean};
use crate::pair_counts::{self, PairTablesView};
use crate::parallel::with_threads;
use crate::parent_prior;
use crate::scoring;
use crate::solver::SolverSettings;

/// The one place where core errors become Python exceptions.
fn to_py_err(error: HebError) -> PyErr {
    match error {
        HebError::Allocation { .. } => PyMemoryError::new_err(error.to_string()),
        HebError::ThreadPool(_) => PyRuntimeError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    }
}

fn layout(offsets: Vec<usize>) -> PyResult<FeatureLayout> {
    FeatureLayout::from_offsets(offsets).map_err(to_py_err)
}

/// Runs a fallible kernel without the GIL in a pool of `n_jobs` threads.
fn run<T: Send>(
    py: Python<'_>,
    n_jobs: usize,
    work: impl FnOnce() -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| with_threads(n_jobs, work).and_then(|r| r))
        .map_err(to_py_err)
}

type Array1Py<'py> = Bound<'py, PyArray1<f64>>;
type Array2Py<'py> = Bound<'py, PyArray2<f64>>;
/// `(concentration, log_evidence, n_iter, converged)` of a list of solves.
type Solutions1Py<'py> = (
    Array1Py<'py>,
    Array1Py<'py>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
);

/// Class totals `N_c` and the `(C, sum K_f)` table of `N_{c,f,v}`.
#[pyfunction]
fn count_categories<'py>(
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
fn prior_mean<'py>(
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

/// Type-II ML concentrations: `(concentration, log_evidence, n_iter, converged)`, each (C, F).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn fit_concentrations<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    class_totals: PyReadonlyArray1<'py, f64>,
    prior_mean: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    min_count: f64,
    min_concentration: f64,
    max_concentration: f64,
    n_jobs: usize,
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
    let fit = run(py, n_jobs, || {
        naive_bayes::fit_concentrations(
            counts,
            class_totals,
            prior_mean,
            &layout,
            min_count,
            &settings,
        )
    })?;
    Ok((
        fit.concentration.into_pyarray(py),
        fit.log_evidence.into_pyarray(py),
        fit.n_iter.mapv(|n| n as i64).into_pyarray(py),
        fit.converged.into_pyarray(py),
    ))
}

/// `m_i` of each super-parent's empirical-Bayes class distribution, from the `(C, sum K_f)`
/// counts and the `(F, C)` class means: `(concentration, log_evidence, n_iter, converged)`,
/// each of shape `(F,)`.
#[pyfunction]
fn fit_parent_concentrations<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    class_mean: PyReadonlyArray2<'py, f64>,
    offsets: Vec<usize>,
    min_concentration: f64,
    max_concentration: f64,
    n_jobs: usize,
) -> PyResult<Solutions1Py<'py>> {
    let layout = layout(offsets)?;
    let settings = SolverSettings::new(min_concentration, max_concentration).map_err(to_py_err)?;
    let (counts, class_mean) = (counts.as_array(), class_mean.as_array());
    let fit = run(py, n_jobs, || {
        parent_prior::fit_parent_concentrations(counts, class_mean, &layout, &settings)
    })?;
    Ok((
        fit.iter()
            .map(|s| s.concentration)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        fit.iter()
            .map(|s| s.log_evidence)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        fit.iter()
            .map(|s| s.n_iter as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        fit.iter()
            .map(|s| s.converged)
            .collect::<Vec<_>>()
            .into_pyarray(py),
    ))
}

/// `ln theta`, shape `(C, sum K_f)`.
#[pyfunction]
fn log_probability_table<'py>(
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

/// Joint log-likelihood `(S, C)` of feature-major codes `(F, S)` under a `(sum K_f, C)` table.
#[pyfunction]
#[pyo3(signature = (codes, log_table, class_log_prior, feature_weights, offsets, n_jobs))]
fn joint_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    log_table: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    feature_weights: Option<PyReadonlyArray1<'py, f64>>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let layout = layout(offsets)?;
    let (codes, log_table) = (codes.as_array(), log_table.as_array());
    let class_log_prior = class_log_prior.as_slice()?;
    let weights = match &feature_weights {
        Some(w) => Some(w.as_slice()?),
        None => None,
    };
    let joint = run(py, n_jobs, || {
        scoring::joint_log_likelihood(codes, log_table, class_log_prior, weights, &layout)
    })?;
    Ok(joint.into_pyarray(py))
}

/// Row-wise log-softmax of joint log-likelihoods.
#[pyfunction]
fn log_posterior<'py>(
    py: Python<'py>,
    joint: PyReadonlyArray2<'py, f64>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let joint = joint.as_array();
    let out = run(py, n_jobs, || scoring::log_posterior(joint))?;
    Ok(out.into_pyarray(py))
}

/// Factorises integer columns `(F, S)`: `(codes (F, S), categories (flat), offsets)`.
#[pyfunction]
#[pyo3(signature = (values, missing, n_jobs))]
#[allow(clippy::type_complexity)]
fn factorize_integers<'py>(
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
fn encode_integers<'py>(
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

/// A row-major F x F mask of capped (parent, child) orientations.
fn capped_mask<'a>(
    capped: &'a PyReadonlyArray2<'_, bool>,
    n_features: usize,
) -> PyResult<&'a [bool]> {
    let mask = capped.as_slice()?;
    if capped.as_array().dim() != (n_features, n_features) {
        return Err(PyValueError::new_err(
            "capped mask must be (n_features, n_features)",
        ));
    }
    Ok(mask)
}

/// AODE pair tables `(indptr, indices, counts)`; pairs capped in both orientations are left empty.
#[pyfunction]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn count_pairs<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_classes: usize,
    capped: PyReadonlyArray2<'py, bool>,
    n_jobs: usize,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i32>>,
    Array2Py<'py>,
)> {
    let layout = layout(offsets)?;
    let f = layout.n_features();
    let mask = capped_mask(&capped, f)?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let tables = run(py, n_jobs, || {
        pair_counts::count_pairs(codes, labels, weights, &layout, n_classes, |a, b| {
            !(mask[a * f + b] && mask[b * f + a])
        })
    })?;
    Ok((
        tables.indptr.into_pyarray(py),
        tables.indices.into_pyarray(py),
        tables.counts.into_pyarray(py),
    ))
}

/// Child conditionals of every ordered pair: `(concentration, pooled_concentration,
/// log_evidence, n_iter, converged, cell_log_prob, unseen_log_prob)`.
#[pyfunction]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn fit_aode_children<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    counts: PyReadonlyArray2<'py, f64>,
    category_counts: PyReadonlyArray2<'py, f64>,
    child_mean: PyReadonlyArray1<'py, f64>,
    capped: PyReadonlyArray2<'py, bool>,
    offsets: Vec<usize>,
    smoothing: &str,
    min_count: f64,
    min_concentration: f64,
    max_concentration: f64,
    n_jobs: usize,
) -> PyResult<(
    Bound<'py, PyArray3<f64>>,
    Array2Py<'py>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<i64>>,
    Bound<'py, PyArray3<bool>>,
    Bound<'py, PyArray3<f64>>,
    Array2Py<'py>,
)> {
    let smoothing = match smoothing {
        "laplace" => ChildSmoothing::Laplace,
        "pooled" => ChildSmoothing::HebPooled,
        "two-level" => ChildSmoothing::HebTwoLevel,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown child smoothing {other:?}: expected 'laplace', 'pooled' or 'two-level'"
            )))
        }
    };
    let layout = layout(offsets)?;
    let settings = AodeSettings {
        smoothing,
        min_count,
        solver: SolverSettings::new(min_concentration, max_concentration).map_err(to_py_err)?,
    };
    let mask = capped_mask(&capped, layout.n_features())?;
    let tables = PairTablesView {
        indptr: indptr.as_slice()?,
        indices: indices.as_slice()?,
        counts: counts.as_array(),
    };
    let category_counts = category_counts.as_array();
    let child_mean = child_mean.as_slice()?;
    let fit = run(py, n_jobs, || {
        aode::fit_children(
            tables,
            category_counts,
            child_mean,
            mask,
            &layout,
            &settings,
        )
    })?;
    Ok((
        fit.concentration.into_pyarray(py),
        fit.pooled_concentration.into_pyarray(py),
        fit.log_evidence.into_pyarray(py),
        fit.n_iter.into_pyarray(py),
        fit.converged.into_pyarray(py),
        fit.cell_log_prob.into_pyarray(py),
        fit.unseen_log_prob.into_pyarray(py),
    ))
}

/// AODE joint log-likelihood `(S, C)` of feature-major codes `(F, S)` (SPEC eq. 7).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn aode_joint_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    counts: PyReadonlyArray2<'py, f64>,
    cell_log_prob: PyReadonlyArray2<'py, f64>,
    unseen_log_prob: PyReadonlyArray2<'py, f64>,
    log_child_mean: PyReadonlyArray1<'py, f64>,
    capped: PyReadonlyArray2<'py, bool>,
    parent_log_prob: PyReadonlyArray2<'py, f64>,
    parent_count: PyReadonlyArray1<'py, f64>,
    min_parent_count: f64,
    marginal_log_prob: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let layout = layout(offsets)?;
    let model = AodeModel {
        pair_tables: PairTablesView {
            indptr: indptr.as_slice()?,
            indices: indices.as_slice()?,
            counts: counts.as_array(),
        },
        cell_log_prob: cell_log_prob.as_array(),
        unseen_log_prob: unseen_log_prob.as_array(),
        log_child_mean: log_child_mean.as_slice()?,
        capped: capped_mask(&capped, layout.n_features())?,
        parent_log_prob: parent_log_prob.as_array(),
        parent_count: parent_count.as_slice()?,
        min_parent_count,
        marginal_log_prob: marginal_log_prob.as_array(),
        class_log_prior: class_log_prior.as_slice()?,
    };
    let codes = codes.as_array();
    let joint = run(py, n_jobs, || {
        aode::joint_log_likelihood(codes, &model, &layout)
    })?;
    Ok(joint.into_pyarray(py))
}

/// Plug-in mutual information (nats) of every feature with the class, length F.
#[pyfunction]
fn mutual_information<'py>(
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

/// Group counts `(G, K)` after a batch of rows with per-group forgetting.
#[pyfunction]
fn absorb_group_rows<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    learning_rate: f64,
) -> PyResult<Array2Py<'py>> {
    let (counts, groups) = (counts.as_array(), groups.as_array());
    let (labels, weights) = (labels.as_array(), weights.as_array());
    let out = py
        .detach(|| dirichlet_groups::absorb_rows(counts, groups, labels, weights, learning_rate))
        .map_err(to_py_err)?;
    Ok(out.into_pyarray(py))
}

/// Minka's (m, s) fixed point on group counts: `(prior, log_evidence, n_iter, converged)`.
#[pyfunction]
fn fit_dirichlet_prior<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    prior: PyReadonlyArray1<'py, f64>,
    max_iter: usize,
    tol: f64,
    n_jobs: usize,
) -> PyResult<(Array1Py<'py>, f64, usize, bool)> {
    let counts = counts.as_array();
    let prior = prior.as_slice()?;
    let fit = run(py, n_jobs, || {
        dirichlet_groups::fit_dirichlet_prior(counts, prior, max_iter, tol)
    })?;
    Ok((
        fit.prior.into_pyarray(py),
        fit.log_evidence,
        fit.n_iter,
        fit.converged,
    ))
}

/// The compiled core of hebnb.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(factorize_integers, m)?)?;
    m.add_function(wrap_pyfunction!(encode_integers, m)?)?;
    m.add_function(wrap_pyfunction!(count_categories, m)?)?;
    m.add_function(wrap_pyfunction!(prior_mean, m)?)?;
    m.add_function(wrap_pyfunction!(fit_concentrations, m)?)?;
    m.add_function(wrap_pyfunction!(log_probability_table, m)?)?;
    m.add_function(wrap_pyfunction!(joint_log_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(log_posterior, m)?)?;
    m.add_function(wrap_pyfunction!(count_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aode_children, m)?)?;
    m.add_function(wrap_pyfunction!(fit_parent_concentrations, m)?)?;
    m.add_function(wrap_pyfunction!(aode_joint_log_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(mutual_information, m)?)?;
    m.add_function(wrap_pyfunction!(absorb_group_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fit_dirichlet_prior, m)?)?;
    Ok(())
}
