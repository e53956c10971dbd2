//! The Dirichlet-multinomial evidence of count vectors under a Dirichlet prior with a
//! fixed mean and an unknown concentration m (SPEC eq. 5, and eq. 11 for several
//! documents sharing m):
//!
//! ```text
//! l(m) = sum_d [ ln Γ(m) - ln Γ(N_d + m) + sum_v ( ln Γ(n_dv + m mu_dv) - ln Γ(m mu_dv) ) ]
//! ```
//!
//! Only cells with `n_dv > 0` contribute (the terms vanish otherwise), so the cost is
//! O(non-zero cells). For a whole count `n` up to [`SHORT_SUM_LIMIT`] a cell's terms are
//! finite sums over its steps `k < n`:
//!
//! ```text
//! ln Γ(n + m mu) - ln Γ(m mu) = sum_k ln(m mu + k),    d/dm = sum_k 1 / (m + k / mu)
//! ```
//!
//! The step `k = 0` gives `ln m + ln mu`, `1/m` and `-1/m^2` whatever the cell's mean, so it
//! is one tally over all such cells (Minka's count-histogram idea: in sparse
//! high-cardinality tables most cells are ones and have no other step). Every other step
//! is one number, its pole `k / mu`, and every derivative is a sum of `1 / (m + pole)`
//! over a flat array: one division per step, no branch, no special function. Documents
//! with small whole totals are tallied the same way by step (their means are all 1), and
//! the remaining cells and documents (fractional or large counts) go through
//! [`crate::gamma_differences`].

use crate::gamma_differences::{
    digamma_difference, digamma_trigamma_difference, ln_gamma_difference,
    scaled_digamma_difference, scaled_digamma_excess, scaled_trigamma_difference, SHORT_SUM_LIMIT,
    TINY_CURVATURE_SHARE, TINY_SHARE,
};
pub use crate::sign_changes::GradientShape;
use crate::sign_changes::{shape_from_buckets, Bucket};

/// Steps `k = 1..SHORT_STEPS` of a short document total (totals up to [`SHORT_SUM_LIMIT`]).
const SHORT_STEPS: usize = SHORT_SUM_LIMIT as usize;

/// Sufficient statistics of `l(m)` for one or more documents that share `m`.
#[derive(Debug, Clone)]
pub struct EvidenceTerms {
    /// Number of documents with a whole total up to [`SHORT_SUM_LIMIT`] (their step 0).
    short_documents: f64,
    /// `document_steps[k]`: how many of those documents have a total above `k` (their step
    /// `k`, `1 <= k`) once [`Self::finish`] has run; entry 0 is unused.
    document_steps: [f64; SHORT_STEPS],
    /// Largest short document total (0 when there is none).
    largest_short_total: f64,
    /// The other document totals as (total, multiplicity), merged once [`Self::finish`] runs.
    long_totals: Vec<(f64, f64)>,
    /// Number of cells with a whole count up to [`SHORT_SUM_LIMIT`] (their step 0).
    short_cells: f64,
    /// Poles `k / mu` of the steps `1 <= k < n` of those cells.
    poles: Vec<f64>,
    /// Poles shared by several cells of the same count and mean, as (pole, number of
    /// cells): [`Self::add_equal_cells`] (a uniform mean over a vocabulary gives every
    /// cell of count n the same poles, so a distribution costs its distinct counts).
    shared_poles: Vec<(f64, f64)>,
    /// Sum of `n ln mu` over the short cells (a constant of `l`, kept so `l` is exact).
    short_log_mean: f64,
    /// Product of means not yet folded into `short_log_mean`: one logarithm per many
    /// factors instead of one per cell.
    short_mean_product: f64,
    /// The other cells (fractional counts or counts above [`SHORT_SUM_LIMIT`]): (count, mean).
    long_cells: Vec<(f64, f64)>,
    /// Whether every counted cell has mean 1 (then `l` is flat).
    every_mean_is_one: bool,
}

impl Default for EvidenceTerms {
    fn default() -> Self {
        Self {
            short_documents: 0.0,
            document_steps: [0.0; SHORT_STEPS],
            largest_short_total: 0.0,
            long_totals: Vec::new(),
            short_cells: 0.0,
            poles: Vec::new(),
            shared_poles: Vec::new(),
            short_log_mean: 0.0,
            short_mean_product: 1.0,
            long_cells: Vec::new(),
            every_mean_is_one: true,
        }
    }
}

/// Whether a positive count is summed step by step: whole and at most [`SHORT_SUM_LIMIT`].
fn is_short(n: f64) -> bool {
    n <= SHORT_SUM_LIMIT && n == f64::from(n as u8)
}

/// A long cell's `mu [ψ(n + m mu) - ψ(m mu)]`. Where `m mu` is below [`TINY_SHARE`] (a
/// category whose pooled weight is all but nothing next to its feature's, down to a mean
/// that underflowed to 0) it is taken as `(m mu) [ψ(n + m mu) - ψ(m mu)] / m`: the plain
/// product overflowed to inf or NaN and sent the solver to a bound, where the cell's true
/// share tends to `1 / m`, the `ln m` any seen category adds.
fn long_cell_gradient(m: f64, n: f64, mu: f64) -> f64 {
    let a = m * mu;
    if a < TINY_SHARE {
        scaled_digamma_difference(a, n) / m
    } else {
        mu * digamma_difference(a, n)
    }
}

/// `(sum 1 / (m + p), sum 1 / (m + p)^2)` over the poles `p`, in four interleaved lanes
/// (a fixed order: the same sum on every thread count, and one the compiler vectorises).
fn pole_sums(poles: &[f64], m: f64) -> (f64, f64) {
    let mut first = [0.0; 4];
    let mut second = [0.0; 4];
    let chunks = poles.chunks_exact(4);
    let rest = chunks.remainder();
    for chunk in chunks {
        for lane in 0..4 {
            let r = 1.0 / (m + chunk[lane]);
            first[lane] += r;
            second[lane] += r * r;
        }
    }
    for &p in rest {
        let r = 1.0 / (m + p);
        first[0] += r;
        second[0] += r * r;
    }
    (
        (first[0] + first[1]) + (first[2] + first[3]),
        (second[0] + second[1]) + (second[2] + second[3]),
    )
}

/// `sum 1 / (m + p)` over the poles, as [`pole_sums`] without the squares.
fn pole_sum(poles: &[f64], m: f64) -> f64 {
    let mut first = [0.0; 4];
    let chunks = poles.chunks_exact(4);
    let rest = chunks.remainder();
    for chunk in chunks {
        for lane in 0..4 {
            first[lane] += 1.0 / (m + chunk[lane]);
        }
    }
    for &p in rest {
        first[0] += 1.0 / (m + p);
    }
    (first[0] + first[1]) + (first[2] + first[3])
}

/// `sum ln(m + p)` over the poles: every factor is at least 1 (a pole is `k / mu >= 1`), so
/// the factors are multiplied in four lanes and a lane's product is folded into the sum
/// only when it passes 1e200: one logarithm per many poles instead of one per pole.
fn pole_log_sum(poles: &[f64], m: f64) -> f64 {
    let mut sum = 0.0;
    let mut product = [1.0_f64; 4];
    for chunk in poles.chunks(4) {
        for (lane, &p) in chunk.iter().enumerate() {
            let factor = m + p;
            if factor > 1e100 {
                sum += factor.ln();
                continue;
            }
            product[lane] *= factor;
            if product[lane] > 1e200 {
                sum += product[lane].ln();
                product[lane] = 1.0;
            }
        }
    }
    sum + product.iter().map(|p| p.ln()).sum::<f64>()
}

/// `(sum w / (m + p), sum w / (m + p)^2)` over shared poles `(p, w)`.
fn shared_pole_sums(poles: &[(f64, f64)], m: f64) -> (f64, f64) {
    poles.iter().fold((0.0, 0.0), |(first, second), &(p, w)| {
        let r = 1.0 / (m + p);
        (first + w * r, second + w * r * r)
    })
}

/// `sum w / (m + p)` over shared poles `(p, w)`.
fn shared_pole_sum(poles: &[(f64, f64)], m: f64) -> f64 {
    poles.iter().map(|&(p, w)| w / (m + p)).sum()
}

impl EvidenceTerms {
    /// Empty statistics (no documents).
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty statistics with room for `poles` cell steps beyond the first.
    pub fn with_capacity(poles: usize) -> Self {
        Self {
            poles: Vec::with_capacity(poles),
            ..Self::default()
        }
    }

    /// Adds a document with total count `total` (sum of its cells).
    pub fn add_document(&mut self, total: f64) {
        if total <= 0.0 {
            return;
        }
        if is_short(total) {
            self.short_documents += 1.0;
            // a histogram of totals for now; finish() turns it into step weights
            self.document_steps[total as usize - 1] += 1.0;
            self.largest_short_total = self.largest_short_total.max(total);
        } else {
            self.long_totals.push((total, 1.0));
        }
    }

    /// Adds a cell with count `count` and prior mean `mean` (`mean > 0` when `count > 0`).
    pub fn add_cell(&mut self, count: f64, mean: f64) {
        if count <= 0.0 {
            return;
        }
        self.every_mean_is_one &= mean == 1.0;
        if count == 1.0 && mean > 1e-50 {
            // the common case in sparse tables: step 0 only
            self.short_cells += 1.0;
            self.fold_mean(mean);
            return;
        }
        if !is_short(count) {
            self.long_cells.push((count, mean));
            return;
        }
        self.short_cells += 1.0;
        let steps = count as usize;
        let inverse = 1.0 / mean;
        self.poles.extend((1..steps).map(|k| k as f64 * inverse));
        let power = mean.powi(steps as i32);
        if power > 1e-50 {
            self.fold_mean(power);
        } else {
            self.short_log_mean += count * mean.ln();
        }
    }

    /// Adds `cells` cells that all have the whole count `count` and the mean `mean`, as
    /// `cells` calls of [`Self::add_cell`] would, but their steps once: each step's pole
    /// `k / mu` is stored once with weight `cells`. Counts that are not short go to
    /// [`Self::add_cell`] one cell at a time.
    pub fn add_equal_cells(&mut self, count: f64, mean: f64, cells: f64) {
        if count <= 0.0 || cells <= 0.0 {
            return;
        }
        if !is_short(count) || cells == 1.0 || mean <= 1e-50 {
            for _ in 0..cells as usize {
                self.add_cell(count, mean);
            }
            return;
        }
        self.every_mean_is_one &= mean == 1.0;
        self.short_cells += cells;
        self.short_log_mean += cells * count * mean.ln();
        let inverse = 1.0 / mean;
        self.shared_poles
            .extend((1..count as usize).map(|k| (k as f64 * inverse, cells)));
    }

    /// Multiplies `factor` (at least 1e-50) into the product of the short cells' means,
    /// folding the product into `short_log_mean` before it can underflow.
    fn fold_mean(&mut self, factor: f64) {
        self.short_mean_product *= factor;
        if self.short_mean_product < 1e-250 {
            self.short_log_mean += self.short_mean_product.ln();
            self.short_mean_product = 1.0;
        }
    }

    /// Merges documents with equal totals; call once after the last `add_document`.
    pub fn finish(&mut self) {
        // document_steps[t - 1] held the number of short totals equal to t: the weight of
        // step k is the number above k
        let mut above = 0.0;
        for k in (1..SHORT_STEPS).rev() {
            above += self.document_steps[k];
            self.document_steps[k] = above;
        }
        self.document_steps[0] = 0.0;
        self.long_totals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(self.long_totals.len());
        for &(total, k) in &self.long_totals {
            match merged.last_mut() {
                Some(last) if last.0 == total => last.1 += k,
                _ => merged.push((total, k)),
            }
        }
        self.long_totals = merged;
    }

    /// Whether there is no document with a positive total (then `l` is flat in `m`).
    pub fn is_empty(&self) -> bool {
        self.short_documents == 0.0 && self.long_totals.is_empty()
    }

    /// Whether every count and document total is a whole number (no fractional weights),
    /// where the poles prove the gradient's shape ([`Self::gradient_shape`]).
    pub fn has_whole_counts(&self) -> bool {
        let whole = |v: f64| v.fract() == 0.0;
        self.long_cells.iter().all(|&(n, _)| whole(n))
            && self.long_totals.iter().all(|&(t, _)| whole(t))
    }

    /// Steps `1..largest short total` of the short documents, with their weights.
    fn short_document_steps(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let used = (self.largest_short_total as usize).max(1);
        self.document_steps[1..used]
            .iter()
            .enumerate()
            .map(|(k, &weight)| ((k + 1) as f64, weight))
    }

    /// `m l'(m)` as the difference of its two increasing parts, `(A(m), B(m))`, for any
    /// counts and totals. Each cell and document contributes `h_n(x) = x (ψ(x + n) - ψ(x))`
    /// (`x = m mu` or `m`; for whole `n` the sum `sum_{j<n} x / (x + j)`), which rises
    /// from 1 to `n` when `n > 1` and falls from 1 to `n` when `n < 1`: it is the slope of
    /// the secant of `q^n` from `q = e^-t` to 1, averaged over `t`, and that slope grows
    /// with `q` for convex `q^n`. So a cell's `h` goes to `A` and a document's to `B`, except
    /// where they fall: such a term is `1 - (1 - h)`, its rising part `1 - h` on the other
    /// side and the constant 1 on its own:
    ///
    /// ```text
    /// A(m) = sum_{cells n >= 1} h_n(m mu) + sum_{cells n < 1} 1 + sum_{docs N < 1} (1 - h_N(m))
    /// B(m) = sum_{docs N >= 1} h_N(m) + sum_{docs N < 1} 1 + sum_{cells n < 1} (1 - h_n(m mu))
    /// ```
    ///
    /// On `[m_a, m_b]` the gradient then lies between `A(m_a) - B(m_b)` and
    /// `A(m_b) - B(m_a)`: an interval where that range excludes 0 holds no maximum, which
    /// lets the solver skip most of the interval unevaluated (fractional counts, from
    /// sample weights or forgetting, included).
    pub fn increasing_parts(&self, m: f64) -> (f64, f64) {
        let (mut rising, mut falling) = (0.0, 0.0);
        for &(n, mu) in &self.long_cells {
            let h = scaled_digamma_difference(m * mu, n);
            if n >= 1.0 {
                rising += h;
            } else {
                rising += 1.0;
                falling += 1.0 - h;
            }
        }
        for &(total, k) in &self.long_totals {
            let h = m * digamma_difference(m, total);
            if total >= 1.0 {
                falling += k * h;
            } else {
                falling += k;
                rising += k * (1.0 - h);
            }
        }
        let cells = self.short_cells
            + m * (pole_sum(&self.poles, m) + shared_pole_sum(&self.shared_poles, m));
        let short_documents: f64 = self
            .short_document_steps()
            .map(|(k, weight)| weight * m / (m + k))
            .sum();
        (
            cells + rising,
            self.short_documents + short_documents + falling,
        )
    }

    /// What the signs of `l'` over `m > 0` can be, for whole counts ([`GradientShape::Unknown`]
    /// otherwise), in one pass over the poles: no gradient evaluated.
    ///
    /// With whole counts `l'(m) = sum_i w_i / (m + q_i)`: weight +1 at each cell step's pole
    /// `q = k / mu`, -1 at each document step's pole `q = k`, and the step-0 terms at
    /// `q = 0`; the weights add up to 0 (the cells of a document add up to its total).
    /// Integrating by parts twice, `l'(m) = 2 ∫ V(q) / (m + q)^3 dq` with `W` the cumulative
    /// weight and `V(q) = ∫_0^q W`. The kernel `1 / (m + q)^3` is totally positive, so
    /// `l'` has at most as many sign changes as `V` (Karlin's variation diminishing
    /// property); `V` is piecewise linear and, between two integers, convex (only cell
    /// poles lie strictly between document poles), so its signs at the integers and a
    /// lower bound inside each unit interval bound its sign changes. On real AODE tables
    /// `V` rarely changes sign more than once even where `W` changes sign many times.
    pub fn gradient_shape(&self) -> GradientShape {
        if !self.has_whole_counts() || self.is_flat() {
            return GradientShape::Unknown;
        }
        let largest_total = self
            .long_totals
            .last()
            .map_or(0.0, |&(total, _)| total)
            .max(self.largest_short_total);
        // the pass costs O(largest total): not worth it (nor affordable) where that dwarfs
        // the terms a gradient evaluation sums
        let budget = 64.0
            + 4.0
                * (self.poles.len()
                    + self.shared_poles.len()
                    + self.long_cells.len()
                    + self.long_totals.len()) as f64;
        if largest_total > budget {
            return GradientShape::Unknown;
        }
        let buckets = largest_total as usize;
        // one allocation for the unit intervals [j, j + 1) of the pole axis
        let mut bucket = vec![Bucket::default(); buckets + 1];
        // document steps: weight of the pole at q = j for j in 1..buckets
        for (k, weight) in self.short_document_steps() {
            bucket[k as usize].fall += weight;
        }
        for &(total, multiplicity) in &self.long_totals {
            bucket[total as usize].ending += multiplicity;
        }
        let mut above = 0.0;
        for j in (1..buckets).rev() {
            above += bucket[j + 1].ending;
            bucket[j].fall += above;
        }
        // cell poles by unit interval: their number and sum of (j + 1 - q); poles beyond
        // the last document pole only add (q - largest_total) to the tail
        let limit = largest_total;
        let mut tail_area = 0.0;
        let mut place = |q: f64, weight: f64| {
            if q < limit {
                let j = q as usize;
                bucket[j].rise += weight;
                bucket[j].area += weight * ((j + 1) as f64 - q);
            } else {
                tail_area += weight * (q - limit);
            }
        };
        for &q in &self.poles {
            place(q, 1.0);
        }
        for &(q, weight) in &self.shared_poles {
            place(q, weight);
        }
        let mut closed_form_tail = 0.0;
        let mut placed = 0.0;
        for &(n, mu) in &self.long_cells {
            let steps = n as usize;
            placed += (largest_total * mu).min(n);
            if placed > budget {
                return GradientShape::Unknown;
            }
            for k in 1..steps {
                let q = k as f64 / mu;
                if q >= limit {
                    // the remaining steps k..n-1 all lie beyond: their sum in closed form
                    let remaining = (steps - k) as f64;
                    let step_sum = (k + steps - 1) as f64 * remaining / 2.0;
                    closed_form_tail += step_sum / mu - limit * remaining;
                    break;
                }
                place(q, 1.0);
            }
        }
        let tail_area = tail_area + closed_form_tail;
        shape_from_buckets(&bucket[..buckets], self.cells_less_documents(), tail_area)
    }

    /// The non-zero cells less the documents: the limit of `m l'(m)` as `m -> 0` (each
    /// term `a [ψ(a + n) - ψ(a)]` tends to 1), so the gradient is positive near 0 where
    /// this is.
    pub fn cells_less_documents(&self) -> f64 {
        let long_documents: f64 = self.long_totals.iter().map(|&(_, k)| k).sum();
        self.short_cells + self.long_cells.len() as f64 - self.short_documents - long_documents
    }

    /// Whether `l` is flat in `m`: no document, every counted cell has prior mean 1 (a
    /// single category), where each document's terms cancel and `l = 0` for every `m`, or
    /// every document is one whole row, where `l = sum ln mu` of its cells for every `m`.
    /// The solver then answers `m_min` (SPEC's rule for a flat evidence) rather than an end
    /// its gradient's rounding would pick.
    pub fn is_flat(&self) -> bool {
        self.is_empty() || self.every_mean_is_one || self.every_document_is_one_row()
    }

    /// Whether every document's total is 1 and its one cell whole (then
    /// `ln Γ(m) - ln Γ(1 + m) + ln Γ(1 + m mu) - ln Γ(m mu) = ln mu`).
    fn every_document_is_one_row(&self) -> bool {
        self.long_totals.is_empty() && self.long_cells.is_empty() && self.largest_short_total <= 1.0
    }

    /// `l(m)`, the log evidence.
    pub fn log_evidence(&self, m: f64) -> f64 {
        let short_documents: f64 = self
            .short_document_steps()
            .map(|(k, weight)| weight * (m + k).ln())
            .sum();
        let long_documents: f64 = self
            .long_totals
            .iter()
            .map(|&(total, k)| k * ln_gamma_difference(m, total))
            .sum();
        let documents = self.short_documents * m.ln() + short_documents + long_documents;
        let poles = pole_log_sum(&self.poles, m)
            + self
                .shared_poles
                .iter()
                .map(|&(p, w)| w * (m + p).ln())
                .sum::<f64>();
        let long_cells: f64 = self
            .long_cells
            .iter()
            .map(|&(n, mu)| ln_gamma_difference(m * mu, n))
            .sum();
        let cells = self.short_cells * m.ln()
            + poles
            + self.short_log_mean
            + self.short_mean_product.ln()
            + long_cells;
        cells - documents
    }

    /// `dl/dm`.
    pub fn gradient(&self, m: f64) -> f64 {
        let long_cells: f64 = self
            .long_cells
            .iter()
            .map(|&(n, mu)| long_cell_gradient(m, n, mu))
            .sum();
        let short_documents: f64 = self
            .short_document_steps()
            .map(|(k, weight)| weight / (m + k))
            .sum();
        let long_documents: f64 = self
            .long_totals
            .iter()
            .map(|&(total, k)| k * digamma_difference(m, total))
            .sum();
        (self.short_cells - self.short_documents) / m
            + pole_sum(&self.poles, m)
            + shared_pole_sum(&self.shared_poles, m)
            + long_cells
            - short_documents
            - long_documents
    }

    /// `(dl/dm, d²l/dm²)` in one pass over the terms (a Newton step needs both).
    pub fn gradient_and_curvature(&self, m: f64) -> (f64, f64) {
        let (pole_first, pole_second) = pole_sums(&self.poles, m);
        let (shared_first, shared_second) = shared_pole_sums(&self.shared_poles, m);
        let mut gradient = self.short_cells / m + pole_first + shared_first;
        let mut curvature = -self.short_cells / (m * m) - pole_second - shared_second;
        for &(n, mu) in &self.long_cells {
            if m * mu < TINY_CURVATURE_SHARE {
                // (a mean of almost nothing: the curvature scaled by m mu, as the gradient is
                // in long_cell_gradient; the trigamma difference overflows from a larger
                // share than the digamma's)
                gradient += long_cell_gradient(m, n, mu);
                curvature += scaled_trigamma_difference(m * mu, n) / (m * m);
                continue;
            }
            let (first, second) = digamma_trigamma_difference(m * mu, n);
            gradient += mu * first;
            curvature += mu * mu * second;
        }
        gradient -= self.short_documents / m;
        curvature += self.short_documents / (m * m);
        for (k, weight) in self.short_document_steps() {
            let r = 1.0 / (m + k);
            gradient -= weight * r;
            curvature += weight * r * r;
        }
        for &(total, k) in &self.long_totals {
            let (first, second) = digamma_trigamma_difference(m, total);
            gradient -= k * first;
            curvature -= k * second;
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
        m >= self.largest_short_total && self.long_totals.iter().all(|&(total, _)| m >= total)
    }

    /// `m l'(m)` as the sum of the terms' excesses over their cancelling limits: a step
    /// `k >= 1` of a short count contributes `m / (m + pole) - 1 = -pole / (m + pole)`,
    /// step 0 nothing.
    fn summed_excesses(&self, m: f64) -> f64 {
        let short_documents: f64 = self
            .short_document_steps()
            .map(|(k, weight)| weight * k / (m + k))
            .sum();
        let long_documents: f64 = self
            .long_totals
            .iter()
            .map(|&(total, k)| -k * scaled_digamma_excess(m, total))
            .sum();
        let poles: f64 = self.poles.iter().map(|&p| -p / (m + p)).sum::<f64>()
            + self
                .shared_poles
                .iter()
                .map(|&(p, w)| -w * p / (m + p))
                .sum::<f64>();
        let long_cells: f64 = self
            .long_cells
            .iter()
            .map(|&(n, mu)| scaled_digamma_excess(m * mu, n))
            .sum();
        short_documents + long_documents + poles + long_cells
    }

    /// `d²l/dm²`.
    pub fn curvature(&self, m: f64) -> f64 {
        self.gradient_and_curvature(m).1
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
