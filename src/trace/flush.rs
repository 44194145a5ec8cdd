//! Writing a stream to its log: one flush (take, sort, encode, write) and the
//! flusher thread that runs them, so traced threads never write files.

use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Duration;

use super::attr::{LogFullPolicy, StreamFullPolicy, RECORD_HEADER};
use super::event::Event;
use super::ids::EventId;
use super::local::control_event;
use super::slots::{filtered, lock, set_running};
use super::stream::Stream;
use crate::sys::clock;
use crate::{Error, Result};

impl Stream {
    pub(super) fn flush_now(&self, explicit: bool) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        self.flushing.store(true, Release);
        let mut st = lock(&self.reader);
        let mut w = lock(log);
        w.sync_types();
        let tid = crate::sys::tid::current();
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
                set_running(self.slot, false);
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
            control_event(self.slot, EventId::ERROR, &errno.to_le_bytes());
            return Err(Error::from_errno("posix_trace_flush", errno)
                .with_hint("check the log file system (space, permissions)"));
        }
        Ok(())
    }
}

pub(super) fn flusher(s: Arc<Stream>) {
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
