//! hebnb's core: Naive Bayes on integer-coded categorical data with Dirichlet smoothing
//! whose concentration is chosen by Type-II maximum likelihood (empirical Bayes).
//!
//! The kernels are pure functions over array views and know nothing of Python; the
//! bindings live in `python` behind the `python` feature. "SPEC" in the doc comments is
//! the mathematical contract, `docs/math.md`, with its equation numbers.
//!
//! # Model assumptions
//! Features are conditionally independent given the class (Naive Bayes), each
//! class-conditional feature distribution is categorical with a Dirichlet prior whose
//! mean is fixed (uniform or pooled marginal) and whose concentration is estimated.
//!
//! ```
//! use hebnb::{counts::count_categories, layout::FeatureLayout};
//! use ndarray::array;
//! let layout = FeatureLayout::from_cardinalities(&[2]);
//! let counts = count_categories(
//!     array![[0, 1, 1]].view(), array![0_i64, 1, 1].view(), array![1.0, 1.0, 1.0].view(),
//!     &layout, 2,
//! ).unwrap();
//! assert_eq!(counts.class_totals, vec![1.0, 2.0]);
//! ```

pub mod aode;
pub mod arrow_columns;
pub mod cell_numbers;
mod class_loops;
pub mod counts;
pub mod dirichlet_groups;
pub mod encoding;
pub mod error;
pub mod evidence;
pub mod gamma_differences;
pub mod interrupt;
pub mod layout;
pub mod lbfgs;
pub mod model_lock;
pub mod multinomial;
pub mod mutual_information;
pub mod naive_bayes;
pub mod pair_counts;
pub mod parallel;
pub mod parent_prior;
pub mod scoring;
pub mod shared_rows;
pub mod sign_changes;
pub mod small_solver;
pub mod smoothing;
pub mod solver;
pub mod sparse_rows;
pub mod streaming;
pub mod tempering;
pub mod two_class_weight_fit;
pub mod vocabulary;
pub mod weight_fit;

#[cfg(test)]
mod gamma_difference_reference;
#[cfg(test)]
mod test_random;

#[cfg(feature = "python")]
mod python;
