//! Event sets (`trace_event_set_t`) filled by kind, and the event types
//! registered after the fill.

use posixrt::trace::system_events::{self as sys, Field, FieldType};
use posixrt::trace::{self, EventId, EventSet, FillWhat, FilterHow, Trace, TraceAttr};

static L: [Field; 1] = [Field {
    name: "x",
    ty: FieldType::U32,
}];

/// `POSIX_TRACE_WOPID_EVENTS` is every system event not associated with a
/// process: a set filled with it holds those registered after the fill too
/// (as `POSIX_TRACE_SYSTEM_EVENTS` and `_ALL_EVENTS` hold the system and user
/// events that come later), and no event of a process. As a filter, it keeps
/// a later one out of the stream and lets the others in.
#[test]
fn a_wopid_set_holds_the_events_without_a_pid_registered_after_it() {
    let fill = |what| {
        let mut s = EventSet::empty();
        s.fill(what);
        s
    };
    let (wopid, system, all) = (
        fill(FillWhat::WithoutPid),
        fill(FillWhat::System),
        fill(FillWhat::All),
    );
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.set_filter(&wopid, FilterHow::Set).unwrap();
    t.start().unwrap();
    let later = sys::register_wopid("tsets_later_wopid", &L).unwrap();
    let own = sys::register("tsets_later_own", &L).unwrap();
    let user = trace::eventid_open("tsets_later_user").unwrap();
    assert!(later.is_system() && own.is_system());
    assert!(wopid.contains(later), "{later:?} registered after the fill");
    assert!(wopid.contains(EventId::OVERFLOW) && wopid.contains(EventId::ERROR));
    assert!(!wopid.contains(own) && !wopid.contains(user));
    assert!(!wopid.contains(EventId::START) && !wopid.contains(EventId::FLUSH_START));
    assert!(system.contains(later) && system.contains(own) && !system.contains(user));
    assert!(all.contains(later) && all.contains(own) && all.contains(user));
    sys::emit(later, &1u32.to_le_bytes());
    sys::emit(own, &2u32.to_le_bytes());
    t.stop().unwrap();
    let mut seen = Vec::new();
    while let Some(e) = t.try_getnext().unwrap() {
        if e.id == later || e.id == own {
            seen.push((e.id, e.pid));
        }
    }
    t.shutdown().unwrap();
    assert_eq!(seen, [(own, std::process::id())]);
}

/// `fill` makes the set what it names (POSIX "shall fill in the set", as C's
/// `posix_trace_eventset_fill`): a user event added before a fill with the
/// system events is not in the set after it.
#[test]
fn a_fill_replaces_what_the_set_held() {
    let user = trace::eventid_open("tsets_before_fill").unwrap();
    let mut s = EventSet::empty();
    s.add(user);
    s.fill(FillWhat::System);
    assert!(!s.contains(user), "{user:?} survived the fill");
    assert!(s.contains(EventId::START));
    s.fill(FillWhat::WithoutPid);
    assert!(
        !s.contains(EventId::START),
        "a system event of a process survived"
    );
}
