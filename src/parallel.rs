//! Threads as an explicit budget: every parallel kernel runs inside a local rayon pool of
//! the caller's `n_jobs` threads, never the global pool, so results and CPU use follow
//! `n_jobs` exactly.
//!
//! Building a pool costs about a millisecond, which dominates small calls (predicting a
//! few rows), so pools are kept and reused. A call leases a pool of the thread count it
//! wants for its whole length ([`lease`]): concurrent calls never share one, so each pool's
//! [`CancelToken`] stops exactly the call that owns it (Ctrl-C, [`crate::interrupt`]).
//!
//! Fork safety: a forked child inherits the registry as the parent's threads left it,
//! possibly with its lock held by a thread that does not exist in the child, and with
//! pools whose worker threads do not exist either. The registry therefore belongs to
//! one process: it is reached through an atomic pointer, without a lock, and a process
//! whose id differs from the registry's builds a fresh registry and never touches the
//! inherited one. The parent's registry and pools are leaked in the child (never
//! dropped: dropping a pool would wait on threads that are gone).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;

use rayon::ThreadPool;

use crate::error::{HebError, Result};
use crate::interrupt::CancelToken;

/// One pool with its cancellation token; `busy` while a call leases it.
struct Slot {
    n_threads: usize,
    pool: ThreadPool,
    token: CancelToken,
    busy: AtomicBool,
}

/// The pools of one process.
struct Registry {
    pid: u32,
    slots: Mutex<Vec<&'static Slot>>,
}

/// This process's registry (null before the first call).
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(std::ptr::null_mut());

/// The registry of the current process, built on first use and again after a fork.
fn registry() -> &'static Registry {
    let pid = std::process::id();
    loop {
        let current = REGISTRY.load(Ordering::Acquire);
        // SAFETY: registries are leaked, never freed, so a non-null pointer stays valid.
        if let Some(registry) = unsafe { current.as_ref() } {
            if registry.pid == pid {
                return registry;
            }
        }
        let fresh = Box::into_raw(Box::new(Registry {
            pid,
            slots: Mutex::new(Vec::new()),
        }));
        match REGISTRY.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // the inherited registry (if any) is leaked on purpose, see the module doc
            // SAFETY: just published, and leaked from now on.
            Ok(_) => return unsafe { &*fresh },
            // another thread of this process published one first: use that
            // SAFETY: `fresh` was never shared.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
}

/// A pool of `n_threads` workers held by one call; given back when dropped.
pub struct Lease {
    slot: &'static Slot,
}

impl Lease {
    /// Runs `work` on the pool's threads and waits for it.
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        self.slot.pool.install(work)
    }

    /// The pool itself, to spawn work while the calling thread does something else.
    pub fn pool(&self) -> &ThreadPool {
        &self.slot.pool
    }

    /// The token that cancels the work of this lease.
    pub fn token(&self) -> &CancelToken {
        &self.slot.token
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.slot.busy.store(false, Ordering::Release);
    }
}

/// Threads a pool has at most (unless the machine has more than half as many cores).
const MAX_POOL_THREADS: usize = 256;

/// Leases an idle pool of `n_threads` workers (at least one, at most
/// `MAX_POOL_THREADS` or twice the cores), building one when all the pools of that size
/// are in use. Its token starts cleared.
///
/// # Errors
/// [`HebError::ThreadPool`] when the operating system refuses the threads.
pub fn lease(n_threads: usize) -> Result<Lease> {
    // results do not depend on the number of threads, so a request far beyond the
    // machine's cores gets a pool it can build (each size is kept for the process)
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n_threads = n_threads.clamp(1, (2 * cores).max(MAX_POOL_THREADS));
    let registry = registry();
    let mut slots = registry
        .slots
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let idle = slots.iter().find(|slot| {
        slot.n_threads == n_threads
            && slot
                .busy
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    });
    let slot = match idle {
        Some(slot) => *slot,
        None => {
            let token = CancelToken::new();
            let watched = token.clone();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n_threads)
                .start_handler(move |_| watched.watch_on_this_thread())
                .build()
                .map_err(|e| HebError::ThreadPool(e.to_string()))?;
            let slot: &'static Slot = Box::leak(Box::new(Slot {
                n_threads,
                pool,
                token,
                busy: AtomicBool::new(true),
            }));
            slots.push(slot);
            slot
        }
    };
    slot.token.reset();
    Ok(Lease { slot })
}

/// Whether the calling thread is a worker of a rayon pool (here always a leased one).
/// A kernel that may also run on the calling thread (a call too small to hand to a
/// pool: the inline scoring of `crate::python`, or a check run before any pool is
/// leased) iterates in parallel only inside one: outside, a parallel iterator of more
/// than one piece goes to rayon's global pool, which ignores `n_jobs`, and whose threads
/// a forked child does not have (its call waited for them forever).
pub fn in_a_pool() -> bool {
    rayon::current_thread_index().is_some()
}

/// Runs `work` inside a pool of `n_threads` workers (at least one).
///
/// # Errors
/// [`HebError::ThreadPool`] when the operating system refuses the threads.
pub fn with_threads<T: Send>(n_threads: usize, work: impl FnOnce() -> T + Send) -> Result<T> {
    Ok(lease(n_threads)?.install(work))
}

/// `values` cut into one disjoint part per range, for writers in parallel: part `k` owns
/// `(bounds[k + 1] - bounds[k]) * width` items from `bounds[k] * width` on (`bounds`
/// rising from 0 to at most `values.len() / width`), returned as `(k, part)`.
///
/// # Errors
/// [`HebError::Allocation`] for the list of parts.
pub(crate) fn split_by_bounds<'v, T>(
    mut values: &'v mut [T],
    bounds: &[usize],
    width: usize,
) -> Result<Vec<(usize, &'v mut [T])>> {
    let mut parts = crate::error::with_capacity(bounds.len().saturating_sub(1), "parts")?;
    for (k, bound) in bounds.windows(2).enumerate() {
        let (part, rest) = std::mem::take(&mut values).split_at_mut((bound[1] - bound[0]) * width);
        parts.push((k, part));
        values = rest;
    }
    Ok(parts)
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

    #[test]
    fn concurrent_leases_get_different_pools_and_a_cancel_stops_only_its_own() {
        let first = lease(2).unwrap();
        let second = lease(2).unwrap();
        assert!(!std::ptr::eq(first.slot, second.slot));
        first.token().cancel();
        assert_eq!(
            first.install(crate::interrupt::check),
            Err(HebError::Interrupted)
        );
        assert!(second.install(crate::interrupt::check).is_ok());
        let slot = first.slot;
        drop(first);
        // given back, then leased again with a cleared token
        let again = (0..8).map(|_| lease(2).unwrap()).collect::<Vec<_>>();
        assert!(again.iter().any(|l| std::ptr::eq(l.slot, slot)));
        assert!(again
            .iter()
            .all(|l| l.install(crate::interrupt::check).is_ok()));
    }
}
