//! A stream's state and its recording path: the per-thread sub-buffers (rings) it
//! owns, the write of one record into the calling thread's ring, and the stream
//! full policies.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Mutex, TryLockError};
use std::thread::JoinHandle;

use super::attr::{StreamFullPolicy, TraceAttr, MAX_SYS_PAYLOAD};
use super::event::Event;
use super::ids::{self, EventId};
use super::log_writer::LogWriter;
use super::ring::{Ring, NO_ROOM, ROOM, ROOM_AFTER_GAP};
use super::seam::{self, Point};
use super::set::EventSet;
use super::slots::{filter_words, filtered, is_running, lock, suspend_full};
use crate::sys::clock;

/// Why a stream stopped, as recorded in a STOP event's payload.
pub(super) const STOP_CALL: u32 = 0;
pub(super) const STOP_FULL: u32 = 1;

/// The most the STOP of a full UNTIL_FULL stream can take in a sub-buffer:
/// its record with the loss count word (32 bytes), after up to 24 bytes of
/// padding to the end of the ring (less than a record of it).
const STOP_ROOM: u64 = 32 + 24;

/// What a reader of the stream keeps between reads: events taken from the rings
/// but not returned yet (losses reported as OVERFLOW and RESUME).
pub(super) struct ReaderState {
    pub(super) pending: VecDeque<Event>,
    /// `Stream::nested_lost` as last reported to readers.
    pub(super) nested_reported: u64,
}

pub(super) struct Stream {
    pub(super) slot: usize,
    pub(super) gen: u64,
    pub(super) pid: u32,
    pub(super) attr: TraceAttr,
    pub(super) policy: StreamFullPolicy,
    pub(super) max_data: usize,
    pub(super) cap: usize,
    pub(super) reserve: u64,
    // Boxed: threads keep raw pointers to their ring, so rings must not move.
    #[allow(clippy::vec_box)]
    pub(super) rings: Mutex<Vec<Box<Ring>>>,
    pub(super) ring_ptrs: AtomicPtr<Vec<*const Ring>>,
    // Boxed: readers hold a raw pointer to a snapshot, which must not move.
    #[allow(clippy::vec_box)]
    pub(super) old_ptrs: Mutex<Vec<Box<Vec<*const Ring>>>>,
    /// The events lost by the rings removed after their thread exited (their
    /// losses still count; the rings themselves are freed). Changed under the
    /// `rings` lock, with the list.
    pub(super) gone_lost: AtomicU64,
    pub(super) auto_suspended: AtomicBool,
    /// Serialises start, stop, filter changes, the automatic resume and a
    /// writer's automatic suspension (which only tries it), so racing calls
    /// record one START or STOP, not two. Never held with the reader lock taken
    /// after it.
    pub(super) ctl: Mutex<()>,
    pub(super) flush_req: AtomicBool,
    /// Flushes in progress (they can overlap).
    pub(super) flushing: AtomicU32,
    pub(super) flush_error: AtomicI32,
    pub(super) flush_done: AtomicU64,
    pub(super) full_seen: AtomicBool,
    /// Mirrors of the log writer's flags, so `status()` never waits for a flush.
    pub(super) log_overrun: AtomicBool,
    pub(super) log_full: AtomicBool,
    pub(super) reader: Mutex<ReaderState>,
    pub(super) log: Option<Mutex<LogWriter>>,
    pub(super) flusher: Mutex<Option<JoinHandle<()>>>,
    pub(super) stop_flusher: AtomicBool,
    /// `lost_sum()` when the status was last read (the overrun flag resets).
    pub(super) lost_acked: AtomicU64,
    /// `lost_sum()` at the last `clear` (the shutdown record counts losses since).
    pub(super) lost_cleared: AtomicU64,
    /// Events of signal handlers that interrupted their thread inside the
    /// recorder or while it took its busy flag, events of a thread after its
    /// clean-up at exit, and events of a thread whose sub-buffer could not be
    /// mapped: dropped, counted here (see `local::nested`).
    pub(super) nested_lost: AtomicU64,
}

// SAFETY: the raw ring pointers point into `rings`, owned by the stream.
unsafe impl Send for Stream {}
// SAFETY: as above; shared state is atomics and mutexes.
unsafe impl Sync for Stream {}

impl Stream {
    /// The current rings. The caller holds the reader lock: old snapshots are freed
    /// under it.
    pub(super) fn rings_snapshot(&self) -> Vec<&Ring> {
        let p = self.ring_ptrs.load(Acquire);
        if p.is_null() {
            return Vec::new();
        }
        // SAFETY: snapshots are kept alive in `old_ptrs` until the stream drops, and
        // each pointer targets a boxed ring the stream owns.
        unsafe { (*p).iter().map(|r| &**r).collect() }
    }

    /// A ring for the thread `tid` whose `pthread_t` is `thread`.
    pub(super) fn add_ring(&self, tid: u32, thread: u64) -> Option<*const Ring> {
        let soft = if self.policy == StreamFullPolicy::Flush {
            self.cap as u64 / 2
        } else {
            self.cap as u64 - self.reserve
        };
        let mut ring = Ring::new(self.cap, tid, soft, self.max_data).ok()?;
        ring.thread = thread;
        let mut rings = lock(&self.rings);
        let ptr: *const Ring = &*ring;
        rings.push(ring);
        self.publish(&rings);
        Some(ptr)
    }

    /// Publishes a new snapshot of the ring list (rings lock held).
    pub(super) fn publish(&self, rings: &[Box<Ring>]) {
        let snap: Box<Vec<*const Ring>> =
            Box::new(rings.iter().map(|r| &**r as *const Ring).collect());
        let raw = Box::into_raw(snap);
        self.ring_ptrs.store(raw, Release);
        // SAFETY: `raw` came from Box::into_raw just above; keep it alive for readers.
        lock(&self.old_ptrs).push(unsafe { Box::from_raw(raw) });
    }

    /// Unmaps the drained sub-buffers of exited threads (reader lock held).
    pub(super) fn reclaim(&self) {
        let mut rings = lock(&self.rings);
        if !rings.iter().any(|r| r.orphan.load(Acquire)) {
            return;
        }
        let mut kept = Vec::with_capacity(rings.len());
        let mut gone = Vec::new();
        for r in rings.drain(..) {
            // The orphan mark first: once it is seen (Acquire), the thread's last
            // record and loss are seen too, so a ring found drained after it holds
            // nothing unread (read before it, a record made just before the
            // thread exited could be missed, and freed with the ring).
            let drained =
                |r: &Ring| r.used() == 0 && r.lost.load(Relaxed) == r.lost_reported.load(Relaxed);
            if r.orphan.load(Acquire) && drained(&r) {
                gone.push(r);
            } else {
                kept.push(r);
            }
        }
        *rings = kept;
        if gone.is_empty() {
            return;
        }
        let lost: u64 = gone.iter().map(|r| r.lost.load(Acquire)).sum();
        self.gone_lost.fetch_add(lost, AcqRel);
        self.publish(&rings);
        drop(rings);
        // Every snapshot reader holds the reader lock, as we do: only the current
        // snapshot can be in use from now on, and it does not hold the gone
        // rings, which nothing else reaches (their threads exited): free them.
        {
            let mut old = lock(&self.old_ptrs);
            let current = old.pop();
            old.clear();
            old.extend(current);
        }
        drop(gone);
    }

    /// Events lost in every sub-buffer, live or reclaimed (each thread counts its
    /// own losses, so the lossy paths share no cache line).
    pub(super) fn lost_sum(&self) -> u64 {
        let rings = lock(&self.rings);
        let live: u64 = rings.iter().map(|r| r.lost.load(Acquire)).sum();
        live + self.gone_lost.load(Acquire) + self.nested_lost.load(Acquire)
    }

    /// Rings the stream holds.
    #[cfg(test)]
    pub(super) fn rings_held(&self) -> usize {
        lock(&self.rings).len()
    }

    /// Sub-buffers currently mapped.
    pub(super) fn live_rings(&self) -> usize {
        lock(&self.rings).len()
    }

    /// The recording path proper, on the calling thread's own ring.
    #[inline(always)]
    pub(super) fn write(&self, r: &Ring, id: u16, data: &[u8], force: bool) -> bool {
        if !force && r.put_fast(id, data) {
            return true;
        }
        self.write_slow(r, r.tid, id, data, force)
    }

    /// Everything but the fast path: truncation, padding at the end of the ring,
    /// a full ring, a FLUSH stream's request for a flush, control events.
    #[inline(never)]
    fn write_slow(&self, r: &Ring, tid: u32, id: u16, data: &[u8], force: bool) -> bool {
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
        let reserve = self.reserve_for(id, force);
        // While draining, the record that fits ends the run of drops and
        // carries their count (`room` says so with ROOM_AFTER_GAP); a control
        // event, which does not wait for half the sub-buffer to be free,
        // carries the count so far (the run goes on after it).
        let draining = r.draining.load(Relaxed);
        let gap_next = r.gap_next.load(Relaxed);
        let need = r.need(head, data.len(), draining || gap_next);
        let mut room = r.room(head, need, reserve);
        if room == NO_ROOM {
            room = self.full(r, head, need, tid, reserve, force);
            if room == NO_ROOM {
                return false;
            }
        }
        if self.policy == StreamFullPolicy::Flush
            && head + need - r.cached_tail.0.load(Relaxed) > self.cap as u64 / 2
        {
            if room == ROOM && !r.draining.load(Relaxed) {
                // Past half by the cached tail: look at the real one first, so that
                // once the flusher has freed space the fast path takes over again
                // (while draining, `room` manages the cached tail itself).
                r.cached_tail.0.store(r.tail.0.load(Acquire), Relaxed);
            }
            if head + need - r.cached_tail.0.load(Relaxed) > self.cap as u64 / 2
                && !r.flush_asked.load(Relaxed)
            {
                r.flush_asked.store(true, Relaxed);
                self.flush_req.store(true, Release);
            }
        }
        let gap =
            (room == ROOM_AFTER_GAP || force && draining || gap_next).then(|| r.lost.load(Relaxed));
        if gap_next {
            r.gap_next.store(false, Relaxed);
        }
        r.put(head, id, tid, clock::ticks(), data, trunc, gap);
        true
    }

    /// The room a record of `id` leaves free at the end of a sub-buffer:
    /// normal events leave the room kept for control events; control events
    /// (`force`) may take it, but under UNTIL_FULL all but a STOP leave room
    /// for the STOP the stream records when it fills (a gap record, after
    /// padding up to the end of the ring at worst), which POSIX has reported
    /// after the last recorded event.
    #[inline]
    fn reserve_for(&self, id: u16, force: bool) -> u64 {
        if !force {
            self.reserve
        } else if self.policy == StreamFullPolicy::UntilFull && id != EventId::STOP.0 {
            STOP_ROOM
        } else {
            0
        }
    }

    /// An event of the calling thread (its ring `r`) while the stream is
    /// suspended by fullness (UNTIL_FULL): lost, and counted in the ring, whose
    /// next record (after the stream resumed) ends the run of losses and
    /// carries their count, so readers report them just before it; until then
    /// they come at the end of a read.
    #[cold]
    pub(super) fn lose(&self, r: &Ring) {
        r.count_lost(r.head.0.load(Relaxed), 1);
        if !r.gap_next.load(Relaxed) {
            r.gap_next.store(true, Relaxed);
            // The fast path would record the next event without the count.
            r.no_fast_path();
        }
    }

    /// The ring has no room for `need` bytes at `head`: apply the stream full
    /// policy (`reserve`: the room the record leaves free, see
    /// [`reserve_for`](Self::reserve_for)). Returns the room to write in ([`ROOM`], or [`ROOM_AFTER_GAP`]
    /// for the record that ends a FLUSH writer's run of drops), or
    /// [`NO_ROOM`]: the event is dropped.
    #[cold]
    pub(super) fn full(
        &self,
        r: &Ring,
        head: u64,
        need: u64,
        tid: u32,
        reserve: u64,
        force: bool,
    ) -> u8 {
        seam::at(Point::WriterFull);
        // Read before writing: in LOOP steady state every event comes here, and
        // threads must not keep writing one shared line.
        if !self.full_seen.load(Relaxed) {
            self.full_seen.store(true, Relaxed);
        }
        if self.policy == StreamFullPolicy::Loop {
            r.overwrite_oldest(head, need);
            return ROOM;
        }
        // A clear may have emptied the ring since it was found full: then the
        // event is recorded, else it is dropped before any clear that has not
        // moved the tail yet, which waits for it to be counted.
        let room = r.begin_drop(head, need, reserve);
        if room != NO_ROOM {
            return room;
        }
        seam::at(Point::WriterDropping);
        self.drop_event(r, head, tid, force);
        r.end_drop();
        NO_ROOM
    }

    /// [`full`](Self::full) for FLUSH and UNTIL_FULL, once the event is to
    /// be dropped: counts it and applies the policy.
    fn drop_event(&self, r: &Ring, head: u64, tid: u32, force: bool) {
        match self.policy {
            StreamFullPolicy::Loop => debug_assert!(false, "LOOP overwrites"),
            StreamFullPolicy::UntilFull => {
                r.count_lost(head, 1);
                if force || self.auto_suspended.load(Relaxed) {
                    return;
                }
                // Under the control lock and only while running: a writer that
                // saw the stream running before a stop() must not mark it
                // suspended by fullness, or reading would resume it. While a
                // control operation runs, the event is dropped and the next one
                // decides.
                let _ctl = match self.ctl.try_lock() {
                    Ok(g) => g,
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => return,
                };
                if self.running()
                    && self
                        .auto_suspended
                        .compare_exchange(false, true, AcqRel, Relaxed)
                        .is_ok()
                {
                    // Suspended, but events still come here, to be counted
                    // lost (`lose`).
                    suspend_full(self.slot);
                    let h = r.head.0.load(Relaxed);
                    let p = STOP_FULL.to_le_bytes();
                    if !filtered(self.slot, EventId::STOP.0)
                        && r.has_room(h, r.need(h, p.len(), true), 0)
                    {
                        // The STOP ends the run of losses: readers report
                        // them with it, after the events kept.
                        let lost = Some(r.lost.load(Relaxed));
                        r.gap_next.store(false, Relaxed);
                        r.put(h, EventId::STOP.0, tid, clock::ticks(), &p, false, lost);
                    } else if !r.gap_next.load(Relaxed) {
                        // No STOP (filtered out): the writer's next record
                        // ends the run, as after losses while suspended.
                        r.gap_next.store(true, Relaxed);
                        r.no_fast_path();
                    }
                }
            }
            StreamFullPolicy::Flush => {
                r.count_lost(head, 1);
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
            }
        }
    }

    pub(super) fn running(&self) -> bool {
        is_running(self.slot)
    }

    pub(super) fn filter(&self) -> EventSet {
        EventSet(filter_words(self.slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, Trace};

    /// A writer that saw the stream running before `stop()` and then found its
    /// sub-buffer full applies the UNTIL_FULL policy after the stop: that must
    /// not mark the stream as suspended by fullness, or reading would resume
    /// the stream the caller stopped.
    #[test]
    fn a_writer_late_to_a_full_stream_does_not_undo_stop() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create(&a).unwrap();
        let ev = trace::eventid_open("stream.late_writer").unwrap();
        t.start().unwrap();
        trace::event(ev, &[1]); // this thread's sub-buffer
        t.stop().unwrap();
        let tid = crate::sys::tid::current();
        {
            let _st = lock(&t.s.reader);
            let rings = t.s.rings_snapshot();
            let r = rings.iter().find(|r| r.tid == tid).unwrap();
            let head = r.head.0.load(Relaxed);
            // More than the ring holds: the writer finds no room even after
            // another look at the tail.
            assert_eq!(t.s.full(r, head, r.cap, tid, t.s.reserve, false), NO_ROOM);
        }
        while t.try_getnext().unwrap().is_some() {}
        let st = t.status();
        assert!(!st.running, "{st:?}");
    }

    /// A FLUSH writer whose sub-buffer overflowed drops new events until the
    /// flusher has freed half of it, small ones too: a smaller event that
    /// still fitted by the writer's cached tail was recorded, after the loss
    /// it followed and before the OVERFLOW reporting that loss.
    #[test]
    fn a_draining_flush_writer_drops_events_that_would_fit() {
        let (log, f) = crate::trace::scratch::Scratch::log("stream-draining");
        let path = log.path.clone();
        let a = crate::trace::scratch::small_attr();
        let t = Trace::create_with_log(&a, f).unwrap();
        assert_eq!(t.s.policy, StreamFullPolicy::Flush);
        let big = trace::eventid_open("stream.drain_big").unwrap();
        let small = trace::eventid_open("stream.drain_small").unwrap();
        // Only this thread's events of these two types.
        crate::trace::scratch::record_only(&t, &[big, small, EventId::OVERFLOW]);
        let tid = crate::sys::tid::current();
        {
            // Holding the reader lock keeps the flusher out.
            let _st = lock(&t.s.reader);
            t.start().unwrap();
            trace::event(small, &[0; 8]);
            let rings = t.s.rings_snapshot();
            let r = rings.iter().find(|r| r.tid == tid).unwrap();
            let limit = r.cap - t.s.reserve;
            let big_need = 16 + 256;
            // Fill until a big event no longer fits, but a small one does.
            while r.used() + big_need <= limit {
                trace::event(small, &[0; 8]);
            }
            assert!(r.used() + 24 <= limit);
            trace::event(big, &[1; 256]);
            assert_eq!(r.lost.load(Relaxed), 1, "the big event is dropped");
            let head = r.head.0.load(Relaxed);
            trace::event(small, &[2; 8]);
            assert_eq!(
                (r.head.0.load(Relaxed), r.lost.load(Relaxed)),
                (head, 2),
                "dropped as well, while draining"
            );
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = crate::trace::TraceLog::open(&path).unwrap();
        let evs: Vec<crate::trace::Event> = l.events().map(|e| e.unwrap()).collect();
        let _ = std::fs::remove_file(&path);
        assert!(evs.iter().all(|e| e.id != small || e.data == [0; 8]));
        let lost: Vec<&[u8]> = evs
            .iter()
            .filter(|e| e.id == EventId::OVERFLOW && e.tid == tid)
            .map(|e| &e.data[..8])
            .collect();
        assert_eq!(lost, [2u64.to_le_bytes()]);
    }

    /// A control event recorded by a FLUSH writer that is draining (here its
    /// own `stop()`) comes after the events it dropped: it carries their
    /// count, so their OVERFLOW comes before it, not after the STOP.
    #[test]
    fn a_control_event_of_a_draining_writer_comes_after_its_losses() {
        let (log, f) = crate::trace::scratch::Scratch::log("stream-draining-stop");
        let path = log.path.clone();
        let a = crate::trace::scratch::small_attr();
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("stream.drain_stop").unwrap();
        // Only this thread's events of this type, and the control events.
        crate::trace::scratch::record_only(
            &t,
            &[ev, EventId::STOP, EventId::OVERFLOW, EventId::RESUME],
        );
        let tid = crate::sys::tid::current();
        let lost = {
            // Holding the reader lock keeps the flusher out.
            let _st = lock(&t.s.reader);
            t.start().unwrap();
            for i in 0..2000u64 {
                trace::event(ev, &i.to_le_bytes());
            }
            let rings = t.s.rings_snapshot();
            let r = rings.iter().find(|r| r.tid == tid).unwrap();
            assert!(r.draining.load(Relaxed));
            t.stop().unwrap();
            r.lost.load(Relaxed)
        };
        t.shutdown().unwrap();
        let mut l = crate::trace::TraceLog::open(&path).unwrap();
        let evs: Vec<crate::trace::Event> = l
            .events()
            .map(|e| e.unwrap())
            .filter(|e| e.tid == tid)
            .collect();
        let _ = std::fs::remove_file(&path);
        let ids: Vec<EventId> = evs.iter().map(|e| e.id).collect();
        let n = ids.len();
        assert_eq!(
            ids[n - 4..],
            [ev, EventId::OVERFLOW, EventId::RESUME, EventId::STOP],
            "the losses, then the STOP"
        );
        assert_eq!(evs[n - 3].data[..8], lost.to_le_bytes());
    }

    /// A thread that recorded and exited leaves nothing in the stream once its
    /// sub-buffer is read empty: a process that keeps starting short-lived
    /// threads while it traces must not grow the stream by one ring each, and
    /// the losses of the exited threads still count in the status.
    #[test]
    fn exited_threads_leave_no_ring_once_read() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        let t = Trace::create(&a).unwrap();
        let ev = trace::eventid_open("stream.short_lived").unwrap();
        // Only these threads' events (other tests' threads record meanwhile).
        crate::trace::scratch::record_only(&t, &[ev]);
        t.start().unwrap();
        for _ in 0..8 {
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    trace::event(ev, &i.to_le_bytes()); // LOOP: loses the oldest
                }
            })
            .join()
            .unwrap();
        }
        t.stop().unwrap();
        let lost = t.s.lost_sum();
        assert!(lost > 0);
        while t.try_getnext().unwrap().is_some() {}
        assert_eq!(
            t.s.lost_sum(),
            lost,
            "the exited threads' losses still count"
        );
        assert_eq!(t.s.rings_held(), 0);
        t.shutdown().unwrap();
    }

    /// An UNTIL_FULL stream that suspended itself loses every event recorded
    /// meanwhile, and counts it: the status reports an overrun again after a
    /// read of it, the loss count grows by each, and readers get an OVERFLOW
    /// for each thread's run, with its count (those events went unrecorded
    /// and uncounted, as if no one had recorded them). A thread whose own
    /// sub-buffer has room records nothing either.
    #[test]
    fn events_while_suspended_by_fullness_count_as_lost() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create(&a).unwrap();
        let ev = trace::eventid_open("stream.suspended_loss").unwrap();
        crate::trace::scratch::record_only(&t, &[ev, EventId::OVERFLOW]);
        t.start().unwrap();
        // Another thread, with a sub-buffer of its own far from full.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (ready, recorded) = std::sync::mpsc::channel::<u32>();
        let other = std::thread::spawn(move || {
            trace::event(ev, &[0]);
            ready.send(crate::sys::tid::current()).unwrap();
            wait.recv().unwrap();
            for _ in 0..10 {
                trace::event(ev, &[1]);
            }
        });
        let other_tid = recorded.recv().unwrap();
        let mut i = 0u64;
        while t.s.running() {
            trace::event(ev, &i.to_le_bytes());
            i += 1;
        }
        assert!(t.s.auto_suspended.load(Acquire));
        let lost = t.s.lost_sum();
        assert!(t.status().overrun, "the event that filled it");
        for _ in 0..20 {
            trace::event(ev, &[2]);
        }
        go.send(()).unwrap();
        other.join().unwrap();
        let st = t.status();
        assert!(!st.running && st.full, "{st:?}");
        assert!(st.overrun, "30 events lost while suspended: {st:?}");
        assert_eq!(t.s.lost_sum(), lost + 30);
        t.stop().unwrap();
        let mut by_other = Vec::new();
        let mut reported = 0u64;
        while let Some(e) = t.try_getnext().unwrap() {
            if e.id == EventId::OVERFLOW {
                reported += u64::from_le_bytes(e.data[..8].try_into().unwrap());
            }
            if e.tid == other_tid {
                by_other.push((e.id, e.data));
            }
        }
        assert_eq!(
            by_other,
            [
                (ev, vec![0]),
                (
                    EventId::OVERFLOW,
                    [&10u64.to_le_bytes()[..], &other_tid.to_le_bytes()].concat()
                )
            ],
            "the other thread's first event, then its 10 losses"
        );
        assert_eq!(reported, lost + 30, "every loss reported");
        t.shutdown().unwrap();
    }
}
