//! The PI mutex's per-thread count of held locks (`pi::held_by_current_thread`,
//! which picks a [`PiCondvar`](super::PiCondvar) wait's path) when a guard is
//! dropped without holding its lock: a relock refused inside a condition
//! variable wait (the kernel's EDEADLK for a deadlock cycle) panics, and the
//! unwinding drops the guard, whose unlock must release and count nothing.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::pi::held_by_current_thread;
use super::{Condvar, PiCondvar, PiMutex, PiMutexGuard};
use crate::test_panics::{message, quietly};

/// The panic of a lock the kernel refused, through `lock_api`'s `lock`.
const REFUSED: &str = "posixrt lock failed";

/// Polls `cond` until it holds, for 10 s at most.
fn until(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < end, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A condition variable as the scenario below uses it: wait with a guard,
/// notify all, count the waiters.
trait Cv: Send + Sync + 'static {
    fn wait_on(&self, g: &mut PiMutexGuard<'_, ()>);
    fn notify(&self);
    fn waiting(&self) -> u32;
}

impl Cv for Condvar {
    fn wait_on(&self, g: &mut PiMutexGuard<'_, ()>) {
        self.wait(g);
    }
    fn notify(&self) {
        self.notify_all();
    }
    fn waiting(&self) -> u32 {
        self.waiters()
    }
}

impl Cv for PiCondvar {
    fn wait_on(&self, g: &mut PiMutexGuard<'_, ()>) {
        self.wait(g).expect("one mutex for the condvar");
    }
    fn notify(&self) {
        self.notify_all();
    }
    fn waiting(&self) -> u32 {
        self.waiters()
    }
}

/// T1 holds `a` and waits on `cv` with `b`; T2 takes `b` and blocks on `a`;
/// the notify makes T1 relock `b`, which would close the cycle: the kernel
/// refuses (EDEADLK) and the wait panics. Unwinding drops T1's guard of `b`,
/// which T2 holds. Returns T1's held count after the unwinding (it holds `a`
/// alone: 1) and after unlocking `a` (0); checks that `b` stayed T2's.
fn held_after_a_refused_relock(cv: impl Cv) -> (u32, u32) {
    let a = Arc::new(PiMutex::new(()));
    let b = Arc::new(PiMutex::new(()));
    let cv = Arc::new(cv);
    let (t2_go, t2_go_rx) = channel::<()>();
    let (t1_done, t1_done_rx) = channel();
    let t1 = {
        let (a, b, cv) = (Arc::clone(&a), Arc::clone(&b), Arc::clone(&cv));
        std::thread::spawn(move || {
            let ga = a.lock();
            let gb = b.lock();
            assert_eq!(held_by_current_thread(), 2);
            let r = quietly(move || {
                let mut gb = gb;
                cv.wait_on(&mut gb);
            });
            let refused = r.is_err_and(|e| message(&*e).starts_with(REFUSED));
            let held = held_by_current_thread();
            // SAFETY: the raw lock is only read.
            let b_owner = unsafe { b.raw() }.owner();
            drop(ga);
            let after = held_by_current_thread();
            let _ = t1_done.send((refused, held, b_owner, after));
        })
    };
    let t2 = {
        let (a, b) = (Arc::clone(&a), Arc::clone(&b));
        std::thread::spawn(move || {
            t2_go_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the test goes on");
            let gb = b.lock();
            let ga = a.lock();
            drop(ga);
            drop(gb);
            crate::sys::tid::current()
        })
    };
    until("T1 waits on the condvar", || cv.waiting() == 1);
    t2_go.send(()).expect("T2 waits");
    // SAFETY: the raw lock is only read.
    until("T2 blocks on a", || unsafe { a.raw() }.has_waiters());
    cv.notify();
    let (refused, held, b_owner, after) = t1_done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("T1 ends its wait");
    t1.join().expect("T1");
    let t2_tid = t2.join().expect("T2");
    assert!(refused, "the relock closing the cycle was refused");
    assert_eq!(b_owner, Some(t2_tid), "b stays T2's");
    assert!(!a.is_locked() && !b.is_locked());
    (held, after)
}

/// With a [`Condvar`]: the relock is `lock_api`'s `lock`.
#[test]
fn a_guard_unwound_after_a_refused_condvar_relock_leaves_the_held_count_right() {
    assert_eq!(held_after_a_refused_relock(Condvar::new()), (1, 0));
}

/// With a [`PiCondvar`]: T1 holds two PI mutexes, so it waits with a plain
/// sleep and relocks `b` itself (`lock_checked`).
#[test]
fn a_guard_unwound_after_a_refused_pi_condvar_relock_leaves_the_held_count_right() {
    assert_eq!(held_after_a_refused_relock(PiCondvar::new()), (1, 0));
}

/// A guard whose lock was forced free (`force_unlock`, a debugging tool) was
/// counted when it locked: its drop uncounts it, although the unlock releases
/// nothing, so the thread's count is 0 again afterwards.
#[test]
fn a_guard_of_a_forced_lock_is_uncounted_by_its_drop() {
    std::thread::spawn(|| {
        let m = PiMutex::new(());
        let g = m.lock();
        assert_eq!(held_by_current_thread(), 1);
        // SAFETY: a debugging tool on a lock nobody else uses; its guard is
        // dropped below, and unlocks nothing.
        unsafe { m.raw().force_unlock() }.expect("no kernel waiters");
        assert!(!m.is_locked());
        drop(g);
        assert_eq!(held_by_current_thread(), 0);
        assert!(!m.is_locked());
    })
    .join()
    .expect("the test thread");
}
