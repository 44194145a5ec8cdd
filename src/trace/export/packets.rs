//! The packets of the CTF export's stream, which carry the events lost where
//! the log tells it (CTF 1.8's `events_discarded`, which babeltrace2 reports).

use std::io::{self, Write};

use super::Loaded;
use crate::trace::{Event, EventId, LogFullPolicy};

/// A packet of the stream: the events `from..to` (of the sorted events), its
/// time span, and the events lost in the stream up to its end.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Packet {
    pub from: usize,
    pub to: usize,
    pub begin: u64,
    pub end: u64,
    /// `events_discarded`: a running count, as CTF 1.8 has it (readers report
    /// the growth from one packet to the next, over the time from the end of
    /// the one to the end of the other).
    pub discarded: u64,
}

/// The events an OVERFLOW reports lost (its `u64` count), 0 for other events.
fn lost_at(e: &Event) -> u64 {
    if e.id != EventId::OVERFLOW {
        return 0;
    }
    e.data
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Splits `events` (in time order) into packets so that each loss shows in
/// the time it happened: every run of OVERFLOW and RESUME events gets a
/// packet of its own, from the OVERFLOW (stamped as the last event before the
/// loss) to the next event, and counts its losses. Losses the log's status
/// counts beyond its OVERFLOW events (events a LOOP log dropped, the events an
/// UNTIL_FULL log had no room for, an OVERFLOW filtered out or dropped with
/// the oldest events) go in an empty packet at the first event for a LOOP log
/// (it drops the oldest), else at the last. The first packet counts no loss
/// (an empty one comes first if need be): readers count from it. Without
/// events, one empty packet.
pub(super) fn packets(l: &Loaded<'_>) -> Vec<Packet> {
    let ts = |i: usize| l.at(i).timestamp.as_nanos() as u64;
    let mut starts = vec![0];
    let mut in_loss = false;
    for (i, e) in l.iter().enumerate() {
        let loss = e.id == EventId::OVERFLOW || in_loss && e.id == EventId::RESUME;
        if i > 0 && loss != in_loss {
            starts.push(i);
        }
        in_loss = loss;
    }
    let in_log = l.iter().fold(0u64, |n, e| n.saturating_add(lost_at(e)));
    let looping = l
        .log
        .attr()
        .is_some_and(|a| a.log_full_policy() == LogFullPolicy::Loop);
    let (lead, trail) = match l.log.status() {
        Some(s) => {
            let rest = s.stream_lost.saturating_sub(in_log);
            if looping {
                (s.log_lost, rest)
            } else {
                (0, s.log_lost.saturating_add(rest))
            }
        }
        None => (0, 0),
    };
    let (first, last) = match l.len() {
        0 => (0, 0),
        n => (ts(0), ts(n - 1)),
    };
    let mut out = Vec::new();
    let mut total = 0u64;
    let n = l.len();
    if lead > 0 {
        total = lead;
        out.push(Packet {
            from: 0,
            to: 0,
            begin: first,
            end: first,
            discarded: total,
        });
    }
    for (k, &from) in starts.iter().enumerate() {
        let to = starts.get(k + 1).copied().unwrap_or(n);
        let lost = l
            .range(from, to)
            .fold(0u64, |n, e| n.saturating_add(lost_at(e)));
        total = total.saturating_add(lost);
        out.push(Packet {
            from,
            to,
            begin: if from < n { ts(from) } else { first },
            end: if to < n { ts(to) } else { last },
            discarded: total,
        });
    }
    // Readers give no count for losses in a stream's first packet (nothing
    // before it to count from): it then counts none.
    if out[0].discarded > 0 {
        out.insert(
            0,
            Packet {
                from: 0,
                to: 0,
                begin: first,
                end: first,
                discarded: 0,
            },
        );
    }
    if trail > 0 {
        out.push(Packet {
            from: n,
            to: n,
            begin: last,
            end: last,
            discarded: total.saturating_add(trail),
        });
    }
    out
}

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

/// Counts the bytes put.
struct Count(u64);

impl Sink for Count {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}

/// Writes the bytes put into `w`, counting them; after an error, none (the
/// first error is kept).
struct Put<'w, W: Write> {
    w: &'w mut W,
    n: u64,
    err: Option<io::Error>,
}

impl<W: Write> Sink for Put<'_, W> {
    fn put(&mut self, bytes: &[u8]) {
        if self.err.is_none() {
            self.n += bytes.len() as u64;
            if let Err(e) = self.w.write_all(bytes) {
                self.err = Some(e);
            }
        }
    }
}

/// Writes the stream of the events of `l` into `out`, each event's bytes
/// those `encode` puts, packet by packet ([`packets`]) through a 64 KiB
/// buffer: each packet's events are counted (`encode` into a [`Count`]),
/// its header and context written with its real sizes, then its events. A
/// packet that counts no new loss ends after the event that brings it to
/// [`PACKET_EVENTS`] bytes, and the next one begins at the next event (its
/// end and the next one's begin are that event's time, its count of
/// discarded events that of the whole): readers report the same losses over
/// the same times. A packet that counts new losses (a run of OVERFLOW
/// events) stays whole, so the loss shows over its time as before. Nothing
/// but the buffer grows with the packets.
///
/// # Errors
/// The first error of writing to `out`, which ends the stream there.
pub(super) fn write_stream(
    l: &Loaded<'_>,
    encode: &dyn Fn(&Event, &mut dyn Sink),
    out: impl Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let r = write_packets(l, encode, &mut out).and_then(|()| out.flush());
    if r.is_err() {
        // Given up: not written again when `out` drops.
        drop(out.into_parts());
    }
    r
}

/// The packets of [`write_stream`], into `out`.
fn write_packets(
    l: &Loaded<'_>,
    encode: &dyn Fn(&Event, &mut dyn Sink),
    out: &mut impl Write,
) -> io::Result<()> {
    let ts = |i: usize| l.at(i).timestamp.as_nanos() as u64;
    let mut counted = 0;
    for p in packets(l) {
        let whole = p.discarded != counted;
        counted = p.discarded;
        let mut from = p.from;
        loop {
            let (mut to, mut size) = (from, 0u64);
            while to < p.to && (whole || size < PACKET_EVENTS) {
                let mut c = Count(0);
                encode(l.at(to), &mut c);
                size += c.0;
                to += 1;
            }
            let bits = (PACKET_HEAD + size) * 8;
            let begin = if from == p.from { p.begin } else { ts(from) };
            let end = if to == p.to { p.end } else { ts(to) };
            out.write_all(&CTF_MAGIC.to_le_bytes())?;
            out.write_all(&0u32.to_le_bytes())?;
            for v in [bits, bits, begin, end, p.discarded] {
                out.write_all(&v.to_le_bytes())?;
            }
            let mut put = Put {
                w: out,
                n: 0,
                err: None,
            };
            for e in l.range(from, to) {
                encode(e, &mut put);
            }
            if let Some(e) = put.err {
                return Err(e);
            }
            debug_assert_eq!(put.n, size, "an event's bytes differ from their count");
            from = to;
            if from >= p.to {
                break;
            }
        }
    }
    Ok(())
}
