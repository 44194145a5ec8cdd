//! `SIGEV_THREAD` callbacks run on the context's notification threads, which
//! block every signal, as the engine's other threads do (and glibc's AIO
//! helper threads; the threads glibc creates for a C `SIGEV_THREAD` function
//! unblock every signal, as the C interface's do): a completion signal, or a
//! signal the program blocks in its own threads to take it with `sigwaitinfo`
//! or a signalfd, is never delivered to one of them. And they run at the scheduling class of
//! the program's thread that started them, whichever thread of the engine
//! started one more (a thread-engine worker runs at `SCHED_BATCH`, or at a
//! real-time request's class). `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

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
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("callback {i} did not run"));
        assert!(
            open.is_empty(),
            "callback {i} ran with signals {open:?} unblocked"
        );
        assert_eq!(r.wait().unwrap().data(), &[7u8; 4]);
    }
}
both!(callbacks_run_with_every_signal_blocked, callback_mask);

/// `(policy, priority)` of the calling thread.
fn class() -> (i32, i32) {
    let mut p = libc::sched_param { sched_priority: 0 };
    let mut policy = 0;
    // SAFETY: both are valid for writes; asks about the calling thread.
    let r = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut p) };
    assert_eq!(r, 0);
    (policy, p.sched_priority)
}

fn callback_class(b: Backend) {
    let me = class();
    assert_eq!(me.0, libc::SCHED_OTHER, "the test runs at SCHED_OTHER");
    let aio = ctx(b);
    let n = 4;
    let f = common::temp_file(&vec![1u8; n]);
    // Each callback returns once all are running: one thread each, the later
    // ones started by whichever thread of the engine posts their callbacks.
    let st = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
    let mut reqs = Vec::new();
    for i in 0..n {
        let st = Arc::clone(&st);
        let cb = Notify::thread(i as i32, move |_| {
            let (m, cv) = &*st;
            let mut g = m.lock().unwrap();
            g.push(class());
            cv.notify_all();
            let _ = cv.wait_timeout_while(g, Duration::from_secs(10), |g| g.len() < n);
        });
        reqs.push(
            aio.submit(Op::read(&f, i as i64, vec![0u8; 1]).notify(cb))
                .unwrap(),
        );
    }
    let (m, cv) = &*st;
    let g = cv
        .wait_timeout_while(m.lock().unwrap(), Duration::from_secs(20), |g| g.len() < n)
        .unwrap()
        .0;
    assert_eq!(g.len(), n, "every callback ran");
    for (i, c) in g.iter().enumerate() {
        assert_eq!(
            *c, me,
            "callback {i} ran at another class than the program's"
        );
    }
    drop(g);
    for mut r in reqs {
        r.wait().unwrap().result.unwrap();
    }
}
both!(callbacks_run_at_the_programs_class, callback_class);
