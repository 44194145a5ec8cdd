//! For tracking: the requeue-PI waiters of each [`PiCondvar`](super::PiCondvar)
//! that a notify handed over to the mutex, listed as the mutex's waiters
//! (and no longer as the condvar's) until they return from their wait.
//!
//! The kernel moves a requeue-PI sleeper onto the mutex inside
//! `FUTEX_CMP_REQUEUE_PI` and tells nobody in user space which one: the
//! sleeper stays asleep. A `notify_all` moves every sleeper that read the
//! sequence before it advanced it (each is requeued, handed the mutex at
//! once, or, not asleep yet, fails its wait and relocks the mutex itself: all
//! wait for the mutex now), so those are known, from the sequence value each
//! listener noted. Not listed: a sleeper that read the advanced sequence but
//! was queued before the requeue (requeued too, as an early wake-up).
//!
//! A `notify_one` that moved a sleeper: the kernel picked it (the first of
//! the highest priority among those queued), which user space cannot see.
//! When a single tracked waiter of the condvar can be it (no other thread is
//! in a wait of the condvar, and no earlier move is unresolved), it is that
//! one, handed over as by `notify_all`. Otherwise the mutex counts one
//! waiter more, from that condvar ([`Record::add_requeued`]: its address in
//! the snapshot's `waiter_from_condvar`, no tid), and the condvar keeps
//! listing its waiters (one of them has moved). That count goes when a
//! tracked waiter of the condvar returns from its wait owning the mutex
//! without having been handed over (the one moved), or at the latest when the
//! last tracked waiter of the condvar leaves (one moved and then timed out
//! on the mutex returns without it).
//!
//! Only waits begun while tracking is on are listed here (their condvar
//! wait's listing is the one moved), so the lock and uncontended paths do
//! not change: a notify that woke or requeued someone pays one more load
//! while nobody is listed.

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

/// Waiters a `notify_one` of condvar `cv` moved onto the mutex of record
/// `mutex` without knowing which: counted on the mutex, no tid.
struct Requeued {
    cv: usize,
    mutex: &'static Record,
    count: u32,
}

/// The listeners and the unresolved moves.
struct Handover {
    listeners: Vec<Listener>,
    requeued: Vec<Requeued>,
}

static LISTENERS: PiLocked<Handover> = PiLocked::new(Handover {
    listeners: Vec::new(),
    requeued: Vec::new(),
});
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
        std::ptr::write(
            LISTENERS.data_ptr(),
            Handover {
                listeners: Vec::new(),
                requeued: Vec::new(),
            },
        );
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
    let mut h = LISTENERS.lock();
    h.listeners.push(Listener {
        cv,
        tid,
        seq,
        mutex,
        handed: false,
    });
    LISTENING.store(h.listeners.len(), Ordering::SeqCst);
}

/// `tid`'s wait on `cv` (listed by [`listen`]) ended, owning the mutex by a
/// requeue if `requeued`: unlists it and, if a notify handed it over, takes
/// it off the mutex's waiters. Returns whether it was handed over (it is then
/// no longer listed on the condvar either).
///
/// Not handed over but `requeued`, it is one a `notify_one` moved unseen: the
/// mutex's count of such waiters goes down. The last tracked waiter of `cv`
/// to leave takes the rest of that count away (moved waiters that timed out
/// on the mutex).
pub(super) fn leave(cv: usize, tid: u32, requeued: bool) -> bool {
    let mut h = LISTENERS.lock();
    let Some(i) = h.listeners.iter().position(|x| x.cv == cv && x.tid == tid) else {
        return false;
    };
    let x = h.listeners.swap_remove(i);
    LISTENING.store(h.listeners.len(), Ordering::SeqCst);
    if x.handed {
        x.mutex.remove_waiter(tid);
    }
    let last = !h.listeners.iter().any(|x| x.cv == cv);
    uncount_requeued(&mut h, cv, |n| {
        if last {
            n
        } else {
            u32::from(requeued && !x.handed)
        }
    });
    x.handed
}

/// Takes `gone(count)` of the waiters a `notify_one` of `cv` moved unseen off
/// their mutex's count.
fn uncount_requeued(h: &mut Handover, cv: usize, gone: impl FnOnce(u32) -> u32) {
    let Some(j) = h.requeued.iter().position(|q| q.cv == cv) else {
        return;
    };
    let q = &mut h.requeued[j];
    for _ in 0..gone(q.count).min(q.count) {
        q.count -= 1;
        q.mutex.remove_requeued(q.count == 0);
    }
    if q.count == 0 {
        h.requeued.swap_remove(j);
    }
}

/// After a `notify_all` of `cv` whose requeue compared the sequence with
/// `seq`: every listener that sleeps with an older value is a waiter of the
/// mutex now, no longer of the condvar (record `cv_record`).
pub(super) fn notified_all(cv: usize, seq: u32, cv_record: Option<&'static Record>) {
    if LISTENING.load(Ordering::SeqCst) == 0 {
        return;
    }
    let mut h = LISTENERS.lock();
    for x in h
        .listeners
        .iter_mut()
        .filter(|x| x.cv == cv && !x.handed && x.seq != seq)
    {
        hand_over(x, cv_record);
    }
    // Those a `notify_one` moved unseen slept before this advanced the
    // sequence: they are listed by tid now.
    uncount_requeued(&mut h, cv, |n| n);
}

/// After a `notify_one` of `cv` whose requeue moved a sleeper onto the
/// mutex, while `in_wait` threads were in a requeue-PI wait of `cv` (counted
/// before the requeue returned: those requeued before and not returned yet
/// too): lists the one moved, or counts a waiter from `cv` on the mutex when
/// it cannot be told (see the [module docs](self)). Nothing when no tracked
/// waiter can be it.
pub(super) fn notified_one(cv: usize, in_wait: u32, cv_record: Option<&'static Record>) {
    if LISTENING.load(Ordering::SeqCst) == 0 {
        return;
    }
    let mut h = LISTENERS.lock();
    let unresolved = h.requeued.iter().any(|q| q.cv == cv);
    let of_cv = h.listeners.iter().filter(|x| x.cv == cv).count();
    let mut candidates = h.listeners.iter_mut().filter(|x| x.cv == cv && !x.handed);
    let Some(first) = candidates.next() else {
        // The one moved began its wait while tracking was off.
        return;
    };
    let alone = candidates.next().is_none();
    // Every thread in a wait of `cv` is a listener (none began untracked, or
    // is between its count and its listing).
    let all_listed = in_wait as usize == of_cv;
    if alone && all_listed && !unresolved {
        hand_over(first, cv_record);
        return;
    }
    let mutex = first.mutex;
    mutex.add_requeued(cv);
    match h.requeued.iter_mut().find(|q| q.cv == cv) {
        Some(q) => q.count += 1,
        None => h.requeued.push(Requeued {
            cv,
            mutex,
            count: 1,
        }),
    }
}

/// Lists listener `x` as a waiter of its mutex, no longer of the condvar
/// (record `cv_record`).
fn hand_over(x: &mut Listener, cv_record: Option<&'static Record>) {
    x.handed = true;
    x.mutex.add_waiter(x.tid);
    if let Some(r) = cv_record {
        r.remove_waiter(x.tid);
    }
}
