//! On a `current_thread` runtime, the reads of one turn enter the ring at the
//! turn's end, told by one long-lived task per runtime and thread. A thread
//! that takes turns driving runtimes, or threads that take turns driving one,
//! leave no such task behind in a runtime: they stay bounded in number, and
//! every read completes. A `block_on` that returns before its turn's end
//! leaves no read of the context waiting for that turn.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::sync::Arc;

use posixrt::aio::Aio;

#[allow(unused_macros, unused_imports)]
mod common;
use common::{disk_temp_file, pattern, pattern_block, read_pattern_block, uring};

fn current_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Eight tasks of `per` reads each, beside one another so that their reads
/// wait for the turn's end; each read's bytes are checked.
async fn readers(aio: &Aio, f: &Arc<std::fs::File>, per: usize) {
    let tasks: Vec<_> = (0..8usize)
        .map(|t| {
            let (aio, f) = (aio.clone(), Arc::clone(f));
            tokio::spawn(async move {
                for k in 0..per {
                    read_pattern_block(&aio, &f, (t * 5 + k) % 16).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// The tasks alive in `rt` once its ready tasks have run.
fn alive(rt: &tokio::runtime::Runtime) -> usize {
    rt.block_on(async {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    });
    rt.metrics().num_alive_tasks()
}

#[test]
fn a_thread_taking_turns_between_runtimes() {
    if common::uring::uring_refused() {
        return; // (The thread engine does not batch: no turn's end.)
    }
    let aio = uring(1);
    let f = Arc::new(disk_temp_file(&pattern(16 * 4096)));
    let rts: Vec<_> = (0..6).map(|_| current_rt()).collect();
    // More runtimes than a thread keeps tasks for (4), in turn, 5 rounds.
    for _ in 0..5 {
        for rt in &rts {
            rt.block_on(readers(&aio, &f, 20));
        }
    }
    for (i, rt) in rts.iter().enumerate() {
        let n = alive(rt);
        assert!(n <= 1, "runtime {i}: {n} tasks alive after 5 rounds");
    }
    // The last 4 runtimes kept theirs (the first 2 were pushed out).
    assert_eq!(alive(&rts[5]), 1, "the turn's end was not told by a task");
    // Each still batches and completes after the others ran.
    for rt in &rts {
        rt.block_on(readers(&aio, &f, 5));
    }
}

#[test]
fn threads_taking_turns_on_one_runtime() {
    if common::uring::uring_refused() {
        return; // (The thread engine does not batch: no turn's end.)
    }
    let aio = uring(1);
    let f = Arc::new(disk_temp_file(&pattern(16 * 4096)));
    let rt = Arc::new(current_rt());
    for _ in 0..10 {
        let (rt, aio, f) = (Arc::clone(&rt), aio.clone(), Arc::clone(&f));
        // (`join`, unlike a scope's end, waits for the thread's exit, where
        // its task is retired.)
        std::thread::spawn(move || rt.block_on(readers(&aio, &f, 20)))
            .join()
            .unwrap();
    }
    // Each thread's task was retired as the thread exited, and finished when
    // the runtime ran next; this thread's is the one left.
    rt.block_on(readers(&aio, &f, 5));
    let n = alive(&rt);
    assert!(n <= 1, "{n} tasks alive after 11 threads drove the runtime");
}

/// Runtimes dropped while reads wait for a turn's end: nothing hangs, and the
/// context still works. (That the flush due then is woken, rather than left
/// to a later call's entry, is tested in `turn_end.rs`.)
#[test]
fn reads_complete_as_the_runtime_shuts_down() {
    if common::uring::uring_refused() {
        return; // (The thread engine does not batch: no turn's end.)
    }
    let aio = uring(1);
    let f = Arc::new(disk_temp_file(&pattern(16 * 4096)));
    for _ in 0..20 {
        let rt = current_rt();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        rt.block_on(async {
            // Tasks whose reads wait for a turn's end that the shutdown cuts.
            for _ in 0..8 {
                let (aio, f, done) = (aio.clone(), Arc::clone(&f), Arc::clone(&done));
                tokio::spawn(async move {
                    loop {
                        let c = aio
                            .read_async(Arc::clone(&f), 0, vec![0u8; 4096])
                            .await
                            .unwrap();
                        assert_eq!(*c.result.as_ref().unwrap(), 4096);
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
            tokio::task::yield_now().await;
        });
        drop(rt);
        // The context is still usable: nothing was left in its queue.
        let c = aio.read(&*f, 4096, vec![0u8; 4096]).unwrap();
        aio.suspend([&c], Some(std::time::Duration::from_secs(10)))
            .unwrap();
    }
}

/// Polls `f` on this thread, again only when woken, for at most `limit`: its
/// output, or None if it was not woken to completion in time.
fn poll_when_woken<F: std::future::Future>(f: F, limit: std::time::Duration) -> Option<F::Output> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Wake, Waker};
    struct Flag(AtomicBool, std::thread::Thread);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
            self.1.unpark();
        }
    }
    let flag = Arc::new(Flag(AtomicBool::new(true), std::thread::current()));
    let waker = Waker::from(Arc::clone(&flag));
    let mut f = std::pin::pin!(f);
    let deadline = std::time::Instant::now() + limit;
    loop {
        if flag.0.swap(false, Ordering::SeqCst) {
            if let Poll::Ready(r) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
                return Some(r);
            }
            continue;
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::park_timeout(deadline - now);
    }
}

/// Leaves behind, on this thread, a flush of `aio` that `rt` never runs: the
/// body of its `block_on` returns while a read waits for the turn's end,
/// polled once and dropped.
fn leave_a_flush(rt: &tokio::runtime::Runtime, aio: &Aio, f: &Arc<std::fs::File>) {
    rt.block_on(async {
        // (Other tasks alive: batching pays.)
        for _ in 0..2 {
            drop(tokio::spawn(std::future::pending::<()>()));
        }
        read_pattern_block(aio, f, 0).await;
        let mut fut = std::pin::pin!(aio.read_async(Arc::clone(f), 0, vec![0u8; 4096]));
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "the read waits for the turn's end");
    });
}

/// A read submitted outside any runtime, after a runtime's `block_on` left
/// a flush of the same context behind on this thread, enters at once: it does
/// not wait for that flush, which runs only when that runtime runs again.
#[test]
fn a_read_outside_a_runtime_does_not_join_a_flush_left_behind() {
    if common::uring::uring_refused() {
        return; // (The thread engine does not batch: no turn's end.)
    }
    let aio = uring(1);
    let f = Arc::new(disk_temp_file(&pattern(16 * 4096)));
    let rt = current_rt();
    leave_a_flush(&rt, &aio, &f);
    let fut = aio.read_async(Arc::clone(&f), 4096, vec![0u8; 4096]);
    let c = poll_when_woken(fut, std::time::Duration::from_secs(10))
        .expect("the read completed (woken) within 10 s")
        .unwrap();
    assert_eq!(c.data(), &pattern_block(1)[..]);
    drop(rt);
}

/// The same in another runtime's `block_on` on this thread.
#[test]
fn a_read_in_another_runtime_does_not_join_a_flush_left_behind() {
    if common::uring::uring_refused() {
        return; // (The thread engine does not batch: no turn's end.)
    }
    let aio = uring(1);
    let f = Arc::new(disk_temp_file(&pattern(16 * 4096)));
    let (tx, rx) = std::sync::mpsc::channel();
    let (aio2, f2) = (aio.clone(), Arc::clone(&f));
    // (On a thread of its own: a hang is reported, not waited for.)
    std::thread::spawn(move || {
        let rt = current_rt();
        leave_a_flush(&rt, &aio2, &f2);
        let rt2 = current_rt();
        let c = rt2
            .block_on(aio2.read_async(Arc::clone(&f2), 4096, vec![0u8; 4096]))
            .unwrap();
        let _ = tx.send(c.data() == &pattern_block(1)[..]);
        drop(rt);
    });
    let right = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the read in the second runtime completed within 10 s");
    assert!(right, "the read's bytes");
}
