//! A priority switch the server could not make is tried again until it holds:
//! a thread whose demotion failed is not left at its normal priority, with no
//! budget enforced, until its next replenishment; the tries back off while
//! the refusal lasts.
//!
//! The server runs under a seccomp filter that fails `sched_setscheduler`
//! with EPERM when the policy carries `SCHED_RESET_ON_FORK` (the crate keeps
//! a thread's flag in its switches). The test sets the flag on the served
//! thread, so its demotion fails, then clears it. Meanwhile the handle reports
//! the level the thread runs at. Its own binary: no other test may start the
//! server first.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/seccomp.rs"]
mod seccomp;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use caps::{can_serve, wait_for};
use posixrt::sched::cputime::CpuClock;
use posixrt::sched::{self, sporadic, sporadic::SporadicParams, Builder, CpuSet, Priority};

const FIFO_RESET_ON_FORK: i32 = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;

/// `sched_setscheduler(tid, policy, prio)` from the test (not filtered).
fn set_raw(tid: i32, policy: i32, prio: i32) {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall with a valid sched_param the kernel only reads.
    let r = unsafe { libc::sched_setscheduler(tid, policy, &p) };
    assert_eq!(
        r,
        0,
        "sched_setscheduler: {}",
        std::io::Error::last_os_error()
    );
}

/// Thread `tid`'s voluntary context switches (its sleeps).
fn voluntary_switches(tid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_failed_demotion_is_retried_until_it_holds() {
    let ms = Duration::from_millis;
    // 2 ms of budget; the replenishment comes back only after a minute, so
    // nothing but a retry can put the thread where it belongs meanwhile.
    let params = SporadicParams::new(10, Duration::from_secs(60), ms(2), 4);
    if !can_serve(params) {
        return;
    }
    let cpus: Vec<usize> = CpuSet::allowed().unwrap().iter().collect();
    if cpus.len() < 2 {
        eprintln!("skipped: needs two CPUs (the served thread spins at SCHED_FIFO)");
        return;
    }
    let (mine, theirs) = (cpus[0], cpus[1]);
    sched::set_thread_affinity(sched::gettid(), &CpuSet::single(mine).unwrap()).unwrap();
    seccomp::start_sporadic_server_failing(
        libc::SYS_sched_setscheduler,
        Some(FIFO_RESET_ON_FORK as u32),
        libc::EPERM,
    );
    sporadic::set_server_affinity(&CpuSet::single(theirs).unwrap()).unwrap();

    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let worker = Builder::new()
        .name("ss-retry")
        .affinity(CpuSet::single(theirs).unwrap())
        .spawn(move || {
            let _ = go_rx.recv();
            // 5 ms of CPU (at most 1 s of wall time): exhausted at 2 ms.
            let me = CpuClock::current_thread();
            let (c0, t0) = (me.now().unwrap(), Instant::now());
            while me.now().unwrap() < c0 + ms(5) && t0.elapsed() < Duration::from_secs(1) {
                std::hint::spin_loop();
            }
            let _ = end_rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let tid = worker.tid();
    let served = sporadic::serve_handle(&worker, params, 50).unwrap();
    set_raw(tid.as_raw(), FIFO_RESET_ON_FORK, 50);
    assert_eq!(served.stats().switches, 0);
    go_tx.send(()).unwrap();

    // The demotion fails: reported, and the thread is still at 50.
    assert!(
        wait_for(Duration::from_secs(5), || served.last_error().is_some()),
        "the demotion did not fail: {:?}",
        served.stats()
    );
    let e = served.last_error().unwrap();
    assert_eq!(e.errno(), Some(libc::EPERM), "{e}");
    // The handle reports the level the thread runs at, not the one the rules
    // call for (it said Low here before).
    assert_eq!(
        served.level(),
        sporadic::Level::Normal,
        "the level reported while the demotion is refused"
    );
    assert_eq!(
        sched::thread_scheduling(tid).unwrap(),
        Priority::fifo(50).unwrap()
    );

    // While the refusal lasts, the tries back off: the server does not wake
    // every millisecond (about 500 times in this half second before; now a
    // dozen tries at most, 64 ms apart once backed off, and its other timers).
    let server = sporadic::server_tid().unwrap().as_raw();
    let w0 = voluntary_switches(server);
    std::thread::sleep(ms(500));
    let woken = voluntary_switches(server) - w0;
    assert!(
        woken < 100,
        "the server woke {woken} times in 500 ms of refusals"
    );
    // The cause goes away: the server's next try demotes it.
    set_raw(tid.as_raw(), libc::SCHED_FIFO, 50);
    assert!(
        wait_for(Duration::from_secs(5), || sched::thread_scheduling(tid)
            .is_ok_and(|p| p == Priority::fifo(10).unwrap())),
        "left at {:?} after its demotion failed",
        sched::thread_scheduling(tid)
    );
    assert!(
        wait_for(Duration::from_secs(5), || served.level()
            == sporadic::Level::Low),
        "the level reported once the demotion held"
    );
    // Counted: the demotion that failed and the try that held, not the
    // failed tries between them.
    assert!(wait_for(Duration::from_secs(5), || served.stats().switches >= 2));
    assert_eq!(served.stats().switches, 2);
    drop(served);
    let _ = end_tx.send(());
    worker.join().unwrap();
}
