//! The packets of the CTF export's stream, which carry the events lost where
//! the log tells it (CTF 1.8's `events_discarded`, which babeltrace2 reports).

use crate::trace::{Event, EventId, LogFullPolicy, TraceLog};

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
pub(super) fn packets(log: &TraceLog, events: &[&Event]) -> Vec<Packet> {
    let ts = |i: usize| events[i].timestamp.as_nanos() as u64;
    let mut starts = vec![0];
    let mut in_loss = false;
    for (i, e) in events.iter().enumerate() {
        let loss = e.id == EventId::OVERFLOW || in_loss && e.id == EventId::RESUME;
        if i > 0 && loss != in_loss {
            starts.push(i);
        }
        in_loss = loss;
    }
    let in_log = events
        .iter()
        .fold(0u64, |n, e| n.saturating_add(lost_at(e)));
    let looping = log
        .attr()
        .is_some_and(|a| a.log_full_policy() == LogFullPolicy::Loop);
    let (lead, trail) = match log.status() {
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
    let (first, last) = match events.len() {
        0 => (0, 0),
        n => (ts(0), ts(n - 1)),
    };
    let mut out = Vec::new();
    let mut total = 0u64;
    let n = events.len();
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
        let lost = events[from..to]
            .iter()
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
