//! The tools name a failed system call's error one way, as `posixrt::Error` does:
//! its text, then its name and number (`Is a directory (EISDIR 21)`), never
//! `(os error 21)` (Rust's `io::Error`) or `(errno 21)` (an errno without a name).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use posixrt::trace::{Trace, TraceAttr};

/// A scratch directory, removed with its contents on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("rtrace-test-errno-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn make_log(p: &Path) {
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(p).unwrap()).unwrap();
    t.start().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// Runs `bin ARGS` with `stdin` and `stdout`; standard error is captured.
fn run(bin: &str, args: &[&str], stdin: Stdio, stdout: Stdio) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The failure's one line on standard error ends its errno as `want` does
/// (`(EISDIR 21)`), and in no other style.
fn assert_style(what: &str, o: &Output, want: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what}: {o:?}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.contains(want), "{what}: wanted {want}: {err}");
    assert!(
        !err.contains("(os error") && !err.contains("(errno "),
        "{what}: {err}"
    );
}

#[test]
fn rtrace_names_errnos_as_the_library_does() {
    let rtrace = env!("CARGO_BIN_EXE_rtrace");
    let d = Scratch::new("rtrace");
    let dir = d.0.to_str().unwrap();
    let log = d.0.join("ok.trace");
    make_log(&log);
    let log = log.to_str().unwrap();
    let missing = d.0.join("missing");
    let missing = missing.to_str().unwrap();
    let into_missing_dir = format!("{missing}/out.json");

    // The library's open, a directory: was "(errno 21)".
    let o = run(rtrace, &["dump", dir], Stdio::null(), Stdio::null());
    assert_style("dump DIR", &o, "Is a directory (EISDIR 21)");
    // The library's open, no such file (as it was).
    let o = run(rtrace, &["dump", missing], Stdio::null(), Stdio::null());
    assert_style("dump MISSING", &o, "No such file or directory (ENOENT 2)");
    // rtrace's own read of standard input, a directory: was "(os error 21)".
    let o = run(
        rtrace,
        &["dump", "-"],
        File::open(&d.0).unwrap().into(),
        Stdio::null(),
    );
    assert_style("dump - < DIR", &o, "Is a directory (EISDIR 21)");
    // rtrace's own write of the export: was "(os error 2)".
    let o = run(
        rtrace,
        &["export", "--format", "chrome", log, "-o", &into_missing_dir],
        Stdio::null(),
        Stdio::null(),
    );
    assert_style(
        "export -o MISSING/out.json",
        &o,
        "No such file or directory (ENOENT 2)",
    );
    // Its standard output, a full disk: was "(os error 28)".
    if let Ok(full) = File::options().write(true).open("/dev/full") {
        let o = run(rtrace, &["dump", log], Stdio::null(), full.into());
        assert_style("dump > /dev/full", &o, "(ENOSPC 28)");
    }
}

/// tfp and rtstat on a full disk: was "(os error 28)".
#[test]
fn tfp_and_rtstat_name_errnos_as_the_library_does() {
    let Ok(full) = File::options().write(true).open("/dev/full") else {
        return; // no /dev/full on this system: nothing to write to
    };
    for bin in [env!("CARGO_BIN_EXE_tfp"), env!("CARGO_BIN_EXE_rtstat")] {
        let o = run(bin, &[], Stdio::null(), full.try_clone().unwrap().into());
        assert_style(bin, &o, "No space left on device (ENOSPC 28)");
    }
}
