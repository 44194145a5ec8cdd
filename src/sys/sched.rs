//! Scheduling system calls: policy and priority of a thread (`sched_*`,
//! `pthread_setschedparam`), `sched_attr` (`sched_setattr` / `sched_getattr`, for
//! SCHED_DEADLINE and the ceiling protocol), CPU affinity and the round-robin
//! quantum.
//!
//! Each function returns the errno of a failed call as a plain `i32`: the callers
//! in `sched` and `sync` turn it into an [`Error`](crate::Error) with the hint that
//! fits their call (`sched::hint`).
//!
//! # References
//! - [`sched(7)`](https://man7.org/linux/man-pages/man7/sched.7.html)

use std::time::Duration;

/// The errno of the failed call just made (EIO if the OS gave none).
fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `-1` is failure with errno, anything else the result.
fn check(r: libc::c_int) -> Result<libc::c_int, i32> {
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(r)
    }
}

/// `sched_getscheduler(tid)`: the raw policy of thread `tid` (0: the caller).
///
/// # References
/// - [`sched_getscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getscheduler.html)
pub(crate) fn getscheduler(tid: i32) -> Result<i32, i32> {
    // SAFETY: sched_getscheduler takes a plain id and touches no memory.
    check(unsafe { libc::sched_getscheduler(tid) })
}

/// `sched_getparam(tid)`: the static priority of thread `tid` (0: the caller).
///
/// # References
/// - [`sched_getparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getparam.html)
pub(crate) fn getparam(tid: i32) -> Result<i32, i32> {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid, writable sched_param.
    check(unsafe { libc::sched_getparam(tid, &mut p) })?;
    Ok(p.sched_priority)
}

/// `sched_setscheduler(tid, policy, {priority})`.
///
/// # References
/// - [`sched_setscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setscheduler.html)
pub(crate) fn setscheduler(tid: i32, policy: i32, priority: i32) -> Result<(), i32> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param the kernel only reads.
    check(unsafe { libc::sched_setscheduler(tid, policy, &param) }).map(drop)
}

/// `sched_setparam(tid, {priority})`.
///
/// # References
/// - [`sched_setparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setparam.html)
pub(crate) fn setparam(tid: i32, priority: i32) -> Result<(), i32> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param the kernel only reads.
    check(unsafe { libc::sched_setparam(tid, &param) }).map(drop)
}

/// `sched_get_priority_min(policy)`.
///
/// # References
/// - [`sched_get_priority_min`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_get_priority_min.html)
pub(crate) fn priority_min(policy: i32) -> Result<i32, i32> {
    // SAFETY: sched_get_priority_min takes a plain int and touches no memory.
    check(unsafe { libc::sched_get_priority_min(policy) })
}

/// `sched_get_priority_max(policy)`.
///
/// # References
/// - [`sched_get_priority_max`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_get_priority_max.html)
pub(crate) fn priority_max(policy: i32) -> Result<i32, i32> {
    // SAFETY: sched_get_priority_max takes a plain int and touches no memory.
    check(unsafe { libc::sched_get_priority_max(policy) })
}

/// `sched_rr_get_interval(pid)`: the round-robin quantum.
///
/// # References
/// - [`sched_rr_get_interval`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_rr_get_interval.html)
pub(crate) fn rr_get_interval(pid: i32) -> Result<Duration, i32> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    check(unsafe { libc::sched_rr_get_interval(pid, &mut ts) })?;
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// `pthread_setschedparam(thread, policy, {priority})`; returns the error number.
///
/// # Safety
/// `thread` must be a valid handle of a thread that has not been joined or detached
/// and exited.
///
/// # References
/// - [`pthread_setschedparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setschedparam.html)
pub(crate) unsafe fn pthread_setschedparam(
    thread: libc::pthread_t,
    policy: i32,
    priority: i32,
) -> Result<(), i32> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: the caller guarantees `thread`; `param` is only read.
    match unsafe { libc::pthread_setschedparam(thread, policy, &param) } {
        0 => Ok(()),
        e => Err(e),
    }
}

/// `pthread_setschedprio(thread, priority)`; returns the error number.
///
/// # Safety
/// As [`pthread_setschedparam`].
///
/// # References
/// - [`pthread_setschedprio`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setschedprio.html)
pub(crate) unsafe fn pthread_setschedprio(
    thread: libc::pthread_t,
    priority: i32,
) -> Result<(), i32> {
    // SAFETY: the caller guarantees `thread`.
    match unsafe { libc::pthread_setschedprio(thread, priority) } {
        0 => Ok(()),
        e => Err(e),
    }
}

/// `sched_getaffinity(tid)` into `set`.
///
/// # References
/// - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
pub(crate) fn getaffinity(tid: i32, set: &mut libc::cpu_set_t) -> Result<(), i32> {
    // SAFETY: `set` is a valid, writable cpu_set_t of the size we pass.
    check(unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) })
        .map(drop)
}

/// `sched_setaffinity(tid, set)`.
///
/// # References
/// - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
pub(crate) fn setaffinity(tid: i32, set: &libc::cpu_set_t) -> Result<(), i32> {
    // SAFETY: `set` is a valid cpu_set_t of the size we pass; the kernel only reads it.
    check(unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) })
        .map(drop)
}

/// The kernel's `struct sched_attr`, version 0 (48 bytes), for
/// [`setattr`] / [`getattr`].
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct SchedAttr {
    pub(crate) size: u32,
    pub(crate) sched_policy: u32,
    pub(crate) sched_flags: u64,
    pub(crate) sched_nice: i32,
    pub(crate) sched_priority: u32,
    pub(crate) sched_runtime: u64,
    pub(crate) sched_deadline: u64,
    pub(crate) sched_period: u64,
}

impl SchedAttr {
    /// The size of this layout, for the `size` field.
    pub(crate) const SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;
}

/// `sched_setattr(tid, attr, 0)`; `attr.size` must be [`SchedAttr::SIZE`].
/// glibc has no wrapper before 2.41, so this is a raw system call.
///
/// # References
/// - [`sched_setattr(2)`](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)
pub(crate) fn setattr(tid: i32, attr: &SchedAttr) -> Result<(), i32> {
    // SAFETY: `attr` is a valid sched_attr whose `size` field is its true size; the
    // kernel only reads it. flags must be 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, attr as *const SchedAttr, 0u32) };
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// `sched_getattr(tid)` of a version-0 `sched_attr`.
///
/// # References
/// - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
pub(crate) fn getattr(tid: i32) -> Result<SchedAttr, i32> {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is writable for SIZE bytes; the kernel writes at most that much.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            SchedAttr::SIZE,
            0u32,
        )
    };
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(attr)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sched_attr_is_ver0() {
        assert_eq!(super::SchedAttr::SIZE, 48);
    }
}
