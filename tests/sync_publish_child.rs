//! A forked child of a process whose sync publisher runs switches tracking on
//! and its objects become visible to `rtstat CHILD` (`read_process`): the
//! publisher thread did not survive the fork, and the child starts its own.
//! (The old code kept the parent's "started" flag in the child, so no
//! publisher ever ran there, and the child held the parent's registry, which
//! it may not write: `read_process(child)` found no registry.)
//!
//! Its own binary: the publisher and the registry are per process.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/child.rs"]
mod child;

use std::time::Duration;

use caps::wait_for;
use posixrt::sync::{self, NormalMutex, Tracking};

/// The names `read_process(pid)` lists (empty on an error).
fn published_names(pid: u32) -> Vec<String> {
    sync::read_process(pid)
        .map(|v| v.into_iter().filter_map(|s| s.info.name).collect())
        .unwrap_or_default()
}

#[test]
fn a_forked_child_publishes_its_objects_once_it_switches_tracking_on() {
    sync::set_tracking(Tracking::Counts);
    let m = NormalMutex::new(());
    unsafe { m.raw() }.set_name("parent-lock");
    drop(m.lock());
    // The parent's registry is made and its publisher runs.
    sync::publish().expect("parent publishes");
    assert!(published_names(std::process::id()).contains(&"parent-lock".to_string()));

    let mut fds = [0i32; 2];
    // SAFETY: `fds` is writable for two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the child switches tracking on (a thread start, allowed by glibc
    // after fork), locks, waits on the pipe, removes its registry file and
    // `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: closes the child's copy of the write end.
        unsafe { libc::close(wr) };
        sync::set_tracking(Tracking::Counts);
        let c = NormalMutex::new(());
        unsafe { c.raw() }.set_name("child-lock");
        drop(c.lock());
        // Until the parent has looked (or its end closes).
        let mut b = [0u8; 1];
        // SAFETY: reads at most one byte into `b`.
        unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) };
        child::remove_own_registries("sync");
        // SAFETY: ends the child.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: closes the parent's copy of the read end.
    unsafe { libc::close(rd) };
    let child_pid = pid as u32;
    // The child's publisher publishes within one period (50 ms).
    let seen = wait_for(Duration::from_secs(5), || {
        published_names(child_pid).contains(&"child-lock".to_string())
    });
    let child_err = sync::read_process(child_pid).err();
    // SAFETY: closing the write end lets the child's read return.
    unsafe { libc::close(wr) };
    let status = child::wait_child(pid);
    assert_eq!(libc::WEXITSTATUS(status), 0, "status {status:#x}");
    assert!(
        seen,
        "rtstat of the child does not list its object: {child_err:?}"
    );
    // The parent's own registry is its own still.
    let mine = published_names(std::process::id());
    assert!(mine.contains(&"parent-lock".to_string()), "{mine:?}");
    assert!(!mine.contains(&"child-lock".to_string()), "{mine:?}");
    sync::set_tracking(Tracking::Off);
}
