//! A future polled outside the tasks of a runtime built without its I/O
//! driver tries the registration with tokio's panic caught and kept quiet
//! (`aio/tokio_reap.rs`). The panic hook that does so must hand every other
//! panic to the hook the program set. A file of its own: it sets the
//! process's panic hook.
#![cfg(feature = "tokio")]

#[path = "common/uring.rs"]
mod uring;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use posixrt::aio::{Aio, Backend};

/// The tests set the process's panic hook: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static HOOK: Mutex<()> = Mutex::new(());
    HOOK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A `current_thread` runtime without its I/O driver.
fn no_io_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// True for tokio's panic at a registration with a runtime without I/O.
fn io_disabled(p: &(dyn std::any::Any + Send)) -> bool {
    let s = p.downcast_ref::<String>().map(String::as_str);
    s.or_else(|| p.downcast_ref::<&str>().copied())
        .is_some_and(|s| s.contains("IO is disabled"))
}

/// Awaits, in `rt`'s `block_on`, a read of a pipe written to 50 ms later.
fn read_in(aio: &Aio, rt: &tokio::runtime::Runtime) {
    let (r, w) = rustix::pipe::pipe().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        rustix::io::write(&w, b"q").unwrap();
    });
    let r = Arc::new(std::fs::File::from(r));
    assert_eq!(
        rt.block_on(aio.read_async(r, 0, vec![0u8; 1]))
            .unwrap()
            .data(),
        b"q"
    );
    writer.join().unwrap();
}

static SEEN: AtomicUsize = AtomicUsize::new(0);

/// Runs test `name` again in a child process, where the library's hook is not
/// installed yet; true in that child (the caller then runs the test).
fn in_child(name: &str) -> bool {
    const CHILD: &str = "POSIXRT_QUIET_PROBE_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{:?}: {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// The program set its hook before the library installed its own: the
/// library's caught panic does not reach it, any other panic does.
#[test]
fn other_panics_still_reach_the_programs_hook() {
    if uring::uring_refused() {
        return;
    }
    if !in_child("other_panics_still_reach_the_programs_hook") {
        return;
    }
    std::panic::set_hook(Box::new(|_| {
        SEEN.fetch_add(1, Ordering::SeqCst);
    }));
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    // A read that waits (a pipe written to 100 ms later), so it is armed.
    let (r, w) = rustix::pipe::pipe().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        rustix::io::write(&w, b"abc").unwrap();
    });
    let r = Arc::new(std::fs::File::from(r));
    let c = rt.block_on(aio.read_async(r, 0, vec![0u8; 3])).unwrap();
    writer.join().unwrap();
    assert_eq!(c.data(), b"abc");
    assert_eq!(SEEN.load(Ordering::SeqCst), 0, "the caught panic is quiet");
    let r = std::thread::spawn(|| panic!("a panic of the program")).join();
    assert!(r.is_err());
    assert_eq!(SEEN.load(Ordering::SeqCst), 1, "the program's hook saw it");
    let _ = std::panic::take_hook();
}

/// Two runtimes without an I/O driver, used in turn on one thread: each is
/// found out once (one caught panic each, at most), not at every read.
#[test]
fn each_runtime_is_tried_once_per_thread() {
    if uring::uring_refused() {
        return;
    }
    let _g = serial();
    let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
    let (r1, r2) = (no_io_rt(), no_io_rt());
    read_in(&aio, &r1); // installs the library's hook, if not yet
    static TRIES: AtomicUsize = AtomicUsize::new(0);
    let me = std::thread::current().id();
    let lib = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == me && io_disabled(info.payload()) {
            TRIES.fetch_add(1, Ordering::SeqCst);
        }
    }));
    for _ in 0..4 {
        read_in(&aio, &r2);
        read_in(&aio, &r1);
    }
    let _ = std::panic::take_hook();
    std::panic::set_hook(lib);
    assert_eq!(TRIES.load(Ordering::SeqCst), 1, "r2 once, r1 known already");
}

/// The first try of the process made by a thread that is unwinding (a
/// destructor that reads, on a runtime without its I/O driver) must not abort
/// the process: a panic hook cannot be changed there, and a second panic
/// aborts. Run in a child process.
#[test]
fn a_destructor_reading_while_unwinding() {
    if uring::uring_refused() {
        return;
    }
    if in_child("a_destructor_reading_while_unwinding") {
        struct ReadOnDrop<'a>(&'a Aio, &'a tokio::runtime::Runtime);
        impl Drop for ReadOnDrop<'_> {
            fn drop(&mut self) {
                read_in(self.0, self.1);
            }
        }
        let aio = Aio::builder().backend(Backend::Uring).build().unwrap();
        let rt = no_io_rt();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _d = ReadOnDrop(&aio, &rt);
            panic!("unwinding");
        }));
        assert!(r.is_err());
    }
}
