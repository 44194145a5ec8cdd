//! The interposed signal and mutex calls under `LD_PRELOAD=libposixrt.so`, for
//! programs built against glibc alone: they get what glibc gives them, whichever
//! symbol version they were linked to (`tests/c/interpose_versions.c`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{lib_dir, target_dir, CRATE};

fn lib() -> PathBuf {
    lib_dir().join("libposixrt.so")
}

/// Compiles a C test against glibc alone (strict C99, no warnings).
fn build(name: &str) -> PathBuf {
    let src = Path::new(CRATE).join("tests/c").join(name);
    let out = target_dir().join(format!(
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
    assert_ok(&run(&exe, Some(&lib())), "LD_PRELOAD=libposixrt.so");
    let _ = std::fs::remove_file(&exe);
}

/// An `execv` made before libposixrt's load-time code ran (from the
/// constructor of an object the loader initialises first) reaches the real
/// one: the interposer looks it up then, where it used to fail with ENOSYS.
/// So do `execl`, `execle` and `execlp` (their trampolines look it up alike).
#[test]
fn an_exec_from_an_earlier_constructor_is_not_refused() {
    let src = Path::new(CRATE).join("tests/c/exec_from_constructor.c");
    let so = target_dir().join(format!(
        "posixrt-interpose-{}-exec_from_constructor.so",
        std::process::id()
    ));
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c99",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Wextra",
            "-Werror",
        ])
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .output()
        .expect("run the C compiler (cc)");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "cc failed or warned:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // libposixrt.so first in the search order (its exec is the one called),
    // the constructor's object initialised first (the later one is).
    let preload = format!("{} {}", lib().display(), so.display());
    let outs: Vec<_> = ["execv", "execl", "execle", "execlp"]
        .iter()
        .map(|call| {
            let out = Command::new("/bin/true")
                .env("LD_PRELOAD", &preload)
                .env("EXEC_FROM_CONSTRUCTOR", "/bin/echo")
                .env("EXEC_FROM_CONSTRUCTOR_CALL", call)
                .output()
                .expect("run /bin/true");
            (call, out)
        })
        .collect();
    let _ = std::fs::remove_file(&so);
    for (call, out) in outs {
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
            "{call}: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
