//! How the fitted child conditionals are stored, shaped by cardinality: per unordered
//! pair (a, b), and only for the orientations that are modelled ([`Structure::modelled`]).
//!
//! * **Dense** pairs (`K_a K_b C <= DENSE_TABLE_CELLS` and `K_a K_b <= 2 cells + 64`):
//!   each modelled orientation (parent i, child j) keeps the whole parent-major table
//!   `ln P(x_j = v | y = c, x_i = u)` at `(u K_j + v) C + c`, unseen value pairs included
//!   (their `ln m + ln(two-level weight) - ln(N_{c,u} + m) + ln mu_{j,v}`). The scorer
//!   indexes it directly: no search, no logarithm.
//! * **Sparse** pairs (the others): nothing per cell beyond the pair table's counts. Each
//!   modelled orientation keeps one header row (`m_c` for every class, then the two-level
//!   `a` or NaN) and one row per parent value u: the log denominators
//!   `ln(N_{c,u} + m_c)` and the two-level `N_u + a` (NaN otherwise). The scorer computes
//!   a seen cell's `ln(N_{c,u,v} + m_c mu_{u,v}) - ln(N_{c,u} + m_c)` from its counts, and
//!   an unseen one's `ln m_c + ln(a / (N_u + a)) - ln(N_{c,u} + m_c) + ln mu_{j,v}`, with
//!   the same operations as the fit (SPEC eqs. 9-11, [`log_smoothed`]), so the result is
//!   the same number, with memory proportional to the pair tables.
//!
//! Both layouts are ordered by stored pair (the pairs of the pair tables, those the
//! structure models) then orientation, so that fitting in parallel over chunks of
//! consecutive pairs writes disjoint slices. [`TablePlan`] says where each
//! orientation lives; the fit and the scorer both compute it from the layout, the
//! structure and the pair tables, so no offsets are stored.
//!
//! [`log_smoothed`]: crate::smoothing::log_smoothed

use ndarray::Array2;

use super::Structure;
use crate::error::{with_capacity, Result};
use crate::layout::FeatureLayout;
use crate::pair_counts::PairTablesView;

/// Largest `K_a K_b C` stored as dense tables (32 KB per orientation).
pub const DENSE_TABLE_CELLS: usize = 4096;

/// Columns of a sparse orientation's rows: `C + 1`.
pub fn sparse_width(n_classes: usize) -> usize {
    n_classes + 1
}

/// Whether a pair with `cells` stored cells keeps dense tables: small enough, and not
/// mostly empty (so a dense table costs at most about twice the cells it covers).
#[inline]
pub fn dense_pair(k_a: usize, k_b: usize, n_classes: usize, cells: usize) -> bool {
    let joint = k_a * k_b;
    joint * n_classes.max(1) <= DENSE_TABLE_CELLS && joint <= 2 * cells + 64
}

/// The fitted child tables (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct ChildTables {
    /// Dense orientations' tables, concatenated in pair then orientation order.
    pub dense: Vec<f64>,
    /// Sparse orientations' header and parent-value rows, shape (rows, C + 1).
    pub sparse: Array2<f64>,
}

/// Where one orientation's tables live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Not modelled: the Naive Bayes child scores it (or nobody does).
    None,
    /// The dense table starts at this element of [`ChildTables::dense`].
    Dense(usize),
    /// The header row is this row of [`ChildTables::sparse`]; parent value u is row + 1 + u.
    Sparse(usize),
}

/// Where every modelled orientation's tables live, per stored pair in table order.
#[derive(Debug, Clone)]
pub struct TablePlan {
    /// Whether each stored pair is dense, length P.
    pub dense: Vec<bool>,
    /// First dense element of each stored pair, length P + 1.
    pub dense_start: Vec<usize>,
    /// First sparse row of each stored pair, length P + 1.
    pub sparse_start: Vec<usize>,
}

impl TablePlan {
    /// The plan for these pair tables (cells per pair from their row pointers), which
    /// hold the pairs the structure wants (checked by the caller).
    ///
    /// # Errors
    /// [`crate::error::HebError::Allocation`] when its three per-pair vectors cannot be
    /// allocated.
    pub fn new(
        layout: &FeatureLayout,
        structure: &Structure,
        pair_tables: PairTablesView,
        n_classes: usize,
    ) -> Result<Self> {
        let n_pairs = pair_tables.n_pairs();
        let mut plan = TablePlan {
            dense: with_capacity(n_pairs, "AODE storage plan")?,
            dense_start: with_capacity(n_pairs + 1, "AODE storage plan")?,
            sparse_start: with_capacity(n_pairs + 1, "AODE storage plan")?,
        };
        let (mut dense, mut sparse, mut row) = (0usize, 0usize, 0usize);
        plan.dense_start.push(0);
        plan.sparse_start.push(0);
        for (a, b) in pair_tables.pair_list() {
            let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
            let indptr = pair_tables.indptr;
            let cells = (indptr[row + k_a] - indptr[row]) as usize;
            row += k_a;
            let is_dense = dense_pair(k_a, k_b, n_classes, cells);
            plan.dense.push(is_dense);
            for (parent, child, k_parent) in [(a, b, k_a), (b, a, k_b)] {
                if !structure.modelled(parent, child) {
                    continue;
                }
                if is_dense {
                    dense += k_a * k_b * n_classes;
                } else {
                    sparse += k_parent + 1;
                }
            }
            plan.dense_start.push(dense);
            plan.sparse_start.push(sparse);
        }
        Ok(plan)
    }

    /// Elements of the dense tables.
    pub fn dense_len(&self) -> usize {
        *self.dense_start.last().unwrap_or(&0)
    }

    /// Rows of the sparse table.
    pub fn sparse_rows(&self) -> usize {
        *self.sparse_start.last().unwrap_or(&0)
    }

    /// Where orientation `side` (0: the pair's first feature `a` is the parent, 1: `b`)
    /// of stored pair `p = (a, b)` lives.
    #[inline]
    pub fn placement(
        &self,
        p: usize,
        side: usize,
        (a, b): (usize, usize),
        structure: &Structure,
        layout: &FeatureLayout,
        n_classes: usize,
    ) -> Placement {
        let (parent, child) = if side == 0 { (a, b) } else { (b, a) };
        if !structure.modelled(parent, child) {
            return Placement::None;
        }
        let first_modelled = side == 1 && structure.modelled(a, b);
        let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
        if self.dense[p] {
            let skip = if first_modelled {
                k_a * k_b * n_classes
            } else {
                0
            };
            Placement::Dense(self.dense_start[p] + skip)
        } else {
            let skip = if first_modelled { k_a + 1 } else { 0 };
            Placement::Sparse(self.sparse_start[p] + skip)
        }
    }
}
