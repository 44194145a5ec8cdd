//! The notification pool in a forked child.

use super::*;

/// A child of `fork` made while a thread of its parent held the pool's lock
/// drops its copy of the pool (as when it drops the last handle of a thread
/// engine's context that its parent made) without waiting for that lock: the
/// thread that holds it does not exist in the child. It used to wait there
/// forever.
#[test]
fn a_forked_child_drops_the_pool_with_its_lock_held() {
    crate::sys::fork::install();
    let n = Notifier::start(Box::new(|| {}), None).expect("the pool's first thread");
    let sh = Arc::clone(&n.shared);
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _g = sh.st.lock().unwrap_or_else(|p| p.into_inner());
        let _ = held_tx.send(());
        let _ = go_rx.recv();
    });
    held_rx.recv().expect("the lock is held");
    // SAFETY: the child only drops its copy of the pool (no allocation or
    // free: the pool's thread holds a reference too) and leaves with _exit;
    // SIGALRM ends it if it waits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: async-signal-safe calls in the child of a fork.
        unsafe { libc::alarm(5) };
        drop(n);
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    let _ = go_tx.send(());
    holder.join().expect("the holder");
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is writable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's wait status {status:#x} (signal 14, SIGALRM: it waited for the lock)"
    );
    drop(n);
}

/// EAGAIN from starting a thread that notifications need carries the hint
/// that tells the fixes (the thread limits; for a notification thread, its
/// stack size too); another errno is left bare.
#[test]
fn an_eagain_thread_start_has_the_hint() {
    let e = thread_start_error(libc::EAGAIN, "starting the AIO completion thread", None);
    assert_eq!(
        (e.call(), e.errno()),
        ("pthread_create", Some(libc::EAGAIN))
    );
    let hint = e.hint().expect("a hint");
    for fix in [
        "RLIMIT_NPROC",
        "`ulimit -u`",
        "kernel.threads-max",
        "pids.max",
    ] {
        assert!(hint.contains(fix), "{fix}: {hint}");
    }
    assert!(!hint.contains("notify_stack_size"), "{hint}");
    let e = thread_start_error(libc::EAGAIN, "a notification thread", Some(Some(65536)));
    let hint = e.hint().expect("a hint");
    assert!(
        hint.contains("notify_stack_size, now 65536 bytes"),
        "{hint}"
    );
    let e = thread_start_error(libc::EAGAIN, "a notification thread", Some(None));
    assert!(
        e.hint().is_some_and(|h| h.contains("Rust's default")),
        "{e}"
    );
    let e = thread_start_error(libc::EPERM, "a notification thread", Some(None));
    assert_eq!(e.hint(), None, "{e}");
}
