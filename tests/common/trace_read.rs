//! Reading a stream in the trace tests: `#[path = "common/trace_read.rs"] mod trace_read;`.
#![allow(dead_code)]

use posixrt::trace::{EventId, EventSet, FillWhat, FilterHow, Trace};

/// Filters out every event type of `t` but `keep` (the stream records only those).
pub fn filter_all_but(t: &Trace, keep: &[EventId]) {
    let mut f = EventSet::empty();
    f.fill(FillWhat::All);
    for &id in keep {
        f.del(id);
    }
    t.set_filter(&f, FilterHow::Set).unwrap();
}

/// Reads the stream empty: (ids of the user events, in order; events counted
/// lost by its OVERFLOW records).
pub fn user_ids_and_lost(t: &Trace) -> (Vec<EventId>, u64) {
    let (mut ids, mut lost) = (Vec::new(), 0);
    while let Some(e) = t.try_getnext().unwrap() {
        if e.id == EventId::OVERFLOW {
            lost += u64::from_le_bytes(e.data[..8].try_into().unwrap());
        } else if !e.id.is_system() {
            ids.push(e.id);
        }
    }
    (ids, lost)
}
