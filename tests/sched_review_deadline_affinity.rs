//! Review test of `posixrt::sched::deadline`: the refusal of a pinned thread.

use std::sync::mpsc;
use std::time::Duration;

use posixrt::sched::deadline::{self, Deadline};
use posixrt::sched::{self, CpuSet};
use posixrt::ErrorKind;

/// A port of C code often pins a thread and then makes it SCHED_DEADLINE; the
/// kernel refuses that with EPERM, even to root, because the thread's affinity
/// does not cover its root domain. The hint listed that as one of two possible
/// causes and told the user to raise `sched_rt_runtime_us` (already 950000),
/// though the thread's affinity shows which it is: it must name the affinity,
/// the CPUs it leaves out and the fix. The thread only blocks; it never spins.
#[test]
fn a_deadline_refusal_of_a_pinned_thread_names_its_affinity() {
    let usable = sched::thread_affinity(sched::gettid()).unwrap();
    let first = usable.iter().next().unwrap();
    let pinned = CpuSet::single(first).unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let (tell, told) = mpsc::channel();
    let h = std::thread::spawn(move || {
        tell.send(sched::gettid()).unwrap();
        let _ = wait.recv();
    });
    let tid = told.recv().unwrap();
    sched::set_thread_affinity(tid, &pinned).unwrap();
    let ms = Duration::from_millis;
    let dl = Deadline::new(ms(1), ms(100), ms(100)).unwrap();
    let r = deadline::set(tid, &dl);
    drop(go);
    h.join().unwrap();
    let e = r.expect_err("a thread pinned to one CPU was admitted to SCHED_DEADLINE");
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    let hint = e.hint().unwrap_or_default().to_string();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Without privilege the documented refusal names the capability.
        assert!(hint.contains("CAP_SYS_NICE"), "{hint}");
        return;
    }
    if usable.count() < 2 {
        // One usable CPU: pinning leaves nothing out, so the kernel refused
        // for another reason (a cpuset partition or no deadline bandwidth).
        return;
    }
    let mut left_out = usable;
    left_out.remove(first);
    assert!(
        hint.contains(&format!("affinity is {pinned}")),
        "the hint does not name the thread's affinity: {hint}"
    );
    assert!(
        hint.contains(&format!("leaves out CPUs {left_out}")),
        "the hint does not name the CPUs left out: {hint}"
    );
    assert!(hint.contains("set_thread_affinity"), "{hint}");
    assert!(!hint.contains("raise it"), "{hint}");
}
