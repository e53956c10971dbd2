//! Cancelling a long kernel (Ctrl-C): a flag that the caller raises and the kernels poll.
//!
//! Every call into the core runs in a thread pool it has to itself for the length of
//! the call ([`crate::parallel`]); each pool owns one [`CancelToken`], and each of its
//! worker threads knows that token. The long loops of the kernels (counting, encoding,
//! concentration solves, scoring, the group classifier's tuning) call [`check`] between
//! chunks of work: once the token is cancelled, [`check`] returns
//! [`HebError::Interrupted`], which the `?` carries out of the kernel. A chunk is a few
//! milliseconds of work, so a cancelled call returns well within a second; the caller
//! then discards the partial result. Outside a pool (the Rust tests, a kernel called
//! directly) nothing is ever cancelled.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{HebError, Result};

/// A cancellation flag shared by the threads working on one call.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every kernel polling this token to stop at its next [`check`].
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Clears the flag before the token's pool takes on a new call.
    pub fn reset(&self) {
        self.0.store(false, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Makes this the token the current thread polls (a pool calls it on each worker
    /// thread as the thread starts).
    pub fn watch_on_this_thread(&self) {
        WATCHED.with(|watched| *watched.borrow_mut() = Some(self.clone()));
    }
}

thread_local! {
    /// The token of the pool this thread works for, if any.
    static WATCHED: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

/// [`HebError::Interrupted`] once the call this thread works for has been cancelled.
///
/// # Errors
/// [`HebError::Interrupted`] when the caller asked the work to stop.
#[inline]
pub fn check() -> Result<()> {
    let cancelled =
        WATCHED.with(|watched| watched.borrow().as_ref().is_some_and(|t| t.is_cancelled()));
    if cancelled {
        Err(HebError::Interrupted)
    } else {
        Ok(())
    }
}

/// Whether the call this thread works for has been cancelled: for loops that cannot
/// return an error, which skip their remaining work and leave [`check`] to the caller.
#[inline]
pub fn cancelled() -> bool {
    check().is_err()
}

/// Polls [`check`] every [`CHECK_EVERY`] items of a loop over `index`: cheap enough to
/// call for every row.
///
/// # Errors
/// [`HebError::Interrupted`] when the caller asked the work to stop.
#[inline]
pub fn check_every(index: usize) -> Result<()> {
    if index % CHECK_EVERY == 0 {
        check()
    } else {
        Ok(())
    }
}

/// Items (rows, cells) between two polls in [`check_every`]: well under a millisecond
/// of work.
pub const CHECK_EVERY: usize = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_token_stops_only_the_threads_watching_it() {
        assert!(check().is_ok(), "no token: never cancelled");
        let token = CancelToken::new();
        token.watch_on_this_thread();
        assert!(check().is_ok());
        token.cancel();
        assert_eq!(check(), Err(HebError::Interrupted));
        assert_eq!(check_every(CHECK_EVERY), Err(HebError::Interrupted));
        assert!(check_every(1).is_ok(), "between polls nothing is read");
        let other = std::thread::spawn(check).join().unwrap();
        assert!(other.is_ok(), "another thread watches no token");
        token.reset();
        assert!(check().is_ok());
    }
}
