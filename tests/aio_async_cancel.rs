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
        let rt = if multi {
            common::multi_rt()
        } else {
            current_rt()
        };
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
