//! Category encoding of integer-valued columns: each feature's categories are its sorted
//! distinct non-missing values, and a value's code is its rank among them.
//!
//! Columns are independent, so they are factorised in parallel; a hash map per column
//! finds the distinct values in one pass, and encoding against known categories is a
//! binary search. This is what makes very wide tables (thousands of columns) and very
//! long ones cheap to encode; non-integer columns are encoded on the Python side.

use std::collections::HashMap;

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::error::{HebError, Result};

/// Code of a missing value.
pub const MISSING: i32 = -1;
/// Code of a present value that is not among the known categories.
pub const UNKNOWN: i32 = -2;

/// Categories of all features side by side: feature f's are `values[offsets[f]..offsets[f+1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Categories {
    pub values: Vec<i64>,
    pub offsets: Vec<usize>,
}

fn check_missing(values: ArrayView2<i64>, missing: Option<ArrayView2<bool>>) -> Result<()> {
    if let Some(mask) = missing {
        if mask.dim() != values.dim() {
            return Err(HebError::InvalidParameter(format!(
                "missing-value mask has shape {:?}, values have {:?}",
                mask.dim(),
                values.dim()
            )));
        }
    }
    Ok(())
}

fn codes_array(rows: Vec<Vec<i32>>, n_rows: usize) -> Result<Array2<i32>> {
    let n_features = rows.len();
    Array2::from_shape_vec((n_features, n_rows), rows.concat())
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// Learns the categories of every feature of `values` (F, S) and codes them.
///
/// `missing` (F, S), when given, marks cells that are missing (code -1).
///
/// # Errors
/// A mask of the wrong shape, or more than `i32::MAX` categories in one feature.
pub fn factorize(
    values: ArrayView2<i64>,
    missing: Option<ArrayView2<bool>>,
) -> Result<(Array2<i32>, Categories)> {
    check_missing(values, missing)?;
    let n_rows = values.ncols();
    let per_feature: Vec<(Vec<i32>, Vec<i64>)> = (0..values.nrows())
        .into_par_iter()
        .map(|f| {
            let row = values.row(f);
            let mask = missing.as_ref().map(|m| m.row(f));
            let is_missing = |s: usize| mask.is_some_and(|m| m[s]);
            let mut first_seen: HashMap<i64, u32> = HashMap::new();
            let mut provisional = vec![MISSING; n_rows];
            for (s, &v) in row.iter().enumerate() {
                if is_missing(s) {
                    continue;
                }
                let next = first_seen.len() as u32;
                provisional[s] = *first_seen.entry(v).or_insert(next) as i32;
            }
            if first_seen.len() > i32::MAX as usize {
                return Err(HebError::InvalidParameter(format!(
                    "feature {f} has more than {} categories",
                    i32::MAX
                )));
            }
            let mut sorted: Vec<(i64, u32)> = first_seen.into_iter().collect();
            sorted.sort_unstable();
            let mut rank = vec![0_i32; sorted.len()];
            for (r, &(_, seen)) in sorted.iter().enumerate() {
                rank[seen as usize] = r as i32;
            }
            let codes = provisional
                .into_iter()
                .map(|p| if p < 0 { p } else { rank[p as usize] })
                .collect();
            Ok((codes, sorted.into_iter().map(|(v, _)| v).collect()))
        })
        .collect::<Result<_>>()?;
    let mut offsets = vec![0];
    let mut categories = Vec::new();
    let mut codes = Vec::with_capacity(per_feature.len());
    for (feature_codes, feature_categories) in per_feature {
        categories.extend(feature_categories);
        offsets.push(categories.len());
        codes.push(feature_codes);
    }
    Ok((
        codes_array(codes, n_rows)?,
        Categories {
            values: categories,
            offsets,
        },
    ))
}

/// Codes `values` (F, S) against known sorted categories: -1 missing, -2 unknown.
///
/// # Errors
/// Shapes that disagree with the categories.
pub fn encode(
    values: ArrayView2<i64>,
    missing: Option<ArrayView2<bool>>,
    categories: &Categories,
) -> Result<Array2<i32>> {
    check_missing(values, missing)?;
    if categories.offsets.len() != values.nrows() + 1 {
        return Err(HebError::ShapeMismatch {
            what: "number of features",
            expected: categories.offsets.len().saturating_sub(1),
            found: values.nrows(),
        });
    }
    let codes: Vec<Vec<i32>> = (0..values.nrows())
        .into_par_iter()
        .map(|f| {
            let known = &categories.values[categories.offsets[f]..categories.offsets[f + 1]];
            let mask = missing.as_ref().map(|m| m.row(f));
            values
                .row(f)
                .iter()
                .enumerate()
                .map(|(s, v)| {
                    if mask.is_some_and(|m| m[s]) {
                        MISSING
                    } else {
                        known.binary_search(v).map_or(UNKNOWN, |k| k as i32)
                    }
                })
                .collect()
        })
        .collect();
    codes_array(codes, values.ncols())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn factorize_sorts_categories_and_skips_missing() {
        let values = array![[30, -5, 30, 7], [1, 1, 2, 9]];
        let missing = array![[false, false, false, false], [false, false, false, true]];
        let (codes, categories) = factorize(values.view(), Some(missing.view())).unwrap();
        assert_eq!(categories.values, vec![-5, 7, 30, 1, 2]);
        assert_eq!(categories.offsets, vec![0, 3, 5]);
        assert_eq!(codes, array![[2, 0, 2, 1], [0, 0, 1, -1]]);
    }

    #[test]
    fn encode_marks_unknown_and_missing() {
        let categories = Categories {
            values: vec![-5, 7, 30],
            offsets: vec![0, 3],
        };
        let values = array![[7, 8, 30, -5]];
        let missing = array![[false, false, true, false]];
        let codes = encode(values.view(), Some(missing.view()), &categories).unwrap();
        assert_eq!(codes, array![[1, UNKNOWN, MISSING, 0]]);
    }
}
