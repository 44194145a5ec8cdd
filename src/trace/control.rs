//! The control operations of a stream: start, stop, flush, clear, attributes,
//! status, filters and event names.

use std::sync::atomic::Ordering::*;

use super::attr::{StreamFullPolicy, TraceAttr};
use super::handle::Trace;
use super::ids::{self, EventId};
use super::local::control_event;
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
    ///
    /// # References
    /// - [`posix_trace_start`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_start.html)
    #[doc(alias = "posix_trace_start")]
    pub fn start(&self) -> Result<()> {
        self.check_owner("posix_trace_start")?;
        // Started while full, it would record START into the room kept for
        // control events and suspend itself again at its next event.
        if self.s.policy == StreamFullPolicy::UntilFull && self.s.is_full() {
            return Ok(());
        }
        let _ctl = lock(&self.s.ctl);
        if self.s.running() {
            return Ok(());
        }
        self.s.auto_suspended.store(false, Release);
        control_event(self.s.slot, EventId::START, &[]);
        set_running(self.s.slot, true);
        Ok(())
    }

    /// `posix_trace_stop`: records STOP and suspends (ignored when suspended).
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
    /// service data (attributes, names); resumes an UNTIL_FULL stream.
    ///
    /// # References
    /// - [`posix_trace_clear`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_clear.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_clear")]
    pub fn clear(&self) -> Result<()> {
        self.check_owner("posix_trace_clear")?;
        let st = lock(&self.s.reader);
        for r in self.s.rings_snapshot() {
            // The count once a LOOP writer overwriting as the clear runs has
            // counted its drops: read before, its losses would come after the
            // clear, and the next read report an OVERFLOW for them.
            let lost = r.clear();
            r.lost_reported.store(lost, Relaxed);
        }
        drop(st);
        {
            let mut st = lock(&self.s.reader);
            st.pending.clear();
            st.nested_reported = self.s.nested_lost.load(Relaxed);
        }
        self.s.full_seen.store(false, Relaxed);
        // As a new stream: the losses before the clear went with its events
        // (the next status reports no overrun).
        let lost = self.s.lost_sum();
        self.s.lost_acked.store(lost, Release);
        self.s.lost_cleared.store(lost, Release);
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

    /// Whether the stream was created with a log ([`create_with_log`](Trace::create_with_log)):
    /// its flusher then takes the events, and a read through the handle takes
    /// them from the log.
    pub fn has_log(&self) -> bool {
        self.s.log.is_some()
    }

    /// `posix_trace_get_status`. The overrun flags and the flush error reset when read.
    ///
    /// # References
    /// - [`posix_trace_get_status`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_status.html)
    #[doc(alias = "posix_trace_get_status")]
    pub fn status(&self) -> TraceStatus {
        let s = &self.s;
        let mut overrun = false;
        let lost = s.lost_sum();
        if s.lost_acked.swap(lost, AcqRel) != lost {
            overrun = true;
        }
        let full = s.is_full();
        let (log_overrun, log_full) = (s.log_overrun.swap(false, AcqRel), s.log_full.load(Acquire));
        TraceStatus {
            running: s.running(),
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
    /// and new sets (unless the new filter excludes FILTER itself).
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
        set_filter_words(self.s.slot, &new.0);
        let mut p = Vec::with_capacity(2 * WORDS * 8);
        p.extend_from_slice(&old.to_bytes());
        p.extend_from_slice(&new.to_bytes());
        control_event(self.s.slot, EventId::FILTER, &p);
        Ok(())
    }

    /// `posix_trace_trid_eventid_open`: the id of a user event name (same name, same
    /// id); the unnamed user event past [`TRACE_USER_EVENT_MAX`](super::TRACE_USER_EVENT_MAX).
    ///
    /// # References
    /// - [`posix_trace_trid_eventid_open`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_trid_eventid_open")]
    pub fn eventid_open(&self, name: &str) -> Result<EventId> {
        ids::open_user(name)
    }

    /// `posix_trace_eventid_get_name`.
    ///
    /// # Errors
    /// `InvalidInput` for an id no type has.
    ///
    /// # References
    /// - [`posix_trace_eventid_get_name`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_eventid_get_name")]
    pub fn eventid_name(&self, id: EventId) -> Result<String> {
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
    /// `posix_stream_full_status`: an UNTIL_FULL stream suspended itself, or a
    /// sub-buffer has no room left for two events of maximum size.
    fn is_full(&self) -> bool {
        if self.auto_suspended.load(Acquire) {
            return true;
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
        lock(&self.rings)
            .iter()
            .any(|r| r.used() + 2 * max_event > limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, scratch};

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
