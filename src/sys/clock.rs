//! The one clock of the crate: the TSC, calibrated against `CLOCK_MONOTONIC`, or
//! `CLOCK_MONOTONIC` itself where the TSC is not invariant. Used by trace (event
//! timestamps) and by sync tracking (hold and wait times).
//!
//! Recording stores raw ticks (one `rdtsc`, ~7 ns here, against ~20 ns for a vDSO
//! `clock_gettime`); readers convert ticks to nanoseconds of `CLOCK_MONOTONIC` with a
//! linear fit whose slope is refined as the baseline grows.

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};
use std::time::Duration;

use rustix::time::{clock_getres, clock_gettime, ClockId};

static USE_TSC: AtomicBool = AtomicBool::new(false);

struct Calib {
    t0: u64,
    m0: u64,
    /// nanoseconds per tick, as a 32.32 fixed-point number.
    mult: AtomicU64,
    /// CLOCK_MONOTONIC of the last refinement.
    refined: AtomicU64,
}

/// The calibration, published once (a leaked box, never changed or freed).
/// Not a `OnceLock`: a fork while another thread was calibrating (2 ms) left
/// its `Once` running for good in the child, whose first trace call then waited
/// forever (`capi/tests/c/trace_fork_first_use.c`). Threads that arrive at once
/// each calibrate; the first to publish wins.
static CAL: AtomicPtr<Calib> = AtomicPtr::new(std::ptr::null_mut());

fn cal() -> Option<&'static Calib> {
    let p = CAL.load(Acquire);
    // SAFETY: non-null only once `init` published a leaked `Box`, which is
    // never changed or freed after.
    unsafe { p.as_ref() }
}

/// Frees a calibration that lost the race to be published.
fn free_unpublished(c: *mut Calib) {
    // SAFETY: `c` came from `Box::into_raw` in `init`, and the failed
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
    if cal().is_some() {
        return;
    }
    let c = Box::into_raw(Box::new(calibrate()));
    if CAL
        .compare_exchange(std::ptr::null_mut(), c, AcqRel, Acquire)
        .is_err()
    {
        free_unpublished(c);
    }
}

fn calibrate() -> Calib {
    let tsc = tsc_invariant();
    USE_TSC.store(tsc, Relaxed);
    if !tsc {
        return Calib {
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
    if USE_TSC.load(Relaxed) {
        rdtsc()
    } else {
        mono_ns()
    }
}

/// Converts ticks to nanoseconds of CLOCK_MONOTONIC.
pub(crate) fn to_ns(t: u64) -> u64 {
    let Some(c) = cal() else { return t };
    if !USE_TSC.load(Relaxed) {
        return t;
    }
    refine(c);
    let mult = c.mult.load(Relaxed) as i128;
    let d = t.wrapping_sub(c.t0) as i64 as i128;
    (c.m0 as i128 + ((d * mult) >> 32)).max(0) as u64
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
    if USE_TSC.load(Relaxed) {
        let c = cal().map(|c| c.mult.load(Relaxed)).unwrap_or(1 << 32);
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
    USE_TSC.load(Relaxed)
}
