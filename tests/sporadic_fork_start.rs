//! A process forked while another of its threads is starting the sporadic
//! server (inside its one-time start, the server not yet published): the
//! child starts a server of its own and serves with it (or gets the documented
//! refusal for want of privilege), and never waits for the start in the
//! parent, whose thread it does not have.
//!
//! The thread is held there by the global allocator: the first allocation of
//! `server_tid` in a process without a server is the server's command queue,
//! made inside the start. Its own binary: no other test may start the server
//! first.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/held_fork.rs"]
mod held_fork;

use std::time::Duration;

use posixrt::sched::{self, sporadic, sporadic::SporadicParams};
use posixrt::ErrorKind;

/// In the child: the server's tid, serve its thread, `blocking`, drop.
fn start_in_child() -> Result<(), String> {
    let me = sched::gettid();
    let ms = Duration::from_millis;
    let p = SporadicParams::new(10, ms(50), ms(2), 4);
    let server = match sporadic::server_tid() {
        Ok(t) => t,
        Err(e) if !caps::can_rt() && e.kind() == ErrorKind::PermissionDenied => {
            return match sporadic::serve(me, p, 50) {
                Err(e) if e.kind() == ErrorKind::PermissionDenied => Ok(()),
                r => Err(format!("serve without privilege: {r:?}")),
            };
        }
        Err(e) => return Err(format!("server_tid in the child: {e}")),
    };
    if server == me {
        return Err("the server is the child's own thread".into());
    }
    let served = sporadic::serve(me, p, 50).map_err(|e| format!("serve in the child: {e}"))?;
    if sporadic::blocking(|| 7) != 7 {
        return Err("blocking returned another value".into());
    }
    if !served.is_served() {
        return Err(format!("not served: {:?}", served.last_error()));
    }
    drop(served);
    match sporadic::server_tid() {
        Ok(t) if t == server => Ok(()),
        r => Err(format!("server_tid again: {r:?}, was {server}")),
    }
}

#[test]
fn a_child_forked_while_a_thread_starts_the_server_starts_its_own() {
    let a = std::thread::spawn(|| {
        held_fork::arm();
        let r = sporadic::server_tid();
        held_fork::disarm();
        r.map_err(|e| e.kind())
    });
    assert!(
        held_fork::wait_held(|| a.is_finished()),
        "server_tid made no allocation to hold it at"
    );
    let release = held_fork::ReleaseOnDrop;
    let child = held_fork::in_child(start_in_child);
    drop(release);
    let parent = a.join().unwrap();
    child.unwrap();
    // The held thread went on and started the parent's server.
    if caps::can_rt() {
        assert!(parent.is_ok(), "{parent:?}");
    } else {
        assert_eq!(parent, Err(ErrorKind::PermissionDenied));
    }
}
