//! CPU affinity: the [`CpuSet`] type and get/set for a thread (by tid) or the process.
//!
//! [`CpuSet`] wraps the C `cpu_set_t` (1024 CPUs) so the same value can go to
//! `sched_setaffinity` and to `pthread_attr_setaffinity_np` (the
//! [`Builder`](super::Builder) applies it at thread creation).
//!
//! On Linux, affinity belongs to each thread: `sched_setaffinity(tid)` changes one
//! thread, and a new thread inherits its creator's mask. [`set_process_affinity`]
//! therefore walks `/proc/self/task` and sets every thread.
//!
//! ```
//! use posixrt::sched::{self, CpuSet};
//!
//! let mine = sched::thread_affinity(sched::gettid())?;
//! assert!(mine.count() >= 1);
//! let first = mine.iter().next().unwrap();
//! let one = CpuSet::single(first)?;
//! sched::set_thread_affinity(sched::gettid(), &one)?;
//! assert_eq!(sched::thread_affinity(sched::gettid())?, one);
//! sched::set_thread_affinity(sched::gettid(), &mine)?; // restore
//! # Ok::<(), posixrt::Error>(())
//! ```

use super::hint::sched_error;
use super::{CpuSet, Tid};
use crate::{Error, Result};

impl CpuSet {
    /// The CPUs the calling thread may run on now: its own mask
    /// (`sched_getaffinity(0)`). Once a thread pins itself (say to CPU 0), this is
    /// `{0}`, and so is it for every thread it creates later; for the CPUs the
    /// process may use whatever the caller's pin, see [`usable`](CpuSet::usable).
    ///
    /// # References
    ///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
    #[doc(alias = "sched_getaffinity")]
    pub fn allowed() -> Result<CpuSet> {
        thread_affinity(super::gettid())
    }

    /// The CPUs any thread of this process may be given, whatever the caller's own
    /// affinity: the online CPUs of the process's cgroup cpuset
    /// (`cpuset.cpus.effective` of its cgroup v2, or of the nearest ancestor that
    /// has the controller; `cpuset.effective_cpus` of cgroup v1). This is what
    /// [`set_thread_affinity`] accepts without narrowing, and what the hints of
    /// affinity refusals name.
    ///
    /// [`allowed`](CpuSet::allowed) is the calling thread's own mask instead: a
    /// subset of this one, smaller once the thread (or the one that created it)
    /// was pinned. When the cpuset cannot be read (no cgroup file system
    /// mounted), this is every online CPU; when the online list cannot be read
    /// either, the caller's own mask.
    ///
    /// ```
    /// use posixrt::sched::CpuSet;
    ///
    /// let usable = CpuSet::usable()?;
    /// let mine = CpuSet::allowed()?;
    /// assert!(mine.iter().all(|c| usable.contains(c)));
    /// # Ok::<(), posixrt::Error>(())
    /// ```
    ///
    /// # References
    ///  - [`cpuset(7)`](https://man7.org/linux/man-pages/man7/cpuset.7.html)
    ///  - [cgroup v2 cpuset](https://docs.kernel.org/admin-guide/cgroup-v2.html#cpuset)
    pub fn usable() -> Result<CpuSet> {
        match super::cpuset::usable_cpus() {
            Some(set) => Ok(set),
            None => CpuSet::allowed(),
        }
    }
}

/// The CPU affinity of thread `tid`.
///
/// # References
///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
#[doc(alias = "sched_getaffinity")]
pub fn thread_affinity(tid: Tid) -> Result<CpuSet> {
    let mut set = CpuSet::new();
    crate::sys::sched::getaffinity(tid.as_raw(), &mut set.raw)
        .map_err(|e| affinity_error("sched_getaffinity", e, tid))?;
    Ok(set)
}

/// Sets the CPU affinity of thread `tid`. An empty set, or one naming a CPU this
/// machine does not have (which the kernel would drop silently), is `InvalidInput`;
/// so is a set naming online CPUs that the thread's cgroup cpuset does not allow
/// (the kernel would apply the rest and drop those silently: the thread's old mask
/// is put back; for a thread of another process the error names that thread's
/// cpuset, which may differ from the caller's); a set with no online CPU allowed by the thread's cpuset is EINVAL
/// from the kernel, and so is any set for a kernel thread bound to its CPU
/// (ksoftirqd/N: no one may move it), whose hint names the thread.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
#[doc(alias = "sched_setaffinity")]
pub fn set_thread_affinity(tid: Tid, cpus: &CpuSet) -> Result<()> {
    super::hook::affinity(tid, || set_thread_affinity_raw(tid, cpus))
}

fn set_thread_affinity_raw(tid: Tid, cpus: &CpuSet) -> Result<()> {
    super::cpuset::check_not_empty("sched_setaffinity", cpus, "")?;
    super::cpuset::check_cpus_exist("sched_setaffinity", cpus)?;
    // Unreadable (a machine beyond CpuSet's 1024 CPUs): set without the check,
    // whose read-back would fail the same way.
    let old = thread_affinity(tid).ok();
    crate::sys::sched::setaffinity(tid.as_raw(), &cpus.raw).map_err(|e| {
        // EINVAL for a set the thread's cpuset allows (this process's, or for a
        // thread of another process its own): the thread itself refuses.
        if e == libc::EINVAL
            && super::hint::affinity_usable_for(cpus, Some(tid.as_raw())) == Some(true)
        {
            return Error::from_errno("sched_setaffinity", e)
                .with_hint(super::hint::affinity_target_refused(tid.as_raw(), cpus));
        }
        affinity_error("sched_setaffinity", e, tid)
    })?;
    let Some(old) = old else {
        return Ok(());
    };
    check_applied("sched_setaffinity", tid, cpus, || {
        // Best effort: the thread may have exited meanwhile.
        let _ = crate::sys::sched::setaffinity(tid.as_raw(), &old.raw);
    })
}

/// After `asked` was applied to thread `tid`: if the kernel narrowed it to the
/// thread's cpuset, runs `undo` and returns the refusal naming the CPUs dropped
/// and the cpuset that dropped them (the target's own, for a thread of another
/// process).
pub(crate) fn check_applied(
    call: &'static str,
    tid: Tid,
    asked: &CpuSet,
    undo: impl FnOnce(),
) -> Result<()> {
    let Ok(applied) = thread_affinity(tid) else {
        return Ok(());
    };
    let dropped = super::cpuset::narrowed(asked, &applied);
    if dropped.is_empty() {
        return Ok(());
    }
    undo();
    Err(super::hint::affinity_narrowed(
        call,
        tid.as_raw(),
        asked,
        &dropped,
        &applied,
    ))
}

/// The affinity of the process's main thread (`sched_getaffinity(getpid())`).
///
/// # References
///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
#[doc(alias = "sched_getaffinity")]
pub fn process_affinity() -> Result<CpuSet> {
    thread_affinity(Tid::process())
}

/// Sets the affinity of every thread of this process (each tid in `/proc/self/task`),
/// so later threads inherit it from whichever thread creates them.
///
/// A thread created while this runs may keep its creator's old mask; call it before
/// starting threads, or set the new thread's affinity in its [`Builder`](super::Builder).
/// Threads that exit meanwhile are skipped. If a thread refuses the set (a
/// `SCHED_DEADLINE` thread: EBUSY), the threads already changed get their old masks
/// back before the error is returned, so the process is not left half moved.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
///  - [`proc_pid_task(5)`](https://man7.org/linux/man-pages/man5/proc_pid_task.5.html)
#[doc(alias = "sched_setaffinity")]
pub fn set_process_affinity(cpus: &CpuSet) -> Result<()> {
    let mut changed: Vec<(Tid, CpuSet)> = Vec::new();
    for tid in super::tid::process_threads()? {
        let r = thread_affinity(tid).and_then(|old| {
            set_thread_affinity(tid, cpus)?;
            changed.push((tid, old));
            Ok(())
        });
        match r {
            Ok(()) => {}
            Err(e) if e.errno() == Some(libc::ESRCH) => {}
            Err(e) => {
                // Best effort: a thread that exited meanwhile needs nothing back.
                for (t, old) in changed.iter().rev() {
                    let _ = set_thread_affinity(*t, old);
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The CPU the calling thread is running on now.
///
/// # References
///  - [`sched_getcpu(3)`](https://man7.org/linux/man-pages/man3/sched_getcpu.3.html)
#[inline]
#[doc(alias = "sched_getcpu")]
pub fn current_cpu() -> usize {
    rustix::thread::sched_getcpu()
}

fn affinity_error(call: &'static str, errno: i32, tid: Tid) -> Error {
    sched_error(call, errno, Some(tid.as_raw()), None, None)
}
