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

/// Vectors shorter than this (two chunks) are handled on the calling thread. From two
/// chunks on, splitting an operation between threads pays: on an amazon-employee fold's
/// 38,743 weights the two-loop recursion ran on one thread (the threshold was four
/// chunks), and its weight fit took 8% longer on two threads.
const PARALLEL_FROM: usize = 2 * VECTOR_CHUNK;

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

/// Entries a fused update writes before it reads them back into its dot product: few
/// enough to stay in the first-level cache in between.
const FUSED_BLOCK: usize = 1 << 10;

/// The running lanes of [`lane_dot`], fed slice by slice: every slice but the last must
/// hold a whole number of lanes, so that the sum is the one of the whole vector at once.
#[derive(Default)]
struct LaneSums([f64; LANES]);

impl LaneSums {
    /// Adds `sum_k a_k b_k`, entry `k` in lane `k mod LANES`.
    fn add(&mut self, a: &[f64], b: &[f64]) {
        let sums = &mut self.0;
        let (mut a4, mut b4) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
        for (p, q) in (&mut a4).zip(&mut b4) {
            for lane in 0..LANES {
                sums[lane] += p[lane] * q[lane];
            }
        }
        for (lane, (p, q)) in a4.remainder().iter().zip(b4.remainder()).enumerate() {
            sums[lane] += p * q;
        }
    }

    fn total(&self) -> f64 {
        let sums = &self.0;
        (sums[0] + sums[1]) + (sums[2] + sums[3])
    }
}

/// `sum_k a_k b_k` with entry `k` summed in lane `k mod LANES`.
pub(crate) fn lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = LaneSums::default();
    sums.add(a, b);
    sums.total()
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

/// Applies `update(offset, entries)` to the entries of `target` from `offset` on, then
/// returns `other . target` (0 without `other`), in one pass: bit for bit the update of
/// the whole vector followed by [`dot`], for about half the memory traffic. Long vectors
/// run in parallel over the chunks of [`dot`].
fn update_then_dot<U>(target: &mut [f64], other: Option<&[f64]>, update: U) -> f64
where
    U: Fn(usize, &mut [f64]) + Sync,
{
    let chunk = |offset: usize, entries: &mut [f64]| {
        let mut sums = LaneSums::default();
        for (block, part) in entries.chunks_mut(FUSED_BLOCK).enumerate() {
            let at = offset + block * FUSED_BLOCK;
            update(at, part);
            if let Some(other) = other {
                sums.add(&other[at..at + part.len()], part);
            }
        }
        sums.total()
    };
    if target.len() < PARALLEL_FROM {
        return chunk(0, target);
    }
    let partial: Vec<f64> = target
        .par_chunks_mut(VECTOR_CHUNK)
        .enumerate()
        .map(|(k, entries)| chunk(k * VECTOR_CHUNK, entries))
        .collect();
    partial.iter().sum()
}

/// `y += alpha x[offset..]`: one block of an update of [`update_then_dot`].
fn axpy_from(alpha: f64, x: &[f64], offset: usize, y: &mut [f64]) {
    y.iter_mut()
        .zip(&x[offset..])
        .for_each(|(b, a)| *b += alpha * a);
}

/// The largest magnitude of an entry (0 for an empty vector; NaN entries are passed over,
/// as `f64::max` does), in [`LANES`] running maxima and, for long vectors, the chunks of
/// [`dot`] in parallel: one running maximum waited on each comparison's latency, a serial
/// pass over every weight at each iteration. The maximum does not depend on the order.
fn max_abs(x: &[f64]) -> f64 {
    let lanes = |x: &[f64]| {
        let mut maxima = [0.0f64; LANES];
        let mut quads = x.chunks_exact(LANES);
        for quad in &mut quads {
            for (m, v) in maxima.iter_mut().zip(quad) {
                *m = m.max(v.abs());
            }
        }
        for (m, v) in maxima.iter_mut().zip(quads.remainder()) {
            *m = m.max(v.abs());
        }
        maxima.iter().fold(0.0, |a: f64, &b| a.max(b))
    };
    if x.len() < PARALLEL_FROM {
        return lanes(x);
    }
    x.par_chunks(VECTOR_CHUNK)
        .map(lanes)
        .reduce(|| 0.0, f64::max)
}

/// One stored correction: the step `s`, the gradient change `y`, `s'y`, its inverse and
/// `y'Dy` (`D` the initial inverse Hessian's diagonal, or the identity).
struct Correction {
    s: Vec<f64>,
    y: Vec<f64>,
    sy: f64,
    rho: f64,
    y_dy: f64,
}

/// The stored corrections, oldest first, and buffers for the next ones.
struct Corrections {
    memory: usize,
    pairs: std::collections::VecDeque<Correction>,
    spare: Vec<(Vec<f64>, Vec<f64>)>,
}

impl Corrections {
    /// Buffers for the next correction: spare ones (a dropped or rejected pair's) or
    /// fresh ones, so that at most `memory + 1` pairs are ever allocated.
    fn buffers(&mut self, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
        match self.spare.pop() {
            Some(buffers) => Ok(buffers),
            None => Ok((
                zeroed(n, "L-BFGS corrections")?,
                zeroed(n, "L-BFGS corrections")?,
            )),
        }
    }

    /// Stores `(s, y)` with their `s'y` (given with `s's`), dropping the oldest
    /// correction once `memory` are held; or keeps the buffers for later where the pair
    /// would not keep the update positive definite.
    fn push(&mut self, s: Vec<f64>, y: Vec<f64>, sy: f64, ss: f64, diagonal: Option<&[f64]>) {
        // a pair with s'y not clearly positive (or NaN) would not keep the update
        // positive definite
        let keeps_definite = sy > 1e-12 * ss;
        if !keeps_definite {
            self.spare.push((s, y));
            return;
        }
        if self.pairs.len() == self.memory {
            if let Some(oldest) = self.pairs.pop_front() {
                self.spare.push((oldest.s, oldest.y));
            }
        }
        let y_dy = match diagonal {
            None => dot(&y, &y),
            Some(d) => y.iter().zip(d).map(|(a, b)| a * a * b).sum(),
        };
        self.pairs.push_back(Correction {
            s,
            y,
            sy,
            rho: 1.0 / sy,
            y_dy,
        });
    }

    /// Forgets every correction (their buffers are kept).
    fn clear(&mut self) {
        self.spare
            .extend(self.pairs.drain(..).map(|pair| (pair.s, pair.y)));
    }

    /// `direction = -H gradient` by the two-loop recursion, `H_0 = gamma D`, each
    /// update fused with the dot product of the next step ([`update_then_dot`]), the
    /// last with `gradient . direction`, which it returns (the slope along it).
    fn direction(
        &self,
        gradient: &[f64],
        diagonal: Option<&[f64]>,
        direction: &mut [f64],
        alphas: &mut Vec<f64>,
    ) -> f64 {
        let pairs = &self.pairs;
        let n_pairs = pairs.len();
        let s_of = |k: usize| pairs[k].s.as_slice();
        let y_of = |k: usize| pairs[k].y.as_slice();
        let newest = n_pairs.checked_sub(1);
        let mut product = update_then_dot(direction, newest.map(s_of), |at, part| {
            part.iter_mut()
                .zip(&gradient[at..])
                .for_each(|(d, g)| *d = -g);
        });
        alphas.clear();
        for k in (0..n_pairs).rev() {
            let alpha = pairs[k].rho * product;
            let older = k.checked_sub(1).map(s_of);
            product = update_then_dot(direction, older, |at, part| {
                axpy_from(-alpha, y_of(k), at, part)
            });
            alphas.push(alpha);
        }
        let gamma = pairs.back().map(|last| last.sy / last.y_dy);
        let oldest = if n_pairs > 0 { y_of(0) } else { gradient };
        product = update_then_dot(direction, Some(oldest), |at, part| {
            if let Some(gamma) = gamma {
                part.iter_mut().for_each(|d| *d *= gamma);
            }
            if let Some(h) = diagonal {
                part.iter_mut().zip(&h[at..]).for_each(|(d, h)| *d *= h);
            }
        });
        for (k, alpha) in (0..n_pairs).zip(alphas.iter().rev()) {
            let beta = pairs[k].rho * product;
            let newer = if k + 1 < n_pairs {
                y_of(k + 1)
            } else {
                gradient
            };
            product = update_then_dot(direction, Some(newer), |at, part| {
                axpy_from(alpha - beta, s_of(k), at, part)
            });
        }
        product
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

/// Writes the step `s = candidate - theta` and the gradient change `y = new_gradient -
/// gradient`, and returns `(s . y, s . s)` as [`dot`] gives them, in one pass.
fn step_and_change(
    (s, y): (&mut [f64], &mut [f64]),
    (candidate, theta): (&[f64], &[f64]),
    (new_gradient, gradient): (&[f64], &[f64]),
) -> (f64, f64) {
    let chunk = |offset: usize, s: &mut [f64], y: &mut [f64]| {
        let (mut sy, mut ss) = (LaneSums::default(), LaneSums::default());
        for (block, (s, y)) in s
            .chunks_mut(FUSED_BLOCK)
            .zip(y.chunks_mut(FUSED_BLOCK))
            .enumerate()
        {
            let at = offset + block * FUSED_BLOCK;
            for (k, (s, y)) in s.iter_mut().zip(y.iter_mut()).enumerate() {
                *s = candidate[at + k] - theta[at + k];
                *y = new_gradient[at + k] - gradient[at + k];
            }
            sy.add(s, y);
            ss.add(s, s);
        }
        (sy.total(), ss.total())
    };
    if s.len() < PARALLEL_FROM {
        return chunk(0, s, y);
    }
    let partial: Vec<(f64, f64)> = s
        .par_chunks_mut(VECTOR_CHUNK)
        .zip(y.par_chunks_mut(VECTOR_CHUNK))
        .enumerate()
        .map(|(k, (s, y))| chunk(k * VECTOR_CHUNK, s, y))
        .collect();
    (
        partial.iter().map(|p| p.0).sum(),
        partial.iter().map(|p| p.1).sum(),
    )
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
    // no more corrections than iterations can be held, whatever `memory` asks for
    let memory = settings.memory.min(settings.max_iter);
    let mut alphas = with_capacity(memory, "L-BFGS correction weights")?;
    let mut corrections = Corrections {
        memory,
        pairs: std::collections::VecDeque::new(),
        spare: Vec::new(),
    };
    corrections
        .pairs
        .try_reserve_exact(memory)
        .and_then(|()| corrections.spare.try_reserve_exact(memory + 1))
        .map_err(|_| HebError::Allocation {
            what: "L-BFGS corrections",
            bytes: (2 * memory + 1) as u128 * 64,
        })?;
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
        let mut slope =
            corrections.direction(&gradient, inverse_curvature, &mut direction, &mut alphas);
        if slope.is_nan() || slope >= 0.0 {
            // not a descent direction: restart from (scaled) steepest descent
            corrections.clear();
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
            update_then_dot(&mut candidate, None, |at, part| {
                part.iter_mut()
                    .zip(theta[at..].iter().zip(&direction[at..]))
                    .for_each(|(c, (t, d))| *c = t + step * d);
            });
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
        if memory > 0 {
            let (mut s, mut y) = corrections.buffers(n)?;
            let (sy, ss) = step_and_change(
                (&mut s, &mut y),
                (&candidate, &theta),
                (&new_gradient, &gradient),
            );
            corrections.push(s, y, sy, ss, inverse_curvature);
        }
        std::mem::swap(&mut theta, &mut candidate);
        std::mem::swap(&mut gradient, &mut new_gradient);
        value = new_value;
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
        let diagonal: Vec<f64> = (0..n)
            .map(|k| 1.0 / (10f64.powi((k % 5) as i32 - 2) + 0.1))
            .collect();
        for preconditioner in [None, Some(diagonal.as_slice())] {
            let runs: Vec<LbfgsResult> = [1, 2, 3]
                .iter()
                .map(|&t| {
                    with_threads(t, || minimise(quadratic, &start, preconditioner, limited))
                        .unwrap()
                        .unwrap()
                })
                .collect();
            assert_eq!(runs[0].n_iter, 30);
            assert_eq!(runs[0], runs[1]);
            assert_eq!(runs[0], runs[2]);
        }
    }

    #[test]
    fn the_largest_magnitude_is_that_of_a_plain_scan_for_any_thread_count() {
        for n in [
            0,
            3,
            FUSED_BLOCK + 5,
            PARALLEL_FROM - 1,
            3 * PARALLEL_FROM + 7,
        ] {
            let mut x = entries(n, 6);
            if n > 10 {
                x[n / 3] = -7.5; // the largest, negative, in a later chunk
                x[n / 2] = f64::NAN; // passed over
            }
            let plain = x.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
            for threads in [1, 3] {
                let found = with_threads(threads, || max_abs(&x)).unwrap();
                assert_eq!(found.to_bits(), plain.to_bits(), "n = {n}");
            }
        }
    }

    /// Entries of a short pseudo-random sequence in [-1, 1).
    fn entries(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| 2.0 * crate::test_random::uniform(&mut state) - 1.0)
            .collect()
    }

    #[test]
    fn fused_passes_equal_the_separate_ones_bit_for_bit() {
        // lengths across the lane, block, chunk and parallel thresholds
        for n in [
            0,
            3,
            FUSED_BLOCK + 5,
            PARALLEL_FROM - 1,
            PARALLEL_FROM + 3 * FUSED_BLOCK + 2,
        ] {
            let (x, other, start) = (entries(n, 1), entries(n, 2), entries(n, 3));
            for threads in [1, 3] {
                let mut fused = start.clone();
                let product = with_threads(threads, || {
                    update_then_dot(&mut fused, Some(&other), |at, part| {
                        axpy_from(-0.7, &x, at, part)
                    })
                })
                .unwrap();
                let mut separate = start.clone();
                separate
                    .iter_mut()
                    .zip(&x)
                    .for_each(|(b, a)| *b += -0.7 * a);
                assert_eq!(fused, separate, "n = {n}");
                assert_eq!(
                    product.to_bits(),
                    dot(&other, &separate).to_bits(),
                    "n = {n}"
                );

                let (mut s, mut y) = (vec![0.0; n], vec![0.0; n]);
                let (sy, ss) = with_threads(threads, || {
                    step_and_change((&mut s, &mut y), (&x, &other), (&start, &separate))
                })
                .unwrap();
                let s_separate: Vec<f64> = x.iter().zip(&other).map(|(a, b)| a - b).collect();
                let y_separate: Vec<f64> =
                    start.iter().zip(&separate).map(|(a, b)| a - b).collect();
                assert_eq!((&s, &y), (&s_separate, &y_separate), "n = {n}");
                assert_eq!(
                    sy.to_bits(),
                    dot(&s_separate, &y_separate).to_bits(),
                    "n = {n}"
                );
                assert_eq!(
                    ss.to_bits(),
                    dot(&s_separate, &s_separate).to_bits(),
                    "n = {n}"
                );
            }
        }
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
