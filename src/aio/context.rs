//! The AIO context: engine choice, submission of single requests, cancel by fd.

use std::os::fd::{AsFd, RawFd};
use std::sync::Arc;

use super::buf::{IoBuf, IoBufMut};
use super::cancel::{cancel_fd, CancelResult};
use super::engine::{Backend, BackendInfo, Config, Inner};
use super::fsync::SyncMode;
use super::op::{Kind, Op};
use super::request::Request;
use crate::{Error, Result};

/// Builds an [`Aio`] context with a chosen backend and sizes.
#[derive(Debug, Clone)]
pub struct Builder {
    backend: Option<Backend>,
    entries: u32,
    workers: usize,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            backend: None,
            entries: 256,
            workers: 8,
        }
    }
}

impl Builder {
    /// The defaults: io_uring with 256 entries, falling back to 8 pool threads.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Require a backend (no fallback). Without this, `POSIXRT_AIO_BACKEND=threads|uring`
    /// decides, and without that io_uring is tried first.
    #[must_use]
    pub fn backend(mut self, b: Backend) -> Builder {
        self.backend = Some(b);
        self
    }

    /// Requests the io_uring ring holds at once (a power of two, 1..=32768); more
    /// wait in the priority queue.
    #[must_use]
    pub fn entries(mut self, n: u32) -> Builder {
        self.entries = n;
        self
    }

    /// Threads of the pool backend (1..=1024).
    #[must_use]
    pub fn workers(mut self, n: usize) -> Builder {
        self.workers = n;
        self
    }

    /// Creates the context (`io_uring_setup`, or the thread pool).
    ///
    /// # Errors
    /// EINVAL for bad sizes; resource errors (ENOMEM, EMFILE, EAGAIN) from
    /// `io_uring_setup` are reported, never fallen back from.
    pub fn build(self) -> Result<Aio> {
        if !(1..=32768).contains(&self.entries) || !self.entries.is_power_of_two() {
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("{} io_uring entries", self.entries),
            )
            .with_hint("entries must be a power of two in 1..=32768"));
        }
        if !(1..=1024).contains(&self.workers) {
            return Err(Error::invalid(
                "posixrt::aio::Builder::build",
                format!("{} pool threads", self.workers),
            )
            .with_hint("workers must be in 1..=1024"));
        }
        let inner = Inner::new(&Config {
            backend: self.backend,
            entries: self.entries,
            workers: self.workers,
        })?;
        inner.add_user();
        Ok(Aio { inner })
    }
}

/// A POSIX AIO context: submits requests, waits for them, cancels them.
///
/// Cheap to clone (clones share the engine). The engine stops when the last clone
/// and the last [`Request`] are dropped.
pub struct Aio {
    pub(crate) inner: Arc<Inner>,
}

impl Clone for Aio {
    fn clone(&self) -> Aio {
        self.inner.add_user();
        Aio {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Drop for Aio {
    fn drop(&mut self) {
        self.inner.drop_user();
    }
}

impl std::fmt::Debug for Aio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aio")
            .field("backend", &self.inner.info)
            .finish()
    }
}

impl Aio {
    /// A context with the default engine: io_uring, or the thread pool when
    /// io_uring is refused (see [`Aio::backend`] for which and why).
    pub fn new() -> Result<Aio> {
        Builder::new().build()
    }

    /// A [`Builder`] to choose the backend and sizes.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Which backend is live, and why.
    pub fn backend(&self) -> &BackendInfo {
        &self.inner.info
    }

    /// Submits one request (`aio_read`, `aio_write` or `aio_fsync`, depending on
    /// `op`). The buffer is owned by the runtime until the request is done.
    ///
    /// # Errors
    /// EINVAL for a `reqprio` outside 0..=20, a negative offset, an offset + length
    /// that overflows, a bad signal number, or an `LIO_NOP`.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    pub fn submit<B: Send + 'static>(&self, mut op: Op<B>) -> Result<Request<B>> {
        let call = match op.kind {
            Kind::Io(super::core::OpKind::Read) => "aio_read",
            Kind::Io(super::core::OpKind::Write) => "aio_write",
            Kind::Io(_) => "aio_fsync",
            Kind::Nop => "aio_read",
        };
        let (raw, prio) = op.prepare(call)?;
        let notify = std::mem::take(&mut op.notify);
        self.inner.prepare_notify(&notify)?;
        let (idx, gen) = self.inner.submit_one(raw, prio, notify)?;
        Ok(Request::new(
            Arc::clone(&self.inner),
            idx,
            gen,
            op.buf.take(),
        ))
    }

    /// `aio_read`: reads `buf.len()` bytes at `offset`.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    #[inline]
    pub fn read<B: IoBufMut>(&self, fd: impl AsFd, offset: i64, buf: B) -> Result<Request<B>> {
        self.submit(Op::read(fd, offset, buf))
    }

    /// `aio_write`: writes `buf` at `offset` (appends on `O_APPEND`/stream fds).
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    #[inline]
    pub fn write<B: IoBuf>(&self, fd: impl AsFd, offset: i64, buf: B) -> Result<Request<B>> {
        self.submit(Op::write(fd, offset, buf))
    }

    /// `aio_fsync`: flushes `fd` after every request queued on it before this one.
    ///
    /// # References
    /// - [`aio_fsync(3)`](https://man7.org/linux/man-pages/man3/aio_fsync.3.html)
    #[inline]
    pub fn fsync(&self, fd: impl AsFd, mode: SyncMode) -> Result<Request<()>> {
        self.submit(Op::<()>::fsync(fd, mode))
    }

    /// `aio_cancel(fd, NULL)`: cancels every request on `fd`.
    ///
    /// # Errors
    /// EBADF if `fd` is not open.
    ///
    /// # References
    /// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
    pub fn cancel_fd(&self, fd: RawFd) -> Result<CancelResult> {
        cancel_fd(&self.inner, fd)
    }
}
