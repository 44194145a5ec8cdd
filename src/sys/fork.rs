//! The one fork hook of the crate.
//!
//! A single `pthread_atfork` child handler runs in a forked child. It calls every
//! reset function registered with [`on_child`], in registration order: the cached
//! thread id ([`super::tid`], registered on the first `gettid`); trace (streams are
//! closed for the child); registry (the parent's shared-memory files are not the
//! child's); sync tracking (its internal lock); aio (the parent's rings and requests
//! are not the child's); the sporadic server (its served-set and start locks).
//! Each reset function must be async-signal-safe: stores (the child has one
//! thread), no allocation, no locks.
//!
//! # References
//! - [`pthread_atfork`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_atfork.html)

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Once;

/// How many reset functions can be registered (one per subsystem).
const MAX_HOOKS: usize = 16;

static HOOKS: [AtomicUsize; MAX_HOOKS] = [const { AtomicUsize::new(0) }; MAX_HOOKS];

/// Forks this process came through: 0 in the process that installed the hook,
/// one more in each forked child (and its children).
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// How many forks separate this process from the one that installed the
/// hook (see [`install`]): an object that records it when made (after
/// `install`) tells, in a forked child, that it was inherited.
#[inline]
pub(crate) fn generation() -> u32 {
    GENERATION.load(Ordering::Relaxed)
}

/// Installs the child handler (once per process; idempotent).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain `extern "C"` function without state as the
        // child handler; it only makes async-signal-safe calls (see `child`).
        unsafe { libc::pthread_atfork(None, None, Some(child)) };
    });
}

/// Registers `reset` to run in every forked child. No reset function may read the
/// cached tid (the order between them is the order of registration).
/// Registering the same function twice runs it once. `reset` must be
/// async-signal-safe (stores only, no locks: the child of a multi-threaded process
/// may find any lock held by a thread that does not exist there).
///
/// # Panics
/// If more than 16 distinct functions are registered: a bug in the crate, since
/// each subsystem registers one.
pub(crate) fn on_child(reset: fn()) {
    install();
    let f = reset as usize;
    for h in HOOKS.iter() {
        match h.compare_exchange(0, f, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(cur) if cur == f => return,
            Err(_) => {}
        }
    }
    panic!("posixrt: more than {MAX_HOOKS} fork hooks registered");
}

extern "C" fn child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    for h in HOOKS.iter() {
        let f = h.load(Ordering::Acquire);
        if f == 0 {
            break;
        }
        // SAFETY: every non-zero entry was stored by `on_child` from a `fn()`, and
        // function pointers and usize have the same size on every target Rust
        // supports for this crate (Linux).
        let reset: fn() = unsafe { std::mem::transmute::<usize, fn()>(f) };
        reset();
    }
}
