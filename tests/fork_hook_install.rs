//! A fork while another thread installs the crate's fork hook: the child must
//! be able to use the crate (it installs the hook itself), not wait forever for
//! an installation that only the parent's thread, absent from the child, could
//! finish.
//!
//! The test binary defines `pthread_atfork` (a program's own definition comes
//! before libc's), which holds the first registration of this process until
//! the test has forked, then registers as glibc's would.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};
use std::time::{Duration, Instant};

#[path = "common/child.rs"]
mod child;

/// The process whose first registration is held (0: none).
static HOLD_PID: AtomicI32 = AtomicI32::new(0);
/// The held registration has begun.
static HELD: AtomicBool = AtomicBool::new(false);
/// The held registration may go on.
static RELEASE: AtomicBool = AtomicBool::new(false);

type Handler = Option<unsafe extern "C" fn()>;

extern "C" {
    /// glibc's registration, which its `pthread_atfork` calls with the
    /// caller's DSO handle (null: the main program, never unloaded).
    fn __register_atfork(
        prepare: Handler,
        parent: Handler,
        child: Handler,
        dso: *mut libc::c_void,
    ) -> libc::c_int;
}

/// # Safety
/// As `pthread_atfork`: the handlers must be safe to call at a fork.
#[no_mangle]
pub unsafe extern "C" fn pthread_atfork(
    prepare: Handler,
    parent: Handler,
    child: Handler,
) -> libc::c_int {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    if HOLD_PID.load(SeqCst) == me && !HELD.swap(true, SeqCst) {
        let end = Instant::now() + child::LIMIT;
        while !RELEASE.load(SeqCst) && Instant::now() < end {
            std::thread::yield_now();
        }
    }
    // SAFETY: the caller's contract is `pthread_atfork`'s, which is this one's.
    unsafe { __register_atfork(prepare, parent, child, std::ptr::null_mut()) }
}

fn fork() -> i32 {
    // SAFETY: the child only calls into the crate and `_exit`s (see the test).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    pid
}

#[test]
fn a_child_forked_during_the_hook_installation_installs_it_itself() {
    // SAFETY: getpid has no preconditions.
    HOLD_PID.store(unsafe { libc::getpid() }, SeqCst);
    // The thread's first mark installs the fork hook (the mark registry's
    // reset, which installs the crate's one handler): held there.
    let marker = std::thread::spawn(|| posixrt::mark::set("installing"));
    let end = Instant::now() + Duration::from_secs(30);
    while !HELD.load(SeqCst) {
        assert!(
            Instant::now() < end,
            "the first mark never registered a fork handler"
        );
        std::thread::yield_now();
    }
    let pid = fork();
    if pid == 0 {
        // The child: its first mark needs the hook installed too.
        let ok = posixrt::mark::set("child").is_ok()
            && posixrt::mark::current().as_deref() == Some("child");
        // SAFETY: ends the forked child without running the parent's handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    RELEASE.store(true, SeqCst);
    let status = child::wait_child(pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's mark failed: wait status {status:#x}"
    );
    let r = marker.join().expect("the marking thread panicked");
    assert!(r.is_ok(), "the parent's mark failed: {r:?}");
    assert!(HELD.load(SeqCst));
}
