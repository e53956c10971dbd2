//! The lock every estimator keeps: readers share the model, an update has it alone.
//!
//! Taking it and giving it back are single calls from Python, and a thread gives back
//! everything it took since it last counted its holds ([`ModelLock::release_to`]), so
//! that a Ctrl-C landing as the lock is taken never leaves it held (see
//! `src/python/model_guard.rs`). Here it is only the bookkeeping and the waiting: who
//! holds the lock, how often, who waits.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::thread::{self, ThreadId};
use std::time::Duration;

/// What a thread takes the lock for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A thread asked to write while it reads: it would wait for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteWhileReading;

/// Who holds a [`ModelLock`], and how many threads wait to write.
#[derive(Debug, Default)]
struct Holders {
    /// Per reading thread, how many times it holds the lock (nested reads).
    readers: Vec<(ThreadId, usize)>,
    /// The writing thread and how many times it holds the lock (nested updates or reads).
    writer: Option<(ThreadId, usize)>,
    /// Threads waiting to write: new readers wait behind them, so a steady stream of
    /// reads cannot starve an update.
    writers_waiting: usize,
}

impl Holders {
    /// Takes the lock once more for a thread that holds it already. `Ok(false)` when the
    /// thread holds nothing.
    fn reenter(&mut self, me: ThreadId, access: Access) -> Result<bool, WriteWhileReading> {
        if let Some((writer, depth)) = &mut self.writer {
            if *writer == me {
                *depth += 1;
                return Ok(true);
            }
        }
        match self.readers.iter_mut().find(|(reader, _)| *reader == me) {
            Some(_) if access == Access::Write => Err(WriteWhileReading),
            Some((_, depth)) => {
                *depth += 1;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether a thread holding nothing may take the lock for `access` now.
    fn free_for(&self, access: Access) -> bool {
        match access {
            Access::Read => self.writer.is_none() && self.writers_waiting == 0,
            Access::Write => self.writer.is_none() && self.readers.is_empty(),
        }
    }

    /// Takes the lock for a thread holding nothing (a writer counted among the waiting
    /// ones), if it is free for `access`.
    fn try_take(&mut self, me: ThreadId, access: Access) -> bool {
        if !self.free_for(access) {
            return false;
        }
        match access {
            Access::Read => self.readers.push((me, 1)),
            Access::Write => {
                self.writers_waiting -= 1;
                self.writer = Some((me, 1));
            }
        }
        true
    }

    /// Gives back one hold of `me`; true when that freed the lock for someone else.
    fn release(&mut self, me: ThreadId) -> bool {
        if let Some((writer, depth)) = &mut self.writer {
            if *writer == me {
                *depth -= 1;
                if *depth == 0 {
                    self.writer = None;
                }
                return self.writer.is_none();
            }
        }
        if let Some(at) = self.readers.iter().position(|(reader, _)| *reader == me) {
            self.readers[at].1 -= 1;
            if self.readers[at].1 == 0 {
                self.readers.swap_remove(at);
                return self.readers.is_empty();
            }
        }
        false
    }

    /// How many times `me` holds the lock (0: not at all).
    fn holds_of(&self, me: ThreadId) -> usize {
        match self.writer {
            Some((writer, depth)) if writer == me => depth,
            _ => self
                .readers
                .iter()
                .find(|(reader, _)| *reader == me)
                .map_or(0, |(_, depth)| *depth),
        }
    }

    fn held_by(&self, me: ThreadId) -> bool {
        self.writer.is_some_and(|(writer, _)| writer == me)
            || self.readers.iter().any(|(reader, _)| *reader == me)
    }
}

/// A readers-writer lock for one model: any number of threads read it at once, or one
/// thread updates it, which waits for the readers inside to leave and lets no new reader
/// in meanwhile. Re-entrant: a thread holding it may take it again, except to write
/// while it reads.
///
/// Taking it is [`ModelLock::enter`], then, when that says to wait, [`ModelLock::wait`]
/// in slices until it is taken or the caller gives up ([`ModelLock::give_up`]): the
/// caller looks for its own reasons to stop (Ctrl-C) between slices.
#[derive(Debug, Default)]
pub struct ModelLock {
    holders: Mutex<Holders>,
    changed: Condvar,
}

impl ModelLock {
    pub fn new() -> Self {
        Self::default()
    }

    fn holders(&self) -> MutexGuard<'_, Holders> {
        // nothing panics while holding it, so a poisoned lock still holds valid counts
        self.holders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lock for `access` if the calling thread holds it already or it is
    /// free: `Ok(true)`. `Ok(false)`: the thread must [`wait`](Self::wait) (a writer now
    /// counts as waiting, holding new readers back).
    ///
    /// # Errors
    /// [`WriteWhileReading`] when the thread reads the model and asks to write.
    pub fn enter(&self, access: Access) -> Result<bool, WriteWhileReading> {
        let me = thread::current().id();
        let mut holders = self.holders();
        if holders.reenter(me, access)? {
            return Ok(true);
        }
        if access == Access::Write {
            holders.writers_waiting += 1;
        }
        Ok(holders.try_take(me, access))
    }

    /// Waits at most `slice` for the lock, after an [`enter`](Self::enter) that said to
    /// wait; true once taken.
    pub fn wait(&self, access: Access, slice: Duration) -> bool {
        let me = thread::current().id();
        let holders = self.holders();
        let (mut holders, _) = self
            .changed
            .wait_timeout_while(holders, slice, |holders| !holders.free_for(access))
            .unwrap_or_else(PoisonError::into_inner);
        holders.try_take(me, access)
    }

    /// Stops waiting, after an [`enter`](Self::enter) that said to wait and no
    /// successful [`wait`](Self::wait).
    pub fn give_up(&self, access: Access) {
        if access == Access::Write {
            self.holders().writers_waiting -= 1;
            // readers held back by this writer may go in now
            self.changed.notify_all();
        }
    }

    /// Gives back one hold of the calling thread.
    pub fn release(&self) {
        if self.holders().release(thread::current().id()) {
            self.changed.notify_all();
        }
    }

    /// How many times the calling thread holds the lock (nested holds count each).
    pub fn holds(&self) -> usize {
        self.holders().holds_of(thread::current().id())
    }

    /// Gives back the calling thread's holds beyond its first `kept`: the release that
    /// matches an [`enter`](Self::enter) whether or not that one returned, given the
    /// [`holds`](Self::holds) from before it.
    pub fn release_to(&self, kept: usize) {
        let me = thread::current().id();
        let mut holders = self.holders();
        let mut freed = false;
        while holders.holds_of(me) > kept {
            freed |= holders.release(me);
        }
        drop(holders);
        if freed {
            self.changed.notify_all();
        }
    }

    /// Whether the calling thread holds the lock, for reading or writing.
    pub fn held(&self) -> bool {
        self.holders().held_by(thread::current().id())
    }

    /// Whether the calling thread holds the lock for writing.
    pub fn held_for_writing(&self) -> bool {
        let me = thread::current().id();
        self.holders()
            .writer
            .is_some_and(|(writer, _)| writer == me)
    }

    /// Whether some thread may hold the lock for writing: it does, or its bookkeeping is
    /// busy. Never waits, so a process forked while another thread held the bookkeeping
    /// can still ask (that thread does not exist in it, and would never let go).
    pub fn maybe_written(&self) -> bool {
        match self.holders.try_lock() {
            Ok(holders) => holders.writer.is_some(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().writer.is_some(),
            Err(TryLockError::WouldBlock) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;

    const SLICE: Duration = Duration::from_millis(20);

    /// Runs `step` on a new thread and returns what it sends back.
    fn on_other_thread<T: Send + 'static>(step: impl FnOnce() -> T + Send + 'static) -> T {
        thread::spawn(step).join().unwrap()
    }

    #[test]
    fn readers_share_the_lock_and_a_writer_waits_for_them() {
        let lock = Arc::new(ModelLock::new());
        assert_eq!(lock.enter(Access::Read), Ok(true));
        let other = Arc::clone(&lock);
        assert!(on_other_thread(move || {
            let shared = other.enter(Access::Read) == Ok(true);
            other.release();
            shared
        }));
        let (told, heard) = mpsc::channel();
        let writer = Arc::clone(&lock);
        let handle = thread::spawn(move || {
            assert_eq!(writer.enter(Access::Write), Ok(false));
            told.send(()).unwrap();
            while !writer.wait(Access::Write, SLICE) {}
            let held = writer.held();
            writer.release();
            held
        });
        heard.recv().unwrap();
        // the waiting writer holds a new reader back
        let reader = Arc::clone(&lock);
        assert!(on_other_thread(move || !reader.wait(Access::Read, SLICE)));
        lock.release();
        assert!(handle.join().unwrap());
        assert!(!lock.held());
        assert_eq!(lock.enter(Access::Write), Ok(true));
        lock.release();
    }

    #[test]
    fn a_holder_reenters_and_frees_the_lock_with_its_last_release() {
        let lock = Arc::new(ModelLock::new());
        assert_eq!(lock.enter(Access::Write), Ok(true));
        assert_eq!(lock.enter(Access::Read), Ok(true));
        assert_eq!(lock.enter(Access::Write), Ok(true));
        lock.release();
        lock.release();
        let other = Arc::clone(&lock);
        assert!(on_other_thread(
            move || other.enter(Access::Read) == Ok(false)
        ));
        lock.release();
        assert!(!lock.held());
        let other = Arc::clone(&lock);
        assert!(on_other_thread(move || other.wait(Access::Read, SLICE)));
    }

    #[test]
    fn it_tells_a_writer_from_a_reader_and_a_busy_lock_from_a_free_one() {
        let lock = Arc::new(ModelLock::new());
        assert!(!lock.maybe_written());
        assert_eq!(lock.enter(Access::Read), Ok(true));
        assert!(lock.held() && !lock.held_for_writing() && !lock.maybe_written());
        lock.release();
        assert_eq!(lock.enter(Access::Write), Ok(true));
        assert!(lock.held_for_writing() && lock.maybe_written());
        let other = Arc::clone(&lock);
        assert!(on_other_thread(
            move || other.maybe_written() && !other.held_for_writing()
        ));
        lock.release();
        // bookkeeping held by someone: busy
        let holders = lock.holders();
        assert!(lock.maybe_written());
        drop(holders);
        assert!(!lock.maybe_written());
    }

    #[test]
    fn release_to_gives_back_the_holds_beyond_a_count() {
        let lock = Arc::new(ModelLock::new());
        assert_eq!(lock.holds(), 0);
        assert_eq!(lock.enter(Access::Write), Ok(true));
        let kept = lock.holds();
        assert_eq!(lock.enter(Access::Read), Ok(true));
        assert_eq!(lock.enter(Access::Write), Ok(true));
        assert_eq!(lock.holds(), 3);
        lock.release_to(kept);
        assert_eq!(lock.holds(), 1);
        lock.release_to(kept); // nothing beyond: nothing released
        assert!(lock.held_for_writing());
        lock.release_to(0);
        assert!(!lock.held() && !lock.maybe_written());
        // a reader's nested holds alike
        assert_eq!(lock.enter(Access::Read), Ok(true));
        assert_eq!(lock.enter(Access::Read), Ok(true));
        lock.release_to(0);
        let other = Arc::clone(&lock);
        assert!(on_other_thread(
            move || other.enter(Access::Write) == Ok(true)
        ));
    }

    #[test]
    fn a_reader_nests_reads_past_a_waiting_writer_but_cannot_write() {
        let lock = Arc::new(ModelLock::new());
        assert_eq!(lock.enter(Access::Read), Ok(true));
        let other = Arc::clone(&lock);
        assert!(on_other_thread(
            move || other.enter(Access::Write) == Ok(false)
        ));
        assert_eq!(lock.enter(Access::Read), Ok(true));
        assert_eq!(lock.enter(Access::Write), Err(WriteWhileReading));
        lock.release();
        lock.release();
        assert!(!lock.held());
    }

    #[test]
    fn a_writer_giving_up_lets_held_back_readers_in() {
        let lock = Arc::new(ModelLock::new());
        assert_eq!(lock.enter(Access::Read), Ok(true));
        let other = Arc::clone(&lock);
        on_other_thread(move || {
            assert_eq!(other.enter(Access::Write), Ok(false));
            assert!(!other.wait(Access::Write, SLICE));
            other.give_up(Access::Write);
        });
        let other = Arc::clone(&lock);
        assert!(on_other_thread(
            move || other.enter(Access::Read) == Ok(true)
        ));
    }
}
