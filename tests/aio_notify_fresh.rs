//! A `SIGEV_THREAD` callback runs "as if in a new thread": a callback that
//! changes its thread's signal mask or scheduling class (it is program code,
//! and may) does not pass the change on to the callbacks that run after it on
//! the same notification thread. Each starts with every signal blocked, at
//! the class of the program's thread that started the pool (see
//! `aio_notify_mask.rs`). They used to start with whatever the previous
//! callback on that thread left. `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::sync::mpsc;
use std::time::Duration;

use posixrt::aio::{Backend, Notify, Op};

mod common;
use common::both;
use common::ctx;

/// What a callback found when it started.
struct Start {
    tid: i32,
    /// SIGUSR2 unblocked.
    open: bool,
    policy: i32,
}

/// The calling thread's policy (the kernel's view).
fn policy() -> i32 {
    // SAFETY: asks about the calling thread.
    unsafe { libc::sched_getscheduler(0) & !libc::SCHED_RESET_ON_FORK }
}

/// True if the calling thread does not block SIGUSR2.
fn usr2_open() -> bool {
    let mut m = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a null set only reads the mask into `m`; sigismember reads it.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
        libc::sigismember(m.as_ptr(), libc::SIGUSR2) != 1
    }
}

/// Unblocks SIGUSR2 and moves the calling thread to SCHED_BATCH (allowed
/// without privileges).
fn change_thread() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: an emptied set with one signal added, then a mask change and a
    // class change of the calling thread only.
    unsafe {
        let mut s = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(s.as_mut_ptr());
        libc::sigaddset(s.as_mut_ptr(), libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, s.as_ptr(), std::ptr::null_mut());
        assert_eq!(
            libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_BATCH, &p),
            0
        );
    }
}

fn callbacks_start_fresh(b: Backend) {
    assert_eq!(policy(), libc::SCHED_OTHER, "the test runs at SCHED_OTHER");
    let aio = ctx(b);
    let f = common::temp_file(&[3u8; 64]);
    let (tx, rx) = mpsc::channel();
    let mut starts = Vec::new();
    // One at a time: the pool reuses its idle thread.
    for i in 0..20 {
        let tx = tx.clone();
        let n = Notify::thread(i, move |_| {
            let _ = tx.send(Start {
                tid: rustix::thread::gettid().as_raw_nonzero().get(),
                open: usr2_open(),
                policy: policy(),
            });
            change_thread();
        });
        let mut r = aio
            .submit(Op::read(&f, i as i64, vec![0u8; 4]).notify(n))
            .unwrap();
        let s = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("callback {i} did not run"));
        assert_eq!(r.wait().unwrap().data(), &[3u8; 4]);
        starts.push(s);
    }
    let mut reused = 0;
    for (i, s) in starts.iter().enumerate() {
        if starts[..i].iter().any(|e| e.tid == s.tid) {
            reused += 1;
        }
        assert!(!s.open, "callback {i} started with SIGUSR2 unblocked");
        assert_eq!(
            s.policy,
            libc::SCHED_OTHER,
            "callback {i} started at another class than the program's"
        );
    }
    assert!(reused > 0, "no notification thread ran two callbacks");
}
both!(callbacks_start_as_on_a_new_thread, callbacks_start_fresh);
