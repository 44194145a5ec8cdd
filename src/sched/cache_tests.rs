//! The per-thread class cache of `sys::prio` ([`current_cached`]) as the
//! scheduling calls of this module leave it: a change of a thread's class made
//! from *another* thread (by tid, or on a `JoinHandle`) must be seen by the
//! target's next `current_cached`, not up to `CACHE_USES` calls later.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use crate::sched::{self, Builder, Policy, Priority, Tid};
use crate::sys::prio::{current, current_cached, SchedClass};

const BATCH: SchedClass = SchedClass {
    policy: libc::SCHED_BATCH,
    priority: 0,
};

/// Whether this process may use SCHED_FIFO (CAP_SYS_NICE).
fn can_rt() -> bool {
    use rustix::thread::{capabilities, CapabilitySet};
    capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_NICE))
}

type Reads = (SchedClass, SchedClass, SchedClass);

/// A thread that reads its cached class, lets the caller change its class, and
/// reads the cached class again: `(first read, second read, the kernel's class)`.
/// `change` runs on the calling thread between the two reads; what it returns is
/// dropped after the second read, before the thread ends.
fn read_around<R>(change: impl FnOnce(&sched::JoinHandle<()>, Tid) -> R) -> Reads {
    let wait = |rx: &Receiver<()>| {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the other side goes on")
    };
    let (ready_tx, ready_rx): (Sender<()>, Receiver<()>) = channel();
    let (go_tx, go_rx): (Sender<()>, Receiver<()>) = channel();
    let (read_tx, read_rx) = channel::<Reads>();
    let (bye_tx, bye_rx): (Sender<()>, Receiver<()>) = channel();
    let h = Builder::new()
        .spawn(move || {
            let before = current_cached();
            ready_tx.send(()).expect("the test waits");
            wait(&go_rx);
            let _ = read_tx.send((before, current_cached(), current()));
            wait(&bye_rx);
        })
        .expect("spawn");
    wait(&ready_rx);
    let kept = change(&h, h.tid());
    go_tx.send(()).expect("the thread waits");
    let reads = read_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread read again");
    drop(kept);
    bye_tx.send(()).expect("the thread waits");
    h.join().expect("the test thread");
    reads
}

/// `set_thread_scheduling(tid, ..)` from another thread (the sporadic server's
/// switch, the creator's after-creation switch): a raw `sched_setscheduler` by
/// tid, which neither the target's cache nor glibc's sees.
#[test]

fn a_thread_sees_a_class_set_on_its_tid_by_another() {
    let (before, after, kernel) = read_around(|_, tid| {
        sched::set_thread_scheduling(tid, Priority::batch()).expect("SCHED_BATCH");
    });
    assert_eq!(before, SchedClass::OTHER);
    assert_eq!(kernel, BATCH);
    assert_eq!(after, BATCH);
}

/// `set_scheduler(Some(tid), ..)`: the same by the POSIX-named call.
#[test]

fn a_thread_sees_a_class_set_by_set_scheduler_on_its_tid() {
    let (before, after, kernel) = read_around(|_, tid| {
        sched::set_scheduler(Some(tid), Priority::batch()).expect("SCHED_BATCH");
    });
    assert_eq!(before, SchedClass::OTHER);
    assert_eq!(kernel, BATCH);
    assert_eq!(after, BATCH);
}

/// `JoinHandle::set_scheduling` (`pthread_setschedparam` on the handle):
/// glibc's copy is right, the target's own cache is not told.
#[test]

fn a_thread_sees_a_class_set_on_its_handle() {
    let (before, after, kernel) = read_around(|h, _| {
        h.set_scheduling(Priority::batch()).expect("SCHED_BATCH");
    });
    assert_eq!(before, SchedClass::OTHER);
    assert_eq!(kernel, BATCH);
    assert_eq!(after, BATCH);
}

/// A priority change by tid (`set_thread_priority`, `sched_setparam`) of a
/// real-time thread: the priority the thread's requests carry follows.
#[test]

fn a_thread_sees_a_priority_set_on_its_tid_by_another() {
    if !can_rt() {
        return;
    }
    let fifo = |p| SchedClass {
        policy: libc::SCHED_FIFO,
        priority: p,
    };
    let (ready_tx, ready_rx) = channel::<()>();
    let (go_tx, go_rx) = channel::<()>();
    let h = Builder::new()
        .scheduling(Priority::fifo(3).expect("FIFO 3"))
        .spawn(move || {
            let before = current_cached();
            ready_tx.send(()).expect("the test waits");
            go_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the test goes on");
            (before, current_cached(), current())
        })
        .expect("spawn at SCHED_FIFO 3");
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the thread read its class");
    sched::set_thread_priority(h.tid(), 5).expect("FIFO 5");
    go_tx.send(()).expect("the thread waits");
    let (before, after, kernel) = h.join().expect("the test thread");
    assert_eq!(before, fifo(3));
    assert_eq!(kernel, fifo(5));
    assert_eq!(after, fifo(5));
}

/// The sporadic server puts a thread it serves at its normal priority by tid:
/// the served thread's next cached read says so, where it said `SCHED_OTHER`.
#[test]

fn a_served_thread_sees_the_priority_the_server_gave_it() {
    if !can_rt() {
        return;
    }
    // A budget of a second: the waiting thread never spends it, so the server
    // never moves it to the low priority during the test.
    let params =
        sched::sporadic::SporadicParams::new(10, Duration::from_secs(4), Duration::from_secs(1), 4);
    let (before, after, kernel) =
        read_around(|_, tid| sched::sporadic::serve(tid, params, 20).expect("serve"));
    let normal = SchedClass {
        policy: libc::SCHED_FIFO,
        priority: 20,
    };
    assert_eq!(before, SchedClass::OTHER);
    assert_eq!(kernel, normal);
    assert_eq!(after, normal);
}

/// A thread spawned with `Builder::sporadic` is created at the low priority and
/// raised to the normal one by tid before its closure runs: its first cached
/// read must say normal, not the low priority glibc recorded at creation.
#[test]

fn a_sporadic_thread_starts_with_its_normal_priority_cached() {
    if !can_rt() {
        return;
    }
    let params =
        sched::sporadic::SporadicParams::new(10, Duration::from_secs(4), Duration::from_secs(1), 4);
    let h = Builder::new()
        .sporadic(params, 20)
        .spawn(|| (current_cached(), current()))
        .expect("spawn a sporadic thread");
    let (cached, kernel) = h.join().expect("the test thread");
    assert_eq!(kernel.policy, Policy::Fifo.as_raw());
    assert_eq!(kernel.priority, 20);
    assert_eq!(cached, kernel);
}

/// A thread created by one that has `SCHED_RESET_ON_FORK` and set its class
/// through glibc (`set_current_scheduling`): the kernel resets the new thread to
/// `SCHED_OTHER` 0, but glibc hands it a copy of the creator's class
/// (`pthread_getschedparam` in it says `SCHED_FIFO | SCHED_RESET_ON_FORK`, 10),
/// which `current_cached` must not take for its own: its io_uring requests
/// would carry a real-time `ioprio`.
#[test]

fn a_thread_created_by_one_with_reset_on_fork_caches_sched_other() {
    if !can_rt() {
        return;
    }
    let (cached, kernel) = std::thread::spawn(|| {
        let p = libc::sched_param { sched_priority: 0 };
        let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
        // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
        assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
        sched::set_current_scheduling(Priority::fifo(10).expect("FIFO 10")).expect("FIFO 10");
        std::thread::spawn(|| (current_cached(), current()))
            .join()
            .expect("the child")
    })
    .join()
    .expect("the creator");
    assert_eq!(kernel, SchedClass::OTHER);
    assert_eq!(cached, SchedClass::OTHER);
}
