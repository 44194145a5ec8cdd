//! A trace log read from a pipe while its writer is silent
//! (`tests/c/trace_log_wait.c`, one test each): the waiting read lets
//! signals through. Compiled with the system `cc` against `trace.h` and
//! linked with `-lposixrt`.

mod c_prog;
use c_prog::{build, run, Link, CRATE};

fn log_wait_test(name: &str) {
    let include = format!("-I{CRATE}/include");
    let flags = [
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-pedantic",
        "-Werror",
        "-O1",
        "-g",
        &include,
    ];
    let exe = build(&c_prog::c_src("trace_log_wait.c"), Link::Linked, &flags);
    let o = run(&exe, Link::Linked, &[name], &[]);
    assert!(
        o.status.success(),
        "{name}: {:?}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("ok {name}")
    );
}

#[test]
fn log_wait_signals() {
    log_wait_test("log_wait_signals");
}
