//! Review test of `posixrt::sched::set_param`: the refusal names what was asked.

use std::sync::mpsc;

use posixrt::sched::{self, Tid};
use posixrt::ErrorKind;

/// The hint of a refused priority-only change (`sched_setparam`) of another
/// user's `SCHED_OTHER` thread, or why it was not refused as the test
/// needs.
fn refused_hint(target: Tid) -> Result<String, String> {
    match sched::set_param(Some(target), 0) {
        Ok(()) => Err("set_param on another user's thread succeeded".into()),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Ok(e.hint().unwrap_or("").into()),
        Err(e) => Err(format!("not PermissionDenied: {e}")),
    }
}

/// `sched_setparam` keeps the thread's policy: without CAP_SYS_NICE it is
/// refused (EPERM) for a fair thread only because the thread is another
/// user's. The hint said "switching to SCHED_OTHER was refused" and explained
/// leaving SCHED_IDLE and nice limits, none of which the call asked for.
#[test]
fn a_refused_set_param_of_another_users_thread_does_not_speak_of_switching() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Without root: pid 1 is another user's (root's) thread, if visible.
        let Some(init) = Tid::from_raw(1) else { return };
        if sched::get_scheduler(Some(init)) != Ok(sched::Policy::Other) {
            return;
        }
        let hint = refused_hint(init).unwrap();
        assert!(!hint.contains("switching"), "{hint}");
        assert!(hint.contains("another user's"), "{hint}");
        return;
    }
    let (go, wait) = mpsc::channel::<()>();
    let (tell, told) = mpsc::channel();
    let h = std::thread::spawn(move || {
        tell.send(sched::gettid()).unwrap();
        let _ = wait.recv();
    });
    let target = told.recv().unwrap();
    // SAFETY: the child only drops to uid 65534, makes one posixrt call and
    // leaves with _exit; this binary's one test runs no other thread that
    // could hold a lock across the fork.
    let status = unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                3
            } else {
                match refused_hint(target) {
                    Ok(h) if h.contains("switching") || !h.contains("another user's") => {
                        eprintln!("the hint speaks of switching, or not of the owner: {h}");
                        1
                    }
                    Ok(_) => 0,
                    Err(e) => {
                        eprintln!("{e}");
                        2
                    }
                }
            };
            libc::_exit(code);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        status
    };
    drop(go);
    h.join().unwrap();
    assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "see the child's stderr above");
}
