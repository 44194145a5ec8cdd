//! `unserve` racing a `serve` of the same thread.

use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use super::*;

type Seam = Box<dyn FnOnce() + Send>;

/// Run by `unserve` between taking the tid out of the served set and
/// queueing its `Remove` (once).
static SEAM: Mutex<Option<Seam>> = Mutex::new(None);

pub(super) fn between_remove_and_send() {
    let seam = SEAM.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(f) = seam {
        f();
    }
}

/// A handle dropped while another thread serves the same thread again: the
/// new serve must stay in force. `unserve` queued its `Remove` after letting
/// the served set go, so a `serve` of the same tid in between queued its
/// `Add` first, and the server then took the new entry off (the thread left
/// at its normal priority with nothing enforcing its budget). Needs the
/// privilege for SCHED_FIFO (else `serve` is refused, as tested elsewhere).
#[test]
fn a_serve_racing_the_unserve_of_its_thread_stays_in_force() {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    // Blocked, never spinning: its budget is never spent.
    let w = std::thread::spawn(move || {
        let _ = tid_tx.send(crate::sched::gettid());
        let _ = end_rx.recv();
    });
    let tid = tid_rx.recv().expect("the worker's tid");
    let params = SporadicParams::new(10, Duration::from_millis(10), Duration::from_millis(2), 4);
    let first = match serve(tid, params, 20) {
        Ok(s) => s,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            let _ = end_tx.send(());
            let _ = w.join();
            return;
        }
        Err(e) => panic!("serve: {e}"),
    };
    let (again_tx, again_rx) = mpsc::channel();
    *SEAM.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(move || {
        std::thread::spawn(move || {
            let _ = again_tx.send(serve(tid, params, 20));
        });
        // Time for that serve to run, if it can before the Remove is queued.
        std::thread::sleep(Duration::from_millis(200));
    }));
    drop(first);
    let again = again_rx
        .recv()
        .expect("the second serve's result")
        .expect("served again");
    // The server takes its commands in order, at once (it runs at the top
    // priority): a Remove queued after the new Add takes the entry off well
    // within this look.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(500) {
        assert!(
            again.is_served(),
            "the new serve was taken off by the dropped handle's Remove"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(again);
    let _ = end_tx.send(());
    w.join().expect("the worker");
}
