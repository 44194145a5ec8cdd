//! `serve` refuses a `SCHED_DEADLINE` thread with `InvalidInput` and a hint,
//! and leaves its deadline parameters as they were: the server's switches are
//! `sched_setscheduler` calls that would turn it `SCHED_FIFO` and lose its
//! runtime, deadline and period for good (nothing restores them when it stops
//! being served). Its own binary: the server it may start stays out of the
//! other tests.

#[path = "common/caps.rs"]
mod caps;

use std::sync::mpsc;
use std::time::Duration;

use caps::can_rt;
use posixrt::sched::{self, deadline, deadline::Deadline, sporadic, sporadic::SporadicParams};
use posixrt::sched::{Builder, Policy};
use posixrt::ErrorKind;

#[test]
fn a_sched_deadline_thread_is_refused_and_keeps_its_parameters() {
    let ms = Duration::from_millis;
    let params = SporadicParams::new(10, ms(50), ms(2), 4);
    let dl = Deadline::new(ms(1), ms(10), ms(10)).unwrap();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    // Blocked, not spinning, under whatever policy it has.
    let worker = Builder::new()
        .name("ss-deadline")
        .spawn(move || {
            let _ = end_rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let tid = worker.tid();
    if !can_rt() {
        let e = deadline::set(tid, &dl).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        let _ = end_tx.send(());
        worker.join().unwrap();
        return;
    }
    deadline::set(tid, &dl).unwrap();
    let before = deadline::get(tid).unwrap();
    assert_eq!(before.deadline_params(), Some(dl));

    let r = sporadic::serve_handle(&worker, params, 50);
    let after = deadline::get(tid).unwrap();
    // The old code served it and switched it to SCHED_FIFO 50.
    assert_eq!(
        (after.policy, after.deadline_params()),
        (Policy::Deadline, Some(dl)),
        "its deadline parameters after serve"
    );
    let e = r.expect_err("a SCHED_DEADLINE thread is refused");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("SCHED_DEADLINE"), "{e}");
    assert!(
        e.hint()
            .is_some_and(|h| h.contains("set_thread_scheduling")),
        "{e}"
    );
    // Refused before anything was changed: once given a fixed priority, the
    // same thread is served.
    sched::set_thread_scheduling(tid, sched::Priority::other()).unwrap();
    let served = sporadic::serve_handle(&worker, params, 50).unwrap();
    assert_eq!(
        sched::thread_scheduling(tid).unwrap(),
        sched::Priority::fifo(50).unwrap()
    );
    drop(served);
    let _ = end_tx.send(());
    worker.join().unwrap();
}
