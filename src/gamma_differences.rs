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
//!   recurrence shifts `a` above `ASYMPTOTIC_FROM`, and the Stirling / de Moivre
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
    n <= SHORT_SUM_LIMIT && is_whole(n)
}

/// Whether `x` is a whole number, as `x.fract() == 0.0` says, without `fract`'s call to
/// libm's `trunc` (not inlined without SSE4.1, and asked of every count of every small
/// table): below `2^52` by a round trip through `i64`, beyond it every finite float is
/// whole.
pub fn is_whole(x: f64) -> bool {
    const EVERY_FLOAT_WHOLE: f64 = 4_503_599_627_370_496.0; // 2^52
    if x.abs() < EVERY_FLOAT_WHOLE {
        (x as i64) as f64 == x
    } else {
        x.is_finite()
    }
}

/// `x^{-p} - (x + n)^{-p}` for `x > 0`, `n >= 0` and whole `p > 0`, without cancellation;
/// `log_ratio = ln(1 + n / x)` is passed in because every term of a series shares it.
fn power_difference(x: f64, log_ratio: f64, p: i32) -> f64 {
    -x.powi(-p) * (-f64::from(p) * log_ratio).exp_m1()
}

/// Counts from which a series difference `S(x) - S(x + n)` is taken as the plain
/// difference of two Horner sums rather than term by term through `expm1`: each term of
/// `S` is below `x^-1` and so is its rounding error, far below the leading term of the
/// result (`~ n / x` for the digamma, `~ n ln x` for the log-gamma, `~ n^2 / x` for the
/// scaled excess) once `n >= 2`. Two polynomial evaluations instead of six `expm1`.
const PLAIN_SERIES_FROM: f64 = 2.0;

/// `sum_k B_2k / (2k (2k - 1)) z^(1 - 2k)`: the series part of Stirling's `ln Γ(z)`.
fn log_gamma_series(z: f64) -> f64 {
    let inverse_squared = 1.0 / (z * z);
    let sum = BERNOULLI.iter().enumerate().rev().fold(0.0, |acc, (i, b)| {
        let k = (i + 1) as f64;
        b / (2.0 * k * (2.0 * k - 1.0)) + acc * inverse_squared
    });
    sum / z
}

/// `sum_k B_2k / (2k) z^(-2k)`: the series part of `ψ(z)` beyond `ln z - 1 / (2z)`.
fn digamma_series(z: f64) -> f64 {
    digamma_series_at_square(1.0 / (z * z))
}

/// [`digamma_series`] from `z^-2`.
fn digamma_series_at_square(inverse_squared: f64) -> f64 {
    let sum = BERNOULLI.iter().enumerate().rev().fold(0.0, |acc, (i, b)| {
        b / (2.0 * (i + 1) as f64) + acc * inverse_squared
    });
    sum * inverse_squared
}

/// Number of unit steps that lift `a` to at least `ASYMPTOTIC_FROM`.
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
    if n >= PLAIN_SERIES_FROM {
        return value - (log_gamma_series(x) - log_gamma_series(x + n)) - shift;
    }
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
    if n >= SHORT_SUM_LIMIT {
        return large_count_digamma_difference(a, n);
    }
    if a <= n {
        return digamma(a + n) - digamma(a);
    }
    // ψ(a+n) - ψ(a) = [ψ(x+n) - ψ(x)] + sum_{k<r} n / ((a+k)(a+n+k)),  x = a + r
    // (divided in turn: for a tiny count on a tiny a, 1e-175 on 2.6e-174 from a category
    // forgetting has all but erased, the product underflows to 0 and the quotient was inf)
    let r = shift_steps(a);
    let shift: f64 = (0..r)
        .map(|k| {
            let b = a + k as f64;
            n / b / (b + n)
        })
        .sum();
    let x = a + r as f64;
    // ψ(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^{2k})
    let log_ratio = (n / x).ln_1p();
    let mut value = log_ratio + n / (2.0 * x * (x + n));
    if n >= PLAIN_SERIES_FROM {
        return value + digamma_series(x) - digamma_series(x + n) + shift;
    }
    for (i, b) in BERNOULLI.iter().enumerate() {
        let k = (i + 1) as f64;
        value += b / (2.0 * k) * power_difference(x, log_ratio, 2 * i as i32 + 2);
    }
    value + shift
}

/// `ψ(a + n) - ψ(a)` for `n >= SHORT_SUM_LIMIT`: the recurrence lifts `a` to `x >= 10`,
/// then both digammas come from the asymptotic series. `a + n` exceeds `x` by at least
/// `n - 10`, so the series' terms need no care against cancellation (their difference is
/// far below the result `~ ln(1 + n / x)`), and the logarithm of the ratio is
/// `ln_1p((n - r) / x)` (r the steps of the lift): one logarithm and a few divisions in all, where two general
/// digammas cost several times that (large counts are common in class-pooled tables).
fn large_count_digamma_difference(a: f64, n: f64) -> f64 {
    let r = shift_steps(a);
    let shift: f64 = (0..r).map(|k| 1.0 / (a + k as f64)).sum();
    let x = a + r as f64;
    let y = a + n;
    let series = |z: f64| {
        // 1/(2z) + sum_k B_2k / (2k z^{2k})
        let inverse_squared = 1.0 / (z * z);
        let mut power = inverse_squared;
        let mut value = 0.5 / z;
        for (i, b) in BERNOULLI.iter().enumerate() {
            value += b / (2.0 * (i + 1) as f64) * power;
            power *= inverse_squared;
        }
        value
    };
    ((n - r as f64) / x).ln_1p() - series(y) + series(x) + shift
}

/// `a [ψ(a + n) - ψ(a)] - n` for `a > 0`, `n >= 0`: the digamma difference scaled by `a`,
/// less its limit `n` for large `a`, computed without cancellation.
///
/// Why: the evidence gradient `m l'(m)` is a sum of terms `a [ψ(a + n) - ψ(a)]` whose
/// limits `n` cancel exactly (a document's cells add up to its total); what remains is
/// O(n² / a). Summing the whole terms leaves rounding noise of the size of `n` once `a`
/// is about 1e16 n, and the solver then read the sign of noise. This excess is O(n² / a)
/// itself, so the sum keeps its digits for any `a`:
///
/// * whole `n` up to [`SHORT_SUM_LIMIT`]: `-sum_{k<n} k / (a + k)` exactly;
/// * `a <= n` or `a` below `ASYMPTOTIC_FROM`: the plain difference (no large cancellation);
/// * otherwise the asymptotic series of [`digamma_difference`] at `x = a`, times `a`, with
///   `a ln(1 + n/a) - n` written as `n h(n/a)`, `h(q) = (ln(1 + q) - q) / q`, summed as a
///   power series for small `q`.
pub fn scaled_digamma_excess(a: f64, n: f64) -> f64 {
    if n == 0.0 {
        return 0.0;
    }
    if is_short_whole(n) {
        return -(1..n as usize)
            .map(|k| k as f64 / (a + k as f64))
            .sum::<f64>();
    }
    if a <= n || a < ASYMPTOTIC_FROM {
        return scaled_digamma_difference(a, n) - n;
    }
    let q = n / a;
    let mut value = n * log_ratio_excess(q) + n / (2.0 * (a + n));
    if n >= PLAIN_SERIES_FROM {
        return value + a * (digamma_series(a) - digamma_series(a + n));
    }
    let log_ratio = q.ln_1p();
    for (i, b) in BERNOULLI.iter().enumerate() {
        let k = (i + 1) as f64;
        value += a * b / (2.0 * k) * power_difference(a, log_ratio, 2 * i as i32 + 2);
    }
    value
}

/// Below this, `a = m mu` is a cell's concentration share that only a prior mean of
/// almost nothing gives (a category whose pooled weight is ~1e-300 of its feature's, from
/// weights spanning that range or a category forgetting has all but erased), and
/// `ψ(a) ~ -1/a` overflows: the cell's terms are taken scaled by `a`
/// ([`scaled_digamma_difference`], [`scaled_trigamma_difference`]).
pub const TINY_SHARE: f64 = 1e-280;

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// `a [ψ(a + n) - ψ(a)]` for `a >= 0`, `n > 0`, finite however small `a` is: its limit at
/// `a = 0` is 1 (a cell of a seen category adds `ln m` to the evidence whatever its mean,
/// so a mean that underflowed to 0 still counts). Above [`TINY_SHARE`] the plain product.
pub fn scaled_digamma_difference(a: f64, n: f64) -> f64 {
    if a >= TINY_SHARE {
        return a * digamma_difference(a, n);
    }
    if n == 0.0 {
        return 0.0;
    }
    // a ψ(a) = -1 - γ a + O(a²); a ψ(a + n) from ψ where a + n is not tiny itself, else
    // from ψ(x) = -1/x - γ + O(x)
    let upper = if a + n >= TINY_SHARE {
        a * digamma(a + n)
    } else {
        -a / (a + n) - EULER_GAMMA * a
    };
    upper + 1.0 + EULER_GAMMA * a
}

/// Below this `ψ'(a) ~ 1 / a²` overflows: [`scaled_trigamma_difference`] takes its limit.
pub const TINY_CURVATURE_SHARE: f64 = 1e-150;

/// `a² [ψ'(a + n) - ψ'(a)]` for `a >= 0`, `n > 0`, finite however small `a` is (limit -1
/// at `a = 0`), as [`scaled_digamma_difference`]: `a² ψ'(a) = 1 + O(a²)`. Above
/// [`TINY_CURVATURE_SHARE`] the plain product.
pub fn scaled_trigamma_difference(a: f64, n: f64) -> f64 {
    if a >= TINY_CURVATURE_SHARE {
        return a * a * trigamma_difference(a, n);
    }
    if n == 0.0 {
        return 0.0;
    }
    let upper = if a + n >= 1e-100 {
        a * a * trigamma(a + n)
    } else {
        let share = a / (a + n);
        share * share
    };
    upper - 1.0
}

/// `h(q) = (ln(1 + q) - q) / q` for `q > 0`, as a power series for small `q` (where the
/// difference cancels).
fn log_ratio_excess(q: f64) -> f64 {
    if q < 0.1 {
        // -q/2 + q²/3 - q³/4 + ...: 16 terms leave less than 0.1^16 relative
        (2..18).rev().fold(0.0, |acc, j| {
            let sign = if j % 2 == 0 { -1.0 } else { 1.0 };
            sign / j as f64 + q * acc
        }) * q
    } else {
        (q.ln_1p() - q) / q
    }
}

/// `(scaled_digamma_excess(a, n), newton_trigamma_difference(a, n))`, what a Newton step
/// beyond the document totals needs of each term. Where both take their asymptotic
/// series (a concentration above the counts, counts beyond the short sums: the common
/// interior case of wide data) the series share the reciprocals of `a` and `a + n`,
/// two divisions per term where the two functions apart take five; elsewhere each in full.
pub fn scaled_excess_and_newton_curvature(a: f64, n: f64) -> (f64, f64) {
    let asymptotic = !is_short_whole(n)
        && n >= PLAIN_SERIES_FROM
        && a > n
        && a >= ASYMPTOTIC_FROM
        && a >= SHORT_TRIGAMMA_FROM;
    if !asymptotic {
        return (
            scaled_digamma_excess(a, n),
            newton_trigamma_difference(a, n),
        );
    }
    let (inverse_a, inverse_b) = (1.0 / a, 1.0 / (a + n));
    let (square_a, square_b) = (inverse_a * inverse_a, inverse_b * inverse_b);
    let excess = n * log_ratio_excess(n * inverse_a)
        + 0.5 * n * inverse_b
        + a * (digamma_series_at_square(square_a) - digamma_series_at_square(square_b));
    let curvature =
        short_trigamma_series(inverse_b, square_b) - short_trigamma_series(inverse_a, square_a);
    (excess, curvature)
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

/// Argument from which [`newton_trigamma_difference`] sums the short series.
const SHORT_TRIGAMMA_FROM: f64 = 8.0;

/// `ψ'(a + n) - ψ'(a)` to ~1e-8 relative, for the curvature of a Newton step (which needs
/// no more: an error `ε` in the slope adds `ε` times the step to the next iterate's
/// error, far below the square of the step that Newton's method leaves anyway). From
/// `a >= 8`, `ψ'(z) = 1/z + 1/(2 z^2) + 1/(6 z^3) - 1/(30 z^5) + 1/(42 z^7) - 1/(30 z^9)`,
/// truncated before `5/(66 z^11)` (below 1e-11 there; its change between the two
/// arguments below 1e-9 of the difference), at both arguments: two divisions and a few
/// products, where [`trigamma_difference`] sums the whole series (and the shift below 10)
/// twice. Whole counts up to [`SHORT_SUM_LIMIT`] and small `a` take the exact
/// [`trigamma_difference`].
pub fn newton_trigamma_difference(a: f64, n: f64) -> f64 {
    if a < SHORT_TRIGAMMA_FROM || is_short_whole(n) {
        return trigamma_difference(a, n);
    }
    let series = |z: f64| {
        let inverse = 1.0 / z;
        short_trigamma_series(inverse, inverse * inverse)
    };
    series(a + n) - series(a)
}

/// `ψ'(z)` from `1 / z` and `z^-2` by the first four Bernoulli terms of its series, by
/// Horner's rule ([`newton_trigamma_difference`]).
fn short_trigamma_series(inverse: f64, inverse_squared: f64) -> f64 {
    let tail = BERNOULLI[..4]
        .iter()
        .rev()
        .fold(0.0, |acc, b| b + acc * inverse_squared);
    inverse * (1.0 + inverse * (0.5 + inverse * tail))
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
    fn tiny_arguments_do_not_overflow_the_recurrence() {
        // a count forgetting has all but erased, on the tiny mean it pools to: for a and n
        // far below 1, ψ(a + n) - ψ(a) = 1/a - 1/(a + n) + O(n) to the last digit; the
        // product a (a + n) underflows to 0 from about a = 1e-162
        for (a, n) in [
            (2.6e-174, 2.6e-175),
            (3e-200, 1e-201),
            (1e-150, 5e-151),
            (2e-300, 1e-301),
        ] {
            let expected = n / a / (a + n);
            let found = digamma_difference(a, n);
            assert!(
                close(found, expected, 1e-14),
                "a = {a}, n = {n}: {found} vs {expected}"
            );
            let excess = scaled_digamma_excess(a, n);
            assert!(
                close(excess, n / (a + n) - n, 1e-14),
                "a = {a}, n = {n}: {excess}"
            );
        }
    }

    #[test]
    fn scaled_differences_reach_their_limits_below_the_tiny_share() {
        // just below TINY_SHARE the scaled forms agree with the plain products just above
        // (the same function on either side), and at a = 0 they are 1 and -1: a seen cell's
        // ln m; with a and n both tiny, a ψ-difference is n / (a + n)
        for n in [0.5, 1.0, 3.0, 17.25, 1e6] {
            let above = scaled_digamma_difference(TINY_SHARE * 1.0001, n);
            let below = scaled_digamma_difference(TINY_SHARE * 0.9999, n);
            assert!(close(below, above, 1e-12), "n = {n}: {below} vs {above}");
            assert_eq!(scaled_digamma_difference(0.0, n), 1.0);
            let above = scaled_trigamma_difference(TINY_CURVATURE_SHARE * 1.0001, n);
            let below = scaled_trigamma_difference(TINY_CURVATURE_SHARE * 0.9999, n);
            assert!(close(below, above, 1e-12), "n = {n}: {below} vs {above}");
            assert_eq!(scaled_trigamma_difference(0.0, n), -1.0);
        }
        for (a, n) in [(1e-320, 3e-318), (5e-324, 5e-324), (1e-300, 1e-295)] {
            let expected = n / (a + n);
            assert!(
                close(scaled_digamma_difference(a, n), expected, 1e-12),
                "{a}, {n}"
            );
            let share = a / (a + n);
            assert!(close(
                scaled_trigamma_difference(a, n),
                share * share - 1.0,
                1e-12
            ));
        }
    }

    #[test]
    fn is_whole_agrees_with_fract() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e-300,
            3.0 - 1e-15,
            2f64.powi(52) - 0.5,
            2f64.powi(52),
            2f64.powi(53) + 2.0,
            9.3e18,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -7.25,
            4503599627370495.5,
        ];
        values.extend((0..2000).map(|k| k as f64 * 0.125 - 50.0));
        for x in values {
            assert_eq!(is_whole(x), x.fract() == 0.0, "{x}");
        }
    }

    #[test]
    fn plain_series_differences_match_the_term_by_term_ones() {
        // S(x) - S(x + n) as two Horner sums (n >= PLAIN_SERIES_FROM) against the
        // cancellation-free expm1 form, term by term
        for &x in &[10.0, 37.5, 3333.3, 1e6, 1e12, 2e19] {
            for &n in &[2.0, 2.5, 17.25, 33.0, 400.0, 1e5] {
                let log_ratio = f64::ln_1p(n / x);
                let (mut log_gamma, mut digamma) = (0.0, 0.0);
                for (i, b) in BERNOULLI.iter().enumerate() {
                    let k = (i + 1) as f64;
                    log_gamma += b / (2.0 * k * (2.0 * k - 1.0))
                        * power_difference(x, log_ratio, 2 * i as i32 + 1);
                    digamma += b / (2.0 * k) * power_difference(x, log_ratio, 2 * i as i32 + 2);
                }
                let plain = log_gamma_series(x) - log_gamma_series(x + n);
                // against the smallest leading term of the results the series correct
                let (leading_log_gamma, leading_digamma) = (n * x.ln(), log_ratio);
                assert!(
                    (plain - log_gamma).abs() <= 1e-16 * leading_log_gamma,
                    "{x} {n}"
                );
                let plain = digamma_series(x) - digamma_series(x + n);
                assert!(
                    (plain - digamma).abs() <= 1e-16 * leading_digamma,
                    "{x} {n}"
                );
                // the scaled excess: its result is ~ n^2 / x
                let excess = x * (plain - digamma);
                assert!(excess.abs() <= 1e-15 * n * n / x, "{x} {n}");
            }
        }
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
    fn scaled_excess_matches_high_precision_values() {
        // a [ψ(a + n) - ψ(a)] - n from mpmath at 50 digits; the 1e300 row is the
        // leading term -n (n - 1) / (2a), exact there to ~1e-300.
        let cases = [
            (1e6, 2.5, -1.8749975000035156e-6),
            (1e12, 40.0, -7.7999999997946e-10),
            (1e20, 0.3, 1.049_999_999_998_717e-21),
            (1e300, 7.75, -7.75 * 6.75 / 2e300),
            (15.0, 7.25, -1.169_672_871_600_371),
            (5.0, 0.5, 2.4877400749753255e-2),
            (990.0, 1000.0, -3.0854555553232066e+2),
            (0.01, 3.0, -1.9851238855228806),
            (2.0, 50.5, -4.34430504164878e+1),
            (1e5, 1.0000001, -4.999_983_836_247_66e-13),
            (3e3, 17.0, -4.516_779_315_139_135e-2),
        ];
        for (a, n, expected) in cases {
            let found = scaled_digamma_excess(a, n);
            assert!(
                close(found, expected, 1e-9),
                "a={a} n={n}: {found} vs {expected}"
            );
        }
        assert_eq!(scaled_digamma_excess(3.0, 1.0), 0.0);
    }

    #[test]
    fn newton_trigamma_difference_is_close_to_the_full_one() {
        // the short series against the whole one (and against the exact finite sum for
        // whole counts beyond the short sums), relative to the difference itself
        let mut worst: f64 = 0.0;
        for &a in &[0.5, 5.9, 6.0, 7.3, 12.0, 40.0, 333.3, 1e4, 1e8] {
            for &n in &[0.5, 1.0, 3.0, 33.0, 47.0, 250.0, 1e3, 1e5] {
                let (fast, full) = (newton_trigamma_difference(a, n), trigamma_difference(a, n));
                // both are differences of two values ~ 1 / a: rounding of those aside
                let slack = 1e-14 / a;
                let relative = ((fast - full).abs() - slack).max(0.0) / full.abs();
                worst = worst.max((fast - full).abs() / full.abs());
                assert!(relative < 1e-8, "a={a} n={n}: {fast} vs {full}");
                if n.fract() == 0.0 && n <= 1e3 {
                    let exact: f64 = -(0..n as usize)
                        .map(|k| (a + k as f64).powi(-2))
                        .sum::<f64>();
                    let error = ((fast - exact).abs() - slack).max(0.0) / exact.abs();
                    assert!(error < 1e-8, "a={a} n={n}: {fast} vs {exact}");
                }
            }
        }
        // the short series is really in use (not the full one everywhere)
        assert!(worst > 1e-14, "{worst}");
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

    #[test]
    fn fused_excess_and_curvature_match_the_two_functions() {
        let mut asymptotic = 0;
        for a in [0.3, 4.0, 9.5, 12.0, 60.0, 333.3, 1.0e3, 2.5e4, 1.0e7] {
            for n in [0.0, 1.0, 2.0, 7.0, 33.0, 40.5, 111.0, 600.0, 1.0e4] {
                let (excess, curvature) = scaled_excess_and_newton_curvature(a, n);
                let (expected_excess, expected_curvature) = (
                    scaled_digamma_excess(a, n),
                    newton_trigamma_difference(a, n),
                );
                assert!(close(excess, expected_excess, 1e-13), "a={a} n={n}");
                assert!(close(curvature, expected_curvature, 1e-12), "a={a} n={n}");
                // against statrs' digamma where its difference keeps enough digits
                if a <= 1e3 {
                    let direct = a * (digamma(a + n) - digamma(a)) - n;
                    assert!(
                        (excess - direct).abs() <= 1e-9 * (n + excess.abs()).max(1e-12),
                        "a={a} n={n}: {excess} vs {direct}"
                    );
                }
                asymptotic += usize::from(n > SHORT_SUM_LIMIT && a > n && a >= 10.0);
            }
        }
        assert!(
            asymptotic >= 8,
            "the shared-series branch: {asymptotic} cases"
        );
    }
}
