//! Bindings of the discriminative weight fits: objective and L-BFGS in one call
//! (src/weight_fit.rs).

use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{layout, matrix, run, Array1Py};
use crate::lbfgs::{LbfgsResult, LbfgsSettings};
use crate::{cell_numbers, shared_rows, two_class_weight_fit, weight_fit};

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

/// The optimiser's inputs of the weight fits, borrowed from the arrays Python passed, and
/// its settings `(gradient_tolerance, max_iter, memory)`.
fn weight_fit_inputs<'a>(
    start: &'a PyReadonlyArray1<'_, f64>,
    precision: &'a PyReadonlyArray1<'_, f64>,
    inverse_curvature: &'a PyReadonlyArray1<'_, f64>,
    (gradient_tolerance, max_iter, memory): (f64, usize, usize),
) -> PyResult<weight_fit::WeightFit<'a>> {
    Ok(weight_fit::WeightFit {
        start: start.as_slice()?,
        precision: precision.as_slice()?,
        inverse_curvature: inverse_curvature.as_slice()?,
        settings: LbfgsSettings {
            gradient_tolerance,
            max_iter,
            memory,
        },
    })
}

/// Runs a weight fit on `n_jobs` threads, the result as Python's tuple.
fn fitted<'py>(
    py: Python<'py>,
    n_jobs: usize,
    fit: impl FnOnce() -> crate::error::Result<LbfgsResult> + Send,
) -> PyResult<FitPy<'py>> {
    let result = run(py, n_jobs, fit)?;
    Ok(fit_to_py(py, result))
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
    let settings = (gradient_tolerance, max_iter, memory);
    let fit = weight_fit_inputs(&start, &precision, &inverse_curvature, settings)?;
    fitted(py, n_jobs, || {
        weight_fit::fit_naive_bayes_weights(
            codes,
            labels,
            sample_weights,
            tables,
            cell_weights,
            fit,
        )
    })
}

/// The weights `[a, v, b, d]` of a weighted AODE (src/weight_fit.rs, `fit_aode_weights`):
/// `parent_terms` (S, P, C), `row_features` (S, Q) with one weight per class each (None:
/// Q = 0), the cells `cells` (K, S) with `column_starts` and `values` (cells, C) (K = 0:
/// super-parent weights only); penalty and L-BFGS as in `fit_naive_bayes_weights`.
#[pyfunction]
#[pyo3(signature = (parent_terms, cells, column_starts, values, labels, sample_weights, class_log_prior, /, *, start, precision, inverse_curvature, gradient_tolerance, max_iter, memory, n_jobs, row_features=None))]
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
    row_features: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<FitPy<'py>> {
    let no_features = numpy::ndarray::Array2::<f64>::zeros((0, 0));
    let terms = weight_fit::AodeTerms {
        parent_terms: parent_terms.as_array(),
        row_features: row_features
            .as_ref()
            .map_or_else(|| no_features.view(), |features| features.as_array()),
        cells: weight_fit::CellTerms {
            cells: cells.as_array(),
            values: values.as_array(),
            column_starts: &column_starts,
        },
        class_log_prior: class_log_prior.as_slice()?,
    };
    let (labels, sample_weights) = (labels.as_array(), sample_weights.as_array());
    let settings = (gradient_tolerance, max_iter, memory);
    let fit = weight_fit_inputs(&start, &precision, &inverse_curvature, settings)?;
    fitted(py, n_jobs, || {
        weight_fit::fit_aode_weights(terms, labels, sample_weights, fit)
    })
}

/// The weights `[a_0, a_1, v, beta, u]` of a two-class weighted AODE fitted as one weight
/// per cell (src/two_class_weight_fit.rs): `parent_differences` (S, P), `row_features`
/// (S, Q) with one weight each (None: Q = 0), the cells `cells` (K, S) with
/// `column_starts` and `cell_scales`; penalty and L-BFGS as in `fit_aode_weights`.
#[pyfunction]
#[pyo3(signature = (parent_differences, cells, column_starts, cell_scales, labels, sample_weights, class_log_prior, /, *, start, precision, inverse_curvature, gradient_tolerance, max_iter, memory, n_jobs, row_features=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_two_class_aode_weights<'py>(
    py: Python<'py>,
    parent_differences: PyReadonlyArray2<'py, f64>,
    cells: PyReadonlyArray2<'py, i64>,
    column_starts: Vec<usize>,
    cell_scales: PyReadonlyArray1<'py, f64>,
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
    row_features: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<FitPy<'py>> {
    let no_features = numpy::ndarray::Array2::<f64>::zeros((0, 0));
    let terms = two_class_weight_fit::TwoClassTerms {
        parent_differences: parent_differences.as_array(),
        row_features: row_features
            .as_ref()
            .map_or_else(|| no_features.view(), |features| features.as_array()),
        cells: cells.as_array(),
        column_starts: &column_starts,
        cell_scales: cell_scales.as_slice()?,
        class_log_prior: class_log_prior.as_slice()?,
    };
    let (labels, sample_weights) = (labels.as_array(), sample_weights.as_array());
    let settings = (gradient_tolerance, max_iter, memory);
    let fit = weight_fit_inputs(&start, &precision, &inverse_curvature, settings)?;
    fitted(py, n_jobs, || {
        two_class_weight_fit::fit_two_class_aode_weights(terms, labels, sample_weights, fit)
    })
}

/// The AODE cells (S, K) grouped by the rows that use them (src/shared_rows.rs):
/// `{"group", "first_cell", "cells" (K, S), "column_starts"}`. Any strides; a column-major
/// matrix (each column contiguous) is read fastest.
#[pyfunction]
#[pyo3(signature = (cells, column_starts, /, *, n_jobs))]
pub(super) fn group_cells_by_rows<'py>(
    py: Python<'py>,
    cells: PyReadonlyArray2<'py, i64>,
    column_starts: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let view = cells.as_array();
    let (n_rows, n_columns) = view.dim();
    let groups = run(py, n_jobs, || {
        shared_rows::group_cells_by_rows(view, &column_starts)
    })?;
    let out = PyDict::new(py);
    out.set_item("group", groups.group.into_pyarray(py))?;
    out.set_item("first_cell", groups.first_cell.into_pyarray(py))?;
    out.set_item("cells", matrix(py, (n_columns, n_rows), groups.cells)?)?;
    out.set_item("column_starts", groups.column_starts)?;
    Ok(out)
}

/// The cells of each group merged into one weight (src/shared_rows.rs):
/// `{"values", "precision"}` (groups, C) and `"back"` (cells, C).
#[pyfunction]
#[pyo3(signature = (group, first_cell, values, precision, /))]
pub(super) fn merge_cells_sharing_rows<'py>(
    py: Python<'py>,
    group: PyReadonlyArray1<'py, i64>,
    first_cell: PyReadonlyArray1<'py, i64>,
    values: PyReadonlyArray2<'py, f64>,
    precision: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let (group, first_cell) = (group.as_slice()?, first_cell.as_slice()?);
    let (values, precision) = (values.as_array(), precision.as_array());
    let (n_groups, (n_cells, n_classes)) = (first_cell.len(), values.dim());
    let merged = run(py, 1, || {
        shared_rows::merge_cells_sharing_rows(group, first_cell, values, precision)
    })?;
    let out = PyDict::new(py);
    out.set_item("values", matrix(py, (n_groups, n_classes), merged.values)?)?;
    out.set_item(
        "precision",
        matrix(py, (n_groups, n_classes), merged.precision)?,
    )?;
    out.set_item("back", matrix(py, (n_cells, n_classes), merged.back)?)?;
    Ok(out)
}

/// `sum_i row_values[i, c]` over the rows that use each AODE cell of `cells` (K, S)
/// (src/weight_fit.rs, `cell_row_sums`): shape (cells, C).
#[pyfunction]
#[pyo3(signature = (cells, column_starts, row_values, /, *, n_jobs))]
pub(super) fn cell_row_sums<'py>(
    py: Python<'py>,
    cells: PyReadonlyArray2<'py, i64>,
    column_starts: Vec<usize>,
    row_values: PyReadonlyArray2<'py, f64>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (cells, row_values) = (cells.as_array(), row_values.as_array());
    let n_classes = row_values.ncols();
    let n_cells = column_starts.last().copied().unwrap_or(0);
    let sums = run(py, n_jobs, || {
        weight_fit::cell_row_sums(cells, &column_starts, row_values)
    })?;
    matrix(py, (n_cells, n_classes), sums)
}

/// Which cell of each super-parent's tables each row of `codes` (F, S) uses, (P F, S)
/// (src/cell_numbers.rs, `cell_keys`).
#[pyfunction]
#[pyo3(signature = (codes, parents, cardinality, /, *, n_jobs))]
pub(super) fn aode_cell_keys<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    parents: Vec<usize>,
    cardinality: Vec<usize>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let codes = codes.as_array();
    let shape = (parents.len() * codes.nrows(), codes.ncols());
    let keys = run(py, n_jobs, || {
        cell_numbers::cell_keys(codes, &parents, &cardinality)
    })?;
    matrix(py, shape, keys)
}

/// The AODE cell weights' cells numbered from their keys (K, S) (src/cell_numbers.rs):
/// `{"cells" (K, S), "column_starts", "keys", "first_row"}`.
#[pyfunction]
#[pyo3(signature = (keys, /, *, n_jobs))]
pub(super) fn number_cells<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray2<'py, i64>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let view = keys.as_array();
    let shape = view.dim();
    let numbered = run(py, n_jobs, || cell_numbers::number_cells(view))?;
    let out = PyDict::new(py);
    out.set_item("cells", matrix(py, shape, numbered.cells)?)?;
    out.set_item("column_starts", numbered.column_starts)?;
    out.set_item("keys", numbered.keys.into_pyarray(py))?;
    out.set_item("first_row", numbered.first_row.into_pyarray(py))?;
    Ok(out)
}

/// The AODE cell numbering of a fitted model ready for looking keys up
/// (src/cell_numbers.rs, `CellIndex`): built once from every column's sorted cell keys
/// and where each column starts, then read by [`seen_cells`] and by `aode_parent_terms`'
/// weighted sums, from any thread. Not pickled: a model builds it again from its keys.
#[pyclass(module = "hebnb._core", frozen)]
pub(super) struct CellNumbering(pub(super) cell_numbers::CellIndex);

#[pymethods]
impl CellNumbering {
    #[new]
    #[pyo3(signature = (cell_keys, column_starts, /))]
    fn new(
        py: Python<'_>,
        cell_keys: PyReadonlyArray1<'_, i64>,
        column_starts: Vec<usize>,
    ) -> PyResult<Self> {
        let cell_keys = cell_keys.as_slice()?;
        let index = run(py, 1, || {
            cell_numbers::CellIndex::new(cell_keys, &column_starts)
        })?;
        Ok(Self(index))
    }

    /// The number of columns.
    #[getter]
    fn n_columns(&self) -> usize {
        self.0.n_columns()
    }

    /// The number of cells, all columns together.
    #[getter]
    fn n_cells(&self) -> usize {
        self.0.n_cells()
    }

    /// Where each column's cells start in the numbering, and the end.
    #[getter]
    fn column_starts(&self) -> Vec<usize> {
        self.0.column_starts().to_vec()
    }

    /// The cell of every row in each of `columns`, (s, G): `keys` (K, s) every column's
    /// key of every row; -1 for a negative key or one that is no cell.
    #[pyo3(signature = (keys, columns, /, *, n_jobs))]
    fn cells<'py>(
        &self,
        py: Python<'py>,
        keys: PyReadonlyArray2<'py, i64>,
        columns: Vec<usize>,
        n_jobs: usize,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let keys = keys.as_array();
        let n_rows = keys.ncols();
        let cells = run(py, n_jobs, || self.0.cells_of(keys, &columns))?;
        matrix(py, (n_rows, columns.len()), cells)
    }
}

/// Every use of a numbered AODE cell by a batch of rows (src/cell_numbers.rs,
/// `seen_cells`): `{"row", "cell", "value" (uses, C)}`, column by column, rows in order.
#[pyfunction]
#[pyo3(signature = (keys, numbering, qualifies, values, /, *, n_jobs))]
pub(super) fn seen_cells<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray2<'py, i64>,
    numbering: &Bound<'py, CellNumbering>,
    qualifies: PyReadonlyArray2<'py, bool>,
    values: PyReadonlyArray3<'py, f64>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (keys, qualifies, values) = (keys.as_array(), qualifies.as_array(), values.as_array());
    let index = &numbering.get().0;
    let n_classes = values.dim().2;
    let seen = run(py, n_jobs, || {
        cell_numbers::seen_cells(keys, index, qualifies, values)
    })?;
    let out = PyDict::new(py);
    let n_uses = seen.row.len();
    out.set_item("row", seen.row.into_pyarray(py))?;
    out.set_item("cell", seen.cell.into_pyarray(py))?;
    out.set_item("value", matrix(py, (n_uses, n_classes), seen.value)?)?;
    Ok(out)
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_naive_bayes_weights, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aode_weights, m)?)?;
    m.add_function(wrap_pyfunction!(fit_two_class_aode_weights, m)?)?;
    m.add_function(wrap_pyfunction!(group_cells_by_rows, m)?)?;
    m.add_function(wrap_pyfunction!(aode_cell_keys, m)?)?;
    m.add_function(wrap_pyfunction!(number_cells, m)?)?;
    m.add_function(wrap_pyfunction!(seen_cells, m)?)?;
    m.add_class::<CellNumbering>()?;
    m.add_function(wrap_pyfunction!(cell_row_sums, m)?)?;
    m.add_function(wrap_pyfunction!(merge_cells_sharing_rows, m)?)?;
    Ok(())
}
