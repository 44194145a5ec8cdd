//! A forked child that marks its thread and then exits normally (`exit`, so
//! the `atexit` clean-up runs) removes only its own registry: the parent's
//! file and marks stay. And a live process whose first thread (the
//! thread-group leader) has exited, which /proc shows as a zombie, is listed
//! with its marked threads (it was taken for dead and counted unreadable).
//! The tests fork: they run one at a time ([`SERIAL`]).

#[path = "common/child.rs"]
mod child;

use posixrt::mark;

/// Held by each test: a fork while the other test's threads hold locks of the
/// crate would leave the child stuck on them.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_forked_child_exiting_normally_leaves_the_parents_registry() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    mark::set("deep fork parent").unwrap();
    let path = mark::registry_path().unwrap();
    // SAFETY: the child only marks (the documented use after fork in a process
    // where no other thread is inside a first mark) and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match mark::set("deep fork child") {
            Ok(()) if mark::registry_path().is_some_and(|p| p != path) => 0,
            Ok(()) => 2,
            Err(_) => 3,
        };
        // SAFETY: ends the child; `exit` runs the atexit handlers on purpose.
        unsafe { libc::exit(code) }
    }
    let status = child::wait_child(pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status:#x}"
    );
    assert!(path.exists(), "the parent's registry file was removed");
    let me = std::process::id() as i32;
    let snap = mark::snapshot_pid(me).unwrap();
    assert!(
        snap.threads().any(|(_, t)| t.marker == "deep fork parent"),
        "{snap:?}"
    );
    assert!(mark::snapshot_pid(pid).unwrap().processes.is_empty());
}

#[test]
fn a_process_whose_first_thread_exited_is_still_listed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut fds = [0; 2];
    // SAFETY: fds is a writable array of two ints.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: the child marks, spawns one thread and ends its first thread.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        mark::set("deep main about to pthread_exit").unwrap();
        let worker = std::thread::spawn(move || {
            mark::set("deep worker of exited main").unwrap();
            // SAFETY: one byte to the pipe's write end.
            unsafe { libc::write(w, b"x".as_ptr().cast(), 1) };
            std::thread::sleep(std::time::Duration::from_secs(30));
        });
        std::mem::forget(worker);
        // SAFETY: ends the child's first thread only (the exit system call, not
        // exit_group: no unwinding through the harness); the worker keeps the process.
        unsafe { libc::syscall(libc::SYS_exit, 0) };
        unreachable!()
    }
    // SAFETY: closes our copy of the write end.
    unsafe { libc::close(w) };
    let mut b = [0u8; 1];
    // SAFETY: reads one byte from the pipe's read end.
    assert_eq!(unsafe { libc::read(r, b.as_mut_ptr().cast(), 1) }, 1);
    for _ in 0..2000 {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        if s.contains(") Z ") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let files = || {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains(&format!("-mark-{pid}-"))
            })
            .count()
    };
    let before = files();
    let snap = mark::snapshot_pid(pid).unwrap();
    let after = files();
    // SAFETY: kills our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    child::wait_child(pid);
    eprintln!("files before {before} after {after}: {snap:?}");
    let p = snap.process(pid).expect("the live process is listed");
    assert_eq!(p.threads.len(), 1, "{p:?}");
    assert_eq!(p.threads[0].marker, "deep worker of exited main");
}
