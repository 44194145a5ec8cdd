//! [`PiLocked`]: the crate's internal lock, for the few places where a subsystem
//! must serialize on a path a real-time thread can reach (sync tracking: taking a
//! record off the free list, naming an object, the publisher's slot table and
//! registry; rwlocks: the lists of waiting real-time writers; mark: the registry
//! handle). It is a bare PI futex, so a real-time thread that blocks on it lends its priority to the
//! holder (no unbounded inversion behind a preempted low-priority holder), and it
//! is not itself tracked (no recursion into tracking). A lock the kernel refuses
//! for good (a relock by the holder, or a holder that exited holding it) panics
//! naming the errno ([`futex::lock_refused`]) rather than waiting forever.
//!
//! # References
//! - [`futex(2)`, FUTEX_LOCK_PI](https://man7.org/linux/man-pages/man2/futex.2.html)

use std::sync::atomic::{AtomicU32, Ordering};

use super::futex;

/// A priority-inheriting raw lock for [`lock_api`]: the futex word holds the
/// owner's tid (plus `FUTEX_WAITERS` when threads are queued in the kernel).
pub(crate) struct RawPiLock {
    word: AtomicU32,
}

/// A value behind a [`RawPiLock`].
pub(crate) type PiLocked<T> = lock_api::Mutex<RawPiLock, T>;

impl RawPiLock {
    #[cold]
    fn lock_slow(&self, tid: u32) {
        if let Err(e) = futex::lock_pi_blocking(&self.word, || self.try_fast(tid)) {
            futex::lock_refused("internal lock", e);
        }
    }

    #[inline]
    fn try_fast(&self, tid: u32) -> bool {
        self.word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Forgets any holder: for a fork hook, in a child whose only thread holds
    /// nothing (the holder, if any, was another thread of the parent).
    pub(crate) fn reset_in_child(&self) {
        self.word.store(0, Ordering::Relaxed);
    }
}

// SAFETY: the lock is exclusive (the futex word names one owner), and the guard is
// not Send: only the thread that locked a PI futex may unlock it.
unsafe impl lock_api::RawMutex for RawPiLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawPiLock = RawPiLock {
        word: AtomicU32::new(0),
    };
    type GuardMarker = lock_api::GuardNoSend;

    /// One CAS when free, `FUTEX_LOCK_PI` (boosting the holder) otherwise.
    fn lock(&self) {
        let tid = super::tid::current();
        if !self.try_fast(tid) {
            self.lock_slow(tid);
        }
    }

    fn try_lock(&self) -> bool {
        self.try_fast(super::tid::current())
    }

    unsafe fn unlock(&self) {
        let tid = super::tid::current();
        if self
            .word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters are queued in the kernel: hand the lock to the highest.
            let _ = futex::unlock_pi(&self.word);
        }
    }

    fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A relock by the holder would wait for itself forever: the kernel
    /// refuses it (EDEADLK), and `lock` panics saying so instead of spinning.
    #[test]
    fn a_relock_by_the_holder_panics_with_edeadlk() {
        const PREFIX: &str = "posixrt internal lock: FUTEX_LOCK_PI refused with EDEADLK";
        let lock = PiLocked::new(0u32);
        let held = lock.lock();
        let r = crate::test_panics::quietly(|| *lock.lock());
        let msg = crate::test_panics::message(&*r.expect_err("a relock returned"));
        assert!(msg.starts_with(PREFIX), "{msg}");
        drop(held);
        assert!(!lock.is_locked(), "the first guard still unlocks");
        assert_eq!(*lock.lock(), 0);
    }
}
