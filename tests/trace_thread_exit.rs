//! A thread-local destructor that records after the recorder's own clean-up
//! of its thread: its event is recorded or counted lost, never dropped unseen.

use std::cell::Cell;

use posixrt::trace::{self, EventId, Trace, TraceAttr};

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::user_ids_and_lost;

thread_local! {
    /// Records an event when its thread exits, after the recorder's own
    /// clean-up of the thread (destructors run in reverse order of
    /// registration, and this one is registered first).
    static LATE: Late = const { Late(Cell::new(None)) };
}

struct Late(Cell<Option<EventId>>);

impl Drop for Late {
    fn drop(&mut self) {
        if let Some(id) = self.0.get() {
            trace::event(id, &[2]);
        }
    }
}

#[test]
fn an_event_after_the_thread_clean_up_is_recorded_or_counted_lost() {
    let early = trace::eventid_open("tsf.early").unwrap();
    let late = trace::eventid_open("tsf.late").unwrap();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    std::thread::spawn(move || {
        LATE.with(|l| l.0.set(Some(late)));
        trace::event(early, &[1]);
    })
    .join()
    .unwrap();
    t.stop().unwrap();
    let overrun = t.status().overrun;
    let (ids, lost) = user_ids_and_lost(&t);
    t.shutdown().unwrap();
    let recorded = ids.iter().filter(|&&i| i == late).count() as u64;
    assert_eq!(ids[0], early);
    assert_eq!(
        recorded + lost,
        1,
        "the destructor's event is recorded ({recorded}) or counted lost ({lost})"
    );
    assert_eq!(overrun, lost > 0);
}
