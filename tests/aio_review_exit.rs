//! A thread that enters the ring for requests another thread submitted, and
//! exits: the kernel ties requests to the thread that entered them, and ends
//! what that thread leaves unfinished as it exits. Those requests belong to
//! the process (and to futures still waiting for them): they must complete as
//! submitted, not with ECANCELED.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;

/// Bytes per read: below the size that gets an fd copy of its own (256 KiB).
const LEN: usize = 64 << 10;
const READS: usize = 64;

fn byte(i: usize) -> u8 {
    (i * 13 % 251) as u8
}

/// A memfd (its reads go through the kernel's workers) of `READS` blocks.
fn data() -> Arc<std::fs::File> {
    let f = std::fs::File::from(
        rustix::fs::memfd_create("exit", rustix::fs::MemfdFlags::CLOEXEC).unwrap(),
    );
    let all: Vec<u8> = (0..READS).flat_map(|i| vec![byte(i); LEN]).collect();
    rustix::io::pwrite(&f, &all, 0).unwrap();
    Arc::new(f)
}

async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

/// Futures whose reads wait for the end of a `current_thread` runtime's turn
/// are polled again by a short-lived thread (which enters the ring for them:
/// a future polled again before its turn's end enters it then) that exits
/// at once; the one kernel worker allowed is still busy with the first reads.
/// Every read completes with its bytes.
#[test]
fn uring_reads_entered_by_a_thread_that_exits_complete() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = Aio::builder()
        .backend(Backend::Uring)
        .rings(1)
        .max_workers(1, 1)
        .build()
        .unwrap();
    let f = data();
    let rt = common::current_rt();
    for round in 0..5 {
        rt.block_on(async {
            let idle: Vec<_> = (0..2)
                .map(|_| tokio::spawn(std::future::pending::<()>()))
                .collect();
            tokio::task::yield_now().await;
            let mut futs: Vec<_> = (0..READS)
                .map(|i| aio.read_async(Arc::clone(&f), (i * LEN) as i64, vec![0u8; LEN]))
                .collect();
            // (A read may complete at its first poll, or at the thread's.)
            let mut early = Vec::new();
            for fut in futs.iter_mut() {
                early.push(match poll_once(fut).await {
                    Poll::Ready(r) => Some(r),
                    Poll::Pending => None,
                });
            }
            std::thread::scope(|s| {
                s.spawn(|| {
                    // This thread's kernel workers: one (the limit goes with
                    // the thread's io-wq, which every ring it enters shares).
                    let one = Aio::builder()
                        .backend(Backend::Uring)
                        .max_workers(1, 1)
                        .build()
                        .unwrap();
                    let waker = noop_waker();
                    let mut cx = Context::from_waker(&waker);
                    for (fut, e) in futs.iter_mut().zip(early.iter_mut()) {
                        if e.is_none() {
                            if let Poll::Ready(r) = Pin::new(fut).poll(&mut cx) {
                                *e = Some(r);
                            }
                        }
                    }
                    // (It exits at once: that context's drop would wait.)
                    std::mem::forget(one);
                });
            });
            let mut failed = Vec::new();
            for (i, (fut, early)) in futs.into_iter().zip(early).enumerate() {
                let c = match early {
                    Some(r) => r,
                    None => tokio::time::timeout(Duration::from_secs(10), fut)
                        .await
                        .expect("the read completes"),
                }
                .unwrap();
                match &c.result {
                    Ok(n) => {
                        assert_eq!(*n, LEN);
                        assert!(c.data().iter().all(|&x| x == byte(i)), "read {i}'s bytes");
                    }
                    Err(e) => failed.push((i, e.to_string())),
                }
            }
            assert!(
                failed.is_empty(),
                "round {round}: reads ended by the thread's exit: {failed:?}"
            );
            idle.into_iter().for_each(|t| t.abort());
        });
    }
}

/// A waker that does nothing (`Waker::noop` is newer than the crate's MSRV).
fn noop_waker() -> Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    Waker::from(Arc::new(Noop))
}
