//! Unit tests of the stream full policies at the edge of a sub-buffer: what
//! the control events recorded into the room kept for them leave for the
//! events the policies themselves record.

use std::sync::atomic::Ordering::*;

use super::attr::{StreamFullPolicy, TraceAttr};
use super::handle::Trace;
use super::ids::EventId;
use super::scratch;
use super::seam::{self, Point};
use super::set::FilterHow;
use super::slots::lock;

/// POSIX (`posix_trace_attr_getstreamfullpolicy`, POSIX_TRACE_UNTIL_FULL):
/// "When this trace stream is read, a POSIX_TRACE_STOP trace event shall be
/// reported after reporting the last recorded trace event." Control events
/// (here two filter changes, FILTER being the largest system event) go into
/// the room a sub-buffer keeps past its normal events; they must leave room
/// there for the STOP the stream records when it fills, or it suspends
/// itself without one.
#[test]
fn filter_changes_near_the_end_leave_room_for_the_stop_of_fullness() {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    let ev = super::eventid_open("full_tests.filter_reserve").unwrap();
    let only = [
        ev,
        EventId::START,
        EventId::STOP,
        EventId::FILTER,
        EventId::OVERFLOW,
        EventId::RESUME,
    ];
    scratch::record_only(&t, &only);
    let filter = t.filter();
    t.start().unwrap();
    super::event(ev, &0u64.to_le_bytes());
    let tid = crate::sys::tid::current();
    let mut i = 1u64;
    {
        let _st = lock(&t.s.reader);
        let rings = t.s.rings_snapshot();
        let r = rings.iter().find(|r| r.tid == tid).unwrap();
        // Normal events up to their limit: less than one more fits.
        let limit = r.cap - t.s.reserve;
        while r.used() + 24 <= limit {
            super::event(ev, &i.to_le_bytes());
            i += 1;
        }
        assert!(t.s.running());
        // Two changes of the filter (to the same set): FILTER is recorded
        // into the room kept for control events, as far as it goes (the
        // second one no longer fits once room for the STOP is left).
        for _ in 0..2 {
            t.set_filter(&filter, FilterHow::Set).unwrap();
        }
        assert_eq!(r.lost.load(Relaxed), 1, "the second FILTER");
    }
    // The event that no longer fits: the stream stops itself.
    super::event(ev, &i.to_le_bytes());
    assert!(!t.s.running());
    let evs: Vec<(EventId, Vec<u8>)> = std::iter::from_fn(|| t.try_getnext().unwrap())
        .filter(|e| e.tid == tid)
        .map(|e| (e.id, e.data))
        .collect();
    t.shutdown().unwrap();
    let last = evs.iter().rposition(|e| e.0 == ev).unwrap();
    let after: Vec<EventId> = evs[last + 1..].iter().map(|e| e.0).collect();
    let stop = evs[last + 1..].iter().position(|e| e.0 == EventId::STOP);
    assert!(stop.is_some(), "no STOP after the last event: {after:?}");
    assert_eq!(
        evs[last + 1 + stop.unwrap()].1,
        1u32.to_le_bytes(),
        "reason: full"
    );
    // The first filter change, the losses (the second one and the event
    // that did not fit), then the STOP.
    assert_eq!(
        after[..4],
        [
            EventId::FILTER,
            EventId::OVERFLOW,
            EventId::RESUME,
            EventId::STOP
        ],
        "{after:?}"
    );
    assert_eq!(evs[last + 2].1[..8], 2u64.to_le_bytes());
}

/// An UNTIL_FULL stream whose filter keeps STOP out records no STOP when it
/// fills, the record that carries the count of the event it dropped: the
/// next record of the writer must carry it, so that readers report the loss
/// where it happened (before the automatic resume's START and the events
/// after it), not after every event recorded since.
#[test]
fn a_full_until_full_stream_without_stop_reports_its_loss_in_place() {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    let ev = super::eventid_open("full_tests.no_stop").unwrap();
    // STOP is filtered out.
    scratch::record_only(
        &t,
        &[ev, EventId::START, EventId::OVERFLOW, EventId::RESUME],
    );
    t.start().unwrap();
    let tid = crate::sys::tid::current();
    let mut i = 0u64;
    while t.s.running() {
        assert!(i < 10_000, "never stopped by fullness");
        super::event(ev, &i.to_le_bytes());
        i += 1;
    }
    let mut evs = Vec::new();
    // Read until the stream resumes (half empty), then record after it.
    while !t.s.running() {
        evs.push(t.try_getnext().unwrap().expect("resumed before empty"));
    }
    for j in 0..5u64 {
        super::event(ev, &(100_000 + j).to_le_bytes());
    }
    evs.extend(std::iter::from_fn(|| t.try_getnext().unwrap()));
    t.shutdown().unwrap();
    let got: Vec<(EventId, u64)> = evs
        .iter()
        .filter(|e| e.tid == tid)
        .map(|e| {
            let mut w = [0u8; 8];
            let n = e.data.len().min(8);
            w[..n].copy_from_slice(&e.data[..n]);
            (e.id, u64::from_le_bytes(w))
        })
        .collect();
    let kept = i - 1;
    let at = got.iter().position(|&e| e == (ev, kept - 1)).unwrap();
    assert_eq!(
        got[at..at + 5],
        [
            (ev, kept - 1),
            (EventId::OVERFLOW, 1),
            (EventId::RESUME, 0),
            (EventId::START, 0),
            (ev, 100_000)
        ],
        "the loss where it happened"
    );
    assert_eq!(got.iter().filter(|e| e.0 == EventId::OVERFLOW).count(), 1);
}

/// POSIX (`posix_trace_start`): "If the trace stream is full, the
/// POSIX_TRACE_START trace event shall not be recorded and the status of the
/// trace stream shall not be changed." A `start` on a running UNTIL_FULL
/// stream that a writer fills (and the policy suspends) before `start` takes
/// the control lock must not run the full stream again: it looked at the
/// fullness before the lock, and then found the stream not running.
#[test]
fn a_start_racing_the_fill_of_an_until_full_stream_does_not_run_it() {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    let ev = super::eventid_open("full_tests.start_race").unwrap();
    scratch::record_only(&t, &[ev, EventId::START, EventId::STOP]);
    t.start().unwrap();
    let slot = t.s.slot;
    // Between its look at the fullness and the lock, this thread fills
    // the stream until the policy suspends it.
    seam::once_at(Point::StartLocking, move || {
        let mut i = 0u64;
        while super::slots::is_running(slot) {
            assert!(i < 10_000, "never stopped by fullness");
            super::event(ev, &i.to_le_bytes());
            i += 1;
        }
    });
    t.start().unwrap();
    assert!(!t.s.running(), "a full stream started");
    assert!(t.status().full);
    let tid = crate::sys::tid::current();
    let ctl: Vec<(EventId, Vec<u8>)> = std::iter::from_fn(|| t.try_getnext().unwrap())
        .filter(|e| e.tid == tid && e.id != ev)
        .map(|e| (e.id, e.data))
        .collect();
    t.shutdown().unwrap();
    // The first START, the STOP of fullness, and the START of the
    // automatic resume that reading it empty brings.
    assert_eq!(
        ctl,
        [
            (EventId::START, vec![]),
            (EventId::STOP, 1u32.to_le_bytes().to_vec()),
            (EventId::START, vec![])
        ]
    );
}

/// A status read while a writer fills a running UNTIL_FULL stream (the
/// policy suspends it between the status's looks at its fullness and at
/// whether it runs) says what the stream is at one moment: running and not
/// full, or suspended and full. Never suspended and not full, which no
/// moment of a stream that suspended itself had (and on which a `start`,
/// called since the stream is "merely stopped", is ignored).
#[test]
fn a_status_read_while_the_stream_fills_is_of_one_moment() {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    let ev = super::eventid_open("full_tests.status_race").unwrap();
    scratch::record_only(&t, &[ev, EventId::START, EventId::STOP]);
    t.start().unwrap();
    let slot = t.s.slot;
    seam::once_at(Point::StatusLooking, move || {
        let mut i = 0u64;
        while super::slots::is_running(slot) {
            assert!(i < 10_000, "never stopped by fullness");
            super::event(ev, &i.to_le_bytes());
            i += 1;
        }
    });
    let st = t.status();
    assert!(!t.s.running(), "the hook filled the stream");
    assert_eq!(
        st.running, !st.full,
        "neither the status before the fill nor after it: {st:?}"
    );
    t.shutdown().unwrap();
}
