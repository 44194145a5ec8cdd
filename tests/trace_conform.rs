//! Conformance to the POSIX trace pages (Issue 7): start on a stream whose
//! UNTIL_FULL log is full, and a parent's stream used in a forked child.
//!
//! Streams are process-wide (every running stream records every `event()` call of
//! the process), so the tests serialise on one lock.

#[path = "common/child.rs"]
mod child;
#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;
#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{open_log, serial};

use posixrt::trace::system_events as sys;
use posixrt::trace::{
    self, EventId, EventSet, FilterHow, LogFullPolicy, Trace, TraceAttr, TraceLog,
};
use posixrt::ErrorKind;

/// The (id, first data word) of every event of the log at `p`.
fn log_events(p: &std::path::Path) -> Vec<(EventId, u64)> {
    let mut l = TraceLog::open(p).unwrap();
    let evs: Vec<_> = l
        .events()
        .map(|e| {
            let e = e.unwrap();
            let mut w = [0u8; 8];
            let n = e.data.len().min(8);
            w[..n].copy_from_slice(&e.data[..n]);
            (e.id, u64::from_le_bytes(w))
        })
        .collect();
    assert!(l.is_complete());
    evs
}

/// posix_trace_attr_setlogfullpolicy, POSIX_TRACE_UNTIL_FULL: the stream is
/// flushed to the log until the log is full, and the last event the log
/// records is STOP. A `start()` then has no effect (as on a full stream,
/// posix_trace_start): it does not run the stream, whose every event the
/// full log would drop, until `clear()` empties the log. It ran the stream,
/// which the next flush stopped again after dropping START and every event
/// recorded since (a log overrun).
#[test]
fn start_has_no_effect_while_an_until_full_log_is_full() {
    let _g = serial();
    let (p, f) = open_log("until-full-start");
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::UntilFull);
    a.set_log_size(4096).unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("conform.log_full_start").unwrap();
    filter_all_but(&t, &[ev, EventId::START, EventId::STOP]);
    t.start().unwrap();
    let mut i = 0u64;
    while !t.status().log_full {
        for _ in 0..64 {
            trace::event(ev, &i.to_le_bytes());
            i += 1;
        }
        t.flush().unwrap();
        assert!(i < 1_000_000, "the log never filled");
    }
    let st = t.status(); // reads the overrun of the fill
    assert!(!st.running && st.log_full, "{st:?}");
    t.start().unwrap();
    let st = t.status();
    assert!(
        !st.running && st.log_full,
        "start ran a stream whose log is full: {st:?}"
    );
    trace::event(ev, &u64::MAX.to_le_bytes());
    t.flush().unwrap();
    let st = t.status();
    assert!(
        !st.log_overrun,
        "events recorded after the log filled: {st:?}"
    );
    // Emptied, the log takes events again.
    t.clear().unwrap();
    t.start().unwrap();
    assert!(t.status().running);
    trace::event(ev, &7u64.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    assert_eq!(
        log_events(&p.0),
        [(EventId::START, 0), (ev, 7), (EventId::STOP, 0)]
    );
}

/// The same log, read before the clear: START first, then the events that
/// fit, and STOP last.
#[test]
fn a_full_until_full_log_ends_with_stop() {
    let _g = serial();
    let (p, f) = open_log("until-full-stop");
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::UntilFull);
    a.set_log_size(4096).unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("conform.log_full_stop").unwrap();
    filter_all_but(&t, &[ev, EventId::START, EventId::STOP]);
    t.start().unwrap();
    let mut i = 0u64;
    while !t.status().log_full {
        trace::event(ev, &i.to_le_bytes());
        i += 1;
        if i % 64 == 0 {
            t.flush().unwrap();
        }
        assert!(i < 1_000_000, "the log never filled");
    }
    t.start().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    let evs = log_events(&p.0);
    assert_eq!(evs.first().map(|e| e.0), Some(EventId::START), "{evs:?}");
    assert_eq!(evs.last().map(|e| e.0), Some(EventId::STOP), "{evs:?}");
    let mid: Vec<u64> = evs[1..evs.len() - 1]
        .iter()
        .map(|&(id, v)| {
            assert_eq!(id, ev);
            v
        })
        .collect();
    assert!(!mid.is_empty());
    assert_eq!(mid, (0..mid.len() as u64).collect::<Vec<_>>());
}

/// POSIX_TRACE_CLOSE_FOR_CHILD: in a forked child the parent's stream is
/// not a valid trace stream (EINVAL for every call given it). The calls
/// that can fail refuse it (`InvalidState`, as start and the others did);
/// `eventid_open` and `eventid_name` answered for it. `valid()` says so for
/// the calls that cannot fail, and `status()` reports a stream that does
/// not run.
#[test]
fn a_forked_child_cannot_use_its_parents_stream() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("conform.fork").unwrap();
    assert!(t.valid().is_ok());
    t.start().unwrap();
    // SAFETY: the child calls methods that fail before taking a lock, and
    // leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let refused = |r: Result<(), posixrt::Error>| matches!(r, Err(e) if e.kind() == ErrorKind::InvalidState);
        let mut code = 0;
        if !refused(t.eventid_open("conform.fork.child").map(drop)) {
            code |= 1;
        }
        if !refused(t.eventid_name(ev).map(drop)) {
            code |= 2;
        }
        if !refused(t.valid()) {
            code |= 4;
        }
        if t.status().running {
            code |= 8;
        }
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let status = child::wait_child(pid);
    assert!(libc::WIFEXITED(status));
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "bits: 1 eventid_open, 2 eventid_name, 4 valid, 8 status"
    );
    assert!(t.status().running);
    assert_eq!(t.eventid_name(ev).unwrap(), "conform.fork");
    t.stop().unwrap();
}

/// posix_trace_set_filter: called while the trace is in progress, it
/// records FILTER with the old and the new sets. A filter that excludes
/// FILTER itself is recorded too when the old one let FILTER in (the event
/// comes as the change is made); a change made while FILTER is filtered out
/// before and after is not. The change that excluded FILTER was not
/// recorded: a reader saw event types vanish with no FILTER to say why.
#[test]
fn a_filter_that_excludes_filter_is_recorded_while_running() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("conform.filter_self").unwrap();
    let other = trace::eventid_open("conform.filter_other").unwrap();
    filter_all_but(
        &t,
        &[ev, other, EventId::FILTER, EventId::START, EventId::STOP],
    );
    t.start().unwrap();
    trace::event(ev, &1u64.to_le_bytes());
    let mut hide = EventSet::empty();
    hide.add(EventId::FILTER);
    hide.add(other);
    t.set_filter(&hide, FilterHow::Add).unwrap(); // recorded: the old filter admits FILTER
    let excluding = t.filter();
    trace::event(other, &2u64.to_le_bytes());
    trace::event(ev, &3u64.to_le_bytes());
    let mut quiet = EventSet::empty();
    quiet.add(ev);
    t.set_filter(&quiet, FilterHow::Add).unwrap(); // FILTER out before and after
    trace::event(ev, &4u64.to_le_bytes());
    let mut back = EventSet::empty();
    back.add(EventId::FILTER);
    back.add(ev);
    back.add(other);
    t.set_filter(&back, FilterHow::Sub).unwrap(); // recorded: the new filter admits it
    trace::event(other, &5u64.to_le_bytes());
    t.stop().unwrap();
    let evs: Vec<_> = t.events().skip_while(|e| e.id != EventId::START).collect();
    let ids: Vec<EventId> = evs.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        [
            EventId::START,
            ev,
            EventId::FILTER,
            ev,
            EventId::FILTER,
            other,
            EventId::STOP
        ]
    );
    // The payload: the old set, then the new one.
    assert!(excluding.contains(EventId::FILTER));
    let layout = t
        .event_types()
        .find(|x| x.id == EventId::FILTER)
        .unwrap()
        .fields;
    let vals = sys::decode(&layout, &evs[2].data).unwrap();
    let sys::Value::Set(new) = &vals[1].1 else {
        panic!("{vals:?}");
    };
    assert!(new.contains(&EventId::FILTER.raw()), "{vals:?}");
    assert!(
        new.contains(&other.raw()) && !new.contains(&ev.raw()),
        "{vals:?}"
    );
}
