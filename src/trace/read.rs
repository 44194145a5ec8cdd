//! Reading a stream: the merge of the per-thread sub-buffers by timestamp, the
//! OVERFLOW and RESUME events that report losses, and the automatic resume of an
//! UNTIL_FULL stream.
//!
//! An OVERFLOW stands where its sub-buffer lost the events: just before the
//! first record after them, stamped with that record's time; losses with no
//! record after them yet are reported at the end of what there is to read,
//! stamped as the last record taken from that sub-buffer (the current time if
//! none was), as a flush stamps them.

use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::TryLockError;
use std::time::Duration;

use super::attr::StreamFullPolicy;
use super::event::Event;
use super::ids::{self, EventId};
use super::local::control_event;
use super::ring::{RawRecord, Ring};
use super::slots::{filtered, lock, set_running};
use super::stream::{ReaderState, Stream};
use crate::sys::clock;

impl Stream {
    /// Converts a raw record to an event.
    pub(super) fn to_event(&self, r: RawRecord) -> Event {
        let id = EventId(r.id);
        let wopid = id.is_system() && is_wopid_cached(id);
        Event {
            id,
            pid: if wopid { 0 } else { self.pid },
            tid: r.tid,
            thread: r.thread,
            timestamp: Duration::from_nanos(clock::to_ns(r.ticks)),
            truncated: r.truncated,
            prog_address: 0,
            data: r.data,
        }
    }

    /// Takes the oldest unread event of all sub-buffers (reader lock held).
    pub(super) fn take(&self, st: &mut ReaderState) -> Option<Event> {
        if let Some(e) = st.pending.pop_front() {
            return Some(e);
        }
        self.take_from(&self.rings_snapshot(), st)
    }

    /// [`take`](Self::take) with a snapshot the caller keeps across calls (reader
    /// lock held throughout, so the snapshot stays valid).
    pub(super) fn take_from(&self, rings: &[&Ring], st: &mut ReaderState) -> Option<Event> {
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
                // dropping, or stopped while dropping) are reported at the end,
                // unless a record not taken yet came before them, stamped as the
                // record they came after.
                let now = Duration::from_nanos(clock::to_ns(clock::ticks()));
                for &r in rings {
                    if let Some(lost) = r.lost_upto(r.tail.0.load(Acquire)) {
                        let at = match r.last_taken.load(Relaxed) {
                            0 => now,
                            t => Duration::from_nanos(clock::to_ns(t)),
                        };
                        self.report_loss(r, lost, at, st);
                    }
                }
                self.report_nested_loss(now, st);
                return st.pending.pop_front();
            };
            let Some(rec) = r.pop() else { continue };
            r.last_taken.store(rec.ticks, Relaxed);
            let (gap, lost) = (rec.gap, rec.lost);
            let ev = self.to_event(rec);
            // LOOP loses events before the oldest unread one, all counted as
            // the record was taken (not later: the writer may have overwritten
            // more since, after it); FLUSH and UNTIL_FULL writers drop new
            // ones and mark the record that ends the gap (UNTIL_FULL: its
            // STOP) with the count up to it, or the losses come at the end.
            if self.policy == StreamFullPolicy::Loop {
                self.report_loss(r, lost, ev.timestamp, st);
            } else if let Some(lost) = gap {
                self.report_loss(r, lost, ev.timestamp, st);
            }
            if st.pending.is_empty() {
                return Some(ev);
            }
            st.pending.push_back(ev);
            return st.pending.pop_front();
        }
    }

    /// Queues OVERFLOW (count, tid) and RESUME for the losses of `r` up to
    /// `lost` not yet reported.
    pub(super) fn report_loss(
        &self,
        r: &Ring,
        lost: u64,
        timestamp: Duration,
        st: &mut ReaderState,
    ) {
        let reported = r.lost_reported.load(Relaxed);
        if lost <= reported {
            return;
        }
        r.lost_reported.store(lost, Relaxed);
        self.queue_overflow(lost - reported, r.tid, timestamp, st);
    }

    /// Queues OVERFLOW (`count`, `tid`) and RESUME, unless filtered.
    fn queue_overflow(&self, count: u64, tid: u32, timestamp: Duration, st: &mut ReaderState) {
        let mut p = count.to_le_bytes().to_vec();
        p.extend_from_slice(&tid.to_le_bytes());
        for (id, data) in [(EventId::OVERFLOW, p), (EventId::RESUME, Vec::new())] {
            if !filtered(self.slot, id.0) {
                st.pending.push_back(Event {
                    id,
                    pid: 0,
                    tid,
                    thread: 0,
                    timestamp,
                    truncated: false,
                    prog_address: 0,
                    data,
                });
            }
        }
    }

    /// Queues OVERFLOW (count, tid 0: no one sub-buffer lost them) and RESUME
    /// for the signal handlers' events dropped inside the recorder since the last
    /// report (see `local::nested`).
    fn report_nested_loss(&self, timestamp: Duration, st: &mut ReaderState) {
        let lost = self.nested_lost.load(Relaxed);
        if lost <= st.nested_reported {
            return;
        }
        let count = lost - st.nested_reported;
        st.nested_reported = lost;
        self.queue_overflow(count, 0, timestamp, st);
    }

    /// After reading or clearing: resume an UNTIL_FULL stream once space is free.
    pub(super) fn maybe_resume(&self) {
        if !self.auto_suspended.load(Acquire) {
            return;
        }
        let _st = lock(&self.reader);
        self.resume_locked();
    }

    /// [`maybe_resume`](Self::maybe_resume) that never waits for the reader
    /// lock: whoever holds it (a flush, a clear, another read) resumes the
    /// stream itself once done.
    pub(super) fn try_resume(&self) {
        if !self.auto_suspended.load(Acquire) {
            return;
        }
        let _st = match self.reader.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        self.resume_locked();
    }

    /// The resume proper (reader lock held).
    fn resume_locked(&self) {
        let half = self.cap as u64 / 2;
        let _ctl = lock(&self.ctl);
        if self.rings_snapshot().iter().all(|r| r.used() <= half)
            && self
                .auto_suspended
                .compare_exchange(true, false, AcqRel, Relaxed)
                .is_ok()
        {
            control_event(self.slot, EventId::START, &[]);
            set_running(self.slot, true);
        }
    }
}

static WOPID: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static WOPID_GEN: AtomicU64 = AtomicU64::new(u64::MAX);

pub(super) fn is_wopid_cached(id: EventId) -> bool {
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

#[cfg(test)]
mod tests {
    use crate::trace::scratch::record_only;
    use crate::trace::{self, EventId, StreamFullPolicy, Trace, TraceAttr};

    /// The OVERFLOW of a LOOP stream stands where the events were lost: before
    /// the first record after them, with their count. A reader that took a
    /// record and then read the loss count counted the events the writer
    /// overwrote after that record (meanwhile) as lost before it, and a count
    /// stored after the reader took the next record came one record late.
    /// Here a writer overwrites its oldest records while this thread reads:
    /// between two records of the writer, the OVERFLOW counts must add up to
    /// exactly the sequence numbers missing between them.
    #[test]
    fn loop_overflow_stands_where_the_events_were_lost() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        let t = Trace::create(&a).unwrap();
        assert_eq!(t.s.policy, StreamFullPolicy::Loop);
        let ev = trace::eventid_open("read.loop_seq").unwrap();
        record_only(&t, &[ev, EventId::OVERFLOW]);
        t.start().unwrap();
        const N: u64 = 300_000;
        let writer = std::thread::spawn(move || {
            for i in 0..N {
                trace::event(ev, &i.to_le_bytes());
            }
            crate::sys::tid::current()
        });
        let mut got = Vec::new();
        while !writer.is_finished() {
            while let Some(e) = t.try_getnext().unwrap() {
                got.push(e);
            }
        }
        let tid = writer.join().unwrap();
        t.stop().unwrap();
        while let Some(e) = t.try_getnext().unwrap() {
            got.push(e);
        }
        let mut next = 0u64; // the sequence number expected next
        let mut lost = 0u64; // OVERFLOW counts since the last record
        let mut bad = Vec::new();
        for e in got.iter().filter(|e| e.tid == tid) {
            if e.id == EventId::OVERFLOW {
                lost += u64::from_le_bytes(e.data[..8].try_into().unwrap());
                continue;
            }
            let seq = u64::from_le_bytes(e.data[..8].try_into().unwrap());
            if seq - next != lost {
                bad.push((next, seq, lost));
            }
            next = seq + 1;
            lost = 0;
        }
        assert_eq!(next, N, "the last record is the writer's last event");
        assert_eq!(lost, 0, "no loss after the last record");
        assert!(
            bad.is_empty(),
            "(expected, record, lost reported before it): {:?} of {}",
            &bad[..bad.len().min(8)],
            bad.len()
        );
        t.shutdown().unwrap();
    }

    /// Losses after a sub-buffer's last record, reported at the end of a read,
    /// are stamped as the record they came after (as a flush stamps them), not
    /// with the time of the read. Here an UNTIL_FULL stream whose STOP is
    /// filtered (the STOP would carry the losses) fills up.
    #[test]
    fn losses_at_the_end_of_a_read_are_stamped_as_the_record_before_them() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create(&a).unwrap();
        let ev = trace::eventid_open("read.end_loss").unwrap();
        record_only(&t, &[ev, EventId::OVERFLOW]);
        let tid = crate::sys::tid::current();
        t.start().unwrap();
        for i in 0..1000u64 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.stop().unwrap();
        // A read well after the losses.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut evs = Vec::new();
        while let Some(e) = t.try_getnext().unwrap() {
            if e.tid == tid {
                evs.push(e);
            }
        }
        let n = evs.len();
        assert_eq!(evs[n - 1].id, EventId::OVERFLOW, "the losses come last");
        assert_eq!(evs[n - 2].id, ev);
        assert_eq!(
            evs[n - 1].timestamp,
            evs[n - 2].timestamp,
            "stamped as the last record before the losses"
        );
        t.shutdown().unwrap();
    }
}
