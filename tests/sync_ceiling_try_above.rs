//! `try_lock` of a priority-ceiling mutex by a thread whose priority is above
//! the ceiling: refused with EINVAL whether the mutex is free or held, as
//! `pthread_mutex_trylock` does (glibc checks the ceiling before the lock
//! word). Before, a held mutex answered "busy", so the protocol error showed
//! only when the mutex happened to be free.
//!
//! Scheduling is changed in threads of the test's own, and restored.

#[path = "common/self_sched.rs"]
#[allow(dead_code)]
mod self_sched;
use self_sched::{have_rt, set_self};

use std::sync::mpsc;

use posixrt::sync::{ceiling_mutex, MutexExt};
use posixrt::ErrorKind;

#[test]
fn a_trylock_above_the_ceiling_is_refused_also_while_the_mutex_is_held() {
    let m = ceiling_mutex(10, 0u32).unwrap();
    if !have_rt() {
        // Without the privilege to raise, no thread can be above the ceiling:
        // a lock is the documented EPERM.
        let e = m.lock_checked().map(drop).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    let (held_tx, held_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        // The holder (raised to the ceiling while it holds the mutex).
        let m = &m;
        s.spawn(move || {
            let g = m.lock();
            held_tx.send(()).unwrap();
            let _ = done_rx.recv();
            drop(g);
        });
        held_rx.recv().unwrap();
        let seen = s
            .spawn(move || {
                set_self(libc::SCHED_FIFO, 20).unwrap();
                let held = m.try_lock_checked().map(|g| g.is_some());
                let plain = m.try_lock().is_some();
                set_self(libc::SCHED_OTHER, 0).unwrap();
                (held, plain)
            })
            .join()
            .unwrap();
        done_tx.send(()).unwrap();
        let (held, plain) = seen;
        let e = held.expect_err("FIFO 20 above the ceiling 10, mutex held: EINVAL");
        assert_eq!(
            (e.kind(), e.errno()),
            (ErrorKind::InvalidInput, Some(libc::EINVAL)),
            "{e}"
        );
        assert!(!plain, "the lock_api trylock says no");
    });
    // Free: refused the same way (as before), and the mutex stays free.
    let free = std::thread::spawn(move || {
        set_self(libc::SCHED_FIFO, 20).unwrap();
        let r = m
            .try_lock_checked()
            .map(|g| g.is_some())
            .map_err(|e| e.errno());
        set_self(libc::SCHED_OTHER, 0).unwrap();
        (r, m.is_locked())
    })
    .join()
    .unwrap();
    assert_eq!(free, (Err(Some(libc::EINVAL)), false));
}
