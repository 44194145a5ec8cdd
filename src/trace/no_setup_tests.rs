//! Unit tests of [`NoSetup`](super::local::NoSetup): a thread that may not set
//! itself up (a call that may run in a signal handler) records only where it
//! is set up already, and counts its other events lost, where readers see them.

use super::handle::Trace;
use super::ids::{self, EventId};
use super::local::{prepare_thread, NoSetup};
use super::scratch::record_only;
use super::slots::lock;
use super::sys::{Field, FieldType, SysEvent};
use super::TraceAttr;

/// Whether the calling thread has a sub-buffer in `t`.
fn has_ring(t: &Trace) -> bool {
    let tid = crate::sys::tid::current();
    let _st = lock(&t.s.reader);
    t.s.rings_snapshot().iter().any(|r| r.tid == tid)
}

/// Keeps other tests' events out of `t`: it records `ev` and the losses.
fn only(t: &Trace, ev: EventId) {
    record_only(t, &[ev, EventId::OVERFLOW, EventId::RESUME]);
}

/// The OVERFLOW counts a reader of `t` gets (stopped first), and the events
/// of `ev` it reads.
fn read_back(t: &Trace, ev: EventId) -> (u64, usize) {
    t.stop().unwrap();
    let events: Vec<_> = t.events().collect();
    let lost = events
        .iter()
        .filter(|e| e.id == EventId::OVERFLOW)
        .map(|e| u64::from_le_bytes(e.data[..8].try_into().unwrap()))
        .sum();
    (lost, events.iter().filter(|e| e.id == ev).count())
}

/// A thread that never recorded takes no busy flag and maps no sub-buffer
/// inside the section (each locks and allocates, which a signal handler must
/// not): its events are counted lost in the stream, which reports an overrun
/// and gives readers an OVERFLOW for them. Once out of the section, the
/// thread sets itself up and records as before.
#[test]
fn a_thread_without_a_sub_buffer_counts_its_events_lost() {
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = super::eventid_open("no_setup.fresh").unwrap();
    only(&t, ev);
    t.start().unwrap();
    let mapped = std::thread::scope(|s| {
        s.spawn(|| {
            {
                let _g = NoSetup::enter();
                super::event(ev, &[1]);
                super::event(ev, &[2u8; 40]); // the general path too
            }
            let mapped = has_ring(&t);
            super::event(ev, &[3]);
            mapped
        })
        .join()
        .unwrap()
    });
    assert!(!mapped, "no sub-buffer was mapped in the section");
    assert!(t.status().overrun, "the stream reports the loss");
    let (lost, recorded) = read_back(&t, ev);
    assert_eq!(lost, 2, "each event of the section is reported lost");
    assert_eq!(recorded, 1, "the event after the section is recorded");
    t.shutdown().unwrap();
}

/// A thread set up ahead ([`prepare_thread`], as a C submission does) records
/// inside the section, in every stream that lived when it prepared, started
/// or not then; a stream made after that counts the events lost.
#[test]
fn a_thread_set_up_ahead_records_inside_the_section() {
    let early = Trace::create(&TraceAttr::new()).unwrap();
    let ev = super::eventid_open("no_setup.prepared").unwrap();
    only(&early, ev);
    let (before, late) = std::thread::scope(|s| {
        s.spawn(|| {
            assert!(prepare_thread(), "a stream lives");
            let before = has_ring(&early);
            let late = Trace::create(&TraceAttr::new()).unwrap();
            only(&late, ev);
            early.start().unwrap();
            late.start().unwrap();
            {
                let _g = NoSetup::enter();
                super::event(ev, &[1]);
            }
            (before, late)
        })
        .join()
        .unwrap()
    });
    assert!(before, "prepare_thread mapped the thread's sub-buffer");
    assert_eq!(read_back(&early, ev), (0, 1), "recorded where set up");
    assert_eq!(read_back(&late, ev), (1, 0), "lost where not");
    early.shutdown().unwrap();
    late.shutdown().unwrap();
}

static LAYOUT: [Field; 1] = [Field {
    name: "v",
    ty: FieldType::U32,
}];
static UNREGISTERED: SysEvent = SysEvent::new("no_setup_unregistered", &LAYOUT);

/// A system event never registered is not registered inside the section (the
/// registry locks and allocates): it is counted lost in a running stream
/// that records the id it would take (here every system id); outside, it is
/// registered and recorded.
#[test]
fn an_unregistered_system_event_is_lost_not_registered() {
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let system: Vec<EventId> = (0..ids::USER_BASE).map(EventId).collect();
    record_only(&t, &system);
    t.start().unwrap();
    let registered = || {
        ids::all_types()
            .iter()
            .any(|e| e.name == "no_setup_unregistered")
    };
    {
        let _g = NoSetup::enter();
        UNREGISTERED.emit(&7u32.to_le_bytes());
    }
    assert!(!registered(), "the section registered the event");
    UNREGISTERED.emit(&8u32.to_le_bytes());
    assert!(registered());
    let (lost, recorded) = read_back(&t, UNREGISTERED.id().unwrap());
    assert_eq!((lost, recorded), (1, 1));
    t.shutdown().unwrap();
}

/// A thread that submits nothing (one that only waits for another's
/// requests) records inside the section once it recorded one event of its own
/// in the stream outside it: that event set it up there (capi/README.md gives
/// this to C programs whose waiting thread records nothing else).
#[test]
fn one_event_outside_sets_a_waiting_thread_up() {
    let t = Trace::create(&TraceAttr::new()).unwrap();
    let ev = super::eventid_open("no_setup.waiter").unwrap();
    only(&t, ev);
    t.start().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            super::event(ev, &[1]);
            let _g = NoSetup::enter();
            super::event(ev, &[2]);
            super::event(ev, &[3u8; 40]);
        });
    });
    assert!(!t.status().overrun, "nothing was lost");
    assert_eq!(read_back(&t, ev), (0, 3));
    t.shutdown().unwrap();
}
