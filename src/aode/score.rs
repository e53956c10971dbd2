//! Scoring rows with a fitted AODE model (SPEC eq. 7):
//!
//! ```text
//! ln P(y, x) = ln (1/q sum over qualifying super-parents i of
//!              exp[ ln P(y, x_i) + sum over j != i of ln P(x_j | y, x_i) ])
//! ```
//!
//! Child terms come from the fitted cell table (one lookup per unordered pair and row:
//! a direct (u, v) index where a pair's table is dense enough, else a binary search in
//! its CSR row), from the unseen-cell row plus `ln mu_{j,v}` for a value pair never seen,
//! or from the Naive Bayes table for a capped orientation. No logarithm is taken per
//! lookup. Rows without a qualifying super-parent keep the Naive Bayes score.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::fit::AodeFit;
use super::Structure;
use crate::counts::check_codes;
use crate::error::{check_len, HebError, Result};
use crate::layout::FeatureLayout;
use crate::pair_counts::{pair_row_offsets, pairs, PairTablesView};
use crate::scoring;

/// Everything the scorer reads, all fitted.
#[derive(Debug, Clone, Copy)]
pub struct AodeModel<'a> {
    pub pair_tables: PairTablesView<'a>,
    /// [`AodeFit::cell_log_prob`], (nnz, 2 C).
    pub cell_log_prob: ArrayView2<'a, f64>,
    /// [`AodeFit::unseen_log_prob`].
    pub unseen_log_prob: ArrayView2<'a, f64>,
    /// `ln mu_{j,v}` of the child mean used by the fit (uniform for Laplace), per category;
    /// `-inf` marks a category that never scores (zero mean, SPEC).
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
            cell_log_prob: self.cell_log_prob.view(),
            unseen_log_prob: self.unseen_log_prob.view(),
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

/// Rows per parallel scoring task. A chunk is scored pair by pair, so each pair's cells
/// are fetched once per chunk and serve all its rows: on wide data the cell tables are far
/// larger than the caches, and chunks of a few thousand rows are three times faster than
/// chunks of 128. The chunk's per-parent terms (`F x rows x C` numbers) are kept near
/// 8 MB, and every thread gets about four chunks. A row's score does not depend on the
/// chunking, so results stay identical for any thread count.
fn rows_per_chunk(n_rows: usize, n_features: usize, n_classes: usize) -> usize {
    const TERMS_BYTES: usize = 8 << 20;
    let by_memory = TERMS_BYTES / (n_features.max(1) * n_classes.max(1) * 8);
    let by_threads = n_rows.div_ceil(4 * rayon::current_num_threads());
    by_memory.min(by_threads).clamp(64, 4096)
}

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
    check_codes(codes, layout)?;
    let n_classes = model.class_log_prior.len();
    let n_features = layout.n_features();
    model.pair_tables.check(layout, n_classes)?;
    let width = layout.n_columns();
    check_len(
        "cell log-probability rows",
        model.pair_tables.indices.len(),
        model.cell_log_prob.nrows(),
    )?;
    check_len(
        "cell log-probability columns",
        2 * n_classes,
        model.cell_log_prob.ncols(),
    )?;
    let cell_log_prob = model.cell_log_prob.as_slice().ok_or_else(|| {
        HebError::InvalidParameter("cell log-probability table must be C-contiguous".into())
    })?;
    model.structure.check(n_features)?;
    let unseen_offsets = model.structure.unseen_row_offsets(layout);
    let unseen_rows = *unseen_offsets.last().unwrap_or(&0);
    check_len(
        "unseen-cell table rows",
        unseen_rows,
        model.unseen_log_prob.nrows(),
    )?;
    check_len(
        "unseen-cell table columns",
        n_classes,
        model.unseen_log_prob.ncols(),
    )?;
    check_len("child mean", width, model.log_child_mean.len())?;
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
    let mut joint = scoring::joint_log_likelihood(
        codes,
        model.marginal_log_prob,
        model.class_log_prior,
        None,
        layout,
    )?;
    let row_offsets = pair_row_offsets(layout);
    let all_pairs = pairs(n_features);
    let starts: Vec<usize> = (0..n_features).map(|f| layout.columns(f).start).collect();
    let marginal = contiguous(model.marginal_log_prob, "marginal log-probability table")?;
    let unseen = contiguous(model.unseen_log_prob, "unseen-cell table")?;
    let parent_log_prob = contiguous(model.parent_log_prob, "parent log-probability table")?;
    let n_classes_nz = n_classes.max(1);
    // Where a pair's table is dense enough (K_a K_b <= 4 cells + 64), a direct
    // (u, v) -> cell index replaces the binary search; it costs at most 16 bytes per cell.
    let direct: Vec<Option<Vec<u32>>> = all_pairs
        .par_iter()
        .enumerate()
        .map(|(p, &(a, b))| {
            let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
            let rows = row_offsets[p]..row_offsets[p] + k_a;
            let indptr = model.pair_tables.indptr;
            let cells = (indptr[rows.end] - indptr[rows.start]) as usize;
            if !model.structure.wanted(a, b)
                || k_a * k_b > 4 * cells + 64
                || indptr[indptr.len() - 1] >= u32::MAX as i64
            {
                return None;
            }
            let mut index = vec![0u32; k_a * k_b];
            for (u, row) in rows.enumerate() {
                for k in indptr[row] as usize..indptr[row + 1] as usize {
                    index[u * k_b + model.pair_tables.indices[k] as usize] = k as u32 + 1;
                }
            }
            Some(index)
        })
        .collect();

    // Adds one child factor ln P(x_j | y, x_i) to a super-parent's class terms.
    let add_child = |term: &mut [f64],
                     capped: bool,
                     side: usize,
                     cell: Option<usize>,
                     child_column: usize,
                     unseen_row: usize| {
        if capped {
            let lp = &marginal[child_column * n_classes..(child_column + 1) * n_classes];
            term.iter_mut().zip(lp).for_each(|(t, &lp)| *t += lp);
        } else if let Some(k) = cell {
            let start = (k * 2 + side) * n_classes;
            let lp = &cell_log_prob[start..start + n_classes];
            term.iter_mut().zip(lp).for_each(|(t, &lp)| *t += lp);
        } else {
            let log_mean = model.log_child_mean[child_column];
            let lp = &unseen[unseen_row * n_classes..(unseen_row + 1) * n_classes];
            term.iter_mut()
                .zip(lp)
                .for_each(|(t, &lp)| *t += lp + log_mean);
        }
    };

    // A chunk of rows is scored pair by pair (not row by row), so that one pair's table
    // stays in cache while the chunk's rows look it up.
    let chunk_rows = rows_per_chunk(codes.ncols(), n_features, n_classes);
    joint
        .as_slice_mut()
        .expect("freshly allocated")
        .par_chunks_mut(chunk_rows * n_classes_nz)
        .enumerate()
        .for_each(|(chunk, block)| {
            if crate::interrupt::cancelled() {
                return;
            }
            let first = chunk * chunk_rows;
            let n = block.len() / n_classes_nz;
            // feature-major: value, whether it qualifies as super-parent, whether it scores
            let mut value = vec![-1i32; n_features * n];
            let mut qualifies = vec![false; n_features * n];
            let mut child_ok = vec![false; n_features * n];
            let mut n_parents = vec![0usize; n];
            // (parent, row, class): each parent's terms are one run over the chunk's rows
            let mut terms = vec![0.0; n_features * n * n_classes];
            for (f, &feature_start) in starts.iter().enumerate() {
                let codes_f = codes.row(f);
                for r in 0..n {
                    let v = codes_f[first + r];
                    let at = f * n + r;
                    value[at] = v;
                    if v < 0 {
                        continue;
                    }
                    // codes were range-checked by the Naive Bayes pass above
                    let column = feature_start + v as usize;
                    child_ok[at] = model.log_child_mean[column] > f64::NEG_INFINITY;
                    qualifies[at] = model.structure.parents[f]
                        && model.parent_count[column] >= model.min_parent_count;
                    if qualifies[at] {
                        n_parents[r] += 1;
                        let term = at * n_classes;
                        terms[term..term + n_classes].copy_from_slice(
                            &parent_log_prob[column * n_classes..(column + 1) * n_classes],
                        );
                    }
                }
            }
            for (p, &(a, b)) in all_pairs.iter().enumerate() {
                if !(model.structure.parents[a] || model.structure.parents[b]) {
                    continue; // neither is a super-parent: the pair never scores
                }
                let capped_a = !model.structure.modelled(a, b);
                let capped_b = !model.structure.modelled(b, a);
                let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
                // side b's unseen rows follow side a's when side a is modelled
                let rows_a = if capped_a { 0 } else { k_a };
                for r in 0..n {
                    let (at_a, at_b) = (a * n + r, b * n + r);
                    let wanted_a = qualifies[at_a] && child_ok[at_b];
                    let wanted_b = qualifies[at_b] && child_ok[at_a];
                    if !(wanted_a || wanted_b) {
                        continue;
                    }
                    let (u, v) = (value[at_a], value[at_b]);
                    let cell = if (wanted_a && !capped_a) || (wanted_b && !capped_b) {
                        match &direct[p] {
                            Some(index) => match index[u as usize * k_b + v as usize] {
                                0 => None,
                                k => Some(k as usize - 1),
                            },
                            None => model.pair_tables.find(row_offsets[p], u as usize, v),
                        }
                    } else {
                        None
                    };
                    if wanted_a {
                        add_child(
                            &mut terms[at_a * n_classes..(at_a + 1) * n_classes],
                            capped_a,
                            0,
                            cell,
                            starts[b] + v as usize,
                            unseen_offsets[p] + u as usize,
                        );
                    }
                    if wanted_b {
                        add_child(
                            &mut terms[at_b * n_classes..(at_b + 1) * n_classes],
                            capped_b,
                            1,
                            cell,
                            starts[a] + u as usize,
                            unseen_offsets[p] + rows_a + v as usize,
                        );
                    }
                }
            }
            // ln (1/q sum_i exp(term_i)), max-shifted, parents in feature order
            for (r, out) in block.chunks_mut(n_classes_nz).enumerate() {
                if n_parents[r] == 0 {
                    continue;
                }
                let log_q = (n_parents[r] as f64).ln();
                for (c, slot) in out.iter_mut().enumerate() {
                    let parent_terms = (0..n_features)
                        .filter(|&f| qualifies[f * n + r])
                        .map(|f| terms[(f * n + r) * n_classes + c]);
                    let max = parent_terms.clone().fold(f64::NEG_INFINITY, f64::max);
                    *slot = if max.is_finite() {
                        max + parent_terms.map(|t| (t - max).exp()).sum::<f64>().ln() - log_q
                    } else {
                        max
                    };
                }
            }
        });
    crate::interrupt::check()?;
    Ok(joint)
}

/// The contiguous data of a C-order table.
fn contiguous<'a>(table: ArrayView2<'a, f64>, what: &str) -> Result<&'a [f64]> {
    table
        .to_slice()
        .ok_or_else(|| HebError::InvalidParameter(format!("{what} must be C-contiguous")))
}
