//! [`PiLock`]: the crate's internal lock for the few places where tracking must
//! serialize (taking a record off the free list, naming an object). It is a bare
//! PI futex, so a real-time thread that blocks on it lends its priority to the
//! holder (no unbounded inversion behind a preempted low-priority holder), and it
//! is not itself tracked (no recursion into tracking).
//!
//! # References
//! - [`futex(2)`, FUTEX_LOCK_PI](https://man7.org/linux/man-pages/man2/futex.2.html)

use std::sync::atomic::{AtomicU32, Ordering};

use crate::sys::futex;

/// A priority-inheriting lock around nothing (the guarded data lives beside it).
pub(crate) struct PiLock {
    word: AtomicU32,
}

/// Unlocks on drop.
pub(crate) struct PiLockGuard<'a> {
    lock: &'a PiLock,
    tid: u32,
}

impl PiLock {
    pub(crate) const fn new() -> PiLock {
        PiLock {
            word: AtomicU32::new(0),
        }
    }

    /// Takes the lock: one CAS when free, `FUTEX_LOCK_PI` (boosting the holder)
    /// otherwise.
    pub(crate) fn lock(&self) -> PiLockGuard<'_> {
        let tid = crate::sys::tid::current();
        if self
            .word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow(tid);
        }
        PiLockGuard { lock: self, tid }
    }

    #[cold]
    fn lock_slow(&self, tid: u32) {
        loop {
            match futex::lock_pi(&self.word, None) {
                Ok(()) => return,
                // Interrupted, or the owner changed under us: try again.
                Err(libc::EINTR) | Err(libc::EAGAIN) => {}
                // Not expected from the kernel for a private lock we do not hold
                // (ENOMEM, ESRCH of a vanished owner): fall back to polling.
                Err(_) => {
                    if self
                        .word
                        .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return;
                    }
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Forgets any holder: for the fork hook, in a child whose only thread holds
    /// nothing (the holder, if any, was another thread of the parent).
    pub(crate) fn reset_in_child(&self) {
        self.word.store(0, Ordering::Relaxed);
    }
}

impl Drop for PiLockGuard<'_> {
    fn drop(&mut self) {
        if self
            .lock
            .word
            .compare_exchange(self.tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters are queued in the kernel: hand the lock to the highest.
            let _ = futex::unlock_pi(&self.lock.word);
        }
    }
}
