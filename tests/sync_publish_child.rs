//! A forked child of a process whose sync publisher runs switches tracking on
//! and its objects become visible to `rtstat CHILD` (`read_process`): the
//! publisher thread did not survive the fork, and the child starts its own.
//! (The old code kept the parent's "started" flag in the child, so no
//! publisher ever ran there, and the child held the parent's registry, which
//! it may not write: `read_process(child)` found no registry.)
//!
//! Its own binary: the publisher and the registry are per process. The tests
//! take turns ([`serial`]): tracking is process-wide.

#[path = "common/child.rs"]
mod child;
#[path = "common/tracking.rs"]
mod tracking;

use posixrt::sync::{self, NormalMutex, Tracking};
use tracking::{poll, serial};

/// The names `read_process(pid)` lists (empty on an error).
fn published_names(pid: u32) -> Vec<String> {
    sync::read_process(pid)
        .map(|v| v.into_iter().filter_map(|s| s.info.name).collect())
        .unwrap_or_default()
}

#[test]
fn a_forked_child_publishes_its_objects_once_it_switches_tracking_on() {
    let _g = serial(Tracking::Counts);
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
    let seen = poll(|| published_names(child_pid).contains(&"child-lock".to_string()));
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

/// A forked child inherits the parent's registry mapping: its `publish` makes
/// the child's own registry instead of overwriting the parent's published
/// objects (it was refused with `Unsupported` before).
#[test]
fn forked_child_does_not_publish_into_the_parents_registry() {
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(());
    drop(m.lock());
    sync::publish().expect("parent publishes");
    let parent = std::process::id();
    // SAFETY: the child publishes (glibc's fork-safe malloc allows its
    // allocations), removes its registry file (it `_exit`s, without the exit
    // hook that would) and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let c = NormalMutex::new(());
        unsafe { c.raw() }.set_name("child-only");
        drop(c.lock());
        let named = |pid: u32| {
            sync::read_process(pid).map(|v| {
                v.iter()
                    .any(|s| s.info.name.as_deref() == Some("child-only"))
            })
        };
        let code = match sync::publish() {
            Err(_) => 1,
            Ok(_) => match (named(std::process::id()), named(parent)) {
                (Ok(true), Ok(false)) => 0,
                _ => 2,
            },
        };
        child::remove_own_registries("sync");
        // SAFETY: ends the child.
        unsafe { libc::_exit(code) };
    }
    let status = child::wait_child(pid);
    assert_eq!(libc::WEXITSTATUS(status), 0, "status {status:#x}");
    assert!(sync::publish().is_ok());
    sync::set_tracking(Tracking::Off);
}
