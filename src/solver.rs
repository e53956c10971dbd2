//! Type-II maximum likelihood for the concentration (SPEC eq. 5-6, Algorithm 1):
//! `m_hat = argmax over [m_min, m_max] of l(m)`.
//!
//! Minka's fixed point (eq. 6) needs hundreds of steps when the optimum is large. Here
//! the stationarity condition `l'(m) = 0` is solved by Newton's method in `t = ln m`
//! (using the trigamma curvature), safeguarded by a bracket that always holds a sign
//! change of `l'`: a Newton step that leaves the bracket or points uphill on the wrong
//! side is replaced by bisection in `t`. Signs come from the gradient in ln m,
//! `m l'(m)` ([`EvidenceTerms::scaled_gradient`]), which stays accurate where `l'(m)` is
//! lost in rounding (large m). The ends are tested first: `l' <= 0` at `m_min` means the
//! maximiser is `m_min` (the vertex case: one value only). `l' >= 0` at `m_max` means the
//! evidence rises at the top, and the answer is `m_max` when the evidence is unimodal;
//! it is not always (AODE's multi-document evidence can have a higher interior maximum,
//! see docs/aode.md), so [`rising_at_the_top`] probes for one before deciding.

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
    if terms.scaled_gradient(lo_m) <= 0.0 {
        return decided(lo_m, 1);
    }
    let (lo, hi) = (lo_m.ln(), hi_m.ln());
    let t0 = if start > 0.0 && start.is_finite() {
        start.ln().clamp(lo, hi)
    } else {
        0.0_f64.clamp(lo, hi)
    };
    if terms.scaled_gradient(hi_m) >= 0.0 {
        return rising_at_the_top(terms, settings, t0, decided(hi_m, 2));
    }
    // Invariant: l'(e^lo) > 0 > l'(e^hi).
    newton_in_bracket(terms, settings, lo, hi, t0, 2)
}

/// Where [`rising_at_the_top`] looks for a falling evidence, besides the start: `m = 1`
/// and `m = 30` (the interior maxima we have seen above a rising top lie at m = 1-20).
const PROBES: [f64; 2] = [1.0, 30.0];

/// The answer when `l'(m_max) >= 0`: `m_max` if the evidence is unimodal. It is not
/// always: AODE's multi-document evidence can rise toward `m_max` and still have a higher
/// interior maximum (see docs/aode.md). So `l'` is probed at the start and at
/// [`PROBES`], in increasing order, and if it is positive at all of them while `l(1)`
/// beats `l(m_max)`, at steps of x3 above `m = 1`; the first probe with `l' < 0` closes
/// a bracket around an interior maximum, and the larger of the two maxima wins. This
/// costs three gradient and one evidence evaluations when the evidence is unimodal; it
/// can still miss an interior maximum that neither the probes nor `l(1)` reveal.
fn rising_at_the_top(
    terms: &EvidenceTerms,
    settings: &SolverSettings,
    t0: f64,
    top: Solution,
) -> Solution {
    let (lo, hi) = (
        settings.min_concentration.ln(),
        settings.max_concentration.ln(),
    );
    let mut probes: Vec<f64> = PROBES
        .iter()
        .map(|m| m.ln())
        .chain(std::iter::once(t0))
        .filter(|&t| t > lo && t < hi)
        .collect();
    probes.sort_by(f64::total_cmp);
    probes.dedup();
    let mut n_iter = top.n_iter;
    let mut last_rising = lo;
    let mut falls_at = None;
    for t in probes {
        n_iter += 1;
        if terms.scaled_gradient(t.exp()) < 0.0 {
            falls_at = Some(t);
            break;
        }
        last_rising = t;
    }
    // l' > 0 at every probe: if l(1) still beats l(m_max), a local minimum lies above
    // m = 1; walk up from there in steps of x3 until l' < 0
    let one = 0.0_f64.clamp(lo, hi);
    if falls_at.is_none() && one < hi && one > lo {
        n_iter += 1;
        if terms.log_evidence(1.0) > top.log_evidence {
            last_rising = one;
            let mut t = one + 3.0_f64.ln();
            while t < hi {
                n_iter += 1;
                if terms.scaled_gradient(t.exp()) < 0.0 {
                    falls_at = Some(t);
                    break;
                }
                last_rising = t;
                t += 3.0_f64.ln();
            }
        }
    }
    if let Some(t) = falls_at {
        let middle = 0.5 * (last_rising + t);
        let inner = newton_in_bracket(terms, settings, last_rising, t, middle, n_iter);
        return if inner.log_evidence > top.log_evidence {
            inner
        } else {
            Solution {
                n_iter: inner.n_iter,
                ..top
            }
        };
    }
    Solution { n_iter, ..top }
}

/// Safeguarded Newton in `t = ln m` inside a bracket with `l'(e^lo) > 0 > l'(e^hi)`,
/// started at `t`; `n_iter` evaluations have been spent before.
fn newton_in_bracket(
    terms: &EvidenceTerms,
    settings: &SolverSettings,
    mut lo: f64,
    mut hi: f64,
    mut t: f64,
    mut n_iter: usize,
) -> Solution {
    let (lo_m, hi_m) = (settings.min_concentration, settings.max_concentration);
    t = t.clamp(lo, hi);
    let mut converged = false;
    while n_iter < settings.max_iter {
        n_iter += 1;
        let m = t.exp();
        let (f, curvature) = terms.scaled_gradient_and_curvature(m);
        if f > 0.0 {
            lo = t;
        } else if f < 0.0 {
            hi = t;
        } else {
            converged = true;
            break;
        }
        // f(t) = m l'(m);  f'(t) = m l'(m) + m² l''(m).  Newton: t - f / f'.
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
    fn a_huge_upper_bound_does_not_move_an_interior_optimum() {
        // With m_max = 1e20 the gradient at m_max was rounding noise: read as >= 0, the
        // solver answered m_max for counts whose maximiser is near 1e3. Counts of 1e12
        // check the other regime (m far below the counts), where l' must be summed whole.
        let proportions = [37.0, 29.0, 41.0, 33.0, 30.0, 30.0];
        let mean = [0.2, 0.15, 0.2, 0.15, 0.15, 0.15];
        for scale in [1e3, 1e12] {
            let counts: Vec<f64> = proportions.iter().map(|p| p * scale).collect();
            let t = single(&counts, &mean);
            let reference = maximise_evidence(&t, &SolverSettings::default());
            let m = reference.concentration;
            assert!(m > 1.0 && m < 1e4, "{reference:?}");
            // the maximiser: l' changes sign there
            assert!(t.gradient(m * (1.0 - 1e-7)) > 0.0 && t.gradient(m * (1.0 + 1e-7)) < 0.0);
            for high in [1e20, 1e100, 1e300] {
                let s = maximise_evidence(&t, &SolverSettings::new(1e-2, high).unwrap());
                assert!(s.converged, "{s:?}");
                let relative = (s.concentration / m - 1.0).abs();
                assert!(relative < 1e-8, "m_max={high}: {s:?} vs {reference:?}");
            }
        }
    }

    #[test]
    fn an_interior_maximum_above_a_rising_top_is_found() {
        // three documents (17, 17), (2, 0), (4, 0): l rises toward m_max = 1e4 but
        // l(1.11) is higher (docs/aode.md)
        let mean = [37.0 / 81.0, 44.0 / 81.0];
        let mut t = EvidenceTerms::new();
        for counts in [[17.0, 17.0], [2.0, 0.0], [4.0, 0.0]] {
            t.add_document(counts.iter().sum());
            for (&n, &mu) in counts.iter().zip(&mean) {
                t.add_cell(n, mu);
            }
        }
        t.finish();
        let settings = SolverSettings::default();
        assert!(t.gradient(1e4) >= 0.0);
        let s = maximise_evidence(&t, &settings);
        let expected = brute_force(&t, 1e-2, 100.0);
        assert!(s.log_evidence > t.log_evidence(1e4) + 0.2, "{s:?}");
        assert!(
            (s.concentration - expected).abs() < 1e-6 * expected,
            "{s:?} vs {expected}"
        );
        // the same from a start at the top
        let from_top = maximise_evidence_from(&t, &settings, 1e4);
        assert!((from_top.concentration - expected).abs() < 1e-6 * expected);
    }

    #[test]
    fn invalid_bounds_are_rejected() {
        assert!(SolverSettings::new(0.0, 1.0).is_err());
        assert!(SolverSettings::new(2.0, 1.0).is_err());
        assert!(SolverSettings::new(1.0, f64::INFINITY).is_err());
    }
}
