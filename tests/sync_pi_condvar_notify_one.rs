//! The waiter a `PiCondvar::notify_one` moves onto the held `PiMutex` (the
//! kernel requeues it: `FUTEX_CMP_REQUEUE_PI`) waits for the mutex, and
//! inspection says so, as for the waiters a `notify_all` moves.
//!
//! Tracking is process-wide: every test holds `serial`. Waits are bounded
//! polls; nothing asserts a duration.

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

use posixrt::sync::{current_tid, objects, PiCondvar, PiMutex, Snapshot, Tracking};

/// Whether thread `tid` of this process sleeps in a futex wait.
fn asleep_in_futex(tid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    let wchan = std::fs::read_to_string(format!("/proc/self/task/{tid}/wchan")).unwrap_or_default();
    state == Some("S") && (wchan.contains("futex") || wchan.is_empty() || wchan == "0")
}

/// Whether the two waiters whose tids are in `tids` sleep in `cv`'s wait,
/// `m` free.
fn two_asleep<T>(cv: &PiCondvar, m: &PiMutex<T>, tids: &std::sync::Mutex<Vec<u32>>) -> bool {
    let t = tids.lock().unwrap().clone();
    cv.waiters() == 2 && !m.is_locked() && t.len() == 2 && t.iter().all(|&t| asleep_in_futex(t))
}

fn named(name: &str) -> Snapshot {
    objects()
        .into_iter()
        .find(|o| o.info.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("{name} not listed"))
}

/// One waiter: the one `notify_one` moved is known, and listed as the
/// mutex's waiter (no longer the condvar's) until it owns the mutex. Before,
/// the mutex showed no waiter while the thread was queued on it in the
/// kernel, and the condvar still listed it.
#[test]
fn the_waiter_notify_one_requeues_is_listed_on_the_mutex() {
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(false);
    let cv = PiCondvar::new();
    // SAFETY: the raw lock is only named and read.
    unsafe { m.raw() }.set_name("notify-one-mutex");
    cv.set_name("notify-one-cv");
    let tid = std::sync::atomic::AtomicU32::new(0);
    let (mutex, condvar) = std::thread::scope(|s| {
        s.spawn(|| {
            tid.store(current_tid(), std::sync::atomic::Ordering::SeqCst);
            let mut g = m.lock();
            while !*g {
                cv.wait(&mut g).expect("wait");
            }
        });
        assert!(poll(|| {
            let t = tid.load(std::sync::atomic::Ordering::SeqCst);
            cv.waiters() == 1 && !m.is_locked() && t != 0 && asleep_in_futex(t)
        }));
        let mut g = m.lock();
        *g = true;
        cv.notify_one();
        let t = tid.load(std::sync::atomic::Ordering::SeqCst);
        // (Requeued, or woken before it slept and relocking: either way it
        // waits for the mutex now.)
        poll(|| named("notify-one-mutex").waiters == [t]);
        let seen = (named("notify-one-mutex"), named("notify-one-cv"));
        drop(g);
        seen
    });
    let t = tid.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        (
            mutex.info.waiters,
            mutex.waiters.clone(),
            mutex.waiter_from_condvar
        ),
        (1, vec![t], None),
        "the mutex's waiters"
    );
    assert_eq!(
        (condvar.info.waiters, condvar.waiters),
        (0, Vec::new()),
        "the condvar's waiters"
    );
    let after = named("notify-one-mutex");
    assert_eq!((after.info.waiters, after.waiter_from_condvar), (0, None));
    sync_off();
}

/// Several waiters: which one the kernel moved cannot be told from user
/// space, so the mutex counts a waiter from the condvar (its address), not
/// a tid, until that waiter owns the mutex; the condvar still lists them all.
#[test]
fn a_waiter_requeued_among_several_is_counted_as_from_the_condvar() {
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(0u32);
    let cv = PiCondvar::new();
    // SAFETY: the raw lock is only named and read.
    unsafe { m.raw() }.set_name("notify-one-mutex-2");
    cv.set_name("notify-one-cv-2");
    let cv_addr = named("notify-one-cv-2").info.address;
    let tids = std::sync::Mutex::new(Vec::new());
    let (one, two) = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                let mut g = m.lock();
                while *g == 0 {
                    cv.wait(&mut g).expect("wait");
                }
                *g -= 1;
            });
        }
        assert!(poll(|| two_asleep(&cv, &m, &tids)));
        let mut g = m.lock();
        *g = 2;
        assert!(cv.notify_one(), "one requeued");
        let one = named("notify-one-mutex-2");
        assert!(cv.notify_one(), "the other requeued");
        let two = named("notify-one-mutex-2");
        drop(g);
        (one, two)
    });
    for (k, o) in [one, two].iter().enumerate() {
        assert_eq!(
            (o.info.waiters, o.waiters.clone(), o.waiter_from_condvar),
            (k as u32 + 1, Vec::new(), Some(cv_addr)),
            "after {} notify_one",
            k + 1
        );
    }
    let after = named("notify-one-mutex-2");
    assert_eq!((after.info.waiters, after.waiter_from_condvar), (0, None));
    let cv_after = named("notify-one-cv-2");
    assert_eq!(cv_after.info.waiters, 0);
    sync_off();
}

/// A `notify_all` after such a `notify_one` moves the others: every waiter
/// is listed by tid on the mutex then, and the one moved unseen is no longer
/// counted apart as well.
#[test]
fn a_notify_all_after_an_unseen_move_lists_every_waiter_once() {
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(false);
    let cv = PiCondvar::new();
    // SAFETY: the raw lock is only named and read.
    unsafe { m.raw() }.set_name("notify-one-mutex-3");
    cv.set_name("notify-one-cv-3");
    let tids = std::sync::Mutex::new(Vec::new());
    let (seen, expected) = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                let mut g = m.lock();
                while !*g {
                    cv.wait(&mut g).expect("wait");
                }
            });
        }
        assert!(poll(|| two_asleep(&cv, &m, &tids)));
        let mut g = m.lock();
        *g = true;
        assert!(cv.notify_one(), "one requeued");
        assert_eq!(cv.notify_all(), 1, "the other requeued");
        let seen = named("notify-one-mutex-3");
        drop(g);
        let mut expected = tids.lock().unwrap().clone();
        expected.sort_unstable();
        (seen, expected)
    });
    let mut listed = seen.waiters.clone();
    listed.sort_unstable();
    assert_eq!(
        (seen.info.waiters, listed, seen.waiter_from_condvar),
        (2, expected, None)
    );
    let after = named("notify-one-mutex-3");
    assert_eq!((after.info.waiters, after.waiter_from_condvar), (0, None));
    sync_off();
}

fn sync_off() {
    posixrt::sync::set_tracking(Tracking::Off);
}
