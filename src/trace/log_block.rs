//! Event blocks (record kind 7): many events of the log's own process in one
//! record, each a few bytes plus its data.
//!
//! Logs with the APPEND and UNTIL_FULL policies write their events this way.
//! Per event: `u16` id, `u8` flags, the timestamp as a signed difference from
//! the previous event's (zigzag LEB128: one byte for a gap under 64 ns, two
//! under 8 µs), the tid only when it is neither of the last two, then the
//! data. 8 bytes of data take 12
//! or 13 bytes, against 32 for a compact record (kind 6). A block is closed (its
//! length and checksum written) before anything else is queued after it and
//! before every write, so a cut log loses at most the block being written.
//!
//! Logs with the LOOP policy keep one record per event: they drop the oldest
//! events one by one. An UNTIL_FULL log sets aside, for each event, the most it
//! could take in a block ([`BLOCK_EVENT_MAX`] besides its data), so it never
//! passes its size.

use std::time::Duration;

use super::crc::crc32c;
use super::event::Event;
use super::ids::EventId;
use super::log::{OwnEvent, BLOCK_HEAD, K_BLOCK};
use super::log_read::{corrupt, Cur};
use crate::Result;

/// Body bytes after which a block is closed.
const BLOCK_BODY: usize = 32 << 10;

/// Bytes of an event besides its data: id, flags, at most 10 bytes of
/// timestamp, a tid and a length.
const EVENT_HEAD_MAX: usize = 2 + 1 + 10 + 4 + 2;

/// The most an event takes in a block besides its data, a new block's frame
/// and head included: what a log counting bytes (UNTIL_FULL) sets aside for it.
pub(crate) const BLOCK_EVENT_MAX: usize = 8 + BLOCK_HEAD + EVENT_HEAD_MAX;

/// Flags: data length in bits 0..=3 (0..=8 inline; [`LEN_U16`]: a `u16` length
/// follows the tid), truncated, without pid, and how the tid is given (bits 6
/// and 7).
const LEN_U16: u8 = 15;
const F_TRUNCATED: u8 = 1 << 4;
const F_NO_PID: u8 = 1 << 5;
/// The tid is the previous event's.
const TID_LAST: u8 = 0;
/// The tid is the other of the last two distinct tids (the last one that
/// differs from the previous event's); the two swap places.
const TID_OTHER: u8 = 1;
/// The tid follows as a `u32`; the previous event's becomes the other one.
const TID_NEW: u8 = 2;

/// What the next event of a block is encoded (or decoded) against: the previous
/// event's timestamp and the last two distinct tids (both the block's first tid
/// at its start).
#[derive(Clone, Copy, Debug, Default)]
struct Prev {
    ts: u64,
    last: u32,
    other: u32,
}

impl Prev {
    /// How `tid` is given after these events, and the state after it.
    #[inline]
    fn tid_code(&mut self, tid: u32) -> u8 {
        if tid == self.last {
            TID_LAST
        } else if tid == self.other {
            self.other = self.last;
            self.last = tid;
            TID_OTHER
        } else {
            self.other = self.last;
            self.last = tid;
            TID_NEW
        }
    }
}

/// The block a log writer is filling, if any.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockWriter {
    /// Where the open block's frame starts in the queued bytes.
    open: Option<usize>,
    prev: Prev,
}

impl BlockWriter {
    /// Appends one event to the open block (opening one if needed), closing the
    /// block once it is large.
    #[inline]
    pub(crate) fn push(&mut self, out: &mut Vec<u8>, e: &OwnEvent<'_>) {
        let (tid, ts_ns) = (e.tid, e.ts_ns);
        let at = match self.open {
            Some(at) => at,
            None => {
                let at = out.len();
                out.extend_from_slice(&[0u8; 8]);
                out.push(K_BLOCK);
                out.extend_from_slice(&tid.to_le_bytes());
                out.extend_from_slice(&ts_ns.to_le_bytes());
                self.prev = Prev {
                    ts: ts_ns,
                    last: tid,
                    other: tid,
                };
                self.open = Some(at);
                at
            }
        };
        let data = &e.data[..e.data.len().min(u16::MAX as usize)];
        let code = self.prev.tid_code(tid);
        let len_code = if data.len() <= 8 {
            data.len() as u8
        } else {
            LEN_U16
        };
        let flags = len_code
            | if e.truncated { F_TRUNCATED } else { 0 }
            | if e.no_pid { F_NO_PID } else { 0 }
            | code << 6;
        let delta = ts_ns.wrapping_sub(self.prev.ts) as i64;
        self.prev.ts = ts_ns;
        let mut h = [0u8; EVENT_HEAD_MAX];
        h[..2].copy_from_slice(&e.id.to_le_bytes());
        h[2] = flags;
        let mut n = 3 + put_varint(&mut h[3..13], zigzag(delta));
        if code == TID_NEW {
            h[n..n + 4].copy_from_slice(&tid.to_le_bytes());
            n += 4;
        }
        if len_code == LEN_U16 {
            h[n..n + 2].copy_from_slice(&(data.len() as u16).to_le_bytes());
            n += 2;
        }
        out.extend_from_slice(&h[..n]);
        out.extend_from_slice(data);
        if out.len() - at - 8 >= BLOCK_BODY {
            self.close(out);
        }
    }

    /// Closes the open block, if any: writes its length and checksum.
    pub(crate) fn close(&mut self, out: &mut [u8]) {
        let Some(at) = self.open.take() else { return };
        let body = &out[at + 8..];
        let (len, crc) = (body.len() as u32, crc32c(body));
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
        out[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    }

    /// Forgets the open block (its bytes were dropped from the queue).
    pub(crate) fn reset(&mut self) {
        self.open = None;
    }
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// LEB128 of `v` into `out` (room for 10 bytes); returns the byte count.
#[inline]
fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 {
        out[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

fn varint(c: &mut Cur<'_>) -> Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = c.u8()?;
        // The 10th byte holds the top bit only.
        if shift == 63 && b > 1 {
            break;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(corrupt("timestamp difference over 64 bits".into()))
}

/// The events of one block, read one at a time.
#[derive(Debug)]
pub(crate) struct BlockReader {
    body: Vec<u8>,
    pos: usize,
    prev: Prev,
}

impl BlockReader {
    /// A reader over a block's body (after its kind byte).
    pub(crate) fn new(body: Vec<u8>) -> Result<BlockReader> {
        let mut c = Cur(&body[1..]);
        let tid = c.u32()?;
        let ts = c.u64()?;
        Ok(BlockReader {
            body,
            pos: BLOCK_HEAD,
            prev: Prev {
                ts,
                last: tid,
                other: tid,
            },
        })
    }

    /// True while an event of the block is left.
    pub(crate) fn has_more(&self) -> bool {
        self.pos < self.body.len()
    }

    /// The next event of the block, `None` after the last; `pid` is the log's.
    pub(crate) fn next(&mut self, pid: u32) -> Option<Result<Event>> {
        if self.pos >= self.body.len() {
            return None;
        }
        let mut c = Cur(&self.body[self.pos..]);
        let r = decode(&mut self.prev, &mut c, pid);
        self.pos = match r {
            Ok(_) => self.body.len() - c.0.len(),
            // A block that passed its checksum but does not parse was written
            // wrong: stop at it.
            Err(_) => self.body.len(),
        };
        Some(r)
    }
}

/// One event of a block, decoded against `prev` (which it updates).
fn decode(prev: &mut Prev, c: &mut Cur<'_>, pid: u32) -> Result<Event> {
    let raw = c.u16()?;
    let id =
        EventId::from_raw(raw).ok_or_else(|| corrupt(format!("event id {raw} out of range")))?;
    let flags = c.u8()?;
    let ts = prev.ts.wrapping_add(unzigzag(varint(c)?) as u64);
    prev.ts = ts;
    let tid = match flags >> 6 {
        TID_LAST => prev.last,
        TID_OTHER => prev.other,
        TID_NEW => c.u32()?,
        _ => return Err(corrupt("unknown tid code 3 in an event block".into())),
    };
    // The writer's bookkeeping, so the next code means what it meant there.
    prev.tid_code(tid);
    let n = match flags & 0xf {
        n @ 0..=8 => n as usize,
        LEN_U16 => c.u16()? as usize,
        n => {
            return Err(corrupt(format!(
                "unknown data length code {n} in an event block"
            )))
        }
    };
    let data = c.bytes(n)?.to_vec();
    Ok(Event {
        id,
        pid: if flags & F_NO_PID != 0 { 0 } else { pid },
        tid,
        thread: 0,
        timestamp: Duration::from_nanos(ts),
        truncated: flags & F_TRUNCATED != 0,
        prog_address: 0,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = (u16, bool, u32, u32, u64, Vec<u8>);

    /// The events of the blocks in `out`, and how many blocks there are.
    fn events(out: &[u8]) -> (Vec<Row>, u64) {
        let (mut got, mut blocks) = (Vec::new(), 0);
        let mut at = 0;
        while at < out.len() {
            let len = u32::from_le_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(out[at + 4..at + 8].try_into().unwrap());
            let body = out[at + 8..at + 8 + len].to_vec();
            assert_eq!(crc32c(&body), crc);
            assert_eq!(body[0], K_BLOCK);
            let mut r = BlockReader::new(body).unwrap();
            while let Some(e) = r.next(77) {
                let e = e.unwrap();
                got.push((
                    e.id.0,
                    e.truncated,
                    e.pid,
                    e.tid,
                    e.timestamp.as_nanos() as u64,
                    e.data,
                ));
            }
            at += 8 + len;
            blocks += 1;
        }
        (got, blocks)
    }

    /// Timestamps that go back, tids that come back or are new, every data
    /// length code and both flags read back as written.
    #[test]
    fn blocks_read_back_what_was_written() {
        let mut want = Vec::new();
        let tids = [5, 6, 5, 6, 6, 9, 5, 9, u32::MAX, 0];
        let mut ts = 1_000_000u64;
        for i in 0..400u64 {
            ts = match i % 7 {
                3 => ts - 5_000,     // back a little
                5 => ts + (1 << 40), // a long gap
                _ => ts + i * 13 % 200,
            };
            let n = [0, 1, 8, 9, 300, 3, 8][i as usize % 7];
            let data: Vec<u8> = (0..n).map(|k| (k as u64 * 7 + i) as u8).collect();
            let id = 300 + (i % 5) as u16;
            let (tr, no_pid) = (i % 3 == 0, i % 4 == 1);
            want.push((
                id,
                tr,
                if no_pid { 0 } else { 77 },
                tids[i as usize % 10],
                ts,
                data,
            ));
        }
        let mut out = Vec::new();
        let mut w = BlockWriter::default();
        for (k, (id, tr, pid, tid, ts, d)) in want.iter().enumerate() {
            w.push(&mut out, &OwnEvent::new(*id, *tr, *pid == 0, *tid, *ts, d));
            if k == 150 {
                // A block closed midway: the next one starts afresh.
                w.close(&mut out);
            }
        }
        w.close(&mut out);
        let (got, blocks) = events(&out);
        assert_eq!(blocks, 2);
        assert_eq!(got, want);
    }

    /// 8 bytes of data from two alternating threads at 12 M events/s take 12
    /// bytes per event (13 for a gap of 64 ns or more), and large blocks close
    /// by themselves.
    #[test]
    fn events_are_small_and_blocks_bounded() {
        let mut out = Vec::new();
        let mut w = BlockWriter::default();
        let n = 10_000u64;
        for i in 0..n {
            let d = i.to_le_bytes();
            w.push(
                &mut out,
                &OwnEvent::new(300, false, false, 100 + (i % 2) as u32, i * 60, &d),
            );
        }
        w.close(&mut out);
        let (got, blocks) = events(&out);
        assert_eq!(blocks, 4, "{} bytes", out.len());
        let per = (out.len() as u64 - blocks * (8 + BLOCK_HEAD as u64 + 4)) as f64 / n as f64;
        assert!((12.0..12.1).contains(&per), "{per} bytes per event");
        assert_eq!(got.len(), n as usize);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, e)| e.4 == i as u64 * 60 && e.3 == 100 + (i % 2) as u32));
    }

    /// A 10-byte varint whose last byte holds more than the top bit is refused,
    /// not cut to 64 bits.
    #[test]
    fn oversized_varints_are_corrupt() {
        let mut b = [0u8; 10];
        let n = put_varint(&mut b, u64::MAX);
        assert_eq!((n, b[9]), (10, 1));
        assert_eq!(varint(&mut Cur(&b)).unwrap(), u64::MAX);
        b[9] = 2;
        assert_eq!(
            varint(&mut Cur(&b)).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
    }

    #[test]
    fn bad_codes_are_corrupt() {
        let mut out = Vec::new();
        let mut w = BlockWriter::default();
        w.push(&mut out, &OwnEvent::new(300, false, false, 1, 10, b"ab"));
        w.close(&mut out);
        for (at, bad) in [(8 + BLOCK_HEAD + 2, 0xC2u8), (8 + BLOCK_HEAD + 2, 0x0A)] {
            let mut body = out[8..].to_vec();
            body[at - 8] = bad;
            let mut r = BlockReader::new(body).unwrap();
            let e = r.next(1).unwrap().unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
            assert!(r.next(1).is_none());
        }
    }
}
