//! [`SubmitFd`]: what a [`SubmitFuture`](super::SubmitFuture) may hold to name
//! its file, and whether its submission may wait in the submission queue for
//! the end of the runtime turn.
//!
//! A submission that waits is read by the kernel only when the ring is entered,
//! after the poll returned. What it names must still be that file then, even if
//! the future is leaked with `mem::forget` (which ends a borrow without running
//! `drop`):
//! - an owned handle (`Arc<File>`, `File`, `OwnedFd`, ...) is kept by the
//!   future, and leaked with it: the number is never reused;
//! - a borrowed [`RegisteredFd`] of the same context names a slot of the rings'
//!   file tables, not the number, and the last guard of an fd enters every
//!   submission queue before it frees the slot (see `register.rs`).
//!
//! Anything else (a registration of another context, or on the thread engine,
//! which registers nothing) is submitted at the first poll, entering the ring
//! at once, as `Aio::read` does.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use super::context::Aio;
use super::register::RegisteredFd;

/// What [`Aio::read_async`](super::Aio::read_async) and
/// [`Aio::write_async`](super::Aio::write_async) take to name the file: an
/// owned handle (`Arc<File>`, `File`, `OwnedFd`, any `AsFd + 'static`), which
/// the future keeps, or a borrowed [`&RegisteredFd`](RegisteredFd), which
/// spares the reference count an `Arc` clone takes and drops per request.
///
/// Sealed: the future relies on what each of these guarantees (see
/// [`SubmitFuture`](super::SubmitFuture)).
pub trait SubmitFd: sealed::Sealed {}

pub(super) mod sealed {
    use std::os::fd::BorrowedFd;

    use super::Aio;

    /// The methods of [`SubmitFd`](super::SubmitFd), out of the public API.
    pub trait Sealed {
        /// The fd, open while `self` lives.
        fn submit_fd(&self) -> BorrowedFd<'_>;
        /// True if a submission to `aio` on this fd may wait in a submission
        /// queue after the poll returned (see the module docs).
        fn may_wait(&self, aio: &Aio) -> bool;
    }
}

impl<T: AsFd + 'static> sealed::Sealed for T {
    #[inline]
    fn submit_fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }
    #[inline]
    fn may_wait(&self, _: &Aio) -> bool {
        true
    }
}

impl<T: AsFd + 'static> SubmitFd for T {}

impl sealed::Sealed for &RegisteredFd<'_> {
    #[inline]
    fn submit_fd(&self) -> BorrowedFd<'_> {
        self.borrowed()
    }
    #[inline]
    fn may_wait(&self, aio: &Aio) -> bool {
        self.is_registered() && Arc::ptr_eq(self.inner(), &aio.inner)
    }
}

impl SubmitFd for &RegisteredFd<'_> {}
