//! [`JoinHandle`]: join a spawned thread and act on it while it runs.

use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::start::{lock, Shared};
use crate::sched::cputime::CpuClock;
use crate::sched::hint::sched_error;
use crate::sched::thread as th;
use crate::sched::tid::Tid;
use crate::sched::{CpuSet, Priority};
use crate::{Error, Result};

/// A handle to a thread spawned by [`Builder`](crate::sched::Builder): join it, and reach its native
/// `pthread_t` and kernel tid. Dropping it detaches the thread.
///
/// While the handle lives the `pthread_t` stays valid (even after the thread ends, it
/// stays joinable), so the methods that take it are safe.
///
/// # References
///  - [`pthread_join(3)`](https://man7.org/linux/man-pages/man3/pthread_join.3.html)
///  - [`pthread_detach(3)`](https://man7.org/linux/man-pages/man3/pthread_detach.3.html)
pub struct JoinHandle<T> {
    pub(super) native: libc::pthread_t,
    pub(super) tid: Tid,
    pub(super) shared: Arc<Shared<T>>,
    pub(super) sporadic: Option<crate::sched::sporadic::Served>,
}

impl<T> JoinHandle<T> {
    /// The thread's place under the sporadic server, if it was spawned with
    /// [`Builder::sporadic`](crate::sched::Builder::sporadic).
    pub fn sporadic(&self) -> Option<&crate::sched::sporadic::Served> {
        self.sporadic.as_ref()
    }

    /// The sporadic budget it has left now (`None` if it is not a sporadic thread or
    /// has ended); see [`Served::remaining_budget`](crate::sched::sporadic::Served::remaining_budget).
    pub fn remaining_budget(&self) -> Option<std::time::Duration> {
        self.sporadic.as_ref()?.remaining_budget().ok()
    }

    /// Its pending sporadic replenishments, earliest first (empty if it is not a
    /// sporadic thread).
    pub fn pending_replenishments(&self) -> Vec<crate::sched::sporadic::Replenishment> {
        self.sporadic
            .as_ref()
            .map(|s| s.pending_replenishments())
            .unwrap_or_default()
    }

    /// The kernel thread id (known since `spawn` returned).
    #[inline]
    pub fn tid(&self) -> Tid {
        self.tid
    }

    /// The native `pthread_t`, valid until [`join`](Self::join) or drop.
    #[inline]
    pub fn as_pthread_t(&self) -> libc::pthread_t {
        self.native
    }

    /// The thread's CPU-time clock (`pthread_getcpuclockid`).
    ///
    /// # References
    ///  - [`pthread_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/pthread_getcpuclockid.3.html)
    #[doc(alias = "pthread_getcpuclockid")]
    pub fn cpu_clock(&self) -> Result<CpuClock> {
        self.while_running("pthread_getcpuclockid", || {
            let mut id: libc::clockid_t = 0;
            // SAFETY: `native` is valid while the handle lives, and the thread is
            // running (see `while_running`); `id` is writable.
            let r = unsafe { libc::pthread_getcpuclockid(self.native, &mut id) };
            crate::error::check_pthread("pthread_getcpuclockid", r)?;
            Ok(CpuClock::from_id(id))
        })
    }

    /// Runs `f` (a `pthread_*` call on `native`) while the thread is guaranteed not to
    /// exit, or fails with `NotFound` if its closure has already returned.
    ///
    /// glibc checks a handle's kernel tid and then reads it *again* for the system
    /// call; a thread that exits in between has tid 0 there, and 0 means "the calling
    /// thread": `pthread_setschedparam` on a dying thread could change the *caller's*
    /// policy. Holding the gate lock keeps the thread from passing its exit point.
    fn while_running<R>(&self, call: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let _alive = lock(&self.shared.gate);
        if self.shared.finished.load(Ordering::Acquire) {
            return Err(sched_error(
                call,
                libc::ESRCH,
                Some(self.tid.as_raw()),
                None,
                None,
            ));
        }
        f()
    }

    /// Whether the closure has returned (or panicked). From then on the methods that
    /// act on the thread fail with `NotFound`.
    pub fn is_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire)
    }

    /// Policy and priority as the kernel has them (`sched_getattr` on the tid; see
    /// [`current_scheduling`](crate::sched::current_scheduling) for why not glibc's cached
    /// `pthread_getschedparam`). Errors with `NotFound` once the thread has ended.
    ///
    /// # References
    ///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
    #[doc(alias = "pthread_getschedparam")]
    #[doc(alias = "sched_getattr")]
    pub fn scheduling(&self) -> Result<Priority> {
        self.while_running("sched_getattr", || th::thread_scheduling(self.tid))
    }

    /// Sets policy and priority (`pthread_setschedparam`). A `SCHED_RESET_ON_FORK`
    /// flag the thread has is kept, and C's `sched_getscheduler` and
    /// `pthread_getschedparam` then report it in the policy, as before: see
    /// [`SCHED_RESET_ON_FORK` and C
    /// callers](crate::sched#sched_reset_on_fork-and-c-callers).
    ///
    /// # References
    ///  - [`pthread_setschedparam(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedparam.3.html)
    #[doc(alias = "pthread_setschedparam")]
    pub fn set_scheduling(&self, priority: Priority) -> Result<()> {
        crate::sched::hook::change(self.tid.as_raw(), || {
            self.while_running("pthread_setschedparam", || {
                th::pthread_setschedparam(self.native, self.tid, priority)
            })
        })
    }

    /// Changes only the priority, checked against the thread's current policy
    /// (`pthread_setschedprio`).
    ///
    /// # References
    ///  - [`pthread_setschedprio(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedprio.3.html)
    #[doc(alias = "pthread_setschedprio")]
    pub fn set_priority(&self, value: i32) -> Result<()> {
        crate::sched::hook::change(self.tid.as_raw(), || {
            self.while_running("pthread_setschedprio", || {
                th::pthread_setschedprio(self.native, self.tid, value)
            })
        })
    }

    /// The thread's CPU affinity (`pthread_getaffinity_np`).
    ///
    /// # References
    ///  - [`pthread_getaffinity_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getaffinity_np.3.html)
    #[doc(alias = "pthread_getaffinity_np")]
    pub fn affinity(&self) -> Result<CpuSet> {
        self.while_running("pthread_getaffinity_np", || self.affinity_now())
    }

    /// `pthread_getaffinity_np` on the thread, which the caller keeps running.
    fn affinity_now(&self) -> Result<CpuSet> {
        let mut raw = *CpuSet::new().as_raw();
        // SAFETY: `native` is valid while the handle lives and the caller keeps the
        // thread running (see `while_running`); `raw` is writable.
        let r = unsafe {
            libc::pthread_getaffinity_np(
                self.native,
                std::mem::size_of::<libc::cpu_set_t>(),
                &mut raw,
            )
        };
        if r != 0 {
            return Err(sched_error(
                "pthread_getaffinity_np",
                r,
                Some(self.tid.as_raw()),
                None,
                None,
            ));
        }
        Ok(CpuSet::from_raw(raw))
    }

    /// Sets the thread's CPU affinity (`pthread_setaffinity_np`).
    ///
    /// # References
    ///  - [`pthread_setaffinity_np(3)`](https://man7.org/linux/man-pages/man3/pthread_setaffinity_np.3.html)
    #[doc(alias = "pthread_setaffinity_np")]
    pub fn set_affinity(&self, cpus: &CpuSet) -> Result<()> {
        crate::sched::hook::affinity(self.tid, || self.set_affinity_raw(cpus))
    }

    fn set_affinity_raw(&self, cpus: &CpuSet) -> Result<()> {
        crate::sched::cpuset::check_not_empty("pthread_setaffinity_np", cpus, "")?;
        crate::sched::cpuset::check_cpus_exist("pthread_setaffinity_np", cpus)?;
        self.while_running("pthread_setaffinity_np", || {
            // Unreadable (a machine beyond CpuSet's 1024 CPUs): set without the
            // check, whose read-back would fail the same way.
            let old = self.affinity_now().ok();
            // SAFETY: `native` is valid while the handle lives and the thread is
            // running (see `while_running`); `cpus` is only read.
            let r = unsafe {
                libc::pthread_setaffinity_np(
                    self.native,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    cpus.as_raw(),
                )
            };
            if r != 0 {
                return Err(sched_error(
                    "pthread_setaffinity_np",
                    r,
                    Some(self.tid.as_raw()),
                    None,
                    None,
                ));
            }
            let Some(old) = old else {
                return Ok(());
            };
            crate::sched::affinity::check_applied("pthread_setaffinity_np", self.tid, cpus, || {
                // SAFETY: as above; the thread is still running.
                unsafe {
                    libc::pthread_setaffinity_np(
                        self.native,
                        std::mem::size_of::<libc::cpu_set_t>(),
                        old.as_raw(),
                    )
                };
            })
        })
    }

    /// Waits for the thread (`pthread_join`) and returns the closure's value, or, like
    /// [`std::thread::JoinHandle::join`], `Err(payload)` if it panicked. Should
    /// `pthread_join` itself fail (a thread joining itself: EDEADLK), the `Err` payload
    /// is a [`posixrt::Error`](crate::Error).
    ///
    /// # References
    ///  - [`pthread_join(3)`](https://man7.org/linux/man-pages/man3/pthread_join.3.html)
    #[doc(alias = "pthread_join")]
    pub fn join(self) -> std::thread::Result<T> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `native` is joinable (never joined or detached: `self` is consumed
        // and its Drop, which detaches, is suppressed).
        let r = unsafe { libc::pthread_join(this.native, std::ptr::null_mut()) };
        // SAFETY: `this.shared` is read out exactly once and `this` is never dropped.
        let shared = unsafe { std::ptr::read(&this.shared) };
        // SAFETY: as above, for the sporadic handle (read once, dropped here).
        drop(unsafe { std::ptr::read(&this.sporadic) });
        if r != 0 {
            // Not joined (EDEADLK: the thread tried to join itself). Detach it so its
            // stack is still freed when it ends, as dropping the handle would.
            // SAFETY: `native` is still joinable and is detached exactly once.
            unsafe { libc::pthread_detach(this.native) };
            let e: Box<dyn Any + Send> = Box::new(
                Error::from_errno("pthread_join", r)
                    .with_hint("a thread cannot join itself; the thread is detached instead"),
            );
            return Err(e);
        }
        let taken = lock(&shared.result).take();
        taken.unwrap_or_else(|| {
            Err(Box::new(Error::new(
                crate::ErrorKind::Other,
                "pthread_join",
                "the thread ended without a result",
            )))
        })
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: `native` is joinable and neither joined nor detached before.
        unsafe { libc::pthread_detach(self.native) };
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("tid", &self.tid)
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

impl CpuClock {
    /// The CPU clock of a thread spawned by [`Builder`](crate::sched::Builder)
    /// (`pthread_getcpuclockid`).
    /// `NotFound` once the thread's closure has returned.
    #[inline]
    #[doc(alias = "pthread_getcpuclockid")]
    pub fn of_handle<T>(handle: &JoinHandle<T>) -> Result<CpuClock> {
        handle.cpu_clock()
    }
}
