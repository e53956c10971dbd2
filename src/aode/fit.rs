//! The whole AODE model in one call: the Naive Bayes child (SPEC eq. 1's smoother, for
//! rows without a super-parent and capped orientations), the super-parent term (eq. 8 or
//! its empirical-Bayes option, [`crate::parent_prior`]) and the child conditionals of
//! every modelled orientation (eqs. 9-11 and the two-level prior; see [`super`]).
//!
//! Every evidence is built from the non-zero cells only. A child of a parent with at most
//! [`MAX_DOCUMENTS`] values and at most [`MAX_CELLS`] non-zero cells, with whole counts
//! (the common case of wide data), is solved on the stack by
//! [`crate::small_solver`]; the others by the general solver. Both return the global
//! maximiser. Pairs are fitted in parallel in chunks of consecutive pairs, each writing
//! its own slice of the output tables, so results do not depend on the thread count.
//!
//! # What is stored
//! Only the modelled orientations, dense or sparse by cardinality ([`super::storage`]):
//! a dense pair's whole `ln P(child | c, parent)` table, or a sparse pair's per-parent-value
//! rows (log denominators) from which the scorer evaluates a cell.

use ndarray::{Array2, Array3, ArrayView2, ArrayView3};
use rayon::prelude::*;

use super::storage::{sparse_width, ChildTables, Placement, TablePlan};
use super::{AodeParams, ChildSmoothing, ParentSmoothing, Structure};
use crate::error::{check_len, filled, untouched_zeros, HebError, Result};
use crate::evidence::EvidenceTerms;
use crate::layout::FeatureLayout;
use crate::naive_bayes::{self, prior_mean, PriorMean};
use crate::pair_counts::{CellCountsView, Count, CountSlice, PairTablesView};
use crate::parent_prior;
use crate::sign_changes::GradientShape;
use crate::small_solver::{maximise_small, SmallEvidence, Staircases, MAX_CELLS, MAX_DOCUMENTS};
use crate::solver::{
    maximise_concentration_from, maximise_concentration_with_shape, Evidence, Solution,
    SolverSettings,
};

/// The single counts of a training set.
#[derive(Debug, Clone, Copy)]
pub struct AodeCounts<'a> {
    /// `N_c`, length C.
    pub class_count: &'a [f64],
    /// `N_{c,f,v}`, shape (C, sum K_f).
    pub counts: ArrayView2<'a, f64>,
}

/// Every table the scorer reads, and the fit's diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct AodeFit {
    /// `m_{c,i,j}`, shape (C, n_parents, F): one row per super-parent i (in feature
    /// order, [`Structure::parent_ranks`]); NaN on the diagonal and where not modelled.
    /// (C, F, F) when every feature is a super-parent; never O(F^2) with `max_parents`.
    pub concentration: Array3<f64>,
    /// `a_{i,j}` of the two-level prior, shape (n_parents, F); NaN where not fitted.
    pub pooled_concentration: Array2<f64>,
    /// Solver evaluations for `m_{c,i,j}` (0 where a rule decided), (C, n_parents, F).
    pub n_iter: Array3<i64>,
    /// Whether each solve met its stopping rule, shape (C, n_parents, F).
    pub converged: Array3<bool>,
    /// The child conditionals of every modelled orientation, dense or sparse by
    /// cardinality ([`super::storage`]).
    pub child_tables: ChildTables,
    /// `mu_{j,v}` of the child mean (uniform for Laplace), per category.
    pub child_mean: Vec<f64>,
    /// `ln mu_{j,v}`; `-inf` marks a category that never scores (zero mean, SPEC).
    pub log_child_mean: Vec<f64>,
    /// The Naive Bayes child's `m_{c,j}`, shape (C, F).
    pub marginal_concentration: Array2<f64>,
    /// Whether each Naive Bayes solve converged, shape (C, F).
    pub marginal_converged: Array2<bool>,
    /// Naive Bayes `ln theta_{c,j,v}`, shape (sum K_f, C).
    pub marginal_log_prob: Array2<f64>,
    /// `m_i` of the parent term's `P(y | x_i)` (C for Laplace; NaN for a feature without
    /// categories), length F.
    pub parent_concentration: Vec<f64>,
    /// Whether each parent solve converged, length F.
    pub parent_converged: Vec<bool>,
    /// `ln P(y = c, x_i = u)`, shape (sum K_f, C).
    pub parent_log_prob: Array2<f64>,
    /// `N_i(u)`, the (weighted) training count of every category.
    pub parent_count: Vec<f64>,
    /// `ln pi_c` of the Naive Bayes fallback.
    pub class_log_prior: Vec<f64>,
}

impl AodeFit {
    /// Solves that did not meet their stopping rule (children, Naive Bayes, parents).
    pub fn n_not_converged(&self) -> usize {
        let count = |it: &mut dyn Iterator<Item = &bool>| it.filter(|&&c| !c).count();
        count(&mut self.converged.iter())
            + count(&mut self.marginal_converged.iter())
            + count(&mut self.parent_converged.iter())
    }
}

fn shaped<D: ndarray::Dimension, T>(
    shape: impl ndarray::ShapeBuilder<Dim = D>,
    data: Vec<T>,
) -> Result<ndarray::Array<T, D>> {
    ndarray::Array::from_shape_vec(shape, data)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// Fits the whole AODE model: Naive Bayes child, parent term and every modelled child.
///
/// # Errors
/// Tables that disagree with the layout or with each other, invalid parameters, or
/// tables too large to allocate ([`HebError::Allocation`]).
pub fn fit(
    counts: AodeCounts,
    pair_tables: PairTablesView,
    layout: &FeatureLayout,
    structure: &Structure,
    params: &AodeParams,
) -> Result<AodeFit> {
    let n_classes = counts.class_count.len();
    let n_features = layout.n_features();
    check_len("count table rows", n_classes, counts.counts.nrows())?;
    check_len(
        "count table columns",
        layout.n_columns(),
        counts.counts.ncols(),
    )?;
    check_len("class log prior", n_classes, params.class_log_prior.len())?;
    structure.check(n_features)?;
    pair_tables.check(layout, n_classes)?;
    structure.check_stored(&pair_tables)?;

    // the Naive Bayes child (SPEC: fallback rows and capped orientations)
    let heb = params.smoothing != ChildSmoothing::Laplace;
    let kind = if heb {
        PriorMean::PooledMarginal
    } else {
        PriorMean::Uniform
    };
    let child_mean = prior_mean(counts.counts, layout, kind);
    let (marginal_concentration, marginal_converged) = if heb {
        let nb = naive_bayes::fit_concentrations(
            counts.counts,
            counts.class_count,
            &child_mean,
            layout,
            params.min_count,
            &params.solver,
        )?;
        (nb.concentration, nb.converged)
    } else {
        let k: Vec<f64> = (0..n_features)
            .map(|f| layout.cardinality(f) as f64)
            .collect();
        let m = Array2::from_shape_fn((n_classes, n_features), |(_, f)| k[f]);
        (m, Array2::from_elem((n_classes, n_features), true))
    };
    let marginal_log_prob = naive_bayes::log_probability_table(
        counts.counts,
        &child_mean,
        marginal_concentration.view(),
        layout,
    )?
    .t()
    .as_standard_layout()
    .into_owned();

    // the parent term
    let (parent_concentration, parent_converged) = match params.parent_smoothing {
        ParentSmoothing::Laplace => (
            (0..n_features)
                .map(|f| {
                    if layout.cardinality(f) == 0 {
                        f64::NAN
                    } else {
                        n_classes as f64
                    }
                })
                .collect::<Vec<f64>>(),
            vec![true; n_features],
        ),
        ParentSmoothing::Heb => {
            let class_mean = parent_prior::class_mean(counts.counts, layout);
            let solutions = parent_prior::fit_parent_concentrations(
                counts.counts,
                class_mean.view(),
                layout,
                &params.solver,
            )?;
            (
                solutions.iter().map(|s| s.concentration).collect(),
                solutions.iter().map(|s| s.converged).collect(),
            )
        }
    };
    let replaced = params
        .replace_class_prior
        .then_some(params.class_log_prior.as_slice());
    let parent_log_prob = parent_prior::parent_log_prob(
        counts.counts,
        layout,
        (params.parent_smoothing == ParentSmoothing::Heb).then_some(&parent_concentration[..]),
        replaced,
    )?;
    let parent_count: Vec<f64> = (0..layout.n_columns())
        .map(|j| counts.counts.column(j).sum())
        .collect();

    let log_child_mean: Vec<f64> = child_mean
        .iter()
        .map(|&mu| if mu > 0.0 { mu.ln() } else { f64::NEG_INFINITY })
        .collect();
    let children = fit_children(
        pair_tables,
        counts.counts,
        (&child_mean, &log_child_mean),
        layout,
        structure,
        params,
    )?;
    Ok(AodeFit {
        concentration: children.concentration,
        pooled_concentration: children.pooled_concentration,
        n_iter: children.n_iter,
        converged: children.converged,
        child_tables: children.tables,
        child_mean,
        log_child_mean,
        marginal_concentration,
        marginal_converged,
        marginal_log_prob,
        parent_concentration,
        parent_converged,
        parent_log_prob,
        parent_count,
        class_log_prior: params.class_log_prior.clone(),
    })
}

/// `l_{c,i,j}(m_{c,i,j})`: the log evidence of every fitted child at its concentration,
/// shape (C, n_parents, F) like [`AodeFit::concentration`], NaN where no child is fitted
/// (the diagonal, orientations that are not modelled) and for Laplace smoothing (`m` set
/// by rule, no evidence maximised).
///
/// [`fit()`] does not evaluate it: most solves decide their maximiser from the gradient
/// alone, and one more evaluation of the evidence per child would cost about a fifth of a
/// wide fit. This evaluates it on demand from the same tables: `concentration` and
/// `pooled_concentration` are the fit's (`a_{i,j}` gives the two-level cell means).
///
/// # Errors
/// Tables that disagree with the layout, the structure or each other, or arrays too large
/// to allocate ([`HebError::Allocation`]).
pub fn log_evidence(
    category_counts: ArrayView2<f64>,
    pair_tables: PairTablesView,
    layout: &FeatureLayout,
    structure: &Structure,
    smoothing: ChildSmoothing,
    (concentration, pooled_concentration): (ArrayView3<f64>, ArrayView2<f64>),
) -> Result<Array3<f64>> {
    let n_classes = category_counts.nrows();
    let n_features = layout.n_features();
    check_len(
        "count table columns",
        layout.n_columns(),
        category_counts.ncols(),
    )?;
    structure.check(n_features)?;
    pair_tables.check(layout, n_classes)?;
    structure.check_stored(&pair_tables)?;
    let n_parents = structure.n_parents();
    let shape = (n_classes, n_parents, n_features);
    if concentration.dim() != shape || pooled_concentration.dim() != (n_parents, n_features) {
        return Err(HebError::InvalidParameter(format!(
            "concentrations of shape {:?} and {:?} do not fit {n_classes} classes, \
             {n_parents} super-parents and {n_features} features",
            concentration.dim(),
            pooled_concentration.dim()
        )));
    }
    let cube = n_classes * n_parents * n_features;
    let mut out = shaped(shape, filled(cube, f64::NAN, "AODE log evidence")?)?;
    if smoothing == ChildSmoothing::Laplace || n_classes == 0 {
        return Ok(out);
    }
    let child_mean = prior_mean(category_counts, layout, PriorMean::PooledMarginal);
    let row_offsets = pair_tables.row_offsets(layout)?;
    let ranks = structure.parent_ranks();
    let context = Context {
        pair_tables,
        category_counts,
        child_mean: &child_mean,
        log_child_mean: &[],
        layout,
        row_offsets: &row_offsets,
    };
    let n_pairs = pair_tables.n_pairs();
    let per_task = pairs_per_task(n_pairs);
    let chunks: Vec<std::ops::Range<usize>> = (0..n_pairs)
        .step_by(per_task)
        .map(|first| first..(first + per_task).min(n_pairs))
        .collect();
    let two_level = smoothing == ChildSmoothing::HebTwoLevel;
    let results: Vec<Vec<(usize, usize, Vec<f64>)>> = chunks
        .into_par_iter()
        .map_init(Scratch::default, |scratch, range| {
            let mut out = Vec::new();
            for p in range {
                let (a, b) = pair_tables.pair(p);
                for (side, (parent, child)) in [(a, b), (b, a)].into_iter().enumerate() {
                    let Some(rank) = ranks[parent].filter(|_| structure.modelled(parent, child))
                    else {
                        continue;
                    };
                    let pooled = two_level.then(|| pooled_concentration[[rank, child]]);
                    let at = |c: usize| concentration[[c, rank, child]];
                    let values =
                        context.orientation_log_evidence(scratch, (p, (a, b)), side, at, pooled);
                    out.push((rank, child, values));
                }
            }
            out
        })
        .collect();
    for (rank, child, values) in results.into_iter().flatten() {
        for (c, value) in values.into_iter().enumerate() {
            out[[c, rank, child]] = value;
        }
    }
    Ok(out)
}

/// The child tables and their diagnostics.
struct Children {
    concentration: Array3<f64>,
    pooled_concentration: Array2<f64>,
    n_iter: Array3<i64>,
    converged: Array3<bool>,
    tables: ChildTables,
}

/// Pairs per parallel task (consecutive pairs share a slice of the output tables): up to
/// 64, and few enough that every thread gets about eight tasks. With a fixed 64, a table
/// of few features (amazon-employee: 36 pairs of very unequal cost) was fitted by one
/// thread.
fn pairs_per_task(n_pairs: usize) -> usize {
    const MAX_PAIRS_PER_TASK: usize = 64;
    n_pairs
        .div_ceil(8 * rayon::current_num_threads())
        .clamp(1, MAX_PAIRS_PER_TASK)
}

/// Elements of one buffer written from several threads, each element by one thread
/// only: the per-super-parent diagnostics, which every orientation's fit writes in place
/// (a column of one super-parent's row and a row of another's, so no split of the buffer
/// into slices gives each task its own).
struct DisjointWrites<'b, T> {
    start: *mut T,
    len: usize,
    buffer: std::marker::PhantomData<&'b mut [T]>,
}

// SAFETY: the elements are only written through `write`, whose callers write each
// element from one thread; the buffer is borrowed mutably for `'b`, so nothing else reads
// it meanwhile.
unsafe impl<T: Send> Sync for DisjointWrites<'_, T> {}

impl<'b, T> DisjointWrites<'b, T> {
    fn new(buffer: &'b mut [T]) -> Self {
        Self {
            start: buffer.as_mut_ptr(),
            len: buffer.len(),
            buffer: std::marker::PhantomData,
        }
    }

    /// Writes element `at`.
    ///
    /// # Safety
    /// No other thread writes element `at` while `self` lives.
    unsafe fn write(&self, at: usize, value: T) {
        assert!(at < self.len, "diagnostic index out of range");
        // SAFETY: in bounds (above); the caller is the only thread writing this element.
        unsafe { self.start.add(at).write(value) }
    }
}

/// Fills a fresh buffer with `value` in parallel (its pages are first touched by the
/// threads, not all by one).
fn fill_in_parallel<T: Copy + Send + Sync>(buffer: &mut [T], value: T) {
    buffer
        .par_chunks_mut(1 << 16)
        .for_each(|chunk| chunk.fill(value));
}

/// Fits the child conditionals of every modelled orientation, in parallel over chunks
/// of consecutive pairs.
fn fit_children(
    pair_tables: PairTablesView,
    category_counts: ArrayView2<f64>,
    (child_mean, log_child_mean): (&[f64], &[f64]),
    layout: &FeatureLayout,
    structure: &Structure,
    params: &AodeParams,
) -> Result<Children> {
    let n_classes = category_counts.nrows();
    let n_features = layout.n_features();
    let plan = TablePlan::new(layout, structure, pair_tables, n_classes)?;
    let row_offsets = pair_tables.row_offsets(layout)?;
    let n_pairs = pair_tables.n_pairs();
    let width = sparse_width(n_classes);
    // every element is written by its orientation's fit; zeroed pages are only touched
    // there, by the thread that fits them, instead of being filled here first
    let mut dense = untouched_zeros(plan.dense_len(), "AODE dense child tables")?;
    let mut sparse = untouched_zeros(plan.sparse_rows() * width, "AODE sparse child tables")?;

    // cut the output tables into one slice per chunk of pairs
    let mut tasks = Vec::new();
    let (mut dense_rest, mut sparse_rest) = (&mut dense[..], &mut sparse[..]);
    let per_task = pairs_per_task(n_pairs);
    for first in (0..n_pairs).step_by(per_task) {
        let last = (first + per_task).min(n_pairs);
        let n_dense = plan.dense_start[last] - plan.dense_start[first];
        let n_sparse = plan.sparse_start[last] - plan.sparse_start[first];
        let (dense_part, rest) = std::mem::take(&mut dense_rest).split_at_mut(n_dense);
        dense_rest = rest;
        let (sparse_part, rest) = std::mem::take(&mut sparse_rest).split_at_mut(n_sparse * width);
        sparse_rest = rest;
        tasks.push((first..last, dense_part, sparse_part));
    }

    let context = Context {
        pair_tables,
        category_counts,
        child_mean,
        log_child_mean,
        layout,
        row_offsets: &row_offsets,
    };

    // per-super-parent diagnostics, (C, n_parents, F) and (n_parents, F), written in
    // place by each orientation's fit: NaN concentrations and converged where nothing is
    // fitted (the super-parent's own column, capped orientations)
    let ranks = structure.parent_ranks();
    let n_parents = structure.n_parents();
    let cube = n_classes * n_parents * n_features;
    let mut concentration = untouched_zeros(cube, "AODE concentrations")?;
    let mut n_iter = untouched_zeros(cube, "AODE solver steps")?;
    let mut converged = untouched_zeros(cube, "AODE convergence flags")?;
    let mut pooled_concentration =
        untouched_zeros(n_parents * n_features, "AODE pooled concentrations")?;
    fill_in_parallel(&mut concentration, f64::NAN);
    fill_in_parallel(&mut converged, true);
    fill_in_parallel(&mut pooled_concentration, f64::NAN);
    {
        let concentration_out = DisjointWrites::new(&mut concentration);
        let n_iter_out = DisjointWrites::new(&mut n_iter);
        let converged_out = DisjointWrites::new(&mut converged);
        let pooled_out = DisjointWrites::new(&mut pooled_concentration);
        tasks
            .into_par_iter()
            .for_each_init(Scratch::default, |scratch, (range, dense, sparse)| {
                let dense_start = plan.dense_start[range.start];
                let sparse_start = plan.sparse_start[range.start];
                for p in range {
                    let (a, b) = pair_tables.pair(p);
                    for side in 0..2 {
                        if crate::interrupt::cancelled() {
                            continue;
                        }
                        let (parent, child) = if side == 0 { (a, b) } else { (b, a) };
                        let k_parent = layout.cardinality(parent);
                        let target =
                            match plan.placement(p, side, (a, b), structure, layout, n_classes) {
                                Placement::None => continue,
                                Placement::Dense(at) => {
                                    let at = at - dense_start;
                                    let len = k_parent * layout.cardinality(child) * n_classes;
                                    Target::Dense(&mut dense[at..at + len])
                                }
                                Placement::Sparse(row) => {
                                    let at = (row - sparse_start) * width;
                                    Target::Sparse(&mut sparse[at..at + (k_parent + 1) * width])
                                }
                            };
                        let (solutions, pooled) =
                            context.fit_orientation(scratch, params, ((p, (a, b)), side), target);
                        // a modelled orientation's parent is a super-parent
                        let rank = ranks[parent].expect("modelled parents are super-parents");
                        // SAFETY: orientation (parent, child) is fitted once, by this task,
                        // and only its fit writes these elements.
                        unsafe {
                            if let Some(pooled) = pooled {
                                pooled_out.write(rank * n_features + child, pooled);
                            }
                            for (c, solution) in solutions.iter().enumerate() {
                                let at = (c * n_parents + rank) * n_features + child;
                                concentration_out.write(at, solution.concentration);
                                n_iter_out.write(at, solution.n_iter as i64);
                                converged_out.write(at, solution.converged);
                            }
                        }
                    }
                }
            });
    }
    crate::interrupt::check()?;
    let shape = (n_classes, n_parents, n_features);
    let concentration = shaped(shape, concentration)?;
    let n_iter = shaped(shape, n_iter)?;
    let converged = shaped(shape, converged)?;
    let pooled_concentration = shaped((n_parents, n_features), pooled_concentration)?;
    Ok(Children {
        concentration,
        pooled_concentration,
        n_iter,
        converged,
        tables: ChildTables {
            dense,
            sparse: shaped((plan.sparse_rows(), width), sparse)?,
        },
    })
}

/// Buffers of one thread, reused from orientation to orientation.
#[derive(Default)]
struct Scratch {
    parent_of: Vec<usize>,
    child_of: Vec<usize>,
    documents: Vec<f64>,
    pooled_documents: Vec<f64>,
    pooled_cells: Vec<f64>,
    cell_mean: Vec<f64>,
    log_denominator: Vec<f64>,
    /// `ln m_c` of the orientation being written, one per class.
    log_concentration: Vec<f64>,
    /// One pair's whole counts as floats ([`Context::tally`]).
    whole_cells: WholeCells,
}

/// The class counts of one stored pair's cells as floats, read from `u32` whole counts
/// once for both orientations of the pair.
struct WholeCells {
    /// The stored pair they are of (`usize::MAX`: none yet).
    pair: usize,
    values: Vec<f64>,
}

impl Default for WholeCells {
    fn default() -> Self {
        Self {
            pair: usize::MAX,
            values: Vec::new(),
        }
    }
}

/// What every orientation's fit reads.
struct Context<'a, 't> {
    pair_tables: PairTablesView<'t>,
    category_counts: ArrayView2<'a, f64>,
    child_mean: &'a [f64],
    log_child_mean: &'a [f64],
    layout: &'a FeatureLayout,
    row_offsets: &'a [usize],
}

/// Where one orientation's fitted tables go ([`super::storage`]).
enum Target<'o> {
    /// The whole `(K_parent, K_child, C)` table.
    Dense(&'o mut [f64]),
    /// The header row and one row per parent value, `C + 1` columns each.
    Sparse(&'o mut [f64]),
}

/// One orientation's tables as the solves read them (the cells are in [`Scratch`]).
#[derive(Clone, Copy)]
struct Tally<'t> {
    parent: usize,
    child: usize,
    k_parent: usize,
    child_start: usize,
    /// `N_{c,u,v}` of the non-zero cells, one row per cell.
    counts: ArrayView2<'t, f64>,
    /// Whether the stack solver takes it ([`crate::small_solver`]).
    small: bool,
}

impl<'t> Context<'_, 't> {
    /// Reads one orientation of pair `p` into `s`: the parent and child value of every
    /// non-zero cell, the document totals `N_{c,u}`, their class-pooled sums `N_u` and the
    /// cells' class-pooled counts.
    /// Whole (`u32`) counts are read into `whole_cells` as floats (once per pair: the
    /// other orientation reuses them), which the tally then borrows; float counts are
    /// borrowed from the pair tables.
    fn tally<'b>(
        &self,
        s: &mut Scratch,
        whole_cells: &'b mut WholeCells,
        (p, (a, b)): (usize, (usize, usize)),
        side: usize,
    ) -> Tally<'b>
    where
        't: 'b,
    {
        let layout = self.layout;
        let n_classes = self.category_counts.nrows();
        let (parent, child) = if side == 0 { (a, b) } else { (b, a) };
        let k_parent = layout.cardinality(parent);
        let child_start = layout.columns(child).start;
        let tables = &self.pair_tables;
        let rows = self.row_offsets[p]..self.row_offsets[p] + layout.cardinality(a);
        let cells = tables.indptr[rows.start] as usize..tables.indptr[rows.end] as usize;
        let n_cells = cells.len();
        let counts = match (tables.counts, tables.counts.as_slice()) {
            (CellCountsView::Float(all), _) => all.slice_move(ndarray::s![cells.clone(), ..]),
            (CellCountsView::Whole(_), Some(CountSlice::Whole(all))) => {
                if whole_cells.pair != p {
                    let whole = &all[cells.start * n_classes..cells.end * n_classes];
                    whole_cells.values.clear();
                    whole_cells
                        .values
                        .extend(whole.iter().map(|&n| f64::from(n)));
                    whole_cells.pair = p;
                }
                ArrayView2::from_shape((n_cells, n_classes), &whole_cells.values[..])
                    .expect("one row of C counts per cell")
            }
            _ => unreachable!("pair table counts are checked C-contiguous"),
        };

        // parent value and child value of every cell in this orientation
        s.parent_of.clear();
        s.child_of.clear();
        {
            let (by_row, by_index) = if side == 0 {
                (&mut s.parent_of, &mut s.child_of)
            } else {
                (&mut s.child_of, &mut s.parent_of)
            };
            for (u, row) in rows.clone().enumerate() {
                let length = (tables.indptr[row + 1] - tables.indptr[row]) as usize;
                by_row.extend(std::iter::repeat_n(u, length));
            }
            by_index.extend(tables.indices[cells.clone()].iter().map(|&v| v as usize));
        }

        // document totals N_{c,u} (rows with both present) and their class-pooled sums N_u
        s.documents.clear();
        s.documents.resize(k_parent * n_classes, 0.0);
        s.pooled_documents.clear();
        s.pooled_documents.resize(k_parent, 0.0);
        s.pooled_cells.clear();
        s.pooled_cells.resize(n_cells, 0.0);
        for (k, cell) in counts.outer_iter().enumerate() {
            let u = s.parent_of[k];
            for (c, &n) in cell.iter().enumerate() {
                s.documents[u * n_classes + c] += n;
                s.pooled_cells[k] += n;
            }
            s.pooled_documents[u] += s.pooled_cells[k];
        }
        Tally {
            parent,
            child,
            k_parent,
            child_start,
            counts,
            small: k_parent <= MAX_DOCUMENTS && n_cells <= MAX_CELLS,
        }
    }

    /// Each cell's prior mean: `mu_{j,v}`, or the two-level `mu_{u,v}` given `a_{i,j}`.
    fn cell_means(&self, s: &mut Scratch, tally: &Tally, pooled: Option<f64>) {
        s.cell_mean.clear();
        for k in 0..tally.counts.nrows() {
            let mean = self.child_mean[tally.child_start + s.child_of[k]];
            s.cell_mean.push(match pooled {
                Some(a) => {
                    (s.pooled_cells[k] + a * mean) / (s.pooled_documents[s.parent_of[k]] + a)
                }
                None => mean,
            });
        }
    }

    /// `l(m_{c,i,j})` of one orientation at its fitted concentrations (`pooled`: the
    /// fitted `a_{i,j}` of the two-level prior), one per class.
    fn orientation_log_evidence(
        &self,
        s: &mut Scratch,
        pair: (usize, (usize, usize)),
        side: usize,
        concentration: impl Fn(usize) -> f64,
        pooled: Option<f64>,
    ) -> Vec<f64> {
        let n_classes = self.category_counts.nrows();
        let mut whole_cells = std::mem::take(&mut s.whole_cells);
        let tally = self.tally(s, &mut whole_cells, pair, side);
        self.cell_means(s, &tally, pooled);
        let counts = tally.counts;
        let evidence = (0..n_classes)
            .map(|c| {
                let documents = (0..tally.k_parent).map(|u| s.documents[u * n_classes + c]);
                let cells =
                    (0..counts.nrows()).map(|k| (s.parent_of[k], counts[[k, c]], s.cell_mean[k]));
                log_evidence_at(tally.small, documents, cells, concentration(c))
            })
            .collect();
        s.whole_cells = whole_cells;
        evidence
    }

    /// [`Self::fit_orientation`] for Laplace smoothing into sparse rows, which hold only
    /// `m = K_j` and the log denominators `ln(N_{c,u} + K_j)`: the document totals are
    /// summed straight from the pair table, in the cells' order as [`Self::tally`] sums
    /// them (the same numbers), without listing the cells.
    fn fit_laplace_sparse(
        &self,
        s: &mut Scratch,
        (p, (a, b)): (usize, (usize, usize)),
        side: usize,
        rows: &mut [f64],
    ) -> (Vec<Solution>, Option<f64>) {
        let layout = self.layout;
        let n_classes = self.category_counts.nrows();
        let (parent, child) = if side == 0 { (a, b) } else { (b, a) };
        let k_parent = layout.cardinality(parent);
        let k_child = layout.cardinality(child) as f64;
        let tables = &self.pair_tables;
        s.documents.clear();
        s.documents.resize(k_parent * n_classes, 0.0);
        let table_rows = self.row_offsets[p]..self.row_offsets[p] + layout.cardinality(a);
        match tables.counts.as_slice() {
            Some(CountSlice::Whole(counts)) => {
                add_documents(
                    &mut s.documents,
                    tables,
                    table_rows,
                    side,
                    counts,
                    n_classes,
                );
            }
            Some(CountSlice::Float(counts)) => {
                add_documents(
                    &mut s.documents,
                    tables,
                    table_rows,
                    side,
                    counts,
                    n_classes,
                );
            }
            None => unreachable!("pair table counts are checked C-contiguous"),
        }
        let width = sparse_width(n_classes);
        rows[..n_classes].fill(k_child);
        rows[n_classes] = f64::NAN;
        for u in 0..k_parent {
            let row = &mut rows[(u + 1) * width..(u + 2) * width];
            for (value, &total) in row[..n_classes]
                .iter_mut()
                .zip(&s.documents[u * n_classes..(u + 1) * n_classes])
            {
                *value = (total + k_child).ln();
            }
            row[n_classes] = f64::NAN;
        }
        let rule = Solution {
            concentration: k_child,
            log_evidence: f64::NAN,
            n_iter: 0,
            converged: true,
        };
        (vec![rule; n_classes], None)
    }

    /// Fits one orientation of pair `p` and writes its tables into `target`.
    fn fit_orientation(
        &self,
        scratch: &mut Scratch,
        params: &AodeParams,
        (pair, side): ((usize, (usize, usize)), usize),
        target: Target,
    ) -> (Vec<Solution>, Option<f64>) {
        let layout = self.layout;
        let n_classes = self.category_counts.nrows();
        let s = scratch;
        let target = match target {
            Target::Sparse(rows) if params.smoothing == ChildSmoothing::Laplace => {
                return self.fit_laplace_sparse(s, pair, side, rows);
            }
            target => target,
        };
        let mut whole_cells = std::mem::take(&mut s.whole_cells);
        let tally = self.tally(s, &mut whole_cells, pair, side);
        let Tally {
            parent,
            child,
            k_parent,
            child_start,
            counts,
            small,
        } = tally;
        let n_cells = counts.nrows();
        let k_child = layout.cardinality(child) as f64;
        let mean_of = |k: usize, child_of: &[usize]| self.child_mean[child_start + child_of[k]];
        let settings = &params.solver;

        // the two-level prior: a_{i,j} and the per-document mean mu_{u,v}
        let pooled = (params.smoothing == ChildSmoothing::HebTwoLevel).then(|| {
            let cells =
                (0..n_cells).map(|k| (s.parent_of[k], s.pooled_cells[k], mean_of(k, &s.child_of)));
            solve(
                small,
                s.pooled_documents.iter().copied(),
                cells,
                k_child,
                settings,
                None,
                1.0,
            )
            .concentration
        });
        self.cell_means(s, &tally, pooled);

        let solutions: Vec<Solution> = if params.smoothing == ChildSmoothing::Laplace {
            let rule = Solution {
                concentration: k_child,
                log_evidence: f64::NAN,
                n_iter: 0,
                converged: true,
            };
            vec![rule; n_classes]
        } else {
            let parent_columns = layout.columns(parent);
            // each class's Newton iteration starts from the previous class's answer (the
            // classes of one pair tend to agree), the first from the class-pooled one
            let mut start = pooled.unwrap_or(1.0);
            (0..n_classes)
                .map(|c| {
                    let largest_parent_value = parent_columns
                        .clone()
                        .map(|col| self.category_counts[[c, col]])
                        .fold(0.0, f64::max);
                    let low = largest_parent_value < params.min_count;
                    let documents = (0..k_parent).map(|u| s.documents[u * n_classes + c]);
                    let cells =
                        (0..n_cells).map(|k| (s.parent_of[k], counts[[k, c]], s.cell_mean[k]));
                    let rule = low.then_some(k_child);
                    let solution = solve(small, documents, cells, k_child, settings, rule, start);
                    if !low {
                        start = solution.concentration;
                    }
                    solution
                })
                .collect()
        };

        // ln(N_{c,u} + m_c), one per document and class
        s.log_denominator.clear();
        s.log_denominator.extend(
            (0..k_parent * n_classes).map(|index| {
                (s.documents[index] + solutions[index % n_classes].concentration).ln()
            }),
        );
        match target {
            Target::Dense(table) => {
                let k_child = layout.cardinality(child);
                let log_mean = &self.log_child_mean[child_start..child_start + k_child];
                // unseen cell: ln(m mu_{u,v}) - ln(N_{c,u} + m), less ln mu_{j,v}; each
                // logarithm taken once per class or document, not once per (u, c)
                s.log_concentration.clear();
                s.log_concentration
                    .extend(solutions.iter().map(|solution| solution.concentration.ln()));
                let pooled_and_log = pooled.map(|a| (a, a.ln()));
                for u in 0..k_parent {
                    let level = pooled_and_log
                        .map_or(0.0, |(a, log_a)| log_a - (s.pooled_documents[u] + a).ln());
                    for c in 0..n_classes {
                        let unseen_uc =
                            s.log_concentration[c] + level - s.log_denominator[u * n_classes + c];
                        for (v, &log_mean) in log_mean.iter().enumerate() {
                            table[(u * k_child + v) * n_classes + c] = unseen_uc + log_mean;
                        }
                    }
                }
                // log_smoothed's numbers, its denominator ln(N_{c,u} + m_c) taken from
                // the document's (computed once above) instead of once per cell
                for (k, cell) in counts.outer_iter().enumerate() {
                    let u = s.parent_of[k];
                    let at = (u * k_child + s.child_of[k]) * n_classes;
                    let log_denominators = &s.log_denominator[u * n_classes..(u + 1) * n_classes];
                    for (c, (solution, &log_denominator)) in
                        solutions.iter().zip(log_denominators).enumerate()
                    {
                        let numerator = cell[c] + solution.concentration * s.cell_mean[k];
                        table[at + c] = numerator.ln() - log_denominator;
                    }
                }
            }
            Target::Sparse(rows) => {
                let width = sparse_width(n_classes);
                for (c, solution) in solutions.iter().enumerate() {
                    rows[c] = solution.concentration;
                }
                rows[n_classes] = pooled.unwrap_or(f64::NAN);
                for u in 0..k_parent {
                    let row = &mut rows[(u + 1) * width..(u + 2) * width];
                    row[..n_classes]
                        .copy_from_slice(&s.log_denominator[u * n_classes..(u + 1) * n_classes]);
                    row[n_classes] = match pooled {
                        Some(a) => s.pooled_documents[u] + a,
                        None => f64::NAN,
                    };
                }
            }
        }
        s.whole_cells = whole_cells;
        (solutions, pooled)
    }
}

/// Adds the class counts of every cell of the pair's CSR `rows` (counts `counts`, C per
/// cell) to its document's totals `N_{c,u}`: the row's parent value for `side` 0, the
/// cell's child value for side 1. In the cells' order, as [`Context::tally`] sums them.
fn add_documents<N: Count>(
    documents: &mut [f64],
    tables: &PairTablesView,
    rows: std::ops::Range<usize>,
    side: usize,
    counts: &[N],
    n_classes: usize,
) {
    for (u, row) in rows.enumerate() {
        let cells = tables.indptr[row] as usize..tables.indptr[row + 1] as usize;
        for k in cells {
            let document = if side == 0 {
                u
            } else {
                tables.indices[k] as usize
            };
            let totals = &mut documents[document * n_classes..(document + 1) * n_classes];
            let cell = &counts[k * n_classes..(k + 1) * n_classes];
            for (total, &n) in totals.iter_mut().zip(cell) {
                *total += n.value();
            }
        }
    }
}

/// The maximiser of the multi-document evidence of `documents` (totals, by parent value)
/// and `cells` (parent value, count, mean); `rule` (the low-count fallback) decides
/// without solving. Small whole-count tables go to the stack solver. The log evidence at
/// the answer is not evaluated (NaN): [`log_evidence`] gives it on demand.
fn solve(
    small: bool,
    documents: impl Iterator<Item = f64> + Clone,
    cells: impl Iterator<Item = (usize, f64, f64)> + Clone,
    categories: f64,
    settings: &SolverSettings,
    rule: Option<f64>,
    start: f64,
) -> Solution {
    if let Some(m) = rule {
        return Solution {
            concentration: m,
            log_evidence: f64::NAN,
            n_iter: 0,
            converged: true,
        };
    }
    if small {
        let mut terms = SmallEvidence::new();
        if small_terms(&mut terms, documents.clone(), cells.clone()) {
            return maximise_small(&terms, settings, start);
        }
    }
    let terms = general_terms(documents.clone(), cells.clone());
    if terms.is_flat() {
        return maximise_concentration_from(&terms, settings, start);
    }
    // a start from the counts themselves: the class-pooled concentration (the first
    // class's start) was a factor of 15 off the class's answer for the median child of a
    // 20,000 x 100 table of 2-50 values, the previous class's a factor of 1.35
    let start = moment_estimate(documents.clone(), cells.clone(), categories).unwrap_or(start);
    maximise_concentration_with_shape(
        &terms,
        settings,
        start,
        general_shape(&terms, documents, cells),
    )
}

/// What the signs of the gradient of a table too large for the stack solver can be:
/// [`EvidenceTerms::gradient_shape`], and where its pass over every unit up to the
/// largest total gives up (the long documents of a child under a parent of many values
/// on many rows) the closed-form certificate of whole counts on the cells themselves,
/// O(cells log cells) whatever the totals ([`Staircases`]), before the bracket search.
/// On a 20,000 x 100 table of 2-50 values that certificate decided 99% of the children
/// the pass left (a quarter of all, each 16-19 evaluations of every term in the search);
/// run first instead, its sort cost more than the pass it saved. It runs only up to
/// [`CELL_CERTIFICATE_DOCUMENTS`] documents: beyond, its exact walk through the
/// documents' steps rarely ends within its budget (on amazon-employee, with 67-5,790
/// parent values, it decided 11 of 34 children, for a quarter of the fit's time).
fn general_shape(
    terms: &EvidenceTerms,
    documents: impl Iterator<Item = f64>,
    cells: impl Iterator<Item = (usize, f64, f64)>,
) -> GradientShape {
    let shape = terms.gradient_shape();
    if shape != GradientShape::Unknown || !terms.has_whole_counts() {
        return shape;
    }
    let totals: Vec<f64> = documents.filter(|&total| total > 0.0).collect();
    if totals.len() > CELL_CERTIFICATE_DOCUMENTS {
        return shape;
    }
    let (counts, means): (Vec<f64>, Vec<f64>) = cells
        .filter(|&(_, n, _)| n > 0.0)
        .map(|(_, n, mu)| (n, mu))
        .unzip();
    Staircases {
        counts: &counts,
        means: &means,
        totals: &totals,
    }
    .gradient_shape()
}

/// Most documents (parent values) for which [`general_shape`] runs the certificate on
/// the cells.
const CELL_CERTIFICATE_DOCUMENTS: usize = 64;

/// The method-of-moments concentration of a multi-document Dirichlet-multinomial, a start
/// for Newton's method: under the model `E[sum_v (n_v - N mu_v)^2 / mu_v] = N (K - 1)
/// (N + m) / (1 + m)` for a document of total `N` over `K` categories whose means add up
/// to 1, and the left side is `sum_cells n^2 / mu - N^2`; summed over the documents and
/// solved for `m`. None where the counts are not over-dispersed enough for a positive
/// answer.
fn moment_estimate(
    documents: impl Iterator<Item = f64>,
    cells: impl Iterator<Item = (usize, f64, f64)>,
    categories: f64,
) -> Option<f64> {
    let (mut totals, mut squares) = (0.0, 0.0);
    for total in documents {
        totals += total;
        squares += total * total;
    }
    let dispersion: f64 = cells
        .filter(|&(_, n, _)| n > 0.0)
        .map(|(_, n, mu)| n * n / mu)
        .sum::<f64>()
        - squares;
    let free = categories - 1.0;
    let m = (free * squares - dispersion) / (dispersion - free * totals);
    (m > 0.0 && m.is_finite()).then_some(m)
}

/// The evidence of the same tables as [`solve`], at `m`.
fn log_evidence_at(
    small: bool,
    documents: impl Iterator<Item = f64> + Clone,
    cells: impl Iterator<Item = (usize, f64, f64)> + Clone,
    m: f64,
) -> f64 {
    if small {
        let mut terms = SmallEvidence::new();
        if small_terms(&mut terms, documents.clone(), cells.clone()) {
            return Evidence::log_evidence(&terms, m);
        }
    }
    general_terms(documents, cells).log_evidence(m)
}

/// Fills the empty `terms` on the stack (the caller's: returned by value, its 1 kB of
/// arrays were copied once per child); false where they do not fit (too many terms,
/// fractions).
fn small_terms(
    terms: &mut SmallEvidence,
    mut documents: impl Iterator<Item = f64>,
    mut cells: impl Iterator<Item = (usize, f64, f64)>,
) -> bool {
    documents.all(|total| terms.add_document(total))
        && cells.all(|(u, n, mu)| terms.add_cell(u, n, mu))
}

/// The tables as general evidence terms.
fn general_terms(
    documents: impl Iterator<Item = f64>,
    cells: impl Iterator<Item = (usize, f64, f64)>,
) -> EvidenceTerms {
    let mut terms = EvidenceTerms::new();
    for total in documents {
        terms.add_document(total);
    }
    for (_, n, mu) in cells {
        terms.add_cell(n, mu);
    }
    terms.finish();
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::maximise_by_search;
    use crate::test_random::uniform;

    /// `n` draws of a Pólya urn started at `m mu`: the counts of one document of a
    /// Dirichlet-multinomial with concentration `m` and mean `mu`.
    fn polya_urn(state: &mut u64, n: usize, m: f64, mu: &[f64]) -> Vec<f64> {
        let mut counts = vec![0.0; mu.len()];
        for drawn in 0..n {
            let mut u = uniform(state) * (m + drawn as f64);
            let mut k = 0;
            while k + 1 < mu.len() && u >= m * mu[k] + counts[k] {
                u -= m * mu[k] + counts[k];
                k += 1;
            }
            counts[k] += 1.0;
        }
        counts
    }

    /// A child of `mu.len()` values under `documents` parent values, each document drawn
    /// from the urn with its own concentration (around `m`, spread by `spread` in ln m):
    /// (totals, cells as (document, count, mean)).
    fn urn_table(
        state: &mut u64,
        documents: usize,
        rows: usize,
        (m, spread): (f64, f64),
        mu: &[f64],
    ) -> (Vec<f64>, Vec<(usize, f64, f64)>) {
        let (mut totals, mut cells) = (Vec::new(), Vec::new());
        for d in 0..documents {
            let m_d = m * (spread * (2.0 * uniform(state) - 1.0)).exp();
            let n = rows / 2 + (uniform(state) * rows as f64) as usize;
            let counts = polya_urn(state, n, m_d, mu);
            totals.push(counts.iter().sum());
            cells.extend(counts.iter().zip(mu).map(|(&n, &mu)| (d, n, mu)));
        }
        (totals, cells)
    }

    fn random_mean(state: &mut u64, k: usize) -> Vec<f64> {
        let raw: Vec<f64> = (0..k).map(|_| 0.05 + uniform(state)).collect();
        let sum: f64 = raw.iter().sum();
        raw.iter().map(|x| x / sum).collect()
    }

    #[test]
    fn large_tables_give_the_bracket_searchs_maximiser() {
        // children too large for the stack solver, many of them with document totals
        // beyond the pass of EvidenceTerms::gradient_shape: the certificate on the cells,
        // the single-root Newton iteration and its moment start give the global maximiser
        // the bracket search (no certificate, no start) finds
        let settings = SolverSettings::default();
        let mut state = 11;
        let (mut decided_by_the_cells, mut tables) = (0, 0);
        for case in 0..240 {
            let k = 6 + case % 25;
            let mu = random_mean(&mut state, k);
            let m = [0.3, 3.0, 30.0, 300.0, 3000.0, 30000.0][case % 6];
            let spread = [0.0, 1.0, 3.0][case % 3];
            let rows = [40, 400, 2000][(case / 3) % 3];
            let (totals, cells) = urn_table(&mut state, 3 + case % 14, rows, (m, spread), &mu);
            let terms = general_terms(totals.iter().copied(), cells.iter().copied());
            if terms.is_flat() {
                continue;
            }
            tables += 1;
            let buckets_decide = terms.gradient_shape() != GradientShape::Unknown;
            let shape = general_shape(&terms, totals.iter().copied(), cells.iter().copied());
            decided_by_the_cells += usize::from(!buckets_decide && shape != GradientShape::Unknown);
            let fitted = solve(
                false,
                totals.iter().copied(),
                cells.iter().copied(),
                k as f64,
                &settings,
                None,
                1.0,
            );
            let searched = maximise_by_search(&terms, &settings, f64::NAN);
            let relative = (fitted.concentration / searched.concentration - 1.0).abs();
            assert!(
                relative < 1e-9 && fitted.converged,
                "case {case}: {} against the search's {}",
                fitted.concentration,
                searched.concentration
            );
        }
        assert!(
            tables > 200 && decided_by_the_cells > 40,
            "{tables} {decided_by_the_cells}"
        );
    }

    #[test]
    fn large_bimodal_tables_give_the_bracket_searchs_maximiser() {
        // long documents split evenly between two values beside short ones all on the
        // first (the solver's bimodal example with its long document scaled up): an
        // evidence rising to m_max with a second local maximum near m = 1, either of
        // which may be the global one; most with a total beyond the pass of
        // EvidenceTerms::gradient_shape
        let settings = SolverSettings::default();
        let mut two_maxima = 0;
        for case in 0..96 {
            let half = [40.0, 80.0, 170.0, 300.0][case % 4];
            let (short, other) = (
                [2.0, 3.0, 5.0, 8.0][(case / 4) % 4],
                [4.0, 6.0, 10.0][case / 16 % 3],
            );
            let long = 1 + case / 48;
            let first = long as f64 * half + short + other;
            let mu = [
                first / (first + long as f64 * half),
                long as f64 * half / (first + long as f64 * half),
            ];
            let mut totals = vec![short, other];
            let mut cells = vec![(0, short, mu[0]), (1, other, mu[0])];
            for d in 0..long {
                totals.push(2.0 * half);
                cells.extend([(2 + d, half, mu[0]), (2 + d, half, mu[1])]);
            }
            let terms = general_terms(totals.iter().copied(), cells.iter().copied());
            let beyond_the_pass = terms.gradient_shape() == GradientShape::Unknown;
            let searched = maximise_by_search(&terms, &settings, f64::NAN);
            let fitted = solve(
                false,
                totals.iter().copied(),
                cells.iter().copied(),
                2.0,
                &settings,
                None,
                1.0,
            );
            let relative = (fitted.concentration / searched.concentration - 1.0).abs();
            assert!(
                relative < 1e-9,
                "case {case}: {} against the search's {}",
                fitted.concentration,
                searched.concentration
            );
            // the local maxima: falls of m l'(m) from + to - on a grid, and m_max if rising
            let signs: Vec<bool> = (0..=600)
                .map(|i| terms.scaled_gradient((-4.6 + 0.023 * f64::from(i)).exp()) > 0.0)
                .collect();
            let falls = signs.windows(2).filter(|w| w[0] && !w[1]).count();
            two_maxima += usize::from(beyond_the_pass && falls + usize::from(signs[600]) >= 2);
        }
        assert!(two_maxima > 30, "{two_maxima}");
    }

    #[test]
    fn the_moment_estimate_finds_the_urns_concentration() {
        let mut state = 5;
        let mu = random_mean(&mut state, 5);
        for m in [2.0, 20.0, 200.0] {
            let (totals, cells) = urn_table(&mut state, 400, 300, (m, 0.0), &mu);
            let estimate =
                moment_estimate(totals.iter().copied(), cells.iter().copied(), 5.0).unwrap();
            assert!((estimate / m).ln().abs() < 0.2, "{estimate} for {m}");
        }
        // counts exactly in proportion to the mean: no dispersion at all, no finite answer
        let cells = [
            (0, 20.0, 0.2),
            (0, 80.0, 0.8),
            (1, 10.0, 0.2),
            (1, 40.0, 0.8),
        ];
        assert_eq!(
            moment_estimate([100.0, 50.0].into_iter(), cells.into_iter(), 2.0),
            None
        );
    }
}
