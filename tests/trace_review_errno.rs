//! The errno of the trace facility's refusals: POSIX gives each one, and a
//! program ported from C (or the C library over this one) reads it from
//! [`posixrt::Error::errno`], which says "the errno, if the failure came from
//! (or maps to) one".

#[path = "common/child.rs"]
mod child;
#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::serial;

use posixrt::trace::{self, Trace, TraceAttr, TRACE_SYS_MAX};
use posixrt::ErrorKind;

/// posix_trace_create: "[EAGAIN] No more trace streams can be started now.
/// {TRACE_SYS_MAX} has been exceeded." The refusal had the kind
/// (`OutOfResources`) but no errno.
#[test]
fn create_past_trace_sys_max_is_eagain() {
    let _g = serial();
    let mut streams = Vec::new();
    let err = loop {
        match Trace::create(&TraceAttr::new()) {
            Ok(t) => streams.push(t),
            Err(e) => break e,
        }
        assert!(
            streams.len() <= TRACE_SYS_MAX,
            "more than TRACE_SYS_MAX streams"
        );
    };
    assert_eq!(streams.len(), TRACE_SYS_MAX);
    assert_eq!(err.kind(), ErrorKind::OutOfResources);
    assert_eq!(err.errno(), Some(libc::EAGAIN));
    assert_eq!(err.call(), "posix_trace_create");
    for t in streams {
        t.shutdown().unwrap();
    }
    // A slot freed: creating works again.
    Trace::create(&TraceAttr::new())
        .unwrap()
        .shutdown()
        .unwrap();
}

/// POSIX_TRACE_CLOSE_FOR_CHILD: in a forked child the parent's stream is no
/// valid trace stream, and every call given it fails with EINVAL
/// ([`Trace::valid`] says so: "POSIX's EINVAL"). The refusals had the kind
/// (`InvalidState`) but no errno.
#[test]
fn a_forked_childs_refusals_are_einval() {
    let _g = serial();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = trace::eventid_open("errno.fork").unwrap();
    // SAFETY: the child calls methods that fail before taking a lock, and
    // leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let einval = |r: Result<(), posixrt::Error>| {
            matches!(r, Err(e) if e.kind() == ErrorKind::InvalidState
                && e.errno() == Some(libc::EINVAL))
        };
        let mut code = 0;
        if !einval(t.valid()) {
            code |= 1;
        }
        if !einval(t.start()) {
            code |= 2;
        }
        if !einval(t.eventid_name(ev).map(drop)) {
            code |= 4;
        }
        if !einval(t.try_getnext().map(drop)) {
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
        "bits: 1 valid, 2 start, 4 eventid_name, 8 try_getnext"
    );
    t.shutdown().unwrap();
}
