//! Review tests of the POSIX trace facility: edges of the full policies, logs
//! and status flags, against the POSIX text.
//!
//! Streams are process-wide, so the tests serialise on one lock.

use std::fs::File;
use std::sync::{Mutex, MutexGuard};

use posixrt::trace::{
    self, EventId, EventSet, FillWhat, FilterHow, StreamFullPolicy, Trace, TraceAttr, TRACE_SYS_MAX,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// POSIX `posix_trace_create_withlog`: ENOSPC when "the device corresponding
/// to the argument file_desc does not contain the space required to create
/// this trace log". A log on a device with no space at all (`/dev/full`) is
/// refused at creation, not taken and left to fail at its first flush; and a
/// refused creation holds no stream.
#[test]
fn create_with_log_on_a_full_device_fails_with_enospc() {
    let _g = serial();
    for _ in 0..2 * TRACE_SYS_MAX {
        let f = File::options().write(true).open("/dev/full").unwrap();
        let e = Trace::create_with_log(&TraceAttr::new(), f).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOSPC), "{e}");
    }
    let held: Vec<Trace> = (0..TRACE_SYS_MAX)
        .map(|_| Trace::create(&TraceAttr::new()).unwrap())
        .collect();
    drop(held);
}

/// Every type but `ids` and the events that report losses, starts and stops
/// is filtered out (other tests' threads record meanwhile).
fn record_only(t: &Trace, ids: &[EventId]) {
    let mut f = EventSet::empty();
    f.fill(FillWhat::All);
    for &id in ids.iter().chain(&[
        EventId::START,
        EventId::STOP,
        EventId::OVERFLOW,
        EventId::RESUME,
    ]) {
        f.del(id);
    }
    t.set_filter(&f, FilterHow::Set).unwrap();
}

/// An UNTIL_FULL stream suspended by its fullness (POSIX: "trace stream
/// suspended ... POSIX_TRACE_STOP") takes nothing from the other streams:
/// event types are still opened for the process, and a running LOOP stream
/// records every event, its status clean, while the full one counts the
/// events lost and resumes (START) once cleared.
#[test]
fn a_stream_suspended_by_fullness_leaves_the_other_streams_alone() {
    let _g = serial();
    let ev = trace::eventid_open("review.full_and_other").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let full = Trace::create(&a).unwrap();
    let other = Trace::create(&TraceAttr::new()).unwrap();
    record_only(&full, &[ev]);
    full.start().unwrap();
    other.start().unwrap();
    let mut n = 0u64;
    while full.status().running {
        trace::event(ev, &n.to_le_bytes());
        n += 1;
        assert!(n < 100_000, "the 4 KiB stream never filled");
    }
    let late = trace::eventid_open("review.full_and_other.late").unwrap();
    assert!(!late.is_system() && late != EventId::UNNAMED_USER);
    record_only(&other, &[ev, late]);
    for k in 0..10u64 {
        trace::event(late, &k.to_le_bytes()); // the other stream's only
        trace::event(ev, &k.to_le_bytes()); // both streams'
    }
    let st = other.status();
    assert!(st.running && !st.full && !st.overrun, "{st:?}");
    let st = full.status();
    assert!(!st.running && st.full && st.overrun, "{st:?}");
    other.stop().unwrap();
    let got: Vec<(EventId, u64)> = other
        .events()
        .filter(|e| e.id == late || e.id == ev)
        .map(|e| (e.id, u64::from_le_bytes(e.data[..8].try_into().unwrap())))
        .collect();
    let want: Vec<(EventId, u64)> = (0..n)
        .map(|i| (ev, i))
        .chain((0..10).flat_map(|k| [(late, k), (ev, k)]))
        .collect();
    assert_eq!(got, want);
    full.clear().unwrap();
    let st = full.status();
    assert!(st.running && !st.full, "{st:?}");
    full.stop().unwrap();
    let ids: Vec<EventId> = full.events().map(|e| e.id).collect();
    assert_eq!(ids, [EventId::START, EventId::STOP], "resumed by the clear");
}
