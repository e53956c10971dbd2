//! The AODE cell weights of a two-class problem, fitted as one weight per cell
//! (docs/discriminative.md, "Two classes: one weight per cell").
//!
//! With two classes a row's class probabilities depend on its scores only through their
//! difference, so a cell's two weights reach the data term only through the one change
//! `t = e_1 - e_0` that they make to it (`e_c = d_c V_c`, the cell's change of class `c`'s
//! score). Among the splits of a given `t` the penalty `sum_c kappa_c e_c^2 / 2` is smallest
//! where it is `t^2 / (2 (1 / kappa_0 + 1 / kappa_1))`, so the weighted AODE of
//! [`crate::weight_fit::fit_aode_weights`] has the same optimum as the logistic model
//!
//! ```text
//! z_i = a_1 ln pi_1 - a_0 ln pi_0 + sum_p v_p D[i, p] + sum_q beta_q G[i, q]
//!       + sum_k m[e] u[e]   (e = E[k, i])
//! J   = sum_i s_i (ln(1 + e^{z_i}) - [y_i = 1] z_i) + 1/2 sum_j precision_j (theta_j - start_j)^2
//! ```
//!
//! over `theta = [a_0, a_1, v (P), beta (Q), u (cells)]`, `D = L[.., 1] - L[.., 0]` the
//! super-parent terms' differences and `t = m u` each cell's change of the difference: half
//! the weights of the general model, and a pass adds one number per used cell entry instead
//! of a class vector. The caller chooses the scales `m` (`hebnb.weighting`: the larger
//! `|V_c|`, so that the gradient in `u` is the larger of the general model's gradients in
//! the cell's two weights, and the stopping rule the same) and splits `t` and `beta` back
//! into the classes' weights.
//!
//! Determinism as in [`crate::weight_fit`]: rows in fixed chunks whose sums are added in
//! chunk order, cell gradients summed per column with its rows in order.

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::error::{check_len, zeroed, HebError, Result};
use crate::interrupt;
use crate::lbfgs::{lane_dot, LbfgsResult, VECTOR_CHUNK};
use crate::weight_fit::{
    cell_residual_sums, check_cell_columns, chunk_totals, contiguous, numbered_back, ColumnEntries,
    RenumberedCells, WeightFit, ROW_CHUNK,
};

/// The fixed inputs of the two-class AODE weights.
#[derive(Debug, Clone, Copy)]
pub struct TwoClassTerms<'a> {
    /// `D[i, p] = L[i, p, 1] - L[i, p, 0]`, shape (S, P), finite: the super-parents'
    /// cross-fitted terms as a difference of the two classes' scores.
    pub parent_differences: ArrayView2<'a, f64>,
    /// `G[i, q]`, shape (S, Q), finite (Q = 0: none).
    pub row_features: ArrayView2<'a, f64>,
    /// `E`, shape (K, S): the cell of row i in column k, -1 for none.
    pub cells: ArrayView2<'a, i64>,
    /// Length K + 1, from 0, non-decreasing: column k's cells are
    /// `column_starts[k]..column_starts[k + 1]`.
    pub column_starts: &'a [usize],
    /// `m`, one finite scale per cell.
    pub cell_scales: &'a [f64],
    /// `ln pi` of the two classes, finite.
    pub class_log_prior: &'a [f64],
}

/// The weights `[a_0, a_1, v (P), beta (Q), u (cells)]` minimising the module's `J` on
/// `(labels, sample_weights)`, labels 0 or 1.
///
/// # Errors
/// Shape mismatches, a cell outside its column's range, labels other than 0 and 1, terms,
/// features or class log priors that are not finite, non-finite starting weights,
/// precisions or curvature, [`HebError::Allocation`] and [`HebError::Interrupted`].
pub fn fit_two_class_aode_weights(
    terms: TwoClassTerms,
    labels: ArrayView1<i64>,
    sample_weights: ArrayView1<f64>,
    fit: WeightFit,
) -> Result<LbfgsResult> {
    check_len("class log priors", 2, terms.class_log_prior.len())?;
    let (n_rows, n_parents) = terms.parent_differences.dim();
    let (n_columns, n_cell_rows) = terms.cells.dim();
    let (n_feature_rows, n_row_features) = terms.row_features.dim();
    if n_row_features > 0 {
        check_len("row feature rows", n_rows, n_feature_rows)?;
    }
    check_len("labels", n_rows, labels.len())?;
    check_len("sample weights", n_rows, sample_weights.len())?;
    if n_columns > 0 {
        check_len("cell rows", n_rows, n_cell_rows)?;
    }
    check_cell_columns(terms.cells, terms.column_starts)?;
    if let Some(&class) = labels.iter().find(|&&c| c != 0 && c != 1) {
        return Err(HebError::ClassOutOfRange {
            class,
            n_classes: 2,
        });
    }
    let n_cells = terms.column_starts[n_columns];
    check_len("cell scales", n_cells, terms.cell_scales.len())?;
    if terms
        .class_log_prior
        .iter()
        .chain(terms.parent_differences.iter())
        .chain(terms.row_features.iter())
        .chain(terms.cell_scales)
        .any(|v| !v.is_finite())
    {
        return Err(HebError::InvalidParameter(
            "class log priors, parent term differences, row features and cell scales must be \
             finite"
                .into(),
        ));
    }
    let n_head = 2 + n_parents + n_row_features;
    fit.check(n_head + n_cells)?;
    let parent_differences = contiguous(&terms.parent_differences, "parent term differences")?;
    let row_features = if n_row_features > 0 {
        contiguous(&terms.row_features, "row features")?
    } else {
        &[]
    };
    // the cells renumbered by first use (locality), with their scales; numbered back at
    // the end
    let renumbered = RenumberedCells::new(
        terms.cells,
        terms.column_starts,
        &fit,
        (n_head, 1),
        terms.cell_scales,
    )?;
    let renumbered_fit = renumbered.fit(fit.settings);
    let inputs = TwoClassPass {
        parent_differences,
        entries: &renumbered.entries,
        starts: terms.column_starts,
        scales: &renumbered.factors,
        labels,
        sample_weights,
        class_log_prior: [terms.class_log_prior[0], terms.class_log_prior[1]],
        n_parents,
        row_features,
        n_row_features,
    };
    let mut buffers = TwoClassBuffers {
        residuals: zeroed(n_rows, "residuals")?,
        changes: zeroed(n_cells, "cell changes")?,
    };
    let result = renumbered_fit
        .run(|theta: &[f64], gradient: &mut [f64]| inputs.data(&mut buffers, theta, gradient))?;
    numbered_back(result, n_head, 1, &renumbered.new_of_old)
}

/// The loss `-s ln P(y | z)` of a row with logit `z` (class 1 against class 0), label
/// `positive` and weight `s` (zero for a zero-weight row), and its residual
/// `s (P(1 | z) - [y = 1])`. One exponential and one logarithm.
#[inline(always)]
fn logistic_loss_and_residual(z: f64, positive: bool, weight: f64) -> (f64, f64) {
    let small = (-z.abs()).exp();
    let probability = if z >= 0.0 {
        1.0 / (1.0 + small)
    } else {
        small / (1.0 + small)
    };
    let margin = if positive { z } else { -z };
    let loss = if weight != 0.0 {
        weight * ((-margin).max(0.0) + small.ln_1p())
    } else {
        0.0
    };
    let target = if positive { 1.0 } else { 0.0 };
    (loss, weight * (probability - target))
}

/// The fixed inputs of one evaluation of the two-class data term.
struct TwoClassPass<'a> {
    /// `D`, (S, P) row-major.
    parent_differences: &'a [f64],
    entries: &'a ColumnEntries,
    starts: &'a [usize],
    /// `m`, renumbered like the cells.
    scales: &'a [f64],
    labels: ArrayView1<'a, i64>,
    sample_weights: ArrayView1<'a, f64>,
    class_log_prior: [f64; 2],
    n_parents: usize,
    /// `G`, (S, Q) row-major (empty for Q = 0).
    row_features: &'a [f64],
    n_row_features: usize,
}

/// What an evaluation writes: every row's residual and every cell's change `t = m u`.
struct TwoClassBuffers {
    residuals: Vec<f64>,
    changes: Vec<f64>,
}

impl TwoClassPass<'_> {
    /// The data term at `theta = [a_0, a_1, v, beta, u]`, its gradient written to
    /// `gradient`.
    fn data(
        &self,
        buffers: &mut TwoClassBuffers,
        theta: &[f64],
        gradient: &mut [f64],
    ) -> Result<f64> {
        let (n_parents, n_features) = (self.n_parents, self.n_row_features);
        let entries = self.entries;
        let (a, rest) = theta.split_at(2);
        let (v, rest) = rest.split_at(n_parents);
        let (beta, u) = rest.split_at(n_features);
        let [log_prior_0, log_prior_1] = self.class_log_prior;
        let offset = a[1] * log_prior_1 - a[0] * log_prior_0;
        let n_sums = 1 + n_parents + n_features;
        buffers
            .changes
            .par_chunks_mut(VECTOR_CHUNK)
            .zip(
                u.par_chunks(VECTOR_CHUNK)
                    .zip(self.scales.par_chunks(VECTOR_CHUNK)),
            )
            .for_each(|(changes, (u, scales))| {
                for (t, (&weight, &scale)) in changes.iter_mut().zip(u.iter().zip(scales)) {
                    *t = scale * weight;
                }
            });
        let t = buffers.changes.as_slice();
        // pass 1: per chunk of rows the logits (parent terms and features, then column by
        // column), residuals, loss and the sums of the head's gradient
        let chunk_sums: Vec<(f64, Vec<f64>)> = buffers
            .residuals
            .par_chunks_mut(ROW_CHUNK)
            .enumerate()
            .map(|(chunk, block)| {
                let first = chunk * ROW_CHUNK;
                let n = block.len();
                // the residuals' sum, then the parents', then the features'
                let mut sums = vec![0.0; n_sums];
                if interrupt::cancelled() {
                    return (0.0, sums);
                }
                let differences =
                    &self.parent_differences[first * n_parents..(first + n) * n_parents];
                let features = &self.row_features[first * n_features..(first + n) * n_features];
                for (i, logit) in block.iter_mut().enumerate() {
                    let own = &differences[i * n_parents..(i + 1) * n_parents];
                    let mut z = offset;
                    for (&weight, &difference) in v.iter().zip(own) {
                        z += weight * difference;
                    }
                    *logit = z + lane_dot(&features[i * n_features..(i + 1) * n_features], beta);
                }
                for k in 0..entries.n_columns() {
                    let used = entries.in_chunk(k, chunk);
                    for (&row, &cell) in entries.rows[used.clone()].iter().zip(&entries.cells[used])
                    {
                        block[row as usize - first] += t[cell as usize];
                    }
                }
                let mut loss = 0.0;
                let (residual_sum, rest) = sums.split_at_mut(1);
                let (parent_sums, feature_sums) = rest.split_at_mut(n_parents);
                for (i, logit) in block.iter_mut().enumerate() {
                    let row = first + i;
                    let (row_loss, residual) = logistic_loss_and_residual(
                        *logit,
                        self.labels[row] == 1,
                        self.sample_weights[row],
                    );
                    loss += row_loss;
                    *logit = residual;
                    residual_sum[0] += residual;
                    let own = &differences[i * n_parents..(i + 1) * n_parents];
                    for (sum, &difference) in parent_sums.iter_mut().zip(own) {
                        *sum += residual * difference;
                    }
                    let own = &features[i * n_features..(i + 1) * n_features];
                    for (sum, &feature) in feature_sums.iter_mut().zip(own) {
                        *sum += residual * feature;
                    }
                }
                (loss, sums)
            })
            .collect();
        interrupt::check()?;
        let (loss, sums) = chunk_totals(&chunk_sums, n_sums);
        let (head, cell_gradient) = gradient.split_at_mut(2 + n_parents + n_features);
        // z gains a_1 ln pi_1 and loses a_0 ln pi_0
        head[0] = -sums[0] * log_prior_0;
        head[1] = sums[0] * log_prior_1;
        head[2..].copy_from_slice(&sums[1..]);
        // pass 2: each column sums its rows' residuals into its own cells, times the
        // cells' scales
        cell_residual_sums::<1>(
            entries,
            self.starts,
            &buffers.residuals,
            1,
            cell_gradient,
            self.scales,
        )?;
        interrupt::check()?;
        Ok(loss)
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;

    use super::*;
    use crate::lbfgs::LbfgsSettings;
    use crate::test_random::uniform;
    use crate::weight_fit::tests::{aode_data, fit_aode_with, AodeData};

    /// [`aode_data`] with a cell that moves class 1's score only.
    fn data(n_rows: usize, seed: u64) -> AodeData {
        let mut data = aode_data(n_rows, seed);
        data.values[[7, 0]] = 0.0;
        data
    }

    fn differences(data: &AodeData) -> Array2<f64> {
        let (n_rows, n_parents, _) = data.terms.dim();
        Array2::from_shape_fn((n_rows, n_parents), |(i, p)| {
            data.terms[[i, p, 1]] - data.terms[[i, p, 0]]
        })
    }

    fn settings(gradient_tolerance: f64) -> LbfgsSettings {
        LbfgsSettings {
            gradient_tolerance,
            max_iter: 1000,
            memory: 10,
        }
    }

    fn fit_two_class(
        data: &AodeData,
        scales: &[f64],
        start: &[f64],
        precision: &[f64],
        gradient_tolerance: f64,
    ) -> Result<LbfgsResult> {
        let differences = differences(data);
        let terms = TwoClassTerms {
            parent_differences: differences.view(),
            row_features: data.row_features.view(),
            cells: data.cells.view(),
            column_starts: &data.starts,
            cell_scales: scales,
            class_log_prior: &data.class_log_prior,
        };
        let curvature = vec![1.0; start.len()];
        let fit = WeightFit {
            start,
            precision,
            inverse_curvature: &curvature,
            settings: settings(gradient_tolerance),
        };
        fit_two_class_aode_weights(terms, data.labels.view(), data.weights.view(), fit)
    }

    /// `J` of the module docs, written out row by row.
    fn direct_objective(
        data: &AodeData,
        scales: &[f64],
        theta: &[f64],
        start: &[f64],
        precision: &[f64],
    ) -> f64 {
        let (n_rows, n_parents, _) = data.terms.dim();
        let n_features = data.row_features.ncols();
        let t = &theta[2 + n_parents + n_features..];
        let mut value = 0.0;
        for i in 0..n_rows {
            let mut z = theta[1] * data.class_log_prior[1] - theta[0] * data.class_log_prior[0];
            for p in 0..n_parents {
                z += theta[2 + p] * (data.terms[[i, p, 1]] - data.terms[[i, p, 0]]);
            }
            for q in 0..n_features {
                z += theta[2 + n_parents + q] * data.row_features[[i, q]];
            }
            for k in 0..data.cells.nrows() {
                let e = data.cells[[k, i]];
                if e >= 0 {
                    z += scales[e as usize] * t[e as usize];
                }
            }
            let p1 = 1.0 / (1.0 + (-z).exp());
            let own = if data.labels[i] == 1 { p1 } else { 1.0 - p1 };
            value -= data.weights[i] * own.ln();
        }
        for j in 0..theta.len() {
            value += 0.5 * precision[j] * (theta[j] - start[j]).powi(2);
        }
        value
    }

    #[test]
    fn the_objective_and_gradient_match_a_direct_loss() {
        let data = data(40, 5);
        let n = 2 + 2 + 2 + 11;
        let mut seed = 3;
        let theta: Vec<f64> = (0..n).map(|_| uniform(&mut seed) - 0.3).collect();
        let start: Vec<f64> = (0..n).map(|_| uniform(&mut seed)).collect();
        let precision: Vec<f64> = (0..n).map(|_| uniform(&mut seed)).collect();
        let scales: Vec<f64> = (0..11).map(|_| 2.0 * uniform(&mut seed) - 0.5).collect();
        // no iteration: the result is the objective and gradient at theta
        let settings_at = |theta: &[f64]| {
            let differences = differences(&data);
            let terms = TwoClassTerms {
                parent_differences: differences.view(),
                row_features: data.row_features.view(),
                cells: data.cells.view(),
                column_starts: &data.starts,
                cell_scales: &scales,
                class_log_prior: &data.class_log_prior,
            };
            let curvature = vec![1.0; n];
            let fit = WeightFit {
                start: theta,
                precision: &vec![0.0; n],
                inverse_curvature: &curvature,
                settings: LbfgsSettings {
                    gradient_tolerance: 1e-9,
                    max_iter: 0,
                    memory: 10,
                },
            };
            fit_two_class_aode_weights(terms, data.labels.view(), data.weights.view(), fit).unwrap()
        };
        let at = settings_at(&theta);
        let zero = vec![0.0; n];
        assert_eq!(at.theta, theta, "numbered back");
        let objective = |theta: &[f64], start: &[f64], precision: &[f64]| {
            direct_objective(&data, &scales, theta, start, precision)
        };
        assert!((at.value - objective(&theta, &theta, &zero)).abs() < 1e-10);
        let h = 1e-6;
        for k in 0..n {
            let (mut up, mut down) = (theta.clone(), theta.clone());
            up[k] += h;
            down[k] -= h;
            let numeric =
                (objective(&up, &theta, &zero) - objective(&down, &theta, &zero)) / (2.0 * h);
            assert!((numeric - at.gradient[k]).abs() < 1e-6, "weight {k}");
        }
        // and the penalty, at a fitted optimum: the direct objective is no lower nearby
        let fitted = fit_two_class(&data, &scales, &start, &precision, 1e-10).unwrap();
        let best = objective(&fitted.theta, &start, &precision);
        assert!((fitted.value - best).abs() < 1e-10);
        for k in 0..n {
            for step in [-1e-4, 1e-4] {
                let mut moved = fitted.theta.clone();
                moved[k] += step;
                assert!(objective(&moved, &start, &precision) > best);
            }
        }
    }

    #[test]
    fn the_optimum_is_the_general_models_with_each_cells_change_split_by_the_penalty() {
        let data = data(300, 11);
        let (n_parents, n_features, n_cells) = (2, 2, 11);
        let n_general = 2 + n_parents + 2 * n_features + 2 * n_cells;
        let mut seed = 21;
        // the general model: a, v centred on 1, b and d on 0, every weight its own precision
        let mut start = vec![0.0; n_general];
        start[..2 + n_parents].fill(1.0);
        let precision: Vec<f64> = (0..n_general).map(|_| 0.5 + uniform(&mut seed)).collect();
        let general = fit_aode_with(&data, &start, &precision, settings(1e-11)).unwrap();
        // the two-class model: each pair of class weights (change e_c = w_c x_c, precision
        // p_c / x_c^2) as one change t with precision 1 / sum_c x_c^2 / p_c; a cell's t
        // is m u with m the larger |x_c|
        let head = 2 + n_parents;
        let pairs: Vec<(f64, f64, f64, f64)> = (0..n_features)
            .map(|q| {
                (
                    1.0,
                    1.0,
                    precision[head + 2 * q],
                    precision[head + 2 * q + 1],
                )
            })
            .chain((0..n_cells).map(|e| {
                let at = head + 2 * n_features + 2 * e;
                (
                    data.values[[e, 0]],
                    data.values[[e, 1]],
                    precision[at],
                    precision[at + 1],
                )
            }))
            .collect();
        let scales: Vec<f64> = pairs[n_features..]
            .iter()
            .map(|&(x0, x1, _, _)| x0.abs().max(x1.abs()))
            .collect();
        let mut reduced_start = start[..head].to_vec();
        let mut reduced_precision = precision[..head].to_vec();
        for (m, &(x0, x1, p0, p1)) in pairs.iter().enumerate() {
            let scale = if m < n_features {
                1.0
            } else {
                scales[m - n_features]
            };
            reduced_start.push(0.0);
            reduced_precision.push(scale * scale / (x0 * x0 / p0 + x1 * x1 / p1));
        }
        let reduced =
            fit_two_class(&data, &scales, &reduced_start, &reduced_precision, 1e-11).unwrap();
        assert!(general.converged && reduced.converged);
        assert!(
            (general.value - reduced.value).abs() < 1e-9 * general.value.abs(),
            "{} against {}",
            general.value,
            reduced.value
        );
        for j in 0..head {
            assert!(
                (general.theta[j] - reduced.theta[j]).abs() < 1e-7,
                "weight {j}"
            );
        }
        for (m, &(x0, x1, p0, p1)) in pairs.iter().enumerate() {
            let scale = if m < n_features {
                1.0
            } else {
                scales[m - n_features]
            };
            let t = scale * reduced.theta[head + m];
            let total = x0 * x0 / p0 + x1 * x1 / p1;
            // w_c = e_c / x_c with e_1 = t (x_1^2 / p_1) / total, e_0 = -t (x_0^2 / p_0) / total
            let split = [-t * x0 / (p0 * total), t * x1 / (p1 * total)];
            for (c, expected) in split.iter().enumerate() {
                let fitted = general.theta[head + 2 * m + c];
                assert!((fitted - expected).abs() < 1e-7, "pair {m}, class {c}");
            }
        }
    }

    #[test]
    fn the_weights_are_the_same_for_any_thread_count_and_errors_are_reported() {
        let data = data(5000, 7);
        let n = 2 + 2 + 2 + 11;
        let start = vec![0.0; n];
        let precision = vec![0.3; n];
        let scales: Vec<f64> = (0..11).map(|e| 0.5 + 0.1 * e as f64).collect();
        let fits: Vec<LbfgsResult> = [1, 2, 3]
            .iter()
            .map(|&threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| fit_two_class(&data, &scales, &start, &precision, 1e-8).unwrap())
            })
            .collect();
        for fit in &fits[1..] {
            assert_eq!(fit.theta, fits[0].theta);
            assert_eq!(fit.value.to_bits(), fits[0].value.to_bits());
        }
        let mut bad = data;
        bad.labels[3] = 2;
        assert!(matches!(
            fit_two_class(&bad, &scales, &start, &precision, 1e-8),
            Err(HebError::ClassOutOfRange { class: 2, .. })
        ));
        bad.labels[3] = 0;
        bad.terms[[4, 1, 0]] = f64::NAN;
        assert!(matches!(
            fit_two_class(&bad, &scales, &start, &precision, 1e-8),
            Err(HebError::InvalidParameter(_))
        ));
        bad.terms[[4, 1, 0]] = 0.0;
        bad.cells[[0, 2]] = 7;
        assert!(matches!(
            fit_two_class(&bad, &scales, &start, &precision, 1e-8),
            Err(HebError::InvalidParameter(_))
        ));
        bad.cells[[0, 2]] = 1;
        assert!(fit_two_class(&bad, &scales, &start[1..], &precision[1..], 1e-8).is_err());
        assert!(fit_two_class(&bad, &scales[1..], &start, &precision, 1e-8).is_err());
    }
}
