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
//! requests that completed at once. Outside a tokio runtime's tasks and
//! `block_on` (another executor on its own thread, a `spawn_blocking`
//! thread), under `tokio::task::unconstrained`, or without the `tokio`
//! feature, the budget is unlimited. Another executor polling inside a tokio
//! task sees that task's budget: a future that finds it spent wakes that
//! executor and goes on at its next poll (see [`budgeted`]).

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

/// Runs `poll` if the task has budget left, and spends a unit for every
/// [`PER_UNIT`] polls on this thread that returned `Ready`. If the budget is
/// spent: `Pending` without running it, the task woken at once as well as
/// after tokio's other tasks and driver, and `yielded` set, so that the next
/// poll of the same future runs whatever the budget. (Another executor
/// polling inside a tokio task or `block_on` sees that task's budget, which
/// nothing refreshes while it blocks: without the wake it would wait for a
/// wake-up tokio gives only after its poll, and without `yielded` it would
/// be refused again.)
#[inline]
pub(super) fn budgeted<T>(
    cx: &mut Context<'_>,
    yielded: &mut bool,
    poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
) -> Poll<T> {
    let unit = match poll_proceed(cx) {
        Poll::Ready(unit) => Some(unit),
        Poll::Pending if !*yielded => {
            *yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Pending => None,
    };
    *yielded = false;
    let r = poll(cx);
    if let (true, Some(unit)) = (r.is_ready(), unit) {
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
