//! Every super-parent's own one-dependence term of every row in one pass (SPEC eq. 7):
//!
//! ```text
//! T_i(y, x) = ln P(y, x_i) + sum over j != i, x_j present and known, of ln P(x_j | y, x_i)
//! ```
//!
//! and, optionally, the table cells each term adds up. The discriminative AODE weights
//! (`hebnb.weighting`, [`crate::weight_fit`]) are learned on these: one weight per
//! super-parent on `T_i`, one per cell on its value. A row on which super-parent `i` does
//! not qualify (value missing, unseen or rarer than `min_parent_count`) gets the Naive
//! Bayes score as its `T_i`, as the scorer gives a row without a qualifying parent.
//!
//! With [`LeftOut`] rows (the training rows themselves), each row's terms are those of the
//! tables without its own counts ([`super::leave_one_out`]); its cells stay the fitted
//! tables' and `qualifies` says where the parent qualifies in-sample.
//!
//! The terms are the ones the scorer ([`super::score`]) averages, computed by the same
//! chunk scorer (the same operations in the same order), so each `T_i` is bit-identical
//! to the joint log-likelihood of the row with `i` as its only qualifying super-parent.
//! Rows run in parallel chunks and each row's outputs depend on that row only: the result
//! is the same for any number of threads.

use ndarray::{Array2, Array3, Array4, ArrayView2};
use rayon::prelude::*;

use super::leave_one_out::LeftOut;
use super::score::{prepare, rows_per_chunk, AodeModel};
use crate::error::{entries, zeroed, HebError, Result};
use crate::layout::FeatureLayout;

/// What [`parent_terms`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ParentTerms {
    /// `T_i(c, x_r)` at `[r, rank of i, c]`, shape (S, P, C): the Naive Bayes joint
    /// log-likelihood of the row where `i` does not qualify.
    pub terms: Array3<f64>,
    /// Whether super-parent `i` qualifies on row r, shape (S, P).
    pub qualifies: Array2<bool>,
    /// With `cells`, shape (S, P, F, C) (else (0, P, F, C)): the cells of the qualifying
    /// parents' terms, `ln P(x_j = v | y, x_i = u)` at `[r, rank of i, j, y]` and
    /// `ln P(y, x_i = u) - ln pi_y` at `[r, rank of i, i, y]`; zero where the parent does
    /// not qualify and where `x_j` is missing, unknown or a category that never scores.
    pub cells: Array4<f64>,
}

/// Every super-parent's term `T_i` of every row of `codes` `(F, S)` (-1: missing or
/// unknown), and with `cells` the cells they add up ([`ParentTerms`]); with `left_out`
/// (the rows are the training rows, their classes and weights given) each row's terms
/// without its own counts.
///
/// # Errors
/// What [`super::joint_log_likelihood`] refuses (shape mismatches, codes out of range),
/// what [`LeftOut`] refuses, [`crate::error::HebError::Allocation`] and
/// [`crate::error::HebError::Interrupted`].
pub fn parent_terms(
    codes: ArrayView2<i32>,
    model: &AodeModel,
    layout: &FeatureLayout,
    cells: bool,
    left_out: Option<LeftOut>,
) -> Result<ParentTerms> {
    let (fallback, prepared) = prepare(codes, model, layout)?;
    let n_rows = codes.ncols();
    let n_classes = model.class_log_prior.len();
    let n_features = layout.n_features();
    let n_parents = model.structure.n_parents();
    let row_terms = n_parents * n_classes;
    let row_cells = n_parents * n_features * n_classes;
    // sizes beyond the address space are refused as allocations, not wrapped
    let mut terms = zeroed(
        entries(n_rows, row_terms, "AODE parent terms")?,
        "AODE parent terms",
    )?;
    let n_flags = entries(n_rows, n_parents, "AODE parent qualification")?;
    let mut qualifies = vec![false; 0];
    qualifies
        .try_reserve_exact(n_flags)
        .map_err(|_| HebError::Allocation {
            what: "AODE parent qualification",
            bytes: n_flags as u128,
        })?;
    qualifies.resize(n_flags, false);
    let n_cells = if cells {
        entries(n_rows, row_cells, "AODE parent cells")?
    } else {
        0
    };
    let mut cell_values = zeroed(n_cells, "AODE parent cells")?;
    if let Some(prepared) = prepared.filter(|_| n_parents > 0) {
        let scorer = prepared.scorer(model, layout);
        let left_out = match left_out {
            Some(rows) => Some(rows.prepare(model, layout, codes, &prepared.super_parents)?),
            None => None,
        };
        // the left-out terms are corrected from the chunk's cells
        let chunk_cells = cells || left_out.is_some();
        // With cells, chunks of about 8 MB of cells, about four per thread (a chunk's
        // parents are scored one after the other); without, the scorer's chunks, whose
        // parents are scored in parallel ([`super::score`])
        let chunk_rows = if chunk_cells {
            (n_rows.div_ceil(4 * rayon::current_num_threads()))
                .clamp(64, 4096)
                .min(((8 << 20) / (8 * row_cells.max(1))).max(1))
        } else {
            rows_per_chunk(n_parents, n_classes)
        };
        let score = |chunk: usize,
                     out_terms: &mut [f64],
                     out_qualifies: &mut [bool],
                     out_cells: &mut [f64]|
         -> Result<()> {
            if crate::interrupt::cancelled() {
                return Ok(());
            }
            let first = chunk * chunk_rows;
            let n = out_qualifies.len() / n_parents;
            // the chunk's own cells where the caller keeps none (every cell read below is
            // written by the scorer: a qualifying parent's scoring children)
            let mut own_cells = if !cells && left_out.is_some() {
                zeroed(n * row_cells, "AODE left-out cells")?
            } else {
                Vec::new()
            };
            let chunk_cells: &mut [f64] = if cells { out_cells } else { &mut own_cells };
            let scored = if !chunk_cells.is_empty() {
                scorer.score_chunk::<true>(codes, first, n, chunk_cells)
            } else {
                scorer.score_chunk::<false>(codes, first, n, &mut [])
            };
            for r in 0..n {
                let naive_bayes = fallback.row(first + r);
                for rank in 0..n_parents {
                    let at = (r * n_parents + rank) * n_classes;
                    let out = &mut out_terms[at..at + n_classes];
                    if scored.qualifies[rank * n + r] {
                        out_qualifies[r * n_parents + rank] = true;
                        let from = (rank * n + r) * n_classes;
                        out.copy_from_slice(&scored.terms[from..from + n_classes]);
                    } else {
                        out.iter_mut()
                            .zip(naive_bayes.iter())
                            .for_each(|(t, &s)| *t = s);
                    }
                }
            }
            if let Some(left_out) = &left_out {
                left_out.replace_terms(
                    model,
                    layout,
                    codes,
                    (first, n),
                    &prepared.super_parents,
                    out_qualifies,
                    chunk_cells,
                    out_terms,
                );
            }
            Ok(())
        };
        let rows = terms
            .par_chunks_mut(chunk_rows * row_terms)
            .zip(qualifies.par_chunks_mut(chunk_rows * n_parents));
        if cells {
            rows.zip(cell_values.par_chunks_mut(chunk_rows * row_cells))
                .enumerate()
                .try_for_each(|(chunk, ((t, q), c))| score(chunk, t, q, c))?;
        } else {
            rows.enumerate()
                .try_for_each(|(chunk, (t, q))| score(chunk, t, q, &mut []))?;
        }
        crate::interrupt::check()?;
    } else {
        // no row, no class or no super-parent: every term is the Naive Bayes score
        for r in 0..n_rows {
            for rank in 0..n_parents {
                for c in 0..n_classes {
                    terms[(r * n_parents + rank) * n_classes + c] = fallback[[r, c]];
                }
            }
        }
    }
    let shape_error = |e: ndarray::ShapeError| HebError::InvalidParameter(e.to_string());
    Ok(ParentTerms {
        terms: Array3::from_shape_vec((n_rows, n_parents, n_classes), terms)
            .map_err(shape_error)?,
        qualifies: Array2::from_shape_vec((n_rows, n_parents), qualifies).map_err(shape_error)?,
        cells: Array4::from_shape_vec(
            (
                if cells { n_rows } else { 0 },
                n_parents,
                n_features,
                n_classes,
            ),
            cell_values,
        )
        .map_err(shape_error)?,
    })
}
