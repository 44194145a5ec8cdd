//! Review: a log that keeps failing does not make the stream queue its
//! events in memory without end.

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;

use std::fs::File;

use posixrt::trace::{self, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr};

/// A log whose writes keep failing (here a pipe whose reader has gone; a
/// full file system alike) cannot take the stream's events: the flushes
/// stop taking them once a bounded backlog waits for the log, and the
/// stream's own policy applies (FLUSH: its full sub-buffer drops and counts
/// them, an overrun). Every flush took all the stream held and queued it for
/// the log: 3 million events of 8 bytes grew the process by some 40 MB, and
/// no loss was ever reported.
#[test]
fn a_failing_log_bounds_what_waits_for_it() {
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, File::from(wr)).unwrap();
    assert_eq!(t.attr().stream_full_policy(), StreamFullPolicy::Flush);
    drop(rd);
    let ev = trace::eventid_open("review.backlog").unwrap();
    filter_all_but(&t, &[ev]);
    t.start().unwrap();
    for round in 0..300u64 {
        for i in 0..10_000u64 {
            trace::event(ev, &(round << 32 | i).to_le_bytes());
        }
        let e = t.flush().unwrap_err();
        assert_eq!(e.errno(), Some(libc::EPIPE), "{e}");
    }
    let st = t.status();
    assert!(st.overrun, "events the log could not take are lost: {st:?}");
    t.stop().unwrap();
    assert!(t.shutdown().is_err(), "the log is not written");
}
