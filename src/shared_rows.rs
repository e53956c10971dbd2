//! The cells of the AODE cell weights that exactly the same training rows use, grouped
//! (`python/hebnb/_shared_rows.py` fits each group as one weight, docs/discriminative.md).
//!
//! One pass over the cell matrix gives every cell the wrapping sum of a 64-bit hash of
//! each row that uses it and its number of rows; cells with equal sums and counts are
//! candidates for one group, each joined to the first of them (cells of a single row, most
//! of them where values are rare, by that row instead of the hash). The grouping is then
//! checked exactly: a cell whose every row also uses its group's first cell, and that has
//! as many rows, has the same rows. Should the check fail (a hash collision, about
//! `cells^2 / 2^64` likely), no cells are grouped, which is always correct.

use ndarray::ArrayView2;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{check_len, filled, with_capacity, zeroed, HebError, Result};
use crate::interrupt;
use crate::parallel::split_by_bounds;
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
    // the last row of each cell: the only one of a cell one row uses
    let mut last_row = filled(n_cells, 0usize, "row-set rows")?;
    // each column's cells are its own range: the columns add into disjoint slices
    let starts = &column_starts[..=n_columns];
    split_by_bounds(&mut set_hash, starts, 1)?
        .into_par_iter()
        .zip(split_by_bounds(&mut count, starts, 1)?)
        .zip(split_by_bounds(&mut last_row, starts, 1)?)
        .try_for_each(|(((k, hashes), (_, counts)), (_, rows))| {
            interrupt::check()?;
            let start = column_starts[k];
            for (row, &cell) in cells.column(k).iter().enumerate() {
                if cell >= 0 {
                    let at = cell as usize - start;
                    hashes[at] = hashes[at].wrapping_add(row_hash(row));
                    counts[at] += 1;
                    rows[at] = row;
                }
            }
            Ok::<(), HebError>(())
        })?;
    // each cell joined to the first cell of equal hash and size; a cell of one row to the
    // first cell of that row, without the hash (the hash of one row is a bijection of it)
    let mut first: Vec<usize> = with_capacity(n_cells, "first cells")?;
    let mut first_of_row = filled(n_rows, usize::MAX, "row-set rows")?;
    let shared = count.iter().filter(|&&c| c > 1).count();
    let mut first_of_set: FxHashMap<(u64, u32), usize> = FxHashMap::default();
    first_of_set
        .try_reserve(shared)
        .map_err(|_| HebError::Allocation {
            what: "row-set index",
            bytes: (shared as u128) * 24,
        })?;
    for cell in 0..n_cells {
        first.push(match count[cell] {
            0 => cell,
            1 => {
                let slot = &mut first_of_row[last_row[cell]];
                if *slot == usize::MAX {
                    *slot = cell;
                }
                *slot
            }
            _ => *first_of_set
                .entry((set_hash[cell], count[cell]))
                .or_insert(cell),
        });
    }
    drop(first_of_set);
    drop(first_of_row);
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

/// The problem with each group of cells merged into one weight
/// (`python/hebnb/_shared_rows.py` has the derivation).
#[derive(Debug, Clone, PartialEq)]
pub struct MergedCells {
    /// `V' = sign(V_first) sqrt(sum_e V_e^2)`, (groups, C) row-major.
    pub values: Vec<f64>,
    /// `V'^2 / R` with `R = sum_e V_e^2 / s_e` (a single cell's own precision), (groups, C).
    pub precision: Vec<f64>,
    /// Each cell's weight from its group's: `d_e = back_e t_group`, (cells, C).
    pub back: Vec<f64>,
}

/// Merges the cells of each group (`group`: each cell's, `first_cell`: each group's first)
/// given their values `V` and weight precisions `s` (both (cells, C)). A group of one cell
/// is that cell; a precision of 0 takes no share of a group's penalty.
pub fn merge_cells_sharing_rows(
    group: &[i64],
    first_cell: &[i64],
    values: ArrayView2<f64>,
    precision: ArrayView2<f64>,
) -> Result<MergedCells> {
    let (n_cells, n_classes) = values.dim();
    let n_groups = first_cell.len();
    check_len("cell groups", n_cells, group.len())?;
    if precision.dim() != values.dim() {
        return Err(HebError::InvalidParameter(format!(
            "precisions have shape {:?}, values {:?}",
            precision.dim(),
            values.dim()
        )));
    }
    if group.iter().any(|&g| g < 0 || g as usize >= n_groups)
        || first_cell.iter().enumerate().any(|(g, &cell)| {
            cell < 0 || cell as usize >= n_cells || group[cell as usize] != g as i64
        })
    {
        return Err(HebError::InvalidParameter(
            "every cell needs a group, and every group its first cell".into(),
        ));
    }
    // sums over each group's cells, in cell order
    let mut size = filled(n_groups, 0usize, "group sizes")?;
    let mut reach = zeroed(n_groups * n_classes, "group reach")?;
    let mut squares = zeroed(n_groups * n_classes, "group squared values")?;
    for (cell, &g) in group.iter().enumerate() {
        let g = g as usize;
        size[g] += 1;
        for c in 0..n_classes {
            let (v, s) = (values[[cell, c]], precision[[cell, c]]);
            if s > 0.0 {
                reach[g * n_classes + c] += v * v / s;
            }
            squares[g * n_classes + c] += v * v;
        }
    }
    let mut merged_values = zeroed(n_groups * n_classes, "merged values")?;
    let mut merged_precision = zeroed(n_groups * n_classes, "merged precisions")?;
    for (g, &first) in first_cell.iter().enumerate() {
        let first = first as usize;
        for c in 0..n_classes {
            let at = g * n_classes + c;
            let (v, s) = (values[[first, c]], precision[[first, c]]);
            if size[g] == 1 {
                (merged_values[at], merged_precision[at]) = (v, s);
                continue;
            }
            let length = squares[at].sqrt();
            let value = if v < 0.0 { -length } else { length };
            merged_values[at] = value;
            merged_precision[at] = if reach[at] > 0.0 {
                value * value / reach[at]
            } else {
                s
            };
        }
    }
    // d_e = T V_e / (s_e R) with T = V' t; a cell alone keeps its weight
    let mut back = zeroed(n_cells * n_classes, "cells' share of their group")?;
    for (cell, &g) in group.iter().enumerate() {
        let g = g as usize;
        for c in 0..n_classes {
            let at = g * n_classes + c;
            let (v, s) = (values[[cell, c]], precision[[cell, c]]);
            back[cell * n_classes + c] = if size[g] == 1 {
                1.0
            } else if s > 0.0 && reach[at] > 0.0 {
                merged_values[at] * v / (s * reach[at])
            } else {
                0.0
            };
        }
    }
    Ok(MergedCells {
        values: merged_values,
        precision: merged_precision,
        back,
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
        let mut next = |bound: u64| (crate::test_random::next_state(&mut state) >> 33) % bound;
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
    fn a_merged_group_carries_its_cells_sum_and_their_least_penalty() {
        // cells 0 and 2 form group 0, cell 1 is alone (group 1); one class
        let values = array![[3.0], [-2.0], [-4.0]];
        let precision = array![[1.0], [5.0], [4.0]];
        let merged =
            merge_cells_sharing_rows(&[0, 1, 0], &[0, 1], values.view(), precision.view()).unwrap();
        // V' = +sqrt(9 + 16) = 5 (the first cell's sign), R = 9 / 1 + 16 / 4 = 13
        assert_eq!(merged.values, vec![5.0, -2.0]);
        assert_eq!(merged.precision, vec![25.0 / 13.0, 5.0]);
        // d_e = V' V_e / (s_e R): the group's sum d_0 V_0 + d_2 V_2 is V' (t = 1)
        assert_eq!(
            merged.back,
            vec![15.0 / 13.0, 1.0, 5.0 * -4.0 / (4.0 * 13.0)]
        );
        let sum = merged.back[0] * 3.0 + merged.back[2] * -4.0;
        assert!((sum - 5.0).abs() < 1e-12);
        // a group without a first cell, a cell without a group, shapes that disagree
        let one = array![[1.0]];
        assert!(merge_cells_sharing_rows(&[1], &[0], one.view(), one.view()).is_err());
        assert!(merge_cells_sharing_rows(&[0], &[1], one.view(), one.view()).is_err());
        assert!(merge_cells_sharing_rows(&[0, 0], &[0], one.view(), one.view()).is_err());
        let two = array![[1.0, 2.0]];
        assert!(merge_cells_sharing_rows(&[0], &[0], one.view(), two.view()).is_err());
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
