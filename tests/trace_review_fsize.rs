//! Review: a log whose writes fail part-way (a file size limit reached, as
//! a full file system) and then succeed again. In a process of its own: it
//! sets RLIMIT_FSIZE for the process.

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;
#[path = "common/fsize.rs"]
mod fsize;
use fsize::{ignore_sigxfsz, set_fsize};

use std::fs::File;

use posixrt::trace::{self, Event, EventId, LogFullPolicy, Trace, TraceAttr, TraceLog};

/// A flush whose write stops part-way (EFBIG past RLIMIT_FSIZE, as ENOSPC
/// on a file system that fills up) leaves what it wrote in the log: once
/// writes succeed again, the log goes on after it, and reads back whole,
/// every event once and in order, with no damaged record in the middle.
#[test]
fn a_log_write_cut_short_goes_on_where_it_stopped() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    ignore_sigxfsz();
    let p = std::env::temp_dir().join(format!("posixrt-review-fsize-{}", std::process::id()));
    let ev = trace::eventid_open("review.fsize").unwrap();
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
    filter_all_but(&t, &[ev]);
    t.start().unwrap();
    for i in 0..100u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    t.flush().unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    set_fsize(len + 100);
    for i in 100..400u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    let e = t.flush().unwrap_err();
    assert_eq!(e.errno(), Some(libc::EFBIG), "{e}");
    assert_eq!(
        std::fs::metadata(&p).unwrap().len(),
        len + 100,
        "written part-way"
    );
    set_fsize(libc::RLIM_INFINITY);
    for i in 400..500u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    t.flush().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let got: Result<Vec<u64>, _> = l
        .events()
        .filter(|e| e.as_ref().map_or(true, |e| e.id == ev))
        .map(|e| e.map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap())))
        .collect();
    let _ = std::fs::remove_file(&p);
    let got = got.unwrap();
    assert!(l.is_complete());
    assert_eq!(got, (0..500).collect::<Vec<_>>());
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A log that refused every write for longer than its backlog holds (the
/// stream then drops and counts what it cannot keep) takes the backlog and
/// the events after it once writes succeed again: the log reads back whole,
/// and every event recorded is either in it, in order, or counted lost by
/// an OVERFLOW.
#[test]
fn a_log_that_recovers_from_a_long_failure_accounts_for_every_event() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    ignore_sigxfsz();
    let p = std::env::temp_dir().join(format!("posixrt-review-fsize2-{}", std::process::id()));
    let ev = trace::eventid_open("review.fsize_long").unwrap();
    let mut a = TraceAttr::new();
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
    filter_all_but(&t, &[ev, EventId::OVERFLOW]);
    t.start().unwrap();
    t.flush().unwrap();
    set_fsize(std::fs::metadata(&p).unwrap().len());
    let mut n = 0u64;
    for _ in 0..250 {
        for _ in 0..10_000 {
            trace::event(ev, &n.to_le_bytes());
            n += 1;
        }
        assert_eq!(t.flush().unwrap_err().errno(), Some(libc::EFBIG));
    }
    assert!(t.status().overrun, "events were dropped");
    set_fsize(libc::RLIM_INFINITY);
    t.flush().unwrap(); // the backlog, then what the full sub-buffer holds
    for _ in 0..1000 {
        trace::event(ev, &n.to_le_bytes());
        n += 1;
    }
    t.flush().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Result<Vec<Event>, _> = l.events().collect();
    let _ = std::fs::remove_file(&p);
    let evs = evs.unwrap();
    assert!(l.is_complete());
    let got: Vec<u64> = evs
        .iter()
        .filter(|e| e.id == ev)
        .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
        .collect();
    let lost: u64 = evs
        .iter()
        .filter(|e| e.id == EventId::OVERFLOW)
        .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
        .sum();
    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, once each");
    assert_eq!(got.last(), Some(&(n - 1)), "the events after the failure");
    assert!(lost > 0);
    assert_eq!(
        got.len() as u64 + lost,
        n,
        "every event logged or counted lost"
    );
}
