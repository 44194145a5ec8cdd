//! A `Served` handle a forked child inherits does not claim its thread is
//! served there: the server that serves it stayed in the parent (the child
//! has neither the server nor the thread), and `last_error` and
//! `remaining_budget` say so. In the parent the handle still reports the
//! thread served. Its own binary: it forks after starting the process's
//! server.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/held_fork.rs"]
mod held_fork;

use std::sync::mpsc;
use std::time::Duration;

use caps::can_serve;
use posixrt::sched::{sporadic, sporadic::SporadicParams, Builder};
use posixrt::ErrorKind;

#[test]
fn an_inherited_handle_reports_not_served_in_the_child() {
    let ms = Duration::from_millis;
    let params = SporadicParams::new(10, ms(50), ms(2), 4);
    if !can_serve(params) {
        return;
    }
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let worker = Builder::new()
        .name("ss-forked")
        .spawn(move || {
            // Blocked, not spinning, at its normal priority.
            let _ = end_rx.recv_timeout(Duration::from_secs(30));
        })
        .unwrap();
    let served = sporadic::serve_handle(&worker, params, 50).unwrap();
    assert!(served.is_served());
    assert!(served.last_error().is_none());
    let child = held_fork::in_child(|| {
        if served.is_served() {
            return Err("the child says its parent's thread is served".into());
        }
        match served.remaining_budget() {
            Err(e) if e.kind() == ErrorKind::Unsupported => {}
            other => return Err(format!("remaining_budget in the child: {other:?}")),
        }
        match served.last_error() {
            Some(e) if e.kind() == ErrorKind::Unsupported => Ok(()),
            other => Err(format!("last_error in the child: {other:?}")),
        }
    });
    // The parent's view is unchanged.
    assert!(served.is_served());
    assert!(served.last_error().is_none(), "{:?}", served.last_error());
    drop(served);
    let _ = end_tx.send(());
    worker.join().unwrap();
    child.unwrap();
}
