//! A thread's exit waits for its io_uring requests on regular files.
//!
//! The kernel ties a request to the thread whose `io_uring_enter` took it, and
//! ends what that thread leaves unfinished when it exits: a buffered read
//! waiting for the disk then completes with EFAULT (its copy runs without the
//! process's memory), a request waiting for a kernel worker with ECANCELED. A
//! POSIX request belongs to the process, not to the thread that submitted it
//! (glibc's do not end with their thread).
//!
//! Requests with an fd copy of their own (still in the kernel after their
//! submitting call on a pipe, a socket or an fd not seen before; held back;
//! large transfers; every C request still in the kernel after its call) are
//! issued again by the reaper, on that copy, when they end so (see
//! `Shard::reap`). The others are transfers on fds known to name regular files
//! or block devices, which end on their own: a thread that submitted such
//! requests to an io_uring context waits for them as it exits, at most
//! [`EXIT_WAIT`].

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::engine::{Engine, Inner};
use super::table::{Core, State};

/// The longest a thread's exit waits for its requests.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Contexts a thread kept for the last time: more makes it forget those that
/// are gone.
const KEEP: usize = 16;

/// The contexts this thread submitted to; its exit waits for its requests there.
struct Watched(RefCell<Vec<Weak<Inner>>>);

impl Drop for Watched {
    fn drop(&mut self) {
        let tid = crate::sys::tid::current();
        let deadline = Instant::now() + EXIT_WAIT;
        for w in self.0.get_mut().drain(..) {
            if let Some(inner) = w.upgrade() {
                // A timeout leaves the rest to the kernel, as before.
                let _ = inner.wait_until(Some(deadline), None, |c| !waits_for(c, tid));
            }
        }
    }
}

/// True if thread `tid` submitted a request that is still in the kernel, has
/// no fd copy of its own (one with a copy is issued again instead) and is on
/// an fd known to name a file whose transfers end on their own (a regular
/// file, block device or directory: a read of a pipe may wait forever).
fn waits_for(core: &Core, tid: u32) -> bool {
    core.slots.iter().any(|s| {
        s.state == State::Issued
            && s.submitter == tid
            && s.own_fd.is_none()
            && core.known_not_pollable(s.op.fd)
    })
}

thread_local! {
    /// The context this thread registered last (its address: the `Weak` in
    /// `WATCHED` keeps it from being reused), 0 for none.
    static LAST: Cell<usize> = const { Cell::new(0) };
    static WATCHED: Watched = const { Watched(RefCell::new(Vec::new())) };
}

/// Makes the calling thread's exit wait for its requests in `inner` (once per
/// thread and context; a load and a compare after the first).
#[inline]
pub(crate) fn watch(inner: &Arc<Inner>) {
    let me = Arc::as_ptr(inner) as usize;
    if LAST.try_with(Cell::get).unwrap_or(me) == me {
        return;
    }
    if matches!(inner.engine, Engine::Uring(_)) {
        watch_slow(inner, me);
    }
}

#[cold]
fn watch_slow(inner: &Arc<Inner>, me: usize) {
    let _ = WATCHED.try_with(|w| {
        let Ok(mut v) = w.0.try_borrow_mut() else {
            return;
        };
        if v.len() >= KEEP {
            v.retain(|x| x.strong_count() > 0);
            // The address of one dropped here may be reused: look again.
            let _ = LAST.try_with(|l| l.set(0));
        }
        if !v.iter().any(|x| x.as_ptr() as usize == me) {
            v.push(Arc::downgrade(inner));
        }
        let _ = LAST.try_with(|l| l.set(me));
    });
}
