//! Scoring rows with a fitted AODE model (SPEC eq. 7):
//!
//! ```text
//! ln P(y, x) = ln (1/q sum over qualifying super-parents i of
//!              exp[ ln P(y, x_i) + sum over j != i of ln P(x_j | y, x_i) ])
//! ```
//!
//! Parent-major and vectorised over rows: a chunk of rows (up to 4,096) is scored by its
//! super-parents in parallel, each over all the chunk's rows where it qualifies, sorted by
//! its value so that rows sharing a value read the same table rows while they are in
//! cache; a row's children are looked up in one tight loop over each orientation's table
//! ([`super::storage`]): a dense table is indexed
//! directly at `(u K_j + v) C`; a sparse pair's cell is found by a binary search in its CSR
//! row and evaluated from its counts (unseen cells: the stored unseen part plus
//! `ln mu_{j,v}`); a capped orientation reads the Naive Bayes table. Children are added
//! in feature order, so every parent's sum, and the result, does not depend on the
//! chunking or the thread count. Rows without a qualifying super-parent keep the Naive
//! Bayes score.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::fit::AodeFit;
use super::storage::{sparse_width, Placement, TablePlan};
use super::Structure;
use crate::class_loops::{add_classes, by_class_count, copy_classes};
use crate::counts::check_codes;
use crate::error::{check_len, filled, HebError, Result};
use crate::layout::FeatureLayout;
use crate::pair_counts::{CountSlice, PairTablesView};
use crate::parallel::split_by_bounds;
use crate::scoring;

/// Everything the scorer reads, all fitted.
#[derive(Debug, Clone, Copy)]
pub struct AodeModel<'a> {
    pub pair_tables: PairTablesView<'a>,
    /// Whether the pair tables' cells are known good: checked when the tables were made
    /// (the fit checks the tables it is given) or since ([`PairTablesView::check`]).
    /// Then scoring checks only their shape, not every cell, so that a call costs what
    /// it reads, not the size of the model. Unchecked cells cannot make scoring read
    /// out of bounds, only answer wrongly or fail.
    pub pair_cells_checked: bool,
    /// [`ChildTables::dense`](super::storage::ChildTables::dense).
    pub dense: &'a [f64],
    /// [`ChildTables::sparse`](super::storage::ChildTables::sparse), (rows, C + 1).
    pub sparse: ArrayView2<'a, f64>,
    /// `mu_{j,v}` of the child mean used by the fit (uniform for Laplace), per category.
    pub child_mean: &'a [f64],
    /// `ln mu_{j,v}`; `-inf` marks a category that never scores (zero mean, SPEC).
    pub log_child_mean: &'a [f64],
    /// Which orientations read the pair tables, and which features are super-parents.
    pub structure: Structure<'a>,
    /// `ln P(y = c, x_i = u)` (eq. 8), shape (sum K_f, C).
    pub parent_log_prob: ArrayView2<'a, f64>,
    /// `N_i(u)`, the (weighted) training count of every category.
    pub parent_count: &'a [f64],
    pub min_parent_count: f64,
    /// Naive Bayes `ln theta_{c,j,v}`, shape (sum K_f, C): capped children and rows
    /// without a super-parent.
    pub marginal_log_prob: ArrayView2<'a, f64>,
    /// `ln pi_c` of the Naive Bayes fallback.
    pub class_log_prior: &'a [f64],
}

impl AodeFit {
    /// The scorer's view of this fit with the pair tables and structure it was fitted on.
    pub fn model<'a>(
        &'a self,
        pair_tables: PairTablesView<'a>,
        structure: Structure<'a>,
        min_parent_count: f64,
    ) -> AodeModel<'a> {
        AodeModel {
            pair_tables,
            // the fit checked the tables it was given
            pair_cells_checked: true,
            dense: &self.child_tables.dense,
            sparse: self.child_tables.sparse.view(),
            child_mean: &self.child_mean,
            log_child_mean: &self.log_child_mean,
            structure,
            parent_log_prob: self.parent_log_prob.view(),
            parent_count: &self.parent_count,
            min_parent_count,
            marginal_log_prob: self.marginal_log_prob.view(),
            class_log_prior: &self.class_log_prior,
        }
    }
}

/// Rows per scoring chunk: as many as keep the chunk's per-parent terms (`parents x rows
/// x C` numbers) near 8 MB, at most 4,096. Large chunks, because the parents of a chunk
/// are scored in parallel, each over all the chunk's rows sorted by its value: the rows
/// that share a parent value read the same table rows while they are in cache, and
/// splitting a few thousand rows into a chunk per thread (as before) made every row read
/// from memory. A row's score does not depend on the chunking, so results stay identical
/// for any thread count.
pub(super) fn rows_per_chunk(n_parents: usize, n_classes: usize) -> usize {
    const TERMS_BYTES: usize = 8 << 20;
    (TERMS_BYTES / (n_parents.max(1) * n_classes.max(1) * 8)).clamp(64, 4096)
}

/// Most cells of searched pairs a chunk finds ahead ([`ScoringContext::find_cells`]): 4 MB.
const FOUND_CELLS: usize = 1 << 20;

/// The joint log-likelihood `ln P(y, x)` of every row (eq. 7), shape (S, C).
///
/// `codes` is `(F, S)`, -1 for missing or unknown values.
///
/// # Errors
/// Shape mismatches between the model's tables, the layout and the codes, and codes out
/// of range.
pub fn joint_log_likelihood(
    codes: ArrayView2<i32>,
    model: &AodeModel,
    layout: &FeatureLayout,
) -> Result<Array2<f64>> {
    let (mut joint, prepared) = prepare(codes, model, layout)?;
    let Some(prepared) = prepared else {
        return Ok(joint);
    };
    let scorer = prepared.scorer(model, layout);
    let (n_classes, n_parents) = (scorer.n_classes, prepared.super_parents.len());
    let chunk_rows = rows_per_chunk(n_parents, n_classes);
    joint
        .as_slice_mut()
        .expect("freshly allocated")
        .par_chunks_mut(chunk_rows * n_classes)
        .enumerate()
        .for_each(|(chunk, block)| {
            if crate::interrupt::cancelled() {
                return;
            }
            let n = block.len() / n_classes;
            let chunk = scorer.score_chunk::<false>(codes, chunk * chunk_rows, n, &mut NoCells);
            // ln (1/q sum_i exp(term_i)), max-shifted, parents in feature order; rows in
            // parallel (a chunk is one task's rows)
            block
                .par_chunks_mut(n_classes)
                .with_min_len(256)
                .enumerate()
                .for_each(|(r, out)| {
                    if chunk.n_qualifying[r] == 0 {
                        return;
                    }
                    let log_q = (chunk.n_qualifying[r] as f64).ln();
                    for (c, slot) in out.iter_mut().enumerate() {
                        let parent_terms = (0..n_parents)
                            .filter(|&rank| chunk.qualifies[rank * n + r])
                            .map(|rank| chunk.terms[(rank * n + r) * n_classes + c]);
                        let max = parent_terms.clone().fold(f64::NEG_INFINITY, f64::max);
                        *slot = if max.is_finite() {
                            max + parent_terms.map(|t| (t - max).exp()).sum::<f64>().ln() - log_q
                        } else {
                            max
                        };
                    }
                });
        });
    crate::interrupt::check()?;
    Ok(joint)
}

/// Checks the model against the layout and the codes and returns the rows' Naive Bayes
/// joint log-likelihood `(S, C)` (the score of a row without a qualifying super-parent)
/// and, unless there is nothing to score (no class or no row), what the chunk scorer
/// reads ([`Prepared::scorer`]).
pub(super) fn prepare(
    codes: ArrayView2<i32>,
    model: &AodeModel,
    layout: &FeatureLayout,
) -> Result<(Array2<f64>, Option<Prepared>)> {
    check_codes(codes, layout)?;
    let n_classes = model.class_log_prior.len();
    let n_features = layout.n_features();
    model.pair_tables.check_shape(layout, n_classes)?;
    if !model.pair_cells_checked {
        model.pair_tables.check_cells(layout)?;
    }
    let width = layout.n_columns();
    model.structure.check(n_features)?;
    model.structure.check_stored(&model.pair_tables)?;
    let plan = TablePlan::new(layout, &model.structure, model.pair_tables, n_classes)?;
    check_len("dense child tables", plan.dense_len(), model.dense.len())?;
    check_len(
        "sparse child table rows",
        plan.sparse_rows(),
        model.sparse.nrows(),
    )?;
    check_len(
        "sparse child table columns",
        sparse_width(n_classes),
        model.sparse.ncols(),
    )?;
    check_len("child mean", width, model.child_mean.len())?;
    check_len("log child mean", width, model.log_child_mean.len())?;
    check_len("parent counts", width, model.parent_count.len())?;
    for (what, table) in [
        ("parent log-probability table", model.parent_log_prob),
        ("marginal log-probability table", model.marginal_log_prob),
    ] {
        if table.dim() != (width, n_classes) {
            return Err(HebError::InvalidParameter(format!(
                "{what} has shape {:?}, expected ({width}, {n_classes})",
                table.dim()
            )));
        }
    }

    // rows without a qualifying super-parent keep this Naive Bayes score
    let joint = scoring::joint_log_likelihood(
        codes,
        model.marginal_log_prob,
        model.class_log_prior,
        None,
        layout,
    )?;
    if n_classes == 0 || codes.ncols() == 0 {
        return Ok((joint, None));
    }
    let row_offsets = model.pair_tables.row_offsets(layout)?;
    let starts: Vec<usize> = (0..n_features).map(|f| layout.columns(f).start).collect();
    contiguous(model.marginal_log_prob, "marginal log-probability table")?;
    model.sparse.as_slice().ok_or_else(|| {
        HebError::InvalidParameter("sparse child table must be C-contiguous".into())
    })?;
    contiguous(model.parent_log_prob, "parent log-probability table")?;
    model.pair_tables.counts.as_slice().ok_or_else(|| {
        HebError::InvalidParameter("pair table counts must be C-contiguous".into())
    })?;
    let super_parents: Vec<usize> = (0..n_features)
        .filter(|&f| model.structure.parents[f])
        .collect();

    // A sparse pair whose table is not mostly empty (K_a K_b <= 4 cells + 64) gets a
    // direct (u, v) -> cell index for this call (at most 16 bytes per cell), so that a
    // lookup costs one load instead of a binary search; the others search their CSR row.
    // So do all pairs when the call scores few rows (K_a K_b > 32 rows): building an index
    // then costs more than the searches it saves (a 10-row call on a table of 50-value
    // columns spent most of its time building 4,950 indexes).
    let n_rows = codes.ncols();
    let indptr = model.pair_tables.indptr;
    let too_many_cells = indptr[indptr.len() - 1] >= u32::MAX as i64;
    let mut sparse_pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (p, (a, b)) in model.pair_tables.pair_list().enumerate() {
        if !plan.dense[p] {
            sparse_pairs
                .try_reserve(1)
                .map_err(|_| HebError::Allocation {
                    what: "AODE scoring index",
                    bytes: 24 * (sparse_pairs.len() as u128 + 1),
                })?;
            sparse_pairs.push((p, a, b));
        }
    }
    let direct: Vec<Option<Vec<u32>>> = sparse_pairs
        .par_iter()
        .map(|&(p, a, b)| {
            let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
            let rows = row_offsets[p]..row_offsets[p] + k_a;
            let cells = (indptr[rows.end] - indptr[rows.start]) as usize;
            if k_a * k_b > 4 * cells + 64 || k_a * k_b > 32 * n_rows || too_many_cells {
                return Ok(None);
            }
            let mut index = filled(k_a * k_b, 0u32, "AODE scoring index")?;
            for (u, row) in rows.enumerate() {
                for k in indptr[row] as usize..indptr[row + 1] as usize {
                    index[u * k_b + model.pair_tables.indices[k] as usize] = k as u32 + 1;
                }
            }
            Ok(Some(index))
        })
        .collect::<Result<_>>()?;

    // How each super-parent reads each of its children, in feature order, as runs of
    // children read the same way.
    let readers: Vec<Vec<Run>> = super_parents
        .par_iter()
        .map(|&i| {
            let mut runs: Vec<Run> = Vec::new();
            for j in (0..n_features).filter(|&j| j != i) {
                let (a, b) = (i.min(j), i.max(j));
                let side = usize::from(i > j);
                let k_j = layout.cardinality(j);
                // a modelled orientation's pair is stored (checked above)
                let stored = model.structure.modelled(i, j).then(|| {
                    let p = model
                        .pair_tables
                        .position(a, b)
                        .expect("modelled pairs are stored");
                    (
                        p,
                        plan.placement(p, side, (a, b), &model.structure, layout, n_classes),
                    )
                });
                let (p, placement) = stored.unwrap_or((usize::MAX, Placement::None));
                let lookup = |offset: usize, stride: usize| Lookup {
                    child: j,
                    stride,
                    offset,
                };
                match (placement, runs.last_mut()) {
                    (Placement::None, Some(Run::Marginal(run))) => {
                        run.push(lookup(starts[j] * n_classes, 0));
                    }
                    (Placement::None, _) => {
                        runs.push(Run::Marginal(vec![lookup(starts[j] * n_classes, 0)]));
                    }
                    (Placement::Dense(offset), Some(Run::Dense(run))) => {
                        run.push(lookup(offset, k_j));
                    }
                    (Placement::Dense(offset), _) => {
                        runs.push(Run::Dense(vec![lookup(offset, k_j)]));
                    }
                    (Placement::Sparse(header), last) => {
                        let slot = sparse_pairs
                            .binary_search_by_key(&p, |&(q, _, _)| q)
                            .expect("every sparse pair a parent reads is listed");
                        let child = SparseChild {
                            child: j,
                            k_child: k_j,
                            header,
                            pair: p,
                            slot,
                            parent_first: a == i,
                        };
                        match last {
                            Some(Run::Sparse(run)) => run.push(child),
                            _ => runs.push(Run::Sparse(vec![child])),
                        }
                    }
                }
            }
            runs
        })
        .collect();
    // the sparse pairs without a direct index: a chunk finds each row's cell of them once
    // for both orientations ([`ScoringContext::find_cells`]), when cell indexes fit u32
    let mut searched = Vec::new();
    let mut search_column = vec![u32::MAX; sparse_pairs.len()];
    for (slot, (&pair, index)) in sparse_pairs.iter().zip(&direct).enumerate() {
        if index.is_none() && !too_many_cells {
            search_column[slot] = searched.len() as u32;
            searched.push(pair);
        }
    }
    let prepared = Prepared {
        starts,
        row_offsets,
        direct,
        searched,
        search_column,
        readers,
        super_parents,
    };
    Ok((joint, Some(prepared)))
}

/// What [`prepare`] builds once per call for the chunks: where every feature's columns
/// start, the pair tables' row offsets, the sparse pairs' direct indexes (or, for those
/// without one, their place among the searched pairs), and how each super-parent reads
/// its children.
pub(super) struct Prepared {
    starts: Vec<usize>,
    row_offsets: Vec<usize>,
    direct: Vec<Option<Vec<u32>>>,
    /// `(pair, a, b)` of the sparse pairs without a direct index.
    searched: Vec<(usize, usize, usize)>,
    /// Each sparse pair's position in `searched` (`u32::MAX`: it has a direct index, or
    /// the tables hold too many cells for `u32` indexes and each orientation searches).
    search_column: Vec<u32>,
    readers: Vec<Vec<Run>>,
    /// The super-parents, in feature order (their rank is their position here).
    pub(super) super_parents: Vec<usize>,
}

impl Prepared {
    /// The chunk scorer over `model` (the model [`prepare`] checked).
    pub(super) fn scorer<'m, 'a>(
        &'m self,
        model: &'m AodeModel<'a>,
        layout: &'m FeatureLayout,
    ) -> ScoringContext<'m, 'a> {
        let contiguous_or_empty = |table: ArrayView2<'m, f64>| table.to_slice().unwrap_or(&[]);
        ScoringContext {
            model,
            n_classes: model.class_log_prior.len(),
            n_features: layout.n_features(),
            starts: &self.starts,
            parent_log_prob: contiguous_or_empty(model.parent_log_prob),
            marginal: contiguous_or_empty(model.marginal_log_prob),
            sparse: model.sparse.to_slice().unwrap_or(&[]),
            counts: model
                .pair_tables
                .counts
                .as_slice()
                .expect("checked contiguous by prepare"),
            row_offsets: &self.row_offsets,
            direct: &self.direct,
            searched: &self.searched,
            search_column: &self.search_column,
            readers: &self.readers,
            super_parents: &self.super_parents,
            layout,
        }
    }
}

/// One chunk's per-super-parent terms ([`ScoringContext::score_chunk`]).
pub(super) struct ChunkTerms {
    /// `(parent rank, row, class)`: the parent's term `T_i` on the rows where it qualifies
    /// (zero elsewhere).
    pub(super) terms: Vec<f64>,
    /// `(parent rank, row)`: whether the parent qualifies on the row.
    pub(super) qualifies: Vec<bool>,
    /// Qualifying parents per row.
    pub(super) n_qualifying: Vec<usize>,
}

/// The contiguous data of a C-order table.
fn contiguous<'a>(table: ArrayView2<'a, f64>, what: &str) -> Result<&'a [f64]> {
    table
        .to_slice()
        .ok_or_else(|| HebError::InvalidParameter(format!("{what} must be C-contiguous")))
}

/// A child read by direct indexing: `table[offset + (u stride + v) C ..]` (a dense
/// table: stride `K_j`; the Naive Bayes table: stride 0, offset of the child's columns).
#[derive(Debug, Clone, Copy)]
pub(super) struct Lookup {
    child: usize,
    stride: usize,
    offset: usize,
}

/// A child of a sparse pair: its orientation's header row, the pair, and whether the
/// parent is the pair's first feature (whose values are the CSR rows).
#[derive(Debug, Clone, Copy)]
pub(super) struct SparseChild {
    child: usize,
    k_child: usize,
    header: usize,
    pair: usize,
    /// Its entry in the scorer's list of sparse pairs (and direct indexes).
    slot: usize,
    parent_first: bool,
}

/// Consecutive children (in feature order) of a super-parent read the same way.
#[derive(Debug, Clone)]
pub(super) enum Run {
    /// Capped orientations: the Naive Bayes table.
    Marginal(Vec<Lookup>),
    /// Dense tables.
    Dense(Vec<Lookup>),
    /// Sparse pairs.
    Sparse(Vec<SparseChild>),
}

/// One super-parent's qualifying rows in a chunk.
struct ParentRows<'c> {
    parent: usize,
    /// Its rank among the super-parents.
    rank: usize,
    readers: &'c [Run],
    rows: &'c [u32],
    /// The parent's codes of the chunk's rows.
    parent_values: ndarray::ArrayView1<'c, i32>,
    /// Row-major (row, feature) child values, -1 where the child does not score.
    child_value: &'c [i32],
    /// The chunk's cells of the searched pairs ([`ScoringContext::find_cells`]); empty
    /// when each orientation searches for itself.
    found: &'c [u32],
    /// Rows in the chunk.
    n_rows: usize,
}

/// What every chunk reads.
pub(super) struct ScoringContext<'m, 'a> {
    model: &'m AodeModel<'a>,
    pub(super) n_classes: usize,
    pub(super) n_features: usize,
    starts: &'m [usize],
    parent_log_prob: &'m [f64],
    marginal: &'m [f64],
    sparse: &'m [f64],
    counts: CountSlice<'m>,
    row_offsets: &'m [usize],
    direct: &'m [Option<Vec<u32>>],
    searched: &'m [(usize, usize, usize)],
    search_column: &'m [u32],
    readers: &'m [Vec<Run>],
    super_parents: &'m [usize],
    layout: &'m FeatureLayout,
}

/// Where [`ScoringContext::score_chunk`] with cells puts a qualifying parent's cells of a
/// row: the `(feature, class)` block at `at` in the chunk's `(row, parent rank, feature,
/// class)` layout, told when the block is complete. A slice is that layout itself.
pub(super) trait CellSink {
    /// The block of `len` entries at `at`, into which the scorer writes the cells that
    /// score (leaving the others as they are).
    fn block(&mut self, at: usize, len: usize) -> &mut [f64];
    /// The block of `(row, parent rank)` is complete.
    fn row_done(&mut self, row: usize, rank: usize);
}

impl CellSink for &mut [f64] {
    fn block(&mut self, at: usize, len: usize) -> &mut [f64] {
        &mut self[at..at + len]
    }

    fn row_done(&mut self, _row: usize, _rank: usize) {}
}

/// No cells: what the scorer without them is given.
pub(super) struct NoCells;

impl CellSink for NoCells {
    fn block(&mut self, _at: usize, _len: usize) -> &mut [f64] {
        &mut []
    }

    fn row_done(&mut self, _row: usize, _rank: usize) {}
}

impl ScoringContext<'_, '_> {
    /// Every super-parent's term `T_i` on the `n` rows from `first`, with the parents in
    /// feature order (a row's terms do not depend on the chunk it is scored in).
    ///
    /// With `CELLS`, `cells` receives every cell a qualifying parent's term adds up, block
    /// by block ([`CellSink`]; a slice is the chunk's `(row, parent rank, feature, class)`
    /// array): `ln P(x_j | y, x_i)` at column j (where `x_j` scores; the rest is left as
    /// it is) and `ln P(y, x_i) - ln pi_y` at column i, the parents one after another in
    /// rank order. Without, `cells` is not touched (pass [`NoCells`]).
    pub(super) fn score_chunk<const CELLS: bool>(
        &self,
        codes: ArrayView2<i32>,
        first: usize,
        n: usize,
        cells: &mut dyn CellSink,
    ) -> ChunkTerms {
        let (n_classes, n_features) = (self.n_classes, self.n_features);
        let n_parents = self.super_parents.len();
        if n == 0 || n_classes == 0 {
            // nothing to score (and no per-parent block to cut the terms into)
            return ChunkTerms {
                terms: Vec::new(),
                qualifies: vec![false; n_parents * n],
                n_qualifying: vec![0; n],
            };
        }
        let model = self.model;
        // row-major: each row's value of every feature as a child (-1: missing or a
        // category that never scores)
        let mut child_value = vec![-1i32; n * n_features];
        for f in 0..n_features {
            let codes_f = codes.row(f);
            for r in 0..n {
                let v = codes_f[first + r];
                // codes were range-checked by the Naive Bayes pass of `prepare`
                if v >= 0 && model.log_child_mean[self.starts[f] + v as usize] > f64::NEG_INFINITY {
                    child_value[r * n_features + f] = v;
                }
            }
        }
        let found = self.find_cells(codes, first, n);
        // (parent rank, row, class) terms of the qualifying rows
        let mut terms = vec![0.0; n_parents * n * n_classes];
        let mut qualifies = vec![false; n_parents * n];
        // one super-parent's rows: which qualify, then its term on each
        let score_one = |rank: usize,
                         rows: &mut Vec<u32>,
                         terms: &mut [f64],
                         qualifies: &mut [bool],
                         cells: &mut dyn CellSink| {
            let i = self.super_parents[rank];
            let codes_i = codes.row(i);
            rows.clear();
            for (r, flag) in qualifies.iter_mut().enumerate() {
                if self.qualifies(i, codes_i[first + r]) {
                    rows.push(r as u32);
                    *flag = true;
                }
            }
            // rows in order of the parent's value: their lookups share table rows (a
            // row's result does not depend on the order)
            if self.layout.cardinality(i) >= 16 {
                rows.sort_by_key(|&r| codes_i[first + r as usize]);
            }
            let parent = ParentRows {
                parent: i,
                rank,
                readers: &self.readers[rank],
                rows,
                parent_values: codes_i.slice(ndarray::s![first..first + n]),
                child_value: &child_value,
                found: &found,
                n_rows: n,
            };
            by_class_count!(n_classes, C, {
                self.score_parent::<C, CELLS>(&parent, terms, cells)
            })
        };
        let per_parent = terms
            .chunks_mut(n * n_classes)
            .zip(qualifies.chunks_mut(n))
            .enumerate();
        if CELLS {
            // every parent writes its columns of each row's block of `cells`
            let mut rows = Vec::with_capacity(n);
            for (rank, (terms, qualifies)) in per_parent {
                score_one(rank, &mut rows, terms, qualifies, &mut *cells);
            }
        } else {
            // the parents in parallel: every row of the chunk is scored by one parent at a
            // time, so a parent value's table rows are read by all the chunk's rows with
            // that value while they are in cache
            per_parent
                .collect::<Vec<_>>()
                .into_par_iter()
                .for_each_init(
                    || Vec::with_capacity(n),
                    |rows, (rank, (terms, qualifies))| {
                        if !crate::interrupt::cancelled() {
                            score_one(rank, rows, terms, qualifies, &mut NoCells);
                        }
                    },
                );
        }
        let mut n_qualifying = vec![0usize; n];
        for flags in qualifies.chunks(n) {
            for (count, &flag) in n_qualifying.iter_mut().zip(flags) {
                *count += usize::from(flag);
            }
        }
        ChunkTerms {
            terms,
            qualifies,
            n_qualifying,
        }
    }

    /// Every row's cell of every searched pair (1 + its index, 0 where the pair has none
    /// or a value is missing), `(searched pair, row)`: both orientations of a pair read
    /// the same cell `(x_a, x_b)`, so each is searched for once, not once per
    /// orientation. Empty (each orientation then searches) above [`FOUND_CELLS`] entries.
    fn find_cells(&self, codes: ArrayView2<i32>, first: usize, n: usize) -> Vec<u32> {
        if self.searched.is_empty() || self.searched.len() * n > FOUND_CELLS {
            return Vec::new();
        }
        let tables = &self.model.pair_tables;
        let mut found = vec![0u32; self.searched.len() * n];
        // the pairs in parallel (a chunk's rows are not split among the threads)
        found
            .par_chunks_exact_mut(n)
            .zip(self.searched.par_iter())
            .for_each(|(column, &(p, a, b))| {
                let (codes_a, codes_b) = (codes.row(a), codes.row(b));
                let offset = self.row_offsets[p];
                for (r, cell) in column.iter_mut().enumerate() {
                    let (u, v) = (codes_a[first + r], codes_b[first + r]);
                    if u >= 0 && v >= 0 {
                        // codes were range-checked by the Naive Bayes pass of `prepare`
                        if let Some(k) = tables.find(offset, u as usize, v) {
                            *cell = k as u32 + 1;
                        }
                    }
                }
            });
        found
    }

    /// Adds every child factor to the parent's terms of its qualifying rows, row by row
    /// (a row's C sums stay in registers), children in feature order. `C` is the number
    /// of classes where the scorer is compiled for it ([`by_class_count`]: 2 to 10), or 0
    /// for any other number.
    ///
    /// With `CELLS`, each child's cell is also written to the row's `(feature, class)`
    /// block of this parent in `cells` (told when the row's block is complete), and the
    /// parent's own `ln P(y, x_i) - ln pi_y` to its column. A child's cell
    /// `b = ln P(x_j | y, x_i)` is written as `(a + b) - a` with `a = ln P(y, x_i)`: the
    /// difference of the parent's term with and without the child, the number the weights
    /// were first fitted on (`hebnb.weighting` read it from two scores), so that they stay
    /// bit-identical (`b` itself differs from it in the last bits of `a`).
    fn score_parent<const C: usize, const CELLS: bool>(
        &self,
        parent: &ParentRows,
        terms: &mut [f64],
        cells: &mut dyn CellSink,
    ) {
        let nc = if C == 0 { self.n_classes } else { C };
        let k_parent = self.layout.cardinality(parent.parent);
        let parent_column = self.starts[parent.parent];
        let n_parents = self.super_parents.len();
        let block = self.n_features * nc;
        let mut acc_dynamic = vec![0.0; if C == 0 { nc } else { 0 }];
        let mut acc_fixed = [0.0f64; C];
        let mut scratch = vec![0.0; 3 * nc];
        for &r in parent.rows {
            let r = r as usize;
            let u = parent.parent_values[r] as usize;
            let acc: &mut [f64] = if C == 0 {
                &mut acc_dynamic
            } else {
                &mut acc_fixed
            };
            let out: &mut [f64] = if CELLS {
                cells.block((r * n_parents + parent.rank) * block, block)
            } else {
                &mut []
            };
            // ln P(y, x_i = u), then the children
            let column = parent_column + u;
            let parent_cells = &self.parent_log_prob[column * nc..(column + 1) * nc];
            acc.copy_from_slice(parent_cells);
            if CELLS {
                let own = &mut out[parent.parent * nc..(parent.parent + 1) * nc];
                write_parent_cell(own, parent_cells, self.model.class_log_prior);
            }
            let values = &parent.child_value[r * self.n_features..(r + 1) * self.n_features];
            for run in parent.readers {
                match run {
                    Run::Dense(children) => {
                        let table = self.model.dense;
                        lookups::<C, CELLS>(acc, table, children, values, u, parent_cells, out);
                    }
                    Run::Marginal(children) => {
                        let table = self.marginal;
                        lookups::<C, CELLS>(acc, table, children, values, u, parent_cells, out);
                    }
                    Run::Sparse(children) => {
                        for child in children {
                            let v = values[child.child];
                            if v >= 0 {
                                let column = self.search_column[child.slot];
                                let found = (column != u32::MAX && !parent.found.is_empty())
                                    .then(|| parent.found[column as usize * parent.n_rows + r]);
                                self.sparse_child::<C>(
                                    acc,
                                    child,
                                    (u, v as usize, found),
                                    k_parent,
                                    &mut scratch,
                                );
                                if CELLS {
                                    let j = child.child;
                                    let lp = &scratch[..nc];
                                    write_cell(&mut out[j * nc..(j + 1) * nc], parent_cells, lp);
                                }
                            }
                        }
                    }
                }
            }
            terms[r * nc..(r + 1) * nc].copy_from_slice(acc);
            if CELLS {
                cells.row_done(r, parent.rank);
            }
        }
    }

    /// Adds a sparse pair's `ln P(x_j = v | y, x_i = u)` ([`Self::sparse_log_prob`], left
    /// in `scratch[..C]`) to `acc`.
    #[inline]
    fn sparse_child<const C: usize>(
        &self,
        acc: &mut [f64],
        child: &SparseChild,
        place: (usize, usize, Option<u32>),
        k_parent: usize,
        scratch: &mut [f64],
    ) {
        self.sparse_log_prob(child, place, k_parent, scratch);
        add_classes::<C>(acc, &scratch[..acc.len()]);
    }

    /// A sparse pair's `ln P(x_j = v | y, x_i = u)` into `scratch[..C]` (`scratch` holds
    /// `3 C`): the cell found by the direct index, the chunk's search (`found`: 1 + its
    /// index, 0 for none) or a binary search, evaluated from its counts ([`sparse_cell`]).
    #[inline]
    fn sparse_log_prob(
        &self,
        child: &SparseChild,
        (u, v, found): (usize, usize, Option<u32>),
        k_parent: usize,
        scratch: &mut [f64],
    ) {
        let nc = self.n_classes;
        let width = sparse_width(nc);
        let (lp, rest) = scratch.split_at_mut(nc);
        let (log_concentration, cell_counts) = rest.split_at_mut(nc);
        let header = child.header;
        let head = &self.sparse[header * width..(header + 1) * width];
        let row = &self.sparse[(header + 1 + u) * width..(header + 2 + u) * width];
        // the pair's CSR rows are the values of its first feature
        let (first_value, second_value, k_second) = if child.parent_first {
            (u, v, child.k_child)
        } else {
            (v, u, k_parent)
        };
        let cell = match (&self.direct[child.slot], found) {
            (Some(index), _) => match index[first_value * k_second + second_value] {
                0 => None,
                k => Some(k as usize - 1),
            },
            (None, Some(found)) => found.checked_sub(1).map(|k| k as usize),
            (None, None) => self.model.pair_tables.find(
                self.row_offsets[child.pair],
                first_value,
                second_value as i32,
            ),
        };
        let cell = cell.map(|k| {
            self.counts.read(k * nc, cell_counts);
            &*cell_counts
        });
        sparse_cell(
            self.model,
            cell,
            head,
            row,
            self.starts[child.child] + v,
            lp,
            log_concentration,
        );
    }

    /// Whether super-parent `i` qualifies on a row whose value of it is `u` (-1: missing):
    /// present, and weighing at least `min_parent_count` in training.
    #[inline]
    pub(super) fn qualifies(&self, i: usize, u: i32) -> bool {
        u >= 0
            && self.model.parent_count[self.starts[i] + u as usize] >= self.model.min_parent_count
    }

    /// Each numbered cell's value `(cells, C)` into `values` (see
    /// [`super::CellRequest::Numbered`]: column `k` of `rank * F + j` has the cells
    /// `column_starts[k]..column_starts[k + 1]`, each evaluated on its first row of
    /// `codes`): [`Self::cell_value`], zero where the parent does not qualify or the row has
    /// no value of `j`. Columns in parallel.
    ///
    /// # Errors
    /// [`HebError::Interrupted`] and [`HebError::Allocation`].
    pub(super) fn numbered_cell_values(
        &self,
        codes: ArrayView2<i32>,
        (column_starts, first_row): (&[usize], ndarray::ArrayView1<i64>),
        values: &mut [f64],
    ) -> Result<()> {
        let (nc, n_features) = (self.n_classes, self.n_features);
        let columns = split_by_bounds(values, column_starts, nc)?;
        columns.into_par_iter().for_each(|(k, own)| {
            if crate::interrupt::cancelled() {
                return;
            }
            let (rank, j) = (k / n_features, k % n_features);
            let i = self.super_parents[rank];
            let reader = self.child_reader(rank, j);
            if j != i && reader.is_none() {
                return; // a child the parent does not read has no cell
            }
            let mut scratch = vec![0.0; 3 * nc];
            let rows = first_row.slice(ndarray::s![column_starts[k]..]);
            for (out, &row) in own.chunks_exact_mut(nc).zip(rows) {
                let (u, v) = (codes[[i, row as usize]], codes[[j, row as usize]]);
                if self.qualifies(i, u) && v >= 0 {
                    let place = (u as usize, v as usize);
                    self.cell_value((rank, reader.as_ref()), place, out, &mut scratch);
                }
            }
        });
        crate::interrupt::check()
    }

    /// Whether each super-parent qualifies on each of the `n` rows of `codes` from
    /// `first`, into `out_qualifies` `(row, parent rank)`.
    pub(super) fn mark_qualifying(
        &self,
        codes: ArrayView2<i32>,
        (first, n): (usize, usize),
        out_qualifies: &mut [bool],
    ) {
        let n_parents = self.super_parents.len();
        for (rank, &i) in self.super_parents.iter().enumerate() {
            let codes_i = codes.row(i);
            for r in 0..n {
                out_qualifies[r * n_parents + rank] = self.qualifies(i, codes_i[first + r]);
            }
        }
    }

    /// The cells of the `n` rows of `codes` from `first` as [`Self::score_chunk`] writes
    /// them into a chunk's `(row, parent rank, feature, class)` array (`out_cells`, zero
    /// where nothing is written), read from the `values` of their numbered `cells` (P F,
    /// S; each among its column's, checked by the caller;
    /// [`Self::numbered_cell_values`]), with each parent's qualification into
    /// `out_qualifies` `(row, parent rank)`. `C` is the number of classes where it is
    /// compiled for it ([`by_class_count`]), or 0.
    pub(super) fn gather_cells<const C: usize>(
        &self,
        (cells, values): (ArrayView2<i64>, &[f64]),
        codes: ArrayView2<i32>,
        (first, n): (usize, usize),
        out_qualifies: &mut [bool],
        out_cells: &mut [f64],
    ) {
        let (nc, n_features) = (self.n_classes, self.n_features);
        let n_parents = self.super_parents.len();
        self.mark_qualifying(codes, (first, n), out_qualifies);
        for r in 0..n {
            let row = first + r;
            for rank in 0..n_parents {
                if !out_qualifies[r * n_parents + rank] {
                    continue;
                }
                let block = (r * n_parents + rank) * n_features;
                for j in 0..n_features {
                    let k = rank * n_features + j;
                    let cell = cells[[k, row]];
                    if cell < 0 {
                        continue;
                    }
                    let cell = cell as usize;
                    copy_classes::<C>(
                        &mut out_cells[(block + j) * nc..(block + j + 1) * nc],
                        &values[cell * nc..(cell + 1) * nc],
                    );
                }
            }
        }
    }

    /// How super-parent `rank` reads child `j` (none for the parent itself).
    pub(super) fn child_reader(&self, rank: usize, j: usize) -> Option<ChildReader<'_>> {
        self.readers[rank].iter().find_map(|run| match run {
            Run::Dense(children) => children
                .iter()
                .find(|c| c.child == j)
                .map(|&c| ChildReader::Table(self.model.dense, c)),
            Run::Marginal(children) => children
                .iter()
                .find(|c| c.child == j)
                .map(|&c| ChildReader::Table(self.marginal, c)),
            Run::Sparse(children) => children
                .iter()
                .find(|c| c.child == j)
                .map(ChildReader::Sparse),
        })
    }

    /// The cell of super-parent `rank` at column `j` for parent value `u` and child value
    /// `v`, into `out` (C classes), as [`Self::score_chunk`] writes it for a row with
    /// those values where the parent qualifies: `ln P(y, x_i = u) - ln pi_y` at `j = i`
    /// (`reader` none), else `ln P(x_j = v | y, x_i = u)` by `reader` as `(a + b) - a`
    /// ([`write_cell`]), or zeros where `v` never scores. `scratch` holds `3 C`.
    pub(super) fn cell_value(
        &self,
        (rank, reader): (usize, Option<&ChildReader>),
        (u, v): (usize, usize),
        out: &mut [f64],
        scratch: &mut [f64],
    ) {
        let nc = self.n_classes;
        let i = self.super_parents[rank];
        let parent_column = self.starts[i] + u;
        let parent_cells = &self.parent_log_prob[parent_column * nc..(parent_column + 1) * nc];
        let Some(reader) = reader else {
            write_parent_cell(out, parent_cells, self.model.class_log_prior);
            return;
        };
        let j = match reader {
            ChildReader::Table(_, lookup) => lookup.child,
            ChildReader::Sparse(child) => child.child,
        };
        if self.model.log_child_mean[self.starts[j] + v] == f64::NEG_INFINITY {
            out.iter_mut().for_each(|cell| *cell = 0.0);
            return;
        }
        match reader {
            ChildReader::Table(table, lookup) => {
                let at = lookup.offset + (u * lookup.stride + v) * nc;
                write_cell(out, parent_cells, &table[at..at + nc]);
            }
            ChildReader::Sparse(child) => {
                let k_parent = self.layout.cardinality(i);
                self.sparse_log_prob(child, (u, v, None), k_parent, scratch);
                write_cell(out, parent_cells, &scratch[..nc]);
            }
        }
    }
}

/// How a super-parent reads one child ([`ScoringContext::child_reader`]).
pub(super) enum ChildReader<'a> {
    /// A dense table or the Naive Bayes table.
    Table(&'a [f64], Lookup),
    /// A sparse pair.
    Sparse(&'a SparseChild),
}

/// A parent's own cell, `ln P(y, x_i) - ln pi_y` (`parent` less `class_log_prior`).
#[inline(always)]
fn write_parent_cell(out: &mut [f64], parent: &[f64], class_log_prior: &[f64]) {
    for ((cell, &lp), &prior) in out.iter_mut().zip(parent).zip(class_log_prior) {
        *cell = lp - prior;
    }
}

/// A child's cell as `(a + b) - a`, `a = ln P(y, x_i)` (`parent`) and `b = ln P(x_j | y,
/// x_i)` (`child`): see [`ScoringContext::score_parent`].
#[inline(always)]
fn write_cell(out: &mut [f64], parent: &[f64], child: &[f64]) {
    for ((cell, &a), &b) in out.iter_mut().zip(parent).zip(child) {
        *cell = (a + b) - a;
    }
}

/// Adds `table[offset + (u stride + v) C ..]` of every child with a value to `acc` (`C`
/// classes, or 0 for any number; with
/// `CELLS`, also writes it to the child's classes in `cells`, the row's `(feature, class)`
/// block, [`write_cell`] with the parent's `parent` cells).
#[inline(always)]
fn lookups<const C: usize, const CELLS: bool>(
    acc: &mut [f64],
    table: &[f64],
    children: &[Lookup],
    values: &[i32],
    u: usize,
    parent: &[f64],
    cells: &mut [f64],
) {
    let nc = acc.len();
    for child in children {
        let v = values[child.child];
        if v >= 0 {
            let at = child.offset + (u * child.stride + v as usize) * nc;
            let lp = &table[at..at + nc];
            add_classes::<C>(acc, lp);
            if CELLS {
                write_cell(
                    &mut cells[child.child * nc..(child.child + 1) * nc],
                    parent,
                    lp,
                );
            }
        }
    }
}

/// `ln P(x_j = v | y = c, x_i = u)` of a sparse orientation into `lp`, with the fit's
/// operations: a seen cell's `ln(N + m mu) - ln(N_{c,u} + m)` from its class counts `cell`,
/// or the unseen `ln m + ln(a / (N_u + a)) - ln(N_{c,u} + m) + ln mu_{j,v}`. `head` is the
/// orientation's header row (`m_c`, then the two-level `a` or NaN), `row` parent value
/// u's row (`ln(N_{c,u} + m_c)`, then `N_u + a`).
#[inline]
fn sparse_cell(
    model: &AodeModel,
    cell: Option<&[f64]>,
    head: &[f64],
    row: &[f64],
    child_column: usize,
    lp: &mut [f64],
    log_concentration: &mut [f64],
) {
    let nc = lp.len();
    let pooled = head[nc];
    match cell {
        Some(cell) => {
            // the fit's cell mean: the child mean, or the two-level class-pooled one
            let mean = model.child_mean[child_column];
            let mean = if pooled.is_nan() {
                mean
            } else {
                let pooled_cell = cell.iter().fold(0.0, |sum, &n| sum + n);
                (pooled_cell + pooled * mean) / row[nc]
            };
            for c in 0..nc {
                lp[c] = (cell[c] + head[c] * mean).ln() - row[c];
            }
        }
        None => {
            let level = if pooled.is_nan() {
                0.0
            } else {
                pooled.ln() - row[nc].ln()
            };
            for (log_m, &m) in log_concentration.iter_mut().zip(&head[..nc]) {
                *log_m = m.ln();
            }
            let log_mean = model.log_child_mean[child_column];
            for c in 0..nc {
                lp[c] = (log_concentration[c] + level - row[c]) + log_mean;
            }
        }
    }
}
