//! Integration tests for `posixrt::sched::deadline` (`SCHED_DEADLINE`): bad
//! input, set and read back, admission control.

#[path = "common/sched_shared.rs"]
mod shared;
use shared::{ms, serial, unused_tid};
#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

use posixrt::sched::{self, Builder, CpuSet, Policy, Priority};
use posixrt::ErrorKind;

// ---------- SCHED_DEADLINE ----------

use posixrt::sched::deadline::{self, Deadline, DeadlineFlags};
use std::time::Duration;

#[test]
fn deadline_bad_input_is_invalid_input() {
    for (r, d, p) in [(0, 5, 10), (1, 0, 10), (1, 5, 0), (6, 5, 10), (1, 11, 10)] {
        let e = Deadline::new(ms(r), ms(d), ms(p)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{r} {d} {p}: {e}");
    }
    let e = Deadline::new(ms(1), ms(5), Duration::ZERO).unwrap_err();
    assert!(e.to_string().contains("period is zero"), "{e}");
    let e = deadline::get(unused_tid()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let dl = Deadline::new(ms(1), ms(5), ms(10)).unwrap();
    assert_eq!(
        deadline::set(unused_tid(), &dl).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let e = Builder::new()
        .deadline(dl)
        .scheduling(Priority::other())
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn deadline_set_and_read_back() {
    let _g = serial();
    let dl = Deadline::new(ms(2), ms(8), ms(10))
        .unwrap()
        .with_flags(DeadlineFlags::RESET_ON_FORK);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
            deadline::get(sched::gettid())
        })
        .unwrap();
    let before = deadline::get(h.tid()).unwrap();
    assert_eq!(before.policy, Policy::Other);
    assert_eq!(before.deadline_params(), None);
    let r = retry_busy(|| deadline::set(h.tid(), &dl));
    if !can_rt() {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert!(e.hint().unwrap().contains("CAP_SYS_NICE"));
        tx.send(()).unwrap();
        h.join().unwrap().unwrap();
        return;
    }
    r.unwrap();
    let now = deadline::get(h.tid()).unwrap();
    assert_eq!(now.policy, Policy::Deadline);
    assert_eq!(now.deadline_params(), Some(dl));
    assert_eq!(
        (now.runtime, now.deadline, now.period),
        (ms(2), ms(8), ms(10))
    );
    assert_eq!(
        sched::get_scheduler(Some(h.tid())).unwrap(),
        Policy::Deadline
    );
    assert!(sched::kernel_priority(h.tid()).unwrap().is_deadline());
    assert_eq!(sched::kernel_priority(h.tid()).unwrap().raw(), -101);
    // A DEADLINE thread has no priority to change: refused up front, with the fix.
    for e in [
        sched::set_thread_priority(h.tid(), 0).unwrap_err(),
        sched::set_param(Some(h.tid()), 0).unwrap_err(),
        h.set_priority(0).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.hint().unwrap().contains("deadline::set"), "{e}");
    }
    assert_eq!(
        deadline::get(h.tid()).unwrap().deadline_params(),
        Some(dl),
        "unchanged"
    );
    tx.send(()).unwrap();
    let inside = h.join().unwrap().unwrap();
    assert_eq!(inside.deadline_params(), Some(dl), "seen from inside");

    // At creation, through the builder.
    let h = retry_busy(|| {
        Builder::new()
            .deadline(dl)
            .spawn(|| deadline::get(sched::gettid()).map(|a| a.deadline_params()))
    })
    .unwrap();
    assert_eq!(h.join().unwrap().unwrap(), Some(dl));
}

/// Runs `f` again while admission control says Busy, for at most 2 s. A deadline
/// task that ended keeps its bandwidth until its 0-lag time (up to a period), so a
/// test right after another one's reservations (ours, or another program's on this
/// shared machine) can be refused for a moment; the behaviour under test is not.
fn retry_busy<T>(mut f: impl FnMut() -> posixrt::Result<T>) -> posixrt::Result<T> {
    let t0 = std::time::Instant::now();
    loop {
        match f() {
            Err(e) if e.kind() == ErrorKind::Busy && t0.elapsed() < Duration::from_secs(2) => {
                std::thread::sleep(ms(10));
            }
            r => return r,
        }
    }
}

#[test]
fn deadline_over_admission_is_busy_with_hint() {
    let _g = serial();
    if !can_rt() {
        // Without CAP_SYS_NICE admission control is never reached.
        let e = deadline::set(
            sched::gettid(),
            &Deadline::new(ms(9), ms(10), ms(10)).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        assert!(
            e.hint()
                .unwrap()
                .contains("SCHED_DEADLINE needs CAP_SYS_NICE"),
            "{e}"
        );
        return;
    }
    // Each reservation asks for 0.9 CPU; the root domain admits at most
    // 0.95 x CPUs, so by the (CPUs + 1)-th one admission control must refuse.
    let cpus = CpuSet::allowed().unwrap().count();
    let dl = Deadline::new(ms(9), ms(10), ms(10)).unwrap();
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let mut handles = Vec::new();
    let mut busy = None;
    for _ in 0..=cpus + 1 {
        let rx = rx.clone();
        let h = Builder::new()
            .spawn(move || {
                let _ = rx.recv_timeout(Duration::from_secs(10));
            })
            .unwrap();
        let r = deadline::set(h.tid(), &dl);
        handles.push(h);
        if let Err(e) = r {
            busy = Some(e);
            break;
        }
    }
    drop(tx);
    for h in handles {
        h.join().unwrap();
    }
    let unlimited = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .map(|v| v.trim() == "-1")
        .unwrap_or(false);
    if unlimited {
        // kernel.sched_rt_runtime_us = -1 turns admission control off.
        assert!(busy.is_none(), "{busy:?}");
        return;
    }
    let e = busy.expect("admission control never refused");
    eprintln!("over-admission: {e}");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert_eq!(e.errno(), Some(libc::EBUSY));
    let hint = e.hint().unwrap();
    assert!(hint.contains("sched_rt_runtime_us"), "{hint}");
    assert!(hint.contains("0.900 CPU"), "{hint}");
}
