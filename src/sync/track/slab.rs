//! Where records come from: the slab of records (never freed, recycled when their
//! object is dropped) and [`Track`], the handle every sync object embeds.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

use super::record::*;
use crate::sys::pilock::PiLocked;

// Every record ever allocated is on ALL (a push-only list: records are never
// freed), and the records of dropped objects are on FREE (a stack). Pushing onto
// either is one CAS, so `release` (on drop) and the readers (`all_records`, the
// publisher) take no lock. Taking a record off FREE is serialized by POP, a
// priority-inheriting lock: with a single popper at a time, a record on the stack
// cannot be popped and pushed back between a popper's read of the head and its
// CAS, so the stack has no ABA problem. A real-time thread that blocks on POP
// boosts the holder, which holds it for a few loads and one CAS.

static ALL: AtomicPtr<Record> = AtomicPtr::new(std::ptr::null_mut());
static FREE: AtomicPtr<Record> = AtomicPtr::new(std::ptr::null_mut());
static POP: PiLocked<()> = PiLocked::new(());

/// In a forked child, POP may have been held by a parent thread that does not
/// exist there; the lists themselves are always consistent between two CASes.
///
/// The waiters the records list are threads of the parent (the forking thread
/// waits for nothing), which do not exist in the child either: they are
/// forgotten, or `objects()` and the child's registry would list them, and
/// `find_deadlocks` chain through them. Async-signal-safe: loads and stores
/// only, along the list of every record.
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing.
    unsafe { POP.raw() }.reset_in_child();
    epoch_after_fork_in_child();
    let mut p = ALL.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: records are leaked ('static) and never freed.
        let r: &'static Record = unsafe { &*p };
        r.forget_waiters();
        r.end_groups_in_child();
        p = r.next_all.load(Ordering::Relaxed);
    }
}

fn push_all(r: &'static Record) {
    let mut head = ALL.load(Ordering::Acquire);
    loop {
        r.next_all.store(head, Ordering::Relaxed);
        match ALL.compare_exchange_weak(
            head,
            r as *const Record as *mut Record,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

fn push_free(r: &'static Record) {
    let mut head = FREE.load(Ordering::Acquire);
    loop {
        r.next_free.store(head, Ordering::Relaxed);
        match FREE.compare_exchange_weak(
            head,
            r as *const Record as *mut Record,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// Whether [`after_fork_in_child`] is registered. Not a `Once`: a fork while
/// another thread was inside its `call_once` would leave the `Once` running in
/// the child, whose first record would then wait forever for that thread.
static FORK_HOOKED: AtomicBool = AtomicBool::new(false);

/// Takes a record off FREE. Every object's first record comes through here, so
/// this is where POP is first taken (`Track::set_name` takes it only after
/// `record`): the fork hook that forgets POP's holder is registered before
/// (registering again is a no-op).
fn pop_free() -> Option<&'static Record> {
    if !FORK_HOOKED.load(Ordering::Acquire) {
        crate::sys::fork::on_child(after_fork_in_child);
        FORK_HOOKED.store(true, Ordering::Release);
    }
    let _one_popper = POP.lock();
    let mut head = FREE.load(Ordering::Acquire);
    loop {
        if head.is_null() {
            return None;
        }
        // SAFETY: records are leaked ('static) and never freed.
        let r: &'static Record = unsafe { &*head };
        let next = r.next_free.load(Ordering::Relaxed);
        match FREE.compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => return Some(r),
            Err(h) => head = h,
        }
    }
}

fn new_record() -> &'static Record {
    let r: &'static Record = Box::leak(Box::new(Record {
        w: [const { AtomicU64::new(0) }; WORDS],
        next_all: AtomicPtr::new(std::ptr::null_mut()),
        next_free: AtomicPtr::new(std::ptr::null_mut()),
        stats_epoch: AtomicU64::new(0),
        busy: AtomicU64::new(0),
    }));
    push_all(r);
    r
}

/// The tracking handle embedded in every sync object: a pointer to its record, null
/// until the object is first used with tracking on.
pub(crate) struct Track {
    rec: AtomicPtr<Record>,
}

impl Track {
    pub(crate) const fn new() -> Track {
        Track {
            rec: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The record, registering the object on first use.
    #[inline(always)]
    pub(crate) fn record(&self, kind: Kind, addr: usize) -> &'static Record {
        let p = self.rec.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: records are leaked ('static) and never freed.
            return unsafe { &*p };
        }
        self.register(kind, addr, None).0
    }

    /// The record if the object is known.
    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&'static Record> {
        let p = self.rec.load(Ordering::Acquire);
        // SAFETY: records are leaked ('static) and never freed.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Gives the object a record (of the dropped object it recycles, or a new
    /// one), named `name` if given; returns it, and whether it is this call's
    /// (not another thread's, which registered the object meanwhile).
    ///
    /// The record is filled, and emptied again if another thread won, under
    /// its sequence counter (this thread is its only writer: it is on no
    /// object): a reader copying it meanwhile retries, instead of taking a
    /// mix of the dropped object's words and the new one's (or a new name cut
    /// short) for a consistent copy.
    #[cold]
    #[inline(never)]
    fn register(
        &self,
        kind: Kind,
        addr: usize,
        name: Option<&[u64; NAME_BYTES / 8]>,
    ) -> (&'static Record, bool) {
        if matches!(kind, Kind::RwLock | Kind::Semaphore) {
            super::level::note_mirrored();
        }
        let r = pop_free().unwrap_or_else(new_record);
        let s = r.begin();
        r.clear();
        r.set(W_ADDR, addr as u64);
        if let Some(words) = name {
            for (i, w) in words.iter().enumerate() {
                r.set(W_NAME + i, *w);
            }
        }
        if kind == Kind::Semaphore {
            r.set(W_C, u64::MAX);
        }
        r.set(W_META, kind as u64 | META_LIVE);
        r.owner_words_current();
        r.end(s);
        let p = r as *const Record as *mut Record;
        match self.rec.compare_exchange(
            std::ptr::null_mut(),
            p,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => (r, true),
            Err(theirs) => {
                // Another thread registered the object meanwhile: use its record.
                let s = r.begin();
                r.set(W_META, 0);
                r.end(s);
                push_free(r);
                // SAFETY: records are leaked ('static) and never freed.
                (unsafe { &*theirs }, false)
            }
        }
    }

    /// Registers the object now (whatever the level) and sets its name.
    ///
    /// The name of an object not known yet is written as it is registered
    /// (readers see it named from the start). Renaming a known object writes
    /// the name words one by one: a reader copying them meanwhile may see a
    /// mix of the old name and the new (its holder may be writing the record
    /// under the sequence counter, which has one writer at a time).
    pub(crate) fn set_name(&self, kind: Kind, addr: usize, name: &str) {
        let mut buf = [0u8; NAME_BYTES];
        // The longest prefix of whole characters that fits (a character cut in
        // two would read back as U+FFFD).
        let mut n = name.len().min(NAME_BYTES);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        buf[..n].copy_from_slice(&name.as_bytes()[..n]);
        let mut words = [0u64; NAME_BYTES / 8];
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            *w = u64::from_ne_bytes(b);
        }
        let r = match self.get() {
            Some(r) => r,
            None => match self.register(kind, addr, Some(&words)) {
                (_, true) => return,
                (r, false) => r,
            },
        };
        // One namer at a time, so two names never mix.
        let _one_namer = POP.lock();
        for (i, w) in words.iter().enumerate() {
            r.set(W_NAME + i, *w);
        }
    }

    /// Sets the priority ceiling shown in the info.
    pub(crate) fn set_ceiling(&self, ceiling: u32) {
        if let Some(r) = self.get() {
            let m = r.get(W_META) & 0xffff;
            r.set(W_META, m | (u64::from(ceiling) << 16));
        }
    }

    /// Sets the ceiling shown in the info if none is shown yet, for a thread
    /// that does not hold the mutex (a failed trylock that made it known): a
    /// compare-and-swap, so it never overwrites what the owner wrote (which
    /// [`set_ceiling`](Self::set_ceiling) stores after any change).
    pub(crate) fn note_ceiling(&self, ceiling: u32) {
        if let Some(r) = self.get() {
            let m = r.get(W_META);
            if (m >> 16) & 0xff == 0 {
                let _ = r.w[W_META].compare_exchange(
                    m,
                    m | (u64::from(ceiling) << 16),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
        }
    }

    /// Forgets the object (it is dropped): the record goes back to the slab.
    fn release(&mut self) {
        let p = *self.rec.get_mut();
        if !p.is_null() {
            // SAFETY: records are 'static.
            let r: &'static Record = unsafe { &*p };
            // Under the sequence counter (see `register`): the object is gone,
            // so this thread is the record's only writer.
            let s = r.begin();
            r.set(W_META, 0);
            r.end(s);
            *self.rec.get_mut() = std::ptr::null_mut();
            push_free(r);
        }
    }
}

impl Drop for Track {
    fn drop(&mut self) {
        self.release();
    }
}

/// Every record ever allocated.
pub(crate) fn all_records() -> Vec<&'static Record> {
    let mut out = Vec::new();
    let mut p = ALL.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: records are leaked ('static) and never freed.
        let r: &'static Record = unsafe { &*p };
        out.push(r);
        p = r.next_all.load(Ordering::Relaxed);
    }
    // Oldest first, as before.
    out.reverse();
    out
}
