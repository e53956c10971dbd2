//! Token counts held as a compressed sparse matrix (scipy's CSR or CSC arrays), read in
//! one pass over the non-zeros and never densified (SPEC "Other Naive Bayes variants"):
//!
//! * counting: `n_{c,v} = sum over rows s of class c of w_s x_{s,v}`, the (C, V) table of
//!   Multinomial NB, or with `x` binarised (`1[x > t]`) the per-class document
//!   frequencies of Bernoulli NB; `N_c = sum_s w_s` over the rows of class c;
//! * scoring: `J[s, c] = b_c + sum over the non-zeros v of row s of x_{s,v} T[v, c]`, the
//!   sparse product both event models score with (Bernoulli puts the absent-feature sum
//!   `sum_v ln(1 - theta_{c,v})` into `b_c` and `ln theta - ln(1 - theta)` into `T`).
//!
//! A table entry of `-inf` (a token whose prior mean is 0 and that no class ever counted)
//! is skipped, as the categorical scorer skips an unknown value: it carries no evidence
//! either way. Every pass costs O(non-zeros + rows). Counting a CSR matrix runs one class
//! per thread (each class sums its rows in row order) and a CSC matrix one vocabulary
//! column per task (each sums its entries in row order); scoring runs chunks of rows. So
//! no sum depends on the number of threads.

use ndarray::Array2;
use rayon::prelude::*;

use crate::error::{check_len, check_weights, entries, filled, zeroed, HebError, Result};
use crate::interrupt;

/// Which axis the compressed pointer runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Major {
    /// CSR: `indptr` over rows, `indices` are vocabulary columns.
    Rows,
    /// CSC: `indptr` over vocabulary columns, `indices` are rows.
    Columns,
}

/// How a stored value enters the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Values {
    /// The value itself: a non-negative count or weight (Multinomial NB).
    Counts,
    /// `1` when the value exceeds the threshold, else `0` (Bernoulli NB).
    Binarize(f64),
}

impl Values {
    #[inline]
    fn apply(self, x: f64) -> f64 {
        match self {
            Values::Counts => x,
            Values::Binarize(threshold) => f64::from(u8::from(x > threshold)),
        }
    }
}

/// A borrowed scipy compressed sparse matrix of `n_rows` x `n_columns`.
#[derive(Debug, Clone, Copy)]
pub struct SparseMatrix<'a> {
    /// Start of each major slice in `indices` / `data`, length `n_major + 1`.
    pub indptr: &'a [i64],
    /// Minor index of every stored value.
    pub indices: &'a [i32],
    /// The stored values.
    pub data: &'a [f64],
    /// Number of rows (documents).
    pub n_rows: usize,
    /// Number of columns (vocabulary size).
    pub n_columns: usize,
    /// CSR or CSC.
    pub major: Major,
}

impl SparseMatrix<'_> {
    fn n_major(&self) -> usize {
        match self.major {
            Major::Rows => self.n_rows,
            Major::Columns => self.n_columns,
        }
    }

    fn n_minor(&self) -> usize {
        match self.major {
            Major::Rows => self.n_columns,
            Major::Columns => self.n_rows,
        }
    }

    /// The stored range of major slice `i` (valid once [`Self::check`] passed).
    #[inline]
    fn slice(&self, i: usize) -> std::ops::Range<usize> {
        self.indptr[i] as usize..self.indptr[i + 1] as usize
    }

    /// Checks the structure and the values: a pointer array that starts at 0, never
    /// decreases and ends at the number of stored values; minor indices in range;
    /// finite values, non-negative ones when they are counts. Unsorted and duplicate
    /// indices are allowed: every kernel here is a sum over the stored values.
    ///
    /// # Errors
    /// [`HebError::ShapeMismatch`] or [`HebError::InvalidParameter`] naming the problem.
    pub fn check(&self, values: Values) -> Result<()> {
        check_len(
            "sparse matrix index pointer length",
            self.n_major() + 1,
            self.indptr.len(),
        )?;
        check_len(
            "sparse matrix indices (one per stored value)",
            self.data.len(),
            self.indices.len(),
        )?;
        let ends_right = self.indptr.first() == Some(&0)
            && self.indptr.last().copied() == Some(self.data.len() as i64);
        if !ends_right || self.indptr.windows(2).any(|w| w[1] < w[0]) {
            return Err(HebError::InvalidParameter(
                "the sparse matrix's index pointer must start at 0, never decrease and end at the number of stored values".into(),
            ));
        }
        let n_minor = self.n_minor();
        if let Some(&bad) = self
            .indices
            .iter()
            .find(|&&i| i < 0 || i as u64 >= n_minor as u64)
        {
            return Err(HebError::InvalidParameter(format!(
                "sparse matrix index {bad} outside 0..{n_minor}"
            )));
        }
        if let Some(&bad) = self.data.iter().find(|x| !x.is_finite()) {
            return Err(HebError::InvalidParameter(format!(
                "the input holds NaN or infinity ({bad}): counts must be finite"
            )));
        }
        if values == Values::Counts {
            if let Some(&bad) = self.data.iter().find(|&&x| x < 0.0) {
                return Err(HebError::InvalidParameter(format!(
                    "negative value {bad} in the input: token counts must be >= 0"
                )));
            }
        }
        Ok(())
    }
}

/// `N_c` and the `(C, V)` table `n_{c,v}` of one training set.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenCounts {
    /// `N_c`: the sum of the weights of the rows of class c, length C.
    pub class_totals: Vec<f64>,
    /// `n_{c,v}`, shape `(C, V)`.
    pub table: Array2<f64>,
}

/// Counts a sparse matrix by class (see the module header).
///
/// `classes` holds the class index `0..n_classes` of every row, `weights` its weight.
///
/// # Errors
/// A malformed matrix or values ([`SparseMatrix::check`]), labels or weights of the
/// wrong length, a class index out of range, or a table beyond memory.
pub fn count_tokens(
    matrix: &SparseMatrix<'_>,
    classes: &[usize],
    weights: &[f64],
    n_classes: usize,
    values: Values,
) -> Result<TokenCounts> {
    matrix.check(values)?;
    check_len("labels (one per row)", matrix.n_rows, classes.len())?;
    check_len("sample weights (one per row)", matrix.n_rows, weights.len())?;
    check_weights(weights)?;
    if let Some(&bad) = classes.iter().find(|&&c| c >= n_classes) {
        return Err(HebError::ClassOutOfRange {
            class: bad as i64,
            n_classes,
        });
    }
    let mut class_totals = zeroed(n_classes, "class totals")?;
    for (&c, &w) in classes.iter().zip(weights) {
        class_totals[c] += w;
    }
    let width = matrix.n_columns;
    let mut flat = zeroed(
        entries(n_classes, width, "token count table")?,
        "token count table",
    )?;
    match matrix.major {
        Major::Rows => {
            let mut rows_of_class: Vec<Vec<usize>> =
                filled(n_classes, Vec::new(), "rows by class")?;
            for (s, &c) in classes.iter().enumerate() {
                rows_of_class[c].push(s);
            }
            flat.par_chunks_mut(width.max(1))
                .zip(rows_of_class.par_iter())
                .for_each(|(out, rows)| {
                    for (i, &s) in rows.iter().enumerate() {
                        if i % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                            return;
                        }
                        let w = weights[s];
                        for k in matrix.slice(s) {
                            out[matrix.indices[k] as usize] += w * values.apply(matrix.data[k]);
                        }
                    }
                });
        }
        Major::Columns => {
            // column-major partial table (V, C), transposed below
            let mut by_column = zeroed(width * n_classes, "token count table")?;
            by_column
                .par_chunks_mut(n_classes.max(1))
                .enumerate()
                .for_each(|(v, out)| {
                    if v % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                        return;
                    }
                    for k in matrix.slice(v) {
                        let s = matrix.indices[k] as usize;
                        out[classes[s]] += weights[s] * values.apply(matrix.data[k]);
                    }
                });
            interrupt::check()?;
            flat.par_chunks_mut(width.max(1))
                .enumerate()
                .for_each(|(c, out)| {
                    for (v, slot) in out.iter_mut().enumerate() {
                        *slot = by_column[v * n_classes + c];
                    }
                });
        }
    }
    interrupt::check()?;
    if flat.iter().any(|v| !v.is_finite()) {
        return Err(HebError::InvalidParameter(
            "token counts overflow float64: sample weights times values exceed 1.8e308; \
             rescale the weights or the values"
                .into(),
        ));
    }
    let table = Array2::from_shape_vec((n_classes, width), flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))?;
    Ok(TokenCounts {
        class_totals,
        table,
    })
}

/// Rows scored per parallel task.
const ROWS_PER_TASK: usize = 512;

/// `J[s, c] = bias[c] + sum_k value(x_k) table[v_k, c]` over the stored values of each
/// row of a CSR matrix, shape `(S, C)` (row-major flat). `table` is `(V, C)` row-major.
/// Stored zeros and `-inf` table entries are skipped.
///
/// # Errors
/// A malformed matrix, a CSC matrix, tables of the wrong size, or an output beyond memory.
pub fn score_rows(
    matrix: &SparseMatrix<'_>,
    table: &[f64],
    bias: &[f64],
    values: Values,
) -> Result<Array2<f64>> {
    if matrix.major != Major::Rows {
        return Err(HebError::InvalidParameter(
            "scoring reads rows: pass a CSR matrix".into(),
        ));
    }
    matrix.check(values)?;
    let n_classes = bias.len();
    check_len(
        "score table (vocabulary x classes)",
        matrix.n_columns * n_classes,
        table.len(),
    )?;
    let mut flat = zeroed(matrix.n_rows * n_classes, "joint log-likelihood")?;
    let score_task = |(chunk, out): (usize, &mut [f64])| {
        if interrupt::cancelled() {
            return;
        }
        for (r, row_out) in out.chunks_mut(n_classes).enumerate() {
            let s = chunk * ROWS_PER_TASK + r;
            row_out.copy_from_slice(bias);
            for k in matrix.slice(s) {
                let x = values.apply(matrix.data[k]);
                if x == 0.0 {
                    continue;
                }
                let v = matrix.indices[k] as usize;
                let weights = &table[v * n_classes..(v + 1) * n_classes];
                for (slot, &t) in row_out.iter_mut().zip(weights) {
                    if t != f64::NEG_INFINITY {
                        *slot += x * t;
                    }
                }
            }
        }
    };
    if n_classes > 0 {
        // a small call scores on the calling thread (crate::parallel::in_a_pool)
        let task = ROWS_PER_TASK * n_classes;
        if crate::parallel::in_a_pool() {
            flat.par_chunks_mut(task).enumerate().for_each(score_task);
        } else {
            flat.chunks_mut(task).enumerate().for_each(score_task);
        }
    }
    interrupt::check()?;
    Array2::from_shape_vec((matrix.n_rows, n_classes), flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [[1, 0, 2], [0, 0, 0], [0, 3, 1]] with classes [0, 1, 0].
    fn example() -> (Vec<i64>, Vec<i32>, Vec<f64>) {
        (vec![0, 2, 2, 4], vec![2, 0, 1, 2], vec![2.0, 1.0, 3.0, 1.0])
    }

    /// The same matrix by columns: column 0 rows [0], column 1 rows [2], column 2 rows [2, 0].
    fn example_by_columns() -> (Vec<i64>, Vec<i32>, Vec<f64>) {
        (vec![0, 1, 2, 4], vec![0, 2, 2, 0], vec![1.0, 3.0, 1.0, 2.0])
    }

    /// The 3 x 3 matrix of `(indptr, indices, data)` stored by rows or by columns.
    fn matrix(parts: &(Vec<i64>, Vec<i32>, Vec<f64>), major: Major) -> SparseMatrix<'_> {
        SparseMatrix {
            indptr: &parts.0,
            indices: &parts.1,
            data: &parts.2,
            n_rows: 3,
            n_columns: 3,
            major,
        }
    }

    fn dense() -> [[f64; 3]; 3] {
        [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 1.0]]
    }

    #[test]
    fn csr_and_csc_counts_agree_with_the_dense_sum() {
        let (by_rows, by_columns) = (example(), example_by_columns());
        let csr = matrix(&by_rows, Major::Rows);
        let csc = matrix(&by_columns, Major::Columns);
        let classes = [0, 1, 0];
        let weights = [1.0, 2.0, 0.5];
        for matrix in [csr, csc] {
            let counts = count_tokens(&matrix, &classes, &weights, 2, Values::Counts).unwrap();
            assert_eq!(counts.class_totals, vec![1.5, 2.0]);
            let x = dense();
            for (v, (first, third)) in x[0].iter().zip(x[2]).enumerate() {
                let want0 = first * 1.0 + third * 0.5;
                assert_eq!(counts.table[[0, v]], want0);
                assert_eq!(counts.table[[1, v]], 0.0);
            }
            let binary =
                count_tokens(&matrix, &classes, &weights, 2, Values::Binarize(1.0)).unwrap();
            assert_eq!(binary.table.row(0).to_vec(), vec![0.0, 0.5, 1.0]);
        }
    }

    #[test]
    fn a_cancelled_call_stops_with_interrupted() {
        let (by_rows, by_columns) = (example(), example_by_columns());
        let csr = matrix(&by_rows, Major::Rows);
        let csc = matrix(&by_columns, Major::Columns);
        let lease = crate::parallel::lease(2).unwrap();
        lease.token().cancel();
        for matrix in [&csr, &csc] {
            let counted =
                lease.install(|| count_tokens(matrix, &[0, 1, 0], &[1.0; 3], 2, Values::Counts));
            assert!(matches!(counted, Err(HebError::Interrupted)));
        }
        let scored = lease.install(|| score_rows(&csr, &[0.0; 6], &[0.0, 0.0], Values::Counts));
        assert!(matches!(scored, Err(HebError::Interrupted)));
    }

    #[test]
    fn counts_that_overflow_are_refused() {
        let (indptr, indices) = (vec![0, 1, 2], vec![0, 0]);
        let data = vec![1e150, 1.0];
        let csr = SparseMatrix {
            indptr: &indptr,
            indices: &indices,
            data: &data,
            n_rows: 2,
            n_columns: 1,
            major: Major::Rows,
        };
        let counted = count_tokens(&csr, &[0, 1], &[1e160, 1.0], 2, Values::Counts);
        assert!(matches!(counted, Err(HebError::InvalidParameter(_))));
        assert!(count_tokens(&csr, &[0, 1], &[1e150, 1.0], 2, Values::Counts).is_ok());
    }

    #[test]
    fn scoring_is_the_sparse_product_plus_bias() {
        let (indptr, indices, data) = example();
        let csr = SparseMatrix {
            indptr: &indptr,
            indices: &indices,
            data: &data,
            n_rows: 3,
            n_columns: 3,
            major: Major::Rows,
        };
        // table (V, C)
        let table = [0.5, -1.0, 2.0, f64::NEG_INFINITY, -0.25, 3.0];
        let bias = [1.0, -2.0];
        let joint = score_rows(&csr, &table, &bias, Values::Counts).unwrap();
        let x = dense();
        for s in 0..3 {
            for c in 0..2 {
                let mut want = bias[c];
                for v in 0..3 {
                    let t = table[v * 2 + c];
                    if x[s][v] != 0.0 && t.is_finite() {
                        want += x[s][v] * t;
                    }
                }
                assert!((joint[[s, c]] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn malformed_matrices_and_bad_values_are_errors() {
        let (indptr, indices, data) = example();
        let good = SparseMatrix {
            indptr: &indptr,
            indices: &indices,
            data: &data,
            n_rows: 3,
            n_columns: 3,
            major: Major::Rows,
        };
        assert!(good.check(Values::Counts).is_ok());
        let negative = [2.0, -1.0, 3.0, 1.0];
        let bad_value = SparseMatrix {
            data: &negative,
            ..good
        };
        assert!(bad_value.check(Values::Counts).is_err());
        assert!(bad_value.check(Values::Binarize(0.0)).is_ok());
        let nan = [2.0, f64::NAN, 3.0, 1.0];
        assert!(SparseMatrix { data: &nan, ..good }
            .check(Values::Binarize(0.0))
            .is_err());
        let out_of_range = [2, 0, 7, 2];
        assert!(SparseMatrix {
            indices: &out_of_range,
            ..good
        }
        .check(Values::Counts)
        .is_err());
        let decreasing = [0, 3, 2, 4];
        assert!(SparseMatrix {
            indptr: &decreasing,
            ..good
        }
        .check(Values::Counts)
        .is_err());
        assert!(count_tokens(&good, &[0, 5, 0], &[1.0; 3], 2, Values::Counts).is_err());
        assert!(count_tokens(&good, &[0, 0], &[1.0; 3], 2, Values::Counts).is_err());
    }
}
