//! The hints of a registry that cannot be created name the real cause: a
//! full descriptor table is no missing /proc, and a /dev/shm that this
//! process may not write is no missing tmpfs.

#[path = "common/child.rs"]
mod child;

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
