//! The futures' share of tokio's task budget (cooperative scheduling).
//!
//! A cached read on io_uring completes while it is entered, so a request
//! future is often ready at its first poll: a task that awaits such reads in
//! a loop would never hand the thread back, and the runtime's other tasks,
//! timers and I/O would wait for the whole loop. So each poll of a request
//! future first takes a unit of the task's budget, as tokio's own I/O types
//! do: once the task has spent it (128 units per task poll), the future
//! returns `Pending` without doing anything, and tokio polls the task again
//! after the others. A poll that returns `Pending` gives its unit back.
//! Outside a tokio runtime (another executor), or without the `tokio`
//! feature, the budget is unlimited.

use std::task::{Context, Poll};

#[cfg(feature = "tokio")]
pub(super) use tokio::task::coop::poll_proceed;

/// A unit of an unlimited budget (no `tokio` feature).
#[cfg(not(feature = "tokio"))]
pub(super) struct Unit;

#[cfg(not(feature = "tokio"))]
impl Unit {
    /// Keeps the unit spent (no-op).
    #[inline]
    pub(super) fn made_progress(&self) {}
}

/// Takes a unit of the task's budget: `Pending` (the task woken to run
/// again later) if none is left.
#[cfg(not(feature = "tokio"))]
#[inline]
pub(super) fn poll_proceed(_cx: &mut Context<'_>) -> Poll<Unit> {
    Poll::Ready(Unit)
}

/// Runs `poll` with a unit of the task's budget, spent if it returns `Ready`
/// and given back otherwise; `Pending` without running it if the task has no
/// unit left.
#[inline]
pub(super) fn budgeted<T>(
    cx: &mut Context<'_>,
    poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
) -> Poll<T> {
    let Poll::Ready(unit) = poll_proceed(cx) else {
        return Poll::Pending;
    };
    let r = poll(cx);
    if r.is_ready() {
        unit.made_progress();
    }
    r
}
