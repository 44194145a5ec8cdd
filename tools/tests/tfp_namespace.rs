//! tfp run in a container that shares the host's `/dev/shm` (`docker run
//! --ipc=host`), or on a host whose containers share it: the registries of
//! processes in another pid namespace are named by pids that mean nothing
//! here, and are skipped (their owners' locks say they are alive). tfp must
//! not tell root to run as root for them.

use std::process::Command;

/// A pid that names no process now: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn a_registry_of_another_pid_namespace_is_said_to_be_one() {
    // A live writer elsewhere: a registry file named for a pid this reader
    // cannot see, whose owner holds its lock.
    let path = format!("/dev/shm/posixrt-mark-{}-1", dead_pid());
    let f = std::fs::File::create(&path).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let o = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .arg("--no-self")
        .output()
        .unwrap();
    let kept = std::path::Path::new(&path).exists();
    drop(f);
    let _ = std::fs::remove_file(&path);
    assert!(kept, "a live writer's registry was removed");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("skipped"), "{e}");
    assert!(e.contains("another pid namespace"), "{e}");
}
