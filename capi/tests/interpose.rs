//! The interposed signal and mutex calls under `LD_PRELOAD=libposixrt.so`, for
//! programs built against glibc alone: they get what glibc gives them, whichever
//! symbol version they were linked to (`tests/c/interpose_versions.c`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// `target/<profile>`: holds `libposixrt.so` (built on demand).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

fn lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = target_dir();
        // Always (a no-op when fresh): a stale library must never be tested.
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "-p", "posixrt-capi", "--lib"])
            .current_dir(CRATE);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().expect("run cargo build").success(),
            "cargo build failed"
        );
        let lib = dir.join("libposixrt.so");
        assert!(lib.exists(), "no libposixrt.so");
        lib
    })
}

/// Compiles a C test against glibc alone (strict C99, no warnings).
fn build(name: &str) -> PathBuf {
    let src = Path::new(CRATE).join("tests/c").join(name);
    let out = std::env::temp_dir().join(format!(
        "posixrt-interpose-{}-{}",
        std::process::id(),
        name.trim_end_matches(".c")
    ));
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-pthread")
        .output()
        .expect("run the C compiler (cc)");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "cc failed or warned for {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn run(exe: &Path, preload: Option<&Path>) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env_remove("LD_PRELOAD");
    if let Some(lib) = preload {
        cmd.env("LD_PRELOAD", lib);
    }
    cmd.output().expect("run the C program")
}

fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "ok",
        "{what}: {:?}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A program linked to glibc's compatibility `pthread_kill` (as every program
/// built before glibc 2.34 is) gets ESRCH for an exited thread under
/// `LD_PRELOAD`, as from glibc: the interposer forwards each version to the
/// same version of glibc's.
#[test]
fn compat_pthread_kill_under_preload_is_glibcs() {
    let exe = build("interpose_versions.c");
    assert_ok(&run(&exe, None), "glibc alone");
    assert_ok(&run(&exe, Some(lib())), "LD_PRELOAD=libposixrt.so");
    let _ = std::fs::remove_file(&exe);
}
