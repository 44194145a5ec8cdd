//! `posix_trace_event` at the edges of its arguments
//! (`tests/c/trace_limits.c`, one test each). Compiled with the system `cc`
//! against `trace.h` and linked with `-lposixrt`.

mod c_prog;

fn limits_test(name: &str) {
    c_prog::trace_prints_ok_named("trace_limits.c", name);
}

#[test]
fn event_len_huge() {
    limits_test("event_len_huge");
}
