//! One flush of a stream to its log: take what the sub-buffers hold, in
//! timestamp order, encode it as log records and write it in one sequential write.
//!
//! A stream whose writers never move the tail (FLUSH and UNTIL_FULL) is read in
//! place: the flush merges the sub-buffers by timestamp up to the heads it saw
//! when it began and encodes each record straight from the ring into the log's
//! buffer (no event objects, no allocation per event). A LOOP stream, whose
//! writers overwrite concurrently, goes through the validated reader of `read.rs`.

use std::sync::atomic::{AtomicU32, Ordering::*};
use std::time::Duration;

use super::attr::{LogFullPolicy, StreamFullPolicy, RECORD_HEADER};
use super::event::Event;
use super::ids::EventId;
use super::local::control_event;
use super::log_writer::LogWriter;
use super::read::is_wopid_cached;
use super::ring::{Ring, PAD_ID};
use super::slots::{filtered, lock, set_running};
use super::stream::{ReaderState, Stream};
use crate::sys::clock;
use crate::{Error, Result};

/// Ticks to ns of CLOCK_MONOTONIC for one flush: `clock::to_ns` at a base point
/// and its slope, so each record costs a multiply instead of a clock read (the
/// conversion refines its calibration against the clock).
struct TickConv {
    t: u64,
    ns: u64,
    mult: i128,
}

impl TickConv {
    fn new(base: u64) -> TickConv {
        let ns = clock::to_ns(base);
        // `to_ns` is `m0 + (d * mult) >> 32`: one 2^32-tick step adds `mult` exactly.
        let mult = clock::to_ns(base.wrapping_add(1 << 32)) as i128 - ns as i128;
        TickConv { t: base, ns, mult }
    }

    #[inline]
    fn ns(&self, t: u64) -> u64 {
        let d = t.wrapping_sub(self.t) as i64 as i128;
        (self.ns as i128 + ((d * self.mult) >> 32)).max(0) as u64
    }
}

/// One flush in progress: counted in `Stream::flushing` until dropped.
struct Flushing<'a>(&'a AtomicU32);

impl Drop for Flushing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, AcqRel);
    }
}

/// Bytes a flush queues before it writes them (one large sequential write each).
const WRITE_STEP: usize = 4 << 20;
/// Bytes that may wait for a log whose writes fail (a full file system)
/// before flushes stop taking events from the stream.
pub(super) const MAX_BACKLOG: usize = 4 * WRITE_STEP;

/// Which marks a flush writes around its batch.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Marks {
    /// FLUSH_START and FLUSH_STOP (an explicit flush, or a FLUSH stream's flush).
    Posix,
    /// None: a periodic or crash-time write of what the stream holds.
    Quiet,
}

/// One sub-buffer being merged: its next record and where its visible part ends.
struct Cursor<'a> {
    r: &'a Ring,
    pos: u64,
    end: u64,
    /// Ticks of the last record taken, if any.
    last: Option<u64>,
    /// First word and ticks of the record at `pos` (valid while `pos < end`).
    w0: u64,
    ticks: u64,
    len: u64,
}

impl<'a> Cursor<'a> {
    fn new(r: &'a Ring) -> Cursor<'a> {
        let end = r.head.0.load(Acquire);
        let pos = r.tail.0.load(Acquire);
        let mut c = Cursor {
            r,
            pos,
            end,
            last: None,
            w0: 0,
            ticks: 0,
            len: 0,
        };
        c.load();
        c
    }

    /// Reads the record at `pos`, skipping padding.
    #[inline]
    fn load(&mut self) {
        while self.pos < self.end {
            let (w0, ticks, len) = self.r.at(self.pos);
            if w0 as u16 != PAD_ID {
                (self.w0, self.ticks, self.len) = (w0, ticks, len);
                return;
            }
            self.pos += len;
        }
    }

    #[inline]
    fn next(&mut self, taken: u64) {
        self.pos += self.len;
        self.last = Some(self.ticks);
        // Free space in steps, not per record: the writer reads the tail only on
        // its slow path, and one store per record would keep the line bouncing.
        if taken % 1024 == 0 {
            self.r.set_tail(self.pos);
        }
        self.load();
    }

    #[inline]
    fn live(&self) -> bool {
        self.pos < self.end
    }
}

impl Stream {
    /// `posix_trace_flush`, or a FLUSH stream's flush when its writers ask: with
    /// the FLUSH_START / FLUSH_STOP marks if `explicit` or the policy is FLUSH.
    pub(super) fn flush_now(&self, explicit: bool) -> Result<()> {
        let marks = if explicit || self.policy == StreamFullPolicy::Flush {
            Marks::Posix
        } else {
            Marks::Quiet
        };
        self.flush_with(marks)
    }

    /// Writes what the stream holds to the log.
    pub(super) fn flush_with(&self, marks: Marks) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        // A count, not a flag: flushes overlap (`flush` from two threads, or
        // one while the flusher writes), and the stream is FLUSHING until the
        // last of them ends.
        self.flushing.fetch_add(1, AcqRel);
        let in_flush = Flushing(&self.flushing);
        let mut st = lock(&self.reader);
        let mut w = lock(log);
        w.sync_types();
        // A failed write leaves its bytes queued. Past a bound, write those
        // first and take nothing more while the log fails: the stream's own
        // full policy then drops and counts what it cannot keep, instead of
        // every flush queueing all it holds, in memory, without end.
        if w.backlog() > MAX_BACKLOG {
            if let Err(e) = w.commit() {
                drop((w, st, in_flush));
                return Err(self.failed(e));
            }
        }
        let tid = crate::sys::tid::current();
        let now = Duration::from_nanos(clock::to_ns(clock::ticks()));
        // The flush runs on a thread of this process (its tid is recorded): the
        // marks carry the process's pid, as every reader and export shows it.
        let mark = |id: EventId, data: Vec<u8>| Event {
            id,
            pid: self.pid,
            tid,
            thread: 0,
            timestamp: now,
            truncated: false,
            prog_address: 0,
            data,
        };
        let marks = marks == Marks::Posix;
        let rings = self.rings_snapshot();
        let start = marks && !filtered(self.slot, EventId::FLUSH_START.0);
        let n = if self.policy == StreamFullPolicy::Loop || !st.pending.is_empty() {
            self.flush_events(
                &rings,
                &mut st,
                &mut w,
                start.then(|| mark(EventId::FLUSH_START, Vec::new())),
            )
        } else {
            // Every name an event of the batch uses was registered before the
            // event was recorded, so before the heads were read.
            let curs: Vec<Cursor<'_>> = rings.iter().map(|r| Cursor::new(r)).collect();
            w.sync_types();
            self.flush_raw(
                curs,
                &mut st,
                &mut w,
                start.then_some((now.as_nanos() as u64, tid)),
            )
        };
        for r in self.rings_snapshot() {
            r.flush_asked.store(false, Relaxed);
        }
        if w.full && self.attr.log_full_policy() == LogFullPolicy::UntilFull {
            // Log UNTIL_FULL: the log ends with its STOP event, and the stream
            // stops with it (the STOP is the last recorded event), one that its
            // own UNTIL_FULL policy suspended too (else this flush resumes it).
            let _ctl = lock(&self.ctl);
            // Before the control lock goes: a `start` then sees the log full.
            self.log_full.store(true, Release);
            if self.running() || self.auto_suspended.load(Acquire) {
                self.auto_suspended.store(false, Release);
                set_running(self.slot, false);
            }
        }
        // Reclaiming frees the rings of exited threads: no reference to one
        // may outlive it.
        drop(rings);
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
        drop(in_flush);
        self.maybe_resume();
        res.map_err(|e| self.failed(e))
    }

    /// A failed write of the log: the status's flush error and an ERROR event.
    fn failed(&self, e: std::io::Error) -> Error {
        let errno = e.raw_os_error().unwrap_or(libc::EIO);
        let _ = self.flush_error.compare_exchange(0, errno, AcqRel, Relaxed);
        control_event(self.slot, EventId::ERROR, &errno.to_le_bytes());
        Error::from_errno("posix_trace_flush", errno)
            .with_hint("check the log file system (space, permissions)")
    }

    /// The validated path (LOOP streams, or events a reader left pending): takes
    /// the events, sorts them and queues them. Returns how many it queued.
    fn flush_events(
        &self,
        rings: &[&Ring],
        st: &mut ReaderState,
        w: &mut LogWriter,
        start: Option<Event>,
    ) -> u64 {
        // Take at most one full sub-buffer of records per sub-buffer (a record is at
        // least a header; each ring may add an OVERFLOW/RESUME pair): what is there
        // and what arrives meanwhile, but writers that keep recording must not keep
        // one flush going forever, with nothing committed and the queued bytes
        // growing without bound.
        let mut budget = st.pending.len() as u64
            + rings.len() as u64 * (self.cap as u64 / RECORD_HEADER as u64 + 2);
        let mut batch = Vec::new();
        while budget > 0 {
            let Some(e) = self.take_from(rings, st) else {
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
        if let Some(m) = start {
            let at = batch.partition_point(|e| e.timestamp <= m.timestamp);
            batch.insert(at, m);
        }
        // Every name an event of the batch uses was registered before it was taken.
        w.sync_types();
        for e in &batch {
            w.push(e);
        }
        n
    }

    /// The in-place path: merges the sub-buffers by timestamp up to the heads
    /// read when the flush began, encoding each record straight into the log's
    /// buffer. `start` is FLUSH_START's time (ns) and the flushing thread's tid.
    /// Returns how many events it queued (OVERFLOW and RESUME included).
    fn flush_raw(
        &self,
        mut curs: Vec<Cursor<'_>>,
        st: &mut ReaderState,
        w: &mut LogWriter,
        mut start: Option<(u64, u32)>,
    ) -> u64 {
        let mut n = 0u64;
        let mut data = Vec::with_capacity(4096);
        let base = curs.iter().filter(|c| c.live()).map(|c| c.ticks).min();
        let conv = TickConv::new(base.unwrap_or_else(clock::ticks));
        loop {
            let mut best: Option<usize> = None;
            for (i, c) in curs.iter().enumerate() {
                if c.live() && best.map_or(true, |b| c.ticks < curs[b].ticks) {
                    best = Some(i);
                }
            }
            let Some(b) = best else { break };
            let c = &mut curs[b];
            let ns = conv.ns(c.ticks);
            if let Some((at, tid)) = start {
                if ns > at {
                    w.push_record(EventId::FLUSH_START.0, false, self.pid, tid, at, &[]);
                    start = None;
                }
            }
            let w0 = c.w0;
            if (w0 >> 30) & 1 != 0 {
                // The writer dropped events just before this one.
                n += self.loss_records(c.r, c.r.gap_lost(c.pos, w0), ns, w);
            }
            let id = w0 as u16;
            let pid = if id < super::ids::USER_BASE && is_wopid_cached(EventId(id)) {
                0
            } else {
                self.pid
            };
            let (trunc, tid) = ((w0 >> 31) & 1 != 0, (w0 >> 32) as u32);
            let dlen = c.r.data_len(w0);
            if dlen <= 8 {
                // The common record: its data is one word, copied without a buffer.
                let word = c.r.first_data_word(c.pos).to_le_bytes();
                w.push_record(id, trunc, pid, tid, ns, &word[..dlen]);
            } else {
                data.clear();
                c.r.data_into(c.pos, w0, &mut data);
                w.push_record(id, trunc, pid, tid, ns, &data);
            }
            n += 1;
            c.next(n);
            w.commit_over(WRITE_STEP);
        }
        for c in &curs {
            c.r.set_tail(c.pos);
            if let Some(t) = c.last {
                c.r.last_taken.store(t, Relaxed);
            }
        }
        if let Some((at, tid)) = start {
            w.push_record(EventId::FLUSH_START.0, false, self.pid, tid, at, &[]);
        }
        // Losses after a sub-buffer's last record are reported at the end once the
        // writer stopped dropping, exited, or the stream stopped; a writer still
        // dropping reports its whole run with the record that ends it (one
        // OVERFLOW per run, however many flushes it spans). Losses past the
        // records this flush took wait for them: the next flush reports them.
        let now = clock::to_ns(clock::ticks());
        let running = self.running();
        for c in &curs {
            // (The orphan mark is stored after the thread's last loss.)
            let ended = !running || c.r.orphan.load(Acquire);
            if ended || !c.r.draining.load(Relaxed) {
                if let Some(lost) = c.r.lost_upto(c.pos) {
                    // Stamped as the record they came after (taken by this
                    // flush, or before it), or not later than
                    // the next one if the writer published one since the flush
                    // began (this flush converts ticks a little differently
                    // from the next one, which writes that record).
                    let last = c.last.or(match c.r.last_taken.load(Relaxed) {
                        0 => None,
                        t => Some(t),
                    });
                    let ns = match (last, c.r.next_ticks(c.pos)) {
                        (Some(t), _) => conv.ns(t),
                        (None, Some(t)) => conv.ns(t).min(now),
                        (None, None) => now,
                    };
                    n += self.loss_records(c.r, lost, ns, w);
                }
            }
        }
        // Signal handlers' events dropped inside the recorder (no sub-buffer
        // lost them: tid 0), as `take` reports them to readers.
        let nested = self.nested_lost.load(Relaxed);
        if nested > st.nested_reported {
            n += self.overflow_records(nested - st.nested_reported, 0, now, w);
            st.nested_reported = nested;
        }
        n
    }

    /// Queues OVERFLOW (count, tid) and RESUME for the losses of `r` up to `lost`
    /// not yet reported; returns how many records it queued.
    fn loss_records(&self, r: &Ring, lost: u64, ns: u64, w: &mut LogWriter) -> u64 {
        let reported = r.lost_reported.load(Relaxed);
        if lost <= reported {
            return 0;
        }
        r.lost_reported.store(lost, Relaxed);
        self.overflow_records(lost - reported, r.tid, ns, w)
    }

    /// Queues OVERFLOW (`count`, `tid`) and RESUME, unless filtered; returns how
    /// many records it queued.
    fn overflow_records(&self, count: u64, tid: u32, ns: u64, w: &mut LogWriter) -> u64 {
        let mut p = [0u8; 12];
        p[..8].copy_from_slice(&count.to_le_bytes());
        p[8..].copy_from_slice(&tid.to_le_bytes());
        let mut n = 0;
        for (id, data) in [(EventId::OVERFLOW, &p[..]), (EventId::RESUME, &[][..])] {
            if !filtered(self.slot, id.0) {
                w.push_record(id.0, false, 0, tid, ns, data);
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use crate::trace::slots::lock;
    use crate::trace::{
        self, local, EventId, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr, TraceLog,
    };
    use std::io::Read;
    use std::time::Duration;

    /// Waits until thread `tid` of this process sleeps in the kernel function
    /// whose name holds `what` (its `wchan`), or, where the kernel does not tell
    /// (`0`), until it sleeps at all.
    pub(crate) fn wait_blocked_in(tid: i32, what: &str) {
        let task = format!("/proc/self/task/{tid}");
        for _ in 0..10_000 {
            let wchan = std::fs::read_to_string(format!("{task}/wchan")).unwrap_or_default();
            if wchan.contains(what) {
                return;
            }
            if wchan.is_empty() || wchan == "0" {
                let stat = std::fs::read_to_string(format!("{task}/stat")).unwrap();
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap()
                    .trim_start()
                    .starts_with('S')
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("thread {tid} never blocked in {what}");
    }

    /// An UNTIL_FULL stream whose APPEND log (a LOOP log cannot be a pipe) is
    /// a pipe of 4 KiB nobody reads yet, flushed only when asked, with `tweak`
    /// applied to its attributes; the pipe's read end.
    fn logged_to_a_pipe(tweak: impl FnOnce(&mut TraceAttr)) -> (Trace, rustix::fd::OwnedFd) {
        let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        rustix::pipe::fcntl_setpipe_size(&wr, 4096).unwrap();
        let mut a = TraceAttr::new();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        a.set_log_full_policy(LogFullPolicy::Append);
        a.set_flush_interval(Duration::from_secs(3600)).unwrap();
        tweak(&mut a);
        (
            Trace::create_with_log(&a, std::fs::File::from(wr)).unwrap(),
            rd,
        )
    }

    /// Two flushes that overlap: the status reports FLUSHING until the last of
    /// them ends, not only until the first does.
    #[test]
    fn flushing_lasts_until_the_last_of_overlapping_flushes() {
        // A log on a pipe nobody reads yet: a flush blocks in its final write,
        // holding the log but no longer the reader lock.
        let (t, rd) = logged_to_a_pipe(|_| {});
        let ev = trace::eventid_open("flush.overlap").unwrap();
        t.start().unwrap();
        for i in 0..8192u32 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.stop().unwrap();
        let gettid = || rustix::thread::gettid().as_raw_nonzero().get();
        let (tx, rx) = std::sync::mpsc::channel();
        let tr = &t;
        let drainer = std::thread::scope(|sc| {
            let tx1 = tx.clone();
            let first = sc.spawn(move || {
                tx1.send(gettid()).unwrap();
                tr.flush()
            });
            wait_blocked_in(rx.recv().unwrap(), "pipe_write"); // the pipe full
            let reader = lock(&tr.s.reader);
            let second = sc.spawn(move || {
                tx.send(gettid()).unwrap();
                tr.flush()
            });
            wait_blocked_in(rx.recv().unwrap(), "futex"); // waits for the reader lock
            let mut rd = std::fs::File::from(rd);
            let drainer = std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while rd.read(&mut buf).is_ok_and(|n| n > 0) {}
            });
            first.join().unwrap().unwrap();
            assert!(
                tr.status().flushing,
                "the second flush has not ended: FLUSHING"
            );
            drop(reader);
            second.join().unwrap().unwrap();
            assert!(!tr.status().flushing, "no flush runs");
            drainer
        });
        t.shutdown().unwrap();
        drainer.join().unwrap(); // the log's end closed the pipe
    }

    /// `posix_trace_trygetnext_event` shall not block: while a flush holds the
    /// reader lock in a write that does not end (a log on a full pipe), a try
    /// read reports no event at once instead of waiting for the flush.
    #[test]
    fn trygetnext_does_not_wait_for_a_flush_in_progress() {
        let (t, rd) = logged_to_a_pipe(|a| {
            a.set_stream_size(16 << 20).unwrap();
            a.set_max_data_size(4096).unwrap();
        });
        let ev = trace::eventid_open("flush.try_busy").unwrap();
        t.start().unwrap();
        // More than one write step of the flush (4 MiB): it writes while it
        // still holds the reader lock.
        let data = [7u8; 4096];
        for _ in 0..1500 {
            trace::event(ev, &data);
        }
        t.stop().unwrap();
        let gettid = || rustix::thread::gettid().as_raw_nonzero().get();
        let (tx, rx) = std::sync::mpsc::channel();
        let tr = &t;
        let drainer = std::thread::scope(|sc| {
            let flush = sc.spawn(move || {
                tx.send(gettid()).unwrap();
                tr.flush()
            });
            wait_blocked_in(rx.recv().unwrap(), "pipe_write"); // the pipe full
            assert!(
                tr.s.reader.try_lock().is_err(),
                "the flush blocks holding the reader lock"
            );
            let (tx, rx) = std::sync::mpsc::channel();
            sc.spawn(move || {
                tx.send(
                    tr.try_getnext()
                        .map(|e| e.map(|e| e.id))
                        .map_err(|e| e.kind()),
                )
                .unwrap();
            });
            // Bounded only so that a read that waits for the flush fails the
            // test instead of hanging it.
            let r = rx.recv_timeout(Duration::from_secs(20));
            let mut rd = std::fs::File::from(rd);
            let drainer = std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while rd.read(&mut buf).is_ok_and(|n| n > 0) {}
            });
            assert_eq!(
                r.expect("trygetnext waited for the flush"),
                Ok(None),
                "no event available while the flush holds the stream"
            );
            flush.join().unwrap().unwrap();
            drainer
        });
        t.shutdown().unwrap();
        drainer.join().unwrap(); // the log's end closed the pipe
    }

    /// A loss that happens after a flush began, past the records it takes,
    /// belongs after the records recorded before it: the flush must not report
    /// it at the end of its own batch, ahead of them (here an UNTIL_FULL
    /// stream fills while a flush runs: its OVERFLOW goes just before its
    /// STOP, after every event kept).
    #[test]
    fn a_loss_past_the_records_of_a_flush_waits_for_them() {
        use super::Cursor;
        let (log, f) = crate::trace::scratch::Scratch::log("late-loss");
        let path = log.path.clone();
        let mut a = crate::trace::scratch::small_attr();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("flush.late_loss").unwrap();
        // Only this test's events (other tests' threads record meanwhile, and
        // would fill the stream).
        crate::trace::scratch::record_only(
            &t,
            &[
                ev,
                EventId::START,
                EventId::STOP,
                EventId::OVERFLOW,
                EventId::RESUME,
            ],
        );
        t.start().unwrap();
        let tid = crate::sys::tid::current();
        {
            // A flush that began here: it takes what the sub-buffers hold now.
            let mut st = lock(&t.s.reader);
            let mut w = lock(t.s.log.as_ref().unwrap());
            let rings = t.s.rings_snapshot();
            let curs: Vec<Cursor<'_>> = rings.iter().map(|r| Cursor::new(r)).collect();
            // Meanwhile, this thread fills the stream until it loses an event.
            let mut i = 0u64;
            while t.s.running() {
                trace::event(ev, &i.to_le_bytes());
                i += 1;
            }
            t.s.flush_raw(curs, &mut st, &mut w, None);
        }
        t.shutdown().unwrap();
        let events: Vec<_> = TraceLog::open(&path)
            .unwrap()
            .events()
            .map(|e| e.unwrap())
            .filter(|e| e.tid == tid)
            .collect();
        std::fs::remove_file(&path).unwrap();
        let ids: Vec<EventId> = events.iter().map(|e| e.id).collect();
        let at = ids.iter().position(|&i| i == EventId::OVERFLOW).unwrap();
        assert!(
            ids[..at].iter().filter(|&&i| i == ev).count() > 100,
            "the OVERFLOW comes after the events kept: {:?}",
            &ids[..at]
        );
        assert_eq!(
            ids[at..at + 3],
            [EventId::OVERFLOW, EventId::RESUME, EventId::STOP],
            "then its STOP"
        );
        assert!(ids[at + 3..].iter().all(|&i| i != ev));
        assert_eq!(events[at].data[..8], 1u64.to_le_bytes());
    }

    /// A FLUSH writer that exits while its sub-buffer is draining never writes
    /// the record that would end its run of drops: a flush reports the run
    /// once the thread is gone, and the sub-buffer is then unmapped, rather
    /// than both waiting for the stream to stop.
    #[test]
    fn the_losses_of_a_writer_that_exited_draining_are_reported() {
        let (log, f) = crate::trace::scratch::Scratch::log("exit-draining");
        let path = log.path.clone();
        let a = crate::trace::scratch::small_attr();
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("flush.exit_draining").unwrap();
        // Only this test's events (other tests' threads record meanwhile).
        crate::trace::scratch::record_only(&t, &[ev, EventId::OVERFLOW, EventId::RESUME]);
        t.start().unwrap();
        let (tid, lost) = {
            // Holding the reader lock keeps the flusher out: the thread fills
            // its sub-buffer, drops events, and exits while draining.
            let _st = lock(&t.s.reader);
            let s = &t.s;
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    for i in 0..2000u64 {
                        trace::event(ev, &i.to_le_bytes());
                    }
                    let tid = crate::sys::tid::current();
                    let rings = s.rings_snapshot();
                    let r = rings.iter().find(|r| r.tid == tid).unwrap();
                    assert!(r.draining.load(std::sync::atomic::Ordering::Relaxed));
                    (tid, r.lost.load(std::sync::atomic::Ordering::Relaxed))
                })
                .join()
                .unwrap()
            })
        };
        assert!(lost > 0);
        t.flush().unwrap();
        let gone = lock(&t.s.rings).iter().all(|r| r.tid != tid);
        // The log so far (the stream still runs: it ends without its end record).
        let mut l = TraceLog::open(&path).unwrap();
        let logged: Vec<_> = std::iter::from_fn(|| l.next_event().ok().flatten()).collect();
        t.stop().unwrap();
        t.shutdown().unwrap();
        std::fs::remove_file(&path).unwrap();
        let reported: u64 = logged
            .iter()
            .filter(|e| e.id == EventId::OVERFLOW && e.tid == tid)
            .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
            .sum();
        assert_eq!(reported, lost, "the exited thread's losses are in the log");
        assert!(gone, "its sub-buffer is unmapped once read");
    }

    /// Losses a flush reports at the end of its batch come before the next
    /// record of their thread, which the writer may have published while the
    /// flush ran (the flush frees space as it goes): their timestamp must not
    /// be later than that record's, or readers sorting by time put the
    /// OVERFLOW after it.
    #[test]
    fn losses_at_the_end_of_a_flush_are_not_later_than_the_next_record() {
        use super::Cursor;
        let (log, f) = crate::trace::scratch::Scratch::log("loss-ts");
        let path = log.path.clone();
        let a = crate::trace::scratch::small_attr();
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("flush.loss_ts").unwrap();
        crate::trace::scratch::record_only(&t, &[ev, EventId::OVERFLOW, EventId::RESUME]);
        let tid = crate::sys::tid::current();
        {
            let mut st = lock(&t.s.reader);
            let mut w = lock(t.s.log.as_ref().unwrap());
            t.start().unwrap();
            trace::event(ev, &[]); // maps this thread's sub-buffer
            let rings = t.s.rings_snapshot();
            let r = *rings.iter().find(|r| r.tid == tid).unwrap();
            let mut i = 0u64;
            while r.lost.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                trace::event(ev, &i.to_le_bytes());
                i += 1;
            }
            // A flush begins; it frees the space of what it takes, and the
            // writer records again, ending its run of drops.
            let curs: Vec<Cursor<'_>> = rings.iter().map(|r| Cursor::new(r)).collect();
            r.set_tail(r.head.0.load(std::sync::atomic::Ordering::Acquire));
            trace::event(ev, &i.to_le_bytes());
            t.s.flush_raw(curs, &mut st, &mut w, None);
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
        let evs: Vec<_> = TraceLog::open(&path)
            .unwrap()
            .events()
            .map(|e| e.unwrap())
            .filter(|e| e.tid == tid)
            .collect();
        std::fs::remove_file(&path).unwrap();
        let at = evs.iter().position(|e| e.id == EventId::OVERFLOW).unwrap();
        assert_eq!(evs[at + 2].id, ev, "the record after the losses");
        assert!(
            evs.windows(2).all(|w| w[0].timestamp <= w[1].timestamp),
            "OVERFLOW at {:?}, the next record at {:?}",
            evs[at].timestamp,
            evs[at + 2].timestamp
        );
    }

    /// A signal handler's event dropped inside the recorder (counted in the
    /// stream's nested losses) reaches a log as an OVERFLOW, as a reader of the
    /// stream gets it, also through the in-place flush of a FLUSH stream.
    #[test]
    fn a_nested_loss_reaches_the_log_as_an_overflow() {
        let (log, f) = crate::trace::scratch::Scratch::log("nested-loss");
        let path = log.path.clone();
        let t = Trace::create_with_log(&TraceAttr::new(), f).unwrap();
        let ev = trace::eventid_open("flush.nested_loss").unwrap();
        t.start().unwrap();
        trace::event(ev, &[1]); // maps this thread's sub-buffer
        local::as_nested(|| trace::event(ev, &[2]));
        trace::event(ev, &[3]);
        t.stop().unwrap();
        t.flush().unwrap();
        t.shutdown().unwrap();
        let events: Vec<_> = TraceLog::open(&path).unwrap().events().collect();
        std::fs::remove_file(&path).unwrap();
        let lost: u64 = events
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|e| e.id == EventId::OVERFLOW)
            .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
            .sum();
        assert_eq!(
            lost, 1,
            "the handler's dropped event is reported in the log"
        );
    }
}
