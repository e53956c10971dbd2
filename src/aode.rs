//! AODE and HEB-AODE (SPEC eqs. 7-12, Algorithm 2, and the two-level prior).
//!
//! Scoring (eq. 7), averaged over the q qualifying super-parents so that the result is a
//! joint probability estimate:
//!
//! ```text
//! P(y, x) = 1/q sum over i with N_i(x_i) >= min_parent_count of
//!           P(y, x_i) prod over j != i, x_j present and known, of P(x_j | y, x_i)
//! ```
//!
//! and the Naive Bayes fallback when no super-parent qualifies. Child conditionals of the
//! ordered pair (parent i, child j), from the sparse pair tables of [`crate::pair_counts`]:
//!
//! ```text
//! P(x_j = v | y = c, x_i = u) = (N_{c,u,v} + m_{c,i,j} mu_{u,v}) / (N_{c,u} + m_{c,i,j})
//! ```
//!
//! * Laplace AODE (eq. 9): `m = K_j` and the uniform mean `mu_{u,v} = 1/K_j`.
//! * HEB-AODE, pooled prior (eqs. 10-11): `mu_{u,v} = mu_{j,v}`, the pooled marginal of
//!   X_j, and `m_{c,i,j}` maximises the multi-document evidence whose documents are the
//!   parent values u (fallback `m = K_j` when `max_u N^{(i)}_{c,u} < N0`).
//! * HEB-AODE, two-level prior (SPEC "Beyond the paper"): `a_{i,j}` maximises the
//!   evidence of the class-pooled tables `N_{u,v} = sum_c N_{c,u,v}` with mean `mu_j`;
//!   then `mu_{u,v} = (N_{u,v} + a mu_{j,v}) / (N_u + a)` and `m_{c,i,j}` maximises the
//!   evidence with that per-document mean.
//!
//! Every evidence is built from the non-zero cells only ([`EvidenceTerms`]) and maximised by
//! the crate's one solver ([`maximise_evidence`]). Orientations capped by the memory cap
//! (SPEC) use the Naive Bayes child `P(x_j | y)` instead.
//!
//! # What is stored
//! For every stored cell and both orientations, `ln P(child | c, parent)` (an (nnz, 2, C)
//! table); for every parent value of every orientation the "unseen cell" part
//! `ln m + ln(two-level weight) - ln(N_{c,u} + m)`, to which the scorer adds `ln mu_{j,v}`.
//! So scoring needs one binary search per unordered pair and row, and no logarithm.

use ndarray::{Array2, Array3, ArrayView2};
use rayon::prelude::*;

use crate::counts::check_codes;
use crate::error::{check_len, HebError, Result};
use crate::evidence::EvidenceTerms;
use crate::layout::FeatureLayout;
use crate::pair_counts::{pair_row_offsets, pairs, PairTablesView};
use crate::scoring;
use crate::solver::{maximise_evidence, maximise_evidence_from, Solution, SolverSettings};

/// How the child conditionals are smoothed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildSmoothing {
    /// `m = K_j` toward the given child mean; with the uniform mean `1/K_j` this is
    /// Laplace AODE (eq. 9).
    Laplace,
    /// Type-II ML `m_{c,i,j}` toward the pooled marginal of the child (eqs. 10-11).
    HebPooled,
    /// Type-II ML at two levels: class-pooled conditional, then class (SPEC two-level prior).
    HebTwoLevel,
}

/// Parameters of the child fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AodeSettings {
    pub smoothing: ChildSmoothing,
    /// `N0`: below this largest parent-value count of a class, `m = K_j` (SPEC).
    pub min_count: f64,
    pub solver: SolverSettings,
}

/// The fitted child conditionals of every ordered pair.
#[derive(Debug, Clone, PartialEq)]
pub struct AodeFit {
    /// `m_{c,i,j}`, shape (C, F, F); NaN on the diagonal and for capped orientations.
    pub concentration: Array3<f64>,
    /// `a_{i,j}` of the two-level prior, shape (F, F); NaN where not fitted.
    pub pooled_concentration: Array2<f64>,
    /// Log evidence at `m_{c,i,j}`, shape (C, F, F); NaN where not fitted (and for Laplace).
    pub log_evidence: Array3<f64>,
    /// Solver steps for `m_{c,i,j}` (0 where a rule decided), shape (C, F, F).
    pub n_iter: Array3<i64>,
    /// Whether each solve met its stopping rule, shape (C, F, F).
    pub converged: Array3<bool>,
    /// `ln P(child | c, parent)` of every stored cell, shape (nnz, 2, C): orientation 0 has
    /// the pair's first feature as parent, orientation 1 the second.
    pub cell_log_prob: Array3<f64>,
    /// Per orientation and parent value, shape (sum over pairs of K_a + K_b, C): the log
    /// probability of an unseen cell minus `ln mu_{j,v}`.
    pub unseen_log_prob: Array2<f64>,
}

/// First row of each pair in the unseen-cell table (length P + 1): pair `(a, b)` owns
/// `K_a` rows (parent a) followed by `K_b` rows (parent b).
pub fn unseen_row_offsets(layout: &FeatureLayout) -> Vec<usize> {
    let mut offsets = vec![0];
    for (a, b) in pairs(layout.n_features()) {
        let last = offsets.last().copied().unwrap_or(0);
        offsets.push(last + layout.cardinality(a) + layout.cardinality(b));
    }
    offsets
}

/// Whether the orientation (parent i, child j) is capped, from a row-major F x F mask.
fn is_capped(capped: &[bool], n_features: usize, parent: usize, child: usize) -> bool {
    capped[parent * n_features + child]
}

/// One orientation of one pair while fitting.
struct Orientation {
    parent: usize,
    child: usize,
    /// 0: the parent is the pair's row feature; 1: its column feature.
    side: usize,
}

/// Results of one pair, both orientations, before they are assembled.
struct PairFit {
    /// (orientation, class) -> solution; None where capped.
    solutions: [Option<Vec<Solution>>; 2],
    pooled: [Option<f64>; 2],
    /// (cells, 2, C) flat.
    cell_log_prob: Vec<f64>,
    /// (K_a + K_b, C) flat.
    unseen_log_prob: Vec<f64>,
}

/// Fits the child conditionals of every ordered pair, in parallel over pairs.
///
/// `category_counts` is the Naive Bayes `(C, sum K_f)` table of `N_{c,f,v}` (for the
/// low-count rule), `child_mean` the prior mean `mu_{j,v}` of every category (uniform for
/// Laplace), `capped` the row-major F x F mask of orientations (parent, child) that use
/// the Naive Bayes child instead.
///
/// # Errors
/// Tables that disagree with the layout or with each other.
pub fn fit_children(
    pair_tables: PairTablesView,
    category_counts: ArrayView2<f64>,
    child_mean: &[f64],
    capped: &[bool],
    layout: &FeatureLayout,
    settings: &AodeSettings,
) -> Result<AodeFit> {
    let n_classes = category_counts.nrows();
    let n_features = layout.n_features();
    pair_tables.check(layout, n_classes)?;
    check_len(
        "count table columns",
        layout.n_columns(),
        category_counts.ncols(),
    )?;
    check_len("child prior mean", layout.n_columns(), child_mean.len())?;
    check_len("capped mask", n_features * n_features, capped.len())?;

    let row_offsets = pair_row_offsets(layout);
    let all_pairs = pairs(n_features);
    let fits: Vec<PairFit> = all_pairs
        .par_iter()
        .with_max_len(1)
        .enumerate()
        .map(|(p, &(a, b))| {
            let rows = row_offsets[p]..row_offsets[p] + layout.cardinality(a);
            let cells =
                pair_tables.indptr[rows.start] as usize..pair_tables.indptr[rows.end] as usize;
            // parent value of each cell on side 0 (its CSR row) and side 1 (its index)
            let mut row_of_cell = Vec::with_capacity(cells.len());
            for (u, row) in rows.clone().enumerate() {
                let length = (pair_tables.indptr[row + 1] - pair_tables.indptr[row]) as usize;
                row_of_cell.extend(std::iter::repeat_n(u, length));
            }
            let column_of_cell: Vec<usize> = pair_tables.indices[cells.clone()]
                .iter()
                .map(|&v| v as usize)
                .collect();
            let counts = pair_tables.counts.slice(ndarray::s![cells.clone(), ..]);
            let mut fit = PairFit {
                solutions: [None, None],
                pooled: [None, None],
                cell_log_prob: vec![f64::NAN; cells.len() * 2 * n_classes],
                unseen_log_prob: vec![
                    f64::NAN;
                    (layout.cardinality(a) + layout.cardinality(b)) * n_classes
                ],
            };
            for side in 0..2 {
                if crate::interrupt::cancelled() {
                    continue;
                }
                let o = if side == 0 {
                    Orientation {
                        parent: a,
                        child: b,
                        side,
                    }
                } else {
                    Orientation {
                        parent: b,
                        child: a,
                        side,
                    }
                };
                if is_capped(capped, n_features, o.parent, o.child) {
                    continue;
                }
                let (parent_of, child_of) = if side == 0 {
                    (&row_of_cell, &column_of_cell)
                } else {
                    (&column_of_cell, &row_of_cell)
                };
                let unseen_start = if side == 0 {
                    0
                } else {
                    layout.cardinality(a) * n_classes
                };
                let unseen_end = unseen_start + layout.cardinality(o.parent) * n_classes;
                let (solutions, pooled) = fit_orientation(
                    &o,
                    counts,
                    parent_of,
                    child_of,
                    category_counts,
                    child_mean,
                    layout,
                    settings,
                    &mut fit.cell_log_prob,
                    &mut fit.unseen_log_prob[unseen_start..unseen_end],
                );
                fit.solutions[side] = Some(solutions);
                fit.pooled[side] = pooled;
            }
            fit
        })
        .collect();
    crate::interrupt::check()?;

    let nnz = pair_tables.indices.len();
    let mut concentration = Array3::from_elem((n_classes, n_features, n_features), f64::NAN);
    let mut log_evidence = concentration.clone();
    let mut n_iter = Array3::zeros((n_classes, n_features, n_features));
    let mut converged = Array3::from_elem((n_classes, n_features, n_features), true);
    let mut pooled_concentration = Array2::from_elem((n_features, n_features), f64::NAN);
    let mut cell_log_prob = Vec::with_capacity(nnz * 2 * n_classes);
    let mut unseen_log_prob = Vec::new();
    for (fit, &(a, b)) in fits.into_iter().zip(&all_pairs) {
        for (side, (parent, child)) in [(a, b), (b, a)].into_iter().enumerate() {
            if let Some(solutions) = &fit.solutions[side] {
                for (c, s) in solutions.iter().enumerate() {
                    concentration[[c, parent, child]] = s.concentration;
                    log_evidence[[c, parent, child]] = s.log_evidence;
                    n_iter[[c, parent, child]] = s.n_iter as i64;
                    converged[[c, parent, child]] = s.converged;
                }
            }
            if let Some(pooled) = fit.pooled[side] {
                pooled_concentration[[parent, child]] = pooled;
            }
        }
        cell_log_prob.extend_from_slice(&fit.cell_log_prob);
        unseen_log_prob.extend_from_slice(&fit.unseen_log_prob);
    }
    let n_unseen_rows = unseen_log_prob.len() / n_classes.max(1);
    Ok(AodeFit {
        concentration,
        pooled_concentration,
        log_evidence,
        n_iter,
        converged,
        cell_log_prob: Array3::from_shape_vec((nnz, 2, n_classes), cell_log_prob)
            .map_err(|e| HebError::InvalidParameter(e.to_string()))?,
        unseen_log_prob: Array2::from_shape_vec((n_unseen_rows, n_classes), unseen_log_prob)
            .map_err(|e| HebError::InvalidParameter(e.to_string()))?,
    })
}

/// Fits one orientation of one pair and writes its log probabilities.
///
/// Returns the per-class solutions and the two-level `a` (if any).
#[allow(clippy::too_many_arguments)]
fn fit_orientation(
    o: &Orientation,
    counts: ArrayView2<f64>,
    parent_of: &[usize],
    child_of: &[usize],
    category_counts: ArrayView2<f64>,
    child_mean: &[f64],
    layout: &FeatureLayout,
    settings: &AodeSettings,
    cell_log_prob: &mut [f64],
    unseen_log_prob: &mut [f64],
) -> (Vec<Solution>, Option<f64>) {
    let n_classes = counts.ncols();
    let k_parent = layout.cardinality(o.parent);
    let k_child = layout.cardinality(o.child) as f64;
    let child_start = layout.columns(o.child).start;
    let mean_of = |k: usize| child_mean[child_start + child_of[k]];

    // document totals N_{c,u} (rows with both present) and their class-pooled sums N_u
    let mut documents = vec![0.0; k_parent * n_classes];
    let mut pooled_documents = vec![0.0; k_parent];
    let mut pooled_cells = vec![0.0; counts.nrows()];
    for (k, cell) in counts.outer_iter().enumerate() {
        let u = parent_of[k];
        for (c, &n) in cell.iter().enumerate() {
            documents[u * n_classes + c] += n;
            pooled_cells[k] += n;
        }
        pooled_documents[u] += pooled_cells[k];
    }

    // the two-level prior: a_{i,j} and the per-document mean mu_{u,v}
    let pooled = (settings.smoothing == ChildSmoothing::HebTwoLevel).then(|| {
        let mut terms = EvidenceTerms::with_capacity(2 * counts.nrows());
        for &total in &pooled_documents {
            terms.add_document(total);
        }
        for (k, &n) in pooled_cells.iter().enumerate() {
            terms.add_cell(n, mean_of(k));
        }
        terms.finish();
        maximise_evidence(&terms, &settings.solver).concentration
    });
    let cell_mean: Vec<f64> = (0..counts.nrows())
        .map(|k| match pooled {
            Some(a) => (pooled_cells[k] + a * mean_of(k)) / (pooled_documents[parent_of[k]] + a),
            None => mean_of(k),
        })
        .collect();

    let solutions = if settings.smoothing == ChildSmoothing::Laplace {
        let rule = Solution {
            concentration: k_child,
            log_evidence: f64::NAN,
            n_iter: 0,
            converged: true,
        };
        vec![rule; n_classes]
    } else {
        solve_classes(
            o,
            counts,
            &documents,
            &cell_mean,
            category_counts,
            layout,
            settings,
            pooled,
        )
    };

    // ln(N_{c,u} + m_c), one per document and class
    let log_denominator: Vec<f64> = (0..k_parent * n_classes)
        .map(|index| (documents[index] + solutions[index % n_classes].concentration).ln())
        .collect();
    for (k, cell) in counts.outer_iter().enumerate() {
        let u = parent_of[k];
        for (c, s) in solutions.iter().enumerate() {
            cell_log_prob[(k * 2 + o.side) * n_classes + c] =
                (cell[c] + s.concentration * cell_mean[k]).ln()
                    - log_denominator[u * n_classes + c];
        }
    }
    let log_concentration: Vec<f64> = solutions.iter().map(|s| s.concentration.ln()).collect();
    for u in 0..k_parent {
        // unseen cell: ln(m mu_{u,v}) - ln(N_{c,u} + m), less ln mu_{j,v}
        let level = match pooled {
            Some(a) => a.ln() - (pooled_documents[u] + a).ln(),
            None => 0.0,
        };
        for c in 0..n_classes {
            unseen_log_prob[u * n_classes + c] =
                log_concentration[c] + level - log_denominator[u * n_classes + c];
        }
    }
    (solutions, pooled)
}

/// `m_{c,i,j}` of every class of one orientation: the multi-document evidence of each
/// class's cells (documents = parent values) built in one pass over the cells.
#[allow(clippy::too_many_arguments)]
fn solve_classes(
    o: &Orientation,
    counts: ArrayView2<f64>,
    documents: &[f64],
    cell_mean: &[f64],
    category_counts: ArrayView2<f64>,
    layout: &FeatureLayout,
    settings: &AodeSettings,
    pooled: Option<f64>,
) -> Vec<Solution> {
    let n_classes = counts.ncols();
    let k_parent = layout.cardinality(o.parent);
    let mut terms: Vec<EvidenceTerms> = (0..n_classes)
        .map(|_| EvidenceTerms::with_capacity(counts.nrows()))
        .collect();
    for totals in documents.chunks_exact(n_classes).take(k_parent) {
        for (t, &total) in terms.iter_mut().zip(totals) {
            t.add_document(total);
        }
    }
    for (k, cell) in counts.outer_iter().enumerate() {
        for (t, &n) in terms.iter_mut().zip(cell.iter()) {
            t.add_cell(n, cell_mean[k]);
        }
    }
    let k_child = layout.cardinality(o.child) as f64;
    let parent_columns = layout.columns(o.parent);
    // each class's Newton iteration starts from the previous class's answer (the classes
    // of one pair tend to agree), the first from the class-pooled one when there is one
    let mut start = pooled.unwrap_or(1.0);
    terms
        .iter_mut()
        .enumerate()
        .map(|(c, terms)| {
            terms.finish();
            let largest_parent_value = parent_columns
                .clone()
                .map(|col| category_counts[[c, col]])
                .fold(0.0, f64::max);
            if largest_parent_value < settings.min_count {
                Solution {
                    concentration: k_child,
                    log_evidence: terms.log_evidence(k_child),
                    n_iter: 0,
                    converged: true,
                }
            } else {
                let solution = maximise_evidence_from(terms, &settings.solver, start);
                start = solution.concentration;
                solution
            }
        })
        .collect()
}

/// Everything the scorer reads, all fitted.
#[derive(Debug, Clone, Copy)]
pub struct AodeModel<'a> {
    pub pair_tables: PairTablesView<'a>,
    /// [`AodeFit::cell_log_prob`], (nnz, 2, C) flattened to (nnz, 2 C).
    pub cell_log_prob: ArrayView2<'a, f64>,
    /// [`AodeFit::unseen_log_prob`].
    pub unseen_log_prob: ArrayView2<'a, f64>,
    /// `ln mu_{j,v}` of the child mean used by the fit (uniform for Laplace), per category;
    /// `-inf` marks a category that never scores (zero mean, SPEC).
    pub log_child_mean: &'a [f64],
    /// Row-major F x F mask of capped orientations (parent, child).
    pub capped: &'a [bool],
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
    let unseen_rows = *unseen_row_offsets(layout).last().unwrap_or(&0);
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
    check_len("capped mask", n_features * n_features, model.capped.len())?;
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
    let unseen_offsets = unseen_row_offsets(layout);
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
            if k_a * k_b > 4 * cells + 64 || indptr[indptr.len() - 1] >= u32::MAX as i64 {
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
                    qualifies[at] = model.parent_count[column] >= model.min_parent_count;
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
                let capped_a = is_capped(model.capped, n_features, a, b);
                let capped_b = is_capped(model.capped, n_features, b, a);
                let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
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
                            unseen_offsets[p] + k_a + v as usize,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::{count_categories, CategoricalCounts};
    use crate::naive_bayes::{prior_mean, PriorMean};
    use crate::pair_counts::{count_pairs, PairTables};
    use crate::parallel::with_threads;
    use ndarray::{array, Array1, ArrayView1};

    /// Pair tables, single counts and the child prior mean of a table, every pair wanted.
    fn statistics(
        codes: ArrayView2<i32>,
        labels: ArrayView1<i64>,
        layout: &FeatureLayout,
        n_classes: usize,
        kind: PriorMean,
    ) -> (PairTables, CategoricalCounts, Vec<f64>) {
        let weights = Array1::ones(codes.ncols());
        let pairs = count_pairs(codes, labels, weights.view(), layout, n_classes, |_, _| {
            true
        })
        .unwrap();
        let counts = count_categories(codes, labels, weights.view(), layout, n_classes).unwrap();
        let mean = prior_mean(counts.table.view(), layout, kind);
        (pairs, counts, mean)
    }

    fn settings(smoothing: ChildSmoothing, min_count: f64) -> AodeSettings {
        AodeSettings {
            smoothing,
            min_count,
            solver: SolverSettings::default(),
        }
    }

    #[test]
    fn one_pair_by_hand() {
        // x0 = (0, 0, 1, 1), x1 = (0, 1, 1, 1), y = (0, 0, 1, 1); Laplace AODE, row (0, 1)
        let codes = array![[0, 0, 1, 1], [0, 1, 1, 1]];
        let labels = array![0_i64, 0, 1, 1];
        let layout = FeatureLayout::from_cardinalities(&[2, 2]);
        let (pairs, counts, mean) =
            statistics(codes.view(), labels.view(), &layout, 2, PriorMean::Uniform);
        let capped = [false; 4];
        let fit = fit_children(
            pairs.view(),
            counts.table.view(),
            &mean,
            &capped,
            &layout,
            &settings(ChildSmoothing::Laplace, 10.0),
        )
        .unwrap();
        // eq. 8: (N + 1) / (S + C K) = (N + 1) / 8, rows = categories, columns = classes
        let parent = counts
            .table
            .t()
            .as_standard_layout()
            .mapv(|n| ((n + 1.0) / 8.0).ln());
        let log_mean: Vec<f64> = mean.iter().map(|m| m.ln()).collect();
        let parent_count = [2.0, 2.0, 1.0, 3.0];
        let cell_log_prob = fit
            .cell_log_prob
            .view()
            .into_shape_with_order((3, 4))
            .unwrap();
        let model = AodeModel {
            pair_tables: pairs.view(),
            cell_log_prob,
            unseen_log_prob: fit.unseen_log_prob.view(),
            log_child_mean: &log_mean,
            capped: &capped,
            parent_log_prob: parent.view(),
            parent_count: &parent_count,
            min_parent_count: 1.0,
            marginal_log_prob: parent.view(),
            class_log_prior: &[0.5_f64.ln(); 2],
        };
        let joint = joint_log_likelihood(array![[0], [1]].view(), &model, &layout).unwrap();
        let expected: [f64; 2] = [
            (3.0 / 8.0 * 0.5 + 2.0 / 8.0 * 2.0 / 3.0) / 2.0,
            (1.0 / 8.0 * 0.5 + 3.0 / 8.0 * 0.25) / 2.0,
        ];
        for (found, want) in joint.iter().zip(expected) {
            assert!((found - want.ln()).abs() < 1e-14, "{joint:?}");
        }
        assert_eq!(fit.concentration[[0, 0, 1]], 2.0);
    }

    fn random_table(n_rows: usize, cardinality: &[usize], seed: u64) -> (Array2<i32>, Array1<i64>) {
        let mut state = seed;
        let mut next = |bound: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % bound as u64) as usize
        };
        let labels: Array1<i64> = (0..n_rows).map(|_| next(3) as i64).collect();
        let mut codes = Array2::<i32>::zeros((cardinality.len(), n_rows));
        for (f, &k) in cardinality.iter().enumerate() {
            for s in 0..n_rows {
                let base = if f == 0 {
                    labels[s] as usize
                } else {
                    codes[[f - 1, s]].max(0) as usize
                };
                codes[[f, s]] = match next(10) {
                    0 => -1,
                    1..=6 => ((base * 5 + labels[s] as usize) % k) as i32,
                    _ => next(k) as i32,
                };
            }
        }
        (codes, labels)
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let cardinality = [3, 7, 12, 2, 30];
        let (codes, labels) = random_table(3000, &cardinality, 7);
        let weights = Array1::ones(3000);
        let layout = FeatureLayout::from_cardinalities(&cardinality);
        let counts =
            count_categories(codes.view(), labels.view(), weights.view(), &layout, 3).unwrap();
        let mean = prior_mean(counts.table.view(), &layout, PriorMean::PooledMarginal);
        let capped = vec![false; 25];
        let fit_with = |threads: usize| {
            with_threads(threads, || {
                let pairs = count_pairs(
                    codes.view(),
                    labels.view(),
                    weights.view(),
                    &layout,
                    3,
                    |_, _| true,
                )
                .unwrap();
                let fit = fit_children(
                    pairs.view(),
                    counts.table.view(),
                    &mean,
                    &capped,
                    &layout,
                    &settings(ChildSmoothing::HebTwoLevel, 10.0),
                )
                .unwrap();
                (pairs, fit)
            })
            .unwrap()
        };
        let (one, two) = (fit_with(1), fit_with(2));
        assert_eq!(one.0, two.0);
        // NaN != NaN: compare bit patterns
        let bits = |a: &Array3<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&one.1.concentration), bits(&two.1.concentration));
        assert_eq!(bits(&one.1.cell_log_prob), bits(&two.1.cell_log_prob));
        assert!(one.1.n_iter.iter().any(|&n| n > 0));
    }

    #[test]
    fn low_counts_fall_back_to_the_child_cardinality() {
        let cardinality = [4, 6];
        let (codes, labels) = random_table(200, &cardinality, 3);
        let layout = FeatureLayout::from_cardinalities(&cardinality);
        let (pairs, counts, mean) = statistics(
            codes.view(),
            labels.view(),
            &layout,
            3,
            PriorMean::PooledMarginal,
        );
        let fit = fit_children(
            pairs.view(),
            counts.table.view(),
            &mean,
            &[false, false, true, false],
            &layout,
            &settings(ChildSmoothing::HebPooled, 1e9),
        )
        .unwrap();
        for c in 0..3 {
            assert_eq!(fit.concentration[[c, 0, 1]], 6.0);
            assert_eq!(fit.n_iter[[c, 0, 1]], 0);
            assert!(fit.concentration[[c, 1, 0]].is_nan(), "capped orientation");
        }
    }
}
