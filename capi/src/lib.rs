//! `libposixrt`: a drop-in replacement for glibc's POSIX AIO (`aio_read`,
//! `aio_write`, `aio_fsync`, `aio_error`, `aio_return`, `aio_suspend`,
//! `aio_cancel`, `lio_listio`, `aio_init` and their `*64` aliases) with glibc's
//! `struct aiocb` ABI, running on posixrt's AIO engine (io_uring, with the thread
//! pool as fallback).
//!
//! Link with `-lposixrt`, or run an unchanged program under
//! `LD_PRELOAD=libposixrt.so`. See `capi/README.md` for what differs from glibc.
//!
//! Nothing runs at load time: the engine starts on the first request, and a
//! forked child starts a fresh one. The library prints nothing unless
//! `POSIXRT_AIO_DEBUG` is set.

#![deny(unsafe_op_in_unsafe_fn)]

mod aio;
mod alias;
mod debug;
mod init;
mod nocancel;
mod notify;
mod notify_retry;
mod notify_spawn;
mod offset;
mod restart;
mod suspend;
mod thread_attr;
mod trace;

pub use aio::*;
pub use alias::*;
pub use init::*;
pub use suspend::*;
