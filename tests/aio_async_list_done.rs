//! A list future whose requests are all done when it is first polled, by an
//! executor outside tokio, resolves without a wake-up source: no completion
//! thread starts for it, as none does for a request future done already.
//! (A file of its own: it counts the process's threads.)

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use posixrt::aio::{Backend, ListMode, Notify, Op};

#[allow(unused_macros, unused_imports)]
mod common;

const COMPLETION_THREAD: &str = "posixrt-aio-com";

/// A waker that does nothing (no wake-up is expected).
struct Nothing;

impl Wake for Nothing {
    fn wake(self: Arc<Self>) {}
}

fn done_list_awaited_outside_tokio(b: Backend) {
    let aio = common::ctx(b);
    let f = common::temp_file(b"abcdefgh");
    let lists = [
        aio.lio_listio::<Vec<u8>, _>(ListMode::NoWait, [None, None], Notify::None)
            .unwrap(),
        aio.lio_listio(
            ListMode::Wait,
            [
                Some(Op::read(&f, 0, vec![0u8; 4])),
                None,
                Some(Op::read(&f, 4, vec![0u8; 4])),
            ],
            Notify::None,
        )
        .unwrap(),
    ];
    let waker = Waker::from(Arc::new(Nothing));
    for list in lists {
        let n = list.len();
        let mut fut = list.into_future();
        match Pin::new(&mut fut).poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(r) => assert_eq!(r.unwrap().len(), n),
            Poll::Pending => panic!("a list done already is ready at its first poll"),
        }
    }
    assert_eq!(
        common::threads_named(COMPLETION_THREAD),
        0,
        "a list done already needs no completion thread"
    );
}
common::both!(done_list, done_list_awaited_outside_tokio);
