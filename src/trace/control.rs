//! The control operations of a stream: start, stop, flush, clear, attributes,
//! status, filters and event names.

use std::sync::atomic::Ordering::*;

use super::attr::{LogFullPolicy, StreamFullPolicy, TraceAttr};
use super::handle::Trace;
use super::ids::{self, EventId};
use super::local::control_event;
use super::seam::{self, Point};
use super::set::{EventSet, FilterHow, WORDS};
use super::slots::{lock, set_filter_words, set_running};
use super::status::TraceStatus;
use super::stream::{Stream, STOP_CALL};
use crate::{Error, Result};

impl Trace {
    /// `posix_trace_start`: records START and runs (ignored when running, and,
    /// as POSIX has it, when an UNTIL_FULL stream is full: one that suspended
    /// itself runs again once reading or [`clear`](Self::clear) frees space; one
    /// stopped by [`stop`](Self::stop) stays stopped until a `start` after that).
    /// Ignored too while an UNTIL_FULL log is full (the status's `log_full`):
    /// the log ends with the STOP that stopped the stream, and would drop
    /// every event after it; [`clear`](Self::clear) empties it, and `start`
    /// runs the stream again.
    ///
    /// # References
    /// - [`posix_trace_start`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_start.html)
    #[doc(alias = "posix_trace_start")]
    pub fn start(&self) -> Result<()> {
        self.check_owner("posix_trace_start")?;
        seam::at(Point::StartLocking);
        let _ctl = lock(&self.s.ctl);
        if self.s.running() {
            return Ok(());
        }
        // Started while full, it would record START into the room kept for
        // control events and suspend itself again at its next event. Under
        // the control lock, as a writer suspends the stream by fullness: a
        // look before it could miss a fill just after it.
        if self.s.policy == StreamFullPolicy::UntilFull && self.s.is_full() {
            return Ok(());
        }
        // Set under the control lock by the flush that stopped the stream.
        if self.s.log_full.load(Acquire)
            && self.s.attr.log_full_policy() == LogFullPolicy::UntilFull
        {
            return Ok(());
        }
        self.s.auto_suspended.store(false, Release);
        control_event(self.s.slot, EventId::START, &[]);
        set_running(self.s.slot, true);
        Ok(())
    }

    /// `posix_trace_stop`: records STOP and suspends (ignored when suspended).
    ///
    /// POSIX has start and stop take no effect on a full stream: a stream the
    /// UNTIL_FULL policy suspended (it is not running, so stop records no
    /// STOP; it stays suspended once space frees up). A running UNTIL_FULL
    /// stream is not full (its status says so) until an event no longer
    /// fits, also near its end (no room left for two events of maximum
    /// size): stop stops it there and records STOP in the room kept for it
    /// (ignored, the call would let the stream record every event after it
    /// until one no longer fits: with a large maximum data size, most of the
    /// stream). A LOOP or FLUSH stream
    /// never stops by fullness (it overwrites, or flushes): its status's
    /// `full` only says a sub-buffer is near its end, and stop and start
    /// act on it as on any running stream (else a wrapped LOOP stream could
    /// never be stopped).
    ///
    /// # References
    /// - [`posix_trace_stop`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_start.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_stop")]
    pub fn stop(&self) -> Result<()> {
        self.check_owner("posix_trace_stop")?;
        let _ctl = lock(&self.s.ctl);
        if !self.s.running() {
            // Suspended by UNTIL_FULL: stay suspended once space frees up,
            // and stop counting events lost.
            if self.s.auto_suspended.swap(false, AcqRel) {
                set_running(self.s.slot, false);
            }
            return Ok(());
        }
        set_running(self.s.slot, false);
        control_event(self.s.slot, EventId::STOP, &STOP_CALL.to_le_bytes());
        Ok(())
    }

    /// `posix_trace_flush`: writes the stream's events to the log now and frees
    /// their space. Without a log: `InvalidInput`.
    ///
    /// # References
    /// - [`posix_trace_flush`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_create.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_flush")]
    pub fn flush(&self) -> Result<()> {
        self.check_owner("posix_trace_flush")?;
        if self.s.log.is_none() {
            return Err(Error::invalid("posix_trace_flush", "the stream has no log")
                .with_hint("create the stream with Trace::create_with_log"));
        }
        self.s.flush_now(true)
    }

    /// `posix_trace_clear`: empties the stream and the log of events, keeping the
    /// service data (attributes, names); resumes an UNTIL_FULL stream. A log on
    /// a pipe or socket cannot be emptied: what it was sent stays sent, and its
    /// size and full state start over from there.
    ///
    /// # References
    /// - [`posix_trace_clear`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_clear.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_clear")]
    pub fn clear(&self) -> Result<()> {
        self.check_owner("posix_trace_clear")?;
        let mut st = lock(&self.s.reader);
        // The losses that go with the cleared events: each sub-buffer's as
        // it was emptied (readers report only the ones after), those of the
        // sub-buffers of exited threads (they change only under the reader
        // lock), and the signal handlers' so far. A loss after one of these
        // reads, while the clear runs, is the cleared stream's: readers
        // report it, and the status and the shutdown record count it (the
        // status was reset to the sum of every count read later, as the
        // clear ended, so it missed a loss readers reported).
        let mut cleared = 0;
        for r in self.s.rings_snapshot() {
            // The count once a writer dropping as the clear runs has counted
            // its drops: read before, its losses would come after the clear,
            // and the next read report an OVERFLOW for them.
            let lost = r.clear();
            r.lost_reported.store(lost, Relaxed);
            cleared += lost;
        }
        seam::at(Point::ClearRingsDone);
        let nested = self.s.nested_lost.load(Acquire);
        st.pending.clear();
        st.nested_reported = nested;
        // A sub-buffer added since the snapshot (a thread's first event) was
        // not cleared: all of its losses are after the clear.
        cleared += self.s.gone_lost.load(Acquire) + nested;
        drop(st);
        self.s.full_seen.store(false, Relaxed);
        // As a new stream: the losses before the clear went with its events
        // (the next status reports no overrun).
        self.s.lost_acked.store(cleared, Release);
        self.s.lost_cleared.store(cleared, Release);
        if let Some(log) = &self.s.log {
            let mut w = lock(log);
            let res = w.clear();
            // The status mirrors the writer's flags; no flush may come to refresh them.
            self.s.log_full.store(w.full, Release);
            self.s.log_overrun.store(w.overrun, Release);
            res.map_err(|e| {
                Error::from_errno("posix_trace_clear", e.raw_os_error().unwrap_or(libc::EIO))
            })?;
        }
        self.s.maybe_resume();
        Ok(())
    }

    /// `posix_trace_get_attr`: the stream's attributes (with creation time and clock
    /// resolution filled in).
    ///
    /// # References
    /// - [`posix_trace_get_attr`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_attr.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_get_attr")]
    pub fn attr(&self) -> TraceAttr {
        self.s.attr.clone()
    }

    /// Whether this handle names a trace stream valid in the calling process:
    /// `Err` (`InvalidState`, what every call that can fail returns for it,
    /// POSIX's EINVAL) for a stream shut down, or for the parent's stream in
    /// a forked child (`POSIX_TRACE_CLOSE_FOR_CHILD`). [`attr`](Self::attr),
    /// [`filter`](Self::filter) and [`status`](Self::status) cannot fail:
    /// in a forked child they answer for the parent's stream (its
    /// attributes and filter as they were at the fork; a status of a stream
    /// that does not run), so a caller that must refuse it checks this first.
    pub fn valid(&self) -> Result<()> {
        self.check_owner("posix_trace_get_status")
    }

    /// Whether the stream was created with a log ([`create_with_log`](Trace::create_with_log)):
    /// its flusher then takes the events, and a read through the handle takes
    /// them from the log.
    pub fn has_log(&self) -> bool {
        self.s.log.is_some()
    }

    /// `posix_trace_get_status`. The overrun flags and the flush error reset when read.
    /// In a forked child, whose copy of the parent's stream records nothing
    /// (see [`valid`](Self::valid)), every flag is clear: the child reads
    /// none of the parent's state, nor takes its locks (held at the fork by
    /// a thread the child does not have, they would never be let go).
    ///
    /// # References
    /// - [`posix_trace_get_status`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_status.html)
    #[doc(alias = "posix_trace_get_status")]
    pub fn status(&self) -> TraceStatus {
        let s = &self.s;
        if !self.in_owner() {
            return TraceStatus::default();
        }
        let mut overrun = false;
        let lost = s.lost_sum();
        if s.lost_acked.swap(lost, AcqRel) != lost {
            overrun = true;
        }
        // Both from one look at the stream (see `full_and_running`).
        let (full, running) = s.full_and_running();
        let (log_overrun, log_full) = (s.log_overrun.swap(false, AcqRel), s.log_full.load(Acquire));
        TraceStatus {
            running,
            full,
            overrun,
            flushing: s.flushing.load(Acquire) != 0,
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
    ///
    /// # References
    /// - [`posix_trace_get_filter`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_filter.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_get_filter")]
    pub fn filter(&self) -> EventSet {
        self.s.filter()
    }

    /// `posix_trace_set_filter`: changes the filter and records FILTER with the old
    /// and new sets. FILTER is itself subject to filtering: while the stream
    /// runs, the event comes as the change is made, so it is recorded unless
    /// FILTER is filtered out both before and after the change (a filter
    /// that excludes FILTER still records the change that installs it);
    /// while the stream is suspended, only the new filter decides.
    ///
    /// # References
    /// - [`posix_trace_set_filter`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_filter.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_set_filter")]
    pub fn set_filter(&self, set: &EventSet, how: FilterHow) -> Result<()> {
        self.check_owner("posix_trace_set_filter")?;
        let _ctl = lock(&self.s.ctl);
        let old = self.s.filter();
        let new = match how {
            FilterHow::Set => *set,
            FilterHow::Add => old.union(set),
            FilterHow::Sub => old.minus(set),
        };
        let mut p = Vec::with_capacity(2 * WORDS * 8);
        p.extend_from_slice(&old.to_bytes());
        p.extend_from_slice(&new.to_bytes());
        // POSIX: a change while the trace is in progress is recorded. Under
        // the old filter (still in force) when it lets FILTER in, else
        // under the new one.
        if self.s.running() && !old.contains(EventId::FILTER) {
            control_event(self.s.slot, EventId::FILTER, &p);
            set_filter_words(self.s.slot, &new.0);
        } else {
            set_filter_words(self.s.slot, &new.0);
            control_event(self.s.slot, EventId::FILTER, &p);
        }
        Ok(())
    }

    /// `posix_trace_trid_eventid_open`: the id of a user event name (same name, same
    /// id); the unnamed user event past [`TRACE_USER_EVENT_MAX`](super::TRACE_USER_EVENT_MAX).
    ///
    /// # References
    /// - [`posix_trace_trid_eventid_open`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_trid_eventid_open")]
    pub fn eventid_open(&self, name: &str) -> Result<EventId> {
        self.check_owner("posix_trace_trid_eventid_open")?;
        ids::open_user_for("posix_trace_trid_eventid_open", name)
    }

    /// `posix_trace_eventid_get_name`.
    ///
    /// # Errors
    /// `InvalidInput` for an id no type has; `InvalidState` for a stream
    /// shut down or the parent's stream in a forked child.
    ///
    /// # References
    /// - [`posix_trace_eventid_get_name`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_eventid_get_name")]
    pub fn eventid_name(&self, id: EventId) -> Result<String> {
        self.check_owner("posix_trace_eventid_get_name")?;
        ids::name_of(id).ok_or_else(|| {
            Error::invalid(
                "posix_trace_eventid_get_name",
                format!("no event type has id {}", id.0),
            )
            .with_hint("use an id from eventid_open or sys::register")
        })
    }

    /// The `pthread_t` (`pthread_self()`) of the thread whose kernel tid is
    /// `tid`, if that thread recorded into the stream (the latest such
    /// thread, for a tid the kernel gave again); `None` otherwise. Events
    /// carry their own thread's ([`Event::thread`](super::Event::thread)):
    /// this one names a thread an event's data gives by tid (a mutex owner).
    pub fn thread_of(&self, tid: u32) -> Option<u64> {
        lock(&self.s.rings)
            .iter()
            .rev()
            .find(|r| r.tid == tid && r.thread != 0)
            .map(|r| r.thread)
    }

    /// `posix_trace_eventtypelist_getnext_id` / `_rewind`: the event types of the
    /// stream, in id order (call again to rewind).
    ///
    /// # References
    /// - [`posix_trace_eventtypelist_getnext_id`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventtypelist_getnext_id.html) (POSIX.1-2008)
    /// - [`posix_trace_eventtypelist_rewind`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventtypelist_getnext_id.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_eventtypelist_getnext_id")]
    #[doc(alias = "posix_trace_eventtypelist_rewind")]
    pub fn event_types(&self) -> impl Iterator<Item = ids::EventType> {
        ids::all_types().into_iter()
    }
}

impl Stream {
    /// `posix_stream_full_status`: an UNTIL_FULL stream suspended itself, or
    /// is suspended with a sub-buffer that has no room left for two events
    /// of maximum size (a `start` would record START into the room kept for
    /// control events, and be ignored); a LOOP or FLUSH stream has such a
    /// sub-buffer.
    ///
    /// A running UNTIL_FULL stream is never full: its next event is
    /// recorded if it fits, and the first one that does not stops the
    /// stream (it is full from then on). Full near its end, as for the other
    /// policies, its status contradicted the events recorded after it (and
    /// `stop`, which still stops it there).
    fn is_full(&self) -> bool {
        self.full_and_running().0
    }

    /// [`is_full`](Self::is_full), and whether the stream runs, from one look
    /// at each flag, for the status: a running UNTIL_FULL stream is not full,
    /// so the two answers must be of one moment. Read apart, a writer that
    /// fills the stream between the two (the policy sets `auto_suspended`,
    /// then stops it) made the status say suspended and not full, which the
    /// stream never was (and on which a `start` is ignored). A stream whose
    /// policy has decided to suspend it is no longer running; one seen
    /// running before the writer set the flag and stopped after it is
    /// suspended with a sub-buffer near its end (the event did not fit): full.
    fn full_and_running(&self) -> (bool, bool) {
        if self.auto_suspended.load(Acquire) {
            return (true, false);
        }
        seam::at(Point::StatusLooking);
        let running = self.running();
        if self.policy == StreamFullPolicy::UntilFull && running {
            return (false, true);
        }
        let limit = self.cap as u64 - self.reserve;
        let max_event = self
            .attr
            .max_user_event_size(self.max_data)
            .max(self.attr.max_system_event_size()) as u64;
        // The ring list, not the reader lock: a flush holds that one while it
        // writes, and the status must answer during a flush (FLUSHING). The
        // rings lock keeps every listed ring alive: reclaim frees a ring only
        // after taking it off the list under that lock.
        let full = lock(&self.rings)
            .iter()
            .any(|r| r.used() + 2 * max_event > limit);
        (full, running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, scratch};
    use std::sync::mpsc;

    /// A 4096-byte UNTIL_FULL stream recording only `ev` and the events
    /// that report losses, starts and stops.
    fn until_full(ev: EventId) -> Trace {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create(&a).unwrap();
        let only = [
            ev,
            EventId::OVERFLOW,
            EventId::RESUME,
            EventId::START,
            EventId::STOP,
        ];
        scratch::record_only(&t, &only);
        t
    }

    /// An event as (id, its first 8 data bytes as a number).
    fn id_word(e: &trace::Event) -> (EventId, u64) {
        let mut w = [0u8; 8];
        let n = e.data.len().min(8);
        w[..n].copy_from_slice(&e.data[..n]);
        (e.id, u64::from_le_bytes(w))
    }

    /// Everything left to read, as [`id_word`] gives each.
    fn read_all(t: &Trace) -> Vec<(EventId, u64)> {
        let mut got = Vec::new();
        while let Some(e) = t.try_getnext().unwrap() {
            got.push(id_word(&e));
        }
        got
    }

    /// Has a thread record `ev` (its index as data) until its sub-buffer is
    /// full, stops it there before it drops that event (`WriterFull`),
    /// clears `t`, and lets the thread go on; returns the event's index.
    /// With `hold_reader`, the reader lock is held while the thread fills
    /// its sub-buffer (a FLUSH stream's flusher cannot empty it) and let go
    /// before the clear.
    fn clear_while_a_writer_is_full(t: &Trace, ev: EventId, hold_reader: bool) -> u64 {
        let (at_tx, at_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let last = std::thread::scope(|s| {
            let held = hold_reader.then(|| lock(&t.s.reader));
            let w = s.spawn(move || {
                let (full_tx, full_rx) = mpsc::channel();
                seam::once_at(Point::WriterFull, move || {
                    let _ = full_tx.send(());
                    let _ = at_tx.send(());
                    let _ = go_rx.recv();
                });
                for i in 0..100_000u64 {
                    trace::event(ev, &i.to_le_bytes());
                    if full_rx.try_recv().is_ok() {
                        return Some(i);
                    }
                }
                None
            });
            // The writer waits at its full sub-buffer, its event not dropped yet.
            let _ = at_rx.recv();
            drop(held);
            t.clear().unwrap();
            let _ = go_tx.send(());
            w.join().unwrap()
        });
        last.expect("the sub-buffer filled up")
    }

    /// An UNTIL_FULL writer that found its sub-buffer full, and is about to
    /// drop its event when a `clear()` empties the sub-buffer, records the
    /// event: the clear came first, and left room. It dropped it, counted
    /// the drop against the cleared stream (an OVERFLOW read after the
    /// clear) and suspended the stream, empty, as full.
    #[test]
    fn a_writer_full_before_a_clear_records_its_event_after_it() {
        let ev = trace::eventid_open("control.full_then_clear").unwrap();
        let t = until_full(ev);
        t.start().unwrap();
        let last = clear_while_a_writer_is_full(&t, ev, false);
        let st = t.status();
        assert!(st.running && !st.full && !st.overrun, "{st:?}");
        assert_eq!(read_all(&t), [(ev, last)]);
        t.shutdown().unwrap();
    }

    /// The same under the FLUSH policy: the event reaches the log after the
    /// clear, with no OVERFLOW before it (the writer dropped it, and the
    /// log reported its loss after the clear).
    #[test]
    fn a_flush_writer_full_before_a_clear_logs_its_event_after_it() {
        let (log, f) = scratch::Scratch::log("control-flush-clear");
        let t = Trace::create_with_log(&scratch::small_attr(), f).unwrap();
        assert_eq!(t.s.policy, StreamFullPolicy::Flush);
        let ev = trace::eventid_open("control.flush_full_then_clear").unwrap();
        scratch::record_only(&t, &[ev, EventId::OVERFLOW, EventId::RESUME]);
        t.start().unwrap();
        let last = clear_while_a_writer_is_full(&t, ev, true);
        let st = t.status();
        assert!(!st.overrun, "{st:?}");
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = trace::TraceLog::open(&log.path).unwrap();
        let got: Vec<_> = l.events().map(|e| id_word(&e.unwrap())).collect();
        assert_eq!(got, [(ev, last)]);
    }

    /// A writer that looked at its full sub-buffer a last time and is
    /// dropping its event when a `clear()` runs: the clear waits for the
    /// drop to be counted, so it goes with the cleared events (no OVERFLOW
    /// after the clear, no overrun), as does the STOP the writer recorded
    /// as the drop suspended the stream; the clear resumes it (START).
    #[test]
    fn a_drop_under_way_when_a_clear_runs_goes_with_the_cleared_events() {
        let ev = trace::eventid_open("control.drop_in_clear").unwrap();
        let t = until_full(ev);
        t.start().unwrap();
        let tr = &t;
        let (at_tx, at_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (waits_tx, waits_rx) = mpsc::channel();
        let (dropped, waited) = std::thread::scope(|s| {
            let w = s.spawn(move || {
                let (drop_tx, drop_rx) = mpsc::channel();
                seam::once_at(Point::WriterDropping, move || {
                    let _ = drop_tx.send(());
                    let _ = at_tx.send(());
                    let _ = go_rx.recv();
                });
                for i in 0..100_000u64 {
                    trace::event(ev, &i.to_le_bytes());
                    if drop_rx.try_recv().is_ok() {
                        return Some(i);
                    }
                }
                None
            });
            // The writer is dropping, its count not made yet.
            let _ = at_rx.recv();
            let c = s.spawn(move || {
                seam::once_at(Point::ClearWaitsForDrop, move || {
                    let _ = waits_tx.send(());
                });
                tr.clear().unwrap();
            });
            // Ok once the clear waits for the writer; Err if it ended without.
            let waited = waits_rx.recv().is_ok();
            let _ = go_tx.send(());
            c.join().unwrap();
            (w.join().unwrap(), waited)
        });
        assert!(dropped.is_some(), "the sub-buffer filled up");
        assert!(waited, "the clear waits for the writer's count");
        let st = t.status();
        assert!(st.running && !st.full && !st.overrun, "{st:?}");
        assert_eq!(read_all(&t), [(EventId::START, 0)]);
        t.shutdown().unwrap();
    }

    /// An event lost while `clear()` runs, after it emptied the sub-buffers
    /// (an UNTIL_FULL stream still suspended by fullness), is reported
    /// after the clear, and the status says so too: the clear took the
    /// count it reset the status to later than the counts it gave the
    /// readers, so the status missed the loss they report.
    #[test]
    fn a_loss_while_a_clear_runs_counts_in_the_status_as_for_readers() {
        let ev = trace::eventid_open("control.loss_in_clear").unwrap();
        let t = until_full(ev);
        t.start().unwrap();
        for i in 0..100_000u64 {
            trace::event(ev, &i.to_le_bytes());
            if t.s.auto_suspended.load(Acquire) {
                break;
            }
        }
        assert!(t.status().full, "suspended by fullness");
        // Lost: the stream is still suspended until the clear resumes it.
        seam::once_at(Point::ClearRingsDone, move || {
            trace::event(ev, &u64::MAX.to_le_bytes())
        });
        t.clear().unwrap();
        trace::event(ev, &7u64.to_le_bytes());
        let st = t.status();
        let got = read_all(&t);
        let reported: u64 = got
            .iter()
            .filter(|(id, _)| *id == EventId::OVERFLOW)
            .map(|(_, n)| n)
            .sum();
        assert_eq!(reported, 1, "{got:?}");
        assert!(st.running && st.overrun, "{st:?}");
        assert_eq!(got.last(), Some(&(ev, 7)), "{got:?}");
        t.shutdown().unwrap();
    }

    /// A LOOP writer that has dropped its oldest record when `clear()` runs,
    /// and counts the drop only after the clear's own work, loses nothing
    /// after the clear: the next read reports no OVERFLOW (the record went
    /// with the clear) and the status no overrun.
    #[test]
    fn a_clear_during_a_loop_overwrite_reports_no_loss_after_it() {
        let mut a = TraceAttr::new();
        a.set_stream_size(4096).unwrap();
        let t = Trace::create(&a).unwrap();
        assert_eq!(t.attr().stream_full_policy(), StreamFullPolicy::Loop);
        let ev = trace::eventid_open("control.clear_mid_drop").unwrap();
        // Only this test's events and the loss reports.
        scratch::record_only(&t, &[ev, EventId::OVERFLOW, EventId::RESUME]);
        t.start().unwrap();
        trace::event(ev, &1u64.to_le_bytes());
        trace::event(ev, &2u64.to_le_bytes());
        let tid = crate::sys::tid::current();
        let rings = t.s.rings_snapshot();
        let Some(r) = rings.iter().find(|r| r.tid == tid) else {
            panic!("no sub-buffer for this thread");
        };
        assert!(r.drop_oldest_uncounted(), "a record to overwrite");
        let (done, cleared) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                t.clear().unwrap();
                let _ = done.send(());
            });
            // Let the clear finish first if it would (as it did without waiting
            // for the writer): the writer's count comes after it then.
            let _ = cleared.recv_timeout(std::time::Duration::from_millis(100));
            r.count_dropped(1);
        });
        assert!(!t.status().overrun, "the loss went with the clear");
        trace::event(ev, &3u64.to_le_bytes());
        t.stop().unwrap();
        let mut got = Vec::new();
        while let Some(e) = t.try_getnext().unwrap() {
            got.push((e.id, e.data));
        }
        assert_eq!(got, [(ev, 3u64.to_le_bytes().to_vec())]);
    }
}
