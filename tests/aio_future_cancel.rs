//! `cancel()` of one request future (`aio_cancel(fd, aiocb)`): what it reports,
//! and what the future then resolves to (ECANCELED with the buffer back).
#![cfg(feature = "tokio")]

use std::fs::File;
use std::future::{Future, IntoFuture};
use std::io::{Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use posixrt::aio::{Backend, CancelResult};

mod common;
use common::{both, ctx, current_rt};

struct Nothing;
impl std::task::Wake for Nothing {
    fn wake(self: Arc<Self>) {}
}

/// Polls `f` (no runtime needed) until it resolves.
fn finish<F: Future + Unpin>(f: &mut F) -> F::Output {
    let waker = std::task::Waker::from(Arc::new(Nothing));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(r) = Pin::new(&mut *f).poll(&mut cx) {
            return r;
        }
        std::thread::yield_now();
    }
}

fn cancelled<B>(c: &posixrt::aio::Completion<B>) -> bool {
    matches!(&c.result, Err(e) if e.errno() == Some(libc::ECANCELED))
}

/// A request future waiting on an empty pipe: cancelled, it resolves to
/// ECANCELED with its buffer, and the bytes written afterwards are not
/// consumed by it. Once resolved, there is nothing left to cancel.
fn request_future_cancel(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let mut fut = aio.read(&r, 0, vec![7u8; 4]).unwrap().into_future();
    assert!(fut.id().is_some(), "a name while unresolved");
    assert_eq!(fut.cancel().unwrap(), CancelResult::Canceled);
    assert_eq!(
        fut.cancel().unwrap(),
        CancelResult::AllDone,
        "a second cancel"
    );
    let c = current_rt().block_on(&mut fut).unwrap();
    assert!(cancelled(&c), "{:?}", c.result);
    assert_eq!(
        c.buf.as_deref(),
        Some(&[7u8; 4][..]),
        "the buffer, untouched"
    );
    assert_eq!(fut.id(), None);
    assert_eq!(fut.cancel().unwrap(), CancelResult::AllDone);
    File::from(w).write_all(b"data").unwrap();
    let mut got = [0u8; 4];
    File::from(r).read_exact(&mut got).unwrap();
    assert_eq!(&got, b"data");
}
both!(
    a_request_future_cancelled_resolves_to_ecanceled,
    request_future_cancel
);

/// A submit future cancelled before its first poll submits nothing: the poll
/// resolves to ECANCELED with the buffer, and the pipe's bytes stay there.
fn submit_future_cancel_before_poll(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    File::from(w).write_all(b"kept").unwrap();
    let r = Arc::new(File::from(r));
    let mut fut = aio.read_async(Arc::clone(&r), 0, vec![0u8; 4]);
    assert_eq!(fut.cancel().unwrap(), CancelResult::Canceled);
    let c = finish(&mut fut).unwrap();
    assert!(cancelled(&c), "{:?}", c.result);
    assert_eq!(c.buf.map(|b| b.len()), Some(4));
    // Resolved: nothing to cancel, and a later poll says so.
    assert_eq!(fut.cancel().unwrap(), CancelResult::AllDone);
    assert!(finish(&mut fut).is_err(), "already taken");
    drop(fut);
    let mut got = [0u8; 4];
    (&*r).read_exact(&mut got).unwrap();
    assert_eq!(&got, b"kept", "no read was submitted");
}
both!(
    a_submit_future_cancelled_before_its_poll_submits_nothing,
    submit_future_cancel_before_poll
);

/// A submit future whose read waits on an empty pipe, cancelled after a
/// timeout (inside the runtime and after it): ECANCELED, buffer back.
fn submit_future_cancel_in_flight(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = Arc::new(File::from(r));
    for inside in [true, false] {
        let rt = current_rt();
        let mut fut = aio.read_async(Arc::clone(&r), 0, vec![1u8; 4]);
        rt.block_on(async {
            let t = tokio::time::timeout(std::time::Duration::from_millis(20), &mut fut).await;
            assert!(t.is_err(), "nothing to read");
            if inside {
                assert_eq!(fut.cancel().unwrap(), CancelResult::Canceled);
            }
        });
        if !inside {
            assert_eq!(fut.cancel().unwrap(), CancelResult::Canceled);
        }
        let c = rt.block_on(&mut fut).unwrap();
        assert!(cancelled(&c), "inside {inside}: {:?}", c.result);
        assert_eq!(c.buf.as_deref(), Some(&[1u8; 4][..]));
    }
    File::from(w).write_all(b"late").unwrap();
    let mut got = [0u8; 4];
    (&*r).read_exact(&mut got).unwrap();
    assert_eq!(&got, b"late", "the cancelled reads took nothing");
}
both!(
    a_submit_future_in_flight_cancelled_gives_its_buffer_back,
    submit_future_cancel_in_flight
);

/// A read of a file that completed: cancel reports it done, and the future
/// still resolves to its data.
fn request_future_cancel_done(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"abcdef");
    let req = aio.read(&f, 1, vec![0u8; 3]).unwrap();
    let t0 = std::time::Instant::now();
    while !req.is_done() {
        assert!(t0.elapsed().as_secs() < 10, "the read completes");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut fut = req.into_future();
    assert_eq!(fut.cancel().unwrap(), CancelResult::AllDone);
    let c = finish(&mut fut).unwrap();
    assert_eq!(c.data(), b"bcd");
}
both!(a_done_request_is_not_cancelled, request_future_cancel_done);
