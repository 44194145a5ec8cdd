//! [`Notify::ThreadSignal`] (`SIGEV_THREAD_ID`): a queued signal to one
//! thread, on both engines. It is generated before a waiter can see the
//! request done, as [`Notify::Signal`]'s is (`tests/aio_signal_order.rs`):
//! when the thread it names waits for the request ([`Aio::suspend`],
//! `lio_listio(ListMode::Wait)`, [`Request::wait`]) and sees it done, the
//! handler has run there. It goes to that thread only, whichever thread
//! submitted; a thread that is not one of this process is refused at
//! submission, and one that ended before the completion counts as a failed
//! notification.
//!
//! The engines run one after the other in one test: the handler and what it
//! records are the process's.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;

/// `si_value` of the last completion signal handled.
static LAST: AtomicUsize = AtomicUsize::new(0);
/// The thread the last one was handled on.
static ON: AtomicI32 = AtomicI32::new(0);
/// Signals handled with another `si_code` than `SI_ASYNCIO`.
static WRONG_CODE: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: i32, si: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; a
    // queued signal carries `si_value`.
    let (code, v) = unsafe { ((*si).si_code, (*si).si_value().sival_ptr as usize) };
    if code != posixrt::aio::SI_ASYNCIO {
        WRONG_CODE.fetch_add(1, Ordering::SeqCst);
        return;
    }
    ON.store(posixrt::sched::gettid().as_raw(), Ordering::SeqCst);
    LAST.store(v, Ordering::SeqCst);
}

fn signo() -> i32 {
    libc::SIGRTMIN() + 4
}

fn me() -> i32 {
    posixrt::sched::gettid().as_raw()
}

/// Waits (2 s at most) for the handler to have run for `value`.
fn handled(value: usize) -> bool {
    for _ in 0..2000 {
        if LAST.load(Ordering::SeqCst) == value {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

const ROUNDS: usize = 150;

#[derive(Clone, Copy, Debug)]
enum How {
    Suspend,
    Lio,
    Wait,
}

/// One round on the calling thread: a read of one byte from the pipe, with a
/// signal to this thread (value `round`), the byte written 2 ms later by the
/// writer thread, and the wait. True if the handler had run when the wait
/// returned.
fn round(
    aio: &Aio,
    r: &std::os::fd::OwnedFd,
    go: &mpsc::Sender<()>,
    round: usize,
    how: How,
) -> bool {
    let op = Op::read(r, 0, vec![0u8; 1]).notify(Notify::thread_signal(me(), signo(), round));
    go.send(()).unwrap();
    let seen = match how {
        How::Suspend => {
            let mut req = aio.submit(op).unwrap();
            loop {
                match aio.suspend([&req], None) {
                    Ok(()) => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => panic!("suspend: {e}"),
                }
            }
            let seen = LAST.load(Ordering::SeqCst) == round;
            assert_eq!(req.aio_return().unwrap().result.unwrap(), 1);
            seen
        }
        How::Lio => match aio.lio_listio(ListMode::Wait, [Some(op)], Notify::None) {
            Ok(list) => {
                let seen = LAST.load(Ordering::SeqCst) == round;
                let all = list.take_all().unwrap();
                assert!(matches!(all[0].as_ref().map(|c| &c.result), Some(Ok(1))));
                seen
            }
            // A handler ran: ours, the only signal about (the request goes on).
            Err(e) if e.kind() == ErrorKind::Interrupted => LAST.load(Ordering::SeqCst) == round,
            Err(e) => panic!("lio_listio: {e}"),
        },
        How::Wait => {
            let mut req = aio.submit(op).unwrap();
            let c = req.wait().unwrap();
            let seen = LAST.load(Ordering::SeqCst) == round;
            assert_eq!(c.result.unwrap(), 1);
            seen
        }
    };
    assert!(handled(round), "round {round}: the signal never came");
    assert_eq!(ON.load(Ordering::SeqCst), me(), "handled on another thread");
    seen
}

/// Every round on `backend`: the waits that returned before the handler ran.
fn ordered(backend: Backend) {
    let (r, w) = common::pipe();
    let (go, rx) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        while rx.recv().is_ok() {
            std::thread::sleep(Duration::from_millis(2));
            assert_eq!(rustix::io::write(&w, b"x"), Ok(1));
        }
    });
    let aio = common::ctx(backend);
    let ways = [How::Suspend, How::Lio, How::Wait];
    let mut early = [0usize; 3];
    for n in 1..=ROUNDS {
        let i = n % ways.len();
        if !round(&aio, &r, &go, n, ways[i]) {
            early[i] += 1;
        }
    }
    drop(go);
    writer.join().unwrap();
    assert_eq!(
        early,
        [0; 3],
        "{backend}: the wait returned before the handler ran (suspend, lio_listio wait, \
         Request::wait; of {} rounds each)",
        ROUNDS / ways.len()
    );
}

/// The signal goes to the thread named, not to the submitter: a thread
/// parked in a channel receive takes it.
fn to_another_thread(backend: Backend) {
    let aio = common::ctx(backend);
    let f = common::temp_file(b"data");
    let (tid_tx, tid_rx) = mpsc::channel();
    let (quit_tx, quit_rx) = mpsc::channel::<()>();
    let target = std::thread::spawn(move || {
        tid_tx.send(me()).unwrap();
        let _ = quit_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    for value in [1_000_001usize, 1_000_002] {
        let op = Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread_signal(tid, signo(), value));
        let mut req = aio.submit(op).unwrap();
        assert_eq!(req.wait().unwrap().result.unwrap(), 4);
        assert!(handled(value), "{backend}: the signal never came");
        assert_eq!(
            ON.load(Ordering::SeqCst),
            tid,
            "{backend}: handled on another thread"
        );
    }
    drop(quit_tx);
    target.join().unwrap();
    assert_eq!(aio.failed_notifications(), 0);
}

/// A tid that names no thread of this process is refused at submission
/// (InvalidInput), for a request and for a list; a thread that ended before
/// the completion gets nothing, and the signal counts as failed.
fn refused_and_failed(backend: Backend) {
    let aio = common::ctx(backend);
    let f = common::temp_file(b"data");
    for tid in [0, -1, i32::MAX] {
        let op = Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread_signal(tid, signo(), 1));
        let e = aio.submit(op).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "tid {tid}: {e}");
        let op = Op::read(&f, 0, vec![0u8; 4]);
        let Err(e) = aio.lio_listio(
            ListMode::NoWait,
            [Some(op)],
            Notify::thread_signal(tid, signo(), 1),
        ) else {
            panic!("list, tid {tid}: accepted");
        };
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "list, tid {tid}: {e}");
    }
    let e = aio
        .submit(Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread_signal(me(), 0, 1)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "signal 0: {e}");

    // The read waits on a pipe while its thread ends.
    let (r, w) = common::pipe();
    let (tid_tx, tid_rx) = mpsc::channel();
    let (quit_tx, quit_rx) = mpsc::channel::<()>();
    let gone = std::thread::spawn(move || {
        tid_tx.send(me()).unwrap();
        let _ = quit_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let op = Op::read(&r, 0, vec![0u8; 1]).notify(Notify::thread_signal(tid, signo(), 5));
    let mut req = aio.submit(op).unwrap();
    drop(quit_tx);
    gone.join().unwrap();
    // (`join` returns when the thread's exit has cleared its tid word, a
    // little before the kernel has removed it.)
    let task = format!("/proc/self/task/{tid}");
    for _ in 0..2000 {
        if !std::path::Path::new(&task).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        !std::path::Path::new(&task).exists(),
        "thread {tid} did not go"
    );
    assert_eq!(rustix::io::write(&w, b"x"), Ok(1));
    assert_eq!(req.wait().unwrap().result.unwrap(), 1);
    assert_eq!(aio.failed_notifications(), 1, "{backend}");
}

#[test]
fn thread_signal_is_ordered_directed_and_checked() {
    common::install_handler(signo(), on_signal);
    for backend in [Backend::Threads, Backend::Uring] {
        if backend == Backend::Uring && common::uring::uring_refused() {
            continue;
        }
        ordered(backend);
        to_another_thread(backend);
        refused_and_failed(backend);
    }
    assert_eq!(WRONG_CODE.load(Ordering::SeqCst), 0);
}
