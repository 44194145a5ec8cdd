//! A trace log read from a pipe while its writer is silent
//! (`tests/c/trace_log_wait.c`, one test each): the waiting read lets
//! signals through (EINTR after a handler without `SA_RESTART`), is a
//! cancellation point, and other calls on the log (its close too) go on
//! meanwhile, also while a record came in part; a timed read of the log is
//! `EINVAL` at once; `posix_trace_open` waiting for the header lets signals
//! through too (until it took the header: then it goes on), and refuses what is not a header as soon as it comes. Compiled with the
//! system `cc` against `trace.h` and linked with `-lposixrt`.

mod c_prog;

fn log_wait_test(name: &str) {
    c_prog::trace_prints_ok_named("trace_log_wait.c", name);
}

#[test]
fn log_wait_signals() {
    log_wait_test("log_wait_signals");
}

#[test]
fn log_wait_others() {
    log_wait_test("log_wait_others");
}

#[test]
fn log_wait_cancel() {
    log_wait_test("log_wait_cancel");
}

#[test]
fn log_wait_close() {
    log_wait_test("log_wait_close");
}

#[test]
fn log_wait_eintr() {
    log_wait_test("log_wait_eintr");
}

#[test]
fn log_wait_timed() {
    log_wait_test("log_wait_timed");
}

#[test]
fn log_wait_partial() {
    log_wait_test("log_wait_partial");
}

#[test]
fn log_open_eintr() {
    log_wait_test("log_open_eintr");
}

#[test]
fn log_open_eintr_taken() {
    log_wait_test("log_open_eintr_taken");
}

#[test]
fn log_open_ends() {
    log_wait_test("log_open_ends");
}
