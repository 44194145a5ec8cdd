//! A process forked while another of its threads is inside `sporadic::serve`,
//! holding the served-set lock, before any server exists: the child serves
//! with a server of its own (or gets the documented refusal for want of
//! privilege), and never waits for the lock's holder, which stayed in the
//! parent.
//!
//! The thread is held there by the global allocator: the first allocation of
//! the first `serve` of the process is the served set's table, made with the
//! lock held (the tid cache is warmed first, the parameters are valid, and the
//! thread's CPU clock is read without allocating). Its own binary: no other
//! test may start the server first.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/held_fork.rs"]
mod held_fork;

use std::time::Duration;

use posixrt::sched::{self, sporadic, sporadic::SporadicParams};
use posixrt::ErrorKind;

fn params() -> SporadicParams {
    let ms = Duration::from_millis;
    SporadicParams::new(10, ms(50), ms(2), 4)
}

/// In the child: serve its thread, `blocking`, the server's tid, drop.
fn serve_in_child() -> Result<(), String> {
    let me = sched::gettid();
    let served = match sporadic::serve(me, params(), 50) {
        Ok(s) => s,
        Err(e) if !caps::can_rt() && e.kind() == ErrorKind::PermissionDenied => return Ok(()),
        Err(e) => return Err(format!("serve in the child: {e}")),
    };
    if !served.is_served() {
        return Err(format!("not served: {:?}", served.last_error()));
    }
    if sporadic::blocking(|| 7) != 7 {
        return Err("blocking returned another value".into());
    }
    match sporadic::server_tid() {
        Ok(t) if t != me => {}
        r => return Err(format!("server_tid in the child: {r:?}")),
    }
    drop(served);
    // Taken off: it can be served again.
    let again = sporadic::serve(me, params(), 50).map_err(|e| format!("serve again: {e}"))?;
    drop(again);
    Ok(())
}

#[test]
fn a_child_forked_while_a_thread_holds_the_served_set_serves_without_waiting_for_it() {
    let a = std::thread::spawn(|| {
        let me = sched::gettid(); // caches the tid: no allocation in the lock
        held_fork::arm();
        let r = sporadic::serve(me, params(), 50);
        held_fork::disarm();
        r.map(drop).map_err(|e| e.kind())
    });
    assert!(
        held_fork::wait_held(|| a.is_finished()),
        "serve made no allocation to hold it at"
    );
    let release = held_fork::ReleaseOnDrop;
    let child = held_fork::in_child(serve_in_child);
    drop(release);
    let parent = a.join().unwrap();
    child.unwrap();
    // The held thread went on in the parent.
    if caps::can_rt() {
        assert_eq!(parent, Ok(()));
    } else {
        assert_eq!(parent, Err(ErrorKind::PermissionDenied));
    }
}
