//! Fitting the discriminative weights in one call: the penalised objective over the weight
//! vector itself and [`crate::lbfgs`] minimising it (docs/discriminative.md).
//!
//! Two models, both scoring class `c` of row `i` linearly in the weights `theta`:
//!
//! ```text
//! Naive Bayes  [a, w, d]:  s_ic = a_c ln pi_c + sum_f (w[f] + d[f, x_f, c]) ln theta[f, x_f, c]
//! AODE      [a, v, b, d]:  s_ic = a_c ln pi_c + sum_p v_p L[i, p, c] + sum_q b[q, c] G[i, q]
//!                                 + sum_k d[E[k, i], c] V[E[k, i], c]
//! ```
//!
//! (`d` only with cell weights; for AODE `L` are the cross-fitted super-parent terms, `G`
//! optional features of the rows (Q = 0: none) and `V` the fitted tables' cells,
//! [`CellTerms`]; with two classes [`crate::two_class_weight_fit`] fits the same optimum
//! with one weight per cell). The objective is
//!
//! ```text
//! J(theta) = - sum_i s_i ln P(y_i | x_i; theta) + 1/2 sum_k precision_k (theta_k - start_k)^2
//! ```
//!
//! Everything that does not depend on the weights is prepared once per fit: the Naive Bayes
//! leave-one-out shift `ln theta^(-i) - ln theta` of every (row, feature) on the row's own
//! class (one logarithm per row and feature per fit instead of two per pass), the column of
//! every code and which columns score. A pass then reads the weights where they are, writes
//! the gradient into the optimiser's buffer and allocates only its residuals.
//!
//! Determinism: rows run in fixed chunks in parallel, each row's residuals depend on the
//! row only, and the per-chunk sums (loss, class sums, super-parent gradients) are added in
//! chunk order; the cell gradients are summed per feature (or per column) in parallel, rows
//! in order. The L-BFGS vector algebra is deterministic too, so the weights are
//! bit-identical for any number of threads.

use ndarray::{ArrayView1, ArrayView2, ArrayView3, Axis};
use rayon::prelude::*;

use crate::class_loops::{add_classes, add_products, by_class_count};
use crate::counts::check_rows;
use crate::error::{check_code_range, check_len, filled, with_capacity, zeroed, HebError, Result};
use crate::interrupt;
use crate::layout::FeatureLayout;
use crate::lbfgs::{lane_dot, minimise, LbfgsResult, LbfgsSettings, VECTOR_CHUNK};
use crate::parallel::split_by_bounds;

/// Rows per parallel task (fixed: the reduction order must not depend on the threads).
pub(crate) const ROW_CHUNK: usize = 1024;

/// The Gaussian prior on the weights and the optimiser's settings, shared by both models.
#[derive(Debug, Clone, Copy)]
pub struct WeightFit<'a> {
    /// The prior's centre (the generative model), also the starting point.
    pub start: &'a [f64],
    /// The prior's precision of every weight (0: unpenalised).
    pub precision: &'a [f64],
    /// L-BFGS's diagonal initial inverse Hessian (the caller's estimate of the inverse of
    /// `J`'s Hessian diagonal).
    pub inverse_curvature: &'a [f64],
    pub settings: LbfgsSettings,
}

impl WeightFit<'_> {
    pub(crate) fn check(&self, n_weights: usize) -> Result<()> {
        check_len("starting weights", n_weights, self.start.len())?;
        check_len("weight precisions", n_weights, self.precision.len())?;
        check_len("inverse curvature", n_weights, self.inverse_curvature.len())?;
        if self
            .start
            .iter()
            .chain(self.precision)
            .chain(self.inverse_curvature)
            .any(|v| !v.is_finite())
            || self.precision.iter().any(|&p| p < 0.0)
        {
            return Err(HebError::InvalidParameter(
                "starting weights, precisions and inverse curvature must be finite \
                 (precisions non-negative)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Minimises `data + penalty` with `data(theta, gradient)` the data term.
    pub(crate) fn run<F>(&self, mut data: F) -> Result<LbfgsResult>
    where
        F: FnMut(&[f64], &mut [f64]) -> Result<f64>,
    {
        let objective = |theta: &[f64], gradient: &mut [f64]| {
            let mut value = data(theta, gradient)?;
            // in fixed chunks (in parallel, added in order: the same sum for any threads)
            let penalties: Vec<f64> = gradient
                .par_chunks_mut(VECTOR_CHUNK)
                .zip(theta.par_chunks(VECTOR_CHUNK))
                .zip(self.start.par_chunks(VECTOR_CHUNK))
                .zip(self.precision.par_chunks(VECTOR_CHUNK))
                .map(|(((gradient, theta), start), precision)| {
                    let mut penalty = 0.0;
                    for (g, (&t, (&start, &precision))) in gradient
                        .iter_mut()
                        .zip(theta.iter().zip(start.iter().zip(precision)))
                    {
                        let deviation = t - start;
                        penalty += deviation * precision * deviation;
                        *g += precision * deviation;
                    }
                    penalty
                })
                .collect();
            value += 0.5 * penalties.iter().sum::<f64>();
            Ok(value)
        };
        minimise(
            objective,
            self.start,
            Some(self.inverse_curvature),
            self.settings,
        )
    }
}

/// Turns one row of class scores into its residuals `s_i (P(c | x_i) - [c = y_i])` in place,
/// adds them to `class_sums`, and returns the row's loss `-s_i ln P(y_i | x_i)` (zero for a
/// zero-weight row). One exponential per class and one logarithm per row: the posterior is
/// `e_c / sum e` with `e_c = exp(s_c - max s)`.
#[inline(always)]
fn residuals_in_place(row: &mut [f64], label: usize, weight: f64, class_sums: &mut [f64]) -> f64 {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let own = row[label] - max;
    let mut total = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        total += *v;
    }
    let loss = if weight != 0.0 {
        -(weight * (own - total.ln()))
    } else {
        0.0
    };
    for (c, v) in row.iter_mut().enumerate() {
        let target = if c == label { 1.0 } else { 0.0 };
        *v = weight * (*v / total - target);
        class_sums[c] += *v;
    }
    loss
}

/// Renumbers the cells of every column in the order the rows first use them (unused cells
/// last), so that a pass over the rows in order reads and writes the cells nearly in
/// sequence: most AODE cells are used by one or two rows, and numbered by their key they
/// would be scattered over the whole table. Returns `new_of_old` and each column's used
/// entries with the renumbered cells ([`ColumnEntries`]).
pub(crate) fn first_use_order(
    cells: ArrayView2<i64>,
    starts: &[usize],
) -> Result<(Vec<usize>, ColumnEntries)> {
    let (n_columns, n_rows) = cells.dim();
    let n_cells = starts[starts.len() - 1];
    if u32::try_from(n_rows).is_err() || u32::try_from(n_cells).is_err() {
        return Err(HebError::InvalidParameter(format!(
            "{n_rows} rows and {n_cells} cells: the cell weights take at most {} of each",
            u32::MAX
        )));
    }
    let n_entries = cells.iter().filter(|&&cell| cell >= 0).count();
    let n_chunks = n_rows.div_ceil(ROW_CHUNK);
    let mut entries = ColumnEntries {
        rows: with_capacity(n_entries, "cell entry rows")?,
        cells: with_capacity(n_entries, "cell entries")?,
        chunk_starts: with_capacity(n_columns * (n_chunks + 1), "cell entry chunks")?,
        n_chunks,
    };
    let mut new_of_old = filled(n_cells, usize::MAX, "cell order")?;
    for (k, column) in cells.rows().into_iter().enumerate() {
        let mut next = starts[k];
        for (row, &cell) in column.iter().enumerate() {
            if row % ROW_CHUNK == 0 {
                entries.chunk_starts.push(entries.rows.len());
            }
            if cell < 0 {
                continue;
            }
            let old = cell as usize;
            if new_of_old[old] == usize::MAX {
                new_of_old[old] = next;
                next += 1;
            }
            entries.rows.push(row as u32);
            entries.cells.push(new_of_old[old] as u32);
        }
        entries.chunk_starts.push(entries.rows.len());
        for order in &mut new_of_old[starts[k]..starts[k + 1]] {
            if *order == usize::MAX {
                *order = next;
                next += 1;
            }
        }
        interrupt::check()?;
    }
    Ok((new_of_old, entries))
}

/// Checks an AODE cell layout, `by_column` (K, S) holding each row's cell in each column
/// (-1 for none): `column_starts` rise from 0 over the K columns, and every cell of
/// column `k` is one of `column_starts[k]..column_starts[k + 1]`. The weight fit's and
/// [`crate::shared_rows`]' inputs.
pub(crate) fn check_cell_columns(
    by_column: ArrayView2<i64>,
    column_starts: &[usize],
) -> Result<()> {
    let n_columns = by_column.nrows();
    if column_starts.len() != n_columns + 1
        || column_starts[0] != 0
        || column_starts.windows(2).any(|w| w[0] > w[1])
    {
        return Err(HebError::InvalidParameter(format!(
            "column starts must rise from 0 over the {n_columns} columns, got {} entries",
            column_starts.len()
        )));
    }
    for (k, column) in by_column.rows().into_iter().enumerate() {
        let own = column_starts[k]..column_starts[k + 1];
        if let Some(&cell) = column
            .iter()
            .find(|&&e| e < -1 || (e >= 0 && !own.contains(&(e as usize))))
        {
            return Err(HebError::InvalidParameter(format!(
                "cell {cell} of column {k} lies outside its cells {}..{}",
                own.start, own.end
            )));
        }
    }
    Ok(())
}

/// `sum_i row_values[i, c]` over the rows `i` that use each cell of `by_column` (K, S;
/// -1 for none; cells as `check_cell_columns` lays them out), shape (cells, C)
/// row-major: with the rows' `s_i p_ic (1 - p_ic)` at the generative model, the data
/// term's curvature in each cell's score change, from which the weight fit's
/// preconditioner is built. Columns in parallel, each cell's rows added in order.
///
/// # Errors
/// A bad cell layout, `row_values` of another number of rows, [`HebError::Allocation`]
/// and [`HebError::Interrupted`].
pub fn cell_row_sums(
    by_column: ArrayView2<i64>,
    column_starts: &[usize],
    row_values: ArrayView2<f64>,
) -> Result<Vec<f64>> {
    check_cell_columns(by_column, column_starts)?;
    let (n_rows, n_classes) = row_values.dim();
    if by_column.nrows() > 0 {
        check_len("cell rows", n_rows, by_column.ncols())?;
    }
    let n_cells = column_starts[column_starts.len() - 1];
    let mut sums = zeroed(n_cells * n_classes, "cell row sums")?;
    split_by_bounds(&mut sums, column_starts, n_classes)?
        .into_par_iter()
        .for_each(|(k, own)| {
            let column = by_column.row(k);
            for (block, cells) in column
                .axis_chunks_iter(Axis(0), interrupt::CHECK_EVERY)
                .enumerate()
            {
                if interrupt::cancelled() {
                    return;
                }
                let first = block * interrupt::CHECK_EVERY;
                for (i, &cell) in cells.iter().enumerate() {
                    if cell >= 0 {
                        let at = (cell as usize - column_starts[k]) * n_classes;
                        own[at..at + n_classes]
                            .iter_mut()
                            .zip(row_values.row(first + i))
                            .for_each(|(sum, &value)| *sum += value);
                    }
                }
            }
        });
    interrupt::check()?;
    Ok(sums)
}

/// The used `(row, cell)` entries of the AODE cell matrix `E` (K, S), column by column,
/// rows in order: a pass reads only these, where the matrix is mostly `-1` (a row uses one
/// cell of a group of cells that share their rows, and the others' columns are empty
/// there: about three quarters of amazon-employee's matrix).
pub(crate) struct ColumnEntries {
    pub(crate) rows: Vec<u32>,
    pub(crate) cells: Vec<u32>,
    /// Column `k`'s entries of row chunk `j` ([`ROW_CHUNK`] rows) are
    /// `chunk_starts[k (n_chunks + 1) + j]..chunk_starts[k (n_chunks + 1) + j + 1]`.
    chunk_starts: Vec<usize>,
    n_chunks: usize,
}

impl ColumnEntries {
    pub(crate) fn n_columns(&self) -> usize {
        self.chunk_starts.len() / (self.n_chunks + 1)
    }

    /// Column `k`'s entries among rows of chunk `chunk`.
    pub(crate) fn in_chunk(&self, k: usize, chunk: usize) -> std::ops::Range<usize> {
        let at = k * (self.n_chunks + 1) + chunk;
        self.chunk_starts[at]..self.chunk_starts[at + 1]
    }

    /// All of column `k`'s entries.
    pub(crate) fn in_column(&self, k: usize) -> std::ops::Range<usize> {
        let at = k * (self.n_chunks + 1);
        self.chunk_starts[at]..self.chunk_starts[at + self.n_chunks]
    }
}

/// The AODE passes' cell gradients: each cell's sum of its rows' residuals (`width` per
/// row and cell; `C` the width if known at compile time, else 0), times its `factors`
/// (the cells', `width` each), written to `gradient` (every cell, `width` each). Columns
/// in parallel, each column's rows in order: the same sums for any number of threads.
pub(crate) fn cell_residual_sums<const C: usize>(
    entries: &ColumnEntries,
    starts: &[usize],
    residuals: &[f64],
    width: usize,
    gradient: &mut [f64],
    factors: &[f64],
) -> Result<()> {
    let slices = split_by_bounds(gradient, &starts[..=entries.n_columns()], width)?;
    slices.into_par_iter().for_each(|(k, own)| {
        own.iter_mut().for_each(|g| *g = 0.0);
        let used = entries.in_column(k);
        for (rows, cells) in entries.rows[used.clone()]
            .chunks(interrupt::CHECK_EVERY)
            .zip(entries.cells[used].chunks(interrupt::CHECK_EVERY))
        {
            if interrupt::cancelled() {
                return;
            }
            for (&row, &cell) in rows.iter().zip(cells) {
                let at = (cell as usize - starts[k]) * width;
                let residual = &residuals[row as usize * width..][..width];
                add_classes::<C>(&mut own[at..at + width], residual);
            }
        }
        let own_factors = &factors[starts[k] * width..starts[k + 1] * width];
        own.iter_mut().zip(own_factors).for_each(|(g, &v)| *g *= v);
    });
    Ok(())
}

/// The generative Naive Bayes model whose log-probabilities the weights multiply.
#[derive(Debug, Clone, Copy)]
pub struct NaiveBayesTables<'a> {
    /// `ln theta`, `(sum K_f, C)`; a column starting with `-inf` (zero-mean category) never
    /// scores.
    pub log_table: ArrayView2<'a, f64>,
    /// `ln pi`, length C, finite.
    pub class_log_prior: &'a [f64],
    pub layout: &'a FeatureLayout,
    /// The plug-in parts `(N + m mu, N_f + m)` of `log_table` `(sum K_f, C)`: with them every
    /// training row is scored without its own count (SPEC eq. 3 less the row's weight).
    pub held_out: Option<(ArrayView2<'a, f64>, ArrayView2<'a, f64>)>,
}

/// The weights `[a (C), w (F), d (sum K_f x C, row-major like the table; only with
/// `cell_weights`)]` of a weighted Naive Bayes model minimising `J` on `(codes, labels,
/// sample_weights)` (module docs).
///
/// # Errors
/// Shape mismatches, codes or labels out of range, a class log prior that is not finite,
/// non-finite starting weights, precisions or curvature, [`HebError::Allocation`] and
/// [`HebError::Interrupted`].
pub fn fit_naive_bayes_weights(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    sample_weights: ArrayView1<f64>,
    tables: NaiveBayesTables,
    cell_weights: bool,
    fit: WeightFit,
) -> Result<LbfgsResult> {
    let layout = tables.layout;
    check_rows(codes, labels, sample_weights, layout)?;
    let n_classes = tables.class_log_prior.len();
    let (n_features, n_rows) = (layout.n_features(), codes.ncols());
    let n_columns = layout.n_columns();
    check_len("log table rows", n_columns, tables.log_table.nrows())?;
    check_len("log table columns", n_classes, tables.log_table.ncols())?;
    if tables.class_log_prior.iter().any(|v| !v.is_finite()) {
        return Err(HebError::InvalidParameter(
            "class log priors must be finite: a class with prior probability 0 cannot be \
             weighted"
                .into(),
        ));
    }
    if let Some(&class) = labels.iter().find(|&&c| c < 0 || c as usize >= n_classes) {
        return Err(HebError::ClassOutOfRange { class, n_classes });
    }
    for f in 0..n_features {
        check_code_range(f, codes.row(f), layout.cardinality(f))?;
    }
    if let Some((numerator, denominator)) = tables.held_out {
        for part in [numerator, denominator] {
            if part.dim() != tables.log_table.dim() {
                return Err(HebError::InvalidParameter(format!(
                    "leave-one-out parts have shape {:?}, expected {:?} like the log table",
                    part.dim(),
                    tables.log_table.dim()
                )));
            }
        }
    }
    let n_cells = if cell_weights {
        n_columns * n_classes
    } else {
        0
    };
    let n_weights = n_classes + n_features + n_cells;
    fit.check(n_weights)?;
    // prepared once: the table with -inf zeroed, each code's scoring column (usize::MAX:
    // none) and each row's leave-one-out shift per feature
    let mut log_table = zeroed(n_columns * n_classes, "weighted log table")?;
    for ((column, c), &v) in tables.log_table.indexed_iter() {
        if v.is_finite() {
            log_table[column * n_classes + c] = v;
        }
    }
    let scores = |column: usize| tables.log_table[[column, 0]] != f64::NEG_INFINITY;
    let mut column_of = filled(n_features * n_rows, usize::MAX, "scoring columns")?;
    let mut shift = zeroed(
        if tables.held_out.is_some() {
            n_features * n_rows
        } else {
            0
        },
        "leave-one-out shifts",
    )?;
    for f in 0..n_features {
        let start = layout.columns(f).start;
        for (r, &code) in codes.row(f).iter().enumerate() {
            if code < 0 || !scores(start + code as usize) {
                continue;
            }
            let column = start + code as usize;
            column_of[f * n_rows + r] = column;
            if let Some((numerator, denominator)) = tables.held_out {
                let (label, weight) = (labels[r] as usize, sample_weights[r]);
                let (n, d) = (numerator[[column, label]], denominator[[column, label]]);
                let (held_n, held_d) = (n - weight, d - weight);
                if weight > 0.0 && held_n > 0.0 && held_d > 0.0 {
                    shift[f * n_rows + r] = (held_n / held_d).ln() - (n / d).ln();
                }
            }
        }
        interrupt::check()?;
    }
    let inputs = NaiveBayesPass {
        codes_columns: &column_of,
        shift: tables.held_out.is_some().then_some(shift.as_slice()),
        log_table: &log_table,
        labels,
        sample_weights,
        class_log_prior: tables.class_log_prior,
        layout,
        cell_weights,
    };
    let mut buffers = NaiveBayesBuffers {
        weights: zeroed(n_columns * n_classes, "cell weights")?,
        table: zeroed(n_columns * n_classes, "weighted log table")?,
        residuals: zeroed(n_rows * n_classes, "residuals")?,
        cell_gradient: zeroed(n_columns * n_classes, "cell gradient")?,
    };
    let mut pass = |theta: &[f64], gradient: &mut [f64]| {
        by_class_count!(n_classes, C, {
            inputs.data::<C>(&mut buffers, theta, gradient)
        })
    };
    fit.run(&mut pass)
}

/// Which cell scores each row in each column of the AODE model, and the cells' values:
/// row i's score gains `d[e, c] V[e, c]` for each column's cell `e = E[k, i]`.
#[derive(Debug, Clone, Copy)]
pub struct CellTerms<'a> {
    /// `E`, shape (K, S) (column-major, like the codes): the cell of row i in column k,
    /// -1 for none.
    pub cells: ArrayView2<'a, i64>,
    /// `V`, shape (cells, C).
    pub values: ArrayView2<'a, f64>,
    /// Length K + 1, non-decreasing, ending at the number of cells: column k's cells are
    /// `column_starts[k]..column_starts[k + 1]`.
    pub column_starts: &'a [usize],
}

/// The fixed inputs of the AODE weights: the super-parents' cross-fitted terms and the
/// table cells every row uses.
#[derive(Debug, Clone, Copy)]
pub struct AodeTerms<'a> {
    /// `L[i, p, c] = (T_p,c(x_i) - ln pi_c) / P`, shape (S, P, C), finite.
    pub parent_terms: ArrayView3<'a, f64>,
    /// `G[i, q]`, shape (S, Q), finite: features of the rows with one weight per class
    /// each (Q = 0: none).
    pub row_features: ArrayView2<'a, f64>,
    /// The table cells (`E` (K, S), `V` (cells, C)); K = 0 for super-parent weights only.
    pub cells: CellTerms<'a>,
    /// `ln pi`, length C, finite.
    pub class_log_prior: &'a [f64],
}

/// The weights `[a (C), v (P), b (Q x C, row-major), d (cells x C, row-major)]` of the
/// weighted AODE minimising
/// `J` on `(labels, sample_weights)` (module docs).
///
/// # Errors
/// Shape mismatches, a cell outside its column's range, labels out of range, terms or
/// class log priors that are not finite, non-finite starting weights, precisions or
/// curvature, [`HebError::Allocation`] and [`HebError::Interrupted`].
pub fn fit_aode_weights(
    terms: AodeTerms,
    labels: ArrayView1<i64>,
    sample_weights: ArrayView1<f64>,
    fit: WeightFit,
) -> Result<LbfgsResult> {
    let n_classes = terms.class_log_prior.len();
    let (n_rows, n_parents, n_term_classes) = terms.parent_terms.dim();
    let (n_columns, n_cell_rows) = terms.cells.cells.dim();
    let n_cells = terms.cells.values.nrows();
    let (n_feature_rows, n_row_features) = terms.row_features.dim();
    check_len("parent term classes", n_classes, n_term_classes)?;
    if n_row_features > 0 {
        check_len("row feature rows", n_rows, n_feature_rows)?;
    }
    check_len("labels", n_rows, labels.len())?;
    check_len("sample weights", n_rows, sample_weights.len())?;
    if n_columns > 0 {
        check_len("cell rows", n_rows, n_cell_rows)?;
    }
    check_cell_columns(terms.cells.cells, terms.cells.column_starts)?;
    if terms.cells.values.dim() != (n_cells, n_classes) {
        return Err(HebError::InvalidParameter(format!(
            "cell values have shape {:?}, expected ({n_cells}, {n_classes})",
            terms.cells.values.dim()
        )));
    }
    let starts = terms.cells.column_starts;
    if starts[n_columns] != n_cells {
        return Err(HebError::InvalidParameter(format!(
            "column starts must rise to the {n_cells} cells of the values, got {}",
            starts[n_columns]
        )));
    }
    if let Some(&class) = labels.iter().find(|&&c| c < 0 || c as usize >= n_classes) {
        return Err(HebError::ClassOutOfRange { class, n_classes });
    }
    if terms
        .class_log_prior
        .iter()
        .chain(terms.parent_terms.iter())
        .chain(terms.cells.values.iter())
        .chain(terms.row_features.iter())
        .any(|v| !v.is_finite())
    {
        return Err(HebError::InvalidParameter(
            "class log priors, parent terms, row features and cell values must be finite".into(),
        ));
    }
    let n_head = n_classes + n_parents + n_row_features * n_classes;
    let n_weights = n_head + n_cells * n_classes;
    fit.check(n_weights)?;
    let parent_terms = contiguous(&terms.parent_terms, "parent terms")?;
    let row_features = if n_row_features > 0 {
        contiguous(&terms.row_features, "row features")?
    } else {
        &[]
    };
    let values = contiguous(&terms.cells.values, "cell values")?;
    // the cells renumbered by first use (locality), with their values and the penalty,
    // start and curvature of their weights; the result is numbered back at the end
    let renumbered =
        RenumberedCells::new(terms.cells.cells, starts, &fit, (n_head, n_classes), values)?;
    let (entries, values) = (&renumbered.entries, renumbered.factors.as_slice());
    let renumbered_fit = renumbered.fit(fit.settings);
    let inputs = AodePass {
        parent_terms,
        entries,
        values,
        starts,
        labels,
        sample_weights,
        class_log_prior: terms.class_log_prior,
        n_parents,
        row_features,
        n_row_features,
    };
    let mut buffers = AodeBuffers {
        residuals: zeroed(n_rows * n_classes, "residuals")?,
        products: zeroed(n_cells * n_classes, "cell terms")?,
    };
    let mut pass = |theta: &[f64], gradient: &mut [f64]| {
        by_class_count!(n_classes, C, {
            inputs.data::<C>(&mut buffers, theta, gradient)
        })
    };
    let result = renumbered_fit.run(&mut pass)?;
    numbered_back(result, n_head, n_classes, &renumbered.new_of_old)
}

/// The cells of an AODE weight fit renumbered by first use ([`first_use_order`]): the
/// used entries, the way back, and the fit's starting weights, precisions and inverse
/// curvature (`n_head` weights, then `width` per cell) and the cells' `factors` (`width`
/// each) moved to the new numbers.
pub(crate) struct RenumberedCells {
    pub(crate) new_of_old: Vec<usize>,
    pub(crate) entries: ColumnEntries,
    parts: [Vec<f64>; 3],
    pub(crate) factors: Vec<f64>,
}

impl RenumberedCells {
    /// Renumbers `cells` (K, S) of `starts` and moves `fit`'s parts and the `factors`.
    pub(crate) fn new(
        cells: ArrayView2<i64>,
        starts: &[usize],
        fit: &WeightFit,
        (n_head, width): (usize, usize),
        factors: &[f64],
    ) -> Result<Self> {
        let (new_of_old, entries) = first_use_order(cells, starts)?;
        let move_cells = |part: &[f64], head: usize, what: &'static str| -> Result<Vec<f64>> {
            let mut moved = zeroed(part.len(), what)?;
            moved[..head].copy_from_slice(&part[..head]);
            for (old, &new) in new_of_old.iter().enumerate() {
                moved[head + new * width..head + (new + 1) * width]
                    .copy_from_slice(&part[head + old * width..head + (old + 1) * width]);
            }
            Ok(moved)
        };
        let parts = [
            move_cells(fit.start, n_head, "renumbered start")?,
            move_cells(fit.precision, n_head, "renumbered precision")?,
            move_cells(fit.inverse_curvature, n_head, "renumbered curvature")?,
        ];
        let factors = move_cells(factors, 0, "renumbered cell factors")?;
        Ok(Self {
            new_of_old,
            entries,
            parts,
            factors,
        })
    }

    /// `fit` with the renumbered starting weights, precisions and inverse curvature.
    pub(crate) fn fit(&self, settings: LbfgsSettings) -> WeightFit<'_> {
        WeightFit {
            start: &self.parts[0],
            precision: &self.parts[1],
            inverse_curvature: &self.parts[2],
            settings,
        }
    }
}

/// The chunks' losses and sums of a pass added in chunk order (the same totals for any
/// number of threads); `n_sums` sums per chunk.
pub(crate) fn chunk_totals(chunk_sums: &[(f64, Vec<f64>)], n_sums: usize) -> (f64, Vec<f64>) {
    let mut loss = 0.0;
    let mut sums = vec![0.0; n_sums];
    for (chunk_loss, chunk) in chunk_sums {
        loss += chunk_loss;
        sums.iter_mut().zip(chunk).for_each(|(t, s)| *t += s);
    }
    (loss, sums)
}

/// A C-contiguous view's entries, or an error naming `what`.
pub(crate) fn contiguous<'a, D: ndarray::Dimension>(
    view: &ndarray::ArrayView<'a, f64, D>,
    what: &str,
) -> Result<&'a [f64]> {
    view.to_slice()
        .ok_or_else(|| HebError::InvalidParameter(format!("{what} must be C-contiguous")))
}

/// `result`'s weights and gradient with the cells numbered back from
/// [`RenumberedCells`]' places.
pub(crate) fn numbered_back(
    result: LbfgsResult,
    n_head: usize,
    width: usize,
    new_of_old: &[usize],
) -> Result<LbfgsResult> {
    let n_weights = result.theta.len();
    let mut theta = zeroed(n_weights, "cell weights")?;
    let mut gradient = zeroed(n_weights, "cell weight gradient")?;
    for (out, moved) in [
        (&mut theta, &result.theta),
        (&mut gradient, &result.gradient),
    ] {
        out[..n_head].copy_from_slice(&moved[..n_head]);
        for (old, &new) in new_of_old.iter().enumerate() {
            out[n_head + old * width..n_head + (old + 1) * width]
                .copy_from_slice(&moved[n_head + new * width..n_head + (new + 1) * width]);
        }
    }
    Ok(LbfgsResult {
        theta,
        gradient,
        ..result
    })
}

/// The fixed inputs of one evaluation of the Naive Bayes data term.
struct NaiveBayesPass<'a> {
    /// The scoring column of every (feature, row), feature-major (`usize::MAX`: none).
    codes_columns: &'a [usize],
    /// With leave-one-out rows: each (feature, row)'s shift of its own class's cell.
    shift: Option<&'a [f64]>,
    /// `ln theta` with `-inf` zeroed, (sum K_f, C) row-major.
    log_table: &'a [f64],
    labels: ArrayView1<'a, i64>,
    sample_weights: ArrayView1<'a, f64>,
    class_log_prior: &'a [f64],
    layout: &'a FeatureLayout,
    cell_weights: bool,
}

/// The number of classes of a pass compiled for `C` classes (0: any number, read from
/// the class prior).
fn class_count<const C: usize>(class_log_prior: &[f64]) -> usize {
    if C == 0 {
        class_log_prior.len()
    } else {
        C
    }
}

/// What an evaluation writes: the cells' whole weights and weighted log-probabilities,
/// every row's residuals and the cells' gradient.
struct NaiveBayesBuffers {
    weights: Vec<f64>,
    table: Vec<f64>,
    residuals: Vec<f64>,
    cell_gradient: Vec<f64>,
}

impl NaiveBayesPass<'_> {
    /// The data term `-sum_i s_i ln P(y_i | x_i)` at `theta = [a, w, d]`, its gradient
    /// written to `gradient`. `C` is the number of classes (a constant, so that the class
    /// loops unroll), or 0 for any other number.
    fn data<const C: usize>(
        &self,
        buffers: &mut NaiveBayesBuffers,
        theta: &[f64],
        gradient: &mut [f64],
    ) -> Result<f64> {
        let n_classes = class_count::<C>(self.class_log_prior);
        let layout = self.layout;
        let n_features = layout.n_features();
        let n_rows = self.labels.len();
        let (labels, sample_weights) = (self.labels, self.sample_weights);
        let class_log_prior = &self.class_log_prior[..n_classes];
        let (log_table, column_of, cell_weights) =
            (self.log_table, self.codes_columns, self.cell_weights);
        let held_out = self.shift.is_some();
        let shift = self.shift.unwrap_or(&[]);
        let NaiveBayesBuffers {
            weights,
            table,
            residuals,
            cell_gradient,
        } = buffers;
        let (a, rest) = theta.split_at(n_classes);
        let (w, d) = rest.split_at(n_features);
        for (f, &feature_weight) in w.iter().enumerate() {
            for column in layout.columns(f) {
                for c in 0..n_classes {
                    let at = column * n_classes + c;
                    weights[at] = feature_weight + if cell_weights { d[at] } else { 0.0 };
                    table[at] = weights[at] * log_table[at];
                }
            }
        }
        let (weights, table) = (&weights, &table);
        // pass 1: residuals row by row, loss and class sums per chunk
        let chunk_sums: Vec<(f64, Vec<f64>)> = residuals
            .par_chunks_mut(ROW_CHUNK * n_classes)
            .enumerate()
            .map(|(chunk, block)| {
                let first = chunk * ROW_CHUNK;
                let mut loss = 0.0;
                let mut class_sums = vec![0.0; n_classes];
                if interrupt::cancelled() {
                    return (loss, class_sums);
                }
                for (i, row) in block.chunks_exact_mut(n_classes).enumerate() {
                    let r = first + i;
                    let label = labels[r] as usize;
                    for (c, score) in row.iter_mut().enumerate() {
                        *score = a[c] * class_log_prior[c];
                    }
                    for f in 0..n_features {
                        let column = column_of[f * n_rows + r];
                        if column == usize::MAX {
                            continue;
                        }
                        let at = column * n_classes;
                        add_classes::<C>(row, &table[at..at + n_classes]);
                        if held_out {
                            row[label] += weights[at + label] * shift[f * n_rows + r];
                        }
                    }
                    loss += residuals_in_place(row, label, sample_weights[r], &mut class_sums);
                }
                (loss, class_sums)
            })
            .collect();
        interrupt::check()?;
        let (loss, class_residuals) = chunk_totals(&chunk_sums, n_classes);
        // pass 2: each feature sums its rows' residuals times the cell's log-probability
        // (plus the own-class shift) into its own cells, features in parallel, rows in order
        let residuals = &residuals;
        let slices = split_by_bounds(cell_gradient.as_mut_slice(), layout.offsets(), n_classes)?;
        slices.into_par_iter().for_each(|(f, cells)| {
            cells.iter_mut().for_each(|g| *g = 0.0);
            let first = layout.columns(f).start * n_classes;
            for r in 0..n_rows {
                if r % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                    return;
                }
                let column = column_of[f * n_rows + r];
                if column == usize::MAX {
                    continue;
                }
                let at = column * n_classes;
                let residual = &residuals[r * n_classes..(r + 1) * n_classes];
                let cell = &mut cells[at - first..at - first + n_classes];
                add_products::<C>(cell, residual, &log_table[at..at + n_classes]);
                if held_out {
                    let label = labels[r] as usize;
                    cell[label] += residual[label] * shift[f * n_rows + r];
                }
            }
        });
        interrupt::check()?;
        let (grad_a, grad_rest) = gradient.split_at_mut(n_classes);
        let (grad_w, grad_d) = grad_rest.split_at_mut(n_features);
        for c in 0..n_classes {
            grad_a[c] = class_residuals[c] * class_log_prior[c];
        }
        for (f, g) in grad_w.iter_mut().enumerate() {
            let range = layout.columns(f);
            *g = cell_gradient[range.start * n_classes..range.end * n_classes]
                .iter()
                .sum();
        }
        if cell_weights {
            grad_d.copy_from_slice(cell_gradient);
        }
        Ok(loss)
    }
}

/// The fixed inputs of one evaluation of the AODE data term, cells renumbered by first use.
struct AodePass<'a> {
    /// `L`, (S, P, C) row-major.
    parent_terms: &'a [f64],
    /// `E`: the cell of each row in each column, as its used entries.
    entries: &'a ColumnEntries,
    /// `V`, (cells, C) row-major.
    values: &'a [f64],
    starts: &'a [usize],
    labels: ArrayView1<'a, i64>,
    sample_weights: ArrayView1<'a, f64>,
    class_log_prior: &'a [f64],
    n_parents: usize,
    /// `G`, (S, Q) row-major (empty for Q = 0).
    row_features: &'a [f64],
    n_row_features: usize,
}

/// What an evaluation writes: every row's residuals and every cell's `d V`.
struct AodeBuffers {
    residuals: Vec<f64>,
    products: Vec<f64>,
}

impl AodePass<'_> {
    /// The data term `-sum_i s_i ln P(y_i | x_i)` at `theta = [a, v, b, d]`, its gradient
    /// written to `gradient`. `C` is the number of classes (a constant, so that the class
    /// loops unroll), or 0 for any other number.
    fn data<const C: usize>(
        &self,
        buffers: &mut AodeBuffers,
        theta: &[f64],
        gradient: &mut [f64],
    ) -> Result<f64> {
        let n_classes = class_count::<C>(self.class_log_prior);
        let (n_parents, n_columns) = (self.n_parents, self.entries.n_columns());
        let (parent_terms, values, starts) = (self.parent_terms, self.values, self.starts);
        let (labels, sample_weights) = (self.labels, self.sample_weights);
        let class_log_prior = &self.class_log_prior[..n_classes];
        let entries = self.entries;
        let n_row_features = self.n_row_features;
        let row_features = self.row_features;
        let (a, rest) = theta.split_at(n_classes);
        let (v, rest) = rest.split_at(n_parents);
        let (b, d) = rest.split_at(n_row_features * n_classes);
        let a = &a[..n_classes];
        let n_sums = n_classes + n_parents + n_row_features * n_classes;
        // the row features' weights class by class (b is feature by feature), so that a
        // row's score and the weights' gradient are sums over contiguous features
        let mut b_by_class = vec![0.0; n_row_features * n_classes];
        for (q, weights) in b.chunks_exact(n_classes).enumerate() {
            for (c, &weight) in weights.iter().enumerate() {
                b_by_class[c * n_row_features + q] = weight;
            }
        }
        let b_by_class = b_by_class.as_slice();
        buffers
            .products
            .par_chunks_mut(VECTOR_CHUNK)
            .zip(
                d.par_chunks(VECTOR_CHUNK)
                    .zip(values.par_chunks(VECTOR_CHUNK)),
            )
            .for_each(|(products, (d, values))| {
                for (p, (w, value)) in products.iter_mut().zip(d.iter().zip(values)) {
                    *p = w * value;
                }
            });
        let products = buffers.products.as_slice();
        // pass 1: per chunk of rows the scores (parent terms, then column by column: each
        // column's cells are contiguous), residuals, loss, class and parent sums
        let chunk_sums: Vec<(f64, Vec<f64>)> = buffers
            .residuals
            .par_chunks_mut(ROW_CHUNK * n_classes)
            .enumerate()
            .map(|(chunk, block)| {
                let first = chunk * ROW_CHUNK;
                let n = block.len() / n_classes;
                // class sums, then parent gradients, then row feature gradients (class-major)
                let mut sums = vec![0.0; n_sums];
                if interrupt::cancelled() {
                    return (0.0, sums);
                }
                let row_terms = n_parents * n_classes;
                let terms = &parent_terms[first * row_terms..(first + n) * row_terms];
                let features = &row_features[first * n_row_features..(first + n) * n_row_features];
                for (i, (row, term)) in block
                    .chunks_exact_mut(n_classes)
                    .zip(terms.chunks_exact(row_terms))
                    .enumerate()
                {
                    let own = &features[i * n_row_features..(i + 1) * n_row_features];
                    for (c, score) in row.iter_mut().enumerate() {
                        let mut s = a[c] * class_log_prior[c];
                        for (&weight, parent) in v.iter().zip(term.chunks_exact(n_classes)) {
                            s += weight * parent[c];
                        }
                        let weights = &b_by_class[c * n_row_features..(c + 1) * n_row_features];
                        *score = s + lane_dot(own, weights);
                    }
                }
                for k in 0..n_columns {
                    let used = entries.in_chunk(k, chunk);
                    for (&row, &cell) in entries.rows[used.clone()].iter().zip(&entries.cells[used])
                    {
                        let at = (row as usize - first) * n_classes;
                        let product = cell as usize * n_classes;
                        add_classes::<C>(
                            &mut block[at..at + n_classes],
                            &products[product..product + n_classes],
                        );
                    }
                }
                let mut loss = 0.0;
                let (class_sums, rest) = sums.split_at_mut(n_classes);
                let (parent_sums, feature_sums) = rest.split_at_mut(n_parents);
                let labels = labels.slice(ndarray::s![first..first + n]);
                let weights = sample_weights.slice(ndarray::s![first..first + n]);
                for (i, (((row, term), &label), &weight)) in block
                    .chunks_exact_mut(n_classes)
                    .zip(terms.chunks_exact(row_terms))
                    .zip(labels.iter())
                    .zip(weights.iter())
                    .enumerate()
                {
                    loss += residuals_in_place(row, label as usize, weight, class_sums);
                    for (g, parent) in parent_sums.iter_mut().zip(term.chunks_exact(n_classes)) {
                        for c in 0..n_classes {
                            *g += row[c] * parent[c];
                        }
                    }
                    // class by class (transposed into the gradient's order below)
                    let own = &features[i * n_row_features..(i + 1) * n_row_features];
                    for (&residual, sums) in row
                        .iter()
                        .zip(feature_sums.chunks_exact_mut(n_row_features.max(1)))
                    {
                        for (sum, &g) in sums.iter_mut().zip(own) {
                            *sum += residual * g;
                        }
                    }
                }
                (loss, sums)
            })
            .collect();
        interrupt::check()?;
        let (loss, sums) = chunk_totals(&chunk_sums, n_sums);
        let (head, grad_d) = gradient.split_at_mut(n_sums);
        for c in 0..n_classes {
            head[c] = sums[c] * class_log_prior[c];
        }
        let n_generative = n_classes + n_parents;
        head[n_classes..n_generative].copy_from_slice(&sums[n_classes..n_generative]);
        for (c, by_feature) in sums[n_generative..]
            .chunks_exact(n_row_features.max(1))
            .enumerate()
        {
            for (q, &sum) in by_feature.iter().enumerate() {
                head[n_generative + q * n_classes + c] = sum;
            }
        }
        // pass 2: each column sums its rows' residuals into its own cells, times the
        // cells' values
        cell_residual_sums::<C>(
            entries,
            starts,
            &buffers.residuals,
            n_classes,
            grad_d,
            values,
        )?;
        interrupt::check()?;
        Ok(loss)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::parallel::with_threads;
    use crate::test_random::uniform;
    use ndarray::{Array1, Array2, Array3};

    #[derive(Clone)]
    struct NaiveBayesData {
        layout: FeatureLayout,
        codes: Array2<i32>,
        labels: Array1<i64>,
        weights: Array1<f64>,
        log_table: Array2<f64>,
        numerator: Array2<f64>,
        denominator: Array2<f64>,
        class_log_prior: Vec<f64>,
    }

    fn naive_bayes_data(n_rows: usize, seed: u64) -> NaiveBayesData {
        naive_bayes_data_of(n_rows, seed, 3)
    }

    fn naive_bayes_data_of(n_rows: usize, seed: u64, n_classes: usize) -> NaiveBayesData {
        let mut seed = seed;
        let layout = FeatureLayout::from_cardinalities(&[2, 3, 4]);
        let codes = Array2::from_shape_fn((3, n_rows), |(f, _)| {
            let k = layout.cardinality(f);
            let draw = (uniform(&mut seed) * (k as f64 + 0.5)) as i32;
            if draw as usize >= k {
                -1
            } else {
                draw
            }
        });
        let labels =
            Array1::from_shape_fn(n_rows, |_| (uniform(&mut seed) * n_classes as f64) as i64);
        let weights = Array1::from_shape_fn(n_rows, |_| 0.5 + uniform(&mut seed));
        let numerator = Array2::from_shape_fn((layout.n_columns(), n_classes), |_| {
            1.5 + 5.0 * uniform(&mut seed)
        });
        let denominator = Array2::from_shape_fn((layout.n_columns(), n_classes), |(column, c)| {
            numerator[[column, c]] + 2.0 + 3.0 * uniform(&mut seed)
        });
        let mut log_table = Array2::from_shape_fn(numerator.dim(), |(column, c)| {
            (numerator[[column, c]] / denominator[[column, c]]).ln()
        });
        log_table.row_mut(4).fill(f64::NEG_INFINITY); // a zero-mean category
        NaiveBayesData {
            layout,
            codes,
            labels,
            weights,
            log_table,
            numerator,
            denominator,
            class_log_prior: if n_classes == 3 {
                vec![-1.2, -0.9, -1.3]
            } else {
                (0..n_classes).map(|c| -1.0 - 0.1 * c as f64).collect()
            },
        }
    }

    /// `J` without penalty at `theta`, written directly from the model's definition.
    fn naive_bayes_loss(data: &NaiveBayesData, theta: &[f64], cells: bool, held_out: bool) -> f64 {
        let n_classes = 3;
        let n_features = data.layout.n_features();
        let mut loss = 0.0;
        for r in 0..data.codes.ncols() {
            let y = data.labels[r] as usize;
            let mut s: Vec<f64> = (0..n_classes)
                .map(|c| theta[c] * data.class_log_prior[c])
                .collect();
            for f in 0..n_features {
                let code = data.codes[[f, r]];
                if code < 0 {
                    continue;
                }
                let column = data.layout.columns(f).start + code as usize;
                if data.log_table[[column, 0]] == f64::NEG_INFINITY {
                    continue;
                }
                for (c, score) in s.iter_mut().enumerate() {
                    let mut weight = theta[n_classes + f];
                    if cells {
                        weight += theta[n_classes + n_features + column * n_classes + c];
                    }
                    let mut log_p = data.log_table[[column, c]];
                    if held_out && c == y {
                        let w = data.weights[r];
                        log_p = ((data.numerator[[column, c]] - w)
                            / (data.denominator[[column, c]] - w))
                            .ln();
                    }
                    *score += weight * log_p;
                }
            }
            let log_norm = s.iter().map(|v| v.exp()).sum::<f64>().ln();
            loss -= data.weights[r] * (s[y] - log_norm);
        }
        loss
    }

    fn settings(max_iter: usize) -> LbfgsSettings {
        LbfgsSettings {
            gradient_tolerance: 1e-9,
            max_iter,
            memory: 10,
        }
    }

    fn fit_naive_bayes(
        data: &NaiveBayesData,
        start: &[f64],
        precision: &[f64],
        cells: bool,
        held_out: bool,
        max_iter: usize,
    ) -> Result<LbfgsResult> {
        let tables = NaiveBayesTables {
            log_table: data.log_table.view(),
            class_log_prior: &data.class_log_prior,
            layout: &data.layout,
            held_out: held_out.then(|| (data.numerator.view(), data.denominator.view())),
        };
        let curvature = vec![1.0; start.len()];
        fit_naive_bayes_weights(
            data.codes.view(),
            data.labels.view(),
            data.weights.view(),
            tables,
            cells,
            WeightFit {
                start,
                precision,
                inverse_curvature: &curvature,
                settings: settings(max_iter),
            },
        )
    }

    #[test]
    fn the_naive_bayes_objective_and_gradient_match_a_direct_loss() {
        let data = naive_bayes_data(40, 7);
        for (cells, held_out) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut seed = 11;
            let n = 3 + 3 + if cells { 9 * 3 } else { 0 };
            let theta: Vec<f64> = (0..n).map(|_| 0.5 + uniform(&mut seed)).collect();
            // no iterations: the value and gradient at the start (the penalty is zero there)
            let at = fit_naive_bayes(&data, &theta, &vec![1.0; n], cells, held_out, 0).unwrap();
            let direct = naive_bayes_loss(&data, &theta, cells, held_out);
            assert!((at.value - direct).abs() < 1e-10, "{} {direct}", at.value);
            let h = 1e-6;
            for k in 0..n {
                let (mut up, mut down) = (theta.clone(), theta.clone());
                up[k] += h;
                down[k] -= h;
                let numeric = (naive_bayes_loss(&data, &up, cells, held_out)
                    - naive_bayes_loss(&data, &down, cells, held_out))
                    / (2.0 * h);
                assert!(
                    (numeric - at.gradient[k]).abs() < 1e-6,
                    "weight {k}: {numeric} {}",
                    at.gradient[k]
                );
            }
        }
    }

    #[test]
    fn the_naive_bayes_weights_are_the_same_for_any_thread_count() {
        let data = naive_bayes_data(3 * ROW_CHUNK + 5, 3);
        let n = 3 + 3 + 9 * 3;
        let start: Vec<f64> = (0..n).map(|k| if k < 6 { 1.0 } else { 0.0 }).collect();
        let precision = vec![0.5; n];
        let fits: Vec<LbfgsResult> = [1, 2, 3]
            .iter()
            .map(|&t| {
                with_threads(t, || {
                    fit_naive_bayes(&data, &start, &precision, true, true, 200)
                })
                .unwrap()
                .unwrap()
            })
            .collect();
        assert!(fits[0].converged);
        assert_eq!(fits[0], fits[1]);
        assert_eq!(fits[0], fits[2]);
        // the optimum: the penalised gradient vanishes
        assert!(fits[0].gradient.iter().all(|g| g.abs() <= 1e-9));
    }

    /// AODE weight-fit inputs: terms (S, 2, C), three columns of 4, 1 and 6 cells, values
    /// (11, C), labels, weights, class log priors and two row features.
    pub(crate) struct AodeData {
        pub(crate) terms: Array3<f64>,
        pub(crate) cells: Array2<i64>,
        pub(crate) starts: Vec<usize>,
        pub(crate) values: Array2<f64>,
        pub(crate) labels: Array1<i64>,
        pub(crate) weights: Array1<f64>,
        pub(crate) class_log_prior: Vec<f64>,
        pub(crate) row_features: Array2<f64>,
    }

    /// Weights of the AODE test data: a, v, b (two features) and d (11 cells), two classes.
    const AODE_WEIGHTS: usize = 2 + 2 + 2 * 2 + 11 * 2;

    #[test]
    fn bad_codes_labels_and_leave_one_out_parts_are_errors() {
        let good = naive_bayes_data(40, 5);
        let n = 3 + 3 + 9 * 3;
        let start: Vec<f64> = (0..n).map(|k| if k < 6 { 1.0 } else { 0.0 }).collect();
        let precision = vec![0.5; n];
        let fit = |data: &NaiveBayesData| fit_naive_bayes(data, &start, &precision, true, true, 5);
        assert!(fit(&good).is_ok());
        let mut bad_code = good.clone();
        bad_code.codes[[1, 7]] = 3;
        assert!(matches!(
            fit(&bad_code),
            Err(HebError::CodeOutOfRange {
                feature: 1,
                code: 3,
                n_categories: 3
            })
        ));
        let mut bad_label = good.clone();
        bad_label.labels[2] = 3;
        assert!(matches!(
            fit(&bad_label),
            Err(HebError::ClassOutOfRange { class: 3, .. })
        ));
        let mut bad_parts = good.clone();
        bad_parts.numerator = Array2::ones((2, 3));
        assert!(matches!(
            fit(&bad_parts),
            Err(HebError::InvalidParameter(_))
        ));
    }

    /// [`AodeData`] of two classes.
    pub(crate) fn aode_data(n_rows: usize, seed: u64) -> AodeData {
        aode_data_of(n_rows, seed, 2)
    }

    fn aode_data_of(n_rows: usize, seed: u64, n_classes: usize) -> AodeData {
        let mut seed = seed;
        let n_parents = 2;
        let terms = Array3::from_shape_fn((n_rows, n_parents, n_classes), |_| {
            -2.0 * uniform(&mut seed)
        });
        // three columns of 4, 1 and 6 cells; -1: no cell on that row
        let starts = vec![0, 4, 5, 11];
        let cells = Array2::from_shape_fn((3, n_rows), |(k, _)| {
            let size = starts[k + 1] - starts[k];
            let draw = (uniform(&mut seed) * (size as f64 + 1.0)) as usize;
            if draw >= size {
                -1
            } else {
                // numbered backwards, so that first use renumbers them
                (starts[k + 1] - 1 - draw) as i64
            }
        });
        let values = Array2::from_shape_fn((11, n_classes), |_| -3.0 * uniform(&mut seed));
        let labels =
            Array1::from_shape_fn(n_rows, |_| (uniform(&mut seed) * n_classes as f64) as i64);
        let weights = Array1::from_shape_fn(n_rows, |_| 0.5 + uniform(&mut seed));
        let row_features = Array2::from_shape_fn((n_rows, 2), |_| 2.0 * uniform(&mut seed) - 1.0);
        let class_log_prior = if n_classes == 2 {
            vec![-0.5, -0.9]
        } else {
            (0..n_classes).map(|c| -1.0 - 0.1 * c as f64).collect()
        };
        AodeData {
            terms,
            cells,
            starts,
            values,
            labels,
            weights,
            class_log_prior,
            row_features,
        }
    }

    fn aode_loss(data: &AodeData, theta: &[f64]) -> f64 {
        let (n_rows, n_parents, n_classes) = data.terms.dim();
        let mut loss = 0.0;
        for r in 0..n_rows {
            let y = data.labels[r] as usize;
            let mut s = vec![0.0; n_classes];
            for (c, score) in s.iter_mut().enumerate() {
                *score = theta[c] * data.class_log_prior[c];
                for p in 0..n_parents {
                    *score += theta[n_classes + p] * data.terms[[r, p, c]];
                }
                let n_features = data.row_features.ncols();
                for q in 0..n_features {
                    *score += theta[n_classes + n_parents + q * n_classes + c]
                        * data.row_features[[r, q]];
                }
                let first_cell = n_classes + n_parents + n_features * n_classes;
                for k in 0..data.cells.nrows() {
                    let cell = data.cells[[k, r]];
                    if cell >= 0 {
                        let e = cell as usize;
                        *score += theta[first_cell + e * n_classes + c] * data.values[[e, c]];
                    }
                }
            }
            let log_norm = s.iter().map(|v| v.exp()).sum::<f64>().ln();
            loss -= data.weights[r] * (s[y] - log_norm);
        }
        loss
    }

    fn fit_aode(
        data: &AodeData,
        start: &[f64],
        precision: &[f64],
        max_iter: usize,
    ) -> Result<LbfgsResult> {
        fit_aode_with(data, start, precision, settings(max_iter))
    }

    /// The general AODE weight fit of `data` (unit inverse curvature).
    pub(crate) fn fit_aode_with(
        data: &AodeData,
        start: &[f64],
        precision: &[f64],
        settings: LbfgsSettings,
    ) -> Result<LbfgsResult> {
        let curvature = vec![1.0; start.len()];
        fit_aode_weights(
            AodeTerms {
                parent_terms: data.terms.view(),
                row_features: data.row_features.view(),
                cells: CellTerms {
                    cells: data.cells.view(),
                    values: data.values.view(),
                    column_starts: &data.starts,
                },
                class_log_prior: &data.class_log_prior,
            },
            data.labels.view(),
            data.weights.view(),
            WeightFit {
                start,
                precision,
                inverse_curvature: &curvature,
                settings,
            },
        )
    }

    #[test]
    fn the_aode_objective_and_gradient_match_a_direct_loss() {
        // two classes (AODE_WEIGHTS), five (a pass compiled for five) and twelve (the loop)
        for n_classes in [2, 5, 12] {
            let data = aode_data_of(30, 5, n_classes);
            let n = n_classes * (1 + data.row_features.ncols() + 11) + 2;
            assert!(n_classes != 2 || n == AODE_WEIGHTS);
            let mut seed = 3;
            let theta: Vec<f64> = (0..n).map(|_| uniform(&mut seed) - 0.3).collect();
            let at = fit_aode(&data, &theta, &vec![1.0; n], 0).unwrap();
            assert!((at.value - aode_loss(&data, &theta)).abs() < 1e-10);
            assert_eq!(at.theta, theta, "numbered back");
            let h = 1e-6;
            for k in 0..n {
                let (mut up, mut down) = (theta.clone(), theta.clone());
                up[k] += h;
                down[k] -= h;
                let numeric = (aode_loss(&data, &up) - aode_loss(&data, &down)) / (2.0 * h);
                assert!(
                    (numeric - at.gradient[k]).abs() < 1e-6,
                    "{n_classes} classes, weight {k}"
                );
            }
        }
    }

    /// The AODE pass compiled for `C` classes against the loop over any number.
    fn aode_unrolled_equals_generic<const C: usize>() {
        let mut seed = 17 + C as u64;
        let data = aode_data_of(300, 9, C);
        let (n_rows, n_parents, n_classes) = data.terms.dim();
        let n = n_classes * (1 + data.row_features.ncols() + 11) + n_parents;
        let theta: Vec<f64> = (0..n).map(|_| uniform(&mut seed) - 0.3).collect();
        let (_, entries) = first_use_order(data.cells.view(), &data.starts).unwrap();
        let pass = AodePass {
            parent_terms: data.terms.as_slice().unwrap(),
            entries: &entries,
            values: data.values.as_slice().unwrap(),
            starts: &data.starts,
            labels: data.labels.view(),
            sample_weights: data.weights.view(),
            class_log_prior: &data.class_log_prior,
            n_parents,
            row_features: data.row_features.as_slice().unwrap(),
            n_row_features: data.row_features.ncols(),
        };
        let buffers = || AodeBuffers {
            residuals: vec![0.0; n_rows * n_classes],
            products: vec![0.0; 11 * n_classes],
        };
        let (mut unrolled, mut generic) = (vec![0.0; n], vec![0.0; n]);
        let a = pass
            .data::<C>(&mut buffers(), &theta, &mut unrolled)
            .unwrap();
        let b = pass
            .data::<0>(&mut buffers(), &theta, &mut generic)
            .unwrap();
        assert_eq!(a.to_bits(), b.to_bits(), "{C} classes");
        assert_eq!(unrolled, generic, "{C} classes");
    }

    #[test]
    fn the_generic_class_loops_give_the_bits_of_the_unrolled_ones() {
        aode_unrolled_equals_generic::<2>();
        aode_unrolled_equals_generic::<3>();
        aode_unrolled_equals_generic::<5>();
        aode_unrolled_equals_generic::<10>();
        naive_bayes_unrolled_equals_generic::<3>();
        naive_bayes_unrolled_equals_generic::<5>();
        naive_bayes_unrolled_equals_generic::<10>();
    }

    /// The Naive Bayes pass compiled for `C` classes against the loop over any number, with
    /// leave-one-out shifts.
    fn naive_bayes_unrolled_equals_generic<const C: usize>() {
        let mut seed = 17 + C as u64;
        let data = naive_bayes_data_of(200, 4, C);
        let (n_rows, n_columns) = (data.codes.ncols(), data.layout.n_columns());
        let mut column_of = vec![usize::MAX; 3 * n_rows];
        let mut shift = vec![0.0; 3 * n_rows];
        for f in 0..3 {
            for r in 0..n_rows {
                let code = data.codes[[f, r]];
                let column = data.layout.columns(f).start + code.max(0) as usize;
                if code >= 0 && data.log_table[[column, 0]].is_finite() {
                    column_of[f * n_rows + r] = column;
                    shift[f * n_rows + r] = uniform(&mut seed) - 0.5;
                }
            }
        }
        let log_table: Vec<f64> = data
            .log_table
            .iter()
            .map(|&v| if v.is_finite() { v } else { 0.0 })
            .collect();
        let pass = NaiveBayesPass {
            codes_columns: &column_of,
            shift: Some(&shift),
            log_table: &log_table,
            labels: data.labels.view(),
            sample_weights: data.weights.view(),
            class_log_prior: &data.class_log_prior,
            layout: &data.layout,
            cell_weights: true,
        };
        let n = C + 3 + n_columns * C;
        let theta: Vec<f64> = (0..n).map(|_| 0.5 + uniform(&mut seed)).collect();
        let buffers = || NaiveBayesBuffers {
            weights: vec![0.0; n_columns * C],
            table: vec![0.0; n_columns * C],
            residuals: vec![0.0; n_rows * C],
            cell_gradient: vec![0.0; n_columns * C],
        };
        let (mut unrolled, mut generic) = (vec![0.0; n], vec![0.0; n]);
        let a = pass
            .data::<C>(&mut buffers(), &theta, &mut unrolled)
            .unwrap();
        let b = pass
            .data::<0>(&mut buffers(), &theta, &mut generic)
            .unwrap();
        assert_eq!(a.to_bits(), b.to_bits(), "{C} classes");
        assert_eq!(unrolled, generic, "{C} classes");
    }

    #[test]
    fn the_aode_weights_are_the_same_for_any_thread_count_and_errors_are_reported() {
        let data = aode_data(2 * ROW_CHUNK + 9, 1);
        let n = AODE_WEIGHTS;
        let start: Vec<f64> = (0..n).map(|k| if k < 4 { 1.0 } else { 0.0 }).collect();
        let precision = vec![0.3; n];
        let fits: Vec<LbfgsResult> = [1, 2, 3]
            .iter()
            .map(|&t| {
                with_threads(t, || fit_aode(&data, &start, &precision, 200))
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert!(fits[0].converged);
        assert_eq!(fits[0], fits[1]);
        assert_eq!(fits[0], fits[2]);
        let mut bad = aode_data(10, 2);
        bad.labels[3] = 2;
        assert!(matches!(
            fit_aode(&bad, &start, &precision, 5),
            Err(HebError::ClassOutOfRange { .. })
        ));
        let mut outside = aode_data(10, 2);
        outside.cells[[0, 1]] = 6; // column 0 owns cells 0..4
        assert!(fit_aode(&outside, &start, &precision, 5).is_err());
        assert!(fit_aode(&aode_data(10, 2), &start[1..], &precision[1..], 5).is_err());
        let mut short_features = aode_data(10, 2);
        short_features.row_features = Array2::zeros((9, 2));
        assert!(fit_aode(&short_features, &start, &precision, 5).is_err());
        let mut infinite_feature = aode_data(10, 2);
        infinite_feature.row_features[[4, 1]] = f64::INFINITY;
        assert!(matches!(
            fit_aode(&infinite_feature, &start, &precision, 5),
            Err(HebError::InvalidParameter(_))
        ));
    }
}
