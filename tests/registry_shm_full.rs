//! A registry on a `/dev/shm` too small for it: `Registry::create`, or the
//! claim that needs a slot on pages the tmpfs cannot back, reports the lack
//! of space instead of handing out a mapping whose pages cannot be backed
//! (`ftruncate` of a tmpfs file reserves nothing; a store to a page the tmpfs
//! cannot allocate raises `SIGBUS`). A registry reserves its pages as its
//! slots are claimed, not all at create (1 MiB for `mark`'s).
//!
//! The small `/dev/shm` is a tmpfs of 64 or 128 KiB mounted in a private mount namespace
//! of a forked child (a user namespace too where that is needed); where
//! neither is allowed the test says so and checks nothing.

#[path = "common/child.rs"]
mod child;
#[path = "common/small_shm.rs"]
mod small_shm;
use small_shm::small_dev_shm;

use posixrt::registry::{current_thread, Registry};
use posixrt::ErrorKind;

/// Exit codes of the child.
const SKIP: i32 = 77;
const CREATE_REFUSED: i32 = 10;
const ALL_CLAIMED: i32 = 11;
const OTHER_ERROR: i32 = 12;
const CLAIM_REFUSED: i32 = 13;

/// In the child, on a `/dev/shm` mounted with `options`: a registry of 64
/// slots of 4 KiB (about 260 KiB), every slot claimed (each claim zeroes its
/// payload: a store to each page); the first claim refused ends it.
fn create_and_fill(options: &std::ffi::CStr) -> i32 {
    if !small_dev_shm(options) {
        return SKIP;
    }
    let reg = match Registry::create("shmfull", 4096, 64) {
        Ok(reg) => reg,
        Err(e) if e.kind() == ErrorKind::OutOfResources => return CREATE_REFUSED,
        Err(_) => return OTHER_ERROR,
    };
    let Ok((tid, start)) = current_thread() else {
        return OTHER_ERROR;
    };
    let mut held = Vec::new();
    for _ in 0..64 {
        match reg.claim(tid, start) {
            Ok(w) => held.push(w),
            Err(e) if e.kind() == ErrorKind::OutOfResources && !held.is_empty() => {
                return CLAIM_REFUSED
            }
            Err(_) => return OTHER_ERROR,
        }
    }
    ALL_CLAIMED
}

/// Runs `create_and_fill(options)` in a forked child; its exit code, or None
/// where no small `/dev/shm` can be mounted (said so).
fn run_child(options: &'static std::ffi::CStr) -> Option<i32> {
    // SAFETY: the child runs only `create_and_fill` and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = create_and_fill(options);
        // SAFETY: ends the child without exit handlers or unwinding.
        unsafe { libc::_exit(code) };
    }
    let status = child::wait_child(pid);
    assert!(
        !libc::WIFSIGNALED(status),
        "the child died of signal {} (SIGBUS is {})",
        libc::WTERMSIG(status),
        libc::SIGBUS
    );
    match libc::WEXITSTATUS(status) {
        SKIP => {
            println!("skip: no private mount namespace for a small /dev/shm here");
            None
        }
        code => Some(code),
    }
}

/// 64 KiB cannot hold the header and the first slots, reserved at create.
#[test]
fn a_registry_that_does_not_fit_in_dev_shm_is_refused_at_create() {
    if let Some(code) = run_child(c"size=64k,mode=1777") {
        assert_eq!(code, CREATE_REFUSED, "child exit code");
    }
}

/// 128 KiB holds the header and the first slots, not all 64: the claim that
/// needs slots beyond the room is refused (OutOfResources), after the
/// claims that fit.
#[test]
fn a_claim_past_the_room_in_dev_shm_is_refused() {
    if let Some(code) = run_child(c"size=128k,mode=1777") {
        assert_eq!(code, CLAIM_REFUSED, "child exit code");
    }
}
