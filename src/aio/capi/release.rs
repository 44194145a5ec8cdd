//! The release of the engine lock by a C call that may run in a signal
//! handler: `aio_error`, `aio_return` and `aio_suspend`, which POSIX makes
//! async-signal-safe, reap the rings when a request they look at is still in
//! progress (unless their thread is inside the library already).
//!
//! The handler may have interrupted `malloc` or `free` (glibc's per-thread
//! cache, an arena lock): what such a reap and its release do must allocate
//! nothing, free nothing, start no thread and take no lock but the engine's.
//! The reap pushes notifications into `Core::fires`, whose room is made when
//! a request that notifies is submitted ([`room_for_fires`]) and never given
//! back (`Inner::release_slow` moves callbacks out into a list of their own).
//! The release ([`release_signal_safe`]) sends the signals in place, writes
//! the waiters' eventfds without copying their list, and leaves the
//! `SIGEV_THREAD` callbacks (which start a thread, from a boxed closure) in
//! the core for the completion thread, which it wakes: that thread's next
//! release runs them.

use super::super::engine::{nothing_to_wake, CoreGuard, Inner};
use super::super::notify::send_signals;
use super::super::sleep::WAIT_FDS;
use super::super::table::Core;

/// [`Inner::release`] for a C call that may run in a signal handler: sends
/// the signals and wakes the waiters as `release` does, writing the eventfds
/// of interruptible waiters before the lock is released (no copy of their
/// list is made); callbacks (`SIGEV_THREAD`) and wakers stay in the core, and
/// the completion thread is woken to run them in its own release. Allocates
/// nothing, frees nothing, starts no thread, takes no lock.
///
/// Only a reap leaves callbacks there: on io_uring, where a request with a
/// callback started the completion thread (see `CEngine::submit`); the
/// thread engine's workers complete and release requests themselves. The C
/// engine has no wakers.
#[inline]
pub(super) fn release_signal_safe(inner: &Inner, mut core: CoreGuard<'_>) {
    if nothing_to_wake(&mut core) {
        drop(core);
        return;
    }
    release_slow(inner, core)
}

/// [`release_signal_safe`] with something to wake or fire.
#[inline(never)]
fn release_slow(inner: &Inner, mut core: CoreGuard<'_>) {
    let wake_cond = inner.nudge_reaper(&mut core);
    // In place: the signals' entries go, the callbacks' stay. (Before the
    // lock is released, as `Inner::release` sends them: glibc's order.)
    let blocked = send_signals(&mut core.fires, &inner.notify_failed);
    if core.completed {
        // Under the lock, after the signals: a woken waiter looks under it,
        // so it cannot see a request done before its signal was sent.
        for fd in &core.wait_fds {
            let _ = rustix::io::write(&**fd, &1u64.to_ne_bytes());
        }
    }
    core.completed = false;
    let left = !core.fires.is_empty() || !core.wakers.is_empty();
    drop(core);
    if wake_cond {
        inner.wake_waiters();
    }
    drop(blocked);
    if left {
        inner.wake_completion_thread();
    }
}

/// Makes room in `Core::fires` for every notification that the requests and
/// lists live now can fire, so that a reap, which may run in a signal
/// handler, never grows it. Call with the lock held when a request that
/// notifies is submitted: each live slot fires at most once for itself and
/// once for its list, and a request submitted later without a notification
/// fires nothing.
pub(super) fn room_for_fires(core: &mut Core) {
    let most = 2 * core.slots.len();
    if core.fires.capacity() - core.fires.len() < most {
        core.fires.reserve(most);
    }
}

/// Makes room in `Core::wait_fds` for the wait eventfd of every live thread
/// that has one, so that a C wait that sleeps on its thread's eventfd, which
/// may run in a signal handler, never grows the list (a wait that finds no
/// room sleeps on the futex instead). Call with the lock held when a thread
/// made its eventfd ahead of its waits (its first C submission: see
/// `sleep::prepare_wait_fd`).
pub(super) fn room_for_wait_fds(core: &mut Core) {
    let most = WAIT_FDS.load(std::sync::atomic::Ordering::Relaxed);
    if core.wait_fds.capacity() < most {
        core.wait_fds.reserve(most - core.wait_fds.len());
    }
}
