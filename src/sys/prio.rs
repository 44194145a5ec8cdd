//! The calling thread's scheduling class for prioritized AIO: read it at
//! submission, switch a worker thread to it and back, and the I/O priority
//! (`ioprio`) an io_uring request carries.
//!
//! # References
//! - [`sched_getscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getscheduler.html)
//! - [`pthread_setschedparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setschedparam.html)
//! - [`ioprio_set(2)`](https://man7.org/linux/man-pages/man2/ioprio_set.2.html)

/// A scheduling policy and static priority (0 for the non-real-time policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SchedClass {
    pub policy: i32,
    pub priority: i32,
}

impl SchedClass {
    /// `SCHED_OTHER`, priority 0.
    pub(crate) const OTHER: SchedClass = SchedClass {
        policy: libc::SCHED_OTHER,
        priority: 0,
    };

    /// True for `SCHED_FIFO` and `SCHED_RR`.
    #[inline]
    pub(crate) fn is_rt(self) -> bool {
        self.policy == libc::SCHED_FIFO || self.policy == libc::SCHED_RR
    }
}

/// The calling thread's policy and priority, from `sched_getattr(0)` (one
/// system call; `sched_getscheduler(0)` and `sched_getparam(0)` where that is
/// refused): `SCHED_OTHER` 0 if the calls fail, which they cannot for oneself.
/// `SCHED_RESET_ON_FORK` is masked off.
pub(crate) fn current() -> SchedClass {
    // The kernel's view (not glibc's cached one: a class set with
    // sched_setscheduler or from outside the thread is seen too).
    if let Ok(a) = super::sched::getattr(0) {
        return SchedClass {
            policy: a.sched_policy as i32 & !libc::SCHED_RESET_ON_FORK,
            priority: a.sched_priority as i32,
        };
    }
    let Ok(policy) = super::sched::getscheduler(0) else {
        return SchedClass::OTHER;
    };
    let priority = super::sched::getparam(0).unwrap_or(0);
    SchedClass {
        policy: policy & !libc::SCHED_RESET_ON_FORK,
        priority,
    }
}

thread_local! {
    /// The calling thread's class as last read by [`current_cached`], and how
    /// many more calls may use it.
    static CACHED: std::cell::Cell<(SchedClass, u32)> =
        const { std::cell::Cell::new((SchedClass::OTHER, 0)) };
    /// Set once the thread changed its own class by a raw system call, which
    /// glibc's `pthread_getschedparam` cache does not see: [`current_cached`]
    /// then reads the kernel's class instead.
    static GLIBC_STALE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How many calls [`current_cached`] answers from one read.
const CACHE_USES: u32 = 64;

/// The calling thread's class as the C library knows it
/// (`pthread_getschedparam(pthread_self())`, which makes no system call after
/// its first: glibc keeps the class and updates it on `pthread_setschedparam`),
/// read again every [`CACHE_USES`] calls and after [`set_current`] or any change
/// this thread makes through `sched` ([`forget_cached`]; after one by a raw
/// system call, the re-reads ask the kernel). A change made with a raw
/// `sched_setscheduler` outside the crate, or by another thread, is not seen. For
/// the io_uring fast path, where the class only sets a request's `ioprio` and
/// trace field; queued requests, whose order depends on it, use [`current`].
#[inline]
pub(crate) fn current_cached() -> SchedClass {
    let (c, left) = CACHED.with(|x| x.get());
    if left > 0 {
        CACHED.with(|x| x.set((c, left - 1)));
        return c;
    }
    if GLIBC_STALE.with(|x| x.get()) {
        let c = current();
        CACHED.with(|x| x.set((c, CACHE_USES)));
        return c;
    }
    let mut policy = 0;
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: both out-pointers are valid and writable; pthread_self is live.
    let c =
        if unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut p) } != 0 {
            SchedClass::OTHER
        } else {
            SchedClass {
                policy: policy & !libc::SCHED_RESET_ON_FORK,
                priority: p.sched_priority,
            }
        };
    CACHED.with(|x| x.set((c, CACHE_USES)));
    c
}

/// Makes the next [`current_cached`] of the calling thread read the class again:
/// called after every scheduling change the crate makes, so a thread that changes
/// its own class through `sched` sees it at once (a change of another thread costs
/// the caller only a re-read).
#[inline]
pub(crate) fn forget_cached() {
    CACHED.with(|x| x.set((SchedClass::OTHER, 0)));
}

/// [`forget_cached`] after a change made by a raw system call
/// (`sched_setscheduler`, `sched_setparam`, `sched_setattr`) to thread `tid`
/// (0: the caller): if that is the calling thread, glibc's cache no longer
/// tells its class, so [`current_cached`] reads the kernel's from then on.
pub(crate) fn forget_cached_raw(tid: i32) {
    if tid == 0 || tid as u32 == super::tid::current() {
        GLIBC_STALE.with(|x| x.set(true));
    }
    forget_cached();
}

/// `pthread_setschedparam(pthread_self(), policy, priority)`: switches the calling
/// thread. Returns the errno on failure.
pub(crate) fn set_current(c: SchedClass) -> Result<(), i32> {
    let p = libc::sched_param {
        sched_priority: c.priority,
    };
    // SAFETY: `p` is a valid sched_param the call only reads.
    match unsafe { libc::pthread_setschedparam(libc::pthread_self(), c.policy, &p) } {
        0 => {
            forget_cached();
            Ok(())
        }
        e => Err(e),
    }
}

/// `IOPRIO_CLASS_RT`.
pub(crate) const IOPRIO_CLASS_RT: u16 = 1;
/// `IOPRIO_CLASS_SHIFT`.
const IOPRIO_CLASS_SHIFT: u16 = 13;

/// Whether requests may carry `IOPRIO_CLASS_RT`: 0 not asked yet, 1 yes, 2 no.
static RT_IOPRIO: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether this process may give its I/O the real-time class. The kernel
/// refuses `IOPRIO_CLASS_RT` (EPERM) without CAP_SYS_NICE or CAP_SYS_ADMIN,
/// also to a thread that runs SCHED_FIFO through RLIMIT_RTPRIO. Asked once
/// (`capget` of the calling thread; a process's threads share their
/// capabilities unless the program splits them), and false for good after
/// [`rt_ioprio_refused`].
#[inline]
pub(crate) fn rt_ioprio_allowed() -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    match RT_IOPRIO.load(Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = may_raise_ioprio();
            RT_IOPRIO.store(if ok { 1 } else { 2 }, Relaxed);
            ok
        }
    }
}

/// The kernel refused a request's real-time class: no request carries it
/// from now on.
pub(crate) fn rt_ioprio_refused() {
    RT_IOPRIO.store(2, std::sync::atomic::Ordering::Relaxed);
}

/// CAP_SYS_NICE or CAP_SYS_ADMIN in the calling thread's effective set.
#[cold]
fn may_raise_ioprio() -> bool {
    use rustix::thread::{capabilities, CapabilitySet};
    capabilities(None).is_ok_and(|c| {
        c.effective
            .intersects(CapabilitySet::SYS_NICE | CapabilitySet::SYS_ADMIN)
    })
}

/// The io_uring `ioprio` of a request with effective real-time priority `prio`
/// (1..=99): `IOPRIO_CLASS_RT` with level 0 (highest) for 88..=99 down to 7
/// (lowest) for 1..=12.
#[inline]
pub(crate) fn ioprio_rt(prio: i32) -> u16 {
    let p = prio.clamp(1, 99) as u16;
    let level = 7 - ((p - 1) * 8 / 99).min(7);
    (IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT) | level
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-call reading, for comparison with [`current`].
    fn by_two_calls() -> SchedClass {
        let policy = crate::sys::sched::getscheduler(0).expect("sched_getscheduler(0)");
        SchedClass {
            policy: policy & !libc::SCHED_RESET_ON_FORK,
            priority: crate::sys::sched::getparam(0).expect("sched_getparam(0)"),
        }
    }

    /// A change through the crate's own calls on the current thread
    /// (`sched::set_current_scheduling`, `sched::set_current_priority`) is seen by
    /// the next `current_cached`, not up to CACHE_USES calls later. SCHED_BATCH
    /// needs no privilege.
    #[test]
    fn current_cached_sees_the_crates_own_changes_at_once() {
        std::thread::spawn(|| {
            assert_eq!(current_cached(), SchedClass::OTHER);
            crate::sched::set_current_scheduling(crate::sched::Priority::batch()).unwrap();
            let batch = SchedClass {
                policy: libc::SCHED_BATCH,
                priority: 0,
            };
            assert_eq!(current_cached(), batch);
            crate::sched::set_current_priority(0).unwrap();
            crate::sched::set_current_scheduling(crate::sched::Priority::other()).unwrap();
            assert_eq!(current_cached(), SchedClass::OTHER);
        })
        .join()
        .expect("the test thread");
    }

    /// A change through `sched::set_scheduler(None, ..)` (a raw
    /// `sched_setscheduler`, which glibc's `pthread_getschedparam` cache does not
    /// see) by a thread that read its class before is seen by the next
    /// `current_cached`.
    #[test]
    fn current_cached_sees_a_raw_change_of_its_own_thread() {
        std::thread::spawn(|| {
            assert_eq!(current_cached(), SchedClass::OTHER);
            crate::sched::set_scheduler(None, crate::sched::Priority::batch()).unwrap();
            let batch = SchedClass {
                policy: libc::SCHED_BATCH,
                priority: 0,
            };
            assert_eq!(current_cached(), batch);
            crate::sched::set_current_scheduling(crate::sched::Priority::other()).unwrap();
            assert_eq!(current_cached(), SchedClass::OTHER);
        })
        .join()
        .expect("the test thread");
    }

    /// `current` (one `sched_getattr`) gives what `sched_getscheduler` and
    /// `sched_getparam` give: SCHED_OTHER 0, then, where the privilege allows,
    /// SCHED_FIFO 7 and SCHED_RR 3 with `SCHED_RESET_ON_FORK`, set from the
    /// thread itself.
    #[test]
    fn current_reads_the_kernels_class_in_one_call() {
        std::thread::spawn(|| {
            let other = current();
            assert_eq!(other, SchedClass::OTHER);
            assert_eq!(other, by_two_calls());
            let p = libc::sched_param { sched_priority: 7 };
            // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
                // No privilege (CAP_SYS_NICE or RLIMIT_RTPRIO): the class stays.
                assert_eq!(current(), SchedClass::OTHER);
                return;
            }
            let fifo = SchedClass {
                policy: libc::SCHED_FIFO,
                priority: 7,
            };
            assert_eq!(current(), fifo);
            assert_eq!(by_two_calls(), fifo);
            let p = libc::sched_param { sched_priority: 3 };
            // SAFETY: as above.
            let r = unsafe {
                libc::sched_setscheduler(0, libc::SCHED_RR | libc::SCHED_RESET_ON_FORK, &p)
            };
            assert_eq!(r, 0, "SCHED_RR after SCHED_FIFO was allowed");
            let rr = SchedClass {
                policy: libc::SCHED_RR,
                priority: 3,
            };
            assert_eq!(current(), rr);
            assert_eq!(by_two_calls(), rr);
        })
        .join()
        .expect("the test thread");
    }
}
