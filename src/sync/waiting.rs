//! [`WaitingCount`]: how many threads of this process wait for an object,
//! stamped with the fork generation that counted them (see
//! [`fork::generation`]), so that a forked child does not count its parent's.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::sys::fork;

/// How many threads wait for one object (an rwlock's writers, a semaphore's
/// sleepers): the count in the low 32 bits, the fork generation of the
/// process that counted them in the high 32 (0 as a whole when none waits).
/// A thread counts itself and takes itself out again in one process (it
/// cannot fork while it waits), so a count of another generation is that of
/// threads of a parent process, absent here: it counts as 0.
///
/// The generation moves only in a child of a process that installed the fork
/// hook: a thread counting itself has read its cached tid first
/// ([`crate::sys::tid`], whose first read installs it).
pub(super) struct WaitingCount(AtomicU64);

impl WaitingCount {
    pub(super) const fn new() -> WaitingCount {
        WaitingCount(AtomicU64::new(0))
    }

    /// Whether no thread waits, for the read fast path (one relaxed load); a
    /// `false` may be a parent's count, which [`get`](Self::get) sees through.
    #[inline(always)]
    pub(super) fn is_zero(&self) -> bool {
        self.0.load(Ordering::Relaxed) == 0
    }

    /// The threads of this process that wait (`SeqCst`). A parent's count is
    /// cleared on the way, so that the fast path works again. (Inlined: a
    /// semaphore's `post` reads it.)
    #[inline]
    pub(super) fn get(&self) -> u32 {
        let v = self.0.load(Ordering::SeqCst);
        if v == 0 {
            return 0;
        }
        if (v >> 32) as u32 != fork::generation() {
            // A thread of this process that counts itself meanwhile wins or
            // retries from 0 (see `add`).
            let _ = self
                .0
                .compare_exchange(v, 0, Ordering::SeqCst, Ordering::Relaxed);
            return 0;
        }
        v as u32
    }

    /// A thread starts waiting (`SeqCst`).
    pub(super) fn add(&self) {
        let generation = fork::generation();
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let n = if (v >> 32) as u32 == generation {
                v as u32
            } else {
                0
            };
            let new = u64::from(generation) << 32 | u64::from(n + 1);
            match self
                .0
                .compare_exchange_weak(v, new, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => v = now,
            }
        }
    }

    /// A thread counted by [`add`](Self::add) stops waiting (`SeqCst`).
    pub(super) fn sub(&self) {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let n = (v as u32).saturating_sub(1);
            let new = if n == 0 {
                0
            } else {
                v & !u64::from(u32::MAX) | u64::from(n)
            };
            match self
                .0
                .compare_exchange_weak(v, new, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => v = now,
            }
        }
    }
}
