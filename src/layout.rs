//! Where each feature's categories live in the flat tables of the core.
//!
//! Features are coded independently (`0..K_f`, `-1` for missing or unknown); tables that
//! hold all features side by side give feature `f` the columns `offsets[f]..offsets[f+1]`.

use crate::error::{HebError, Result};

/// Column ranges of the features in a flat `(.., sum_f K_f)` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureLayout {
    offsets: Vec<usize>,
}

impl FeatureLayout {
    /// Layout from the per-feature cardinalities `K_f`.
    pub fn from_cardinalities(cardinalities: &[usize]) -> Self {
        let mut offsets = Vec::with_capacity(cardinalities.len() + 1);
        offsets.push(0);
        for &k in cardinalities {
            offsets.push(offsets.last().copied().unwrap_or(0) + k);
        }
        Self { offsets }
    }

    /// Layout from cumulative offsets (`offsets[0] = 0`, non-decreasing).
    ///
    /// # Errors
    /// [`HebError::InvalidParameter`] when the offsets do not start at 0 or decrease.
    pub fn from_offsets(offsets: Vec<usize>) -> Result<Self> {
        let valid = offsets.first() == Some(&0) && offsets.windows(2).all(|w| w[0] <= w[1]);
        if !valid {
            return Err(HebError::InvalidParameter(
                "feature offsets must start at 0 and never decrease".into(),
            ));
        }
        // one row of a table over the layout (8-byte entries) must fit the address space
        let n_columns = *offsets.last().unwrap_or(&0);
        if n_columns > isize::MAX as usize / 8 {
            return Err(HebError::Allocation {
                what: "a table row over the feature layout",
                bytes: n_columns as u128 * 8,
            });
        }
        Ok(Self { offsets })
    }

    /// Number of features F.
    pub fn n_features(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total number of categories, the width of a flat table.
    pub fn n_columns(&self) -> usize {
        *self.offsets.last().unwrap_or(&0)
    }

    /// The columns of feature `f`.
    pub fn columns(&self, f: usize) -> std::ops::Range<usize> {
        self.offsets[f]..self.offsets[f + 1]
    }

    /// `K_f`.
    pub fn cardinality(&self, f: usize) -> usize {
        self.offsets[f + 1] - self.offsets[f]
    }

    /// The cumulative offsets.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}
