//! `SIGEV_THREAD` notifications whose thread could not be created for the
//! moment (`pthread_create` failed with EAGAIN: `RLIMIT_NPROC`, the system's
//! thread limit, a pids cgroup, or no memory for the stack): kept, and tried
//! again on a thread of their own, with pauses that grow to [`MAX_PAUSE`],
//! each for [`RETRY_FOR`]. glibc gives such a notification up at the first
//! failure.
//!
//! The creation runs on whichever thread completes the request (a program's
//! thread inside `aio_read` or `aio_suspend`, or one of the library's): it
//! cannot wait there. The retry thread is started at the first failure; where
//! it cannot be started either (the same limit), each later notification
//! tries to start it again. A forked child drops its parent's queue (those
//! requests are the parent's); where the parent's retry thread held the
//! queue's lock at the fork, the child has no queue, and loses a
//! notification it cannot start, as glibc would. A leaf over `debug`: `notify` hands it the
//! creation to try, so that the two import nothing from each other both ways.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use crate::debug::debug;

/// How long a notification whose thread cannot be created (EAGAIN) is tried
/// again before it is given up.
const RETRY_FOR: Duration = Duration::from_secs(30);
/// The first pause before a try; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(100);

/// Tries once to start the notification thread for `arg`; the errno on
/// failure (and `arg` is still the caller's).
pub(crate) type Create = unsafe fn(arg: usize) -> Result<(), i32>;
/// Frees `arg`, whose thread was never created.
pub(crate) type Forget = unsafe fn(arg: usize);

struct Entry {
    arg: usize,
    since: Instant,
    create: Create,
    forget: Forget,
}

struct State {
    queue: VecDeque<Entry>,
    /// The process the entries belong to: a child of `fork` drops its
    /// parent's (their requests are the parent's, and notify there).
    owner: u32,
    /// A retry thread of `owner` runs.
    running: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    queue: VecDeque::new(),
    owner: 0,
    running: false,
});

/// Entries queued (in some process: a child of fork sees its parent's count
/// until it looks under the lock), read without the lock by [`kick`].
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// The process that last used [`STATE`] (0: none yet), set before it takes
/// the lock: a forked child that finds another's may find the lock held by a
/// thread that does not exist there (the retry thread, inside its try).
static USER: AtomicU32 = AtomicU32::new(0);

/// True for a `pthread_create` failure that may pass: EAGAIN (ENOMEM where
/// the default attribute object could not be made).
pub(crate) fn transient(errno: i32) -> bool {
    errno == libc::EAGAIN || errno == libc::ENOMEM
}

/// The queue, as this process's: `None` in a forked child whose parent's
/// thread held the lock at the fork (held forever there).
fn state() -> Option<MutexGuard<'static, State>> {
    let me = std::process::id();
    let user = USER.load(Ordering::Relaxed);
    let mut st = if user == 0 || user == me {
        // (SeqCst: seen, in a child, by any fork after the lock is taken.)
        USER.store(me, Ordering::SeqCst);
        STATE.lock().unwrap_or_else(|p| p.into_inner())
    } else {
        match STATE.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        }
    };
    USER.store(me, Ordering::Relaxed);
    if st.owner != me {
        // A forked child's copy of its parent's queue: not its notifications
        // (freed, they are this process's copies), and no retry thread here.
        while let Some(e) = st.queue.pop_front() {
            // SAFETY: the entry's thread was never created in this process.
            unsafe { (e.forget)(e.arg) };
        }
        QUEUED.store(0, Ordering::Relaxed);
        st.owner = me;
        st.running = false;
    }
    Some(st)
}

/// Keeps the notification for `arg`, whose thread could not be created just
/// now, to be tried again.
pub(crate) fn defer(arg: usize, create: Create, forget: Forget) {
    let Some(mut st) = state() else {
        // SAFETY: the thread was not created: `arg` is still ours.
        unsafe { forget(arg) };
        debug(format_args!(
            "SIGEV_THREAD: no retry queue in this forked child; notification lost"
        ));
        return;
    };
    st.queue.push_back(Entry {
        arg,
        since: Instant::now(),
        create,
        forget,
    });
    QUEUED.fetch_add(1, Ordering::Relaxed);
    start(&mut st);
}

/// For a notification whose thread was created: if notifications wait to be
/// tried again without a retry thread (it could not be started), tries to
/// start it once more. One load when none waits.
#[inline]
pub(crate) fn kick() {
    if QUEUED.load(Ordering::Relaxed) != 0 {
        if let Some(mut st) = state() {
            start(&mut st);
        }
    }
}

/// Starts the retry thread unless it runs or nothing waits.
fn start(st: &mut State) {
    if st.running || st.queue.is_empty() {
        return;
    }
    // Like the library's other threads, it takes no signal (the program may
    // wait for one with `sigwaitinfo`); the threads it creates set their own
    // mask.
    let old = block_all();
    let r = std::thread::Builder::new()
        .name("posixrt-aio-nretry".into())
        .stack_size(128 << 10)
        .spawn(run);
    set_mask(&old);
    match r {
        Ok(_) => st.running = true,
        Err(e) => debug(format_args!(
            "SIGEV_THREAD: no thread to try notifications again ({e}); the next notification tries"
        )),
    }
}

/// The retry thread: tries the entries in order after each pause, until none
/// is left.
fn run() {
    let mut pause = FIRST_PAUSE;
    loop {
        std::thread::sleep(pause);
        // (This thread's own process: the lock is free or held by a live
        // thread.)
        let Some(mut st) = state() else {
            return;
        };
        while let Some(e) = st.queue.front() {
            // SAFETY: `create` and `arg` were handed over together by `defer`.
            let r = unsafe { (e.create)(e.arg) };
            match r {
                Ok(()) => pause = FIRST_PAUSE,
                Err(errno) if transient(errno) && e.since.elapsed() < RETRY_FOR => break,
                Err(errno) => {
                    // SAFETY: the thread was not created: `arg` is still ours.
                    unsafe { (e.forget)(e.arg) };
                    debug(format_args!(
                        "SIGEV_THREAD: pthread_create failed with errno {errno}; notification lost"
                    ));
                }
            }
            st.queue.pop_front();
            QUEUED.fetch_sub(1, Ordering::Relaxed);
        }
        if st.queue.is_empty() {
            st.running = false;
            return;
        }
        drop(st);
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Blocks every signal in the calling thread; returns the mask before.
pub(crate) fn block_all() -> libc::sigset_t {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `all`; pthread_sigmask reads it and
    // writes the old mask into `old` (it cannot fail with valid arguments).
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
        old.assume_init()
    }
}

/// Gives the calling thread the signal mask `m`.
pub(crate) fn set_mask(m: &libc::sigset_t) {
    // SAFETY: `m` is a valid signal set the call only reads.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, m, std::ptr::null_mut()) };
}
