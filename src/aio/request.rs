//! The handle of one submitted request: `aio_error`, `aio_return` (once), cancel,
//! blocking wait; dropping it never frees a buffer the kernel may still use.

use std::fmt;
use std::sync::Arc;

use super::cancel::{cancel_one, CancelResult};
use super::engine::{Engine, Inner};
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
        _ => err,
    }
}

/// A submitted request (`struct aiocb` in flight).
///
/// The runtime owns the buffer until the request is done; [`aio_return`] gives it
/// back. Dropping the handle of an unfinished request cancels it and keeps the
/// buffer alive until the kernel (or pool thread) has let go of it.
///
/// [`aio_return`]: Request::aio_return
pub struct Request<B: Send + 'static> {
    pub(crate) inner: Arc<Inner>,
    pub(crate) idx: u32,
    pub(crate) gen: u32,
    pub(crate) buf: Option<B>,
    /// The result once taken by `aio_return`.
    taken: Option<i64>,
}

impl<B: Send + 'static> Request<B> {
    pub(crate) fn new(inner: Arc<Inner>, idx: u32, gen: u32, buf: Option<B>) -> Request<B> {
        inner.add_user();
        Request {
            inner,
            idx,
            gen,
            buf,
            taken: None,
        }
    }

    /// This request's name.
    #[inline]
    pub fn id(&self) -> RequestId {
        RequestId {
            ctx: Arc::as_ptr(&self.inner) as usize,
            idx: self.idx,
            gen: self.gen,
        }
    }

    fn raw_status(&self) -> Option<i64> {
        if let Some(r) = self.taken {
            return Some(r);
        }
        let mut core = self.inner.lock();
        self.inner.poll_completions(&mut core);
        let r = match core.get(self.idx, self.gen) {
            Some(s) if s.state == State::Done => Some(s.res),
            Some(_) => None,
            None => Some(-(libc::ECANCELED as i64)),
        };
        self.inner.release(core);
        r
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
        match self.raw_status() {
            None => Err(Error::from_errno("aio_error", libc::EINPROGRESS)),
            Some(r) => result_of("aio_error", r).map(drop),
        }
    }

    /// True once the request reached its final state.
    pub fn is_done(&self) -> bool {
        self.raw_status().is_some()
    }

    /// `aio_return`: the result and the buffer, **exactly once**. Before the
    /// request is done: [`ErrorKind::InProgress`]. A second call:
    /// [`ErrorKind::AlreadyTaken`].
    ///
    /// # References
    /// - [`aio_return(3)`](https://man7.org/linux/man-pages/man3/aio_return.3.html)
    pub fn aio_return(&mut self) -> Result<Completion<B>> {
        if self.taken.is_some() {
            return Err(Error::new(
                ErrorKind::AlreadyTaken,
                "aio_return",
                "the result of this request was already taken",
            )
            .with_hint("aio_return may be called once per request; keep the first Completion"));
        }
        let mut core = self.inner.lock();
        if core.get(self.idx, self.gen).map(|s| s.state) != Some(State::Done) {
            self.inner.poll_completions(&mut core);
        }
        let res = match core.get(self.idx, self.gen) {
            Some(s) if s.state == State::Done => s.res,
            _ => {
                self.inner.release(core);
                return Err(Error::from_errno("aio_return", libc::EINPROGRESS)
                    .with_hint("wait with Aio::suspend, Request::wait or .await first"));
            }
        };
        core.free_slot(self.idx);
        self.inner.release(core);
        self.taken = Some(res);
        Ok(Completion {
            result: result_of("aio_return", res),
            buf: self.buf.take(),
        })
    }

    /// Waits for the request (the calling thread reaps completions itself), then
    /// takes its result like [`aio_return`](Request::aio_return).
    pub fn wait(&mut self) -> Result<Completion<B>> {
        if self.taken.is_none() {
            let (idx, gen) = (self.idx, self.gen);
            self.inner.wait_until(None, None, |c| {
                c.get(idx, gen).map_or(true, |s| s.state == State::Done)
            })?;
        }
        self.aio_return()
    }

    /// `aio_cancel(fd, aiocb)`: cancel this request. [`CancelResult::Canceled`] if
    /// it was stopped (it then reports ECANCELED and still notifies),
    /// [`CancelResult::NotCanceled`] if it is already running and cannot be
    /// stopped, [`CancelResult::AllDone`] if it had finished.
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    #[doc(alias = "aio_cancel")]
    pub fn cancel(&self) -> Result<CancelResult> {
        if self.taken.is_some() {
            return Ok(CancelResult::AllDone);
        }
        Ok(cancel_one(&self.inner, self.idx, self.gen))
    }
}

impl<B: Send + 'static> fmt::Debug for Request<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("idx", &self.idx)
            .field("gen", &self.gen)
            .field("taken", &self.taken.is_some())
            .finish()
    }
}

impl<B: Send + 'static> Drop for Request<B> {
    fn drop(&mut self) {
        if self.taken.is_none() {
            let mut core = self.inner.lock();
            self.inner.poll_completions(&mut core);
            if let Some(state) = core.get(self.idx, self.gen).map(|s| s.state) {
                if state == State::Done {
                    core.free_slot(self.idx);
                } else {
                    let s = &mut core.slots[self.idx as usize];
                    s.detached = true;
                    if let Some(b) = self.buf.take() {
                        s.orphan = Some(erase(b));
                    }
                    if !core.cancel_unissued(self.idx) {
                        match &self.inner.engine {
                            Engine::Uring(r) => {
                                r.cancel_async(super::table::user_data(self.idx, self.gen))
                            }
                            Engine::Threads(p) => {
                                let s = &mut core.slots[self.idx as usize];
                                if s.interruptible {
                                    s.cancel_req = true;
                                    p.interrupt(s.worker);
                                }
                            }
                        }
                    }
                }
            }
            self.inner.release(core);
        }
        self.inner.drop_user();
    }
}

/// Boxes a buffer of any type so the slot can keep it alive.
fn erase<B: Send + 'static>(b: B) -> Box<dyn Send> {
    Box::new(b)
}
