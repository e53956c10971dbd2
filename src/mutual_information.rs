//! Feature weights of the sqrt-MI weighted Naive Bayes (SPEC "Feature weighting",
//! the paper's CAWNB and HEB-M+GR): the plug-in mutual information, in nats, between each
//! feature and the class, from the count table of the rows where the feature is present:
//!
//! ```text
//! MI(X_f; Y) = sum_{c,v: N_{c,f,v} > 0} (N_{c,f,v} / T_f) ln( N_{c,f,v} T_f / (N_{c,f} N_{f,v}) )
//! ```
//!
//! with `N_{c,f} = sum_v N_{c,f,v}`, `N_{f,v} = sum_c N_{c,f,v}` and `T_f` their total.
//! The weights `w_f = sqrt(MI)` are not normalised (the paper: normalising is harmful).
//! Each feature is one parallel task summed in a fixed order.

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::error::{check_len, Result};
use crate::layout::FeatureLayout;

/// The plug-in mutual information (nats) of every feature with the class, from the
/// `(C, sum_f K_f)` count table; 0 for a feature with no counted value.
///
/// # Errors
/// [`crate::error::HebError::ShapeMismatch`] when the table width disagrees with the layout.
pub fn mutual_information(counts: ArrayView2<f64>, layout: &FeatureLayout) -> Result<Vec<f64>> {
    check_len(
        "count table columns (categories)",
        layout.n_columns(),
        counts.ncols(),
    )?;
    let information = (0..layout.n_features())
        .into_par_iter()
        .map(|f| {
            let columns = layout.columns(f);
            let class_totals: Vec<f64> = counts
                .rows()
                .into_iter()
                .map(|row| columns.clone().map(|j| row[j]).sum())
                .collect();
            let total: f64 = class_totals.iter().sum();
            if total <= 0.0 {
                return 0.0;
            }
            let value_totals: Vec<f64> = columns.clone().map(|j| counts.column(j).sum()).collect();
            let mut information = 0.0;
            for (row, &class_total) in counts.rows().into_iter().zip(&class_totals) {
                for (j, &value_total) in columns.clone().zip(&value_totals) {
                    let n = row[j];
                    if n > 0.0 {
                        information += n * (n * total / (class_total * value_total)).ln();
                    }
                }
            }
            // rounding can leave a tiny negative value for independent features
            (information / total).max(0.0)
        })
        .collect();
    Ok(information)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn independent_feature_has_zero_information_and_a_copy_of_the_class_has_its_entropy() {
        // feature 0 independent of the class, feature 1 = the class, feature 2 never seen
        let counts = array![[2.0, 4.0, 6.0, 0.0, 0.0], [1.0, 2.0, 0.0, 3.0, 0.0]];
        let layout = FeatureLayout::from_cardinalities(&[2, 2, 1]);
        let mi = mutual_information(counts.view(), &layout).unwrap();
        assert!(mi[0].abs() < 1e-15);
        let (p, q) = (6.0_f64 / 9.0, 3.0_f64 / 9.0);
        let entropy = -(p * p.ln() + q * q.ln());
        assert!((mi[1] - entropy).abs() < 1e-15);
        assert_eq!(mi[2], 0.0);
    }
}
