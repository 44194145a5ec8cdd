//! Streams: the process-wide slot table, the recording fast path, control
//! operations, reading with a merge by timestamp, and the flusher thread.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::{
    compiler_fence, AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering::*,
};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::attr::{
    Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr, MAX_SYS_PAYLOAD, RECORD_HEADER,
};
use super::event::Event;
use super::ids::{self, EventId};
use super::log::{LogStatus, LogWriter};
use super::ring::{Padded, Ring, NO_ROOM, ROOM_AFTER_GAP};
use super::set::{EventSet, FilterHow, WORDS};
use super::status::TraceStatus;
use crate::sys::clock;
use crate::{Error, ErrorKind, Result};

/// Streams that may exist at once in a process (`TRACE_SYS_MAX`).
pub const TRACE_SYS_MAX: usize = 8;

/// One bit per slot whose stream is running.
static RUNNING: AtomicU32 = AtomicU32::new(0);
static SLOTS: [AtomicPtr<Stream>; TRACE_SYS_MAX] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; TRACE_SYS_MAX];
static GENS: [Padded<AtomicU64>; TRACE_SYS_MAX] =
    [const { Padded(AtomicU64::new(0)) }; TRACE_SYS_MAX];
static FILTERS: [Padded<[AtomicU64; WORDS]>; TRACE_SYS_MAX] =
    [const { Padded([const { AtomicU64::new(0) }; WORDS]) }; TRACE_SYS_MAX];
static SLOT_USED: Mutex<[bool; TRACE_SYS_MAX]> = Mutex::new([false; TRACE_SYS_MAX]);
/// Per event id, whether some running stream records it: the union over running
/// streams of the complement of their filters. All zero when nothing runs, so the
/// first check of `event()` is one load and a bit test for both the stopped and the
/// filtered case.
static PASS: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
static PASS_LOCK: Mutex<()> = Mutex::new(());

/// Recomputes `PASS` after a start, stop, filter change or shutdown.
fn update_pass() {
    let _g = lock(&PASS_LOCK);
    let running = RUNNING.load(Acquire);
    let mut pass = [0u64; WORDS];
    for (slot, filter) in FILTERS.iter().enumerate() {
        if running & (1 << slot) != 0 {
            for (w, f) in pass.iter_mut().zip(filter.0.iter()) {
                *w |= !f.load(Acquire);
            }
        }
    }
    for (i, w) in PASS.iter().enumerate() {
        w.store(pass[i], Release);
    }
}

/// Set when membarrier is unavailable: writers then pay a full fence.
static NEED_FENCE: AtomicBool = AtomicBool::new(false);
static PID: AtomicU32 = AtomicU32::new(0);

/// A thread's "inside a record" flag, read by shutdown after a membarrier.
#[repr(align(64))]
struct Busy(AtomicU32);

static BUSY_ALL: Mutex<Vec<&'static Busy>> = Mutex::new(Vec::new());
static BUSY_FREE: Mutex<Vec<&'static Busy>> = Mutex::new(Vec::new());

struct Local {
    busy: *const Busy,
    rings: [(*const Ring, u64); TRACE_SYS_MAX],
}

thread_local! {
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local {
            busy: std::ptr::null(),
            rings: [(std::ptr::null(), 0); TRACE_SYS_MAX],
        })
    };
    static THREAD_EXIT: ThreadExit = const { ThreadExit };
}

/// Returns the thread's busy flag to the pool when the thread exits.
struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            // SAFETY: LOCAL is only touched by its own thread, never re-entrantly.
            let l = unsafe { &mut *l.get() };
            if !l.busy.is_null() {
                // SAFETY: `busy` points to a leaked, never-freed `Busy`.
                let b: &'static Busy = unsafe { &*l.busy };
                // Mark this thread's sub-buffers orphaned (under the busy protocol,
                // so a stream being shut down is not touched).
                b.0.store(1, Relaxed);
                if NEED_FENCE.load(Relaxed) {
                    std::sync::atomic::fence(SeqCst);
                } else {
                    compiler_fence(SeqCst);
                }
                for (slot, (ring, gen)) in l.rings.iter().enumerate() {
                    if !ring.is_null() && GENS[slot].0.load(Relaxed) == *gen {
                        // SAFETY: the generation is live and unchanged since `busy`
                        // was set, so the stream and its rings are alive.
                        unsafe { (**ring).orphan.store(true, Release) };
                    }
                }
                b.0.store(0, Release);
                l.busy = std::ptr::null();
                l.rings = [(std::ptr::null(), 0); TRACE_SYS_MAX];
                lock(&BUSY_FREE).push(b);
            }
        });
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The calling thread's kernel tid (cached; reset in a forked child).
pub(crate) use crate::sys::tid::current as current_tid;

/// Whether any stream is running: one relaxed load.
#[inline(always)]
pub(crate) fn any_running() -> bool {
    RUNNING.load(Relaxed) != 0
}

/// Whether some running stream records `id`: one relaxed load and a bit test (lets a
/// trace point skip building a payload that every stream filters).
#[inline(always)]
pub(crate) fn passes(id: EventId) -> bool {
    let i = id.0 as usize;
    PASS[(i / 64) & (WORDS - 1)].load(Relaxed) >> (i % 64) & 1 != 0
}

/// `posix_trace_event`: records `data` under `id` in every running stream of the
/// process that does not filter `id`. A relaxed load and a branch when none runs.
#[inline(always)]
pub(crate) fn event(id: EventId, data: &[u8]) {
    let i = id.0 as usize;
    // `i < ID_SPACE` (EventId invariant); the mask keeps the index check away.
    if PASS[(i / 64) & (WORDS - 1)].load(Relaxed) >> (i % 64) & 1 != 0 {
        record_all(RUNNING.load(Relaxed), id.0, data);
    }
}

#[inline]
fn filtered(slot: usize, id: u16) -> bool {
    FILTERS[slot].0[id as usize / 64].load(Relaxed) >> (id % 64) & 1 != 0
}

#[inline(never)]
fn record_all(mut mask: u32, id: u16, data: &[u8]) {
    if id as usize >= ids::ID_SPACE {
        return;
    }
    while mask != 0 {
        let slot = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if filtered(slot, id) {
            continue;
        }
        record(slot, id, data, false);
    }
}

/// Records into one slot's stream. `force` ignores the running bit (control events).
#[inline]
fn record(slot: usize, id: u16, data: &[u8], force: bool) -> bool {
    LOCAL
        .try_with(|l| {
            // SAFETY: LOCAL is only touched by its own thread, and `record` is not
            // re-entered on it: it calls no user code, and the one allocation (a
            // thread's first event maps its sub-buffer) does not record events
            // unless a custom global allocator calls `event()`, which the docs of
            // `trace::event` forbid, as they forbid signal handlers calling it.
            let l = unsafe { &mut *l.get() };
            record_local(l, slot, id, data, force)
        })
        .unwrap_or(false)
}

#[inline]
fn record_local(l: &mut Local, slot: usize, id: u16, data: &[u8], force: bool) -> bool {
    if l.busy.is_null() {
        register_thread(l);
    }
    // SAFETY: `busy` is a leaked `Busy` owned by this thread until it exits.
    let busy = unsafe { &*l.busy };
    busy.0.store(1, Relaxed);
    if NEED_FENCE.load(Relaxed) {
        std::sync::atomic::fence(SeqCst);
    } else {
        compiler_fence(SeqCst);
    }
    // Checked after `busy` is set: shutdown clears these, runs a membarrier, then
    // waits for `busy == 0`, so a stale stream is never touched.
    let gen = GENS[slot].0.load(Relaxed);
    let ok = (force || RUNNING.load(Relaxed) & (1 << slot) != 0) && gen & 1 == 1;
    let mut done = false;
    if ok {
        let (mut ring, rgen) = l.rings[slot];
        if rgen != gen || ring.is_null() {
            ring = attach_ring(l, slot, gen);
        }
        if !ring.is_null() {
            let sp = SLOTS[slot].load(Acquire);
            // SAFETY: the slot's generation is live (odd) and unchanged since `busy`
            // was set, so the stream and its rings are alive until `busy` is cleared.
            let (s, r) = unsafe { (&*sp, &*ring) };
            done = s.write(r, r.tid, id, data, force);
        }
    }
    busy.0.store(0, Release);
    done
}

#[cold]
fn register_thread(l: &mut Local) {
    let b = lock(&BUSY_FREE).pop().unwrap_or_else(|| {
        let b: &'static Busy = Box::leak(Box::new(Busy(AtomicU32::new(0))));
        lock(&BUSY_ALL).push(b);
        b
    });
    l.busy = b;
    let _ = THREAD_EXIT.try_with(|_| ());
}

#[cold]
fn attach_ring(l: &mut Local, slot: usize, gen: u64) -> *const Ring {
    let sp = SLOTS[slot].load(Acquire);
    if sp.is_null() {
        return std::ptr::null();
    }
    // SAFETY: as in `record_local`: the generation is live while `busy` is set.
    let s = unsafe { &*sp };
    match s.add_ring(crate::sys::tid::current()) {
        Some(r) => {
            l.rings[slot] = (r, gen);
            r
        }
        None => std::ptr::null(),
    }
}

/// Why a stream stopped, as recorded in a STOP event's payload.
pub(crate) const STOP_CALL: u32 = 0;
pub(crate) const STOP_FULL: u32 = 1;

pub(crate) struct ReaderState {
    pending: VecDeque<Event>,
}

pub(crate) struct Stream {
    slot: usize,
    gen: u64,
    pub(crate) pid: u32,
    pub(crate) attr: TraceAttr,
    policy: StreamFullPolicy,
    max_data: usize,
    cap: usize,
    reserve: u64,
    // Boxed: threads keep raw pointers to their ring, so rings must not move.
    #[allow(clippy::vec_box)]
    rings: Mutex<Vec<Box<Ring>>>,
    ring_ptrs: AtomicPtr<Vec<*const Ring>>,
    // Boxed: readers hold a raw pointer to a snapshot, which must not move.
    #[allow(clippy::vec_box)]
    old_ptrs: Mutex<Vec<Box<Vec<*const Ring>>>>,
    /// Rings removed after their thread exited: buffers unmapped, counters kept
    /// (stale snapshots may still read them).
    #[allow(clippy::vec_box)]
    graveyard: Mutex<Vec<Box<Ring>>>,
    auto_suspended: AtomicBool,
    /// Serialises start, stop, filter changes and the automatic resume, so racing
    /// calls record one START or STOP, not two. Never held with the reader lock
    /// taken after it.
    ctl: Mutex<()>,
    flush_req: AtomicBool,
    pub(crate) flushing: AtomicBool,
    pub(crate) flush_error: AtomicI32,
    flush_done: AtomicU64,
    pub(crate) full_seen: AtomicBool,
    /// Mirrors of the log writer's flags, so `status()` never waits for a flush.
    log_overrun: AtomicBool,
    log_full: AtomicBool,
    reader: Mutex<ReaderState>,
    pub(crate) log: Option<Mutex<LogWriter>>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    wake: (Mutex<u64>, Condvar),
    stop_flusher: AtomicBool,
    /// `lost_sum()` when the status was last read (the overrun flag resets).
    lost_acked: AtomicU64,
}

// SAFETY: the raw ring pointers point into `rings`, owned by the stream.
unsafe impl Send for Stream {}
// SAFETY: as above; shared state is atomics and mutexes.
unsafe impl Sync for Stream {}

impl Stream {
    /// The current rings. The caller holds the reader lock: old snapshots are freed
    /// under it.
    fn rings_snapshot(&self) -> Vec<&Ring> {
        let p = self.ring_ptrs.load(Acquire);
        if p.is_null() {
            return Vec::new();
        }
        // SAFETY: snapshots are kept alive in `old_ptrs` until the stream drops, and
        // each pointer targets a boxed ring the stream owns.
        unsafe { (*p).iter().map(|r| &**r).collect() }
    }

    fn add_ring(&self, tid: u32) -> Option<*const Ring> {
        let ring = Ring::new(self.cap, tid).ok()?;
        let mut rings = lock(&self.rings);
        let ptr: *const Ring = &*ring;
        rings.push(ring);
        self.publish(&rings);
        Some(ptr)
    }

    /// Publishes a new snapshot of the ring list (rings lock held).
    fn publish(&self, rings: &[Box<Ring>]) {
        let snap: Box<Vec<*const Ring>> =
            Box::new(rings.iter().map(|r| &**r as *const Ring).collect());
        let raw = Box::into_raw(snap);
        self.ring_ptrs.store(raw, Release);
        // SAFETY: `raw` came from Box::into_raw just above; keep it alive for readers.
        lock(&self.old_ptrs).push(unsafe { Box::from_raw(raw) });
    }

    /// Unmaps the drained sub-buffers of exited threads (reader lock held).
    fn reclaim(&self) {
        let mut rings = lock(&self.rings);
        if !rings.iter().any(|r| r.orphan.load(Acquire)) {
            return;
        }
        let mut kept = Vec::with_capacity(rings.len());
        let mut gone = Vec::new();
        for r in rings.drain(..) {
            let drained = r.used() == 0 && r.lost.load(Relaxed) == r.lost_reported.load(Relaxed);
            if r.orphan.load(Acquire) && drained {
                gone.push(r);
            } else {
                kept.push(r);
            }
        }
        *rings = kept;
        if gone.is_empty() {
            return;
        }
        self.publish(&rings);
        drop(rings);
        // Every snapshot reader holds the reader lock, as we do: only the current
        // snapshot can be in use from now on.
        {
            let mut old = lock(&self.old_ptrs);
            let current = old.pop();
            old.clear();
            old.extend(current);
        }
        for r in &gone {
            r.release_buffer();
        }
        lock(&self.graveyard).extend(gone);
    }

    /// Events lost in every sub-buffer, live or reclaimed (each thread counts its
    /// own losses, so the lossy paths share no cache line).
    fn lost_sum(&self) -> u64 {
        let live: u64 = lock(&self.rings).iter().map(|r| r.lost.load(Acquire)).sum();
        let gone: u64 = lock(&self.graveyard)
            .iter()
            .map(|r| r.lost.load(Acquire))
            .sum();
        live + gone
    }

    /// Sub-buffers currently mapped.
    fn live_rings(&self) -> usize {
        lock(&self.rings).len()
    }

    /// The recording path proper, on the calling thread's own ring.
    #[inline(always)]
    fn write(&self, r: &Ring, tid: u32, id: u16, data: &[u8], force: bool) -> bool {
        let max = if id < ids::USER_BASE {
            MAX_SYS_PAYLOAD
        } else {
            self.max_data
        };
        let (data, trunc) = if data.len() > max {
            (&data[..max], true)
        } else {
            (data, false)
        };
        let head = r.head.0.load(Relaxed);
        let need = r.need(head, data.len());
        let reserve = if force { 0 } else { self.reserve };
        let room = r.room(head, need, reserve);
        if room == NO_ROOM && !self.full(r, head, need, tid, force) {
            return false;
        }
        if self.policy == StreamFullPolicy::Flush
            && head + need - r.cached_tail.0.load(Relaxed) > self.cap as u64 / 2
            && !r.flush_asked.load(Relaxed)
        {
            r.flush_asked.store(true, Relaxed);
            self.flush_req.store(true, Release);
        }
        r.put(
            head,
            id,
            tid,
            clock::ticks(),
            data,
            trunc,
            room == ROOM_AFTER_GAP,
        );
        true
    }

    /// The ring is full: apply the stream full policy. Returns whether to write.
    #[cold]
    fn full(&self, r: &Ring, head: u64, need: u64, tid: u32, force: bool) -> bool {
        // Read before writing: in LOOP steady state every event comes here, and
        // threads must not keep writing one shared line.
        if !self.full_seen.load(Relaxed) {
            self.full_seen.store(true, Relaxed);
        }
        match self.policy {
            StreamFullPolicy::Loop => {
                let n = r.overwrite_oldest(head, need);
                r.lost.store(r.lost.load(Relaxed) + n, Relaxed);
                true
            }
            StreamFullPolicy::UntilFull => {
                r.lost.store(r.lost.load(Relaxed) + 1, Relaxed);
                if !force
                    && self
                        .auto_suspended
                        .compare_exchange(false, true, AcqRel, Relaxed)
                        .is_ok()
                {
                    RUNNING.fetch_and(!(1 << self.slot), AcqRel);
                    update_pass();
                    if !filtered(self.slot, EventId::STOP.0) {
                        let h = r.head.0.load(Relaxed);
                        let p = STOP_FULL.to_le_bytes();
                        if r.has_room(h, r.need(h, p.len()), 0) {
                            r.put(h, EventId::STOP.0, tid, clock::ticks(), &p, false, false);
                        }
                    }
                }
                false
            }
            StreamFullPolicy::Flush => {
                r.lost.store(r.lost.load(Relaxed) + 1, Relaxed);
                if !force {
                    // Drop until the flusher has freed half the sub-buffer, rather
                    // than record one event per event read (an OVERFLOW/RESUME
                    // pair per event in the log).
                    r.draining.store(true, Relaxed);
                }
                if !r.flush_asked.load(Relaxed) {
                    r.flush_asked.store(true, Relaxed);
                    self.flush_req.store(true, Release);
                }
                false
            }
        }
    }

    pub(crate) fn running(&self) -> bool {
        RUNNING.load(Acquire) & (1 << self.slot) != 0
    }

    fn filter(&self) -> EventSet {
        let mut s = EventSet::empty();
        for (i, w) in FILTERS[self.slot].0.iter().enumerate() {
            s.0[i] = w.load(Acquire);
        }
        s
    }

    /// Records a control event from the calling thread (filter checked here).
    fn control_event(&self, id: EventId, payload: &[u8]) {
        if !filtered(self.slot, id.0) {
            record(self.slot, id.0, payload, true);
        }
    }

    /// Converts a raw record to an event.
    fn to_event(&self, r: super::ring::RawRecord) -> Event {
        let id = EventId(r.id);
        let wopid = id.is_system() && is_wopid_cached(id);
        Event {
            id,
            pid: if wopid { 0 } else { self.pid },
            tid: r.tid,
            timestamp: Duration::from_nanos(clock::to_ns(r.ticks)),
            truncated: r.truncated,
            prog_address: 0,
            data: r.data,
        }
    }

    /// Takes the oldest unread event of all sub-buffers (reader lock held).
    fn take(&self, st: &mut ReaderState) -> Option<Event> {
        if let Some(e) = st.pending.pop_front() {
            return Some(e);
        }
        self.take_from(&self.rings_snapshot(), st)
    }

    /// [`take`](Self::take) with a snapshot the caller keeps across calls (reader
    /// lock held throughout, so the snapshot stays valid).
    fn take_from(&self, rings: &[&Ring], st: &mut ReaderState) -> Option<Event> {
        if let Some(e) = st.pending.pop_front() {
            return Some(e);
        }
        loop {
            let mut best: Option<(u64, &Ring)> = None;
            for &r in rings {
                if let Some(t) = r.peek_ticks() {
                    if best.map_or(true, |(bt, _)| t < bt) {
                        best = Some((t, r));
                    }
                }
            }
            let Some((_, r)) = best else {
                // Losses after a sub-buffer's last record (a FLUSH writer still
                // dropping, or stopped while dropping) are reported at the end.
                let now = Duration::from_nanos(clock::to_ns(clock::ticks()));
                for &r in rings {
                    self.report_loss(r, now, st);
                }
                return st.pending.pop_front();
            };
            let Some(rec) = r.pop() else { continue };
            let gap = rec.gap;
            let ev = self.to_event(rec);
            // LOOP and UNTIL_FULL lose events before the oldest unread one; a FLUSH
            // writer drops new ones and marks the record that ends the gap.
            if self.policy != StreamFullPolicy::Flush || gap {
                self.report_loss(r, ev.timestamp, st);
            }
            if st.pending.is_empty() {
                return Some(ev);
            }
            st.pending.push_back(ev);
            return st.pending.pop_front();
        }
    }

    /// Queues OVERFLOW (count, tid) and RESUME for the losses of `r` not yet reported.
    fn report_loss(&self, r: &Ring, timestamp: Duration, st: &mut ReaderState) {
        let lost = r.lost.load(Relaxed);
        let reported = r.lost_reported.load(Relaxed);
        if lost <= reported {
            return;
        }
        r.lost_reported.store(lost, Relaxed);
        let mut p = (lost - reported).to_le_bytes().to_vec();
        p.extend_from_slice(&r.tid.to_le_bytes());
        for (id, data) in [(EventId::OVERFLOW, p), (EventId::RESUME, Vec::new())] {
            if !filtered(self.slot, id.0) {
                st.pending.push_back(Event {
                    id,
                    pid: 0,
                    tid: r.tid,
                    timestamp,
                    truncated: false,
                    prog_address: 0,
                    data,
                });
            }
        }
    }

    /// After reading or clearing: resume an UNTIL_FULL stream once space is free.
    fn maybe_resume(&self) {
        if !self.auto_suspended.load(Acquire) {
            return;
        }
        let half = self.cap as u64 / 2;
        let _st = lock(&self.reader);
        let _ctl = lock(&self.ctl);
        if self.rings_snapshot().iter().all(|r| r.used() <= half)
            && self
                .auto_suspended
                .compare_exchange(true, false, AcqRel, Relaxed)
                .is_ok()
        {
            self.control_event(EventId::START, &[]);
            RUNNING.fetch_or(1 << self.slot, AcqRel);
            update_pass();
        }
    }

    fn flush_now(&self, explicit: bool) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        self.flushing.store(true, Release);
        let mut st = lock(&self.reader);
        let mut w = lock(log);
        w.sync_types();
        let tid = current_tid();
        let now = Duration::from_nanos(clock::to_ns(clock::ticks()));
        // The flush runs on a thread of this process (its tid is recorded): the
        // marks carry the process's pid, as every reader and export shows it.
        let mark = |id: EventId, data: Vec<u8>| Event {
            id,
            pid: self.pid,
            tid,
            timestamp: now,
            truncated: false,
            prog_address: 0,
            data,
        };
        let marks = explicit || self.policy == StreamFullPolicy::Flush;
        let rings = self.rings_snapshot();
        // Take at most one full sub-buffer of records per sub-buffer (a record is at
        // least a header; each ring may add an OVERFLOW/RESUME pair): what is there
        // and what arrives meanwhile, but writers that keep recording must not keep
        // one flush going forever, with nothing committed and the queued bytes
        // growing without bound.
        let mut budget = st.pending.len() as u64
            + rings.len() as u64 * (self.cap as u64 / RECORD_HEADER as u64 + 2);
        let mut batch = Vec::new();
        while budget > 0 {
            let Some(e) = self.take_from(&rings, &mut st) else {
                break;
            };
            budget -= 1;
            batch.push(e);
        }
        let n = batch.len() as u64;
        // The log is written in time order as far as one flush can see: the batch
        // is sorted by timestamp (stable, so an OVERFLOW stays before the event that
        // ends its gap; sub-buffers are merged by timestamp already, but a record
        // published late by its thread can come after a newer one of another
        // thread), and FLUSH_START goes where its timestamp belongs: after the
        // events recorded before the flush began, before those recorded during it.
        batch.sort_by_key(|e| e.timestamp);
        if marks && !filtered(self.slot, EventId::FLUSH_START.0) {
            let at = batch.partition_point(|e| e.timestamp <= now);
            batch.insert(at, mark(EventId::FLUSH_START, Vec::new()));
        }
        // Every name an event of the batch uses was registered before it was taken.
        w.sync_types();
        for e in &batch {
            w.push(e);
        }
        for r in self.rings_snapshot() {
            r.flush_asked.store(false, Relaxed);
        }
        if w.full && self.attr.log_full_policy() == LogFullPolicy::UntilFull {
            // Log UNTIL_FULL: the log ends with its STOP event, and the stream
            // stops with it (the STOP is the last recorded event).
            let _ctl = lock(&self.ctl);
            if self.running() {
                self.auto_suspended.store(false, Release);
                RUNNING.fetch_and(!(1 << self.slot), AcqRel);
                update_pass();
            }
        }
        self.reclaim();
        if marks && !filtered(self.slot, EventId::FLUSH_STOP.0) {
            let mut e = mark(EventId::FLUSH_STOP, n.to_le_bytes().to_vec());
            e.timestamp = Duration::from_nanos(clock::to_ns(clock::ticks()));
            w.push(&e);
        }
        if std::mem::take(&mut w.overrun) {
            self.log_overrun.store(true, Release);
        }
        self.log_full.store(w.full, Release);
        drop(st);
        let res = w.commit();
        drop(w);
        self.flush_done.fetch_add(1, Release);
        self.flushing.store(false, Release);
        self.maybe_resume();
        if let Err(e) = res {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let _ = self.flush_error.compare_exchange(0, errno, AcqRel, Relaxed);
            self.control_event(EventId::ERROR, &errno.to_le_bytes());
            return Err(Error::from_errno("posix_trace_flush", errno)
                .with_hint("check the log file system (space, permissions)"));
        }
        Ok(())
    }
}

static WOPID: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static WOPID_GEN: AtomicU64 = AtomicU64::new(u64::MAX);

fn is_wopid_cached(id: EventId) -> bool {
    let g = ids::NAMES_GEN.load(Acquire) as u64;
    if WOPID_GEN.load(Acquire) != g {
        let mut w = [0u64; 2];
        for t in ids::all_types() {
            if t.wopid && t.id.is_system() {
                w[t.id.0 as usize / 64] |= 1 << (t.id.0 % 64);
            }
        }
        WOPID[0].store(w[0], Relaxed);
        WOPID[1].store(w[1], Relaxed);
        WOPID_GEN.store(g, Release);
    }
    WOPID[id.0 as usize / 64].load(Relaxed) >> (id.0 % 64) & 1 != 0
}

fn setup_process() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        clock::init();
        use rustix::thread::{membarrier, MembarrierCommand};
        if membarrier(MembarrierCommand::RegisterPrivateExpedited).is_err() {
            NEED_FENCE.store(true, Relaxed);
        }
        fn child() {
            // POSIX_TRACE_CLOSE_FOR_CHILD: the child records nothing.
            RUNNING.store(0, Relaxed);
            for w in PASS.iter() {
                w.store(0, Relaxed);
            }
            PID.store(0, Relaxed);
        }
        // `child` is async-signal-safe (atomic stores only).
        crate::sys::fork::on_child(child);
    });
}

fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// A trace stream (`trace_id_t` of a live stream), created suspended.
///
/// Dropping it shuts it down (see [`Trace::shutdown`]).
pub struct Trace {
    s: Arc<Stream>,
    shut: bool,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("name", &self.s.attr.name)
            .field("slot", &self.s.slot)
            .field("running", &self.s.running())
            .finish()
    }
}

impl Trace {
    /// `posix_trace_create(0, attr, &trid)`: a stream tracing this process, without a
    /// log, suspended.
    ///
    /// # Errors
    /// `Unsupported` for [`Inheritance::Inherited`]; `InvalidInput` for the FLUSH
    /// policy without a log; `OutOfResources` when [`TRACE_SYS_MAX`] streams exist.
    ///
    /// # References
    /// - [`posix_trace_create`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_create.html)
    pub fn create(attr: &TraceAttr) -> Result<Trace> {
        Trace::build(attr, None)
    }

    /// `posix_trace_create(pid, ...)`: only `pid` 0 or the caller's own pid is
    /// supported.
    ///
    /// # Errors
    /// `Unsupported` (with ENOSYS) for another process: tracing another process needs
    /// a shared-memory stream, which this version does not have.
    pub fn create_for_pid(pid: u32, attr: &TraceAttr) -> Result<Trace> {
        if pid != 0 && pid != getpid() {
            return Err(Error::from_errno("posix_trace_create", libc::ENOSYS)
                .with_kind(ErrorKind::Unsupported)
                .with_message(format!(
                    "tracing another process (pid {pid}) is not supported"
                ))
                .with_hint(
                    "create the stream inside the traced process (pid 0) and read its log",
                ));
        }
        Trace::create(attr)
    }

    /// `posix_trace_create_withlog(0, attr, fd, &trid)`: a stream with a log file
    /// (truncated and written from the start). The stream full policy defaults to
    /// FLUSH. A flusher thread writes the log; the traced threads never do.
    ///
    /// # References
    /// - [`posix_trace_create_withlog`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_create.html)
    pub fn create_with_log(attr: &TraceAttr, log: File) -> Result<Trace> {
        Trace::build(attr, Some(log))
    }

    fn build(attr: &TraceAttr, log: Option<File>) -> Result<Trace> {
        if attr.inherit == Inheritance::Inherited {
            return Err(Error::from_errno("posix_trace_create", libc::EINVAL)
                .with_kind(ErrorKind::Unsupported)
                .with_message(
                    "POSIX_TRACE_INHERITED is not supported (streams are process-private)",
                )
                .with_hint(
                    "use Inheritance::CloseForChild and create a stream in the child after fork",
                ));
        }
        let mut a = attr.clone();
        a.with_log = log.is_some();
        let policy = a.stream_full_policy();
        if policy == StreamFullPolicy::Flush && log.is_none() {
            return Err(
                Error::invalid("posix_trace_create", "POSIX_TRACE_FLUSH needs a log")
                    .with_hint("use Trace::create_with_log, or the LOOP or UNTIL_FULL policy"),
            );
        }
        setup_process();
        let pid = getpid();
        PID.store(pid, Relaxed);
        a.create_time = Some(Duration::from_nanos(clock::real_ns()));
        a.clock_res = Some(clock::resolution());
        let max_event = a
            .max_user_event_size(a.max_data)
            .max(a.max_system_event_size()) as u64;
        let reserve = 2 * a.max_system_event_size() as u64;
        let cap = (a.stream_size as u64 + max_event + reserve + 64).next_power_of_two() as usize;
        let writer = match log {
            Some(f) => Some(Mutex::new(LogWriter::new(f, &a, pid).map_err(|e| {
                Error::from_errno(
                    "posix_trace_create_withlog",
                    e.raw_os_error().unwrap_or(libc::EIO),
                )
                .with_hint("pass a log file opened for writing")
            })?)),
            None => None,
        };
        let slot = {
            let mut used = lock(&SLOT_USED);
            let Some(i) = used.iter().position(|u| !u) else {
                return Err(Error::new(
                    ErrorKind::OutOfResources,
                    "posix_trace_create",
                    format!("{TRACE_SYS_MAX} streams exist (TRACE_SYS_MAX)"),
                )
                .with_hint("shut down a stream before creating another"));
            };
            used[i] = true;
            i
        };
        let gen = GENS[slot].0.load(Acquire) + 1; // odd: live
        for w in FILTERS[slot].0.iter() {
            w.store(0, Relaxed);
        }
        let s = Arc::new(Stream {
            slot,
            gen,
            pid,
            policy,
            max_data: a.max_data,
            cap,
            reserve,
            attr: a,
            rings: Mutex::new(Vec::new()),
            ring_ptrs: AtomicPtr::new(std::ptr::null_mut()),
            old_ptrs: Mutex::new(Vec::new()),
            graveyard: Mutex::new(Vec::new()),
            auto_suspended: AtomicBool::new(false),
            ctl: Mutex::new(()),
            flush_req: AtomicBool::new(false),
            flushing: AtomicBool::new(false),
            flush_error: AtomicI32::new(0),
            flush_done: AtomicU64::new(0),
            full_seen: AtomicBool::new(false),
            log_overrun: AtomicBool::new(false),
            log_full: AtomicBool::new(false),
            reader: Mutex::new(ReaderState {
                pending: VecDeque::new(),
            }),
            log: writer,
            flusher: Mutex::new(None),
            wake: (Mutex::new(0), Condvar::new()),
            stop_flusher: AtomicBool::new(false),
            lost_acked: AtomicU64::new(0),
        });
        SLOTS[slot].store(Arc::as_ptr(&s) as *mut Stream, Release);
        GENS[slot].0.store(gen, Release);
        if s.log.is_some() {
            let s2 = Arc::clone(&s);
            let h = std::thread::Builder::new()
                .name("posixrt-trace-flush".into())
                .spawn(move || flusher(s2))
                .map_err(|e| {
                    Error::from_errno("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN))
                })?;
            *lock(&s.flusher) = Some(h);
        }
        Ok(Trace { s, shut: false })
    }

    fn check_owner(&self, call: &'static str) -> Result<()> {
        if self.shut {
            return Err(Error::new(
                ErrorKind::InvalidState,
                call,
                "the stream was shut down",
            ));
        }
        if PID.load(Relaxed) != self.s.pid {
            return Err(Error::new(
                ErrorKind::InvalidState,
                call,
                "the stream belongs to the parent process",
            )
            .with_hint("POSIX_TRACE_CLOSE_FOR_CHILD: create a new stream in the child"));
        }
        Ok(())
    }

    /// `posix_trace_start`: records START and runs (ignored when running).
    ///
    /// # References
    /// - [`posix_trace_start`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_start.html)
    pub fn start(&self) -> Result<()> {
        self.check_owner("posix_trace_start")?;
        let _ctl = lock(&self.s.ctl);
        if self.s.running() {
            return Ok(());
        }
        self.s.auto_suspended.store(false, Release);
        self.s.control_event(EventId::START, &[]);
        RUNNING.fetch_or(1 << self.s.slot, AcqRel);
        update_pass();
        Ok(())
    }

    /// `posix_trace_stop`: records STOP and suspends (ignored when suspended).
    pub fn stop(&self) -> Result<()> {
        self.check_owner("posix_trace_stop")?;
        let _ctl = lock(&self.s.ctl);
        if !self.s.running() {
            // Suspended by UNTIL_FULL: stay suspended once space frees up.
            self.s.auto_suspended.store(false, Release);
            return Ok(());
        }
        RUNNING.fetch_and(!(1 << self.s.slot), AcqRel);
        update_pass();
        self.s
            .control_event(EventId::STOP, &STOP_CALL.to_le_bytes());
        Ok(())
    }

    /// `posix_trace_flush`: writes the stream's events to the log now and frees
    /// their space. Without a log: `InvalidInput`.
    pub fn flush(&self) -> Result<()> {
        self.check_owner("posix_trace_flush")?;
        if self.s.log.is_none() {
            return Err(Error::invalid("posix_trace_flush", "the stream has no log")
                .with_hint("create the stream with Trace::create_with_log"));
        }
        self.s.flush_now(true)
    }

    /// `posix_trace_clear`: empties the stream and the log of events, keeping the
    /// service data (attributes, names); resumes an UNTIL_FULL stream.
    pub fn clear(&self) -> Result<()> {
        self.check_owner("posix_trace_clear")?;
        let st = lock(&self.s.reader);
        for r in self.s.rings_snapshot() {
            r.clear();
            r.lost_reported.store(r.lost.load(Relaxed), Relaxed);
        }
        drop(st);
        lock(&self.s.reader).pending.clear();
        self.s.full_seen.store(false, Relaxed);
        if let Some(log) = &self.s.log {
            lock(log).clear().map_err(|e| {
                Error::from_errno("posix_trace_clear", e.raw_os_error().unwrap_or(libc::EIO))
            })?;
        }
        self.s.maybe_resume();
        Ok(())
    }

    /// `posix_trace_get_attr`: the stream's attributes (with creation time and clock
    /// resolution filled in).
    pub fn attr(&self) -> TraceAttr {
        self.s.attr.clone()
    }

    /// `posix_trace_get_status`. The overrun flags and the flush error reset when read.
    ///
    /// # References
    /// - [`posix_trace_get_status`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_get_status.html)
    pub fn status(&self) -> TraceStatus {
        let s = &self.s;
        let mut overrun = false;
        let mut full = s.auto_suspended.load(Acquire);
        let limit = s.cap as u64 - s.reserve;
        let max_event = s
            .attr
            .max_user_event_size(s.max_data)
            .max(s.attr.max_system_event_size()) as u64;
        let lost = s.lost_sum();
        if s.lost_acked.swap(lost, AcqRel) != lost {
            overrun = true;
        }
        {
            let _st = lock(&s.reader);
            for r in s.rings_snapshot() {
                if r.used() + 2 * max_event > limit {
                    full = true;
                }
            }
        }
        let (log_overrun, log_full) = (s.log_overrun.swap(false, AcqRel), s.log_full.load(Acquire));
        TraceStatus {
            running: s.running(),
            full,
            overrun,
            flushing: s.flushing.load(Acquire),
            flush_error: s.flush_error.swap(0, AcqRel),
            log_overrun,
            log_full,
        }
    }

    /// How many per-thread sub-buffers the stream holds now (a thread's first event
    /// adds one; the sub-buffer of a thread that exited is unmapped once read empty).
    pub fn sub_buffers(&self) -> usize {
        self.s.live_rings()
    }

    /// Bytes of each per-thread sub-buffer: the stream size plus room for one event
    /// of maximum size and the control events, rounded up to a power of two. The
    /// stream's memory is up to this times [`sub_buffers`](Self::sub_buffers).
    pub fn sub_buffer_bytes(&self) -> usize {
        self.s.cap
    }

    /// `posix_trace_get_filter`: the set of event types not recorded.
    pub fn filter(&self) -> EventSet {
        self.s.filter()
    }

    /// `posix_trace_set_filter`: changes the filter and records FILTER with the old
    /// and new sets (unless the new filter excludes FILTER itself).
    pub fn set_filter(&self, set: &EventSet, how: FilterHow) -> Result<()> {
        self.check_owner("posix_trace_set_filter")?;
        let _ctl = lock(&self.s.ctl);
        let old = self.s.filter();
        let new = match how {
            FilterHow::Set => *set,
            FilterHow::Add => old.union(set),
            FilterHow::Sub => old.minus(set),
        };
        for (i, w) in FILTERS[self.s.slot].0.iter().enumerate() {
            w.store(new.0[i], Release);
        }
        update_pass();
        let mut p = Vec::with_capacity(2 * WORDS * 8);
        p.extend_from_slice(&old.to_bytes());
        p.extend_from_slice(&new.to_bytes());
        if self.s.running() {
            self.s.control_event(EventId::FILTER, &p);
        } else if !filtered(self.s.slot, EventId::FILTER.0) {
            record(self.s.slot, EventId::FILTER.0, &p, true);
        }
        Ok(())
    }

    /// `posix_trace_trid_eventid_open`: the id of a user event name (same name, same
    /// id); the unnamed user event past [`TRACE_USER_EVENT_MAX`](super::TRACE_USER_EVENT_MAX).
    pub fn eventid_open(&self, name: &str) -> Result<EventId> {
        ids::open_user(name)
    }

    /// `posix_trace_eventid_get_name`.
    ///
    /// # Errors
    /// `InvalidInput` for an id no type has.
    pub fn eventid_name(&self, id: EventId) -> Result<String> {
        ids::name_of(id).ok_or_else(|| {
            Error::invalid(
                "posix_trace_eventid_get_name",
                format!("no event type has id {}", id.0),
            )
            .with_hint("use an id from eventid_open or sys::register")
        })
    }

    /// `posix_trace_eventtypelist_getnext_id` / `_rewind`: the event types of the
    /// stream, in id order (call again to rewind).
    pub fn event_types(&self) -> impl Iterator<Item = ids::EventType> {
        ids::all_types().into_iter()
    }

    /// `posix_trace_trygetnext_event`: the oldest unread event, or `None` at once.
    pub fn try_getnext(&self) -> Result<Option<Event>> {
        self.check_owner("posix_trace_trygetnext_event")?;
        let e = {
            let mut st = lock(&self.s.reader);
            let e = self.s.take(&mut st);
            if e.is_none() {
                self.s.reclaim();
            }
            e
        };
        if e.is_some() {
            self.s.maybe_resume();
        }
        Ok(e)
    }

    /// `posix_trace_getnext_event`: the oldest unread event; blocks while the stream
    /// is running and has none. `None` once it is suspended and empty.
    ///
    /// Events come merged from the per-thread sub-buffers by timestamp. A stream with
    /// a log is consumed by its flusher as well: read such a stream's events from
    /// the log ([`TraceLog`](super::TraceLog)), or use a second stream without a log.
    ///
    /// # References
    /// - [`posix_trace_getnext_event`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_getnext_event.html)
    pub fn getnext(&self) -> Result<Option<Event>> {
        self.wait_next(None)
    }

    /// `posix_trace_timedgetnext_event`: like [`getnext`](Self::getnext) with an
    /// absolute deadline.
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the deadline passes with no event.
    pub fn timed_getnext(&self, deadline: Instant) -> Result<Option<Event>> {
        self.wait_next(Some(deadline))
    }

    /// `posix_trace_timedgetnext_event` with the C API's CLOCK_REALTIME absolute
    /// deadline (a deadline in the past polls once).
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the deadline passes with no event.
    pub fn timed_getnext_realtime(&self, deadline: std::time::SystemTime) -> Result<Option<Event>> {
        let left = deadline
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        self.wait_next(Some(Instant::now() + left))
    }

    fn wait_next(&self, deadline: Option<Instant>) -> Result<Option<Event>> {
        let mut nap = Duration::from_micros(20);
        loop {
            if let Some(e) = self.try_getnext()? {
                return Ok(Some(e));
            }
            if !self.s.running() && !self.s.auto_suspended.load(Acquire) {
                // Recheck: an event may have landed between the read and the check.
                return self.try_getnext();
            }
            let now = Instant::now();
            if let Some(d) = deadline {
                if now >= d {
                    return Err(Error::from_errno(
                        "posix_trace_timedgetnext_event",
                        libc::ETIMEDOUT,
                    ));
                }
                nap = nap.min(d - now);
            }
            // Writers never make a syscall, so readers poll with a growing nap.
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }

    /// Reads into a caller's buffer without allocating the event's data
    /// (`posix_trace_trygetnext_event` with `data_ptr`/`num_bytes`).
    pub fn getnext_into(&self, buf: &mut [u8]) -> Result<Option<super::EventInfo>> {
        Ok(self.try_getnext()?.map(|e| {
            let n = e.data.len().min(buf.len());
            buf[..n].copy_from_slice(&e.data[..n]);
            super::EventInfo {
                id: e.id,
                pid: e.pid,
                tid: e.tid,
                timestamp: e.timestamp,
                truncated: e.truncated || n < e.data.len(),
                prog_address: e.prog_address,
                data_len: n,
            }
        }))
    }

    /// An iterator over the unread events, oldest first, ending when none is left
    /// (it does not block).
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        std::iter::from_fn(move || self.try_getnext().ok().flatten())
    }

    /// `posix_trace_shutdown`: stops recording, flushes to the log, writes the
    /// service records (status, end) and closes it, and frees the stream.
    ///
    /// # References
    /// - [`posix_trace_shutdown`](https://pubs.opengroup.org/onlinepubs/009695399/functions/posix_trace_shutdown.html)
    pub fn shutdown(mut self) -> Result<()> {
        self.do_shutdown()
    }

    fn do_shutdown(&mut self) -> Result<()> {
        if self.shut {
            return Ok(());
        }
        self.shut = true;
        let s = &self.s;
        if PID.load(Relaxed) != s.pid {
            return Ok(()); // a forked child: the parent owns the stream
        }
        RUNNING.fetch_and(!(1 << s.slot), AcqRel);
        update_pass();
        let mut res = Ok(());
        if s.log.is_some() {
            s.stop_flusher.store(true, Release);
            s.wake.1.notify_all();
            if let Some(h) = lock(&s.flusher).take() {
                let _ = h.join();
            }
            res = s.flush_now(false);
            if let Some(log) = &s.log {
                let lost = s.lost_sum();
                let st = LogStatus {
                    stream_lost: lost,
                    stream_overrun: lost > 0,
                    ..LogStatus::default()
                };
                if let Err(e) = lock(log).finish(st) {
                    res = res.and(Err(Error::from_errno(
                        "posix_trace_shutdown",
                        e.raw_os_error().unwrap_or(libc::EIO),
                    )));
                }
            }
        }
        // Retire the slot: writers check the generation after setting `busy`.
        GENS[s.slot].0.store(s.gen + 1, Release);
        SLOTS[s.slot].store(std::ptr::null_mut(), Release);
        if !NEED_FENCE.load(Relaxed) {
            use rustix::thread::{membarrier, MembarrierCommand};
            if membarrier(MembarrierCommand::PrivateExpedited).is_err() {
                std::sync::atomic::fence(SeqCst);
            }
        }
        // A writer inside a record finishes it in nanoseconds, unless it was
        // preempted there: spin briefly, then yield so a preempted writer sharing
        // this CPU gets to run.
        for b in lock(&BUSY_ALL).iter() {
            let mut spins = 0u32;
            while b.0.load(Acquire) != 0 {
                if spins < 1000 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        lock(&SLOT_USED)[s.slot] = false;
        res
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        let _ = self.do_shutdown();
    }
}

fn flusher(s: Arc<Stream>) {
    // Writers never wake anyone (no syscall on the recording path): poll. Idle, every
    // 2 ms; while writers keep asking for flushes, every 100 µs, since a sub-buffer
    // fills in well under a millisecond at full recording rate.
    const IDLE: Duration = Duration::from_millis(2);
    const BUSY: Duration = Duration::from_micros(100);
    let mut nap = IDLE;
    loop {
        if !s.flush_req.load(Acquire) {
            let g = lock(&s.wake.0);
            let _ = s.wake.1.wait_timeout(g, nap);
        }
        if s.stop_flusher.load(Acquire) {
            return;
        }
        if s.flush_req.swap(false, AcqRel) {
            let _ = s.flush_now(false);
            nap = BUSY;
        } else {
            nap = (nap * 2).min(IDLE);
        }
    }
}
