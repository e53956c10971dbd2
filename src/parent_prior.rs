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

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::error::{check_len, Result};
use crate::evidence::EvidenceTerms;
use crate::layout::FeatureLayout;
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
