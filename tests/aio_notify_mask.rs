//! `SIGEV_THREAD` callbacks run on the context's notification threads, which
//! block every signal, as the engine's other threads do (and as glibc's
//! notification threads do): a completion signal, or a signal the program
//! blocks in its own threads to take it with `sigwaitinfo` or a signalfd, is
//! never delivered to one of them. `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::sync::mpsc;

use posixrt::aio::{Backend, Notify, Op};

mod common;
use common::both;
use common::ctx;

/// The signals the calling thread does not block (but SIGKILL and SIGSTOP,
/// which cannot be blocked).
fn unblocked() -> Vec<i32> {
    let mut m = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a null set only reads the mask into `m`, which has room; sigismember
    // then reads the mask it wrote.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
        // (The C library's own signals, between 31 and SIGRTMIN, cannot be
        // blocked.)
        (1..32)
            .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
            .filter(|&s| s != libc::SIGKILL && s != libc::SIGSTOP)
            .filter(|&s| libc::sigismember(m.as_ptr(), s) != 1)
            .collect()
    }
}

fn callback_mask(b: Backend) {
    // The submitting thread blocks nothing: a notification thread started for
    // its request must not take its mask.
    // SAFETY: an emptied set, then a mask change of this thread only.
    unsafe {
        let mut none = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(none.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut());
    }
    let aio = ctx(b);
    let f = common::temp_file(&[7u8; 64]);
    let (tx, rx) = mpsc::channel();
    // One at a time: each callback runs on the first notification thread
    // (started by this thread's first request), idle between them.
    for i in 0..4 {
        let tx = tx.clone();
        let n = Notify::thread(i, move |_| {
            let _ = tx.send(unblocked());
        });
        let mut r = aio
            .submit(Op::read(&f, i as i64, vec![0u8; 4]).notify(n))
            .unwrap();
        let open = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("callback {i} did not run"));
        assert!(
            open.is_empty(),
            "callback {i} ran with signals {open:?} unblocked"
        );
        assert_eq!(r.wait().unwrap().data(), &[7u8; 4]);
    }
}
both!(callbacks_run_with_every_signal_blocked, callback_mask);
