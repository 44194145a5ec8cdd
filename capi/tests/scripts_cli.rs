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
    Path::new(CRATE).parent().expect("workspace root").to_path_buf()
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
        .env_remove("DESTDIR")
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
