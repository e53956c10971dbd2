//! Bindings of the empirical-Bayes Dirichlet group classifier's kernels.

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::{run, Array1Py, Array2Py};
use crate::dirichlet_groups;

/// Group counts `(G, K)` after a batch of rows with per-group forgetting.
#[pyfunction]
pub(super) fn absorb_group_rows<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    groups: PyReadonlyArray1<'py, i64>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    learning_rate: f64,
) -> PyResult<Array2Py<'py>> {
    let (counts, groups) = (counts.as_array(), groups.as_array());
    let (labels, weights) = (labels.as_array(), weights.as_array());
    let out = run(py, 1, || {
        dirichlet_groups::absorb_rows(counts, groups, labels, weights, learning_rate)
    })?;
    Ok(out.into_pyarray(py))
}

/// Minka's (m, s) fixed point on group counts: `(prior, log_evidence, n_iter, converged)`.
#[pyfunction]
pub(super) fn fit_dirichlet_prior<'py>(
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

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(absorb_group_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fit_dirichlet_prior, m)?)?;
    Ok(())
}
