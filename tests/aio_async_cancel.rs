//! `aio_cancel(fd, NULL)` of requests that futures wait for under tokio: the
//! outcome it reports, and what the futures then resolve to.
#![cfg(feature = "tokio")]

use std::fs::File;
use std::future::Future;
use std::future::IntoFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use posixrt::aio::{Backend, CancelResult};

mod common;
use common::ctx;
use common::current_rt;

async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

/// `aio_cancel(fd, NULL)` of a read that a pending future waits for (a pipe
/// with no data) reports it cancelled, and the future ends with ECANCELED.
fn cancel_fd_of_a_pending_future_reports_it_cancelled(b: Backend) {
    use std::os::fd::AsRawFd;
    let aio = ctx(b);
    let (r, w) = common::pipe();
    let r = Arc::new(File::from(r));
    for multi in [false, true] {
        let rt = common::runtime(multi);
        let (outcome, res) = rt.block_on(async {
            let mut fut = aio.read(&*r, 0, vec![0u8; 16]).unwrap().into_future();
            assert!(poll_once(&mut fut).await.is_pending());
            let outcome = aio.cancel_fd(r.as_raw_fd()).unwrap();
            let res = tokio::time::timeout(std::time::Duration::from_secs(10), fut).await;
            (outcome, res)
        });
        assert_eq!(outcome, CancelResult::Canceled, "multi_thread: {multi}");
        let c = res.expect("the read ended").unwrap();
        assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    }
    drop(w);
}
common::both!(
    cancel_fd_of_a_pending_future,
    cancel_fd_of_a_pending_future_reports_it_cancelled
);

/// Two tasks that never finish: the runtime has other tasks, so a
/// submission waits for the end of the turn.
fn idle_tasks() -> Vec<tokio::task::JoinHandle<()>> {
    (0..2)
        .map(|_| tokio::spawn(std::future::pending::<()>()))
        .collect()
}

/// A pipe whose buffer is full: (read end, write end, bytes in it).
fn full_pipe() -> (File, Arc<File>, usize) {
    use std::io::Write;
    let (r, w) = common::pipe();
    let mut w = File::from(w);
    rustix::io::ioctl_fionbio(&w, true).unwrap();
    let mut n = 0;
    while let Ok(k) = w.write(&[1u8; 4096]) {
        n += k;
    }
    rustix::io::ioctl_fionbio(&w, false).unwrap();
    (File::from(r), Arc::new(w), n)
}

/// `aio_cancel(fd, NULL)` of a write (to a full pipe) that waits in the
/// submission queue for the end of the turn cancels it, at once: the write
/// does not reach the pipe, and its future ends with ECANCELED.
#[test]
fn uring_cancel_fd_of_a_deferred_write_cancels_it() {
    if common::uring::uring_refused() {
        return;
    }
    use std::os::fd::AsRawFd;
    let aio = ctx(Backend::Uring);
    let (mut r, w, n) = full_pipe();
    let rt = current_rt();
    let (outcome, res) = rt.block_on(async {
        let _idle = idle_tasks();
        let mut fut = aio.write_async(Arc::clone(&w), 0, vec![2u8; 64]);
        assert!(poll_once(&mut fut).await.is_pending());
        let outcome = aio.cancel_fd(w.as_raw_fd()).unwrap();
        let res = tokio::time::timeout(std::time::Duration::from_secs(10), fut).await;
        (outcome, res)
    });
    assert_eq!(outcome, CancelResult::Canceled);
    let c = res.expect("the write ended").unwrap();
    assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    // Nothing of the write reached the pipe.
    use std::io::Read;
    drop(w);
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), n);
    assert!(got.iter().all(|&b| b == 1));
}
