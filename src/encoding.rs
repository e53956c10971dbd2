//! Category encoding of integer-valued columns: each feature's categories are its sorted
//! distinct non-missing values, and a value's code is its rank among them.
//!
//! Columns are independent, so they are factorised in parallel. Values in a range of at
//! most `DIRECT_RANGE` are ranked through a direct lookup array (one read per value);
//! wider ranges use a hash set to find the categories and bisection to rank values. This is what makes very wide tables (thousands of columns) and very
//! long ones cheap to encode; non-integer columns are encoded on the Python side.

use ndarray::{Array2, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use crate::error::{filled, with_capacity, HebError, Result};

/// Code of a missing value.
pub const MISSING: i32 = -1;
/// Code of a present value that is not among the known categories.
pub const UNKNOWN: i32 = -2;

/// Widest value range (max - min + 1) coded through a direct lookup array instead of a
/// hash set or bisection: 4 Mi entries, 16 MiB of `i32`. Most integer categories are
/// dense ranges (codes `0..K`, bins, small IDs), where the array makes each value one
/// memory read. The array is only built when the range is also at most
/// [`DIRECT_PER_ROW`] times the number of rows to code, so that filling it never costs
/// more than the lookups it saves (predicting a handful of rows stays cheap).
const DIRECT_RANGE: u64 = 1 << 22;
const DIRECT_PER_ROW: u64 = 4;

fn use_direct(min: i64, max: i64, n_rows: usize) -> bool {
    let range = max.abs_diff(min);
    range < DIRECT_RANGE && range < DIRECT_PER_ROW * (n_rows as u64).max(64)
}

/// Maps the values of one feature to ranks among its sorted categories.
enum RankLookup {
    /// `ranks[v - min]`, -2 where `v` is not a category.
    Direct { min: i64, ranks: Vec<i32> },
    /// Sorted categories, searched by bisection.
    Sorted(Vec<i64>),
}

impl RankLookup {
    /// Lookup for sorted distinct `categories`, to code `n_rows` values.
    fn new(categories: &[i64], n_rows: usize) -> Self {
        match (categories.first(), categories.last()) {
            (Some(&min), Some(&max)) if use_direct(min, max, n_rows) => {
                let mut ranks = vec![UNKNOWN; (max - min + 1) as usize];
                for (rank, &v) in categories.iter().enumerate() {
                    ranks[(v - min) as usize] = rank as i32;
                }
                RankLookup::Direct { min, ranks }
            }
            _ => RankLookup::Sorted(categories.to_vec()),
        }
    }

    fn rank(&self, v: i64) -> i32 {
        match self {
            RankLookup::Direct { min, ranks } => {
                let offset = v.wrapping_sub(*min);
                if (0..ranks.len() as i64).contains(&offset) {
                    ranks[offset as usize]
                } else {
                    UNKNOWN
                }
            }
            RankLookup::Sorted(sorted) => sorted.binary_search(&v).map_or(UNKNOWN, |k| k as i32),
        }
    }
}

/// Sorted distinct present values of one feature with `n_rows` rows.
fn distinct_sorted(values: impl Iterator<Item = i64> + Clone, n_rows: usize) -> Vec<i64> {
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for v in values.clone() {
        min = min.min(v);
        max = max.max(v);
    }
    if min <= max && use_direct(min, max, n_rows) {
        let mut seen = vec![false; (max - min + 1) as usize];
        for v in values {
            seen[(v - min) as usize] = true;
        }
        return (min..=max).filter(|v| seen[(v - min) as usize]).collect();
    }
    let mut distinct: Vec<i64> = values
        .collect::<std::collections::HashSet<i64>>()
        .into_iter()
        .collect();
    distinct.sort_unstable();
    distinct
}

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

/// Rows per block of the feature-major copy: a block of a few dozen features stays in
/// cache while its columns are read out.
const TRANSPOSE_BLOCK: usize = 4096;

/// `values` (F, S) with each feature's values contiguous: a view when they already are,
/// else a copy made block by block in parallel. Row-major user tables arrive as strided
/// (F, S) views; reading them feature by feature would stream the whole table F times.
fn feature_major(values: ArrayView2<'_, i64>) -> Result<CowArray<'_, i64, Ix2>> {
    if values.is_standard_layout() {
        return Ok(CowArray::from(values));
    }
    let (n_features, n_rows) = values.dim();
    let mut flat = filled(
        n_features * n_rows,
        0_i64,
        "feature-major copy of the values",
    )?;
    // one list of per-feature destination slices for every block of rows
    let mut blocks: Vec<Vec<&mut [i64]>> = (0..n_rows.div_ceil(TRANSPOSE_BLOCK))
        .map(|_| Vec::with_capacity(n_features))
        .collect();
    for feature in flat.chunks_mut(n_rows.max(1)) {
        for (block, part) in feature.chunks_mut(TRANSPOSE_BLOCK).enumerate() {
            blocks[block].push(part);
        }
    }
    blocks
        .into_par_iter()
        .enumerate()
        .for_each(|(block, mut parts)| {
            let first = block * TRANSPOSE_BLOCK;
            for (f, part) in parts.iter_mut().enumerate() {
                for (i, slot) in part.iter_mut().enumerate() {
                    *slot = values[[f, first + i]];
                }
            }
        });
    Ok(CowArray::from(
        Array2::from_shape_vec((n_features, n_rows), flat).expect("F x S"),
    ))
}

fn codes_array(rows: Vec<Vec<i32>>, n_rows: usize) -> Result<Array2<i32>> {
    let n_features = rows.len();
    let mut flat = with_capacity(n_features * n_rows, "category codes")?;
    for row in rows {
        flat.extend_from_slice(&row);
    }
    Array2::from_shape_vec((n_features, n_rows), flat)
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
    let values = feature_major(values)?;
    let values = values.view();
    let n_rows = values.ncols();
    let per_feature: Vec<(Vec<i32>, Vec<i64>)> = (0..values.nrows())
        .into_par_iter()
        .map(|f| {
            crate::interrupt::check()?;
            let row = values.row(f);
            let mask = missing.as_ref().map(|m| m.row(f));
            let is_missing = |s: usize| mask.as_ref().is_some_and(|m| m[s]);
            let present = row
                .iter()
                .enumerate()
                .filter(|&(s, _)| !is_missing(s))
                .map(|(_, &v)| v);
            let categories = distinct_sorted(present, n_rows);
            if categories.len() > i32::MAX as usize {
                return Err(HebError::InvalidParameter(format!(
                    "feature {f} has more than {} categories",
                    i32::MAX
                )));
            }
            let lookup = RankLookup::new(&categories, n_rows);
            let mut codes = with_capacity(n_rows, "category codes")?;
            codes.extend(row.iter().enumerate().map(|(s, &v)| {
                if is_missing(s) {
                    MISSING
                } else {
                    lookup.rank(v)
                }
            }));
            Ok((codes, categories))
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

/// Checks what [`encode`] relies on: offsets that rise from 0 to the number of
/// categories, and each feature's categories strictly increasing (the direct lookup
/// sizes its array from the first and last, bisection needs the order).
fn check_categories(categories: &Categories) -> Result<()> {
    let offsets = &categories.offsets;
    let rising = offsets.first() == Some(&0) && offsets.windows(2).all(|w| w[0] <= w[1]);
    if !rising || offsets.last() != Some(&categories.values.len()) {
        return Err(HebError::InvalidParameter(
            "category offsets must rise from 0 to the number of categories".to_string(),
        ));
    }
    for (feature, bounds) in offsets.windows(2).enumerate() {
        let known = &categories.values[bounds[0]..bounds[1]];
        if known.windows(2).any(|pair| pair[0] >= pair[1]) {
            return Err(HebError::InvalidParameter(format!(
                "the categories of feature {feature} are not sorted and distinct"
            )));
        }
    }
    Ok(())
}

/// Codes `values` (F, S) against known sorted categories: -1 missing, -2 unknown.
///
/// # Errors
/// Shapes that disagree with the categories; categories not sorted and distinct.
pub fn encode(
    values: ArrayView2<i64>,
    missing: Option<ArrayView2<bool>>,
    categories: &Categories,
) -> Result<Array2<i32>> {
    check_missing(values, missing)?;
    check_categories(categories)?;
    let values = feature_major(values)?;
    let values = values.view();
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
            crate::interrupt::check()?;
            let known = &categories.values[categories.offsets[f]..categories.offsets[f + 1]];
            let lookup = RankLookup::new(known, values.ncols());
            let mask = missing.as_ref().map(|m| m.row(f));
            let mut codes = with_capacity(values.ncols(), "category codes")?;
            codes.extend(values.row(f).iter().enumerate().map(|(s, &v)| {
                if mask.as_ref().is_some_and(|m| m[s]) {
                    MISSING
                } else {
                    lookup.rank(v)
                }
            }));
            Ok(codes)
        })
        .collect::<Result<_>>()?;
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
    fn wide_ranges_use_the_sorted_lookup_and_agree() {
        let values = array![[i64::MIN, 5, i64::MAX, 5, -7]];
        let (codes, categories) = factorize(values.view(), None).unwrap();
        assert_eq!(categories.values, vec![i64::MIN, -7, 5, i64::MAX]);
        assert_eq!(codes, array![[0, 2, 3, 2, 1]]);
        let unseen = array![[6, i64::MAX, -7]];
        let coded = encode(unseen.view(), None, &categories).unwrap();
        assert_eq!(coded, array![[UNKNOWN, 3, 1]]);
    }

    #[test]
    fn strided_input_gives_the_same_codes() {
        // (S, F) row-major seen as (F, S): not standard layout, copied block by block
        let rows = Array2::from_shape_fn((10_000, 3), |(s, f)| ((s * 7 + f * 13) % 101) as i64);
        let strided = rows.t();
        assert!(!strided.is_standard_layout());
        let contiguous = strided.as_standard_layout().to_owned();
        let (a, ca) = factorize(strided, None).unwrap();
        let (b, cb) = factorize(contiguous.view(), None).unwrap();
        assert_eq!((a, ca.clone()), (b, cb));
        assert_eq!(
            encode(strided, None, &ca).unwrap(),
            encode(contiguous.view(), None, &ca).unwrap()
        );
    }

    #[test]
    fn encode_refuses_categories_it_cannot_search() {
        // unsorted categories made the direct lookup size its array from max - min < 0:
        // a "capacity overflow" panic
        let values = array![[0, 1, 3]];
        for (known, offsets) in [
            (vec![3, 1, 0], vec![0, 3]),
            (vec![1, 1], vec![0, 2]),
            (vec![0, 1], vec![0, 5]),
            (vec![0, 1], vec![1, 2]),
        ] {
            let categories = Categories {
                values: known,
                offsets,
            };
            assert!(matches!(
                encode(values.view(), None, &categories),
                Err(HebError::InvalidParameter(_))
            ));
        }
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
