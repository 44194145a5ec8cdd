//! A thread whose sub-buffer cannot be mapped (the address space limit) loses
//! its events, and they are counted lost: the status reports an overrun and
//! readers an OVERFLOW, as for any other dropped event.

use posixrt::trace::{self, Trace, TraceAttr};

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::user_ids_and_lost;

#[path = "common/address_space.rs"]
mod address_space;
use address_space::with_address_space_room;

#[test]
fn events_of_a_thread_without_a_sub_buffer_are_counted_lost() {
    let ev = trace::eventid_open("tnm.event").unwrap();
    let mut a = TraceAttr::new();
    a.set_stream_size(1 << 30).unwrap(); // sub-buffers of 2 GiB
    let t = Trace::create(&a).unwrap();
    // Room for this test's small allocations, not for a 2 GiB sub-buffer.
    with_address_space_room(512 << 20, || {
        // Its START cannot be recorded either.
        t.start().unwrap();
        trace::event(ev, &[1]);
        trace::event(ev, &[2]);
        // Nor its STOP.
        t.stop().unwrap();
    });
    let overrun = t.status().overrun;
    let (ids, lost) = user_ids_and_lost(&t);
    let user = ids.iter().filter(|&&i| i == ev).count();
    t.shutdown().unwrap();
    assert_eq!(user, 0, "no sub-buffer: nothing recorded");
    assert_eq!(lost, 4, "START, the two events and STOP are counted lost");
    assert!(overrun, "the status reports the loss");
}
