//! One pass over the training rows: the sufficient statistics of every model in the
//! crate (SPEC "Notation"):
//!
//! * `N_c`, the (weighted) number of rows of class c;
//! * `N_{c,f,v}`, the (weighted) number of rows of class c with `x_f = v`, in a flat
//!   `(C, sum_f K_f)` table ([`FeatureLayout`]). Missing values (code -1) never count.
//!
//! Counts from disjoint sets of rows add up, which is what partial fits and
//! distributed fits rely on. Each feature is counted by one thread in row order, so the
//! sums do not depend on the number of threads.

use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::error::{
    check_len, check_weights, code_out_of_range, entries, with_capacity, zeroed, HebError, Result,
};
use crate::interrupt;
use crate::layout::FeatureLayout;

/// The counts of one training set.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoricalCounts {
    /// `N_c`, length C.
    pub class_totals: Vec<f64>,
    /// `N_{c,f,v}`, shape `(C, sum_f K_f)`.
    pub table: Array2<f64>,
}

/// Checks that `labels` are class indices `0..n_classes`, returning them as `usize`.
///
/// # Errors
/// [`HebError::ClassOutOfRange`] on the first label outside the range.
pub fn class_indices(labels: ArrayView1<i64>, n_classes: usize) -> Result<Vec<usize>> {
    let mut classes = with_capacity(labels.len(), "class indices")?;
    for (s, &y) in labels.iter().enumerate() {
        interrupt::check_every(s)?;
        if y >= 0 && (y as u64) < n_classes as u64 {
            classes.push(y as usize);
        } else {
            return Err(HebError::ClassOutOfRange {
                class: y,
                n_classes,
            });
        }
    }
    Ok(classes)
}

/// Checks the shapes shared by every kernel that reads coded rows: `codes` is
/// `(F, S)` (feature-major) and the layout has F features.
///
/// # Errors
/// [`HebError::ShapeMismatch`] when they disagree.
pub fn check_codes(codes: ArrayView2<i32>, layout: &FeatureLayout) -> Result<()> {
    check_len(
        "number of features in the codes",
        layout.n_features(),
        codes.nrows(),
    )
}

/// Checks a training set's shapes: `codes` `(F, S)` for the layout's F features, and one
/// label and one weight per row.
///
/// # Errors
/// [`HebError::ShapeMismatch`] naming the array that disagrees.
pub fn check_rows(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    weights: ArrayView1<f64>,
    layout: &FeatureLayout,
) -> Result<()> {
    check_codes(codes, layout)?;
    let n_rows = codes.ncols();
    for (what, found) in [("labels", labels.len()), ("sample weights", weights.len())] {
        check_len(what, n_rows, found)?;
    }
    check_weights(weights.iter())
}

/// Counts `N_c` and `N_{c,f,v}`.
///
/// `codes` is `(F, S)` with values in `-1..K_f` (-1: missing), `labels` holds class
/// indices `0..n_classes`, `weights` one non-negative weight per row.
///
/// # Errors
/// Shape mismatches, codes or labels out of range, or a table too large to allocate.
pub fn count_categories(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    weights: ArrayView1<f64>,
    layout: &FeatureLayout,
    n_classes: usize,
) -> Result<CategoricalCounts> {
    check_rows(codes, labels, weights, layout)?;
    // labels are checked once here and read in place below: counting needs no copy of
    // the rows, whatever their number
    let mut class_totals = zeroed(n_classes, "class totals")?;
    for (s, (&y, &w)) in labels.iter().zip(weights.iter()).enumerate() {
        interrupt::check_every(s)?;
        if !(y >= 0 && (y as u64) < n_classes as u64) {
            return Err(HebError::ClassOutOfRange {
                class: y,
                n_classes,
            });
        }
        class_totals[y as usize] += w;
    }

    let per_feature: Vec<Vec<f64>> = (0..layout.n_features())
        .into_par_iter()
        .map(|f| {
            let k = layout.cardinality(f);
            let mut block = zeroed(entries(n_classes, k, "category counts")?, "category counts")?;
            let rows = codes
                .row(f)
                .into_iter()
                .zip(labels.iter())
                .zip(weights.iter());
            for (s, ((&code, &c), &w)) in rows.enumerate() {
                let c = c as usize;
                interrupt::check_every(s)?;
                if code < 0 {
                    continue;
                }
                if code as usize >= k {
                    return Err(code_out_of_range(f, code, k));
                }
                block[c * k + code as usize] += w;
            }
            Ok(block)
        })
        .collect::<Result<_>>()?;

    let width = layout.n_columns();
    let mut flat = zeroed(
        entries(n_classes, width, "category counts")?,
        "category counts",
    )?;
    for (f, block) in per_feature.iter().enumerate() {
        let (start, k) = (layout.columns(f).start, layout.cardinality(f));
        for c in 0..n_classes {
            flat[c * width + start..c * width + start + k]
                .copy_from_slice(&block[c * k..(c + 1) * k]);
        }
    }
    let table = Array2::from_shape_vec((n_classes, width), flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))?;
    Ok(CategoricalCounts {
        class_totals,
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn counts_skip_missing_and_sum_weights() {
        // two features: K = (3, 2); four rows
        let codes = array![[0, 2, -1, 2], [1, 1, 0, -1]];
        let labels = array![0_i64, 1, 1, 1];
        let weights = array![1.0, 0.5, 2.0, 1.0];
        let layout = FeatureLayout::from_cardinalities(&[3, 2]);
        let counts =
            count_categories(codes.view(), labels.view(), weights.view(), &layout, 2).unwrap();
        assert_eq!(counts.class_totals, vec![1.0, 3.5]);
        assert_eq!(
            counts.table,
            array![[1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.5, 2.0, 0.5]]
        );
    }

    #[test]
    fn out_of_range_inputs_are_errors() {
        let layout = FeatureLayout::from_cardinalities(&[2]);
        let w = array![1.0, 1.0];
        let bad_code = count_categories(
            array![[0, 2]].view(),
            array![0_i64, 1].view(),
            w.view(),
            &layout,
            2,
        );
        assert!(matches!(
            bad_code,
            Err(HebError::CodeOutOfRange { code: 2, .. })
        ));
        let bad_class = count_categories(
            array![[0, 1]].view(),
            array![0_i64, 5].view(),
            w.view(),
            &layout,
            2,
        );
        assert!(matches!(
            bad_class,
            Err(HebError::ClassOutOfRange { class: 5, .. })
        ));
        let bad_len = count_categories(
            array![[0, 1]].view(),
            array![0_i64].view(),
            w.view(),
            &layout,
            2,
        );
        assert!(matches!(bad_len, Err(HebError::ShapeMismatch { .. })));
    }
}
