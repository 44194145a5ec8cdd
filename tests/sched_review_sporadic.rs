//! Review tests of `posixrt::sched::sporadic` on the real server: what the server
//! is told around `sporadic::blocking`. They assert the replenishments it
//! scheduled (amount order and times relative to the thread's own clock reads),
//! never how long anything took.

use std::time::{Duration, Instant};

use posixrt::sched::sporadic::{self, SporadicParams};
use posixrt::sched::{self, Builder, CpuSet};
use posixrt::ErrorKind;

#[path = "common/caps.rs"]
mod caps;
use caps::{can_rt, wait_for};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn monotonic() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Spins until the calling thread has used `cpu` more CPU time (at most 1 s of
/// wall time).
fn burn(cpu: Duration) {
    let me = sched::cputime::CpuClock::current_thread();
    let start = me.now().unwrap();
    let t0 = Instant::now();
    while me.now().unwrap() - start < cpu && t0.elapsed() < Duration::from_secs(1) {
        std::hint::spin_loop();
    }
}

/// A `blocking` call inside another one (a helper that declares its own wait,
/// called from a wait the caller declared) must not tell the server the thread
/// woke up while the outer call still blocks. The old code sent the inner
/// call's `Wake`: the server took the thread as running again from then on, so
/// the rest of the outer wait was not a block and the next replenishment was
/// dated from the inner wake-up, before the outer wait had even ended.
#[test]
fn a_nested_blocking_call_does_not_wake_the_thread_early() {
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    // A long period: no replenishment comes due while the test looks.
    let period = ms(500);
    let params = SporadicParams::new(10, period, ms(2), 4);
    let h = Builder::new()
        .name("ss-nested")
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            let served = match sporadic::serve(sched::gettid(), params, 50) {
                Ok(s) => s,
                Err(e) => return Err(e),
            };
            sporadic::set_server_affinity(&CpuSet::single(cpu).unwrap()).unwrap();
            burn(Duration::from_micros(200));
            let outer_end = sporadic::blocking(|| {
                sporadic::blocking(|| ());
                std::thread::sleep(ms(30));
                monotonic()
            });
            // Running again from the outer wake-up on: use some budget and block,
            // which schedules its replenishment at that activation + period.
            burn(Duration::from_micros(300));
            sporadic::blocking(|| ());
            let two = wait_for(Duration::from_secs(2), || {
                served.pending_replenishments().len() >= 2
            });
            let pending = served.pending_replenishments();
            Ok((two, outer_end, pending))
        })
        .unwrap();
    let r = h.join().unwrap();
    let (two, outer_end, pending) = match r {
        Ok(v) => v,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            return;
        }
    };
    assert!(two, "the server never scheduled both chunks: {pending:?}");
    let last = pending.iter().map(|r| r.at).max().unwrap();
    let activation = last - period;
    assert!(
        activation >= outer_end,
        "the last chunk is dated from {activation:?}, before the outer wait ended at \
         {outer_end:?}: the server took the thread as awake inside it ({pending:?})"
    );
}
