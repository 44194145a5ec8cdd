//! Signals: queueing a signal with a chosen `si_code` to this process
//! (`rt_sigqueueinfo`) or to one of its threads (`rt_tgsigqueueinfo`), the
//! way an AIO completion is reported.
//!
//! # References
//! - [`rt_sigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_sigqueueinfo.2.html)
//! - [`sigqueue`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sigqueue.html)

use std::sync::atomic::{AtomicU64, Ordering};

/// The kernel's `siginfo_t` for a queued signal (`_rt` member of the union).
#[repr(C)]
struct KernelSigInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    _rest: [u8; 128 - 32],
}

/// `rt_sigqueueinfo(getpid(), signo, {si_code: code, si_value: value})`: queues
/// `signo` to this process. A negative `code` (such as `SI_ASYNCIO`) is always
/// allowed towards one's own process, but is subject to `RLIMIT_SIGPENDING`
/// (EAGAIN when the queue is full), even for root.
///
/// Returns the errno of a failed call.
///
/// # References
/// - [`rt_sigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_sigqueueinfo.2.html)
pub(crate) fn queue_to_self(signo: i32, code: i32, value: usize) -> Result<(), i32> {
    queue(signo, code, value, None)
}

/// `rt_tgsigqueueinfo(getpid(), gettid(), ...)`: as [`queue_to_self`], but to
/// the calling thread only.
///
/// # References
/// - [`rt_tgsigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_tgsigqueueinfo.2.html)
#[doc(alias = "rt_tgsigqueueinfo")]
pub(crate) fn queue_to_this_thread(signo: i32, code: i32, value: usize) -> Result<(), i32> {
    queue(signo, code, value, Some(super::tid::current() as i32))
}

/// `rt_tgsigqueueinfo(getpid(), tid, ...)`: as [`queue_to_self`], but to
/// thread `tid` of this process only (ESRCH if it has no such thread).
///
/// # References
/// - [`rt_tgsigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_tgsigqueueinfo.2.html)
pub(crate) fn queue_to_thread(tid: i32, signo: i32, code: i32, value: usize) -> Result<(), i32> {
    queue(signo, code, value, Some(tid))
}

/// True if `tid` is a thread of this process (`tgkill` with the null signal,
/// which only checks).
///
/// # References
/// - [`tgkill(2)`](https://man7.org/linux/man-pages/man2/tgkill.2.html)
pub(crate) fn is_thread_of_process(tid: i32) -> bool {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    // SAFETY: tgkill with signal 0 takes plain integers and sends nothing.
    tid > 0 && unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, 0) } == 0
}

/// Enters the kernel once (`rt_sigprocmask` reading the mask): on the way back,
/// the kernel runs the handlers of the signals pending for the calling thread,
/// as at the end of any system call. (A signal sent to a thread that runs in
/// user space is otherwise handled when an interrupt reaches it, a little
/// later.)
pub(crate) fn handle_pending() {
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a null set only reads the mask into `old`, which has room.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), old.as_mut_ptr()) };
}

/// True if the calling thread is the process's main thread (its tid is the
/// pid), the one a signal sent to the process goes to when it does not block it.
pub(crate) fn is_main_thread() -> bool {
    super::tid::current() as i32 == rustix::process::getpid().as_raw_nonzero().get()
}

fn queue(signo: i32, code: i32, value: usize, tid: Option<i32>) -> Result<(), i32> {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let info = KernelSigInfo {
        signo,
        errno: 0,
        code,
        _pad: 0,
        pid,
        uid: rustix::process::getuid().as_raw(),
        value,
        _rest: [0; 96],
    };
    let info = &info as *const KernelSigInfo;
    // SAFETY: rt_sigqueueinfo and rt_tgsigqueueinfo read a 128-byte siginfo
    // from `info`, which is valid for the call; the rest are plain integers.
    let r = unsafe {
        match tid {
            None => libc::syscall(libc::SYS_rt_sigqueueinfo, pid, signo, info),
            Some(tid) => libc::syscall(libc::SYS_rt_tgsigqueueinfo, pid, tid, signo, info),
        }
    };
    if r < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN))
    } else {
        Ok(())
    }
}

/// Every signal blocked in the calling thread, until dropped: then the
/// thread's previous mask is back, and a signal that came meanwhile and is not
/// blocked there any more is handled at once. Not `Send`: the mask is the
/// thread's.
///
/// # References
/// - [`pthread_sigmask`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_sigmask.html)
pub(crate) struct AllBlocked(Option<libc::sigset_t>, std::marker::PhantomData<*const ()>);

/// Blocks every signal in the calling thread (`pthread_sigmask(SIG_BLOCK)` with
/// a full set; glibc keeps its internal ones) until the guard is dropped.
#[doc(alias = "pthread_sigmask")]
pub(crate) fn block_all() -> AllBlocked {
    if ALL_BLOCKED.get() {
        // Blocked already, for good: no system call.
        return AllBlocked(None, std::marker::PhantomData);
    }
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `all`.
    let all = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        all.assume_init()
    };
    block(&all)
}

/// Blocks the signals of `set` in the calling thread until the guard is
/// dropped.
fn block(set: &libc::sigset_t) -> AllBlocked {
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: pthread_sigmask reads `set` and writes `old`, both valid for the
    // call, and changes only this thread.
    let ok = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, old.as_mut_ptr()) == 0 };
    // SAFETY: `old` was written by the successful call.
    AllBlocked(
        ok.then(|| unsafe { old.assume_init() }),
        std::marker::PhantomData,
    )
}

impl AllBlocked {
    /// The thread's mask before the guard (None if nothing was blocked
    /// here): a sleep that takes it (`ppoll`) is woken by
    /// the signals it lets through, also one that came while they were
    /// blocked.
    pub(crate) fn old(&self) -> Option<&libc::sigset_t> {
        self.0.as_ref()
    }

    /// True if `signo` was blocked in the thread before (or the mask could not
    /// be read: then nothing was blocked here). Inside a [`WaitMask`], "before"
    /// is the program's mask, from before the wait.
    pub(crate) fn was_blocked(&self, signo: i32) -> bool {
        if let Some(outer) = OUTER.get() {
            // SAFETY: `outer` is a mask read by `pthread_sigmask`.
            return unsafe { libc::sigismember(&outer, signo) == 1 };
        }
        match &self.0 {
            // SAFETY: `old` is a mask read by `pthread_sigmask`.
            Some(old) => unsafe { libc::sigismember(old, signo) == 1 },
            None => true,
        }
    }
}

impl Drop for AllBlocked {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores a mask read by `pthread_sigmask`; this thread only.
            unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
        }
    }
}

/// Every signal blocked in the calling thread for a wait that lets them
/// through only while it sleeps (see `sys::poll`), until dropped. While it
/// lives, [`AllBlocked::was_blocked`] answers for the program's mask. The
/// second field is true for the outermost one (which recorded that mask): a
/// wait inside a wait (a handler's `aio_suspend`) finds the program's mask
/// recorded already, and must neither replace it nor forget it when it ends.
pub(crate) struct WaitMask(AllBlocked, bool);

/// Signal numbers (bit `n - 1` for signal `n`) that [`block_for_wait`]
/// leaves unblocked: those of AIO completion notifications.
static WAIT_PASS: AtomicU64 = AtomicU64::new(0);

/// `signo` notifies AIO completions: interruptible waits leave it unblocked.
/// The kernel gives a process signal to the main thread when that thread
/// does not block it, so a main thread waiting for its request takes the
/// request's signal before its wait returns (glibc's order), even if it is
/// awake between two sleeps when the signal comes.
pub(crate) fn pass_in_waits(signo: i32) {
    if (1..=64).contains(&signo) {
        let bit = 1u64 << (signo - 1);
        if WAIT_PASS.load(Ordering::Relaxed) & bit == 0 {
            WAIT_PASS.fetch_or(bit, Ordering::Relaxed);
        }
    }
}

/// Blocks the signals for an interruptible wait (see [`WaitMask`]): every
/// one but those of completion notifications (see [`pass_in_waits`]; a
/// handler of theirs that runs while the thread is awake between two sleeps
/// goes unseen by the wait).
pub(crate) fn block_for_wait() -> WaitMask {
    if ALL_BLOCKED.get() {
        return WaitMask(AllBlocked(None, std::marker::PhantomData), false);
    }
    let pass = WAIT_PASS.load(Ordering::Relaxed);
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `set`; sigdelset edits it in place.
    let set = unsafe {
        libc::sigfillset(set.as_mut_ptr());
        for s in (1..=64).filter(|s| pass & (1u64 << (s - 1)) != 0) {
            libc::sigdelset(set.as_mut_ptr(), s);
        }
        set.assume_init()
    };
    let g = block(&set);
    let outermost = OUTER.get().is_none();
    match g.old() {
        Some(old) if outermost => OUTER.set(Some(*old)),
        _ => {}
    }
    WaitMask(g, outermost)
}

impl WaitMask {
    /// The mask to sleep with: the program's (None if nothing was blocked).
    pub(crate) fn sleep_mask(&self) -> Option<&libc::sigset_t> {
        self.0.old()
    }

    /// True if a signal that the program's mask lets through, and that has a
    /// handler, is pending (a sleep that ended for another reason first, such
    /// as a completion already there, did not take it): its handler runs when
    /// the guard is dropped. (An ignored signal, `SIG_IGN` or ignored by
    /// default, also stays pending while blocked, and is dropped unseen when
    /// the mask is back: no handler runs, so it is not counted.)
    pub(crate) fn due(&self) -> bool {
        let Some(old) = self.0.old() else {
            return false;
        };
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigpending writes the pending set into `set`, which has room.
        if unsafe { libc::sigpending(set.as_mut_ptr()) } != 0 {
            return false;
        }
        // SAFETY: written by the successful call above.
        let set = unsafe { set.assume_init() };
        (1..=64).any(|s| {
            // SAFETY: both are masks read from the kernel; any number is valid.
            let due = unsafe { libc::sigismember(&set, s) == 1 && libc::sigismember(old, s) != 1 };
            due && has_handler(s)
        })
    }
}

/// True if `signo` has a handler installed (neither `SIG_DFL` nor `SIG_IGN`).
fn has_handler(signo: i32) -> bool {
    let mut act = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `act`.
    if unsafe { libc::sigaction(signo, std::ptr::null(), act.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: filled in by the successful call.
    let h = unsafe { act.assume_init() }.sa_sigaction;
    h != libc::SIG_DFL && h != libc::SIG_IGN
}

impl Drop for WaitMask {
    fn drop(&mut self) {
        if self.1 {
            OUTER.set(None);
        }
        // (Then the guard restores the program's mask: a handler due runs.)
    }
}

thread_local! {
    /// The program's mask while a [`WaitMask`] blocks every signal.
    static OUTER: std::cell::Cell<Option<libc::sigset_t>> = const { std::cell::Cell::new(None) };
    /// This thread blocks every signal for its whole life (see
    /// [`spawn_all_blocked`]).
    static ALL_BLOCKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Spawns a library thread named `name` that runs `f` with every signal
/// blocked for its whole life (it runs no code of the program): no handler
/// runs on it, and [`block_all`] costs it nothing.
pub(crate) fn spawn_all_blocked<F>(name: String, f: F) -> std::io::Result<()>
where
    F: FnOnce() + Send + 'static,
{
    // The thread starts with this mask.
    let _blocked = block_all();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            ALL_BLOCKED.set(true);
            f()
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's mask has `signo` blocked.
    fn blocked_now(signo: i32) -> bool {
        let mut m = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: a null set only reads the mask into `m`, which has room;
        // sigismember then reads the mask it wrote.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
            libc::sigismember(m.as_ptr(), signo) == 1
        }
    }

    /// A wait inside a wait (an async-signal-safe `aio_suspend` called by a
    /// handler that ran while the thread slept in one): while the inner one
    /// lives, and after it, "blocked before" still means the program's mask,
    /// not the mask the outer wait set.
    #[test]
    fn a_nested_wait_keeps_the_programs_mask() {
        let sig = libc::SIGWINCH;
        let got = std::thread::spawn(move || {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: sigemptyset initialises the set sigaddset edits;
            // pthread_sigmask reads it and changes this thread only.
            unsafe {
                libc::sigemptyset(set.as_mut_ptr());
                libc::sigaddset(set.as_mut_ptr(), sig);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
            }
            let outer = block_for_wait();
            let inner = block_for_wait();
            let during = block_all().was_blocked(sig);
            drop(inner);
            let after = block_all().was_blocked(sig);
            drop(outer);
            (during, after, blocked_now(sig))
        })
        .join()
        .expect("the test thread");
        assert_eq!(
            got,
            (false, false, false),
            "(blocked before, inside the inner wait; after it; at the end)"
        );
    }

    /// A thread from `spawn_all_blocked` starts with every signal blocked and
    /// keeps them so across `block_all` guards, which report every signal as
    /// blocked before (a signal sender there never queues to itself).
    #[test]
    fn spawned_thread_blocks_every_signal_for_good() {
        let (tx, rx) = std::sync::mpsc::channel();
        spawn_all_blocked("test-blocked".into(), move || {
            let at_start = blocked_now(libc::SIGUSR1) && blocked_now(libc::SIGRTMIN());
            let guard = block_all();
            let reported = guard.was_blocked(libc::SIGUSR1);
            drop(guard);
            let after = blocked_now(libc::SIGUSR1) && blocked_now(libc::SIGRTMIN());
            let _ = tx.send((at_start, reported, after));
        })
        .expect("spawn");
        let got = rx.recv().expect("the thread reports");
        assert_eq!(
            got,
            (true, true, true),
            "(at start, reported, after a guard)"
        );
        // Elsewhere a guard restores the mask it found.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let before = blocked_now(libc::SIGUSR1);
            drop(block_all());
            let _ = tx.send((before, blocked_now(libc::SIGUSR1)));
        });
        let (before, after) = rx.recv().expect("the thread reports");
        assert_eq!(before, after, "a guard restores the mask");
    }
}
