//! What switching tracking back on keeps of the records and what it forgets
//! ([`resume`]): the owners that may have unlocked while tracking was off
//! are forgotten, the owners of a cycle of blocked threads are kept.

use std::sync::atomic::{fence, Ordering};

use super::record::*;
use super::slab::all_records;

/// A thread listed as blocked on a record: its tid, the record, and the
/// record's count of ended waits ([`Record::waits_ended`]) when the tid was
/// read.
struct Blocked {
    tid: u32,
    on: &'static Record,
    ended: u32,
}

/// Switches tracking back on (`switch_on` stores the level), forgetting what
/// may have changed unseen while it was off.
///
/// An unlock with tracking off leaves the record's owner, its hold start and
/// a recursive mutex's count: kept, they would show a lock held by a thread
/// that released it, time the next tracked unlock from a hold that may never
/// have been (the lock released and taken again meanwhile), and let
/// [`find_deadlocks`](super::find_deadlocks) chain through a stale owner.
/// So each is cleared, but for an owner that is blocked in a tracked wait
/// (listed as a waiter of a mutex, rwlock or semaphore: a thread waiting
/// there releases nothing, unlike a condition variable's, which unlocks its
/// mutex after it is listed). Such a thread has been blocked since before
/// tracking went off (its wait began while tracking was on, and a wait that
/// ends unlists its thread whatever the level), so what the record says it
/// holds is what it held when tracking went off, and still holds: the owners
/// of a deadlock cycle stay known, and the cycle stays visible (its threads
/// never wait anew to note their owners again). By induction over the
/// switches, what a record said then was right.
///
/// A kept owner whose wait ends between the listing read here and the level
/// store may release its lock untracked in between: after the store, a
/// record whose count of ended waits moved since it was read has the owners
/// kept for its waiters cleared again (unless a tracked acquisition rewrote
/// them). The fences pair with [`Record::remove_waiter`]'s: either the
/// count read here shows the wait's end, or the thread's unlock sees
/// tracking on and clears the record itself.
pub(crate) fn resume(switch_on: impl FnOnce()) {
    let records = all_records();
    let mut blocked = Vec::new();
    for &r in &records {
        let meta = r.get(W_META);
        if meta & META_LIVE == 0 || meta as u8 == Kind::Condvar as u8 {
            continue;
        }
        // Before the tids (see `Record::remove_waiter`).
        let ended = r.waits_ended();
        for i in 0..MAX_WAITER_TIDS {
            let tid = r.get(waiter_word(i)) as u32;
            if tid != 0 {
                blocked.push(Blocked { tid, on: r, ended });
            }
        }
    }
    let mut kept = Vec::new();
    for &r in &records {
        let owner = r.get(W_OWNER) as u32;
        match blocked.iter().find(|b| owner != 0 && b.tid == owner) {
            Some(b) => kept.push((r, owner, b)),
            None => forget(r),
        }
    }
    switch_on();
    fence(Ordering::SeqCst);
    for (r, owner, b) in kept {
        if b.on.waits_ended() != b.ended
            && r.w[W_OWNER]
                .compare_exchange(u64::from(owner), 0, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
        {
            forget(r);
        }
    }
}

/// Clears the owner, the hold start and a recursive mutex's count of `r`:
/// single-word stores, as an unlock's at the counts level. A recursion count
/// kept would be shown with the holder a waiter notes, though the holder may
/// have unlocked levels meanwhile (a waiter writes the count into a record
/// that shows none).
fn forget(r: &Record) {
    r.set(W_OWNER, 0);
    r.set(W_ACQ, 0);
    if r.get(W_META) as u8 == Kind::RecursiveMutex as u8 {
        r.set(W_STATE, 0);
    }
}
