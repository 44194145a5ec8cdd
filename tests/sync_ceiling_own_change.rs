//! A thread that changes its priority through `posixrt::sched` while it holds
//! a ceiling mutex keeps the new priority as its own (POSIX: the holder runs
//! at the higher of *its* priority and the ceilings it holds; glibc's
//! tst-mutexpp10 checks the same): the last unlock does not put the old one
//! back, and a later nested lock checks the new one against its ceiling.

#[path = "common/self_sched.rs"]
mod self_sched;
use self_sched::{have_rt, self_policy, set_self};

use posixrt::sched;
use posixrt::sync::{ceiling_mutex, MutexExt};
use posixrt::ErrorKind;

/// Runs `f` in a new SCHED_FIFO 4 thread (nothing spins there).
fn at_fifo_4(f: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        set_self(libc::SCHED_FIFO, 4).expect("SCHED_FIFO 4");
        f();
    })
    .join()
    .expect("the SCHED_FIFO thread");
}

#[test]
fn an_own_change_under_the_lock_survives_the_unlock() {
    if !have_rt() {
        return; // (A ceiling above the base needs the raise: EPERM, tested elsewhere.)
    }
    at_fifo_4(|| {
        let m = ceiling_mutex(10, ()).unwrap();
        let g = m.lock_checked().unwrap();
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 10));
        sched::set_current_priority(8).unwrap();
        drop(g);
        assert_eq!(
            self_policy(),
            (libc::SCHED_FIFO, 8),
            "the new priority stays"
        );
        // The next outermost lock reads it as the base, and gives it back.
        drop(m.lock_checked().unwrap());
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 8));
    });
}

#[test]
fn a_change_by_another_thread_under_the_lock_survives_the_unlock() {
    if !have_rt() {
        return;
    }
    at_fifo_4(|| {
        let m = ceiling_mutex(10, ()).unwrap();
        let me = sched::gettid();
        let g = m.lock_checked().unwrap();
        std::thread::spawn(move || sched::set_thread_priority(me, 7))
            .join()
            .unwrap()
            .unwrap();
        drop(g);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 7));
    });
}

#[test]
fn a_nested_lock_checks_the_changed_priority_against_its_ceiling() {
    if !have_rt() {
        return;
    }
    at_fifo_4(|| {
        let outer = ceiling_mutex(6, ()).unwrap();
        let low = ceiling_mutex(5, ()).unwrap();
        let g = outer.lock_checked().unwrap();
        sched::set_current_priority(8).unwrap();
        // 8 is above the ceiling 5: EINVAL, as for an outermost lock.
        let e = low.lock_checked().map(drop).unwrap_err();
        assert_eq!(
            (e.kind(), e.errno()),
            (ErrorKind::InvalidInput, Some(libc::EINVAL)),
            "{e}"
        );
        assert!(!low.is_locked());
        drop(g);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 8));
    });
}

#[test]
fn a_change_below_a_held_ceiling_is_lifted_back_at_the_next_unlock() {
    if !have_rt() {
        return;
    }
    at_fifo_4(|| {
        let a = ceiling_mutex(9, ()).unwrap();
        let b = ceiling_mutex(6, ()).unwrap();
        let ga = a.lock_checked().unwrap();
        let gb = b.lock_checked().unwrap();
        sched::set_current_priority(3).unwrap();
        // Unlocking the inner one: the holder runs at the ceiling it still
        // holds (9), above its new priority 3.
        drop(gb);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 9));
        drop(ga);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 3));
    });
}
