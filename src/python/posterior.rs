//! Binding of prediction in one crossing: the joint log-likelihood of coded rows
//! (SPEC eq. 1), its normalisation into log-posteriors and, for probabilities, the
//! exponential, without returning to Python in between.
//!
//! A handful of rows (at most one scoring chunk) is scored on the calling thread: handing
//! a tiny job to a pool thread and waiting for it costs more than the job (a context
//! switch, far more on a loaded machine). The kernels then see one chunk and run it
//! sequentially, in the same order of operations as in the pool, so the result is the
//! same bit for bit.

use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::naive_bayes::ScoringInputs;
use super::{run, to_py_err, Array2Py};
use crate::scoring;

/// Most rows scored on the calling thread (one chunk of the scoring kernels).
const INLINE_ROWS: usize = 2048;

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
    let out = if inputs.n_rows() <= INLINE_ROWS {
        work().map_err(to_py_err)?
    } else {
        run(py, n_jobs, work)?
    };
    Ok(out.into_pyarray(py))
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(posterior, m)?)?;
    Ok(())
}
