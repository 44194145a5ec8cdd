//! Edge cases of the priority-ceiling mutex: the priority the holder gets back
//! after unusual unlock paths.
//!
//! Scheduling is changed by the tests: every test takes `LOCK` and runs its
//! scheduling changes in a thread of its own, pinned to one CPU.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use std::sync::Mutex;

#[path = "common/self_sched.rs"]
mod self_sched;
use self_sched::{have_rt, self_policy, set_self};

use posixrt::sync::{ceiling_mutex, MutexExt};
use posixrt::{sched, ErrorKind};

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn pin_self() {
    let cpu = sched::CpuSet::allowed()
        .unwrap()
        .iter()
        .last()
        .expect("some CPU");
    sched::set_thread_affinity(sched::Tid::current(), &sched::CpuSet::single(cpu).unwrap())
        .unwrap();
}

/// Without the privilege to raise, a ceiling lock is the documented EPERM.
fn unprivileged_ceiling_is_refused() {
    let m = ceiling_mutex(10, ()).unwrap();
    let e = m.lock_checked().map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert!(!m.is_locked());
}

/// A `lock()` refused earlier (the thread was above the ceiling then) must not
/// make a later, successful hold of the same mutex forget to restore the priority
/// when its guard finds the lock forced free.
#[test]
fn ceiling_refused_lock_then_forced_unlock_still_restores() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused();
    }
    quiet_expected_panic("posixrt lock failed: pthread_mutex_lock(PRIO_PROTECT)");
    std::thread::spawn(|| {
        pin_self();
        let m = ceiling_mutex(10, ()).unwrap();
        set_self(libc::SCHED_FIFO, 20).unwrap();
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.lock()));
        assert!(refused.is_err(), "FIFO 20 above the ceiling 10 is refused");
        set_self(libc::SCHED_OTHER, 0).unwrap();
        let g = m.lock_checked().unwrap();
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 10));
        // SAFETY: nobody else uses the mutex; the guard drops right after.
        unsafe { m.raw().force_unlock() };
        drop(g);
        assert_eq!(
            self_policy(),
            (libc::SCHED_OTHER, 0),
            "the base comes back once no ceiling is held"
        );
    })
    .join()
    .unwrap();
}
