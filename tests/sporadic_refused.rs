//! A thread the server cannot take (its timers refused) gets back the
//! scheduling it had before `serve`, and its handle says why it is not
//! served: it is not left at its normal `SCHED_FIFO` priority with nothing
//! enforcing its budget. A thread spawned sporadic goes to its low priority.
//!
//! The server is started by a thread under a seccomp filter that makes
//! `timer_create` fail with EAGAIN; the server thread inherits the filter, the
//! rest of the process does not. Its own binary: no other test may start the
//! server first.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/seccomp.rs"]
mod seccomp;

use std::sync::mpsc;
use std::time::Duration;

use caps::{can_serve, wait_for};
use posixrt::sched::{self, sporadic, sporadic::SporadicParams, Builder, Priority};

#[test]
fn a_thread_whose_timers_are_refused_gets_its_scheduling_back() {
    let ms = Duration::from_millis;
    let params = SporadicParams::new(10, ms(50), ms(2), 4);
    if !can_serve(params) {
        return;
    }
    // The server starts under the filter.
    seccomp::start_sporadic_server_failing(libc::SYS_timer_create, None, libc::EAGAIN);

    let (end_tx, end_rx) = mpsc::channel::<()>();
    let worker = Builder::new()
        .name("ss-refused")
        .spawn(move || {
            // Blocked, not spinning, whatever priority it is left at.
            let _ = end_rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let tid = worker.tid();
    let before = sched::thread_scheduling(tid).unwrap();
    let served = sporadic::serve_handle(&worker, params, 50).unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || !served.is_served()),
        "the server took a thread it has no timers for"
    );
    let e = served.last_error().expect("the refusal is reported");
    assert_eq!(e.errno(), Some(libc::EAGAIN), "{e}");
    assert_eq!(
        sched::thread_scheduling(tid).unwrap(),
        before,
        "left at its normal priority, unenforced"
    );
    drop(served);
    let _ = end_tx.send(());
    worker.join().unwrap();

    // A thread spawned sporadic had no scheduling of its own before: it goes
    // to its low priority, not back to the normal one.
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let spawned = Builder::new()
        .name("ss-refused-sp")
        .sporadic(params, 50)
        .spawn(move || {
            let _ = end_rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let served = spawned.sporadic().expect("a sporadic handle");
    assert!(
        wait_for(Duration::from_secs(5), || !served.is_served()),
        "the server took a thread it has no timers for"
    );
    assert_eq!(
        sched::thread_scheduling(spawned.tid()).unwrap(),
        Priority::fifo(params.low_priority).unwrap(),
        "left at its normal priority, unenforced"
    );
    let _ = end_tx.send(());
    spawned.join().unwrap();
}
