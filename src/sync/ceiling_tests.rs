//! The per-thread class cache of `sys::prio` ([`current_cached`]) as the
//! ceiling mutex leaves it: a thread holding a ceiling mutex runs at the
//! ceiling (POSIX `PTHREAD_PRIO_PROTECT`), so the class its io_uring requests
//! and trace events carry, read from that cache, must be the ceiling while the
//! lock is held and the base class again after the unlock.

use crate::sync::{ceiling_mutex, CeilingMutex, CeilingMutexGuard, MutexExt};
use crate::sys::prio::{current, current_cached, SchedClass};
use crate::ErrorKind;

fn fifo(priority: i32) -> SchedClass {
    SchedClass {
        policy: libc::SCHED_FIFO,
        priority,
    }
}

/// Whether the calling thread may raise itself to SCHED_FIFO `priority`
/// (CAP_SYS_NICE, or RLIMIT_RTPRIO at least `priority`).
fn can_raise_to(priority: u64) -> bool {
    use rustix::process::{getrlimit, Resource};
    use rustix::thread::{capabilities, CapabilitySet};
    capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_NICE))
        || getrlimit(Resource::Rtprio)
            .current
            .is_some_and(|l| l >= priority)
}

/// Locks `m` (whose ceiling is `ceiling`), or, where the process may not
/// raise itself to the ceiling, checks that the lock is refused with the
/// documented EPERM and returns None.
fn lock_or_refused<T>(m: &CeilingMutex<T>, ceiling: u32) -> Option<CeilingMutexGuard<'_, T>> {
    match m.lock_checked() {
        Ok(g) => {
            assert!(can_raise_to(ceiling.into()), "raised without the privilege");
            Some(g)
        }
        Err(e) => {
            assert!(
                !can_raise_to(ceiling.into()),
                "refused with the privilege: {e}"
            );
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            None
        }
    }
}

/// A SCHED_OTHER thread whose class is cached (read before the lock, so the
/// cache has uses left) locks a ceiling-20 mutex: its cached class is
/// SCHED_FIFO 20 while it holds it, and SCHED_OTHER again after the unlock.
#[test]
fn current_cached_is_the_ceiling_while_held_and_the_base_after() {
    std::thread::spawn(|| {
        assert_eq!(current_cached(), SchedClass::OTHER);
        let m = ceiling_mutex(20, 0u32).expect("ceiling 20");
        let Some(g) = lock_or_refused(&m, 20) else {
            assert_eq!(current_cached(), SchedClass::OTHER);
            return;
        };
        assert_eq!(current(), fifo(20));
        assert_eq!(current_cached(), fifo(20), "cached class while held");
        drop(g);
        assert_eq!(current(), SchedClass::OTHER);
        assert_eq!(
            current_cached(),
            SchedClass::OTHER,
            "cached class after unlock"
        );
        // And again: the second outermost lock raises and restores the same way.
        let g = m.lock_checked().expect("second lock");
        assert_eq!(current_cached(), fifo(20), "cached class while held again");
        drop(g);
        assert_eq!(
            current_cached(),
            SchedClass::OTHER,
            "after the second unlock"
        );
    })
    .join()
    .expect("the test thread");
}

/// Nested ceilings 20 then 30: the cached class follows the raise to 30, the
/// drop back to 20 when the inner one is unlocked, and the base at the end.
#[test]
fn current_cached_follows_nested_ceilings() {
    std::thread::spawn(|| {
        assert_eq!(current_cached(), SchedClass::OTHER);
        let outer = ceiling_mutex(20, ()).expect("ceiling 20");
        let inner = ceiling_mutex(30, ()).expect("ceiling 30");
        let Some(g20) = lock_or_refused(&outer, 20) else {
            return;
        };
        assert_eq!(current_cached(), fifo(20));
        let g30 = inner.lock_checked().expect("inner lock");
        assert_eq!(current(), fifo(30));
        assert_eq!(current_cached(), fifo(30), "raised to the inner ceiling");
        drop(g30);
        assert_eq!(current(), fifo(20));
        assert_eq!(current_cached(), fifo(20), "back to the outer ceiling");
        drop(g20);
        assert_eq!(current_cached(), SchedClass::OTHER, "back to the base");
    })
    .join()
    .expect("the test thread");
}

/// The AIO core lock ([`crate::sys::rtlock`]) decides from a per-thread cache
/// whether a waiter is real-time (a PI waiter that boosts the owner) or not
/// (a plain sleeper): a SCHED_OTHER thread raised to a ceiling must wait as a
/// real-time one while it holds the ceiling mutex, and as a plain one after.
#[test]
fn the_aio_core_lock_sees_the_raise_to_the_ceiling_and_the_restore() {
    use crate::sys::rtlock::is_rt;
    std::thread::spawn(|| {
        assert!(!is_rt(), "a SCHED_OTHER thread");
        let m = ceiling_mutex(20, ()).expect("ceiling 20");
        let Some(g) = lock_or_refused(&m, 20) else {
            return;
        };
        assert!(is_rt(), "SCHED_FIFO 20 while held");
        drop(g);
        assert!(!is_rt(), "SCHED_OTHER again after the unlock");
    })
    .join()
    .expect("the test thread");
}
