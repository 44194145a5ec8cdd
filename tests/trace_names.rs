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
