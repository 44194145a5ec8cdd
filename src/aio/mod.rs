//! POSIX asynchronous I/O on io_uring: `aio_read`, `aio_write`, `aio_fsync`,
//! `lio_listio`, `aio_suspend`, `aio_error`, `aio_return`, `aio_cancel`, with
//! `sigevent` notification, and futures for async/await.
//!
//! | POSIX | posixrt |
//! |---|---|
//! | `aio_read` / `aio_write` | [`Aio::read`], [`Aio::write`], [`Aio::submit`] with an [`Op`] |
//! | `aio_fsync(O_SYNC / O_DSYNC)` | [`Aio::fsync`] with [`SyncMode`] |
//! | `lio_listio(LIO_WAIT / LIO_NOWAIT)` | [`Aio::lio_listio`] with [`ListMode`]; `LIO_NOP` is [`Op::nop`], `NULL` is `None` |
//! | `aio_suspend` | [`Aio::suspend`] (with an optional timeout) |
//! | `aio_error` | [`Request::error`] (kind [`InProgress`](crate::ErrorKind::InProgress) until done) |
//! | `aio_return` | [`Request::aio_return`], exactly once (then [`AlreadyTaken`](crate::ErrorKind::AlreadyTaken)) |
//! | `aio_cancel(fd, aiocb)` / `aio_cancel(fd, NULL)` | [`Request::cancel`] / [`Aio::cancel_fd`] → [`CancelResult`] |
//! | `aio_reqprio` | [`Op::reqprio`], 0..=[`AIO_PRIO_DELTA_MAX`] |
//! | `aio_sigevent`: `SIGEV_NONE` / `SIGEV_SIGNAL` / `SIGEV_THREAD` | [`Notify`] |
//!
//! # Buffers are owned
//!
//! A request takes its buffer by value (`Vec<u8>`, `Box<[u8]>`, or any [`IoBufMut`]
//! / [`IoBuf`]) and [`aio_return`](Request::aio_return) gives it back. Dropping a
//! [`Request`] before it is done cancels it and keeps the buffer alive until the
//! kernel is finished with it; dropping the last handle of a context cancels what
//! is left and waits a bounded time (buffers still held by the kernel after that
//! are leaked, never freed). Nothing ever blocks forever on drop.
//!
//! # Errors: in the call or in the result
//!
//! What a request's arguments get wrong is refused by the call that submits it
//! (its `Err`, C's `-1` with `errno`), and nothing is submitted: EINVAL for a
//! negative offset, an offset + length past `i64::MAX`, a `reqprio` outside
//! 0..=[`AIO_PRIO_DELTA_MAX`], a bad signal number or thread, an `LIO_NOP`
//! given to [`Aio::submit`]; for an fsync, EBADF (not open for writing) and
//! EINVAL (cannot be synchronised); EAGAIN
//! ([`OutOfResources`](crate::ErrorKind::OutOfResources)) when the request
//! cannot be queued for want of descriptors; and
//! [`InvalidState`](crate::ErrorKind::InvalidState) through a context a forked
//! child inherited. Everything the transfer itself meets comes in its result
//! ([`Request::error`], [`Completion::result`], C's `aio_error`), on both
//! engines: EBADF for a read on a descriptor not open for reading or a write
//! on one not open for writing (POSIX lets it come either way), EAGAIN on an
//! `O_NONBLOCK` one, ECANCELED after a cancel. A read at or past the end of
//! the file, and a transfer of 0 bytes, succeed with 0.
//!
//! # Engines
//!
//! io_uring is the default. The thread that waits ([`Aio::suspend`], `LIO_WAIT`,
//! [`Request::wait`], a poll of a future) reaps completions itself, so a
//! synchronous wait costs one `io_uring_enter` and no thread hand-off. If
//! `io_uring_setup` is refused (ENOSYS, EPERM from seccomp or
//! `kernel.io_uring_disabled`, EINVAL), a thread pool takes over with the same
//! semantics; [`Aio::backend`] says which is live and why.
//! `POSIXRT_AIO_BACKEND=threads|uring` forces one. Resource errors (ENOMEM,
//! EMFILE) are reported, never fallen back from.
//!
//! A request belongs to the process, not to the thread that submitted it: a
//! thread may submit and exit. The kernel ends what an exiting thread left in
//! its rings, so the engine issues such a request again on its own fd copy
//! (pipes, sockets, large transfers, C requests), or the thread's exit waits
//! for it, at most 10 s (the other transfers on regular files and block
//! devices).
//!
//! Writes on an `O_APPEND` fd or a pipe/socket/terminal, and fsyncs, are
//! serialised per fd in the engine (the next one starts when the previous one is
//! done), so they land in call order and an fsync covers everything queued on its
//! fd before it. On a pipe, FIFO, socket or terminal the offset is ignored on
//! both engines; several reads in flight on one pipe complete in unspecified
//! order. On an `O_NONBLOCK` one, a transfer that would block ends with EAGAIN,
//! as `read(2)`/`write(2)` would. `aio_fsync` is checked when it is called:
//! EBADF for a descriptor not open for writing, EINVAL for one that cannot be
//! synchronised (a pipe, FIFO, socket or terminal).
//!
//! [`Aio::suspend`] and `lio_listio(LIO_WAIT)` return
//! [`Interrupted`](crate::ErrorKind::Interrupted) when a signal handler runs
//! while they wait, with or without `SA_RESTART` (POSIX restarts them after an
//! `SA_RESTART` handler; the Rust API leaves the retry to the caller, while the
//! C library restarts); any timeout is valid
//! ([`Duration::MAX`](std::time::Duration::MAX) waits without limit).
//!
//! # Priorities
//!
//! A request records its submitter's policy and priority; its effective priority
//! is that priority minus `reqprio`, clamped at the policy's minimum (0 for
//! `SCHED_OTHER`). Whenever requests wait for the engine (the ring is full, the
//! pool's threads are busy), they are issued highest effective priority first
//! across all submitters, every real-time request before every `SCHED_OTHER`
//! one, then lower `reqprio`, then in submission order. The thread engine runs
//! each request at its effective policy and priority; io_uring tags a real-time
//! request's SQE with `IOPRIO_CLASS_RT` (see [`Builder::worker_affinity`] and
//! [`Builder::max_workers`] for the kernel's workers). Trace events carry the
//! effective priority.
//!
//! # I/O safety
//!
//! A request never uses the caller's descriptor number after the submitting call
//! returns (see [`BorrowFd`]): closing the handle early cannot redirect the I/O
//! to another file.
//!
//! # Example
//!
//! ```
//! use posixrt::aio::{Aio, ListMode, Op, Notify};
//! use std::io::Write;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut f = std::fs::File::from(rustix::fs::memfd_create("demo", rustix::fs::MemfdFlags::empty())?);
//! f.write_all(b"one\ntwo\nthree\n")?;
//!
//! let aio = Aio::new()?;
//! println!("backend: {}", aio.backend());
//!
//! // aio_read + aio_suspend + aio_error + aio_return
//! let mut r = aio.read(&f, 4, vec![0u8; 4])?;
//! aio.suspend([&r], None)?;
//! r.error()?;
//! let done = r.aio_return()?;
//! assert_eq!(done.data(), b"two\n");
//!
//! // lio_listio(LIO_WAIT) with a NULL entry and an LIO_NOP
//! let list = aio.lio_listio(
//!     ListMode::Wait,
//!     [Some(Op::read(&f, 0, vec![0u8; 3])), None, Some(Op::nop()), Some(Op::read(&f, 8, vec![0u8; 5]))],
//!     Notify::None,
//! )?;
//! let mut reqs = list.into_requests();
//! assert!(reqs[1].is_none() && reqs[2].is_none());
//! assert_eq!(reqs[3].as_mut().unwrap().aio_return()?.data(), b"three");
//! # Ok(())
//! # }
//! ```

mod backend;
mod buf;
mod cancel;
#[doc(hidden)]
pub mod capi;
mod context;
mod coop;
mod engine;
mod exit_wait;
mod files;
mod fsync;
mod future;
mod gate;
mod hold;
pub(crate) mod hook;
mod inherited;
mod let_go;
mod list;
mod list_group;
mod mail;
mod notify;
mod op;
mod register;
mod request;
mod shard;
mod sleep;
mod slot;
mod sqe;
mod submit;
mod submit_fd;
mod suspend;
mod table;
mod threads;
#[cfg(feature = "tokio")]
mod tokio_host;
#[cfg(feature = "tokio")]
mod tokio_reap;
#[cfg(feature = "tokio")]
mod turn_end;
mod uring;
mod wait;

pub use backend::{Backend, BackendInfo};
pub use buf::{IoBuf, IoBufMut};
pub use cancel::CancelResult;
pub use context::{Aio, Builder};
pub use fsync::SyncMode;
pub use future::{ListFuture, RequestFuture, SubmitFuture};
pub use list::{List, ListMode};
pub use notify::{Callback, Notify, SigVal, MAX_NOTIFY_THREADS, SI_ASYNCIO};
pub use op::{BorrowFd, Op, AIO_PRIO_DELTA_MAX};
pub use register::RegisteredFd;
pub use request::{AsRequestId, Completion, Request, RequestId};
pub use submit_fd::SubmitFd;
