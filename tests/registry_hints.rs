//! The hints of a registry that cannot be created name the real cause: a
//! full descriptor table is no missing /proc, and a /dev/shm that this
//! process may not write is no missing tmpfs.

#[path = "common/child.rs"]
mod child;
#[path = "common/small_shm.rs"]
mod small_shm;

use posixrt::registry::{current_thread, Registry};
use posixrt::ErrorKind;

/// Checks that `e` is an EMFILE whose hint names the descriptor limit, not
/// /proc.
fn descriptor_limit_error(what: &str, e: &posixrt::Error) -> Result<(), String> {
    let hint = e.hint().unwrap_or("");
    if e.kind() != ErrorKind::OutOfResources || e.errno() != Some(libc::EMFILE) {
        return Err(format!("{what}: not EMFILE: {e}"));
    }
    if !hint.contains("RLIMIT_NOFILE") || !hint.contains("ulimit -n") {
        return Err(format!(
            "{what}: the hint does not name the descriptor limit: {e}"
        ));
    }
    if hint.contains("mount /proc") {
        return Err(format!("{what}: the hint says to mount /proc: {e}"));
    }
    Ok(())
}

#[test]
fn a_full_descriptor_table_is_named_in_the_hint() {
    // SAFETY: the test thread is the only one that takes the locks the child
    // uses (none are held across the fork: nothing else runs in this test
    // binary's process at this point but the harness, which holds none).
    let r = unsafe {
        child::in_child(|| {
            // No descriptor can be opened: every open fails with EMFILE.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: libc::RLIM_INFINITY,
            };
            let mut old = none;
            // SAFETY: `old` is writable; the limit is lowered in this child only.
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) != 0 {
                return Err("getrlimit failed".into());
            }
            let low = libc::rlimit {
                rlim_cur: 0,
                rlim_max: old.rlim_max,
            };
            // SAFETY: as above.
            if libc::setrlimit(libc::RLIMIT_NOFILE, &low) != 0 {
                return Err("setrlimit failed".into());
            }
            match Registry::create("reghintemfile", 8, 1) {
                Ok(_) => return Err("created a registry without a descriptor".into()),
                Err(e) => descriptor_limit_error("Registry::create", &e)?,
            }
            match current_thread() {
                Ok(_) => Err("read /proc without a descriptor".into()),
                Err(e) => descriptor_limit_error("current_thread", &e),
            }
        })
    };
    if let Err(msg) = r {
        panic!("{msg}");
    }
}

/// Checks that `e`, the error of a create in a /dev/shm this process may not
/// write, says so, and does not tell to mount a tmpfs where one is.
fn not_writable_error(what: &str, e: &posixrt::Error) -> Result<(), String> {
    let hint = e.hint().unwrap_or("");
    if !hint.contains("not writable") {
        return Err(format!(
            "{what}: the hint does not say /dev/shm is not writable: {e}"
        ));
    }
    if hint.contains("mount a tmpfs there") {
        return Err(format!("{what}: the hint says to mount a tmpfs there: {e}"));
    }
    Ok(())
}

/// Why the child could not set up its /dev/shm (the test is skipped then).
const SKIP: i32 = 3;

/// In a forked child: a private tmpfs on /dev/shm mounted with `options`,
/// then `then`; a child that cannot mount exits with [`SKIP`].
fn with_private_shm(options: &'static std::ffi::CStr, then: fn() -> Result<(), String>) {
    // SAFETY: the child mounts, creates a registry and `_exit`s; no other
    // thread of this test binary holds a lock it takes.
    let (status, msg) = unsafe {
        child::fork_checks(|| {
            if !small_shm::small_dev_shm(options) {
                libc::_exit(SKIP);
            }
            then()
        })
    };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == SKIP {
        println!("skip: no private mount namespace with a tmpfs on /dev/shm here");
        return;
    }
    if let Err(msg) = child::outcome(status, msg) {
        panic!("{msg}");
    }
}

#[test]
fn a_read_only_dev_shm_is_named_in_the_hint() {
    with_private_shm(c"size=64k,mode=1777", || {
        // SAFETY: remounts this child's own (private) /dev/shm read-only.
        let ro = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/dev/shm".as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_RDONLY,
                std::ptr::null(),
            )
        };
        if ro != 0 {
            return Err(format!(
                "remount read-only: {}",
                std::io::Error::last_os_error()
            ));
        }
        match Registry::create("reghintro", 8, 1) {
            Ok(_) => Err("created a registry in a read-only /dev/shm".into()),
            Err(e) if e.errno() != Some(libc::EROFS) => Err(format!("not EROFS: {e}")),
            Err(e) => not_writable_error("read-only", &e),
        }
    });
}

#[test]
fn a_dev_shm_of_another_user_is_named_in_the_hint() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skip: needs root (to mount a tmpfs and become another user)");
        return;
    }
    // Root's, mode 0755: another user may not create files there.
    with_private_shm(c"size=64k,mode=0755", || {
        // SAFETY: this child only becomes `nobody` (it `_exit`s after).
        if unsafe { libc::setgid(65534) != 0 || libc::setuid(65534) != 0 } {
            return Err(format!("setuid: {}", std::io::Error::last_os_error()));
        }
        match Registry::create("reghintperm", 8, 1) {
            Ok(_) => Err("created a registry in root's 0755 /dev/shm".into()),
            Err(e) if e.kind() != ErrorKind::PermissionDenied => {
                Err(format!("not PermissionDenied: {e}"))
            }
            Err(e) => not_writable_error("another user's", &e),
        }
    });
}
