//! A child forked while its parent's descriptor table is full: the fork hook
//! must still let go of the parent's registry lock, although it cannot open
//! anything (EMFILE) in the child.

#[path = "common/child.rs"]
mod child;
#[path = "common/flocks.rs"]
mod flocks;

use posixrt::registry::Registry;

#[test]
fn a_child_forked_with_a_full_fd_table_lets_go_of_the_lock() {
    let reg = Registry::create("regforkemfile", 8, 1).unwrap();
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is writable; the new limit is a plain value, lowered
    // for this test's process only and restored below.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let low = libc::rlimit {
            rlim_cur: 64.min(old.rlim_cur),
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &low), 0);
    }
    // Fill the table.
    let mut fillers = Vec::new();
    loop {
        // SAFETY: opens /dev/null; closed below.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            assert_eq!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(libc::EMFILE)
            );
            break;
        }
        fillers.push(fd);
    }
    // SAFETY: the child closes descriptors, reads /proc and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        for &fd in &fillers {
            // SAFETY: closes the child's copies of the fillers.
            unsafe { libc::close(fd) };
        }
        let held = flocks::held();
        // SAFETY: ends the child without exit handlers or unwinding.
        unsafe { libc::_exit(i32::from(!held.is_empty())) };
    }
    for &fd in &fillers {
        // SAFETY: closes the fillers opened above.
        unsafe { libc::close(fd) };
    }
    // SAFETY: restores the limit read above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    assert!(pid > 0, "fork failed");
    let status = child::wait_child(pid);
    drop(reg);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child kept the parent's registry lock (status {status:#x})"
    );
}
