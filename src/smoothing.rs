//! The one smoothing formula of the library (SPEC eqs. 1, 8, 9, 10):
//!
//! ```text
//! ln P = ln(N + m mu) - ln(N_total + m)
//! ```
//!
//! a count `N` out of `N_total`, shrunk toward the prior mean `mu` with concentration `m`
//! (`m = K`, `mu = 1/K` is Laplace's add-one). Naive Bayes children, AODE children and the
//! AODE parent term all call it.

/// `ln((count + concentration mean) / (total + concentration))`.
#[inline]
pub fn log_smoothed(count: f64, total: f64, concentration: f64, mean: f64) -> f64 {
    (count + concentration * mean).ln() - (total + concentration).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laplace_is_add_one() {
        // 3 of 10 with K = 4: (3 + 1) / (10 + 4)
        assert!((log_smoothed(3.0, 10.0, 4.0, 0.25) - (4.0_f64 / 14.0).ln()).abs() < 1e-15);
    }
}
