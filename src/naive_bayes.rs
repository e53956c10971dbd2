//! Categorical Naive Bayes with Dirichlet-smoothed conditionals (SPEC eq. 1 and the
//! smoother table):
//!
//! ```text
//! theta_{c,f,v} = (N_{c,f,v} + m_{c,f} mu_{f,v}) / (N_{c,f} + m_{c,f})
//! ```
//!
//! with the prior mean `mu_f` uniform (`1/K_f`) or the pooled marginal, and the
//! concentration `m_{c,f}` either fixed by the smoother or chosen by Type-II maximum
//! likelihood ([`fit_concentrations`], HEB-U / HEB-M).

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{check_len, zeroed, HebError, Result};
use crate::evidence::{EvidenceTerms, GradientShape};
use crate::interrupt;
use crate::layout::FeatureLayout;
use crate::small_solver::Staircases;
use crate::solver::{maximise_evidence_from, maximise_with_shape, Solution, SolverSettings};

/// Which prior mean a smoother shrinks toward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorMean {
    /// `mu_{f,v} = 1/K_f` (Laplace, Lidstone, KT, HEB-U).
    Uniform,
    /// `mu_{f,v} = sum_c N_{c,f,v} / sum_c N_{c,f}` (m-estimate, target encoding, HEB-M).
    PooledMarginal,
}

/// The prior mean of every category, a flat vector of `sum_f K_f`.
///
/// Under the pooled marginal a category never counted (declared, or seen only with
/// weight 0) has mean 0; a feature with no counted value at all falls back to uniform.
pub fn prior_mean(counts: ArrayView2<f64>, layout: &FeatureLayout, kind: PriorMean) -> Vec<f64> {
    let mut mean = if kind == PriorMean::PooledMarginal {
        pooled_counts(counts)
    } else {
        vec![0.0; layout.n_columns()]
    };
    for f in 0..layout.n_features() {
        let columns = layout.columns(f);
        let uniform = 1.0 / layout.cardinality(f).max(1) as f64;
        let total: f64 = mean[columns.clone()].iter().sum();
        for slot in &mut mean[columns] {
            *slot = match kind {
                PriorMean::PooledMarginal if total > 0.0 => *slot / total,
                _ => uniform,
            };
        }
    }
    mean
}

/// The counts of every column summed over the classes, in one pass over the rows (a
/// column's own walk strides through the whole table).
fn pooled_counts(counts: ArrayView2<f64>) -> Vec<f64> {
    let mut pooled = vec![0.0; counts.ncols()];
    for row in counts.rows() {
        for (sum, &n) in pooled.iter_mut().zip(row.iter()) {
            *sum += n;
        }
    }
    pooled
}

/// Concentrations and solver diagnostics for every (class, feature).
#[derive(Debug, Clone, PartialEq)]
pub struct ConcentrationFit {
    /// `m_{c,f}`, shape (C, F).
    pub concentration: Array2<f64>,
    /// `l(m_{c,f})`, shape (C, F).
    pub log_evidence: Array2<f64>,
    /// Solver steps, shape (C, F); 0 where a rule decided.
    pub n_iter: Array2<usize>,
    /// Whether the solver met its stopping rule, shape (C, F).
    pub converged: Array2<bool>,
}

/// Whole counts below this are tallied per count when a feature's mean is uniform.
const SHARED_COUNTS: usize = 33;

/// The evidence statistics of the `(class, feature)` distribution.
fn evidence_terms(
    counts: ArrayView2<f64>,
    mean: &[f64],
    layout: &FeatureLayout,
    class: usize,
    feature: usize,
) -> EvidenceTerms {
    let row = counts.row(class);
    let mut terms = EvidenceTerms::new();
    let mut total = 0.0;
    let columns = layout.columns(feature);
    let shared_mean = mean[columns.clone()]
        .split_first()
        .filter(|(first, rest)| rest.iter().all(|mu| mu == *first))
        .map(|(first, _)| *first);
    if let Some(mu) = shared_mean {
        // one mean for every value (a uniform mean): cells of equal small whole counts
        // share their poles, so they are added once per count (a text vocabulary has
        // thousands of cells and a few dozen distinct small counts)
        let mut cells_of_count = [0.0; SHARED_COUNTS];
        for j in columns {
            let n = row[j];
            if n > 0.0 {
                total += n;
                let whole = n as usize;
                if whole < SHARED_COUNTS && whole as f64 == n {
                    cells_of_count[whole] += 1.0;
                } else {
                    terms.add_cell(n, mu);
                }
            }
        }
        for (n, &cells) in cells_of_count.iter().enumerate().skip(1) {
            terms.add_equal_cells(n as f64, mu, cells);
        }
    } else {
        for j in columns {
            let n = row[j];
            if n > 0.0 {
                total += n;
                terms.add_cell(n, mean[j]);
            }
        }
    }
    terms.add_document(total);
    terms.finish();
    terms
}

/// The maximiser of one (class, feature) evidence re-solved on a stream (a warm start
/// given). With whole counts the closed-form certificate of the gradient's shape
/// ([`Staircases`], O(cells log cells)) runs first, on the cells themselves: on a long
/// stream it decides most distributions (every concentration at a bound, say) without
/// building the evidence's step terms or making the pass over every unit up to the class
/// total of [`EvidenceTerms::gradient_shape`], both of which grow with the rows seen.
/// Where it cannot decide, those and then the bracket search run as before: the same
/// maximiser either way. A first solve does not take this route: on text vocabularies
/// (thousands of cells of a uniform mean, whose step terms are shared) sorting the cells
/// costs more than it saves (MultinomialNB's fit on reuters_r8 took 1.41x).
fn maximise(
    counts: ArrayView2<f64>,
    mean: &[f64],
    layout: &FeatureLayout,
    (class, feature): (usize, usize),
    settings: &SolverSettings,
    start: f64,
) -> Solution {
    let (lo_m, hi_m) = (settings.min_concentration, settings.max_concentration);
    let row = counts.row(class);
    let (mut cell_counts, mut means) = (Vec::new(), Vec::new());
    for j in layout.columns(feature) {
        if row[j] > 0.0 {
            cell_counts.push(row[j]);
            means.push(mean[j]);
        }
    }
    let whole = cell_counts.iter().all(|n| n.fract() == 0.0);
    let flat = cell_counts.is_empty() || means.iter().all(|&mu| mu == 1.0);
    if !whole || flat || lo_m == hi_m {
        let terms = evidence_terms(counts, mean, layout, class, feature);
        return maximise_evidence_from(&terms, settings, start);
    }
    let total = [cell_counts.iter().sum::<f64>()];
    let staircases = Staircases {
        counts: &cell_counts,
        means: &means,
        totals: &total,
    };
    let at_bound = |m: f64| Solution {
        concentration: m,
        log_evidence: staircases.log_evidence(m),
        n_iter: 0,
        converged: true,
    };
    match staircases.gradient_shape() {
        GradientShape::Rising => at_bound(hi_m),
        GradientShape::Falling => at_bound(lo_m),
        shape => {
            let terms = evidence_terms(counts, mean, layout, class, feature);
            let shape = match shape {
                GradientShape::Unknown => terms.gradient_shape(),
                known => known,
            };
            maximise_with_shape(&terms, settings, start, shape)
        }
    }
}

/// Type-II ML concentration of every (class, feature) (SPEC eq. 5, Algorithm 1),
/// in parallel over the C x F problems; each costs O(its non-zero cells) per step.
///
/// Classes with `N_c < min_count` get the low-count fallback `m = K_f`.
///
/// # Errors
/// [`HebError::ShapeMismatch`] when the tables disagree with the layout.
pub fn fit_concentrations(
    counts: ArrayView2<f64>,
    class_totals: &[f64],
    mean: &[f64],
    layout: &FeatureLayout,
    min_count: f64,
    settings: &SolverSettings,
) -> Result<ConcentrationFit> {
    fit_concentrations_from(
        counts,
        class_totals,
        mean,
        layout,
        min_count,
        settings,
        None,
    )
}

/// [`fit_concentrations`] warm-started: the refinement of each (class, feature) starts
/// at `start[c, f]` (the concentration of the same distribution before a streaming
/// batch joined, say) instead of the middle of its bracket, and each distribution is
/// first offered to the closed-form certificate (`maximise`). The maximiser is the same
/// to the solver's tolerance; only work is saved. A start that is not a positive number
/// is no guess.
///
/// # Errors
/// As [`fit_concentrations`]; a `start` that is not `(C, F)`.
pub fn fit_concentrations_from(
    counts: ArrayView2<f64>,
    class_totals: &[f64],
    mean: &[f64],
    layout: &FeatureLayout,
    min_count: f64,
    settings: &SolverSettings,
    start: Option<ArrayView2<f64>>,
) -> Result<ConcentrationFit> {
    check_table(counts, layout, class_totals.len())?;
    check_len("prior mean", layout.n_columns(), mean.len())?;
    let (n_classes, n_features) = (class_totals.len(), layout.n_features());
    if let Some(start) = start {
        if start.dim() != (n_classes, n_features) {
            return Err(HebError::InvalidParameter(format!(
                "start concentrations of shape {:?}, expected ({n_classes}, {n_features})",
                start.dim()
            )));
        }
    }
    let solutions: Vec<Solution> = (0..n_classes * n_features)
        .into_par_iter()
        .map(|index| {
            interrupt::check()?;
            let (c, f) = (index / n_features, index % n_features);
            if layout.cardinality(f) == 0 {
                return Ok(Solution::NOTHING_TO_SMOOTH);
            }
            if class_totals[c] < min_count {
                let m = layout.cardinality(f) as f64;
                let terms = evidence_terms(counts, mean, layout, c, f);
                return Ok(Solution {
                    concentration: m,
                    log_evidence: terms.log_evidence(m),
                    n_iter: 0,
                    converged: true,
                });
            }
            Ok(match start {
                // a re-solve (a stream's next batch): the certificate on the cells first
                Some(start) => maximise(counts, mean, layout, (c, f), settings, start[(c, f)]),
                None => {
                    let terms = evidence_terms(counts, mean, layout, c, f);
                    maximise_evidence_from(&terms, settings, 1.0)
                }
            })
        })
        .collect::<Result<_>>()?;
    let shape = (n_classes, n_features);
    let pick = |get: fn(&Solution) -> f64| {
        Array2::from_shape_vec(shape, solutions.iter().map(get).collect()).expect("C x F")
    };
    Ok(ConcentrationFit {
        concentration: pick(|s| s.concentration),
        log_evidence: pick(|s| s.log_evidence),
        n_iter: Array2::from_shape_vec(shape, solutions.iter().map(|s| s.n_iter).collect())
            .expect("C x F"),
        converged: Array2::from_shape_vec(shape, solutions.iter().map(|s| s.converged).collect())
            .expect("C x F"),
    })
}

/// `ln theta_{c,f,v}` for every class and category, shape `(C, sum_f K_f)`.
///
/// A category with zero mean and no count in any class gets `-inf` in every class; the
/// scorer skips such entries (they carry no evidence either way, SPEC).
///
/// # Errors
/// Shape mismatches, a non-positive concentration, or a table too large to allocate.
pub fn log_probability_table(
    counts: ArrayView2<f64>,
    mean: &[f64],
    concentration: ArrayView2<f64>,
    layout: &FeatureLayout,
) -> Result<Array2<f64>> {
    let n_classes = counts.nrows();
    check_table(counts, layout, n_classes)?;
    check_len("prior mean", layout.n_columns(), mean.len())?;
    check_len("concentration rows", n_classes, concentration.nrows())?;
    check_len(
        "concentration columns",
        layout.n_features(),
        concentration.ncols(),
    )?;
    let valid = |f: usize| {
        layout.cardinality(f) == 0
            || concentration
                .column(f)
                .iter()
                .all(|&m| m > 0.0 && m.is_finite())
    };
    if !(0..layout.n_features()).all(valid) {
        return Err(HebError::InvalidParameter(
            "every concentration of a feature with categories must be positive and finite".into(),
        ));
    }
    let width = layout.n_columns();
    let mut flat = zeroed(n_classes * width, "log-probability table")?;
    // pooled counts per column and their totals per feature, for the cells whose mean is
    // 0 or subnormal (underflowed_mean_log_numerator): one pass, only where there are any
    let pooled = if mean.iter().any(|&mu| mu < f64::MIN_POSITIVE) {
        let pooled = pooled_counts(counts);
        let totals: Vec<f64> = (0..layout.n_features())
            .map(|f| pooled[layout.columns(f)].iter().sum())
            .collect();
        Some((pooled, totals))
    } else {
        None
    };
    flat.par_chunks_mut(width.max(1))
        .enumerate()
        .try_for_each(|(c, out)| -> Result<()> {
            interrupt::check()?;
            let row = counts.row(c);
            for f in 0..layout.n_features() {
                let m = concentration[[c, f]];
                let columns = layout.columns(f);
                let total: f64 = columns.clone().map(|j| row[j]).sum();
                // log_smoothed's two logarithms, each taken once where it repeats: the
                // denominator is the distribution's, and an empty cell's numerator
                // ln(m mu) is its neighbour's when their means are equal (a uniform
                // mean: most of a vocabulary); the same numbers as log_smoothed's
                let log_denominator = (total + m).ln();
                let mut empty = (f64::NAN, f64::NAN); // (mean, ln(0 + m mean))
                for j in columns {
                    if let (true, Some((pooled, totals))) = (mean[j] < f64::MIN_POSITIVE, &pooled) {
                        // (0 or subnormal: a pooled share that underflowed, whole or in
                        // most of its digits, or a category no row holds)
                        out[j] = underflowed_mean_log_numerator(row[j], pooled[j], totals[f], m)
                            - log_denominator;
                        continue;
                    }
                    let numerator = if row[j] == 0.0 {
                        if empty.0 != mean[j] {
                            empty = (mean[j], (row[j] + m * mean[j]).ln());
                        }
                        empty.1
                    } else {
                        (row[j] + m * mean[j]).ln()
                    };
                    out[j] = numerator - log_denominator;
                }
            }
            Ok(())
        })?;
    Array2::from_shape_vec((n_classes, width), flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// `ln(n + m mu)` of a cell (count `n`) whose prior mean is 0 or subnormal in the table
/// while its category has a pooled count `t_j` (`pooled`) of the feature's `S`
/// (`feature_total`): the pooled share `t_j / S` of a category seen
/// with almost no weight (a weight 1e-330 times its feature's, or a count forgetting has
/// all but erased) underflowed, to 0 or to a few digits. Its logarithm `ln t_j - ln S` is
/// still a number; without it `ln(0 + m 0)` ruled out every class that had not seen the
/// category while the one that had kept a finite score. A category no row holds (no
/// pooled count) stays at -inf.
fn underflowed_mean_log_numerator(n: f64, pooled: f64, feature_total: f64, m: f64) -> f64 {
    if !(pooled > 0.0 && feature_total > 0.0) {
        return n.ln();
    }
    let log_smoothing = m.ln() + pooled.ln() - feature_total.ln();
    if n > 0.0 {
        // ln(n + e^s), without forming e^s
        let (high, low) = if n.ln() >= log_smoothing {
            (n.ln(), log_smoothing)
        } else {
            (log_smoothing, n.ln())
        };
        high + (low - high).exp().ln_1p()
    } else {
        log_smoothing
    }
}

fn check_table(counts: ArrayView2<f64>, layout: &FeatureLayout, n_classes: usize) -> Result<()> {
    check_len("count table rows (classes)", n_classes, counts.nrows())?;
    check_len(
        "count table columns (categories)",
        layout.n_columns(),
        counts.ncols(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::maximise_evidence;
    use ndarray::array;

    #[test]
    fn pooled_mean_is_the_column_share_and_uniform_is_one_over_k() {
        let counts = array![[1.0, 3.0, 0.0, 2.0], [1.0, 1.0, 0.0, 2.0]];
        let layout = FeatureLayout::from_cardinalities(&[3, 1]);
        let pooled = prior_mean(counts.view(), &layout, PriorMean::PooledMarginal);
        assert_eq!(pooled, vec![2.0 / 6.0, 4.0 / 6.0, 0.0, 1.0]);
        let uniform = prior_mean(counts.view(), &layout, PriorMean::Uniform);
        assert_eq!(uniform, vec![1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0]);
    }

    #[test]
    fn laplace_table_is_add_one() {
        let counts = array![[2.0, 0.0, 1.0]];
        let layout = FeatureLayout::from_cardinalities(&[3]);
        let mean = prior_mean(counts.view(), &layout, PriorMean::Uniform);
        let table =
            log_probability_table(counts.view(), &mean, array![[3.0]].view(), &layout).unwrap();
        let expected = [3.0_f64 / 6.0, 1.0 / 6.0, 2.0 / 6.0];
        for (found, want) in table.iter().zip(expected) {
            assert!((found - want.ln()).abs() < 1e-15);
        }
    }

    #[test]
    fn a_feature_without_categories_has_nothing_to_smooth() {
        // feature 0 never observed (K = 0), feature 1 with two values
        let counts = array![[2.0, 1.0], [0.0, 3.0]];
        let layout = FeatureLayout::from_cardinalities(&[0, 2]);
        let mean = prior_mean(counts.view(), &layout, PriorMean::PooledMarginal);
        let fit = fit_concentrations(
            counts.view(),
            &[3.0, 3.0],
            &mean,
            &layout,
            10.0,
            &SolverSettings::default(),
        )
        .unwrap();
        assert!(fit.concentration[[0, 0]].is_nan() && fit.concentration[[1, 0]].is_nan());
        assert_eq!(fit.concentration[[0, 1]], 2.0); // low-count fallback K_f
        let table =
            log_probability_table(counts.view(), &mean, fit.concentration.view(), &layout).unwrap();
        assert_eq!(table.dim(), (2, 2));
        assert!(table.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn low_count_classes_fall_back_to_k() {
        let counts = array![[3.0, 0.0, 1.0], [30.0, 10.0, 2.0]];
        let layout = FeatureLayout::from_cardinalities(&[3]);
        let mean = prior_mean(counts.view(), &layout, PriorMean::PooledMarginal);
        let fit = fit_concentrations(
            counts.view(),
            &[4.0, 42.0],
            &mean,
            &layout,
            10.0,
            &SolverSettings::default(),
        )
        .unwrap();
        assert_eq!(fit.concentration[[0, 0]], 3.0);
        assert_eq!(fit.n_iter[[0, 0]], 0);
        // the other class is solved
        let terms = evidence_terms(counts.view(), &mean, &layout, 1, 0);
        let solved = maximise_evidence(&terms, &SolverSettings::default());
        assert_eq!(fit.concentration[[1, 0]], solved.concentration);
        assert_ne!(solved.concentration, 3.0);
    }

    /// The closed-form certificate on tables far beyond the small solver's (hundreds of
    /// cells, class totals in the thousands, Zipf-like counts as a long stream gives):
    /// whatever shape it certifies holds on a fine grid of the exact gradient, and the
    /// concentrations equal the general solver's (which runs the pass over every unit
    /// and, where that cannot decide, the bracket search).
    #[test]
    fn the_closed_form_certificate_holds_on_large_tables() {
        let mut state = 17_u64;
        let mut next = move || crate::test_random::uniform(&mut state);
        let settings = SolverSettings::default();
        let mut decided = 0;
        for trial in 0..60 {
            let k = 20 + (next() * 400.0) as usize;
            let skew = 0.3 + 2.0 * next();
            let rows = 200.0 + 5000.0 * next();
            let mut counts = Array2::zeros((2, k));
            for c in 0..2 {
                for v in 0..k {
                    let weight = 1.0 / ((v + 1) as f64).powf(skew);
                    let noise = if trial % 2 == 0 {
                        next()
                    } else {
                        0.5 + 0.5 * next()
                    };
                    counts[(c, v)] = (rows * weight * noise * (1.0 + c as f64 * next())).floor();
                }
            }
            let layout = FeatureLayout::from_cardinalities(&[k]);
            let mean = prior_mean(counts.view(), &layout, PriorMean::PooledMarginal);
            for c in 0..2 {
                let terms = evidence_terms(counts.view(), &mean, &layout, c, 0);
                if terms.is_flat() {
                    continue;
                }
                let row = counts.row(c);
                let cells: Vec<f64> = row.iter().copied().filter(|&n| n > 0.0).collect();
                let means: Vec<f64> = (0..k).filter(|&v| row[v] > 0.0).map(|v| mean[v]).collect();
                let total = [cells.iter().sum::<f64>()];
                let shape = Staircases {
                    counts: &cells,
                    means: &means,
                    totals: &total,
                }
                .gradient_shape();
                let grid: Vec<f64> = (0..=400)
                    .map(|i| terms.scaled_gradient((1e-3_f64.ln() + i as f64 * 0.05).exp()))
                    .collect();
                let changes = grid
                    .windows(2)
                    .filter(|w| (w[0] > 0.0) != (w[1] > 0.0))
                    .count();
                match shape {
                    GradientShape::Rising => assert!(grid.iter().all(|&g| g >= 0.0), "{trial}"),
                    GradientShape::Falling => assert!(grid.iter().all(|&g| g <= 0.0), "{trial}"),
                    GradientShape::AtMostOneChange => assert!(changes <= 1, "{trial}"),
                    GradientShape::Unknown => continue,
                }
                decided += 1;
                let fit = maximise(counts.view(), &mean, &layout, (c, 0), &settings, 1.0);
                let general = maximise_evidence(&terms, &settings);
                let gap = (fit.concentration / general.concentration - 1.0).abs();
                assert!(gap < 1e-6, "{trial}: {fit:?} {general:?}");
                let evidence_gap = (fit.log_evidence - general.log_evidence).abs();
                assert!(evidence_gap <= 1e-9 * general.log_evidence.abs(), "{trial}");
            }
        }
        assert!(
            decided > 60,
            "the certificate decided only {decided} of 120"
        );
    }
}
