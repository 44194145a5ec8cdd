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
//! `Shard::reap`), and so are C requests without one, on the caller's fd, which
//! the caller keeps open until they are done. For the others, a thread that submitted to an io_uring
//! context waits as it exits, at most [`EXIT_WAIT`], for those still in the
//! kernel whose fd was known when they were submitted to name a regular file
//! or block device: transfers that end on their own. A forked child's exit waits for
//! nothing (the list it inherits names its parent's rings).
//!
//! The thread that entered the ring is the one the kernel ties a request to,
//! and it is not always the submitter: a C request left in the submission
//! queue is entered by whoever calls the library next (it is issued again, as
//! above, when that thread's exit ends it).

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::engine::{Engine, Inner};
use super::table::State;

/// The longest a thread's exit waits for its requests.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Contexts a thread kept for the last time: more makes it forget those that
/// are gone.
const KEEP: usize = 16;

/// The contexts this thread submitted to; its exit waits for its requests
/// there. `pid` is the process that registered them: a child made by `fork`
/// inherits the list, and must not touch its parent's rings when it exits.
struct Watched {
    list: RefCell<Vec<Weak<Inner>>>,
    pid: Cell<u32>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        let list = std::mem::take(self.list.get_mut());
        if self.pid.get() != std::process::id() {
            return;
        }
        let tid = crate::sys::tid::current();
        let deadline = Instant::now() + EXIT_WAIT;
        for w in list {
            let Some(inner) = w.upgrade() else { continue };
            let mine = transfers_of(&inner, tid);
            if mine.is_empty() {
                continue;
            }
            // A timeout leaves the rest to the kernel, as before.
            let _ = inner.wait_until(Some(deadline), None, |c| {
                !mine
                    .iter()
                    .any(|&(i, g)| c.get(i, g).is_some_and(|s| s.state == State::Issued))
            });
        }
    }
}

/// The requests thread `tid` submitted to `inner` that are still in the kernel
/// without an fd copy of their own (one with a copy is issued again instead),
/// on an fd known at submission to name a file whose transfers end on their
/// own, unless the number names a pipe, socket or terminal now (`fstat`,
/// outside the lock: a number closed and reused by a pipe can keep its old
/// kind in the engine, and a pipe read may wait forever).
fn transfers_of(inner: &Inner, tid: u32) -> Vec<(u32, u32)> {
    let core = inner.lock();
    let found: Vec<(u32, u32, i32)> = core
        .slots
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s.state == State::Issued && s.submitter == tid && s.own_fd.is_none() && s.finite
        })
        .map(|(i, s)| (i as u32, s.gen, s.op.fd))
        .collect();
    drop(core);
    found
        .into_iter()
        // A closed number (EBADF) keeps its request: that reads the file it
        // was submitted on.
        .filter(|&(_, _, fd)| !names_pollable(fd))
        .map(|(i, g, _)| (i, g))
        .collect()
}

/// True if the number `fd` names a pipe, FIFO, socket or character device now.
/// The number may be closed, or reused, by the time of the call: it is only
/// `fstat`ed, by number (no borrow of an fd that may not be open).
fn names_pollable(fd: i32) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fstat` takes any number (a closed one gives EBADF) and writes
    // only into `st`, a buffer of the size it expects.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: `fstat` succeeded, so it filled `st`.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    matches!(mode, libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR)
}

thread_local! {
    /// The context this thread registered last (its address: the `Weak` in
    /// `WATCHED` keeps it from being reused), 0 for none.
    static LAST: Cell<usize> = const { Cell::new(0) };
    static WATCHED: Watched = const {
        Watched {
            list: RefCell::new(Vec::new()),
            pid: Cell::new(0),
        }
    };
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
        let pid = std::process::id();
        if w.pid.get() != pid {
            // New, or inherited from the parent by a forked child: start over.
            w.pid.set(pid);
            if let Ok(mut v) = w.list.try_borrow_mut() {
                v.clear();
            }
        }
        let Ok(mut v) = w.list.try_borrow_mut() else {
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
