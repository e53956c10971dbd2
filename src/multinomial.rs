//! The "solve" half of the text models (SPEC "Other Naive Bayes variants"): from summed
//! count tables (which add up across batches and machines) to the smoothed log
//! probabilities, with the concentration fixed or chosen by Type-II ML through the same
//! evidence and solver as categorical NB ([`crate::naive_bayes`]).
//!
//! * Multinomial NB: one categorical distribution per class over the vocabulary,
//!   `theta_{c,v} = (n_{c,v} + m_c mu_v) / (n_c + m_c)`, `mu` uniform or pooled over the
//!   classes, `m_c = alpha V` (Laplace / Lidstone) or the maximiser of the
//!   Dirichlet-multinomial evidence of the class's summed counts (SPEC eq. 5; O(non-zero
//!   cells) per solver step). The low-count rule (fewer than `min_count` rows) gives
//!   `m_c = V`.
//! * Complement NB (Rennie et al. 2003, scikit-learn's definition): the same fit on the
//!   complement counts `sum_{c' != c} n_{c',v}`, then weights `w_{c,v} = -ln theta_{~c,v}`,
//!   or `ln theta_{~c,v} / sum_v ln theta_{~c,v}` when normalised.
//! * Bernoulli NB: per (class, feature) a two-category model over (absent, present),
//!   `theta_{c,f} = (d_{c,f} + m_{c,f} mu_f) / (N_c + m_{c,f})`, `d_{c,f}` the weighted
//!   number of rows of class c where feature f is present; Laplace / Lidstone give
//!   `m = 2 alpha`, `mu = 1/2`. The absent-feature sum `sum_f ln(1 - theta_{c,f})` becomes
//!   a per-class constant so that scoring a row costs its non-zeros.
//!
//! A token or feature whose pooled prior mean is 0 for some value (never counted, or
//! present in every training row) has the same degenerate probability in every class: it
//! is skipped at scoring (weight 0), as categorical NB skips an unknown value.

use ndarray::{Array2, ArrayView2};
use rustc_hash::FxHashMap;

use crate::error::{check_len, entries, table_from_fn, with_capacity, HebError, Result};
use crate::layout::FeatureLayout;
use crate::naive_bayes::{
    fit_concentrations, log_probability_table, prior_mean, ConcentrationFit, PriorMean,
};
use crate::solver::SolverSettings;

/// How the concentration is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Smoothing {
    /// `alpha` pseudo-counts per cell: `m = alpha K` (Laplace: `alpha = 1`).
    Fixed { alpha: f64 },
    /// Type-II ML, with the low-count fallback `m = K` below `min_count` rows.
    EmpiricalBayes {
        min_count: f64,
        settings: SolverSettings,
    },
}

/// The smoothed distributions of a fit and the solver's diagnostics.
#[derive(Debug, Clone, PartialEq)]
pub struct SmoothedFit {
    /// The prior mean of every column of the count table.
    pub prior_mean: Vec<f64>,
    /// `m` per (class, distribution): `(C, 1)` for token models, `(C, F)` for Bernoulli.
    pub concentration: Array2<f64>,
    /// `l(m)` at the chosen `m` (NaN for fixed smoothing).
    pub log_evidence: Array2<f64>,
    /// Solver steps (0 where a rule decided).
    pub n_iter: Array2<usize>,
    /// Whether the solver met its stopping rule.
    pub converged: Array2<bool>,
    /// `ln theta` of every column of the count table, `(C, columns)`.
    pub log_probability: Array2<f64>,
}

/// How the empirical-Bayes concentrations of a table are solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Solve {
    /// Every (class, feature) distribution on its own.
    Each,
    /// Each distinct two-category distribution once ([`fit_distinct_pairs`]).
    DistinctPairs,
}

fn smooth(
    counts: ArrayView2<f64>,
    class_rows: &[f64],
    layout: &FeatureLayout,
    mean_kind: PriorMean,
    smoothing: &Smoothing,
    solve: Solve,
) -> Result<SmoothedFit> {
    check_len(
        "class totals (one per class)",
        counts.nrows(),
        class_rows.len(),
    )?;
    let mean = prior_mean(counts, layout, mean_kind);
    let shape = (counts.nrows(), layout.n_features());
    let (concentration, log_evidence, n_iter, converged) = match *smoothing {
        Smoothing::Fixed { alpha } => {
            if !(alpha > 0.0 && alpha.is_finite()) {
                return Err(HebError::InvalidParameter(format!(
                    "alpha must be a finite real > 0, got {alpha}"
                )));
            }
            (
                table_from_fn(shape, "concentrations", |(_, f)| {
                    alpha * layout.cardinality(f) as f64
                })?,
                table_from_fn(shape, "log evidences", |_| f64::NAN)?,
                table_from_fn(shape, "solver steps", |_| 0)?,
                table_from_fn(shape, "convergence flags", |_| true)?,
            )
        }
        Smoothing::EmpiricalBayes {
            min_count,
            settings,
        } => {
            let fit = match solve {
                Solve::Each => {
                    fit_concentrations(counts, class_rows, &mean, layout, min_count, &settings)?
                }
                Solve::DistinctPairs => {
                    fit_distinct_pairs(counts, class_rows, &mean, min_count, &settings)?
                }
            };
            (
                fit.concentration,
                fit.log_evidence,
                fit.n_iter,
                fit.converged,
            )
        }
    };
    let log_probability = log_probability_table(counts, &mean, concentration.view(), layout)?;
    Ok(SmoothedFit {
        prior_mean: mean,
        concentration,
        log_evidence,
        n_iter,
        converged,
        log_probability,
    })
}

/// Multinomial NB: one distribution per class over the `V` columns of `counts` (C, V).
/// `class_rows[c]` is the weighted number of rows of class c (for the low-count rule).
///
/// # Errors
/// Shape mismatches, a non-positive `alpha`, or tables beyond memory.
pub fn fit_token_distributions(
    counts: ArrayView2<f64>,
    class_rows: &[f64],
    mean_kind: PriorMean,
    smoothing: &Smoothing,
) -> Result<SmoothedFit> {
    let layout = FeatureLayout::from_cardinalities(&[counts.ncols()]);
    smooth(
        counts,
        class_rows,
        &layout,
        mean_kind,
        smoothing,
        Solve::Each,
    )
}

/// `sum_{c' != c} n_{c',v}` (C, V) and `sum_{c' != c} N_{c'}`: the complement counts of
/// Complement NB. Computed as the column total minus the class's own counts (clamped at
/// 0 against rounding), as scikit-learn computes them.
pub fn complement_counts(counts: ArrayView2<f64>, class_rows: &[f64]) -> (Array2<f64>, Vec<f64>) {
    let column_totals = counts.sum_axis(ndarray::Axis(0));
    let mut complement = counts.to_owned();
    for mut row in complement.rows_mut() {
        row.zip_mut_with(&column_totals, |n, &total| *n = (total - *n).max(0.0));
    }
    let all: f64 = class_rows.iter().sum();
    let rows = class_rows.iter().map(|&n| (all - n).max(0.0)).collect();
    (complement, rows)
}

/// Complement NB's weights from `ln theta_{~c,v}` (C, V): `-ln theta` or, normalised,
/// `ln theta / sum_v ln theta`. Entries of `-inf` (skipped tokens) get weight 0 and stay
/// out of the normalising sum.
pub fn complement_weights(log_complement: ArrayView2<f64>, normalise: bool) -> Array2<f64> {
    let mut weights = log_complement.to_owned();
    for mut row in weights.rows_mut() {
        let total: f64 = row.iter().filter(|t| t.is_finite()).sum();
        row.mapv_inplace(|t| match (t.is_finite(), normalise) {
            (false, _) => 0.0,
            (true, true) => t / total,
            (true, false) => -t,
        });
    }
    weights
}

/// [`fit_concentrations`] for a table of two-category distributions (columns `2f`,
/// `2f + 1` per feature), solving each distinct one once. A distribution's
/// concentration and evidence depend only on its two counts, its prior mean and whether
/// its class falls under `min_count`, and Bernoulli tables repeat these endlessly: in
/// sparse text most features are absent from most classes, and features of equal
/// document frequency share their pooled mean. The distinct ones are solved as one table
/// (in parallel, as ever) and their answers copied back: the same numbers, bit for bit.
fn fit_distinct_pairs(
    counts: ArrayView2<f64>,
    class_rows: &[f64],
    mean: &[f64],
    min_count: f64,
    settings: &SolverSettings,
) -> Result<ConcentrationFit> {
    let (n_classes, n_features) = (counts.nrows(), counts.ncols() / 2);
    // distinct (under min_count, counts, means) -> slot; per slot its group and index
    let mut slots: FxHashMap<(bool, [u64; 4]), usize> = FxHashMap::default();
    let mut groups: [Vec<[f64; 4]>; 2] = [Vec::new(), Vec::new()];
    let mut where_solved = with_capacity(
        entries(n_classes, n_features, "distinct distributions")?,
        "distinct distributions",
    )?;
    for c in 0..n_classes {
        let below = class_rows[c] < min_count;
        for f in 0..n_features {
            let cell = [
                counts[[c, 2 * f]],
                counts[[c, 2 * f + 1]],
                mean[2 * f],
                mean[2 * f + 1],
            ];
            let key = (below, cell.map(f64::to_bits));
            let slot = *slots.entry(key).or_insert_with(|| {
                let group = &mut groups[usize::from(below)];
                group.push(cell);
                group.len() - 1
            });
            where_solved.push((usize::from(below), slot));
        }
    }
    // each group as a one-class table: a class total the rule never applies to (above)
    // or always applies to (below: min_count > 0 there, since some total fell under it)
    let solved = groups
        .iter()
        .zip([f64::MAX, 0.0])
        .map(|(group, total)| {
            if group.is_empty() {
                return Ok(ConcentrationFit {
                    concentration: Array2::zeros((1, 0)),
                    log_evidence: Array2::zeros((1, 0)),
                    n_iter: Array2::zeros((1, 0)),
                    converged: Array2::from_elem((1, 0), true),
                });
            }
            let table = Array2::from_shape_fn((1, 2 * group.len()), |(_, j)| group[j / 2][j % 2]);
            let means: Vec<f64> = group.iter().flat_map(|cell| [cell[2], cell[3]]).collect();
            let layout = FeatureLayout::from_cardinalities(&vec![2; group.len()]);
            fit_concentrations(table.view(), &[total], &means, &layout, min_count, settings)
        })
        .collect::<Result<Vec<_>>>()?;
    let shape = (n_classes, n_features);
    Ok(ConcentrationFit {
        concentration: scattered(shape, &where_solved, &solved, |fit| &fit.concentration)?,
        log_evidence: scattered(shape, &where_solved, &solved, |fit| &fit.log_evidence)?,
        n_iter: scattered(shape, &where_solved, &solved, |fit| &fit.n_iter)?,
        converged: scattered(shape, &where_solved, &solved, |fit| &fit.converged)?,
    })
}

/// A `(C, F)` table of [`fit_distinct_pairs`]: every (class, feature) takes the entry of
/// `table` in the fit and slot that solved its distribution (`where_solved`, row-major).
fn scattered<T: Copy>(
    shape: (usize, usize),
    where_solved: &[(usize, usize)],
    solved: &[ConcentrationFit],
    table: impl Fn(&ConcentrationFit) -> &Array2<T>,
) -> Result<Array2<T>> {
    table_from_fn(shape, "solver diagnostics", |(c, f)| {
        let (group, slot) = where_solved[c * shape.1 + f];
        table(&solved[group])[[0, slot]]
    })
}

/// Bernoulli NB's fit and scoring tables.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryFit {
    /// The smoothed two-category models; `prior_mean` and `log_probability` hold the
    /// (absent, present) columns of each feature side by side.
    pub smoothed: SmoothedFit,
    /// `ln theta_{c,f}` (present), `(C, F)`.
    pub log_present: Array2<f64>,
    /// `ln(1 - theta_{c,f})` (absent), `(C, F)`.
    pub log_absent: Array2<f64>,
    /// Score table `(F, C)`: `ln theta - ln(1 - theta)`, 0 for a skipped feature.
    pub score_table: Array2<f64>,
    /// `sum_f ln(1 - theta_{c,f})` over the features not skipped, length C.
    pub absent_sum: Vec<f64>,
}

/// Bernoulli NB from the per-class document frequencies `present` (C, F) and the
/// weighted rows per class.
///
/// # Errors
/// Shape mismatches, a non-positive `alpha`, or tables beyond memory.
pub fn fit_binary_features(
    present: ArrayView2<f64>,
    class_rows: &[f64],
    mean_kind: PriorMean,
    smoothing: &Smoothing,
) -> Result<BinaryFit> {
    let (n_classes, n_features) = present.dim();
    check_len("class totals (one per class)", n_classes, class_rows.len())?;
    let width = entries(n_features, 2, "absent and present counts")?;
    let table = table_from_fn((n_classes, width), "absent and present counts", |(c, j)| {
        let on = present[[c, j / 2]];
        if j % 2 == 0 {
            (class_rows[c] - on).max(0.0)
        } else {
            on
        }
    })?;
    let layout = FeatureLayout::from_cardinalities(&vec![2; n_features]);
    let smoothed = smooth(
        table.view(),
        class_rows,
        &layout,
        mean_kind,
        smoothing,
        Solve::DistinctPairs,
    )?;
    let log = &smoothed.log_probability;
    let shape = (n_classes, n_features);
    let log_absent = table_from_fn(shape, "absent log-probabilities", |(c, f)| log[[c, 2 * f]])?;
    let log_present = table_from_fn(shape, "present log-probabilities", |(c, f)| {
        log[[c, 2 * f + 1]]
    })?;
    let skipped: Vec<bool> = (0..n_features)
        .map(|f| smoothed.prior_mean[2 * f] == 0.0 || smoothed.prior_mean[2 * f + 1] == 0.0)
        .collect();
    let score_table = table_from_fn((n_features, n_classes), "score table", |(f, c)| {
        if skipped[f] {
            0.0
        } else {
            log_present[[c, f]] - log_absent[[c, f]]
        }
    })?;
    let absent_sum = (0..n_classes)
        .map(|c| {
            (0..n_features)
                .filter(|&f| !skipped[f])
                .map(|f| log_absent[[c, f]])
                .sum()
        })
        .collect();
    Ok(BinaryFit {
        smoothed,
        log_present,
        log_absent,
        score_table,
        absent_sum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Bits of every number of a fit, to compare two fits exactly (NaN included).
    fn bits(fit: &SmoothedFit) -> Vec<u64> {
        let floats = fit.concentration.iter().chain(fit.log_evidence.iter());
        let floats = floats
            .chain(fit.log_probability.iter())
            .chain(fit.prior_mean.iter());
        let mut out: Vec<u64> = floats.map(|x| x.to_bits()).collect();
        out.extend(fit.n_iter.iter().map(|&n| n as u64));
        out.extend(fit.converged.iter().map(|&b| u64::from(b)));
        out
    }

    #[test]
    fn solving_each_distinct_two_category_distribution_once_changes_no_number() {
        // document frequencies with many repeats, a class under min_count, a feature
        // present in every row and one in none, whole and fractional weights
        let mut state = 12_345_u64;
        let mut next = move |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % bound
        };
        for (n_classes, n_features, min_count) in [(3, 40, 0.0), (4, 200, 5.0), (2, 7, 1.0)] {
            let class_rows: Vec<f64> = (0..n_classes)
                .map(|c| if c == 1 { 3.0 } else { 20.0 + next(30) as f64 })
                .collect();
            let present = Array2::from_shape_fn((n_classes, n_features), |(c, f)| match f {
                0 => class_rows[c],
                1 => 0.0,
                _ if f % 5 == 0 => (next(4) as f64 * 0.5).min(class_rows[c]),
                _ => next(3).min(class_rows[c] as u64) as f64,
            });
            let mut table = Array2::zeros((n_classes, 2 * n_features));
            for c in 0..n_classes {
                for f in 0..n_features {
                    table[[c, 2 * f]] = (class_rows[c] - present[[c, f]]).max(0.0);
                    table[[c, 2 * f + 1]] = present[[c, f]];
                }
            }
            let layout = FeatureLayout::from_cardinalities(&vec![2; n_features]);
            for mean_kind in [PriorMean::Uniform, PriorMean::PooledMarginal] {
                let smoothing = Smoothing::EmpiricalBayes {
                    min_count,
                    settings: SolverSettings::default(),
                };
                let fit = |solve| {
                    smooth(
                        table.view(),
                        &class_rows,
                        &layout,
                        mean_kind,
                        &smoothing,
                        solve,
                    )
                    .unwrap()
                };
                let (each, distinct) = (fit(Solve::Each), fit(Solve::DistinctPairs));
                assert_eq!(bits(&each), bits(&distinct));
                // the case must hold repeats and a rule-decided class to mean anything
                assert!(each.n_iter.row(1).iter().all(|&n| n == 0) == (min_count > 3.0));
            }
        }
    }

    #[test]
    fn laplace_tokens_are_add_one() {
        let counts = array![[2.0, 0.0, 1.0], [0.0, 4.0, 0.0]];
        let fit = fit_token_distributions(
            counts.view(),
            &[1.0, 2.0],
            PriorMean::Uniform,
            &Smoothing::Fixed { alpha: 1.0 },
        )
        .unwrap();
        let want: [[f64; 3]; 2] = [
            [3.0 / 6.0, 1.0 / 6.0, 2.0 / 6.0],
            [1.0 / 7.0, 5.0 / 7.0, 1.0 / 7.0],
        ];
        for (c, row) in want.iter().enumerate() {
            assert_eq!(fit.concentration[[c, 0]], 3.0);
            for (v, p) in row.iter().enumerate() {
                assert!((fit.log_probability[[c, v]] - p.ln()).abs() < 1e-14);
            }
        }
    }

    #[test]
    fn complement_counts_leave_the_class_out() {
        let counts = array![[2.0, 0.0], [1.0, 3.0], [0.0, 5.0]];
        let (complement, rows) = complement_counts(counts.view(), &[1.0, 2.0, 3.0]);
        assert_eq!(complement, array![[1.0, 8.0], [2.0, 5.0], [3.0, 3.0]]);
        assert_eq!(rows, vec![5.0, 4.0, 3.0]);
        let weights = complement_weights(array![[-1.0, f64::NEG_INFINITY, -3.0]].view(), true);
        assert_eq!(weights, array![[0.25, 0.0, 0.75]]);
    }

    #[test]
    fn bernoulli_laplace_and_the_absent_sum() {
        // class 0: 4 rows, feature 0 present in 1; class 1: 2 rows, present in 2
        let present = array![[1.0, 0.0], [2.0, 0.0]];
        let fit = fit_binary_features(
            present.view(),
            &[4.0, 2.0],
            PriorMean::Uniform,
            &Smoothing::Fixed { alpha: 1.0 },
        )
        .unwrap();
        assert!((fit.log_present[[0, 0]] - (2.0_f64 / 6.0).ln()).abs() < 1e-14);
        assert!((fit.log_absent[[1, 0]] - (1.0_f64 / 4.0).ln()).abs() < 1e-14);
        let want: f64 = (4.0_f64 / 6.0).ln() + (5.0_f64 / 6.0).ln();
        assert!((fit.absent_sum[0] - want).abs() < 1e-14);
        // under the pooled mean, feature 1 (never present) is skipped
        let pooled = fit_binary_features(
            present.view(),
            &[4.0, 2.0],
            PriorMean::PooledMarginal,
            &Smoothing::Fixed { alpha: 1.0 },
        )
        .unwrap();
        assert_eq!(pooled.score_table[[1, 0]], 0.0);
        assert!(pooled.absent_sum.iter().all(|s| s.is_finite()));
    }
}
