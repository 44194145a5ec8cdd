//! A user porting POSIX AIO C code checks the Rust API's edges: `Builder`
//! options and the errors that tell the fix.

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;
use std::sync::Arc;

#[allow(unused_macros, unused_imports)]
mod common;

/// A notification stack larger than any object can be (`isize::MAX`) is
/// refused when the context is built, with a hint naming the option, not by
/// the first `SIGEV_THREAD` request with a bare `pthread_create` EINVAL.
#[test]
fn notify_stack_size_past_isize_max_is_refused_at_build() {
    for size in [(isize::MAX as usize) + 1, usize::MAX - 100, usize::MAX] {
        let e = Aio::builder()
            .backend(Backend::Threads)
            .notify_stack_size(size)
            .build()
            .expect_err("a stack larger than isize::MAX bytes");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e:?}");
        let hint = e.hint().unwrap_or_default();
        assert!(hint.contains("notify_stack_size"), "{e:?}");
    }
    // 0 is valid: the smallest stack the system allows.
    Aio::builder()
        .backend(Backend::Threads)
        .notify_stack_size(0)
        .build()
        .expect("notify_stack_size(0)");
}

/// A forked child that drops the guard of an fd its parent registered (as
/// any child that runs on and leaves the scope does) leaves the parent's
/// registration alone: the rings are the parent's, and so is their file
/// table. Before, the child's drop removed the file from the parent's table
/// and the parent's next read of the fd failed with EBADF.
#[test]
fn child_dropping_a_parents_registration_leaves_it_registered() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    let f = std::fs::File::from(
        rustix::fs::memfd_create("reg", rustix::fs::MemfdFlags::empty()).unwrap(),
    );
    rustix::io::pwrite(&f, b"registered", 0).unwrap();
    let mut reg = Some(aio.register_fd(&f).unwrap());
    assert!(reg.as_ref().is_some_and(|r| r.is_registered()));
    // SAFETY: the child only drops its copy of the guard, which takes no lock
    // another thread of this process could hold at the fork.
    let outcome = unsafe {
        common::child::in_child(|| {
            drop(reg.take());
            Ok(())
        })
    };
    outcome.unwrap();
    // The parent's guard is still there, and the fd still registered.
    assert!(reg.is_some());
    let mut r = aio.read(&f, 0, vec![0u8; 10]).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.result.as_ref().ok(), Some(&10), "{:?}", c.result);
    assert_eq!(c.data(), b"registered");
    drop(reg);
}

/// In a forked child, `aio_cancel` through the parent's context (of one
/// request, or of every request on an fd) is refused like a submission or a
/// wait there ([`ErrorKind::InvalidState`]), on both engines: the requests
/// are the parent's, and go on there. Before, the child was told `Canceled`
/// (thread engine) or `NotCanceled` (io_uring) of a request that completed in
/// the parent with its data.
fn child_cancel_is_refused(b: Backend) {
    use std::os::fd::AsRawFd;
    let aio = Aio::builder().backend(b).build().unwrap();
    let (pr, pw) = common::pipe();
    let mut req = aio.read(&pr, 0, vec![0u8; 4]).unwrap();
    // SAFETY: the child only asks the context to cancel, which it refuses
    // before taking any lock.
    let outcome = unsafe {
        common::child::in_child(|| {
            let one = req.cancel();
            let all = aio.cancel_fd(pr.as_raw_fd());
            for (what, r) in [("Request::cancel", one), ("Aio::cancel_fd", all)] {
                match r {
                    Err(e) if e.kind() == ErrorKind::InvalidState => {
                        let text = e.to_string();
                        if !text.contains("parent") {
                            return Err(format!("{what}: the error does not say why: {text}"));
                        }
                    }
                    other => return Err(format!("{what} in the child gave {other:?}")),
                }
            }
            Ok(())
        })
    };
    outcome.unwrap();
    rustix::io::write(&pw, b"abcd").unwrap();
    let c = req.wait().unwrap();
    assert_eq!(c.result.as_ref().ok(), Some(&4), "{:?}", c.result);
    assert_eq!(c.data(), b"abcd");
}

common::both!(child_cancel, child_cancel_is_refused);

/// Where each error of a ported `aio_read`/`aio_write` shows, as the module
/// docs say: a descriptor open the wrong way is not refused by the call but
/// comes back as EBADF in the result; a read past the end of the file and
/// transfers of 0 bytes succeed with 0; a negative offset is refused by the
/// call with a hint.
fn call_or_result(b: Backend) {
    let aio = Aio::builder().backend(b).build().unwrap();
    let dir = tempfile_dir();
    let p = dir.join("f");
    std::fs::write(&p, b"abc").unwrap();
    let wo = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let ro = std::fs::File::open(&p).unwrap();

    let mut r = aio
        .read(&wo, 0, vec![0u8; 3])
        .expect("accepted by the call");
    let c = r.wait().unwrap();
    assert_eq!(
        c.result.map_err(|e| e.errno()).err(),
        Some(Some(libc::EBADF))
    );
    assert_eq!(r.error().unwrap_err().errno(), Some(libc::EBADF));

    let mut w = aio
        .write(&ro, 0, b"x".to_vec())
        .expect("accepted by the call");
    let c = w.wait().unwrap();
    assert_eq!(
        c.result.map_err(|e| e.errno()).err(),
        Some(Some(libc::EBADF))
    );

    let mut r = aio.read(&ro, 100, vec![0u8; 4]).unwrap();
    assert_eq!(r.wait().unwrap().result.unwrap(), 0);
    let mut r = aio.read(&ro, 0, Vec::new()).unwrap();
    assert_eq!(r.wait().unwrap().result.unwrap(), 0);
    let mut w = aio.write(&wo, 0, Vec::new()).unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 0);

    let e = aio.read(&ro, -1, vec![0u8; 1]).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL));
    assert!(e.hint().is_some_and(|h| h.contains(">= 0")), "{e:?}");
    assert_eq!(std::fs::read(&p).unwrap(), b"abc");
    std::fs::remove_dir_all(&dir).unwrap();
}

common::both!(call_or_result_split, call_or_result);

/// A fresh directory under `TMPDIR` for one test.
fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "posixrt-aio-user-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `SubmitFuture::cancel` in a forked child of the process whose context
/// submitted the future's request is refused, as `Request::cancel` is: the
/// request is the parent's, and goes on to complete there with its data.
fn child_future_cancel_is_refused(b: Backend) {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark()
        }
    }
    let aio = Aio::builder().backend(b).build().unwrap();
    let (pr, pw) = common::pipe();
    let mut fut = aio.read_async(Arc::new(pr), 0, vec![0u8; 4]);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    // Submitted by its first poll; nothing to read yet.
    assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
    // SAFETY: the child only asks the future to cancel, which it refuses
    // before taking any lock.
    let outcome = unsafe {
        common::child::in_child(|| match fut.cancel() {
            Err(e) if e.kind() == ErrorKind::InvalidState => Ok(()),
            other => Err(format!("SubmitFuture::cancel in the child gave {other:?}")),
        })
    };
    outcome.unwrap();
    rustix::io::write(&pw, b"abcd").unwrap();
    let c = loop {
        match std::pin::Pin::new(&mut fut).poll(&mut cx) {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending => std::thread::park_timeout(std::time::Duration::from_millis(100)),
        }
    };
    assert_eq!(c.result.as_ref().ok(), Some(&4), "{:?}", c.result);
    assert_eq!(c.data(), b"abcd");
}

common::both!(child_future_cancel, child_future_cancel_is_refused);

/// A notification by SIGKILL or SIGSTOP is refused with a hint that says why
/// (they cannot be caught) and names the signals that work, standard ones
/// such as SIGUSR1 among them; a number between the standard and real-time
/// ranges is said to be the C library's.
#[test]
fn an_uncatchable_signal_is_refused_saying_why() {
    let aio = Aio::new().unwrap();
    let (pr, _pw) = common::pipe();
    for sig in [libc::SIGKILL, libc::SIGSTOP] {
        let e = aio
            .submit(
                posixrt::aio::Op::read(&pr, 0, vec![0u8; 1])
                    .notify(posixrt::aio::Notify::signal(sig, 0)),
            )
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let text = e.to_string();
        assert!(text.contains("cannot be caught"), "{text}");
        assert!(text.contains("SIGUSR1"), "{text}");
    }
    let e = aio
        .submit(
            posixrt::aio::Op::read(&pr, 0, vec![0u8; 1])
                .notify(posixrt::aio::Notify::signal(32, 0)),
        )
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("C library"), "{e}");
}

/// The first poll of `fut` (a submission future: it submits then), with a
/// waker that does nothing: its result, or an error if it is pending.
fn poll_once<T>(fut: impl std::future::Future<Output = posixrt::Result<T>>) -> posixrt::Result<()> {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = std::task::Waker::from(Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    match std::pin::pin!(fut).poll(&mut cx) {
        std::task::Poll::Ready(r) => r.map(drop),
        std::task::Poll::Pending => Err(posixrt::Error::new(
            ErrorKind::InvalidState,
            "poll",
            "still pending",
        )),
    }
}

/// Each call a forked child makes through its parent's context is refused
/// naming that call, not `aio_read` for all of them: a submission of each
/// kind (also as a future), a list, the waits (`aio_suspend`, and `Request::wait`, which is
/// one), a cancel and a registration. Before, every refusal but the
/// cancel's said `aio_read failed`.
fn child_refusals_name_their_call(b: Backend) {
    use posixrt::aio::{ListMode, Notify, Op, SyncMode};
    let aio = Aio::builder().backend(b).build().unwrap();
    let (pr, pw) = common::pipe();
    let mut req = aio.read(&pr, 0, vec![0u8; 4]).unwrap();
    let f = std::fs::File::from(
        rustix::fs::memfd_create("named", rustix::fs::MemfdFlags::empty()).unwrap(),
    );
    // SAFETY: each call refuses the inherited context before it takes any
    // lock (a thread of the parent may have held one at the fork).
    let outcome = unsafe {
        common::child::in_child(|| {
            let calls: [(&str, posixrt::Result<()>); 10] = [
                ("aio_read", aio.read(&f, 0, vec![0u8; 1]).map(drop)),
                (
                    "aio_read",
                    poll_once(aio.read_async(Arc::new(f.try_clone().unwrap()), 0, vec![0u8; 1])),
                ),
                (
                    "aio_write",
                    poll_once(aio.write_async(Arc::new(f.try_clone().unwrap()), 0, vec![1u8])),
                ),
                ("aio_write", aio.write(&f, 0, vec![1u8]).map(drop)),
                ("aio_fsync", aio.fsync(&f, SyncMode::Sync).map(drop)),
                (
                    "lio_listio",
                    aio.lio_listio(
                        ListMode::NoWait,
                        [Some(Op::read(&f, 0, vec![0u8; 1]))],
                        Notify::None,
                    )
                    .map(drop),
                ),
                (
                    "aio_suspend",
                    aio.suspend([&req], Some(std::time::Duration::ZERO)),
                ),
                ("aio_suspend", req.wait().map(drop)),
                ("aio_cancel", req.cancel().map(drop)),
                ("io_uring_register", aio.register_fd(&f).map(drop)),
            ];
            let mut wrong = Vec::new();
            for (want, r) in calls {
                match r {
                    Err(e) if e.kind() == ErrorKind::InvalidState && e.call() == want => {}
                    other => wrong.push(format!("{want}: {other:?}")),
                }
            }
            if wrong.is_empty() {
                Ok(())
            } else {
                Err(wrong.join("\n"))
            }
        })
    };
    outcome.unwrap();
    rustix::io::write(&pw, b"abcd").unwrap();
    let c = req.wait().unwrap();
    assert_eq!(c.data(), b"abcd");
}

common::both!(child_refusal_names, child_refusals_name_their_call);

/// A forked child's submission with a notification through its parent's
/// io_uring context is refused before the notification is prepared: the
/// child neither starts the completion thread nor registers a completion
/// eventfd with the rings, which are the parent's (the kernel's instance is
/// shared). Before, the child registered its eventfd there, and the
/// parent's first notified request failed with `io_uring_register` EBUSY
/// (the rings have one eventfd).
#[test]
fn child_notified_submission_leaves_the_parents_rings_alone() {
    use posixrt::aio::{Notify, Op};
    use std::sync::mpsc;
    if common::uring::uring_refused() {
        return;
    }
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    let f = std::fs::File::from(
        rustix::fs::memfd_create("notified", rustix::fs::MemfdFlags::empty()).unwrap(),
    );
    rustix::io::pwrite(&f, b"data", 0).unwrap();
    // SAFETY: the submission refuses the inherited context before it takes
    // any lock or starts a thread.
    let outcome = unsafe {
        common::child::in_child(|| {
            let op = Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread(0, |_| {}));
            match aio.submit(op) {
                Err(e) if e.kind() == ErrorKind::InvalidState && e.call() == "aio_read" => Ok(()),
                other => Err(format!("the child's notified read gave {other:?}")),
            }
        })
    };
    outcome.unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let op = Op::read(&f, 0, vec![0u8; 4]).notify(Notify::thread(7, move |v| {
        let _ = tx.lock().unwrap().send(v.int());
    }));
    let mut r = aio.submit(op).expect("the parent's notified read");
    assert_eq!(rx.recv().unwrap(), 7);
    assert_eq!(r.wait().unwrap().data(), b"data");
}
