//! The calling thread's scheduling class for prioritized AIO: read it at
//! submission, switch a worker thread to it and back, and the I/O priority
//! (`ioprio`) an io_uring request carries.
//!
//! # References
//! - [`sched_getscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_getscheduler.html)
//! - [`pthread_setschedparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setschedparam.html)
//! - [`ioprio_set(2)`](https://man7.org/linux/man-pages/man2/ioprio_set.2.html)

use std::sync::atomic::Ordering::{Acquire, Release};

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

/// A thread's cached class ([`current_cached`]).
#[derive(Clone, Copy)]
struct Cached {
    class: SchedClass,
    /// How many more calls may use `class`.
    left: u32,
    /// The thread's [`CHANGED`] counter (its tid modulo [`CHANGED_SLOTS`]), or
    /// [`UNREAD`] before the thread's first read (and in a forked child, whose
    /// tid changed, [`current_cached`] finds another slot: a first read again).
    slot: u32,
    /// That counter when `class` was read.
    seen: u32,
}

/// [`Cached::slot`] of a thread that has not read its class yet.
const UNREAD: u32 = u32::MAX;

thread_local! {
    /// The calling thread's class as last read by [`current_cached`].
    static CACHED: std::cell::Cell<Cached> = const {
        std::cell::Cell::new(Cached {
            class: SchedClass::OTHER,
            left: 0,
            slot: UNREAD,
            seen: 0,
        })
    };
    /// Set once glibc's `pthread_getschedparam` cache no longer tells the
    /// thread's class (the thread changed its own class by a raw system call,
    /// another thread changed it by tid, or the thread was created with a class
    /// other than its creator's): [`current_cached`] then reads the kernel's.
    static GLIBC_STALE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How many class changes the thread made to itself through `sched`
    /// ([`class_changed`] with its own tid): see [`change_mark`].
    static OWN_CHANGES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A mark that moves whenever the crate's `sched` calls change the calling
/// thread's class, its own or made by tid from another thread (and, rarely,
/// when they change a thread whose tid shares its counter): a ceiling mutex
/// compares it across its hold to tell a change the holder's priority got
/// meanwhile, which the unlock must keep. A raw system call outside the crate
/// does not move it.
pub(crate) fn change_mark() -> u64 {
    let own = OWN_CHANGES.try_with(std::cell::Cell::get).unwrap_or(0);
    let by_tid = CHANGED[super::tid::current() as usize % CHANGED_SLOTS].load(Acquire);
    (u64::from(own) << 32) | u64::from(by_tid)
}

/// How many calls [`current_cached`] answers from one read.
const CACHE_USES: u32 = 64;

/// Counters of the class changes the crate made to a thread from another
/// thread (by tid: [`forget_cached_raw`]), by tid modulo [`CHANGED_SLOTS`]: the
/// target's next [`current_cached`] sees its counter moved and reads the
/// kernel's class. Threads that share a counter cost each other a re-read.
static CHANGED: [std::sync::atomic::AtomicU32; CHANGED_SLOTS] =
    [const { std::sync::atomic::AtomicU32::new(0) }; CHANGED_SLOTS];
const CHANGED_SLOTS: usize = 256;

/// The calling thread's class as the C library knows it
/// (`pthread_getschedparam(pthread_self())`, which makes no system call after
/// its first: glibc keeps the class and updates it on `pthread_setschedparam`),
/// read again every [`CACHE_USES`] calls, after [`set_current`] or any change
/// this thread makes through `sched` ([`forget_cached`]), and after a change
/// another thread made to it through `sched` (by tid, [`forget_cached_raw`]).
/// The kernel's class is read instead at a thread's first call (glibc gives a
/// new thread its creator's class, which the kernel resets under
/// `SCHED_RESET_ON_FORK`: if the two differ) and once glibc's no longer tells
/// it (a change by a raw system call, from the thread or by tid), until the two
/// agree again. A change made with a raw `sched_setscheduler` outside the crate by
/// another thread is not seen. For the io_uring fast path, where the class only
/// sets a request's `ioprio` and trace field; queued requests, whose order
/// depends on it, use [`current`].
#[inline]
pub(crate) fn current_cached() -> SchedClass {
    let c = CACHED.with(|x| x.get());
    // (A thread that has not read yet has `left` 0: `slot` is read only after.)
    if c.left > 0 && CHANGED[c.slot as usize % CHANGED_SLOTS].load(Acquire) == c.seen {
        CACHED.with(|x| {
            x.set(Cached {
                left: c.left - 1,
                ..c
            })
        });
        return c.class;
    }
    read_cached(c)
}

/// [`current_cached`] when its cached class may not be used: reads it again.
#[cold]
#[inline(never)]
fn read_cached(c: Cached) -> SchedClass {
    let slot = (super::tid::current() as usize % CHANGED_SLOTS) as u32;
    // (Before the class is read: a change made while it is read moves the
    // counter past `seen`, and the next call reads again.)
    let seen = CHANGED[slot as usize].load(Acquire);
    let class = if c.slot != slot {
        // The thread's first read (or its first in a forked child).
        let kernel = current();
        GLIBC_STALE.with(|x| x.set(glibc_class() != kernel));
        kernel
    } else {
        if seen != c.seen {
            // Changed by tid from another thread since the last read.
            GLIBC_STALE.with(|x| x.set(true));
        }
        if GLIBC_STALE.with(|x| x.get()) {
            // The kernel's, until glibc's says the same again (a ceiling lock's
            // raise undone, a class set back by tid): from then on glibc's
            // copy is right, and read without a system call. (Every later
            // change the crate makes marks it stale again.)
            let kernel = current();
            if glibc_class() == kernel {
                GLIBC_STALE.with(|x| x.set(false));
            }
            kernel
        } else {
            glibc_class()
        }
    };
    CACHED.with(|x| {
        x.set(Cached {
            class,
            left: CACHE_USES,
            slot,
            seen,
        })
    });
    class
}

/// The calling thread's class as glibc keeps it (`pthread_getschedparam`, no
/// system call after the thread's first), `SCHED_RESET_ON_FORK` masked off.
fn glibc_class() -> SchedClass {
    let mut policy = 0;
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: both out-pointers are valid and writable; pthread_self is live.
    if unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut p) } != 0 {
        SchedClass::OTHER
    } else {
        SchedClass {
            policy: policy & !libc::SCHED_RESET_ON_FORK,
            priority: p.sched_priority,
        }
    }
}

/// Makes the next [`current_cached`] of the calling thread read the class again:
/// called after every scheduling change the crate makes, so a thread that changes
/// its own class through `sched` sees it at once (a change of another thread costs
/// the caller only a re-read).
#[inline]
pub(crate) fn forget_cached() {
    CACHED.with(|x| x.set(Cached { left: 0, ..x.get() }));
}

/// [`forget_cached`] after a change made by a raw system call
/// (`sched_setscheduler`, `sched_setparam`, `sched_setattr`) or from another
/// thread to thread `tid` (0: the caller), which glibc's cache of that thread
/// does not see: the calling thread's next [`current_cached`] reads again, and
/// so does thread `tid`'s, which reads the kernel's class from then on.
pub(crate) fn forget_cached_raw(tid: i32) {
    if tid == 0 || tid as u32 == super::tid::current() {
        GLIBC_STALE.with(|x| x.set(true));
    } else if tid > 0 {
        CHANGED[tid as usize % CHANGED_SLOTS].fetch_add(1, Release);
    }
    forget_cached();
}

/// Tells the class cache that the crate changed (or tried to change) the class
/// of thread `tid` (0: the caller), so that the next [`current_cached`] of *that*
/// thread reads it again: every change of a thread's class in `sched` (the
/// sporadic server's switches and the creator's after-creation switch among
/// them) goes through here. `by_pthread`: the call was glibc's
/// `pthread_setschedparam` or `pthread_setschedprio`, which keep glibc's copy of
/// the class right; a raw `sched_*` call by tid does not.
pub(crate) fn class_changed(tid: i32, by_pthread: bool) {
    let own = tid == 0 || tid as u32 == super::tid::current();
    if own {
        let _ = OWN_CHANGES.try_with(|c| c.set(c.get().wrapping_add(1)));
    }
    if own && by_pthread {
        forget_cached();
    } else {
        forget_cached_raw(tid);
    }
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

    /// A thread whose class a raw call changed reads the kernel's (glibc's copy
    /// is stale), and goes back to glibc's copy once the two agree again, as
    /// after a ceiling lock's raise is undone: no system call per 64 reads for
    /// the rest of its life.
    #[test]
    fn glibc_s_copy_is_trusted_again_once_it_agrees_with_the_kernel() {
        std::thread::spawn(|| {
            assert_eq!(current_cached(), SchedClass::OTHER);
            let batch = SchedClass {
                policy: libc::SCHED_BATCH,
                priority: 0,
            };
            crate::sys::sched::setscheduler(0, libc::SCHED_BATCH, 0).expect("SCHED_BATCH");
            forget_cached_raw(0);
            assert_eq!(current_cached(), batch, "the kernel's class, by a raw call");
            assert!(GLIBC_STALE.with(|x| x.get()), "glibc still says OTHER");
            crate::sys::sched::setscheduler(0, libc::SCHED_OTHER, 0).expect("SCHED_OTHER");
            forget_cached_raw(0);
            assert_eq!(current_cached(), SchedClass::OTHER);
            assert!(
                !GLIBC_STALE.with(|x| x.get()),
                "glibc's copy agrees with the kernel again"
            );
        })
        .join()
        .expect("the test thread");
    }

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
