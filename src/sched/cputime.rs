//! CPU-time clocks: how much CPU a thread (or process) has consumed.
//!
//! These are the building block of a user-space sporadic server (POSIX
//! `SCHED_SPORADIC` does not exist on Linux): read a thread's consumed time, compare
//! it with its budget ([`Budget`]), and switch its priority
//! ([`JoinHandle::set_scheduling`](super::JoinHandle::set_scheduling),
//! [`set_thread_scheduling`](super::set_thread_scheduling) by tid). A [`CpuClock`]
//! also works with `timer_create` through [`CpuClock::as_raw`], for a timer that
//! fires when the budget is spent instead of polling. `clock_nanosleep` with
//! `TIMER_ABSTIME` works too: on another thread's clock ([`CpuClock::of_thread`])
//! it sleeps until that thread has consumed the given CPU time. Only the calling
//! thread's own CPU clock is refused (EINVAL: it cannot advance while the thread
//! sleeps).
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
//!
//! # A sporadic-server budget check
//!
//! The worker may use `budget` of CPU at its high priority; once that is spent it
//! drops to the low priority until the budget is replenished (POSIX
//! `sched_ss_init_budget`, `sched_priority`, `sched_ss_low_priority`):
//!
//! ```
//! use std::time::{Duration, Instant};
//! use posixrt::sched::{cputime::Budget, Builder, Priority};
//!
//! // A real server uses Priority::fifo(high) / Priority::fifo(low) (CAP_SYS_NICE);
//! // SCHED_OTHER / SCHED_BATCH keep this example runnable without privilege.
//! let (high, low) = (Priority::other(), Priority::batch());
//! let (stop, stopped) = std::sync::mpsc::channel::<()>();
//! let worker = Builder::new().scheduling(high).spawn(move || {
//!     // Work that wants more CPU than its budget.
//!     while stopped.try_recv().is_err() {
//!         std::hint::spin_loop();
//!     }
//! })?;
//! let mut budget = Budget::new(worker.cpu_clock()?, Duration::from_millis(5))?;
//! let t0 = Instant::now();
//! while !budget.exhausted()? && t0.elapsed() < Duration::from_secs(5) {
//!     std::thread::sleep(Duration::from_millis(1));
//! }
//! worker.set_scheduling(low)?; // budget spent: background priority
//! assert_eq!(worker.scheduling()?, low);
//! // ... one replenishment period after activation:
//! budget.replenish()?;
//! worker.set_scheduling(high)?;
//! assert!(budget.remaining()? > Duration::ZERO);
//! stop.send(()).unwrap();
//! worker.join().unwrap();
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! For a kernel-enforced budget without the low-priority phase, see
//! [`deadline`](super::deadline) (`SCHED_DEADLINE`, with
//! [`DeadlineFlags::DL_OVERRUN`](super::deadline::DeadlineFlags::DL_OVERRUN) to get
//! `SIGXCPU` on overrun).

use std::time::Duration;

use super::Tid;
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
    #[doc(alias = "CLOCK_THREAD_CPUTIME_ID")]
    pub const fn current_thread() -> CpuClock {
        CpuClock {
            id: libc::CLOCK_THREAD_CPUTIME_ID,
        }
    }

    /// This process's CPU time, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
    #[inline]
    #[doc(alias = "CLOCK_PROCESS_CPUTIME_ID")]
    pub const fn current_process() -> CpuClock {
        CpuClock {
            id: libc::CLOCK_PROCESS_CPUTIME_ID,
        }
    }

    /// The CPU clock of thread `tid` of this process (the kernel's
    /// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, what `pthread_getcpuclockid`
    /// returns). `NotFound` if no such thread exists in this process (for a live
    /// thread of another process the hint names that process: the kernel refuses
    /// the thread clocks of other processes).
    #[doc(alias = "pthread_getcpuclockid")]
    #[doc(alias = "clock_getcpuclockid")]
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
            )
            .with_hint(super::tid::not_in_this_process_hint(
                tid,
                "the kernel lets a process read the CPU-time clocks of its own threads \
                 only (so the sporadic server serves only them); for another process's \
                 CPU time use CpuClock::of_process(pid)",
            ))),
            Err(e) => Err(e),
        }
    }

    /// A clock from a `clockid_t` that `pthread_getcpuclockid` produced.
    #[inline]
    pub(crate) const fn from_id(id: libc::clockid_t) -> CpuClock {
        CpuClock { id }
    }

    /// The CPU clock of process `pid` (`clock_getcpuclockid`); reading another
    /// process's clock may need privilege.
    #[doc(alias = "clock_getcpuclockid")]
    pub fn of_process(pid: Tid) -> Result<CpuClock> {
        let id = crate::sys::cputime::getcpuclockid(pid.as_raw())
            .map_err(|e| Error::from_errno("clock_getcpuclockid", e))?;
        Ok(CpuClock { id })
    }

    /// The CPU time consumed so far (`clock_gettime`).
    ///
    /// Errors: the clock of a thread or process that has ended (the kernel answers
    /// EINVAL) is [`ErrorKind::NotFound`], as every call on an ended thread is.
    ///
    /// # References
    ///  - [`clock_gettime(2)`](https://man7.org/linux/man-pages/man2/clock_gettime.2.html)
    #[doc(alias = "clock_gettime")]
    pub fn now(&self) -> Result<Duration> {
        crate::sys::cputime::gettime(self.id).map_err(|e| self.error("clock_gettime", e))
    }

    /// The clock's resolution (`clock_getres`). Errors as [`now`](Self::now).
    ///
    /// # References
    ///  - [`clock_getres(2)`](https://man7.org/linux/man-pages/man2/clock_getres.2.html)
    #[doc(alias = "clock_getres")]
    pub fn resolution(&self) -> Result<Duration> {
        crate::sys::cputime::getres(self.id).map_err(|e| self.error("clock_getres", e))
    }

    /// The error of a failed read. The kernel answers EINVAL for a CPU clock
    /// whose thread or process is gone: that is `NotFound`, naming it. (The ids
    /// of the calling thread's and process's clocks are positive constants; a
    /// clock of a given tid or pid has a negative id, `~id << 3 | kind`.)
    fn error(&self, call: &'static str, errno: i32) -> Error {
        let e = Error::from_errno(call, errno);
        if errno != libc::EINVAL || self.id >= 0 {
            return e;
        }
        let who = if self.id & 4 != 0 {
            "thread"
        } else {
            "process"
        };
        e.with_kind(ErrorKind::NotFound)
            .with_message(format!(
                "the {who} {} of this CPU clock has ended",
                !(self.id >> 3)
            ))
            .with_hint("a CPU-time clock lasts as long as its thread or process")
    }

    /// The raw `clockid_t`, for `timer_create` or `clock_nanosleep`.
    #[inline]
    pub const fn as_raw(&self) -> libc::clockid_t {
        self.id
    }
}

/// A CPU-time budget on a [`CpuClock`]: how much of `budget` the clock's thread has
/// used since the last [`replenish`](Budget::replenish). The accounting half of a
/// sporadic server; see the [module docs](self) for the priority half.
///
/// # References
///  - [`clock_gettime(2)`](https://man7.org/linux/man-pages/man2/clock_gettime.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    clock: CpuClock,
    budget: Duration,
    base: Duration,
}

impl Budget {
    /// A full budget of `budget` on `clock`, counted from the clock's value now.
    /// A zero budget is `InvalidInput`.
    pub fn new(clock: CpuClock, budget: Duration) -> Result<Budget> {
        if budget.is_zero() {
            return Err(Error::invalid("clock_gettime", "a zero CPU budget")
                .with_hint("give the budget (POSIX sched_ss_init_budget) a positive length"));
        }
        Ok(Budget {
            clock,
            budget,
            base: clock.now()?,
        })
    }

    /// The budget's size.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// The clock it is counted on.
    pub fn clock(&self) -> CpuClock {
        self.clock
    }

    /// CPU time used since the budget was (re)filled.
    pub fn used(&self) -> Result<Duration> {
        Ok(self.clock.now()?.saturating_sub(self.base))
    }

    /// What is left (zero once spent).
    pub fn remaining(&self) -> Result<Duration> {
        Ok(self.budget.saturating_sub(self.used()?))
    }

    /// Whether the budget is spent.
    pub fn exhausted(&self) -> Result<bool> {
        Ok(self.used()? >= self.budget)
    }

    /// Fills the budget again: counting restarts from the clock's value now.
    pub fn replenish(&mut self) -> Result<()> {
        self.base = self.clock.now()?;
        Ok(())
    }
}
