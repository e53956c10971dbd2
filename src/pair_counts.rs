//! Sparse pair tables of AODE (SPEC eqs. 9-11): for every stored unordered feature pair
//! `a < b`, the (weighted) counts
//!
//! ```text
//! N^{(a,b)}_{c,u,v} = rows with y = c, x_a = u and x_b = v (both present)
//! ```
//!
//! `N^{(a,b)}` and `N^{(b,a)}` hold the same cells (transposed), so each unordered pair
//! is counted once and serves both super-parent orientations.
//!
//! # Storage
//! Only the pairs that are modelled in at least one orientation are stored (with
//! `max_parents = k`, O(k F) of the F (F - 1) / 2 pairs; with the memory cap, a pair
//! capped both ways keeps nothing), listed in `pairs` in increasing order of `(a, b)`.
//! One CSR matrix over the stored pairs: stored pair `p = (a, b)` owns the rows
//! `row_offsets[p]..row_offsets[p] + K_a`, one per parent value `u`; a row lists the child
//! values `v` seen with `u` (sorted) in `indices`, and `counts` holds, per listed cell, the
//! C class counts side by side ([`CellCounts`]: `u32` whole counts when every sample
//! weight is a whole number and their sum fits, else `f64`). Only value pairs `(u, v)`
//! seen in training are stored: memory is `nnz (b C + 4) + sum_p (8 K_a + 8)` bytes over
//! the stored pairs (`b` = 4 for whole counts, 8 otherwise), with `nnz <= min(S, K_a K_b)`
//! per pair, never `K_a K_b C` per pair. The class dimension is
//! dense within a cell: one 4-byte key per cell instead of one per (class, cell), which is
//! smaller whenever a seen value pair occurs in at least a third of the classes
//! (always for two classes).
//!
//! # Counting
//! Three ways, chosen per pair by its size, all giving the same cells:
//!
//! * **Bitsets** (every weight 1, `K_a K_b C <= BITSET_CELLS`, both cardinalities at most
//!   `BITSET_CARDINALITY`): each small feature's rows are one bitset per value, the
//!   classes one bitset each, and `N_{c,u,v} = popcount(bits(x_a = u) & bits(y = c) &
//!   bits(x_b = v))`, `S / 64` words per cell; a child present in every row gets its last
//!   value as `N_{c,u}` less the others (whole numbers: exact). The parent-side ANDs are
//!   kept while consecutive pairs share the parent.
//! * **Dense** (`K_a K_b C <= DENSE_CELLS`, or larger with many rows): one pass over the
//!   rows adding each row's weight into a `K_a K_b C` scratch.
//! * **Walked**: rows are first ordered by each parent feature's value (a stable counting
//!   sort, shared by all pairs with that feature as `a`); a pair then walks the rows value
//!   group by value group, accumulating into a scratch of `K_b C` counts. O(S + K_a +
//!   K_b) per pair plus sorting the distinct child values of each group.
//!
//! Runs of consecutive pairs are the parallel tasks, and each pair adds in row order, so
//! the counts do not depend on the number of threads.

use std::mem::MaybeUninit;

use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::counts::{check_rows, class_indices};
use crate::error::{
    check_code_range, check_len, code_out_of_range, filled, grow_to, untouched_zeros,
    with_capacity, HebError, Result, ZeroBytes,
};
use crate::layout::FeatureLayout;
use crate::parallel::split_by_bounds;

/// Every unordered pair `(a, b)`, `a < b`, in table order (all features super-parents,
/// no cap).
pub fn pairs(n_features: usize) -> Vec<(usize, usize)> {
    (0..n_features)
        .flat_map(|a| (a + 1..n_features).map(move |b| (a, b)))
        .collect()
}

/// A stored class count: `u32` (whole counts) or `f64`, read as `f64`.
pub trait Count: Copy + Send + Sync + 'static {
    /// The count as a float (exact: whole `u32` counts are below 2^53).
    fn value(self) -> f64;
}

impl Count for u32 {
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Count for f64 {
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
}

/// Whether counts weighted by `weights` are whole numbers that fit a `u32` in every
/// cell: every weight a non-negative whole number and their sum at most `u32::MAX`
/// (a cell's count is at most the sum). Such tables store `u32` counts, half the bytes
/// of `f64` ones, with the same values (whole numbers below 2^53 add exactly in `f64`).
pub fn whole_weights(weights: ArrayView1<f64>) -> bool {
    let mut sum = 0.0;
    for &w in weights {
        if !(w >= 0.0 && w.fract() == 0.0) {
            return false;
        }
        sum += w;
    }
    sum <= u32::MAX as f64
}

/// The class counts of the stored cells, shape (nnz, C): whole numbers as `u32` when
/// the weights allow ([`whole_weights`]), else `f64`.
#[derive(Debug, Clone, PartialEq)]
pub enum CellCounts {
    /// Whole counts.
    Whole(Array2<u32>),
    /// Weighted (fractional) counts.
    Float(Array2<f64>),
}

impl CellCounts {
    /// The borrowed view.
    pub fn view(&self) -> CellCountsView<'_> {
        match self {
            CellCounts::Whole(a) => CellCountsView::Whole(a.view()),
            CellCounts::Float(a) => CellCountsView::Float(a.view()),
        }
    }

    /// Count of cell `k`, class `c`.
    pub fn get(&self, k: usize, c: usize) -> f64 {
        self.view().get(k, c)
    }

    /// The counts as floats.
    pub fn to_f64(&self) -> Array2<f64> {
        match self {
            CellCounts::Whole(a) => a.mapv(f64::from),
            CellCounts::Float(a) => a.clone(),
        }
    }

    /// Bytes of one stored count.
    pub fn count_bytes(&self) -> usize {
        match self {
            CellCounts::Whole(_) => 4,
            CellCounts::Float(_) => 8,
        }
    }
}

/// A borrowed view of [`CellCounts`].
#[derive(Debug, Clone, Copy)]
pub enum CellCountsView<'a> {
    /// Whole counts.
    Whole(ArrayView2<'a, u32>),
    /// Weighted (fractional) counts.
    Float(ArrayView2<'a, f64>),
}

/// The contiguous elements of [`CellCountsView`], cell after cell.
#[derive(Debug, Clone, Copy)]
pub enum CountSlice<'a> {
    /// Whole counts.
    Whole(&'a [u32]),
    /// Weighted (fractional) counts.
    Float(&'a [f64]),
}

impl CountSlice<'_> {
    /// Writes the `out.len()` counts of the cell starting at element `start` into `out`.
    #[inline]
    pub fn read(&self, start: usize, out: &mut [f64]) {
        match self {
            CountSlice::Whole(x) => {
                let end = start + out.len();
                for (o, &n) in out.iter_mut().zip(&x[start..end]) {
                    *o = f64::from(n);
                }
            }
            CountSlice::Float(x) => out.copy_from_slice(&x[start..start + out.len()]),
        }
    }
}

impl<'a> CellCountsView<'a> {
    /// Number of cells.
    pub fn nrows(&self) -> usize {
        match self {
            CellCountsView::Whole(a) => a.nrows(),
            CellCountsView::Float(a) => a.nrows(),
        }
    }

    /// Number of classes.
    pub fn ncols(&self) -> usize {
        match self {
            CellCountsView::Whole(a) => a.ncols(),
            CellCountsView::Float(a) => a.ncols(),
        }
    }

    /// Whether the counts are C-contiguous.
    pub fn is_standard_layout(&self) -> bool {
        match self {
            CellCountsView::Whole(a) => a.is_standard_layout(),
            CellCountsView::Float(a) => a.is_standard_layout(),
        }
    }

    /// Adds `scale` times the class counts of cell `k` to `sum` (length C).
    #[inline]
    pub fn add_cell(&self, k: usize, scale: f64, sum: &mut [f64]) {
        match self {
            CellCountsView::Whole(a) => {
                for (total, &n) in sum.iter_mut().zip(a.row(k)) {
                    *total += f64::from(n) * scale;
                }
            }
            CellCountsView::Float(a) => {
                for (total, &n) in sum.iter_mut().zip(a.row(k)) {
                    *total += n * scale;
                }
            }
        }
    }

    /// Count of cell `k`, class `c`.
    #[inline]
    pub fn get(&self, k: usize, c: usize) -> f64 {
        match self {
            CellCountsView::Whole(a) => f64::from(a[[k, c]]),
            CellCountsView::Float(a) => a[[k, c]],
        }
    }

    /// The contiguous elements, or `None` when the view is not C-contiguous.
    pub fn as_slice(&self) -> Option<CountSlice<'a>> {
        match self {
            CellCountsView::Whole(a) => a.to_slice().map(CountSlice::Whole),
            CellCountsView::Float(a) => a.to_slice().map(CountSlice::Float),
        }
    }

    /// Whether every count is a whole number (always for `u32` counts), and the largest.
    pub fn whole_and_largest(&self) -> (bool, f64) {
        match self {
            CellCountsView::Whole(a) => (true, a.iter().copied().max().map_or(0.0, f64::from)),
            CellCountsView::Float(a) => a.iter().fold((true, 0.0f64), |(whole, top), &n| {
                (whole && n >= 0.0 && n.fract() == 0.0, top.max(n))
            }),
        }
    }
}

/// The pair tables of a training set (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct PairTables {
    /// The stored pairs `(a, b)`, `a < b`, increasing, flattened: `[a_0, b_0, a_1, ...]`.
    pub pairs: Vec<i32>,
    /// CSR row pointers, length `sum_p K_a + 1` over the stored pairs.
    pub indptr: Vec<i64>,
    /// Child value of each stored cell.
    pub indices: Vec<i32>,
    /// Class counts of each stored cell, shape (nnz, C).
    pub counts: CellCounts,
}

/// A borrowed view of [`PairTables`] (as the Python layer holds them).
#[derive(Debug, Clone, Copy)]
pub struct PairTablesView<'a> {
    /// The stored pairs, flattened `(a, b)` (see [`PairTables::pairs`]).
    pub pairs: &'a [i32],
    /// CSR row pointers.
    pub indptr: &'a [i64],
    /// Child value of each cell.
    pub indices: &'a [i32],
    /// Class counts of each cell, (nnz, C), C-contiguous.
    pub counts: CellCountsView<'a>,
}

impl PairTables {
    /// The borrowed view.
    pub fn view(&self) -> PairTablesView<'_> {
        PairTablesView {
            pairs: &self.pairs,
            indptr: &self.indptr,
            indices: &self.indices,
            counts: self.counts.view(),
        }
    }
}

impl<'a> PairTablesView<'a> {
    /// Number of stored pairs.
    #[inline]
    pub fn n_pairs(&self) -> usize {
        self.pairs.len() / 2
    }

    /// The features `(a, b)` of stored pair `p`.
    #[inline]
    pub fn pair(&self, p: usize) -> (usize, usize) {
        (self.pairs[2 * p] as usize, self.pairs[2 * p + 1] as usize)
    }

    /// The stored pairs, as `(a, b)`.
    pub fn pair_list(self) -> impl Iterator<Item = (usize, usize)> + 'a {
        (0..self.n_pairs()).map(move |p| self.pair(p))
    }

    /// The index of pair `(a, b)`, `a < b`, among the stored pairs, or `None` when it is
    /// not stored. Binary search: O(log P).
    pub fn position(&self, a: usize, b: usize) -> Option<usize> {
        let (mut low, mut high) = (0, self.n_pairs());
        while low < high {
            let mid = (low + high) / 2;
            match self.pair(mid).cmp(&(a, b)) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// First CSR row of every stored pair (length P + 1): pair `(a, b)` owns `K_a` rows.
    /// Assumes [`Self::check_pairs`] passed.
    ///
    /// # Errors
    /// [`HebError::Allocation`] when the P + 1 offsets cannot be allocated.
    pub fn row_offsets(&self, layout: &FeatureLayout) -> Result<Vec<usize>> {
        let mut offsets = with_capacity(self.n_pairs() + 1, "AODE pair row offsets")?;
        let mut row = 0;
        offsets.push(0);
        for (a, _) in self.pair_list() {
            row += layout.cardinality(a);
            offsets.push(row);
        }
        Ok(offsets)
    }

    /// Checks the pair list: features in range, `a < b`, strictly increasing.
    ///
    /// # Errors
    /// [`HebError::InvalidParameter`] otherwise.
    pub fn check_pairs(&self, n_features: usize) -> Result<()> {
        let in_range = self.pairs.len() % 2 == 0
            && self
                .pairs
                .iter()
                .all(|&f| f >= 0 && (f as usize) < n_features)
            && (0..self.n_pairs()).all(|p| {
                let (a, b) = self.pair(p);
                a < b && (p == 0 || self.pair(p - 1) < (a, b))
            });
        if !in_range {
            return Err(HebError::InvalidParameter(
                "pair table pairs must be increasing (a, b) with a < b < n_features".into(),
            ));
        }
        Ok(())
    }

    /// Checks the CSR against the layout and the number of classes: its shape
    /// ([`Self::check_shape`]) and every cell ([`Self::check_cells`]).
    ///
    /// # Errors
    /// [`HebError::ShapeMismatch`] or [`HebError::InvalidParameter`] when the arrays do
    /// not form valid tables for this layout.
    pub fn check(&self, layout: &FeatureLayout, n_classes: usize) -> Result<()> {
        self.check_shape(layout, n_classes)?;
        self.check_cells(layout)
    }

    /// Checks what costs O(pairs): the pair list, the lengths of the arrays, the ends
    /// of the row pointers and the counts' layout. A scorer handed tables whose cells
    /// were checked when they were made checks only this, so that scoring one row does
    /// not cost a pass over the whole model.
    ///
    /// # Errors
    /// [`HebError::ShapeMismatch`] or [`HebError::InvalidParameter`] as [`Self::check`].
    pub fn check_shape(&self, layout: &FeatureLayout, n_classes: usize) -> Result<()> {
        self.check_pairs(layout.n_features())?;
        let offsets = self.row_offsets(layout)?;
        let n_rows = *offsets.last().unwrap_or(&0);
        check_len("pair table row pointers", n_rows + 1, self.indptr.len())?;
        let nnz = self.indices.len();
        check_len("pair table counts rows", nnz, self.counts.nrows())?;
        check_len("pair table counts columns", n_classes, self.counts.ncols())?;
        if self.indptr[0] != 0 || self.indptr[n_rows] as usize != nnz {
            return Err(HebError::InvalidParameter(
                "pair table row pointers must rise from 0 to the number of cells".into(),
            ));
        }
        if !self.counts.is_standard_layout() {
            return Err(HebError::InvalidParameter(
                "pair table counts must be C-contiguous".into(),
            ));
        }
        Ok(())
    }

    /// Checks every row and cell (O(rows + cells)): row pointers that never fall, and
    /// child values in range and strictly increasing within each row. Assumes
    /// [`Self::check_shape`] passed.
    ///
    /// # Errors
    /// [`HebError::InvalidParameter`] naming the first pair that fails.
    pub fn check_cells(&self, layout: &FeatureLayout) -> Result<()> {
        if !self.indptr.windows(2).all(|w| w[0] <= w[1]) {
            return Err(HebError::InvalidParameter(
                "pair table row pointers must rise from 0 to the number of cells".into(),
            ));
        }
        let offsets = self.row_offsets(layout)?;
        // child values in range and strictly increasing within each row: one pass over
        // the cells (rising from -1 puts them all at 0 or above; the last below K_b puts
        // them all below), pairs in parallel, the first bad pair reported
        let is_bad = |&p: &usize| {
            // compared in i64: a cardinality of 2^31 or more does not wrap
            let k_child = layout.cardinality(self.pair(p).1) as i64;
            (offsets[p]..offsets[p + 1]).any(|row| {
                let cells = &self.indices[self.indptr[row] as usize..self.indptr[row + 1] as usize];
                let mut previous = -1;
                let mut rising = true;
                for &v in cells {
                    rising &= v > previous;
                    previous = v;
                }
                !rising || i64::from(previous) >= k_child
            })
        };
        // (a model's tables checked when it is loaded run on the calling thread)
        let bad = if crate::parallel::in_a_pool() {
            (0..self.n_pairs()).into_par_iter().find_first(is_bad)
        } else {
            (0..self.n_pairs()).find(is_bad)
        };
        match bad.map(|p| self.pair(p)) {
            Some((a, b)) => Err(HebError::InvalidParameter(format!(
                "pair table of features ({a}, {b}): child values out of range or unsorted"
            ))),
            None => Ok(()),
        }
    }

    /// The position of cell `(u, v)` in the pair whose rows start at `row_offset`, or
    /// `None` when the value pair was never seen. Binary search: O(log cells of row u).
    #[inline]
    pub fn find(&self, row_offset: usize, u: usize, v: i32) -> Option<usize> {
        let row = row_offset + u;
        let (start, end) = (self.indptr[row] as usize, self.indptr[row + 1] as usize);
        let cells = &self.indices[start..end];
        cells.binary_search(&v).ok().map(|k| start + k)
    }
}

/// Largest `K_a K_b C` counted densely: one pass over the rows adding each row's weight
/// to cell `(u, v, c)` of a `K_a K_b C` scratch (no sorting, no branch but the missing
/// test), then the non-zero cells are listed. Larger pairs walk the rows value group by
/// value group and list the touched child values (see the module docs).
pub const DENSE_CELLS: usize = 4096;

/// Largest `K_a K_b C` counted densely when the rows are many (at least half as many as
/// the cells): clearing and scanning a scratch of 8 bytes a cell then costs less than
/// walking the rows value group by value group (a table of 50 x 50 values and 3 classes
/// over 20,000 rows counts about 8 times faster).
pub const DENSE_CELLS_MANY_ROWS: usize = 1 << 16;

/// Whether a pair of `cells = K_a K_b C` is counted densely over `n_rows` rows.
fn counted_densely(cells: usize, n_rows: usize) -> bool {
    cells <= DENSE_CELLS || (cells <= DENSE_CELLS_MANY_ROWS && cells <= 2 * n_rows)
}

/// Counts one pair densely (see [`DENSE_CELLS`]) from the codes of its two features
/// (-1: missing; range-checked by the caller), the class of every row and the weights.
fn count_dense(
    block: &mut PairBlock,
    parent_codes: &[i32],
    child_codes: &[i32],
    classes: &[u32],
    weights: &[f64],
    (k_parent, k_child): (usize, usize),
    n_classes: usize,
) {
    // only the pair's cells: a zeroed 32 KB scratch per pair costs more than counting
    // a few thousand rows
    let mut scratch = vec![0.0f64; k_parent * k_child * n_classes];
    let (k_child_u, n_classes_u) = (k_child as u32, n_classes as u32);
    for (((&u, &v), &c), &weight) in parent_codes
        .iter()
        .zip(child_codes)
        .zip(classes)
        .zip(weights)
    {
        if (u | v) >= 0 {
            let cell = ((u as u32 * k_child_u + v as u32) * n_classes_u + c) as usize;
            scratch[cell] += weight;
        }
    }
    for u in 0..k_parent {
        let before = block.indices.len();
        for v in 0..k_child {
            let start = (u * k_child + v) * n_classes;
            let cell = &scratch[start..start + n_classes];
            if cell.iter().any(|&n| n != 0.0) {
                block.indices.push(v as i32);
                block.counts.extend_from_slice(cell);
            }
        }
        block
            .row_lengths
            .push((block.indices.len() - before) as i64);
    }
}

/// Largest `K_a K_b C` counted from bitsets when every weight is 1: a pair then costs
/// `K_a C (K_b - 1)` passes of `S / 64` words (AND and population count) instead of one
/// scattered addition per row, about 20 times less for ternary features and two classes.
pub const BITSET_CELLS: usize = 256;

/// Largest cardinality of a feature with per-value bitsets (their memory, `K_f S / 8`
/// bytes a feature, stays below the codes' `4 S` bytes).
pub const BITSET_CARDINALITY: usize = 16;

/// Whether a pair of cardinalities `k_a`, `k_b` is counted from bitsets (unit weights).
pub fn counted_by_bitsets(k_a: usize, k_b: usize, n_classes: usize) -> bool {
    (1..=BITSET_CARDINALITY).contains(&k_a)
        && (1..=BITSET_CARDINALITY).contains(&k_b)
        && k_a * k_b * n_classes <= BITSET_CELLS
}

/// Bytes of the value bitsets [`count_pairs`] builds for the features of its bitset pairs
/// (at most this, whatever the pairs): `K_f ceil(S / 64)` words for each feature with
/// `K_f <= BITSET_CARDINALITY`, and `C` more for the classes.
pub fn bitset_bytes(layout: &FeatureLayout, n_rows: usize, n_classes: usize) -> u128 {
    let words = n_rows.div_ceil(64) as u128;
    let values: u128 = (0..layout.n_features())
        .map(|f| layout.cardinality(f))
        .filter(|&k| k <= BITSET_CARDINALITY)
        .map(|k| k as u128)
        .sum();
    8 * words * (values + n_classes as u128)
}

/// How one pair is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// AND and population counts of per-value bitsets ([`BITSET_CELLS`]).
    Bitsets,
    /// One pass over the rows into a dense scratch ([`DENSE_CELLS`]).
    Dense,
    /// The rows value group by value group (see the module docs).
    Walk,
}

/// Row bitsets: bit `s` of value `v` of feature `f` is set when `x_{f,s} = v`, and of
/// class `c` when `y_s = c`; words past the last row are zero.
struct ValueBitsets {
    words: usize,
    n_classes: usize,
    /// First word of each feature's bitsets (meaningful where built).
    start: Vec<usize>,
    bits: Vec<u64>,
    class_bits: Vec<u64>,
    /// Whether each feature is present in every row.
    complete: Vec<bool>,
    /// The widest population count the CPU has (checked once).
    popcount: Popcount,
}

/// What one counting thread reuses from pair to pair.
#[derive(Default)]
struct ThreadScratch {
    parent_bits: ParentBitsets,
    walk: WalkScratch,
}

/// The walked pairs' scratch: `K_b C` counts (all zero between groups), the group that
/// last touched each child value (a running stamp, so nothing is cleared between pairs)
/// and the child values touched by the current group.
#[derive(Default)]
struct WalkScratch {
    counts: Vec<f64>,
    group_of: Vec<u32>,
    group: u32,
    touched: Vec<i32>,
}

impl WalkScratch {
    /// Room for a pair of `cells` counts and `k_child` child values (sized by the input:
    /// an allocation error, never an abort).
    fn prepare(&mut self, cells: usize, k_child: usize) -> Result<()> {
        if self.counts.len() < cells {
            grow_to(&mut self.counts, cells, 0.0, "AODE pair counting scratch")?;
        }
        if self.group_of.len() < k_child {
            grow_to(&mut self.group_of, k_child, 0, "AODE pair counting scratch")?;
        }
        Ok(())
    }

    /// A stamp no child value holds yet.
    fn next_group(&mut self) -> u32 {
        if self.group == u32::MAX {
            self.group_of.iter_mut().for_each(|g| *g = 0);
            self.group = 0;
        }
        self.group += 1;
        self.group
    }
}

/// The parent-side bitsets of one thread: `x_a = u` and `y = c` for every (u, c), with
/// their population counts, kept while consecutive pairs share the parent `a`.
#[derive(Default)]
struct ParentBitsets {
    feature: Option<usize>,
    bits: Vec<u64>,
    totals: Vec<u64>,
}

impl ValueBitsets {
    /// The bitsets of the features marked in `wanted` (codes range-checked here).
    fn new(
        codes: ArrayView2<i32>,
        layout: &FeatureLayout,
        classes: &[u32],
        n_classes: usize,
        wanted: &[bool],
    ) -> Result<Self> {
        let n_rows = codes.ncols();
        let words = n_rows.div_ceil(64);
        let mut start = with_capacity(wanted.len(), "AODE pair bitsets")?;
        let mut total = 0usize;
        for (f, &w) in wanted.iter().enumerate() {
            start.push(total);
            if w {
                total += layout.cardinality(f) * words;
            }
        }
        let mut bits = with_capacity(total, "AODE pair bitsets")?;
        bits.resize(total, 0u64);
        let mut class_bits = with_capacity(n_classes * words, "AODE pair bitsets")?;
        class_bits.resize(n_classes * words, 0u64);
        for (s, &c) in classes.iter().enumerate() {
            class_bits[c as usize * words + s / 64] |= 1 << (s % 64);
        }
        // each feature's bitsets are its own slice, filled in parallel
        let mut slices: Vec<(usize, &mut [u64])> = Vec::new();
        let mut rest = &mut bits[..];
        for (f, &w) in wanted.iter().enumerate() {
            if w {
                let (mine, tail) =
                    std::mem::take(&mut rest).split_at_mut(layout.cardinality(f) * words);
                slices.push((f, mine));
                rest = tail;
            }
        }
        let complete: Vec<Result<bool>> = slices
            .into_par_iter()
            .map(|(f, mine)| {
                crate::interrupt::check()?;
                let k = layout.cardinality(f);
                let mut complete = true;
                for (s, &code) in codes.row(f).iter().enumerate() {
                    if code < 0 {
                        complete = false;
                        continue;
                    }
                    if code as usize >= k {
                        return Err(code_out_of_range(f, code, k));
                    }
                    mine[code as usize * words + s / 64] |= 1 << (s % 64);
                }
                Ok(complete)
            })
            .collect();
        let mut complete_of = vec![false; wanted.len()];
        let built = wanted
            .iter()
            .enumerate()
            .filter(|&(_, &w)| w)
            .map(|(f, _)| f);
        for (f, flag) in built.zip(complete) {
            complete_of[f] = flag?;
        }
        Ok(Self {
            words,
            n_classes,
            start,
            bits,
            class_bits,
            complete: complete_of,
            popcount: Popcount::detect(),
        })
    }

    fn value(&self, f: usize, v: usize) -> &[u64] {
        let at = self.start[f] + v * self.words;
        &self.bits[at..at + self.words]
    }

    /// Counts pair `(a, b)` into `block`: `N_{c,u,v} = |x_a = u, y = c, x_b = v|`, the
    /// last child value of a complete child as `N_{c,u}` less the others (exact: whole
    /// numbers), the same cells as [`count_dense`] with unit weights.
    fn count_pair(
        &self,
        block: &mut PairBlock,
        parent: &mut ParentBitsets,
        pair: (usize, usize),
        cardinalities: (usize, usize),
    ) {
        #[cfg(target_arch = "x86_64")]
        match self.popcount {
            // SAFETY: `Popcount::detect` found these instructions on this CPU.
            Popcount::Avx512 => {
                return unsafe { self.count_pair_avx512(block, parent, pair, cardinalities) }
            }
            // SAFETY: as above.
            Popcount::Avx2 => {
                return unsafe { self.count_pair_avx2(block, parent, pair, cardinalities) }
            }
            Popcount::Portable => {}
        }
        self.count_pair_portable(block, parent, pair, cardinalities);
    }

    /// The kernel compiled with AVX-512's vector population count (`vpopcntq`, eight
    /// words an instruction).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
    unsafe fn count_pair_avx512(
        &self,
        block: &mut PairBlock,
        parent: &mut ParentBitsets,
        pair: (usize, usize),
        cardinalities: (usize, usize),
    ) {
        self.count_pair_portable(block, parent, pair, cardinalities);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn count_pair_avx2(
        &self,
        block: &mut PairBlock,
        parent: &mut ParentBitsets,
        pair: (usize, usize),
        cardinalities: (usize, usize),
    ) {
        self.count_pair_portable(block, parent, pair, cardinalities);
    }

    #[inline(always)]
    fn count_pair_portable(
        &self,
        block: &mut PairBlock,
        parent: &mut ParentBitsets,
        (a, b): (usize, usize),
        (k_parent, k_child): (usize, usize),
    ) {
        let (words, n_classes) = (self.words, self.n_classes);
        if parent.feature != Some(a) {
            parent.feature = Some(a);
            parent.bits.clear();
            parent.totals.clear();
            for u in 0..k_parent {
                let value = self.value(a, u);
                for c in 0..n_classes {
                    let class = &self.class_bits[c * words..(c + 1) * words];
                    let start = parent.bits.len();
                    parent
                        .bits
                        .extend(value.iter().zip(class).map(|(x, y)| x & y));
                    parent.totals.push(ones(&parent.bits[start..]));
                }
            }
        }
        // a complete child's last value is what its other values leave of N_{c,u}
        let counted = if self.complete[b] {
            k_child - 1
        } else {
            k_child
        };
        let (mut rest, mut counts) = ([0u64; BITSET_CELLS], [0u64; BITSET_CELLS]);
        let (rest, counts) = (&mut rest[..n_classes], &mut counts[..n_classes]);
        for u in 0..k_parent {
            let row = &parent.bits[u * n_classes * words..(u + 1) * n_classes * words];
            rest.copy_from_slice(&parent.totals[u * n_classes..(u + 1) * n_classes]);
            let before = block.indices.len();
            for v in 0..k_child {
                if v < counted {
                    let child = self.value(b, v);
                    for (c, n) in counts.iter_mut().enumerate() {
                        *n = and_ones(&row[c * words..(c + 1) * words], child);
                    }
                    for (r, &n) in rest.iter_mut().zip(counts.iter()) {
                        *r -= n;
                    }
                } else {
                    counts.copy_from_slice(rest);
                }
                if counts.iter().any(|&n| n != 0) {
                    block.indices.push(v as i32);
                    block.counts.extend(counts.iter().map(|&n| n as f64));
                }
            }
            block
                .row_lengths
                .push((block.indices.len() - before) as i64);
        }
    }
}

/// Set bits of a bitset.
#[inline(always)]
fn ones(x: &[u64]) -> u64 {
    x.iter().map(|w| w.count_ones() as u64).sum()
}

/// Set bits of the AND of two bitsets of equal length.
#[inline(always)]
fn and_ones(x: &[u64], y: &[u64]) -> u64 {
    x.iter()
        .zip(y)
        .map(|(a, b)| (a & b).count_ones() as u64)
        .sum()
}

/// Which build of the bitset kernel the CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Popcount {
    /// AVX-512 with its vector population count.
    Avx512,
    /// AVX2 and POPCNT.
    Avx2,
    /// Whatever the target has.
    Portable,
}

impl Popcount {
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt");
            if avx2
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512vpopcntdq")
            {
                return Self::Avx512;
            }
            if avx2 {
                return Self::Avx2;
            }
        }
        Self::Portable
    }
}

/// The cells of consecutive pairs while counting: each pair's table rows (one per parent
/// value) after the previous pair's.
#[derive(Default)]
struct PairBlock {
    row_lengths: Vec<i64>,
    indices: Vec<i32>,
    counts: Vec<f64>,
}

/// Rows with `x_f` present, ordered by value (stable): `(order, group starts)`.
fn rows_by_value(
    codes: ArrayView1<i32>,
    k: usize,
    feature: usize,
) -> Result<(Vec<u32>, Vec<usize>)> {
    let mut starts = vec![0usize; k + 1];
    for &code in codes.iter() {
        if code >= 0 {
            if code as usize >= k {
                return Err(code_out_of_range(feature, code, k));
            }
            starts[code as usize + 1] += 1;
        }
    }
    for u in 0..k {
        starts[u + 1] += starts[u];
    }
    let mut next = starts.clone();
    let mut order = vec![0u32; starts[k]];
    for (row, &code) in codes.iter().enumerate() {
        if code >= 0 {
            order[next[code as usize]] = row as u32;
            next[code as usize] += 1;
        }
    }
    Ok((order, starts))
}

/// Counts the pair tables of the listed pairs `(a, b)` (`a < b`, strictly increasing:
/// the pairs a structure models, [`crate::aode::Structure::wanted_pairs`]); no other pair
/// is stored, not even its row pointers.
///
/// `codes` is `(F, S)` with values in `-1..K_f`, `labels` class indices, `weights` one
/// non-negative weight per row. Cells whose class counts are all zero (rows of weight 0
/// only) are not stored.
///
/// # Errors
/// Shape mismatches, codes or labels out of range, more than 2^32 rows, or tables too
/// large to allocate.
pub fn count_pairs(
    codes: ArrayView2<i32>,
    labels: ArrayView1<i64>,
    weights: ArrayView1<f64>,
    layout: &FeatureLayout,
    n_classes: usize,
    wanted: &[(usize, usize)],
) -> Result<PairTables> {
    check_rows(codes, labels, weights, layout)?;
    if n_classes > u32::MAX as usize {
        // (rows carry their class as a u32)
        return Err(HebError::InvalidParameter(
            "AODE pair tables support at most 2^32 classes".into(),
        ));
    }
    let pair_list = flat_pairs(wanted)?;
    PairTablesView {
        pairs: &pair_list,
        indptr: &[0],
        indices: &[],
        counts: CellCountsView::Float(ArrayView2::from_shape((0, n_classes), &[]).expect("empty")),
    }
    .check_pairs(layout.n_features())?;
    let n_rows = codes.ncols();
    if n_rows > u32::MAX as usize {
        return Err(HebError::InvalidParameter(
            "AODE pair tables support at most 2^32 rows".into(),
        ));
    }
    let classes = class_indices(labels, n_classes)?;
    let n_features = layout.n_features();
    let class_of_row: Vec<u32> = classes.iter().map(|&c| c as u32).collect();
    let weight_slice = weights.as_slice();
    let dense_ready = weight_slice.is_some() && codes.is_standard_layout();
    let unit_weights = dense_ready && weights.iter().all(|&w| w == 1.0);
    let whole = whole_weights(weights);

    // how each pair is counted, and what that needs: bitsets of the features of the
    // bitset pairs, the value-sorted rows of the parents of the walked pairs
    let method = |a: usize, b: usize| {
        let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
        if unit_weights && counted_by_bitsets(k_a, k_b, n_classes) {
            Method::Bitsets
        } else if dense_ready && counted_densely(k_a * k_b * n_classes, n_rows) {
            Method::Dense
        } else {
            Method::Walk
        }
    };
    // every code in range (negative: missing) before any pair is counted, whichever way
    // its pairs are counted and whether or not it is in a pair
    (0..n_features).into_par_iter().try_for_each(|f| {
        crate::interrupt::check()?;
        check_code_range(f, codes.row(f), layout.cardinality(f))
    })?;
    let mut needs_bitsets = vec![false; n_features];
    let mut needs_groups = vec![false; n_features];
    for &(a, b) in wanted {
        match method(a, b) {
            Method::Bitsets => (needs_bitsets[a], needs_bitsets[b]) = (true, true),
            Method::Dense => {}
            Method::Walk => needs_groups[a] = true,
        }
    }
    let bitsets = if needs_bitsets.iter().any(|&n| n) {
        Some(ValueBitsets::new(
            codes,
            layout,
            &class_of_row,
            n_classes,
            &needs_bitsets,
        )?)
    } else {
        None
    };
    let grouped: Vec<(Vec<u32>, Vec<usize>)> = (0..n_features)
        .into_par_iter()
        .map(|f| {
            crate::interrupt::check()?;
            if needs_groups[f] {
                rows_by_value(codes.row(f), layout.cardinality(f), f)
            } else {
                Ok((Vec::new(), Vec::new()))
            }
        })
        .collect::<Result<_>>()?;

    // appends pair (a, b)'s table rows to `block`
    let count_pair = |scratch: &mut ThreadScratch,
                      block: &mut PairBlock,
                      (a, b): (usize, usize)| {
        let (k_parent, k_child) = (layout.cardinality(a), layout.cardinality(b));
        crate::interrupt::check()?;
        let how = method(a, b);
        if let (Method::Bitsets, Some(bitsets)) = (how, &bitsets) {
            bitsets.count_pair(block, &mut scratch.parent_bits, (a, b), (k_parent, k_child));
            return Ok(());
        }
        if how == Method::Dense {
            let rows = |f: usize| codes.row(f).to_slice().unwrap_or(&[]);
            let weights = weight_slice.unwrap_or(&[]);
            count_dense(
                block,
                rows(a),
                rows(b),
                &class_of_row,
                weights,
                (k_parent, k_child),
                n_classes,
            );
            return Ok(());
        }
        let (order, starts) = &grouped[a];
        let child_codes = codes.row(b);
        let walk = &mut scratch.walk;
        walk.prepare(k_child * n_classes, k_child)?;
        for u in 0..k_parent {
            let group = walk.next_group();
            for &row in &order[starts[u]..starts[u + 1]] {
                let row = row as usize;
                let v = child_codes[row];
                if v < 0 {
                    continue;
                }
                if v as usize >= k_child {
                    return Err(code_out_of_range(b, v, k_child));
                }
                let v = v as usize;
                if walk.group_of[v] != group {
                    walk.group_of[v] = group;
                    walk.touched.push(v as i32);
                }
                let weight = if unit_weights { 1.0 } else { weights[row] };
                walk.counts[v * n_classes + class_of_row[row] as usize] += weight;
            }
            walk.touched.sort_unstable();
            let before = block.indices.len();
            for &v in &walk.touched {
                let cell = &mut walk.counts[v as usize * n_classes..(v as usize + 1) * n_classes];
                if cell.iter().any(|&n| n != 0.0) {
                    block.indices.push(v);
                    block.counts.extend_from_slice(cell);
                }
                cell.iter_mut().for_each(|n| *n = 0.0);
            }
            walk.touched.clear();
            block
                .row_lengths
                .push((block.indices.len() - before) as i64);
        }
        Ok(())
    };
    // the largest number of cells of pair (a, b): each row is in one cell
    let cell_bound =
        |&(a, b): &(usize, usize)| n_rows.min(layout.cardinality(a) * layout.cardinality(b));
    // counts a run of consecutive pairs into one block (emptied first), with room for
    // their most cells (so that it never grows while counting), allocated fallibly
    let count_run = |scratch: &mut ThreadScratch,
                     (block, run): (&mut PairBlock, &[(usize, usize)])| {
        block.row_lengths.clear();
        block.indices.clear();
        block.counts.clear();
        let rows: usize = run.iter().map(|&(a, _)| layout.cardinality(a)).sum();
        let cells: usize = run.iter().map(cell_bound).sum();
        let error = |_| reserve_error((8 + 4 + 8 * n_classes) * cells);
        block.row_lengths.try_reserve_exact(rows).map_err(error)?;
        block.indices.try_reserve_exact(cells).map_err(error)?;
        block
            .counts
            .try_reserve_exact(cells * n_classes)
            .map_err(error)?;
        for &pair in run {
            count_pair(scratch, block, pair)?;
        }
        Ok(())
    };

    // Pairs are counted a group at a time and appended to the tables, so the per-pair
    // blocks of only one group coexist with the assembled tables (not all of them: on a
    // table with dense pairs that doubled the peak memory). A group holds up to
    // GROUP_CELLS cells by the bound min(S, K_a K_b) per pair (about 7 MB with three
    // classes), and enough pairs to feed every thread.
    const GROUP_CELLS: usize = 1 << 18;
    const RUNS_PER_THREAD: usize = 8;
    const MAX_RUN: usize = 256;
    let threads = rayon::current_num_threads();
    let min_pairs = 16 * threads;
    let mut assembled = Assembled::new(
        pair_list,
        wanted.iter().map(|&(a, _)| layout.cardinality(a)).sum(),
        whole,
        wanted.iter().map(cell_bound).sum(),
    )?;
    // the blocks are kept from group to group: freed, their memory went back to the
    // system and was faulted in again by the next group (half of counting's page
    // faults on a wide table)
    let mut blocks: Vec<PairBlock> = Vec::new();
    let mut first = 0;
    while first < wanted.len() {
        let mut last = first;
        let mut bound = 0usize;
        while last < wanted.len() && (last - first < min_pairs || bound < GROUP_CELLS) {
            bound += cell_bound(&wanted[last]);
            last += 1;
        }
        // runs of consecutive pairs, several per thread: one block (three allocations)
        // per pair cost more than the counting of a small pair
        let run_length = (last - first)
            .div_ceil(RUNS_PER_THREAD * threads)
            .min(MAX_RUN);
        let n_runs = (last - first).div_ceil(run_length);
        if blocks.len() < n_runs {
            blocks.resize_with(n_runs, PairBlock::default);
        }
        blocks[..n_runs]
            .par_iter_mut()
            .zip(wanted[first..last].par_chunks(run_length))
            .try_for_each_init(ThreadScratch::default, count_run)?;
        assembled.append(&blocks[..n_runs], n_classes, bound)?;
        first = last;
    }
    assembled.finish(n_classes)
}

/// The pairs `(a, b)` flattened to `[a_0, b_0, ...]`, allocated fallibly.
fn flat_pairs(pairs: &[(usize, usize)]) -> Result<Vec<i32>> {
    let mut flat = with_capacity(2 * pairs.len(), "AODE pair list")?;
    for &(a, b) in pairs {
        let (Ok(a), Ok(b)) = (i32::try_from(a), i32::try_from(b)) else {
            return Err(HebError::InvalidParameter(
                "AODE supports at most 2^31 features".into(),
            ));
        };
        flat.extend_from_slice(&[a, b]);
    }
    Ok(flat)
}

/// The first `extra` elements of `vector`'s spare capacity, reserved fallibly; the
/// caller writes them all, then extends the length. When the vector must grow it grows
/// to `expected` elements (the caller's forecast of its final length) or by half,
/// whichever is more: each growth copies the whole vector on one thread, so a good
/// forecast means one copy. If that much cannot be reserved, only `extra` more is.
fn spare<T>(vector: &mut Vec<T>, extra: usize, expected: usize) -> Result<&mut [MaybeUninit<T>]> {
    let needed = vector.len() + extra;
    if needed > vector.capacity() {
        let grown = needed
            .max(expected)
            .max(vector.capacity() + vector.capacity() / 2);
        if vector.try_reserve_exact(grown - vector.len()).is_err() {
            vector
                .try_reserve_exact(extra)
                .map_err(|_| reserve_error(std::mem::size_of::<T>() * needed))?;
        }
    }
    Ok(&mut vector.spare_capacity_mut()[..extra])
}

/// Appends the blocks of consecutive pairs to a CSR's `indptr`, `indices` and `counts`
/// (`convert`ed), growing them toward `expected_cells` cells in all ([`spare`]; grown by
/// each group's exact size, they were copied once per group), and copies each block into
/// its own part of them in parallel.
fn append_blocks<T: Send>(
    (indptr, indices, counts): (&mut Vec<i64>, &mut Vec<i32>, &mut Vec<T>),
    blocks: &[PairBlock],
    (n_classes, expected_cells): (usize, usize),
    convert: impl Fn(f64) -> T + Sync,
) -> Result<()> {
    let new_rows: usize = blocks.iter().map(|b| b.row_lengths.len()).sum();
    let nnz: usize = blocks.iter().map(|b| b.indices.len()).sum();
    let mut cells_before = indptr.last().copied().unwrap_or(0);
    // (indptr was reserved whole: its length is known before counting)
    let mut rows = spare(indptr, new_rows, 0)?;
    let mut new_indices = spare(indices, nnz, expected_cells)?;
    let mut new_counts = spare(
        counts,
        nnz * n_classes,
        expected_cells.saturating_mul(n_classes),
    )?;
    // each block's parts of the new memory, in order
    let mut placed = with_capacity(blocks.len(), "AODE pair tables")?;
    for block in blocks {
        let nnz = block.indices.len();
        let (my_rows, tail) = std::mem::take(&mut rows).split_at_mut(block.row_lengths.len());
        rows = tail;
        let (my_indices, tail) = std::mem::take(&mut new_indices).split_at_mut(nnz);
        new_indices = tail;
        let (my_counts, tail) = std::mem::take(&mut new_counts).split_at_mut(nnz * n_classes);
        new_counts = tail;
        placed.push((block, cells_before, my_rows, my_indices, my_counts));
        cells_before += nnz as i64;
    }
    assert!(rows.is_empty() && new_indices.is_empty() && new_counts.is_empty());
    placed
        .into_par_iter()
        .for_each(|(block, first, rows, indices, counts)| {
            let mut end = first;
            for (row, &length) in rows.iter_mut().zip(&block.row_lengths) {
                end += length;
                row.write(end);
            }
            for (out, &v) in indices.iter_mut().zip(&block.indices) {
                out.write(v);
            }
            for (out, &n) in counts.iter_mut().zip(&block.counts) {
                out.write(convert(n));
            }
        });
    // SAFETY: every element of the three spare ranges was written just above: the
    // blocks' parts tile them exactly (asserted), and each part is written in full.
    unsafe {
        indptr.set_len(indptr.len() + new_rows);
        indices.set_len(indices.len() + nnz);
        counts.set_len(counts.len() + nnz * n_classes);
    }
    Ok(())
}

/// The stored counts being assembled.
enum CountBuffer {
    Whole(Vec<u32>),
    Float(Vec<f64>),
}

/// The CSR being assembled from per-pair blocks, with fallible allocations.
struct Assembled {
    pairs: Vec<i32>,
    indptr: Vec<i64>,
    indices: Vec<i32>,
    counts: CountBuffer,
    /// The bound `sum min(S, K_a K_b)` on the cells of all pairs, and of those appended:
    /// the cells counted so far, scaled by their ratio, forecast the final size.
    cell_bound_total: usize,
    cell_bound_appended: usize,
}

fn reserve_error(bytes: usize) -> HebError {
    HebError::Allocation {
        what: "AODE pair tables",
        bytes: bytes as u128,
    }
}

impl Assembled {
    fn new(
        pairs: Vec<i32>,
        n_table_rows: usize,
        whole: bool,
        cell_bound_total: usize,
    ) -> Result<Self> {
        let mut indptr = Vec::new();
        indptr
            .try_reserve_exact(n_table_rows + 1)
            .map_err(|_| reserve_error(8 * n_table_rows))?;
        indptr.push(0i64);
        Ok(Self {
            pairs,
            indptr,
            indices: Vec::new(),
            counts: if whole {
                CountBuffer::Whole(Vec::new())
            } else {
                CountBuffer::Float(Vec::new())
            },
            cell_bound_total,
            cell_bound_appended: 0,
        })
    }

    /// Appends the blocks of consecutive pairs ([`append_blocks`]) whose cells are at
    /// most `cell_bound`. Whole counts are converted to `u32` exactly (the caller chose
    /// `whole` so that they fit).
    fn append(&mut self, blocks: &[PairBlock], n_classes: usize, cell_bound: usize) -> Result<()> {
        self.cell_bound_appended += cell_bound;
        let cells = self.indices.len() + blocks.iter().map(|b| b.indices.len()).sum::<usize>();
        // the final size if the pairs to come fill their bound as those so far did, with
        // a sixteenth more (a shortfall costs one more copy; an excess is given back by
        // `finish`), never beyond the bound
        let fill = cells as f64 / self.cell_bound_appended.max(1) as f64;
        let expected = (1.0625 * fill * self.cell_bound_total as f64)
            .min(self.cell_bound_total as f64) as usize;
        let (indptr, indices) = (&mut self.indptr, &mut self.indices);
        let sizes = (n_classes, expected);
        match &mut self.counts {
            CountBuffer::Whole(counts) => {
                append_blocks((indptr, indices, counts), blocks, sizes, |n| {
                    debug_assert!(n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64);
                    n as u32
                })
            }
            CountBuffer::Float(counts) => {
                append_blocks((indptr, indices, counts), blocks, sizes, |n| n)
            }
        }
    }

    fn finish(mut self, n_classes: usize) -> Result<PairTables> {
        self.indices.shrink_to_fit();
        let nnz = self.indices.len();
        let counts = match self.counts {
            CountBuffer::Whole(mut counts) => {
                counts.shrink_to_fit();
                CellCounts::Whole(
                    Array2::from_shape_vec((nnz, n_classes), counts).map_err(shape_error)?,
                )
            }
            CountBuffer::Float(mut counts) => {
                counts.shrink_to_fit();
                CellCounts::Float(
                    Array2::from_shape_vec((nnz, n_classes), counts).map_err(shape_error)?,
                )
            }
        };
        Ok(PairTables {
            pairs: self.pairs,
            indptr: self.indptr,
            indices: self.indices,
            counts,
        })
    }
}

/// The pair tables of the stored rows, moved onto a grown vocabulary and multiplied by
/// `decay`, plus those of a batch already counted on it (`partial_fit`, SPEC "Online
/// learning and forgetting").
///
/// `new_codes[f][u]` is the new code of old code `u` of feature f (increasing: new
/// categories are inserted at their sorted positions, so every row stays sorted).
/// The result stores the batch's pairs (those the current structure models): a stored
/// pair the batch lacks is dropped (the memory cap only ever switches a pair off), and a
/// batch pair the stored tables lack adds to nothing. Cells whose counts all reach 0 are
/// dropped, as counting drops them. The result holds whole (`u32`) counts when both
/// inputs are whole numbers, `decay` is 1 (or nothing is stored) and every sum fits,
/// else `f64`. O(cells + P log P), in parallel over pairs, each pair written straight
/// into the result (with room for the stored and the batch's cells, then compacted).
///
/// # Errors
/// Tables that disagree with their layouts, codes out of range or not increasing, or
/// tables too large to allocate.
#[allow(clippy::too_many_arguments)]
pub fn merge_pair_tables(
    old: PairTablesView,
    old_layout: &FeatureLayout,
    batch: PairTablesView,
    layout: &FeatureLayout,
    new_codes: &[Vec<usize>],
    n_classes: usize,
    decay: f64,
) -> Result<PairTables> {
    let n_features = layout.n_features();
    check_len(
        "features of the stored tables",
        n_features,
        old_layout.n_features(),
    )?;
    check_len("features of the new codes", n_features, new_codes.len())?;
    old.check(old_layout, n_classes)?;
    batch.check(layout, n_classes)?;
    for (f, codes) in new_codes.iter().enumerate() {
        check_len(
            "new codes of a feature",
            old_layout.cardinality(f),
            codes.len(),
        )?;
        let increasing = codes.windows(2).all(|w| w[0] < w[1]);
        if !increasing || codes.last().is_some_and(|&c| c >= layout.cardinality(f)) {
            return Err(HebError::InvalidParameter(format!(
                "feature {f}: new codes must increase and stay below {}",
                layout.cardinality(f)
            )));
        }
    }
    if !(decay.is_finite() && decay >= 0.0) {
        return Err(HebError::InvalidParameter(format!(
            "decay must be finite and non-negative, got {decay}"
        )));
    }
    // old parent value of each new one (None: a new category)
    let old_value: Vec<Vec<Option<usize>>> = (0..n_features)
        .map(|f| {
            let mut inverse = filled(layout.cardinality(f), None, "AODE category maps")?;
            for (u, &new) in new_codes[f].iter().enumerate() {
                inverse[new] = Some(u);
            }
            Ok(inverse)
        })
        .collect::<Result<_>>()?;
    let (old_rows, rows) = (old.row_offsets(old_layout)?, batch.row_offsets(layout)?);
    // whole counts stay whole (u32) when nothing fractional enters: the batch whole, the
    // old counts whole and undecayed (or none), and no cell beyond u32
    let (old_whole, old_largest) = old.counts.whole_and_largest();
    let (batch_whole, batch_largest) = batch.counts.whole_and_largest();
    let whole = batch_whole
        && (old.counts.nrows() == 0 || (old_whole && decay == 1.0))
        && old_largest + batch_largest <= u32::MAX as f64;
    let merge = RowMerge {
        old,
        batch,
        old_value: &old_value,
        old_rows: &old_rows,
        rows: &rows,
        new_codes,
        n_classes,
        decay,
    };
    // one pass over the pairs in parallel, each writing its cells into its own region
    // with room for the most it can have, then the regions moved together (no per-pair
    // buffers to grow and copy)
    let (indptr, indices, counts) = if whole {
        let (indptr, indices, counts) = merge.merged(|n| {
            debug_assert!(n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64);
            n as u32
        })?;
        let nnz = indices.len();
        let counts = Array2::from_shape_vec((nnz, n_classes), counts).map_err(shape_error)?;
        (indptr, indices, CellCounts::Whole(counts))
    } else {
        let (indptr, indices, counts) = merge.merged(|n| n)?;
        let nnz = indices.len();
        let counts = Array2::from_shape_vec((nnz, n_classes), counts).map_err(shape_error)?;
        (indptr, indices, CellCounts::Float(counts))
    };
    let mut pair_list = with_capacity(batch.pairs.len(), "AODE pair list")?;
    pair_list.extend_from_slice(batch.pairs);
    Ok(PairTables {
        pairs: pair_list,
        indptr,
        indices,
        counts,
    })
}

fn shape_error(error: ndarray::ShapeError) -> HebError {
    HebError::InvalidParameter(error.to_string())
}

/// What [`merge_pair_tables`] merges, row by row of the batch's pairs.
struct RowMerge<'a, 'o, 'b> {
    old: PairTablesView<'o>,
    batch: PairTablesView<'b>,
    old_value: &'a [Vec<Option<usize>>],
    old_rows: &'a [usize],
    rows: &'a [usize],
    new_codes: &'a [Vec<usize>],
    n_classes: usize,
    decay: f64,
}

impl RowMerge<'_, '_, '_> {
    /// Calls `emit(child value, class counts)` for every merged cell of row `u` (parent
    /// value) of the batch's pair `p`, in increasing child value; cells whose counts are
    /// all 0 are skipped, as counting skips them.
    fn cells(
        &self,
        p: usize,
        old_pair: Option<usize>,
        u: usize,
        sum: &mut [f64],
        mut emit: impl FnMut(usize, &[f64]),
    ) {
        let (old, batch) = (&self.old, &self.batch);
        let (_, b) = batch.pair(p);
        let old_cells = self.stored_row(p, old_pair, u).map_or(0..0, |row| {
            old.indptr[row] as usize..old.indptr[row + 1] as usize
        });
        let row = self.rows[p] + u;
        let new_cells = batch.indptr[row] as usize..batch.indptr[row + 1] as usize;
        let (mut i, mut j) = (old_cells.start, new_cells.start);
        let child_codes = &self.new_codes[b];
        loop {
            let old_v = (i < old_cells.end).then(|| child_codes[old.indices[i] as usize]);
            let new_v = (j < new_cells.end).then(|| batch.indices[j] as usize);
            let v = match (old_v, new_v) {
                (Some(x), Some(y)) => x.min(y),
                (Some(x), None) => x,
                (None, Some(y)) => y,
                (None, None) => break,
            };
            sum.iter_mut().for_each(|n| *n = 0.0);
            if old_v == Some(v) {
                old.counts.add_cell(i, self.decay, sum);
                i += 1;
            }
            if new_v == Some(v) {
                batch.counts.add_cell(j, 1.0, sum);
                j += 1;
            }
            if sum.iter().any(|&n| n != 0.0) {
                emit(v, sum);
            }
        }
    }

    /// Where the stored tables hold the batch's pair `p`.
    fn old_pair(&self, p: usize) -> Option<usize> {
        let (a, b) = self.batch.pair(p);
        self.old.position(a, b)
    }

    /// The stored tables' row of parent value `u` of the batch's pair `p` (held at
    /// `old_pair`), if the stored rows had that pair and that value.
    fn stored_row(&self, p: usize, old_pair: Option<usize>, u: usize) -> Option<usize> {
        let (a, _) = self.batch.pair(p);
        Some(self.old_rows[old_pair?] + self.old_value[a][u]?)
    }

    /// The most cells pair `p` can have after the merge: the stored and the batch's
    /// cells of its rows.
    fn most_cells(&self, p: usize) -> usize {
        let old_pair = self.old_pair(p);
        let cells = |indptr: &[i64], row: usize| (indptr[row + 1] - indptr[row]) as usize;
        (0..self.rows[p + 1] - self.rows[p])
            .map(|u| {
                let stored = self
                    .stored_row(p, old_pair, u)
                    .map_or(0, |row| cells(self.old.indptr, row));
                stored + cells(self.batch.indptr, self.rows[p] + u)
            })
            .sum()
    }

    /// The merged tables' row pointers, child values and class counts (`convert`ed).
    ///
    /// # Errors
    /// [`HebError::Allocation`] when they cannot be allocated, [`HebError::Interrupted`]
    /// when the caller asked the work to stop.
    fn merged<T: ZeroBytes + Send>(
        &self,
        convert: impl Fn(f64) -> T + Sync,
    ) -> Result<(Vec<i64>, Vec<i32>, Vec<T>)> {
        let n_classes = self.n_classes;
        let n_pairs = self.batch.n_pairs();
        let room: Vec<usize> = (0..n_pairs)
            .into_par_iter()
            .map(|p| self.most_cells(p))
            .collect();
        let mut starts: Vec<usize> = with_capacity(n_pairs + 1, "AODE pair offsets")?;
        starts.push(0);
        for &cells in &room {
            starts.push(starts[starts.len() - 1] + cells);
        }
        let n_rows = self.rows[n_pairs];
        let room_cells = starts[n_pairs];
        let room_counts = room_cells
            .checked_mul(n_classes)
            .ok_or_else(|| reserve_error(usize::MAX))?;
        let mut indptr: Vec<i64> = untouched_zeros(n_rows + 1, "AODE pair row pointers")?;
        let mut indices: Vec<i32> = untouched_zeros(room_cells, "AODE pair cells")?;
        let mut counts: Vec<T> = untouched_zeros(room_counts, "AODE pair counts")?;
        // each pair's row lengths, child values and counts, from the start of its region
        // each pair's part of the row lengths, child values and counts
        let used: Vec<usize> = split_by_bounds(&mut indptr[1..], self.rows, 1)?
            .into_par_iter()
            .zip(split_by_bounds(&mut indices, &starts, 1)?)
            .zip(split_by_bounds(&mut counts, &starts, n_classes)?)
            .with_min_len(16)
            .map(|(((p, lengths), (_, indices)), (_, counts))| {
                crate::interrupt::check()?;
                let mut sum = vec![0.0; n_classes];
                let mut k = 0;
                let old_pair = self.old_pair(p);
                for (u, length) in lengths.iter_mut().enumerate() {
                    let first = k;
                    self.cells(p, old_pair, u, &mut sum, |v, sum| {
                        indices[k] = v as i32;
                        let row = &mut counts[k * n_classes..(k + 1) * n_classes];
                        for (out, &n) in row.iter_mut().zip(sum) {
                            *out = convert(n);
                        }
                        k += 1;
                    });
                    *length = (k - first) as i64;
                }
                Ok(k)
            })
            .collect::<Result<_>>()?;
        // the regions moved together, in pair order
        let mut next = 0;
        for (p, &cells) in used.iter().enumerate() {
            indices.copy_within(starts[p]..starts[p] + cells, next);
            counts.copy_within(
                starts[p] * n_classes..(starts[p] + cells) * n_classes,
                next * n_classes,
            );
            next += cells;
        }
        indices.truncate(next);
        indices.shrink_to_fit();
        counts.truncate(next * n_classes);
        counts.shrink_to_fit();
        for row in 0..n_rows {
            indptr[row + 1] += indptr[row];
        }
        Ok((indptr, indices, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};

    #[test]
    fn merging_equals_counting_everything_at_once() {
        // first batch knows values {0, 2} of feature 0 and {0, 1} of feature 1; the
        // second adds value 1 of feature 0 (between the old ones) and value 2 of feature 1
        let first = array![[0, 2, 2, 0, -1], [1, 0, 1, 1, 0]];
        let second = array![[1, 2, 0, 1], [2, 1, -1, 0]];
        let (y1, y2) = (array![0_i64, 1, 1, 0, 1], array![1_i64, 0, 1, 1]);
        let old_layout = FeatureLayout::from_cardinalities(&[2, 2]);
        let layout = FeatureLayout::from_cardinalities(&[3, 3]);
        let recoded = first.mapv(|v| if v == 2 { 1 } else { v }); // old codes: 0 -> 0, 2 -> 1
        let ones = |n: usize| Array1::<f64>::ones(n);
        let old = count_pairs(
            recoded.view(),
            y1.view(),
            ones(5).view(),
            &old_layout,
            2,
            &pairs(2),
        )
        .unwrap();
        let batch = count_pairs(
            second.view(),
            y2.view(),
            ones(4).view(),
            &layout,
            2,
            &pairs(2),
        )
        .unwrap();
        let new_codes = vec![vec![0, 2], vec![0, 1]];
        let merged = merge_pair_tables(
            old.view(),
            &old_layout,
            batch.view(),
            &layout,
            &new_codes,
            2,
            1.0,
        )
        .unwrap();
        let codes = ndarray::concatenate![ndarray::Axis(1), first, second];
        let labels = ndarray::concatenate![ndarray::Axis(0), y1, y2];
        let whole = count_pairs(
            codes.view(),
            labels.view(),
            ones(9).view(),
            &layout,
            2,
            &pairs(2),
        )
        .unwrap();
        assert_eq!(merged, whole);
        // decay multiplies the old counts only
        let decayed = merge_pair_tables(
            old.view(),
            &old_layout,
            batch.view(),
            &layout,
            &new_codes,
            2,
            0.5,
        )
        .unwrap();
        assert_eq!(
            decayed.counts.to_f64().sum(),
            0.5 * old.counts.to_f64().sum() + batch.counts.to_f64().sum()
        );
        // decay 0 forgets the stored rows: their cells are dropped, as counting the batch
        // alone (on the grown vocabulary) leaves them out
        let forgotten = merge_pair_tables(
            old.view(),
            &old_layout,
            batch.view(),
            &layout,
            &new_codes,
            2,
            0.0,
        )
        .unwrap();
        assert_eq!(forgotten.indptr, batch.indptr);
        assert_eq!(forgotten.indices, batch.indices);
        assert_eq!(forgotten.counts.to_f64(), batch.counts.to_f64());
        // whole counts stay whole through an undecayed merge, not through a decayed one
        assert!(matches!(merged.counts, CellCounts::Whole(_)));
        assert!(matches!(decayed.counts, CellCounts::Float(_)));
        assert!(merge_pair_tables(
            old.view(),
            &old_layout,
            batch.view(),
            &layout,
            &[vec![1, 0], vec![0, 1]],
            2,
            1.0,
        )
        .is_err());
    }

    #[test]
    fn whole_weights_store_u32_counts_and_others_f64() {
        let codes = array![[0, 1, 1, 0], [1, 1, 0, 0]];
        let labels = array![0_i64, 1, 1, 0];
        let layout = FeatureLayout::from_cardinalities(&[2, 2]);
        let count = |w: Array1<f64>| {
            count_pairs(codes.view(), labels.view(), w.view(), &layout, 2, &pairs(2)).unwrap()
        };
        // cells (u, v): (0, 0) rows 3; (0, 1) row 0; (1, 1) row 1; (1, 0) row 2 only
        let whole = count(array![1.0, 2.0, 0.0, 3.0]);
        assert_eq!(whole.indices, vec![0, 1, 1]);
        assert_eq!(
            whole.counts,
            CellCounts::Whole(array![[3, 0], [1, 0], [0, 2]])
        );
        let float = count(array![1.0, 2.0, 0.5, 3.0]);
        assert_eq!(
            float.counts,
            CellCounts::Float(array![[3.0, 0.0], [1.0, 0.0], [0.0, 0.5], [0.0, 2.0]])
        );
        // whole weights whose sum does not fit a u32 count as f64
        let huge = count(array![4294967295.0, 1.0, 0.0, 0.0]);
        assert_eq!(
            huge.counts,
            CellCounts::Float(array![[4294967295.0, 0.0], [0.0, 1.0]])
        );
        assert!(whole_weights(array![4294967295.0, 0.0].view()));
        assert!(!whole_weights(array![4294967295.0, 1.0].view()));
        assert!(!whole_weights(array![1.0, f64::NAN].view()));
        assert!(!whole_weights(array![1.0, f64::INFINITY].view()));
        assert!(!whole_weights(array![1.0, -1.0].view()));

        // a merge whose sums would not fit a u32 keeps them as f64, exactly
        let big = count(array![0.0, 0.0, 0.0, 4294967295.0]);
        assert!(matches!(big.counts, CellCounts::Whole(_)));
        let merged = merge_pair_tables(
            big.view(),
            &layout,
            big.view(),
            &layout,
            &[vec![0, 1], vec![0, 1]],
            2,
            1.0,
        )
        .unwrap();
        assert_eq!(
            merged.counts,
            CellCounts::Float(array![[8589934590.0, 0.0]])
        );
        // an undecayed merge of whole tables stays whole, and equals counting both
        let merged = merge_pair_tables(
            whole.view(),
            &layout,
            whole.view(),
            &layout,
            &[vec![0, 1], vec![0, 1]],
            2,
            1.0,
        )
        .unwrap();
        assert_eq!(merged, count(array![2.0, 4.0, 0.0, 6.0]));
    }

    #[test]
    fn stored_pairs_are_found_by_position() {
        let flat: Vec<i32> = pairs(5)
            .iter()
            .flat_map(|&(a, b)| [a as i32, b as i32])
            .collect();
        let counts = Array2::<f64>::zeros((0, 2));
        let view = PairTablesView {
            pairs: &flat,
            indptr: &[0],
            indices: &[],
            counts: CellCountsView::Float(counts.view()),
        };
        for (p, (a, b)) in pairs(5).into_iter().enumerate() {
            assert_eq!(view.position(a, b), Some(p));
        }
        let some = [0, 3, 1, 2, 2, 4];
        let view = PairTablesView {
            pairs: &some,
            ..view
        };
        assert_eq!(view.position(1, 2), Some(1));
        assert_eq!(view.position(0, 1), None);
        assert_eq!(view.position(3, 4), None);
        view.check_pairs(5).unwrap();
        assert!(view.check_pairs(4).is_err());
        let unordered = [1, 2, 0, 3];
        assert!(PairTablesView {
            pairs: &unordered,
            ..view
        }
        .check_pairs(5)
        .is_err());
    }

    #[test]
    fn counts_match_a_dense_tally() {
        // three features K = (3, 2, 4); rows with missing values and a zero weight
        let codes = array![
            [0, 2, 2, -1, 1, 2, 0, 2],
            [1, 0, 1, 1, -1, 0, 1, 0],
            [3, 0, 0, 2, 2, -1, 3, 1]
        ];
        let labels = array![0_i64, 1, 1, 0, 1, 0, 0, 1];
        let weights = array![1.0, 2.0, 0.5, 1.0, 1.0, 1.0, 0.0, 1.0];
        let layout = FeatureLayout::from_cardinalities(&[3, 2, 4]);
        let t = count_pairs(
            codes.view(),
            labels.view(),
            weights.view(),
            &layout,
            2,
            &pairs(3),
        )
        .unwrap();
        let view = t.view();
        view.check(&layout, 2).unwrap();
        // the check refuses every way a row's child values can be wrong, naming the pair
        let row_of = |p: usize, u: usize| view.row_offsets(&layout).unwrap()[p] + u;
        let longest = (0..view.indptr.len() - 1)
            .max_by_key(|&row| view.indptr[row + 1] - view.indptr[row])
            .unwrap();
        assert!(view.indptr[longest + 1] - view.indptr[longest] >= 2);
        let first = view.indptr[longest] as usize;
        let last = view.indptr[longest + 1] as usize - 1;
        let named_pair = (0..3)
            .find(|&p| (row_of(p, 0)..row_of(p + 1, 0)).contains(&longest))
            .map(|p| pairs(3)[p])
            .unwrap();
        let k_child = layout.cardinality(named_pair.1) as i32;
        for (what, at, value) in [
            ("unsorted", first, view.indices[last]),
            ("repeated", last, view.indices[last - 1]),
            ("negative", first, -1),
            ("beyond the child's categories", last, k_child),
        ] {
            let mut tampered = t.clone();
            tampered.indices[at] = value;
            let message = tampered.view().check(&layout, 2).unwrap_err().to_string();
            let expected = format!("features ({}, {})", named_pair.0, named_pair.1);
            assert!(message.contains(&expected), "{what}: {message}");
        }
        let offsets = view.row_offsets(&layout).unwrap();
        for (p, (a, b)) in pairs(3).into_iter().enumerate() {
            for u in 0..layout.cardinality(a) {
                for v in 0..layout.cardinality(b) {
                    let mut dense = [0.0; 2];
                    for s in 0..8 {
                        if codes[[a, s]] == u as i32 && codes[[b, s]] == v as i32 {
                            dense[labels[s] as usize] += weights[s];
                        }
                    }
                    match view.find(offsets[p], u, v as i32) {
                        Some(k) => assert_eq!(t.counts.to_f64().row(k).to_vec(), dense.to_vec()),
                        None => assert_eq!(dense, [0.0, 0.0], "pair {p} cell ({u}, {v})"),
                    }
                }
            }
        }
        // row 6 has weight 0: its cell (0, 1) of pair (0, 1) holds row 0 only
        let k = view.find(offsets[0], 0, 1).unwrap();
        assert_eq!(t.counts.to_f64().row(k).to_vec(), vec![1.0, 0.0]);
    }

    /// A fixed-seed linear congruential generator: reproducible test rows without a crate.
    struct Lcg(u64);

    impl Lcg {
        /// The next draw from `0..k`.
        fn below(&mut self, k: usize) -> usize {
            ((crate::test_random::next_state(&mut self.0) >> 33) % k as u64) as usize
        }
    }

    /// Random codes `(F, n_rows)` (missing with probability `1 / (K + 1)`), labels in
    /// `0..n_classes` and weights `weight_step * (0..weight_levels)`, drawn in that order.
    fn random_rows(
        rng: &mut Lcg,
        cardinality: &[usize],
        n_rows: usize,
        n_classes: usize,
        (weight_step, weight_levels): (f64, usize),
    ) -> (Array2<i32>, Array1<i64>, Array1<f64>) {
        let codes = Array2::from_shape_fn((cardinality.len(), n_rows), |(f, _)| {
            let v = rng.below(cardinality[f] + 1);
            if v == cardinality[f] {
                -1
            } else {
                v as i32
            }
        });
        let labels = Array1::from_shape_fn(n_rows, |_| rng.below(n_classes) as i64);
        let weights =
            Array1::from_shape_fn(n_rows, |_| weight_step * rng.below(weight_levels) as f64);
        (codes, labels, weights)
    }

    /// Counts the `wanted` pairs of the rows and checks every cell of every pair against a
    /// direct tally (a cell the tables do not hold must tally zero).
    fn assert_counts_match_a_tally(
        (codes, labels, weights): &(Array2<i32>, Array1<i64>, Array1<f64>),
        cardinality: &[usize],
        n_classes: usize,
        wanted: &[(usize, usize)],
    ) {
        let layout = FeatureLayout::from_cardinalities(cardinality);
        let t = count_pairs(
            codes.view(),
            labels.view(),
            weights.view(),
            &layout,
            n_classes,
            wanted,
        )
        .unwrap();
        let view = t.view();
        view.check(&layout, n_classes).unwrap();
        let offsets = view.row_offsets(&layout).unwrap();
        assert_eq!(view.pair_list().collect::<Vec<_>>(), wanted);
        let n_rows = codes.ncols();
        let counts = t.counts.to_f64();
        for (p, &(a, b)) in wanted.iter().enumerate() {
            let (k_a, k_b) = (cardinality[a], cardinality[b]);
            let mut tally = vec![0.0; k_a * k_b * n_classes];
            for s in 0..n_rows {
                let (u, v) = (codes[[a, s]], codes[[b, s]]);
                if u >= 0 && v >= 0 {
                    tally[(u as usize * k_b + v as usize) * n_classes + labels[s] as usize] +=
                        weights[s];
                }
            }
            for u in 0..k_a {
                for v in 0..k_b {
                    let at = (u * k_b + v) * n_classes;
                    let cell = &tally[at..at + n_classes];
                    match view.find(offsets[p], u, v as i32) {
                        Some(k) => assert_eq!(counts.row(k).to_vec(), cell.to_vec()),
                        None => assert!(
                            cell.iter().all(|&n| n == 0.0),
                            "{n_rows} rows, pair {p} cell ({u}, {v})"
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn dense_and_walked_counting_match_a_tally() {
        // K = (50, 60, 7), two classes: pair (0, 1) has 6,000 cells, counted densely over
        // 8,000 rows and by the value walk over 2,000
        let cardinality = [50usize, 60, 7];
        let mut rng = Lcg(12345);
        for n_rows in [2000usize, 8000] {
            let rows = random_rows(&mut rng, &cardinality, n_rows, 2, (0.5, 4));
            assert_counts_match_a_tally(&rows, &cardinality, 2, &pairs(3));
        }
    }

    #[test]
    fn bitset_counting_matches_a_tally() {
        // unit weights: the small pairs are counted from bitsets (some features complete,
        // so their last value is derived, others with missing values), a 20 x 20 pair
        // densely; 70 rows leave a partial last word, 130 rows span three words
        let cardinality = [3usize, 2, 4, 20, 3, 16, 20, 5];
        assert!(counted_by_bitsets(3, 2, 3) && counted_by_bitsets(16, 5, 3));
        assert!(!counted_by_bitsets(20, 3, 3) && !counted_by_bitsets(16, 16, 3));
        for (seed, n_rows) in [(7u64, 70usize), (8, 130), (9, 1)] {
            let (mut codes, labels, mut weights) =
                random_rows(&mut Lcg(seed), &cardinality, n_rows, 3, (1.0, 2));
            weights.fill(1.0);
            for f in [0usize, 2, 5] {
                codes.row_mut(f).mapv_inplace(|v| v.max(0));
            }
            assert_counts_match_a_tally(&(codes, labels, weights), &cardinality, 3, &pairs(8));
        }
    }

    #[test]
    fn every_population_count_kernel_counts_the_same_cells() {
        // the vector builds this CPU runs give the portable kernel's cells exactly; 200
        // rows leave a partial fourth word, and feature 0 is complete (its last value
        // derived)
        let cardinality = [3usize, 2, 4, 16, 5];
        let layout = FeatureLayout::from_cardinalities(&cardinality);
        let (mut codes, labels, _) = random_rows(&mut Lcg(11), &cardinality, 200, 3, (1.0, 2));
        codes.row_mut(0).mapv_inplace(|v| v.max(0));
        let classes: Vec<u32> = labels.iter().map(|&c| c as u32).collect();
        let mut bitsets =
            ValueBitsets::new(codes.view(), &layout, &classes, 3, &[true; 5]).unwrap();
        let detected = bitsets.popcount;
        let count_all = |bitsets: &ValueBitsets| {
            let (mut block, mut parent) = (PairBlock::default(), ParentBitsets::default());
            for (a, b) in pairs(5) {
                let k = (cardinality[a], cardinality[b]);
                bitsets.count_pair(&mut block, &mut parent, (a, b), k);
            }
            (block.row_lengths, block.indices, block.counts)
        };
        bitsets.popcount = Popcount::Portable;
        let expected = count_all(&bitsets);
        assert!(expected.2.iter().sum::<f64>() > 0.0);
        let runnable = match detected {
            Popcount::Avx512 => vec![Popcount::Avx2, Popcount::Avx512],
            Popcount::Avx2 => vec![Popcount::Avx2],
            Popcount::Portable => vec![],
        };
        for kernel in runnable {
            bitsets.popcount = kernel;
            assert_eq!(count_all(&bitsets), expected, "{kernel:?}");
        }
    }

    #[test]
    fn tables_grown_over_several_groups_match_a_tally() {
        // 3,000 rows and 30 features, 435 pairs of up to 3,000 cells each (about five
        // groups): features declared with 100 values of which 3 occur fill little of
        // their bound, features of 60 values nearly all of it. Sparse features first,
        // the forecast of the tables' final size falls short and they grow again; dense
        // first, it overshoots and the excess is given back.
        let n_rows = 3000;
        for sparse_first in [true, false] {
            let sparse = |f: usize| (f < 15) == sparse_first;
            let cardinality: Vec<usize> =
                (0..30).map(|f| if sparse(f) { 100 } else { 60 }).collect();
            let mut rng = Lcg(if sparse_first { 31 } else { 32 });
            let codes = Array2::from_shape_fn((30, n_rows), |(f, _)| {
                rng.below(if sparse(f) { 3 } else { 60 }) as i32
            });
            let labels = Array1::from_shape_fn(n_rows, |_| rng.below(2) as i64);
            let weights = Array1::from_elem(n_rows, 1.0);
            assert_counts_match_a_tally(&(codes, labels, weights), &cardinality, 2, &pairs(30));
        }
    }

    #[test]
    fn a_subset_of_dense_and_walked_pairs_matches_a_tally() {
        // 12 features: walked pairs (K = 100 x 100 over 600 rows) between dense ones, a
        // subset of the pairs, fractional weights
        let cardinality = [3usize, 100, 2, 4, 100, 2, 3, 2, 5, 2, 3, 2];
        let rows = random_rows(&mut Lcg(99), &cardinality, 600, 3, (0.1, 7));
        let wanted: Vec<(usize, usize)> = pairs(12)
            .into_iter()
            .filter(|&(a, b)| a != 5 || b % 3 != 0)
            .collect();
        assert_counts_match_a_tally(&rows, &cardinality, 3, &wanted);
    }

    #[test]
    fn unwanted_pairs_keep_nothing_and_bad_codes_are_errors() {
        let layout = FeatureLayout::from_cardinalities(&[2, 2, 3]);
        let (y, w) = (array![0_i64, 1], array![1.0, 1.0]);
        let codes = array![[0, 1], [1, 1], [2, 0]];
        let t = count_pairs(codes.view(), y.view(), w.view(), &layout, 2, &[]).unwrap();
        assert_eq!((t.pairs.len(), t.indptr, t.indices.len()), (0, vec![0], 0));
        // only pair (1, 2): its two rows (values of feature 1), nothing for the others
        let t = count_pairs(codes.view(), y.view(), w.view(), &layout, 2, &[(1, 2)]).unwrap();
        assert_eq!((t.pairs, t.indptr), (vec![1, 2], vec![0, 0, 2]));
        assert_eq!(t.indices, vec![0, 2]);
        let layout = FeatureLayout::from_cardinalities(&[2, 2]);
        let bad = count_pairs(
            array![[0, 1], [1, 2]].view(),
            y.view(),
            w.view(),
            &layout,
            2,
            &pairs(2),
        );
        assert!(matches!(
            bad,
            Err(HebError::CodeOutOfRange { feature: 1, .. })
        ));
        // the same with weights 2 (the dense scratch, not bitsets), and a bad code in a
        // feature that is in no counted pair
        let twos = array![2.0, 2.0];
        let layout = FeatureLayout::from_cardinalities(&[2, 2, 2]);
        let codes = array![[0, 1], [1, 2], [0, 1]];
        for (weights, wanted) in [(&twos, vec![(0, 1)]), (&w, vec![(0, 2)])] {
            let bad = count_pairs(codes.view(), y.view(), weights.view(), &layout, 2, &wanted);
            assert!(matches!(
                bad,
                Err(HebError::CodeOutOfRange { feature: 1, .. })
            ));
        }
    }
}
