//! The empirical-Bayes Dirichlet group classifier (SPEC "Empirical-Bayes Dirichlet group
//! classifier", after the bayesianbandits documentation of its
//! `EmpiricalBayesDirichletClassifier`).
//!
//! Groups g (the values of one grouping feature) each hold a Dirichlet posterior over the
//! K classes, `alpha_g = alpha + c_g`, where `c_{gk}` is the (weighted, possibly decayed)
//! count of class k in group g and `alpha = s m` a prior shared by every group. The prior
//! maximises the Dirichlet-multinomial evidence of the groups' counts,
//!
//! ```text
//! ln p(c | alpha) = sum_g [ ln Γ(s) - ln Γ(c_g + s) + sum_k ( ln Γ(c_gk + alpha_k) - ln Γ(alpha_k) ) ]
//! ```
//!
//! by Minka's alternating fixed point ("Estimating a Dirichlet distribution", 2000/2012):
//!
//! ```text
//! m step:  alpha_k <- alpha_k * sum_g [ψ(c_gk + alpha_k) - ψ(alpha_k)] / sum_g [ψ(c_g + s) - ψ(s)],
//!          m = alpha / sum(alpha)
//! s step:  s <- s * sum_g sum_k m_k [ψ(c_gk + s m_k) - ψ(s m_k)] / sum_g [ψ(c_g + s) - ψ(s)],
//!          alpha = s m
//! ```
//!
//! Each step is a lower-bound maximisation, so the evidence never decreases. Only groups
//! with a positive total take part (the others contribute nothing), and every digamma
//! difference goes through [`digamma_difference`], exact for small whole counts and free of
//! cancellation for fractional ones (forgetting makes counts fractional).
//!
//! The classifier keeps the counts `c_g` rather than the posteriors: a change of prior then
//! moves every posterior by the prior change for free (what bayesianbandits does by adding
//! `alpha_new - alpha_old` to each group), and the stabilized-forgetting invariant
//! `alpha_g - alpha = gamma^n c_g` holds by construction.
//!
//! Forgetting inside a batch ([`absorb_rows`]) follows the bayesianbandits convention: every
//! row of group g decays that group's earlier counts by `gamma`, so a group's counts are
//! multiplied by `gamma^{n_g}` (n_g its rows in the batch) and the row of rank r among them
//! enters with weight `w gamma^{n_g - 1 - r}`. Groups without rows in the batch keep their
//! counts (time-based forgetting of every group is the caller's `decay`).
//!
//! Sums over groups run in fixed chunks reduced in chunk order, so the results do not
//! depend on the number of threads.

use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::counts::class_indices;
use crate::error::{check_len, filled, with_capacity, HebError, Result};
use crate::gamma_differences::{digamma_difference, ln_gamma_difference};
use crate::interrupt;

/// Floor of every prior concentration after a step (as bayesianbandits: keeps alpha > 0).
pub const MIN_CONCENTRATION: f64 = 1e-8;

/// A denominator `sum_g [ψ(c_g + s) - ψ(s)]` below this means there is no data to learn
/// from: the iteration stops and reports convergence.
const MIN_DENOMINATOR: f64 = 1e-8;

/// Groups per parallel task (fixed, so the reduction order is fixed).
const GROUP_CHUNK: usize = 1024;

/// The outcome of [`fit_dirichlet_prior`].
#[derive(Debug, Clone, PartialEq)]
pub struct PriorFit {
    /// The prior concentrations `alpha_k` after the last step.
    pub prior: Vec<f64>,
    /// The log evidence at `prior` (0 when no group has data, `-inf` when there are no groups).
    pub log_evidence: f64,
    /// Number of (m, s) steps taken.
    pub n_iter: usize,
    /// Whether the evidence changed by less than the tolerance (or there was nothing to fit).
    pub converged: bool,
}

fn check_counts(counts: ArrayView2<f64>, n_classes: usize) -> Result<()> {
    check_len("classes in the group counts", n_classes, counts.ncols())?;
    if counts.iter().any(|&c| !(c >= 0.0 && c.is_finite())) {
        return Err(HebError::InvalidParameter(
            "group counts must be finite and non-negative".into(),
        ));
    }
    Ok(())
}

fn check_prior(prior: &[f64]) -> Result<()> {
    if prior.is_empty() || prior.iter().any(|&a| !(a > 0.0 && a.is_finite())) {
        return Err(HebError::InvalidParameter(
            "prior concentrations must be positive and finite".into(),
        ));
    }
    Ok(())
}

/// The groups with a positive total, as (row index, total).
fn groups_with_data(counts: ArrayView2<f64>) -> Result<Vec<(usize, f64)>> {
    let mut groups = with_capacity(counts.nrows(), "groups with data")?;
    for (g, row) in counts.rows().into_iter().enumerate() {
        interrupt::check_every(g)?;
        let total: f64 = row.sum();
        if total > 0.0 {
            groups.push((g, total));
        }
    }
    Ok(groups)
}

/// `sum over chunks of per_group(g, total)` where each call yields a vector of `width`
/// partial sums; chunks are reduced in order.
fn sum_over_groups(
    groups: &[(usize, f64)],
    width: usize,
    per_group: impl Fn(usize, f64, &mut [f64]) + Sync,
) -> Result<Vec<f64>> {
    let partials: Vec<Vec<f64>> = groups
        .par_chunks(GROUP_CHUNK)
        .map(|chunk| {
            interrupt::check()?;
            let mut sums = vec![0.0; width];
            for &(g, total) in chunk {
                per_group(g, total, &mut sums);
            }
            Ok(sums)
        })
        .collect::<Result<_>>()?;
    let mut total = vec![0.0; width];
    for partial in partials {
        for (t, p) in total.iter_mut().zip(partial) {
            *t += p;
        }
    }
    Ok(total)
}

/// The Dirichlet-multinomial log evidence of the groups' counts under `prior`.
fn log_evidence(counts: ArrayView2<f64>, groups: &[(usize, f64)], prior: &[f64]) -> Result<f64> {
    let s: f64 = prior.iter().sum();
    Ok(sum_over_groups(groups, 1, |g, total, out| {
        let row = counts.row(g);
        let cells: f64 = row
            .iter()
            .zip(prior)
            .map(|(&c, &a)| ln_gamma_difference(a, c))
            .sum();
        out[0] += cells - ln_gamma_difference(s, total);
    })?[0])
}

/// Runs up to `max_iter` (m, s) steps of Minka's fixed point from `prior` on fixed counts
/// `(G, K)`, stopping early once the log evidence changes by less than `tol` between steps
/// (`tol = 0` always runs `max_iter` steps).
///
/// # Errors
/// [`HebError::ShapeMismatch`] when the counts do not have one column per prior entry,
/// [`HebError::InvalidParameter`] for negative or non-finite counts or a non-positive prior.
pub fn fit_dirichlet_prior(
    counts: ArrayView2<f64>,
    prior: &[f64],
    max_iter: usize,
    tol: f64,
) -> Result<PriorFit> {
    check_prior(prior)?;
    check_counts(counts, prior.len())?;
    if tol.is_nan() || tol < 0.0 {
        return Err(HebError::InvalidParameter(format!(
            "the evidence tolerance must be >= 0, got {tol}"
        )));
    }
    let n_classes = prior.len();
    let groups = groups_with_data(counts)?;
    let mut alpha = prior.to_vec();
    if groups.is_empty() {
        let log_evidence = if counts.nrows() == 0 {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        return Ok(PriorFit {
            prior: alpha,
            log_evidence,
            n_iter: 0,
            converged: true,
        });
    }
    let mut previous = f64::NEG_INFINITY;
    let mut converged = false;
    let mut n_iter = 0;
    for _ in 0..max_iter {
        let s: f64 = alpha.iter().sum();
        // m step: numerators per class and the shared denominator in one pass.
        let sums = sum_over_groups(&groups, n_classes + 1, |g, total, out| {
            for (k, (&c, &a)) in counts.row(g).iter().zip(&alpha).enumerate() {
                out[k] += digamma_difference(a, c);
            }
            out[n_classes] += digamma_difference(s, total);
        })?;
        let denominator = sums[n_classes];
        if denominator.abs() < MIN_DENOMINATOR {
            converged = true;
            break;
        }
        for (a, numerator) in alpha.iter_mut().zip(&sums) {
            *a = (*a * numerator / denominator).max(MIN_CONCENTRATION);
        }
        let shape_total: f64 = alpha.iter().sum();
        let mean: Vec<f64> = alpha.iter().map(|a| a / shape_total).collect();
        // s step at the new mean, from the old s (the denominator is unchanged).
        let scaled: Vec<f64> = mean.iter().map(|m| s * m).collect();
        let numerator = sum_over_groups(&groups, 1, |g, _, out| {
            for ((&c, &a), &m) in counts.row(g).iter().zip(&scaled).zip(&mean) {
                out[0] += m * digamma_difference(a, c);
            }
        })?[0];
        let s_new = (s * numerator / denominator).max(MIN_CONCENTRATION);
        for (a, m) in alpha.iter_mut().zip(&mean) {
            *a = (s_new * m).max(MIN_CONCENTRATION);
        }
        n_iter += 1;
        if tol > 0.0 {
            let evidence = log_evidence(counts, &groups, &alpha)?;
            let change = (evidence - previous).abs();
            previous = evidence;
            if change < tol {
                converged = true;
                break;
            }
        }
    }
    Ok(PriorFit {
        log_evidence: log_evidence(counts, &groups, &alpha)?,
        prior: alpha,
        n_iter,
        converged,
    })
}

/// Adds a batch of rows to the group counts `(G, K)` with per-group forgetting at rate
/// `learning_rate` (module docs): returns the new counts.
///
/// `groups` are group indices `0..G`, `labels` class indices `0..K`, `weights` one
/// non-negative weight per row. Rows are taken in order.
///
/// # Errors
/// Shape mismatches, indices out of range, a rate outside (0, 1], or invalid counts.
pub fn absorb_rows(
    counts: ArrayView2<f64>,
    groups: ArrayView1<i64>,
    labels: ArrayView1<i64>,
    weights: ArrayView1<f64>,
    learning_rate: f64,
) -> Result<Array2<f64>> {
    let (n_groups, n_classes) = counts.dim();
    check_counts(counts, n_classes)?;
    if !(learning_rate > 0.0 && learning_rate <= 1.0) {
        return Err(HebError::InvalidParameter(format!(
            "learning_rate must be in (0, 1], got {learning_rate}"
        )));
    }
    let n_rows = groups.len();
    for (what, found) in [("labels", labels.len()), ("sample weights", weights.len())] {
        check_len(what, n_rows, found)?;
    }
    let classes = class_indices(labels, n_classes)?;
    let group_index = class_indices(groups, n_groups)
        .map_err(|_| HebError::InvalidParameter(format!("group index outside 0..{n_groups}")))?;
    let mut out = Array2::from_shape_vec(
        (n_groups, n_classes),
        filled(n_groups * n_classes, 0.0, "group counts")?,
    )
    .map_err(|e| HebError::InvalidParameter(e.to_string()))?;
    out.assign(&counts);
    if learning_rate == 1.0 {
        for (s, ((&g, &k), &w)) in group_index
            .iter()
            .zip(&classes)
            .zip(weights.iter())
            .enumerate()
        {
            interrupt::check_every(s)?;
            out[[g, k]] += w;
        }
        return Ok(out);
    }
    let mut rows_in_batch = filled(n_groups, 0_i32, "rows per group")?;
    for &g in &group_index {
        rows_in_batch[g] += 1;
    }
    for (g, &n) in rows_in_batch.iter().enumerate() {
        if n > 0 {
            let decay = learning_rate.powi(n);
            out.row_mut(g).mapv_inplace(|c| c * decay);
        }
    }
    let mut rank = filled(n_groups, 0_i32, "rows per group")?;
    for (s, ((&g, &k), &w)) in group_index
        .iter()
        .zip(&classes)
        .zip(weights.iter())
        .enumerate()
    {
        interrupt::check_every(s)?;
        rank[g] += 1;
        out[[g, k]] += w * learning_rate.powi(rows_in_batch[g] - rank[g]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use statrs::function::gamma::{digamma, ln_gamma};

    /// One (m, s) step written straight from the module formulas with statrs.
    fn direct_step(counts: &Array2<f64>, alpha: &[f64]) -> Vec<f64> {
        let s: f64 = alpha.iter().sum();
        let totals: Vec<f64> = counts.rows().into_iter().map(|r| r.sum()).collect();
        let den: f64 = totals.iter().map(|&t| digamma(t + s) - digamma(s)).sum();
        let stepped: Vec<f64> = (0..alpha.len())
            .map(|k| {
                let num: f64 = counts
                    .column(k)
                    .iter()
                    .map(|&c| digamma(c + alpha[k]) - digamma(alpha[k]))
                    .sum();
                alpha[k] * num / den
            })
            .collect();
        let m: Vec<f64> = stepped
            .iter()
            .map(|a| a / stepped.iter().sum::<f64>())
            .collect();
        let num: f64 = counts
            .rows()
            .into_iter()
            .map(|r| {
                r.iter()
                    .zip(&m)
                    .map(|(&c, &mk)| mk * (digamma(c + s * mk) - digamma(s * mk)))
                    .sum::<f64>()
            })
            .sum();
        let s_new = s * num / den;
        m.iter().map(|mk| s_new * mk).collect()
    }

    fn direct_evidence(counts: &Array2<f64>, alpha: &[f64]) -> f64 {
        let s: f64 = alpha.iter().sum();
        counts
            .rows()
            .into_iter()
            .map(|r| {
                let cells: f64 = r
                    .iter()
                    .zip(alpha)
                    .map(|(&c, &a)| ln_gamma(c + a) - ln_gamma(a))
                    .sum();
                ln_gamma(s) - ln_gamma(r.sum() + s) + cells
            })
            .sum()
    }

    #[test]
    fn one_step_matches_the_direct_formulas() {
        let counts = array![[3.0, 1.0, 0.0], [0.5, 2.25, 4.0], [7.0, 0.0, 1.0]];
        let prior = [1.0, 0.5, 2.0];
        let fit = fit_dirichlet_prior(counts.view(), &prior, 1, 0.0).unwrap();
        let expected = direct_step(&counts, &prior);
        for (a, b) in fit.prior.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-12 * b, "{a} vs {b}");
        }
        let ev = direct_evidence(&counts, &fit.prior);
        assert!((fit.log_evidence - ev).abs() < 1e-11 * ev.abs());
        assert_eq!(fit.n_iter, 1);
        assert!(!fit.converged);
    }

    #[test]
    fn evidence_never_decreases_and_iteration_stops_at_tolerance() {
        let counts = array![[9.0, 1.0], [8.0, 3.0], [10.0, 0.0], [6.0, 5.0], [2.0, 1.0]];
        let mut alpha = vec![1.0, 5.0];
        let mut previous = direct_evidence(&counts, &alpha);
        for _ in 0..20 {
            let fit = fit_dirichlet_prior(counts.view(), &alpha, 1, 0.0).unwrap();
            assert!(fit.log_evidence >= previous - 1e-12);
            previous = fit.log_evidence;
            alpha = fit.prior;
        }
        let fit = fit_dirichlet_prior(counts.view(), &[1.0, 5.0], 500, 1e-4).unwrap();
        assert!(fit.converged && fit.n_iter < 500 && fit.n_iter > 1);
    }

    #[test]
    fn groups_without_data_are_ignored() {
        let with_empty = array![[3.0, 1.0], [0.0, 0.0], [1.0, 4.0]];
        let without = array![[3.0, 1.0], [1.0, 4.0]];
        let a = fit_dirichlet_prior(with_empty.view(), &[1.0, 1.0], 3, 0.0).unwrap();
        let b = fit_dirichlet_prior(without.view(), &[1.0, 1.0], 3, 0.0).unwrap();
        assert_eq!(a, b);
        let none = fit_dirichlet_prior(array![[0.0, 0.0]].view(), &[1.0, 2.0], 3, 0.0).unwrap();
        assert_eq!(
            (none.prior, none.n_iter, none.converged),
            (vec![1.0, 2.0], 0, true)
        );
    }

    #[test]
    fn rows_decay_their_own_group_only() {
        let counts = array![[1.0, 0.0], [0.0, 2.0]];
        let gamma: f64 = 0.5;
        // group 0 gets rows (class 1, w 1) then (class 0, w 2); group 1 gets nothing
        let out = absorb_rows(
            counts.view(),
            array![0_i64, 0].view(),
            array![1_i64, 0].view(),
            array![1.0, 2.0].view(),
            gamma,
        )
        .unwrap();
        let expected = array![[1.0 * gamma * gamma + 2.0, gamma], [0.0, 2.0]];
        assert_eq!(out, expected);
        let bad = absorb_rows(
            counts.view(),
            array![2_i64].view(),
            array![0_i64].view(),
            array![1.0].view(),
            gamma,
        );
        assert!(bad.is_err());
    }
}
