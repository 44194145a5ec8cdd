//! The examples' standard output when it cannot be written, as the tools handle
//! theirs: a full disk (`/dev/full`) is exit 1 with one line on standard error,
//! and a closed pipe (`example | head`) ends the example quietly, never in a
//! "failed printing to stdout" panic.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

/// Examples that print from their first steps on, with short arguments: the tour,
/// and some that .ci/run smoke-runs. (`--help` goes through the examples' shared
/// argument parser.)
const RUNS: &[(&str, &[&str])] = &[
    ("tour", &[]),
    ("tour", &["--help"]),
    ("sched_info", &[]),
    ("trace_defaults", &[]),
    ("bytesum", &["/proc/self/exe"]),
    ("linecount", &["/etc/passwd"]),
];

/// A fresh working directory (some examples write their trace logs there),
/// removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "posixrt-example-output-{}-{tag}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn command(bin: &Path, args: &[&str], dir: &Scratch) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args).current_dir(&dir.0).stdin(Stdio::null());
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_full_disk_is_exit_1_with_one_line() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system: nothing to write to
    };
    let dir = Scratch::new("full");
    for &(name, args) in RUNS {
        let bin = example_bin(name);
        let o = command(&bin, args, &dir)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name} {args:?}: {e}");
        assert_eq!(
            e.lines().collect::<Vec<_>>(),
            [format!(
                "{name}: standard output: No space left on device (ENOSPC 28)"
            )],
            "{name} {args:?}"
        );
    }
}

/// Runs the example with its standard output a pipe whose reader goes away after
/// the first line; `block_sigpipe` starts it with SIGPIPE blocked (inherited from
/// a parent that blocks it), so its write gets EPIPE instead of the signal.
fn into_closed_pipe(bin: &Path, args: &[&str], dir: &Scratch, block_sigpipe: bool) -> Output {
    let mut cmd = command(bin, args, dir);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if block_sigpipe {
        // SAFETY: between fork and exec the child only calls sigemptyset,
        // sigaddset and sigprocmask, which are async-signal-safe, on a set of
        // its own.
        unsafe {
            cmd.pre_exec(|| {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGPIPE);
                if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    drop(out);
    child.wait_with_output().unwrap()
}

/// Ended by SIGPIPE (its default action), or a quiet exit 0 after EPIPE.
fn quiet_end(s: ExitStatus) -> bool {
    s.signal() == Some(libc::SIGPIPE) || s.code() == Some(0)
}

#[test]
fn a_closed_pipe_ends_the_example_quietly() {
    let dir = Scratch::new("pipe");
    for &(name, args) in RUNS {
        let bin = example_bin(name);
        for block_sigpipe in [false, true] {
            let o = into_closed_pipe(&bin, args, &dir, block_sigpipe);
            let e = stderr(&o);
            assert!(
                quiet_end(o.status),
                "{name} {args:?} (SIGPIPE blocked: {block_sigpipe}): {:?}: {e}",
                o.status
            );
            assert!(
                !e.contains("panicked") && !e.contains("failed printing"),
                "{name} {args:?} (SIGPIPE blocked: {block_sigpipe}): {e}"
            );
            if block_sigpipe {
                assert_eq!(o.status.code(), Some(0), "{name} {args:?}: {e}");
            }
        }
    }
}
