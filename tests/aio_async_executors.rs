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
use common::current_rt;

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark()
    }
}

/// How an executor waits between polls.
#[derive(Clone, Copy, PartialEq)]
enum Park {
    /// Until woken (a watchdog ends the wait after the limit).
    UntilWoken,
    /// Until woken, or 100 ms: it polls again without a wake-up.
    Polling,
}

/// A minimal executor: polls `fut` until it is ready, parking the thread in
/// between; `None` after `limit`.
fn park_on<F: Future>(mut fut: Pin<&mut F>, park: Park, limit: Duration) -> Option<F::Output> {
    let me = std::thread::current();
    let waker = Waker::from(Arc::new(Unpark(me.clone())));
    let over = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (over, me) = (Arc::clone(&over), me.clone());
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            over.store(true, std::sync::atomic::Ordering::SeqCst);
            me.unpark();
        })
    };
    let t0 = Instant::now();
    let r = loop {
        if let Poll::Ready(r) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            break Some(r);
        }
        match park {
            Park::UntilWoken => std::thread::park(),
            Park::Polling => std::thread::park_timeout(Duration::from_millis(100)),
        }
        // (Not polled once more: the watchdog's unpark is not a wake-up.)
        if over.load(std::sync::atomic::Ordering::SeqCst) || t0.elapsed() > limit {
            break None;
        }
    };
    // (The watchdog ends on its own; it only unparks this thread.)
    drop(watchdog);
    r
}

/// Reads 40 times (past the first run of submissions that enter at once, 15),
/// each polled by [`park_on`]; the index of a read that did not complete.
fn forty_reads(aio: &Aio, f: &Arc<std::fs::File>, park: Park) -> Result<(), usize> {
    reads(aio, f, park, 40)
}

/// As [`forty_reads`], `n` times.
fn reads(aio: &Aio, f: &Arc<std::fs::File>, park: Park, n: usize) -> Result<(), usize> {
    for i in 0..n {
        let fut = std::pin::pin!(aio.read_async(Arc::clone(f), 0, vec![0u8; 16]));
        match park_on(fut, park, Duration::from_secs(3)) {
            Some(r) => assert_eq!(r.unwrap().data(), &[5u8; 16][..]),
            None => return Err(i),
        }
    }
    Ok(())
}

/// An io_uring context.
fn uring_ctx() -> Aio {
    Aio::builder().backend(Backend::Uring).build().unwrap()
}

fn ctx_and_file() -> (Aio, Arc<std::fs::File>) {
    let aio = uring_ctx();
    (aio, Arc::new(common::temp_file(&[5u8; 4096])))
}

/// Another executor, which polls only when woken, on a thread where a
/// `current_thread` runtime is entered but not driven: the reads enter the
/// ring at once.
#[test]
fn another_executor_under_an_entered_runtime() {
    if common::uring::uring_refused() {
        return;
    }
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    let _entered = rt.enter();
    assert_eq!(forty_reads(&aio, &f, Park::UntilWoken), Ok(()));
}

/// The same on a thread that learned, in the runtime's `block_on`, that its
/// reads batch: under the entered runtime they still enter at once.
#[test]
fn another_executor_under_an_entered_runtime_after_batches() {
    if common::uring::uring_refused() {
        return;
    }
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    rt.block_on(async {
        for _ in 0..40 {
            let read = || aio.read_async(Arc::clone(&f), 0, vec![0u8; 16]);
            let (a, b, c, d) = tokio::join!(read(), read(), read(), read());
            for r in [a, b, c, d] {
                assert_eq!(r.unwrap().data(), &[5u8; 16][..]);
            }
        }
    });
    let _entered = rt.enter();
    assert_eq!(forty_reads(&aio, &f, Park::UntilWoken), Ok(()));
}

/// Under an entered runtime, a read that completes later (a pipe written to
/// 300 ms after) wakes the executor: not through the runtime's reactor, which
/// nobody polls.
#[test]
fn another_executor_under_an_entered_runtime_woken_later() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring_ctx();
    let rt = current_rt();
    let _entered = rt.enter();
    let done = park_on_pipe_read(&aio, b"later", LATER, Duration::from_secs(5));
    assert_eq!(done.expect("never woken"), b"later");
}

/// Another executor inside a `current_thread` runtime's `block_on`, which it
/// blocks, polling again without a wake-up: a read left for the turn's end is
/// entered when polled again.
#[test]
fn another_executor_inside_block_on() {
    if common::uring::uring_refused() {
        return;
    }
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    assert_eq!(
        rt.block_on(async { forty_reads(&aio, &f, Park::Polling) }),
        Ok(())
    );
}

/// Another executor inside a tokio task (polling again without a wake-up, as
/// in `another_executor_inside_block_on`), and inside a `multi_thread`
/// runtime's `block_on` (polling only when woken), past the task's budget
/// (128 units, a unit per 4 requests done): the reads go on. Nothing
/// refreshes the task's budget while the executor blocks it, so a future that
/// found it spent must wake its executor and go on at its next poll.
#[test]
fn another_executor_inside_a_task_past_the_budget() {
    if common::uring::uring_refused() {
        return;
    }
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    let r = rt.block_on(async {
        let (aio, f) = (aio.clone(), Arc::clone(&f));
        // (Polling: a read left for the turn's end, which cannot come while
        // the executor blocks the task, is entered when polled again.)
        tokio::spawn(async move { reads(&aio, &f, Park::Polling, 1200) })
            .await
            .unwrap()
    });
    assert_eq!(r, Ok(()));
    let rt = common::multi_rt();
    assert_eq!(
        rt.block_on(async { reads(&aio, &f, Park::UntilWoken, 1200) }),
        Ok(())
    );
}

/// A `spawn_blocking` thread of a driven `current_thread` runtime: its reads
/// do not wait for the runtime's turns (which run on another thread).
#[test]
fn another_executor_on_a_blocking_thread() {
    if common::uring::uring_refused() {
        return;
    }
    let (aio, f) = ctx_and_file();
    let rt = current_rt();
    let r = rt.block_on(async move {
        tokio::task::spawn_blocking(move || forty_reads(&aio, &f, Park::UntilWoken))
            .await
            .unwrap()
    });
    assert_eq!(r, Ok(()));
}

/// Under an entered `multi_thread` runtime, and on one of its `spawn_blocking`
/// threads, a read that completes later (a pipe written to 300 ms after) wakes
/// the executor: that runtime's workers drive its reactor, which wakes it.
#[test]
fn another_executor_under_a_multi_thread_runtime_woken_later() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring_ctx();
    let rt = common::multi_rt();
    let read_later =
        move |aio: Aio| park_on_pipe_read(&aio, b"later", LATER, Duration::from_secs(5));
    {
        let _entered = rt.enter();
        assert_eq!(read_later(aio.clone()).as_deref(), Some(&b"later"[..]));
    }
    let on_blocking = rt.block_on(async move {
        tokio::task::spawn_blocking(move || read_later(aio))
            .await
            .unwrap()
    });
    assert_eq!(on_blocking.as_deref(), Some(&b"later"[..]));
}

/// A `multi_thread` runtime shut down while another executor, on one of its
/// `spawn_blocking` threads, waits for a read its reactor was to report: the
/// completion thread takes over, the read completes (a pipe written 300 ms
/// later), and the runtime's drop, which waits for that thread, returns.
#[test]
fn multi_thread_runtime_shut_down_under_a_waiting_executor() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring_ctx();
    let rt = common::multi_rt();
    let (r, w) = rustix::pipe::pipe().unwrap();
    let r = Arc::new(std::fs::File::from(r));
    let (polled_tx, polled_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    drop(rt.spawn_blocking(move || {
        let mut fut = std::pin::pin!(aio.read_async(r, 0, vec![0u8; 5]));
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        polled_tx.send(()).unwrap();
        let done = park_on(fut, Park::UntilWoken, Duration::from_secs(5));
        done_tx
            .send(done.map(|c| c.unwrap().data().to_vec()))
            .unwrap();
    }));
    polled_rx.recv().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        rustix::io::write(&w, b"later").unwrap();
    });
    drop(rt);
    writer.join().unwrap();
    let done = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(done.as_deref(), Some(&b"later"[..]));
}

/// A `current_thread` runtime armed from this thread inside its `block_on`
/// (a read that waited there), then only entered while another executor polls
/// a read that completes later (a pipe written to 100 ms after): its reactor,
/// armed but not driven, must not be trusted to wake that executor.
#[test]
fn another_executor_under_a_runtime_armed_earlier_in_its_block_on() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring_ctx();
    let rt = current_rt();
    let (fut, writer) = read_later(&aio, b"x");
    assert_eq!(rt.block_on(fut).unwrap().data(), b"x");
    writer.join().unwrap();
    let _entered = rt.enter();
    let done = park_on_pipe_read(&aio, b"later", SOON, Duration::from_secs(3));
    assert_eq!(done.expect("never woken"), b"later");
}

/// A runtime built without its I/O driver has no reactor to register with: a
/// read awaited in a `multi_thread` runtime's `block_on` body, or polled by
/// another executor under the entered runtime, and one awaited in a task or
/// the `block_on` body of a `current_thread` runtime, complete (a pipe written
/// to 100 ms after), woken by the completion thread, where tokio would panic.
#[test]
fn a_runtime_without_its_io_driver() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring_ctx();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (fut, writer) = read_later(&aio, b"current");
    assert_eq!(rt.block_on(fut).unwrap().data(), b"current");
    writer.join().unwrap();
    let task = {
        let aio = aio.clone();
        rt.spawn(async move {
            let (fut, writer) = read_later(&aio, b"task");
            let c = fut.await.unwrap();
            writer.join().unwrap();
            c.data().to_vec()
        })
    };
    assert_eq!(rt.block_on(task).unwrap(), b"task");
    drop(rt);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    let (fut, writer) = read_later(&aio, b"body");
    let c = rt.block_on(fut).unwrap();
    writer.join().unwrap();
    assert_eq!(c.data(), b"body");
    let _entered = rt.enter();
    let done = park_on_pipe_read(&aio, b"entered", SOON, Duration::from_secs(3));
    assert_eq!(done.expect("never woken"), b"entered");
}

/// How long after its read a pipe is written to: [`read_later`]'s delay.
const SOON: Duration = Duration::from_millis(100);
/// A longer delay, for reads that must wait in the kernel first.
const LATER: Duration = Duration::from_millis(300);

/// A read of a pipe that `msg` is written to [`SOON`], and the writer.
fn read_later<'a>(
    aio: &'a Aio,
    msg: &'static [u8],
) -> (
    posixrt::aio::SubmitFuture<'a, Arc<std::fs::File>, Vec<u8>>,
    std::thread::JoinHandle<()>,
) {
    read_after(aio, msg, SOON)
}

/// A read of a pipe that `msg` is written to `delay` later, and the writer.
fn read_after<'a>(
    aio: &'a Aio,
    msg: &'static [u8],
    delay: Duration,
) -> (
    posixrt::aio::SubmitFuture<'a, Arc<std::fs::File>, Vec<u8>>,
    std::thread::JoinHandle<()>,
) {
    let (r, w) = rustix::pipe::pipe().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(delay);
        rustix::io::write(&w, msg).unwrap();
    });
    let r = Arc::new(std::fs::File::from(r));
    (aio.read_async(r, 0, vec![0u8; msg.len()]), writer)
}

/// [`read_after`] polled by [`park_on`] (until woken, for at most `limit`):
/// the bytes read, `None` if never woken.
fn park_on_pipe_read(
    aio: &Aio,
    msg: &'static [u8],
    delay: Duration,
    limit: Duration,
) -> Option<Vec<u8>> {
    let (fut, writer) = read_after(aio, msg, delay);
    let done = park_on(std::pin::pin!(fut), Park::UntilWoken, limit);
    writer.join().unwrap();
    done.map(|c| c.unwrap().data().to_vec())
}

/// Polls `fut` with runtime `h` entered, as a compat wrapper does.
struct Entered<F> {
    h: tokio::runtime::Handle,
    fut: F,
}

impl<F: Future + Unpin> Future for Entered<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _g = this.h.enter();
        Pin::new(&mut this.fut).poll(cx)
    }
}

/// A `multi_thread` runtime entered while a `current_thread` runtime's
/// `block_on` polls (a compat wrapper): a write that waits is flushed at the
/// end of the `current_thread` runtime's turn, inside its deferred wake-ups,
/// which must not be asked whether a turn ends there (tokio would panic:
/// "already borrowed"). The write completes (a full pipe drained 100 ms later).
#[test]
fn a_multi_thread_runtime_entered_inside_a_current_thread_block_on() {
    if common::uring::uring_refused() {
        return;
    }
    let (x, y) = (uring_ctx(), uring_ctx());
    let a = current_rt();
    let m = common::multi_rt();
    // Other tasks on the multi_thread runtime: batching pays under it.
    for _ in 0..2 {
        drop(m.spawn(std::future::pending::<()>()));
    }
    let f = Arc::new(common::temp_file(&[5u8; 4096]));
    let mh = m.handle().clone();
    let got = a.block_on(async {
        // The current_thread runtime armed for `x` from its block_on.
        let (fut, writer) = read_later(&x, b"x");
        assert_eq!(fut.await.unwrap().data(), b"x");
        writer.join().unwrap();
        // This thread's batching memory now names `y`.
        let c = y.read_async(Arc::clone(&f), 0, vec![0u8; 4]).await.unwrap();
        assert_eq!(c.data(), &[5u8; 4][..]);
        // A write of `x` that waits, polled with the multi_thread runtime entered.
        let (pr, pw) = rustix::pipe::pipe().unwrap();
        rustix::fs::fcntl_setfl(&pw, rustix::fs::OFlags::NONBLOCK).unwrap();
        while rustix::io::write(&pw, &[0u8; 4096]).is_ok() {}
        rustix::fs::fcntl_setfl(&pw, rustix::fs::OFlags::empty()).unwrap();
        let drain = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let mut b = vec![0u8; 1 << 20];
            let _ = rustix::io::read(&pr, &mut b);
            pr
        });
        let fut = x.write_async(Arc::new(std::fs::File::from(pw)), 0, b"later".to_vec());
        let fut = Entered { h: mh, fut };
        let got = tokio::select! {
            biased;
            _ = tokio::time::sleep(Duration::from_secs(3)) => None,
            r = fut => Some(r.unwrap().result.unwrap()),
        };
        drop(drain.join().unwrap());
        got
    });
    drop(m);
    assert_eq!(got, Some(5));
}
