//! The log file format (version 3; versions 1 and 2 are read too): constants
//! and the encoding of each record (event blocks are in `log_block.rs`).
//! The writer is `log_writer.rs`, the reader `log_read.rs`.
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

use super::attr::{Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr};
use super::crc::{crc32c, crc32c_record};
use super::ids::EventType;
use super::ring::small_word;

/// The first 8 bytes of every log.
pub const MAGIC: [u8; 8] = *b"PXTRLOG\0";
/// The format version this crate writes. It reads this one and the earlier
/// ones: version 2 has no event blocks (kind 7), version 1 no compact event
/// records (kind 6) either.
pub const VERSION: u16 = 3;
/// Bytes of the file header.
pub const FILE_HEADER: usize = 16;
pub use super::ids::MAX_RECORD;

pub(crate) const K_ATTR: u8 = 1;
pub(crate) const K_TYPE: u8 = 2;
pub(crate) const K_EVENT: u8 = 3;
pub(crate) const K_STATUS: u8 = 4;
pub(crate) const K_END: u8 = 5;
pub(crate) const K_EVENT_C: u8 = 6;
pub(crate) const K_BLOCK: u8 = 7;

/// Bytes of a block's body (`K_BLOCK`) before its first event: kind, first
/// tid, first timestamp.
pub(crate) const BLOCK_HEAD: usize = 1 + 4 + 8;

/// The first format version with records of `kind`: a log of an earlier version
/// holding one was not written by that version (it is corrupt).
pub(crate) fn kind_version(kind: u8) -> u16 {
    match kind {
        K_EVENT_C => 2,
        K_BLOCK => 3,
        _ => 1,
    }
}

/// Fixed bytes of an event record (8-byte record header + 30-byte body before data).
pub(crate) const EVENT_RECORD_FIXED: usize = 8 + 30;
/// Fixed bytes of a compact event record (8-byte record header + 16-byte body
/// before data).
pub(crate) const COMPACT_RECORD_FIXED: usize = 8 + 16;

/// Flags of a compact event record: truncated, and "without a pid" (the event
/// type's; every other compact record carries the log's pid).
const C_TRUNCATED: u8 = 1;
pub(crate) const C_NO_PID: u8 = 2;

pub(crate) fn file_header() -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    h[..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    let c = crc32c(&h[..12]);
    h[12..16].copy_from_slice(&c.to_le_bytes());
    h
}

pub(crate) fn frame(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c(body).to_le_bytes());
    out.extend_from_slice(body);
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_bytes(b, s.as_bytes());
}

/// A string field of bytes (a stream name need not be UTF-8).
fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    let s = &s[..s.len().min(u16::MAX as usize)];
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
    put_bytes(&mut b, a.name_bytes());
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
    // Last, so a reader of an older posixrt, which stops at the pid, reads
    // the record as before.
    let cm = a.create_mono.map_or(0, |d| d.as_nanos() as u64);
    b.extend_from_slice(&cm.to_le_bytes());
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

/// [`encode_event`] for data of at most 8 bytes (the common case): the body is
/// built and checksummed in registers and stored straight into `out` (no buffer
/// on the stack, whose small stores a wide load would wait for).
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
    let n = data.len().min(8);
    // Body bytes 0..24: kind, id, flags, pid | tid, timestamp low | timestamp high,
    // program address low; then 6 + n bytes: program address high, data length,
    // data.
    let w0 = K_EVENT as u64 | (id as u64) << 8 | (truncated as u64) << 24 | (pid as u64) << 32;
    let w1 = tid as u64 | ts_ns << 32;
    let w2 = ts_ns >> 32 | prog << 32;
    let tail = (prog >> 32) as u128 | (n as u128) << 32 | (small_word(data) as u128) << 48;
    let crc = crc32c_record(&[w0, w1, w2], tail, 6 + n);
    let body_len = (EVENT_RECORD_FIXED - 8 + n) as u64;
    let head = body_len | (crc as u64) << 32;
    put_words(out, &[head, w0, w1, w2], tail, EVENT_RECORD_FIXED + n);
}

/// Appends the first `len` bytes of `words` then `tail`, little-endian: a
/// record built in registers, stored with a few wide stores (the bytes past
/// `len` go into the spare capacity and are not kept).
#[inline(always)]
fn put_words(out: &mut Vec<u8>, words: &[u64], tail: u128, len: usize) {
    let room = words.len() * 8 + 16;
    out.reserve(room);
    let at = out.len();
    // SAFETY: `reserve(room)` made room for `room` bytes after `at`; the stores
    // fill exactly those (unaligned: a Vec<u8> has no alignment), and at most
    // `room` of them become part of the vector.
    unsafe {
        let p = out.as_mut_ptr().add(at);
        for (i, &w) in words.iter().enumerate() {
            std::ptr::write_unaligned(p.add(8 * i).cast::<u64>(), w);
        }
        std::ptr::write_unaligned(p.add(8 * words.len()).cast::<u128>(), tail);
        out.set_len(at + len.min(room));
    }
}

/// An event of a log's own process, as the compact encodings (kind 6 records
/// and event blocks) take it: its pid is the log's, or none.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnEvent<'a> {
    pub id: u16,
    pub truncated: bool,
    /// The event type has no pid (0); otherwise the pid is the log's.
    pub no_pid: bool,
    pub tid: u32,
    pub ts_ns: u64,
    pub data: &'a [u8],
}

impl<'a> OwnEvent<'a> {
    pub(crate) fn new(
        id: u16,
        truncated: bool,
        no_pid: bool,
        tid: u32,
        ts_ns: u64,
        data: &'a [u8],
    ) -> OwnEvent<'a> {
        OwnEvent {
            id,
            truncated,
            no_pid,
            tid,
            ts_ns,
            data,
        }
    }
}

/// Appends one framed compact event record (kind 6): the event of a log's own
/// process, with no program address. 24 bytes before the data instead of 38.
#[inline]
pub(crate) fn encode_compact(out: &mut Vec<u8>, e: &OwnEvent<'_>) {
    let (id, tid, ts_ns, data) = (e.id, e.tid, e.ts_ns, e.data);
    let flags = if e.truncated { C_TRUNCATED } else { 0 } | if e.no_pid { C_NO_PID } else { 0 };
    let w0 = K_EVENT_C as u64 | (id as u64) << 8 | (flags as u64) << 24 | (tid as u64) << 32;
    let w1 = ts_ns;
    if data.len() > 8 {
        let data = &data[..data.len().min(u16::MAX as usize)];
        let mut body = Vec::with_capacity(16 + data.len());
        body.extend_from_slice(&w0.to_le_bytes());
        body.extend_from_slice(&w1.to_le_bytes());
        body.extend_from_slice(data);
        return frame(&body, out);
    }
    // Data of at most 8 bytes (the common case): built and checksummed in
    // registers, as `encode_small`.
    let n = data.len();
    let tail = small_word(data);
    let crc = crc32c_record(&[w0, w1], tail as u128, n);
    let body_len = (COMPACT_RECORD_FIXED - 8 + n) as u64;
    let head = body_len | (crc as u64) << 32;
    put_words(out, &[head, w0, w1], tail as u128, COMPACT_RECORD_FIXED + n);
}

/// Whether a compact record's flags mark it truncated.
pub(crate) fn compact_truncated(flags: u8) -> bool {
    flags & C_TRUNCATED != 0
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

pub(crate) fn status_record(s: &LogStatus) -> Vec<u8> {
    let mut b = vec![K_STATUS];
    b.extend_from_slice(&s.stream_lost.to_le_bytes());
    b.extend_from_slice(&s.log_lost.to_le_bytes());
    b.push(s.stream_overrun as u8 | (s.log_overrun as u8) << 1 | (s.log_full as u8) << 2);
    let mut out = Vec::new();
    frame(&b, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::log_read::{parse_attr, parse_event, Cur};
    use crate::ErrorKind;

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

    /// A log of version 1 (full event records only) still reads; compact
    /// records (version 2) and event blocks (version 3) carry the log's pid, or
    /// none, and read back alike; a compact record takes 32 bytes for 8 bytes
    /// of data.
    #[test]
    fn compact_and_full_event_records_read_alike() {
        use crate::trace::TraceLog;
        use std::io::{Seek, Write};
        let pid = 4242;
        let read = |version: u16, events: &dyn Fn(&mut Vec<u8>)| {
            let mut b = file_header().to_vec();
            b[8..10].copy_from_slice(&version.to_le_bytes());
            let c = crc32c(&b[..12]).to_le_bytes();
            b[12..16].copy_from_slice(&c);
            b.extend_from_slice(&attr_record(&TraceAttr::new(), pid));
            events(&mut b);
            let mut f = tempfile();
            f.write_all(&b).unwrap();
            f.rewind().unwrap();
            let mut log = TraceLog::from_file(f).unwrap();
            let mut got = Vec::new();
            while let Ok(Some(e)) = log.next_event() {
                got.push((
                    e.id.0,
                    e.pid,
                    e.tid,
                    e.timestamp.as_nanos() as u64,
                    e.truncated,
                    e.data,
                ));
            }
            got
        };
        let want = vec![
            (300, pid, 7, 1_000, false, b"abcdefgh".to_vec()),
            (301, 0, 8, 2_000, true, b"xyz".to_vec()),
            (302, pid, 9, 3_000, false, (0..40u8).collect::<Vec<u8>>()),
        ];
        let v1 = read(1, &|b| {
            for (id, p, tid, ts, tr, d) in &want {
                encode_event(b, *id, *tr, *p, *tid, *ts, 0, d);
            }
        });
        assert_eq!(v1, want);
        let v2 = read(2, &|b| {
            for (id, p, tid, ts, tr, d) in &want {
                encode_compact(b, &OwnEvent::new(*id, *tr, *p == 0, *tid, *ts, d));
            }
        });
        assert_eq!(v2, want);
        let v3 = read(3, &|b| {
            let mut w = crate::trace::log_block::BlockWriter::default();
            for (id, p, tid, ts, tr, d) in &want {
                w.push(b, &OwnEvent::new(*id, *tr, *p == 0, *tid, *ts, d));
            }
            w.close(b);
        });
        assert_eq!(v3, want);
        let mut sizes = Vec::new();
        for (_, p, tid, ts, tr, d) in &want {
            let mut one = Vec::new();
            encode_compact(&mut one, &OwnEvent::new(300, *tr, *p == 0, *tid, *ts, d));
            sizes.push(one.len());
        }
        assert_eq!(sizes, [32, 27, 64]);
        // A version this build does not know is refused, not misread.
        let mut b = file_header().to_vec();
        b[8..10].copy_from_slice(&4u16.to_le_bytes());
        let c = crc32c(&b[..12]).to_le_bytes();
        b[12..16].copy_from_slice(&c);
        let mut f = tempfile();
        f.write_all(&b).unwrap();
        let e = TraceLog::from_file(f).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.to_string().contains("version 4"), "{e}");
    }

    /// A record that passes its checksum but does not parse (a block too short
    /// for its head, a compact event too short for its fields) stops the
    /// reader, as a bad checksum does: the events after it are not read.
    #[test]
    fn a_record_that_does_not_parse_ends_the_log() {
        use crate::trace::TraceLog;
        use std::io::{Seek, Write};
        for bad in [&[K_BLOCK, 1, 2, 3][..], &[K_EVENT_C, 0x2c, 0x01][..]] {
            let mut b = file_header().to_vec();
            b.extend_from_slice(&attr_record(&TraceAttr::new(), 1));
            frame(bad, &mut b);
            encode_compact(
                &mut b,
                &OwnEvent::new(300, false, 1 == 0, 7, 1_000, b"after"),
            );
            let mut f = tempfile();
            f.write_all(&b).unwrap();
            f.rewind().unwrap();
            let mut log = TraceLog::from_file(f).unwrap();
            let e = log.next_event().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "kind {}", bad[0]);
            assert!(matches!(log.next_event(), Ok(None)), "kind {}", bad[0]);
        }
    }

    /// A log whose header says version 1 or 2 but holds a record of a kind a
    /// later version introduced (compact events: 2, event blocks: 3) was not
    /// written by that version: it is refused as `Corrupt`, naming the version
    /// the kind needs, not read as if the header were right.
    #[test]
    fn a_record_kind_later_than_the_log_version_is_corrupt() {
        use crate::trace::TraceLog;
        use std::io::{Seek, Write};
        let record = |b: &mut Vec<u8>, in_block: bool| {
            let e = OwnEvent::new(300, false, false, 7, 1_000, b"abc");
            if in_block {
                let mut w = crate::trace::log_block::BlockWriter::default();
                w.push(b, &e);
                w.close(b);
            } else {
                encode_compact(b, &e);
            }
        };
        let cases = [
            (1u16, false, "version 2"),
            (1, true, "version 3"),
            (2, true, "version 3"),
        ];
        for (version, in_block, needs) in cases {
            let mut b = file_header().to_vec();
            b[8..10].copy_from_slice(&version.to_le_bytes());
            let c = crc32c(&b[..12]).to_le_bytes();
            b[12..16].copy_from_slice(&c);
            b.extend_from_slice(&attr_record(&TraceAttr::new(), 1));
            encode_event(&mut b, 301, false, 1, 7, 500, 0, b"before");
            record(&mut b, in_block);
            frame(&[K_END], &mut b);
            let mut f = tempfile();
            f.write_all(&b).unwrap();
            f.rewind().unwrap();
            let mut log = TraceLog::from_file(f).unwrap();
            let first = log.next_event().unwrap().unwrap();
            assert_eq!(first.id.0, 301, "version {version}, {needs}");
            let e = log.next_event().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "version {version}, {needs}");
            assert!(e.to_string().contains(needs), "{e}");
            assert!(matches!(log.next_event(), Ok(None)));
        }
    }

    /// A type record counts its fields in a byte and must fit a record
    /// (`MAX_RECORD`): a system event layout of more fields, or with names too
    /// long for one record, is refused when registered, instead of being
    /// written as a record that reads back without its fields (256 counted as
    /// 0) or that stops the reader as corrupt. 255 fields read back whole.
    #[test]
    fn layouts_a_type_record_cannot_hold_are_refused() {
        use crate::trace::ids::register_sys;
        use crate::trace::schema::{Field, FieldType};
        let fields = |n: usize, name: &'static str| -> Vec<Field> {
            (0..n)
                .map(|_| Field {
                    name,
                    ty: FieldType::U8,
                })
                .collect()
        };
        let e = register_sys("log_test_256_fields", &fields(256, "f"), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let long: &'static str = Box::leak("n".repeat(5000).into_boxed_str());
        let e = register_sys("log_test_long_names", &fields(250, long), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let id = register_sys("log_test_255_fields", &fields(255, "f"), false).unwrap();
        let t = crate::trace::ids::all_types()
            .into_iter()
            .find(|t| t.id == id)
            .unwrap();
        let rec = type_record(&t);
        assert!(rec.len() - 8 <= MAX_RECORD);
        let back = crate::trace::log_read::parse_type(&mut Cur(&rec[9..])).unwrap();
        assert_eq!(back.fields, t.fields);
        assert_eq!(back.fields.len(), 255);
    }

    fn tempfile() -> std::fs::File {
        let fd = rustix::fs::memfd_create("log", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        std::fs::File::from(fd)
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
