//! The handle of one submitted request: `aio_error`, `aio_return` (once), cancel,
//! blocking wait; dropping it never frees a buffer the kernel may still use.

use std::fmt;
use std::sync::Arc;

use super::cancel::{cancel_one, wait_done, CancelResult};
use super::engine::{Engine, Inner};
use super::mail::Mail;
use super::table::State;
use crate::{Error, ErrorKind, Result};

/// The name of a request, usable in [`Aio::suspend`](super::Aio::suspend) lists.
/// Plain data: `(slot, generation)` plus the context it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId {
    pub(crate) ctx: usize,
    pub(crate) idx: u32,
    pub(crate) gen: u32,
}

/// Anything that names a request or an empty slot of a list (`NULL` in a C
/// `aiocb` array): `&Request`, `Option<&Request>`, `&Option<Request>`,
/// [`RequestId`], `Option<RequestId>`.
pub trait AsRequestId {
    /// The request's name, or `None` for an empty entry.
    fn request_id(&self) -> Option<RequestId>;
}

impl AsRequestId for RequestId {
    fn request_id(&self) -> Option<RequestId> {
        Some(*self)
    }
}
impl AsRequestId for Option<RequestId> {
    fn request_id(&self) -> Option<RequestId> {
        *self
    }
}
impl<B: Send + 'static> AsRequestId for &Request<B> {
    fn request_id(&self) -> Option<RequestId> {
        Some(self.id())
    }
}
impl<B: Send + 'static> AsRequestId for &mut Request<B> {
    fn request_id(&self) -> Option<RequestId> {
        Some(self.id())
    }
}
impl<B: Send + 'static> AsRequestId for Option<&Request<B>> {
    fn request_id(&self) -> Option<RequestId> {
        self.map(Request::id)
    }
}
impl<B: Send + 'static> AsRequestId for &Option<Request<B>> {
    fn request_id(&self) -> Option<RequestId> {
        self.as_ref().map(Request::id)
    }
}
impl<B: Send + 'static> AsRequestId for &mut Option<Request<B>> {
    fn request_id(&self) -> Option<RequestId> {
        self.as_ref().map(Request::id)
    }
}

/// What [`Request::aio_return`] gives back: the result of the operation (what
/// `read`/`write`/`fsync` would have returned) and the buffer.
pub struct Completion<B> {
    /// Bytes transferred, or the error (ECANCELED for a cancelled request).
    pub result: Result<usize>,
    /// The buffer, back in the program's hands (`None` for fsync).
    pub buf: Option<B>,
}

impl<B: AsRef<[u8]>> Completion<B> {
    /// The bytes a read filled (empty on error or without a buffer).
    pub fn data(&self) -> &[u8] {
        match (&self.result, &self.buf) {
            (Ok(n), Some(b)) => {
                let b = b.as_ref();
                &b[..(*n).min(b.len())]
            }
            _ => &[],
        }
    }
}

impl<B> fmt::Debug for Completion<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("result", &self.result)
            .field("buf", &self.buf.as_ref().map(|_| ".."))
            .finish()
    }
}

#[inline]
pub(crate) fn result_of(call: &'static str, res: i64) -> Result<usize> {
    if res >= 0 {
        Ok(res as usize)
    } else {
        Err(error_of(call, res))
    }
}

#[cold]
#[inline(never)]
fn error_of(call: &'static str, res: i64) -> Error {
    let e = (-res) as i32;
    let err = Error::from_errno(call, e);
    match e {
        libc::ECANCELED => err.with_message("the request was cancelled"),
        libc::EBADF => err.with_hint("the fd is closed or not open for this operation"),
        libc::EINVAL => err.with_hint(
            "on an O_DIRECT fd the buffer's address, the length and the offset must be \
             multiples of the device's logical block size (posixrt::advise::AlignedBuf)",
        ),
        _ => err,
    }
}

/// A submitted request (`struct aiocb` in flight).
///
/// The runtime owns the buffer until the request is done; [`aio_return`] gives it
/// back. Dropping the handle of an unfinished request cancels it and keeps the
/// buffer alive until the kernel (or pool thread) has let go of it. A read of a
/// pipe or socket that waits for data when it is dropped takes none written
/// after the drop returns (on the thread engine the drop waits, microseconds,
/// for a worker's attempt at it to end); one already transferring may still
/// complete.
///
/// [`aio_return`]: Request::aio_return
pub struct Request<B: Send + 'static> {
    pub(crate) inner: Arc<Inner>,
    pub(crate) t: Ticket<B>,
}

/// A submitted request without its context: [`Request`] pairs it with a handle
/// that keeps the context alive; a future that borrows the context holds it
/// alone (no reference count to take and drop per request). Every call gets
/// the context it was submitted to, and [`Ticket::forget`] must run before it
/// is dropped (else its mail box leaks: the slot may still post to it).
pub(crate) struct Ticket<B: Send + 'static> {
    pub(crate) idx: u32,
    pub(crate) gen: u32,
    pub(crate) buf: Option<B>,
    /// The result once taken by `aio_return`.
    taken: Option<i64>,
    /// Where the completion posts the result (futures): read without the lock.
    mail: Option<Arc<Mail>>,
}

thread_local! {
    /// The mail box this thread gave back last, taken first by its next
    /// request: a task that awaits reads in a loop gives one back and takes
    /// one in the same poll, without the pool's borrow and bounds.
    static MAIL_LAST: std::cell::Cell<Option<Arc<Mail>>> = const { std::cell::Cell::new(None) };
    /// Empty mail boxes for this thread's next requests, behind `MAIL_LAST`.
    static MAIL_POOL: std::cell::RefCell<Vec<Arc<Mail>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty mail box (from this thread's pool when it has one).
#[inline]
pub(crate) fn new_mail() -> Arc<Mail> {
    match MAIL_LAST.try_with(std::cell::Cell::take) {
        Ok(Some(m)) => m,
        _ => new_mail_from_pool(),
    }
}

/// [`new_mail`] when `MAIL_LAST` is empty.
#[cold]
#[inline(never)]
fn new_mail_from_pool() -> Arc<Mail> {
    MAIL_POOL
        .try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Arc::new(Mail::new()))
}

/// Gives a mail box back to this thread's pool once nothing else refers to it.
#[inline(always)]
fn recycle(m: Arc<Mail>) {
    // Slots hold only the box's address, and let go of it before the handle
    // does (see `MailAddr`): a second reference is never made. (A plain load:
    // `Arc::get_mut` would cost a locked instruction per read.)
    if Arc::strong_count(&m) != 1 {
        return;
    }
    m.clear();
    if let Ok(Some(older)) = MAIL_LAST.try_with(|c| c.replace(Some(m))) {
        recycle_to_pool(older);
    }
}

/// [`recycle`] of the box `MAIL_LAST` held before.
#[cold]
#[inline(never)]
fn recycle_to_pool(m: Arc<Mail>) {
    let _ = MAIL_POOL.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 256 {
            p.push(m);
        }
    });
}

fn already_taken() -> Error {
    Error::new(
        ErrorKind::AlreadyTaken,
        "aio_return",
        "the result of this request was already taken",
    )
    .with_hint("aio_return may be called once per request; keep the first Completion")
}

impl<B: Send + 'static> Ticket<B> {
    pub(crate) fn new(idx: u32, gen: u32, buf: Option<B>, mail: Option<Arc<Mail>>) -> Ticket<B> {
        Ticket {
            idx,
            gen,
            buf,
            taken: None,
            mail,
        }
    }

    /// The result posted to the mail box, if any (no lock).
    #[inline]
    fn mailed(&self) -> Option<i64> {
        self.mail.as_ref().and_then(|m| m.get())
    }

    /// `aio_cancel` of this request (see [`Request::cancel`]).
    pub(crate) fn cancel(&self, inner: &Arc<Inner>) -> CancelResult {
        if self.taken.is_some() || self.mailed().is_some() {
            return CancelResult::AllDone;
        }
        cancel_one(inner, self.idx, self.gen)
    }

    /// The result, once done.
    #[inline(always)]
    pub(crate) fn finish(&mut self, res: i64) -> Completion<B> {
        let buf = self.buf.take();
        self.finish_with(res, buf)
    }

    /// [`finish`](Ticket::finish) with the buffer `buf`, which the caller
    /// kept until now (the request's own is then `None`).
    #[inline(always)]
    pub(crate) fn finish_with(&mut self, res: i64, buf: Option<B>) -> Completion<B> {
        self.taken = Some(res);
        if let Some(m) = self.mail.take() {
            recycle(m);
        }
        Completion {
            result: result_of("aio_return", res),
            buf,
        }
    }

    /// The result the completion posted, if it did and it was not taken (no
    /// lock): [`finish`](Ticket::finish) takes it.
    #[inline]
    pub(crate) fn posted(&self) -> Option<i64> {
        if self.taken.is_some() {
            return None;
        }
        self.mailed()
    }

    /// The result, if the completion posted it (no lock).
    #[inline]
    pub(crate) fn take_mailed(&mut self) -> Option<Completion<B>> {
        let r = self.posted()?;
        Some(self.finish(r))
    }

    /// `aio_return` if the request is done, in one lock (reaping first);
    /// otherwise `waker` is left in the slot, and a mail box, so the result of
    /// the completion is then read without the lock ([`take_mailed`]).
    ///
    /// [`take_mailed`]: Ticket::take_mailed
    pub(crate) fn take_or_register(
        &mut self,
        inner: &Inner,
        waker: &std::task::Waker,
    ) -> Option<Result<Completion<B>>> {
        if self.taken.is_some() {
            return Some(self.aio_return(inner));
        }
        if let Some(r) = self.take_mailed() {
            return Some(Ok(r));
        }
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        if let Some(r) = self.mailed() {
            inner.release(core);
            return Some(Ok(self.finish(r)));
        }
        match core.get(self.idx, self.gen).map(|s| s.state) {
            Some(State::Done) => {
                let res = core.slots[self.idx as usize].res;
                core.free_slot(self.idx);
                inner.release(core);
                Some(Ok(self.finish(res)))
            }
            Some(_) => {
                let mail = self.mail.get_or_insert_with(new_mail);
                core.attach_mail(self.idx, self.gen, mail, Some(waker));
                inner.release(core);
                None
            }
            None => {
                inner.release(core);
                Some(self.aio_return(inner))
            }
        }
    }

    fn raw_status(&self, inner: &Inner) -> Option<i64> {
        if let Some(r) = self.taken.or_else(|| self.mailed()) {
            return Some(r);
        }
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        if let Some(r) = self.mailed() {
            inner.release(core);
            return Some(r);
        }
        let r = match core.get(self.idx, self.gen) {
            Some(s) if s.state == State::Done => Some(s.res),
            Some(_) => None,
            None => Some(-(libc::ECANCELED as i64)),
        };
        inner.release(core);
        r
    }

    pub(crate) fn aio_return(&mut self, inner: &Inner) -> Result<Completion<B>> {
        if self.taken.is_some() {
            return Err(already_taken());
        }
        if let Some(r) = self.mailed() {
            return Ok(self.finish(r));
        }
        let mut core = inner.lock();
        if core.get(self.idx, self.gen).map(|s| s.state) != Some(State::Done) {
            inner.poll_completions(&mut core);
        }
        if let Some(r) = self.mailed() {
            inner.release(core);
            return Ok(self.finish(r));
        }
        let res = match core.get(self.idx, self.gen) {
            Some(s) if s.state == State::Done => s.res,
            _ => {
                inner.release(core);
                return Err(Error::from_errno("aio_return", libc::EINPROGRESS)
                    .with_hint("wait with Aio::suspend, Request::wait or .await first"));
            }
        };
        core.free_slot(self.idx);
        inner.release(core);
        Ok(self.finish(res))
    }

    /// Lets go of the request: a done one's slot is freed; an unfinished one is
    /// cancelled and its slot keeps the buffer until the kernel (or pool
    /// thread) lets go of it.
    #[inline]
    pub(crate) fn forget(&mut self, inner: &Inner) {
        // Most often (a future dropped after its result) nothing is left.
        if self.taken.is_some() && self.mail.is_none() {
            return;
        }
        self.forget_slow(inner);
    }

    fn forget_slow(&mut self, inner: &Inner) {
        if self.taken.is_none() && self.mailed().is_none() {
            let mut attempt = false;
            // The waker of the task that gave the request up: let go of it now
            // (after the lock: dropping a task's last handle may run its drop),
            // not when the cancelled request is reaped.
            let mut waker = None;
            let mut core = inner.lock();
            inner.poll_completions(&mut core);
            // (A completion that posted to the mail box freed the slot: the name
            // is stale then.)
            if let Some(state) = core.get(self.idx, self.gen).map(|s| s.state) {
                if state == State::Done {
                    core.free_slot(self.idx);
                } else {
                    let s = &mut core.slots[self.idx as usize];
                    // The box goes with this handle: the slot must not post to it.
                    s.mail = super::mail::MailAddr::NONE;
                    s.detached = true;
                    waker = s.waker.take();
                    if let Some(b) = self.buf.take() {
                        s.orphan = Some(erase(b));
                    }
                    if !core.cancel_unissued(self.idx) {
                        match &inner.engine {
                            Engine::Uring(r) => {
                                core.slots[self.idx as usize].cancel_req = true;
                                r.cancel_async(super::table::user_data(self.idx, self.gen))
                            }
                            Engine::Threads(p) => {
                                let s = &mut core.slots[self.idx as usize];
                                if s.interruptible {
                                    s.cancel_req = true;
                                    p.interrupt(s.worker);
                                    attempt = !s.parked;
                                }
                            }
                        }
                    }
                }
            }
            // (A queued request cancelled may have let the next one on its fd go.)
            inner.release_and_start(core);
            drop(waker);
            if attempt {
                // A worker is in its non-blocking attempt, the lock released:
                // it ends the request when the attempt would block, but an
                // attempt made after this returned could take data the
                // program writes next. Wait for it, as a cancel does:
                // microseconds, as the attempt does not block.
                wait_done(inner, self.idx, self.gen);
            }
        }
        // Taken or given up: later calls answer "already taken".
        self.taken.get_or_insert(-(libc::ECANCELED as i64));
        if let Some(m) = self.mail.take() {
            recycle(m);
        }
    }
}

impl<B: Send + 'static> Drop for Ticket<B> {
    fn drop(&mut self) {
        // Given up without `forget` (a bug): its slot may still hold the box's
        // address, so the box must outlive the slot. Leak it.
        if let Some(m) = self.mail.take() {
            std::mem::forget(m);
        }
    }
}

impl<B: Send + 'static> Request<B> {
    pub(crate) fn new(inner: Arc<Inner>, idx: u32, gen: u32, buf: Option<B>) -> Request<B> {
        inner.add_user();
        Request {
            inner,
            t: Ticket::new(idx, gen, buf, None),
        }
    }

    /// This request's name.
    #[inline]
    pub fn id(&self) -> RequestId {
        RequestId {
            ctx: Arc::as_ptr(&self.inner) as usize,
            idx: self.t.idx,
            gen: self.t.gen,
        }
    }

    /// `aio_error`: `Ok(())` once the request succeeded; an error of kind
    /// [`ErrorKind::InProgress`] (EINPROGRESS) while it runs; otherwise the error
    /// of the operation (ECANCELED if it was cancelled). May be asked any number of
    /// times, before and after [`aio_return`](Request::aio_return).
    ///
    /// # References
    /// - [`aio_error(3)`](https://man7.org/linux/man-pages/man3/aio_error.3.html)
    #[doc(alias = "aio_error")]
    pub fn error(&self) -> Result<()> {
        match self.t.raw_status(&self.inner) {
            None => Err(Error::from_errno("aio_error", libc::EINPROGRESS)),
            Some(r) => result_of("aio_error", r).map(drop),
        }
    }

    /// True once the request reached its final state.
    pub fn is_done(&self) -> bool {
        self.t.raw_status(&self.inner).is_some()
    }

    /// `aio_return`: the result and the buffer, **exactly once**. Before the
    /// request is done: [`ErrorKind::InProgress`]. A second call:
    /// [`ErrorKind::AlreadyTaken`].
    ///
    /// # References
    /// - [`aio_return(3)`](https://man7.org/linux/man-pages/man3/aio_return.3.html)
    pub fn aio_return(&mut self) -> Result<Completion<B>> {
        self.t.aio_return(&self.inner)
    }

    /// Waits for the request (the calling thread reaps completions itself), then
    /// takes its result like [`aio_return`](Request::aio_return).
    pub fn wait(&mut self) -> Result<Completion<B>> {
        if self.t.taken.is_none() && self.t.mailed().is_none() {
            let (idx, gen) = (self.t.idx, self.t.gen);
            self.inner.wait_until(None, None, |c| {
                c.get(idx, gen).map_or(true, |s| s.state == State::Done)
            })?;
        }
        self.aio_return()
    }

    /// `aio_cancel(fd, aiocb)`: cancel this request. [`CancelResult::Canceled`] if
    /// it was stopped (it then reports ECANCELED and still notifies),
    /// [`CancelResult::NotCanceled`] if it is already running and cannot be
    /// stopped, [`CancelResult::AllDone`] if it had finished. Running means a
    /// transfer the kernel or a pool thread has begun: a regular-file copy, a
    /// pipe write part of which went through, or a write to a datagram socket
    /// waiting for room (it goes whole once there is room, as with glibc). The
    /// call does not wait for such a request.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidState`] in a child made by `fork`, for a request
    /// its parent submitted (it is the parent's, and goes on there).
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    #[doc(alias = "aio_cancel")]
    pub fn cancel(&self) -> Result<CancelResult> {
        if self.inner.inherited() {
            return Err(super::cancel::inherited_cancel());
        }
        Ok(self.t.cancel(&self.inner))
    }
}

impl<B: Send + 'static> fmt::Debug for Request<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("idx", &self.t.idx)
            .field("gen", &self.t.gen)
            .field("taken", &self.t.taken.is_some())
            .finish()
    }
}

impl<B: Send + 'static> Drop for Request<B> {
    fn drop(&mut self) {
        self.t.forget(&self.inner);
        self.inner.drop_user();
    }
}

/// Boxes a buffer of any type so the slot can keep it alive.
fn erase<B: Send + 'static>(b: B) -> Box<dyn Send> {
    Box::new(b)
}
