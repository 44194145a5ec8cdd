//! Integration test for a served thread that has ended: its handle says so
//! (`NotFound`), whatever level the server last had it at.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use posixrt::sched::sporadic::{self, SporadicParams};
use posixrt::sched::{Builder, CpuSet};
use posixrt::ErrorKind;

#[path = "common/caps.rs"]
mod caps;
use caps::{can_rt, wait_for};

#[test]
fn the_budget_of_a_served_thread_that_has_ended_is_not_found() {
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    // CPU-bound (bounded to 3 s) until told to stop.
    let h = Builder::new()
        .name("ss-ends")
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            let t0 = Instant::now();
            while !stop2.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(3) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    let tid = h.tid();
    let params = SporadicParams::new(10, Duration::from_millis(50), Duration::from_millis(2), 4);
    let served = match sporadic::serve_handle(&h, params, 50) {
        Ok(s) => s,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            stop.store(true, Ordering::Relaxed);
            h.join().unwrap();
            return;
        }
    };
    sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
    assert!(served.remaining_budget().is_ok());
    // Let the server see it run out of budget at least once, then end it.
    assert!(
        wait_for(Duration::from_secs(2), || served.stats().exhaustions >= 1),
        "{:?}",
        served.stats()
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    // Gone from the kernel too (the task is reaped just after the join).
    assert!(wait_for(Duration::from_secs(2), || !std::path::Path::new(
        &format!("/proc/self/task/{tid}")
    )
    .exists()));
    let e = served.remaining_budget().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains(&tid.to_string()), "{e}");
}
