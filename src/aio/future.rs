//! Futures for a request and for a list: executor-agnostic (they wake through the
//! task's `Waker`), and a poll reaps completions itself where it can.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::list::{entry_done, List};
use super::request::{Completion, Request};
use super::table::State;
use crate::Result;

/// Resolves to the request's [`Completion`] (its `aio_return`).
///
/// Made by `.await`ing a [`Request`] (it implements [`IntoFuture`]).
pub struct RequestFuture<B: Send + 'static> {
    req: Option<Request<B>>,
}

impl<B: Send + 'static> Unpin for RequestFuture<B> {}

impl<B: Send + 'static> IntoFuture for Request<B> {
    type Output = Result<Completion<B>>;
    type IntoFuture = RequestFuture<B>;
    fn into_future(self) -> RequestFuture<B> {
        RequestFuture { req: Some(self) }
    }
}

/// Registers `cx`'s waker on `(idx, gen)` unless it is done; true if done.
fn check_or_register(req: &Request<impl Send + 'static>, cx: &mut Context<'_>) -> bool {
    let inner = &req.inner;
    let mut core = inner.lock();
    inner.poll_completions(&mut core);
    let done = match core.get(req.idx, req.gen) {
        Some(s) if s.state != State::Done => {
            let s = &mut core.slots[req.idx as usize];
            match &s.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => s.waker = Some(cx.waker().clone()),
            }
            false
        }
        _ => true,
    };
    inner.release(core);
    done
}

impl<B: Send + 'static> Future for RequestFuture<B> {
    type Output = Result<Completion<B>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(req) = self.req.as_mut() else {
            return Poll::Ready(Err(crate::Error::new(
                crate::ErrorKind::AlreadyTaken,
                "aio_return",
                "the future already completed",
            )));
        };
        // Reap first: a request that completed inline needs no wake-up source.
        // Otherwise the task's waker is in the slot; arm the wake-up source
        // (reactor or completion thread), then look once more, so a completion
        // that landed before the source was armed is not missed.
        let done = check_or_register(req, cx) || {
            if let Err(e) = req.inner.arm_wakeup() {
                return Poll::Ready(Err(e));
            }
            check_or_register(req, cx)
        };
        if done {
            let mut req = self.req.take().expect("checked above");
            Poll::Ready(req.aio_return())
        } else {
            Poll::Pending
        }
    }
}

/// Resolves to the [`Completion`] of every entry of a list (`None` for empty
/// entries), once all are done.
pub struct ListFuture<B: Send + 'static> {
    list: Option<List<B>>,
}

impl<B: Send + 'static> Unpin for ListFuture<B> {}

impl<B: Send + 'static> IntoFuture for List<B> {
    type Output = Result<Vec<Option<Completion<B>>>>;
    type IntoFuture = ListFuture<B>;
    fn into_future(self) -> ListFuture<B> {
        ListFuture { list: Some(self) }
    }
}

impl<B: Send + 'static> Future for ListFuture<B> {
    type Output = Result<Vec<Option<Completion<B>>>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(list) = self.list.as_mut() else {
            return Poll::Ready(Err(crate::Error::new(
                crate::ErrorKind::AlreadyTaken,
                "aio_return",
                "the future already completed",
            )));
        };
        let inner = std::sync::Arc::clone(&list.aio.inner);
        if let Err(e) = inner.arm_wakeup() {
            return Poll::Ready(Err(e));
        }
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let mut all = true;
        for e in list.entries.iter().flatten() {
            if !entry_done(&core, e) {
                all = false;
                let s = &mut core.slots[e.idx as usize];
                match &s.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => s.waker = Some(cx.waker().clone()),
                }
            }
        }
        inner.release(core);
        if !all {
            return Poll::Pending;
        }
        let mut list = self.list.take().expect("checked above");
        Poll::Ready(Ok(list.take_done()))
    }
}
