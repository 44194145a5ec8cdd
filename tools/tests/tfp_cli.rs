//! The `tfp` command line at its edges: bad numbers, `--help`, and an output that
//! goes away (a closed pipe) or cannot be written (a full disk). The listing
//! itself is tested in tfp.rs.

use std::process::Command;
use std::time::Instant;

mod common;
use common::{me, stdout, tfp, wait_registry};

#[path = "../../tests/common/signals.rs"]
mod signals;

/// `tfp --watch 1 | head -3`: the reader goes away. tfp ends quietly (no signal,
/// exit 0, nothing on stderr), and its own registry file goes with it, as on
/// SIGINT (a death by SIGPIPE would leave it in /dev/shm for the next reader to
/// clean up). With `--no-self` and nothing marked, each refresh is its header line
/// alone: that write too ends it.
#[test]
fn watch_into_a_closed_pipe_ends_quietly_and_removes_its_registry() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    for no_self in [false, true] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfp"));
        cmd.args(["--watch", "0.05", common::NO_MATCH])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if no_self {
            cmd.arg("--no-self");
        }
        signals::default_action(&mut cmd, &[libc::SIGPIPE]);
        let mut w = cmd.spawn().unwrap();
        let pid = w.id() as i32;
        let file = (!no_self).then(|| wait_registry(pid));
        let mut out = w.stdout.take().unwrap();
        let mut first = [0u8; 4];
        out.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"tfp:");
        drop(out);
        // Bounded: tfp refreshes every 50 ms, and the first refresh after the
        // close ends it.
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = w.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed().as_secs() > 20 {
                let _ = w.kill();
                let _ = w.wait();
                panic!("no_self {no_self}: tfp --watch went on writing into a closed pipe");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(status.signal(), None, "no_self {no_self}: {status:?}");
        assert!(status.success(), "no_self {no_self}: {status:?}");
        assert!(err.is_empty(), "no_self {no_self}: {err}");
        if let Some(file) = file {
            assert!(!file.exists(), "{} left behind", file.display());
        }
    }
}

/// A bad number is reported for what it is: a negative --watch or -n is a value out
/// of range (not "unexpected argument '-1'", an option clap did not know), and a pid
/// too large for a pid is not called negative.
#[test]
fn bad_numbers_are_named_for_what_is_wrong() {
    for (args, says, not) in [
        (
            &["--watch", "-1"][..],
            "not a number of seconds",
            "unexpected argument",
        ),
        (
            &["--watch", "0.05", "-n", "-1"],
            "not a number of refreshes (1 or more)",
            "unexpected argument",
        ),
        (&["-p", "99999999999"], "from 1 to 2147483647", "positive"),
        (&["-p", "0"], "from 1 to 2147483647", "unexpected argument"),
    ] {
        let o = tfp(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(says) && !e.contains(not), "{args:?}: {e}");
    }
}

/// `--help` is enough to start: it gives examples and the exit statuses, as
/// `rtrace --help` does.
#[test]
fn help_has_examples_and_exit_statuses() {
    let o = tfp(&["--help"]);
    assert!(o.status.success(), "{o:?}");
    let h = stdout(&o);
    for want in [
        "Examples:\n  tfp ",
        "tfp --watch ",
        "Exit status:\n  0 ",
        "  1 ",
        "  2 ",
    ] {
        assert!(h.contains(want), "{want:?} missing from:\n{h}");
    }
}

/// Standard output that cannot be written for another reason than a closed pipe
/// (a full disk: /dev/full) is an error, exit 1 with one line naming it: the
/// listing was lost, and exit 0 would say it was written.
#[test]
fn an_unwritable_stdout_is_an_error() {
    for args in [&[][..], &["--json"]] {
        let Some(o) = common::run_into_dev_full(env!("CARGO_BIN_EXE_tfp"), args) else {
            return; // no /dev/full on this system: nothing to write to
        };
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.lines()
                .any(|l| l.starts_with("tfp: standard output: ") && l.contains("No space left")),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn zero_iterations_is_a_usage_error() {
    // "stop after N refreshes": 0 refreshes is no listing at all, not one.
    let o = tfp(&["--watch", "0.05", "-n", "0", "-p", &me().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
}
