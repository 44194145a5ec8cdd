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
#[allow(unused_macros, unused_imports, dead_code)]
mod common;
#[path = "common/fifo.rs"]
mod fifo;

use std::time::Duration;

use posixrt::aio::{Backend, CancelResult};
use posixrt::sched::{self, Builder, CpuSet, Priority};

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
