//! For tracking: the requeue-PI waiters of each [`PiCondvar`](super::PiCondvar)
//! that a `notify_all` handed over to the mutex, listed as the mutex's waiters
//! (and no longer as the condvar's) until they return from their wait.
//!
//! The kernel moves a requeue-PI sleeper onto the mutex inside
//! `FUTEX_CMP_REQUEUE_PI` and tells nobody in user space which one: the
//! sleeper stays asleep. A `notify_all` moves every sleeper that read the
//! sequence before it advanced it (each is requeued, handed the mutex at
//! once, or, not asleep yet, fails its wait and relocks the mutex itself: all
//! wait for the mutex now), so those are known, from the sequence value each
//! listener noted. Not listed: the sleeper a `notify_one` requeued (the
//! kernel picks the highest-priority one, which user space cannot tell), and
//! a sleeper that read the advanced sequence but was queued before the
//! requeue (requeued too, as an early wake-up).
//!
//! Only waits begun while tracking is on are listed here (their condvar
//! wait's listing is the one moved), so the lock and uncontended paths do
//! not change: a `notify_all` that woke or requeued someone pays one more
//! load while nobody is listed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::track::Record;
use crate::sys::pilock::PiLocked;

/// A requeue-PI sleeper of a tracked condvar wait.
struct Listener {
    /// The condvar's address (fixed while a thread waits on it).
    cv: usize,
    tid: u32,
    /// The sequence value it sleeps with.
    seq: u32,
    /// The record of the mutex it waits with (kept alive by its guard).
    mutex: &'static Record,
    /// Whether a notify listed it as a waiter of `mutex`.
    handed: bool,
}

static LISTENERS: PiLocked<Vec<Listener>> = PiLocked::new(Vec::new());
/// How many [`LISTENERS`] there are, read without the lock by `notify_all`.
static LISTENING: AtomicUsize = AtomicUsize::new(0);
/// Whether [`after_fork_in_child`] is registered (not a `Once`: see
/// `sync::shared`).
static FORK_HOOKED: AtomicBool = AtomicBool::new(false);

/// In a forked child: the listeners are threads of the parent, which do not
/// exist there, and the lock's holder may be one of them. Stores only (the
/// parent's vector is leaked, not dropped).
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing; the old value is
    // overwritten without being read or dropped.
    unsafe {
        LISTENERS.raw().reset_in_child();
        std::ptr::write(LISTENERS.data_ptr(), Vec::new());
    }
    LISTENING.store(0, Ordering::Relaxed);
}

/// Lists `tid`, about to sleep on condvar `cv` with sequence value `seq` and
/// the mutex whose record is `mutex` (a tracked wait).
pub(super) fn listen(cv: usize, tid: u32, seq: u32, mutex: &'static Record) {
    // Before the lock is first taken: a child forked while it is held
    // forgets the holder.
    if !FORK_HOOKED.load(Ordering::Acquire) {
        crate::sys::fork::on_child(after_fork_in_child);
        FORK_HOOKED.store(true, Ordering::Release);
    }
    let mut l = LISTENERS.lock();
    l.push(Listener {
        cv,
        tid,
        seq,
        mutex,
        handed: false,
    });
    LISTENING.store(l.len(), Ordering::SeqCst);
}

/// `tid`'s wait on `cv` (listed by [`listen`]) ended: unlists it and, if a
/// notify handed it over, takes it off the mutex's waiters. Returns whether
/// it was handed over (it is then no longer listed on the condvar either).
pub(super) fn leave(cv: usize, tid: u32) -> bool {
    let mut l = LISTENERS.lock();
    let Some(i) = l.iter().position(|x| x.cv == cv && x.tid == tid) else {
        return false;
    };
    let x = l.swap_remove(i);
    LISTENING.store(l.len(), Ordering::SeqCst);
    if x.handed {
        x.mutex.remove_waiter(tid);
    }
    x.handed
}

/// After a `notify_all` of `cv` whose requeue compared the sequence with
/// `seq`: every listener that sleeps with an older value is a waiter of the
/// mutex now, no longer of the condvar (record `cv_record`).
pub(super) fn notified_all(cv: usize, seq: u32, cv_record: Option<&'static Record>) {
    if LISTENING.load(Ordering::SeqCst) == 0 {
        return;
    }
    let mut l = LISTENERS.lock();
    for x in l
        .iter_mut()
        .filter(|x| x.cv == cv && !x.handed && x.seq != seq)
    {
        x.handed = true;
        x.mutex.add_waiter(x.tid);
        if let Some(r) = cv_record {
            r.remove_waiter(x.tid);
        }
    }
}
