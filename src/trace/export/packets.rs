//! The packets of the CTF export's stream, which carry the events lost where
//! the log tells it (CTF 1.8's `events_discarded`, which babeltrace2 reports).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

use super::order::{lost_at, Scan};
use super::Source;
use crate::trace::{Event, EventId, LogFullPolicy};

/// The packet header's magic number (CTF 1.8).
const CTF_MAGIC: u32 = 0xC1FC_1FC1;

/// Bytes of a packet's header (magic, stream id) and context (sizes, times,
/// events discarded).
const PACKET_HEAD: u64 = 8 + 5 * 8;

/// The bytes of events after which a packet that counts no new loss ends,
/// the next event beginning another: packets of about 1 MiB (at most that
/// and one event), as tracers write them, which readers index by (Trace
/// Compass seeks to a packet), and which is all a writer need size at once.
pub(super) const PACKET_EVENTS: u64 = 1 << 20;

/// Where an event's bytes go: counted (a packet's size, before it is
/// written) or written.
pub(super) trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes the stream of the events `events` hands over (in time order, as
/// `scan` read them) into `out`, each event's bytes those `encode` puts,
/// packet by packet through a 64 KiB buffer.
///
/// The packets carry each loss in the time it happened: every run of
/// OVERFLOW and RESUME events gets a packet of its own, from the OVERFLOW
/// (stamped as the last event before the loss) to the next event, and
/// counts its losses (`events_discarded`, a running count, as CTF 1.8 has
/// it: readers report the growth from one packet to the next, over the time
/// from the end of the one to the end of the other). Losses the log's
/// status counts beyond its OVERFLOW events (events a LOOP log dropped, the
/// events an UNTIL_FULL log had no room for, an OVERFLOW filtered out or
/// dropped with the oldest events) go in an empty packet at the first event
/// for a LOOP log (it drops the oldest), else at the last. The first packet
/// counts no loss (an empty one comes first if need be): readers count from
/// it. Without events, one empty packet.
///
/// A packet that counts no new loss ends after the event that brings it to
/// [`PACKET_EVENTS`] bytes, and the next one begins at the next event (its
/// end and the next one's begin are that event's time, its count of
/// discarded events that of the whole): readers report the same losses over
/// the same times. A packet that counts new losses (a run of OVERFLOW
/// events) stays whole. A packet without losses is written as its events
/// come, after a header that is written again (`pwrite`) with its real size
/// and end once the next event gives them; a run of OVERFLOW and RESUME
/// events is held until it ends (its losses decide how it is cut): nothing
/// but the 64 KiB buffer and such a run grows with the packets.
///
/// # Errors
/// The first error of writing to `out`, or of `events`, which ends the
/// stream there.
pub(super) fn write_stream(
    scan: &Scan,
    events: &mut Source<'_>,
    encode: &dyn Fn(&Event, &mut dyn Sink),
    out: File,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let r = write_packets(scan, events, encode, &mut out).and_then(|()| out.flush());
    if r.is_err() {
        // Given up: not written again when `out` drops.
        drop(out.into_parts());
    }
    r
}

/// The packets of [`write_stream`], into `out`.
fn write_packets(
    scan: &Scan,
    events: &mut Source<'_>,
    encode: &dyn Fn(&Event, &mut dyn Sink),
    out: &mut io::BufWriter<File>,
) -> io::Result<()> {
    let looping = scan
        .meta
        .attr()
        .is_some_and(|a| a.log_full_policy() == LogFullPolicy::Loop);
    let (lead, trail) = match scan.meta.status() {
        Some(s) => {
            let rest = s.stream_lost.saturating_sub(scan.lost);
            if looping {
                (s.log_lost, rest)
            } else {
                (0, s.log_lost.saturating_add(rest))
            }
        }
        None => (0, 0),
    };
    let mut p = Packets {
        out,
        at: 0,
        first: scan.first as u64,
        written: false,
        total: 0,
        started: false,
        in_loss: false,
        run_lost: 0,
        open: None,
        full: false,
        one: Vec::new(),
        buf: Vec::new(),
        evs: Vec::new(),
    };
    if lead > 0 {
        p.total = lead;
        p.packet(p.first, p.first, lead, 0..0)?;
    }
    events(&mut |e| p.add(e, encode))?;
    let last = scan.last as u64;
    if p.started {
        p.end_run(last)?;
    } else {
        p.packet(p.first, last, p.total, 0..0)?;
    }
    if trail > 0 {
        p.packet(last, last, p.total.saturating_add(trail), 0..0)?;
    }
    Ok(())
}

/// A packet being written (of a run without losses): where its header is in
/// the file, its first event's time, the bytes of its events so far.
struct Open {
    at: u64,
    begin: u64,
    size: u64,
}

/// The packets being written.
struct Packets<'w> {
    out: &'w mut io::BufWriter<File>,
    /// The bytes written to `out`.
    at: u64,
    /// The oldest event's time.
    first: u64,
    /// Whether a packet was written.
    written: bool,
    /// The events lost so far.
    total: u64,
    /// Whether an event came.
    started: bool,
    /// Whether the run being read is one of OVERFLOW (and RESUME) events,
    /// and the events its OVERFLOW events report lost.
    in_loss: bool,
    run_lost: u64,
    /// The packet being written in a run without losses: its events are
    /// written as they come, its header (sizes, end time) once it ends.
    open: Option<Open>,
    /// Whether `open` is whole, waiting for the next event's time, its end.
    full: bool,
    /// One event's bytes.
    one: Vec<u8>,
    /// The bytes of a run of losses, not yet written, and the time of each of
    /// its events and where its bytes end.
    buf: Vec<u8>,
    evs: Vec<(u64, usize)>,
}

impl Packets<'_> {
    /// Takes in the next event (in time order).
    fn add(&mut self, e: &Event, encode: &dyn Fn(&Event, &mut dyn Sink)) -> io::Result<()> {
        let ts = e.timestamp.as_nanos() as u64;
        let loss = e.id == EventId::OVERFLOW || self.in_loss && e.id == EventId::RESUME;
        if self.started && loss != self.in_loss {
            self.end_run(ts)?;
        } else if self.full {
            self.close(ts)?;
        }
        self.started = true;
        self.in_loss = loss;
        if loss {
            encode(e, &mut self.buf);
            self.run_lost = self.run_lost.saturating_add(lost_at(e));
            self.evs.push((ts, self.buf.len()));
            return Ok(());
        }
        if self.open.is_none() {
            let at = self.head(self.total)?;
            self.write(&[0; PACKET_HEAD as usize])?;
            self.open = Some(Open {
                at,
                begin: ts,
                size: 0,
            });
        }
        let mut one = std::mem::take(&mut self.one);
        one.clear();
        encode(e, &mut one);
        let r = self.write(&one);
        if let Some(o) = &mut self.open {
            o.size += one.len() as u64;
            self.full = o.size >= PACKET_EVENTS;
        }
        self.one = one;
        r
    }

    /// Writes what is left of the run being read, which ends at `end` (the
    /// next event's time, or the last event's).
    fn end_run(&mut self, end: u64) -> io::Result<()> {
        if !self.in_loss {
            return self.close(end);
        }
        let total = self.total.saturating_add(self.run_lost);
        // A run that counts new losses is one packet; others are cut as
        // those without losses.
        let whole = total != self.total;
        self.total = total;
        let evs = std::mem::take(&mut self.evs);
        let mut from = 0;
        let mut begin = evs.first().map_or(end, |e| e.0);
        for (i, &(_, to)) in evs.iter().enumerate() {
            let next = evs.get(i + 1);
            if next.is_some() && (whole || ((to - from) as u64) < PACKET_EVENTS) {
                continue;
            }
            let until = next.map_or(end, |n| n.0);
            self.packet(begin, until, total, from..to)?;
            (from, begin) = (to, until);
        }
        self.evs = evs;
        self.evs.clear();
        self.buf.clear();
        self.run_lost = 0;
        Ok(())
    }

    /// Ends the open packet at `end`: its header written where it is.
    fn close(&mut self, end: u64) -> io::Result<()> {
        self.full = false;
        let Some(o) = self.open.take() else {
            return Ok(());
        };
        let mut h = Vec::with_capacity(PACKET_HEAD as usize);
        header(&mut h, o.size, o.begin, end, self.total);
        self.out.flush()?;
        self.out.get_ref().write_all_at(&h, o.at)
    }

    /// Where the next packet's header goes. The first packet counts no loss:
    /// an empty one that counts none goes first where it would.
    fn head(&mut self, discarded: u64) -> io::Result<u64> {
        if !self.written && discarded > 0 {
            self.written = true;
            let mut h = Vec::with_capacity(PACKET_HEAD as usize);
            header(&mut h, 0, self.first, self.first, 0);
            self.write(&h)?;
        }
        self.written = true;
        Ok(self.at)
    }

    /// Writes a whole packet: header, context, and the bytes `bytes` of `buf`.
    fn packet(
        &mut self,
        begin: u64,
        end: u64,
        discarded: u64,
        bytes: std::ops::Range<usize>,
    ) -> io::Result<()> {
        self.head(discarded)?;
        let mut h = Vec::with_capacity(PACKET_HEAD as usize);
        header(&mut h, bytes.len() as u64, begin, end, discarded);
        self.write(&h)?;
        let buf = std::mem::take(&mut self.buf);
        let r = self.write(&buf[bytes]);
        self.buf = buf;
        r
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.at += b.len() as u64;
        Ok(())
    }
}

/// A packet's header and context, for `size` bytes of events.
fn header(h: &mut Vec<u8>, size: u64, begin: u64, end: u64, discarded: u64) {
    let bits = (PACKET_HEAD + size) * 8;
    h.extend_from_slice(&CTF_MAGIC.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    for v in [bits, bits, begin, end, discarded] {
        h.extend_from_slice(&v.to_le_bytes());
    }
}
