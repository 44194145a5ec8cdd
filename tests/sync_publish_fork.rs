//! A process forked while another of its threads makes the sync registry (the
//! first `sync::publish`): the child's own `publish` does not wait for that
//! thread, which stayed in the parent.
//!
//! The thread is held there by the global allocator: the first allocation of
//! the first `publish` of the process is made while the registry is being made.
//! Its own binary: no other test may make the registry first.

#[path = "common/held_fork.rs"]
mod held_fork;
use held_fork::child;

use posixrt::sync;

/// In the child: `publish` answers (it makes the child's own registry, whose
/// file the child removes, as it `_exit`s without the exit hook that would).
fn publish_in_child() -> Result<(), String> {
    let r = sync::publish();
    child::remove_own_registries("sync");
    r.map(drop)
        .map_err(|e| format!("publish in the child: {e}"))
}

#[test]
fn a_child_forked_while_a_thread_makes_the_sync_registry_publishes_without_waiting_for_it() {
    let a = std::thread::spawn(|| {
        let _ = sync::current_tid(); // caches the tid before the hold
        held_fork::arm();
        let r = sync::publish();
        held_fork::disarm();
        r.map(drop)
    });
    assert!(
        held_fork::wait_held(|| a.is_finished()),
        "publish made no allocation to hold it at"
    );
    let release = held_fork::ReleaseOnDrop;
    let child = held_fork::in_child(publish_in_child);
    drop(release);
    let parent = a.join().unwrap();
    child.unwrap();
    parent.unwrap();
}
