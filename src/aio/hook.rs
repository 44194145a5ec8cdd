//! Internal tracing hooks of the AIO engine.
//!
//! Every request passes through [`submit`], then either [`complete`] or [`cancel`]
//! (a cancelled request also passes [`complete`] with `-ECANCELED`); every
//! `lio_listio` call passes [`list_start`] and, when its last entry is final,
//! [`list_end`]. Each emits a system trace event (see [`crate::trace::catalog`]:
//! `aio_submit`, `aio_complete`, `aio_cancel`, `aio_list_start`, `aio_list_end`),
//! which costs one relaxed load and a branch when no trace stream runs.
//! They are called with the engine lock held, so they must stay cheap and must not
//! call back into `aio`.

use crate::trace::catalog as tc;

/// The operation a hook reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookOp {
    Read,
    Write,
    Fsync,
    Fdatasync,
}

impl HookOp {
    /// The `op` code in the trace payloads.
    #[inline(always)]
    fn code(self) -> u32 {
        match self {
            HookOp::Read => 0,
            HookOp::Write => 1,
            HookOp::Fsync => 2,
            HookOp::Fdatasync => 3,
        }
    }
}

/// Before a C submission (which may allocate): sets the calling thread up in
/// the trace streams that live now, and registers the events a reap emits,
/// so that the reaps of the thread's later `aio_error`, `aio_return` and
/// `aio_suspend`, which may run in a signal handler and record under
/// [`NoSetup`](crate::trace::system_events::NoSetup) (see [`signal_safe`]),
/// record them instead of counting them lost. A few loads when no stream
/// lives or the thread is set up already.
#[inline]
pub(crate) fn prepare_c_submission() {
    if crate::trace::system_events::prepare_thread() {
        for ev in [&tc::AIO_COMPLETE, &tc::AIO_LIST_END, &tc::AIO_NOTIFY_FAILED] {
            let _ = ev.id();
        }
    }
}

/// Starts a C reap that may run in a signal handler: until the guard is
/// dropped, the trace points of this thread neither set the thread up in a
/// stream nor register an event (each takes a lock and allocates); what they
/// cannot record is counted lost, and readers see the loss.
#[inline]
pub(crate) fn signal_safe() -> crate::trace::system_events::NoSetup {
    crate::trace::system_events::NoSetup::enter()
}

/// A request entered the engine (accepted, possibly queued).
#[inline(always)]
pub(crate) fn submit(id: u64, fd: i32, offset: i64, len: usize, op: HookOp, prio: i32) {
    tc::aio_submit(id, fd, op.code(), offset, len, prio);
}

/// A request reached its final state; `result` is bytes transferred or `-errno`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn complete(
    id: u64,
    fd: i32,
    offset: i64,
    len: usize,
    op: HookOp,
    result: i64,
    prio: i32,
) {
    tc::aio_complete(id, fd, op.code(), offset, len, result, prio);
}

/// A cancel was attempted on a request; `outcome` is `AIO_CANCELED`,
/// `AIO_NOTCANCELED` or `AIO_ALLDONE`.
#[inline(always)]
pub(crate) fn cancel(id: u64, fd: i32, offset: i64, len: usize, op: HookOp, outcome: i32) {
    tc::aio_cancel(id, fd, op.code(), offset, len, outcome);
}

/// A `SIGEV_SIGNAL` or `SIGEV_THREAD_ID` notification could not be queued
/// (`rt_sigqueueinfo` or `rt_tgsigqueueinfo` failed with `errno`: EAGAIN when
/// `RLIMIT_SIGPENDING` is reached, ESRCH when the thread has ended).
#[inline(always)]
pub(crate) fn notify_failed(signo: i32, errno: i32) {
    tc::aio_notify_failed(signo, errno);
}

/// A `lio_listio` call started with `entries` live entries.
#[inline(always)]
pub(crate) fn list_start(list: u32, entries: usize, wait: bool) {
    tc::aio_list_start(list, entries, wait);
}

/// Every entry of a `lio_listio` call is final.
#[inline(always)]
pub(crate) fn list_end(list: u32) {
    tc::aio_list_end(list);
}
