//! The log file format (version 1) and its writer and reader.
//!
//! See the [module docs](super#log-file-format) for the byte layout.
//!
//! # Event order
//!
//! The flusher writes each flush as one batch in timestamp order (a stable sort,
//! so an OVERFLOW stays before the event that ends its gap). `FLUSH_START` carries
//! the time the flush began and is written where that time belongs in the batch:
//! after the events recorded before the flush began (which it flushes), before
//! any recorded while it ran; `FLUSH_STOP` (the count of events flushed) is
//! stamped when the flush ends and follows the batch. So `FLUSH_START` and
//! `FLUSH_STOP` still bracket the time each flush ran, and a log of one thread is in
//! time order. Across batches the order can still go back a little: an event a
//! thread had stamped but not yet published when a flush took the others goes into
//! the next batch. Readers that need time to go forward sort by timestamp (the
//! [exporters](super::export) do); `rtrace stats` spans oldest to newest, and
//! `rtrace dump` prints the log order with times relative to the oldest event.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use super::attr::{Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr};
use super::crc::{crc32c, crc32c_words};
use super::event::Event;
use super::ids::{self, EventId, EventType};
use super::schema::FieldType;
use crate::{Error, ErrorKind, Result};

/// The first 8 bytes of every log.
pub const MAGIC: [u8; 8] = *b"PXTRLOG\0";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Bytes of the file header.
pub const FILE_HEADER: usize = 16;
/// Largest record body accepted by readers (anything larger is corruption).
pub const MAX_RECORD: usize = 1 << 20;

pub(crate) const K_ATTR: u8 = 1;
pub(crate) const K_TYPE: u8 = 2;
pub(crate) const K_EVENT: u8 = 3;
pub(crate) const K_STATUS: u8 = 4;
pub(crate) const K_END: u8 = 5;

/// Fixed bytes of an event record (8-byte record header + 30-byte body before data).
pub(crate) const EVENT_RECORD_FIXED: usize = 8 + 30;

pub(crate) fn file_header() -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    h[..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let c = crc32c(&h[..12]);
    h[12..16].copy_from_slice(&c.to_le_bytes());
    h
}

fn frame(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c(body).to_le_bytes());
    out.extend_from_slice(body);
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    let s = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    b.extend_from_slice(&(s.len() as u16).to_le_bytes());
    b.extend_from_slice(s);
}

fn sfp_code(p: StreamFullPolicy) -> u8 {
    match p {
        StreamFullPolicy::Loop => 0,
        StreamFullPolicy::UntilFull => 1,
        StreamFullPolicy::Flush => 2,
    }
}

fn lfp_code(p: LogFullPolicy) -> u8 {
    match p {
        LogFullPolicy::Loop => 0,
        LogFullPolicy::UntilFull => 1,
        LogFullPolicy::Append => 2,
    }
}

pub(crate) fn attr_record(a: &TraceAttr, pid: u32) -> Vec<u8> {
    let mut b = vec![K_ATTR];
    put_str(&mut b, a.name());
    put_str(&mut b, a.genversion());
    let ct = a.create_time.unwrap_or_default().as_nanos() as u64;
    b.extend_from_slice(&ct.to_le_bytes());
    let res = a.clock_resolution().as_nanos() as u64;
    b.extend_from_slice(&res.to_le_bytes());
    b.extend_from_slice(&(a.stream_size() as u64).to_le_bytes());
    b.extend_from_slice(&(a.max_data_size() as u32).to_le_bytes());
    b.push(sfp_code(a.stream_full_policy()));
    b.push(lfp_code(a.log_full_policy()));
    b.extend_from_slice(&a.log_size().to_le_bytes());
    b.push(matches!(a.inheritance(), Inheritance::Inherited) as u8);
    b.extend_from_slice(&pid.to_le_bytes());
    let mut out = Vec::new();
    frame(&b, &mut out);
    out
}

pub(crate) fn type_record(t: &EventType) -> Vec<u8> {
    let mut b = vec![K_TYPE];
    b.extend_from_slice(&t.id.0.to_le_bytes());
    b.push(t.wopid as u8);
    put_str(&mut b, &t.name);
    b.push(t.fields.len() as u8);
    for (n, ty) in &t.fields {
        b.push(ty.code());
        put_str(&mut b, n);
    }
    let mut out = Vec::new();
    frame(&b, &mut out);
    out
}

/// Appends one framed event record from its fields (no intermediate [`Event`]).
#[allow(clippy::too_many_arguments)] // the record's fields
#[inline]
pub(crate) fn encode_event(
    out: &mut Vec<u8>,
    id: u16,
    truncated: bool,
    pid: u32,
    tid: u32,
    ts_ns: u64,
    prog: u64,
    data: &[u8],
) {
    if data.len() <= 8 {
        return encode_small(out, id, truncated, pid, tid, ts_ns, prog, data);
    }
    let data = &data[..data.len().min(u16::MAX as usize)];
    let body_len = EVENT_RECORD_FIXED - 8 + data.len();
    let at = out.len();
    out.reserve(8 + body_len);
    // Framed in place: length and checksum are patched in after the body.
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    let mut fixed = [0u8; EVENT_RECORD_FIXED - 8];
    fixed[0] = K_EVENT;
    fixed[1..3].copy_from_slice(&id.to_le_bytes());
    fixed[3] = truncated as u8;
    fixed[4..8].copy_from_slice(&pid.to_le_bytes());
    fixed[8..12].copy_from_slice(&tid.to_le_bytes());
    fixed[12..20].copy_from_slice(&ts_ns.to_le_bytes());
    fixed[20..28].copy_from_slice(&prog.to_le_bytes());
    fixed[28..30].copy_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(&fixed);
    out.extend_from_slice(data);
    let crc = crc32c(&out[at + 8..]).to_le_bytes();
    out[at + 4..at + 8].copy_from_slice(&crc);
}

/// [`encode_event`] for data of at most 8 bytes (the common case): the body's
/// first 24 bytes are checksummed as words from registers and the record is
/// appended in one copy.
#[allow(clippy::too_many_arguments)] // the record's fields
#[inline]
fn encode_small(
    out: &mut Vec<u8>,
    id: u16,
    truncated: bool,
    pid: u32,
    tid: u32,
    ts_ns: u64,
    prog: u64,
    data: &[u8],
) {
    let n = data.len();
    // Body bytes 0..24: kind, id, flags, pid | tid, timestamp low | timestamp high,
    // program address low; then program address high, data length, data.
    let w0 = K_EVENT as u64 | (id as u64) << 8 | (truncated as u64) << 24 | (pid as u64) << 32;
    let w1 = tid as u64 | ts_ns << 32;
    let w2 = ts_ns >> 32 | prog << 32;
    let mut rec = [0u8; EVENT_RECORD_FIXED + 8];
    let body_len = EVENT_RECORD_FIXED - 8 + n;
    rec[0..4].copy_from_slice(&(body_len as u32).to_le_bytes());
    rec[8..16].copy_from_slice(&w0.to_le_bytes());
    rec[16..24].copy_from_slice(&w1.to_le_bytes());
    rec[24..32].copy_from_slice(&w2.to_le_bytes());
    rec[32..36].copy_from_slice(&((prog >> 32) as u32).to_le_bytes());
    rec[36..38].copy_from_slice(&(n as u16).to_le_bytes());
    rec[38..38 + n].copy_from_slice(data);
    let crc = crc32c_words([w0, w1, w2], &rec[32..38 + n]);
    rec[4..8].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&rec[..EVENT_RECORD_FIXED + n]);
}

/// The loss and fullness counters written at shutdown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStatus {
    /// Events lost in the stream (overwritten or dropped while full).
    pub stream_lost: u64,
    /// Events that did not fit in the log.
    pub log_lost: u64,
    /// The stream overran at least once.
    pub stream_overrun: bool,
    /// The log overran at least once (events dropped or overwritten).
    pub log_overrun: bool,
    /// The log was full when it was closed.
    pub log_full: bool,
}

fn status_record(s: &LogStatus) -> Vec<u8> {
    let mut b = vec![K_STATUS];
    b.extend_from_slice(&s.stream_lost.to_le_bytes());
    b.extend_from_slice(&s.log_lost.to_le_bytes());
    b.push(s.stream_overrun as u8 | (s.log_overrun as u8) << 1 | (s.log_full as u8) << 2);
    let mut out = Vec::new();
    frame(&b, &mut out);
    out
}

/// Writes a log, applying the log full policy. Owned by the flusher.
pub(crate) struct LogWriter {
    file: File,
    policy: LogFullPolicy,
    size: u64,
    preamble: Vec<u8>,
    types_seen: Vec<bool>,
    names_gen: usize,
    /// Event records kept in memory for LOOP (to rewrite the newest ones): their
    /// bytes back to back from `kept_start`, and each one's length, oldest first.
    kept: Vec<u8>,
    kept_start: usize,
    kept_lens: VecDeque<u32>,
    kept_bytes: u64,
    event_bytes: u64,
    pending: Vec<u8>,
    /// LOOP: the file holds events older than `kept` (compact it when it grows).
    rewrite: bool,
    /// Bytes written to the file so far.
    file_len: u64,
    pub(crate) full: bool,
    pub(crate) lost: u64,
    pub(crate) overrun: bool,
    pid: u32,
    /// A write that failed inside a flush ([`commit_over`](Self::commit_over)),
    /// reported by the flush's final [`commit`](Self::commit).
    failed: Option<io::Error>,
}

impl LogWriter {
    pub(crate) fn new(mut file: File, attr: &TraceAttr, pid: u32) -> io::Result<LogWriter> {
        let mut preamble = file_header().to_vec();
        preamble.extend_from_slice(&attr_record(attr, pid));
        // Devices and pipes cannot be truncated or sought: write from where they are.
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let pending = preamble.clone();
        let mut w = LogWriter {
            file,
            policy: attr.log_full_policy(),
            size: attr.log_size(),
            preamble,
            types_seen: vec![false; ids::ID_SPACE],
            names_gen: usize::MAX,
            kept: Vec::new(),
            kept_start: 0,
            kept_lens: VecDeque::new(),
            kept_bytes: 0,
            event_bytes: 0,
            pending,
            rewrite: false,
            file_len: 0,
            full: false,
            lost: 0,
            overrun: false,
            pid,
            failed: None,
        };
        w.sync_types();
        // The first write happens in the flusher (so a failing log reports through
        // the status and an ERROR event, as any later flush).
        Ok(w)
    }

    /// Adds TYPE records for names registered since the last call (before any event
    /// that could use them, so a cut log keeps its names).
    pub(crate) fn sync_types(&mut self) {
        let g = ids::NAMES_GEN.load(std::sync::atomic::Ordering::Acquire);
        if g == self.names_gen {
            return;
        }
        self.names_gen = g;
        for t in ids::all_types() {
            if !self.types_seen[t.id.0 as usize] {
                self.types_seen[t.id.0 as usize] = true;
                let r = type_record(&t);
                self.preamble.extend_from_slice(&r);
                self.pending.extend_from_slice(&r);
            }
        }
    }

    /// Queues one event; returns whether the log kept it.
    pub(crate) fn push(&mut self, e: &Event) -> bool {
        self.push_record(
            e.id.0,
            e.truncated,
            e.pid,
            e.tid,
            e.timestamp.as_nanos() as u64,
            &e.data,
        )
    }

    /// Queues one event from its fields; returns whether the log kept it.
    pub(crate) fn push_record(
        &mut self,
        id: u16,
        truncated: bool,
        pid: u32,
        tid: u32,
        ts_ns: u64,
        data: &[u8],
    ) -> bool {
        let n = (EVENT_RECORD_FIXED + data.len().min(u16::MAX as usize)) as u64;
        match self.policy {
            LogFullPolicy::Append => {
                encode_event(&mut self.pending, id, truncated, pid, tid, ts_ns, 0, data);
            }
            LogFullPolicy::UntilFull => {
                if self.full {
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                let stop_size = (EVENT_RECORD_FIXED + 4) as u64;
                if self.event_bytes + n + stop_size > self.size {
                    let stop = 2u32.to_le_bytes();
                    encode_event(
                        &mut self.pending,
                        EventId::STOP.0,
                        false,
                        self.pid,
                        tid,
                        ts_ns,
                        0,
                        &stop,
                    );
                    self.event_bytes += stop_size;
                    self.full = true;
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                encode_event(&mut self.pending, id, truncated, pid, tid, ts_ns, 0, data);
            }
            LogFullPolicy::Loop => {
                if n > self.size {
                    self.lost += 1;
                    self.overrun = true;
                    return false;
                }
                let at = self.pending.len();
                encode_event(&mut self.pending, id, truncated, pid, tid, ts_ns, 0, data);
                self.kept.extend_from_slice(&self.pending[at..]);
                self.kept_lens.push_back(n as u32);
                self.kept_bytes += n;
                while self.kept_bytes > self.size {
                    let Some(old) = self.kept_lens.pop_front() else {
                        break;
                    };
                    self.kept_start += old as usize;
                    self.kept_bytes -= old as u64;
                    self.lost += 1;
                    self.overrun = true;
                    self.full = true;
                    self.rewrite = true;
                }
                if self.kept_start > self.kept.len() / 2 {
                    self.kept.drain(..self.kept_start);
                    self.kept_start = 0;
                }
            }
        }
        self.event_bytes += n;
        true
    }

    /// Whether bytes wait to be written (names, the header of a new log).
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes what is queued to the file.
    ///
    /// Log LOOP appends as the other policies do, and compacts the file (rewrites it
    /// with the newest events within the log size) only when appending would take
    /// it past twice the log size, at `clear` and at shutdown: each event is
    /// written at most about three times, instead of the whole log at every flush.
    pub(crate) fn commit(&mut self) -> io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.commit_inner(false)
    }

    /// Writes what is queued once it passes `limit` bytes, so a long flush writes
    /// in large steps and its buffer stays bounded; a failure waits for the
    /// flush's final [`commit`](Self::commit).
    #[inline]
    pub(crate) fn commit_over(&mut self, limit: usize) {
        if self.pending.len() > limit && self.failed.is_none() {
            if let Err(e) = self.commit_inner(false) {
                self.failed = Some(e);
            }
        }
    }

    fn commit_inner(&mut self, compact: bool) -> io::Result<()> {
        let limit = self.preamble.len() as u64 + 2 * self.size;
        if self.rewrite && (compact || self.file_len + self.pending.len() as u64 > limit) {
            let mut all = self.preamble.clone();
            all.extend_from_slice(&self.kept[self.kept_start..]);
            // Overwrite in place, then cut: a crash in between leaves the new
            // records first, then a damaged tail the reader reports, rather than
            // an empty file.
            self.file.seek(SeekFrom::Start(0))?;
            self.file.write_all(&all)?;
            self.file.set_len(all.len() as u64)?;
            self.file_len = all.len() as u64;
            self.rewrite = false;
            self.pending.clear();
        } else if !self.pending.is_empty() {
            self.file.write_all(&self.pending)?;
            self.file_len += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(())
    }

    /// Empties the log of events, keeping header, attributes and names.
    pub(crate) fn clear(&mut self) -> io::Result<()> {
        self.kept.clear();
        self.kept_start = 0;
        self.kept_lens.clear();
        self.kept_bytes = 0;
        self.event_bytes = 0;
        self.full = false;
        self.pending.clear();
        self.rewrite = true;
        self.commit_inner(true)
    }

    /// Writes the service records (status, end) and syncs.
    pub(crate) fn finish(&mut self, mut st: LogStatus) -> io::Result<()> {
        self.sync_types();
        st.log_lost = self.lost;
        st.log_overrun = self.lost > 0;
        st.log_full = self.full;
        self.commit_inner(true)?;
        let mut tail = status_record(&st);
        frame(&[K_END], &mut tail);
        self.preamble.extend_from_slice(&tail);
        self.file.write_all(&tail)?;
        match self.file.sync_data() {
            // Pipes and character devices cannot be synced.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            r => r,
        }
    }
}

// ---------------------------------------------------------------- reading

/// Reads framed records from a log.
pub(crate) struct RecordReader {
    r: BufReader<File>,
}

fn truncated(what: &str) -> Error {
    Error::new(ErrorKind::Truncated, "posix_trace_getnext_event", format!("log cut short {what}"))
        .with_hint("the log was cut (crash or copy in progress); every complete record before the cut was read")
}

fn corrupt(what: String) -> Error {
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

impl RecordReader {
    /// Opens a log and checks its header.
    pub(crate) fn open(mut file: File) -> Result<RecordReader> {
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::from_errno("lseek", e.raw_os_error().unwrap_or(libc::EIO)))?;
        let mut r = BufReader::with_capacity(64 << 10, file);
        let mut h = [0u8; FILE_HEADER];
        let n = read_full(&mut r, &mut h)?;
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
        if v != VERSION {
            return Err(Error::new(
                ErrorKind::Corrupt,
                "posix_trace_open",
                format!("log format version {v}, this build reads {VERSION}"),
            )
            .with_hint("read the log with the posixrt version that wrote it"));
        }
        Ok(RecordReader { r })
    }

    pub(crate) fn rewind(&mut self) -> Result<()> {
        self.r
            .seek(SeekFrom::Start(FILE_HEADER as u64))
            .map(|_| ())
            .map_err(|e| Error::from_errno("lseek", e.raw_os_error().unwrap_or(libc::EIO)))
    }

    /// The next record body; `Ok(None)` at a clean end of file.
    pub(crate) fn next(&mut self) -> Result<Option<Vec<u8>>> {
        let mut h = [0u8; 8];
        let n = read_full(&mut self.r, &mut h)?;
        if n == 0 {
            return Ok(None);
        }
        if n < 8 {
            return Err(truncated("inside a record header"));
        }
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if len == 0 || len > MAX_RECORD {
            return Err(corrupt(format!("record length {len} out of range")));
        }
        let mut body = vec![0u8; len];
        let got = read_full(&mut self.r, &mut body)?;
        if got < len {
            return Err(truncated("inside a record"));
        }
        if crc32c(&body) != crc {
            return Err(corrupt("record checksum mismatch".into()));
        }
        Ok(Some(body))
    }
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
        let n = self.u16()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        self.take(n)
    }
}

pub(crate) fn parse_attr(c: &mut Cur<'_>) -> Result<(TraceAttr, u32)> {
    let mut a = TraceAttr::new();
    a.name = c.str()?;
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
    Ok((a, pid))
}

pub(crate) fn parse_type(c: &mut Cur<'_>) -> Result<EventType> {
    let raw = c.u16()?;
    let id =
        EventId::from_raw(raw).ok_or_else(|| corrupt(format!("event id {raw} out of range")))?;
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
    let raw = c.u16()?;
    let id =
        EventId::from_raw(raw).ok_or_else(|| corrupt(format!("event id {raw} out of range")))?;
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
        timestamp: Duration::from_nanos(ts),
        truncated: flags & 1 != 0,
        prog_address: prog,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_records_encode_as_the_general_path_does() {
        for n in 0..=8usize {
            let data: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) + 5).collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            encode_small(
                &mut a,
                0x0123,
                true,
                0xdead_beef,
                77,
                u64::MAX - 5,
                1 << 40,
                &data,
            );
            // The general path, on data padded past 8 bytes, then cut back.
            let mut long = data.clone();
            long.extend_from_slice(&[0xAA; 9]);
            encode_event(
                &mut b,
                0x0123,
                true,
                0xdead_beef,
                77,
                u64::MAX - 5,
                1 << 40,
                &long,
            );
            let body_len = EVENT_RECORD_FIXED - 8 + n;
            b.truncate(8 + body_len);
            b[0..4].copy_from_slice(&(body_len as u32).to_le_bytes());
            b[8 + 28..8 + 30].copy_from_slice(&(n as u16).to_le_bytes());
            let crc = crc32c(&b[8..]).to_le_bytes();
            b[4..8].copy_from_slice(&crc);
            assert_eq!(a, b, "{n} bytes");
            let e = parse_event(&mut Cur(&a[9..])).unwrap();
            assert_eq!(
                (e.id.0, e.pid, e.tid, e.data),
                (0x0123, 0xdead_beef, 77, data)
            );
        }
    }

    #[test]
    fn unknown_policy_codes_are_corrupt_not_guessed() {
        let rec = attr_record(&TraceAttr::new(), 1);
        let body = &rec[8..];
        // The policy bytes sit after kind, two strings, 3 u64 and a u32.
        let name_len = u16::from_le_bytes([body[1], body[2]]) as usize;
        let gen_at = 3 + name_len;
        let gen_len = u16::from_le_bytes([body[gen_at], body[gen_at + 1]]) as usize;
        let sfp = gen_at + 2 + gen_len + 8 + 8 + 8 + 4;
        for at in [sfp, sfp + 1] {
            let mut b = body.to_vec();
            assert!(b[at] <= 2);
            b[at] = 7;
            let e = parse_attr(&mut Cur(&b[1..])).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "byte {at}");
        }
        assert!(parse_attr(&mut Cur(&body[1..])).is_ok());
    }
}
