//! Request and list futures polled by a hand-written executor: lists of
//! empty entries, lists whose entries all fail or are cancelled while
//! awaited, and wakers replaced between polls (the latest one is woken).

use std::future::{Future, IntoFuture};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use posixrt::aio::{Backend, ListMode, Notify, Op};

#[allow(unused_macros, unused_imports)]
mod common;
use common::ctx;

/// Counts its wake-ups.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count::default());
    (Arc::clone(&c), Waker::from(c))
}

fn poll<F: Future + Unpin>(f: &mut F, w: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(w))
}

/// True once `c` was woken (false after 10 s).
fn woken(c: &Count) -> bool {
    let t0 = Instant::now();
    while c.0.load(Ordering::SeqCst) == 0 {
        if t0.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

fn list_of_empty_entries(b: Backend) {
    let aio = ctx(b);
    let list = aio
        .lio_listio::<Vec<u8>, _>(ListMode::NoWait, [None, None], Notify::None)
        .unwrap();
    let (_c, w) = counter();
    let mut fut = list.into_future();
    match poll(&mut fut, &w) {
        Poll::Ready(r) => {
            let all = r.unwrap();
            assert_eq!(all.len(), 2);
            assert!(all.iter().all(Option::is_none));
        }
        Poll::Pending => panic!("a list of empty entries is done at once"),
    }
    assert!(poll(&mut fut, &w).is_ready());
}
common::both!(empty_list, list_of_empty_entries);

fn list_whose_entries_all_fail(b: Backend) {
    let aio = ctx(b);
    let (r, _w) = common::pipe();
    let r = std::fs::File::from(r);
    // Writes to a pipe's read end fail (EBADF).
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [
                Some(Op::write(&r, 0, vec![1u8; 4])),
                Some(Op::write(&r, 0, vec![2u8; 4])),
            ],
            Notify::None,
        )
        .unwrap();
    let (c, w) = counter();
    let mut fut = list.into_future();
    let all = loop {
        match poll(&mut fut, &w) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => assert!(woken(&c), "never woken"),
        }
    };
    assert_eq!(all.len(), 2);
    for e in all {
        assert!(e.unwrap().result.is_err());
    }
}
common::both!(failing_list, list_whose_entries_all_fail);

fn list_cancelled_by_fd_while_awaited(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = std::fs::File::from(r);
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [
                Some(Op::read(&r, 0, vec![0u8; 4])),
                None,
                Some(Op::read(&r, 0, vec![0u8; 4])),
            ],
            Notify::None,
        )
        .unwrap();
    let (c1, w1) = counter();
    let mut fut = list.into_future();
    assert!(poll(&mut fut, &w1).is_pending());
    // A second poll with another waker: that one is woken.
    let (c2, w2) = counter();
    assert!(poll(&mut fut, &w2).is_pending());
    aio.cancel_fd(r.as_raw_fd()).unwrap();
    assert!(woken(&c2), "the latest waker was not woken");
    let _ = c1;
    let all = loop {
        match poll(&mut fut, &w2) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    assert!(all[1].is_none());
    for i in [0, 2] {
        let e = all[i].as_ref().unwrap();
        assert_eq!(
            e.result.as_ref().unwrap_err().errno(),
            Some(libc::ECANCELED)
        );
    }
    drop(w);
}
common::both!(cancelled_list, list_cancelled_by_fd_while_awaited);

fn request_future_wakes_its_latest_waker(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = std::fs::File::from(r);
    let mut w = std::fs::File::from(w);
    let mut fut = aio.read(&r, 0, vec![0u8; 4]).unwrap().into_future();
    let w2 = wakes_latest_then_reads(&mut fut, &mut w, b"abcd");
    assert!(poll(&mut fut, &w2).is_ready());
}

/// Polls `fut` (a pending read of the pipe `w` writes to) with one waker, then
/// another; writes `data`: the latest waker is woken, and the read completes
/// with `data`. Returns that waker.
fn wakes_latest_then_reads<F>(fut: &mut F, w: &mut std::fs::File, data: &[u8]) -> Waker
where
    F: Future<Output = posixrt::Result<posixrt::aio::Completion<Vec<u8>>>> + Unpin,
{
    let (_c1, w1) = counter();
    assert!(poll(fut, &w1).is_pending());
    let (c2, w2) = counter();
    assert!(poll(fut, &w2).is_pending());
    w.write_all(data).unwrap();
    assert!(woken(&c2), "the latest waker was not woken");
    let done = loop {
        match poll(fut, &w2) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    assert_eq!(done.data(), data);
    w2
}
common::both!(latest_waker, request_future_wakes_its_latest_waker);

fn submit_future_wakes_its_latest_waker(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = Arc::new(std::fs::File::from(r));
    let mut w = std::fs::File::from(w);
    let mut fut = aio.read_async(Arc::clone(&r), 0, vec![0u8; 4]);
    let w2 = wakes_latest_then_reads(&mut fut, &mut w, b"wxyz");
    match poll(&mut fut, &w2) {
        Poll::Ready(Err(e)) => assert_eq!(e.kind(), posixrt::ErrorKind::AlreadyTaken),
        _ => panic!("a future polled after its result answers AlreadyTaken"),
    }
}
common::both!(latest_waker_submit, submit_future_wakes_its_latest_waker);

fn cancelled_request_awaited(b: Backend) {
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = std::fs::File::from(r);
    let req = aio.read(&r, 0, vec![0u8; 4]).unwrap();
    req.cancel().unwrap();
    let (c, wk) = counter();
    let mut fut = req.into_future();
    let done = loop {
        match poll(&mut fut, &wk) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => assert!(woken(&c)),
        }
    };
    assert_eq!(done.result.unwrap_err().errno(), Some(libc::ECANCELED));
    drop(w);
}
common::both!(cancelled_request, cancelled_request_awaited);

fn returned_request_awaited(b: Backend) {
    let aio = ctx(b);
    let f = common::temp_file(b"data");
    let mut req = aio.read(&f, 0, vec![0u8; 4]).unwrap();
    let c = req.wait().unwrap();
    assert_eq!(c.data(), b"data");
    let (_c, wk) = counter();
    let mut fut = req.into_future();
    match poll(&mut fut, &wk) {
        Poll::Ready(Err(e)) => assert_eq!(e.kind(), posixrt::ErrorKind::AlreadyTaken),
        _ => panic!("AlreadyTaken expected"),
    }
}
common::both!(returned_request, returned_request_awaited);

/// Polls `f` until ready, parking between polls (no runtime); `None` after 10 s.
#[cfg(feature = "tokio")]
fn park_on<F: Future + Unpin>(f: &mut F) -> Option<F::Output> {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark()
        }
    }
    let w = Waker::from(Arc::new(Unpark(std::thread::current())));
    let t0 = Instant::now();
    loop {
        if let Poll::Ready(r) = poll(f, &w) {
            return Some(r);
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::park_timeout(Duration::from_secs(10));
    }
}

#[cfg(feature = "tokio")]
async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

/// Which runtime first polls, and where the future is polled after it is dropped.
#[cfg(feature = "tokio")]
fn rt(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        common::multi_rt()
    } else {
        common::current_rt()
    }
}

#[cfg(feature = "tokio")]
fn futures_outlive_their_runtime(b: Backend) {
    let aio = ctx(b);
    let cases = [(false, 0), (true, 0), (false, 1), (true, 2), (false, 2)];
    for ((first, then), idle) in cases.into_iter().flat_map(|c| [(c, false), (c, true)]) {
        let (r, w) = common::pipe();
        let r = Arc::new(std::fs::File::from(r));
        let mut w = std::fs::File::from(w);
        let mut req = aio.read(&*r, 0, vec![0u8; 2]).unwrap().into_future();
        let list = aio
            .lio_listio(
                ListMode::NoWait,
                [Some(Op::read(&*r, 0, vec![0u8; 2]))],
                Notify::None,
            )
            .unwrap();
        let mut list = list.into_future();
        let mut sub = aio.read_async(Arc::clone(&r), 0, vec![0u8; 2]);
        let a = rt(first);
        a.block_on(async {
            if idle {
                // Other tasks: the submission waits for the end of the turn.
                for _ in 0..2 {
                    drop(tokio::spawn(std::future::pending::<()>()));
                }
            }
            assert!(poll_once(&mut req).await.is_pending());
            assert!(poll_once(&mut list).await.is_pending());
            assert!(poll_once(&mut sub).await.is_pending());
        });
        drop(a);
        // Written once the futures wait again (or before: either way they complete).
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            w.write_all(b"abcdef").unwrap();
            w
        });
        let what = format!("first multi {first}, then {then}, idle {idle}");
        match then {
            0 => {
                assert!(park_on(&mut req).expect(&what).is_ok(), "{what}");
                assert!(park_on(&mut list).expect(&what).is_ok(), "{what}");
                assert!(park_on(&mut sub).expect(&what).is_ok(), "{what}");
            }
            k => {
                let b2 = rt(k == 2);
                b2.block_on(async {
                    let t = Duration::from_secs(10);
                    assert!(tokio::time::timeout(t, &mut req)
                        .await
                        .expect(&what)
                        .is_ok());
                    assert!(tokio::time::timeout(t, &mut list)
                        .await
                        .expect(&what)
                        .is_ok());
                    assert!(tokio::time::timeout(t, &mut sub)
                        .await
                        .expect(&what)
                        .is_ok());
                });
            }
        }
        drop(writer.join().unwrap());
    }
}
#[cfg(feature = "tokio")]
common::both!(outlive_runtime, futures_outlive_their_runtime);
