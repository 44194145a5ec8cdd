//! Futures for a request and for a list: executor-agnostic (they wake through the
//! task's `Waker`), and a poll reaps completions itself where it can.
//!
//! [`SubmitFuture`] submits when first polled. Under tokio, with other tasks in
//! the runtime, its request goes into the io_uring submission queue without a
//! system call, and the queue is entered once at the end of the runtime's turn
//! (after every ready task ran): 32 tasks that each read make one
//! `io_uring_enter`, as a program that submits 32 at once does. The future keeps
//! the fd borrowed until then (dropping it early enters the ring at once), so the
//! kernel never sees a descriptor number the program may have closed.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::buf::{IoBuf, IoBufMut};
use super::context::Aio;
use super::engine::Engine;
use super::list::{entry_done, List};
use super::op::{BorrowFd, Kind, Op};
use super::request::{Completion, Request};
use super::table::{OpKind, State};
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

/// Resolves to the [`Completion`] of one operation, which it submits when first
/// polled. Made by [`Aio::submit_async`], [`Aio::read_async`] and
/// [`Aio::write_async`].
///
/// Under the `tokio` feature, inside a runtime with other tasks, submissions of
/// one runtime turn enter the kernel together (see the [module docs](self)). The
/// future borrows the fd until it is dropped; the request reaches the kernel
/// before that, so closing the fd afterwards cannot redirect the I/O.
#[must_use = "a SubmitFuture does nothing until polled"]
pub struct SubmitFuture<'a, 'fd, B: Send + 'static> {
    aio: &'a Aio,
    op: Option<Op<'fd, B>>,
    req: Option<RequestFuture<B>>,
}

impl<B: Send + 'static> Unpin for SubmitFuture<'_, '_, B> {}

impl<B: Send + 'static> Future for SubmitFuture<'_, '_, B> {
    type Output = Result<Completion<B>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(op) = this.op.take() {
            let (req, deferred) = match submit(this.aio, op) {
                Ok(r) => r,
                Err(e) => return Poll::Ready(Err(e)),
            };
            let fut = this.req.insert(req.into_future());
            // Not in the kernel yet: the flush at the turn's end enters the ring,
            // reaps, and wakes this task (or arms the reactor for a request that
            // did not complete inline). Only the waker is needed now.
            if deferred {
                if let Some(r) = fut.req.as_ref() {
                    if !check_or_register(r, cx) {
                        return Poll::Pending;
                    }
                }
            }
        }
        match this.req.as_mut() {
            Some(f) => Pin::new(f).poll(cx),
            None => Poll::Ready(Err(crate::Error::new(
                crate::ErrorKind::AlreadyTaken,
                "aio_return",
                "the future already completed",
            ))),
        }
    }
}

/// `Aio::submit`, with the kernel entry left to the end of the runtime turn when
/// that pays (true then).
fn submit<B: Send + 'static>(aio: &Aio, mut op: Op<'_, B>) -> Result<(Request<B>, bool)> {
    let call = match op.kind {
        Kind::Io(OpKind::Read) => "aio_read",
        Kind::Io(OpKind::Write) => "aio_write",
        Kind::Io(_) => "aio_fsync",
        Kind::Nop => "aio_read",
    };
    let inner = &aio.inner;
    let threads = matches!(inner.engine, Engine::Threads(_));
    let p = op.prepare(call, threads)?;
    let notify = std::mem::take(&mut op.notify);
    inner.prepare_notify(&notify)?;
    #[cfg(feature = "tokio")]
    let ((idx, gen), deferred) =
        if !threads && (batch::pending(inner) || super::tokio_reap::batching_pays()) {
            let r = inner.submit_one_deferred(p, notify)?;
            if r.1 {
                batch::schedule_flush(inner);
            }
            r
        } else {
            (inner.submit_one(p, notify)?, false)
        };
    #[cfg(not(feature = "tokio"))]
    let ((idx, gen), deferred) = (inner.submit_one(p, notify)?, false);
    Ok((
        Request::new(Arc::clone(inner), idx, gen, op.buf.take()),
        deferred,
    ))
}

impl Aio {
    /// Submits `op` when first polled and resolves to its [`Completion`]: the
    /// `.await` form of [`Aio::submit`]. Under tokio, the submissions of one
    /// runtime turn enter the kernel with one system call (see
    /// [`SubmitFuture`]).
    ///
    /// # Errors
    /// Those of [`Aio::submit`], when polled.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[doc(alias = "aio_read")]
    #[doc(alias = "aio_write")]
    #[doc(alias = "aio_fsync")]
    pub fn submit_async<'a, 'fd, B: Send + 'static>(
        &'a self,
        op: Op<'fd, B>,
    ) -> SubmitFuture<'a, 'fd, B> {
        SubmitFuture {
            aio: self,
            op: Some(op),
            req: None,
        }
    }

    /// `aio_read` as a future: `aio.read_async(&file, offset, buf).await`.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    #[doc(alias = "aio_read")]
    pub fn read_async<'a, 'fd, B: IoBufMut>(
        &'a self,
        fd: impl BorrowFd<'fd>,
        offset: i64,
        buf: B,
    ) -> SubmitFuture<'a, 'fd, B> {
        self.submit_async(Op::read(fd, offset, buf))
    }

    /// `aio_write` as a future: `aio.write_async(&file, offset, buf).await`.
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[doc(alias = "aio_write")]
    pub fn write_async<'a, 'fd, B: IoBuf>(
        &'a self,
        fd: impl BorrowFd<'fd>,
        offset: i64,
        buf: B,
    ) -> SubmitFuture<'a, 'fd, B> {
        self.submit_async(Op::write(fd, offset, buf))
    }
}

/// The flush at the end of a tokio runtime turn.
#[cfg(feature = "tokio")]
mod batch {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use super::super::engine::{Engine, Inner};
    use super::super::table::State;
    use super::super::tokio_reap;

    /// Tokens of scheduled flushes (0 means none).
    static TOKENS: AtomicU64 = AtomicU64::new(1);

    thread_local! {
        /// The context and token of the last flush this thread scheduled.
        static MINE: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
    }

    /// Enters the ring of `inner` once, at the end of the turn (when woken), or
    /// when the runtime drops it unwoken (shutting down).
    struct Flush {
        inner: Arc<Inner>,
        token: u64,
        done: AtomicBool,
    }

    impl Flush {
        fn run(&self) {
            if !self.done.swap(true, Ordering::AcqRel) {
                // Cleared before entering: an entry queued after this point
                // schedules a flush of its own.
                let _ = self.inner.reactors.flush_token.compare_exchange(
                    self.token,
                    0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                flush_now(&self.inner);
            }
        }
    }

    impl Wake for Flush {
        fn wake(self: Arc<Self>) {
            self.run();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.run();
        }
    }

    impl Drop for Flush {
        fn drop(&mut self) {
            self.run();
        }
    }

    /// True if a flush this thread scheduled for `inner` has not run yet: an
    /// entry queued now is entered by it.
    #[inline]
    pub(super) fn pending(inner: &Arc<Inner>) -> bool {
        let (ctx, token) = MINE.get();
        ctx == Arc::as_ptr(inner) as usize
            && inner.reactors.flush_token.load(Ordering::Acquire) == token
    }

    /// Makes sure the submission queue of `inner` is entered at the end of this
    /// thread's runtime turn (one flush per turn and context).
    pub(super) fn schedule_flush(inner: &Arc<Inner>) {
        if pending(inner) {
            return;
        }
        let token = TOKENS.fetch_add(1, Ordering::Relaxed);
        inner.reactors.flush_token.store(token, Ordering::Release);
        MINE.set((Arc::as_ptr(inner) as usize, token));
        let f = Arc::new(Flush {
            inner: Arc::clone(inner),
            token,
            done: AtomicBool::new(false),
        });
        tokio_reap::at_turn_end(&Waker::from(f));
    }
    /// Enters the ring, reaps what completed inline (waking those tasks), and
    /// arms the wake-up source for what did not.
    fn flush_now(inner: &Arc<Inner>) {
        let Engine::Uring(r) = &inner.engine else {
            return;
        };
        let core = inner.lock();
        if r.sq_pending() {
            inner.unlock_and_enter(core, true);
        } else {
            inner.release(core);
        }
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let busy = core.inflight > 0;
        inner.release(core);
        if !busy {
            return;
        }
        // Arm first, then look again: a completion that landed in between is
        // reaped here, a later one wakes the reactor.
        let armed = inner.arm_wakeup().is_ok();
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        if !armed {
            // Nothing would wake the waiting tasks: wake them now, so that their
            // poll reports the error.
            let core = &mut *core;
            for s in core.slots.iter_mut() {
                if s.state == State::Issued {
                    if let Some(w) = s.waker.take() {
                        core.wakers.push(w);
                    }
                }
            }
        }
        inner.release(core);
    }
}
