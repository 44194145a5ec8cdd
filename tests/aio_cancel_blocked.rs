//! `aio_cancel` of a request blocked in a transfer that cannot be stopped: the
//! call reports it not cancelled without waiting for it, as `Request::cancel`
//! promises. Two such transfers: a write to a terminal whose reader does not
//! read (on io_uring, and on the thread engine, where it runs on a
//! `posixrt-aio-tty` thread of its own), and, on the thread engine, a write
//! that holds a worker in `pwrite(2)` (from pages missing under userfaultfd,
//! see `common::Blocker`). `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::thread::JoinHandle;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, CancelResult};

mod common;
use common::both;
use common::{ctx, pty};

/// The state letter and system call number of thread `tid` (`/proc`).
fn state_of(tid: i32) -> Option<(char, i64)> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let st = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
    let sc = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok()?;
    Some((st, sc.split_whitespace().next()?.parse().ok()?))
}

/// True if a thread-engine terminal writer (`posixrt-aio-tty`) sleeps in
/// `write(2)`.
fn blocked_terminal_writer() -> bool {
    common::workers::threads_where(|comm| comm == "posixrt-aio-tty")
        .into_iter()
        .any(|(tid, _)| state_of(tid as i32) == Some(('S', libc::SYS_write)))
}

/// Cancels every request on `fd` from a thread of its own, and watches that
/// thread until the call returns: true with it if the call slept (a futex
/// or poll wait seen 100 times in a row, 1 ms apart, is a cancel waiting for
/// the write).
fn cancel_watched(aio: &Aio, fd: RawFd) -> (JoinHandle<CancelResult>, bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    let canceller = {
        let aio = aio.clone();
        std::thread::spawn(move || {
            tx.send(rustix::thread::gettid().as_raw_nonzero().get())
                .unwrap();
            aio.cancel_fd(fd).unwrap()
        })
    };
    let tid = rx.recv().unwrap();
    let mut asleep = 0;
    while !canceller.is_finished() && asleep < 100 {
        match state_of(tid) {
            Some(('S', nr))
                if nr == libc::SYS_futex
                    || nr == libc::SYS_ppoll
                    || nr == libc::SYS_io_uring_enter =>
            {
                asleep += 1
            }
            _ => asleep = 0,
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    (canceller, asleep >= 100)
}

/// A write of more than a terminal holds, to a terminal nobody reads: it
/// blocks in the middle of its transfer. A cancel of it (by request and by
/// fd) returns at once: NotCanceled (the transfer has begun) or Canceled
/// (the engine could stop it), never waiting for the write to end. (The
/// thread engine's cancel waited up to 5 s for the worker's blocking
/// write(2), asleep all that time, then said NotCanceled.)
fn cancel_blocked_terminal_write(b: Backend) {
    let aio = ctx(b);
    let (mut master, slave) = pty();
    let mut req = aio.write(&slave, 0, vec![b'x'; 256 << 10]).unwrap();
    // The write fills the terminal's buffer, then blocks: on the thread
    // engine, in write(2) on a terminal writer (waited for, so that the
    // cancel comes once it blocks there).
    std::thread::sleep(Duration::from_millis(50));
    if b == Backend::Threads {
        let mut tries = 0;
        while !blocked_terminal_writer() {
            tries += 1;
            assert!(tries < 10_000, "no terminal writer blocks in write(2)");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(!req.is_done(), "{b:?}: the write to the terminal completed");
    let (canceller, waited) = cancel_watched(&aio, slave.as_raw_fd());
    // Let the write end (read what it wrote), whatever happened.
    rustix::fs::fcntl_setfl(&master, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut buf = vec![0u8; 64 << 10];
    let mut tries = 0;
    while !req.is_done() && tries < 10_000 {
        while master.read(&mut buf).is_ok_and(|n| n > 0) {}
        std::thread::sleep(Duration::from_millis(1));
        tries += 1;
    }
    let outcome = canceller.join().unwrap();
    assert!(
        !waited,
        "{b:?}: aio_cancel sleeps until the blocked terminal write ends"
    );
    assert!(
        matches!(outcome, CancelResult::NotCanceled | CancelResult::Canceled),
        "{b:?}: {outcome:?}"
    );
    let c = req.wait().unwrap();
    match outcome {
        CancelResult::Canceled => {
            assert_eq!(c.result.unwrap_err().kind(), posixrt::ErrorKind::Canceled)
        }
        _ => assert!(c.result.is_ok(), "{b:?}: {:?}", c.result),
    }
}
both!(
    a_cancel_of_a_blocked_terminal_write_does_not_wait,
    cancel_blocked_terminal_write
);

/// As [`cancel_blocked_terminal_write`], for a write that holds a
/// thread-engine worker asleep in `pwrite(2)` until the test lets it go: a
/// cancel (by fd) returns at once, NotCanceled (a worker's transfer on a
/// file cannot be stopped), and the write then completes whole.
#[test]
fn a_cancel_of_a_write_holding_a_worker_does_not_wait() {
    let aio = ctx(Backend::Threads);
    let Some(hold) = common::blocker(&aio) else {
        return;
    };
    let worker = hold
        .worker()
        .expect("the thread engine's blocker names its worker") as i32;
    assert_eq!(
        state_of(worker).map(|(st, _)| st),
        Some('S'),
        "the worker sleeps"
    );
    let (canceller, waited) = cancel_watched(&aio, hold.fd());
    // Let the write end, whatever happened.
    assert!(!hold.is_done(), "the held write completed");
    hold.unblock();
    let outcome = canceller.join().unwrap();
    assert!(
        !waited,
        "aio_cancel sleeps until the write that holds a worker ends"
    );
    assert_eq!(outcome, CancelResult::NotCanceled);
}
