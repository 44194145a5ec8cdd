//! The per-object record: 52 words under a sequence counter, and their layout
//! (also the layout published to the shared registry; words are only ever
//! added at the end, which a reader of another release reads as 0 or skips).

use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};

pub(crate) const WORDS: usize = 52;
pub(crate) const W_SEQ: usize = 0;
pub(crate) const W_META: usize = 1;
pub(crate) const W_ADDR: usize = 2;
pub(crate) const W_OWNER: usize = 3;
pub(crate) const W_STATE: usize = 4;
pub(crate) const W_LOCKS: usize = 5;
pub(crate) const W_CONTENDED: usize = 6;
pub(crate) const W_WAIT_TOTAL: usize = 7;
pub(crate) const W_WAIT_MAX: usize = 8;
pub(crate) const W_HOLD_TOTAL: usize = 9;
pub(crate) const W_HOLD_MAX: usize = 10;
pub(crate) const W_TRY: usize = 11;
pub(crate) const W_TRY_FAIL: usize = 12;
pub(crate) const W_A: usize = 13;
pub(crate) const W_B: usize = 14;
pub(crate) const W_C: usize = 15;
pub(crate) const W_D: usize = 16;
/// Mutexes: the address of the `PiCondvar` whose `notify_one` moved onto it
/// waiters it could not tell (counted in [`W_WAITERS`], no tid listed; 0:
/// none). Written under the handover lock only (`sync::pi_condvar_handover`).
pub(crate) const W_REQUEUED_FROM: usize = 17;
/// Semaphores: timed waits that timed out (a semaphore has no use for
/// [`W_REQUEUED_FROM`], a mutex's word). Any thread adds to it.
pub(crate) const W_SEM_TIMEOUTS: usize = W_REQUEUED_FROM;
pub(crate) const W_ACQ: usize = 18;
/// Waiters now in the low 32 bits (what readers show), waits ended in the
/// high 32 ([`Record::waits_ended`]).
pub(crate) const W_WAITERS: usize = 19;
/// One ended wait in [`W_WAITERS`].
const WAIT_ENDED: u64 = 1 << 32;
pub(crate) const W_WAITER0: usize = 20;
pub(crate) const W_NAME: usize = 28;
/// The second block of waiter words, after the name.
pub(crate) const W_WAITER8: usize = 32;
/// Rwlocks: timed reads and writes that blocked, whether they got the lock
/// or timed out (as `W_CONTENDED` and `W_B` count the waits that got it).
/// Any thread adds to it, as to the next three.
pub(crate) const W_RW_TIMED: usize = 48;
/// Rwlocks: timed reads and writes that timed out.
pub(crate) const W_RW_TIMEOUTS: usize = 49;
/// Rwlocks: the wait time of the timed writes that timed out (a writer's
/// wait time that got the lock is the owner's `W_WAIT_TOTAL`; a read's,
/// timed out or not, is in `W_C`).
pub(crate) const W_RW_TIMEOUT_WAIT: usize = 50;
/// Rwlocks: the longest wait of a timed write that timed out.
pub(crate) const W_RW_TIMEOUT_WAIT_MAX: usize = 51;
/// How many waiter tids a record lists (`info.waiters` counts all of them).
pub(crate) const MAX_WAITER_TIDS: usize = 24;

/// The word of waiter slot `i` (0..MAX_WAITER_TIDS).
#[inline]
pub(crate) const fn waiter_word(i: usize) -> usize {
    if i < 8 {
        W_WAITER0 + i
    } else {
        W_WAITER8 + (i - 8)
    }
}
pub(crate) const NAME_BYTES: usize = 32;

pub(crate) const META_LIVE: u64 = 1 << 8;
pub(crate) const META_SHARED: u64 = 1 << 9;

/// The kind of a synchronization object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// [`NormalMutex`](crate::sync::NormalMutex) (`PTHREAD_MUTEX_NORMAL`, no protocol).
    NormalMutex = 1,
    /// [`RecursiveMutex`](crate::sync::RecursiveMutex) (`PTHREAD_MUTEX_RECURSIVE`).
    RecursiveMutex = 2,
    /// [`PiMutex`](crate::sync::PiMutex) (`PTHREAD_PRIO_INHERIT`).
    PiMutex = 3,
    /// [`CeilingMutex`](crate::sync::CeilingMutex) (`PTHREAD_PRIO_PROTECT`).
    CeilingMutex = 4,
    /// [`Condvar`](crate::sync::Condvar).
    Condvar = 5,
    /// [`Semaphore`](crate::sync::Semaphore).
    Semaphore = 6,
    /// [`RwLock`](crate::sync::RwLock).
    RwLock = 7,
}

impl Kind {
    pub(crate) fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::NormalMutex,
            2 => Kind::RecursiveMutex,
            3 => Kind::PiMutex,
            4 => Kind::CeilingMutex,
            5 => Kind::Condvar,
            6 => Kind::Semaphore,
            7 => Kind::RwLock,
            _ => return None,
        })
    }

    /// Whether it is one of the mutex kinds.
    pub fn is_mutex(self) -> bool {
        matches!(
            self,
            Kind::NormalMutex | Kind::RecursiveMutex | Kind::PiMutex | Kind::CeilingMutex
        )
    }

    /// A short lower-case name (`"pi_mutex"`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::NormalMutex => "mutex",
            Kind::RecursiveMutex => "recursive_mutex",
            Kind::PiMutex => "pi_mutex",
            Kind::CeilingMutex => "ceiling_mutex",
            Kind::Condvar => "condvar",
            Kind::Semaphore => "semaphore",
            Kind::RwLock => "rwlock",
        }
    }
}

/// One object's record (see the [module docs](crate::sync::track)).
#[repr(C, align(64))]
pub(crate) struct Record {
    pub(crate) w: [AtomicU64; WORDS],
    /// The next record of the list of every record ([`super::slab`]), fixed once set.
    pub(crate) next_all: AtomicPtr<Record>,
    /// The next record of the free list while this one is free ([`super::slab`]).
    pub(crate) next_free: AtomicPtr<Record>,
    /// The reset epoch the owner-written statistics belong to (written by the
    /// owner under the sequence counter: [`super::reset`]).
    pub(crate) stats_epoch: AtomicU64,
    /// Groups of atomic adds under way ([`Record::group`]).
    pub(crate) busy: AtomicU64,
}

impl Record {
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.w[i].load(Ordering::Relaxed)
    }
    #[inline(always)]
    pub(crate) fn set(&self, i: usize, v: u64) {
        self.w[i].store(v, Ordering::Relaxed)
    }
    /// Mirrors a live value (`live()`: a reader count, a semaphore's count) into
    /// word `i` after the caller changed it, for readers that see only the record
    /// ([`objects`](crate::sync::objects), `rtstat`). Other threads change the
    /// value concurrently, so the store is checked against it again: with the
    /// `SeqCst` fences, the thread whose store comes last sees every change made
    /// before the other stores, so it leaves the final value. Atomics only (a
    /// semaphore's `post` stays usable in a signal handler).
    pub(crate) fn mirror(&self, i: usize, live: impl Fn() -> u64) {
        fence(Ordering::SeqCst);
        loop {
            let n = live();
            self.set(i, n);
            fence(Ordering::SeqCst);
            if live() == n {
                return;
            }
        }
    }
    #[inline(always)]
    pub(crate) fn bump(&self, i: usize) {
        self.set(i, self.get(i).wrapping_add(1))
    }
    #[inline(always)]
    pub(crate) fn add(&self, i: usize, v: u64) {
        self.w[i].fetch_add(v, Ordering::Relaxed);
    }
    #[inline(always)]
    pub(crate) fn max(&self, i: usize, v: u64) {
        self.w[i].fetch_max(v, Ordering::Relaxed);
    }
    /// Starts an owner-side write (the sequence counter becomes odd).
    ///
    /// The counter is even here, but for one case: in a forked child, when a
    /// thread of the parent was between its `begin` and `end` at the fork. It
    /// stays odd there, so this starts from the even value below it: the
    /// child's first write ends the parent's, instead of turning the parity
    /// over for good (every later copy would then fail).
    #[inline(always)]
    pub(crate) fn begin(&self) -> u64 {
        let s = self.get(W_SEQ) & !1;
        self.set(W_SEQ, s.wrapping_add(1));
        fence(Ordering::Release);
        s
    }
    /// Ends an owner-side write.
    #[inline(always)]
    pub(crate) fn end(&self, s: u64) {
        self.w[W_SEQ].store(s.wrapping_add(2), Ordering::Release);
    }

    /// Adds a waiter tid to the small waiter table (if there is room) and counts it.
    pub(crate) fn add_waiter(&self, tid: u32) {
        self.add(W_WAITERS, 1);
        for i in 0..MAX_WAITER_TIDS {
            if self.w[waiter_word(i)]
                .compare_exchange(0, tid as u64, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Uncounts a waiter and takes its tid off the table; counts the wait as
    /// ended ([`waits_ended`](Self::waits_ended)).
    ///
    /// The tid goes first, the count after (`Release`), then a `SeqCst`
    /// fence, for [`resume`](super::resume::resume): a switch back on that
    /// reads the count of ended waits before this (`Acquire`) and then finds
    /// the tid still listed sees the count move when it reads it again after
    /// storing the level behind its fence, unless the unlocks this thread
    /// makes next see tracking on. (The contended path only.)
    pub(crate) fn remove_waiter(&self, tid: u32) {
        for i in 0..MAX_WAITER_TIDS {
            if self.w[waiter_word(i)]
                .compare_exchange(tid as u64, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                break;
            }
        }
        // -1 waiter in the low half, +1 ended wait in the high half.
        self.w[W_WAITERS].fetch_add(WAIT_ENDED - 1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Counts a waiter that `notify_one` of the condvar at `cv` moved onto
    /// this mutex, not knowing which (no tid listed).
    pub(crate) fn add_requeued(&self, cv: usize) {
        self.set(W_REQUEUED_FROM, cv as u64);
        self.add(W_WAITERS, 1);
    }

    /// Uncounts a waiter counted by [`add_requeued`](Self::add_requeued);
    /// `last`: none is left (the condvar is no longer named).
    pub(crate) fn remove_requeued(&self, last: bool) {
        if last {
            self.set(W_REQUEUED_FROM, 0);
        }
        self.w[W_WAITERS].fetch_add(WAIT_ENDED - 1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// How many waits of the record have ended (modulo 2^32), for
    /// [`resume`](super::resume::resume) (`Acquire`).
    pub(crate) fn waits_ended(&self) -> u32 {
        (self.w[W_WAITERS].load(Ordering::Acquire) >> 32) as u32
    }

    /// Forgets every waiter (count and tids): in a forked child, where none
    /// of them exists. (A mutex's requeued waiters with them; the same word
    /// is a semaphore's count of timeouts, which the child keeps.)
    pub(crate) fn forget_waiters(&self) {
        self.set(W_WAITERS, 0);
        if Kind::from_u8(self.get(W_META) as u8).is_some_and(Kind::is_mutex) {
            self.set(W_REQUEUED_FROM, 0);
        }
        for i in 0..MAX_WAITER_TIDS {
            self.set(waiter_word(i), 0);
        }
    }

    /// Zeroes every word but the sequence counter (a reader that copied the
    /// record before must see it move).
    pub(crate) fn clear(&self) {
        for w in &self.w[W_SEQ + 1..] {
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// [`reset_stats`](super::reset::reset_stats)'s epoch. Even: the number of
/// resets done, times two; odd while one runs. (Here, not in `reset`, so
/// that the fork handler of the record lists can end a reset without
/// depending on `reset`, which walks those lists.)
pub(crate) static EPOCH: AtomicU64 = AtomicU64::new(0);

/// In a forked child: ends a reset a parent thread was running (it does not
/// end otherwise: readers and resets would wait for it for ever). Stores
/// only.
pub(crate) fn epoch_after_fork_in_child() {
    let e = EPOCH.load(Ordering::Relaxed);
    if e & 1 == 1 {
        EPOCH.store(e + 1, Ordering::Relaxed);
    }
}

impl Record {
    /// In a forked child: the statistics groups under way in parent threads
    /// do not end there (a reset would wait for them for ever). Stores only.
    pub(crate) fn end_groups_in_child(&self) {
        self.busy.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
pub(crate) fn copy(r: &Record) -> Option<[u64; WORDS]> {
    copy_with_epoch(r).map(|(w, _)| w)
}

/// A consistent copy of the record's words, with the reset epoch its owner
/// words belong to ([`Record::stats_epoch`]); readers use
/// [`copy_current`](super::reset::copy_current).
pub(crate) fn copy_with_epoch(r: &Record) -> Option<([u64; WORDS], u64)> {
    for _ in 0..10_000 {
        let s0 = r.w[W_SEQ].load(Ordering::Acquire);
        if s0 & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let mut out = [0u64; WORDS];
        for (o, w) in out.iter_mut().zip(r.w.iter()) {
            *o = w.load(Ordering::Relaxed);
        }
        let epoch = r.stats_epoch.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if r.w[W_SEQ].load(Ordering::Relaxed) == s0 {
            return Some((out, epoch));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            w: [const { AtomicU64::new(0) }; WORDS],
            next_all: AtomicPtr::new(std::ptr::null_mut()),
            next_free: AtomicPtr::new(std::ptr::null_mut()),
            stats_epoch: AtomicU64::new(0),
            busy: AtomicU64::new(0),
        }
    }

    /// A forked child inherits a record whose counter a parent thread left odd
    /// (between its `begin` and `end` at the fork): the child's next write
    /// makes the record readable again, with what it wrote.
    #[test]
    fn a_write_after_a_begin_left_open_makes_the_record_readable() {
        let r = record();
        let _left_open = r.begin();
        assert!(copy(&r).is_none(), "mid-write: no consistent copy");
        let s = r.begin();
        r.set(W_LOCKS, 7);
        r.end(s);
        let w = copy(&r).expect("a consistent copy after the write");
        assert_eq!(w[W_LOCKS], 7);
        assert_eq!(w[W_SEQ] & 1, 0);
    }
}
