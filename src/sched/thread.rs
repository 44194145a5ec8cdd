//! Thread-level scheduling: thread ids, policy and priority of any thread, the
//! priority the kernel is actually using, and facts about the current thread.
//!
//! Linux schedules threads, not processes. A thread is named here by its kernel
//! [`Tid`]; calls on a tid use the `sched_*` system calls, which on Linux address one
//! thread. Calls on the *current* thread use the POSIX `pthread_*` functions on
//! `pthread_self()`; calls on a thread you spawned with [`Builder`](super::Builder) are
//! methods of its [`JoinHandle`](super::JoinHandle), which keeps the `pthread_t`
//! valid.
//!
//! ```
//! use posixrt::sched::{self, Policy};
//!
//! let me = sched::gettid();
//! let p = sched::thread_scheduling(me)?;
//! assert_eq!(p, sched::current_scheduling()?);
//! let k = sched::kernel_priority(me)?;
//! if p.policy() == Policy::Other {
//!     assert_eq!(k.rt_priority(), None);
//! }
//! # Ok::<(), posixrt::Error>(())
//! ```

use std::fmt;

use super::hint::sched_error;
use super::tid::{gettid, Tid};
use super::{Policy, Priority};
use crate::sys::sched as sys;
use crate::{Error, Result};

/// Policy and priority of thread `tid`, read in one `sched_getattr` call so the pair
/// is consistent even if another thread changes it meanwhile (the POSIX pair
/// `sched_getscheduler` + `sched_getparam` is [`get_scheduler`](super::get_scheduler)
/// and [`get_param`](super::get_param)).
///
/// # References
///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
#[doc(alias = "sched_getattr")]
pub fn thread_scheduling(tid: Tid) -> Result<Priority> {
    let a = super::deadline::get(tid)?;
    Ok(Priority::from_kernel(a.policy, a.priority as i32))
}

/// Sets policy and priority of thread `tid` (`sched_setscheduler(tid, ...)`). A
/// `SCHED_RESET_ON_FORK` flag the thread has is kept.
/// C's `sched_getscheduler` then reports the policy with the flag ORed in, as
/// before: see [`SCHED_RESET_ON_FORK` and C
/// callers](super#sched_reset_on_fork-and-c-callers).
///
/// For `SCHED_DEADLINE` use [`deadline::set`](super::deadline::set); passing a
/// `Policy::Deadline` priority here is `InvalidInput`. EPERM carries the hint naming
/// CAP_SYS_NICE and RLIMIT_RTPRIO.
///
/// # References
///  - [`sched_setscheduler(2)`](https://man7.org/linux/man-pages/man2/sched_setscheduler.2.html)
#[doc(alias = "sched_setscheduler")]
pub fn set_thread_scheduling(tid: Tid, priority: Priority) -> Result<()> {
    super::hook::change(tid.as_raw(), || raw_setscheduler(tid.as_raw(), priority))
}

/// Changes only the priority of thread `tid`, within its current policy
/// (`sched_setparam(tid, ...)`). The value is checked against the range of the
/// thread's current policy first (`InvalidInput` if outside; a `SCHED_DEADLINE`
/// thread is `InvalidInput` pointing to [`deadline::set`](super::deadline::set)).
///
/// POSIX puts a thread whose priority `sched_setparam` changed at the tail of its new
/// list; Linux applies the `pthread_setschedprio` rule to every call instead (raised:
/// tail, lowered: head, unchanged: stays; see `sched(7)`).
///
/// # References
///  - [`sched_setparam(2)`](https://man7.org/linux/man-pages/man2/sched_setparam.2.html)
#[doc(alias = "sched_setparam")]
pub fn set_thread_priority(tid: Tid, value: i32) -> Result<()> {
    let policy = raw_getscheduler(tid.as_raw())?;
    let p = priority_in("sched_setparam", policy, value)?;
    super::hook::change(tid.as_raw(), || raw_setparam(tid.as_raw(), p))
}

/// Policy and priority of the calling thread, as the kernel has them (one
/// `sched_getattr` on its tid, like [`thread_scheduling`]).
///
/// This deliberately does not return `pthread_getschedparam(pthread_self())`: glibc
/// answers that from a copy cached in the thread descriptor, which goes stale when the
/// policy is changed through `sched_setscheduler` on the tid (by this crate's
/// [`set_thread_scheduling`], by `chrt`, or by another process).
///
/// # References
///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
///  - [`pthread_getschedparam(3)`](https://man7.org/linux/man-pages/man3/pthread_getschedparam.3.html)
#[doc(alias = "pthread_getschedparam")]
pub fn current_scheduling() -> Result<Priority> {
    thread_scheduling(gettid())
}

/// Sets policy and priority of the calling thread
/// (`pthread_setschedparam(pthread_self(), ...)`). A `SCHED_RESET_ON_FORK` flag the
/// thread has is kept.
/// C's `sched_getscheduler` then reports the policy with the flag ORed in, as
/// before: see [`SCHED_RESET_ON_FORK` and C
/// callers](super#sched_reset_on_fork-and-c-callers).
///
/// # References
///  - [`pthread_setschedparam(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedparam.3.html)
#[doc(alias = "pthread_setschedparam")]
pub fn set_current_scheduling(priority: Priority) -> Result<()> {
    super::hook::change(0, || {
        pthread_setschedparam(crate::sys::thread::pthread_self(), gettid(), priority)
    })
}

/// Changes only the calling thread's priority (`pthread_setschedprio(pthread_self(), v)`).
///
/// POSIX: a thread whose priority is lowered this way goes to the *head* of its new
/// list (it is not penalised), unlike `sched_setparam`.
///
/// # References
///  - [`pthread_setschedprio(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedprio.3.html)
#[doc(alias = "pthread_setschedprio")]
pub fn set_current_priority(value: i32) -> Result<()> {
    super::hook::change(0, || {
        pthread_setschedprio(crate::sys::thread::pthread_self(), gettid(), value)
    })
}

/// The calling thread's name (`pthread_getname_np`).
///
/// # References
///  - [`pthread_getname_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getname_np.3.html)
#[doc(alias = "pthread_getname_np")]
pub fn current_name() -> Result<String> {
    crate::sys::thread::current_name().map_err(|e| Error::from_errno("pthread_getname_np", e))
}

/// The size of the calling thread's stack as the thread library reports it
/// (`pthread_getattr_np` + `pthread_attr_getstacksize`). For the main thread it is
/// the current `RLIMIT_STACK`-bounded size.
///
/// # References
///  - [`pthread_getattr_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getattr_np.3.html)
#[doc(alias = "pthread_attr_getstacksize")]
pub fn current_stack_size() -> Result<usize> {
    crate::sys::thread::current_stack_size().map_err(|(call, e)| Error::from_errno(call, e))
}

/// The priority the kernel is currently using for a thread (field 18, `prio`, of
/// `/proc/self/task/TID/stat`): this is the *effective* priority, including a boost
/// from a priority-inheritance mutex.
///
/// The field is the kernel's `task->prio - 100` (`task_prio()`), so on this kernel
/// (verified on 6.x with a SCHED_FIFO thread, see `tests/sched.rs`):
///
/// | thread | `prio` field |
/// |---|---|
/// | `SCHED_FIFO`/`SCHED_RR` priority *p* (1..=99) | `-1 - p` (−2..=−100) |
/// | `SCHED_OTHER`/`BATCH`/`IDLE` with nice *n* | `20 + n` (0..=39) |
/// | `SCHED_DEADLINE` | `-101` |
///
/// # References
///  - [`proc_pid_stat(5)`](https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelPriority(i32);

impl KernelPriority {
    /// The raw `prio` field.
    #[inline]
    pub fn raw(self) -> i32 {
        self.0
    }

    /// The effective real-time priority (1..=99) if the thread runs as RT now, by its
    /// own policy or by a PI boost.
    pub fn rt_priority(self) -> Option<i32> {
        if (-100..=-2).contains(&self.0) {
            Some(-(self.0 + 1))
        } else {
            None
        }
    }

    /// The nice value if the thread runs under a fair policy now.
    pub fn nice(self) -> Option<i32> {
        if (0..=39).contains(&self.0) {
            Some(self.0 - 20)
        } else {
            None
        }
    }

    /// Whether the thread runs as `SCHED_DEADLINE` now (or is boosted by one).
    pub fn is_deadline(self) -> bool {
        self.0 == -101
    }
}

impl fmt::Display for KernelPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.rt_priority() {
            write!(f, "rt {p}")
        } else if let Some(n) = self.nice() {
            write!(f, "nice {n}")
        } else if self.is_deadline() {
            f.write_str("deadline")
        } else {
            write!(f, "prio {}", self.0)
        }
    }
}

/// The effective priority of thread `tid` of this process, as the kernel reports it
/// in `/proc/self/task/TID/stat` (see [`KernelPriority`]). A tid that is not a thread
/// of this process is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound); the hint
/// names the process a live thread belongs to.
///
/// # References
///  - [`proc_pid_stat(5)`](https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html)
pub fn kernel_priority(tid: Tid) -> Result<KernelPriority> {
    let path = format!("/proc/self/task/{tid}/stat");
    // Decoded lossily: the `comm` field is the kernel name, cut at 15 bytes even
    // inside a UTF-8 character.
    let text = crate::sys::proc::read_text(&path).map_err(|e| {
        let e = io_error("read /proc/self/task/TID/stat", e)
            .with_message(format!("no thread {tid} in this process ({path})"));
        if e.kind() == crate::ErrorKind::NotFound {
            e.with_hint(super::tid::not_in_this_process_hint(
                tid,
                &format!(
                    "kernel_priority reads the threads of this process (/proc/self/task); \
                     for another process's thread read field 18 (prio) of /proc/{tid}/stat"
                ),
            ))
        } else {
            e
        }
    })?;
    parse_stat_prio(&text).map(KernelPriority).ok_or_else(|| {
        Error::new(
            crate::ErrorKind::Corrupt,
            "read /proc/self/task/TID/stat",
            format!("cannot parse field 18 of {path}"),
        )
    })
}

/// Field 18 (`prio`) of a `stat` line, through the crate's one `/proc` parser.
fn parse_stat_prio(stat: &str) -> Option<i32> {
    crate::sys::proc::TaskStat::parse(stat).map(|s| s.prio)
}

fn io_error(call: &'static str, e: std::io::Error) -> Error {
    Error::from_errno(call, e.raw_os_error().unwrap_or(libc::EIO))
}

// ---- raw calls (private backend) ----

pub(crate) fn raw_getscheduler(tid: i32) -> Result<Policy> {
    let r = sys::getscheduler(tid)
        .map_err(|e| sched_error("sched_getscheduler", e, Some(tid), None, None))?;
    Policy::from_raw(r).ok_or_else(|| unknown_policy("sched_getscheduler", r))
}

pub(crate) fn raw_getparam(tid: i32) -> Result<i32> {
    sys::getparam(tid).map_err(|e| sched_error("sched_getparam", e, Some(tid), None, None))
}

pub(crate) fn raw_setscheduler(tid: i32, priority: Priority) -> Result<()> {
    if priority.policy() == Policy::Deadline {
        return Err(deadline_needs_attr("sched_setscheduler"));
    }
    let policy = keep_reset_on_fork(tid, priority.policy().as_raw());
    let r = sys::setscheduler(tid, policy, priority.value());
    crate::sys::prio::class_changed(tid, false);
    r.map_err(|e| {
        sched_error(
            "sched_setscheduler",
            e,
            Some(tid),
            Some(priority.policy()),
            Some(priority.value()),
        )
    })
}

pub(crate) fn raw_setparam(tid: i32, priority: Priority) -> Result<()> {
    if priority.policy() == Policy::Deadline {
        return Err(deadline_needs_attr("sched_setparam"));
    }
    let r = sys::setparam(tid, priority.value());
    crate::sys::prio::class_changed(tid, false);
    r.map_err(|e| {
        sched_error(
            "sched_setparam",
            e,
            Some(tid),
            Some(priority.policy()),
            Some(priority.value()),
        )
    })
}

/// `pthread_setschedparam` on a valid handle whose kernel tid is `tid`.
pub(crate) fn pthread_setschedparam(
    thread: libc::pthread_t,
    tid: Tid,
    priority: Priority,
) -> Result<()> {
    if priority.policy() == Policy::Deadline {
        return Err(deadline_needs_attr("pthread_setschedparam"));
    }
    let policy = keep_reset_on_fork(tid.as_raw(), priority.policy().as_raw());
    // SAFETY: the caller guarantees `thread` is valid.
    let r = unsafe { sys::pthread_setschedparam(thread, policy, priority.value()) };
    crate::sys::prio::class_changed(tid.as_raw(), true);
    if let Err(r) = r {
        return Err(sched_error(
            "pthread_setschedparam",
            r,
            Some(tid.as_raw()),
            Some(priority.policy()),
            Some(priority.value()),
        ));
    }
    Ok(())
}

/// `pthread_setschedprio` on a valid handle whose kernel tid is `tid`; the value is
/// checked against the thread's current policy (as the kernel has it) first.
pub(crate) fn pthread_setschedprio(thread: libc::pthread_t, tid: Tid, value: i32) -> Result<()> {
    let current = raw_getscheduler(tid.as_raw())?;
    let p = priority_in("pthread_setschedprio", current, value)?;
    // SAFETY: the caller guarantees `thread` is valid.
    let r = unsafe { sys::pthread_setschedprio(thread, p.value()) };
    crate::sys::prio::class_changed(tid.as_raw(), true);
    if let Err(r) = r {
        return Err(sched_error(
            "pthread_setschedprio",
            r,
            Some(tid.as_raw()),
            Some(p.policy()),
            Some(p.value()),
        ));
    }
    Ok(())
}

/// `policy` with `SCHED_RESET_ON_FORK` added if thread `tid` (0: the caller) has
/// that flag now. Linux clears the flag on any policy change that does not pass it,
/// and refuses the clearing (EPERM) to an unprivileged thread; the POSIX calls
/// here know nothing of it, so they keep it, as `sched_setparam` does.
/// The kernel reports the kept flag in the policy (`sched_getscheduler`, and
/// glibc's `pthread_getschedparam` through it) as it did before the change; the
/// module docs tell C callers to mask it, and posixrt's readers do.
fn keep_reset_on_fork(tid: i32, policy: i32) -> i32 {
    match sys::getattr(tid) {
        Ok(a) if a.sched_flags & libc::SCHED_FLAG_RESET_ON_FORK as u64 != 0 => {
            policy | libc::SCHED_RESET_ON_FORK
        }
        _ => policy,
    }
}

/// `value` checked against the range of a thread's current `policy`, for a call
/// that changes only the priority. A `SCHED_DEADLINE` thread has no priority to
/// change: that is refused first, whatever the value, with the call to use instead.
pub(crate) fn priority_in(call: &'static str, policy: Policy, value: i32) -> Result<Priority> {
    if policy == Policy::Deadline {
        return Err(deadline_needs_attr(call));
    }
    Priority::new(policy, value)
}

fn unknown_policy(call: &'static str, raw: i32) -> Error {
    Error::new(
        crate::ErrorKind::Unsupported,
        call,
        format!("the kernel reports policy {raw}, unknown to posixrt"),
    )
}

fn deadline_needs_attr(call: &'static str) -> Error {
    Error::invalid(
        call,
        "SCHED_DEADLINE has no priority; it is set with sched_setattr",
    )
    .with_hint("use posixrt::sched::deadline::set(tid, &Deadline::new(runtime, deadline, period)?)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parse_handles_odd_names() {
        let line = "1234 (a) b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 -51 0 1 0 \
                    777 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 50 1 0 0 0 0 0 0 0 0 0 0 0 0";
        // fields after ')': S(3) 1(4) ... 13(16) 14(17) -51(18)
        assert_eq!(parse_stat_prio(line), Some(-51));
        assert_eq!(KernelPriority(-51).rt_priority(), Some(50));
        assert_eq!(KernelPriority(20).nice(), Some(0));
        assert!(KernelPriority(-101).is_deadline());
    }

    #[test]
    fn tid_from_raw() {
        assert!(Tid::from_raw(0).is_none());
        assert!(Tid::from_raw(-5).is_none());
        assert_eq!(Tid::from_raw(7).map(Tid::as_raw), Some(7));
    }
}
