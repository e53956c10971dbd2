//! A preconditioned L-BFGS for smooth convex objectives without bounds: the optimiser of the
//! discriminative weights (docs/discriminative.md, "Computation").
//!
//! Nocedal and Wright, Algorithms 7.4 and 7.5: the two-loop recursion over the last
//! `memory` corrections, whose initial inverse Hessian is a diagonal `D` (the inverse of the
//! objective's Hessian diagonal, estimated by the caller) scaled at each iteration by
//! `s'y / y'Dy` (their eq. 7.20 with a diagonal `D`). The line search backtracks from the
//! quasi-Newton step 1, each shorter step the minimiser of a quadratic fitted to the values
//! and slope seen, until Armijo's sufficient decrease holds or, near the optimum where the
//! decrease drowns in the rounding of the value, until the approximate Wolfe conditions of
//! Hager and Zhang (2005) hold, which the gradient measures far more finely than the value.
//!
//! Why not the `argmin` crate: its L-BFGS scales the initial inverse Hessian by a scalar,
//! where the weights need the diagonal (a weight on a value seen twice and one on a value
//! seen 5,000 times differ in curvature by three orders of magnitude), and it would bring a
//! dependency tree for some 150 lines. Why not scipy's L-BFGS-B driving the Rust objective:
//! its bound-constrained step costs far more than one pass over the rows at 10^5-10^6
//! weights, and the weights have no bounds. The numpy version this replaces
//! (`hebnb.weighting`) spent most of an AODE fit allocating its 625,000-entry vectors.
//!
//! Determinism: the dot products of long vectors run in parallel over fixed chunks and are
//! added in chunk order, so every iterate is bit-identical for any number of threads.

use rayon::prelude::*;

use crate::error::{check_len, with_capacity, zeroed, HebError, Result};
use crate::interrupt;

/// Entries per parallel chunk of a vector operation (fixed: the sums must not depend on the
/// number of threads). The objective's passes over the weight vector use it too.
pub(crate) const VECTOR_CHUNK: usize = 1 << 14;

/// Vectors shorter than this are handled on the calling thread.
const PARALLEL_FROM: usize = 1 << 16;

/// Armijo's sufficient-decrease constant.
const ARMIJO: f64 = 1e-4;

/// Shortenings of the step before the line search gives up.
const MAX_BACKTRACKS: usize = 60;

/// What stops the iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LbfgsSettings {
    /// Converged when no gradient entry exceeds it in magnitude.
    pub gradient_tolerance: f64,
    /// Iterations at most.
    pub max_iter: usize,
    /// Corrections kept.
    pub memory: usize,
}

/// Where L-BFGS stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct LbfgsResult {
    /// The last iterate.
    pub theta: Vec<f64>,
    /// The objective there.
    pub value: f64,
    /// Its gradient there.
    pub gradient: Vec<f64>,
    /// Iterations done.
    pub n_iter: usize,
    /// Whether the gradient tolerance was reached (false: the iteration limit, or no
    /// decrease within floating-point precision).
    pub converged: bool,
}

/// Independent partial sums of a product (added in a fixed order at the end): one
/// running sum would wait on each addition's latency.
const LANES: usize = 4;

/// `sum_k a_k b_k` with entry `k` summed in lane `k mod LANES`.
pub(crate) fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0; LANES];
    let (mut a4, mut b4) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    for (p, q) in (&mut a4).zip(&mut b4) {
        for lane in 0..LANES {
            sums[lane] += p[lane] * q[lane];
        }
    }
    for (lane, (p, q)) in a4.remainder().iter().zip(b4.remainder()).enumerate() {
        sums[lane] += p * q;
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3])
}

/// `x . y`, in fixed chunks added in order.
fn dot(x: &[f64], y: &[f64]) -> f64 {
    if x.len() < PARALLEL_FROM {
        return lane_dot(x, y);
    }
    let partial: Vec<f64> = x
        .par_chunks(VECTOR_CHUNK)
        .zip(y.par_chunks(VECTOR_CHUNK))
        .map(|(a, b)| lane_dot(a, b))
        .collect();
    partial.iter().sum()
}

/// `y += alpha x`.
fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    let update = |(y, x): (&mut [f64], &[f64])| {
        y.iter_mut().zip(x).for_each(|(b, a)| *b += alpha * a);
    };
    if y.len() < PARALLEL_FROM {
        update((y, x));
    } else {
        y.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK))
            .for_each(update);
    }
}

/// The largest magnitude of an entry (0 for an empty vector).
fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// The stored corrections `(s, y, 1 / y's)`, oldest first.
struct Corrections {
    memory: usize,
    pairs: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)>,
}

impl Corrections {
    /// Stores a correction (reusing the oldest one's buffers once `memory` are held).
    fn push(&mut self, s: &[f64], y: &[f64], sy: f64) -> Result<()> {
        if self.memory == 0 {
            return Ok(());
        }
        let (mut s_new, mut y_new) = if self.pairs.len() == self.memory {
            let (s_old, y_old, _) = self.pairs.pop_front().expect("memory > 0");
            (s_old, y_old)
        } else {
            (
                with_capacity(s.len(), "L-BFGS corrections")?,
                with_capacity(s.len(), "L-BFGS corrections")?,
            )
        };
        s_new.clear();
        s_new.extend_from_slice(s);
        y_new.clear();
        y_new.extend_from_slice(y);
        self.pairs.push_back((s_new, y_new, 1.0 / sy));
        Ok(())
    }

    /// `direction = -H gradient` by the two-loop recursion, `H_0 = gamma D`.
    fn direction(
        &self,
        gradient: &[f64],
        diagonal: Option<&[f64]>,
        direction: &mut [f64],
        alphas: &mut Vec<f64>,
    ) {
        direction
            .iter_mut()
            .zip(gradient)
            .for_each(|(d, g)| *d = -g);
        alphas.clear();
        for (s, y, rho) in self.pairs.iter().rev() {
            let alpha = rho * dot(s, direction);
            axpy(-alpha, y, direction);
            alphas.push(alpha);
        }
        if let Some((s, y, _)) = self.pairs.back() {
            let y_dy = match diagonal {
                None => dot(y, y),
                Some(d) => y.iter().zip(d).map(|(a, b)| a * a * b).sum(),
            };
            let gamma = dot(s, y) / y_dy;
            direction.iter_mut().for_each(|d| *d *= gamma);
        }
        if let Some(d) = diagonal {
            direction.iter_mut().zip(d).for_each(|(x, h)| *x *= h);
        }
        for ((s, y, rho), alpha) in self.pairs.iter().zip(alphas.iter().rev()) {
            let beta = rho * dot(y, direction);
            axpy(alpha - beta, s, direction);
        }
    }
}

/// The next trial step after `step` failed the line search: the minimiser of the quadratic
/// through the value and slope at 0 and the value at `step` (Nocedal and Wright, eq. 3.57),
/// kept within 0.1-0.5 of `step`; half of it where the value is not finite.
fn shorter_step(step: f64, value: f64, slope: f64, new_value: f64) -> f64 {
    // Armijo failed, so new_value > value + step slope: the quadratic is convex
    let curvature = new_value - value - slope * step;
    if curvature.is_finite() && curvature > 0.0 {
        (-slope * step * step / (2.0 * curvature)).clamp(0.1 * step, 0.5 * step)
    } else {
        0.5 * step
    }
}

/// Minimises `objective` from `start`.
///
/// `objective(theta, gradient)` returns the value at `theta` and writes the gradient;
/// `inverse_curvature` is the diagonal `D` of the initial inverse Hessian (None: the
/// identity, and a first step no longer than 1 in any entry).
///
/// # Errors
/// `inverse_curvature` of another length than `start`, an objective's error (returned as
/// it is), an objective that is not finite at the start, and [`HebError::Allocation`].
pub fn minimise<F>(
    mut objective: F,
    start: &[f64],
    inverse_curvature: Option<&[f64]>,
    settings: LbfgsSettings,
) -> Result<LbfgsResult>
where
    F: FnMut(&[f64], &mut [f64]) -> Result<f64>,
{
    let n = start.len();
    if let Some(d) = inverse_curvature {
        check_len("L-BFGS inverse curvature", n, d.len())?;
    }
    let mut theta = start.to_vec();
    let mut gradient = zeroed(n, "L-BFGS gradient")?;
    let mut value = objective(&theta, &mut gradient)?;
    if !value.is_finite() {
        return Err(HebError::InvalidParameter(
            "the objective is not finite at the starting point".into(),
        ));
    }
    let mut candidate = zeroed(n, "L-BFGS candidate")?;
    let mut new_gradient = zeroed(n, "L-BFGS candidate gradient")?;
    let mut direction = zeroed(n, "L-BFGS direction")?;
    let mut s = zeroed(n, "L-BFGS step")?;
    let mut y = zeroed(n, "L-BFGS gradient change")?;
    // no more corrections than iterations can be held, whatever `memory` asks for
    let memory = settings.memory.min(settings.max_iter);
    let mut alphas = with_capacity(memory, "L-BFGS correction weights")?;
    let mut pairs = std::collections::VecDeque::new();
    pairs
        .try_reserve_exact(memory)
        .map_err(|_| HebError::Allocation {
            what: "L-BFGS corrections",
            bytes: memory as u128 * 64,
        })?;
    let mut corrections = Corrections { memory, pairs };
    let finish = |theta, value, gradient: Vec<f64>, n_iter, tolerance: f64| {
        let converged = max_abs(&gradient) <= tolerance;
        Ok(LbfgsResult {
            theta,
            value,
            gradient,
            n_iter,
            converged,
        })
    };
    for n_iter in 0..settings.max_iter {
        interrupt::check()?;
        if max_abs(&gradient) <= settings.gradient_tolerance {
            return finish(theta, value, gradient, n_iter, settings.gradient_tolerance);
        }
        corrections.direction(&gradient, inverse_curvature, &mut direction, &mut alphas);
        let mut slope = dot(&gradient, &direction);
        if slope.is_nan() || slope >= 0.0 {
            // not a descent direction: restart from (scaled) steepest descent
            corrections.pairs.clear();
            for (k, (d, g)) in direction.iter_mut().zip(&gradient).enumerate() {
                *d = -g * inverse_curvature.map_or(1.0, |h| h[k]);
            }
            slope = dot(&gradient, &direction);
        }
        let mut step = if !corrections.pairs.is_empty() || inverse_curvature.is_some() {
            1.0
        } else {
            (1.0 / max_abs(&gradient)).min(1.0)
        };
        let mut accepted = None;
        for _ in 0..MAX_BACKTRACKS {
            candidate
                .iter_mut()
                .zip(theta.iter().zip(&direction))
                .for_each(|(c, (t, d))| *c = t + step * d);
            let new_value = objective(&candidate, &mut new_gradient)?;
            if new_value <= value + ARMIJO * step * slope {
                accepted = Some(new_value);
                break;
            }
            let new_slope = dot(&new_gradient, &direction);
            let within_rounding = new_value <= value + 1e-12 * value.abs();
            if within_rounding && 0.9 * slope <= new_slope && new_slope <= -0.9998 * slope {
                accepted = Some(new_value);
                break;
            }
            step = shorter_step(step, value, slope, new_value);
        }
        let Some(new_value) = accepted else {
            // no decrease within floating-point precision: as close as it gets
            let result = finish(theta, value, gradient, n_iter, settings.gradient_tolerance)?;
            return Ok(LbfgsResult {
                converged: false,
                ..result
            });
        };
        for k in 0..n {
            s[k] = candidate[k] - theta[k];
            y[k] = new_gradient[k] - gradient[k];
        }
        std::mem::swap(&mut theta, &mut candidate);
        std::mem::swap(&mut gradient, &mut new_gradient);
        value = new_value;
        let sy = dot(&s, &y);
        if sy > 1e-12 * dot(&s, &s) {
            // keeps the update positive definite
            corrections.push(&s, &y, sy)?;
        }
    }
    finish(
        theta,
        value,
        gradient,
        settings.max_iter,
        settings.gradient_tolerance,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::with_threads;

    const SETTINGS: LbfgsSettings = LbfgsSettings {
        gradient_tolerance: 1e-10,
        max_iter: 1000,
        memory: 10,
    };

    /// Rosenbrock's function in `n` dimensions (minimum 0 at all ones).
    fn rosenbrock(x: &[f64], g: &mut [f64]) -> Result<f64> {
        g.iter_mut().for_each(|v| *v = 0.0);
        let mut value = 0.0;
        for k in 0..x.len() - 1 {
            let (a, b) = (x[k + 1] - x[k] * x[k], 1.0 - x[k]);
            value += 100.0 * a * a + b * b;
            g[k] += -400.0 * x[k] * a - 2.0 * b;
            g[k + 1] += 200.0 * a;
        }
        Ok(value)
    }

    #[test]
    fn finds_the_minimum_of_rosenbrock() {
        let start: Vec<f64> = (0..6)
            .map(|k| if k % 2 == 0 { -1.2 } else { 1.0 })
            .collect();
        let fit = minimise(rosenbrock, &start, None, SETTINGS).unwrap();
        assert!(fit.converged, "{fit:?}");
        for v in &fit.theta {
            assert!((v - 1.0).abs() < 1e-8, "{fit:?}");
        }
    }

    /// A badly scaled convex quadratic `1/2 sum c_k (x_k - t_k)^2` plus a coupling term.
    fn quadratic(x: &[f64], g: &mut [f64]) -> Result<f64> {
        let mut value = 0.0;
        let coupling: f64 = x.iter().sum::<f64>() - 3.0;
        for (k, (v, gk)) in x.iter().zip(g.iter_mut()).enumerate() {
            let c = 10f64.powi((k % 5) as i32 - 2);
            let t = (k as f64).sin();
            value += 0.5 * c * (v - t) * (v - t);
            *gk = c * (v - t) + 0.1 * coupling;
        }
        Ok(value + 0.05 * coupling * coupling)
    }

    #[test]
    fn the_diagonal_preconditioner_reaches_the_same_optimum_in_fewer_iterations() {
        let n = 50;
        let start = vec![0.0; n];
        let settings = LbfgsSettings {
            gradient_tolerance: 1e-8,
            ..SETTINGS
        };
        let plain = minimise(quadratic, &start, None, settings).unwrap();
        let diagonal: Vec<f64> = (0..n)
            .map(|k| 1.0 / (10f64.powi((k % 5) as i32 - 2) + 0.1))
            .collect();
        let preconditioned = minimise(quadratic, &start, Some(&diagonal), settings).unwrap();
        assert!(
            plain.converged && preconditioned.converged,
            "{} {} {} {}",
            plain.n_iter,
            plain.converged,
            preconditioned.n_iter,
            preconditioned.converged
        );
        assert!(preconditioned.n_iter < plain.n_iter, "{preconditioned:?}");
        for (a, b) in plain.theta.iter().zip(&preconditioned.theta) {
            assert!((a - b).abs() < 1e-5);
        }
    }

    #[test]
    fn long_vectors_give_the_same_iterates_for_any_thread_count() {
        let n = PARALLEL_FROM + VECTOR_CHUNK / 2 + 17;
        let start = vec![0.5; n];
        let limited = LbfgsSettings {
            max_iter: 30,
            ..SETTINGS
        };
        let runs: Vec<LbfgsResult> = [1, 2, 3]
            .iter()
            .map(|&t| {
                with_threads(t, || minimise(quadratic, &start, None, limited))
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert_eq!(runs[0].n_iter, 30);
        assert_eq!(runs[0], runs[1]);
        assert_eq!(runs[0], runs[2]);
    }

    #[test]
    fn a_shorter_step_is_the_interpolated_minimiser_within_its_bounds() {
        // f(t) = (t - 0.3)^2 along the direction: value 0.09 and slope -0.6 at 0
        let f = |t: f64| (t - 0.3) * (t - 0.3);
        assert!((shorter_step(1.0, f(0.0), -0.6, f(1.0)) - 0.3).abs() < 1e-15);
        // a minimiser at 0.01 of the step gives 0.1 of it; one at 0.9 of it
        // (f(t) = (t - 1.8)^2 - 3.24 over a step of 2) gives 0.5 of it
        let g = |t: f64| (t - 0.01) * (t - 0.01);
        assert_eq!(shorter_step(1.0, g(0.0), -0.02, g(1.0) + 1.0), 0.1);
        assert_eq!(shorter_step(2.0, 0.0, -3.6, -3.2), 1.0);
        assert_eq!(shorter_step(1.0, 0.0, -1.0, f64::INFINITY), 0.5);
        assert_eq!(shorter_step(1.0, 0.0, -1.0, f64::NAN), 0.5);
    }

    #[test]
    fn errors_and_limits() {
        let fit = minimise(
            rosenbrock,
            &[-1.2, 1.0],
            None,
            LbfgsSettings {
                max_iter: 2,
                ..SETTINGS
            },
        )
        .unwrap();
        assert!(!fit.converged);
        assert_eq!(fit.n_iter, 2);
        assert!(minimise(rosenbrock, &[0.0, 0.0], Some(&[1.0]), SETTINGS).is_err());
        let infinite = |_: &[f64], _: &mut [f64]| Ok(f64::INFINITY);
        assert!(minimise(infinite, &[0.0], None, SETTINGS).is_err());
        let failing = |_: &[f64], _: &mut [f64]| Err(HebError::Interrupted);
        assert_eq!(
            minimise(failing, &[0.0], None, SETTINGS),
            Err(HebError::Interrupted)
        );
    }
}
