//! A Rust program using posixrt runs under `valgrind --tool=memcheck`, the
//! first memory checker a user reaches for. Skipped where valgrind is not
//! installed.
//!
//! rustix read the auxiliary vector with `prctl(PR_GET_AUXV)`, which valgrind
//! does not emulate, and then the kernel's vDSO, which valgrind does not map:
//! the program died with SIGSEGV at its first clock read. With rustix's
//! `use-libc-auxv` it asks libc's `getauxval`, which valgrind adjusts.

#[path = "common/example_bin.rs"]
mod example_bin;

use std::process::Command;

fn have_valgrind() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no valgrind on this machine");
    }
    ok
}

/// The trace example (clock reads, a stream, its attributes) under memcheck:
/// exit 0, no error (`--error-exitcode`), and its usual output.
#[test]
fn a_trace_program_runs_under_memcheck() {
    if !have_valgrind() {
        return;
    }
    let exe = example_bin::example_bin("trace_defaults");
    let out = Command::new("valgrind")
        .args(["-q", "--error-exitcode=9", "--tool=memcheck"])
        .arg(&exe)
        .output()
        .expect("run valgrind");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("trace"), "{stdout}");
}
