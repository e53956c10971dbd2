//! The cells of the AODE cell weights numbered from their keys: each column's distinct
//! keys in increasing order, the columns one after another (what `np.unique` gives
//! column by column; python/hebnb/weighting.py `number_cells`); and the cells of new rows
//! looked up in that numbering (their uses, or their weighted sum).
//!
//! A column's keys are hashed, so that only its distinct keys are sorted: a column of a
//! high-cardinality pair holds far fewer distinct keys than rows, and one of a
//! low-cardinality pair only a handful. Columns are numbered in parallel; the result does
//! not depend on the number of threads.

use ndarray::ArrayView2;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{entries, filled, with_capacity, HebError, Result};
use crate::interrupt;

/// Every column's cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedCells {
    /// (K, S) row-major: column `k`'s cell for each row, -1 where the row has no key.
    pub cells: Vec<i64>,
    /// Column `k`'s cells are `column_starts[k]..column_starts[k + 1]`.
    pub column_starts: Vec<usize>,
    /// Each cell's key: every column's distinct keys, increasing, one column after another.
    pub keys: Vec<i64>,
    /// Each cell's first row.
    pub first_row: Vec<i64>,
}

/// One column's distinct keys (increasing) and the first row of each.
struct ColumnKeys {
    keys: Vec<i64>,
    first_row: Vec<i64>,
}

/// Which cell of each super-parent's tables each row of `codes` (F, S; -1 missing or
/// unknown) uses, (P F, S) row-major: column `p F + j` is super-parent `parents[p]`'s child
/// `j` (key `u K_j + v`) or, at `j = parents[p]`, its own term (key `u`); -1 where the
/// parent's or the child's value is missing. What [`number_cells`] numbers.
///
/// # Errors
/// A parent outside the features, cardinalities of another length, and
/// [`HebError::Allocation`].
pub fn cell_keys(
    codes: ArrayView2<i32>,
    parents: &[usize],
    cardinality: &[usize],
) -> Result<Vec<i64>> {
    let (n_features, n_rows) = codes.dim();
    if cardinality.len() != n_features || parents.iter().any(|&i| i >= n_features) {
        return Err(HebError::InvalidParameter(format!(
            "cell keys: {} cardinalities and super-parents {parents:?} for {n_features} \
             features",
            cardinality.len()
        )));
    }
    let n_columns = parents.len() * n_features;
    let mut keys = filled(entries(n_columns, n_rows, "cell keys")?, -1i64, "cell keys")?;
    if n_rows == 0 {
        return Ok(keys);
    }
    keys.par_chunks_mut(n_rows)
        .enumerate()
        .for_each(|(k, column)| {
            let (i, j) = (parents[k / n_features], k % n_features);
            let (parent, child) = (codes.row(i), codes.row(j));
            let k_child = cardinality[j] as i64;
            for ((key, &u), &v) in column.iter_mut().zip(parent).zip(child) {
                if u >= 0 && v >= 0 {
                    *key = if i == j {
                        i64::from(u)
                    } else {
                        i64::from(u) * k_child + i64::from(v)
                    };
                }
            }
        });
    Ok(keys)
}

/// Numbers the cells of `keys` (K, S): column `k`'s non-negative keys, each distinct key
/// one cell; a negative key is no cell.
pub fn number_cells(keys: ArrayView2<i64>) -> Result<NumberedCells> {
    let (n_columns, n_rows) = keys.dim();
    let mut cells = filled(n_columns * n_rows, -1i64, "cell numbers")?;
    if n_rows == 0 {
        return Ok(NumberedCells {
            cells,
            column_starts: vec![0; n_columns + 1],
            keys: Vec::new(),
            first_row: Vec::new(),
        });
    }
    // each column numbered from 0 in its own slice of `cells`
    let columns: Vec<ColumnKeys> = cells
        .par_chunks_mut(n_rows)
        .enumerate()
        .map(|(k, own)| number_column(keys.row(k), own))
        .collect::<Result<_>>()?;
    let mut column_starts = Vec::with_capacity(n_columns + 1);
    column_starts.push(0);
    for column in &columns {
        column_starts.push(column_starts[column_starts.len() - 1] + column.keys.len());
    }
    let n_cells = column_starts[n_columns];
    cells
        .par_chunks_mut(n_rows)
        .zip(&column_starts[..n_columns])
        .for_each(|(own, &start)| {
            own.iter_mut()
                .filter(|cell| **cell >= 0)
                .for_each(|cell| *cell += start as i64);
        });
    let mut all_keys = with_capacity(n_cells, "cell keys")?;
    let mut first_row = with_capacity(n_cells, "cell first rows")?;
    for column in columns {
        all_keys.extend(column.keys);
        first_row.extend(column.first_row);
    }
    Ok(NumberedCells {
        cells,
        column_starts,
        keys: all_keys,
        first_row,
    })
}

/// Every use of a numbered cell by a batch of rows, column by column: what the
/// `"cll-value"` scores of new rows read besides the weights (python/hebnb/aode.py
/// `_seen_cells`).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenCells {
    /// The row of each use (in the batch).
    pub row: Vec<i64>,
    /// Its cell (the numbering's index).
    pub cell: Vec<i64>,
    /// The value of each use, `(uses, C)` row-major.
    pub value: Vec<f64>,
}

/// Looks up each row's key of every column `k` of `keys` (K, s) among the column's
/// numbered cells (`cell_keys[column_starts[k]..column_starts[k + 1]]`, increasing), and
/// keeps the uses where the key is a cell and `qualifies[row, k / columns_per_parent]`:
/// column by column, rows in order, each with its `values[row, k, ..]` (s, K, C).
///
/// # Errors
/// Shape mismatches, column starts that are not increasing within the keys,
/// [`HebError::Allocation`] and [`HebError::Interrupted`].
pub fn seen_cells(
    keys: ArrayView2<i64>,
    cell_keys: &[i64],
    column_starts: &[usize],
    qualifies: ArrayView2<bool>,
    values: ndarray::ArrayView3<f64>,
) -> Result<SeenCells> {
    let (n_columns, n_rows) = keys.dim();
    let n_classes = values.dim().2;
    let columns_per_parent = check_lookup(
        "seen cells",
        (n_rows, n_columns),
        cell_keys,
        column_starts,
        qualifies,
        values,
    )?;
    // each column's uses on their own, then one after another
    let columns: Vec<(Vec<i64>, Vec<i64>)> = (0..n_columns)
        .into_par_iter()
        .map(|k| {
            interrupt::check()?;
            let known = &cell_keys[column_starts[k]..column_starts[k + 1]];
            let parent = k / columns_per_parent;
            let (mut rows, mut cells) = (Vec::new(), Vec::new());
            for (row, &key) in keys.row(k).iter().enumerate() {
                if key < 0 || !qualifies[[row, parent]] {
                    continue;
                }
                if let Ok(position) = known.binary_search(&key) {
                    grow(&mut rows, row as i64)?;
                    grow(&mut cells, (column_starts[k] + position) as i64)?;
                }
            }
            Ok((rows, cells))
        })
        .collect::<Result<_>>()?;
    let n_uses: usize = columns.iter().map(|(rows, _)| rows.len()).sum();
    let mut row = with_capacity(n_uses, "seen cells")?;
    let mut cell = with_capacity(n_uses, "seen cells")?;
    let mut value = with_capacity(n_uses * n_classes, "seen cell values")?;
    for (k, (rows, cells)) in columns.into_iter().enumerate() {
        for &r in &rows {
            value.extend(values.slice(ndarray::s![r as usize, k, ..]).iter());
        }
        row.extend(rows);
        cell.extend(cells);
    }
    Ok(SeenCells { row, cell, value })
}

/// Checks that a batch's keys `(rows, columns)`, cell numbering, `qualifies` (rows, P) and
/// `values` (rows, columns, C) agree, and returns the columns of each super-parent.
fn check_lookup(
    what: &str,
    (n_rows, n_columns): (usize, usize),
    cell_keys: &[i64],
    column_starts: &[usize],
    qualifies: ArrayView2<bool>,
    values: ndarray::ArrayView3<f64>,
) -> Result<usize> {
    let n_parents = qualifies.ncols();
    let columns_per_parent = n_columns / n_parents.max(1);
    let agree = values.dim() == (n_rows, n_columns, values.dim().2)
        && qualifies.nrows() == n_rows
        && n_parents * columns_per_parent == n_columns
        && column_starts.len() == n_columns + 1
        && column_starts.windows(2).all(|w| w[0] <= w[1])
        && column_starts[n_columns] <= cell_keys.len();
    if !agree {
        return Err(HebError::InvalidParameter(format!(
            "{what}: keys of {n_rows} rows x {n_columns} columns, values {:?}, qualifies {:?} \
             and {} column starts over {} cell keys do not agree",
            values.dim(),
            qualifies.dim(),
            column_starts.len(),
            cell_keys.len()
        )));
    }
    Ok(columns_per_parent)
}

/// `sum_k w[cell, c] (values[row, k, c] / n_parents)` of every row over the columns `k`
/// where [`seen_cells`] finds a use, in column order from 0: the cell part of the
/// `"cll-value"` scores at one set of cell weights `w` (cells, C), the same numbers as
/// summing [`seen_cells`]' uses row by row, without them. Rows run in parallel; `keys` is
/// (s, K) here, a row's keys together.
///
/// # Errors
/// As [`seen_cells`], and weights of another shape.
pub fn weighted_cell_sums(
    keys: ArrayView2<i64>,
    cell_keys: &[i64],
    column_starts: &[usize],
    qualifies: ArrayView2<bool>,
    values: ndarray::ArrayView3<f64>,
    weights: ArrayView2<f64>,
) -> Result<Vec<f64>> {
    let (n_rows, n_columns) = keys.dim();
    let n_classes = values.dim().2;
    let columns_per_parent = check_lookup(
        "weighted cell sums",
        (n_rows, n_columns),
        cell_keys,
        column_starts,
        qualifies,
        values,
    )?;
    let n_cells = column_starts[n_columns];
    if weights.dim() != (n_cells, n_classes) {
        return Err(HebError::InvalidParameter(format!(
            "weighted cell sums: weights {:?} do not agree with {n_cells} cells of {n_classes} \
             classes",
            weights.dim()
        )));
    }
    let n_parents = qualifies.ncols();
    let scale = n_parents.max(1) as f64;
    let mut sums = filled(n_rows * n_classes, 0.0, "weighted cell sums")?;
    sums.par_chunks_mut(n_classes.max(1))
        .enumerate()
        .try_for_each(|(row, sum)| -> Result<()> {
            interrupt::check_every(row)?;
            for (k, &key) in keys.row(row).iter().enumerate() {
                if key < 0 || !qualifies[[row, k / columns_per_parent]] {
                    continue;
                }
                let known = &cell_keys[column_starts[k]..column_starts[k + 1]];
                if let Ok(position) = known.binary_search(&key) {
                    let weight = weights.row(column_starts[k] + position);
                    let value = values.slice(ndarray::s![row, k, ..]);
                    for ((total, &w), &v) in sum.iter_mut().zip(weight).zip(value) {
                        *total += w * (v / scale);
                    }
                }
            }
            Ok(())
        })?;
    Ok(sums)
}

/// Writes each row's rank among the column's distinct keys to `own` (-1: no key) and
/// returns those keys with their first rows.
fn number_column(keys: ndarray::ArrayView1<i64>, own: &mut [i64]) -> Result<ColumnKeys> {
    interrupt::check()?;
    // distinct keys numbered by first use
    let mut first_use: FxHashMap<i64, u32> = FxHashMap::default();
    let mut distinct: Vec<i64> = Vec::new();
    let mut first_row: Vec<i64> = Vec::new();
    for (row, (&key, cell)) in keys.iter().zip(own.iter_mut()).enumerate() {
        if key < 0 {
            continue;
        }
        if first_use.len() == first_use.capacity() {
            let more = first_use.capacity().max(64);
            first_use
                .try_reserve(more)
                .map_err(|_| HebError::Allocation {
                    what: "cell key index of a column",
                    bytes: ((first_use.len() + more) as u128) * 16,
                })?;
        }
        let next = distinct.len() as u32;
        let id = *first_use.entry(key).or_insert(next);
        if id == next {
            grow(&mut distinct, key)?;
            grow(&mut first_row, row as i64)?;
        }
        *cell = i64::from(id);
        interrupt::check_every(row)?;
    }
    drop(first_use);
    // renumbered in key order
    let mut order: Vec<u32> = with_capacity(distinct.len(), "cell key order")?;
    order.extend(0..distinct.len() as u32);
    order.sort_unstable_by_key(|&id| distinct[id as usize]);
    let mut rank = filled(distinct.len(), 0i64, "cell key ranks")?;
    for (position, &id) in order.iter().enumerate() {
        rank[id as usize] = position as i64;
    }
    own.iter_mut()
        .filter(|cell| **cell >= 0)
        .for_each(|cell| *cell = rank[*cell as usize]);
    let mut sorted_keys = with_capacity(order.len(), "sorted cell keys")?;
    sorted_keys.extend(order.iter().map(|&id| distinct[id as usize]));
    let mut sorted_first_rows = with_capacity(order.len(), "cell first rows")?;
    sorted_first_rows.extend(order.iter().map(|&id| first_row[id as usize]));
    Ok(ColumnKeys {
        keys: sorted_keys,
        first_row: sorted_first_rows,
    })
}

/// `v.push(value)`, an allocation failure reported instead of aborting.
fn grow(v: &mut Vec<i64>, value: i64) -> Result<()> {
    if v.len() == v.capacity() {
        let more = v.capacity().max(64);
        v.try_reserve(more).map_err(|_| HebError::Allocation {
            what: "cell keys of a column",
            bytes: ((v.len() + more) as u128) * 8,
        })?;
    }
    v.push(value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::with_threads;
    use ndarray::Array2;

    /// Sorting every row's key: the obviously correct numbering.
    fn sorted_numbering(column: &[i64]) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let mut distinct: Vec<i64> = column.iter().copied().filter(|&k| k >= 0).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let cells = column
            .iter()
            .map(|&k| {
                if k < 0 {
                    -1
                } else {
                    distinct.binary_search(&k).unwrap() as i64
                }
            })
            .collect();
        let first = distinct
            .iter()
            .map(|&d| column.iter().position(|&k| k == d).unwrap() as i64)
            .collect();
        (cells, distinct, first)
    }

    #[test]
    fn cells_are_each_columns_distinct_keys_in_order_for_any_thread_count() {
        let mut seed = 5u64;
        let mut next =
            |range: i64| ((crate::test_random::next_state(&mut seed) >> 33) as i64 % range) - 1;
        let (n_columns, n_rows) = (7, 3000);
        let ranges = [3, 1, 2, 5000, 40, 1 << 30, 9];
        let keys = Array2::from_shape_fn((n_columns, n_rows), |(k, _)| {
            if k == 2 {
                -1
            } else {
                next(ranges[k])
            }
        });
        let results: Vec<NumberedCells> = [1, 2, 3]
            .iter()
            .map(|&t| {
                with_threads(t, || number_cells(keys.view()))
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert!(results.windows(2).all(|pair| pair[0] == pair[1]));
        let numbered = &results[0];
        for k in 0..n_columns {
            let column = keys.row(k).to_vec();
            let (cells, distinct, first) = sorted_numbering(&column);
            let range = numbered.column_starts[k]..numbered.column_starts[k + 1];
            assert_eq!(numbered.keys[range.clone()], distinct[..]);
            assert_eq!(numbered.first_row[range.clone()], first[..]);
            let shifted: Vec<i64> = cells
                .iter()
                .map(|&c| if c < 0 { -1 } else { c + range.start as i64 })
                .collect();
            assert_eq!(numbered.cells[k * n_rows..(k + 1) * n_rows], shifted[..]);
        }
        assert_eq!(numbered.column_starts[3], numbered.column_starts[2]);
    }

    #[test]
    fn no_rows_or_no_columns_number_no_cells() {
        let none = number_cells(Array2::<i64>::zeros((4, 0)).view()).unwrap();
        assert_eq!(none.column_starts, vec![0; 5]);
        assert!(none.cells.is_empty() && none.keys.is_empty());
        let none = number_cells(Array2::<i64>::zeros((0, 6)).view()).unwrap();
        assert_eq!(none.column_starts, vec![0]);
        assert!(none.cells.is_empty());
    }
}
