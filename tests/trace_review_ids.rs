//! Review test of the user event type limit (`TRACE_USER_EVENT_MAX`): in a
//! process of its own, as the ids it takes are process-wide.

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::filter_all_but;

use posixrt::trace::{self, EventId, Trace, TraceAttr, TRACE_USER_EVENT_MAX};

/// POSIX `posix_trace_eventid_open`: past TRACE_USER_EVENT_MAX names, the id
/// given is POSIX_TRACE_UNNAMED_USEREVENT, which records and reads back under
/// that type's name; names opened before keep their ids.
#[test]
fn names_past_the_limit_get_the_unnamed_user_event() {
    let mut opened = Vec::new();
    loop {
        let id = trace::eventid_open(&format!("review.limit.{}", opened.len())).unwrap();
        if id == EventId::UNNAMED_USER {
            break;
        }
        assert!(!opened.contains(&id), "{id:?} given twice");
        opened.push(id);
        assert!(opened.len() <= TRACE_USER_EVENT_MAX, "past the limit");
    }
    assert_eq!(opened.len(), TRACE_USER_EVENT_MAX);
    let t = Trace::create(&TraceAttr::new()).unwrap();
    assert_eq!(
        t.eventid_open("review.limit.another").unwrap(),
        EventId::UNNAMED_USER
    );
    assert_eq!(t.eventid_open("review.limit.7").unwrap(), opened[7]);
    filter_all_but(&t, &[EventId::UNNAMED_USER, opened[7]]);
    t.start().unwrap();
    trace::event(EventId::UNNAMED_USER, b"x");
    trace::event(opened[7], b"y");
    t.stop().unwrap();
    let got: Vec<(EventId, Vec<u8>)> = t.events().map(|e| (e.id, e.data)).collect();
    assert_eq!(
        got,
        [
            (EventId::UNNAMED_USER, b"x".to_vec()),
            (opened[7], b"y".to_vec())
        ]
    );
    assert_eq!(
        t.eventid_name(EventId::UNNAMED_USER).unwrap(),
        "posix_trace_unnamed_userevent"
    );
    assert_eq!(t.eventid_name(opened[7]).unwrap(), "review.limit.7");
    let n = t.event_types().filter(|ty| !ty.id.is_system()).count();
    assert_eq!(
        n,
        TRACE_USER_EVENT_MAX + 1,
        "the named ones and the unnamed one"
    );
    t.shutdown().unwrap();
}
