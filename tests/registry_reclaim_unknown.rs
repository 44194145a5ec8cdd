//! A claim that finds every slot taken reclaims the slots of threads that no
//! longer exist. Whether a thread exists is read from `/proc`; when that read
//! fails for another reason (the descriptor table is full: EMFILE), the
//! owner is not known to be dead, and its slot must not be handed to a
//! second writer.
//!
//! Runs in a forked child, whose descriptor limit is lowered and filled
//! without disturbing the other tests.

#[path = "common/held_fork.rs"]
mod held_fork;

use posixrt::registry::{current_thread, Registry};
use posixrt::ErrorKind;

/// Lowers the descriptor limit to 64 and opens `/dev/null` until EMFILE;
/// returns the descriptors opened.
fn fill_fd_table() -> Result<Vec<i32>, String> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is writable; the new limit is a plain value (the forked
    // child's own).
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) != 0 {
            return Err("getrlimit".into());
        }
        let low = libc::rlimit {
            rlim_cur: 64.min(old.rlim_cur),
            rlim_max: old.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &low) != 0 {
            return Err("setrlimit".into());
        }
    }
    let mut fillers = Vec::new();
    loop {
        // SAFETY: opens /dev/null; closed by the caller.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EMFILE) => Ok(fillers),
                _ => Err(format!("open /dev/null: {e}")),
            };
        }
        fillers.push(fd);
    }
}

#[test]
fn a_live_owner_is_not_reclaimed_when_proc_cannot_be_read() {
    let r = held_fork::in_child(|| {
        let reg = Registry::create("regreclaimfd", 8, 1).map_err(|e| format!("create: {e}"))?;
        let (tid, start) = current_thread().map_err(|e| e.to_string())?;
        let mut mine = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        mine.write(|p| p.store_u64(0, 7));
        let fillers = fill_fd_table()?;
        let second = reg.claim(tid, start);
        for fd in fillers {
            // SAFETY: closes the descriptors opened above.
            unsafe { libc::close(fd) };
        }
        let _ = std::fs::remove_file(reg.path());
        match second {
            Ok(w) => Err(format!(
                "the live owner's slot {} was reclaimed (first slot {})",
                w.index(),
                mine.index()
            )),
            Err(e) if e.kind() == ErrorKind::OutOfResources => Ok(()),
            Err(e) => Err(format!("claim: {e} ({:?})", e.kind())),
        }
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}
