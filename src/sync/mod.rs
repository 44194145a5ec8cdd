//! Synchronization objects on futexes: the priority-inheritance mutex ([`PiMutex`]),
//! the priority-ceiling mutex ([`CeilingMutex`]), the plain mutex ([`NormalMutex`]),
//! the recursive mutex, condition variable, counting semaphore and reader-writer
//! lock, all with `lock_api`-style guards, and their introspection.
//!
//! POSIX bounds priority inversion with a mutex *protocol* (seed listing 6.7 shows the
//! problem with a semaphore, which has none):
//!
//! | POSIX protocol | posixrt type | what the kernel/posixrt does |
//! |---|---|---|
//! | `PTHREAD_PRIO_NONE` | [`NormalMutex`] | nothing: a medium-priority thread can keep the owner off the CPU while a high-priority thread waits |
//! | `PTHREAD_PRIO_INHERIT` | [`PiMutex`] | the kernel boosts the owner to the highest waiter's priority (PI futex) |
//! | `PTHREAD_PRIO_PROTECT` | [`CeilingMutex`] | the owner runs at the mutex's ceiling while it holds it |
//!
//! Uncontended, each lock and unlock is one compare-and-swap in user space (the
//! ceiling mutex adds the priority syscalls of its protocol). `lock()` from
//! `lock_api` cannot return an error, so it **panics** when the kernel refuses the
//! lock (relock by the owner, a caller above the ceiling, no privilege); the
//! [`MutexExt`] methods (`lock_checked`, `try_lock_checked`, `lock_for_checked`,
//! `lock_until_checked`) return [`Result`](crate::Result) instead.
//!
//! ```
//! use posixrt::sync::{MutexExt, PiMutex};
//! use std::time::Duration;
//!
//! let m = PiMutex::new(Vec::new());
//! m.lock().push(1);
//! {
//!     let g = m.lock_checked()?;
//!     assert_eq!(*g, [1]);
//!     // Held: another thread's timed lock times out.
//!     std::thread::scope(|s| {
//!         s.spawn(|| assert!(m.try_lock_for(Duration::from_millis(5)).is_none()));
//!     });
//! }
//! assert!(m.try_lock().is_some());
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! # The other kinds
//!
//! | POSIX object | posixrt type |
//! |---|---|
//! | `PTHREAD_MUTEX_RECURSIVE` | [`RecursiveMutex`] |
//! | `pthread_cond_t` | [`Condvar`] (works with [`PiMutex`], [`CeilingMutex`] and [`NormalMutex`]: the `lock_api` mutexes; not with the [`RecursiveMutex`], whose guard is its own) |
//! | `pthread_cond_t` with a PI mutex | [`PiCondvar`] (requeue-PI: waiters are requeued onto the [`PiMutex`] as PI waiters) |
//! | `sem_t` (unnamed) | [`Semaphore`] |
//! | `pthread_rwlock_t` | [`RwLock`] (`lock_api::RwLock`, writer-preferring) |
//!
//! # Introspection (Solaris `td_sync_*`)
//!
//! [`set_tracking`] switches per-process tracking on ([`Tracking::Counts`] or
//! [`Tracking::Timing`]); objects used while it is on become known. Each object's
//! `snapshot()` gives its [`Info`] (kind, owner, waiters, recursion, ceiling, readers,
//! count), [`Stats`] and waiter tids; [`objects`] lists every known object;
//! [`find_deadlocks`] finds cycles of threads waiting on each other's locks; the
//! `force_*` methods (unsafe) set a state for debugging. Known objects are also
//! published in shared memory ([`publish`], [`read_process`]) for the `rtstat PID`
//! tool. With tracking off, a lock+unlock pays one relaxed load and branch more.
//!
//! ```
//! use posixrt::sync::{self, NormalMutex, Tracking};
//!
//! sync::set_tracking(Tracking::Counts);
//! let m = NormalMutex::new(0);
//! unsafe { m.raw() }.set_name("counter");
//! for _ in 0..3 {
//!     *m.lock() += 1;
//! }
//! let s = unsafe { m.raw() }.snapshot().expect("known");
//! assert_eq!((s.info.name.as_deref(), s.stats.locks), (Some("counter"), 3));
//! assert!(sync::find_deadlocks().is_empty());
//! sync::set_tracking(Tracking::Off);
//! ```
//!
//! # References
//! - [pthread_mutexattr_setprotocol(3p)](https://man7.org/linux/man-pages/man3/pthread_mutexattr_setprotocol.3p.html)
//! - [futex(2)](https://man7.org/linux/man-pages/man2/futex.2.html)
//! - [td_sync_get_info(3C_DB)](https://docs.oracle.com/cd/E88353_01/html/E37843/td-sync-get-info-3c-db.html) (Solaris)

pub mod ceiling;
#[cfg(test)]
mod ceiling_tests;
pub mod checked;
pub mod condvar;
pub(crate) mod hook;
pub mod normal;
pub mod pi;
pub mod pi_condvar;
mod pi_condvar_handover;
#[cfg(test)]
mod pi_tests;
pub mod recursive;
pub mod rwlock;
mod rwlock_writers;
pub mod semaphore;
pub mod shared;
mod waiting;

pub mod track;

pub use ceiling::{
    cache_ceiling_base, ceiling_mutex, refresh_ceiling_base, CeilingMutex, CeilingMutexGuard,
    RawCeilingMutex,
};
pub use checked::{MutexExt, RawMutexChecked};
pub use condvar::Condvar;
pub use normal::{NormalMutex, NormalMutexGuard, RawNormalMutex};
pub use pi::{PiMutex, PiMutexGuard, RawPiMutex};
pub use pi_condvar::PiCondvar;
pub use recursive::{RecursiveMutex, RecursiveMutexGuard};
pub use rwlock::{RawRwLock, RwLock};
pub use semaphore::{Semaphore, SEM_VALUE_MAX};
pub use shared::{
    publish, read_all, read_process, read_process_with_status, PublishStatus, Published,
    PUBLISH_PERIOD, REGISTRY_KIND,
};
pub use track::{
    find_deadlocks, find_deadlocks_in, objects, reset_stats, set_tracking, tracking, Deadlock,
    Info, Kind, Snapshot, Stats, Tracking,
};

/// The calling thread's kernel thread id (`gettid`), cached per thread: the value the
/// lock words store for an owner.
///
/// # References
/// - [gettid(2)](https://man7.org/linux/man-pages/man2/gettid.2.html)
#[inline]
#[doc(alias = "gettid")]
pub fn current_tid() -> u32 {
    crate::sys::tid::current()
}

/// Whether the kernel has `FUTEX_LOCK_PI2` (Linux ≥ 5.14), so that timed PI locks
/// wait on CLOCK_MONOTONIC. Before the first contended PI lock this answers `true`
/// (not yet probed).
pub fn has_lock_pi2() -> bool {
    crate::sys::futex::has_lock_pi2()
}
