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

use std::fmt;

use super::hint::sched_error;
use super::Tid;
use crate::{Error, Result};

/// A set of CPUs (`cpu_set_t`), CPUs `0..CpuSet::CAPACITY`.
///
/// # References
///  - [`CPU_SET(3)`](https://man7.org/linux/man-pages/man3/CPU_SET.3.html)
#[derive(Clone, Copy)]
pub struct CpuSet {
    raw: libc::cpu_set_t,
}

impl CpuSet {
    /// How many CPUs a set can name (`CPU_SETSIZE`, 1024).
    pub const CAPACITY: usize = libc::CPU_SETSIZE as usize;

    /// The empty set (`CPU_ZERO`).
    pub fn new() -> CpuSet {
        // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set (CPU_ZERO).
        let raw = unsafe { std::mem::zeroed() };
        CpuSet { raw }
    }

    /// The set holding only `cpu`.
    pub fn single(cpu: usize) -> Result<CpuSet> {
        let mut s = CpuSet::new();
        s.insert(cpu)?;
        Ok(s)
    }

    /// The set of the CPUs in `cpus`; a CPU `>= CAPACITY` is `InvalidInput`.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Result<CpuSet> {
        let mut s = CpuSet::new();
        for c in cpus {
            s.insert(c)?;
        }
        Ok(s)
    }

    /// Adds `cpu` (`CPU_SET`); `cpu >= CAPACITY` is `InvalidInput`.
    pub fn insert(&mut self, cpu: usize) -> Result<()> {
        if cpu >= Self::CAPACITY {
            return Err(Error::invalid(
                "CPU_SET",
                format!("CPU {cpu} is beyond CPU_SETSIZE ({})", Self::CAPACITY),
            )
            .with_hint(format!(
                "CpuSet is the C cpu_set_t and names CPUs 0..={}; this machine's CPUs are {}",
                Self::CAPACITY - 1,
                std::fs::read_to_string("/sys/devices/system/cpu/possible")
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "unknown".into())
            )));
        }
        let word = std::mem::size_of::<u64>() * 8;
        let words = self.words_mut();
        words[cpu / word] |= 1u64 << (cpu % word);
        Ok(())
    }

    /// Removes `cpu` (`CPU_CLR`); a CPU beyond the capacity is never in the set.
    pub fn remove(&mut self, cpu: usize) {
        if cpu < Self::CAPACITY {
            let words = self.words_mut();
            words[cpu / 64] &= !(1u64 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set (`CPU_ISSET`).
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < Self::CAPACITY && self.words()[cpu / 64] & (1u64 << (cpu % 64)) != 0
    }

    /// How many CPUs are in the set (`CPU_COUNT`).
    pub fn count(&self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The CPUs in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..Self::CAPACITY).filter(move |&c| self.contains(c))
    }

    /// The CPUs this process may run on now (the calling thread's mask).
    ///
    /// # References
    ///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
    pub fn allowed() -> Result<CpuSet> {
        thread_affinity(super::gettid())
    }

    /// The raw `cpu_set_t`.
    #[inline]
    pub fn as_raw(&self) -> &libc::cpu_set_t {
        &self.raw
    }

    /// A set from a raw `cpu_set_t`.
    #[inline]
    pub fn from_raw(raw: libc::cpu_set_t) -> CpuSet {
        CpuSet { raw }
    }

    fn words(&self) -> &[u64; 16] {
        const _: () = assert!(std::mem::size_of::<libc::cpu_set_t>() == 128);
        const _: () = assert!(std::mem::align_of::<libc::cpu_set_t>() >= 8);
        // SAFETY: cpu_set_t is 128 bytes of plain bits aligned to at least 8 (both
        // asserted above at compile time); [u64; 16] has the same size, alignment 8 and
        // no invalid bit patterns, and the borrow lives as long as `self`'s.
        unsafe { &*(&self.raw as *const libc::cpu_set_t as *const [u64; 16]) }
    }

    fn words_mut(&mut self) -> &mut [u64; 16] {
        // SAFETY: as in `words`; the borrow is unique.
        unsafe { &mut *(&mut self.raw as *mut libc::cpu_set_t as *mut [u64; 16]) }
    }
}

impl Default for CpuSet {
    fn default() -> CpuSet {
        CpuSet::new()
    }
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &CpuSet) -> bool {
        self.words() == other.words()
    }
}

impl Eq for CpuSet {}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for CpuSet {
    /// The `taskset -c` style list, e.g. `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<usize> = self.iter().collect();
        let mut i = 0;
        let mut first = true;
        while i < cpus.len() {
            let mut j = i;
            while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j > i {
                write!(f, "{}-{}", cpus[i], cpus[j])?;
            } else {
                write!(f, "{}", cpus[i])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// The CPU affinity of thread `tid`.
///
/// # References
///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
pub fn thread_affinity(tid: Tid) -> Result<CpuSet> {
    let mut set = CpuSet::new();
    // SAFETY: `set.raw` is a valid, writable cpu_set_t of the size we pass.
    let r = unsafe {
        libc::sched_getaffinity(
            tid.as_raw(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set.raw,
        )
    };
    if r == -1 {
        return Err(last_error("sched_getaffinity", tid));
    }
    Ok(set)
}

/// Sets the CPU affinity of thread `tid`. An empty set is `InvalidInput`; a set with
/// no online CPU allowed by the thread's cpuset is EINVAL from the kernel.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
pub fn set_thread_affinity(tid: Tid, cpus: &CpuSet) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::invalid("sched_setaffinity", "empty CPU set"));
    }
    // SAFETY: `cpus.raw` is a valid cpu_set_t of the size we pass; the kernel only reads it.
    let r = unsafe {
        libc::sched_setaffinity(
            tid.as_raw(),
            std::mem::size_of::<libc::cpu_set_t>(),
            &cpus.raw,
        )
    };
    if r == -1 {
        return Err(last_error("sched_setaffinity", tid));
    }
    Ok(())
}

/// The affinity of the process's main thread (`sched_getaffinity(getpid())`).
///
/// # References
///  - [`sched_getaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)
pub fn process_affinity() -> Result<CpuSet> {
    thread_affinity(Tid::process())
}

/// Sets the affinity of every thread of this process (each tid in `/proc/self/task`),
/// so later threads inherit it from whichever thread creates them.
///
/// A thread created while this runs may keep its creator's old mask; call it before
/// starting threads, or set the new thread's affinity in its [`Builder`](super::Builder).
/// Threads that exit meanwhile are skipped.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
///  - [`proc_pid_task(5)`](https://man7.org/linux/man-pages/man5/proc_pid_task.5.html)
pub fn set_process_affinity(cpus: &CpuSet) -> Result<()> {
    for tid in super::thread::process_threads()? {
        match set_thread_affinity(tid, cpus) {
            Err(e) if e.errno() == Some(libc::ESRCH) => {}
            other => other?,
        }
    }
    Ok(())
}

/// The CPU the calling thread is running on now.
///
/// # References
///  - [`sched_getcpu(3)`](https://man7.org/linux/man-pages/man3/sched_getcpu.3.html)
#[inline]
pub fn current_cpu() -> usize {
    rustix::thread::sched_getcpu()
}

fn last_error(call: &'static str, tid: Tid) -> Error {
    sched_error(
        call,
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
        Some(tid.as_raw()),
        None,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_ops_and_display() {
        let s = CpuSet::from_cpus([0, 1, 2, 5, 1023]).unwrap();
        assert_eq!(s.count(), 5);
        assert!(s.contains(5) && !s.contains(4));
        assert_eq!(s.to_string(), "0-2,5,1023");
        assert!(CpuSet::from_cpus([1024]).is_err());
        let mut t = s;
        t.remove(5);
        assert_eq!(t.iter().collect::<Vec<_>>(), vec![0, 1, 2, 1023]);
    }
}
