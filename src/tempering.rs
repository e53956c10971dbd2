//! The posterior power of Multinomial NB, chosen by its leave-one-out conditional
//! likelihood (an extension of SPEC "Other Naive Bayes variants", docs/math.md
//! "Tempered Multinomial NB").
//!
//! Naive Bayes multiplies one factor per token, as if the tokens of a document were
//! independent draws; they are not (words repeat and come together), so the class
//! posterior is far too confident. The tempered posterior raises the joint probability
//! to a power `tau` (temperature scaling with temperature `1 / tau`), which keeps the
//! model's decisions (the argmax does not move) and calibrates its probabilities:
//!
//! `ln P_tau(c | x) = tau (ln pi_c + sum_v x_v ln theta_{c,v}) - ln Z(x)`.
//!
//! `tau` maximises the leave-one-out conditional log-likelihood of the training labels,
//!
//! `L(tau) = sum_d w_d ln P_tau^{(-d)}(y_d | x_d)`,
//!
//! where the model `(-d)` is the fit without one observation of document d: with
//! `u_d = min(w_d, 1)` (one copy of a row of integer weight, as sample weights count
//! repetitions; all of a lighter row), its counts leave its class's table
//! (`n_{y,v} - u_d x_{d,v}`, `n_y - u_d n_d`), the pooled prior mean
//! (`mu_v = (N_v - u_d x_{d,v}) / (N - u_d n_d)`, when the mean is pooled) and the class
//! frequencies of the prior (when it is learned); the concentrations `m_c` keep their
//! full-data Type-II ML values. Each leave-one-out score is closed form:
//!
//! `s_{d,c} = sum_v x_{d,v} ln((n_{c,v} - [c = y_d] u_d x_{d,v} + m_c mu_v)
//!                             / (n_c - [c = y_d] u_d n_d + m_c))`,
//!
//! O(non-zeros) for a uniform prior mean (only the document's own class changes) and
//! O(non-zeros x C) for the pooled one. `L` is concave in `tau`
//! (`L'' = -sum_d w_d Var_{P_tau}[ln pi_. + s_{d,.}] <= 0`), so a safeguarded Newton iteration in a
//! shrinking bracket (Newton in `ln tau`) finds its maximiser on [`POWER_BOUNDS`].
//!
//! Rows are processed in fixed chunks whose partial sums are added in chunk order, so the
//! result does not depend on the number of threads.

use std::sync::Mutex;

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{check_len, with_capacity, zeroed, HebError, Result};
use crate::interrupt;
use crate::sparse_rows::{Major, SparseMatrix, Values};

/// The interval the posterior power is searched in.
pub const POWER_BOUNDS: (f64, f64) = (1e-3, 1e2);

/// Rows of the sample whose power starts the solve on many rows.
const SAMPLE_ROWS: usize = 1024;

/// The sample's solve stops at this relative step (a start needs no more).
const SAMPLE_TOLERANCE: f64 = 1e-3;

/// Longest per-class table of `ln(k + m_c mu)` (whole counts `k`) the leave-one-out
/// scores read instead of taking logarithms.
const NUMERATOR_TABLE: usize = 1 << 16;

/// The power's solver stops when a step moves it by less than this, relatively (the
/// gradient's rounding moves it by a few 1e-10 on thousands of rows).
const POWER_TOLERANCE: f64 = 1e-8;

/// Rows per parallel task (fixed, so sums do not depend on the thread count).
const ROWS_PER_TASK: usize = 1024;

/// A fitted Multinomial NB as the leave-one-out scores need it.
#[derive(Debug, Clone, Copy)]
pub struct TokenModel<'a> {
    /// `n_{c,v}`, the weighted token counts, shape (C, V).
    pub counts: ArrayView2<'a, f64>,
    /// `m_c`, one per class.
    pub concentration: &'a [f64],
    /// `ln theta_{c,v}` of the full fit, token-major: `(V, C)` row-major, as the
    /// scorer reads it (only used for a uniform prior mean).
    pub log_probability_by_token: &'a [f64],
    /// The prior mean is the pooled token distribution (`heb-m`), else uniform.
    pub pooled_mean: bool,
}

/// `s_{d,c}`: the leave-one-out class log-likelihood of every training row, shape (S, C).
///
/// `classes` and `weights` are the training rows' class indices and weights; `matrix`
/// must be the CSR matrix the counts were made from (or a batch of rows included in
/// them). A token whose leave-one-out prior mean is 0 (heb-m: seen in this document only)
/// is skipped in every class, as the scorer skips a token never counted.
///
/// # Errors
/// A malformed matrix, a CSC matrix, inconsistent shapes, or an output beyond memory.
pub fn leave_one_out_log_likelihood(
    matrix: &SparseMatrix<'_>,
    classes: &[usize],
    weights: &[f64],
    model: &TokenModel<'_>,
) -> Result<Array2<f64>> {
    if matrix.major != Major::Rows {
        return Err(HebError::InvalidParameter(
            "leave-one-out scores read rows: pass a CSR matrix".into(),
        ));
    }
    matrix.check(Values::Counts)?;
    let (n_classes, width) = model.counts.dim();
    check_len("vocabulary of the count table", matrix.n_columns, width)?;
    check_len(
        "log-probability table (vocabulary x classes)",
        width * n_classes,
        model.log_probability_by_token.len(),
    )?;
    check_len(
        "concentrations (one per class)",
        n_classes,
        model.concentration.len(),
    )?;
    check_len("labels (one per row)", matrix.n_rows, classes.len())?;
    check_len("sample weights (one per row)", matrix.n_rows, weights.len())?;
    if let Some(&bad) = classes.iter().find(|&&c| c >= n_classes) {
        return Err(HebError::ClassOutOfRange {
            class: bad as i64,
            n_classes,
        });
    }
    if let Some(&bad) = model
        .concentration
        .iter()
        .find(|m| m.is_nan() || **m <= 0.0)
    {
        return Err(HebError::InvalidParameter(format!(
            "concentrations must be > 0, got {bad}"
        )));
    }
    let class_totals: Vec<f64> = model.counts.rows().into_iter().map(|r| r.sum()).collect();
    let token_totals: Vec<f64> = if model.pooled_mean {
        model
            .counts
            .columns()
            .into_iter()
            .map(|c| c.sum())
            .collect()
    } else {
        Vec::new()
    };
    let grand_total: f64 = token_totals.iter().sum();
    let uniform = 1.0 / width.max(1) as f64;
    let by_token = &model.log_probability_by_token;
    let counts_owned;
    let counts: &[f64] = match model.counts.as_slice() {
        Some(flat) => flat,
        None => {
            counts_owned = model.counts.iter().copied().collect::<Vec<f64>>();
            &counts_owned
        }
    };
    // uniform mean: token-major records of 2C numbers, ln theta_{c,v} then n_{c,v} (what a
    // document's entry reads, side by side in memory), and per class the logarithms
    // ln(k + m_c mu) of the whole counts k a row can leave behind, so that the own
    // class's leave-one-out numerator ln(n_{y,v} - x + m_y mu) is a look-up (the same
    // number) for whole counts and weights
    let record = 2 * n_classes;
    let (records, numerators) = if model.pooled_mean {
        (Vec::new(), Vec::new())
    } else {
        let mut records = zeroed(width * record, "leave-one-out token records")?;
        records
            .par_chunks_mut(record.max(1))
            .enumerate()
            .for_each(|(v, out)| {
                let (theta, count) = out.split_at_mut(n_classes);
                theta.copy_from_slice(&by_token[v * n_classes..(v + 1) * n_classes]);
                for (c, slot) in count.iter_mut().enumerate() {
                    *slot = counts[c * width + v];
                }
            });
        let numerators: Vec<Vec<f64>> = (0..n_classes)
            .into_par_iter()
            .map(|c| {
                let largest = counts[c * width..(c + 1) * width]
                    .iter()
                    .fold(0.0_f64, |a, &n| a.max(n));
                let length = (largest.floor() as usize)
                    .saturating_add(1)
                    .min(NUMERATOR_TABLE);
                let a = model.concentration[c] * uniform;
                (0..length).map(|k| (k as f64 + a).ln()).collect()
            })
            .collect();
        (records, numerators)
    };
    // one row-sized scratch per thread: a row's duplicate entries are summed in it, so a
    // row leaves its whole count of a token whatever the matrix's order or duplicates
    let scratch = (0..rayon::current_num_threads().max(1))
        .map(|_| zeroed(width, "leave-one-out row scratch").map(Mutex::new))
        .collect::<Result<Vec<_>>>()?;
    let mut flat = zeroed(matrix.n_rows * n_classes, "leave-one-out scores")?;
    if n_classes > 0 {
        flat.par_chunks_mut(ROWS_PER_TASK * n_classes)
            .enumerate()
            .for_each(|(chunk, out)| {
                if interrupt::cancelled() {
                    return;
                }
                let slot = rayon::current_thread_index().unwrap_or(0) % scratch.len();
                let mut row_sum = scratch[slot].lock().unwrap_or_else(|e| e.into_inner());
                let mut log_denominator = vec![0.0; n_classes];
                for (r, row_out) in out.chunks_mut(n_classes).enumerate() {
                    let s = chunk * ROWS_PER_TASK + r;
                    // one observation of the row leaves the counts
                    let (own, w) = (classes[s], weights[s].min(1.0));
                    let range = matrix.indptr[s] as usize..matrix.indptr[s + 1] as usize;
                    let mut length = 0.0;
                    for k in range.clone() {
                        row_sum[matrix.indices[k] as usize] += matrix.data[k];
                        length += matrix.data[k];
                    }
                    if !model.pooled_mean {
                        // the other classes' tables do not hold this row: their full-data
                        // log-probabilities are the leave-one-out ones; the own class's
                        // entry is replaced
                        let m = model.concentration[own];
                        let own_denominator = ((class_totals[own] - w * length).max(0.0) + m).ln();
                        let mut change = 0.0;
                        let logs = &numerators[own];
                        for k in range {
                            let v = matrix.indices[k] as usize;
                            let x = std::mem::take(&mut row_sum[v]);
                            if x == 0.0 {
                                continue; // a stored zero, or a duplicate already taken
                            }
                            let entry = &records[v * record..(v + 1) * record];
                            for (slot, &t) in row_out.iter_mut().zip(&entry[..n_classes]) {
                                *slot += x * t;
                            }
                            let own_count = (entry[n_classes + own] - w * x).max(0.0);
                            let whole = own_count as usize;
                            let numerator = if whole < logs.len() && whole as f64 == own_count {
                                logs[whole]
                            } else {
                                (own_count + m * uniform).ln()
                            };
                            change += x * (numerator - entry[own]);
                        }
                        row_out[own] += change - length * own_denominator;
                        continue;
                    }
                    let pooled_rest = grand_total - w * length;
                    for (c, slot) in log_denominator.iter_mut().enumerate() {
                        let left = if c == own { w * length } else { 0.0 };
                        *slot = ((class_totals[c] - left).max(0.0) + model.concentration[c]).ln();
                    }
                    for k in range {
                        let v = matrix.indices[k] as usize;
                        let x = std::mem::take(&mut row_sum[v]);
                        if x == 0.0 {
                            continue;
                        }
                        let own_count = (counts[own * width + v] - w * x).max(0.0);
                        let mean = if pooled_rest > 0.0 {
                            (token_totals[v] - w * x).max(0.0) / pooled_rest
                        } else {
                            uniform
                        };
                        if mean == 0.0 {
                            continue;
                        }
                        for (c, slot) in row_out.iter_mut().enumerate() {
                            let count = if c == own {
                                own_count
                            } else {
                                counts[c * width + v]
                            };
                            let m = model.concentration[c];
                            *slot += x * ((count + m * mean).ln() - log_denominator[c]);
                        }
                    }
                }
            });
    }
    interrupt::check()?;
    Array2::from_shape_vec((matrix.n_rows, n_classes), flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// The class prior of the leave-one-out models.
#[derive(Debug, Clone, Copy)]
pub enum LeaveOneOutPrior<'a> {
    /// The class frequencies `N_c / S` (scikit-learn's prior); one observation of row d
    /// leaves its class: `(N_c - [c = y_d] u_d) / (S - u_d)`, `u_d = min(w_d, 1)`.
    /// Holds the `N_c`.
    Frequencies(&'a [f64]),
    /// A prior that does not depend on the rows (uniform or the user's): `ln pi_c`.
    Fixed(&'a [f64]),
}

/// The fitted posterior power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosteriorPower {
    /// `tau`, the maximiser of `L` on [`POWER_BOUNDS`].
    pub power: f64,
    /// `-L(tau) / sum_d w_d` over the rows that enter `L`: the leave-one-out log-loss.
    pub log_loss: f64,
    /// Newton / bisection steps taken on all the rows (after the start a sample of
    /// them gives on many rows).
    pub n_iter: usize,
}

/// The rows that enter `L`, each as its leave-one-out joint log-likelihoods
/// `r_{d,c} = ln pi_c^{(-d)} + s_{d,c}` shifted by their maximum (so the largest is 0), with
/// its class and weight: computed once, so that each step of the power's solver costs one
/// exponential per (row, class).
#[derive(Debug, Clone, Default)]
pub struct LeaveOneOutRows {
    /// `r_{d,c} - max_c r_{d,c}`, row-major `(rows, C)`; `-inf` where the prior excludes c.
    shifted_joint: Vec<f64>,
    /// The class of each row.
    classes: Vec<usize>,
    /// The weight of each row (all positive).
    weights: Vec<f64>,
    /// C.
    n_classes: usize,
}

impl LeaveOneOutRows {
    /// The rows of `scores` (`s_{d,c}`, shape (S, C)) under `prior` that carry
    /// information about `tau`: rows of positive weight whose own class the
    /// leave-one-out prior allows (the only row of its class, say, does not enter `L`).
    ///
    /// # Errors
    /// Inconsistent shapes, class indices out of range, non-finite scores, or rows
    /// beyond memory.
    pub fn new(
        scores: ArrayView2<'_, f64>,
        classes: &[usize],
        weights: &[f64],
        prior: &LeaveOneOutPrior<'_>,
    ) -> Result<Self> {
        let n_classes = scores.ncols();
        check_len("labels (one per row)", scores.nrows(), classes.len())?;
        check_len(
            "sample weights (one per row)",
            scores.nrows(),
            weights.len(),
        )?;
        let prior_len = match prior {
            LeaveOneOutPrior::Frequencies(p) | LeaveOneOutPrior::Fixed(p) => p.len(),
        };
        check_len("class prior (one per class)", n_classes, prior_len)?;
        if let Some(&bad) = classes.iter().find(|&&c| c >= n_classes) {
            return Err(HebError::ClassOutOfRange {
                class: bad as i64,
                n_classes,
            });
        }
        if scores.iter().any(|s| !s.is_finite()) {
            return Err(HebError::InvalidParameter(
                "leave-one-out scores must be finite".into(),
            ));
        }
        let total_weight: f64 = match prior {
            LeaveOneOutPrior::Frequencies(counts) => counts.iter().sum(),
            LeaveOneOutPrior::Fixed(_) => 0.0,
        };
        // ln N_c once: a row's own class alone changes its prior
        let log_counts: Vec<f64> = match prior {
            LeaveOneOutPrior::Frequencies(counts) => counts
                .iter()
                .map(|&n| if n > 0.0 { n.ln() } else { f64::NEG_INFINITY })
                .collect(),
            LeaveOneOutPrior::Fixed(log_prior) => log_prior.to_vec(),
        };
        let mut rows = Self {
            shifted_joint: with_capacity(scores.len(), "leave-one-out rows")?,
            classes: Vec::new(),
            weights: Vec::new(),
            n_classes,
        };
        let mut joint = vec![0.0; n_classes];
        for (s, row) in scores.rows().into_iter().enumerate() {
            let (own, w) = (classes[s], weights[s]);
            if w <= 0.0 {
                continue;
            }
            let unit = w.min(1.0);
            let log_rest = (total_weight - unit).ln();
            for (c, slot) in joint.iter_mut().enumerate() {
                let log_prior = match prior {
                    LeaveOneOutPrior::Frequencies(counts) => {
                        let rest = total_weight - unit;
                        if c != own {
                            if rest > 0.0 && counts[c] > 0.0 {
                                log_counts[c] - log_rest
                            } else {
                                f64::NEG_INFINITY
                            }
                        } else {
                            let count = counts[c] - unit;
                            if rest > 0.0 && count > 0.0 {
                                count.ln() - log_rest
                            } else {
                                f64::NEG_INFINITY
                            }
                        }
                    }
                    LeaveOneOutPrior::Fixed(_) => log_counts[c],
                };
                *slot = log_prior + row[c];
            }
            if !joint[own].is_finite() {
                // no leave-one-out model can predict this row's class (it is the only
                // row of its class, or the prior excludes it): L does not depend on tau
                // through it
                continue;
            }
            let top = joint.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            rows.shifted_joint.extend(joint.iter().map(|r| r - top));
            rows.classes.push(own);
            rows.weights.push(w);
        }
        Ok(rows)
    }

    /// The rows as they were computed: `r_{d,c} - max_c r_{d,c}` (rows x C, row-major),
    /// the class and the weight of each row.
    pub fn parts(&self) -> (&[f64], &[usize], &[f64]) {
        (&self.shifted_joint, &self.classes, &self.weights)
    }

    /// Rows from their [`Self::parts`] (kept by a stream of batches, or sent by the
    /// partitions of a distributed fit).
    ///
    /// # Errors
    /// Lengths that disagree, a class out of range, a weight that is not positive and
    /// finite, or a shifted joint log-likelihood that is NaN or positive.
    pub fn from_parts(
        shifted_joint: Vec<f64>,
        classes: Vec<usize>,
        weights: Vec<f64>,
        n_classes: usize,
    ) -> Result<Self> {
        check_len("row weights (one per row)", classes.len(), weights.len())?;
        check_len(
            "shifted joint log-likelihoods (rows x classes)",
            classes.len() * n_classes,
            shifted_joint.len(),
        )?;
        if let Some(&bad) = classes.iter().find(|&&c| c >= n_classes) {
            return Err(HebError::ClassOutOfRange {
                class: bad as i64,
                n_classes,
            });
        }
        if weights.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
            return Err(HebError::InvalidParameter(
                "leave-one-out row weights must be positive and finite".into(),
            ));
        }
        if shifted_joint.iter().any(|r| r.is_nan() || *r > 0.0) {
            return Err(HebError::InvalidParameter(
                "shifted joint log-likelihoods must be <= 0 (their row's maximum is 0)".into(),
            ));
        }
        Ok(Self {
            shifted_joint,
            classes,
            weights,
            n_classes,
        })
    }

    /// Number of rows that enter `L`.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// Whether no row enters `L`.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// `L(tau)`, `L'(tau)`, `-L''(tau)` and the weight of the rows, summed over fixed
    /// chunks of rows in chunk order (the same sums on every thread count).
    fn objective(&self, power: f64) -> (f64, f64, f64, f64) {
        let n_classes = self.n_classes;
        let n_rows = self.len();
        let n_chunks = n_rows.div_ceil(ROWS_PER_TASK);
        let partial: Vec<[f64; 4]> = (0..n_chunks)
            .into_par_iter()
            .map(|chunk| {
                let mut acc = [0.0; 4];
                let end = ((chunk + 1) * ROWS_PER_TASK).min(n_rows);
                for s in chunk * ROWS_PER_TASK..end {
                    let (own, w) = (self.classes[s], self.weights[s]);
                    let joint = &self.shifted_joint[s * n_classes..(s + 1) * n_classes];
                    let mut norm = 0.0;
                    let mut mean = 0.0;
                    let mut second = 0.0;
                    for &r in joint {
                        if r == f64::NEG_INFINITY {
                            continue;
                        }
                        let p = (power * r).exp();
                        norm += p;
                        mean += p * r;
                        second += p * r * r;
                    }
                    mean /= norm;
                    let variance = (second / norm - mean * mean).max(0.0);
                    acc[0] += w * (power * joint[own] - norm.ln());
                    acc[1] += w * (joint[own] - mean);
                    acc[2] += w * variance;
                    acc[3] += w;
                }
                acc
            })
            .collect();
        partial.iter().fold((0.0, 0.0, 0.0, 0.0), |a, p| {
            (a.0 + p[0], a.1 + p[1], a.2 + p[2], a.3 + p[3])
        })
    }

    /// The posterior power `tau` that maximises `L(tau)` over these rows: Newton steps in
    /// `u = ln tau` (`dL/du = tau L'`, `d2L/du2 = tau L' + tau^2 L''`; a power is a scale,
    /// and in `ln tau` the steps from 1 to the small powers of text data take half as
    /// many evaluations), safeguarded by a bracket on the sign of `L'` that shrinks every
    /// step, on [`POWER_BOUNDS`] (`L` is concave in `tau`, so the sign of `L'` brackets the
    /// maximiser). When no row carries information `L` is flat and `tau = 1`, the
    /// untempered model.
    pub fn fit(&self) -> PosteriorPower {
        // on many rows, a first solve on an evenly spaced sample of them gives the start:
        // the steps from 1 to the power of the data cost a fraction of a pass each, and
        // the solve on all rows needs only its last few steps
        let start = if self.len() >= 4 * SAMPLE_ROWS {
            self.every(self.len() / SAMPLE_ROWS)
                .solve_from(1.0, SAMPLE_TOLERANCE)
                .power
        } else {
            1.0
        };
        self.solve_from(start, POWER_TOLERANCE)
    }

    /// Every `stride`-th row.
    fn every(&self, stride: usize) -> Self {
        let n = self.n_classes;
        let picked = (0..self.len()).step_by(stride.max(1));
        Self {
            shifted_joint: picked
                .clone()
                .flat_map(|s| self.shifted_joint[s * n..(s + 1) * n].iter().copied())
                .collect(),
            classes: picked.clone().map(|s| self.classes[s]).collect(),
            weights: picked.map(|s| self.weights[s]).collect(),
            n_classes: n,
        }
    }

    /// The safeguarded Newton iteration of [`Self::fit`] from `start`, stopping when a
    /// step would move the power by less than `tolerance` relatively (the power then
    /// stays where `L` was last evaluated).
    fn solve_from(&self, start: f64, tolerance: f64) -> PosteriorPower {
        let (mut low, mut high) = POWER_BOUNDS;
        let mut power = start.clamp(low, high);
        let mut n_iter = 0;
        let mut evaluated = None;
        for _ in 0..200 {
            n_iter += 1;
            let (value, slope, curvature, weight) = self.objective(power);
            evaluated = Some((value, weight));
            if slope == 0.0 {
                break;
            }
            if slope > 0.0 {
                low = power;
            } else {
                high = power;
            }
            let first = power * slope;
            let second = first - power * power * curvature;
            let newton = if second < 0.0 {
                power * (-first / second).exp()
            } else {
                f64::NAN
            };
            let next = if newton > low && newton < high {
                newton
            } else {
                (low * high).sqrt()
            };
            if (next - power).abs() <= tolerance * power || high <= low * (1.0 + 1e-12) {
                break;
            }
            power = next;
            evaluated = None;
        }
        let (value, weight) = match evaluated {
            Some(known) => known,
            None => {
                let (value, _, _, weight) = self.objective(power);
                (value, weight)
            }
        };
        PosteriorPower {
            power,
            log_loss: if weight > 0.0 {
                -value / weight
            } else {
                f64::NAN
            },
            n_iter,
        }
    }
}

/// The posterior power `tau` that maximises the leave-one-out conditional
/// log-likelihood `L(tau)` of the training labels, given the leave-one-out scores of
/// [`leave_one_out_log_likelihood`] ([`LeaveOneOutRows::new`], then
/// [`LeaveOneOutRows::fit`]).
///
/// When no row carries information (one class, all scores equal, no weight) `L` is flat
/// and `tau = 1`, the untempered model.
///
/// # Errors
/// Inconsistent shapes, class indices out of range, or non-finite scores.
pub fn fit_posterior_power(
    scores: ArrayView2<'_, f64>,
    classes: &[usize],
    weights: &[f64],
    prior: &LeaveOneOutPrior<'_>,
) -> Result<PosteriorPower> {
    Ok(LeaveOneOutRows::new(scores, classes, weights, prior)?.fit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Brute-force leave-one-out score: refit the class table without the row.
    fn refit_score(
        dense: &[Vec<f64>],
        classes: &[usize],
        weights: &[f64],
        m: &[f64],
        pooled: bool,
        d: usize,
        c: usize,
    ) -> f64 {
        let width = dense[0].len();
        let mut table = vec![0.0; width];
        let mut pool = vec![0.0; width];
        for (s, row) in dense.iter().enumerate() {
            // one observation of row d (all of it when it weighs less) is left out
            let weight = if s == d {
                weights[s] - weights[s].min(1.0)
            } else {
                weights[s]
            };
            for v in 0..width {
                pool[v] += weight * row[v];
                if classes[s] == c {
                    table[v] += weight * row[v];
                }
            }
        }
        let pool_total: f64 = pool.iter().sum();
        let total: f64 = table.iter().sum();
        let mut score = 0.0;
        for v in 0..width {
            let x = dense[d][v];
            if x == 0.0 {
                continue;
            }
            let mean = if pooled {
                pool[v] / pool_total
            } else {
                1.0 / width as f64
            };
            if mean == 0.0 {
                continue;
            }
            score += x * ((table[v] + m[c] * mean) / (total + m[c])).ln();
        }
        score
    }

    #[test]
    fn leave_one_out_scores_equal_a_refit_without_the_row() {
        let dense = vec![
            vec![1.0, 0.0, 2.0, 0.0],
            vec![0.0, 3.0, 1.0, 0.0],
            vec![2.0, 0.0, 0.0, 1.0],
            vec![0.0, 1.0, 1.0, 0.0],
            vec![1.0, 1.0, 0.0, 0.0],
        ];
        let classes = [0, 1, 0, 1, 1];
        let weights = [1.0, 2.0, 0.5, 1.0, 3.0];
        let m = [3.0, 0.7];
        let (mut indptr, mut indices, mut data) = (vec![0i64], vec![], vec![]);
        for row in &dense {
            for (v, &x) in row.iter().enumerate() {
                if x != 0.0 {
                    indices.push(v as i32);
                    data.push(x);
                }
            }
            indptr.push(data.len() as i64);
        }
        let matrix = SparseMatrix {
            indptr: &indptr,
            indices: &indices,
            data: &data,
            n_rows: 5,
            n_columns: 4,
            major: Major::Rows,
        };
        let mut counts = Array2::<f64>::zeros((2, 4));
        for (s, row) in dense.iter().enumerate() {
            for v in 0..4 {
                counts[[classes[s], v]] += weights[s] * row[v];
            }
        }
        for pooled in [false, true] {
            let pool: Vec<f64> = (0..4).map(|v| counts.column(v).sum()).collect();
            let total: f64 = pool.iter().sum();
            let log_probability = Array2::from_shape_fn((2, 4), |(c, v)| {
                let mean = if pooled { pool[v] / total } else { 0.25 };
                ((counts[[c, v]] + m[c] * mean) / (counts.row(c).sum() + m[c])).ln()
            });
            let by_token: Vec<f64> = log_probability.t().iter().copied().collect();
            let model = TokenModel {
                counts: counts.view(),
                concentration: &m,
                log_probability_by_token: &by_token,
                pooled_mean: pooled,
            };
            let scores = leave_one_out_log_likelihood(&matrix, &classes, &weights, &model).unwrap();
            for d in 0..5 {
                for c in 0..2 {
                    let expected = refit_score(&dense, &classes, &weights, &m, pooled, d, c);
                    assert!(
                        (scores[[d, c]] - expected).abs() < 1e-12,
                        "pooled={pooled} row {d} class {c}: {} vs {expected}",
                        scores[[d, c]]
                    );
                }
            }
        }
    }

    #[test]
    fn the_power_maximises_the_leave_one_out_likelihood() {
        let scores = array![
            [-1.0, -4.0],
            [-3.0, -1.5],
            [-2.0, -2.5],
            [-5.0, -1.0],
            [-1.0, -1.2]
        ];
        let classes = [0, 1, 1, 1, 0];
        let weights = [1.0, 1.0, 2.0, 1.0, 1.0];
        let log_prior = [0.4f64.ln(), 0.6f64.ln()];
        let prior = LeaveOneOutPrior::Fixed(&log_prior);
        let fit = fit_posterior_power(scores.view(), &classes, &weights, &prior).unwrap();
        let rows = LeaveOneOutRows::new(scores.view(), &classes, &weights, &prior).unwrap();
        let value = |t: f64| rows.objective(t).0;
        let best = value(fit.power);
        for t in [0.5, 0.9, 0.99, 1.01, 1.1, 2.0].map(|f| f * fit.power) {
            assert!(value(t) <= best + 1e-12, "L({t}) > L({})", fit.power);
        }
        assert!((fit.log_loss + best / 6.0).abs() < 1e-12);
    }

    #[test]
    fn a_flat_objective_keeps_the_untempered_model() {
        let scores = array![[-1.0, -1.0], [-2.0, -2.0]];
        let counts = [1.0, 1.0];
        let prior = LeaveOneOutPrior::Frequencies(&counts);
        let fit = fit_posterior_power(scores.view(), &[0, 1], &[1.0, 1.0], &prior).unwrap();
        assert_eq!(fit.power, 1.0);
    }
}
