//! Threads as an explicit budget: every parallel kernel runs inside a local rayon pool of
//! the caller's `n_jobs` threads, never the global pool, so results and CPU use follow
//! `n_jobs` exactly.
//!
//! Building a pool costs about a millisecond, which dominates small calls (predicting a
//! few rows), so pools are kept per thread count and reused. A pool's threads do not
//! survive `fork`: each pool remembers the process that built it, and a forked child
//! builds its own instead of waiting forever on threads that no longer exist.

use std::sync::{Arc, Mutex};

use rayon::ThreadPool;

use crate::error::{HebError, Result};

/// Pools built so far: (process id, thread count, pool).
static POOLS: Mutex<Vec<(u32, usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The pool of `n_threads` workers of this process, built on first use.
fn pool(n_threads: usize) -> Result<Arc<ThreadPool>> {
    let pid = std::process::id();
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    pools.retain(|(owner, _, _)| *owner == pid);
    if let Some((_, _, pool)) = pools.iter().find(|(_, n, _)| *n == n_threads) {
        return Ok(Arc::clone(pool));
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n_threads)
            .build()
            .map_err(|e| HebError::ThreadPool(e.to_string()))?,
    );
    pools.push((pid, n_threads, Arc::clone(&pool)));
    Ok(pool)
}

/// Runs `work` inside the pool of `n_threads` workers (at least one).
///
/// # Errors
/// [`HebError::ThreadPool`] when the operating system refuses the threads.
pub fn with_threads<T: Send>(n_threads: usize, work: impl FnOnce() -> T + Send) -> Result<T> {
    Ok(pool(n_threads.max(1))?.install(work))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_on_the_requested_number_of_threads() {
        for n in [1, 2, 3] {
            assert_eq!(with_threads(n, rayon::current_num_threads).unwrap(), n);
        }
        // the second call reuses the pool
        assert_eq!(with_threads(2, rayon::current_num_threads).unwrap(), 2);
    }
}
