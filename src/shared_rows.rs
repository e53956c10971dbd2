//! The cells of the AODE cell weights that exactly the same training rows use, grouped
//! (`python/hebnb/_shared_rows.py` fits each group as one weight, docs/discriminative.md).
//!
//! One pass over the cell matrix gives every cell the wrapping sum of a 64-bit hash of
//! each row that uses it and its number of rows; cells with equal sums and counts are
//! candidates for one group, each joined to the first of them. The grouping is then
//! checked exactly: a cell whose every row also uses its group's first cell, and that has
//! as many rows, has the same rows. Should the check fail (a hash collision, about
//! `cells^2 / 2^64` likely), no cells are grouped, which is always correct.

use ndarray::ArrayView2;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{filled, with_capacity, HebError, Result};
use crate::interrupt;
use crate::weight_fit::check_cell_columns;

/// The cells grouped by the rows that use them, each group kept in the column of its
/// first cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSetGroups {
    /// Each cell's group, groups numbered in the order of their first cells.
    pub group: Vec<i64>,
    /// Each group's first cell (increasing).
    pub first_cell: Vec<i64>,
    /// (K, S) row-major: each column's group for every row, -1 for none (and where the
    /// row's cell belongs to a group kept in another column).
    pub cells: Vec<i64>,
    /// Column `k`'s groups are `column_starts[k]..column_starts[k + 1]`.
    pub column_starts: Vec<usize>,
}

/// Groups the cells of `cells` (S, K: each row's cell in each column, -1 for none; column
/// `k`'s cells are `column_starts[k]..column_starts[k + 1]`) by the rows that use them.
/// A cell no row uses is a group of its own. Columns are read in parallel, each in row
/// order (fastest when each column is contiguous, as the cell numbering stores them); the
/// result does not depend on the number of threads.
pub fn group_cells_by_rows(
    cells: ArrayView2<i64>,
    column_starts: &[usize],
) -> Result<RowSetGroups> {
    let (n_rows, n_columns) = cells.dim();
    let column_of = column_of_cells(cells, column_starts)?;
    let n_cells = column_of.len();
    let mut set_hash = filled(n_cells, 0u64, "row-set hashes")?;
    let mut count = filled(n_cells, 0u32, "row-set sizes")?;
    // each column's cells are its own range: the columns add into disjoint slices
    let mut slices = Vec::with_capacity(n_columns);
    let (mut hashes, mut counts) = (set_hash.as_mut_slice(), count.as_mut_slice());
    for k in 0..n_columns {
        let size = column_starts[k + 1] - column_starts[k];
        let (hash_head, hash_tail) = hashes.split_at_mut(size);
        let (count_head, count_tail) = counts.split_at_mut(size);
        slices.push((k, hash_head, count_head));
        (hashes, counts) = (hash_tail, count_tail);
    }
    slices.into_par_iter().try_for_each(|(k, hashes, counts)| {
        interrupt::check()?;
        let start = column_starts[k];
        for (row, &cell) in cells.column(k).iter().enumerate() {
            if cell >= 0 {
                let at = cell as usize - start;
                hashes[at] = hashes[at].wrapping_add(row_hash(row));
                counts[at] += 1;
            }
        }
        Ok::<(), HebError>(())
    })?;
    // each cell joined to the first cell of equal hash and size
    let mut first: Vec<usize> = with_capacity(n_cells, "first cells")?;
    let mut first_of_set: FxHashMap<(u64, u32), usize> = FxHashMap::default();
    first_of_set
        .try_reserve(n_cells)
        .map_err(|_| HebError::Allocation {
            what: "row-set index",
            bytes: (n_cells as u128) * 24,
        })?;
    for cell in 0..n_cells {
        first.push(if count[cell] == 0 {
            cell
        } else {
            *first_of_set
                .entry((set_hash[cell], count[cell]))
                .or_insert(cell)
        });
    }
    drop(first_of_set);
    // every row of a cell uses the cell it is joined to (and they have as many rows)
    let agrees = (0..n_columns).into_par_iter().all(|k| {
        cells.column(k).iter().enumerate().all(|(row, &cell)| {
            if cell < 0 {
                return true;
            }
            let joined = first[cell as usize];
            cells[[row, column_of[joined] as usize]] == joined as i64
        })
    });
    if !agrees {
        first.iter_mut().enumerate().for_each(|(cell, f)| *f = cell);
    }
    interrupt::check()?;

    // groups numbered by their first cells; each kept in its first cell's column
    let mut group = filled(n_cells, -1i64, "cell groups")?;
    let mut first_cell: Vec<i64> = with_capacity(n_cells, "group first cells")?;
    for cell in 0..n_cells {
        if first[cell] == cell {
            group[cell] = first_cell.len() as i64;
            first_cell.push(cell as i64);
        } else {
            group[cell] = group[first[cell]];
        }
    }
    let mut merged = filled(n_rows * n_columns, -1i64, "merged cells")?;
    if n_rows > 0 {
        merged
            .par_chunks_mut(n_rows)
            .enumerate()
            .for_each(|(k, own)| {
                for (out, &cell) in own.iter_mut().zip(cells.column(k)) {
                    if cell >= 0 && first[cell as usize] == cell as usize {
                        *out = group[cell as usize];
                    }
                }
            });
    }
    let mut group_starts = Vec::with_capacity(n_columns + 1);
    group_starts.push(0);
    for k in 0..n_columns {
        let kept = (column_starts[k]..column_starts[k + 1])
            .filter(|&cell| first[cell] == cell)
            .count();
        group_starts.push(group_starts[k] + kept);
    }
    Ok(RowSetGroups {
        group,
        first_cell,
        cells: merged,
        column_starts: group_starts,
    })
}

/// Each cell's column, after checking the layout
/// ([`crate::weight_fit::check_cell_columns`], on the columns of `cells`).
fn column_of_cells(cells: ArrayView2<i64>, column_starts: &[usize]) -> Result<Vec<u32>> {
    let n_columns = cells.ncols();
    if u32::try_from(n_columns).is_err() || u32::try_from(cells.nrows()).is_err() {
        return Err(HebError::InvalidParameter(format!(
            "{} rows and {n_columns} columns: at most {} of each",
            cells.nrows(),
            u32::MAX
        )));
    }
    check_cell_columns(cells.t(), column_starts)?;
    let mut column_of = with_capacity(column_starts[n_columns], "cell columns")?;
    for k in 0..n_columns {
        column_of.extend(std::iter::repeat_n(
            k as u32,
            column_starts[k + 1] - column_starts[k],
        ));
    }
    Ok(column_of)
}

/// A 64-bit hash of a row number (splitmix64's finaliser): sums of distinct rows' hashes
/// collide with probability about 2^-64.
fn row_hash(row: usize) -> u64 {
    let mut z = (row as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::with_threads;
    use ndarray::{array, Array2};
    use std::collections::BTreeSet;

    /// The grouping written out with sets: cells of equal (non-empty) row sets together,
    /// numbered by first cell.
    fn groups_by_sets(cells: &Array2<i64>, n_cells: usize) -> Vec<i64> {
        let mut rows = vec![BTreeSet::new(); n_cells];
        for ((row, _), &cell) in cells.indexed_iter() {
            if cell >= 0 {
                rows[cell as usize].insert(row);
            }
        }
        let mut seen: Vec<(BTreeSet<usize>, i64)> = Vec::new();
        let mut next = 0;
        (0..n_cells)
            .map(|cell| {
                let set = &rows[cell];
                if let Some((_, g)) = seen.iter().find(|(s, _)| !set.is_empty() && s == set) {
                    return *g;
                }
                seen.push((set.clone(), next));
                next += 1;
                next - 1
            })
            .collect()
    }

    #[test]
    fn cells_group_by_equal_row_sets_and_keep_their_first_cells_column() {
        // column 0: cells 0..3, column 1: cells 3..6; cell 2 and cell 5 are used by row 2
        // alone, cells 0 and 3 by rows 0 and 1, cell 4 by no row
        let cells = array![[0, 3], [0, 3], [2, 5], [1, -1]];
        let groups = group_cells_by_rows(cells.view(), &[0, 3, 6]).unwrap();
        assert_eq!(groups.group, groups_by_sets(&cells, 6));
        assert_eq!(groups.group, vec![0, 1, 2, 0, 3, 2]);
        assert_eq!(groups.first_cell, vec![0, 1, 2, 4]);
        assert_eq!(groups.cells, vec![0, 0, 2, 1, -1, -1, -1, -1]);
        assert_eq!(groups.column_starts, vec![0, 3, 4]);
    }

    #[test]
    fn random_tables_group_as_sets_do() {
        let mut state = 11u64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        for _ in 0..50 {
            let (n_rows, n_columns) = (1 + next(60) as usize, 1 + next(5) as usize);
            let per_column: Vec<usize> = (0..n_columns).map(|_| 1 + next(12) as usize).collect();
            let mut starts = vec![0];
            for k in 0..n_columns {
                starts.push(starts[k] + per_column[k]);
            }
            let cells = Array2::from_shape_fn((n_rows, n_columns), |(_, k)| {
                if next(6) == 0 {
                    -1
                } else {
                    (starts[k] as u64 + next(per_column[k] as u64)) as i64
                }
            });
            let groups = group_cells_by_rows(cells.view(), &starts).unwrap();
            assert_eq!(groups.group, groups_by_sets(&cells, starts[n_columns]));
            // stored column by column, on three threads: the same groups
            let by_column = cells.t().as_standard_layout().into_owned();
            let threads = with_threads(3, || group_cells_by_rows(by_column.t(), &starts));
            assert_eq!(threads.unwrap().unwrap(), groups);
        }
    }

    #[test]
    fn cells_outside_their_column_and_bad_starts_are_errors() {
        let cells = array![[0, 1], [1, -1]];
        assert!(group_cells_by_rows(cells.view(), &[0, 1, 2]).is_err());
        assert!(group_cells_by_rows(cells.view(), &[0, 2]).is_err());
        assert!(group_cells_by_rows(array![[0, -2]].view(), &[0, 1, 2]).is_err());
        let empty = Array2::<i64>::zeros((0, 2));
        let groups = group_cells_by_rows(empty.view(), &[0, 0, 0]).unwrap();
        assert!(groups.group.is_empty() && groups.column_starts == vec![0, 0, 0]);
    }
}
