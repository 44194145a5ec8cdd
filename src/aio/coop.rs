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
//! lands in the loop's slowest 1%. A task thus yields after at most 515
//! requests that completed at once (512, and the 3 that only a thread-local
//! count sees: see [`begin`]). Outside a tokio runtime's tasks and
//! `block_on` (another executor on its own thread, a `spawn_blocking`
//! thread), under `tokio::task::unconstrained`, or without the `tokio`
//! feature, the budget is unlimited. Another executor polling inside a tokio
//! task sees that task's budget: a future that finds it spent wakes that
//! executor and goes on at its next poll (see [`begin`]).

use std::task::{Context, Poll};

#[cfg(feature = "tokio")]
pub(super) use tokio::task::coop::{poll_proceed, RestoreOnPending as Unit};

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

/// A poll's claim on the task's budget, from [`begin`] to [`Spend::ready`].
pub(super) struct Spend {
    /// Requests done on this thread since it last spent a unit, before this poll.
    done: u32,
    /// This poll asked tokio (a `Ready` from it spends a unit).
    asked: bool,
    unit: Option<Unit>,
}

/// The start of a poll of a request future: `None` if the task's budget is
/// spent, and the poll must return `Pending` without doing anything (the task
/// is woken at once as well as after tokio's other tasks and driver, and
/// `yielded` set, so that the next poll of the same future runs whatever the
/// budget). The poll then ends with [`Spend::ready`], or drops the `Spend`.
///
/// Only the poll that would spend a unit (one of [`PER_UNIT`] done, a
/// thread-local count tells which) asks tokio: the others go on at once. So
/// a task whose requests complete at once yields after at most `PER_UNIT - 1`
/// more of them than its budget pays for.
///
/// (Another executor polling inside a tokio task or `block_on` sees that
/// task's budget, which nothing refreshes while it blocks: without the wake
/// it would wait for a wake-up tokio gives only after its poll, and without
/// `yielded` it would be refused again.)
#[inline(always)]
pub(super) fn begin(cx: &mut Context<'_>, yielded: &mut bool) -> Option<Spend> {
    // (Outside the thread's life, when the count cannot be read: ask tokio.)
    let done = DONE.try_with(std::cell::Cell::get).unwrap_or(PER_UNIT);
    let asked = done + 1 >= PER_UNIT;
    let unit = if asked {
        match poll_proceed(cx) {
            Poll::Ready(unit) => Some(unit),
            Poll::Pending if !*yielded => {
                *yielded = true;
                cx.waker().wake_by_ref();
                return None;
            }
            Poll::Pending => None,
        }
    } else {
        None
    };
    *yielded = false;
    Some(Spend { done, asked, unit })
}

impl Spend {
    /// The poll returns `Ready`: counted, and a unit spent for every
    /// [`PER_UNIT`]. (A poll that returns `Pending` drops its `Spend`
    /// instead, which gives a unit it took back.)
    ///
    /// Called before the result is made, not after: the result then goes
    /// straight to the caller, with no copy kept for this call.
    #[inline(always)]
    pub(super) fn ready(self) {
        let n = if self.asked { 0 } else { self.done + 1 };
        let _ = DONE.try_with(|d| d.set(n));
        if let Some(unit) = self.unit {
            unit.made_progress();
        }
    }
}
