//! Process-level scheduling calls of POSIX (listings 6.1–6.3 of the seed).
//!
//! Each function wraps one POSIX call. `pid` is `None` for the caller, as `0` is in C.
//!
//! **Linux note.** Linux schedules threads: these calls address *one thread*. With
//! `None` they act on the calling thread; with the process id they act on the main
//! thread only, and with a [`Tid`] on that thread. POSIX's "process scheduling"
//! (every thread of a `PTHREAD_SCOPE_PROCESS` process) does not exist here. To set
//! every thread, spawn them with a [`Builder`](super::Builder) or walk
//! [`process_threads`](super::process_threads).
//!
//! ```
//! use posixrt::sched::{self, Policy};
//!
//! let policy = sched::get_scheduler(None)?;
//! let prio = sched::get_param(None)?;
//! let range = policy.priority_range()?;
//! assert!(range.contains(&prio));
//! sched::yield_now();
//! let q = sched::rr_interval(None)?; // the SCHED_RR quantum (0 for SCHED_FIFO threads)
//! println!("{policy} {prio}, RR quantum {q:?}");
//! # Ok::<(), posixrt::Error>(())
//! ```

use std::time::Duration;

use super::thread::{priority_in, raw_getparam, raw_getscheduler, raw_setparam, raw_setscheduler};
use super::{Policy, Priority, Tid};
use crate::Result;

#[inline]
fn raw(pid: Option<Tid>) -> i32 {
    pid.map_or(0, Tid::as_raw)
}

/// The scheduling policy of `pid` (`sched_getscheduler`).
///
/// # References
///  - [`sched_getscheduler(2)`](https://man7.org/linux/man-pages/man2/sched_getscheduler.2.html)
///  - [POSIX `sched_getscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getscheduler.html)
#[inline]
#[doc(alias = "sched_getscheduler")]
pub fn get_scheduler(pid: Option<Tid>) -> Result<Policy> {
    raw_getscheduler(raw(pid))
}

/// Sets policy and priority of `pid` (`sched_setscheduler`) and returns the policy
/// it had before, as POSIX's `sched_setscheduler` does (Linux's returns 0, so the
/// former policy is read just before the change, with `sched_getscheduler`). A
/// `SCHED_RESET_ON_FORK` flag the thread has is kept (Linux would clear it, or
/// refuse to without privilege), and left out of the policy returned.
/// C's `sched_getscheduler` then reports the policy with the flag ORed in, as
/// before: see [`SCHED_RESET_ON_FORK` and C
/// callers](super#sched_reset_on_fork-and-c-callers).
///
/// A `Policy::Deadline` priority is `InvalidInput` (use
/// [`deadline::set`](super::deadline::set)). EPERM comes with the hint naming
/// CAP_SYS_NICE and RLIMIT_RTPRIO (soft and hard values) and the fixes; a `pid`
/// that names no thread is `NotFound`, and a former policy posixrt does not know
/// is `Unsupported`, both before anything is changed.
///
/// ```
/// use posixrt::sched::{self, Priority};
///
/// let prio = sched::get_param(None)?;
/// let was = sched::set_scheduler(None, Priority::batch())?; // e.g. SCHED_OTHER
/// // ... CPU-bound work as SCHED_BATCH ...
/// let now = sched::set_scheduler(None, Priority::new(was, prio)?)?; // as it was
/// assert_eq!(now, sched::Policy::Batch);
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// # References
///  - [`sched_setscheduler(2)`](https://man7.org/linux/man-pages/man2/sched_setscheduler.2.html)
///  - [POSIX `sched_setscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setscheduler.html)
#[doc(alias = "sched_setscheduler")]
pub fn set_scheduler(pid: Option<Tid>, priority: Priority) -> Result<Policy> {
    let former = raw_getscheduler(raw(pid))?;
    super::hook::change(raw(pid), || raw_setscheduler(raw(pid), priority))?;
    Ok(former)
}

/// The priority of `pid` (`sched_getparam`, field `sched_priority`).
///
/// # References
///  - [`sched_getparam(2)`](https://man7.org/linux/man-pages/man2/sched_getparam.2.html)
///  - [POSIX `sched_getparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getparam.html)
#[inline]
#[doc(alias = "sched_getparam")]
pub fn get_param(pid: Option<Tid>) -> Result<i32> {
    raw_getparam(raw(pid))
}

/// Sets only the priority of `pid` (`sched_setparam`). The value is checked against
/// the range of `pid`'s current policy first (`InvalidInput` if outside; a
/// `SCHED_DEADLINE` thread is `InvalidInput` pointing to
/// [`deadline::set`](super::deadline::set)). (POSIX puts
/// the thread at the tail of its new list; Linux puts a raised thread at the tail and
/// a lowered one at the head, see `sched(7)`.)
///
/// # References
///  - [`sched_setparam(2)`](https://man7.org/linux/man-pages/man2/sched_setparam.2.html)
///  - [POSIX `sched_setparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setparam.html)
#[doc(alias = "sched_setparam")]
pub fn set_param(pid: Option<Tid>, value: i32) -> Result<()> {
    let policy = raw_getscheduler(raw(pid))?;
    super::hook::change(raw(pid), || {
        raw_setparam(raw(pid), priority_in("sched_setparam", policy, value)?)
    })
}

/// The lowest priority of `policy` (`sched_get_priority_min`).
///
/// # References
///  - [`sched_get_priority_min(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_min.2.html)
#[inline]
#[doc(alias = "sched_get_priority_min")]
pub fn priority_min(policy: Policy) -> Result<i32> {
    policy.priority_min()
}

/// The highest priority of `policy` (`sched_get_priority_max`).
///
/// # References
///  - [`sched_get_priority_max(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_max.2.html)
#[inline]
#[doc(alias = "sched_get_priority_max")]
pub fn priority_max(policy: Policy) -> Result<i32> {
    policy.priority_max()
}

/// The round-robin quantum of `pid` (`sched_rr_get_interval`): the time slice a
/// `SCHED_RR` thread gets (100 ms by default on Linux, `/proc/sys/kernel/sched_rr_timeslice_ms`);
/// zero for a `SCHED_FIFO` thread; for the fair policies, whatever the kernel reports
/// (0, or the task's current slice when its run queue is busy).
///
/// # References
///  - [`sched_rr_get_interval(2)`](https://man7.org/linux/man-pages/man2/sched_rr_get_interval.2.html)
///  - [POSIX `sched_rr_get_interval`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_rr_get_interval.html)
#[doc(alias = "sched_rr_get_interval")]
pub fn rr_interval(pid: Option<Tid>) -> Result<Duration> {
    crate::sys::sched::rr_get_interval(raw(pid)).map_err(|e| {
        super::hint::sched_error("sched_rr_get_interval", e, pid.map(Tid::as_raw), None, None)
    })
}

/// Gives up the CPU: the caller goes to the tail of its priority's list
/// (`sched_yield`). Under `SCHED_OTHER` the effect is weak; it matters for RT threads
/// of equal priority.
///
/// A `SCHED_DEADLINE` thread ([`deadline`](super::deadline)) gives up the rest of
/// its runtime for the current period instead: it does not run again until its
/// next period begins, with a full runtime (how a periodic deadline task ends each
/// job; see `sched(7)`).
///
/// # References
///  - [`sched_yield(2)`](https://man7.org/linux/man-pages/man2/sched_yield.2.html)
///  - [POSIX `sched_yield`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_yield.html)
#[inline]
#[doc(alias = "sched_yield")]
pub fn yield_now() {
    rustix::thread::sched_yield()
}
