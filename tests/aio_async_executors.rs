//! `read_async` futures where a tokio runtime is present but does not drive
//! them: another executor polls them, with the runtime only entered, or inside
//! a `current_thread` runtime's `block_on` whose thread that executor blocks.
//! Their requests must not wait for a runtime turn that never comes.
//!
//! A file of its own (not `aio_async.rs`): a future polled outside tokio's
//! scheduler may start the completion thread, which that file counts.
#![cfg(feature = "tokio")]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark()
    }
}

/// A minimal executor: polls `fut` until it is ready, parking the thread in
/// between (a wake-up, or 100 ms at most); `None` after `limit`.
fn park_on<F: Future>(mut fut: Pin<&mut F>, limit: Duration) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let t0 = Instant::now();
    loop {
        if let Poll::Ready(r) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            return Some(r);
        }
        if t0.elapsed() > limit {
            return None;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// Reads 40 times (past the first run of submissions that enter at once, 15),
/// each polled by [`park_on`]; the index of a read that did not complete.
fn forty_reads(aio: &Aio, f: &Arc<std::fs::File>) -> Result<(), usize> {
    for i in 0..40 {
        let fut = std::pin::pin!(aio.read_async(Arc::clone(f), 0, vec![0u8; 16]));
        match park_on(fut, Duration::from_secs(3)) {
            Some(r) => assert_eq!(r.unwrap().data(), &[5u8; 16][..]),
            None => return Err(i),
        }
    }
    Ok(())
}

fn ctx_and_file() -> (Aio, Arc<std::fs::File>) {
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    (aio, Arc::new(common::temp_file(&[5u8; 4096])))
}

fn current_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Another executor on a thread where a `current_thread` runtime is entered
/// but not driven: the reads enter the ring at once.
#[test]
fn another_executor_under_an_entered_runtime() {
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    let _entered = rt.enter();
    assert_eq!(forty_reads(&aio, &f), Ok(()));
}

/// Another executor inside a `current_thread` runtime's `block_on`, which it
/// blocks: a read left for the turn's end is entered when polled again.
#[test]
fn another_executor_inside_block_on() {
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    assert_eq!(rt.block_on(async { forty_reads(&aio, &f) }), Ok(()));
}

/// A `spawn_blocking` thread of a driven `current_thread` runtime: its reads
/// do not wait for the runtime's turns (which run on another thread).
#[test]
fn another_executor_on_a_blocking_thread() {
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    let r = rt.block_on(async move {
        tokio::task::spawn_blocking(move || forty_reads(&aio, &f))
            .await
            .unwrap()
    });
    assert_eq!(r, Ok(()));
}
