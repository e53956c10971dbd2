//! The Dirichlet-multinomial evidence of count vectors under a Dirichlet prior with a
//! fixed mean and an unknown concentration m (SPEC eq. 5, and eq. 11 for several
//! documents sharing m):
//!
//! ```text
//! l(m) = sum_d [ ln Γ(m) - ln Γ(N_d + m) + sum_v ( ln Γ(n_dv + m mu_dv) - ln Γ(m mu_dv) ) ]
//! ```
//!
//! Only cells with `n_dv > 0` contribute (the terms vanish otherwise), so the cost is
//! O(non-zero cells). Cells with a count of exactly one contribute `ln(m mu)` to `l`,
//! `1/m` to `l'` and `-1/m^2` to `l''` whatever their mean, so they are kept as one tally
//! (Minka's count-histogram idea): in sparse high-cardinality tables most cells are ones.
//! Documents with equal totals are merged the same way.

use crate::gamma_differences::{
    digamma_difference, digamma_trigamma_difference, ln_gamma_difference, scaled_digamma_excess,
    trigamma_difference,
};

/// Sufficient statistics of `l(m)` for one or more documents that share `m`.
#[derive(Debug, Clone)]
pub struct EvidenceTerms {
    /// Document totals `N_d > 0` as (total, multiplicity), merged once [`Self::finish`] runs.
    totals: Vec<(f64, f64)>,
    /// Cells whose count is neither 0 nor 1: (count, prior mean).
    cells: Vec<(f64, f64)>,
    /// Number of cells whose count is exactly 1.
    unit_cells: f64,
    /// Sum of ln(mu) over the unit cells (a constant of `l`, kept so `l` is exact).
    unit_log_mean: f64,
    /// Product of the unit cells' means not yet folded into `unit_log_mean`: one
    /// logarithm per many cells instead of one per cell.
    unit_mean_product: f64,
}

impl Default for EvidenceTerms {
    fn default() -> Self {
        Self {
            totals: Vec::new(),
            cells: Vec::new(),
            unit_cells: 0.0,
            unit_log_mean: 0.0,
            unit_mean_product: 1.0,
        }
    }
}

impl EvidenceTerms {
    /// Empty statistics (no documents).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document with total count `total` (sum of its cells).
    pub fn add_document(&mut self, total: f64) {
        if total > 0.0 {
            self.totals.push((total, 1.0));
        }
    }

    /// Adds a cell with count `count` and prior mean `mean` (`mean > 0` when `count > 0`).
    pub fn add_cell(&mut self, count: f64, mean: f64) {
        if count <= 0.0 {
            return;
        }
        if count == 1.0 {
            self.unit_cells += 1.0;
            self.unit_mean_product *= mean;
            if self.unit_mean_product < 1e-250 {
                self.unit_log_mean += self.unit_mean_product.ln();
                self.unit_mean_product = 1.0;
            }
        } else {
            self.cells.push((count, mean));
        }
    }

    /// Merges documents with equal totals; call once after the last `add_document`.
    pub fn finish(&mut self) {
        self.totals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(self.totals.len());
        for &(total, k) in &self.totals {
            match merged.last_mut() {
                Some(last) if last.0 == total => last.1 += k,
                _ => merged.push((total, k)),
            }
        }
        self.totals = merged;
    }

    /// Whether there is no document with a positive total (then `l` is flat in `m`).
    pub fn is_empty(&self) -> bool {
        self.totals.is_empty()
    }

    /// Whether every count and document total is a whole number (no fractional weights),
    /// where [`Self::increasing_parts`] bounds the gradient.
    pub fn has_whole_counts(&self) -> bool {
        let whole = |v: f64| v.fract() == 0.0;
        self.cells.iter().all(|&(n, _)| whole(n)) && self.totals.iter().all(|&(t, _)| whole(t))
    }

    /// `m l'(m)` as the difference of its two increasing parts, `(A(m), B(m))`, for whole
    /// counts and totals:
    ///
    /// ```text
    /// A(m) = sum_cells sum_{j<n} m mu / (m mu + j)      B(m) = sum_docs sum_{j<N} m / (m + j)
    /// ```
    ///
    /// Each summand grows with `m`, so on `[m_a, m_b]` the gradient lies between
    /// `A(m_a) - B(m_b)` and `A(m_b) - B(m_a)`: an interval where that range excludes 0
    /// holds no maximum, which lets the solver skip most of the interval unevaluated.
    /// The bound holds when [`Self::has_whole_counts`].
    pub fn increasing_parts(&self, m: f64) -> (f64, f64) {
        let cells: f64 = self
            .cells
            .iter()
            .map(|&(n, mu)| m * mu * digamma_difference(m * mu, n))
            .sum();
        let documents: f64 = self
            .totals
            .iter()
            .map(|&(total, k)| k * m * digamma_difference(m, total))
            .sum();
        (self.unit_cells + cells, documents)
    }

    /// Whether `l` is flat in `m`: no document, or every counted cell has prior mean 1
    /// (a single category), where each document's terms cancel and `l = 0` for every `m`.
    pub fn is_flat(&self) -> bool {
        self.is_empty()
            || (self.unit_log_mean == 0.0
                && self.unit_mean_product == 1.0
                && self.cells.iter().all(|&(_, mean)| mean == 1.0))
    }

    /// `l(m)`, the log evidence.
    pub fn log_evidence(&self, m: f64) -> f64 {
        let documents: f64 = self
            .totals
            .iter()
            .map(|&(total, k)| -k * ln_gamma_difference(m, total))
            .sum();
        let cells: f64 = self
            .cells
            .iter()
            .map(|&(n, mu)| ln_gamma_difference(m * mu, n))
            .sum();
        documents
            + cells
            + self.unit_cells * m.ln()
            + self.unit_log_mean
            + self.unit_mean_product.ln()
    }

    /// `dl/dm`.
    pub fn gradient(&self, m: f64) -> f64 {
        let documents: f64 = self
            .totals
            .iter()
            .map(|&(total, k)| -k * digamma_difference(m, total))
            .sum();
        let cells: f64 = self
            .cells
            .iter()
            .map(|&(n, mu)| mu * digamma_difference(m * mu, n))
            .sum();
        documents + cells + self.unit_cells / m
    }

    /// `(dl/dm, d²l/dm²)` in one pass over the terms (a Newton step needs both).
    pub fn gradient_and_curvature(&self, m: f64) -> (f64, f64) {
        let (mut gradient, mut curvature) = (self.unit_cells / m, -self.unit_cells / (m * m));
        for &(total, k) in &self.totals {
            let (first, second) = digamma_trigamma_difference(m, total);
            gradient -= k * first;
            curvature -= k * second;
        }
        for &(n, mu) in &self.cells {
            let (first, second) = digamma_trigamma_difference(m * mu, n);
            gradient += mu * first;
            curvature += mu * mu * second;
        }
        (gradient, curvature)
    }

    /// `m dl/dm`, the gradient in `ln m`, with its sign right for any `m`.
    ///
    /// Below the largest document total this is `m` times [`Self::gradient`], whose
    /// terms `a [ψ(a + n) - ψ(a)]` are at most about `a ln(n / a)`. Above it those terms
    /// approach their limits (a cell's count, a document's total), which cancel exactly
    /// because the cells of the documents add up to their totals, as every caller builds
    /// them; `m l'(m)` is then O(N² / m) and the plain sum is rounding noise once `m` is
    /// about 1e16 N, so there the limits are left out and only the excesses
    /// ([`scaled_digamma_excess`]) are summed.
    pub fn scaled_gradient(&self, m: f64) -> f64 {
        if self.beyond_the_totals(m) {
            self.summed_excesses(m)
        } else {
            m * self.gradient(m)
        }
    }

    /// `(m dl/dm, d²l/dm²)`: [`Self::scaled_gradient`] and the curvature, in one pass
    /// over the terms where `m` is below the largest document total (the usual case).
    pub fn scaled_gradient_and_curvature(&self, m: f64) -> (f64, f64) {
        let (gradient, curvature) = self.gradient_and_curvature(m);
        if self.beyond_the_totals(m) {
            (self.summed_excesses(m), curvature)
        } else {
            (m * gradient, curvature)
        }
    }

    /// Whether `m` is at least every document total (where `m l'(m)` is summed as excesses).
    fn beyond_the_totals(&self, m: f64) -> bool {
        self.totals.iter().all(|&(total, _)| m >= total)
    }

    /// `m l'(m)` as the sum of the terms' excesses over their cancelling limits.
    fn summed_excesses(&self, m: f64) -> f64 {
        let documents: f64 = self
            .totals
            .iter()
            .map(|&(total, k)| -k * scaled_digamma_excess(m, total))
            .sum();
        let cells: f64 = self
            .cells
            .iter()
            .map(|&(n, mu)| scaled_digamma_excess(m * mu, n))
            .sum();
        documents + cells // unit cells: m mu [ψ(m mu + 1) - ψ(m mu)] - 1 = 0
    }

    /// `d²l/dm²`.
    pub fn curvature(&self, m: f64) -> f64 {
        let documents: f64 = self
            .totals
            .iter()
            .map(|&(total, k)| -k * trigamma_difference(m, total))
            .sum();
        let cells: f64 = self
            .cells
            .iter()
            .map(|&(n, mu)| mu * mu * trigamma_difference(m * mu, n))
            .sum();
        documents + cells - self.unit_cells / (m * m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::function::gamma::ln_gamma;

    /// l(m) written straight from SPEC eq. 5 with statrs' ln_gamma.
    fn direct(counts: &[f64], mean: &[f64], m: f64) -> f64 {
        let total: f64 = counts.iter().sum();
        let mut l = ln_gamma(m) - ln_gamma(total + m);
        for (&n, &mu) in counts.iter().zip(mean) {
            l += ln_gamma(n + m * mu) - ln_gamma(m * mu);
        }
        l
    }

    fn terms(counts: &[f64], mean: &[f64]) -> EvidenceTerms {
        let mut t = EvidenceTerms::new();
        t.add_document(counts.iter().sum());
        for (&n, &mu) in counts.iter().zip(mean) {
            t.add_cell(n, mu);
        }
        t.finish();
        t
    }

    #[test]
    fn evidence_matches_the_direct_formula() {
        let counts = [3.0, 1.0, 0.0, 1.0, 7.5];
        let mean = [0.1, 0.2, 0.3, 0.15, 0.25];
        let t = terms(&counts, &mean);
        for &m in &[0.05, 1.0, 4.0, 250.0] {
            let (a, b) = (t.log_evidence(m), direct(&counts, &mean, m));
            assert!(
                (a - b).abs() < 1e-10 * b.abs().max(1.0),
                "m={m}: {a} vs {b}"
            );
        }
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let counts = [3.0, 1.0, 0.0, 1.0, 7.5];
        let mean = [0.1, 0.2, 0.3, 0.15, 0.25];
        let t = terms(&counts, &mean);
        for &m in &[0.3, 2.0, 40.0] {
            let h = 1e-5 * m;
            let numeric = (t.log_evidence(m + h) - t.log_evidence(m - h)) / (2.0 * h);
            assert!((t.gradient(m) - numeric).abs() < 1e-6 * numeric.abs().max(1.0));
            let numeric = (t.gradient(m + h) - t.gradient(m - h)) / (2.0 * h);
            assert!((t.curvature(m) - numeric).abs() < 1e-5 * numeric.abs().max(1.0));
            let (g, c) = t.gradient_and_curvature(m);
            assert!((g - t.gradient(m)).abs() < 1e-12 * g.abs().max(1.0));
            assert!((c - t.curvature(m)).abs() < 1e-12 * c.abs().max(1.0));
        }
    }

    #[test]
    fn scaled_gradient_is_m_times_the_gradient() {
        let counts = [3.0, 1.0, 0.0, 1.0, 7.5, 40.0];
        let mean = [0.1, 0.2, 0.3, 0.15, 0.05, 0.2];
        let t = terms(&counts, &mean);
        for &m in &[0.03, 0.3, 2.0, 40.0, 900.0] {
            let (scaled, plain) = (t.scaled_gradient(m), m * t.gradient(m));
            assert!(
                (scaled - plain).abs() < 1e-10 * plain.abs().max(1.0),
                "m={m}: {scaled} vs {plain}"
            );
        }
    }

    #[test]
    fn scaled_gradient_keeps_its_sign_for_huge_m() {
        // For m >> N, m l'(m) ~ [N (N - 1) - sum_v n_v (n_v - 1) / mu_v] / (2m): negative
        // for counts over-dispersed relative to the mean, positive for under-dispersed.
        let mean = [0.25; 4];
        let over = terms(&[30.0, 0.0, 0.0, 2.0], &mean);
        let under = terms(&[8.0, 8.0, 8.0, 8.0], &mean);
        for &m in &[1e10, 1e20, 1e100, 1e300] {
            assert!(over.scaled_gradient(m) < 0.0, "m={m}");
            assert!(under.scaled_gradient(m) > 0.0, "m={m}");
            let leading = (32.0 * 31.0 - (30.0 * 29.0 + 2.0) / 0.25) / (2.0 * m);
            let found = over.scaled_gradient(m);
            assert!(
                (found - leading).abs() < 1e-6 * leading.abs(),
                "{found} vs {leading}"
            );
        }
    }

    #[test]
    fn documents_add_up() {
        // Two documents sharing m: l is the sum of their single-document evidences.
        let (c1, c2) = ([2.0, 1.0, 1.0], [0.0, 5.0, 1.0]);
        let mean = [0.5, 0.3, 0.2];
        let mut t = EvidenceTerms::new();
        for counts in [&c1, &c2] {
            t.add_document(counts.iter().sum());
            for (&n, &mu) in counts.iter().zip(&mean) {
                t.add_cell(n, mu);
            }
        }
        t.finish();
        let expected = direct(&c1, &mean, 3.0) + direct(&c2, &mean, 3.0);
        assert!((t.log_evidence(3.0) - expected).abs() < 1e-12 * expected.abs());
    }
}
