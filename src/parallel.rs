//! Threads as an explicit budget: every parallel kernel runs inside a local rayon pool
//! sized by the caller's `n_jobs`, never the global pool. The pool is dropped when the
//! call returns, so no worker threads outlive a call (safe across `fork`).

use crate::error::{HebError, Result};

/// Runs `work` inside a fresh rayon pool with `n_threads` workers (at least one).
///
/// # Errors
/// [`HebError::ThreadPool`] when the operating system refuses the threads.
pub fn with_threads<T: Send>(n_threads: usize, work: impl FnOnce() -> T + Send) -> Result<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n_threads.max(1))
        .build()
        .map_err(|e| HebError::ThreadPool(e.to_string()))?;
    Ok(pool.install(work))
}
