//! The setup of the one-CPU priority-inversion tests:
//! `#[path = "common/fifo.rs"] mod fifo;`.

use posixrt::sched::{Builder, CpuSet, Priority};
use posixrt::ErrorKind;

/// The CPU the test's threads are pinned to (the last one allowed), or `None`
/// after printing why the test is skipped: SCHED_FIFO is refused here (which must
/// be the documented PermissionDenied).
pub fn fifo_cpu() -> Option<usize> {
    let cpu = CpuSet::allowed()
        .expect("affinity")
        .iter()
        .last()
        .expect("some CPU");
    let probe = Builder::new()
        .scheduling(Priority::fifo(10).expect("priority"))
        .spawn(|| ());
    match probe {
        Ok(h) => {
            h.join().expect("probe");
            Some(cpu)
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            eprintln!("skipped: no SCHED_FIFO here ({e})");
            None
        }
    }
}
