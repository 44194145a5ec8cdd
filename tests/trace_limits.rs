//! The user event limit (`TRACE_USER_EVENT_MAX`), in its own test binary because it
//! uses up the process-wide name table.

use posixrt::trace::{self, EventId, Trace, TraceAttr, TRACE_USER_EVENT_MAX};

#[test]
fn user_event_limit_gives_the_unnamed_id() {
    let mut ids = Vec::new();
    for i in 0..TRACE_USER_EVENT_MAX {
        let id = trace::eventid_open(&format!("limit.{i}")).unwrap();
        assert_ne!(id, EventId::UNNAMED_USER, "name {i} is within the limit");
        ids.push(id);
    }
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), TRACE_USER_EVENT_MAX, "distinct ids");
    // Past the limit: the predefined unnamed user event.
    assert_eq!(
        trace::eventid_open("limit.over").unwrap(),
        EventId::UNNAMED_USER
    );
    assert_eq!(
        trace::eventid_open("limit.over2").unwrap(),
        EventId::UNNAMED_USER
    );
    // Names already open still give their ids.
    assert_eq!(trace::eventid_open("limit.0").unwrap(), ids[0]);
    // The unnamed id records like any other.
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    trace::event(EventId::UNNAMED_USER, b"x");
    trace::event(ids[TRACE_USER_EVENT_MAX - 1], b"y");
    t.stop().unwrap();
    let got: Vec<EventId> = t.events().map(|e| e.id).collect();
    assert_eq!(
        got,
        [
            EventId::START,
            EventId::UNNAMED_USER,
            ids[TRACE_USER_EVENT_MAX - 1],
            EventId::STOP
        ]
    );
    assert_eq!(
        t.eventid_name(EventId::UNNAMED_USER).unwrap(),
        "posix_trace_unnamed_userevent"
    );
}
