//! Integration tests for `posixrt::sched` affinity: round trips for a thread
//! and the process, and a CPU that is not usable.

#[path = "common/sched_shared.rs"]
mod shared;
use shared::{demo_cpu, serial};

use posixrt::sched::{self, Builder, CpuSet};
use posixrt::ErrorKind;

// ---------- affinity ----------

#[test]
fn affinity_round_trip() {
    let _g = serial();
    let allowed = CpuSet::allowed().unwrap();
    let cpu = demo_cpu();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            sched::current_cpu()
        })
        .unwrap();
    assert_eq!(sched::thread_affinity(h.tid()).unwrap(), allowed);
    let one = CpuSet::single(cpu).unwrap();
    sched::set_thread_affinity(h.tid(), &one).unwrap();
    assert_eq!(sched::thread_affinity(h.tid()).unwrap(), one);
    assert_eq!(h.affinity().unwrap(), one);
    h.set_affinity(&allowed).unwrap();
    assert_eq!(h.affinity().unwrap(), allowed);
    h.set_affinity(&one).unwrap();
    tx.send(()).unwrap();
    assert_eq!(h.join().unwrap(), cpu, "ran on the only CPU allowed");
    // Empty and out-of-range sets are refused before any call.
    assert_eq!(
        sched::set_thread_affinity(sched::gettid(), &CpuSet::new())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    let e = CpuSet::single(CpuSet::CAPACITY).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.hint().unwrap().contains("0..=1023"), "{e}");
    assert_eq!(
        CpuSet::from_cpus([0, CpuSet::CAPACITY + 5])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn process_affinity_sets_every_thread() {
    let _g = serial();
    let allowed = sched::process_affinity().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        })
        .unwrap();
    let one = CpuSet::single(demo_cpu()).unwrap();
    sched::set_process_affinity(&one).unwrap();
    let seen_main = sched::process_affinity().unwrap();
    let seen_thread = sched::thread_affinity(h.tid()).unwrap();
    let seen_me = sched::thread_affinity(sched::gettid()).unwrap();
    sched::set_process_affinity(&allowed).unwrap();
    tx.send(()).unwrap();
    h.join().unwrap();
    assert_eq!((seen_main, seen_thread, seen_me), (one, one, one));
    assert_eq!(sched::process_affinity().unwrap(), allowed);
    assert!(sched::process_threads().unwrap().contains(&sched::gettid()));
}

#[test]
fn affinity_to_a_cpu_that_is_not_usable_says_which_are() {
    // process_affinity_sets_every_thread changes this thread's mask for a moment.
    let _g = serial();
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    // A CPU number this machine does not have (all machines here have < 1024).
    let absent = CpuSet::CAPACITY - 1;
    let allowed = CpuSet::allowed().unwrap();
    if allowed.contains(absent) {
        return; // a 1024-CPU machine: nothing absent to name
    }
    let set = CpuSet::single(absent).unwrap();
    let e = sched::set_thread_affinity(sched::gettid(), &set).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let hint = e.hint().unwrap();
    assert!(
        hint.contains("online") && hint.contains("allowed"),
        "{hint} ({possible})"
    );
    assert_eq!(
        sched::thread_affinity(sched::gettid()).unwrap(),
        allowed,
        "unchanged"
    );
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let e = Builder::new()
        .affinity(set)
        .spawn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(
        e.to_string().contains(&format!("the affinity {absent}")),
        "{e}"
    );
    assert!(e.hint().unwrap().contains("online"), "{e}");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}
