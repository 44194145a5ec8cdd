//! The benchmarks that make a test file in the temp dir (`aio_latency`, and
//! `aio_peers` through the same check): a temp dir that takes no file is a usage
//! error that says it is the temp dir and how to choose another (TMPDIR), not
//! an error about a file the user never named.

use std::process::{Command, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

/// TMPDIR missing, or where no file can be made (/proc: even root gets
/// ENOENT there): exit 2, one line on standard error naming the temp dir and
/// TMPDIR, the errno named as the library names it. Before: exit 1 with
/// "aio_latency: /proc/posixrt-aio-latency-PID: No such file or directory (os
/// error 2)", a path the user never gave.
#[test]
fn a_temp_dir_that_takes_no_file_is_named_with_tmpdir() {
    for dir in ["/nonexistent-posixrt-temp-dir", "/proc"] {
        let o = Command::new(example_bin("aio_latency"))
            .args(["--ops", "100", "--qd32-ops", "320", "--file-size-mb", "1"])
            .env("TMPDIR", dir)
            .stdin(Stdio::null())
            .output()
            .expect("run aio_latency");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "TMPDIR={dir}: {o:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(dir) && err.contains("TMPDIR"), "{err}");
        assert!(!err.contains("(os error"), "{err}");
        assert!(o.stdout.is_empty(), "{o:?}");
    }
}
