//! CPU-time clocks: how much CPU a thread (or process) has consumed.
//!
//! These are the building block of a user-space sporadic server (POSIX
//! `SCHED_SPORADIC` does not exist on Linux): read a thread's consumed time, compare
//! it with its budget, and switch its priority with
//! [`set_thread_priority`](super::set_thread_priority). A [`CpuClock`] also works with
//! `clock_nanosleep` / `timer_create` through [`CpuClock::as_raw`].
//!
//! ```
//! use posixrt::sched::{self, cputime::CpuClock, Builder};
//!
//! let me = CpuClock::current_thread();
//! let t0 = me.now()?;
//! let mut x = 0u64;
//! for i in 0..200_000u64 { x = x.wrapping_add(std::hint::black_box(i)); }
//! assert!(me.now()? > t0);
//!
//! // Another thread's clock, by tid (readable from any thread of the process):
//! let h = Builder::new().spawn(|| std::thread::sleep(std::time::Duration::from_millis(20)))?;
//! let c = CpuClock::of_thread(h.tid())?;
//! let used = c.now()?;
//! println!("tid {} used {used:?} of CPU", h.tid());
//! h.join().unwrap();
//! # Ok::<(), posixrt::Error>(())
//! ```

use std::time::Duration;

use super::{JoinHandle, Tid};
use crate::{Error, ErrorKind, Result};

/// A clock that measures consumed CPU time (`CLOCK_THREAD_CPUTIME_ID`, a thread's or a
/// process's CPU clock id).
///
/// # References
///  - [`clock_gettime(2)`](https://man7.org/linux/man-pages/man2/clock_gettime.2.html)
///  - [`pthread_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/pthread_getcpuclockid.3.html)
///  - [`clock_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/clock_getcpuclockid.3.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuClock {
    id: libc::clockid_t,
}

impl CpuClock {
    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`; read through the vDSO
    /// is not possible for CPU clocks: one system call per read).
    #[inline]
    pub const fn current_thread() -> CpuClock {
        CpuClock {
            id: libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }

    /// This process's CPU time, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
    #[inline]
    pub const fn current_process() -> CpuClock {
        CpuClock {
            id: libc::CLOCK_PROCESS_CPUTIME_ID,
        }
    }

    /// The CPU clock of thread `tid` of this process (the kernel's
    /// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, what `pthread_getcpuclockid`
    /// returns). `NotFound` if no such thread exists in this process.
    pub fn of_thread(tid: Tid) -> Result<CpuClock> {
        // ~tid << 3 | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2)
        let id = ((!tid.as_raw()) << 3) | 6;
        let c = CpuClock { id };
        match c.resolution() {
            Ok(_) => Ok(c),
            Err(e) if e.errno() == Some(libc::EINVAL) => Err(Error::new(
                ErrorKind::NotFound,
                "clock_getres",
                format!("no thread with tid {tid} in this process"),
            )),
            Err(e) => Err(e),
        }
    }

    /// The CPU clock of a thread spawned by [`Builder`](super::Builder)
    /// (`pthread_getcpuclockid`).
    pub fn of_handle<T>(handle: &JoinHandle<T>) -> Result<CpuClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: the handle keeps its pthread_t valid; `id` is writable.
        let r = unsafe { libc::pthread_getcpuclockid(handle.as_pthread_t(), &mut id) };
        crate::error::check_pthread("pthread_getcpuclockid", r)?;
        Ok(CpuClock { id })
    }

    /// The CPU clock of process `pid` (`clock_getcpuclockid`); reading another
    /// process's clock may need privilege.
    pub fn of_process(pid: Tid) -> Result<CpuClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: `id` is writable.
        let r = unsafe { libc::clock_getcpuclockid(pid.as_raw(), &mut id) };
        crate::error::check_pthread("clock_getcpuclockid", r)?;
        Ok(CpuClock { id })
    }

    /// The CPU time consumed so far (`clock_gettime`).
    pub fn now(&self) -> Result<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is writable.
        let r = unsafe { libc::clock_gettime(self.id, &mut ts) };
        crate::error::check("clock_gettime", r)?;
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    /// The clock's resolution (`clock_getres`).
    pub fn resolution(&self) -> Result<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is writable.
        let r = unsafe { libc::clock_getres(self.id, &mut ts) };
        crate::error::check("clock_getres", r)?;
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    /// The raw `clockid_t`, for `timer_create` or `clock_nanosleep`.
    #[inline]
    pub const fn as_raw(&self) -> libc::clockid_t {
        self.id
    }
}
