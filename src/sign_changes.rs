//! The most sign changes a sequence can have when some of its signs are unknown.
//!
//! The solver certifies that the evidence gradient changes sign at most once from the
//! signs of a sequence computed in floating point; values within rounding of zero could
//! be of either sign, so they count as whichever sign makes more changes. The count is
//! then an upper bound on the changes of the exact sequence.

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
