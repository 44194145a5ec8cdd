//! Every slot of this process's mark registry taken: a thread's first mark
//! fails with `OutOfResources`, saying so, and marks nothing; once a marked
//! thread exits, its slot is free again and the next thread's first mark
//! takes it. (Alone in its binary: it fills this process's registry.)

use std::sync::mpsc;

use posixrt::{mark, ErrorKind};

#[path = "common/mark_file.rs"]
mod mark_file;
use mark_file::{set_states, STATE_FREE, STATE_RESERVED};

#[test]
fn a_full_registry_refuses_a_first_mark_and_a_freed_slot_is_taken_again() {
    let me = std::process::id() as i32;
    mark::set("mark_slots_full keeper").unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let holder = mark::spawn_named("slot holder", move || {
        let _ = wait.recv();
    })
    .unwrap();
    let held = holder.tid();
    // Every other slot taken, as 4096 marked threads would.
    let filled = set_states(STATE_FREE, STATE_RESERVED);
    let refused = std::thread::spawn(|| {
        let e = mark::update("no room").unwrap_err();
        (e.kind(), e.to_string(), mark::current())
    })
    .join()
    .unwrap();
    // The holder exits: its slot is freed and can be taken again.
    go.send(()).unwrap();
    holder.join().unwrap();
    let (tid, taken) = std::thread::spawn(|| {
        let r = mark::update("took the freed slot").map_err(|e| e.to_string());
        let snap = mark::snapshot_pid(std::process::id() as i32).unwrap();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let listed = snap
            .threads()
            .any(|(_, t)| t.tid == tid && t.marker == "took the freed slot");
        (tid, r.map(|()| listed))
    })
    .join()
    .unwrap();
    let freed = set_states(STATE_RESERVED, STATE_FREE);
    assert!(filled > 0 && freed >= filled, "{filled} {freed}");
    assert_eq!(refused.0, ErrorKind::OutOfResources, "{}", refused.1);
    assert!(refused.1.contains("slots"), "{}", refused.1);
    assert_eq!(refused.2, None, "a refused mark left a marker");
    assert_eq!(taken, Ok(true), "thread {tid} (holder was {held})");
    let snap = mark::snapshot_pid(me).unwrap();
    assert!(
        snap.threads().all(|(_, t)| t.tid != held),
        "the exited holder is still listed"
    );
    mark::clear();
}
