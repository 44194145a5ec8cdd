//! `PiCondvar` waiters whose requeue onto the mutex would close a deadlock cycle:
//! the waiter holds `n` while the thread that holds the condvar's mutex `m`
//! waits for `n`. The kernel refuses such a requeue (EDEADLK) and cannot wake a
//! requeue-PI sleeper otherwise, so `notify` must still reach them (and every
//! waiter queued behind them).
//!
//! Waits are bounded polls on states; nothing asserts a duration.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

use posixrt::sync::{PiCondvar, PiMutex, Tracking};

/// Longer than any poll below: only a wait that is never woken reaches it.
const LONG: Duration = Duration::from_secs(60);

struct Cycle {
    m: Arc<PiMutex<u32>>,
    n: Arc<PiMutex<()>>,
    cv: Arc<PiCondvar>,
    /// Holds `n` and waits on `cv` with `m`.
    closer: JoinHandle<()>,
    /// Holds nothing and waits on `cv` with `m`, queued behind `closer`;
    /// returns the value it saw.
    behind: JoinHandle<u32>,
    /// Holds `m` (set to 1) and waits for `n`; returns whether it got it.
    blocker: JoinHandle<bool>,
}

/// Sets up the cycle: `closer` asleep on the condvar first, then `behind`, then
/// `blocker` holding `m` and blocked on `n`.
fn cycle() -> Cycle {
    let m = Arc::new(PiMutex::new(0u32));
    let n = Arc::new(PiMutex::new(()));
    let cv = Arc::new(PiCondvar::new());
    let closer = {
        let (m, n, cv) = (m.clone(), n.clone(), cv.clone());
        std::thread::spawn(move || {
            let _n = n.lock();
            let mut g = m.lock();
            while *g == 0 {
                cv.wait_for(&mut g, LONG).unwrap();
            }
        })
    };
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    let behind = {
        let (m, cv) = (m.clone(), cv.clone());
        std::thread::spawn(move || {
            let mut g = m.lock();
            while *g == 0 {
                cv.wait_for(&mut g, LONG).unwrap();
            }
            *g
        })
    };
    assert!(poll(|| cv.waiters() == 2 && !m.is_locked()));
    let blocker = {
        let (m, n) = (m.clone(), n.clone());
        std::thread::spawn(move || {
            let mut g = m.lock();
            *g = 1;
            // Blocks until `closer` unwinds and drops `n` (bounded, so that a
            // closer never woken does not keep this thread forever).
            n.try_lock_for(LONG).is_some()
        })
    };
    assert!(poll(|| unsafe { n.raw() }.has_waiters()));
    Cycle {
        m,
        n,
        cv,
        closer,
        behind,
        blocker,
    }
}

/// After the notify: `closer` woke and its relock of `m`, which closes the
/// cycle, panicked; `blocker` then got `n`, and `behind` got `m` with the value.
fn everyone_woke(c: Cycle) {
    assert!(
        poll(|| c.closer.is_finished()),
        "the waiter that holds `n` was never woken"
    );
    assert!(c.closer.join().is_err(), "its relock closes the cycle");
    assert!(c.blocker.join().unwrap(), "the blocker got `n`");
    assert!(
        poll(|| c.behind.is_finished()),
        "the waiter queued behind it was never woken"
    );
    assert_eq!(c.behind.join().unwrap(), 1);
    assert_eq!(c.cv.waiters(), 0);
    assert!(c.m.try_lock().is_some() && c.n.try_lock().is_some());
}

#[test]
fn pi_condvar_notify_all_wakes_a_waiter_that_would_close_a_cycle() {
    let _g = serial(Tracking::Off);
    quiet_expected_panic("posixrt lock failed: futex(FUTEX_LOCK_PI)");
    let c = cycle();
    assert_eq!(c.cv.notify_all(), 2, "both sleepers woken or requeued");
    everyone_woke(c);
}

#[test]
fn pi_condvar_notify_one_wakes_a_waiter_that_would_close_a_cycle() {
    let _g = serial(Tracking::Off);
    quiet_expected_panic("posixrt lock failed: futex(FUTEX_LOCK_PI)");
    let c = cycle();
    // Each notify_one reaches a sleeper: one is requeued or woken per call.
    assert!(c.cv.notify_one());
    assert!(c.cv.notify_one());
    everyone_woke(c);
}

/// A waiter that holds another `PiMutex` (no cycle) is woken by `notify_one`
/// and returns owning the mutex, with the other one still held.
#[test]
fn pi_condvar_waiter_holding_another_pi_mutex_returns_owning_both() {
    let _g = serial(Tracking::Off);
    let m = Arc::new(PiMutex::new(false));
    let n = Arc::new(PiMutex::new(()));
    let cv = Arc::new(PiCondvar::new());
    let waiter = {
        let (m, n, cv) = (m.clone(), n.clone(), cv.clone());
        std::thread::spawn(move || {
            let _n = n.lock();
            let mut g = m.lock();
            while !*g {
                cv.wait_for(&mut g, LONG).unwrap();
            }
            let me = posixrt::sync::current_tid();
            (
                unsafe { m.raw() }.owner() == Some(me),
                unsafe { n.raw() }.owner() == Some(me),
            )
        })
    };
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    *m.lock() = true;
    assert!(cv.notify_one());
    assert!(poll(|| waiter.is_finished()), "never woken");
    assert_eq!(waiter.join().unwrap(), (true, true));
    assert_eq!(cv.waiters(), 0);
}
