//! The reader-writer lock and real-time readers: `pthread_rwlock_rdlock` says a
//! `SCHED_FIFO`/`SCHED_RR` reader "shall not acquire the lock if a writer holds the
//! lock or if writers of higher or equal priority are blocked on the read-write
//! lock; otherwise, the calling thread shall acquire the lock". So a waiting writer
//! of lower priority (or a `SCHED_OTHER` one) must not hold up a real-time reader,
//! in `read`, `try_read` and the timed reads, and a writer of higher or equal
//! priority must.
//!
//! A writer is made to wait behind a read lock the test thread holds; it is known
//! to wait once a `SCHED_OTHER` `try_read` fails (such readers always defer to a
//! waiting writer). Classes are set with raw system calls. Waits are bounded polls
//! on states; nothing asserts a duration. Needs SCHED_FIFO (root or CAP_SYS_NICE /
//! RLIMIT_RTPRIO); without it each test checks the documented refusal (EPERM) and
//! returns.

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

#[path = "common/self_sched.rs"]
#[allow(dead_code)] // self_policy: other tests use it
mod self_sched;
use self_sched::{have_rt, set_self};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use posixrt::sync::{RwLock, Tracking};

const FIFO: i32 = libc::SCHED_FIFO;
const OTHER: i32 = libc::SCHED_OTHER;

/// Whether SCHED_FIFO may be used here; if not, the refusal must be EPERM.
fn rt_or_skip() -> bool {
    if have_rt() {
        return true;
    }
    let e = std::thread::spawn(|| set_self(FIFO, 20))
        .join()
        .expect("probe thread");
    assert_eq!(e, Err(libc::EPERM), "the documented refusal");
    eprintln!("skipped: no SCHED_FIFO here");
    false
}

/// Runs `f` in a new thread of class `(policy, prio)` and returns its result.
fn as_class<T: Send>(policy: i32, prio: i32, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            set_self(policy, prio).expect("sched_setscheduler");
            f()
        })
        .join()
        .expect("the class thread")
    })
}

/// Whether a thread of class `(policy, prio)` gets the read lock from `try_read`
/// (released at once).
fn try_read_as(l: &RwLock<u32>, policy: i32, prio: i32) -> bool {
    as_class(policy, prio, || l.try_read().is_some())
}

/// A writer of class `writer` waits behind the test thread's read lock; a FIFO 20
/// reader must get the lock from `try_read`, `read` and `try_read_for` while the
/// writer still waits.
fn fifo_reader_passes_a_lower_waiting_writer(writer: (i32, i32)) {
    let _g = serial(Tracking::Off);
    if !rt_or_skip() {
        return;
    }
    let l = RwLock::new(0u32);
    let held = l.read();
    let acquired = AtomicBool::new(false);
    let (tried, read, timed, writer_waited) = std::thread::scope(|s| {
        s.spawn(|| {
            set_self(writer.0, writer.1).expect("writer class");
            *l.write() += 1;
            acquired.store(true, Ordering::SeqCst);
        });
        assert!(poll(|| l.try_read().is_none()), "the writer never waited");
        let r = as_class(FIFO, 20, || {
            let tried = l.try_read().is_some();
            // Only once `try_read` got in: a `read` that waits for the writer
            // would wait for the test thread's read lock, held until after this.
            let (read, timed) = if tried {
                let g = l.read();
                let t = l.try_read_for(Duration::from_secs(5)).is_some();
                (*g == 0, t)
            } else {
                (false, false)
            };
            (tried, read, timed, !acquired.load(Ordering::SeqCst))
        });
        assert!(
            l.try_read().is_none(),
            "the writer stopped waiting before the read lock was released"
        );
        drop(held);
        r
    });
    assert!(acquired.load(Ordering::SeqCst), "the writer got the lock");
    assert_eq!(*l.read(), 1);
    assert!(
        tried,
        "a FIFO 20 try_read failed behind a waiting {writer:?} writer"
    );
    assert!(read, "a FIFO 20 read did not get the lock");
    assert!(timed, "a FIFO 20 try_read_for timed out");
    assert!(writer_waited, "the writer got the lock while read-locked");
}

#[test]
fn fifo_reader_passes_a_waiting_fifo_writer_of_lower_priority() {
    fifo_reader_passes_a_lower_waiting_writer((FIFO, 10));
}

#[test]
fn fifo_reader_passes_a_waiting_sched_other_writer() {
    fifo_reader_passes_a_lower_waiting_writer((OTHER, 0));
}

/// Spawns in `s` a FIFO 10 thread that write-locks `l` and adds one to it.
fn spawn_fifo_10_writer<'scope>(s: &'scope std::thread::Scope<'scope, '_>, l: &'scope RwLock<u32>) {
    s.spawn(|| {
        set_self(FIFO, 10).expect("writer class");
        *l.write() += 1;
    });
}

/// A waiting FIFO 10 writer holds up FIFO readers of priority 10 and 5, and
/// SCHED_OTHER readers, in `try_read` and a timed read.
#[test]
fn readers_of_lower_or_equal_priority_wait_for_the_writer() {
    let _g = serial(Tracking::Off);
    if !rt_or_skip() {
        return;
    }
    let l = RwLock::new(0u32);
    let held = l.read();
    std::thread::scope(|s| {
        spawn_fifo_10_writer(s, &l);
        assert!(poll(|| l.try_read().is_none()), "the writer never waited");
        for (policy, prio) in [(FIFO, 10), (FIFO, 5), (OTHER, 0)] {
            let (tried, timed) = as_class(policy, prio, || {
                (
                    l.try_read().is_some(),
                    l.try_read_for(Duration::from_millis(20)).is_some(),
                )
            });
            assert!(!tried, "a {policy}/{prio} try_read passed a FIFO 10 writer");
            assert!(
                !timed,
                "a {policy}/{prio} timed read passed a FIFO 10 writer"
            );
        }
        drop(held);
    });
    assert_eq!(*l.read(), 1);
}

/// The published priority follows the writers as they come and go: writers that
/// time out take their priority with them (a FIFO 30 one, then one of the same
/// priority as a writer that stays), and a FIFO 30 writer that comes later holds
/// up the FIFO 20 reader that passed the FIFO 10 one.
#[test]
fn the_priority_of_waiting_writers_follows_arrivals_and_timeouts() {
    let _g = serial(Tracking::Off);
    if !rt_or_skip() {
        return;
    }
    let l = RwLock::new(0u32);
    let held = l.read();
    std::thread::scope(|s| {
        spawn_fifo_10_writer(s, &l);
        assert!(poll(|| l.try_read().is_none()), "the writer never waited");
        assert!(try_read_as(&l, FIFO, 20), "FIFO 20 behind a FIFO 10 writer");

        let timed_out = as_class(FIFO, 30, || {
            l.try_write_for(Duration::from_millis(50)).is_none()
        });
        assert!(timed_out, "the FIFO 30 writer got a read-locked lock");
        assert!(
            try_read_as(&l, FIFO, 20),
            "FIFO 20 after the FIFO 30 writer left"
        );
        assert!(
            !try_read_as(&l, FIFO, 10),
            "FIFO 10 passed a FIFO 10 writer"
        );

        let timed_out = as_class(FIFO, 10, || {
            l.try_write_for(Duration::from_millis(50)).is_none()
        });
        assert!(
            timed_out,
            "the second FIFO 10 writer got a read-locked lock"
        );
        assert!(
            !try_read_as(&l, FIFO, 10),
            "FIFO 10 passed the FIFO 10 writer left"
        );
        assert!(try_read_as(&l, FIFO, 11), "FIFO 11 behind a FIFO 10 writer");

        s.spawn(|| {
            set_self(FIFO, 30).expect("writer class");
            *l.write() += 1;
        });
        let held_up = as_class(FIFO, 20, || poll(|| l.try_read().is_none()));
        assert!(held_up, "a FIFO 20 reader passed a waiting FIFO 30 writer");
        assert!(try_read_as(&l, FIFO, 31), "FIFO 31 behind a FIFO 30 writer");
        drop(held);
    });
    assert_eq!(*l.read(), 2);
}

/// A real-time reader that gets past a waiting writer without sleeping is counted
/// as an uncontended read lock, and shown among the readers.
#[test]
fn a_reader_past_a_waiting_writer_is_tracked_as_uncontended() {
    let _g = serial(Tracking::Counts);
    if !rt_or_skip() {
        posixrt::sync::set_tracking(Tracking::Off);
        return;
    }
    let l = RwLock::new(0u32);
    // SAFETY: the raw lock is only named and asked for its snapshot.
    let raw = unsafe { l.raw() };
    raw.set_name("rt-reader-past-writer");
    let held = l.read();
    let readers = std::thread::scope(|s| {
        spawn_fifo_10_writer(s, &l);
        assert!(
            poll(|| raw.snapshot().is_some_and(|s| s.info.waiters == 1)),
            "the writer never waited"
        );
        let readers = as_class(FIFO, 20, || {
            drop(l.try_read()?);
            let _g = l.read();
            raw.snapshot().map(|s| s.info.readers)
        });
        drop(held);
        readers
    });
    let st = raw.snapshot().expect("known").stats;
    posixrt::sync::set_tracking(Tracking::Off);
    assert_eq!(readers, Some(2), "the FIFO 20 reader did not get in");
    assert_eq!(st.read_locks, 3, "{st:?}");
    assert_eq!(st.read_contended, 0, "{st:?}");
    assert_eq!((st.trylocks, st.trylock_failures), (1, 0), "{st:?}");
    assert_eq!((st.locks, st.contended), (1, 1), "{st:?}");
}

/// Readers and writers of mixed classes, with timed and try forms, in bounded
/// loops that sleep between steps: every read sees both halves of the pair
/// equal (exclusion holds as readers pass writers), every writer's wait ends (no
/// wake-up is lost when a writer leaves), and the total is what the writers
/// counted.
#[test]
fn mixed_classes_keep_exclusion_and_lose_no_wake_up() {
    let _g = serial(Tracking::Off);
    if !rt_or_skip() {
        return;
    }
    const STEPS: u64 = 1500;
    let l = RwLock::new((0u64, 0u64));
    let torn = AtomicBool::new(false);
    let nap = || std::thread::sleep(Duration::from_micros(20));
    let written: u64 = std::thread::scope(|s| {
        for (policy, prio) in [(FIFO, 5), (FIFO, 20), (FIFO, 40), (OTHER, 0)] {
            let (l, torn) = (&l, &torn);
            s.spawn(move || {
                set_self(policy, prio).expect("reader class");
                for i in 0..STEPS {
                    let seen = match i % 3 {
                        0 => Some(*l.read()),
                        1 => l.try_read().map(|g| *g),
                        _ => l.try_read_for(Duration::from_millis(1)).map(|g| *g),
                    };
                    if seen.is_some_and(|(a, b)| a != b) {
                        torn.store(true, Ordering::SeqCst);
                    }
                    nap();
                }
            });
        }
        let writers: Vec<_> = [(FIFO, 10), (FIFO, 30), (OTHER, 0)]
            .into_iter()
            .map(|(policy, prio)| {
                let l = &l;
                s.spawn(move || {
                    set_self(policy, prio).expect("writer class");
                    let mut n = 0;
                    for i in 0..STEPS {
                        let g = if i % 2 == 0 {
                            Some(l.write())
                        } else {
                            l.try_write_for(Duration::from_millis(1))
                        };
                        if let Some(mut g) = g {
                            g.0 += 1;
                            g.1 += 1;
                            n += 1;
                        }
                        nap();
                    }
                    n
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().expect("writer")).sum()
    });
    assert!(
        !torn.load(Ordering::SeqCst),
        "a reader saw a write half done"
    );
    assert_eq!(*l.read(), (written, written));
}
