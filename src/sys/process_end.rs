//! The end of a process: a hook that runs on the fatal signals SIGINT, SIGTERM,
//! SIGSEGV and SIGABRT before the signal takes its previous course, and blocking
//! those signals in a helper thread (so the hook never runs there).
//!
//! The handler calls one async-signal-safe hook, then gives the signal the
//! disposition it had before: a handler the program installed earlier is called
//! (with its own signature; our handler stays installed, unless the earlier one
//! was one-shot); the default action is restored and the signal acts again: a
//! fault (SIGSEGV raised by the CPU) re-executes the faulting instruction, any
//! other signal is raised again, pending until the handler returns. A signal that
//! was ignored when the hook was installed stays ignored (the hook is not installed
//! for it). A chained handler runs as the kernel would have run it: with its
//! own `sa_mask` blocked (ours takes it over), with its signal unblocked if it
//! has SA_NODEFER (and its mask does not name the signal; the hook itself
//! always runs with it blocked), and the calls it interrupts restarted only if
//! it has SA_RESTART (ours takes that flag over). The handler gives the interrupted code its `errno` back on the way
//! out (the hook, a chained handler, `sigaction` and `raise` may all set it).
//!
//! # References
//! - [`sigaction`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sigaction.html)
//! - [`pthread_sigmask`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_sigmask.html)
//! - [`raise`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/raise.html)
//! - [`signal-safety(7)`](https://man7.org/linux/man-pages/man7/signal-safety.7.html)

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};

use super::sigchain;

/// The signals the hook runs on.
pub(crate) const FATAL: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGSEGV, libc::SIGABRT];

/// The hook (`fn()` as usize; 0: none).
static HOOK: AtomicUsize = AtomicUsize::new(0);

/// The disposition each fatal signal had before ours (written once, before our
/// handler is installed for that signal; read only by the handler).
struct Saved(
    UnsafeCell<[MaybeUninit<libc::sigaction>; 4]>,
    [AtomicBool; 4],
);

// SAFETY: each entry is written once, before its `AtomicBool` is set with Release,
// and only read after that flag is seen with Acquire.
unsafe impl Sync for Saved {}

static SAVED: Saved = Saved(
    UnsafeCell::new([const { MaybeUninit::uninit() }; 4]),
    [const { AtomicBool::new(false) }; 4],
);

/// Installs `hook` to run on each fatal signal of [`FATAL`] (once per process; a
/// later call does not replace the first hook). `hook` must be async-signal-safe.
///
/// # References
/// - [`sigaction`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sigaction.html)
pub(crate) fn on_fatal_signal(hook: fn()) {
    // (Repeated in a child forked while its parent ran this: `install` skips a
    // signal whose handler is ours already.)
    static ONCE: super::fork::ForkOnce = super::fork::ForkOnce::new();
    ONCE.call_once(|| {
        HOOK.store(hook as usize, Release);
        for (i, &sig) in FATAL.iter().enumerate() {
            install(i, sig);
        }
    });
}

fn install(i: usize, sig: i32) {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: queries the current action into a zeroed, properly sized struct.
    if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
        return;
    }
    // SAFETY: `sigaction` succeeded, so `old` is initialised.
    let old = unsafe { old.assume_init() };
    if old.sa_sigaction == libc::SIG_IGN {
        return; // ignored (nohup, a shell's background job): leave it so
    }
    if old.sa_sigaction == handler as *const () as usize {
        return; // ours: installed before a fork (see `on_fatal_signal`)
    }
    if !SAVED.1[i].load(Acquire) {
        // SAFETY: entry `i` is written only here, once (under the `ForkOnce`:
        // a second run in a forked child finds the flag set), before the
        // handler that reads it exists.
        unsafe { (*SAVED.0.get())[i].write(old) };
        SAVED.1[i].store(true, Release);
    }
    // SAFETY: a zeroed sigaction is valid; we fill the handler, flags and mask.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // A handler installed before us runs inside ours: block what its own
    // `sa_mask` asked the kernel to block while it runs (it may rely on those
    // signals not interrupting it), and restart the call the signal interrupts
    // only if it asked for that (a program may rely on EINTR to leave a
    // blocking call when its handler ran). The default action needs no mask.
    if old.sa_sigaction != libc::SIG_DFL {
        act.sa_mask = old.sa_mask;
        act.sa_flags |= old.sa_flags & libc::SA_RESTART;
    } else {
        act.sa_flags |= libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset to empty.
        unsafe { libc::sigemptyset(&mut act.sa_mask) };
    }
    // SAFETY: `act` is a valid sigaction; `handler` has the SA_SIGINFO
    // signature and is async-signal-safe.
    unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
}

extern "C" fn handler(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // The handler may have interrupted code between a failing call and its
    // read of `errno`; the hook, the chained handler and our own `sigaction`
    // and `raise` may each set it. Give the interrupted code its value back
    // (signal-safety(7)).
    // SAFETY: `__errno_location` is the calling thread's errno, always valid.
    let saved = unsafe { *libc::__errno_location() };
    handle(sig, info, ctx);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// The body of [`handler`] (which keeps `errno` around it).
fn handle(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let h = HOOK.load(Acquire);
    if h != 0 {
        // SAFETY: `HOOK` holds a `fn()` stored by `on_fatal_signal`.
        let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(h) };
        f();
    }
    let Some(i) = FATAL.iter().position(|&s| s == sig) else {
        return;
    };
    // The previous disposition (the default if we know none).
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
    let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
    if SAVED.1[i].load(Acquire) {
        // SAFETY: the flag says entry `i` was written, and it is never written again.
        prev = unsafe { (*SAVED.0.get())[i].assume_init_read() };
    }
    if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN {
        // A handler the program installed before us: run it as the kernel would
        // have, and stay installed (a program that handles SIGINT and goes on
        // gets its trace written at every SIGINT).
        sigchain::run_previous(&prev, sig, info, ctx);
        return;
    }
    // The default action: restore it and let the signal act again.
    sigchain::reset_to_default(sig);
    let code = if info.is_null() {
        0
    } else {
        // SAFETY: `info` is the kernel's siginfo for this delivery (SA_SIGINFO).
        unsafe { (*info).si_code }
    };
    if sig == libc::SIGSEGV && code > 0 {
        // A fault: returning re-executes the instruction, which faults again.
        return;
    }
    // Sent (kill, raise, abort): raise it again; it is blocked while this handler
    // runs and acts once it returns.
    // SAFETY: `raise` is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// Runs `f` (which starts a helper thread) with SIGINT, SIGTERM and SIGABRT
/// blocked in the calling thread, so the thread it starts inherits the mask: those
/// process-directed signals are then never handled there, not even before the
/// thread runs its first line. The caller's mask is restored afterwards.
///
/// # References
/// - [`pthread_sigmask`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_sigmask.html)
pub(crate) fn spawn_blocked<R>(f: impl FnOnce() -> R) -> R {
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: builds a signal set on the stack and changes only the calling
    // thread's mask, saving the previous one into `old`.
    unsafe {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(set.as_mut_ptr());
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGABRT] {
            libc::sigaddset(set.as_mut_ptr(), s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), old.as_mut_ptr());
    }
    let r = f();
    // SAFETY: restores the mask saved above (filled in by the kernel).
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    r
}

/// `gettid()` without the per-thread cache: async-signal-safe (one system call).
///
/// # References
/// - [`gettid(2)`](https://man7.org/linux/man-pages/man2/gettid.2.html)
pub(crate) fn caller_tid() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI32;

    /// Set in the process that runs the child half of a test.
    const CHILD_ENV: &str = "POSIXRT_TEST_PROCESS_END_CHILD";

    /// True in the child process of [`in_own_process`]; in the test's own
    /// process, runs the test `name` (its path in the crate) alone in a new
    /// process of this test binary, checks it passed and printed `mark`,
    /// and returns false. The hook is installed once per process, and other
    /// tests install the trace's: a test of the handler needs its own process.
    fn in_own_process(name: &str, mark: &str) -> bool {
        if std::env::var_os(CHILD_ENV).is_some() {
            return true;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child: {:?}\n{text}", out.status);
        assert!(text.contains(mark), "{text}");
        false
    }

    /// Installs `f` as the program's own handler of `sig`, with `mask`
    /// blocked while it runs.
    fn program_handler_for(sig: i32, f: extern "C" fn(i32), mask: &[i32]) {
        program_handler_with(sig, f, mask, 0);
    }

    /// [`program_handler_for`] with `sa_flags`.
    fn program_handler_with(sig: i32, f: extern "C" fn(i32), mask: &[i32], flags: i32) {
        // SAFETY: installs a plain handler in this test's own process; the
        // set is initialised by sigemptyset before sigaddset.
        let r = unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = f as *const () as usize;
            act.sa_flags = flags;
            libc::sigemptyset(&mut act.sa_mask);
            for &s in mask {
                libc::sigaddset(&mut act.sa_mask, s);
            }
            libc::sigaction(sig, &act, std::ptr::null_mut())
        };
        assert_eq!(r, 0);
    }

    /// A hook that makes a failing system call (EBADF), as a real hook's
    /// `futex` or `clock_nanosleep` can (EINTR, ETIMEDOUT).
    fn clobbering_hook() {
        // SAFETY: closing -1 touches nothing; it only fails.
        unsafe { libc::close(-1) };
    }

    /// The program's own SIGINT handler, which leaves `errno` alone.
    extern "C" fn program_handler(_: i32) {}

    /// A handler may interrupt code between a failing call and its read of
    /// `errno`: the hook's and the chained handler's calls must not show
    /// there.
    #[test]
    fn the_handler_leaves_errno_as_it_found_it() {
        let name = "sys::process_end::tests::the_handler_leaves_errno_as_it_found_it";
        if !in_own_process(name, "errno kept: true") {
            return;
        }
        program_handler_for(libc::SIGINT, program_handler, &[]);
        on_fatal_signal(clobbering_hook);
        // SAFETY: sets and reads this thread's errno; `raise` delivers SIGINT
        // to this thread, whose handlers are the ones above.
        let after = unsafe {
            *libc::__errno_location() = libc::EDOM;
            libc::raise(libc::SIGINT);
            *libc::__errno_location()
        };
        println!("errno kept: {}", after == libc::EDOM);
        assert_eq!(after, libc::EDOM, "errno after the handler");
    }

    /// What [`mask_reporting_handler`] saw: -1 not run, else 1 if SIGUSR2
    /// was blocked while it ran.
    static USR2_BLOCKED: AtomicI32 = AtomicI32::new(-1);

    /// A program's SIGTERM handler that records whether SIGUSR2 is blocked
    /// while it runs (`pthread_sigmask` is async-signal-safe).
    extern "C" fn mask_reporting_handler(_: i32) {
        let mut m = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: a null set only reads the mask into `m`, which has room.
        let blocked = unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
            libc::sigismember(m.as_ptr(), libc::SIGUSR2) == 1
        };
        USR2_BLOCKED.store(i32::from(blocked), SeqCst);
    }

    /// A chained handler runs with the signals its `sa_mask` names blocked, as
    /// it would without the hook in between (it may rely on them not
    /// interrupting it).
    #[test]
    fn a_chained_handler_runs_with_its_own_mask() {
        let name = "sys::process_end::tests::a_chained_handler_runs_with_its_own_mask";
        if !in_own_process(name, "usr2 blocked: 1") {
            return;
        }
        program_handler_for(libc::SIGTERM, mask_reporting_handler, &[libc::SIGUSR2]);
        on_fatal_signal(|| {});
        // SAFETY: `raise` delivers SIGTERM to this thread, whose handlers are
        // the ones above.
        unsafe { libc::raise(libc::SIGTERM) };
        let seen = USR2_BLOCKED.load(SeqCst);
        println!("usr2 blocked: {seen}");
        assert_eq!(seen, 1, "SIGUSR2 blocked in the program's handler");
    }

    /// Per signal number: -1 the handler did not run, else 1 if the signal
    /// itself was blocked while [`own_signal_reporting_handler`] ran.
    static OWN_BLOCKED: [AtomicI32; 32] = [const { AtomicI32::new(-1) }; 32];

    /// A program's handler that records whether its own signal is blocked.
    extern "C" fn own_signal_reporting_handler(sig: i32) {
        let mut m = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: a null set only reads the mask into `m`, which has room.
        let blocked = unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
            libc::sigismember(m.as_ptr(), sig) == 1
        };
        OWN_BLOCKED[sig as usize].store(i32::from(blocked), SeqCst);
    }

    /// Whether `sig` is blocked in the calling thread.
    fn blocked_here(sig: i32) -> bool {
        let mut m = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: as in `own_signal_reporting_handler`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
            libc::sigismember(m.as_ptr(), sig) == 1
        }
    }

    /// A chained handler installed with SA_NODEFER runs with its own signal
    /// unblocked (it may rely on a nested delivery, as a fault handler that
    /// faults again does), unless its `sa_mask` names it; one without it runs
    /// with the signal blocked. As the kernel would run them without the hook.
    #[test]
    fn a_chained_handler_gets_its_signal_blocked_as_its_sa_nodefer_says() {
        let name =
            "sys::process_end::tests::a_chained_handler_gets_its_signal_blocked_as_its_sa_nodefer_says";
        if !in_own_process(name, "own signal blocked: [0, 1, 1]") {
            return;
        }
        let f = own_signal_reporting_handler;
        program_handler_with(libc::SIGTERM, f, &[], libc::SA_NODEFER);
        program_handler_with(libc::SIGINT, f, &[libc::SIGINT], libc::SA_NODEFER);
        program_handler_with(libc::SIGABRT, f, &[], 0);
        on_fatal_signal(|| {});
        let sigs = [libc::SIGTERM, libc::SIGINT, libc::SIGABRT];
        for sig in sigs {
            // SAFETY: `raise` delivers `sig` to this thread, whose handlers
            // are the ones above (none ends the process).
            unsafe { libc::raise(sig) };
            assert!(!blocked_here(sig), "{sig} left blocked after the handler");
        }
        let seen = sigs.map(|s| OWN_BLOCKED[s as usize].load(SeqCst));
        println!("own signal blocked: {seen:?}");
        assert_eq!(
            seen,
            [0, 1, 1],
            "SIGTERM (NODEFER), SIGINT (NODEFER, in its mask), SIGABRT"
        );
    }

    /// Deliveries of each signal to [`counting_handler`].
    static HANDLED: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];

    extern "C" fn counting_handler(sig: i32) {
        HANDLED[sig as usize].fetch_add(1, SeqCst);
    }

    /// Blocks the calling thread in `read` on an empty pipe, has another
    /// thread send it `sig` once it is in the call (as `/proc` shows), then,
    /// once the handler ran, write a byte. `None` where `/proc` does not show
    /// a thread's system call; else the `read`'s result and errno.
    fn read_interrupted_by(sig: i32) -> Option<(isize, i32)> {
        let me = caller_tid();
        let path = format!("/proc/self/task/{me}/syscall");
        std::fs::read_to_string(&path).ok()?;
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let before = HANDLED[sig as usize].load(SeqCst);
        // SAFETY: pthread_self has no precondition.
        let target = unsafe { libc::pthread_self() } as usize;
        let sender = std::thread::spawn(move || {
            let in_read = || {
                let s = std::fs::read_to_string(&path).unwrap_or_default();
                s.split_whitespace().next() == Some(&libc::SYS_read.to_string())
            };
            let mut tries = 0;
            while !in_read() {
                tries += 1;
                assert!(tries < 10_000, "the reader never blocked in read");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // SAFETY: `target` is the reader, alive until this thread is joined.
            unsafe { libc::pthread_kill(target as libc::pthread_t, sig) };
            while HANDLED[sig as usize].load(SeqCst) == before {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // SAFETY: writes one byte from a live buffer to the pipe.
            unsafe { libc::write(fds[1], [7u8].as_ptr().cast(), 1) };
        });
        let mut b = [0u8; 1];
        // SAFETY: reads at most one byte into `b`.
        let r = unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) };
        // SAFETY: reads this thread's errno.
        let e = unsafe { *libc::__errno_location() };
        sender.join().unwrap();
        // SAFETY: closes the two descriptors made above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        Some((r, if r < 0 { e } else { 0 }))
    }

    /// A chained handler installed without SA_RESTART ends the blocking call
    /// it interrupts with EINTR (a program that handles SIGINT by setting a
    /// flag may rely on it to leave a blocking read), one with SA_RESTART has
    /// the call restarted: as the kernel would without the hook in between.
    #[test]
    fn a_chained_handler_restarts_calls_as_its_sa_restart_says() {
        let name =
            "sys::process_end::tests::a_chained_handler_restarts_calls_as_its_sa_restart_says";
        if !in_own_process(name, "reads: ") {
            return;
        }
        program_handler_with(libc::SIGINT, counting_handler, &[], 0);
        program_handler_with(libc::SIGTERM, counting_handler, &[], libc::SA_RESTART);
        on_fatal_signal(|| {});
        let (Some(int), Some(term)) = (
            read_interrupted_by(libc::SIGINT),
            read_interrupted_by(libc::SIGTERM),
        ) else {
            println!("reads: skipped, /proc does not show a thread's system call here");
            return;
        };
        println!("reads: {int:?} {term:?}");
        assert_eq!(int, (-1, libc::EINTR), "SIGINT, no SA_RESTART");
        assert_eq!(term, (1, 0), "SIGTERM, SA_RESTART");
    }
}
