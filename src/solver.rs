//! Type-II maximum likelihood for the concentration (SPEC eq. 5-6, Algorithm 1):
//! `m_hat = argmax over [m_min, m_max] of l(m)`.
//!
//! Minka's fixed point (eq. 6) needs hundreds of steps when the optimum is large. Here
//! the stationarity condition `l'(m) = 0` is solved by Newton's method in `t = ln m`
//! (using the trigamma curvature), safeguarded by a bracket that always holds a sign
//! change of `l'`: a Newton step that leaves the bracket or points uphill on the wrong
//! side is replaced by bisection in `t`. The endpoints are tested first: `l' <= 0` at
//! `m_min` means the maximiser is `m_min` (the vertex case: one value only), `l' >= 0` at
//! `m_max` means the evidence keeps rising (no over-dispersion) and the answer is `m_max`.
//! This assumes `l` is unimodal on the interval, as it is for the Dirichlet-multinomial
//! evidence with a fixed mean in every case we have met.

use crate::error::{HebError, Result};
use crate::evidence::EvidenceTerms;

/// Bounds and stopping rule of the solver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverSettings {
    /// Lower clamp `m_min` (SPEC default 1e-2).
    pub min_concentration: f64,
    /// Upper clamp `m_max` (SPEC default 1e4).
    pub max_concentration: f64,
    /// Convergence when a step in `ln m` is below this.
    pub log_tolerance: f64,
    /// Step budget; running out is reported as `converged = false`.
    pub max_iter: usize,
}

impl SolverSettings {
    /// Checked settings.
    ///
    /// # Errors
    /// [`HebError::InvalidParameter`] unless `0 < min_concentration <= max_concentration < inf`.
    pub fn new(min_concentration: f64, max_concentration: f64) -> Result<Self> {
        let valid = min_concentration > 0.0
            && max_concentration.is_finite()
            && min_concentration <= max_concentration;
        if !valid {
            return Err(HebError::InvalidParameter(format!(
                "concentration_bounds must satisfy 0 < low <= high < inf, got ({min_concentration}, {max_concentration})"
            )));
        }
        Ok(Self {
            min_concentration,
            max_concentration,
            log_tolerance: 1e-11,
            max_iter: 100,
        })
    }
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self::new(1e-2, 1e4).expect("the defaults are valid")
    }
}

/// The maximiser found and how it was found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solution {
    /// `m_hat`.
    pub concentration: f64,
    /// `l(m_hat)`.
    pub log_evidence: f64,
    /// Evidence evaluations spent (gradient + curvature), 0 when decided by rule.
    pub n_iter: usize,
    /// Whether the stopping rule was met within the budget.
    pub converged: bool,
}

/// Maximises the evidence over `[m_min, m_max]`.
///
/// Empty statistics (no document has a count) leave `l` flat: the answer is `m_min`.
pub fn maximise_evidence(terms: &EvidenceTerms, settings: &SolverSettings) -> Solution {
    maximise_evidence_from(terms, settings, 1.0)
}

/// [`maximise_evidence`] with the Newton iteration started at `start` (clamped to the
/// bounds) instead of `m = 1`: a good guess, such as the answer of a related problem,
/// saves steps; the maximiser found is the same.
pub fn maximise_evidence_from(
    terms: &EvidenceTerms,
    settings: &SolverSettings,
    start: f64,
) -> Solution {
    let (lo_m, hi_m) = (settings.min_concentration, settings.max_concentration);
    let decided = |m: f64, n_iter: usize| Solution {
        concentration: m,
        log_evidence: terms.log_evidence(m),
        n_iter,
        converged: true,
    };
    if terms.is_empty() || lo_m == hi_m {
        return decided(lo_m, 0);
    }
    if terms.gradient(lo_m) <= 0.0 {
        return decided(lo_m, 1);
    }
    if terms.gradient(hi_m) >= 0.0 {
        return decided(hi_m, 2);
    }
    // Invariant: l'(e^lo) > 0 > l'(e^hi).
    let (mut lo, mut hi) = (lo_m.ln(), hi_m.ln());
    let mut t = if start > 0.0 {
        start.ln().clamp(lo, hi)
    } else {
        0.0_f64.clamp(lo, hi)
    };
    let mut n_iter = 2;
    let mut converged = false;
    while n_iter < settings.max_iter {
        n_iter += 1;
        let m = t.exp();
        let (g, curvature) = terms.gradient_and_curvature(m);
        if g > 0.0 {
            lo = t;
        } else if g < 0.0 {
            hi = t;
        } else {
            converged = true;
            break;
        }
        // f(t) = m l'(m);  f'(t) = m l'(m) + m² l''(m).  Newton: t - f / f'.
        let f = m * g;
        let slope = f + m * m * curvature;
        let newton = t - f / slope;
        let next = if slope < 0.0 && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        let step = (next - t).abs();
        t = next;
        if step < settings.log_tolerance || hi - lo < settings.log_tolerance {
            converged = true;
            break;
        }
    }
    let m = t.exp().clamp(lo_m, hi_m);
    Solution {
        concentration: m,
        log_evidence: terms.log_evidence(m),
        n_iter,
        converged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(counts: &[f64], mean: &[f64]) -> EvidenceTerms {
        let mut t = EvidenceTerms::new();
        t.add_document(counts.iter().sum());
        for (&n, &mu) in counts.iter().zip(mean) {
            t.add_cell(n, mu);
        }
        t.finish();
        t
    }

    /// Golden-section search on a fine grid in ln m: slow but obviously right.
    fn brute_force(terms: &EvidenceTerms, lo: f64, hi: f64) -> f64 {
        let (mut a, mut b) = (lo.ln(), hi.ln());
        let ratio = (5.0_f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let c = b - ratio * (b - a);
            let d = a + ratio * (b - a);
            if terms.log_evidence(c.exp()) > terms.log_evidence(d.exp()) {
                b = d;
            } else {
                a = c;
            }
        }
        (0.5 * (a + b)).exp()
    }

    #[test]
    fn interior_optimum_matches_brute_force() {
        // Over-dispersed counts relative to the mean: a finite optimum.
        let counts = [12.0, 0.0, 3.0, 1.0, 9.0, 0.0, 2.0, 1.0];
        let mean = [0.125; 8];
        let t = single(&counts, &mean);
        let s = maximise_evidence(&t, &SolverSettings::default());
        let expected = brute_force(&t, 1e-2, 1e4);
        assert!(s.converged);
        assert!(
            (s.concentration - expected).abs() < 1e-7 * expected,
            "{s:?} vs {expected}"
        );
        assert!(s.concentration > 0.02 && s.concentration < 1e4);
        assert!(t.gradient(s.concentration).abs() < 1e-8);
    }

    #[test]
    fn vertex_counts_give_the_lower_bound() {
        let t = single(&[25.0, 0.0, 0.0, 0.0], &[0.25; 4]);
        let s = maximise_evidence(&t, &SolverSettings::default());
        assert_eq!(s.concentration, 1e-2);
    }

    #[test]
    fn counts_proportional_to_the_mean_give_the_upper_bound() {
        // No over-dispersion: the evidence rises with m all the way.
        let mean = [0.5, 0.3, 0.2];
        let t = single(&[50.0, 30.0, 20.0], &mean);
        let s = maximise_evidence(&t, &SolverSettings::default());
        assert_eq!(s.concentration, 1e4);
    }

    #[test]
    fn empty_statistics_give_the_lower_bound() {
        let s = maximise_evidence(&EvidenceTerms::new(), &SolverSettings::default());
        assert_eq!((s.concentration, s.n_iter), (1e-2, 0));
    }

    #[test]
    fn many_unit_cells_are_fast_and_right() {
        // A high-cardinality feature: 300 singletons and a few repeats, uniform mean over 5000.
        let mut counts = vec![1.0; 300];
        counts.extend([4.0, 6.0, 2.0]);
        counts.resize(5000, 0.0);
        let mean = vec![1.0 / 5000.0; 5000];
        let t = single(&counts, &mean);
        let s = maximise_evidence(&t, &SolverSettings::default());
        let expected = brute_force(&t, 1e-2, 1e4);
        assert!((s.concentration - expected).abs() < 1e-7 * expected);
        assert!(s.n_iter < 20, "{s:?}");
    }

    #[test]
    fn invalid_bounds_are_rejected() {
        assert!(SolverSettings::new(0.0, 1.0).is_err());
        assert!(SolverSettings::new(2.0, 1.0).is_err());
        assert!(SolverSettings::new(1.0, f64::INFINITY).is_err());
    }
}
