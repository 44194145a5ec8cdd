//! The command lines of the shell scripts the READMEs tell a user to run
//! (`capi/install.sh`, the benches in `capi/bench/`, `capi/tests/opts.sh` and
//! `benches/aio_instructions.sh`), held to the convention of the examples and
//! tools: `--help` prints the usage and exits 0; a usage error is one line on
//! standard error, `NAME: ...`, and exit status 2, before anything runs.
//!
//! The scripts run with a `PATH` whose `cargo`, `cc`, `fio`, `python3`,
//! `valgrind` and `apt-get` fail at once (status 97), so that a script that
//! takes a bad command line for a good one stops there instead of building or
//! benchmarking.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// The scripts, by path from the workspace root.
const SCRIPTS: &[&str] = &[
    "capi/install.sh",
    "capi/bench/fio.sh",
    "capi/bench/listing77.sh",
    "capi/bench/rt_read.sh",
    "capi/bench/trace.sh",
    "capi/tests/opts.sh",
    "benches/aio_instructions.sh",
];

/// A scratch directory of this test process, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!(
            "posixrt-capi-scripts-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory of stand-ins for the commands a script runs once its command
/// line is accepted: each fails at once with status 97.
fn stubs(dir: &Scratch) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.0.join("bin");
    std::fs::create_dir_all(&bin).expect("stub dir");
    for name in ["cargo", "cc", "fio", "python3", "valgrind", "apt-get"] {
        let p = bin.join(name);
        std::fs::write(&p, "#!/bin/sh\nexit 97\n").expect("write stub");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod stub");
    }
    bin
}

fn root() -> PathBuf {
    Path::new(CRATE)
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs `bash SCRIPT ARGS` from `dir` with the stubs first in `PATH`, killed
/// after 60 s (a script that got past its command line must not hang the test).
fn run(script: &str, args: &[&str], dir: &Scratch) -> Output {
    let path = format!(
        "{}:{}",
        stubs(dir).display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("timeout")
        .arg("60")
        .arg("bash")
        .arg(root().join(script))
        .args(args)
        .current_dir(&dir.0)
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        // Whatever a script that got past its command line installs lands here.
        .env("DESTDIR", dir.0.join("destdir"))
        .stdin(Stdio::null())
        .output()
        .expect("run bash")
}

fn name(script: &str) -> &str {
    Path::new(script)
        .file_name()
        .and_then(|n| n.to_str())
        .expect("script name")
}

#[test]
fn help_prints_the_usage_and_no_script_line() {
    let dir = Scratch::new("help");
    for script in SCRIPTS {
        let o = run(script, &["--help"], &dir);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{script} --help: {o:?}");
        assert!(o.stderr.is_empty(), "{script} --help: {o:?}");
        assert!(
            out.lines().any(|l| l.contains("sage: ")),
            "{script} --help has no usage line:\n{out}"
        );
        // The help is the script's header comment: the shell code after it
        // (`set -euo pipefail`, ...) is not part of it.
        for l in out.lines() {
            assert!(
                !(l.starts_with("set -") || l.starts_with("root=")),
                "{script} --help prints a line of the script: {l:?}\n{out}"
            );
        }
    }
}

/// Asserts that `script args` is refused as a usage error naming `option`.
fn assert_usage_error(script: &str, args: &[&str], option: &str, dir: &Scratch) {
    let o = run(script, args, dir);
    let err = String::from_utf8_lossy(&o.stderr);
    let what = format!("{script} {args:?}");
    assert_eq!(o.status.code(), Some(2), "{what}: {o:?}");
    assert!(o.stdout.is_empty(), "{what}: {o:?}");
    assert_eq!(err.lines().count(), 1, "{what}:\n{err}");
    assert!(
        err.starts_with(&format!("{}: ", name(script))) && err.contains(option),
        "{what}: {err}"
    );
}

/// An option given last, without its value, or with an empty one, and a count
/// that is not a whole number of 1 or more, are usage errors (bash's own `${2:?}` message, "line
/// 18: 2: --prefix needs a value", came with status 1; `--runs x` went on to
/// `seq x`, and `trace.sh --runs 0` ended in a Python traceback).
#[test]
fn a_missing_value_or_a_bad_count_is_a_usage_error() {
    let dir = Scratch::new("values");
    let valued: &[(&str, &[&str])] = &[
        (
            "capi/install.sh",
            &["--prefix", "--libdir", "--includedir", "--profile"],
        ),
        (
            "capi/bench/fio.sh",
            &["--runtime", "--repeat", "--dir", "--lib", "--rw"],
        ),
        ("capi/bench/listing77.sh", &["--runs", "--lib"]),
        ("capi/bench/rt_read.sh", &["--reads", "--rounds", "--lib"]),
        ("capi/bench/trace.sh", &["--runs"]),
        ("benches/aio_instructions.sh", &["--engines"]),
    ];
    for (script, options) in valued {
        for option in *options {
            assert_usage_error(script, &[option], option, &dir);
            // An empty value (an unset variable's) is no value: `--prefix ""`
            // must not install into /lib.
            assert_usage_error(script, &[option, ""], option, &dir);
        }
    }
    // opts.sh takes the suite's directory first.
    assert_usage_error("capi/tests/opts.sh", &[], "OPTS_DIR", &dir);
    for option in [
        "--lib",
        "--runs",
        "--timeout",
        "--only",
        "--ifaces",
        "--cflags",
    ] {
        assert_usage_error("capi/tests/opts.sh", &[".", option], option, &dir);
        assert_usage_error("capi/tests/opts.sh", &[".", option, ""], option, &dir);
    }
    let counted: &[(&str, &[&str])] = &[
        ("capi/bench/fio.sh", &["--runtime", "--repeat"]),
        ("capi/bench/listing77.sh", &["--runs"]),
        ("capi/bench/rt_read.sh", &["--reads", "--rounds"]),
        ("capi/bench/trace.sh", &["--runs"]),
    ];
    for (script, options) in counted {
        for option in *options {
            for bad in ["x", "0", "-3", "2.5"] {
                assert_usage_error(script, &[option, bad], option, &dir);
            }
        }
    }
    for option in ["--runs", "--timeout"] {
        for bad in ["x", "0"] {
            assert_usage_error("capi/tests/opts.sh", &[".", option, bad], option, &dir);
        }
    }
}

/// The bench scripts build the library with cargo and then preload the one
/// cargo built: under `CARGO_TARGET_DIR` (absolute, or relative to the
/// workspace root, where they run cargo) that is `$CARGO_TARGET_DIR/release`,
/// not `target/release`, which then holds an older build or none.
#[test]
fn bench_lib_follows_cargo_target_dir() {
    let dir = Scratch::new("target-dir");
    let stubs = stubs(&dir);
    // This test's cargo stand-in succeeds: the "build" is the file below.
    std::fs::write(stubs.join("cargo"), "#!/bin/sh\nexit 0\n").expect("write stub");
    let target = dir.0.join("elsewhere");
    std::fs::create_dir_all(target.join("release")).expect("target dir");
    std::fs::write(target.join("release/libposixrt.so"), "").expect("fake library");
    let lib_sh = root().join("capi/bench/lib.sh");
    let path = format!(
        "{}:{}",
        stubs.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(r#". "$1" && bench_lib "$2" "" && bench_target_dir "$2""#)
        .arg("bash")
        .arg(&lib_sh)
        .arg(root())
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            target.join("release/libposixrt.so").display().to_string(),
            target.join("release").display().to_string(),
        ],
        "{o:?}"
    );
}

/// `opts.sh` preloads the library cargo built, as the bench scripts do: without
/// `--lib`, the one under `CARGO_TARGET_DIR` (absolute, or relative to the
/// workspace root) when that is set, not `target/release`, which then holds an
/// older build or none.
#[test]
fn opts_sh_follows_cargo_target_dir() {
    let dir = Scratch::new("opts-target-dir");
    let stubs = stubs(&dir);
    let path = format!(
        "{}:{}",
        stubs.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let opts = |target: &Path| {
        Command::new("timeout")
            .arg("60")
            .arg("bash")
            .arg(root().join("capi/tests/opts.sh"))
            .arg(&dir.0)
            .current_dir(&dir.0)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", target)
            .stdin(Stdio::null())
            .output()
            .expect("run bash")
    };
    // No library there: the message names the one it looked for.
    let target = dir.0.join("elsewhere");
    let o = opts(&target);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let want = target.join("release/libposixrt.so");
    assert!(err.starts_with(&format!("no {} ", want.display())), "{err}");
    // A library there: taken, and the next check (the suite's directory) speaks.
    std::fs::create_dir_all(target.join("release")).expect("target dir");
    std::fs::write(&want, "").expect("fake library");
    let o = opts(&target);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(err.contains("is not open_posix_testsuite"), "{err}");
    // Relative: to the workspace root, where cargo runs.
    let o = opts(Path::new("posixrt-no-such-target"));
    let err = String::from_utf8_lossy(&o.stderr);
    let want = root().join("posixrt-no-such-target/release/libposixrt.so");
    assert!(err.starts_with(&format!("no {} ", want.display())), "{err}");
}
