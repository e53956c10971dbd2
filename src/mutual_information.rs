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
//! Each feature is one parallel task summed in a fixed order: its values in the order of
//! their class counts, not of the categories' first appearance, so that the result (to
//! the last bit) does not depend on the order of the rows. AODE's `max_parents` ranks
//! features by it, and a tie (two features with the same counts) must stay a tie.

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::error::{check_len, Result};
use crate::interrupt;
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
    (0..layout.n_features())
        .into_par_iter()
        .map(|f| {
            interrupt::check()?;
            let columns = layout.columns(f);
            // MI is a function of the proportions only: divide by the largest count first,
            // so that no sum overflows (counts near f64::MAX) and tiny counts (weights of
            // 1e-300) keep their proportions instead of underflowing to zero.
            let scale = counts
                .rows()
                .into_iter()
                .flat_map(|row| columns.clone().map(move |j| row[j]))
                .fold(0.0_f64, f64::max);
            if !(scale > 0.0 && scale.is_finite()) {
                return Ok(0.0);
            }
            let scaled = |n: f64| n / scale;
            let mut values: Vec<usize> = columns.collect();
            values.sort_by(|&a, &b| {
                let (a, b) = (counts.column(a), counts.column(b));
                a.iter()
                    .zip(b.iter())
                    .map(|(x, y)| x.total_cmp(y))
                    .find(|order| order.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let class_totals: Vec<f64> = counts
                .rows()
                .into_iter()
                .map(|row| values.iter().map(|&j| scaled(row[j])).sum())
                .collect();
            let total: f64 = class_totals.iter().sum();
            let value_totals: Vec<f64> = values
                .iter()
                .map(|&j| counts.column(j).iter().map(|&n| scaled(n)).sum())
                .collect();
            let ln_total = total.ln();
            let mut information = 0.0;
            for (row, &class_total) in counts.rows().into_iter().zip(&class_totals) {
                for (&j, &value_total) in values.iter().zip(&value_totals) {
                    let n = scaled(row[j]);
                    if n > 0.0 {
                        // the log of the ratio as a sum of logs: each factor is finite and
                        // positive, while their product or quotient could leave the range
                        let log_ratio = n.ln() + ln_total - class_total.ln() - value_total.ln();
                        information += (n / total) * log_ratio;
                    }
                }
            }
            // rounding can leave a tiny negative value for independent features
            Ok(information.max(0.0))
        })
        .collect()
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

    #[test]
    fn information_does_not_depend_on_the_order_of_the_values() {
        // the values of a feature in every order (the order categories are first seen in
        // follows the rows): the same bits, so that equal features stay tied
        let columns = [[3.0, 0.0], [2.0, 1.0], [1.0, 0.0], [7.0, 0.1], [0.3, 5.0]];
        let mut reference = None;
        let mut order = [0, 1, 2, 3, 4];
        for step in 0..120 {
            // many orders of the five values, by a fixed walk of swaps
            order.swap(step % 5, (step * 3 + 1) % 5);
            let counts = ndarray::Array2::from_shape_fn((2, 5), |(c, j)| columns[order[j]][c]);
            let layout = FeatureLayout::from_cardinalities(&[5]);
            let mi = mutual_information(counts.view(), &layout).unwrap()[0];
            assert_eq!(
                mi.to_bits(),
                *reference.get_or_insert(mi.to_bits()),
                "{order:?}"
            );
        }
    }

    #[test]
    fn information_does_not_change_when_every_count_is_scaled() {
        let counts = array![[3.0, 1.0, 0.5], [1.0, 4.0, 2.0]];
        let layout = FeatureLayout::from_cardinalities(&[3]);
        let reference = mutual_information(counts.view(), &layout).unwrap()[0];
        assert!(reference > 0.01);
        for scale in [1e-300, 1e-170, 1e160, 1e290, 1e307] {
            let scaled = counts.mapv(|n| n * scale);
            let mi = mutual_information(scaled.view(), &layout).unwrap()[0];
            assert!(
                (mi - reference).abs() < 1e-12 * reference,
                "scale {scale}: {mi} vs {reference}"
            );
        }
    }
}
