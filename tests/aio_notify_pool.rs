//! The `SIGEV_THREAD` notification pool on both engines: a burst of callbacks
//! that all block gets a thread each (none waits behind another), and never more
//! than `MAX_NOTIFY_THREADS` run at once. `both!(name, f)` makes `name::uring`
//! and `name::threads`.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Notify, Op, Request, MAX_NOTIFY_THREADS};

mod common;
use common::both;
use common::ctx;

/// A regular file of `n` bytes (removed at once).
fn file(n: usize) -> std::fs::File {
    common::temp_file(&vec![b'x'; n])
}

#[derive(Default)]
struct Seen {
    /// Callbacks running now.
    running: usize,
    /// Most callbacks seen running at once.
    peak: usize,
    /// Callbacks that returned.
    done: usize,
    /// Callbacks that gave up waiting for the others.
    timed_out: usize,
    /// The threads that ran callbacks.
    threads: HashSet<std::thread::ThreadId>,
    /// The test lets the callbacks return.
    released: bool,
}

/// The shared state, the context and the requests of [`blocking_callbacks`].
type Blocked = (Arc<(Mutex<Seen>, Condvar)>, Aio, Vec<Request<Vec<u8>>>);

/// Submits `n` one-byte reads whose callbacks block until `until(&Seen)` holds
/// or the test releases them (each gives up after 10 s and says so).
fn blocking_callbacks(b: Backend, n: usize, until: fn(&Seen, usize) -> bool) -> Blocked {
    let aio = ctx(b);
    let f = file(n);
    let st = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
    let mut reqs = Vec::new();
    for i in 0..n {
        let s = Arc::clone(&st);
        let cb = Notify::thread(i, move |_| {
            let (m, cv) = &*s;
            let mut g = m.lock().unwrap();
            g.running += 1;
            g.peak = g.peak.max(g.running);
            g.threads.insert(std::thread::current().id());
            cv.notify_all();
            let (mut g, to) = cv
                .wait_timeout_while(g, Duration::from_secs(10), |g| !g.released && !until(g, n))
                .unwrap();
            if to.timed_out() {
                g.timed_out += 1;
            }
            g.running -= 1;
            g.done += 1;
            cv.notify_all();
        });
        reqs.push(
            aio.submit(Op::read(&f, i as i64, vec![0u8; 1]).notify(cb))
                .unwrap(),
        );
    }
    (st, aio, reqs)
}

/// Waits (bounded) until `cond` holds; returns the state then.
fn wait_for(st: &(Mutex<Seen>, Condvar), cond: impl Fn(&Seen) -> bool) {
    let (m, cv) = st;
    let g = m.lock().unwrap();
    let _ = cv
        .wait_timeout_while(g, Duration::from_secs(20), |g| !cond(g))
        .unwrap();
}

fn burst_of_blocking_callbacks_gets_a_thread_each(b: Backend) {
    // Each callback returns only once all 16 are running at the same time: a
    // callback held up behind a blocked one would make them all time out.
    let n = 16;
    let (st, _aio, mut reqs) = blocking_callbacks(b, n, |g, n| g.peak >= n);
    for r in &mut reqs {
        r.wait().unwrap().result.unwrap();
    }
    wait_for(&st, |g| g.done == n);
    let g = st.0.lock().unwrap();
    assert_eq!(g.done, n, "every callback ran");
    assert_eq!(g.timed_out, 0, "a callback waited behind a blocked one");
    assert_eq!(g.peak, n);
    assert_eq!(g.threads.len(), n, "one thread per blocked callback");
}

fn pool_never_exceeds_its_bound(b: Backend) {
    // More blocking callbacks than the pool has threads: MAX run at once, the
    // others once those return.
    let n = MAX_NOTIFY_THREADS + 4;
    let (st, _aio, mut reqs) = blocking_callbacks(b, n, |_, _| false);
    for r in &mut reqs {
        r.wait().unwrap().result.unwrap();
    }
    wait_for(&st, |g| g.running == MAX_NOTIFY_THREADS);
    // Give a thread beyond the bound, if one were started, the time to show up.
    std::thread::sleep(Duration::from_millis(200));
    {
        let mut g = st.0.lock().unwrap();
        assert_eq!(g.running, MAX_NOTIFY_THREADS, "callbacks running at once");
        g.released = true;
        st.1.notify_all();
    }
    wait_for(&st, |g| g.done == n);
    let g = st.0.lock().unwrap();
    assert_eq!(g.done, n, "the callbacks beyond the bound ran afterwards");
    assert_eq!(g.timed_out, 0);
    assert_eq!(g.peak, MAX_NOTIFY_THREADS);
    assert!(
        g.threads.len() <= MAX_NOTIFY_THREADS,
        "{} threads",
        g.threads.len()
    );
}

both!(
    burst_of_blocking_callbacks,
    burst_of_blocking_callbacks_gets_a_thread_each
);
both!(pool_bound, pool_never_exceeds_its_bound);
