//! `posix_trace_event` at the edges of its arguments
//! (`tests/c/trace_limits.c`, one test each). Compiled with the system `cc`
//! against `trace.h` and linked with `-lposixrt`.

mod c_prog;
use c_prog::{build, run, Link, CRATE};

fn limits_test(name: &str) {
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
    let exe = build(&c_prog::c_src("trace_limits.c"), Link::Linked, &flags);
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
fn event_len_huge() {
    limits_test("event_len_huge");
}
