//! Internal tracing hooks of the AIO engine.
//!
//! Every request passes through [`submit`], then either [`complete`] or [`cancel`]
//! (a cancelled request also passes [`complete`] with `-ECANCELED`); every
//! `lio_listio` call passes [`list_start`] and, when its last entry is final,
//! [`list_end`]. They are no-ops today; the trace module wires them to trace events.
//! They are called with the engine lock held, so they must stay cheap and must not
//! call back into `aio`.

#![allow(unused_variables)]

/// The operation a hook reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookOp {
    Read,
    Write,
    Fsync,
    Fdatasync,
}

/// A request entered the engine (accepted, possibly queued).
#[inline(always)]
pub(crate) fn submit(id: u64, fd: i32, offset: i64, len: usize, op: HookOp) {}

/// A request reached its final state; `result` is bytes transferred or `-errno`.
#[inline(always)]
pub(crate) fn complete(id: u64, fd: i32, offset: i64, len: usize, op: HookOp, result: i64) {}

/// A cancel was attempted on a request; `outcome` is `AIO_CANCELED`,
/// `AIO_NOTCANCELED` or `AIO_ALLDONE`.
#[inline(always)]
pub(crate) fn cancel(id: u64, fd: i32, offset: i64, len: usize, op: HookOp, outcome: i32) {}

/// A `lio_listio` call started with `entries` live entries.
#[inline(always)]
pub(crate) fn list_start(list: u32, entries: usize, wait: bool) {}

/// Every entry of a `lio_listio` call is final.
#[inline(always)]
pub(crate) fn list_end(list: u32) {}
