//! A cancel that comes while a read's first try is out of the kernel (a
//! socket read at an offset, refused with ESPIPE and issued again at offset
//! -1 by its submitting call, which finds the cancel and ends the read
//! cancelled instead) answers `Canceled`: that read ended ECANCELED because
//! of it. The Rust cancel's "not in the kernel" branch answered `AllDone`
//! whatever the read's end (the C cancel answered `AIO_CANCELED`).
//!
//! Statistical: a thread cancels by fd in a loop while the test thread
//! submits the read, 2000 rounds of a fresh socket pair each (every round is
//! bounded: the read can only end by a cancel, and the canceller stops at
//! its first answer other than `AllDone` or when the read is done). On the
//! thread engine too (no probe there: the read waits parked), where every
//! such read is answered `Canceled` as well. `both!(name, f)` makes
//! `name::uring` and `name::threads`.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use posixrt::aio::{Backend, CancelResult};

mod common;
use common::{both, ctx};

const ROUNDS: usize = 2000;

fn a_read_cancelled_while_out_of_the_kernel_is_canceled(b: Backend) {
    let aio = ctx(b);
    let fd = Arc::new(AtomicI32::new(-1));
    let done = Arc::new(AtomicBool::new(false));
    let go = Arc::new(Barrier::new(2));
    let stop = Arc::new(AtomicBool::new(false));
    let canceller = {
        let (aio, fd, done, go, stop) = (
            aio.clone(),
            Arc::clone(&fd),
            Arc::clone(&done),
            Arc::clone(&go),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            let mut answers = Vec::with_capacity(ROUNDS);
            loop {
                go.wait();
                if stop.load(Ordering::SeqCst) {
                    return answers;
                }
                let n = fd.load(Ordering::SeqCst);
                let mut answer = None;
                while !done.load(Ordering::SeqCst) {
                    match aio.cancel_fd(n) {
                        Ok(CancelResult::AllDone) => {}
                        Ok(r) => {
                            answer = Some(r);
                            break;
                        }
                        Err(e) => panic!("cancel_fd: {e}"),
                    }
                }
                answers.push(answer);
                go.wait();
            }
        })
    };
    let mut ends = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        fd.store(a.as_raw_fd(), Ordering::SeqCst);
        done.store(false, Ordering::SeqCst);
        go.wait();
        // Nothing is ever written: only a cancel ends it.
        let mut req = aio.read(&a, 5, vec![0u8; 8]).unwrap();
        let ended = aio.suspend([req.id()], Some(Duration::from_secs(10)));
        done.store(true, Ordering::SeqCst);
        go.wait();
        // (One still running is cancelled as its handle drops.)
        let end = ended.map(|()| req.wait().unwrap().result.err().and_then(|e| e.errno()));
        ends.push(end.map_err(|e| e.kind()));
        drop(req);
        drop(a);
    }
    stop.store(true, Ordering::SeqCst);
    go.wait();
    let answers = canceller.join().unwrap();
    let mut wrong = 0;
    for (end, answer) in ends.iter().zip(&answers) {
        match (end, answer) {
            (Ok(Some(libc::ECANCELED)), Some(CancelResult::Canceled)) => {}
            // Cancelled, and every cancel answered AllDone.
            (Ok(Some(libc::ECANCELED)), None) => wrong += 1,
            other => panic!("round ended {other:?}"),
        }
    }
    assert_eq!(
        wrong, 0,
        "of {ROUNDS} reads cancelled, {wrong} were answered AllDone"
    );
}
both!(
    cancelled_reads,
    a_read_cancelled_while_out_of_the_kernel_is_canceled
);
