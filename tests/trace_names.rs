//! Event type names at their limits (`posix_trace_eventid_open`).

use posixrt::trace::{self, TRACE_EVENT_NAME_MAX};
use posixrt::ErrorKind;

/// POSIX: a name longer than `TRACE_EVENT_NAME_MAX` fails with ENAMETOOLONG;
/// an empty name or one with NUL is invalid (EINVAL). Both are `InvalidInput`.
#[test]
fn a_name_over_the_limit_is_enametoolong() {
    let longest = "n".repeat(TRACE_EVENT_NAME_MAX);
    let id = trace::eventid_open(&longest).unwrap();
    assert_eq!(trace::eventid_name(id).as_deref(), Some(longest.as_str()));
    let long = "n".repeat(TRACE_EVENT_NAME_MAX + 1);
    let e = trace::eventid_open(&long).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::InvalidInput, Some(libc::ENAMETOOLONG))
    );
    for bad in ["", "a\0b"] {
        let e = trace::eventid_open(bad).unwrap_err();
        assert_eq!(
            (e.kind(), e.errno()),
            (ErrorKind::InvalidInput, Some(libc::EINVAL)),
            "{bad:?}"
        );
    }
}

/// POSIX keeps user and system event names apart: `posix_trace_eventid_open`
/// opens a user event, so a system event's name (a POSIX one, one a module
/// registered) gives a user event of its own, and the same one again.
#[test]
fn a_system_event_name_opens_a_user_event_of_its_own() {
    use posixrt::trace::system_events::{self as sys, Field, FieldType};
    use posixrt::trace::{EventId, Trace, TraceAttr};
    static L: [Field; 1] = [Field {
        name: "x",
        ty: FieldType::U32,
    }];
    let modev = sys::register("tn_sysname", &L).unwrap();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    for (name, sys_id) in [
        ("posix_trace_overflow", EventId::OVERFLOW),
        ("posix_trace_start", EventId::START),
        ("tn_sysname", modev),
    ] {
        let u = trace::eventid_open(name).unwrap();
        assert!(
            !u.is_system() && u != sys_id && u != EventId::UNNAMED_USER,
            "{name}"
        );
        assert_eq!(trace::eventid_open(name).unwrap(), u, "{name}");
        assert_eq!(t.eventid_open(name).unwrap(), u, "{name}");
        assert_eq!(trace::eventid_name(u).as_deref(), Some(name));
        assert_eq!(trace::eventid_name(sys_id).as_deref(), Some(name));
    }
    t.shutdown().unwrap();
}
