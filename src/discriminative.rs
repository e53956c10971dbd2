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
//! Determinism: the first pass runs over fixed chunks of rows in parallel (each row's
//! score, posterior and residuals depend on that row only) and reduces the per-chunk loss
//! and class sums in chunk order; the second pass scatters the residuals into the table in
//! parallel over features (each feature owns its cells) and in row order within a feature.
//! Neither order depends on the number of threads, so the results are bit-identical for
//! any `n_jobs`.

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
}

/// The weighted negative conditional log-likelihood of `(codes, labels, weights)` under the
/// score table `table` `(sum K_f, C)` and class scores `class_scores` (length C), with the
/// residual sums of its gradient.
///
/// Codes are `(F, S)`; code -1 skips the feature, and so does a category whose table row
/// starts with `-inf` (a zero-mean category), exactly as in scoring.
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
) -> Result<ConditionalLikelihood> {
    check_rows(codes, labels, weights, layout)?;
    let n_classes = class_scores.len();
    check_len("score table rows", layout.n_columns(), table.nrows())?;
    check_len("score table columns", n_classes, table.ncols())?;
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
                    let entry = table.row(layout.columns(f).start + code as usize);
                    if entry[0] == f64::NEG_INFINITY {
                        continue;
                    }
                    for (score, &t) in row.iter_mut().zip(entry.iter()) {
                        *score += t;
                    }
                }
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let log_norm = max + row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
                let (label, weight) = (labels[r] as usize, weights[r]);
                if weight != 0.0 {
                    loss -= weight * (row[label] - log_norm);
                }
                for (c, v) in row.iter_mut().enumerate() {
                    let target = if c == label { 1.0 } else { 0.0 };
                    *v = weight * ((*v - log_norm).exp() - target);
                    class_sums[c] += *v;
                }
            }
            (loss, class_sums)
        })
        .collect();
    interrupt::check()?;
    let mut negative_log_likelihood = 0.0;
    let mut class_residuals = vec![0.0; n_classes];
    for (loss, sums) in &chunk_sums {
        negative_log_likelihood += loss;
        class_residuals
            .iter_mut()
            .zip(sums)
            .for_each(|(a, b)| *a += b);
    }
    // pass 2: scatter the residuals into each feature's cells, features in parallel
    let mut table_residuals = zeroed(layout.n_columns() * n_classes, "table residuals")?;
    let mut slices: Vec<(usize, &mut [f64])> = Vec::with_capacity(layout.n_features());
    let mut rest = table_residuals.as_mut_slice();
    for f in 0..layout.n_features() {
        let (head, tail) = rest.split_at_mut(layout.cardinality(f) * n_classes);
        slices.push((f, head));
        rest = tail;
    }
    slices.into_par_iter().for_each(|(f, cells)| {
        let start = layout.columns(f).start;
        for (r, &code) in codes.row(f).iter().enumerate() {
            if r % interrupt::CHECK_EVERY == 0 && interrupt::cancelled() {
                return;
            }
            if code < 0 || table[[start + code as usize, 0]] == f64::NEG_INFINITY {
                continue;
            }
            let cell = &mut cells[code as usize * n_classes..(code as usize + 1) * n_classes];
            let residual = &residuals[r * n_classes..(r + 1) * n_classes];
            cell.iter_mut().zip(residual).for_each(|(a, b)| *a += b);
        }
    });
    interrupt::check()?;
    let table_residuals = Array2::from_shape_vec((layout.n_columns(), n_classes), table_residuals)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))?;
    Ok(ConditionalLikelihood {
        negative_log_likelihood,
        table_residuals,
        class_residuals,
    })
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

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let layout = FeatureLayout::from_cardinalities(&[3, 4]);
        let n = 5000;
        let codes =
            Array2::from_shape_fn((2, n), |(f, r)| ((r * (f + 7) + r / 3) % (3 + f)) as i32);
        let labels = Array1::from_shape_fn(n, |r| ((r * 13) % 2) as i64);
        let weights = Array1::from_elem(n, 1.0);
        let table = Array2::from_shape_fn((7, 2), |(p, c)| -0.1 - 0.3 * p as f64 - 0.7 * c as f64);
        let run = |threads| {
            with_threads(threads, || {
                conditional_log_likelihood(
                    codes.view(),
                    labels.view(),
                    weights.view(),
                    table.view(),
                    &[-0.5, -0.9],
                    &layout,
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
    fn bad_labels_and_codes_are_errors() {
        let layout = FeatureLayout::from_cardinalities(&[2]);
        let table = array![[-1.0, -1.0], [-1.0, -1.0]];
        let weights = Array1::from(vec![1.0]);
        let bad_label = conditional_log_likelihood(
            array![[0]].view(),
            Array1::from(vec![2_i64]).view(),
            weights.view(),
            table.view(),
            &[0.0, 0.0],
            &layout,
        );
        assert!(matches!(bad_label, Err(HebError::ClassOutOfRange { .. })));
        let bad_code = conditional_log_likelihood(
            array![[5]].view(),
            Array1::from(vec![0_i64]).view(),
            weights.view(),
            table.view(),
            &[0.0, 0.0],
            &layout,
        );
        assert!(matches!(bad_code, Err(HebError::CodeOutOfRange { .. })));
        let infinite_prior = conditional_log_likelihood(
            array![[0]].view(),
            Array1::from(vec![0_i64]).view(),
            weights.view(),
            table.view(),
            &[f64::NEG_INFINITY, 0.0],
            &layout,
        );
        assert!(matches!(infinite_prior, Err(HebError::InvalidParameter(_))));
    }
}
