//! Scoring rows: the joint log-likelihood of SPEC eq. 1,
//!
//! ```text
//! jll(c | x) = ln pi_c + sum over f with x_f present and known of  w_f ln theta_{c,f,x_f}
//! ```
//!
//! and its normalisation into log-posteriors with a max-shifted log-sum-exp.
//! Rows are scored in parallel chunks; each row's sum runs over features in order, so
//! the result does not depend on the number of threads.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::class_loops::{add_scaled, by_class_count};
use crate::counts::check_codes;
use crate::error::{check_len, code_out_of_range, zeroed, HebError, Result};
use crate::interrupt;
use crate::layout::FeatureLayout;

/// Rows per parallel task.
const ROW_CHUNK: usize = 2048;

/// The joint log-likelihood of every row, shape (S, C).
///
/// `codes` is `(F, S)`; code -1 (missing or unknown) skips the feature, and so does a
/// category whose table entry is `-inf` (a zero-mean category, SPEC). `log_table` is
/// `(sum_f K_f, C)`: one contiguous row of class log-probabilities per category.
/// `feature_weights` (length F) multiply each feature's term.
///
/// # Errors
/// Shape mismatches and codes out of range.
pub fn joint_log_likelihood(
    codes: ArrayView2<i32>,
    log_table: ArrayView2<f64>,
    class_log_prior: &[f64],
    feature_weights: Option<&[f64]>,
    layout: &FeatureLayout,
) -> Result<Array2<f64>> {
    check_codes(codes, layout)?;
    let n_classes = class_log_prior.len();
    if log_table.dim() != (layout.n_columns(), n_classes) {
        return Err(HebError::InvalidParameter(format!(
            "log-probability table has shape {:?}, expected ({}, {})",
            log_table.dim(),
            layout.n_columns(),
            n_classes
        )));
    }
    if let Some(w) = feature_weights {
        check_len("feature weights", layout.n_features(), w.len())?;
        if w.iter().any(|v| !v.is_finite()) {
            return Err(HebError::InvalidParameter(
                "feature weights must be finite".into(),
            ));
        }
    }
    let n_rows = codes.ncols();
    let mut out = zeroed(n_rows * n_classes, "joint log-likelihood")?;
    // the table's class rows as one slice (a copy where it is not contiguous)
    let owned;
    let table = match log_table.as_slice() {
        Some(table) => table,
        None => {
            let mut copy = zeroed(log_table.len(), "log-probability table")?;
            copy.iter_mut()
                .zip(log_table.iter())
                .for_each(|(c, &v)| *c = v);
            owned = copy;
            &owned
        }
    };
    let rows = RowScores {
        codes,
        table,
        class_log_prior,
        feature_weights,
        layout,
    };
    out.par_chunks_mut(ROW_CHUNK * n_classes.max(1))
        .enumerate()
        .try_for_each(|(chunk, block)| -> Result<()> {
            interrupt::check()?;
            by_class_count!(n_classes, C, { rows.score::<C>(chunk * ROW_CHUNK, block) })
        })?;
    Array2::from_shape_vec((n_rows, n_classes), out)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// What [`joint_log_likelihood`] scores, the table as one `(sum K_f, C)` row-major slice.
struct RowScores<'a> {
    codes: ArrayView2<'a, i32>,
    table: &'a [f64],
    class_log_prior: &'a [f64],
    feature_weights: Option<&'a [f64]>,
    layout: &'a FeatureLayout,
}

impl RowScores<'_> {
    /// Scores the rows from `first` on into `block` (C scores a row). `C` is the number of
    /// classes (a constant, so that the class loops unroll), or 0 for any other number.
    fn score<const C: usize>(&self, first: usize, block: &mut [f64]) -> Result<()> {
        let n_classes = self.class_log_prior.len();
        for row in block.chunks_mut(n_classes) {
            row.copy_from_slice(self.class_log_prior);
        }
        for f in 0..self.layout.n_features() {
            let (start, k) = (self.layout.columns(f).start, self.layout.cardinality(f));
            let weight = self.feature_weights.map_or(1.0, |w| w[f]);
            if weight == 0.0 {
                // a feature without weight adds nothing, even where its table holds
                // -inf (0 x -inf would be NaN)
                continue;
            }
            let codes_f = self.codes.row(f);
            for (i, row) in block.chunks_mut(n_classes).enumerate() {
                let code = codes_f[first + i];
                if code < 0 {
                    continue;
                }
                if code as usize >= k {
                    return Err(code_out_of_range(f, code, k));
                }
                let at = (start + code as usize) * n_classes;
                let entry = &self.table[at..at + n_classes];
                if entry[0] == f64::NEG_INFINITY {
                    continue;
                }
                add_scaled::<C>(row, weight, entry);
            }
        }
        Ok(())
    }
}

/// Log-posteriors from joint log-likelihoods: `jll - logsumexp(jll)` row by row, with the
/// row maximum shifted out first so no exponential overflows.
///
/// # Errors
/// [`HebError::Allocation`] when the output (a table the size of `joint`) cannot be
/// allocated: Python then gets a MemoryError instead of the process aborting, which is
/// what an infallible copy (`to_owned`) does when memory runs out.
pub fn log_posterior(joint: ArrayView2<f64>) -> Result<Array2<f64>> {
    posterior(joint, true)
}

/// The posteriors of [`log_posterior`], exponentiated in the same parallel pass where
/// `log` is false (the same numbers as `exp` of the log-posteriors).
///
/// # Errors
/// As [`log_posterior`].
pub fn posterior(joint: ArrayView2<f64>, log: bool) -> Result<Array2<f64>> {
    let (n_rows, n_classes) = joint.dim();
    let mut out = zeroed(joint.len(), "log-posteriors")?;
    let width = n_classes.max(1);
    out.par_chunks_mut(ROW_CHUNK * width)
        .enumerate()
        .try_for_each(|(chunk, block)| -> Result<()> {
            interrupt::check()?;
            for (i, row) in block.chunks_mut(width).enumerate() {
                let r = chunk * ROW_CHUNK + i;
                let source = joint.row(r);
                row.iter_mut().zip(source.iter()).for_each(|(v, &s)| *v = s);
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if max == f64::INFINITY || row.iter().any(|v| v.is_nan()) {
                    return Err(HebError::InvalidParameter(format!(
                        "the joint log-likelihood of row {r} is not finite ({source}): the \
                         row's values overflow float64 when scored; rescale them"
                    )));
                }
                if max == f64::NEG_INFINITY {
                    // no class can produce the row: -inf each (probability 0)
                    if !log {
                        row.iter_mut().for_each(|v| *v = 0.0);
                    }
                    continue;
                }
                // shift first, then normalise: `v - (max + ln sum)` would lose ln sum
                // against a huge |max| (scores of -1e150 gave probabilities of 1 each)
                let log_sum = row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
                if log {
                    row.iter_mut().for_each(|v| *v = (*v - max) - log_sum);
                } else {
                    row.iter_mut()
                        .for_each(|v| *v = ((*v - max) - log_sum).exp());
                }
            }
            Ok(())
        })?;
    Array2::from_shape_vec((n_rows, n_classes), out)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn posteriors_are_the_exponentials_of_the_log_posteriors() {
        let ninf = f64::NEG_INFINITY;
        let joint = array![
            [-1.0, -2.5, -0.3],
            [ninf, ninf, ninf],
            [-1e150, -1e150, ninf]
        ];
        let logs = log_posterior(joint.view()).unwrap();
        let probabilities = posterior(joint.view(), false).unwrap();
        assert_eq!(probabilities, logs.mapv(f64::exp));
        assert_eq!(probabilities.row(1).to_vec(), vec![0.0; 3]);
        assert_eq!(probabilities.row(2).to_vec(), vec![0.5, 0.5, 0.0]);
    }

    #[test]
    fn every_compiled_class_count_scores_as_the_plain_sum() {
        let layout = FeatureLayout::from_cardinalities(&[3, 1, 5]);
        let mut seed = 11u64;
        let mut uniform = move || crate::test_random::uniform(&mut seed);
        let n_rows = 2 * ROW_CHUNK + 7;
        let codes = Array2::from_shape_fn((3, n_rows), |(f, _)| {
            (uniform() * (layout.cardinality(f) as f64 + 1.0)) as i32 - 1
        });
        for n_classes in [2, 3, 4, 7, 10, 12] {
            let mut table =
                Array2::from_shape_fn((layout.n_columns(), n_classes), |_| -3.0 * uniform());
            table.row_mut(5).fill(f64::NEG_INFINITY); // a zero-mean category
            let prior: Vec<f64> = (0..n_classes).map(|_| -2.0 * uniform()).collect();
            let weights = [0.7, 0.0, 1.3];
            // the table column-major too: the same scores through the copy
            let column_major = table.t().as_standard_layout().into_owned().reversed_axes();
            assert!(column_major.as_slice().is_none() && column_major == table);
            for view in [table.view(), column_major.view()] {
                let jll = joint_log_likelihood(codes.view(), view, &prior, Some(&weights), &layout)
                    .unwrap();
                for r in 0..n_rows {
                    for c in 0..n_classes {
                        let mut expected = prior[c];
                        for f in 0..3 {
                            let code = codes[[f, r]];
                            let at = layout.columns(f).start + code.max(0) as usize;
                            if code >= 0 && weights[f] != 0.0 && table[[at, 0]].is_finite() {
                                expected += weights[f] * table[[at, c]];
                            }
                        }
                        assert_eq!(jll[[r, c]].to_bits(), expected.to_bits(), "{n_classes}");
                    }
                }
            }
        }
    }

    #[test]
    fn joint_log_likelihood_adds_prior_and_known_features() {
        let layout = FeatureLayout::from_cardinalities(&[2, 2]);
        // rows of the table: (feature 0, v0), (f0, v1), (f1, v0), (f1, v1); two classes
        let table = array![
            [-1.0, -2.0],
            [-3.0, -4.0],
            [-0.5, -0.25],
            [f64::NEG_INFINITY, f64::NEG_INFINITY]
        ];
        let codes = array![[1, -1, 0], [0, 1, 1]];
        let prior = [-0.1, -0.2];
        let jll = joint_log_likelihood(
            codes.view(),
            table.view(),
            &prior,
            Some(&[2.0, 1.0]),
            &layout,
        )
        .unwrap();
        let expected = array![
            [-0.1 - 6.0 - 0.5, -0.2 - 8.0 - 0.25],
            [-0.1, -0.2],
            [-0.1 - 2.0, -0.2 - 4.0]
        ];
        assert_eq!(jll, expected);
    }

    #[test]
    fn a_log_posterior_too_large_for_memory_is_an_error() {
        // A broadcast view claims 2^40 x 4 scores backed by one number: the copy that
        // to_owned made aborted the process when the allocation failed.
        let one = [0.0];
        let view = ndarray::ArrayView1::from(&one[..]);
        let huge = view.broadcast((1usize << 40, 4)).unwrap();
        assert!(matches!(
            log_posterior(huge),
            Err(HebError::Allocation { .. })
        ));
    }

    #[test]
    fn log_posterior_survives_huge_scores() {
        let joint = array![[-1000.0, -1001.0], [800.0, 800.0]];
        let post = log_posterior(joint.view()).unwrap();
        let p0 = 1.0 / (1.0 + (-1.0_f64).exp());
        // ulp(1000) ~ 1e-13 bounds what the shifted difference can keep
        assert!((post[[0, 0]].exp() - p0).abs() < 1e-12);
        assert!((post[[1, 0]] - 0.5_f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn log_posterior_keeps_the_normaliser_of_astronomical_scores() {
        // |max| = 1.6e150 swallows ln 2: both classes must still get one half
        let joint = array![[-1.6e150, -1.6e150], [-1e300, -1e300 - 1e285]];
        let post = log_posterior(joint.view()).unwrap();
        assert_eq!(post[[0, 0]], 0.5_f64.ln());
        assert_eq!(post[[0, 1]], 0.5_f64.ln());
        assert_eq!(post[[1, 0]], 0.0);
        assert!(post[[1, 1]] < -1e284 && post[[1, 1]].exp() == 0.0);
    }

    #[test]
    fn log_posterior_refuses_rows_that_are_not_numbers() {
        for bad in [f64::NAN, f64::INFINITY] {
            let joint = array![[-1.0, -2.0], [bad, -2.0]];
            assert!(matches!(
                log_posterior(joint.view()),
                Err(HebError::InvalidParameter(_))
            ));
        }
    }
}
