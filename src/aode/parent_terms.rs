//! Every super-parent's own one-dependence term of every row in one pass (SPEC eq. 7):
//!
//! ```text
//! T_i(y, x) = ln P(y, x_i) + sum over j != i, x_j present and known, of ln P(x_j | y, x_i)
//! ```
//!
//! and, optionally, the table cells each term adds up (all of them, or each cell of a
//! numbering once), or each row's cells weighted and summed. The discriminative AODE weights
//! (`hebnb.weighting`, [`crate::weight_fit`]) are learned on these: one weight per
//! super-parent on `T_i`, one per cell on its value. A row on which super-parent `i` does
//! not qualify (value missing, unseen or rarer than `min_parent_count`) gets the Naive
//! Bayes score as its `T_i`, as the scorer gives a row without a qualifying parent.
//!
//! With [`LeftOut`] rows (the training rows themselves), each row's terms are those of the
//! tables without its own counts ([`super::leave_one_out`]); its cells stay the fitted
//! tables' and `qualifies` says where the parent qualifies in-sample. The left-out terms
//! are corrected from the row's in-sample cells: scored row by row, or read from the
//! numbered cells' values when the rows' cells are numbered ([`CellRequest::Numbered`]),
//! which evaluates each cell once where most are shared by several rows.
//!
//! The terms are the ones the scorer ([`super::score`]) averages, computed by the same
//! chunk scorer (the same operations in the same order), so each `T_i` is bit-identical
//! to the joint log-likelihood of the row with `i` as its only qualifying super-parent.
//! Rows run in parallel chunks and each row's outputs depend on that row only: the result
//! is the same for any number of threads.

use ndarray::{Array2, Array3, Array4, ArrayView1, ArrayView2};
use rayon::prelude::*;

use super::leave_one_out::{ChunkCells, CorrectedCells, LeftOut};
use super::score::{prepare, rows_per_chunk, AodeModel, CellSink, NoCells};
use crate::cell_numbers::{add_weighted_cells, cell_key, CellIndex};
use crate::class_loops::by_class_count;
use crate::error::{entries, with_capacity, zeroed, HebError, Result};
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
    /// With [`CellRequest::Numbered`], each numbered cell's value `(cells, C)` (else
    /// `(0, C)`): `cells[row, column / F, column % F, ..]` of any row that uses it, zero
    /// where its parent does not qualify.
    pub numbered_cells: Array2<f64>,
    /// With [`CellRequest::Weighted`], shape (S, C) (else (0, C)): each row's weighted
    /// cells summed.
    pub cell_sums: Array2<f64>,
}

/// Which of the cells the terms add up [`parent_terms`] returns.
#[derive(Debug, Clone, Copy)]
pub enum CellRequest<'a> {
    /// None.
    None,
    /// Every one, `(S, P, F, C)`.
    All,
    /// The cells of a numbering of the rows' cells (python/hebnb/weighting.py
    /// `number_cells`): `cells` (P F, S) is column `k = rank of i * F + j`'s cell of every
    /// row (-1: none), column `k`'s cells are `column_starts[k]..column_starts[k + 1]` and
    /// `first_row` is each cell's first row. Each cell is evaluated once, not once per row
    /// that uses it, into [`ParentTerms::numbered_cells`]: what the discriminative weights
    /// read. With left-out rows, the rows' cells that correct their terms are read from
    /// these values too, instead of being scored row by row. Without left-out rows and
    /// without `in_sample_terms` the rows are not scored at all (their terms are left
    /// zero, for a caller that replaces them all): only where each parent qualifies.
    Numbered {
        cells: ArrayView2<'a, i64>,
        column_starts: &'a [usize],
        first_row: ArrayView1<'a, i64>,
        in_sample_terms: bool,
    },
    /// Each row's `sum_k w[cell, c] (cells[row, k, c] / P)` over the columns `k = rank of
    /// i * F + j` where the parent qualifies, `x_i` and `x_j` are present and the row's key
    /// (`x_i K_j + x_j`, or `x_i` at `j = i`) is one of `index`'s cells, in column order
    /// from 0: the part of the `"cll-value"` scores the cell weights `weights` ((cells,
    /// C) row-major) add, without the cells. What python/hebnb/aode.py `_seen_cells`
    /// finds, summed.
    Weighted {
        index: &'a CellIndex,
        weights: &'a [f64],
    },
}

/// Checks a [`CellRequest::Numbered`] numbering against `n_rows` rows and `n_columns`
/// cell columns: its shape, its column starts, its first rows, and every row's cell
/// among its column's (columns in parallel).
fn check_numbering(
    (cells, column_starts, first_row): (ArrayView2<i64>, &[usize], ArrayView1<i64>),
    n_rows: usize,
    n_columns: usize,
) -> Result<()> {
    if cells.dim() != (n_columns, n_rows) {
        return Err(HebError::InvalidParameter(format!(
            "numbered cells have shape {:?}, expected ({n_columns}, {n_rows})",
            cells.dim()
        )));
    }
    let ordered = column_starts.first() == Some(&0)
        && column_starts.windows(2).all(|pair| pair[0] <= pair[1])
        && column_starts.last() == Some(&first_row.len());
    if column_starts.len() != n_columns + 1 || !ordered {
        return Err(HebError::InvalidParameter(format!(
            "{} cell column starts for {n_columns} columns and {} cells: expected {} \
             increasing starts from 0 to the number of cells",
            column_starts.len(),
            first_row.len(),
            n_columns + 1
        )));
    }
    if let Some(&row) = first_row
        .iter()
        .find(|&&r| r < 0 || r as u64 >= n_rows as u64)
    {
        return Err(HebError::InvalidParameter(format!(
            "a cell's first row {row} is outside the {n_rows} rows"
        )));
    }
    let misplaced = (0..n_columns).into_par_iter().find_map_first(|k| {
        let (start, end) = (column_starts[k] as i64, column_starts[k + 1] as i64);
        let outside = |cell: i64| cell >= 0 && (cell < start || cell >= end);
        let column = cells.row(k);
        let row = match column.as_slice() {
            Some(column) => column.iter().position(|&cell| outside(cell)),
            None => column.iter().position(|&cell| outside(cell)),
        }?;
        Some((k, row, cells[[k, row]]))
    });
    if let Some((k, row, cell)) = misplaced {
        return Err(HebError::InvalidParameter(format!(
            "cell {cell} of row {row} is not one of column {k}'s cells"
        )));
    }
    Ok(())
}

/// Every super-parent's term `T_i` of every row of `codes` `(F, S)` (-1: missing or
/// unknown), and the cells they add up that `request` asks for ([`ParentTerms`]); with
/// `left_out` (the rows are the training rows, their classes and weights given) each row's
/// terms without its own counts.
///
/// # Errors
/// What [`super::joint_log_likelihood`] refuses (shape mismatches, codes out of range),
/// what [`LeftOut`] refuses, a numbering of other rows, columns or cells, weighted
/// cells numbered for other columns or weighted for other cells or classes,
/// [`crate::error::HebError::Allocation`] and [`crate::error::HebError::Interrupted`].
pub fn parent_terms(
    codes: ArrayView2<i32>,
    model: &AodeModel,
    layout: &FeatureLayout,
    request: CellRequest,
    left_out: Option<LeftOut>,
) -> Result<ParentTerms> {
    let (fallback, prepared) = prepare(codes, model, layout)?;
    let cells = matches!(request, CellRequest::All);
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
    let numbered = match request {
        CellRequest::Numbered {
            cells,
            column_starts,
            first_row,
            in_sample_terms,
        } => {
            check_numbering(
                (cells, column_starts, first_row),
                n_rows,
                n_parents * n_features,
            )?;
            Some((cells, column_starts, first_row, in_sample_terms))
        }
        _ => None,
    };
    let n_numbered = numbered.map_or(0, |(_, _, first_row, _)| first_row.len());
    // without left-out rows, whether the in-sample terms are wanted
    let scores_rows = numbered.is_none_or(|(.., in_sample_terms)| in_sample_terms);
    let mut numbered_cells = zeroed(
        entries(n_numbered, n_classes, "numbered AODE cells")?,
        "numbered AODE cells",
    )?;
    let mut cell_sums = Vec::new();
    let weighted = match request {
        CellRequest::Weighted { index, weights } => {
            if index.n_columns() != n_parents * n_features
                || weights.len() != index.n_cells() * n_classes
            {
                return Err(HebError::InvalidParameter(format!(
                    "{} cell weights over {} cells numbered in {} columns do not agree with \
                     {n_parents} super-parents x {n_features} features and {n_classes} classes",
                    weights.len(),
                    index.n_cells(),
                    index.n_columns()
                )));
            }
            if left_out.is_some() {
                return Err(HebError::InvalidParameter(
                    "weighted cells are the fitted tables': ask for them without left-out rows"
                        .into(),
                ));
            }
            Some((index, weights))
        }
        _ => None,
    };
    let has_left_out = left_out.is_some();
    // the left-out terms are corrected from the chunk's cells (a buffer of them); weighted
    // cells are summed as the scorer writes them
    let buffered_cells = cells || has_left_out;
    let chunk_cells = buffered_cells || weighted.is_some();
    // With cells, about four chunks per thread (a chunk's parents are scored one after
    // the other), within about 8 MB of buffered cells; without, the scorer's chunks,
    // whose parents are scored in parallel ([`super::score`])
    let chunk_rows = if chunk_cells {
        let rows = (n_rows.div_ceil(4 * rayon::current_num_threads())).clamp(64, 4096);
        if buffered_cells {
            rows.min(((8 << 20) / (8 * row_cells.max(1))).max(1))
        } else {
            rows
        }
    } else {
        rows_per_chunk(n_parents, n_classes)
    };
    if let Some(prepared) = prepared.filter(|_| n_parents > 0) {
        let scorer = prepared.scorer(model, layout);
        let left_out = match left_out {
            Some(rows) => Some(rows.prepare(model, layout, codes, &prepared.super_parents)?),
            None => None,
        };
        // with left-out rows, what each numbered cell's child adds to their terms, where
        // that depends on the cell and the row's class only
        let mut corrections = None;
        if let Some((_, column_starts, first_row, _)) = numbered {
            scorer.numbered_cell_values(codes, (column_starts, first_row), &mut numbered_cells)?;
            if let Some(left_out) = &left_out {
                corrections = left_out.child_corrections(
                    model,
                    layout,
                    codes,
                    &prepared.super_parents,
                    (column_starts, first_row),
                    &numbered_cells,
                )?;
            }
        }
        let score = |chunk: usize,
                     out_terms: &mut [f64],
                     out_qualifies: &mut [bool],
                     out_cells: &mut [f64]|
         -> Result<Vec<f64>> {
            if crate::interrupt::cancelled() {
                return Ok(Vec::new());
            }
            let first = chunk * chunk_rows;
            let n = out_qualifies.len() / n_parents;
            // the chunk's own cells where the caller keeps none and reads them after (every
            // cell read below is written by the scorer: a qualifying parent's scoring
            // children); weighted cells are summed block by block instead
            let mut own_cells = if !cells && buffered_cells && corrections.is_none() {
                zeroed(n * row_cells, "AODE chunk cells")?
            } else {
                Vec::new()
            };
            let mut chunk_cells: &mut [f64] = if cells { out_cells } else { &mut own_cells };
            let mut sums = Vec::new();
            let scored = if corrections.is_some() {
                // the left-out terms read their children's parts from the corrections
                scorer.mark_qualifying(codes, (first, n), out_qualifies);
                None
            } else if let (Some((numbers, ..)), true) = (numbered, has_left_out) {
                // the left-out terms replace every in-sample one: only the cells they are
                // corrected from are needed, read from the numbered cells' values
                let cells = (numbers, numbered_cells.as_slice());
                let rows = (first, n);
                by_class_count!(n_classes, C, {
                    scorer.gather_cells::<C>(cells, codes, rows, out_qualifies, chunk_cells)
                });
                None
            } else if !scores_rows {
                scorer.mark_qualifying(codes, (first, n), out_qualifies);
                None
            } else if let Some((index, weights)) = weighted {
                let mut sink = WeightedSums::new(
                    (codes, first, n),
                    n_classes,
                    layout,
                    &prepared.super_parents,
                    index,
                    weights,
                )?;
                let scored = scorer.score_chunk::<true>(codes, first, n, &mut sink);
                sums = sink.sums;
                Some(scored)
            } else if !chunk_cells.is_empty() {
                Some(scorer.score_chunk::<true>(codes, first, n, &mut chunk_cells))
            } else {
                Some(scorer.score_chunk::<false>(codes, first, n, &mut NoCells))
            };
            if let Some(scored) = &scored {
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
            }
            if let Some(left_out) = &left_out {
                let cells = match (&corrections, numbered) {
                    (Some(corrections), Some((numbers, ..))) => {
                        ChunkCells::Numbered(CorrectedCells {
                            numbers,
                            values: &numbered_cells,
                            corrections,
                        })
                    }
                    _ => ChunkCells::Scored(chunk_cells),
                };
                left_out.replace_terms(
                    model,
                    layout,
                    codes,
                    (first, n),
                    &prepared.super_parents,
                    out_qualifies,
                    cells,
                    out_terms,
                );
            }
            Ok(sums)
        };
        let rows = terms
            .par_chunks_mut(chunk_rows * row_terms)
            .zip(qualifies.par_chunks_mut(chunk_rows * n_parents));
        let found: Vec<Vec<f64>> = if cells {
            rows.zip(cell_values.par_chunks_mut(chunk_rows * row_cells))
                .enumerate()
                .map(|(chunk, ((t, q), c))| score(chunk, t, q, c))
                .collect::<Result<_>>()?
        } else {
            rows.enumerate()
                .map(|(chunk, (t, q))| score(chunk, t, q, &mut []))
                .collect::<Result<_>>()?
        };
        crate::interrupt::check()?;
        if weighted.is_some() {
            cell_sums = with_capacity(n_rows * n_classes, "AODE weighted cells")?;
            for sums in &found {
                cell_sums.extend_from_slice(sums);
            }
        }
    } else {
        // no row, no class or no super-parent: every term is the Naive Bayes score, and
        // no cell is weighted
        if weighted.is_some() {
            cell_sums = zeroed(n_rows * n_classes, "AODE weighted cells")?;
        }
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
        numbered_cells: Array2::from_shape_vec((n_numbered, n_classes), numbered_cells)
            .map_err(shape_error)?,
        cell_sums: Array2::from_shape_vec(
            (if weighted.is_some() { n_rows } else { 0 }, n_classes),
            cell_sums,
        )
        .map_err(shape_error)?,
    })
}

/// The weighted cells of a chunk's rows ([`CellRequest::Weighted`]), summed as the scorer
/// completes each (row, parent) block of cells: a row's blocks come parent after parent
/// (the scorer with cells takes the parents in order), so each row's sum runs over its
/// columns in order, without the chunk's cells.
struct WeightedSums<'c> {
    /// Every row's codes, (F, S), and the chunk's first row.
    codes: ArrayView2<'c, i32>,
    first: usize,
    layout: &'c FeatureLayout,
    super_parents: &'c [usize],
    index: &'c CellIndex,
    weights: &'c [f64],
    n_classes: usize,
    /// The block being written: one row's cells of one parent, (F, C).
    block: Vec<f64>,
    /// The block's `(feature, cell)` that have a weight.
    uses: Vec<(usize, usize)>,
    /// Each row's weighted sum, (rows, C).
    sums: Vec<f64>,
}

impl<'c> WeightedSums<'c> {
    /// Zero sums for the `n` rows from `first`.
    fn new(
        (codes, first, n): (ArrayView2<'c, i32>, usize, usize),
        n_classes: usize,
        layout: &'c FeatureLayout,
        super_parents: &'c [usize],
        index: &'c CellIndex,
        weights: &'c [f64],
    ) -> Result<Self> {
        let n_features = layout.n_features();
        Ok(Self {
            codes,
            first,
            layout,
            super_parents,
            index,
            weights,
            n_classes,
            block: zeroed(n_features * n_classes, "AODE weighted cells")?,
            uses: with_capacity(n_features, "AODE weighted cells")?,
            sums: zeroed(n * n_classes, "AODE weighted cells")?,
        })
    }
}

impl CellSink for WeightedSums<'_> {
    fn block(&mut self, _at: usize, len: usize) -> &mut [f64] {
        self.block.fill(0.0);
        &mut self.block[..len]
    }

    fn row_done(&mut self, row: usize, rank: usize) {
        let n_features = self.layout.n_features();
        let i = self.super_parents[rank];
        let at = self.first + row;
        let u = self.codes[[i, at]];
        self.uses.clear();
        for j in 0..n_features {
            let v = self.codes[[j, at]];
            if v < 0 {
                continue;
            }
            let key = cell_key(i == j, u, v, self.layout.cardinality(j) as i64);
            if let Some(cell) = self.index.cell(rank * n_features + j, key) {
                self.uses.push((j, cell));
            }
        }
        let n_classes = self.n_classes;
        let scale = self.super_parents.len().max(1) as f64;
        let sum = &mut self.sums[row * n_classes..(row + 1) * n_classes];
        by_class_count!(n_classes, C, {
            add_weighted_cells::<C>(sum, &self.uses, &self.block, self.weights, scale)
        });
    }
}
