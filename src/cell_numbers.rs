//! The cells of the AODE cell weights numbered from their keys: each column's distinct
//! keys in increasing order, the columns one after another (what `np.unique` gives
//! column by column; python/hebnb/weighting.py `number_cells`); and the cells of new rows
//! looked up in that numbering ([`CellIndex`]): their uses, or their weighted sum.
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
/// A parent outside the features, cardinalities of another length, a cardinality beyond
/// the codes' range (2^31) or a code at or beyond its feature's cardinality (keys would
/// leave their column's range and collide), and [`HebError::Allocation`].
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
    // codes are i32, so a key u K_j + v stays below 2^62 when every K_j is at most 2^31
    if let Some(j) = (0..n_features).find(|&j| cardinality[j] > 1 << 31) {
        return Err(HebError::InvalidParameter(format!(
            "cell keys: feature {j} has cardinality {}, beyond the codes' range 2^31",
            cardinality[j]
        )));
    }
    if let Some(j) = (0..n_features).find(|&j| {
        codes
            .row(j)
            .iter()
            .any(|&v| i64::from(v) >= cardinality[j] as i64)
    }) {
        return Err(HebError::InvalidParameter(format!(
            "cell keys: feature {j} has a code at or beyond its cardinality {}",
            cardinality[j]
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
                    *key = cell_key(i == j, u, v, k_child);
                }
            }
        });
    Ok(keys)
}

/// The key of super-parent value `u` and child value `v` (both present) in a column of
/// [`cell_keys`]: `u K_j + v` for a child of `k_child` values, `u` for the parent's own
/// term (`own`).
#[inline]
pub(crate) fn cell_key(own: bool, u: i32, v: i32, k_child: i64) -> i64 {
    if own {
        i64::from(u)
    } else {
        i64::from(u) * k_child + i64::from(v)
    }
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
/// numbered cells (`index`), and keeps the uses where the key is a cell and
/// `qualifies[row, k / columns_per_parent]`: column by column, rows in order, each with
/// its `values[row, k, ..]` (s, K, C).
///
/// # Errors
/// Shape mismatches, [`HebError::Allocation`] and [`HebError::Interrupted`].
pub fn seen_cells(
    keys: ArrayView2<i64>,
    index: &CellIndex,
    qualifies: ArrayView2<bool>,
    values: ndarray::ArrayView3<f64>,
) -> Result<SeenCells> {
    let (n_columns, n_rows) = keys.dim();
    let n_classes = values.dim().2;
    let n_parents = qualifies.ncols();
    let columns_per_parent = n_columns / n_parents.max(1);
    let agree = values.dim() == (n_rows, n_columns, n_classes)
        && qualifies.nrows() == n_rows
        && n_parents * columns_per_parent == n_columns
        && index.n_columns() == n_columns;
    if !agree {
        return Err(HebError::InvalidParameter(format!(
            "seen cells: keys of {n_rows} rows x {n_columns} columns, values {:?}, qualifies \
             {:?} and cells numbered in {} columns do not agree",
            values.dim(),
            qualifies.dim(),
            index.n_columns(),
        )));
    }
    // each column's uses on their own, then one after another
    let columns: Vec<(Vec<i64>, Vec<i64>)> = (0..n_columns)
        .into_par_iter()
        .map(|k| {
            interrupt::check()?;
            let parent = k / columns_per_parent;
            let (mut rows, mut cells) = (Vec::new(), Vec::new());
            for (row, &key) in keys.row(k).iter().enumerate() {
                if key < 0 || !qualifies[[row, parent]] {
                    continue;
                }
                if let Some(cell) = index.cell(k, key) {
                    grow(&mut rows, row as i64)?;
                    grow(&mut cells, cell as i64)?;
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

/// Each column's numbered cells (`cell_keys[column_starts[k]..column_starts[k + 1]]`,
/// increasing) ready for looking keys up: a column whose keys are dense enough (its key
/// range at most `DIRECT_SPAN_PER_CELL` times its cells, plus `DIRECT_SPAN_SLACK`)
/// gets a direct table of cell numbers by key, the others are searched. A search reads
/// about log2(cells) scattered keys one after the other; scoring wide data looks up one
/// key per (row, super-parent, feature), so the direct tables keep those look-ups from
/// waiting on each other. Their memory is bounded by the numbered cells', whatever the
/// columns' cardinalities. The index keeps its own copy of the numbering, so that a fitted
/// model builds it once for all its predictions.
#[derive(Debug, Clone)]
pub struct CellIndex {
    cell_keys: Vec<i64>,
    column_starts: Vec<usize>,
    /// `(start in direct, key range)` of each column (range 0: the column is searched).
    direct_spans: Vec<(usize, usize)>,
    /// The direct tables one after another: the cell number of each key, `u32::MAX` where
    /// the key is no cell.
    direct: Vec<u32>,
}

/// A column gets a direct table when its key range is at most this many times its cells
/// (plus `DIRECT_SPAN_SLACK`).
const DIRECT_SPAN_PER_CELL: usize = 4;
/// Key range a column may always have in a direct table.
const DIRECT_SPAN_SLACK: usize = 64;

impl CellIndex {
    /// The index of `cell_keys` numbered by `column_starts` (one more than the columns).
    ///
    /// # Errors
    /// Column starts that do not increase within the keys, a column's keys that are not
    /// increasing, and [`HebError::Allocation`].
    pub fn new(cell_keys: &[i64], column_starts: &[usize]) -> Result<Self> {
        let n_columns = column_starts.len().saturating_sub(1);
        let in_order = !column_starts.is_empty()
            && column_starts.windows(2).all(|w| w[0] <= w[1])
            && column_starts[n_columns] <= cell_keys.len();
        if !in_order {
            return Err(HebError::InvalidParameter(format!(
                "{} column starts do not number {} cell keys in order",
                column_starts.len(),
                cell_keys.len()
            )));
        }
        let column = |k: usize| &cell_keys[column_starts[k]..column_starts[k + 1]];
        if (0..n_columns).any(|k| column(k).windows(2).any(|w| w[0] >= w[1])) {
            return Err(HebError::InvalidParameter(
                "a column's cell keys are not increasing".into(),
            ));
        }
        // cell numbers must fit the direct tables' u32, u32::MAX marking no cell
        let numbers_fit = column_starts[n_columns] < u32::MAX as usize;
        let mut direct_spans = filled(n_columns, (0usize, 0usize), "cell index")?;
        let mut n_direct = 0usize;
        for (k, span) in direct_spans.iter_mut().enumerate() {
            let keys = column(k);
            let (Some(&lowest), Some(&highest)) = (keys.first(), keys.last()) else {
                continue;
            };
            // keys 0..=highest (a negative key, never written, leaves the column searched)
            let limit = DIRECT_SPAN_PER_CELL * keys.len() + DIRECT_SPAN_SLACK;
            let range = usize::try_from(highest).map_or(usize::MAX, |h| h.saturating_add(1));
            if numbers_fit && lowest >= 0 && range <= limit {
                *span = (n_direct, range);
                n_direct += range;
            }
        }
        let mut direct = filled(n_direct, u32::MAX, "cell index")?;
        for (k, &(start, range)) in direct_spans.iter().enumerate() {
            if range > 0 {
                for (position, &key) in column(k).iter().enumerate() {
                    direct[start + key as usize] = (column_starts[k] + position) as u32;
                }
            }
        }
        let n_numbered = column_starts[n_columns];
        let mut own_keys = with_capacity(n_numbered, "cell index")?;
        own_keys.extend_from_slice(&cell_keys[..n_numbered]);
        let mut own_starts = with_capacity(column_starts.len(), "cell index")?;
        own_starts.extend_from_slice(column_starts);
        Ok(Self {
            cell_keys: own_keys,
            column_starts: own_starts,
            direct_spans,
            direct,
        })
    }

    /// Where each column's cells start, and the end (what it was built from).
    pub fn column_starts(&self) -> &[usize] {
        &self.column_starts
    }

    /// The number of columns.
    pub fn n_columns(&self) -> usize {
        self.direct_spans.len()
    }

    /// The number of the cells, all columns together.
    pub fn n_cells(&self) -> usize {
        self.column_starts[self.n_columns()]
    }

    /// The cell of `key` in column `column`, if it is one.
    #[inline]
    pub fn cell(&self, column: usize, key: i64) -> Option<usize> {
        let (start, range) = self.direct_spans[column];
        if range > 0 {
            let number = *self.direct[start..start + range].get(usize::try_from(key).ok()?)?;
            return (number != u32::MAX).then_some(number as usize);
        }
        let (first, end) = (self.column_starts[column], self.column_starts[column + 1]);
        let position = self.cell_keys[first..end].binary_search(&key).ok()?;
        Some(first + position)
    }

    /// The cell of every row in each of `columns`, `(s, G)` row-major: `keys` `(K, s)` holds
    /// every column's key of every row, and a negative key, or one that is no cell of its
    /// column, gives -1. What `count_features` reads of new rows. Rows in parallel chunks.
    ///
    /// # Errors
    /// `keys` of another number of columns, a column out of range, [`HebError::Allocation`]
    /// and [`HebError::Interrupted`].
    pub fn cells_of(&self, keys: ArrayView2<i64>, columns: &[usize]) -> Result<Vec<i64>> {
        let (n_columns, n_rows) = keys.dim();
        if n_columns != self.n_columns() {
            return Err(HebError::InvalidParameter(format!(
                "keys of {n_columns} columns for a numbering of {}",
                self.n_columns()
            )));
        }
        if let Some(&column) = columns.iter().find(|&&k| k >= n_columns) {
            return Err(HebError::InvalidParameter(format!(
                "column {column} is outside the numbering's {n_columns} columns"
            )));
        }
        let width = columns.len();
        let mut cells = filled(
            entries(n_rows, width, "looked-up cells")?,
            -1i64,
            "looked-up cells",
        )?;
        if width == 0 {
            return Ok(cells);
        }
        cells
            .par_chunks_mut(LOOKUP_ROWS * width)
            .enumerate()
            .for_each(|(chunk, out)| {
                if interrupt::cancelled() {
                    return;
                }
                let first = chunk * LOOKUP_ROWS;
                for (g, &column) in columns.iter().enumerate() {
                    for (r, slot) in out.iter_mut().skip(g).step_by(width).enumerate() {
                        let key = keys[[column, first + r]];
                        if key >= 0 {
                            if let Some(cell) = self.cell(column, key) {
                                *slot = cell as i64;
                            }
                        }
                    }
                }
            });
        interrupt::check()?;
        Ok(cells)
    }
}

/// Rows per parallel task of [`CellIndex::cells_of`].
const LOOKUP_ROWS: usize = 4096;

/// `sum += w[cell] * (value / scale)` class by class, for each `(column, cell)` of `uses` in
/// their order, `value` the column's `C` classes in `values` (`(columns, C)` row-major) and
/// `w[cell]` the cell's in `weights` (`(cells, C)` row-major): one row's weighted cells, the
/// part of the `"cll-value"` scores the cell weights add. The weights of the cells a few
/// uses ahead are fetched early, since each use reads a different, far-apart row of a
/// table too large for the caches. `C` is the number of classes (0: any, the slices'
/// length).
#[inline]
pub(crate) fn add_weighted_cells<const C: usize>(
    sum: &mut [f64],
    uses: &[(usize, usize)],
    values: &[f64],
    weights: &[f64],
    scale: f64,
) {
    /// How many uses ahead the weights are fetched.
    const AHEAD: usize = 12;
    let n_classes = sum.len();
    for (t, &(column, cell)) in uses.iter().enumerate() {
        if let Some(&(_, ahead)) = uses.get(t + AHEAD) {
            prefetch(&weights[ahead * n_classes..(ahead + 1) * n_classes]);
        }
        let w = &weights[cell * n_classes..(cell + 1) * n_classes];
        let v = &values[column * n_classes..(column + 1) * n_classes];
        if C > 0 {
            let sum: &mut [f64; C] = sum.try_into().expect("a row of C classes");
            let w: &[f64; C] = w.try_into().expect("a cell of C classes");
            let v: &[f64; C] = v.try_into().expect("a cell of C classes");
            for c in 0..C {
                sum[c] += w[c] * (v[c] / scale);
            }
        } else {
            for ((total, &w), &v) in sum.iter_mut().zip(w).zip(v) {
                *total += w * (v / scale);
            }
        }
    }
}

/// Asks the processor to bring `data`'s first and last cache lines in (nothing where there
/// is no such instruction): a hint that never faults and changes no value.
#[inline(always)]
fn prefetch(data: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(first), Some(last)) = (data.first(), data.last()) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing into the program, cannot fault,
        // and both addresses are in `data` (SSE, which it needs, is in every x86_64).
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(first).cast());
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(last).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// Writes each row's rank among the column's distinct keys to `own` (-1: no key) and
/// returns those keys with their first rows.
fn number_column(keys: ndarray::ArrayView1<i64>, own: &mut [i64]) -> Result<ColumnKeys> {
    interrupt::check()?;
    // distinct keys numbered by first use
    let mut first_use: FxHashMap<i64, u32> = FxHashMap::default();
    let reserve = |first_use: &mut FxHashMap<i64, u32>, more: usize| {
        first_use
            .try_reserve(more)
            .map_err(|_| HebError::Allocation {
                what: "cell key index of a column",
                bytes: ((first_use.len() + more) as u128) * 16,
            })
    };
    // room for a column of rare keys from the start, rather than growing through rehashes
    reserve(&mut first_use, keys.len().min(1 << 16))?;
    let mut distinct: Vec<i64> = Vec::new();
    let mut first_row: Vec<i64> = Vec::new();
    for (row, (&key, cell)) in keys.iter().zip(own.iter_mut()).enumerate() {
        if key < 0 {
            continue;
        }
        if first_use.len() == first_use.capacity() {
            let more = first_use.capacity().max(64);
            reserve(&mut first_use, more)?;
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
    fn the_index_finds_each_columns_cells_as_a_search_does() {
        // columns dense enough for a direct table, a sparse one, an empty one, and one
        // key on either side of the limit (4 cells + 64)
        let mut seed = 11u64;
        let mut next = |range: u64| (crate::test_random::next_state(&mut seed) >> 33) % range;
        let mut cell_keys = Vec::new();
        let mut column_starts = vec![0];
        let spans: [(u64, usize); 6] =
            [(9, 5), (400, 100), (100_000, 50), (1, 0), (68, 1), (69, 1)];
        for (k, &(range, n)) in spans.iter().enumerate() {
            let mut keys: Vec<i64> = (0..n).map(|_| next(range) as i64).collect();
            if k >= 4 {
                keys = vec![range as i64 - 1];
            }
            keys.sort_unstable();
            keys.dedup();
            cell_keys.extend(keys);
            column_starts.push(cell_keys.len());
        }
        cell_keys.extend([7, 3]); // keys of no column
        let index = CellIndex::new(&cell_keys, &column_starts).unwrap();
        assert_eq!((index.n_columns(), index.n_cells()), (6, column_starts[6]));
        let direct: Vec<bool> = index.direct_spans.iter().map(|&(_, r)| r > 0).collect();
        assert_eq!(direct, [true, true, false, false, true, false]);
        for (k, &(range, _)) in spans.iter().enumerate() {
            let known = &cell_keys[column_starts[k]..column_starts[k + 1]];
            for key in (-3..range as i64 + 3).chain([i64::MIN, i64::MAX]) {
                let searched = known.binary_search(&key).ok().map(|p| column_starts[k] + p);
                assert_eq!(index.cell(k, key), searched, "column {k}, key {key}");
            }
        }
        // negative keys (never written by the fit) and the largest ones are searched
        let extreme = [-7, -2, 4, i64::MAX];
        let index = CellIndex::new(&extreme, &[0, 2, 4]).unwrap();
        assert_eq!(index.direct_spans, [(0, 0), (0, 0)]);
        assert_eq!(
            (index.cell(0, -2), index.cell(1, i64::MAX)),
            (Some(1), Some(3))
        );
        assert_eq!((index.cell(0, 4), index.cell(1, -7)), (None, None));
        let unsorted = [0, 5, 3];
        let error = CellIndex::new(&unsorted, &[0, 3]).unwrap_err();
        assert!(error.to_string().contains("not increasing"), "{error}");
        let error = CellIndex::new(&unsorted, &[0, 4]).unwrap_err();
        assert!(error.to_string().contains("in order"), "{error}");
        assert!(CellIndex::new(&unsorted, &[2, 1]).is_err());
        assert!(CellIndex::new(&unsorted, &[]).is_err());
    }

    #[test]
    fn weighted_cells_add_in_the_uses_order_for_any_class_count() {
        let values: Vec<f64> = (0..4 * 3).map(|v| f64::from(v) * 0.37 - 1.1).collect();
        let weights: Vec<f64> = (0..5 * 3).map(|w| 1.0 / (f64::from(w) + 0.5)).collect();
        let uses = [(2, 4), (0, 0), (3, 4), (1, 2)];
        let mut expected = [0.25, -0.5, 1.0];
        for &(column, cell) in &uses {
            for c in 0..3 {
                expected[c] += weights[cell * 3 + c] * (values[column * 3 + c] / 3.0);
            }
        }
        let (mut fixed, mut any) = ([0.25, -0.5, 1.0], [0.25, -0.5, 1.0]);
        add_weighted_cells::<3>(&mut fixed, &uses, &values, &weights, 3.0);
        add_weighted_cells::<0>(&mut any, &uses, &values, &weights, 3.0);
        assert_eq!(fixed, expected);
        assert_eq!(any, expected);
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
