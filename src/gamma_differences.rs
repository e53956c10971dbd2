//! Differences of the log-gamma, digamma and trigamma functions at `a + n` and `a`:
//!
//! ```text
//! ln Γ(a + n) - ln Γ(a),    ψ(a + n) - ψ(a),    ψ'(a + n) - ψ'(a)     (a > 0, n >= 0)
//! ```
//!
//! These are the only special functions the Dirichlet-multinomial evidence (SPEC eq. 5)
//! and its derivatives need. Computing them as differences of two function values loses
//! every digit when `a >> n` (both values are ~ ln a, the difference ~ n / a), which is
//! exactly the regime of a large concentration spread over a high-cardinality feature
//! (a = m mu_v tiny or huge, n = 1). So:
//!
//! * whole `n` up to [`SHORT_SUM_LIMIT`]: the exact finite sums
//!   `sum_{k<n} ln(a + k)`, `sum_{k<n} 1 / (a + k)`, `-sum_{k<n} 1 / (a + k)^2`;
//! * `a <= n` (no cancellation): statrs' `ln_gamma` / `digamma` on both arguments;
//! * otherwise (fractional counts from sample weights or forgetting, `a > n`): the
//!   recurrence shifts `a` above [`ASYMPTOTIC_FROM`], and the Stirling / de Moivre
//!   asymptotic series is subtracted term by term in a form without cancellation:
//!   `ln((x + n) / x)` as `ln_1p(n / x)` and `x^-k - (x + n)^-k` as
//!   `-x^-k expm1(-k ln_1p(n / x))`.

use statrs::function::gamma::{digamma, ln_gamma};

/// Largest whole count summed term by term.
pub const SHORT_SUM_LIMIT: f64 = 32.0;

/// Argument above which the asymptotic series is used (error below 1e-17 relative).
const ASYMPTOTIC_FROM: f64 = 10.0;

/// Bernoulli numbers B_2, B_4, ..., B_12.
const BERNOULLI: [f64; 6] = [
    1.0 / 6.0,
    -1.0 / 30.0,
    1.0 / 42.0,
    -1.0 / 30.0,
    5.0 / 66.0,
    -691.0 / 2730.0,
];

fn is_short_whole(n: f64) -> bool {
    n <= SHORT_SUM_LIMIT && n.fract() == 0.0
}

/// `x^{-p} - (x + n)^{-p}` for `x > 0`, `n >= 0` and whole `p > 0`, without cancellation;
/// `log_ratio = ln(1 + n / x)` is passed in because every term of a series shares it.
fn power_difference(x: f64, log_ratio: f64, p: i32) -> f64 {
    -x.powi(-p) * (-f64::from(p) * log_ratio).exp_m1()
}

/// Number of unit steps that lift `a` to at least [`ASYMPTOTIC_FROM`].
fn shift_steps(a: f64) -> usize {
    if a >= ASYMPTOTIC_FROM {
        0
    } else {
        (ASYMPTOTIC_FROM - a).ceil() as usize
    }
}

/// `ln Γ(a + n) - ln Γ(a)` for `a > 0`, `n >= 0`.
pub fn ln_gamma_difference(a: f64, n: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if is_short_whole(n) && a < 1e30 {
        // one logarithm per product of up to 8 factors (each below 1e31: no overflow)
        let mut sum = 0.0;
        let mut product = 1.0;
        for k in 0..n as usize {
            product *= a + k as f64;
            if k % 8 == 7 {
                sum += product.ln();
                product = 1.0;
            }
        }
        return sum + product.ln();
    }
    if is_short_whole(n) {
        return (0..n as usize).map(|k| (a + k as f64).ln()).sum();
    }
    if a <= n {
        return ln_gamma(a + n) - ln_gamma(a);
    }
    // ln Γ(a+n) - ln Γ(a) = [ln Γ(x+n) - ln Γ(x)] - sum_{k<r} ln(1 + n / (a + k)),  x = a + r
    let r = shift_steps(a);
    let shift: f64 = (0..r).map(|k| (n / (a + k as f64)).ln_1p()).sum();
    let x = a + r as f64;
    // Stirling: (x+n-1/2) ln(x+n) - (x-1/2) ln x - n + sum_k B_2k / (2k(2k-1)) [(x+n)^{1-2k} - x^{1-2k}]
    let log_ratio = (n / x).ln_1p();
    let mut value = (x - 0.5) * log_ratio + n * (x + n).ln() - n;
    for (i, b) in BERNOULLI.iter().enumerate() {
        let k = (i + 1) as f64;
        let p = 2 * i as i32 + 1;
        value -= b / (2.0 * k * (2.0 * k - 1.0)) * power_difference(x, log_ratio, p);
    }
    value - shift
}

/// `ψ(a + n) - ψ(a)` for `a > 0`, `n >= 0`.
pub fn digamma_difference(a: f64, n: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if is_short_whole(n) {
        return (0..n as usize).map(|k| 1.0 / (a + k as f64)).sum();
    }
    if a <= n {
        return digamma(a + n) - digamma(a);
    }
    // ψ(a+n) - ψ(a) = [ψ(x+n) - ψ(x)] + sum_{k<r} n / ((a+k)(a+n+k)),  x = a + r
    let r = shift_steps(a);
    let shift: f64 = (0..r)
        .map(|k| {
            let b = a + k as f64;
            n / (b * (b + n))
        })
        .sum();
    let x = a + r as f64;
    // ψ(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^{2k})
    let log_ratio = (n / x).ln_1p();
    let mut value = log_ratio + n / (2.0 * x * (x + n));
    for (i, b) in BERNOULLI.iter().enumerate() {
        let k = (i + 1) as f64;
        value += b / (2.0 * k) * power_difference(x, log_ratio, 2 * i as i32 + 2);
    }
    value + shift
}

/// `ψ'(x)` for `x > 0`, by recurrence to `x >= 10` and the asymptotic series.
pub fn trigamma(x: f64) -> f64 {
    let r = shift_steps(x);
    let shift: f64 = (0..r).map(|k| (x + k as f64).powi(-2)).sum();
    let z = x + r as f64;
    // ψ'(z) ~ 1/z + 1/(2 z^2) + sum_k B_2k / z^{2k+1}; the powers by repeated
    // multiplication (this sits in every Newton step)
    let inverse = 1.0 / z;
    let inverse_squared = inverse * inverse;
    let mut value = inverse + 0.5 * inverse_squared;
    let mut power = inverse * inverse_squared;
    for b in BERNOULLI {
        value += b * power;
        power *= inverse_squared;
    }
    value + shift
}

/// `(ψ(a + n) - ψ(a), ψ'(a + n) - ψ'(a))` in one pass: what a Newton step needs.
pub fn digamma_trigamma_difference(a: f64, n: f64) -> (f64, f64) {
    if n == 0.0 {
        return (0.0, 0.0);
    }
    if is_short_whole(n) {
        let (mut first, mut second) = (0.0, 0.0);
        for k in 0..n as usize {
            let inverse = 1.0 / (a + k as f64);
            first += inverse;
            second -= inverse * inverse;
        }
        return (first, second);
    }
    (digamma_difference(a, n), trigamma_difference(a, n))
}

/// `ψ'(a + n) - ψ'(a)` for `a > 0`, `n >= 0` (non-positive).
///
/// Only Newton steps use it, so it needs good, not last-digit, accuracy.
pub fn trigamma_difference(a: f64, n: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if is_short_whole(n) {
        return -(0..n as usize)
            .map(|k| (a + k as f64).powi(-2))
            .sum::<f64>();
    }
    trigamma(a + n) - trigamma(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gamma_difference_reference::REFERENCE;

    fn close(found: f64, expected: f64, rel: f64) -> bool {
        (found - expected).abs() <= rel * expected.abs().max(1e-300)
    }

    #[test]
    fn short_sums_match_the_recurrence() {
        // ψ(a+3) - ψ(a) = 1/a + 1/(a+1) + 1/(a+2) exactly.
        let a = 0.37;
        let expected = 1.0 / a + 1.0 / (a + 1.0) + 1.0 / (a + 2.0);
        assert!(close(digamma_difference(a, 3.0), expected, 1e-15));
        let expected = a.ln() + (a + 1.0).ln() + (a + 2.0).ln();
        assert!(close(ln_gamma_difference(a, 3.0), expected, 1e-14));
    }

    #[test]
    fn all_branches_agree_where_they_overlap() {
        // a <= n uses statrs, a > n the shifted asymptotic series: at a = n both are accurate.
        for &(a, n) in &[(40.5, 40.5), (3.25, 3.25), (0.75, 0.75), (120.0, 120.0)] {
            let via_statrs = digamma(a + n) - digamma(a);
            let shifted = {
                // force the asymptotic branch by nudging a just above n
                digamma_difference(a * (1.0 + 1e-13), n)
            };
            assert!(close(shifted, via_statrs, 1e-11), "{a} {n}");
            let via_statrs = ln_gamma(a + n) - ln_gamma(a);
            let shifted = ln_gamma_difference(a * (1.0 + 1e-13), n);
            assert!(close(shifted, via_statrs, 1e-11), "{a} {n}");
        }
    }

    #[test]
    fn matches_high_precision_reference() {
        for &(a, n, ln_gamma_diff, digamma_diff) in REFERENCE {
            let found = ln_gamma_difference(a, n);
            assert!(
                close(found, ln_gamma_diff, 1e-13),
                "lnΓ a={a} n={n}: {found} vs {ln_gamma_diff}"
            );
            let found = digamma_difference(a, n);
            assert!(
                close(found, digamma_diff, 1e-13),
                "ψ a={a} n={n}: {found} vs {digamma_diff}"
            );
        }
    }

    #[test]
    fn trigamma_matches_known_values() {
        // ψ'(1) = π²/6, ψ'(1/2) = π²/2.
        let pi2 = std::f64::consts::PI.powi(2);
        assert!(close(trigamma(1.0), pi2 / 6.0, 1e-14));
        assert!(close(trigamma(0.5), pi2 / 2.0, 1e-14));
        for &(a, n) in &[(0.3, 7.0), (2.5, 1.5), (40.0, 100.0)] {
            let (first, second) = digamma_trigamma_difference(a, n);
            assert!(close(first, digamma_difference(a, n), 1e-14));
            assert!(close(second, trigamma_difference(a, n), 1e-14));
        }
        // ψ'(a+1) - ψ'(a) = -1/a² exactly.
        assert!(close(trigamma_difference(2.5, 1.0), -1.0 / 6.25, 1e-15));
        assert!(close(
            trigamma(2.5 + 1.5) - trigamma(2.5),
            trigamma_difference(2.5, 1.5),
            1e-12
        ));
    }
}
