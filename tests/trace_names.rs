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

/// A stream name is a byte string (POSIX): one that is not UTF-8 is kept
/// byte for byte by the stream and by its log, and read back from the log as
/// it was set; `name()` shows it as text. At most `TRACE_NAME_MAX` bytes
/// and no NUL, counting bytes.
#[test]
fn a_stream_name_of_any_bytes_round_trips_through_the_log() {
    use posixrt::trace::{Trace, TraceAttr, TraceLog, TRACE_NAME_MAX};
    let longest = vec![0xe9u8; TRACE_NAME_MAX];
    for name in [
        &b"caf\xe9"[..],
        b"\x80",
        b"\xc3\xa9t\xe9 \xff",
        b"plain",
        &longest,
    ] {
        let mut a = TraceAttr::new();
        a.set_name_bytes(name).unwrap();
        assert_eq!(a.name_bytes(), name);
        assert_eq!(a.name(), String::from_utf8_lossy(name));
        let path = std::env::temp_dir().join(format!(
            "posixrt-names-{}-{}.trace",
            std::process::id(),
            name.len()
        ));
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let t = Trace::create_with_log(&a, f.try_clone().unwrap()).unwrap();
        assert_eq!(t.attr().name_bytes(), name);
        t.shutdown().unwrap();
        let l = TraceLog::from_file(f).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got = l.attr().expect("the attributes").name_bytes().to_vec();
        assert_eq!(got, name, "{:?}", String::from_utf8_lossy(name));
    }
    let mut a = TraceAttr::new();
    for bad in [&vec![0xe9u8; TRACE_NAME_MAX + 1][..], b"a\0b"] {
        let e = a.set_name_bytes(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    a.set_name("text").unwrap();
    assert_eq!(a.name_bytes(), b"text");
}
