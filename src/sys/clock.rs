//! The one clock of the crate: the TSC, calibrated against `CLOCK_MONOTONIC`, or
//! `CLOCK_MONOTONIC` itself where the TSC is not invariant. Used by trace (event
//! timestamps) and by sync tracking (hold and wait times).
//!
//! Recording stores raw ticks (one `rdtsc`, ~7 ns here, against ~20 ns for a vDSO
//! `clock_gettime`); readers convert ticks to nanoseconds of `CLOCK_MONOTONIC` with a
//! linear fit whose slope is refined as the baseline grows.

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::time::Duration;

use rustix::time::{clock_getres, clock_gettime, ClockId};

struct Calib {
    /// Whether ticks are the TSC (else CLOCK_MONOTONIC nanoseconds).
    tsc: bool,
    t0: u64,
    m0: u64,
    /// nanoseconds per tick, as a 32.32 fixed-point number.
    mult: AtomicU64,
    /// CLOCK_MONOTONIC of the last refinement.
    refined: AtomicU64,
}

/// The clock's state: one per process ([`CLOCK`]; a test makes its own).
struct Clock {
    /// Whether [`ticks`] reads the TSC. Set true only after `cal` is published
    /// (Release), and read with Acquire: whoever sees it true, or holds a tick
    /// stamped after seeing it, sees the calibration that converts the tick.
    use_tsc: AtomicBool,
    /// The calibration, published once (a leaked box, never changed or
    /// freed). Not a `OnceLock`: a fork while another thread was calibrating
    /// (2 ms) left its `Once` running for good in the child, whose first trace
    /// call then waited forever (`capi/tests/c/trace_fork_first_use.c`).
    /// Threads that arrive at once each calibrate; the first to publish wins.
    cal: AtomicPtr<Calib>,
}

static CLOCK: Clock = Clock::new();

impl Clock {
    const fn new() -> Clock {
        Clock {
            use_tsc: AtomicBool::new(false),
            cal: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    fn cal(&self) -> Option<&'static Calib> {
        let p = self.cal.load(Acquire);
        // SAFETY: non-null only once `init_with` published a leaked `Box`,
        // which is never changed or freed after.
        unsafe { p.as_ref() }
    }

    /// Calibrates once (`calibrate`, about 2 ms of spinning on first use, if
    /// `invariant` says the TSC can be used); on return the clock is ready,
    /// whichever thread's calibration won.
    fn init_with(&self, invariant: impl FnOnce() -> bool, calibrate: impl FnOnce(bool) -> Calib) {
        let c = match self.cal() {
            Some(c) => c,
            None => self.publish(Box::new(calibrate(invariant()))),
        };
        // The TSC is used only now that the calibration it needs is published
        // (a thread that lost the race, or came after, stores it too: none
        // returns before it is set).
        if c.tsc && !self.use_tsc.load(Relaxed) {
            self.use_tsc.store(true, Release);
        }
    }

    /// Publishes `c` unless another thread published first; the calibration
    /// in force.
    fn publish(&self, c: Box<Calib>) -> &'static Calib {
        let c = Box::into_raw(c);
        match self
            .cal
            .compare_exchange(std::ptr::null_mut(), c, AcqRel, Acquire)
        {
            // SAFETY: `c` is now published: leaked, never changed or freed.
            Ok(_) => unsafe { &*c },
            Err(won) => {
                free_unpublished(c);
                // SAFETY: `won` is the published calibration (non-null, as
                // the compare-exchange failed), never changed or freed.
                unsafe { &*won }
            }
        }
    }

    #[inline(always)]
    fn ticks(&self) -> u64 {
        if self.use_tsc.load(Acquire) {
            rdtsc()
        } else {
            mono_ns()
        }
    }

    fn to_ns(&self, t: u64) -> u64 {
        if !self.use_tsc.load(Acquire) {
            return t;
        }
        // Always there once `use_tsc` is seen true (see `init_with`).
        let Some(c) = self.cal() else { return t };
        refine(c);
        let mult = c.mult.load(Relaxed) as i128;
        let d = t.wrapping_sub(c.t0) as i64 as i128;
        (c.m0 as i128 + ((d * mult) >> 32)).max(0) as u64
    }
}

/// Frees a calibration that lost the race to be published.
fn free_unpublished(c: *mut Calib) {
    // SAFETY: `c` came from `Box::into_raw` in `publish`, and the failed
    // compare-exchange left it unpublished: nobody else has it.
    drop(unsafe { Box::from_raw(c) });
}

/// CLOCK_MONOTONIC in nanoseconds.
pub(crate) fn mono_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CLOCK_REALTIME in nanoseconds.
pub(crate) fn real_ns() -> u64 {
    let t = clock_gettime(ClockId::Realtime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Sleeps about `d` on `CLOCK_MONOTONIC` with the raw system call: not a
/// cancellation point (glibc's `nanosleep`, and so `std::thread::sleep`, is one,
/// and acts on a pending `pthread_cancel` by unwinding), for code that must not
/// be cut short, such as an exit handler that cannot unwind. A signal handler
/// may end it early.
pub(crate) fn sleep_nocancel(d: Duration) {
    let ts = libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as _,
    };
    // SAFETY: `ts` is a live timespec the kernel only reads; the remainder
    // pointer is null.
    unsafe {
        libc::syscall(
            libc::SYS_clock_nanosleep,
            libc::CLOCK_MONOTONIC,
            0,
            &ts as *const libc::timespec,
            std::ptr::null_mut::<libc::timespec>(),
        );
    }
}

/// The raw TSC (what [`ticks`] returns when [`uses_tsc`]): for a hot path that
/// checked [`uses_tsc`] once and must not branch on it per call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` has no memory effects; it is always available on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    mono_ns()
}

fn tsc_invariant() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(s) => {
            let flags = s.lines().find(|l| l.starts_with("flags")).unwrap_or("");
            flags.split_whitespace().any(|f| f == "constant_tsc")
                && flags.split_whitespace().any(|f| f == "nonstop_tsc")
        }
        Err(_) => false,
    }
}

/// Calibrates once (about 2 ms of spinning on first use).
pub(crate) fn init() {
    CLOCK.init_with(tsc_invariant, calibrate);
}

fn calibrate(tsc: bool) -> Calib {
    if !tsc {
        return Calib {
            tsc,
            t0: 0,
            m0: 0,
            mult: AtomicU64::new(1 << 32),
            refined: AtomicU64::new(u64::MAX),
        };
    }
    let (t0, m0) = pair();
    let mut t1;
    let mut m1;
    loop {
        (t1, m1) = pair();
        if m1 >= m0 + 2_000_000 {
            break;
        }
    }
    Calib {
        tsc,
        t0,
        m0,
        mult: AtomicU64::new(slope(t0, m0, t1, m1)),
        refined: AtomicU64::new(m1),
    }
}

/// A (ticks, CLOCK_MONOTONIC ns) pair: the clock read bracketed by two TSC reads,
/// taking the middle; the tightest bracket of a few tries, so a preemption (a vCPU
/// descheduled between the reads) does not skew the calibration by milliseconds.
fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = rdtsc();
        let m = mono_ns();
        let b = rdtsc();
        let w = b.wrapping_sub(a);
        if w < best.0 {
            best = (w, a + w / 2, m);
        }
    }
    (best.1, best.2)
}

fn slope(t0: u64, m0: u64, t1: u64, m1: u64) -> u64 {
    let dt = t1.wrapping_sub(t0).max(1) as u128;
    (((m1 - m0) as u128) << 32)
        .checked_div(dt)
        .unwrap_or(1 << 32) as u64
}

/// The raw clock value stored in records.
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    CLOCK.ticks()
}

/// Converts ticks to nanoseconds of CLOCK_MONOTONIC.
pub(crate) fn to_ns(t: u64) -> u64 {
    CLOCK.to_ns(t)
}

fn refine(c: &Calib) {
    let last = c.refined.load(Relaxed);
    let now = mono_ns();
    // Refine at most once a second, on a baseline that keeps growing.
    if now > last + 1_000_000_000
        && c.refined
            .compare_exchange(last, now, Relaxed, Relaxed)
            .is_ok()
    {
        let (t1, m1) = pair();
        c.mult.store(slope(c.t0, c.m0, t1, m1), Relaxed);
    }
}

/// The real resolution of the clock records are stamped with.
pub(crate) fn resolution() -> Duration {
    init();
    if CLOCK.use_tsc.load(Acquire) {
        let c = CLOCK.cal().map(|c| c.mult.load(Relaxed)).unwrap_or(1 << 32);
        // ns per tick, rounded up to the nanosecond a timespec can carry.
        Duration::from_nanos(c.div_ceil(1 << 32).max(1))
    } else {
        let r = clock_getres(ClockId::Monotonic);
        Duration::new(r.tv_sec as u64, r.tv_nsec as u32)
    }
}

/// Whether records are stamped with the TSC (else CLOCK_MONOTONIC).
pub(crate) fn uses_tsc() -> bool {
    init();
    CLOCK.use_tsc.load(Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While the calibration runs (and until it is published) the TSC is not
    /// in use: a tick taken then is CLOCK_MONOTONIC, which `to_ns` returns
    /// as it is, as it must.
    #[test]
    fn the_tsc_is_not_in_use_while_it_is_calibrated() {
        let clock: &'static Clock = Box::leak(Box::new(Clock::new()));
        let during = std::cell::Cell::new(None);
        clock.init_with(
            || true,
            |tsc| {
                let c = calibrate(tsc);
                during.set(Some((clock.use_tsc.load(Acquire), clock.cal().is_some())));
                c
            },
        );
        assert_eq!(
            during.get(),
            Some((false, false)),
            "(TSC in use, calibration published)"
        );
        assert!(
            clock.use_tsc.load(Acquire),
            "the init leaves the TSC in use"
        );
        assert!(clock.cal().is_some_and(|c| c.tsc));
    }

    /// A reader that sees the TSC in use while another thread calibrates
    /// finds the calibration published, and converts a tick to about now
    /// (not the raw TSC taken for nanoseconds).
    #[test]
    fn the_tsc_is_used_only_once_its_calibration_is_published() {
        let clock: &'static Clock = Box::leak(Box::new(Clock::new()));
        let (started, done) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|s| {
            s.spawn(|| {
                let invariant = || {
                    started.store(true, Release);
                    true
                };
                clock.init_with(invariant, calibrate);
                done.store(true, Release);
            });
            while !started.load(Acquire) {
                std::hint::spin_loop();
            }
            // The first moment the TSC is in use (or the end of the init).
            while !clock.use_tsc.load(Acquire) && !done.load(Acquire) {
                std::hint::spin_loop();
            }
            assert!(
                clock.use_tsc.load(Acquire),
                "the init leaves the TSC in use"
            );
            assert!(
                clock.cal().is_some(),
                "the TSC in use before its calibration"
            );
            let ns = clock.to_ns(clock.ticks());
            let now = mono_ns();
            assert!(ns.abs_diff(now) < 1_000_000_000, "{ns} ns at {now}");
        });
    }

    /// Without an invariant TSC, ticks are CLOCK_MONOTONIC nanoseconds, both
    /// ways.
    #[test]
    fn without_the_tsc_ticks_are_monotonic_nanoseconds() {
        let clock: &'static Clock = Box::leak(Box::new(Clock::new()));
        clock.init_with(|| false, calibrate);
        assert!(!clock.use_tsc.load(Acquire));
        assert!(clock.cal().is_some_and(|c| !c.tsc));
        let before = mono_ns();
        let t = clock.ticks();
        assert!(t >= before && t <= mono_ns());
        assert_eq!(clock.to_ns(t), t);
    }
}
