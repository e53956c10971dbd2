//! The most sign changes a sequence can have when some of its signs are unknown, and the
//! shape certificate of the evidence gradient built on it.
//!
//! The solver certifies that the evidence gradient changes sign at most once from the
//! signs of a sequence computed in floating point; values within rounding of zero could
//! be of either sign, so they count as whichever sign makes more changes. The count is
//! then an upper bound on the changes of the exact sequence.
//!
//! With whole counts `l'(m) = sum_i w_i / (m + q_i)` (weight +1 at each cell step's pole
//! `q = k / mu`, -1 at each document step's pole `q = k`), and integrating by parts twice
//! `l'(m) = 2 ∫ V(q) / (m + q)^3 dq` with `W` the cumulative weight and `V = ∫_0^q W`.
//! The kernel is totally positive, so `l'` has at most as many sign changes as `V`
//! (Karlin's variation diminishing property). Between two document poles `V` is convex
//! (only cell poles, which raise `W`, lie there), so on such a piece it is at least its
//! tangent at the left end: [`SignChanges::observe_convex_piece`]. The unit-interval walk
//! of [`shape_from_buckets`] applies it to every `[j, j + 1)`.

/// What the signs of `l'` over all `m > 0` can be, as certified from `V`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradientShape {
    /// `l' > 0` everywhere: the evidence rises to the upper bound.
    Rising,
    /// `l' < 0` everywhere.
    Falling,
    /// `l'` changes sign at most once: a single local maximum (or minimum) at most.
    AtMostOneChange,
    /// Not certified: `l'` may change sign several times.
    Unknown,
}

/// One unit interval `[j, j + 1)` of the pole axis.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bucket {
    /// Weight of the document poles at `q = j` (to be subtracted from `W`).
    pub fall: f64,
    /// Documents whose total is `j` (the caller turns them into `fall` of the buckets below).
    pub ending: f64,
    /// Number of cell poles in the interval.
    pub rise: f64,
    /// Sum of `j + 1 - q` over those poles.
    pub area: f64,
}

/// The shape of `l'` from the unit intervals `[j, j + 1)` of the pole axis up to the last
/// document pole: `weight_at_zero` is the weight of the step-0 poles at `q = 0` (cells
/// less documents), `tail_area` is `sum (q - last)` over the cell poles beyond the last
/// bucket (after which `W` is 0 and `V` constant).
pub fn shape_from_buckets(
    buckets: &[Bucket],
    weight_at_zero: f64,
    tail_area: f64,
) -> GradientShape {
    let mut w = weight_at_zero;
    let mut v = 0.0;
    let mut magnitude = 0.0;
    let mut signs = SignChanges::new();
    for b in buckets {
        w -= b.fall;
        let next = v + w + b.area;
        magnitude += w.abs() + b.area;
        signs.observe_convex_piece(v, w, 1.0, next, 1e-12 * magnitude);
        v = next;
        w += b.rise;
    }
    magnitude += tail_area;
    signs.observe(v - tail_area, 1e-12 * magnitude);
    signs.shape()
}

/// Running count over a sequence of observed signs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SignChanges {
    /// Most changes of a reading of the sequence so far that ends positive (None: none can).
    ending_positive: Option<usize>,
    /// The same, ending negative.
    ending_negative: Option<usize>,
    /// Whether some observation may have been positive.
    any_positive: bool,
    /// Whether some observation may have been negative.
    any_negative: bool,
}

impl SignChanges {
    /// No observation yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observes `value`, whose sign is known only where it is farther than `tolerance` from 0
    /// (a NaN could be of either sign).
    pub fn observe(&mut self, value: f64, tolerance: f64) {
        if value.is_nan() {
            self.observe_sign(true, true);
        } else {
            self.observe_sign(value >= -tolerance, value <= tolerance);
        }
    }

    /// Observes a value known only to be of one of the allowed signs.
    pub fn observe_sign(&mut self, may_be_positive: bool, may_be_negative: bool) {
        let extend = |same: Option<usize>, other: Option<usize>| match (same, other) {
            (None, None) => Some(0),
            (same, other) => same.max(other.map(|n| n + 1)),
        };
        let positive = may_be_positive
            .then(|| extend(self.ending_positive, self.ending_negative))
            .flatten();
        let negative = may_be_negative
            .then(|| extend(self.ending_negative, self.ending_positive))
            .flatten();
        self.ending_positive = positive;
        self.ending_negative = negative;
        self.any_positive |= may_be_positive;
        self.any_negative |= may_be_negative;
    }

    /// The most sign changes of any reading of the observed sequence.
    pub fn most(&self) -> usize {
        self.ending_positive.max(self.ending_negative).unwrap_or(0)
    }

    /// Observes a convex piece of `V` of length `length` from its value `v` at the left end,
    /// its right slope `w` there and its value `next` at the right end: the piece dips
    /// below its ends by at most `-min(0, w) length` (the tangent at the left end).
    pub fn observe_convex_piece(&mut self, v: f64, w: f64, length: f64, next: f64, tolerance: f64) {
        let dip = v + w.min(0.0) * length;
        if dip < -tolerance && v.min(next) > tolerance {
            self.observe_sign(true, true);
        }
        self.observe(next, tolerance);
    }

    /// The certified shape of `l'` when the observations are the signs of `V` in order.
    pub fn shape(&self) -> GradientShape {
        match self.most() {
            0 if self.never_negative() => GradientShape::Rising,
            0 if self.never_positive() => GradientShape::Falling,
            0 | 1 => GradientShape::AtMostOneChange,
            _ => GradientShape::Unknown,
        }
    }

    /// Whether every reading is non-negative (no observation could be negative).
    pub fn never_negative(&self) -> bool {
        !self.any_negative
    }

    /// Whether every reading is non-positive.
    pub fn never_positive(&self) -> bool {
        !self.any_positive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(values: &[f64], tolerance: f64) -> SignChanges {
        let mut changes = SignChanges::new();
        for &v in values {
            changes.observe(v, tolerance);
        }
        changes
    }

    #[test]
    fn known_signs_are_counted_exactly() {
        assert_eq!(count(&[1.0, 2.0, -1.0, -3.0, 4.0], 0.0).most(), 2);
        assert_eq!(count(&[1.0, 2.0, 3.0], 0.0).most(), 0);
        assert!(count(&[1.0, 2.0, 3.0], 0.0).never_negative());
        assert!(count(&[-1.0, -2.0], 0.0).never_positive());
        assert_eq!(count(&[], 0.0).most(), 0);
    }

    #[test]
    fn unknown_signs_count_against_the_certificate() {
        // + ? +  could be + - +: two changes
        let c = count(&[1.0, 1e-20, 2.0], 1e-12);
        assert_eq!(c.most(), 2);
        assert!(!c.never_negative());
        // + ? - : at most one
        assert_eq!(count(&[1.0, 0.0, -1.0], 1e-12).most(), 1);
        // only unknowns: could be + - + ...
        assert_eq!(count(&[0.0, 0.0, 0.0], 1e-12).most(), 2);
        // a NaN is of unknown sign, never a certificate
        let c = count(&[1.0, f64::NAN, 2.0], 1e-12);
        assert_eq!(c.most(), 2);
        assert!(!c.never_negative() && !c.never_positive());
    }
}
