//! Counts that grow with the vocabulary, for streaming (`partial_fit`): a batch of coded
//! rows is added in place to one `(C, capacity_f)` table per feature, after every stored
//! count is multiplied by the forgetting factor (SPEC "Online learning and forgetting").
//!
//! Because codes are given in order of first appearance, a batch only ever touches the
//! cells of its own rows and the columns its new categories open at the end of each
//! table: the cost of a batch is O(rows x features), not O(vocabulary) (forgetting with
//! a rate below one multiplies every stored count and is O(vocabulary)). The sums are
//! those [`crate::counts::count_categories`] makes over the same rows, so counting the
//! batches of a stream one by one and solving once gives the model one fit on the
//! concatenated rows gives.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

use crate::counts::class_indices;
use crate::error::{check_code_range, check_len, check_weights, with_capacity, HebError, Result};

/// Adds the rows `codes (F, S)` (-1: missing) with `labels` and `weights` to the
/// per-feature tables `tables[f]` of shape `(C, capacity_f)` and to `class_totals`, after
/// multiplying both by `decay` (1: no forgetting).
///
/// # Errors
/// Shape mismatches, a class index outside `0..C`, a code beyond its table's capacity.
pub fn add_batch(
    tables: &mut [ArrayViewMut2<'_, f64>],
    class_totals: &mut [f64],
    codes: ArrayView2<'_, i32>,
    labels: ArrayView1<'_, i64>,
    weights: ArrayView1<'_, f64>,
    decay: f64,
) -> Result<()> {
    check_len("number of weights", codes.ncols(), weights.len())?;
    check_weights(weights.iter())?;
    // (0 is a decay: long forgetting underflows to it)
    if !(decay.is_finite() && decay >= 0.0) {
        return Err(HebError::InvalidParameter(format!(
            "the decay of the stored counts must be finite and non-negative, got {decay}"
        )));
    }
    // every cell checked before any is added: a refused batch changes no table
    let classes = check_cells(tables, codes, labels, class_totals.len())?;
    let add_feature = |(f, table): (usize, &mut ArrayViewMut2<'_, f64>)| {
        if decay != 1.0 {
            table.mapv_inplace(|n| n * decay);
        }
        for ((&code, &c), &w) in codes.row(f).iter().zip(&classes).zip(weights.iter()) {
            if code >= 0 {
                table[[c, code as usize]] += w;
            }
        }
    };
    // inside a pool the features are counted in parallel; outside one (a single thread
    // asked for) on the calling thread, with no hand-off
    if crate::parallel::in_a_pool() {
        tables.par_iter_mut().enumerate().for_each(add_feature);
    } else {
        tables.iter_mut().enumerate().for_each(add_feature);
    }
    for total in class_totals.iter_mut() {
        *total *= decay;
    }
    for (&c, &w) in classes.iter().zip(weights.iter()) {
        class_totals[c] += w;
    }
    Ok(())
}

/// The stored values of the cells the rows `codes (F, S)` with `labels` would add to,
/// feature by feature and row by row (missing cells skipped): taken before
/// [`add_batch`], they let [`restore_cells`] undo it exactly at the cost of the batch.
///
/// # Errors
/// As [`add_batch`]: shape mismatches, a class or code outside its table.
pub fn touched_cells(
    tables: &[ArrayViewMut2<'_, f64>],
    codes: ArrayView2<'_, i32>,
    labels: ArrayView1<'_, i64>,
) -> Result<Vec<f64>> {
    let classes = check_cells(tables, codes, labels, n_classes_of(tables))?;
    let mut saved = with_capacity(codes.len(), "saved counts")?;
    for (table, row) in tables.iter().zip(codes.rows()) {
        for (&code, &c) in row.iter().zip(&classes) {
            if code >= 0 {
                saved.push(table[[c, code as usize]]);
            }
        }
    }
    Ok(saved)
}

/// Writes back the values [`touched_cells`] saved for the same rows. Every saved value
/// predates the batch, so a cell the batch touched twice gets its value from before.
///
/// # Errors
/// As [`touched_cells`], or `saved` of another length.
pub fn restore_cells(
    tables: &mut [ArrayViewMut2<'_, f64>],
    codes: ArrayView2<'_, i32>,
    labels: ArrayView1<'_, i64>,
    saved: &[f64],
) -> Result<()> {
    let classes = check_cells(tables, codes, labels, n_classes_of(tables))?;
    let present = codes.iter().filter(|&&code| code >= 0).count();
    check_len("number of saved cells", present, saved.len())?;
    let mut values = saved.iter();
    for (table, row) in tables.iter_mut().zip(codes.rows()) {
        for ((&code, &c), &value) in row
            .iter()
            .zip(&classes)
            .filter(|(&code, _)| code >= 0)
            .zip(&mut values)
        {
            table[[c, code as usize]] = value;
        }
    }
    Ok(())
}

/// The number of classes of per-feature tables `(C, capacity_f)`.
fn n_classes_of(tables: &[ArrayViewMut2<'_, f64>]) -> usize {
    tables.first().map_or(0, |t| t.nrows())
}

/// The class index of every row, once the `n_classes`-row tables are checked to hold
/// every cell of the batch.
fn check_cells(
    tables: &[ArrayViewMut2<'_, f64>],
    codes: ArrayView2<'_, i32>,
    labels: ArrayView1<'_, i64>,
    n_classes: usize,
) -> Result<Vec<usize>> {
    check_len("number of features", tables.len(), codes.nrows())?;
    check_len("number of labels", codes.ncols(), labels.len())?;
    for (f, (table, row)) in tables.iter().zip(codes.rows()).enumerate() {
        check_len("rows of a count table", n_classes, table.nrows())?;
        check_code_range(f, row, table.ncols())?;
    }
    class_indices(labels, n_classes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::count_categories;
    use crate::error::HebError;
    use crate::layout::FeatureLayout;
    use ndarray::{array, Array2};

    #[test]
    fn batches_add_up_to_the_counts_of_all_rows() {
        let codes = array![[0, 1, 1, -1, 2, 0], [1, 0, 0, 0, 1, 1]];
        let labels = array![0_i64, 1, 1, 0, 1, 0];
        let weights = array![1.0, 2.0, 0.5, 1.0, 1.0, 3.0];
        let layout = FeatureLayout::from_cardinalities(&[3, 2]);
        let all =
            count_categories(codes.view(), labels.view(), weights.view(), &layout, 2).unwrap();
        let mut tables = [Array2::<f64>::zeros((2, 4)), Array2::<f64>::zeros((2, 2))];
        let mut totals = vec![0.0; 2];
        for (start, end) in [(0, 2), (2, 6)] {
            let mut views: Vec<_> = tables.iter_mut().map(|t| t.view_mut()).collect();
            add_batch(
                &mut views,
                &mut totals,
                codes.slice(ndarray::s![.., start..end]),
                labels.slice(ndarray::s![start..end]),
                weights.slice(ndarray::s![start..end]),
                1.0,
            )
            .unwrap();
        }
        assert_eq!(totals, all.class_totals);
        for c in 0..2 {
            for v in 0..3 {
                assert_eq!(tables[0][[c, v]], all.table[[c, v]]);
            }
            for v in 0..2 {
                assert_eq!(tables[1][[c, v]], all.table[[c, 3 + v]]);
            }
        }
    }

    #[test]
    fn restoring_the_touched_cells_undoes_a_batch_exactly() {
        let mut tables = [
            array![[0.1, 0.7, 0.0], [1.0 / 3.0, 0.0, 2.5]],
            array![[0.2, 0.4], [0.6, 0.8]],
        ];
        let before = tables.clone();
        // repeated cells, a missing one, weights that do not round-trip by subtraction
        let codes = array![[1, 1, -1, 2, 0], [0, 0, 1, 1, 1]];
        let labels = array![0_i64, 0, 1, 1, 1];
        let weights = array![0.1, 0.2, 0.3, 1e-17, 0.7];
        let mut totals = vec![0.0; 2];
        let mut views: Vec<_> = tables.iter_mut().map(|t| t.view_mut()).collect();
        let saved = touched_cells(&views, codes.view(), labels.view()).unwrap();
        assert_eq!(saved.len(), 9);
        add_batch(
            &mut views,
            &mut totals,
            codes.view(),
            labels.view(),
            weights.view(),
            1.0,
        )
        .unwrap();
        restore_cells(&mut views, codes.view(), labels.view(), &saved).unwrap();
        drop(views);
        assert_eq!(tables, before);
        let mut views: Vec<_> = tables.iter_mut().map(|t| t.view_mut()).collect();
        let short = restore_cells(&mut views, codes.view(), labels.view(), &saved[1..]);
        assert!(short.is_err());
        let beyond = touched_cells(&views, array![[3], [0]].view(), array![0_i64].view());
        assert!(matches!(beyond, Err(HebError::CodeOutOfRange { .. })));
    }

    #[test]
    fn decay_ages_the_stored_counts_and_bad_codes_are_refused() {
        let mut table = array![[2.0, 4.0]];
        let mut totals = vec![6.0];
        {
            let mut views = [table.view_mut()];
            add_batch(
                &mut views,
                &mut totals,
                array![[1]].view(),
                array![0_i64].view(),
                array![1.0].view(),
                0.5,
            )
            .unwrap();
        }
        assert_eq!(table, array![[1.0, 3.0]]);
        assert_eq!(totals, vec![4.0]);
        let mut views = [table.view_mut()];
        let beyond = add_batch(
            &mut views,
            &mut totals,
            array![[2]].view(),
            array![0_i64].view(),
            array![1.0].view(),
            1.0,
        );
        assert!(matches!(beyond, Err(HebError::CodeOutOfRange { .. })));
    }
}
