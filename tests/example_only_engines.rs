//! `aio_latency --only E1,E2`: only the engines asked for are made, so engines
//! that need no io_uring (glibc, pread) are measured where io_uring is refused.

use std::process::{Command, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

#[path = "common/seccomp.rs"]
mod seccomp;

/// `aio_latency --only glibc,pread` where io_uring is refused (a container's
/// seccomp profile, `kernel.io_uring_disabled`): the engines asked for need no
/// io_uring, so they are measured, and nothing speaks of a posixrt backend that
/// was not measured. Before, the io_uring contexts were made whatever `--only`
/// said, and the run ended with the refusal.
#[test]
fn only_engines_without_io_uring_run_where_io_uring_is_refused() {
    let bin = example_bin("aio_latency");
    // The filter is inherited by the threads this thread creates and by the
    // processes it forks: the example runs with io_uring_setup refused.
    let o = std::thread::spawn(move || {
        seccomp::fail_syscall(libc::SYS_io_uring_setup, None, libc::EPERM);
        Command::new(bin)
            .args([
                "--ops",
                "100",
                "--qd32-ops",
                "320",
                "--file-size-mb",
                "1",
                "--only",
                "glibc,pread",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run aio_latency")
    })
    .join()
    .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains(" glibc ") && out.contains(" pread "), "{out}");
    assert!(!out.contains("posixrt uring backend"), "{out}");
}
