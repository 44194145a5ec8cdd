//! Futures for a request and for a list: executor-agnostic (they wake through the
//! task's `Waker`), and a poll reaps completions itself where it can.
//!
//! [`SubmitFuture`] submits when first polled. Under tokio, with other tasks in
//! the runtime, its request goes into the io_uring submission queue without a
//! system call, and the queue is entered once at the end of the runtime's turn
//! (after every ready task ran): 32 tasks that each read make one
//! `io_uring_enter`, as a program that submits 32 at once does.
//!
//! One read costs one lock round trip (and its share of the turn's flush): its
//! submission, which also leaves the task's waker in the slot. The reap at the turn's end posts each result to
//! the request's mail box (freeing its slot) and wakes the task, whose poll then
//! takes the result without the lock.
//!
//! Each poll first takes a unit of tokio's task budget (see `coop.rs`): a
//! request that completed inline is ready at once, and a task awaiting such
//! requests in a loop must still yield to the runtime's other tasks.
//!
//! The kernel reads the descriptor number when the ring is entered, so a
//! submission that waits for the end of the turn must keep its descriptor open
//! until then, whatever the program does: the future owns a handle to it (an
//! `Arc<File>`, a `File`, an `OwnedFd`, ...), dropping the future enters the ring
//! before the handle goes, and a future leaked with `mem::forget` leaks its
//! handle too (the number is never reused). A borrowed descriptor could not give
//! that guarantee (a forgotten future would end the borrow with the request
//! still waiting), except a borrowed `RegisteredFd` of the same context: the
//! request names its file table slot, and the last guard enters the rings
//! before freeing it (see `submit_fd.rs`).

use std::future::{Future, IntoFuture};
use std::os::fd::BorrowedFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::buf::{IoBuf, IoBufMut};
use super::cancel::CancelResult;
use super::context::Aio;
use super::coop;
use super::engine::{Engine, Inner};
use super::list::{entry_done, List};
use super::notify::Notify;
use super::op::{check_io, Prepared};
use super::request::{new_mail, result_of, Completion, Request, RequestId, Ticket};
use super::submit::Entry;
use super::submit_fd::SubmitFd;
use super::table::OpKind;
use crate::Result;

/// Resolves to the request's [`Completion`] (its `aio_return`).
///
/// Made by `.await`ing a [`Request`] (it implements [`IntoFuture`]).
pub struct RequestFuture<B: Send + 'static> {
    req: Option<Request<B>>,
    /// Its last poll found the task's budget spent (see `coop::begin`).
    yielded: bool,
}

impl<B: Send + 'static> Unpin for RequestFuture<B> {}

impl<B: Send + 'static> IntoFuture for Request<B> {
    type Output = Result<Completion<B>>;
    type IntoFuture = RequestFuture<B>;
    fn into_future(self) -> RequestFuture<B> {
        RequestFuture {
            req: Some(self),
            yielded: false,
        }
    }
}

/// Polls a submitted request: its completion if done (read without the lock
/// when the completion posted it); otherwise the task's waker goes in its slot
/// and the wake-up source is armed. `spend` is the poll's claim on the task's
/// budget (see `coop::begin`).
#[inline(always)]
fn poll_request<B: Send + 'static>(
    t: &mut Ticket<B>,
    inner: &Arc<Inner>,
    cx: &mut Context<'_>,
    spend: coop::Spend,
) -> Poll<Result<Completion<B>>> {
    if let Some(res) = t.posted() {
        spend.ready();
        return Poll::Ready(Ok(t.finish(res)));
    }
    // Reap first: a request that completed inline needs no wake-up source.
    if let Some(r) = t.take_or_register(inner, cx.waker()) {
        spend.ready();
        return Poll::Ready(r);
    }
    // The task's waker is in the slot. A wake-up source armed before that
    // reports every later completion; one armed now needs a second look, so a
    // completion that landed before it was armed is not missed.
    if armed(inner) {
        return Poll::Pending;
    }
    if let Err(e) = inner.arm_wakeup() {
        spend.ready();
        return Poll::Ready(Err(e));
    }
    match t.take_or_register(inner, cx.waker()) {
        Some(r) => {
            spend.ready();
            Poll::Ready(r)
        }
        None => Poll::Pending,
    }
}

/// True if the current tokio runtime's reactor already watches `inner`'s
/// completions, armed from this thread (no lock, no system call).
#[inline]
fn armed(inner: &Arc<Inner>) -> bool {
    #[cfg(feature = "tokio")]
    return super::tokio_reap::armed(inner);
    #[cfg(not(feature = "tokio"))]
    {
        let _ = inner;
        false
    }
}

fn already_taken<T>() -> Poll<Result<T>> {
    Poll::Ready(Err(crate::Error::new(
        crate::ErrorKind::AlreadyTaken,
        "aio_return",
        "the future already completed",
    )))
}

impl<B: Send + 'static> RequestFuture<B> {
    /// `aio_cancel(fd, aiocb)` of the future's request, as
    /// [`Request::cancel`]: a request stopped ([`CancelResult::Canceled`])
    /// still resolves, to ECANCELED with its buffer; one already running goes
    /// on ([`CancelResult::NotCanceled`]). [`CancelResult::AllDone`] once
    /// the request finished, or the future resolved.
    ///
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::future::IntoFuture;
    /// use posixrt::aio::{Aio, CancelResult};
    ///
    /// let aio = Aio::new()?;
    /// let (r, _w) = rustix::pipe::pipe()?; // nothing is written: the read waits
    /// let fut = aio.read(&r, 0, vec![0u8; 8])?.into_future();
    /// assert_eq!(fut.cancel()?, CancelResult::Canceled);
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let c = rt.block_on(fut)?;
    /// assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    /// assert!(c.buf.is_some()); // the buffer comes back
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "tokio"))]
    /// # fn main() {}
    /// ```
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    #[doc(alias = "aio_cancel")]
    pub fn cancel(&self) -> Result<CancelResult> {
        match &self.req {
            Some(r) => r.cancel(),
            None => Ok(CancelResult::AllDone),
        }
    }

    /// The request's name, until the future resolves.
    pub fn id(&self) -> Option<RequestId> {
        self.req.as_ref().map(Request::id)
    }
}

impl<B: Send + 'static> Future for RequestFuture<B> {
    type Output = Result<Completion<B>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(req) = this.req.as_mut() else {
            return already_taken();
        };
        let Some(spend) = coop::begin(cx, &mut this.yielded) else {
            return Poll::Pending;
        };
        let r = poll_request(&mut req.t, &req.inner, cx, spend);
        if r.is_ready() {
            self.req = None;
        }
        r
    }
}

/// Resolves to the [`Completion`] of every entry of a list (`None` for empty
/// entries), once all are done.
pub struct ListFuture<B: Send + 'static> {
    list: Option<List<B>>,
    /// Its last poll found the task's budget spent (see `coop::begin`).
    yielded: bool,
}

impl<B: Send + 'static> Unpin for ListFuture<B> {}

impl<B: Send + 'static> IntoFuture for List<B> {
    type Output = Result<Vec<Option<Completion<B>>>>;
    type IntoFuture = ListFuture<B>;
    fn into_future(self) -> ListFuture<B> {
        ListFuture {
            list: Some(self),
            yielded: false,
        }
    }
}

impl<B: Send + 'static> Future for ListFuture<B> {
    type Output = Result<Vec<Option<Completion<B>>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(spend) = coop::begin(cx, &mut this.yielded) else {
            return Poll::Pending;
        };
        let r = this.poll_list(cx);
        if r.is_ready() {
            spend.ready();
        }
        r
    }
}

impl<B: Send + 'static> ListFuture<B> {
    fn poll_list(&mut self, cx: &mut Context<'_>) -> Poll<Result<Vec<Option<Completion<B>>>>> {
        let Some(list) = self.list.as_ref() else {
            return already_taken();
        };
        let inner = Arc::clone(&list.aio.inner);
        // Reap first, as a request's poll does: a list done already needs no
        // wake-up source (outside tokio, no completion thread).
        if !all_done_or_register(list, &inner, cx) {
            // The task's waker is in every unfinished slot. A wake-up source
            // armed before reports every later completion; one armed now
            // needs a second look.
            if armed(&inner) {
                return Poll::Pending;
            }
            if let Err(e) = inner.arm_wakeup() {
                return Poll::Ready(Err(e));
            }
            if !all_done_or_register(list, &inner, cx) {
                return Poll::Pending;
            }
        }
        let mut list = self.list.take().expect("checked above");
        Poll::Ready(Ok(list.take_done()))
    }
}

/// True if every request of `list` is done (reaping first); otherwise the
/// task's waker is left in the slot of each one still running.
fn all_done_or_register<B: Send + 'static>(
    list: &List<B>,
    inner: &Arc<Inner>,
    cx: &Context<'_>,
) -> bool {
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
    all
}

/// Resolves to the [`Completion`] of one read or write, which it submits when
/// first polled. Made by [`Aio::read_async`] and [`Aio::write_async`].
///
/// Under the `tokio` feature, inside a runtime with other tasks, a submission
/// goes into the io_uring submission queue without a system call, and the
/// queue is entered once at the end of the runtime's turn (once every ready task
/// ran): 32 tasks that each read make one `io_uring_enter`, like one
/// `lio_listio` of 32, and so do 32 futures in flight in one task (a join,
/// `FuturesUnordered`, `buffer_unordered`). A lone task with one read at a
/// time (or one whose waits for the turn's end gathered nothing) enters at
/// once, as a synchronous call does, but for one submission per run of up to
/// 1024 that waits to find out whether others join it. Elsewhere (any other
/// executor, also where a runtime is only entered or on a `spawn_blocking`
/// thread, and the thread engine) the request is submitted at the first poll,
/// as [`Aio::submit`] does. A future whose request did not complete at once
/// is woken by a `multi_thread` runtime's reactor wherever it is polled (also
/// in the body of `block_on`, as in `#[tokio::main]`), by a `current_thread`
/// runtime's only inside its `block_on` and tasks, and elsewhere by the
/// completion thread. A future polled again before the end of the turn it
/// waits for enters the ring then, and a `block_on` whose body returns before
/// its turn's end (a `select!`, a timeout) enters that turn's requests as it
/// returns. (Another executor that blocks a tokio
/// task's thread, or a `block_on`'s, polling only when woken, can wait
/// forever for a future deferred there: that turn does not come while it
/// blocks.)
///
/// Under tokio, request futures spend the task's budget (128 units per task
/// poll), as tokio's own I/O types do, a unit per 4 requests done: a task
/// whose reads complete at once (cached, inline) yields to the runtime's
/// other tasks after at most 515 of them, instead of keeping the thread for
/// its whole loop.
///
/// The kernel reads the descriptor number when the ring is entered, so the
/// future owns `F`, a handle to the descriptor, until it is dropped: dropping
/// it enters the ring before the handle goes, and a future leaked with
/// [`mem::forget`](std::mem::forget) leaks the handle too, so the number cannot
/// name another file in the meantime. `F` may also be a borrowed
/// [`&RegisteredFd`](super::RegisteredFd) of the same context, whose request
/// names the rings' file table slot (the last guard enters the rings before it
/// frees the slot): no reference count is taken and dropped per request, as an
/// `Arc` clone would. A guard of another context (or on the thread engine) is
/// submitted at the first poll, as [`Aio::submit`] does (see [`SubmitFd`]).
///
/// It works on any executor; here a minimal one that parks the thread between
/// polls:
///
/// ```
/// use std::future::Future;
/// use std::io::Write;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Wake, Waker};
/// use posixrt::aio::Aio;
///
/// struct Unpark(std::thread::Thread);
/// impl Wake for Unpark {
///     fn wake(self: Arc<Self>) {
///         self.0.unpark()
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let aio = Aio::new()?;
/// let mut f = std::fs::File::from(rustix::fs::memfd_create("demo", rustix::fs::MemfdFlags::empty())?);
/// f.write_all(b"hello")?;
/// let f = Arc::new(f);
/// let mut fut = aio.read_async(Arc::clone(&f), 0, vec![0u8; 5]);
/// let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
/// let done = loop {
///     match std::pin::Pin::new(&mut fut).poll(&mut Context::from_waker(&waker)) {
///         Poll::Ready(r) => break r?,
///         Poll::Pending => std::thread::park(),
///     }
/// };
/// assert_eq!(done.data(), b"hello");
/// # Ok(())
/// # }
/// ```
#[must_use = "a SubmitFuture does nothing until polled"]
pub struct SubmitFuture<'a, F: SubmitFd, B: Send + 'static> {
    // Given up in `drop` (an unfinished request is cancelled, which enters the
    // ring) while `fd` is still open. The borrow of the context keeps it alive
    // meanwhile: the request needs no handle of its own.
    req: Option<Ticket<B>>,
    aio: &'a Aio,
    /// The buffer, until a poll after the submission hands it to the request
    /// (or the drop does). It stays where the future was made until then: the
    /// submitting poll copies nothing of it.
    buf: Option<B>,
    offset: i64,
    /// The request was submitted (or refused).
    started: bool,
    /// The buffer's address and length, read when the future was made (a
    /// buffer's address does not change as it moves: see [`IoBuf`]).
    at: (usize, usize),
    /// The token of the flush that enters the request, while it waits for it
    /// (0: entered, or never deferred).
    flush: u64,
    /// Its last poll found the task's budget spent (see `coop::begin`).
    yielded: bool,
    /// Cancelled before its first poll: that poll resolves to ECANCELED
    /// without submitting.
    cancelled: bool,
    kind: OpKind,
    fd: F,
}

impl<F: SubmitFd, B: Send + 'static> Unpin for SubmitFuture<'_, F, B> {}

impl<F: SubmitFd, B: Send + 'static> Drop for SubmitFuture<'_, F, B> {
    fn drop(&mut self) {
        if let Some(t) = self.req.as_mut() {
            // The request keeps the buffer while the kernel may still use it.
            if let Some(b) = self.buf.take() {
                t.buf = Some(b);
            }
            t.forget(&self.aio.inner);
        }
    }
}

impl<F: SubmitFd, B: Send + 'static> Future for SubmitFuture<'_, F, B> {
    type Output = Result<Completion<B>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // (Read before `begin` clears it.)
        let after_yield = this.yielded;
        let Some(spend) = coop::begin(cx, &mut this.yielded) else {
            return Poll::Pending;
        };
        this.poll_submit(cx, spend, after_yield)
    }
}

impl<F: SubmitFd, B: Send + 'static> SubmitFuture<'_, F, B> {
    /// `aio_cancel(fd, aiocb)` of the future's request: a request stopped
    /// ([`CancelResult::Canceled`]) still resolves, to ECANCELED with its
    /// buffer; one already running goes on ([`CancelResult::NotCanceled`]);
    /// [`CancelResult::AllDone`] once it finished or the future resolved. A
    /// future not polled yet is cancelled before it submits anything: its
    /// first poll resolves to ECANCELED with the buffer. (Dropping the
    /// future cancels too, but the buffer then goes with it.) In a child
    /// forked after the request was submitted it is refused
    /// ([`InvalidState`](crate::ErrorKind::InvalidState)): the request is the
    /// parent's.
    ///
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use posixrt::aio::{Aio, CancelResult};
    ///
    /// let aio = Aio::new()?;
    /// let (r, _w) = rustix::pipe::pipe()?; // nothing is written: a read waits
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let c = rt.block_on(async {
    ///     let mut fut = aio.read_async(Arc::new(r), 0, vec![0u8; 8]);
    ///     // Not done within 10 ms: cancel it, and take the buffer back.
    ///     if tokio::time::timeout(std::time::Duration::from_millis(10), &mut fut).await.is_err() {
    ///         assert_eq!(fut.cancel().unwrap(), CancelResult::Canceled);
    ///     }
    ///     fut.await
    /// })?;
    /// assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    /// assert_eq!(c.buf.map(|b| b.len()), Some(8));
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "tokio"))]
    /// # fn main() {}
    /// ```
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    #[doc(alias = "aio_cancel")]
    pub fn cancel(&mut self) -> Result<CancelResult> {
        if !self.started {
            self.started = true;
            self.cancelled = true;
            return Ok(CancelResult::Canceled);
        }
        let Some(req) = self.req.as_ref() else {
            return Ok(CancelResult::AllDone);
        };
        if self.aio.inner.inherited() {
            // A forked child's copy: the request is the parent's (and so are
            // the rings a flush would enter), as `Request::cancel` says.
            return Err(super::cancel::inherited_cancel());
        }
        if self.flush != 0 {
            // Still waiting for its turn's end to enter the ring: entered
            // now, so that the kernel knows the request it is to cancel.
            #[cfg(feature = "tokio")]
            batch::flush_early(&self.aio.inner, std::mem::take(&mut self.flush));
        }
        Ok(req.cancel(&self.aio.inner))
    }

    /// (Inlined into `poll`, its one caller: called, it costs ~30 instructions
    /// per read in moves of its arguments and result, callgrind.)
    #[inline(always)]
    fn poll_submit(
        &mut self,
        cx: &mut Context<'_>,
        spend: coop::Spend,
        after_yield: bool,
    ) -> Poll<Result<Completion<B>>> {
        let this = self;
        if !this.started {
            this.started = true;
            let may_wait = this.fd.may_wait(this.aio);
            let io = (this.kind, this.offset, this.at);
            let fd = this.fd.submit_fd();
            let (req, flush) = match submit(this.aio, fd, io, may_wait, after_yield, cx) {
                Ok(r) => r,
                Err(e) => {
                    spend.ready();
                    return Poll::Ready(Err(e));
                }
            };
            this.req = Some(req);
            // Not in the kernel yet: the flush at the turn's end enters the ring,
            // reaps, and wakes this task through the waker the submission left
            // in the slot (or arms the reactor for a request that did not
            // complete inline), and the result is then read without the lock.
            // That flush may have run already (e.g. outside a runtime worker):
            // then (`flush` 0) the full path below arms the wake-up.
            if flush != 0 {
                this.flush = flush;
                return Poll::Pending;
            }
        } else if this.flush != 0 {
            // Polled again before the turn's end: enter now.
            #[cfg(feature = "tokio")]
            batch::flush_early(&this.aio.inner, std::mem::take(&mut this.flush));
        }
        let Some(req) = this.req.as_mut() else {
            spend.ready();
            if std::mem::take(&mut this.cancelled) {
                return Poll::Ready(Ok(Completion {
                    result: result_of("aio_return", -(libc::ECANCELED as i64)),
                    buf: this.buf.take(),
                }));
            }
            return already_taken();
        };
        // (A request done stays here, taken: a later poll answers "already
        // taken", and the drop has nothing to give up.)
        if let Some(res) = req.posted() {
            // The buffer goes from here to the completion in one move.
            spend.ready();
            return match this.buf.take() {
                Some(b) => Poll::Ready(Ok(req.finish_with(res, Some(b)))),
                None => Poll::Ready(Ok(req.finish(res))),
            };
        }
        if let Some(b) = this.buf.take() {
            req.buf = Some(b);
        }
        poll_request(req, &this.aio.inner, cx, spend)
    }
}

/// `Aio::submit` of a read or write (`io`: kind, offset, and the address and
/// length of the buffer, which the future keeps) on `fd`, with the kernel
/// entry left to the end of the runtime turn when that pays and `may_wait`
/// (`after_yield`: the future's last poll yielded to the task's budget).
/// Returns the request and, if its entry waits for a flush still to come,
/// that flush's token (else 0). If `may_wait`, what the request names stays
/// its file until the request is in the kernel, whatever happens to the
/// future (see `submit_fd.rs`).
fn submit<B: Send + 'static>(
    aio: &Aio,
    fd: BorrowedFd<'_>,
    io: (OpKind, i64, (usize, usize)),
    may_wait: bool,
    after_yield: bool,
    cx: &Context<'_>,
) -> Result<(Ticket<B>, u64)> {
    let (kind, offset, (ptr, len)) = io;
    let call = if kind == OpKind::Write {
        "aio_write"
    } else {
        "aio_read"
    };
    let inner = &aio.inner;
    let threads = matches!(inner.engine, Engine::Threads(_));
    check_io(call, offset, len)?;
    let mut p = Prepared::new(kind, fd, offset, ptr, len, 0);
    p.look(call, threads)?;
    #[cfg(feature = "tokio")]
    let join = if may_wait && !threads {
        batch::should_defer(inner, after_yield)
    } else {
        batch::Defer::No
    };
    #[cfg(feature = "tokio")]
    let defer = join != batch::Defer::No;
    #[cfg(not(feature = "tokio"))]
    let defer = {
        let _ = (may_wait, after_yield);
        false
    };
    // A deferred submission completes only once the flush entered the ring,
    // which then wakes this task: its waker goes in the slot with the request,
    // and a mail box, to which the completion posts the result (freeing the
    // slot): the woken task reads it without the lock. A request entered now is
    // reaped by the task's own poll, most often done already.
    let mail = defer.then(new_mail);
    let waker = defer.then(|| cx.waker());
    // Entered now, the request is reaped by the poll that follows.
    let entry = if defer {
        Entry::Defer
    } else {
        Entry::NowThenReap
    };
    let ((idx, gen), deferred) = inner
        .submit_one_mailed(&mut p, &mut Notify::None, mail.as_ref(), waker, entry)
        .map_err(|e| super::inherited::naming_call(e, call))?;
    #[cfg(feature = "tokio")]
    let flush = if deferred {
        batch::queued();
        match join {
            // The flush this thread scheduled is still to come (nothing ran
            // on this thread since `should_defer` saw it): it enters this one.
            batch::Defer::Join(token) => token,
            _ => batch::schedule_flush(inner),
        }
    } else {
        0
    };
    #[cfg(not(feature = "tokio"))]
    let flush = {
        let _ = deferred;
        0
    };
    Ok((Ticket::new(idx, gen, None, mail), flush))
}

impl Aio {
    /// `aio_read` as a future, submitted when first polled:
    /// `aio.read_async(Arc::clone(&file), offset, buf).await`.
    ///
    /// `fd` is an owned handle (`Arc<File>`, `File`, `OwnedFd`, ...), kept by the
    /// future, or a borrowed [`&RegisteredFd`](super::RegisteredFd) of this
    /// context (the cheapest: no reference count per read): under tokio, the
    /// reads of one runtime turn enter the kernel with one system call, after
    /// this returns (see [`SubmitFuture`]). For any other borrowed descriptor,
    /// `aio.read(&file, offset, buf)?.await` submits at once.
    ///
    /// ```
    /// # #[cfg(feature = "tokio")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use posixrt::aio::Aio;
    ///
    /// let f = std::fs::File::from(rustix::fs::memfd_create("ra", rustix::fs::MemfdFlags::empty())?);
    /// rustix::io::pwrite(&f, b"borrowed", 0)?;
    /// let aio = Aio::new()?;
    /// let reg = aio.register_fd(&f)?;
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let c = rt.block_on(aio.read_async(&reg, 0, vec![0u8; 8]))?;
    /// assert_eq!(c.data(), b"borrowed");
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "tokio"))]
    /// # fn main() {}
    /// ```
    ///
    /// # Errors
    /// Those of [`Aio::read`], when polled.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    #[doc(alias = "aio_read")]
    pub fn read_async<F: SubmitFd, B: IoBufMut>(
        &self,
        fd: F,
        offset: i64,
        mut buf: B,
    ) -> SubmitFuture<'_, F, B> {
        SubmitFuture {
            req: None,
            aio: self,
            at: (buf.stable_mut_ptr() as usize, buf.bytes_len()),
            buf: Some(buf),
            offset,
            started: false,
            flush: 0,
            yielded: false,
            cancelled: false,
            kind: OpKind::Read,
            fd,
        }
    }

    /// `aio_write` as a future, submitted when first polled:
    /// `aio.write_async(Arc::clone(&file), offset, buf).await`. As
    /// [`read_async`](Aio::read_async), for writes.
    ///
    /// # Errors
    /// Those of [`Aio::write`], when polled.
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[doc(alias = "aio_write")]
    pub fn write_async<F: SubmitFd, B: IoBuf>(
        &self,
        fd: F,
        offset: i64,
        buf: B,
    ) -> SubmitFuture<'_, F, B> {
        SubmitFuture {
            req: None,
            aio: self,
            at: (buf.stable_ptr() as usize, buf.bytes_len()),
            buf: Some(buf),
            offset,
            started: false,
            flush: 0,
            yielded: false,
            cancelled: false,
            kind: OpKind::Write,
            fd,
        }
    }
}

/// The flush at the end of a tokio runtime turn.
#[cfg(feature = "tokio")]
mod batch;
