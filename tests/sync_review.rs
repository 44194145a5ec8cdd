//! Review tests of posixrt::sync: behaviours a port of POSIX real-time C code
//! relies on, each found missing once.
//!
//! Tests that change scheduling are serialised and run their real-time threads
//! pinned to one CPU; none spins, and none asserts a duration.

#[path = "common/self_sched.rs"]
mod self_sched;
use self_sched::{have_rt, kernel_prio, self_policy, set_self};

use std::sync::Mutex;

use posixrt::sched;
use posixrt::sync::{cache_ceiling_base, ceiling_mutex, current_tid, refresh_ceiling_base};

static SCHED_LOCK: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SCHED_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` in a thread pinned to the first allowed CPU at SCHED_FIFO `prio`.
fn at_fifo<T: Send + 'static>(prio: i32, f: impl FnOnce() -> T + Send + 'static) -> T {
    let cpu = sched::CpuSet::allowed()
        .unwrap()
        .iter()
        .next()
        .expect("some CPU");
    sched::Builder::new()
        .scheduling(sched::Priority::fifo(prio).unwrap())
        .affinity(sched::CpuSet::single(cpu).unwrap())
        .spawn(f)
        .expect("SCHED_FIFO thread")
        .join()
        .unwrap()
}

/// A thread that changes its priority behind the crate's back while it holds a
/// ceiling mutex, and says so with `refresh_ceiling_base` (as the docs of
/// `cache_ceiling_base` ask, and as the only way to report a raw change): the
/// new priority is its base from then on. It runs at the ceiling while it
/// holds the mutex (POSIX: the higher of its priority and the ceiling), and the
/// unlock leaves it at the new priority, not the one read before the change.
/// A refresh with no change in between changes nothing.
#[test]
fn a_refresh_while_holding_a_ceiling_mutex_adopts_the_new_priority() {
    let _g = serial();
    if !have_rt() {
        assert_eq!(set_self(libc::SCHED_FIFO, 10), Err(libc::EPERM));
        return;
    }
    let seen = at_fifo(10, || {
        let me = current_tid();
        let m = ceiling_mutex(30, ()).unwrap();
        let mut seen = Vec::new();
        for cached in [true, false] {
            set_self(libc::SCHED_FIFO, 10).unwrap();
            cache_ceiling_base(cached);
            let g = m.lock();
            set_self(libc::SCHED_FIFO, 20).unwrap();
            refresh_ceiling_base();
            let inside = kernel_prio(me);
            drop(g);
            seen.push((cached, inside, kernel_prio(me), self_policy()));
            // No change since: the refresh keeps the base (20).
            let g = m.lock();
            refresh_ceiling_base();
            let inside = kernel_prio(me);
            drop(g);
            seen.push((cached, inside, kernel_prio(me), self_policy()));
        }
        cache_ceiling_base(false);
        seen
    });
    let fifo20 = (libc::SCHED_FIFO, 20);
    assert_eq!(
        seen,
        [
            (true, -31, -21, fifo20),
            (true, -31, -21, fifo20),
            (false, -31, -21, fifo20),
            (false, -31, -21, fifo20),
        ]
    );
}

/// Hold times are measured at the timing level only. A hold that began at
/// the timing level and ended while tracking was off left its start in the
/// record; with tracking back on at the counts level, the next unlock added
/// the time since that start (the whole untracked stretch) as a hold.
#[test]
fn the_counts_level_records_no_hold_time_left_from_the_timing_level() {
    use posixrt::sync::{reset_stats, set_tracking, NormalMutex, PiMutex, Tracking};
    let _g = serial();
    let n = NormalMutex::new(());
    let p = PiMutex::new(());
    // SAFETY (both raw() calls): the raw locks are only named and read.
    unsafe { n.raw() }.set_name("review-normal");
    unsafe { p.raw() }.set_name("review-pi");
    set_tracking(Tracking::Timing);
    let (gn, gp) = (n.lock(), p.lock());
    set_tracking(Tracking::Off);
    drop((gn, gp));
    // Some untracked time passes (its length does not matter: it must not
    // show at all).
    std::thread::sleep(std::time::Duration::from_millis(2));
    set_tracking(Tracking::Counts);
    reset_stats();
    drop(n.lock());
    drop(p.lock());
    let sn = unsafe { n.raw() }.snapshot().expect("named");
    let sp = unsafe { p.raw() }.snapshot().expect("named");
    set_tracking(Tracking::Off);
    for s in [sn, sp] {
        assert_eq!(s.stats.locks, 1, "{:?}", s.info.name);
        assert_eq!(
            (s.stats.hold_total, s.stats.hold_max),
            (std::time::Duration::ZERO, std::time::Duration::ZERO),
            "{:?}",
            s.info.name
        );
    }
}

/// An owner recorded before tracking was switched off, which unlocked while it
/// was off, is not shown once tracking is back on: it would name a thread that
/// holds nothing (in `objects()`, `rtstat` and `find_deadlocks`, where it made
/// cycles that do not exist), and a waiter could not note the real owner over it.
#[test]
fn an_owner_that_unlocked_while_tracking_was_off_is_forgotten() {
    use posixrt::sync::{objects, set_tracking, NormalMutex, Tracking};
    let _g = serial();
    let m = NormalMutex::new(());
    // SAFETY: the raw lock is only named.
    unsafe { m.raw() }.set_name("review-stale-owner");
    set_tracking(Tracking::Counts);
    let g = m.lock();
    set_tracking(Tracking::Off);
    drop(g);
    set_tracking(Tracking::Counts);
    let owner = objects()
        .into_iter()
        .find(|s| s.info.name.as_deref() == Some("review-stale-owner"))
        .map(|s| (s.info.owner, s.info.locked));
    set_tracking(Tracking::Off);
    assert_eq!(owner, Some((None, false)));
}
