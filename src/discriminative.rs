//! The conditional log-likelihood of a weighted Naive Bayes score and the residual sums its
//! gradient is made of (discriminative weighting: WANBIA-C and ALR, docs/discriminative.md).
//!
//! A weighted model scores class `c` of row `x` with
//!
//! ```text
//! s_c(x) = b_c + sum over f with x_f present and known of  T[f, x_f, c]
//! ```
//!
//! where `b_c = a_c ln pi_c` and `T = w (.) ln theta` are the generative log-probabilities
//! (SPEC eq. 1) multiplied by the weights being learned. The negative conditional
//! log-likelihood of a training set with row weights `s_i` is
//!
//! ```text
//! L = - sum_i s_i [ s_{y_i}(x_i) - logsumexp_c s_c(x_i) ]
//! ```
//!
//! and its derivative with respect to any score entry is a sum of residuals
//! `r_ic = s_i (P(c | x_i) - [c = y_i])`: `dL/dT[f, v, c] = sum over rows with x_f = v of
//! r_ic` and `dL/db_c = sum_i r_ic`. The chain rule through the weights (`dT/dw = ln theta`)
//! is a per-cell product the caller does; this kernel does the O(rows x features) part.
//!
//! Held-out training rows: a training row's own count is part of the log-probabilities it
//! is scored with, so on its own class's entries it looks more probable than an unseen row
//! would; weights fitted on such scores learn to trust memorised rare values (a weight of
//! 6 on a feature with thousands of values on amazon-employee). With [`LeaveOneOut`] the
//! entry of a row's own class is the plug-in estimate without the row,
//!
//! ```text
//! ln theta^(-i)[f, v, y_i] = ln( (N[y_i, f, v] - s_i + m mu_v) / (N[y_i, f] - s_i + m) )
//! ```
//!
//! (SPEC eq. 3 with the row's weight removed) times the cell's weight, and the kernel also
//! returns `sum over those rows of r_{i y_i} (ln theta^(-i) - ln theta)`, the correction
//! that turns `dL/dT (.) ln theta` into the gradient with respect to the cell weights.
//!
//! Determinism: the first pass runs over fixed chunks of rows in parallel (each row's
//! score, posterior and residuals depend on that row only) and reduces the per-chunk loss
//! and class sums in chunk order; the second pass scatters the residuals into the table in
//! parallel over features (each feature owns its cells) and in row order within a feature.
//! Neither order depends on the number of threads, so the results are bit-identical for
//! any `n_jobs`.
//!
//! Weighted cells with their own values (ALR on AODE's pair tables, docs/discriminative.md):
//! [`cell_weighted_log_likelihood`] scores
//!
//! ```text
//! s_c(x_i) = b_c + o_ic + sum over columns k with a cell e = E[i, k] of  W[e, c] V[e, c]
//! ```
//!
//! where `E` assigns each row a cell per column (an AODE orientation (parent, child), or a
//! super-parent's whole term on that row), `V[e, c]` is the cell's log-probability, `o` a
//! fixed offset per row and `W` the weights being learned. The gradient is
//! `dL/dW[e, c] = V[e, c] sum over rows i using cell e of r_ic`. Each column owns a
//! contiguous range of cells, so the scatter runs in parallel over columns and in row order
//! within a column: bit-identical for any `n_jobs`, like the pass above.

use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::counts::check_rows;
use crate::error::{check_len, zeroed, HebError, Result};
use crate::interrupt;
use crate::layout::FeatureLayout;

/// Rows per parallel task (fixed: the reduction order must not depend on the threads).
const ROW_CHUNK: usize = 1024;

/// The conditional log-likelihood of a training set and its residual sums.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionalLikelihood {
    /// `L`, the weighted negative conditional log-likelihood.
    pub negative_log_likelihood: f64,
    /// `dL/dT`, shape `(sum K_f, C)` like the table (zero on skipped cells).
    pub table_residuals: Array2<f64>,
    /// `dL/db`, length C.
    pub class_residuals: Vec<f64>,
    /// With [`LeaveOneOut`]: `sum_i r_{i y_i} (ln theta^(-i) - ln theta)` per cell `(v, y_i)`
    /// (zero elsewhere), shape `(sum K_f, C)`; the gradient with respect to a cell weight
    /// `w` with `T = w ln theta` is `table_residuals * ln theta + held_out_correction`.
    pub held_out_correction: Option<Array2<f64>>,
}

/// What scoring each training row without its own count needs: the plug-in
/// log-probability `ln theta = ln(numerator / denominator)` of every cell (SPEC eq. 3:
/// `numerator = N[c, f, v] + m mu_v`, `denominator = N[c, f] + m`) and the weight of every
/// cell, all `(sum K_f, C)`. A row of weight `s` scores its own class's cell with
/// `weight * ln((numerator - s) / (denominator - s))`; where that is not a positive ratio
/// (no smoothing mass left) the cell keeps its table entry.
#[derive(Debug, Clone, Copy)]
pub struct LeaveOneOut<'a> {
    pub cell_weights: ArrayView2<'a, f64>,
    pub numerator: ArrayView2<'a, f64>,
    pub denominator: ArrayView2<'a, f64>,
}

impl LeaveOneOut<'_> {
    /// `ln theta^(-i) - ln theta` of cell `(column, class)` for a row of weight `weight`,
    /// or 0 where the held-out ratio is not positive.
    #[inline]
    fn held_out_shift(&self, column: usize, class: usize, weight: f64) -> f64 {
        let (numerator, denominator) = (
            self.numerator[[column, class]],
            self.denominator[[column, class]],
        );
        let (held_numerator, held_denominator) = (numerator - weight, denominator - weight);
        if weight > 0.0 && held_numerator > 0.0 && held_denominator > 0.0 {
            (held_numerator / held_denominator).ln() - (numerator / denominator).ln()
        } else {
            0.0
        }
    }
}

/// The weighted negative conditional log-likelihood of `(codes, labels, weights)` under the
/// score table `table` `(sum K_f, C)` and class scores `class_scores` (length C), with the
/// residual sums of its gradient.
///
/// Codes are `(F, S)`; code -1 skips the feature, and so does a category whose table row
/// starts with `-inf` (a zero-mean category), exactly as in scoring. With `held_out`, each
/// row's own-class entries are the leave-one-out ones (module docs).
///
/// # Errors
/// Shape mismatches, codes or labels out of range, a class score that is not finite, and
/// [`HebError::Allocation`] for tables beyond memory.
pub fn conditional_log_likelihood(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    weights: ArrayView1<f64>,
    table: ArrayView2<f64>,
    class_scores: &[f64],
    layout: &FeatureLayout,
    held_out: Option<LeaveOneOut>,
) -> Result<ConditionalLikelihood> {
    check_rows(codes, labels, weights, layout)?;
    let n_classes = class_scores.len();
    check_len("score table rows", layout.n_columns(), table.nrows())?;
    check_len("score table columns", n_classes, table.ncols())?;
    if let Some(held) = &held_out {
        for (what, part) in [
            ("leave-one-out cell weights", held.cell_weights),
            ("leave-one-out numerator", held.numerator),
            ("leave-one-out denominator", held.denominator),
        ] {
            if part.dim() != table.dim() {
                return Err(HebError::InvalidParameter(format!(
                    "{what} has shape {:?}, expected {:?} like the score table",
                    part.dim(),
                    table.dim()
                )));
            }
        }
    }
    if class_scores.iter().any(|s| !s.is_finite()) {
        return Err(HebError::InvalidParameter(
            "class scores must be finite: a class with prior probability 0 cannot be weighted"
                .into(),
        ));
    }
    for f in 0..layout.n_features() {
        let k = layout.cardinality(f);
        if let Some(&code) = codes.row(f).iter().find(|&&c| c >= 0 && c as usize >= k) {
            return Err(HebError::CodeOutOfRange {
                feature: f,
                code: code as i64,
                n_categories: k,
            });
        }
    }
    if let Some(&class) = labels.iter().find(|&&c| c < 0 || c as usize >= n_classes) {
        return Err(HebError::ClassOutOfRange { class, n_classes });
    }
    let n_rows = codes.ncols();
    // pass 1: residuals r_ic row by row, loss and class sums per chunk
    let mut residuals = zeroed(n_rows * n_classes, "conditional likelihood residuals")?;
    let chunk_sums: Vec<(f64, Vec<f64>)> = residuals
        .par_chunks_mut(ROW_CHUNK * n_classes.max(1))
        .enumerate()
        .map(|(chunk, block)| {
            if interrupt::cancelled() {
                return (0.0, Vec::new()); // dropped: the check below returns Interrupted
            }
            let first = chunk * ROW_CHUNK;
            let mut loss = 0.0;
            let mut class_sums = vec![0.0; n_classes];
            for (i, row) in block.chunks_mut(n_classes).enumerate() {
                let r = first + i;
                row.copy_from_slice(class_scores);
                for f in 0..layout.n_features() {
                    let code = codes[[f, r]];
                    if code < 0 {
                        continue;
                    }
                    let column = layout.columns(f).start + code as usize;
                    let entry = table.row(column);
                    if entry[0] == f64::NEG_INFINITY {
                        continue;
                    }
                    for (score, &t) in row.iter_mut().zip(entry.iter()) {
                        *score += t;
                    }
                    if let Some(held) = &held_out {
                        let label = labels[r] as usize;
                        row[label] += held.cell_weights[[column, label]]
                            * held.held_out_shift(column, label, weights[r]);
                    }
                }
                loss += residuals_in_place(row, labels[r] as usize, weights[r], &mut class_sums);
            }
            (loss, class_sums)
        })
        .collect();
    interrupt::check()?;
    let (negative_log_likelihood, class_residuals) = total_of_chunks(&chunk_sums, n_classes);
    // pass 2: scatter the residuals into each feature's cells, features in parallel
    let width = layout.n_columns() * n_classes;
    let mut table_residuals = zeroed(width, "table residuals")?;
    let mut correction = match held_out {
        Some(_) => zeroed(width, "leave-one-out correction")?,
        None => Vec::new(),
    };
    let mut slices: Vec<(usize, &mut [f64], &mut [f64])> = Vec::with_capacity(layout.n_features());
    let (mut rest, mut rest_correction) =
        (table_residuals.as_mut_slice(), correction.as_mut_slice());
    for f in 0..layout.n_features() {
        let size = layout.cardinality(f) * n_classes;
        let (head, tail) = rest.split_at_mut(size);
        let correction_size = if held_out.is_some() { size } else { 0 };
        let (head_correction, tail_correction) = rest_correction.split_at_mut(correction_size);
        slices.push((f, head, head_correction));
        rest = tail;
        rest_correction = tail_correction;
    }
    slices.into_par_iter().for_each(|(f, cells, corrections)| {
        let start = layout.columns(f).start;
        for (r, &code) in codes.row(f).iter().enumerate() {
            if r % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                return;
            }
            if code < 0 || table[[start + code as usize, 0]] == f64::NEG_INFINITY {
                continue;
            }
            let at = code as usize * n_classes;
            let residual = &residuals[r * n_classes..(r + 1) * n_classes];
            cells[at..at + n_classes]
                .iter_mut()
                .zip(residual)
                .for_each(|(a, b)| *a += b);
            if let Some(held) = &held_out {
                let label = labels[r] as usize;
                let shift = held.held_out_shift(start + code as usize, label, weights[r]);
                corrections[at + label] += residual[label] * shift;
            }
        }
    });
    interrupt::check()?;
    let shape = (layout.n_columns(), n_classes);
    let as_table = |values: Vec<f64>| {
        Array2::from_shape_vec(shape, values).map_err(|e| HebError::InvalidParameter(e.to_string()))
    };
    Ok(ConditionalLikelihood {
        negative_log_likelihood,
        table_residuals: as_table(table_residuals)?,
        class_residuals,
        held_out_correction: match held_out {
            Some(_) => Some(as_table(correction)?),
            None => None,
        },
    })
}

/// Which cell scores each row in each column, and the cells' values (module docs).
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

/// The conditional log-likelihood of [`cell_weighted_log_likelihood`] and its gradient.
#[derive(Debug, Clone, PartialEq)]
pub struct CellLikelihood {
    /// `L`, the weighted negative conditional log-likelihood.
    pub negative_log_likelihood: f64,
    /// `dL/dW`, shape (cells, C).
    pub weight_gradient: Array2<f64>,
    /// `dL/db`, length C.
    pub class_residuals: Vec<f64>,
}

/// The weighted negative conditional log-likelihood of `(labels, sample_weights)` under the
/// scores `b_c + o_ic + sum_k W[E[i, k], c] V[t_i, E[i, k], c]` (module docs), with its
/// gradient with respect to the cell weights `W` (cells, C) and the class scores `b`.
///
/// # Errors
/// Shape mismatches, a cell outside its column's range, a label out of range, class scores or offsets that are not finite, and [`HebError::Allocation`] for
/// buffers beyond memory.
pub fn cell_weighted_log_likelihood<'a>(
    terms: CellTerms<'a>,
    cell_weights: ArrayView2<'a, f64>,
    offset: ArrayView2<f64>,
    labels: ArrayView1<i64>,
    sample_weights: ArrayView1<f64>,
    class_scores: &[f64],
) -> Result<CellLikelihood> {
    let n_classes = class_scores.len();
    let (n_columns, n_rows) = terms.cells.dim();
    let n_cells = terms.values.nrows();
    check_len("labels", n_rows, labels.len())?;
    check_len("sample weights", n_rows, sample_weights.len())?;
    check_len("column starts", n_columns + 1, terms.column_starts.len())?;
    for (what, table, rows) in [
        ("cell values", terms.values, n_cells),
        ("cell weights", cell_weights, n_cells),
        ("score offsets", offset, n_rows),
    ] {
        if table.dim() != (rows, n_classes) {
            return Err(HebError::InvalidParameter(format!(
                "{what} have shape {:?}, expected ({rows}, {n_classes})",
                table.dim()
            )));
        }
    }
    let starts = terms.column_starts;
    if starts[0] != 0 || starts[n_columns] != n_cells || starts.windows(2).any(|w| w[0] > w[1]) {
        return Err(HebError::InvalidParameter(format!(
            "column starts must rise from 0 to the {n_cells} cells"
        )));
    }
    for (k, column) in terms.cells.rows().into_iter().enumerate() {
        if let Some(&cell) = column
            .iter()
            .find(|&&e| e >= 0 && !(starts[k]..starts[k + 1]).contains(&(e as usize)))
        {
            return Err(HebError::InvalidParameter(format!(
                "cell {cell} of column {k} lies outside its cells {}..{}",
                starts[k],
                starts[k + 1]
            )));
        }
    }
    if let Some(&class) = labels.iter().find(|&&c| c < 0 || c as usize >= n_classes) {
        return Err(HebError::ClassOutOfRange { class, n_classes });
    }
    if class_scores
        .iter()
        .chain(offset.iter())
        .any(|s| !s.is_finite())
    {
        return Err(HebError::InvalidParameter(
            "class scores and score offsets must be finite".into(),
        ));
    }
    let contiguous = |table: ArrayView2<'a, f64>, what: &str| {
        table
            .to_slice()
            .ok_or_else(|| HebError::InvalidParameter(format!("{what} must be C-contiguous")))
    };
    let weights = contiguous(cell_weights, "cell weights")?;
    let values = contiguous(terms.values, "cell values")?;
    // pass 1: per chunk of rows, the scores column by column (each column's cells are
    // contiguous), then each row's loss and residuals; loss and class sums per chunk
    let mut residuals = zeroed(n_rows * n_classes, "cell likelihood residuals")?;
    let chunk_sums: Vec<(f64, Vec<f64>)> = residuals
        .par_chunks_mut(ROW_CHUNK * n_classes.max(1))
        .enumerate()
        .map(|(chunk, block)| {
            if interrupt::cancelled() {
                return (0.0, Vec::new());
            }
            let first = chunk * ROW_CHUNK;
            let n = block.len() / n_classes.max(1);
            for (i, row) in block.chunks_mut(n_classes).enumerate() {
                for (c, score) in row.iter_mut().enumerate() {
                    *score = class_scores[c] + offset[[first + i, c]];
                }
            }
            for column in terms.cells.rows() {
                for (i, &cell) in column
                    .slice(ndarray::s![first..first + n])
                    .iter()
                    .enumerate()
                {
                    if cell < 0 {
                        continue;
                    }
                    let at = cell as usize * n_classes;
                    let row = &mut block[i * n_classes..(i + 1) * n_classes];
                    for ((score, &w), &v) in row
                        .iter_mut()
                        .zip(&weights[at..at + n_classes])
                        .zip(&values[at..at + n_classes])
                    {
                        *score += w * v;
                    }
                }
            }
            let mut loss = 0.0;
            let mut class_sums = vec![0.0; n_classes];
            for (i, row) in block.chunks_mut(n_classes).enumerate() {
                let r = first + i;
                loss +=
                    residuals_in_place(row, labels[r] as usize, sample_weights[r], &mut class_sums);
            }
            (loss, class_sums)
        })
        .collect();
    interrupt::check()?;
    let (negative_log_likelihood, class_residuals) = total_of_chunks(&chunk_sums, n_classes);
    // pass 2: each column sums its rows' residuals into its own cells (columns in
    // parallel, rows in order), then multiplies them by the cells' values
    let mut gradient = zeroed(n_cells * n_classes, "cell weight gradient")?;
    let mut slices: Vec<(usize, &mut [f64])> = Vec::with_capacity(n_columns);
    let mut rest = gradient.as_mut_slice();
    for k in 0..n_columns {
        let (head, tail) = rest.split_at_mut((starts[k + 1] - starts[k]) * n_classes);
        slices.push((k, head));
        rest = tail;
    }
    slices.into_par_iter().for_each(|(k, cells)| {
        for (r, &cell) in terms.cells.row(k).iter().enumerate() {
            if r % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                return;
            }
            if cell < 0 {
                continue;
            }
            let at = (cell as usize - starts[k]) * n_classes;
            let residual = &residuals[r * n_classes..(r + 1) * n_classes];
            cells[at..at + n_classes]
                .iter_mut()
                .zip(residual)
                .for_each(|(g, &res)| *g += res);
        }
        let own = &values[starts[k] * n_classes..starts[k + 1] * n_classes];
        cells.iter_mut().zip(own).for_each(|(g, &v)| *g *= v);
    });
    interrupt::check()?;
    Ok(CellLikelihood {
        negative_log_likelihood,
        weight_gradient: Array2::from_shape_vec((n_cells, n_classes), gradient)
            .map_err(|e| HebError::InvalidParameter(e.to_string()))?,
        class_residuals,
    })
}

/// Turns one row of class scores into its residuals `s_i (P(c | x_i) - [c = y_i])` in place,
/// adds them to `class_sums`, and returns the row's loss `-s_i ln P(y_i | x_i)` (zero for a
/// zero-weight row, whose scores may be infinite).
fn residuals_in_place(row: &mut [f64], label: usize, weight: f64, class_sums: &mut [f64]) -> f64 {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_norm = max + row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
    let loss = if weight != 0.0 {
        -(weight * (row[label] - log_norm))
    } else {
        0.0
    };
    for (c, v) in row.iter_mut().enumerate() {
        let target = if c == label { 1.0 } else { 0.0 };
        *v = weight * ((*v - log_norm).exp() - target);
        class_sums[c] += *v;
    }
    loss
}

/// The chunks' losses and per-class residual sums added in chunk order, so that the totals
/// are the same for any number of threads.
fn total_of_chunks(chunk_sums: &[(f64, Vec<f64>)], n_classes: usize) -> (f64, Vec<f64>) {
    let mut negative_log_likelihood = 0.0;
    let mut class_residuals = vec![0.0; n_classes];
    for (loss, sums) in chunk_sums {
        negative_log_likelihood += loss;
        class_residuals
            .iter_mut()
            .zip(sums)
            .for_each(|(a, b)| *a += b);
    }
    (negative_log_likelihood, class_residuals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::with_threads;
    use ndarray::{array, Array1};

    fn naive(
        codes: &Array2<i32>,
        labels: &[i64],
        weights: &[f64],
        table: &Array2<f64>,
        class_scores: &[f64],
        layout: &FeatureLayout,
    ) -> f64 {
        let mut loss = 0.0;
        for r in 0..codes.ncols() {
            let mut s = class_scores.to_vec();
            for f in 0..layout.n_features() {
                let code = codes[[f, r]];
                if code >= 0 {
                    for (c, v) in s.iter_mut().enumerate() {
                        *v += table[[layout.columns(f).start + code as usize, c]];
                    }
                }
            }
            let z: f64 = s.iter().map(|v| v.exp()).sum();
            loss -= weights[r] * (s[labels[r] as usize] - z.ln());
        }
        loss
    }

    #[test]
    fn a_cancelled_call_stops_with_interrupted() {
        let layout = FeatureLayout::from_cardinalities(&[2]);
        let codes = array![[0, 1, 1]];
        let table = array![[-0.3, -1.2], [-1.1, -0.4]];
        let lease = crate::parallel::lease(2).unwrap();
        lease.token().cancel();
        let fit = lease.install(|| {
            conditional_log_likelihood(
                codes.view(),
                Array1::from(vec![0_i64, 1, 0]).view(),
                Array1::from(vec![1.0; 3]).view(),
                table.view(),
                &[-0.7, -0.7],
                &layout,
                None,
            )
        });
        assert!(matches!(fit, Err(HebError::Interrupted)));
    }

    #[test]
    fn residuals_are_the_gradient_of_the_loss() {
        let layout = FeatureLayout::from_cardinalities(&[2, 3]);
        let codes = array![[0, 1, 1, -1, 0], [2, 0, 1, 1, -1]];
        let labels = [0_i64, 1, 2, 1, 0];
        let weights = [1.0, 2.0, 0.5, 1.0, 1.5];
        let table = array![
            [-0.3, -1.2, -0.7],
            [-1.1, -0.4, -0.9],
            [-0.2, -2.0, -1.0],
            [-1.5, -0.1, -0.6],
            [-0.8, -0.9, -0.3]
        ];
        let class_scores = [-1.0, -0.7, -1.6];
        let fit = conditional_log_likelihood(
            codes.view(),
            Array1::from(labels.to_vec()).view(),
            Array1::from(weights.to_vec()).view(),
            table.view(),
            &class_scores,
            &layout,
            None,
        )
        .unwrap();
        let base = naive(&codes, &labels, &weights, &table, &class_scores, &layout);
        assert!((fit.negative_log_likelihood - base).abs() < 1e-12);
        let h = 1e-6;
        for p in 0..table.nrows() {
            for c in 0..3 {
                let mut up = table.clone();
                up[[p, c]] += h;
                let mut down = table.clone();
                down[[p, c]] -= h;
                let numeric = (naive(&codes, &labels, &weights, &up, &class_scores, &layout)
                    - naive(&codes, &labels, &weights, &down, &class_scores, &layout))
                    / (2.0 * h);
                assert!((numeric - fit.table_residuals[[p, c]]).abs() < 1e-7);
            }
        }
        for c in 0..3 {
            let (mut up, mut down) = (class_scores, class_scores);
            up[c] += h;
            down[c] -= h;
            let numeric = (naive(&codes, &labels, &weights, &table, &up, &layout)
                - naive(&codes, &labels, &weights, &table, &down, &layout))
                / (2.0 * h);
            assert!((numeric - fit.class_residuals[c]).abs() < 1e-7);
        }
    }

    /// The loss with every row's own-class cells held out, written directly.
    #[allow(clippy::too_many_arguments)]
    fn naive_held_out(
        codes: &Array2<i32>,
        labels: &[i64],
        weights: &[f64],
        cell_weights: &Array2<f64>,
        numerator: &Array2<f64>,
        denominator: &Array2<f64>,
        class_scores: &[f64],
        layout: &FeatureLayout,
    ) -> f64 {
        let mut loss = 0.0;
        for r in 0..codes.ncols() {
            let mut s = class_scores.to_vec();
            let label = labels[r] as usize;
            for f in 0..layout.n_features() {
                let code = codes[[f, r]];
                if code < 0 {
                    continue;
                }
                let p = layout.columns(f).start + code as usize;
                for (c, v) in s.iter_mut().enumerate() {
                    let removed = if c == label { weights[r] } else { 0.0 };
                    let log_prob =
                        ((numerator[[p, c]] - removed) / (denominator[[p, c]] - removed)).ln();
                    *v += cell_weights[[p, c]] * log_prob;
                }
            }
            let z: f64 = s.iter().map(|v| v.exp()).sum();
            loss -= weights[r] * (s[label] - z.ln());
        }
        loss
    }

    #[test]
    fn held_out_rows_give_the_gradient_of_the_held_out_loss() {
        let layout = FeatureLayout::from_cardinalities(&[2, 3]);
        let codes = array![[0, 1, 1, -1, 0, 1], [2, 0, 1, 1, -1, 1]];
        let labels = [0_i64, 1, 1, 1, 0, 1];
        let weights = [1.0, 2.0, 0.5, 1.0, 1.5, 0.25];
        // counts consistent with the rows (each row's own weight is in its cell), plus m mu
        let mut numerator = Array2::from_elem((5, 2), 0.3);
        let mut denominator = Array2::from_elem((5, 2), 0.0);
        for r in 0..codes.ncols() {
            for f in 0..2 {
                let code = codes[[f, r]];
                if code >= 0 {
                    let p = layout.columns(f).start + code as usize;
                    numerator[[p, labels[r] as usize]] += weights[r];
                }
            }
        }
        for f in 0..2 {
            for c in 0..2 {
                let total: f64 = layout.columns(f).map(|p| numerator[[p, c]]).sum();
                for p in layout.columns(f) {
                    denominator[[p, c]] = total;
                }
            }
        }
        let cell_weights = array![[1.2, 0.7], [0.9, 1.1], [0.5, 1.3], [1.0, 0.8], [1.4, 0.6]];
        let log_theta = (&numerator / &denominator).mapv(f64::ln);
        let class_scores = [-0.6, -0.8];
        let loss = |w: &Array2<f64>| {
            naive_held_out(
                &codes,
                &labels,
                &weights,
                w,
                &numerator,
                &denominator,
                &class_scores,
                &layout,
            )
        };
        let table = &cell_weights * &log_theta;
        let fit = conditional_log_likelihood(
            codes.view(),
            Array1::from(labels.to_vec()).view(),
            Array1::from(weights.to_vec()).view(),
            table.view(),
            &class_scores,
            &layout,
            Some(LeaveOneOut {
                cell_weights: cell_weights.view(),
                numerator: numerator.view(),
                denominator: denominator.view(),
            }),
        )
        .unwrap();
        assert!((fit.negative_log_likelihood - loss(&cell_weights)).abs() < 1e-12);
        // and it is not the in-sample loss
        let in_sample = naive(&codes, &labels, &weights, &table, &class_scores, &layout);
        assert!((fit.negative_log_likelihood - in_sample).abs() > 1e-3);
        let correction = fit.held_out_correction.unwrap();
        let h = 1e-6;
        for p in 0..5 {
            for c in 0..2 {
                let (mut up, mut down) = (cell_weights.clone(), cell_weights.clone());
                up[[p, c]] += h;
                down[[p, c]] -= h;
                let numeric = (loss(&up) - loss(&down)) / (2.0 * h);
                let analytic = fit.table_residuals[[p, c]] * log_theta[[p, c]] + correction[[p, c]];
                assert!(
                    (numeric - analytic).abs() < 1e-7,
                    "{p} {c}: {numeric} {analytic}"
                );
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let layout = FeatureLayout::from_cardinalities(&[3, 4]);
        let n = 5000;
        let codes =
            Array2::from_shape_fn((2, n), |(f, r)| ((r * (f + 7) + r / 3) % (3 + f)) as i32);
        let labels = Array1::from_shape_fn(n, |r| ((r * 13) % 2) as i64);
        let weights = Array1::from_elem(n, 1.0);
        let table = Array2::from_shape_fn((7, 2), |(p, c)| -0.1 - 0.3 * p as f64 - 0.7 * c as f64);
        let cell_weights = Array2::from_shape_fn((7, 2), |(p, c)| 0.8 + 0.05 * (p + c) as f64);
        let numerator = Array2::from_shape_fn((7, 2), |(p, c)| 400.0 + 10.0 * (p + c) as f64);
        let denominator = Array2::from_elem((7, 2), 3000.0);
        let run = |threads, held: bool| {
            with_threads(threads, || {
                conditional_log_likelihood(
                    codes.view(),
                    labels.view(),
                    weights.view(),
                    table.view(),
                    &[-0.5, -0.9],
                    &layout,
                    held.then_some(LeaveOneOut {
                        cell_weights: cell_weights.view(),
                        numerator: numerator.view(),
                        denominator: denominator.view(),
                    }),
                )
                .unwrap()
            })
            .unwrap()
        };
        for held in [false, true] {
            let one = run(1, held);
            assert_eq!(one, run(2, held));
            assert_eq!(one, run(3, held));
        }
    }

    #[test]
    fn bad_labels_and_codes_are_errors() {
        let layout = FeatureLayout::from_cardinalities(&[2]);
        let table = array![[-1.0, -1.0], [-1.0, -1.0]];
        let weights = Array1::from(vec![1.0]);
        let call = |code: i32, label: i64, class_scores: &[f64]| {
            conditional_log_likelihood(
                array![[code]].view(),
                Array1::from(vec![label]).view(),
                weights.view(),
                table.view(),
                class_scores,
                &layout,
                None,
            )
        };
        assert!(matches!(
            call(0, 2, &[0.0, 0.0]),
            Err(HebError::ClassOutOfRange { .. })
        ));
        assert!(matches!(
            call(5, 0, &[0.0, 0.0]),
            Err(HebError::CodeOutOfRange { .. })
        ));
        assert!(matches!(
            call(0, 0, &[f64::NEG_INFINITY, 0.0]),
            Err(HebError::InvalidParameter(_))
        ));
        assert!(call(0, 0, &[0.0, 0.0]).is_ok());
    }

    /// Four rows, two columns (cells 0..2 and 2..5), three classes.
    fn cell_example() -> (Array2<i64>, Array2<f64>, Array2<f64>) {
        let cells = array![[0, 1, -1, 0], [2, 4, 3, -1]];
        let values = Array2::from_shape_fn((5, 3), |(e, c)| {
            -0.2 - 0.3 * e as f64 - 0.4 * c as f64 + 0.05 * (e * c) as f64
        });
        let offset = array![
            [0.1, -0.2, 0.0],
            [0.0, 0.3, -0.1],
            [0.2, 0.2, 0.2],
            [-0.3, 0.0, 0.1]
        ];
        (cells, values, offset)
    }

    /// The cell-weighted loss written directly.
    fn naive_cells(
        (cells, values, offset): &(Array2<i64>, Array2<f64>, Array2<f64>),
        weights: &Array2<f64>,
        labels: &[i64],
        sample_weights: &[f64],
        class_scores: &[f64],
    ) -> f64 {
        let mut loss = 0.0;
        for r in 0..cells.ncols() {
            let mut s: Vec<f64> = (0..3).map(|c| class_scores[c] + offset[[r, c]]).collect();
            for &e in cells.column(r) {
                if e >= 0 {
                    for (c, v) in s.iter_mut().enumerate() {
                        *v += weights[[e as usize, c]] * values[[e as usize, c]];
                    }
                }
            }
            let z: f64 = s.iter().map(|v| v.exp()).sum();
            loss -= sample_weights[r] * (s[labels[r] as usize] - z.ln());
        }
        loss
    }

    #[test]
    fn cell_gradient_matches_finite_differences() {
        let example = cell_example();
        let (cells, values, offset) = &example;
        let labels = [0_i64, 2, 1, 1];
        let sample_weights = [1.0, 0.5, 2.0, 1.5];
        let class_scores = [-0.9, -1.1, -1.3];
        let weights =
            Array2::from_shape_fn((5, 3), |(e, c)| 0.8 + 0.1 * e as f64 - 0.05 * c as f64);
        let starts = [0usize, 2, 5];
        let fit = cell_weighted_log_likelihood(
            CellTerms {
                cells: cells.view(),
                values: values.view(),
                column_starts: &starts,
            },
            weights.view(),
            offset.view(),
            Array1::from(labels.to_vec()).view(),
            Array1::from(sample_weights.to_vec()).view(),
            &class_scores,
        )
        .unwrap();
        let loss =
            |w: &Array2<f64>, b: &[f64]| naive_cells(&example, w, &labels, &sample_weights, b);
        assert!((fit.negative_log_likelihood - loss(&weights, &class_scores)).abs() < 1e-12);
        let h = 1e-6;
        for e in 0..5 {
            for c in 0..3 {
                let (mut up, mut down) = (weights.clone(), weights.clone());
                up[[e, c]] += h;
                down[[e, c]] -= h;
                let numeric = (loss(&up, &class_scores) - loss(&down, &class_scores)) / (2.0 * h);
                assert!(
                    (numeric - fit.weight_gradient[[e, c]]).abs() < 1e-7,
                    "{e} {c}"
                );
            }
        }
        for c in 0..3 {
            let (mut up, mut down) = (class_scores, class_scores);
            up[c] += h;
            down[c] -= h;
            let numeric = (loss(&weights, &up) - loss(&weights, &down)) / (2.0 * h);
            assert!((numeric - fit.class_residuals[c]).abs() < 1e-7);
        }
    }

    #[test]
    fn cell_results_do_not_depend_on_the_thread_count() {
        let n = 5000;
        let cells = Array2::from_shape_fn((3, n), |(k, r)| {
            if (r + k) % 7 == 0 {
                -1
            } else {
                (4 * k + (r * (k + 3) + r / 5) % 4) as i64
            }
        });
        let values =
            Array2::from_shape_fn((12, 2), |(e, c)| -0.1 - 0.2 * e as f64 - 0.3 * c as f64);
        let offset = Array2::from_shape_fn((n, 2), |(r, c)| 0.01 * ((r + c) % 5) as f64);
        let labels = Array1::from_shape_fn(n, |r| ((r * 13 + r / 7) % 2) as i64);
        let sample_weights = Array1::from_elem(n, 1.0);
        let weights = Array2::from_shape_fn((12, 2), |(e, c)| 0.9 + 0.02 * (e + c) as f64);
        let starts = [0usize, 4, 8, 12];
        let run = |threads| {
            with_threads(threads, || {
                cell_weighted_log_likelihood(
                    CellTerms {
                        cells: cells.view(),
                        values: values.view(),
                        column_starts: &starts,
                    },
                    weights.view(),
                    offset.view(),
                    labels.view(),
                    sample_weights.view(),
                    &[-0.6, -0.8],
                )
                .unwrap()
            })
            .unwrap()
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(3));
    }

    #[test]
    fn cells_outside_their_column_are_errors() {
        let (cells, values, offset) = cell_example();
        let weights = Array2::from_elem((5, 3), 1.0);
        let labels = Array1::from(vec![0_i64, 2, 1, 1]);
        let sample_weights = Array1::from_elem(4, 1.0);
        let call = |cells: &Array2<i64>, starts: &[usize], labels: &Array1<i64>| {
            cell_weighted_log_likelihood(
                CellTerms {
                    cells: cells.view(),
                    values: values.view(),
                    column_starts: starts,
                },
                weights.view(),
                offset.view(),
                labels.view(),
                sample_weights.view(),
                &[0.0, 0.0, 0.0],
            )
        };
        assert!(call(&cells, &[0, 2, 5], &labels).is_ok());
        // cell 2 belongs to the second column
        let mut wrong = cells.clone();
        wrong[[0, 0]] = 2;
        assert!(matches!(
            call(&wrong, &[0, 2, 5], &labels),
            Err(HebError::InvalidParameter(_))
        ));
        assert!(matches!(
            call(&cells, &[0, 3, 2], &labels),
            Err(HebError::InvalidParameter(_))
        ));
        let bad_label = Array1::from(vec![0_i64, 3, 1, 1]);
        assert!(matches!(
            call(&cells, &[0, 2, 5], &bad_label),
            Err(HebError::ClassOutOfRange { .. })
        ));
    }
}
