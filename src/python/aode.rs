//! Bindings of the AODE kernels: pair tables (counting, merging), the planned memory,
//! the one-call fit and the scorer. Tables travel as dicts of numpy arrays.

use numpy::{IntoPyArray, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::discriminative::CellNumbering;
use super::{layout, matrix, row_major, run, to_py_err};
use crate::aode::{self, AodeCounts, AodeParams, ChildSmoothing, ParentSmoothing, Structure};
use crate::layout::FeatureLayout;
use crate::pair_counts::{self, CellCounts, CellCountsView, PairTables, PairTablesView};
use crate::solver::SolverSettings;

/// The two masks of a [`Structure`]: capped `(F, F)` and super-parents `(F,)`.
fn structure<'a>(
    capped: &'a PyReadonlyArray2<'_, bool>,
    parents: &'a PyReadonlyArray1<'_, bool>,
    n_features: usize,
) -> PyResult<Structure<'a>> {
    if capped.as_array().dim() != (n_features, n_features) {
        return Err(PyValueError::new_err(
            "capped mask must be (n_features, n_features)",
        ));
    }
    let s = Structure {
        capped: row_major(capped, "capped mask")?,
        parents: parents.as_slice()?,
    };
    s.check(n_features).map_err(to_py_err)?;
    Ok(s)
}

/// An item of a dict, or KeyError naming it.
fn item<'py, T: FromPyObjectOwned<'py>>(dict: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    dict.get_item(key)?
        .ok_or_else(|| PyKeyError::new_err(format!("missing {key:?}")))?
        .extract::<T>()
        .map_err(|error| {
            // named: "type mismatch" alone does not say which of a dozen arrays it was
            let error: PyErr = error.into();
            PyTypeError::new_err(format!("{key:?}: {}", error.value(dict.py())))
        })
}

/// The class counts of a pair-table dict: `uint32` (whole counts) or `float64`.
enum CountArray<'py> {
    Whole(PyReadonlyArray2<'py, u32>),
    Float(PyReadonlyArray2<'py, f64>),
}

/// The arrays of a pair-table dict (`pairs`, `indptr`, `indices`, `counts`).
struct PairArrays<'py> {
    pairs: PyReadonlyArray2<'py, i32>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    counts: CountArray<'py>,
}

impl<'py> PairArrays<'py> {
    fn from_dict(dict: &Bound<'py, PyDict>) -> PyResult<Self> {
        let counts = dict
            .get_item("counts")?
            .ok_or_else(|| PyKeyError::new_err("missing \"counts\""))?;
        let counts = if let Ok(whole) = counts.extract::<PyReadonlyArray2<'py, u32>>() {
            CountArray::Whole(whole)
        } else if let Ok(float) = counts.extract::<PyReadonlyArray2<'py, f64>>() {
            CountArray::Float(float)
        } else {
            return Err(PyValueError::new_err(
                "pair table counts must be a 2-d uint32 or float64 array",
            ));
        };
        Ok(Self {
            pairs: item(dict, "pairs")?,
            indptr: item(dict, "indptr")?,
            indices: item(dict, "indices")?,
            counts,
        })
    }

    fn view(&self) -> PyResult<PairTablesView<'_>> {
        if self.pairs.as_array().ncols() != 2 {
            return Err(PyValueError::new_err(
                "pair table pairs must be (n_pairs, 2)",
            ));
        }
        Ok(PairTablesView {
            pairs: row_major(&self.pairs, "pair table pairs")?,
            indptr: self.indptr.as_slice()?,
            indices: self.indices.as_slice()?,
            counts: match &self.counts {
                CountArray::Whole(a) => CellCountsView::Whole(a.as_array()),
                CountArray::Float(a) => CellCountsView::Float(a.as_array()),
            },
        })
    }
}

fn pair_dict<'py>(py: Python<'py>, tables: PairTables) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let n_pairs = tables.pairs.len() / 2;
    out.set_item("pairs", matrix(py, (n_pairs, 2), tables.pairs)?)?;
    out.set_item("indptr", tables.indptr.into_pyarray(py))?;
    out.set_item("indices", tables.indices.into_pyarray(py))?;
    match tables.counts {
        CellCounts::Whole(counts) => out.set_item("counts", counts.into_pyarray(py))?,
        CellCounts::Float(counts) => out.set_item("counts", counts.into_pyarray(py))?,
    }
    Ok(out)
}

/// AODE pair tables `{"pairs", "indptr", "indices", "counts"}` of the pairs the structure
/// models (and only those).
#[pyfunction]
#[pyo3(signature = (codes, labels, weights, /, *, offsets, n_classes, capped, parents, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn count_pairs<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    offsets: Vec<usize>,
    n_classes: usize,
    capped: PyReadonlyArray2<'py, bool>,
    parents: PyReadonlyArray1<'py, bool>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let layout = layout(offsets)?;
    let s = structure(&capped, &parents, layout.n_features())?;
    let (codes, labels, weights) = (codes.as_array(), labels.as_array(), weights.as_array());
    let tables = run(py, n_jobs, || {
        let wanted = s.wanted_pairs()?;
        pair_counts::count_pairs(codes, labels, weights, &layout, n_classes, &wanted)
    })?;
    pair_dict(py, tables)
}

/// Stored pair tables moved onto a grown vocabulary (`new_codes[f][u]`: new code of old
/// code u), times `decay`, plus a batch's tables; the result stores the batch's pairs.
#[pyfunction]
#[pyo3(signature = (old, batch, /, *, old_offsets, offsets, new_codes, decay, n_jobs))]
#[allow(clippy::too_many_arguments)]
pub(super) fn merge_pair_tables<'py>(
    py: Python<'py>,
    old: Bound<'py, PyDict>,
    batch: Bound<'py, PyDict>,
    old_offsets: Vec<usize>,
    offsets: Vec<usize>,
    new_codes: Vec<Vec<usize>>,
    decay: f64,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (old_layout, layout) = (layout(old_offsets)?, layout(offsets)?);
    let (old, batch) = (PairArrays::from_dict(&old)?, PairArrays::from_dict(&batch)?);
    let (old, batch) = (old.view()?, batch.view()?);
    let n_classes = batch.counts.ncols();
    let tables = run(py, n_jobs, || {
        pair_counts::merge_pair_tables(
            old,
            &old_layout,
            batch,
            &layout,
            &new_codes,
            n_classes,
            decay,
        )
    })?;
    pair_dict(py, tables)
}

/// Upper bound of the bytes a fit will hold, by part, and their `total`.
/// `weights`: the rows' weights, which decide whether the tables hold `u32` whole
/// counts (`None`: planned as `f64`, the larger).
#[pyfunction]
#[pyo3(signature = (*, offsets, capped, parents, n_rows, n_classes, stored_cells, weights=None))]
#[allow(clippy::too_many_arguments)]
pub(super) fn aode_planned_bytes<'py>(
    py: Python<'py>,
    offsets: Vec<usize>,
    capped: PyReadonlyArray2<'py, bool>,
    parents: PyReadonlyArray1<'py, bool>,
    n_rows: usize,
    n_classes: usize,
    stored_cells: usize,
    weights: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyDict>> {
    let layout: FeatureLayout = layout(offsets)?;
    let s = structure(&capped, &parents, layout.n_features())?;
    let whole = weights.is_some_and(|w| pair_counts::whole_weights(w.as_array()));
    let planned = aode::planned_bytes(&layout, &s, n_rows, n_classes, stored_cells, whole);
    let out = PyDict::new(py);
    // as floats: the bounds may exceed 2^64 for absurd inputs
    out.set_item("pair_tables", planned.pair_tables as f64)?;
    out.set_item("child_tables", planned.child_tables as f64)?;
    out.set_item("diagnostics", planned.diagnostics as f64)?;
    out.set_item("category_tables", planned.category_tables as f64)?;
    out.set_item("scoring", planned.scoring as f64)?;
    out.set_item("total", planned.total() as f64)?;
    Ok(out)
}

/// The parent term's smoothing by name.
fn parse_parent_smoothing(name: &str) -> PyResult<ParentSmoothing> {
    match name {
        "laplace" => Ok(ParentSmoothing::Laplace),
        "heb" => Ok(ParentSmoothing::Heb),
        other => Err(PyValueError::new_err(format!(
            "unknown parent smoothing {other:?}: expected 'laplace' or 'heb'"
        ))),
    }
}

/// The child smoothing named `name`, or ValueError.
fn child_smoothing(name: &str) -> PyResult<ChildSmoothing> {
    match name {
        "laplace" => Ok(ChildSmoothing::Laplace),
        "pooled" => Ok(ChildSmoothing::HebPooled),
        "two-level" => Ok(ChildSmoothing::HebTwoLevel),
        other => Err(PyValueError::new_err(format!(
            "unknown child smoothing {other:?}: expected 'laplace', 'pooled' or 'two-level'"
        ))),
    }
}

/// The whole AODE model from the single counts and the pair tables: a dict of every
/// scoring table and diagnostic (see `aode::AodeFit`), plus the structure it was fitted on.
#[pyfunction]
#[pyo3(signature = (
    class_count, counts, pair_tables, /, *, offsets, capped, parents, smoothing,
    parent_smoothing, min_count, concentration_bounds, class_log_prior,
    replace_class_prior, n_jobs
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_aode<'py>(
    py: Python<'py>,
    class_count: PyReadonlyArray1<'py, f64>,
    counts: PyReadonlyArray2<'py, f64>,
    pair_tables: Bound<'py, PyDict>,
    offsets: Vec<usize>,
    capped: PyReadonlyArray2<'py, bool>,
    parents: PyReadonlyArray1<'py, bool>,
    smoothing: &str,
    parent_smoothing: &str,
    min_count: f64,
    concentration_bounds: (f64, f64),
    class_log_prior: Vec<f64>,
    replace_class_prior: bool,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let smoothing = child_smoothing(smoothing)?;
    let parent_smoothing = parse_parent_smoothing(parent_smoothing)?;
    let layout = layout(offsets)?;
    let s = structure(&capped, &parents, layout.n_features())?;
    let (low, high) = concentration_bounds;
    let params = AodeParams {
        smoothing,
        parent_smoothing,
        min_count,
        solver: SolverSettings::new(low, high).map_err(to_py_err)?,
        class_log_prior,
        replace_class_prior,
    };
    let tables = PairArrays::from_dict(&pair_tables)?;
    let tables = tables.view()?;
    let single = AodeCounts {
        class_count: class_count.as_slice()?,
        counts: counts.as_array(),
    };
    let fit = run(py, n_jobs, || {
        aode::fit(single, tables, &layout, &s, &params)
    })?;
    let out = PyDict::new(py);
    out.set_item("n_not_converged", fit.n_not_converged())?;
    out.set_item("concentration", fit.concentration.into_pyarray(py))?;
    out.set_item(
        "pooled_concentration",
        fit.pooled_concentration.into_pyarray(py),
    )?;
    out.set_item("n_iter", fit.n_iter.into_pyarray(py))?;
    out.set_item("converged", fit.converged.into_pyarray(py))?;
    out.set_item("dense_log_prob", fit.child_tables.dense.into_pyarray(py))?;
    out.set_item("sparse_rows", fit.child_tables.sparse.into_pyarray(py))?;
    out.set_item("child_mean", fit.child_mean.into_pyarray(py))?;
    out.set_item("log_child_mean", fit.log_child_mean.into_pyarray(py))?;
    out.set_item(
        "marginal_concentration",
        fit.marginal_concentration.into_pyarray(py),
    )?;
    out.set_item("marginal_log_prob", fit.marginal_log_prob.into_pyarray(py))?;
    out.set_item(
        "parent_concentration",
        fit.parent_concentration.into_pyarray(py),
    )?;
    out.set_item("parent_log_prob", fit.parent_log_prob.into_pyarray(py))?;
    out.set_item("parent_count", fit.parent_count.into_pyarray(py))?;
    out.set_item("class_log_prior", fit.class_log_prior.into_pyarray(py))?;
    // the caller's masks themselves, not copies (the capped mask is F x F)
    out.set_item("capped", capped.as_any())?;
    out.set_item("parents", parents.as_any())?;
    Ok(out)
}

/// Log evidence `(C, n_parents, F)` of every fitted AODE child at the concentrations `fit_aode`
/// returned (see `aode::log_evidence`), from the same counts and pair tables.
#[pyfunction]
#[pyo3(signature = (
    counts, pair_tables, /, *, offsets, capped, parents, smoothing, concentration,
    pooled_concentration, n_jobs
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn aode_log_evidence<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    pair_tables: Bound<'py, PyDict>,
    offsets: Vec<usize>,
    capped: PyReadonlyArray2<'py, bool>,
    parents: PyReadonlyArray1<'py, bool>,
    smoothing: &str,
    concentration: PyReadonlyArray3<'py, f64>,
    pooled_concentration: PyReadonlyArray2<'py, f64>,
    n_jobs: usize,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    let smoothing = child_smoothing(smoothing)?;
    let layout = layout(offsets)?;
    let s = structure(&capped, &parents, layout.n_features())?;
    let tables = PairArrays::from_dict(&pair_tables)?;
    let tables = tables.view()?;
    let (counts, concentration, pooled) = (
        counts.as_array(),
        concentration.as_array(),
        pooled_concentration.as_array(),
    );
    let evidence = run(py, n_jobs, || {
        aode::log_evidence(
            counts,
            tables,
            &layout,
            &s,
            smoothing,
            (concentration, pooled),
        )
    })?;
    Ok(evidence.into_pyarray(py))
}

/// The scorer's arrays: the dict `fit_aode` returned and the pair tables it was fitted on.
struct ModelArrays<'py> {
    pair_tables: PairArrays<'py>,
    dense: PyReadonlyArray1<'py, f64>,
    sparse: PyReadonlyArray2<'py, f64>,
    child_mean: PyReadonlyArray1<'py, f64>,
    log_child_mean: PyReadonlyArray1<'py, f64>,
    parent_log_prob: PyReadonlyArray2<'py, f64>,
    parent_count: PyReadonlyArray1<'py, f64>,
    marginal_log_prob: PyReadonlyArray2<'py, f64>,
    class_log_prior: PyReadonlyArray1<'py, f64>,
    capped: PyReadonlyArray2<'py, bool>,
    parents: PyReadonlyArray1<'py, bool>,
}

impl<'py> ModelArrays<'py> {
    fn from_dicts(model: &Bound<'py, PyDict>, pair_tables: &Bound<'py, PyDict>) -> PyResult<Self> {
        Ok(Self {
            pair_tables: PairArrays::from_dict(pair_tables)?,
            dense: item(model, "dense_log_prob")?,
            sparse: item(model, "sparse_rows")?,
            child_mean: item(model, "child_mean")?,
            log_child_mean: item(model, "log_child_mean")?,
            parent_log_prob: item(model, "parent_log_prob")?,
            parent_count: item(model, "parent_count")?,
            marginal_log_prob: item(model, "marginal_log_prob")?,
            class_log_prior: item(model, "class_log_prior")?,
            capped: item(model, "capped")?,
            parents: item(model, "parents")?,
        })
    }

    /// The scorer's view; `pair_cells_checked` as [`aode::AodeModel::pair_cells_checked`].
    fn model(
        &self,
        layout: &FeatureLayout,
        min_parent_count: f64,
        pair_cells_checked: bool,
    ) -> PyResult<aode::AodeModel<'_>> {
        Ok(aode::AodeModel {
            pair_tables: self.pair_tables.view()?,
            pair_cells_checked,
            dense: self.dense.as_slice()?,
            sparse: self.sparse.as_array(),
            child_mean: self.child_mean.as_slice()?,
            log_child_mean: self.log_child_mean.as_slice()?,
            structure: structure(&self.capped, &self.parents, layout.n_features())?,
            parent_log_prob: self.parent_log_prob.as_array(),
            parent_count: self.parent_count.as_slice()?,
            min_parent_count,
            marginal_log_prob: self.marginal_log_prob.as_array(),
            class_log_prior: self.class_log_prior.as_slice()?,
        })
    }
}

/// Checks AODE pair tables (as `count_pairs` returns them) against the feature layout and
/// the number of classes, every cell included: what a scorer told `pair_cells_checked`
/// relies on. Raises ValueError naming what is wrong.
#[pyfunction]
#[pyo3(signature = (pair_tables, /, *, offsets, n_classes))]
pub(super) fn check_aode_pair_tables(
    pair_tables: Bound<'_, PyDict>,
    offsets: Vec<usize>,
    n_classes: usize,
) -> PyResult<()> {
    let layout = layout(offsets)?;
    let tables = PairArrays::from_dict(&pair_tables)?;
    tables.view()?.check(&layout, n_classes).map_err(to_py_err)
}

/// AODE joint log-likelihood `(S, C)` of feature-major codes `(F, S)` (SPEC eq. 7), from
/// the dict `fit_aode` returned and the pair tables it was fitted on. With
/// `pair_cells_checked` the caller vouches that `fit_aode` or `check_aode_pair_tables`
/// accepted those tables and that they have not changed since: only their shape is
/// checked, not every cell (see `aode::AodeModel::pair_cells_checked`).
#[pyfunction]
#[pyo3(signature = (
    codes, model, pair_tables, /, *, offsets, min_parent_count, n_jobs, pair_cells_checked=false
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn aode_joint_log_likelihood<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    model: Bound<'py, PyDict>,
    pair_tables: Bound<'py, PyDict>,
    offsets: Vec<usize>,
    min_parent_count: f64,
    n_jobs: usize,
    pair_cells_checked: bool,
) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
    let layout = layout(offsets)?;
    let arrays = ModelArrays::from_dicts(&model, &pair_tables)?;
    let model = arrays.model(&layout, min_parent_count, pair_cells_checked)?;
    let codes = codes.as_array();
    let joint = run(py, n_jobs, || {
        aode::joint_log_likelihood(codes, &model, &layout)
    })?;
    Ok(joint.into_pyarray(py))
}

/// The arrays of a `left_out` dict of `aode_parent_terms` and the fit's concentrations.
struct LeftOutArrays<'py> {
    labels: PyReadonlyArray1<'py, i64>,
    weights: PyReadonlyArray1<'py, f64>,
    counts: PyReadonlyArray2<'py, f64>,
    class_count: PyReadonlyArray1<'py, f64>,
    concentration: PyReadonlyArray3<'py, f64>,
    pooled_concentration: PyReadonlyArray2<'py, f64>,
    marginal_concentration: PyReadonlyArray2<'py, f64>,
    parent_concentration: PyReadonlyArray1<'py, f64>,
    parent_smoothing: ParentSmoothing,
    replace_class_prior: bool,
}

impl<'py> LeftOutArrays<'py> {
    fn from_dicts(left_out: &Bound<'py, PyDict>, model: &Bound<'py, PyDict>) -> PyResult<Self> {
        let parent_smoothing: String = item(left_out, "parent_smoothing")?;
        Ok(Self {
            labels: item(left_out, "labels")?,
            weights: item(left_out, "weights")?,
            counts: item(left_out, "counts")?,
            class_count: item(left_out, "class_count")?,
            concentration: item(model, "concentration")?,
            pooled_concentration: item(model, "pooled_concentration")?,
            marginal_concentration: item(model, "marginal_concentration")?,
            parent_concentration: item(model, "parent_concentration")?,
            parent_smoothing: parse_parent_smoothing(&parent_smoothing)?,
            replace_class_prior: item(left_out, "replace_class_prior")?,
        })
    }

    fn view(&self) -> PyResult<aode::LeftOut<'_>> {
        Ok(aode::LeftOut {
            labels: self.labels.as_array(),
            weights: self.weights.as_array(),
            counts: self.counts.as_array(),
            class_count: self.class_count.as_slice()?,
            concentration: self.concentration.as_array(),
            pooled_concentration: self.pooled_concentration.as_array(),
            marginal_concentration: self.marginal_concentration.as_array(),
            parent_concentration: self.parent_concentration.as_slice()?,
            parent_smoothing: self.parent_smoothing,
            replace_class_prior: self.replace_class_prior,
        })
    }
}

/// `{"terms", "qualifies", "cells", "numbered_cells", "cell_sums"}`: every super-parent's
/// term `T_i` `(S, P, C)` of feature-major codes `(F, S)`, whether it qualifies on each row
/// `(S, P)`, with `cells` the table cells of the terms `(S, P, F, C)` (else `(0, P, F,
/// C)`), with a numbering of the rows' cells (`cell_numbers` (P F, S), `cell_column_starts`,
/// `cell_first_rows`) each numbered cell's value `(cells, C)` (else `(0, C)`; without
/// `left_out` and `in_sample_terms` the terms are left zero, the rows not scored), and with
/// `cell_numbering` and `cell_weights` each row's weighted cells summed; see
/// `aode::parent_terms`. With `left_out` (`{"labels", "weights", "counts",
/// "class_count", "parent_smoothing", "replace_class_prior"}`: the rows are the training
/// rows) the terms are each row's without its own counts (`aode::LeftOut`).
/// `pair_cells_checked` as for `aode_joint_log_likelihood`.
#[pyfunction]
#[pyo3(signature = (
    codes, model, pair_tables, /, *, offsets, min_parent_count, cells, n_jobs, left_out=None,
    cell_numbers=None, cell_column_starts=None, cell_first_rows=None, in_sample_terms=true,
    cell_numbering=None, cell_weights=None, pair_cells_checked=false,
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn aode_parent_terms<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray2<'py, i32>,
    model: Bound<'py, PyDict>,
    pair_tables: Bound<'py, PyDict>,
    offsets: Vec<usize>,
    min_parent_count: f64,
    cells: bool,
    n_jobs: usize,
    left_out: Option<Bound<'py, PyDict>>,
    cell_numbers: Option<PyReadonlyArray2<'py, i64>>,
    cell_column_starts: Option<Vec<usize>>,
    cell_first_rows: Option<PyReadonlyArray1<'py, i64>>,
    in_sample_terms: bool,
    cell_numbering: Option<Bound<'py, CellNumbering>>,
    cell_weights: Option<PyReadonlyArray2<'py, f64>>,
    pair_cells_checked: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let layout = layout(offsets)?;
    let left_out = left_out
        .map(|rows| LeftOutArrays::from_dicts(&rows, &model))
        .transpose()?;
    let left_out = left_out.as_ref().map(LeftOutArrays::view).transpose()?;
    let arrays = ModelArrays::from_dicts(&model, &pair_tables)?;
    let model = arrays.model(&layout, min_parent_count, pair_cells_checked)?;
    let codes = codes.as_array();
    let weighted = match (&cell_numbering, &cell_weights) {
        (None, None) => None,
        (Some(numbering), Some(weights)) => Some((&numbering.get().0, weights.as_slice()?)),
        _ => {
            return Err(PyValueError::new_err(
                "cell_numbering and cell_weights go together",
            ))
        }
    };
    let numbered = match (&cell_numbers, &cell_column_starts, &cell_first_rows) {
        (None, None, None) => None,
        (Some(numbers), Some(starts), Some(first_rows)) => {
            Some((numbers.as_array(), starts.as_slice(), first_rows.as_array()))
        }
        _ => {
            return Err(PyValueError::new_err(
                "cell_numbers, cell_column_starts and cell_first_rows go together",
            ))
        }
    };
    if usize::from(cells) + usize::from(numbered.is_some()) + usize::from(weighted.is_some()) > 1 {
        return Err(PyValueError::new_err(
            "ask for every cell (cells=True), for the numbered ones (cell_numbers) or for \
             their weighted sums (cell_weights), not more than one",
        ));
    }
    let request = match (numbered, weighted) {
        (Some((cells, column_starts, first_row)), _) => aode::CellRequest::Numbered {
            cells,
            column_starts,
            first_row,
            in_sample_terms,
        },
        (_, Some((index, weights))) => aode::CellRequest::Weighted { index, weights },
        _ if cells => aode::CellRequest::All,
        _ => aode::CellRequest::None,
    };
    let terms = run(py, n_jobs, || {
        aode::parent_terms(codes, &model, &layout, request, left_out)
    })?;
    let out = PyDict::new(py);
    out.set_item("terms", terms.terms.into_pyarray(py))?;
    out.set_item("qualifies", terms.qualifies.into_pyarray(py))?;
    out.set_item("cells", terms.cells.into_pyarray(py))?;
    out.set_item("numbered_cells", terms.numbered_cells.into_pyarray(py))?;
    out.set_item("cell_sums", terms.cell_sums.into_pyarray(py))?;
    Ok(out)
}

/// Adds this family's functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(merge_pair_tables, m)?)?;
    m.add_function(wrap_pyfunction!(aode_planned_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(fit_aode, m)?)?;
    m.add_function(wrap_pyfunction!(aode_log_evidence, m)?)?;
    m.add_function(wrap_pyfunction!(check_aode_pair_tables, m)?)?;
    m.add_function(wrap_pyfunction!(aode_joint_log_likelihood, m)?)?;
    m.add_function(wrap_pyfunction!(aode_parent_terms, m)?)?;
    Ok(())
}
