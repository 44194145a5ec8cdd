//! io_uring: a write to a pipe that io_uring cut short (the pipe filled up)
//! goes on in a second round once reaped. A cancel that comes between the
//! two rounds (the short completion posted, not reaped yet: another thread
//! reaps, and has not run) finds nothing in the kernel: it stops the write
//! with the bytes it moved and says `AIO_NOTCANCELED`, as for the same write
//! caught in its second round, and on the thread engine.
//!
//! The reaping thread is kept from running by a `SCHED_FIFO` canceller on
//! the same CPU, so the cancel comes between the rounds every time.

#[path = "common/caps.rs"]
mod caps;
#[allow(unused_macros, unused_imports)]
mod common;
#[path = "common/fifo.rs"]
mod fifo;

use std::time::Duration;

use posixrt::aio::{Backend, CancelResult};
use posixrt::sched::{self, Builder, CpuSet, Priority};

/// The tests pin a SCHED_FIFO thread to the same CPU: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The system call thread `tid` of this process sleeps in, if `/proc` says.
fn syscall_of(tid: i32) -> Option<i64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

#[test]
fn a_cancel_between_two_rounds_of_a_pipe_write_stops_it() {
    if common::uring::uring_refused() {
        return;
    }
    let Some(cpu) = fifo::fifo_cpu() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let aio = common::ctx(Backend::Uring);
    let (rd, wr) = common::pipe();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).expect("F_GETPIPE_SZ");

    // The reaper: waits for a read of another pipe, asleep in the ring, on
    // the canceller's CPU.
    let (ord, owr) = common::pipe();
    let mut other = aio.read(&ord, 0, vec![0u8; 1]).expect("read");
    let (tx, rx) = std::sync::mpsc::channel();
    let reaper = std::thread::spawn(move || {
        sched::set_thread_affinity(sched::Tid::current(), &CpuSet::single(cpu).expect("cpu"))
            .expect("pin");
        tx.send(rustix::thread::gettid().as_raw_nonzero().get())
            .expect("send");
        other.wait().expect("other read").result.expect("one byte")
    });
    let tid = rx.recv().expect("tid");
    let asleep = [libc::SYS_io_uring_enter, libc::SYS_ppoll, libc::SYS_poll];
    if !caps::wait_for(Duration::from_secs(10), || {
        syscall_of(tid).is_some_and(|n| asleep.contains(&n))
    }) {
        panic!("the reaper never slept in the ring: {:?}", syscall_of(tid));
    }

    let w_aio = aio.clone();
    let data = common::pattern(2 * cap);
    let canceller = Builder::new()
        .affinity(CpuSet::single(cpu).expect("cpu"))
        .scheduling(Priority::fifo(10).expect("priority"))
        .spawn(move || {
            // The first round fills the pipe inside this call; its short
            // completion waits for the reaper, which cannot run before this
            // thread sleeps.
            let w = w_aio.write(&wr, 0, data).expect("write");
            let outcome = w.cancel().expect("cancel");
            let done = w.is_done();
            (outcome, done, w, wr)
        })
        .expect("spawn the canceller");
    let (outcome, done, mut w, wr) = canceller.join().expect("canceller");

    // What reached the pipe, then the reaper's end.
    rustix::fs::fcntl_setfl(&rd, rustix::fs::OFlags::NONBLOCK).expect("nonblocking");
    let mut got = Vec::new();
    let mut b = vec![0u8; 2 * cap];
    while let Ok(n) = rustix::io::read(&rd, &mut b) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&b[..n]);
    }
    rustix::io::write(&owr, b"x").expect("end the other read");
    assert_eq!(reaper.join().expect("reaper"), 1);
    drop(wr);

    assert_eq!(
        outcome,
        CancelResult::NotCanceled,
        "the write was in progress"
    );
    assert!(done, "the write ended when the cancel returned");
    let result = w.wait().expect("done").result;
    assert_eq!(result.ok(), Some(cap), "it moved a pipe's worth");
    assert_eq!(got, common::pattern(2 * cap)[..cap], "and no more");
}

/// A write to an `O_NONBLOCK` pipe in a `LIO_NOWAIT` list that notifies: cut
/// short, its second round refused (EAGAIN), it is done, and held until the
/// call is out (see the engine's `hold.rs`). A cancel then finds it done:
/// `AIO_ALLDONE`, as on the thread engine, though it wrote less than it was
/// given. (The holder thread, made by the canceller, runs on its CPU once
/// the canceller sleeps.)
#[test]
fn a_held_short_write_is_all_done() {
    if common::uring::uring_refused() {
        return;
    }
    let Some(cpu) = fifo::fifo_cpu() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let aio = common::ctx(Backend::Uring);
    let (rd, wr) = common::pipe();
    rustix::fs::fcntl_setfl(&wr, rustix::fs::OFlags::NONBLOCK).expect("nonblocking");
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).expect("F_GETPIPE_SZ");
    let notified = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = std::sync::Arc::clone(&notified);
    let canceller = Builder::new()
        .affinity(CpuSet::single(cpu).expect("cpu"))
        .scheduling(Priority::fifo(10).expect("priority"))
        .spawn(move || {
            let list = aio
                .lio_listio(
                    posixrt::aio::ListMode::NoWait,
                    [Some(posixrt::aio::Op::write(
                        &wr,
                        0,
                        common::pattern(3 * cap),
                    ))],
                    posixrt::aio::Notify::thread(0, move |_| {
                        n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }),
                )
                .expect("lio_listio");
            let mut reqs = list.into_requests();
            let w = reqs[0].take().expect("the write");
            // Reaped: the first round, then the second's EAGAIN; held.
            for _ in 0..4 {
                assert_eq!(
                    w.error().expect_err("held until the call is out").errno(),
                    Some(libc::EINPROGRESS)
                );
            }
            (w.cancel().expect("cancel"), w, wr)
        })
        .expect("spawn the canceller");
    let (outcome, mut w, _wr) = canceller.join().expect("canceller");
    assert_eq!(
        w.wait().expect("done").result.ok(),
        Some(cap),
        "a pipe's worth"
    );
    assert_eq!(outcome, CancelResult::AllDone, "done when the cancel came");
    drop(rd);
    assert!(caps::wait_for(Duration::from_secs(10), || {
        notified.load(std::sync::atomic::Ordering::SeqCst) == 1
    }));
}
