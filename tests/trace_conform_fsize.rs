//! Conformance: `clear()` on a regular-file log whose rewrite fails part-way
//! (a file size limit, as a full file system). In a process of its own: it
//! sets RLIMIT_FSIZE for the process.

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;
#[path = "common/fsize.rs"]
mod fsize;
use fsize::{ignore_sigxfsz, set_fsize};

use std::fs::File;

use posixrt::trace::{self, LogFullPolicy, Trace, TraceAttr, TraceLog};
use posixrt::ErrorKind;

/// The values (first 8 data bytes) of the events `ev` the log at `p` holds,
/// up to a clean cut (a running log), or the read error; and whether the
/// log is complete.
fn logged(p: &std::path::Path, ev: trace::EventId) -> (Result<Vec<u64>, posixrt::Error>, bool) {
    let mut l = TraceLog::open(p).unwrap();
    let mut got = Vec::new();
    for e in l.events() {
        match e {
            Ok(e) if e.id == ev => got.push(u64::from_le_bytes(e.data[..8].try_into().unwrap())),
            Ok(_) => {}
            // A running log has no end record yet: cut cleanly after its last.
            Err(e) if e.kind() == ErrorKind::Truncated => break,
            Err(e) => return (Err(e), false),
        }
    }
    (Ok(got), l.is_complete())
}

/// A `clear()` whose rewrite of the log stops part-way (EFBIG past
/// RLIMIT_FSIZE) fails; once writes succeed again, the events recorded
/// after it are appended to a whole log (header, attributes, names, then
/// those events), not after the cut rewrite in the middle of the old
/// events, where the log read as corrupt (or, at shutdown's rewrite, lost
/// them).
#[test]
fn a_clear_cut_short_leaves_a_log_that_later_events_extend_whole() {
    ignore_sigxfsz();
    let p = std::env::temp_dir().join(format!("posixrt-conform-fsize-{}", std::process::id()));
    let ev = trace::eventid_open("conform.clear_fsize").unwrap();
    for policy in [
        LogFullPolicy::Append,
        LogFullPolicy::UntilFull,
        LogFullPolicy::Loop,
    ] {
        let mut a = TraceAttr::new();
        a.set_log_full_policy(policy);
        let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
        filter_all_but(&t, &[ev]);
        t.flush().unwrap();
        // Header, attributes and names: what a clear rewrites.
        let preamble = std::fs::metadata(&p).unwrap().len();
        t.start().unwrap();
        for i in 0..200u64 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        set_fsize(preamble / 2);
        let e = t.clear().unwrap_err();
        assert_eq!(e.errno(), Some(libc::EFBIG), "{policy:?}: {e}");
        set_fsize(libc::RLIM_INFINITY);
        for i in 1000..1100u64 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        let (got, _) = logged(&p, ev);
        assert_eq!(
            got.map_err(|e| e.to_string()),
            Ok((1000..1100).collect::<Vec<_>>()),
            "{policy:?}: read while running"
        );
        t.stop().unwrap();
        t.shutdown().unwrap();
        let (got, complete) = logged(&p, ev);
        assert_eq!(
            got.map_err(|e| e.to_string()),
            Ok((1000..1100).collect::<Vec<_>>()),
            "{policy:?}: read after shutdown"
        );
        assert!(complete, "{policy:?}");
    }
    let _ = std::fs::remove_file(&p);
}
