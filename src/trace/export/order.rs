//! Time order without holding the log: a first pass ([`Scan`]) finds the
//! stretches of the log that are in time order and gathers what the exports'
//! headers need; the write pass ([`in_time_order`]) reads the log again and
//! merges the stretches through a heap that holds only the events that
//! arrived early (a later stretch's events older than the current one's).

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io;

use super::{clock_offset, ctf_latest_ns, Meta};
use crate::trace::{Event, EventId, TraceLog};
use crate::Error;

/// The events an OVERFLOW reports lost (its `u64` count), 0 for other events.
pub(super) fn lost_at(e: &Event) -> u64 {
    if e.id != EventId::OVERFLOW {
        return 0;
    }
    e.data
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A stretch of the log in time order: where it begins (its first event's
/// position in the log), and the lowest first timestamp of the stretches
/// after it (none: `u128::MAX`), and its own first timestamp.
struct Stretch {
    start: u64,
    first: u128,
    later: u128,
}

/// An id's flags in a [`Scan`]: some event has it.
pub(super) const USED: u8 = 1;
/// Some event of it has bytes past its fields.
pub(super) const TAIL: u8 = 2;
/// Some event's bytes past its fields hold a NUL or are not UTF-8.
pub(super) const BYTES: u8 = 4;
/// Some event of it (with fields) was truncated or is shorter than its fields.
pub(super) const CUT: u8 = 8;
/// A system id without fields of which some event has bytes or was truncated.
pub(super) const BARE: u8 = 16;

/// What one read of a log (or of a list of events, in log order) tells the
/// exports before they write: where its time-ordered stretches begin, and
/// what their headers need (the Chrome export's processes and threads, the
/// CTF export's event layouts, losses and time span). Its memory grows with
/// the number of stretches, threads and event types, not with the events.
pub struct Scan {
    pub(super) meta: Meta,
    count: u64,
    stretches: Vec<Stretch>,
    /// The lowest and highest timestamps (ns), 0 without events.
    pub(super) first: u128,
    pub(super) last: u128,
    /// Per tid (not 0): the pid (not 0) of its oldest event that has one,
    /// keyed by (timestamp, position).
    of_tid: BTreeMap<u32, (u128, u64, u32)>,
    pids: BTreeSet<u32>,
    pairs: BTreeSet<(u32, u32)>,
    /// The tids of the events without a pid.
    wopid_tids: BTreeSet<u32>,
    /// Flags per id ([`USED`], [`TAIL`], ...).
    pub(super) flags: Vec<u8>,
    /// The events OVERFLOW events report lost, summed.
    pub(super) lost: u64,
    /// The events stamped past what CTF readers show, and the oldest of
    /// them (timestamp, position, id).
    pub(super) late: u64,
    pub(super) first_late: Option<(u128, u64, EventId)>,
    /// The latest time CTF readers show for this log.
    latest: u128,
    /// The previous event's timestamp.
    prev: u128,
    error: Option<Error>,
}

impl Scan {
    /// Reads `log` once from its first event (rewinding it first) to its end
    /// or to the error that ends it (a cut, a damaged record), which
    /// [`error`](Self::error) keeps: the exports then write the events
    /// before it.
    ///
    /// # Errors
    /// That of rewinding (`ESPIPE` for a log read from a pipe after an event
    /// was taken).
    pub fn read(log: &mut TraceLog) -> crate::Result<Scan> {
        log.rewind()?;
        let mut s = Scan::begin(log);
        loop {
            match log.next_event() {
                Ok(Some(e)) => s.add(&e),
                Ok(None) => break,
                Err(e) => {
                    s.error = Some(e);
                    break;
                }
            }
        }
        Ok(s.end())
    }

    /// The scan of `events` (in log order) of `log`.
    pub(super) fn of_events(log: &TraceLog, events: &[Event]) -> Scan {
        let mut s = Scan::begin(log);
        for e in events {
            s.add(e);
        }
        s.end()
    }

    /// How many events were read.
    pub fn events(&self) -> u64 {
        self.count
    }

    /// The error that ended the read, if the log did not end cleanly.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// The error that ended the read, taken out.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    fn begin(log: &TraceLog) -> Scan {
        let meta = Meta::of(log);
        Scan {
            latest: ctf_latest_ns(clock_offset(&meta).unwrap_or(0)),
            prev: 0,
            meta,
            count: 0,
            stretches: Vec::new(),
            first: 0,
            last: 0,
            of_tid: BTreeMap::new(),
            pids: BTreeSet::new(),
            pairs: BTreeSet::new(),
            wopid_tids: BTreeSet::new(),
            flags: vec![0; 1 << 16],
            lost: 0,
            late: 0,
            first_late: None,
            error: None,
        }
    }

    fn add(&mut self, e: &Event) {
        let pos = self.count;
        let ts = e.timestamp.as_nanos();
        if pos == 0 || ts < self.prev {
            self.stretches.push(Stretch {
                start: pos,
                first: ts,
                later: u128::MAX,
            });
        }
        self.prev = ts;
        if pos == 0 {
            (self.first, self.last) = (ts, ts);
        }
        self.first = self.first.min(ts);
        self.last = self.last.max(ts);
        // Chrome: processes and threads.
        if e.pid != 0 && e.tid != 0 {
            let key = (ts, pos, e.pid);
            self.of_tid
                .entry(e.tid)
                .and_modify(|k| *k = (*k).min(key))
                .or_insert(key);
            self.pairs.insert((e.pid, e.tid));
        }
        if e.pid != 0 {
            self.pids.insert(e.pid);
        } else {
            self.wopid_tids.insert(e.tid);
        }
        // CTF: layouts, losses, times.
        let fixed = self.meta.fixed(e.id);
        let mut f = USED;
        if fixed.is_some_and(|n| e.data.len() > n) {
            f |= TAIL;
        }
        let tail = fixed.and_then(|n| e.data.get(n..)).unwrap_or(&[]);
        if tail.contains(&0) || std::str::from_utf8(tail).is_err() {
            f |= BYTES;
        }
        if (e.truncated && fixed.is_some()) || fixed.is_some_and(|n| e.data.len() < n) {
            f |= CUT;
        }
        if e.id.is_system() && fixed.is_none() && (e.truncated || !e.data.is_empty()) {
            f |= BARE;
        }
        self.flags[usize::from(e.id.raw())] |= f;
        self.lost = self.lost.saturating_add(lost_at(e));
        if ts > self.latest {
            self.late += 1;
            let k = (ts, pos, e.id);
            if self.first_late.map_or(true, |f| (k.0, k.1) < (f.0, f.1)) {
                self.first_late = Some(k);
            }
        }
        self.count += 1;
    }

    /// Sets each stretch's lowest first timestamp of those after it.
    fn end(mut self) -> Scan {
        let mut low = u128::MAX;
        for s in self.stretches.iter_mut().rev() {
            s.later = low;
            low = low.min(s.first);
        }
        self
    }

    /// The pid each event shows under in the Chrome export: its own
    /// (`posix_pid`); an event without one (pid 0) shows under the process
    /// of its thread, as the oldest event of that tid with a pid gives it,
    /// else under the log's process: viewers take pid 0 for the kernel's
    /// idle task.
    pub(super) fn shown_pid(&self, e: &Event) -> u32 {
        match e.pid {
            0 => self.tid_pid(e.tid),
            p => p,
        }
    }

    fn tid_pid(&self, tid: u32) -> u32 {
        self.of_tid.get(&tid).map_or(self.meta.pid(), |k| k.2)
    }

    /// The pids the Chrome export names: the log's first, then every other
    /// one events show under, in order.
    pub(super) fn shown_pids(&self) -> Vec<u32> {
        let mut pids = self.pids.clone();
        for &t in &self.wopid_tids {
            pids.insert(self.tid_pid(t));
        }
        let log = self.meta.pid();
        let mut pids: Vec<u32> = pids.into_iter().filter(|&p| p != log).collect();
        pids.insert(0, log);
        pids
    }

    /// The (pid, tid) pairs of the Chrome export's threads (tid 0 is none).
    pub(super) fn shown_threads(&self) -> BTreeSet<(u32, u32)> {
        let mut pairs = self.pairs.clone();
        for &t in self.wopid_tids.iter().filter(|&&t| t != 0) {
            pairs.insert((self.tid_pid(t), t));
        }
        pairs
    }
}

/// An event held until it is its turn, ordered by (timestamp, position).
struct Held<T> {
    ts: u128,
    pos: u64,
    ev: T,
}

impl<T> PartialEq for Held<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.pos) == (o.ts, o.pos)
    }
}

impl<T> Eq for Held<T> {}

impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl<T> Ord for Held<T> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.ts, self.pos).cmp(&(o.ts, o.pos))
    }
}

/// Hands the first [`Scan::events`] of `events` (the scanned events, read
/// again in log order) to `emit` in non-decreasing timestamp order, equal
/// timestamps in log order (as a stable sort by timestamp orders them).
/// After an event of stretch k, every held event stamped no later than
/// both it and the first event of every later stretch is emitted: nothing
/// still to come goes before it. Events come out as they go in while the
/// log is in time order; only events that came early are held.
///
/// # Errors
/// The first error of `emit`, which ends it.
pub(super) fn in_time_order<T: std::borrow::Borrow<Event>>(
    scan: &Scan,
    events: impl Iterator<Item = T>,
    mut emit: impl FnMut(&Event) -> io::Result<()>,
) -> io::Result<()> {
    let mut held: BinaryHeap<Reverse<Held<T>>> = BinaryHeap::new();
    let mut k = 0;
    for (pos, ev) in (0..scan.count).zip(events) {
        while scan.stretches.get(k + 1).is_some_and(|s| s.start <= pos) {
            k += 1;
        }
        let ts = ev.borrow().timestamp.as_nanos();
        let upto = scan.stretches.get(k).map_or(u128::MAX, |s| s.later).min(ts);
        if held.is_empty() && ts <= upto {
            emit(ev.borrow())?;
            continue;
        }
        held.push(Reverse(Held { ts, pos, ev }));
        while held.peek().is_some_and(|h| h.0.ts <= upto) {
            if let Some(Reverse(h)) = held.pop() {
                emit(h.ev.borrow())?;
            }
        }
    }
    while let Some(Reverse(h)) = held.pop() {
        emit(h.ev.borrow())?;
    }
    Ok(())
}
