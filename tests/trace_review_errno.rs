//! The errno of the trace facility's refusals: POSIX gives each one, and a
//! program ported from C (or the C library over this one) reads it from
//! [`posixrt::Error::errno`], which says "the errno, if the failure came from
//! (or maps to) one".

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::serial;

use posixrt::trace::{Trace, TraceAttr, TRACE_SYS_MAX};
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
        assert!(streams.len() <= TRACE_SYS_MAX, "more than TRACE_SYS_MAX streams");
    };
    assert_eq!(streams.len(), TRACE_SYS_MAX);
    assert_eq!(err.kind(), ErrorKind::OutOfResources);
    assert_eq!(err.errno(), Some(libc::EAGAIN));
    assert_eq!(err.call(), "posix_trace_create");
    for t in streams {
        t.shutdown().unwrap();
    }
    // A slot freed: creating works again.
    Trace::create(&TraceAttr::new()).unwrap().shutdown().unwrap();
}
