//! The thread engine wakes one sleeping worker per ready request, counting
//! the workers it woke already and that have not run yet: requests submitted
//! one call at a time (a loop of `aio_read`, stress-ng's `--aio`) do not wake
//! one worker for the first, two for the second, and so on. (They did: 6
//! requests woke all 16 workers, and most found nothing and slept again.)
//! Alone in its test binary: it counts every pool worker of the process.

use std::sync::Arc;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Op};
use posixrt::sched;

#[allow(unused_macros, unused_imports)]
mod common;
use common::workers::{asleep_workers, pool_threads, woken_since};

/// Requests submitted one call at a time while every worker sleeps, on one
/// CPU: the workers woken cannot run until the submitter waits (they rest at
/// `SCHED_BATCH`, which does not preempt on wake-up), so none of them counts
/// as awake when the next request comes. Each request wakes one worker: at
/// most as many woke as there were requests.
#[test]
fn requests_submitted_one_at_a_time_wake_one_worker_each() {
    const REQUESTS: usize = 6;
    let cpu = sched::CpuSet::allowed()
        .unwrap()
        .iter()
        .next()
        .expect("some CPU");
    sched::set_thread_affinity(sched::Tid::current(), &sched::CpuSet::single(cpu).unwrap())
        .unwrap();
    let before: Vec<u32> = pool_threads().iter().map(|t| t.0).collect();
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .workers(16)
        .worker_affinity([cpu])
        .build()
        .unwrap();
    let data = common::pattern(4096 * REQUESTS);
    let file = Arc::new(common::temp_file(&data));
    let Some(mine) = asleep_workers(&before, 16) else {
        return;
    };
    assert_eq!(mine.len(), 16, "{mine:?}");
    let mut reqs: Vec<_> = (0..REQUESTS)
        .map(|i| {
            aio.submit(Op::read(&*file, (i * 4096) as i64, vec![0u8; 4096]))
                .unwrap()
        })
        .collect();
    for (i, r) in reqs.iter_mut().enumerate() {
        let c = r.wait().unwrap();
        assert_eq!(c.data(), &data[i * 4096..(i + 1) * 4096], "request {i}");
    }
    // Time for any other woken worker to run and sleep again.
    std::thread::sleep(Duration::from_millis(100));
    let woken = woken_since(&mine);
    assert!(
        !woken.is_empty() && woken.len() <= REQUESTS,
        "workers woken for {REQUESTS} requests: {} of {}",
        woken.len(),
        mine.len()
    );
}
