//! A `Notify::Signal` must name a signal the program can handle: the numbers
//! between the standard signals and `SIGRTMIN()` (32 and 33 with glibc) are
//! the C library's own, refused by `sigaction`, and their default action ends
//! the process. They are EINVAL at submission, as 0 and past `SIGRTMAX()` are,
//! for a request and for a list; they used to be accepted, and the request's
//! completion killed the program.
//!
//! Each request reads an empty pipe and cannot complete: one wrongly accepted
//! fails the test at once, and its pipe, request and context are leaked, so
//! that nothing completes or cancels it before the process ends.

#[path = "common/uring.rs"]
mod uring;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};
use posixrt::ErrorKind;

fn reserved_signals_refused(b: Backend) {
    let aio = Aio::builder().backend(b).build().unwrap();
    let (r, w) = rustix::pipe::pipe().unwrap();
    for signo in libc::SIGSYS + 1..libc::SIGRTMIN() {
        let op = Op::read(&r, 0, vec![0u8; 1]).notify(Notify::signal(signo, 1));
        match aio.submit(op) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidInput, "signal {signo}: {e}"),
            Ok(req) => {
                std::mem::forget((req, aio, r, w));
                panic!("a request notifying with signal {signo} was accepted");
            }
        }
        let entries = [Some(Op::read(&r, 0, vec![0u8; 1]))];
        match aio.lio_listio(ListMode::NoWait, entries, Notify::signal(signo, 1)) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidInput, "signal {signo}: {e}"),
            Ok(list) => {
                std::mem::forget((list, aio, r, w));
                panic!("a list notifying with signal {signo} was accepted");
            }
        }
    }
}

#[test]
fn signals_reserved_by_the_c_library_are_refused() {
    if !uring::uring_refused() {
        reserved_signals_refused(Backend::Uring);
    }
    reserved_signals_refused(Backend::Threads);
}
