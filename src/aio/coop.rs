//! The futures' share of tokio's task budget (cooperative scheduling).
//!
//! A cached read on io_uring completes while it is entered, so a request
//! future is often ready at its first poll: a task that awaits such reads in
//! a loop would never hand the thread back, and the runtime's other tasks,
//! timers and I/O (a `tokio::time::timeout` around the loop) would wait for
//! the whole loop. So each poll of a request future first asks for the task's
//! budget, as tokio's own I/O types do: once the task has spent it (128 units
//! per task poll), the future returns `Pending` without doing anything, and
//! tokio polls the task again after the others and its driver.
//!
//! A unit pays for [`PER_UNIT`] (4) requests done, not one: such a request
//! costs about a microsecond, and the yield about as much again or more
//! (tokio polls its driver: 1.2–3.6 µs measured here), so a yield every 128
//! reads would add 1–2% to a loop of them, and every one of those yields
//! lands in the loop's slowest 1%. A task thus yields after at most 512
//! requests that completed at once. Outside a tokio runtime (another
//! executor), or without the `tokio` feature, the budget is unlimited.

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

/// Requests done per unit of the budget.
pub(super) const PER_UNIT: u32 = 4;

thread_local! {
    /// Requests done on this thread since it last spent a unit.
    static DONE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Runs `poll` if the task has budget left (`Pending` otherwise, without
/// running it), and spends a unit for every [`PER_UNIT`] polls on this thread
/// that returned `Ready`.
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
        let n = DONE.try_with(|d| {
            let n = d.get() + 1;
            d.set(if n >= PER_UNIT { 0 } else { n });
            n
        });
        if n.map_or(true, |n| n >= PER_UNIT) {
            unit.made_progress();
        }
    }
    r
}
