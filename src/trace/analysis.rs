//! Reading a log for analysis: `posix_trace_open`, `posix_trace_rewind`,
//! `posix_trace_close`.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use super::attr::TraceAttr;
use super::event::Event;
use super::ids::{EventId, EventType, ID_SPACE};
use super::log::{self, LogStatus};
use super::log_block::BlockReader;
use super::log_read::{self, Cur, LogWaiter, RecordReader};
use crate::{Error, ErrorKind, Result};

/// A trace log opened for analysis (`posix_trace_open`): attributes, event types and
/// the events, oldest first.
///
/// A log cut at any byte reads back every complete record, then
/// [`next_event`](Self::next_event) returns an error of kind
/// [`ErrorKind::Truncated`]; a damaged record gives [`ErrorKind::Corrupt`].
///
/// ```no_run
/// use posixrt::trace::TraceLog;
/// let mut log = TraceLog::open("philosophers.trace")?;
/// while let Some(ev) = log.next_event()? {
///     println!("{} {}", ev.timestamp.as_nanos(), log.name(ev.id).unwrap_or("?"));
/// }
/// # Ok::<(), posixrt::Error>(())
/// ```
pub struct TraceLog {
    reader: RecordReader,
    /// The event block being read, if any.
    block: Option<BlockReader>,
    attr: Option<TraceAttr>,
    pid: u32,
    types: Vec<Option<EventType>>,
    status: Option<LogStatus>,
    complete: bool,
    done: bool,
}

impl std::fmt::Debug for TraceLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceLog")
            .field("attr", &self.attr)
            .field("complete", &self.complete)
            .finish()
    }
}

impl TraceLog {
    /// `posix_trace_open` on a path.
    ///
    /// # Errors
    /// `NotFound`/`PermissionDenied` from `open`; `InvalidInput` for a directory;
    /// `Corrupt` for a file that is not a posixrt log, or one of a later format than
    /// this build reads (formats 1 to 3); `Truncated` when even the 16-byte header is cut.
    ///
    /// # References
    /// - [`posix_trace_open`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_close.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_open")]
    pub fn open(path: impl AsRef<Path>) -> Result<TraceLog> {
        let p = path.as_ref();
        let f = File::open(p).map_err(|e| {
            Error::from_errno("open", e.raw_os_error().unwrap_or(libc::EIO))
                .with_message(format!("{}", p.display()))
        })?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(Error::from_errno("posix_trace_open", libc::EISDIR)
                .with_kind(ErrorKind::InvalidInput)
                .with_message(format!("{} is a directory, not a trace log", p.display()))
                .with_hint("pass the log file written by Trace::create_with_log"));
        }
        TraceLog::from_file(f)
    }

    /// `posix_trace_open` on an open file, read from its start.
    ///
    /// A file that cannot seek (a pipe, as in `cat log | reader`, a FIFO the
    /// log is written to, a socket) is read once, from where it is, as the
    /// bytes come: opening it reads the records up to the first event (so it
    /// waits for the writer until then), which gives the attributes and the
    /// event types named so far; the types named later, the final
    /// [`status`](Self::status) and [`is_complete`](Self::is_complete) are
    /// known once [`next_event`](Self::next_event) has read that far, and
    /// [`rewind`](Self::rewind) fails with `ESPIPE` once an event was read.
    /// Its writer's first bytes that are not a log header's are refused as
    /// soon as they come; a writer that closes the pipe before the header is
    /// whole ends the open with `Truncated`.
    ///
    /// # Errors
    /// As [`open`](Self::open); the error of `lseek` for a file that can
    /// seek but fails to (not `ESPIPE`).
    ///
    /// # References
    /// - [`posix_trace_open`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_close.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_open")]
    pub fn from_file(f: File) -> Result<TraceLog> {
        Self::from_file_waiting(f, &mut log_read::wait_for_writer)
    }

    /// [`from_file`](Self::from_file) whose waits for the writer of a log
    /// read from a pipe are `wait(waiter)` calls: one that returns an error
    /// (`Interrupted` when a signal handler ran) ends the open with that
    /// error, nothing opened; one that returns early is harmless (the open
    /// looks again). Once the open has taken bytes of the log from the pipe
    /// (its header, or part of it), an `Interrupted` wait no longer ends it:
    /// it waits again, since the bytes cannot go back and a later open of
    /// the pipe would find no header. For the C library's
    /// `posix_trace_open`, whose wait lets the program's signals through.
    #[doc(hidden)]
    pub fn from_file_waiting(
        f: File,
        wait: &mut dyn FnMut(&LogWaiter) -> Result<()>,
    ) -> Result<TraceLog> {
        let reader = RecordReader::open(f, wait)?;
        let mut l = TraceLog {
            reader,
            block: None,
            attr: None,
            pid: 0,
            types: vec![None; ID_SPACE],
            status: None,
            complete: false,
            done: false,
        };
        if !l.reader.seekable() {
            // A pipe is read once, as it comes: the service records before the
            // first event (the attributes, the types named when the log began)
            // are read ahead with the first event record, and the others taken
            // in as `next_event` reaches them.
            // The header was taken from the pipe: a signal handler no
            // longer ends the open (see `wait_taken`).
            let mut wait = |w: &LogWaiter| log_read::wait_taken(&mut *wait, w);
            while let Some(body) = l.reader.read_ahead(&mut wait)? {
                if matches!(body[0], log::K_EVENT | log::K_EVENT_C | log::K_BLOCK)
                    || l.service(&body).is_err()
                {
                    break;
                }
            }
            return Ok(l);
        }
        // Pre-scan for the service records; stop quietly at the first bad record
        // (next_event reports it in order).
        while let Ok(Some(body)) = l.reader.next() {
            if l.service(&body).is_err() {
                break;
            }
        }
        l.rewind()?;
        Ok(l)
    }

    /// Takes in a service record (and passes over event records); an error for
    /// one that does not parse or is of no known kind.
    fn service(&mut self, body: &[u8]) -> Result<()> {
        let mut c = Cur(&body[1..]);
        match body[0] {
            log::K_ATTR => {
                let (a, pid) = log_read::parse_attr(&mut c)?;
                self.attr = Some(a);
                self.pid = pid;
            }
            log::K_TYPE => {
                let t = log_read::parse_type(&mut c)?;
                let i = t.id.raw() as usize;
                self.types[i] = Some(t);
            }
            log::K_STATUS => self.status = Some(log_read::parse_status(&mut c)?),
            log::K_END => self.complete = true,
            log::K_EVENT | log::K_EVENT_C | log::K_BLOCK => {}
            k => return Err(log_read::corrupt(format!("unknown record kind {k}"))),
        }
        Ok(())
    }

    /// `posix_trace_rewind`: back to the first event.
    ///
    /// # Errors
    /// A log read from a pipe or socket (see [`from_file`](Self::from_file))
    /// cannot go back once an event was read: the error has errno `ESPIPE`,
    /// and reading goes on where it was.
    ///
    /// # References
    /// - [`posix_trace_rewind`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_close.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_rewind")]
    pub fn rewind(&mut self) -> Result<()> {
        // The reader first: a log read from a pipe that cannot go back goes on
        // where it was (in the middle of a block, say).
        self.reader.rewind()?;
        self.done = false;
        self.block = None;
        Ok(())
    }

    /// `posix_trace_close` (dropping does the same).
    ///
    /// # References
    /// - [`posix_trace_close`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_close.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_close")]
    pub fn close(self) {}

    /// The stream's attributes, if the log got as far as recording them.
    ///
    /// # References
    /// - [`posix_trace_get_attr`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_get_attr.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_get_attr")]
    pub fn attr(&self) -> Option<&TraceAttr> {
        self.attr.as_ref()
    }

    /// The traced process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The final status record (absent in a cut log).
    pub fn status(&self) -> Option<LogStatus> {
        self.status
    }

    /// Whether the log ends with its shutdown record.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The event types named in the log, in id order.
    pub fn event_types(&self) -> impl Iterator<Item = &EventType> {
        self.types.iter().flatten()
    }

    /// The type of an id.
    pub fn event_type(&self, id: EventId) -> Option<&EventType> {
        self.types.get(id.raw() as usize)?.as_ref()
    }

    /// The name of an id (`posix_trace_eventid_get_name`), as held: a C name
    /// that is not UTF-8 is NUL and Latin-1 text (see
    /// [`eventid_name`](super::eventid_name)); show it with
    /// [`export::shown_name`](super::export::shown_name).
    pub fn name(&self, id: EventId) -> Option<&str> {
        self.event_type(id).map(|t| t.name.as_str())
    }

    /// `posix_trace_getnext_event`: the next event; `Ok(None)` after the shutdown
    /// record.
    ///
    /// # Errors
    /// `Truncated` when the log ends inside a record or without its shutdown record
    /// (returned once; then `Ok(None)`); `Corrupt` for a checksum mismatch, a
    /// record that does not parse, or one of a kind that the log's format
    /// version does not have.
    ///
    /// # References
    /// - [`posix_trace_getnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_getnext_event")]
    pub fn next_event(&mut self) -> Result<Option<Event>> {
        if self.done {
            return Ok(None);
        }
        loop {
            if let Some(b) = &mut self.block {
                match b.next(self.pid) {
                    Some(Ok(e)) => return Ok(Some(e)),
                    Some(Err(e)) => {
                        self.block = None;
                        self.done = true;
                        return Err(e);
                    }
                    None => self.block = None,
                }
            }
            let body = match self.reader.next() {
                Ok(Some(b)) => b,
                Ok(None) => {
                    self.done = true;
                    return Err(Error::new(
                        ErrorKind::Truncated,
                        "posix_trace_getnext_event",
                        "log cut cleanly after its last complete record (no shutdown record)",
                    )
                    .with_hint(
                        "the writer was killed or is still running; every record up to the cut was read",
                    ));
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            // A record that passed its checksum but does not parse was written
            // wrong: the reader stops at it, as at a bad checksum.
            let parsed = match body[0] {
                log::K_BLOCK => match BlockReader::new(body) {
                    Ok(b) => {
                        self.block = Some(b);
                        continue;
                    }
                    Err(e) => Err(e),
                },
                log::K_EVENT_C => log_read::parse_compact(&mut Cur(&body[1..]), self.pid),
                log::K_EVENT => log_read::parse_event(&mut Cur(&body[1..])),
                log::K_END => {
                    // Known at open for a file that seeks, here for a pipe.
                    self.complete = true;
                    self.done = true;
                    return Ok(None);
                }
                _ => match self.service(&body) {
                    Ok(()) => continue,
                    Err(e) => Err(e),
                },
            };
            self.done = parsed.is_err();
            return parsed.map(Some);
        }
    }

    /// True if [`next_event`](Self::next_event) returns without waiting for
    /// the log's writer: it has taken in what the next event needs (up to
    /// the event, the end of the log or an error), or the file can seek (its
    /// reads wait for no writer). False when a log read from a pipe needs
    /// bytes its writer has not written, or that were not taken in yet (see
    /// [`read_available`](Self::read_available)): `next_event` would wait
    /// for them (see [`waiter`](Self::waiter)).
    pub fn next_is_ready(&self) -> bool {
        self.done
            || self.block.as_ref().is_some_and(|b| b.has_more())
            || self.reader.next_is_ready()
    }

    /// For a log read from a pipe, a FIFO or a socket: takes in, without
    /// waiting, what its writer has written so far (a record that came in
    /// part is kept for a later call), then returns
    /// [`next_is_ready`](Self::next_is_ready). Always true for a file that
    /// can seek.
    ///
    /// With a [`waiter`](Self::waiter), a reader that shares the log waits
    /// for its writer without the log: take the log, call this, and while it
    /// is false let the log go and [`wait`](LogWaiter::wait) (the pipe turns
    /// readable when more comes).
    pub fn read_available(&mut self) -> bool {
        if self.next_is_ready() {
            return true;
        }
        self.reader.pull();
        self.next_is_ready()
    }

    /// For a log read from a pipe, a FIFO or a socket: a [`LogWaiter`], to
    /// wait for its writer without the log (another thread may use it
    /// meanwhile). `None` for a file that can seek.
    pub fn waiter(&self) -> Option<LogWaiter> {
        self.reader.waiter()
    }

    /// [`next_event`](Self::next_event) that waits for a log read from a pipe
    /// at most until `deadline` (a file that can seek never waits), also
    /// for the rest of a record that its writer wrote in parts. A deadline
    /// already past takes in what came and returns the event if it is whole,
    /// without waiting.
    ///
    /// # Errors
    /// `TimedOut` (ETIMEDOUT) when the deadline passes and the writer has
    /// not written what the next event needs (nothing was lost: the part of
    /// a record that came is kept, and a later call reads the event); else
    /// as [`next_event`](Self::next_event).
    ///
    /// # References
    /// - [`posix_trace_timedgetnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_timedgetnext_event")]
    pub fn timed_next_event(&mut self, deadline: Instant) -> Result<Option<Event>> {
        if let Some(w) = self.waiter() {
            while !self.read_available() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Error::from_errno(
                        "posix_trace_timedgetnext_event",
                        libc::ETIMEDOUT,
                    )
                    .with_message("the log's writer wrote no event before the deadline"));
                }
                w.wait(Some(left))?;
            }
        }
        self.next_event()
    }

    /// [`timed_next_event`](Self::timed_next_event) with a timeout relative
    /// to now (one too large to express as a deadline means no limit).
    ///
    /// # Errors
    /// As [`timed_next_event`](Self::timed_next_event).
    #[doc(alias = "posix_trace_timedgetnext_event")]
    pub fn next_event_timeout(&mut self, timeout: Duration) -> Result<Option<Event>> {
        match Instant::now().checked_add(timeout) {
            Some(d) => self.timed_next_event(d),
            None => self.next_event(),
        }
    }

    /// An iterator over the events; yields the truncation error (if any) last.
    ///
    /// # References
    /// - [`posix_trace_getnext_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_getnext_event.html) (POSIX.1-2008)
    #[doc(alias = "posix_trace_getnext_event")]
    pub fn events(&mut self) -> impl Iterator<Item = Result<Event>> + '_ {
        std::iter::from_fn(move || self.next_event().transpose())
    }
}
