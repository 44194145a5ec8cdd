//! Reading a stream's events through its handle: `posix_trace_getnext_event`,
//! `_timedgetnext_event`, `_trygetnext_event`.

use std::sync::atomic::Ordering::*;
use std::sync::TryLockError;
use std::time::{Duration, Instant};

use super::event::{Event, EventInfo};
use super::handle::Trace;
use super::slots::lock;
use crate::{Error, Result};

/// What one look at a stream found.
enum Look {
    Event(Event),
    Empty,
    /// The reader lock is held elsewhere (a flush).
    Busy,
}

impl Trace {
    /// `posix_trace_trygetnext_event`: the oldest unread event, or `None` at once.
    ///
    /// It never blocks: while a flush holds the stream's reader lock (it keeps
    /// it while it encodes and writes the log, as long as the log's file system
    /// takes), it reports no event available, as POSIX lets it. Use
    /// [`events`](Self::events) or [`getnext`](Self::getnext) to wait for the
    /// flush instead.
    ///
    /// # References
    /// - [`posix_trace_trygetnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_trygetnext_event")]
    pub fn try_getnext(&self) -> Result<Option<Event>> {
        match self.look(false)? {
            Look::Event(e) => Ok(Some(e)),
            Look::Empty | Look::Busy => Ok(None),
        }
    }

    /// One look for the oldest unread event. With `wait_lock` false, a reader
    /// lock held elsewhere (a flush holds it while it encodes and writes, as
    /// long as the log's file system takes) is `Busy` instead of a wait.
    fn look(&self, wait_lock: bool) -> Result<Look> {
        self.check_owner("posix_trace_trygetnext_event")?;
        let e = {
            let mut st = if wait_lock {
                lock(&self.s.reader)
            } else {
                match self.s.reader.try_lock() {
                    Ok(g) => g,
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => return Ok(Look::Busy),
                }
            };
            let e = self.s.take(&mut st);
            if e.is_none() {
                self.s.reclaim();
            }
            e
        };
        // Also when empty: a try read that found the lock busy leaves the
        // resume to the holder, which may be a read that found nothing.
        if wait_lock {
            self.s.maybe_resume();
        } else {
            self.s.try_resume();
        }
        Ok(match e {
            Some(e) => Look::Event(e),
            None => Look::Empty,
        })
    }

    /// `posix_trace_getnext_event`: the oldest unread event; blocks while the stream
    /// is running and has none. `None` once it is suspended and empty.
    ///
    /// Events come merged from the per-thread sub-buffers by timestamp. A stream with
    /// a log is consumed by its flusher as well: read such a stream's events from
    /// the log ([`TraceLog`](super::TraceLog)), or use a second stream without a log.
    ///
    /// # References
    /// - [`posix_trace_getnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html)
    #[doc(alias = "posix_trace_getnext_event")]
    pub fn getnext(&self) -> Result<Option<Event>> {
        self.wait_next(None)
    }

    /// `posix_trace_timedgetnext_event`: like [`getnext`](Self::getnext) with an
    /// absolute deadline.
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the deadline passes with no event.
    ///
    /// # References
    /// - [`posix_trace_timedgetnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html)
    #[doc(alias = "posix_trace_timedgetnext_event")]
    pub fn timed_getnext(&self, deadline: Instant) -> Result<Option<Event>> {
        self.wait_next(Some(deadline))
    }

    /// `posix_trace_timedgetnext_event` with a timeout relative to now. A timeout
    /// too large to express as a deadline (`Duration::MAX`, years) means no limit,
    /// as [`getnext`](Self::getnext).
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the timeout passes with no event.
    #[doc(alias = "posix_trace_timedgetnext_event")]
    pub fn timed_getnext_for(&self, timeout: Duration) -> Result<Option<Event>> {
        self.wait_next(Instant::now().checked_add(timeout))
    }

    /// `posix_trace_timedgetnext_event` with the C API's CLOCK_REALTIME absolute
    /// deadline (a deadline in the past polls once; one too far ahead to express
    /// on the monotonic clock means no limit).
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the deadline passes with no event.
    #[doc(alias = "posix_trace_timedgetnext_event")]
    pub fn timed_getnext_realtime(&self, deadline: std::time::SystemTime) -> Result<Option<Event>> {
        let left = deadline
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        self.timed_getnext_for(left)
    }

    fn wait_next(&self, deadline: Option<Instant>) -> Result<Option<Event>> {
        self.wait_next_napping(deadline, &mut |nap| {
            std::thread::sleep(nap);
            true
        })
    }

    /// [`getnext`](Self::getnext) (no `deadline`) or
    /// [`timed_getnext`](Self::timed_getnext), whose waits between two looks
    /// are `nap(d)` calls: a nap that returns false (a signal handler ran)
    /// ends the read with `Interrupted` (EINTR), no event taken. The C
    /// library's reads nap with the program's signal mask (POSIX: EINTR, "the
    /// call had no effect").
    #[doc(hidden)]
    pub fn wait_next_napping(
        &self,
        deadline: Option<Instant>,
        nap_fn: &mut dyn FnMut(Duration) -> bool,
    ) -> Result<Option<Event>> {
        // With a deadline, never wait for the reader lock: a flush can hold it
        // for as long as its writes take, past any deadline.
        let wait_lock = deadline.is_none();
        let mut nap = Duration::from_micros(20);
        loop {
            match self.look(wait_lock)? {
                Look::Event(e) => return Ok(Some(e)),
                Look::Empty if !self.s.running() && !self.s.auto_suspended.load(Acquire) => {
                    // Recheck: an event may have landed between the read and the check.
                    match self.look(wait_lock)? {
                        Look::Event(e) => return Ok(Some(e)),
                        Look::Empty => return Ok(None),
                        Look::Busy => {}
                    }
                }
                Look::Empty | Look::Busy => {}
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
            if !nap_fn(nap) {
                return Err(Error::from_errno("posix_trace_getnext_event", libc::EINTR)
                    .with_kind(crate::ErrorKind::Interrupted)
                    .with_message("a signal handler ran while the read waited"));
            }
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }

    /// Reads into a caller's buffer without allocating the event's data
    /// (`posix_trace_trygetnext_event` with `data_ptr`/`num_bytes`).
    ///
    /// # References
    /// - [`posix_trace_trygetnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_trygetnext_event")]
    pub fn getnext_into(&self, buf: &mut [u8]) -> Result<Option<EventInfo>> {
        Ok(self.try_getnext()?.map(|e| {
            let n = e.data.len().min(buf.len());
            buf[..n].copy_from_slice(&e.data[..n]);
            EventInfo {
                id: e.id,
                pid: e.pid,
                tid: e.tid,
                thread: e.thread,
                timestamp: e.timestamp,
                truncated: e.truncated || n < e.data.len(),
                truncated_read: n < e.data.len(),
                prog_address: e.prog_address,
                data_len: n,
            }
        }))
    }

    /// An iterator over the unread events, oldest first, ending when none is left.
    /// It does not wait for new events, but it does wait for a flush that holds
    /// the stream's reader lock (unlike [`try_getnext`](Self::try_getnext)), so
    /// that it never ends while unread events remain.
    ///
    /// # References
    /// - [`posix_trace_trygetnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_trygetnext_event")]
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        std::iter::from_fn(move || match self.look(true) {
            Ok(Look::Event(e)) => Some(e),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Trace, TraceAttr};
    use crate::ErrorKind;

    /// A flush holds the reader lock while it encodes and writes the log (as
    /// long as the log's file system takes): a timed read in the meantime ends
    /// at its deadline instead of waiting for the lock past it.
    #[test]
    fn timed_getnext_ends_at_its_deadline_while_the_reader_lock_is_held() {
        let t = Trace::create(&TraceAttr::new()).unwrap();
        t.start().unwrap();
        let held = lock(&t.s.reader);
        let (tx, rx) = std::sync::mpsc::channel();
        let tr = &t;
        std::thread::scope(|sc| {
            sc.spawn(move || {
                let r = tr.timed_getnext(Instant::now() + Duration::from_millis(20));
                tx.send(r.map_err(|e| e.kind())).unwrap();
            });
            // Bounded only so that a read that waits for the lock fails the
            // test instead of hanging it.
            let r = rx.recv_timeout(Duration::from_secs(20));
            drop(held);
            assert_eq!(
                r.expect("the timed read waited for the lock past its deadline"),
                Err(ErrorKind::TimedOut)
            );
        });
        t.shutdown().unwrap();
    }
}
