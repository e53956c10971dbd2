//! Bindings of the AODE kernels: pair tables, child and parent concentrations, scoring.

use numpy::{IntoPyArray, PyArray1, PyArray3, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{layout, run, to_py_err, Array2Py, Solutions1Py};
use crate::aode::{self, AodeModel, AodeSettings, ChildSmoothing};
use crate::pair_counts::{self, PairTablesView};
use crate::parent_prior;
use crate::solver::SolverSettings;

/// `m_i` of each super-parent's empirical-Bayes class distribution, from the `(C, sum K_f)`
/// counts and the `(F, C)` class means: `(concentration, log_evidence, n_iter, converged)`,
/// each of shape `(F,)`.
#[pyfunction]
pub(super) fn fit_parent_concentrations<'py>(
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
pub(super) fn count_pairs<'py>(
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
pub(super) fn fit_aode_children<'py>(
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
pub(super) fn aode_joint_log_likelihood<'py>(
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

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_parent_concentrations, m)?)?;
    m.add_function(wrap_pyfunction!(count_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aode_children, m)?)?;
    m.add_function(wrap_pyfunction!(aode_joint_log_likelihood, m)?)?;
    Ok(())
}
