//! A forked child shuts its own streams down although a thread of the parent
//! was inside the recorder (its busy flag set) at the fork.
//!
//! Shutdown waits for every thread's busy flag to clear; in the child, a flag
//! of a parent thread that was recording at the fork never clears (the thread
//! does not exist there). The test stops a thread exactly there: a global
//! allocator holds it at its first allocation once armed, which is the mapping
//! of its sub-buffer in a second stream, made with its busy flag set.

#[path = "common/held_fork.rs"]
mod held_fork;

use posixrt::trace::{self, Trace, TraceAttr};

/// In the child: a stream of its own, started and shut down.
fn child_stream() -> posixrt::Result<()> {
    let t = Trace::create(&TraceAttr::new())?;
    t.start()?;
    t.shutdown()
}

#[test]
fn a_child_shuts_down_its_stream_although_a_parent_thread_was_recording() {
    let ev = trace::eventid_open("tfb.event").unwrap();
    let first = Trace::create(&TraceAttr::new()).unwrap();
    first.start().unwrap();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let recorder = std::thread::spawn(move || {
        // Takes the thread's busy flag and its sub-buffer in the first stream.
        trace::event(ev, &[1]);
        ready_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // Its first event in the second stream maps a sub-buffer, with the busy
        // flag set: the allocator holds the thread there.
        held_fork::arm();
        trace::event(ev, &[2]);
        held_fork::disarm();
    });
    ready_rx.recv().unwrap();
    let second = Trace::create(&TraceAttr::new()).unwrap();
    second.start().unwrap();
    go_tx.send(()).unwrap();
    assert!(
        held_fork::wait_held(|| recorder.is_finished()),
        "the event into the second stream made no allocation to hold it at"
    );
    // The held thread goes on however the wait below ends (a hung child fails
    // it with a panic, and the streams' shutdown waits for that thread).
    let release = held_fork::ReleaseOnDrop;
    let r = held_fork::in_child(|| child_stream().map_err(|e| e.to_string()));
    drop(release);
    recorder.join().unwrap();
    first.shutdown().unwrap();
    second.shutdown().unwrap();
    assert_eq!(r, Ok(()), "the child's stream failed");
}
