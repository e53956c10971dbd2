//! Type-II ML (SPEC eqs. 5 and 11) for small distributions: a child of few categories
//! under a parent of few values, the common case of wide data (SNPs, survey answers,
//! binarised features).
//!
//! The multi-document evidence of whole counts
//!
//! ```text
//! l(m) = sum_d [ ln Γ(m) - ln Γ(N_d + m) ] + sum_cells [ ln Γ(n + m mu) - ln Γ(m mu) ]
//! ```
//!
//! is held as a stack-sized list of at most [`MAX_CELLS`] cells `(n, mu)` and
//! [`MAX_DOCUMENTS`] document totals `N_d`, with no heap allocation; every evaluation is
//! one digamma (and trigamma) difference per term ([`crate::gamma_differences`]) instead
//! of one division per unit of count, so its cost does not grow with the number of rows.
//!
//! The maximiser is the global one of the general solver ([`crate::solver`]): the same
//! bound search brackets every local maximum (`m l'(m) = A(m) - B(m)` with `A`, `B`
//! increasing), the same safeguarded Newton iteration refines each, the best evidence
//! wins. Before the search, two closed-form tests decide without evaluating anything:
//! a flat evidence (no count, or every counted mean 1) gives `m_min`, and so does a table
//! where every document has a single non-zero cell (`l'(m) = sum_k [1/(m + k/mu) -
//! 1/(m + k)] < 0` for every `m`).

use crate::gamma_differences::{
    digamma_difference, digamma_trigamma_difference, ln_gamma_difference, scaled_digamma_excess,
};
use std::cell::RefCell;

use crate::evidence::GradientShape;
use crate::sign_changes::SignChanges;
use crate::solver::{
    at_end, better, maximise_by_search, newton_in_bracket, Evidence, Solution, SolverSettings,
};

/// The shape certificate costs O(largest total + sum of counts) and a search about 15
/// evaluations of O(terms) special functions each: the certificate runs only where its
/// work is below this many units per term (measured: one unit of certificate work costs
/// about a third of one term's digamma difference).
const CERTIFICATE_UNITS_PER_TERM: f64 = 40.0;

/// One unit interval `[j, j + 1)` of the pole axis of the shape certificate.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Documents whose total exceeds `j` (their pole at `q = j`).
    fall: f64,
    /// Documents whose total is `j` (to build `fall`).
    ending: f64,
    /// Cell poles in the interval.
    rise: f64,
    /// Sum of `j + 1 - q` over those poles.
    area: f64,
}

thread_local! {
    /// The certificate's buckets, reused by every solve of a thread.
    static BUCKETS: RefCell<Vec<Bucket>> = const { RefCell::new(Vec::new()) };
}

/// Largest number of non-zero cells on the fast path.
pub const MAX_CELLS: usize = 48;
/// Largest number of documents (parent values) on the fast path.
pub const MAX_DOCUMENTS: usize = 16;

/// The evidence of a small multi-document table with whole counts (see the module docs).
#[derive(Debug, Clone)]
pub struct SmallEvidence {
    n_cells: usize,
    count: [f64; MAX_CELLS],
    mean: [f64; MAX_CELLS],
    n_documents: usize,
    total: [f64; MAX_DOCUMENTS],
    /// Non-zero cells of each document, by the index the caller gives (for the
    /// one-cell-per-document test).
    cells_in_document: [u32; MAX_DOCUMENTS],
    every_mean_is_one: bool,
    largest_total: f64,
}

impl Default for SmallEvidence {
    fn default() -> Self {
        Self {
            n_cells: 0,
            count: [0.0; MAX_CELLS],
            mean: [0.0; MAX_CELLS],
            n_documents: 0,
            total: [0.0; MAX_DOCUMENTS],
            cells_in_document: [0; MAX_DOCUMENTS],
            every_mean_is_one: true,
            largest_total: 0.0,
        }
    }
}

impl SmallEvidence {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a table of `documents` documents and `cells` non-zero cells fits.
    pub fn fits(documents: usize, cells: usize) -> bool {
        documents <= MAX_DOCUMENTS && cells <= MAX_CELLS
    }

    /// Adds a document total (the caller adds its cells, whose counts must add up to it).
    /// Returns false (and adds nothing) when the table is full or `total` is not whole.
    pub fn add_document(&mut self, total: f64) -> bool {
        if total <= 0.0 {
            return true;
        }
        if self.n_documents == MAX_DOCUMENTS || total.fract() != 0.0 {
            return false;
        }
        self.total[self.n_documents] = total;
        self.n_documents += 1;
        self.largest_total = self.largest_total.max(total);
        true
    }

    /// Adds a cell of document `document` (an index below [`MAX_DOCUMENTS`], the same for
    /// all cells of one document); false when full or the count is fractional.
    pub fn add_cell(&mut self, document: usize, count: f64, mean: f64) -> bool {
        if count <= 0.0 {
            return true;
        }
        if self.n_cells == MAX_CELLS || count.fract() != 0.0 || document >= MAX_DOCUMENTS {
            return false;
        }
        self.count[self.n_cells] = count;
        self.mean[self.n_cells] = mean;
        self.n_cells += 1;
        self.every_mean_is_one &= mean == 1.0;
        self.cells_in_document[document] += 1;
        true
    }

    /// Whether every document has at most one non-zero cell (then `l' < 0`).
    fn one_cell_per_document(&self) -> bool {
        self.cells_in_document.iter().all(|&k| k <= 1)
    }

    fn cells(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.count[..self.n_cells]
            .iter()
            .copied()
            .zip(self.mean[..self.n_cells].iter().copied())
    }

    fn totals(&self) -> &[f64] {
        &self.total[..self.n_documents]
    }

    /// `l'(m)`.
    pub fn gradient(&self, m: f64) -> f64 {
        let cells: f64 = self
            .cells()
            .map(|(n, mu)| mu * digamma_difference(m * mu, n))
            .sum();
        let documents: f64 = self
            .totals()
            .iter()
            .map(|&total| digamma_difference(m, total))
            .sum();
        cells - documents
    }
}

impl Evidence for SmallEvidence {
    fn is_flat(&self) -> bool {
        self.n_documents == 0 || self.every_mean_is_one
    }

    fn has_whole_counts(&self) -> bool {
        true
    }

    fn log_evidence(&self, m: f64) -> f64 {
        let cells: f64 = self
            .cells()
            .map(|(n, mu)| ln_gamma_difference(m * mu, n))
            .sum();
        let documents: f64 = self
            .totals()
            .iter()
            .map(|&total| ln_gamma_difference(m, total))
            .sum();
        cells - documents
    }

    fn scaled_gradient(&self, m: f64) -> f64 {
        if m >= self.largest_total {
            // beyond the totals: the terms' limits (counts, totals) cancel exactly, so
            // only their excesses are summed (as EvidenceTerms does)
            let cells: f64 = self
                .cells()
                .map(|(n, mu)| scaled_digamma_excess(m * mu, n))
                .sum();
            let documents: f64 = self
                .totals()
                .iter()
                .map(|&total| scaled_digamma_excess(m, total))
                .sum();
            cells - documents
        } else {
            m * self.gradient(m)
        }
    }

    fn scaled_gradient_and_curvature(&self, m: f64) -> (f64, f64) {
        let (mut gradient, mut curvature) = (0.0, 0.0);
        for (n, mu) in self.cells() {
            let (first, second) = digamma_trigamma_difference(m * mu, n);
            gradient += mu * first;
            curvature += mu * mu * second;
        }
        for &total in self.totals() {
            let (first, second) = digamma_trigamma_difference(m, total);
            gradient -= first;
            curvature -= second;
        }
        if m >= self.largest_total {
            (self.scaled_gradient(m), curvature)
        } else {
            (m * gradient, curvature)
        }
    }

    fn increasing_parts(&self, m: f64) -> (f64, f64) {
        let cells: f64 = self
            .cells()
            .map(|(n, mu)| m * mu * digamma_difference(m * mu, n))
            .sum();
        let documents: f64 = self
            .totals()
            .iter()
            .map(|&total| m * digamma_difference(m, total))
            .sum();
        (cells, documents)
    }
}

impl SmallEvidence {
    /// What the signs of `l'` over `m > 0` can be: the certificate of
    /// [`crate::evidence::EvidenceTerms::gradient_shape`] (Karlin's variation diminishing
    /// property applied to the doubly integrated pole weights `V`), computed from the
    /// cells' arithmetic pole sequences `k / mu` in O(largest total + sum of counts), with
    /// the cell poles beyond the last document pole summed in closed form.
    pub fn gradient_shape(&self) -> GradientShape {
        let work = self.largest_total + self.count[..self.n_cells].iter().sum::<f64>();
        let terms = (self.n_cells + self.n_documents) as f64;
        if self.is_flat() || work > CERTIFICATE_UNITS_PER_TERM * terms {
            return GradientShape::Unknown;
        }
        let n_buckets = self.largest_total as usize;
        BUCKETS.with(|cell| {
            let Ok(mut bucket) = cell.try_borrow_mut() else {
                return GradientShape::Unknown;
            };
            bucket.clear();
            if bucket.try_reserve(n_buckets + 1).is_err() {
                return GradientShape::Unknown;
            }
            bucket.resize(n_buckets + 1, Bucket::default());
            for &total in self.totals() {
                bucket[total as usize].ending += 1.0;
            }
            let mut above = 0.0;
            for j in (1..n_buckets).rev() {
                above += bucket[j + 1].ending;
                bucket[j].fall = above;
            }
            let limit = self.largest_total;
            let mut tail_area = 0.0;
            for (n, mu) in self.cells() {
                let steps = n as usize;
                for k in 1..steps {
                    let q = k as f64 / mu;
                    if q >= limit {
                        // the remaining steps k..n-1 all lie beyond: their sum in closed form
                        let remaining = (steps - k) as f64;
                        let step_sum = (k + steps - 1) as f64 * remaining / 2.0;
                        tail_area += step_sum / mu - limit * remaining;
                        break;
                    }
                    let j = q as usize;
                    bucket[j].rise += 1.0;
                    bucket[j].area += (j + 1) as f64 - q;
                }
            }
            // the step-0 poles at q = 0: +1 per cell, -1 per document
            let mut w = self.n_cells as f64 - self.n_documents as f64;
            let mut v = 0.0;
            let mut magnitude = 0.0;
            let mut signs = SignChanges::new();
            for b in &bucket[..n_buckets] {
                w -= b.fall;
                let next = v + w + b.area;
                magnitude += w.abs() + b.area;
                let tolerance = 1e-12 * magnitude;
                // V is convex on [j, j + 1]: at least v + min(0, w) inside
                let dip = v + w.min(0.0);
                if dip < -tolerance && v.min(next) > tolerance {
                    signs.observe_sign(true, true);
                }
                signs.observe(next, tolerance);
                v = next;
                w += b.rise;
            }
            magnitude += tail_area;
            signs.observe(v - tail_area, 1e-12 * magnitude);
            match signs.most() {
                0 if signs.never_negative() => GradientShape::Rising,
                0 if signs.never_positive() => GradientShape::Falling,
                0 | 1 => GradientShape::AtMostOneChange,
                _ => GradientShape::Unknown,
            }
        })
    }
}

/// The global maximiser of a small table's evidence over `[m_min, m_max]`, the Newton
/// refinement started at `start` (a related problem's answer saves steps). The same
/// decisions as [`crate::solver::maximise_evidence_from`]: a certified shape decides the
/// end or the single interior maximum; otherwise every local maximum is bracketed.
pub fn maximise_small(terms: &SmallEvidence, settings: &SolverSettings, start: f64) -> Solution {
    let (lo_m, hi_m) = (settings.min_concentration, settings.max_concentration);
    if terms.is_flat() || lo_m == hi_m || terms.one_cell_per_document() {
        return at_end(terms, lo_m, 0);
    }
    match terms.gradient_shape() {
        GradientShape::Rising => at_end(terms, hi_m, 0),
        GradientShape::Falling => at_end(terms, lo_m, 0),
        GradientShape::AtMostOneChange => {
            let (f_lo, f_hi) = (terms.scaled_gradient(lo_m), terms.scaled_gradient(hi_m));
            if f_lo > 0.0 && f_hi < 0.0 {
                let start = if start > 0.0 && start.is_finite() {
                    start.ln()
                } else {
                    f64::NAN
                };
                let inside = newton_in_bracket(terms, settings, lo_m.ln(), hi_m.ln(), start);
                Solution {
                    n_iter: inside.n_iter + 2,
                    ..inside
                }
            } else if f_lo > 0.0 {
                at_end(terms, hi_m, 2)
            } else if f_hi < 0.0 {
                at_end(terms, lo_m, 2)
            } else {
                better(at_end(terms, lo_m, 2), at_end(terms, hi_m, 2))
            }
        }
        GradientShape::Unknown => maximise_by_search(terms, settings, start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::EvidenceTerms;
    use crate::solver::maximise_evidence_from;

    /// Deterministic pseudo-random numbers.
    struct Lcg(u64);

    impl Lcg {
        fn uniform(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        fn below(&mut self, n: usize) -> usize {
            (self.uniform() * n as f64) as usize
        }
    }

    /// The same random table as both representations.
    fn both(documents: &[Vec<f64>], mean: &[Vec<f64>]) -> (SmallEvidence, EvidenceTerms) {
        let mut small = SmallEvidence::new();
        let mut general = EvidenceTerms::new();
        for (d, (cells, mu)) in documents.iter().zip(mean).enumerate() {
            let total: f64 = cells.iter().sum();
            assert!(small.add_document(total));
            general.add_document(total);
            for (&n, &m) in cells.iter().zip(mu) {
                assert!(small.add_cell(d, n, m));
                general.add_cell(n, m);
            }
        }
        general.finish();
        (small, general)
    }

    /// Random AODE-like children: 2-8 parent values, 2-5 child values, counts from tiny to
    /// thousands, shared or per-document means, and over- or under-dispersed documents.
    fn random_table(rng: &mut Lcg) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let k_parent = 1 + rng.below(8);
        let k_child = 2 + rng.below(4);
        let shared: Vec<f64> = (0..k_child).map(|_| 0.02 + rng.uniform()).collect();
        let per_document = rng.below(2) == 0;
        let scale = [3.0, 30.0, 300.0, 3000.0][rng.below(4)];
        let mut documents = Vec::new();
        let mut means = Vec::new();
        for _ in 0..k_parent {
            let weights: Vec<f64> = if per_document {
                (0..k_child).map(|_| 0.02 + rng.uniform()).collect()
            } else {
                shared.clone()
            };
            let sum: f64 = weights.iter().sum();
            let mu: Vec<f64> = weights.iter().map(|w| w / sum).collect();
            let dispersed = rng.below(3);
            let cells: Vec<f64> = mu
                .iter()
                .map(|&p| match dispersed {
                    // close to the mean: the evidence rises to m_max
                    0 => (p * scale).round(),
                    // over-dispersed: an interior maximum
                    1 => (rng.uniform() * scale).floor(),
                    // sparse: most mass on one value
                    _ => {
                        if rng.below(3) == 0 {
                            (rng.uniform() * scale).floor()
                        } else {
                            rng.below(3) as f64
                        }
                    }
                })
                .collect();
            documents.push(cells);
            means.push(mu);
        }
        (documents, means)
    }

    fn assert_same(small: &SmallEvidence, general: &EvidenceTerms, settings: &SolverSettings) {
        let fast = maximise_small(small, settings, 1.0);
        let reference = maximise_evidence_from(general, settings, 1.0);
        let scale = reference.log_evidence.abs().max(1.0);
        let same_m = (fast.concentration / reference.concentration - 1.0).abs() <= 1e-10;
        // where l is flat to rounding the maximiser is not defined to 1e-10 in m: the
        // evidence must then agree to the last digits
        let same_l = (fast.log_evidence - reference.log_evidence).abs() <= 1e-13 * scale;
        assert!(
            same_m || same_l,
            "fast {fast:?} vs general {reference:?} for {small:?}"
        );
        assert!(fast.log_evidence >= reference.log_evidence - 1e-12 * scale);
        assert!(fast.converged);
    }

    #[test]
    fn random_small_tables_give_the_general_solvers_maximiser() {
        let mut rng = Lcg(3);
        let settings = SolverSettings::default();
        for _ in 0..20_000 {
            let (documents, means) = random_table(&mut rng);
            let (small, general) = both(&documents, &means);
            assert_same(&small, &general, &settings);
        }
    }

    #[test]
    fn bimodal_tables_give_the_global_maximum() {
        // the general solver's bimodal example (rises toward m_max, peaks higher near 1)
        // and random variants of it: a balanced document and small one-sided ones
        let mean = vec![37.0 / 81.0, 44.0 / 81.0];
        let documents = vec![vec![17.0, 17.0], vec![2.0, 0.0], vec![4.0, 0.0]];
        let (small, general) = both(&documents, &vec![mean.clone(); 3]);
        let s = maximise_small(&small, &SolverSettings::default(), 1.0);
        assert!(s.concentration < 100.0, "{s:?}");
        assert_same(&small, &general, &SolverSettings::default());
        let mut rng = Lcg(5);
        let mut bimodal = 0;
        for _ in 0..5000 {
            let balanced = (5 + rng.below(40)) as f64;
            let mut documents = vec![vec![balanced, balanced + rng.below(3) as f64]];
            for _ in 0..1 + rng.below(4) {
                documents.push(vec![(1 + rng.below(6)) as f64, 0.0]);
            }
            let means = vec![mean.clone(); documents.len()];
            let (small, general) = both(&documents, &means);
            if general.gradient_shape() == crate::evidence::GradientShape::Unknown {
                bimodal += 1;
            }
            assert_same(&small, &general, &SolverSettings::default());
        }
        assert!(
            bimodal > 100,
            "the cases must exercise the full search: {bimodal}"
        );
    }

    #[test]
    fn certified_shapes_hold_on_a_fine_grid() {
        let mut rng = Lcg(13);
        let mut seen = [0usize; 4];
        for _ in 0..3000 {
            let (documents, means) = random_table(&mut rng);
            let (small, _) = both(&documents, &means);
            if small.is_flat() {
                continue;
            }
            let signs: Vec<f64> = (0..=1500)
                .map(|k| (-4.0 + 11.0 * k as f64 / 1500.0) * std::f64::consts::LN_10)
                .map(|t| small.scaled_gradient(t.exp()))
                // a flat stretch is 0 up to rounding: no sign there
                .filter(|f| f.abs() > 1e-12)
                .collect();
            let changes = signs
                .windows(2)
                .filter(|w| (w[0] > 0.0) != (w[1] > 0.0))
                .count();
            let shape = small.gradient_shape();
            match shape {
                GradientShape::Rising => assert!(signs.iter().all(|&f| f > 0.0), "{small:?}"),
                GradientShape::Falling => assert!(signs.iter().all(|&f| f < 0.0), "{small:?}"),
                GradientShape::AtMostOneChange => assert!(changes <= 1, "{small:?}"),
                GradientShape::Unknown => {}
            }
            seen[shape as usize] += 1;
        }
        let [rising, _, one_change, _] = seen;
        assert!(rising > 100 && one_change > 100, "{seen:?}");
    }

    #[test]
    fn evaluations_match_the_general_terms() {
        let mut rng = Lcg(9);
        for _ in 0..500 {
            let (documents, means) = random_table(&mut rng);
            let (small, general) = both(&documents, &means);
            for m in [0.013, 0.7, 5.0, 120.0, 9000.0, 1e9] {
                let scale = general.log_evidence(m).abs().max(1.0);
                assert!((small.log_evidence(m) - general.log_evidence(m)).abs() < 1e-11 * scale);
                let (a, b) = (small.scaled_gradient(m), general.scaled_gradient(m));
                let (ap, bp) = general.increasing_parts(m);
                assert!(
                    (a - b).abs() < 1e-9 * (ap + bp).max(1.0),
                    "m={m}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn one_cell_per_document_and_flat_tables_give_the_lower_bound() {
        let settings = SolverSettings::default();
        let (small, general) = both(&[vec![25.0, 0.0], vec![0.0, 3.0]], &vec![vec![0.5, 0.5]; 2]);
        assert_eq!(maximise_small(&small, &settings, 1.0).concentration, 1e-2);
        assert_eq!(
            maximise_evidence_from(&general, &settings, 1.0).concentration,
            1e-2
        );
        let (flat, _) = both(&[vec![5.0]], &[vec![1.0]]);
        let s = maximise_small(&flat, &settings, 1.0);
        assert_eq!((s.concentration, s.n_iter), (1e-2, 0));
        assert!(maximise_small(&SmallEvidence::new(), &settings, 1.0).concentration == 1e-2);
    }

    #[test]
    fn fractional_counts_and_full_tables_are_refused() {
        let mut t = SmallEvidence::new();
        assert!(!t.add_document(2.5));
        assert!(t.add_document(3.0));
        assert!(!t.add_cell(0, 1.5, 0.5));
        assert!(!t.add_cell(MAX_DOCUMENTS, 1.0, 0.5));
        let mut full = SmallEvidence::new();
        full.add_document(1e6);
        for _ in 0..MAX_CELLS {
            assert!(full.add_cell(0, 1.0, 0.1));
        }
        assert!(!full.add_cell(1, 1.0, 0.1));
    }
}
