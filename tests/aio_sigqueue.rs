//! A `SIGEV_SIGNAL` notification that cannot be queued (`rt_sigqueueinfo` fails:
//! `RLIMIT_SIGPENDING` reached) is counted and traced, on both engines (issue 10,
//! point 9). Its own test binary: it sets the process's RLIMIT_SIGPENDING to 0.

#[path = "common/uring.rs"]
mod uring;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend, Notify, Op};
use posixrt::trace::{Trace, TraceAttr};

static SEEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sig(_: i32) {
    SEEN.fetch_add(1, Ordering::SeqCst);
}

fn failed_signal_counted(b: Backend) {
    let signo = libc::SIGRTMIN() + 3;
    // SAFETY: installs a handler that only counts; the struct is fully set.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sig as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(signo, &sa, std::ptr::null_mut()), 0);
    }
    // No queued signal fits any more (even for root: the limit applies to a
    // negative si_code such as SI_ASYNCIO).
    let old = rustix::process::getrlimit(rustix::process::Resource::Sigpending);
    rustix::process::setrlimit(
        rustix::process::Resource::Sigpending,
        rustix::process::Rlimit {
            current: Some(0),
            maximum: old.maximum,
        },
    )
    .unwrap();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    let aio = Aio::builder().backend(b).build().unwrap();
    let f = rustix::fs::memfd_create("n", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::io::write(&f, b"data").unwrap();
    let mut r = aio
        .submit(Op::read(&f, 0, vec![0u8; 4]).notify(Notify::signal(signo, 7)))
        .unwrap();
    assert_eq!(r.wait().unwrap().result.unwrap(), 4);
    let deadline = Instant::now() + Duration::from_secs(5);
    while aio.failed_notifications() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(aio.failed_notifications(), 1);
    assert_eq!(SEEN.load(Ordering::SeqCst), 0);
    t.stop().unwrap();
    let failed = t
        .events()
        .filter(|e| t.eventid_name(e.id).ok().as_deref() == Some("aio_notify_failed"))
        .count();
    assert!(failed >= 1, "no aio_notify_failed trace event");
}

#[test]
fn failed_sigqueue_is_counted_and_traced() {
    if !uring::uring_refused() {
        failed_signal_counted(Backend::Uring);
    }
    failed_signal_counted(Backend::Threads);
}
