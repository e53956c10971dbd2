//! An empirical-Bayes super-parent term for AODE (an option beyond SPEC eq. 8).
//!
//! Eq. 8's `P(y, x_i = u) = (N_{y,u} + 1) / (S_i + C K_i)` is `P(u) P(y | u)` with the
//! Laplace `P(y | u) = (N_{y,u} + 1) / (N_u + C)`: a parent value seen once votes for a
//! near-even class split however unbalanced the classes are. The option keeps `P(u)` and
//! shrinks `P(y | u)` toward the class distribution of the rows where `x_i` is present,
//!
//! ```text
//! P(y | u) = (N_{y,u} + m_i pi_y) / (N_u + m_i),    pi_y = (N_y^(i) + 1) / (S_i + C)
//! ```
//!
//! with `m_i` chosen by Type-II ML on the multi-document evidence whose documents are the
//! values `u` of feature i (their class counts), as eq. 11 does for children.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{check_len, zeroed, HebError, Result};
use crate::evidence::EvidenceTerms;
use crate::layout::FeatureLayout;
use crate::smoothing::log_smoothed;
use crate::solver::{maximise_evidence, Solution, SolverSettings};

/// `m_i` of every feature, from the `(C, sum K_f)` count table `N_{y,f,u}` and the class
/// mean `pi^(i)` of every feature, shape `(F, C)`; in parallel over features.
///
/// A feature never observed (no value) has nothing to smooth: NaN.
///
/// # Errors
/// Tables that disagree with the layout or with each other.
pub fn fit_parent_concentrations(
    counts: ArrayView2<f64>,
    class_mean: ArrayView2<f64>,
    layout: &FeatureLayout,
    settings: &SolverSettings,
) -> Result<Vec<Solution>> {
    let n_classes = counts.nrows();
    check_len("count table columns", layout.n_columns(), counts.ncols())?;
    check_len(
        "class mean rows (features)",
        layout.n_features(),
        class_mean.nrows(),
    )?;
    check_len(
        "class mean columns (classes)",
        n_classes,
        class_mean.ncols(),
    )?;
    let solutions = (0..layout.n_features())
        .into_par_iter()
        .map(|f| {
            if layout.cardinality(f) == 0 || crate::interrupt::cancelled() {
                return Solution::NOTHING_TO_SMOOTH;
            }
            let mean = class_mean.row(f);
            let mut terms = EvidenceTerms::new();
            for u in layout.columns(f) {
                let document = counts.column(u);
                terms.add_document(document.sum());
                for (&n, &mu) in document.iter().zip(mean.iter()) {
                    terms.add_cell(n, mu);
                }
            }
            terms.finish();
            maximise_evidence(&terms, settings)
        })
        .collect();
    crate::interrupt::check()?;
    Ok(solutions)
}

/// `N_y^(i)`, the class counts of the rows where `x_i` is present, shape (F, C).
pub(crate) fn per_feature_class_counts(
    counts: ArrayView2<f64>,
    layout: &FeatureLayout,
) -> Array2<f64> {
    Array2::from_shape_fn((layout.n_features(), counts.nrows()), |(f, c)| {
        layout.columns(f).map(|j| counts[[c, j]]).sum()
    })
}

/// `pi^(i)_y = (N_y^(i) + 1) / (S_i + C)`, the Laplace class distribution of the rows
/// where `x_i` is present, shape (F, C): the mean the parent term shrinks toward.
pub fn class_mean(counts: ArrayView2<f64>, layout: &FeatureLayout) -> Array2<f64> {
    let n_classes = counts.nrows() as f64;
    let mut mean = per_feature_class_counts(counts, layout);
    for mut row in mean.rows_mut() {
        let present: f64 = row.sum();
        row.mapv_inplace(|n| (n + 1.0) / (present + n_classes));
    }
    mean
}

/// `ln P(y = c, x_i = u)` of every category, shape (sum K_f, C).
///
/// * `concentration` None: eq. 8, `(N_{c,u} + 1) / (S_i + C K_i)`;
/// * `concentration` Some(m): `P(u) P(y | u)` with `P(u) = (N_u + C) / (S_i + C K_i)` as
///   in eq. 8 and `P(y | u) = (N_{c,u} + m_i pi_y) / (N_u + m_i)` (see the module docs);
/// * `class_log_prior` Some (`fit_prior=False` or a user prior): the class part is
///   replaced, `pi_c P(u | c)`, with `P(u | c)` eq. 8's `(N_{c,u} + 1) / (N_c^(i) + K_i)`
///   or the joint above normalised over the values of i.
///
/// # Errors
/// Tables that disagree with the layout, or a table too large to allocate.
pub fn parent_log_prob(
    counts: ArrayView2<f64>,
    layout: &FeatureLayout,
    concentration: Option<&[f64]>,
    class_log_prior: Option<&[f64]>,
) -> Result<Array2<f64>> {
    let n_classes = counts.nrows();
    check_len("count table columns", layout.n_columns(), counts.ncols())?;
    if let Some(m) = concentration {
        check_len("parent concentrations", layout.n_features(), m.len())?;
    }
    if let Some(prior) = class_log_prior {
        check_len("class log prior", n_classes, prior.len())?;
    }
    let per_class = per_feature_class_counts(counts, layout);
    let mean = class_mean(counts, layout);
    let mut table = zeroed(layout.n_columns() * n_classes, "AODE parent table")?;
    let c_f = n_classes as f64;
    for f in 0..layout.n_features() {
        let k = layout.cardinality(f) as f64;
        let present: f64 = per_class.row(f).sum(); // S_i
        for j in layout.columns(f) {
            let value_total: f64 = counts.column(j).sum(); // N_u
            let row = &mut table[j * n_classes..(j + 1) * n_classes];
            for (c, slot) in row.iter_mut().enumerate() {
                let n = counts[[c, j]];
                *slot = match (concentration, class_log_prior) {
                    (None, None) => log_smoothed(n, present, c_f * k, 1.0 / (c_f * k)),
                    (None, Some(prior)) => {
                        prior[c] + log_smoothed(n, per_class[[f, c]], k, 1.0 / k)
                    }
                    (Some(m), _) => {
                        log_smoothed(value_total, present, c_f * k, 1.0 / k)
                            + log_smoothed(n, value_total, m[f], mean[[f, c]])
                    }
                };
            }
        }
        if let (Some(_), Some(prior)) = (concentration, class_log_prior) {
            // pi_c P(u | c): the joint normalised over the values of i in each class
            for (c, &log_prior) in prior.iter().enumerate() {
                let marginal: f64 = layout
                    .columns(f)
                    .map(|j| table[j * n_classes + c].exp())
                    .sum();
                let log_marginal = marginal.ln();
                for j in layout.columns(f) {
                    table[j * n_classes + c] += log_prior - log_marginal;
                }
            }
        }
    }
    Array2::from_shape_vec((layout.n_columns(), n_classes), table)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn matches_a_grid_search_of_the_evidence() {
        // one feature, three values, two classes: values 0 and 2 lean to class 1, value 1
        // to class 0, more than the class mean explains
        let counts = array![[1.0, 9.0, 2.0], [12.0, 1.0, 10.0]];
        let layout = FeatureLayout::from_cardinalities(&[3]);
        let mean = array![[13.0 / 37.0, 24.0 / 37.0]];
        let settings = SolverSettings::default();
        let fit =
            fit_parent_concentrations(counts.view(), mean.view(), &layout, &settings).unwrap();
        let mut terms = EvidenceTerms::new();
        for u in 0..3 {
            terms.add_document(counts.column(u).sum());
            for c in 0..2 {
                terms.add_cell(counts[[c, u]], mean[[0, c]]);
            }
        }
        terms.finish();
        let best = (0..=60_000)
            .map(|k| (1e-2_f64.ln() + k as f64 * 1e6_f64.ln() / 60_000.0).exp())
            .max_by(|a, b| terms.log_evidence(*a).total_cmp(&terms.log_evidence(*b)))
            .unwrap();
        let m = fit[0].concentration;
        assert!((m / best - 1.0).abs() < 1e-3, "{m} vs grid {best}");
        assert!(m > 0.02 && m < 1e4);
    }

    #[test]
    fn shapes_are_checked() {
        let counts = array![[1.0, 2.0], [3.0, 4.0]];
        let layout = FeatureLayout::from_cardinalities(&[2]);
        let wrong = array![[0.5, 0.25, 0.25]];
        let settings = SolverSettings::default();
        assert!(
            fit_parent_concentrations(counts.view(), wrong.view(), &layout, &settings).is_err()
        );
    }
}
