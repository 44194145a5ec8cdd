//! The refusals of event type names (`posix_trace_eventid_open`): each one
//! says what is wrong with the name and how to mend it.

use posixrt::trace::{self, Trace, TraceAttr, TRACE_EVENT_NAME_MAX};
use posixrt::ErrorKind;

/// An empty name, or one holding NUL, is EINVAL: the hint told the caller
/// to shorten it (the mend of ENAMETOOLONG only).
#[test]
fn an_empty_or_nul_name_is_not_told_to_be_shortened() {
    for bad in ["", "a\0b"] {
        let e = trace::eventid_open(bad).unwrap_err();
        assert_eq!(
            (e.kind(), e.errno()),
            (ErrorKind::InvalidInput, Some(libc::EINVAL))
        );
        let hint = e.hint().unwrap_or_default();
        assert!(!hint.contains("shorten"), "{bad:?}: {hint}");
        assert!(
            hint.contains("NUL") && hint.contains("empty"),
            "{bad:?}: {hint}"
        );
    }
    let long = "n".repeat(TRACE_EVENT_NAME_MAX + 1);
    let e = trace::eventid_open(&long).unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENAMETOOLONG));
    assert!(e.hint().unwrap_or_default().contains("shorten"));
    // The stream's own eventid_open (posix_trace_trid_eventid_open) alike.
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let e = t.eventid_open("").unwrap_err();
    assert!(!e.hint().unwrap_or_default().contains("shorten"));
    t.shutdown().unwrap();
}

/// A name the stream's own `eventid_open` refuses names the call it stands
/// for, `posix_trace_trid_eventid_open` (as its refusal of a stream that is
/// not valid does), not the process-wide `posix_trace_eventid_open`.
#[test]
fn the_streams_eventid_open_names_its_own_call() {
    let t = Trace::create(&TraceAttr::new()).unwrap();
    for bad in [String::new(), "n".repeat(TRACE_EVENT_NAME_MAX + 1)] {
        let e = t.eventid_open(&bad).unwrap_err();
        assert_eq!(e.call(), "posix_trace_trid_eventid_open", "{bad:?}");
    }
    assert_eq!(
        trace::eventid_open("").unwrap_err().call(),
        "posix_trace_eventid_open"
    );
    t.shutdown().unwrap();
}
