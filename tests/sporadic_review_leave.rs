//! A thread taken off the sporadic server mid-budget: it keeps the priority it has
//! (its normal one, as documented) and the server no longer demotes it.

#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use posixrt::sched::sporadic::{self, SporadicParams};
use posixrt::sched::{self, Builder, CpuSet, Priority};
use posixrt::ErrorKind;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn a_thread_leaving_mid_budget_keeps_its_priority_and_is_not_demoted() {
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let h = Builder::new()
        .name("ss-leave")
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            if go_rx.recv().is_err() {
                return None;
            }
            // Far past the 2 ms budget of CPU time, bounded in wall time.
            let t0 = Instant::now();
            while t0.elapsed() < ms(30) {
                std::hint::spin_loop();
            }
            // Not served any more: just runs the call.
            let r = sporadic::blocking(|| 7);
            Some((r, sched::thread_scheduling(sched::gettid())))
        })
        .unwrap();
    let params = SporadicParams::new(10, ms(10), ms(2), 4);
    let served = match sporadic::serve_handle(&h, params, 50) {
        Ok(s) => s,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            drop(go_tx);
            assert_eq!(h.join().unwrap(), None);
            return;
        }
    };
    assert!(served.is_served());
    let normal = Priority::fifo(50).unwrap();
    assert_eq!(sched::thread_scheduling(h.tid()).unwrap(), normal);
    // Mid-budget: it waits for `go` (it may still be starting up).
    let left = served.remaining_budget().unwrap();
    assert!(left > Duration::ZERO && left <= ms(2), "{left:?}");
    drop(served);
    go_tx.send(()).unwrap();
    let (r, prio) = h.join().unwrap().expect("ran");
    assert_eq!(r, 7);
    assert_eq!(prio.unwrap(), normal, "demoted after leaving the server");
}
