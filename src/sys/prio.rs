//! The calling thread's scheduling class for prioritized AIO: read it at
//! submission, switch a worker thread to it and back, and the I/O priority
//! (`ioprio`) an io_uring request carries.
//!
//! # References
//! - [`pthread_getschedparam`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_getschedparam.html)
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

/// `pthread_getschedparam(pthread_self())`: the calling thread's policy and
/// priority (`SCHED_OTHER` 0 if the call fails, which it cannot for oneself).
/// `SCHED_RESET_ON_FORK` is masked off.
pub(crate) fn current() -> SchedClass {
    let c = read_current();
    CACHED.with(|x| x.set((c, Some(std::time::Instant::now()))));
    c
}

fn read_current() -> SchedClass {
    let mut policy = 0;
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: both out-pointers are valid and writable; pthread_self is live.
    let r = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut p) };
    if r != 0 {
        return SchedClass::OTHER;
    }
    SchedClass {
        policy: policy & !libc::SCHED_RESET_ON_FORK,
        priority: p.sched_priority,
    }
}

thread_local! {
    /// The calling thread's class as last read, and when.
    static CACHED: std::cell::Cell<(SchedClass, Option<std::time::Instant>)> =
        const { std::cell::Cell::new((SchedClass::OTHER, None)) };
}

/// How long [`current_cached`] trusts a value it read.
const CACHE_AGE: std::time::Duration = std::time::Duration::from_millis(1);

/// [`current`], read at most once a millisecond per thread: for the io_uring
/// fast path, where the class only sets a request's `ioprio` and trace field
/// (queued requests, whose order depends on it, read it exactly).
#[inline]
pub(crate) fn current_cached() -> SchedClass {
    let now = std::time::Instant::now();
    let (c, at) = CACHED.with(|x| x.get());
    if let Some(at) = at {
        if now.saturating_duration_since(at) < CACHE_AGE {
            return c;
        }
    }
    let c = current();
    CACHED.with(|x| x.set((c, Some(now))));
    c
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
            CACHED.with(|x| x.set((c, Some(std::time::Instant::now()))));
            Ok(())
        }
        e => Err(e),
    }
}

/// `IOPRIO_CLASS_RT`.
pub(crate) const IOPRIO_CLASS_RT: u16 = 1;
/// `IOPRIO_CLASS_SHIFT`.
const IOPRIO_CLASS_SHIFT: u16 = 13;

/// The io_uring `ioprio` of a request with effective real-time priority `prio`
/// (1..=99): `IOPRIO_CLASS_RT` with level 0 (highest) for 88..=99 down to 7
/// (lowest) for 1..=12.
#[inline]
pub(crate) fn ioprio_rt(prio: i32) -> u16 {
    let p = prio.clamp(1, 99) as u16;
    let level = 7 - ((p - 1) * 8 / 99).min(7);
    (IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT) | level
}
