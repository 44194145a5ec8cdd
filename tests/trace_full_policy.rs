//! The stream full policies against POSIX: what `stop` and `start` do on a
//! full stream, and what a reader gets from a stream that filled.
//!
//! Streams are process-wide (every running stream records every `event()` call of
//! the process), so the tests serialise on one lock.

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{open_log, serial};

use std::time::Duration;

use posixrt::trace::{
    self, Event, EventId, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr, TraceLog,
};

/// An UNTIL_FULL stream with an UNTIL_FULL log stops when its log fills (the
/// log ends with its STOP, reason 2, and drops every event after it; `start`
/// is ignored until `clear`). A stream the UNTIL_FULL policy had suspended
/// when the flush filled its log must stay stopped too: the flush frees its
/// sub-buffers, which resumed it with a START, to record only events the full
/// log then dropped.
#[test]
fn a_full_log_keeps_a_full_until_full_stream_stopped() {
    let _g = serial();
    let ev = trace::eventid_open("tfp.log_full").unwrap();
    let (p, f) = open_log("log_full.trace");
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    a.set_log_full_policy(LogFullPolicy::UntilFull);
    a.set_log_size(4096).unwrap();
    // Only the explicit flush writes the log.
    a.set_flush_interval(Duration::from_secs(3600)).unwrap();
    let t = Trace::create_with_log(&a, f).unwrap();
    t.start().unwrap();
    let mut i = 0u64;
    while t.status().running {
        assert!(i < 10_000, "never stopped by fullness");
        trace::event(ev, &i.to_le_bytes());
        i += 1;
    }
    // The stream holds more than the log takes.
    t.flush().unwrap();
    let st = t.status();
    assert!(st.log_full, "{st:?}");
    assert!(!st.running, "resumed with a full log: {st:?}");
    t.start().unwrap();
    assert!(
        !t.status().running,
        "start is ignored while the log is full"
    );
    for j in 0..10u64 {
        trace::event(ev, &(i + j).to_le_bytes());
    }
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p.0).unwrap();
    let evs: Vec<Event> = l.events().map(|e| e.unwrap()).collect();
    let last = evs.last().unwrap();
    assert_eq!(
        (last.id, &last.data[..]),
        (EventId::STOP, &2u32.to_le_bytes()[..])
    );
    assert_eq!(
        evs.iter().filter(|e| e.id == EventId::START).count(),
        1,
        "no START after the first"
    );
}
