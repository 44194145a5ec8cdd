//! The one fork hook of the crate.
//!
//! A single `pthread_atfork` child handler runs in a forked child. It calls every
//! reset function registered with [`on_child`], in registration order: the cached
//! thread id ([`super::tid`], registered on the first `gettid`); trace (streams are
//! closed for the child); registry (the parent's shared-memory files are not the
//! child's); sync tracking (its internal lock); the rwlocks' waiting-writer
//! lists (their lock); sync publishing (the lock of its registry); aio (the
//! parent's rings and requests are not the child's); the sporadic server (its
//! served-set and start locks).
//! Each reset function must be async-signal-safe: stores (the child has one
//! thread), no allocation, no locks.
//!
//! # References
//! - [`pthread_atfork`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_atfork.html)

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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

/// A `std::sync::Once` that a fork cannot wedge.
///
/// A child forked while a thread of its parent was inside a `std::sync::Once`
/// finds it running forever, and its own first call waits for a thread that
/// does not exist there. Here the state holds, while the function runs, the pid
/// of the process running it: a thread that finds its own process running it
/// waits (yields) for the end; a process that finds another pid there is a
/// child forked meanwhile, and runs the function itself. So the function may
/// run in a child after it (partly) ran in the parent before the fork: it must
/// be safe to repeat.
pub(crate) struct ForkOnce(AtomicU32);

/// Gives a [`ForkOnce`]'s claim back when dropped (its function unwound).
struct Unclaim<'a>(&'a AtomicU32);

impl Drop for Unclaim<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// [`ForkOnce`]'s state once its function has run.
const DONE: u32 = u32::MAX;

impl ForkOnce {
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Runs `f` unless it ran in this process (or before the fork that made
    /// it), and returns once it has.
    #[inline]
    pub(crate) fn call_once(&self, f: impl FnOnce()) {
        if self.0.load(Ordering::Acquire) != DONE {
            self.call_slow(f);
        }
    }

    #[cold]
    fn call_slow(&self, f: impl FnOnce()) {
        let me = rustix::process::getpid().as_raw_nonzero().get() as u32;
        loop {
            let s = self.0.load(Ordering::Acquire);
            if s == DONE {
                return;
            }
            if s == me {
                std::thread::yield_now();
                continue;
            }
            // 0, or the parent's pid: a fork came while the parent ran `f`.
            if self
                .0
                .compare_exchange(s, me, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // A panic in `f` gives the claim back (a later call runs `f`
                // again) instead of leaving every later caller waiting on it.
                let unclaim = Unclaim(&self.0);
                f();
                std::mem::forget(unclaim);
                self.0.store(DONE, Ordering::Release);
                return;
            }
        }
    }

    /// Marks the function as run (async-signal-safe: one store).
    fn mark_done(&self) {
        self.0.store(DONE, Ordering::Release);
    }
}

/// Registers the child handler, once. Not run again in a child forked while
/// its parent registered it, if the registration came first (glibc takes the
/// same lock in `pthread_atfork` and `fork`): the handler then ran in the
/// child, and marked it done.
static INSTALL: ForkOnce = ForkOnce::new();

/// Installs the child handler (once per process; idempotent).
pub(crate) fn install() {
    INSTALL.call_once(|| {
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
    // Registered before the fork: this process has the handler (see `INSTALL`).
    INSTALL.mark_done();
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

#[cfg(test)]
mod tests {
    use super::ForkOnce;
    use std::time::Duration;

    /// A function that panics leaves the `ForkOnce` to be run again, not
    /// claimed for ever (every later call waited, yielding, without end).
    #[test]
    fn a_panic_in_the_function_gives_the_claim_back() {
        static ONCE: ForkOnce = ForkOnce::new();
        let r = std::panic::catch_unwind(|| ONCE.call_once(|| panic!("refused")));
        assert!(r.is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut ran = false;
            ONCE.call_once(|| ran = true);
            let _ = tx.send(ran);
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    }
}
