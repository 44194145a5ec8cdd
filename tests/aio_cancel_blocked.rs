//! `aio_cancel` of a request blocked in a transfer that cannot be stopped (a
//! write to a terminal whose reader does not read): the call reports it not
//! cancelled without waiting for it, as `Request::cancel` promises.
//! `both!(name, f)` makes `name::uring` and `name::threads`.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::Duration;

use posixrt::aio::{Backend, CancelResult};

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

/// True if a thread-engine worker sleeps in `write(2)`.
fn blocked_worker_write() -> bool {
    common::workers::threads_where(common::workers::pool_worker)
        .into_iter()
        .any(|(tid, _)| state_of(tid as i32) == Some(('S', libc::SYS_write)))
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
    // engine, in a worker's write(2) (waited for, so that the cancel comes
    // once it blocks there).
    std::thread::sleep(Duration::from_millis(50));
    if b == Backend::Threads {
        let mut tries = 0;
        while !blocked_worker_write() {
            tries += 1;
            assert!(tries < 10_000, "no worker blocks in write(2)");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(!req.is_done(), "{b:?}: the write to the terminal completed");
    let (tx, rx) = std::sync::mpsc::channel();
    let canceller = {
        let aio = aio.clone();
        let fd = slave.as_raw_fd();
        std::thread::spawn(move || {
            tx.send(rustix::thread::gettid().as_raw_nonzero().get())
                .unwrap();
            aio.cancel_fd(fd).unwrap()
        })
    };
    let tid = rx.recv().unwrap();
    // Until the cancel returns: it must not sleep (a futex or poll wait seen
    // 100 times in a row, 1 ms apart, is a cancel waiting for the write).
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
    let waited = asleep >= 100;
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
