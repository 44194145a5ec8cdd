//! # posixrt: the POSIX real-time toolbox for Linux, at modern kernel speed
//!
//! `posixrt` gives Linux services the POSIX real-time facilities with Rust types and
//! errors that tell the fix:
//!
//! | module | what it covers |
//! |---|---|
//! | [`sched`] | policies and priorities, RR quantum, yield, spawn with attributes applied at creation, affinity, SCHED_DEADLINE, memory locking and the RT setup checklist, periodic timers |
//! | [`sync`] | PI, priority-ceiling, normal and recursive mutexes, condvars, semaphores, rwlocks; tracking with info, statistics, waiters and deadlock detection, readable by `rtstat` from another process |
//! | [`aio`] | POSIX asynchronous I/O on io_uring, with a thread-pool fallback |
//! | [`trace`] | the POSIX trace facility: streams, filters, logs, analysis |
//! | [`advise`] | fadvise, fallocate, madvise, aligned buffers, the fsync family |
//! | [`mark`] | thread fingerprints readable from other processes |
//!
//! Every fallible call returns [`Result`], whose [`Error`] carries the errno, the
//! failing call and a hint.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod error;

pub mod advise;
pub mod aio;
pub mod mark;
pub mod sched;
pub mod sync;
pub mod trace;

#[doc(hidden)]
pub mod registry;

pub use error::{Error, ErrorKind, Result};
