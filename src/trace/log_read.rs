//! The log reader: framed records with their checksums, and the parsers of each
//! record kind.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::attr::{Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr};
use super::crc::crc32c;
use super::event::Event;
use super::ids::{EventId, EventType};
use super::log::{
    compact_truncated, kind_version, LogStatus, BLOCK_HEAD, C_NO_PID, FILE_HEADER, K_ATTR, K_BLOCK,
    K_STATUS, K_TYPE, MAGIC, MAX_RECORD, VERSION,
};
use super::log_pipe::{End, PipeBuf};
use super::schema::FieldType;
use crate::{Error, ErrorKind, Result};

/// Reads framed records from a log.
///
/// A log on a descriptor that cannot seek (a pipe, a FIFO, a socket: `cat log
/// | reader`) is read once, as it comes: the records read ahead at open
/// ([`read_ahead`](Self::read_ahead)) are given back first, and
/// [`rewind`](Self::rewind) works only while none was taken. Its bytes are
/// taken in without waiting ([`PipeBuf`]); a read that needs bytes not there
/// yet waits for them with the [`Wait`] it is given, between two looks.
pub(crate) struct RecordReader {
    src: Src,
    /// The file, shared with the [`LogWaiter`]s of a pipe.
    file: Arc<File>,
    /// The format version in the header.
    version: u16,
    /// Records read ahead and not taken yet, in order, up to the end or the
    /// error that stopped the read-ahead, if any.
    ahead: VecDeque<Result<Option<Vec<u8>>>>,
    /// A file that cannot seek: a record was taken (it cannot be read again).
    taken: bool,
}

/// Where a [`RecordReader`] reads from.
enum Src {
    /// A file that can seek, read through a buffer (its reads wait for no
    /// writer).
    Seek(BufReader<Shared>),
    /// A file that cannot seek: its bytes as they come.
    Pipe(PipeBuf),
}

/// How a read of a log from a pipe waits for its writer when it needs bytes
/// that have not come: it returns once the pipe may have some (returning
/// early is harmless: the reader looks again), or with the error that ends
/// the read (`Interrupted` when a signal handler ran, for the C library).
pub(crate) type Wait<'a> = &'a mut dyn FnMut(&LogWaiter) -> Result<()>;

/// The [`Wait`] of the Rust API: as long as it takes, signal handlers
/// running meanwhile.
pub(crate) fn wait_for_writer(w: &LogWaiter) -> Result<()> {
    w.wait(None).map(drop)
}

/// `wait`, for an open that has taken bytes from the pipe: a wait that a
/// signal handler ended (`Interrupted`) waits again. The bytes cannot go
/// back into the pipe, so an open ended then would leave a pipe that no
/// later open can read (its header gone); as `read(2)`, which returns what
/// it took rather than `EINTR`, the open goes on.
pub(crate) fn wait_taken(wait: Wait<'_>, w: &LogWaiter) -> Result<()> {
    loop {
        match wait(w) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// The log's file, read through a shared reference (a [`LogWaiter`] polls it).
struct Shared(Arc<File>);

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl Seek for Shared {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        (&*self.0).seek(pos)
    }
}

/// A record that [`TraceLog::next_event`](super::TraceLog::next_event) takes
/// in and passes over to read the next one: a service record that does not
/// end the log, or an event block without events.
fn passed_over(body: &[u8]) -> bool {
    matches!(body[0], K_ATTR | K_TYPE | K_STATUS) || body[0] == K_BLOCK && body.len() == BLOCK_HEAD
}

fn truncated(what: &str) -> Error {
    Error::new(ErrorKind::Truncated, "posix_trace_getnext_event", format!("log cut short {what}"))
        .with_hint("the log was cut (crash or copy in progress); every complete record before the cut was read")
}

pub(crate) fn corrupt(what: String) -> Error {
    Error::new(ErrorKind::Corrupt, "posix_trace_getnext_event", what)
        .with_hint("the log is damaged or not a posixrt trace log")
}

/// Reads as many bytes as available up to `buf.len()`; returns the count.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::from_errno(
                    "read",
                    e.raw_os_error().unwrap_or(libc::EIO),
                ))
            }
        }
    }
    Ok(got)
}

/// What the bytes at the start of a buffer hold.
enum Frame<'a> {
    /// Part of a record (or nothing): more bytes are needed.
    Part,
    /// A record header with a length out of range.
    BadLen(usize),
    /// A whole record: its checksum and body.
    Whole(u32, &'a [u8]),
}

fn frame_at(b: &[u8]) -> Frame<'_> {
    if b.len() < 8 {
        return Frame::Part;
    }
    let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let crc = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    if len == 0 || len > MAX_RECORD {
        return Frame::BadLen(len);
    }
    match b.get(8..8 + len) {
        Some(body) => Frame::Whole(crc, body),
        None => Frame::Part,
    }
}

fn bad_len(len: usize) -> Error {
    corrupt(format!("record length {len} out of range"))
}

/// A record body read whole, checked against its checksum and the log's
/// format `version`.
fn checked(body: Vec<u8>, crc: u32, version: u16) -> Result<Vec<u8>> {
    if crc32c(&body) != crc {
        return Err(corrupt("record checksum mismatch".into()));
    }
    // A kind of a later format than the header's: the header or the record
    // is damaged (no writer of that version wrote it).
    let needs = kind_version(body[0]);
    if needs > version {
        return Err(corrupt(format!(
            "record of kind {} needs format version {needs}, the log header says version {version}",
            body[0]
        )));
    }
    Ok(body)
}

impl RecordReader {
    /// Opens a log and checks its header: from its start if the file can
    /// seek, else from where the descriptor is (a pipe's next byte), waiting
    /// for the header's bytes with `wait` (once some came, a wait a signal
    /// handler ended waits again: see [`wait_taken`]). A header whose first
    /// bytes are not the magic is refused as soon as they come (its writer
    /// need not end first).
    ///
    /// # Errors
    /// `Corrupt` for a bad magic, checksum or version; `Truncated` when the
    /// file ends (its writer closed it) before the header is whole; the
    /// error of `wait`, or of the read.
    pub(crate) fn open(mut file: File, wait: Wait<'_>) -> Result<RecordReader> {
        let seekable = match file.seek(SeekFrom::Start(0)) {
            Ok(_) => true,
            Err(e) if e.raw_os_error() == Some(libc::ESPIPE) => false,
            Err(e) => {
                return Err(Error::from_errno(
                    "lseek",
                    e.raw_os_error().unwrap_or(libc::EIO),
                ))
            }
        };
        let file = Arc::new(file);
        let mut h = [0u8; FILE_HEADER];
        let (src, n) = if seekable {
            let mut r = BufReader::with_capacity(64 << 10, Shared(file.clone()));
            let n = read_full(&mut r, &mut h)?;
            (Src::Seek(r), n)
        } else {
            let mut p = PipeBuf::new(file.clone());
            let w = LogWaiter(file.clone());
            loop {
                let b = p.bytes();
                let k = b.len().min(MAGIC.len());
                if b[..k] != MAGIC[..k] || b.len() >= FILE_HEADER || p.end() != End::Open {
                    break;
                }
                if !p.pull() {
                    if p.bytes().is_empty() {
                        wait(&w)?;
                    } else {
                        wait_taken(&mut *wait, &w)?;
                    }
                }
            }
            let n = p.bytes().len().min(FILE_HEADER);
            h[..n].copy_from_slice(&p.bytes()[..n]);
            p.consume(n);
            if let End::Failed(errno) = p.end() {
                if n < FILE_HEADER && h[..n.min(8)] == MAGIC[..n.min(8)] {
                    return Err(Error::from_errno("read", errno));
                }
            }
            (Src::Pipe(p), n)
        };
        if n >= 8 && h[..8] != MAGIC || n < 8 && h[..n] != MAGIC[..n] {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "posix_trace_open",
                "not a posixrt trace log (bad magic)",
            )
            .with_hint("pass a log written by posixrt::trace (Trace::create_with_log)"));
        }
        if n < FILE_HEADER {
            return Err(Error::new(
                ErrorKind::Truncated,
                "posix_trace_open",
                format!("log header cut at {n} of {FILE_HEADER} bytes"),
            )
            .with_hint("the log was cut before its header was complete; nothing to read"));
        }
        if crc32c(&h[..12]).to_le_bytes() != h[12..16] {
            return Err(corrupt("log header checksum mismatch".into()));
        }
        let v = u16::from_le_bytes([h[8], h[9]]);
        if !(1..=VERSION).contains(&v) {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "posix_trace_open",
                format!("log format version {v}, this build reads 1 to {VERSION}"),
            )
            .with_hint("read the log with the posixrt version that wrote it"));
        }
        Ok(RecordReader {
            src,
            file,
            version: v,
            ahead: VecDeque::new(),
            taken: false,
        })
    }

    /// Whether the file can seek (else it is read once, in order).
    pub(crate) fn seekable(&self) -> bool {
        matches!(self.src, Src::Seek(_))
    }

    /// A file that cannot seek: a [`LogWaiter`] on it.
    pub(crate) fn waiter(&self) -> Option<LogWaiter> {
        (!self.seekable()).then(|| LogWaiter(self.file.clone()))
    }

    /// True if the records read ahead or taken in hold what reading the next
    /// event needs (up to an event record, the end record, the end of the
    /// file or an error), so that no byte is waited for; always for a file
    /// that can seek (its reads wait for no writer).
    pub(crate) fn next_is_ready(&self) -> bool {
        let Src::Pipe(p) = &self.src else {
            return true;
        };
        for r in &self.ahead {
            match r {
                Ok(Some(body)) if passed_over(body) => {}
                _ => return true,
            }
        }
        let mut b = p.bytes();
        loop {
            match frame_at(b) {
                Frame::Part => return p.end() != End::Open,
                // An error, read without more bytes.
                Frame::BadLen(_) => return true,
                Frame::Whole(crc, body) => {
                    if crc32c(body) != crc || !passed_over(body) {
                        return true;
                    }
                    b = &b[8 + body.len()..];
                }
            }
        }
    }

    /// A file that cannot seek: takes in, without waiting, what its writer
    /// has written so far (see [`PipeBuf::pull`]).
    pub(crate) fn pull(&mut self) {
        if let Src::Pipe(p) = &mut self.src {
            p.pull();
        }
    }

    /// Back to the first record. A file that cannot seek can only "go back"
    /// while no record was taken (the ones read ahead are all there is
    /// before): else `ESPIPE`, the error of the seek it would need, and the
    /// reader goes on where it was.
    pub(crate) fn rewind(&mut self) -> Result<()> {
        let r = match &mut self.src {
            Src::Seek(r) => r,
            Src::Pipe(_) if self.taken => {
                return Err(Error::from_errno("posix_trace_rewind", libc::ESPIPE)
                    .with_message("the log is read from a pipe or socket, which cannot go back")
                    .with_hint("open the log again from a file to read it once more"))
            }
            Src::Pipe(_) => return Ok(()),
        };
        r.seek(SeekFrom::Start(FILE_HEADER as u64))
            .map(|_| ())
            .map_err(|e| Error::from_errno("lseek", e.raw_os_error().unwrap_or(libc::EIO)))
    }

    /// A file that cannot seek: reads the next record, waiting for its bytes
    /// with `wait`, and keeps it for [`next`](Self::next); returns a copy of
    /// its body, or `None` at the end or an error (kept too, to be reported
    /// in order).
    ///
    /// # Errors
    /// The error of `wait` (nothing is kept then: the record's bytes taken
    /// in so far stay for the next read).
    pub(crate) fn read_ahead(&mut self, wait: Wait<'_>) -> Result<Option<Vec<u8>>> {
        let r = self.read_record(wait)?;
        let body = r.as_ref().ok().and_then(Clone::clone);
        self.ahead.push_back(r);
        Ok(body)
    }

    /// The next record body; `Ok(None)` at a clean end of file. A file that
    /// cannot seek waits for its writer as long as it takes.
    pub(crate) fn next(&mut self) -> Result<Option<Vec<u8>>> {
        self.taken = true;
        if let Some(r) = self.ahead.pop_front() {
            return r;
        }
        // The wait's own error (of `ppoll`) ends the read as a read error.
        self.read_record(&mut wait_for_writer)?
    }

    /// Reads the next record body from the file: the outer error is that of
    /// `wait`, the inner the record's (or the end, `Ok(None)`).
    fn read_record(&mut self, wait: Wait<'_>) -> Result<Result<Option<Vec<u8>>>> {
        let version = self.version;
        let p = match &mut self.src {
            Src::Seek(r) => return Ok(Self::read_seek_record(r, version)),
            Src::Pipe(p) => p,
        };
        loop {
            match frame_at(p.bytes()) {
                Frame::BadLen(len) => return Ok(Err(bad_len(len))),
                Frame::Whole(crc, body) => {
                    let body = body.to_vec();
                    p.consume(8 + body.len());
                    return Ok(checked(body, crc, version).map(Some));
                }
                Frame::Part => {}
            }
            let left = p.bytes().len();
            match p.end() {
                End::Open => {}
                End::Eof if left == 0 => return Ok(Ok(None)),
                End::Eof if left < 8 => return Ok(Err(truncated("inside a record header"))),
                End::Eof => return Ok(Err(truncated("inside a record"))),
                End::Failed(errno) => return Ok(Err(Error::from_errno("read", errno))),
            }
            if !p.pull() {
                wait(&LogWaiter(self.file.clone()))?;
            }
        }
    }

    /// Reads the next record body from a file that can seek.
    fn read_seek_record(r: &mut BufReader<Shared>, version: u16) -> Result<Option<Vec<u8>>> {
        let mut h = [0u8; 8];
        let n = read_full(r, &mut h)?;
        if n == 0 {
            return Ok(None);
        }
        if n < 8 {
            return Err(truncated("inside a record header"));
        }
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 || len > MAX_RECORD {
            return Err(bad_len(len));
        }
        let mut body = vec![0u8; len];
        let got = read_full(r, &mut body)?;
        if got < len {
            return Err(truncated("inside a record"));
        }
        checked(body, crc, version).map(Some)
    }
}

/// Waits for a log read from a pipe, a FIFO or a socket to have bytes to
/// read, without the [`TraceLog`](super::TraceLog) itself: a thread can wait
/// with it while others use the log (behind a lock, say), and take the log
/// only to take in the bytes once they are there
/// ([`TraceLog::read_available`](super::TraceLog::read_available), which
/// never waits: while it is false, the next event has not come whole).
///
/// It keeps the log's file open while it lives.
#[derive(Clone, Debug)]
pub struct LogWaiter(Arc<File>);

impl LogWaiter {
    /// Waits until the file has bytes to read, its end (the writer closed
    /// it) or an error to report, or `timeout` passes (no limit with `None`):
    /// true for the first three, false for the timeout. A signal handler that
    /// runs meanwhile does not end the wait.
    ///
    /// # Errors
    /// The error of `poll`.
    ///
    /// # References
    /// - [`poll`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/poll.html)
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match self.poll(left, None) {
                Err(e) if e.errno() == Some(libc::EINTR) => {}
                r => return r,
            }
        }
    }

    /// [`wait`](Self::wait) for at most `timeout` that a signal handler
    /// ends: every signal blocked but while it sleeps, which it does with the
    /// thread's mask from before (`ppoll`), so that a handler due at any
    /// moment of the call ends it (it runs before the call returns). For the
    /// C library's reads, which end with EINTR then.
    ///
    /// # Errors
    /// `Interrupted` (EINTR) when a signal handler ran; else as
    /// [`wait`](Self::wait).
    #[doc(hidden)]
    pub fn wait_interruptible(&self, timeout: Duration) -> Result<bool> {
        let mask = crate::sys::signal::block_for_wait();
        let r = self.poll(Some(timeout), mask.sleep_mask());
        // A handler due since the signals were blocked, which the sleep did
        // not take (the pipe was readable first), runs as they come back.
        let due = mask.due();
        drop(mask);
        match r {
            Err(e) if e.errno() == Some(libc::EINTR) => Err(interrupted()),
            Ok(_) if due => Err(interrupted()),
            r => r,
        }
    }

    /// [`wait`](Self::wait) with the thread's signal mask `mask` while it
    /// waits (the thread's own without): `EINTR` when a handler runs.
    fn poll(&self, timeout: Option<Duration>, mask: Option<&libc::sigset_t>) -> Result<bool> {
        let mut fds = [libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        crate::sys::poll::ppoll(&mut fds, timeout, mask)
            .map(|n| n > 0)
            .map_err(|e| Error::from_errno("ppoll", e.raw_os_error().unwrap_or(libc::EIO)))
    }
}

fn interrupted() -> Error {
    Error::from_errno("posix_trace_getnext_event", libc::EINTR)
        .with_kind(ErrorKind::Interrupted)
        .with_message("a signal handler ran while the read waited for the log's writer")
}

/// A cursor over a record body.
pub(crate) struct Cur<'a>(pub(crate) &'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupt("record shorter than its fields".into()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let mut w = [0u8; 4];
        w.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(w))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }
    pub(crate) fn str(&mut self) -> Result<String> {
        Ok(String::from_utf8_lossy(self.str_bytes()?).into_owned())
    }
    /// A string field's bytes, as written.
    pub(crate) fn str_bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        self.take(n)
    }
}

pub(crate) fn parse_attr(c: &mut Cur<'_>) -> Result<(TraceAttr, u32)> {
    let mut a = TraceAttr::new();
    a.set_name_unchecked(c.str_bytes()?);
    let _gen = c.str()?;
    a.create_time = Some(Duration::from_nanos(c.u64()?));
    a.clock_res = Some(Duration::from_nanos(c.u64()?));
    a.stream_size = c.u64()? as usize;
    a.max_data = c.u32()? as usize;
    a.stream_full = Some(match c.u8()? {
        0 => StreamFullPolicy::Loop,
        1 => StreamFullPolicy::UntilFull,
        2 => StreamFullPolicy::Flush,
        x => return Err(corrupt(format!("unknown stream full policy code {x}"))),
    });
    a.log_full = match c.u8()? {
        0 => LogFullPolicy::Loop,
        1 => LogFullPolicy::UntilFull,
        2 => LogFullPolicy::Append,
        x => return Err(corrupt(format!("unknown log full policy code {x}"))),
    };
    a.log_size = c.u64()?;
    a.inherit = if c.u8()? != 0 {
        Inheritance::Inherited
    } else {
        Inheritance::CloseForChild
    };
    a.with_log = true;
    let pid = c.u32()?;
    // The timestamp clock at creation: absent (the record ends at the pid)
    // in a log written before it was recorded, 0 when it was not known.
    if c.0.len() >= 8 {
        a.create_mono = Some(c.u64()?)
            .filter(|&ns| ns != 0)
            .map(Duration::from_nanos);
    }
    Ok((a, pid))
}

/// An event id field.
fn event_id(c: &mut Cur<'_>) -> Result<EventId> {
    let raw = c.u16()?;
    EventId::from_raw(raw).ok_or_else(|| corrupt(format!("event id {raw} out of range")))
}

pub(crate) fn parse_type(c: &mut Cur<'_>) -> Result<EventType> {
    let id = event_id(c)?;
    let wopid = c.u8()? != 0;
    let name = c.str()?;
    let n = c.u8()?;
    let mut fields = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let code = c.u8()?;
        let ty = FieldType::from_code(code)
            .ok_or_else(|| corrupt(format!("unknown field type {code}")))?;
        fields.push((c.str()?, ty));
    }
    Ok(EventType {
        id,
        name,
        fields,
        wopid,
    })
}

pub(crate) fn parse_event(c: &mut Cur<'_>) -> Result<Event> {
    let id = event_id(c)?;
    let flags = c.u8()?;
    let pid = c.u32()?;
    let tid = c.u32()?;
    let ts = c.u64()?;
    let prog = c.u64()?;
    let n = c.u16()? as usize;
    let data = c.bytes(n)?.to_vec();
    Ok(Event {
        id,
        pid,
        tid,
        thread: 0,
        timestamp: Duration::from_nanos(ts),
        truncated: flags & 1 != 0,
        prog_address: prog,
        data,
    })
}

/// A compact event record (kind 6) of a log whose pid is `pid`.
pub(crate) fn parse_compact(c: &mut Cur<'_>, pid: u32) -> Result<Event> {
    let id = event_id(c)?;
    let flags = c.u8()?;
    let tid = c.u32()?;
    let ts = c.u64()?;
    let data = c.0.to_vec();
    Ok(Event {
        id,
        pid: if flags & C_NO_PID != 0 { 0 } else { pid },
        tid,
        thread: 0,
        timestamp: Duration::from_nanos(ts),
        truncated: compact_truncated(flags),
        prog_address: 0,
        data,
    })
}

pub(crate) fn parse_status(c: &mut Cur<'_>) -> Result<LogStatus> {
    let stream_lost = c.u64()?;
    let log_lost = c.u64()?;
    let f = c.u8()?;
    Ok(LogStatus {
        stream_lost,
        log_lost,
        stream_overrun: f & 1 != 0,
        log_overrun: f & 2 != 0,
        log_full: f & 4 != 0,
    })
}
