//! Binding of prediction in one crossing: the joint log-likelihood of coded rows
//! (SPEC eq. 1), its normalisation into log-posteriors and, for probabilities, the
//! exponential, without returning to Python in between. A handful of rows is scored on
//! the calling thread ([`super::run_scoring`]).

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::naive_bayes::ScoringInputs;
use super::{run_scoring, Array2Py};
use crate::scoring;

/// Posterior probabilities (or log-probabilities with `log`) `(S, C)` of coded rows
/// `(F, S)` under a `(sum K_f, C)` log-probability table.
#[pyfunction]
#[pyo3(signature = (codes, log_table, class_log_prior, feature_weights, offsets, *, log, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn posterior<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    log_table: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    feature_weights: Option<PyReadonlyArray1<'py, f64>>,
    offsets: Vec<usize>,
    log: bool,
    n_jobs: usize,
) -> PyResult<Array2Py<'py>> {
    let inputs = ScoringInputs::new(
        &codes,
        &log_table,
        &class_log_prior,
        &feature_weights,
        offsets,
    )?;
    let work = || {
        let joint = inputs.joint_log_likelihood()?;
        scoring::posterior(joint.view(), log)
    };
    let out = run_scoring(py, n_jobs, inputs.size(), work)?;
    Ok(out.into_pyarray(py))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(posterior, m)?)?;
    Ok(())
}
