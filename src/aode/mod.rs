//! AODE and HEB-AODE (SPEC eqs. 7-12, Algorithm 2, and the two-level prior).
//!
//! Scoring (eq. 7), averaged over the q qualifying super-parents so that the result is a
//! joint probability estimate:
//!
//! ```text
//! P(y, x) = 1/q sum over i with N_i(x_i) >= min_parent_count of
//!           P(y, x_i) prod over j != i, x_j present and known, of P(x_j | y, x_i)
//! ```
//!
//! and the Naive Bayes fallback when no super-parent qualifies. Child conditionals of the
//! ordered pair (parent i, child j), from the pair tables of [`crate::pair_counts`]:
//!
//! ```text
//! P(x_j = v | y = c, x_i = u) = (N_{c,u,v} + m_{c,i,j} mu_{u,v}) / (N_{c,u} + m_{c,i,j})
//! ```
//!
//! * Laplace AODE (eq. 9): `m = K_j` and the uniform mean `mu_{u,v} = 1/K_j`.
//! * HEB-AODE, pooled prior (eqs. 10-11): `mu_{u,v} = mu_{j,v}`, the pooled marginal of
//!   X_j, and `m_{c,i,j}` maximises the multi-document evidence whose documents are the
//!   parent values u (fallback `m = K_j` when `max_u N^{(i)}_{c,u} < N0`).
//! * HEB-AODE, two-level prior (SPEC "Beyond the paper"): `a_{i,j}` maximises the
//!   evidence of the class-pooled tables `N_{u,v} = sum_c N_{c,u,v}` with mean `mu_j`;
//!   then `mu_{u,v} = (N_{u,v} + a mu_{j,v}) / (N_u + a)` and `m_{c,i,j}` maximises the
//!   evidence with that per-document mean.
//!
//! [`fit()`] assembles the whole model in one call ([`fit`](mod@fit)): the Naive Bayes child
//! (fallback rows, capped orientations), the parent term ([`crate::parent_prior`]) and
//! every child table, stored dense or sparse by cardinality ([`storage`]);
//! [`score`](mod@score) scores rows with it, parent by parent. Which orientations are
//! modelled is the [`Structure`]: super-parents (all features, or the `max_parents`
//! with the highest mutual information with the class) and the paper's memory cap.

pub mod fit;
pub mod leave_one_out;
pub mod parent_terms;
pub mod score;
pub mod storage;

use crate::error::{check_len, with_capacity, HebError, Result};
use crate::layout::FeatureLayout;
use crate::pair_counts::PairTablesView;
use crate::solver::SolverSettings;

pub use fit::{fit, log_evidence, AodeCounts, AodeFit};
pub use leave_one_out::LeftOut;
pub use parent_terms::{parent_terms, CellRequest, ParentTerms};
pub use score::{joint_log_likelihood, AodeModel};

/// How the child conditionals are smoothed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildSmoothing {
    /// `m = K_j` toward the uniform mean `1/K_j`: Laplace AODE (eq. 9).
    Laplace,
    /// Type-II ML `m_{c,i,j}` toward the pooled marginal of the child (eqs. 10-11).
    HebPooled,
    /// Type-II ML at two levels: class-pooled conditional, then class (SPEC two-level prior).
    HebTwoLevel,
}

/// How the super-parent term `P(y, x_i = u)` is smoothed ([`crate::parent_prior`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentSmoothing {
    /// Eq. 8's add-one.
    Laplace,
    /// `P(y | u)` shrunk toward the class distribution, `m_i` by Type-II ML.
    Heb,
}

/// Parameters of [`fit()`].
#[derive(Debug, Clone, PartialEq)]
pub struct AodeParams {
    pub smoothing: ChildSmoothing,
    pub parent_smoothing: ParentSmoothing,
    /// `N0`: below this largest parent-value count of a class, `m = K_j` (SPEC).
    pub min_count: f64,
    pub solver: SolverSettings,
    /// `ln pi_c` of the Naive Bayes fallback, length C.
    pub class_log_prior: Vec<f64>,
    /// Whether the class prior replaces eq. 8's class part in the parent term
    /// (`fit_prior=False` or a user `class_prior`).
    pub replace_class_prior: bool,
}

/// Which (parent, child) orientations are modelled by a pair table.
#[derive(Debug, Clone, Copy)]
pub struct Structure<'a> {
    /// Row-major F x F mask of capped orientations (parent, child): they use the Naive
    /// Bayes child `P(x_j | y)` (SPEC memory cap).
    pub capped: &'a [bool],
    /// Which features act as super-parents (length F).
    pub parents: &'a [bool],
}

impl Structure<'_> {
    /// Checks the masks against the number of features.
    ///
    /// # Errors
    /// [`crate::error::HebError::ShapeMismatch`] when a mask has the wrong length.
    pub fn check(&self, n_features: usize) -> Result<()> {
        check_len("capped mask", n_features * n_features, self.capped.len())?;
        check_len("super-parent mask", n_features, self.parents.len())
    }

    /// Whether orientation (parent, child) reads the pair table.
    #[inline]
    pub fn modelled(&self, parent: usize, child: usize) -> bool {
        let n_features = self.parents.len();
        parent != child && self.parents[parent] && !self.capped[parent * n_features + child]
    }

    /// Whether the unordered pair (a, b) needs a table (either orientation modelled).
    #[inline]
    pub fn wanted(&self, a: usize, b: usize) -> bool {
        self.modelled(a, b) || self.modelled(b, a)
    }

    /// Calls `visit(a, b)` for every wanted pair `a < b`, in table order. A pair needs a
    /// super-parent, so for a feature `a` that is none only the super-parents `b > a` are
    /// tried: O(k F) with k super-parents, not O(F^2).
    pub fn visit_wanted_pairs(&self, mut visit: impl FnMut(usize, usize)) {
        let n_features = self.parents.len();
        let parents: Vec<usize> = (0..n_features).filter(|&f| self.parents[f]).collect();
        for a in 0..n_features {
            if self.parents[a] {
                for b in a + 1..n_features {
                    if self.wanted(a, b) {
                        visit(a, b);
                    }
                }
            } else {
                let later = parents.partition_point(|&b| b <= a);
                for &b in &parents[later..] {
                    if self.wanted(a, b) {
                        visit(a, b);
                    }
                }
            }
        }
    }

    /// The wanted pairs `(a, b)`, `a < b`, in table order: the pairs whose tables are
    /// counted and stored ([`crate::pair_counts`]).
    ///
    /// # Errors
    /// [`crate::error::HebError::Allocation`] when the list cannot be allocated.
    pub fn wanted_pairs(&self) -> Result<Vec<(usize, usize)>> {
        let mut n_pairs = 0;
        self.visit_wanted_pairs(|_, _| n_pairs += 1);
        let mut list = with_capacity(n_pairs, "AODE pair list")?;
        self.visit_wanted_pairs(|a, b| list.push((a, b)));
        Ok(list)
    }

    /// The rank of every super-parent among the super-parents (in feature order), `None`
    /// for the other features: the row of the per-super-parent diagnostics.
    pub fn parent_ranks(&self) -> Vec<Option<usize>> {
        let mut rank = 0;
        self.parents
            .iter()
            .map(|&parent| {
                parent.then(|| {
                    rank += 1;
                    rank - 1
                })
            })
            .collect()
    }

    /// Checks that the pair tables store exactly the wanted pairs, in order.
    ///
    /// # Errors
    /// [`crate::error::HebError::InvalidParameter`] when they store other pairs.
    pub fn check_stored(&self, tables: &PairTablesView) -> Result<()> {
        let (mut p, mut differs) = (0, false);
        self.visit_wanted_pairs(|a, b| {
            differs |= p >= tables.n_pairs() || tables.pair(p) != (a, b);
            p += 1;
        });
        if differs || p != tables.n_pairs() {
            return Err(HebError::InvalidParameter(
                "the pair tables were not counted for the pairs this structure models".into(),
            ));
        }
        Ok(())
    }

    /// Number of super-parents.
    pub fn n_parents(&self) -> usize {
        self.parents.iter().filter(|&&p| p).count()
    }
}

/// What a fit will hold at its peak, in bytes, by part ([`planned_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlannedBytes {
    /// Pair tables (child value and class counts per cell, CSR row pointers), counted
    /// twice: the per-pair blocks (f64 counts) and the assembled table (u32 whole counts
    /// or f64) coexist while counting.
    pub pair_tables: u128,
    /// The fitted child tables of the modelled orientations ([`storage`]): a dense
    /// pair's whole tables, a sparse pair's per-parent-value rows.
    pub child_tables: u128,
    /// Per-(class, super-parent, child) diagnostics: concentration, log evidence, steps,
    /// convergence (and their transposed copies while fitting), and the two-level
    /// concentration.
    pub diagnostics: u128,
    /// Per-category tables: counts, child mean, Naive Bayes and parent log-probabilities.
    pub category_tables: u128,
    /// The scorer's plan of where each stored pair's tables live, its direct index of
    /// sparse pairs and its per-chunk buffers.
    pub scoring: u128,
}

impl PlannedBytes {
    /// The sum of the parts.
    pub fn total(&self) -> u128 {
        self.pair_tables
            + self.child_tables
            + self.diagnostics
            + self.category_tables
            + self.scoring
    }
}

/// An upper bound of the memory a fit (and a scoring pass) of `n_rows` rows will hold,
/// computed before anything is allocated, so that the caller can refuse a fit beyond its
/// memory instead of failing halfway. `stored_cells` are the cells already held (a
/// `partial_fit` adds to them). A pair stores at most `min(S, K_a K_b)` cells.
/// `whole_counts`: the tables will hold `u32` counts ([`crate::pair_counts::whole_weights`]),
/// 4 bytes per class and cell instead of 8 (the per-pair blocks of counting are `f64`).
pub fn planned_bytes(
    layout: &FeatureLayout,
    structure: &Structure,
    n_rows: usize,
    n_classes: usize,
    stored_cells: usize,
    whole_counts: bool,
) -> PlannedBytes {
    let n_features = layout.n_features() as u128;
    let c = n_classes as u128;
    let count_bytes: u128 = if whole_counts { 4 } else { 8 };
    let mut cells: u128 = stored_cells as u128;
    let mut table_rows: u128 = 0;
    let mut child_tables: u128 = 0;
    let mut index: u128 = 0;
    let mut n_pairs: u128 = 0;
    let sparse_width = storage::sparse_width(n_classes) as u128;
    structure.visit_wanted_pairs(|a, b| {
        let (k_a, k_b) = (layout.cardinality(a), layout.cardinality(b));
        table_rows += k_a as u128;
        n_pairs += 1;
        let (k_a, k_b) = (k_a as u128, k_b as u128);
        let pair_cells = (n_rows as u128).min(k_a * k_b);
        cells += pair_cells;
        // dense tables where they may be chosen, else the sparse rows: at most the larger
        let may_be_dense = storage::dense_pair(
            k_a as usize,
            k_b as usize,
            n_classes,
            pair_cells.min(usize::MAX as u128) as usize,
        );
        // the scorer's direct index of a sparse pair: 4 bytes per (u, v) where
        // K_a K_b <= 4 cells + 64
        if !may_be_dense && k_a * k_b <= 4 * pair_cells + 64 {
            index += 4 * k_a * k_b;
        }
        for (parent, child, k_parent) in [(a, b, k_a), (b, a, k_b)] {
            if structure.modelled(parent, child) {
                let sparse = 8 * (k_parent + 1) * sparse_width;
                let dense = if may_be_dense { 8 * k_a * k_b * c } else { 0 };
                child_tables += sparse.max(dense);
            }
        }
    });
    let n_parents = structure.n_parents() as u128;
    let width = layout.n_columns() as u128;
    // the direct index, the plan (a flag and two offsets per pair, an index per pair,
    // the row offsets), each super-parent's readers of its children (up to 48 bytes a
    // child) and each thread's chunk of per-parent terms (about 8 MB, see
    // `score::rows_per_chunk`)
    let threads = rayon::current_num_threads().max(1) as u128;
    PlannedBytes {
        // cells and the pair list twice (the per-pair blocks, f64 counts, and the
        // assembled tables, u32 or f64 counts), row pointers, the row bitsets of the
        // small features while counting
        pair_tables: cells * (4 + 8 * c)
            + cells * (4 + count_bytes * c)
            + 16 * n_pairs
            + 8 * (table_rows + 1)
            + crate::pair_counts::bitset_bytes(layout, n_rows, n_classes),
        child_tables,
        // and while fitting, the transposed steps, concentrations and flags
        diagnostics: n_parents * n_features * (42 * c + 8),
        category_tables: width * (8 * c * 5 + 16),
        scoring: index + 49 * n_pairs + 48 * n_parents * n_features + threads * (9 << 20),
    }
}

#[cfg(test)]
mod tests;
