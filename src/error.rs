//! The one error type of the core. Every fallible kernel returns [`Result`]; the
//! Python bindings map each variant to a Python exception in exactly one place.

use std::fmt;

/// What can go wrong in a kernel. Variants carry what the message needs.
#[derive(Debug, Clone, PartialEq)]
pub enum HebError {
    /// Two arrays that must agree in a dimension do not.
    ShapeMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    /// A category code lies outside `-1..K_f` for its feature.
    CodeOutOfRange {
        feature: usize,
        code: i64,
        n_categories: usize,
    },
    /// A class index lies outside `0..C`.
    ClassOutOfRange { class: i64, n_classes: usize },
    /// A parameter is outside its valid range.
    InvalidParameter(String),
    /// A table would need more memory than can be allocated.
    Allocation { what: &'static str, bytes: u128 },
    /// The thread pool could not be built.
    ThreadPool(String),
    /// The caller cancelled the work (Ctrl-C, [`crate::interrupt`]).
    Interrupted,
}

impl fmt::Display for HebError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HebError::ShapeMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what}: expected {expected}, found {found}"),
            HebError::CodeOutOfRange {
                feature,
                code,
                n_categories,
            } => write!(
                f,
                "feature {feature}: category code {code} outside -1..{n_categories}"
            ),
            HebError::ClassOutOfRange { class, n_classes } => {
                write!(f, "class index {class} outside 0..{n_classes}")
            }
            HebError::InvalidParameter(message) => write!(f, "{message}"),
            HebError::Allocation { what, bytes } => write!(
                f,
                "cannot allocate {bytes} bytes for {what}: beyond what memory allows"
            ),
            HebError::ThreadPool(message) => write!(f, "cannot start the thread pool: {message}"),
            HebError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for HebError {}

/// The core's result type.
pub type Result<T> = std::result::Result<T, HebError>;

/// [`HebError::CodeOutOfRange`] for `code` of `feature`, which has `n_categories` values.
/// Cold: it is built once, on the way out of a counting or scoring loop.
#[cold]
pub fn code_out_of_range(feature: usize, code: i32, n_categories: usize) -> HebError {
    HebError::CodeOutOfRange {
        feature,
        code: i64::from(code),
        n_categories,
    }
}

/// [`HebError::CodeOutOfRange`] for the first of `codes` (feature `feature`) at or beyond
/// its `n_categories` values; negative codes are missing values and pass.
pub fn check_code_range<'a>(
    feature: usize,
    codes: impl IntoIterator<Item = &'a i32>,
    n_categories: usize,
) -> Result<()> {
    match codes
        .into_iter()
        .find(|&&code| code >= 0 && code as usize >= n_categories)
    {
        Some(&code) => Err(code_out_of_range(feature, code, n_categories)),
        None => Ok(()),
    }
}

/// [`HebError::ShapeMismatch`] unless `found == expected`.
pub fn check_len(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(HebError::ShapeMismatch {
            what,
            expected,
            found,
        })
    }
}

/// A zero-filled `Vec<f64>` of `len` elements, or [`HebError::Allocation`] when the
/// memory cannot be had (instead of aborting the process).
pub fn zeroed(len: usize, what: &'static str) -> Result<Vec<f64>> {
    filled(len, 0.0, what)
}

/// A `Vec` of `len` copies of `value`, or [`HebError::Allocation`] when the memory
/// cannot be had (instead of aborting the process).
pub fn filled<T: Clone>(len: usize, value: T, what: &'static str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    grow_to(&mut v, len, value, what)?;
    Ok(v)
}

/// Lengthens `v` to `len` elements with copies of `value`, or [`HebError::Allocation`]
/// when the memory cannot be had (instead of aborting the process).
pub fn grow_to<T: Clone>(v: &mut Vec<T>, len: usize, value: T, what: &'static str) -> Result<()> {
    v.try_reserve_exact(len.saturating_sub(v.len()))
        .map_err(|_| HebError::Allocation {
            what,
            bytes: (len as u128) * (std::mem::size_of::<T>() as u128),
        })?;
    v.resize(len, value);
    Ok(())
}

/// Element types whose all-zero bytes are a value (`0.0`, `0`, `false`), so that their
/// vectors can come from the allocator's zeroed memory.
///
/// # Safety
/// Implement only for types whose all-zero bit pattern is a valid value.
pub unsafe trait ZeroBytes: Copy {}

// SAFETY: all-zero bytes are 0.0, 0 and false.
unsafe impl ZeroBytes for f64 {}
// SAFETY: as above.
unsafe impl ZeroBytes for i64 {}
// SAFETY: as above.
unsafe impl ZeroBytes for bool {}
// SAFETY: as above.
unsafe impl ZeroBytes for i32 {}
// SAFETY: as above.
unsafe impl ZeroBytes for u32 {}

/// A vector of `len` zeros from the allocator's zeroed memory, or
/// [`HebError::Allocation`]. Its pages are first touched by whichever thread writes them
/// (large blocks come zeroed from the kernel), not all by the caller as with [`filled`]:
/// page faults are a large share of filling fresh memory, and threads share them.
pub fn untouched_zeros<T: ZeroBytes>(len: usize, what: &'static str) -> Result<Vec<T>> {
    let error = HebError::Allocation {
        what,
        bytes: len as u128 * std::mem::size_of::<T>() as u128,
    };
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| error.clone())?;
    // SAFETY: `layout` has a non-zero size (`len > 0`, and the implementors are not
    // zero-sized); the null check below handles failure.
    let pointer = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if pointer.is_null() {
        return Err(error);
    }
    // SAFETY: allocated by the global allocator with the layout of `len` values of `T`
    // (what a Vec of capacity `len` uses), all bytes zero, which `ZeroBytes` makes a value.
    Ok(unsafe { Vec::from_raw_parts(pointer, len, len) })
}

/// Refuses sample weights that are not finite and non-negative (the counts they add to
/// would be NaN or negative).
pub fn check_weights<'a>(weights: impl IntoIterator<Item = &'a f64>) -> Result<()> {
    match weights.into_iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
        Some(bad) => Err(HebError::InvalidParameter(format!(
            "sample weights must be finite and non-negative, found {bad}"
        ))),
        None => Ok(()),
    }
}

/// `rows * columns` entries of a table, or [`HebError::Allocation`] (of 8-byte entries)
/// when the product does not fit in `usize`: a table that large cannot be allocated.
pub fn entries(rows: usize, columns: usize, what: &'static str) -> Result<usize> {
    rows.checked_mul(columns).ok_or(HebError::Allocation {
        what,
        bytes: rows as u128 * columns as u128 * 8,
    })
}

/// A `shape` table whose entries are `entry((row, column))`, filled row by row, or
/// [`HebError::Allocation`] when the memory cannot be had (instead of aborting the
/// process, as `Array2::from_shape_fn` would).
pub fn table_from_fn<T>(
    shape: (usize, usize),
    what: &'static str,
    mut entry: impl FnMut((usize, usize)) -> T,
) -> Result<ndarray::Array2<T>> {
    let mut flat = with_capacity(entries(shape.0, shape.1, what)?, what)?;
    for row in 0..shape.0 {
        flat.extend((0..shape.1).map(|column| entry((row, column))));
    }
    ndarray::Array2::from_shape_vec(shape, flat)
        .map_err(|e| HebError::InvalidParameter(e.to_string()))
}

/// An empty `Vec` with room for `len` items, or [`HebError::Allocation`].
pub fn with_capacity<T>(len: usize, what: &'static str) -> Result<Vec<T>> {
    let bytes = (len as u128) * (std::mem::size_of::<T>() as u128);
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| HebError::Allocation { what, bytes })?;
    Ok(v)
}
