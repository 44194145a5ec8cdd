//! Running the signal handler that was installed before one of the crate's
//! own (`process_end`'s fatal-signal hook, the registry's `SIGBUS` repair) as
//! the kernel would have run it: async-signal-safe, from inside a handler.

use std::mem::MaybeUninit;

/// Runs the handler of `prev` (a function, not SIG_DFL or SIG_IGN) for `sig`
/// as the kernel would have: reset to the default first with SA_RESETHAND,
/// `sig` unblocked meanwhile with SA_NODEFER.
pub(crate) fn run_previous(
    prev: &libc::sigaction,
    sig: i32,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
) {
    if prev.sa_flags & libc::SA_RESETHAND != 0 {
        reset_to_default(sig);
    }
    let nodefer = unblocks_own_signal(prev, sig);
    if nodefer {
        set_blocked(sig, false);
    }
    call_chained(prev, sig, info, ctx);
    if nodefer {
        set_blocked(sig, true);
    }
}

/// Calls the handler of `prev` (a function, not SIG_DFL or SIG_IGN) with the
/// signature its SA_SIGINFO flag says.
fn call_chained(
    prev: &libc::sigaction,
    sig: i32,
    info: *mut libc::siginfo_t,
    ctx: *mut libc::c_void,
) {
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        type Action = extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void);
        // SAFETY: with SA_SIGINFO the handler has the three-argument signature.
        let f: Action = unsafe { std::mem::transmute::<usize, Action>(prev.sa_sigaction) };
        f(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO the handler takes the signal number.
        let f: extern "C" fn(i32) =
            unsafe { std::mem::transmute::<usize, extern "C" fn(i32)>(prev.sa_sigaction) };
        f(sig);
    }
}

/// Whether the kernel would have run the handler of `prev` with `sig`
/// unblocked: SA_NODEFER, and `sig` not in its `sa_mask` (sigaction(2)).
fn unblocks_own_signal(prev: &libc::sigaction, sig: i32) -> bool {
    // SAFETY: `sa_mask` is an initialised set (from `sigaction`); `sigismember`
    // only reads it and is async-signal-safe.
    prev.sa_flags & libc::SA_NODEFER != 0 && unsafe { libc::sigismember(&prev.sa_mask, sig) } != 1
}

/// Blocks or unblocks `sig` in the calling thread, async-signal-safe (the
/// mask the interrupted code had comes back with the handler's return anyway).
fn set_blocked(sig: i32, blocked: bool) {
    let how = if blocked {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: builds a one-signal set on the stack; `pthread_sigmask` changes
    // only the calling thread's mask and is async-signal-safe.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), sig);
        libc::pthread_sigmask(how, set.as_ptr(), std::ptr::null_mut());
    }
}

/// `sigaction(sig, SIG_DFL)`, async-signal-safe.
pub(crate) fn reset_to_default(sig: i32) {
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask; `sigaction` is
    // async-signal-safe.
    unsafe {
        let dfl: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
    }
}
