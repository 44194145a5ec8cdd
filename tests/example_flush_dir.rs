//! `trace_overhead --flush-dir DIR`: its log measurement writes two trace logs
//! into DIR. A log that cannot be written (a full disk) must not leave its file
//! behind, and a DIR where no file can be made is a usage error that names it,
//! before the measurements, not an unnamed "No such file or directory" at the
//! end of the run.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

/// A scratch directory, removed with its contents on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "posixrt-example-flush-dir-{}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn entries(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `trace_overhead` with short measurements and its logs in `dir`.
fn trace_overhead(dir: &str) -> Command {
    let mut cmd = Command::new(example_bin("trace_overhead"));
    cmd.args([
        "--events",
        "1000",
        "--flush-secs",
        "1",
        "--flush-rate",
        "1000000",
        "--flush-dir",
        dir,
    ])
    .stdin(Stdio::null());
    cmd
}

/// The logs cannot grow past 64 KiB (RLIMIT_FSIZE, SIGXFSZ ignored: a write
/// past it fails with EFBIG, as on a full disk): the run fails, says why, and
/// leaves no log in the directory. Before, the FLUSH measurement's log stayed
/// there, 64 KiB of it (2 MiB on a small full tmpfs).
#[test]
fn a_log_that_cannot_be_written_is_not_left_behind() {
    let dir = Scratch::new("full");
    let mut cmd = trace_overhead(dir.0.to_str().unwrap());
    // SAFETY: between fork and exec the child only calls setrlimit and
    // signal, async-signal-safe system calls on values of its own.
    unsafe {
        cmd.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let o: Output = cmd.output().expect("run trace_overhead");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(err.starts_with("trace_overhead: "), "{err}");
    assert_eq!(dir.entries(), Vec::<String>::new(), "left behind; {err}");
}

/// A directory where no file can be made (/proc: even root gets ENOENT) is a
/// usage error naming it and the reason, before any measurement.
#[test]
fn a_flush_dir_that_takes_no_file_is_a_usage_error_naming_it() {
    let o = trace_overhead("/proc")
        .output()
        .expect("run trace_overhead");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--flush-dir /proc"), "{err}");
    assert!(!err.contains("(os error"), "{err}");
    assert!(o.stdout.is_empty(), "{o:?}");
}

/// The descriptors of process `pid` open on a file of `dir`, as /proc shows
/// their targets (` (deleted)` appended to one unlinked).
fn files_open_in(pid: u32, dir: &std::path::Path) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|t| t.starts_with(dir))
        .map(|t| t.to_string_lossy().into_owned())
        .collect()
}

/// A run killed while it writes its log (Ctrl-C, a kill, an OOM kill) leaves
/// nothing in the flush directory, /dev/shm by default: the log is unlinked
/// as soon as it is made, and read back through a descriptor. Before, a
/// Ctrl-C two seconds into the measurement left a 120 MB
/// trace_overhead-PID.trace in /dev/shm, memory nobody would free.
#[test]
fn a_killed_run_leaves_no_log_behind() {
    let dir = Scratch::new("killed");
    let mut cmd = trace_overhead(dir.0.to_str().unwrap());
    // Long enough that the log is open when it is killed.
    cmd.args(["--flush-secs", "60"]).stdout(Stdio::null());
    let mut child = cmd.spawn().expect("run trace_overhead");
    // Until the measurement has its log open, and (for at most 10 s more,
    // which the unlinked log needs not) until the log is unlinked.
    let mut first_seen = None;
    loop {
        let open = files_open_in(child.id(), &dir.0);
        if let Some(t) = first_seen {
            if open.iter().all(|f| f.ends_with(" (deleted)"))
                || std::time::Instant::now().duration_since(t).as_secs() >= 10
            {
                break;
            }
        } else if !open.is_empty() {
            first_seen = Some(std::time::Instant::now());
            continue;
        }
        if let Ok(Some(s)) = child.try_wait() {
            panic!("trace_overhead ended before its log was open: {s}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert_eq!(dir.entries(), Vec::<String>::new(), "left behind");
}
