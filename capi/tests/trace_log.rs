//! Trace logs read back from C (`tests/c/trace_log.c`, one test each):
//! `posix_trace_open` on a pipe, and a stream name of any bytes kept through
//! the log. Compiled with the system `cc` against `trace.h` and linked with `-lposixrt` (the trace functions are not glibc's:
//! no preloaded build).

mod c_prog;

fn log_test(name: &str) {
    c_prog::trace_prints_ok_named("trace_log.c", name);
}

macro_rules! log_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                log_test(stringify!($name));
            }
        )*
    };
}

log_tests!(log_open_pipe, log_open_live_pipe, log_name_bytes);

/// Every test of the C program is run by one above.
#[test]
fn every_c_test_is_run() {
    let src = std::fs::read_to_string(c_prog::c_src("trace_log.c")).expect("read trace_log.c");
    let this =
        std::fs::read_to_string(std::path::Path::new(c_prog::CRATE).join("tests/trace_log.rs"))
            .expect("read trace_log.rs");
    let listed = this
        .split("log_tests!(")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("the log_tests! list");
    for line in src.lines().filter(|l| l.trim_start().starts_with("{\"")) {
        let name = line.split('"').nth(1).expect("a test name");
        assert!(
            listed.split(',').any(|n| n.trim() == name),
            "C test {name} is not run"
        );
    }
}
