//! Fallible locking for the lock_api guard types.
//!
//! `lock_api::RawMutex::lock` cannot return an error, but the kernel can refuse a
//! lock: a relock by the owner (EDEADLK), a priority above a mutex's ceiling
//! (EINVAL), no privilege to raise a priority (EPERM). [`RawMutexChecked`] is the raw
//! side that reports those, and [`MutexExt`] gives every `lock_api::Mutex` built on
//! such a raw lock `lock_checked`, `try_lock_checked`, `lock_for_checked` and
//! `lock_until_checked`, which return a [`Result`] with a guard.

use std::time::{Duration, Instant};

use lock_api::{Mutex, MutexGuard, RawMutex};

use crate::Result;

/// A raw lock whose acquisition reports the kernel's refusals as errors.
///
/// The plain `lock_api::RawMutex` methods of the posixrt locks **panic** when the
/// kernel refuses (a message names the error and the `*_checked` method to use),
/// because returning without the lock would break the guard's promise and blocking
/// forever would hide the bug. Call these methods when a refusal is possible.
pub trait RawMutexChecked: RawMutex {
    /// Acquires the lock, blocking; an error if the kernel refuses.
    fn lock_checked(&self) -> Result<()>;
    /// Acquires the lock if it is free: `Ok(false)` if it is held (by anyone,
    /// including the caller); an error if the kernel refuses.
    fn try_lock_checked(&self) -> Result<bool>;
    /// Acquires the lock, blocking until the absolute `deadline` at most; an error
    /// of kind [`TimedOut`](crate::ErrorKind::TimedOut) when it passes.
    fn lock_until_checked(&self, deadline: Instant) -> Result<()>;
}

/// The fallible locking methods of a `lock_api::Mutex` over a [`RawMutexChecked`].
///
/// ```
/// use posixrt::sync::{MutexExt, PiMutex};
/// use posixrt::ErrorKind;
///
/// let m = PiMutex::new(1);
/// let g = m.lock_checked()?;
/// // Relocking from the owner is reported, not a hang:
/// assert_eq!(m.lock_checked().unwrap_err().kind(), ErrorKind::Deadlock);
/// drop(g);
/// # Ok::<(), posixrt::Error>(())
/// ```
pub trait MutexExt<R: RawMutexChecked, T: ?Sized> {
    /// Locks, or returns the kernel's refusal (e.g. [`Deadlock`](crate::ErrorKind::Deadlock)).
    #[doc(alias = "pthread_mutex_lock")]
    fn lock_checked(&self) -> Result<MutexGuard<'_, R, T>>;
    /// Locks if free: `Ok(None)` if held.
    #[doc(alias = "pthread_mutex_trylock")]
    fn try_lock_checked(&self) -> Result<Option<MutexGuard<'_, R, T>>>;
    /// Locks, waiting until `deadline` at most ([`TimedOut`](crate::ErrorKind::TimedOut)).
    #[doc(alias = "pthread_mutex_clocklock")]
    #[doc(alias = "pthread_mutex_timedlock")]
    fn lock_until_checked(&self, deadline: Instant) -> Result<MutexGuard<'_, R, T>>;
    /// Locks, waiting `timeout` at most ([`TimedOut`](crate::ErrorKind::TimedOut)).
    fn lock_for_checked(&self, timeout: Duration) -> Result<MutexGuard<'_, R, T>>;
}

/// `now + timeout`, or a deadline so far away it never passes if that overflows.
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

impl<R: RawMutexChecked, T: ?Sized> MutexExt<R, T> for Mutex<R, T> {
    fn lock_checked(&self) -> Result<MutexGuard<'_, R, T>> {
        // SAFETY: the raw lock is not given out; `make_guard_unchecked` below is only
        // reached once it is held by this thread.
        unsafe { self.raw() }.lock_checked()?;
        // SAFETY: the lock is held by this thread (lock_checked returned Ok).
        Ok(unsafe { self.make_guard_unchecked() })
    }

    fn try_lock_checked(&self) -> Result<Option<MutexGuard<'_, R, T>>> {
        // SAFETY: as in lock_checked.
        if unsafe { self.raw() }.try_lock_checked()? {
            // SAFETY: the lock is held by this thread.
            Ok(Some(unsafe { self.make_guard_unchecked() }))
        } else {
            Ok(None)
        }
    }

    fn lock_until_checked(&self, deadline: Instant) -> Result<MutexGuard<'_, R, T>> {
        // SAFETY: as in lock_checked.
        unsafe { self.raw() }.lock_until_checked(deadline)?;
        // SAFETY: the lock is held by this thread.
        Ok(unsafe { self.make_guard_unchecked() })
    }

    fn lock_for_checked(&self, timeout: Duration) -> Result<MutexGuard<'_, R, T>> {
        self.lock_until_checked(deadline_after(timeout))
    }
}

/// `RawMutexTimed::try_lock_until`'s answer from a checked timed lock: `true` when
/// acquired, `false` on timeout, and [`lock_failed`] for any other refusal.
pub(crate) fn timed_outcome(r: Result<()>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) if e.kind() == crate::ErrorKind::TimedOut => false,
        Err(e) => lock_failed(e),
    }
}

/// What the panicking lock_api methods do with a refusal.
#[cold]
#[inline(never)]
pub(crate) fn lock_failed(e: crate::Error) -> ! {
    panic!("posixrt lock failed: {e} (use MutexExt::lock_checked to handle this as an error)")
}
