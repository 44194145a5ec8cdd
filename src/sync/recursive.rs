//! The recursive mutex ([`RecursiveMutex`]): `PTHREAD_MUTEX_RECURSIVE`.
//!
//! The owner may lock it again; each lock needs its own unlock (its guard), and the
//! lock is released when the recursion count returns to zero. The lock word is the
//! normal mutex's (owner tid | waiters bit, plain futex), the count is written only
//! by the owner. Guards give shared access (`&T`), as `lock_api::ReentrantMutex`
//! does: two guards of one thread may coexist.
//!
//! # References
//! - [pthread_mutexattr_settype(3p)](https://man7.org/linux/man-pages/man3/pthread_mutexattr_settype.3p.html) (PTHREAD_MUTEX_RECURSIVE)

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::checked::deadline_after;
use super::normal::TidWord;
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::tid::current as current_tid;
use crate::{Error, Result};

/// A recursive mutex protecting a `T` (see the [module docs](self)).
///
/// ```
/// use posixrt::sync::RecursiveMutex;
///
/// let m = RecursiveMutex::new(5);
/// let a = m.lock();
/// let b = m.lock(); // the owner may lock again
/// assert_eq!(m.recursion(), 2);
/// assert_eq!(*a + *b, 10);
/// drop(b);
/// drop(a);
/// assert_eq!(m.recursion(), 0);
/// ```
#[doc(alias = "PTHREAD_MUTEX_RECURSIVE")]
pub struct RecursiveMutex<T: ?Sized> {
    word: TidWord,
    count: AtomicU32,
    track: Track,
    data: T,
}

// SAFETY: the data is reached only by the owner thread (one at a time); T: Send is
// enough as for lock_api::ReentrantMutex.
unsafe impl<T: ?Sized + Send> Send for RecursiveMutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for RecursiveMutex<T> {}

/// The guard of a [`RecursiveMutex`]: shared access; not `Send`.
#[must_use = "the mutex is unlocked when the guard is dropped"]
pub struct RecursiveMutexGuard<'a, T: ?Sized> {
    m: &'a RecursiveMutex<T>,
    _not_send: PhantomData<*const ()>,
}

impl<T> RecursiveMutex<T> {
    /// A free recursive mutex.
    pub const fn new(value: T) -> RecursiveMutex<T> {
        RecursiveMutex {
            word: TidWord::new(),
            count: AtomicU32::new(0),
            track: Track::new(),
            data: value,
        }
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T {
        self.data
    }
}

impl<T: ?Sized> RecursiveMutex<T> {
    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as *const u8 as usize
    }

    /// A relock by the owner `tid` (`is_try`: through `try_lock`, counted as a
    /// successful trylock too, as the first lock's trylock is).
    fn relocked(&self, tid: u32, is_try: bool) -> Result<()> {
        let c = self.count.load(Ordering::Relaxed);
        if c == u32::MAX {
            return Err(
                Error::from_errno("pthread_mutex_lock(RECURSIVE)", libc::EAGAIN)
                    .with_message("the recursion count is at its maximum"),
            );
        }
        self.count.store(c + 1, Ordering::Relaxed);
        if track::level() != 0 {
            let r = self.track.record(Kind::RecursiveMutex, self.addr());
            let s = r.begin();
            r.owner_fresh();
            r.bump(track::W_LOCKS);
            if is_try {
                r.bump(track::W_TRY);
            }
            r.set(track::W_STATE, u64::from(c + 1));
            // The relock may be what made the mutex known (tracking switched on
            // while it was held): the record names the owner, as the first lock does.
            r.set(track::W_OWNER, u64::from(tid));
            r.end(s);
        }
        Ok(())
    }

    /// Reports a relock refused at the maximum count (EAGAIN) to the trace hook:
    /// nothing was acquired. (Tracking records nothing: `relocked` refuses before
    /// it writes the record.)
    #[cold]
    fn refused_at_max(&self, is_try: bool, tid: u32) {
        let result = super::hook::LockResult::Error(libc::EAGAIN);
        if is_try {
            super::hook::trylock(self.addr(), || tid, result);
        } else {
            super::hook::lock(self.addr(), tid, result);
        }
    }

    /// The first (outermost) acquisition: already done by the fast CAS, or `slow`.
    fn first(&self, tid: u32, slow: bool, deadline: Option<Instant>) -> Result<()> {
        if slow {
            if track::level() != 0 {
                // The wait may be what shows the holder (it notes it, as in
                // `try_failed`): with its count.
                self.note_count();
            }
            self.word.lock_slow(
                tid,
                deadline,
                "pthread_mutex_lock(RECURSIVE)",
                (&self.track, Kind::RecursiveMutex, self.addr()),
            )?;
        } else if track::level() != 0 {
            self.track.acquired(Kind::RecursiveMutex, self.addr(), tid);
        }
        self.count.store(1, Ordering::Relaxed);
        if let Some(r) = self.track.get() {
            r.set(track::W_STATE, 1);
        }
        Ok(())
    }

    fn lock_impl(&self, deadline: Option<Instant>) -> Result<RecursiveMutexGuard<'_, T>> {
        let tid = current_tid();
        if self.word.owner() == Some(tid) {
            if let Err(e) = self.relocked(tid, false) {
                self.refused_at_max(false, tid);
                return Err(e);
            }
            super::hook::lock(self.addr(), tid, super::hook::LockResult::Acquired);
        } else if self.word.try_fast(tid) {
            self.first(tid, false, None)?;
            super::hook::lock(self.addr(), tid, super::hook::LockResult::Acquired);
        } else {
            self.first(tid, true, deadline)?;
        }
        Ok(RecursiveMutexGuard {
            m: self,
            _not_send: PhantomData,
        })
    }

    /// Locks (again, if the caller owns it), blocking.
    ///
    /// Panics only if the recursion count would overflow `u32`.
    ///
    /// # References
    /// - [pthread_mutex_lock(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_lock.3p.html)
    /// - [pthread_mutexattr_settype(3p)](https://man7.org/linux/man-pages/man3/pthread_mutexattr_settype.3p.html)
    pub fn lock(&self) -> RecursiveMutexGuard<'_, T> {
        match self.lock_impl(None) {
            Ok(g) => g,
            Err(e) => super::checked::lock_failed(e),
        }
    }

    /// Locks if free or owned by the caller. `None` if another thread holds it, or
    /// if the caller holds it `u32::MAX` times already (`pthread_mutex_trylock`'s
    /// EAGAIN, which its trace event carries).
    pub fn try_lock(&self) -> Option<RecursiveMutexGuard<'_, T>> {
        let tid = current_tid();
        if self.word.owner() == Some(tid) {
            // Reported after the attempt, with its result: at the maximum count the
            // relock is refused (EAGAIN), which is no acquisition.
            return match self.relocked(tid, true) {
                Ok(()) => {
                    super::hook::trylock(self.addr(), || tid, super::hook::LockResult::Acquired);
                    Some(RecursiveMutexGuard {
                        m: self,
                        _not_send: PhantomData,
                    })
                }
                Err(_) => {
                    self.refused_at_max(true, tid);
                    None
                }
            };
        }
        if self.word.try_fast(tid) {
            super::hook::trylock(self.addr(), || tid, super::hook::LockResult::Acquired);
            self.count.store(1, Ordering::Relaxed);
            if track::level() != 0 {
                self.track
                    .try_acquired(Kind::RecursiveMutex, self.addr(), tid);
                self.track.set_state(Kind::RecursiveMutex, self.addr(), 1);
            }
            Some(RecursiveMutexGuard {
                m: self,
                _not_send: PhantomData,
            })
        } else {
            super::hook::trylock(
                self.addr(),
                || self.word.owner().unwrap_or(0),
                super::hook::LockResult::Busy,
            );
            if track::level() != 0 {
                self.try_failed();
            }
            None
        }
    }

    /// A trylock found the mutex held by another thread (tracking
    /// on): counted; if that made the mutex known (tracking switched on while
    /// it was held), the record gets the holder and its recursion count, as the
    /// holder's own relock would write them.
    #[cold]
    fn try_failed(&self) {
        self.track
            .try_failed(Kind::RecursiveMutex, self.addr(), &|| {
                self.word.owner().unwrap_or(0)
            });
        self.note_count();
    }

    /// Writes the recursion count into a known record that shows none yet
    /// (the mutex became known while held, or tracking was switched back on
    /// while it was: its holder wrote nothing since): the holder's own writes
    /// win (a compare-and-swap, not a store).
    fn note_count(&self) {
        if let Some(r) = self.track.get() {
            let c = self.count.load(Ordering::Relaxed);
            let _ = r.w[track::W_STATE].compare_exchange(
                0,
                u64::from(c),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Locks, waiting until `deadline` at most ([`TimedOut`](crate::ErrorKind::TimedOut)).
    pub fn lock_until(&self, deadline: Instant) -> Result<RecursiveMutexGuard<'_, T>> {
        self.lock_impl(Some(deadline))
    }

    /// Locks, waiting `timeout` at most ([`TimedOut`](crate::ErrorKind::TimedOut)).
    pub fn lock_for(&self, timeout: Duration) -> Result<RecursiveMutexGuard<'_, T>> {
        self.lock_until(deadline_after(timeout))
    }

    /// The recursion count (0 when free; a snapshot when another thread owns it).
    pub fn recursion(&self) -> u32 {
        if self.word.owner().is_some() {
            self.count.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// The owner's tid, if held.
    pub fn owner(&self) -> Option<u32> {
        self.word.owner()
    }

    /// Info, statistics and waiters, if known to tracking; state read live.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        s.info.set_live_owner(self.owner());
        s.info.recursion = self.recursion();
        Some(s)
    }

    /// Gives the mutex a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::RecursiveMutex, self.addr(), name);
        self.track.note_held(&|| self.word.owner().unwrap_or(0));
        if track::level() != 0 {
            self.note_count();
        }
    }

    /// Forces the mutex to unlocked (count 0) and wakes one waiter (Solaris
    /// `td_sync_setstate`).
    ///
    /// # Safety
    /// This breaks mutual exclusion: the owner's guards still exist and will unlock
    /// a lock they no longer hold.
    pub unsafe fn force_unlock(&self) {
        self.count.store(0, Ordering::Relaxed);
        if let Some(r) = self.track.get() {
            r.set(track::W_OWNER, 0);
        }
        self.word.force_unlock();
    }

    fn unlock(&self) {
        super::hook::unlock(self.addr());
        let c = self.count.load(Ordering::Relaxed);
        if c > 1 {
            self.count.store(c - 1, Ordering::Relaxed);
            if let (true, Some(r)) = (track::level() != 0, self.track.get()) {
                r.set(track::W_STATE, u64::from(c - 1));
            }
            return;
        }
        self.count.store(0, Ordering::Relaxed);
        let tracked = track::level() != 0;
        if tracked {
            self.track.releasing();
        }
        let tid = current_tid();
        if !self.word.unlock_fast(tid) {
            self.word.unlock_slow();
        }
        self.track.on_released(tracked, tid);
    }
}

impl<T: ?Sized> Deref for RecursiveMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.m.data
    }
}

impl<T: ?Sized> Drop for RecursiveMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.m.unlock()
    }
}

/// Formats the protected data, as the `lock_api` guards do.
impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for RecursiveMutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for RecursiveMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecursiveMutex")
            .field("owner", &self.owner())
            .field("recursion", &self.recursion())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::system_events::{self as sys, Value};
    use crate::trace::{Trace, TraceAttr};

    /// The `result` of each `sync_trylock` event about the object at `addr`.
    fn trylock_results(t: &Trace, addr: usize) -> Vec<i64> {
        let types: Vec<_> = t.event_types().collect();
        t.events()
            .filter_map(|e| {
                let ty = types.iter().find(|ty| ty.id == e.id)?;
                if ty.name != "sync_trylock" {
                    return None;
                }
                let f = sys::decode(&ty.fields, &e.data)?;
                let get = |k: &str| f.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
                (get("addr") == Some(Value::Hex(addr as u64))).then_some(())?;
                match get("result") {
                    Some(Value::I(r)) => Some(r),
                    _ => None,
                }
            })
            .collect()
    }

    /// A trylock by the owner at the maximum recursion count is refused with
    /// EAGAIN, and its trace event says so (it said "acquired", result 0,
    /// before): the count, and the guards, stay as they were.
    #[test]
    fn a_trylock_refused_at_the_maximum_count_is_traced_as_eagain() {
        let m = RecursiveMutex::new(());
        let mut a = TraceAttr::new();
        a.set_stream_size(1 << 20).unwrap();
        let t = Trace::create(&a).unwrap();
        t.start().unwrap();
        let g = m.lock();
        m.count.store(u32::MAX, Ordering::Relaxed);
        assert!(m.try_lock().is_none(), "refused at the maximum count");
        assert_eq!(m.recursion(), u32::MAX);
        m.count.store(1, Ordering::Relaxed);
        drop(m.try_lock().expect("below the maximum: relocked"));
        t.stop().unwrap();
        assert_eq!(
            trylock_results(&t, m.addr()),
            [i64::from(libc::EAGAIN), 0],
            "the refused try, then the one that held"
        );
        drop(g);
        assert_eq!(m.recursion(), 0);
    }
}
