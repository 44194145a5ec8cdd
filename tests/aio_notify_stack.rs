//! The stack size of a context's `SIGEV_THREAD` notification threads is the
//! program's to choose (`Builder::notify_stack_size`): every thread of the
//! pool, the first and those it adds for callbacks that block, has it. It
//! used to be Rust's default for every context (2 MiB). `both!(name, f)`
//! makes `name::uring` and `name::threads`.

use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Notify, Op};

mod common;
use common::both;

/// The calling thread's stack size, as `pthread_getattr_np` reports it.
fn own_stack_size() -> usize {
    let mut a = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    let mut size = 0;
    // SAFETY: pthread_getattr_np initializes `a` (destroyed after the read);
    // `size` is a valid out-pointer.
    unsafe {
        assert_eq!(
            libc::pthread_getattr_np(libc::pthread_self(), a.as_mut_ptr()),
            0
        );
        assert_eq!(libc::pthread_attr_getstacksize(a.as_ptr(), &mut size), 0);
        libc::pthread_attr_destroy(a.as_mut_ptr());
    }
    size
}

/// Two callbacks that wait for each other (so they run on two threads of the
/// pool) on a context built with `notify_stack_size(size)`: each reports its
/// thread's stack size.
fn stacks_of_two_callbacks(b: Backend, size: usize) -> Vec<usize> {
    let aio = Aio::builder()
        .backend(b)
        .notify_stack_size(size)
        .build()
        .expect("AIO context");
    let f = common::temp_file(&[6u8; 8]);
    let both_ran = Arc::new(Barrier::new(2));
    let (tx, rx) = mpsc::channel();
    let mut reqs = Vec::new();
    for i in 0..2 {
        let (tx, both_ran) = (tx.clone(), Arc::clone(&both_ran));
        let n = Notify::thread(i, move |_| {
            both_ran.wait();
            let _ = tx.send(own_stack_size());
        });
        reqs.push(
            aio.submit(Op::read(&f, i as i64, vec![0u8; 1]).notify(n))
                .unwrap(),
        );
    }
    let seen = (0..2)
        .map(|i| {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("callback {i} did not run"))
        })
        .collect();
    for mut r in reqs {
        assert_eq!(r.wait().unwrap().data(), &[6u8]);
    }
    seen
}

/// Sizes below and above Rust's default (2 MiB), whole pages: each thread's
/// stack is the size asked for (the C library may round it up, never by a
/// megabyte).
fn notification_threads_have_the_stack_size_asked(b: Backend) {
    for size in [256 << 10, 8 << 20] {
        for (i, got) in stacks_of_two_callbacks(b, size).into_iter().enumerate() {
            assert!(
                got >= size && got < size + (1 << 20),
                "callback {i}'s thread has a stack of {got} bytes, not {size}"
            );
        }
    }
}
both!(
    notification_threads_have_the_stack_size_asked_for,
    notification_threads_have_the_stack_size_asked
);

/// A notification thread the system cannot start (EAGAIN from
/// `pthread_create`: here no memory for a stack of 1 PiB, past the address
/// space) fails the first `Thread` request with a hint that tells the
/// fixes: the thread limits (RLIMIT_NPROC, threads-max, pids.max) and the
/// stack size the program chose. It used to be a bare EAGAIN.
fn an_unstartable_notification_thread_says_why(b: Backend) {
    let aio = Aio::builder()
        .backend(b)
        .notify_stack_size(1 << 50)
        .build()
        .expect("AIO context");
    let f = common::temp_file(&[6u8; 8]);
    let e = aio
        .submit(Op::read(&f, 0, vec![0u8; 1]).notify(Notify::thread(0, |_| {})))
        .map(drop)
        .expect_err("a notification thread with a 1 PiB stack");
    assert_eq!(e.errno(), Some(libc::EAGAIN), "{e}");
    assert_eq!(e.call(), "pthread_create", "{e}");
    let hint = e.hint().unwrap_or_default();
    for fix in ["RLIMIT_NPROC", "ulimit -u", "threads-max", "pids.max"] {
        assert!(hint.contains(fix), "{fix} is not in the hint: {e}");
    }
    assert!(
        hint.contains(&format!("notify_stack_size, now {} bytes", 1u64 << 50)),
        "{e}"
    );
}
both!(
    an_unstartable_notification_thread,
    an_unstartable_notification_thread_says_why
);
