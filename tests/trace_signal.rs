//! `posix_trace_event` is async-signal-safe (POSIX lists it): a signal handler
//! may record while its own thread is inside the recorder. Such an event cannot
//! go into the sub-buffer the interrupted record is half-way through, so it is
//! dropped and counted lost, never lost silently nor written over another.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::*};
use std::sync::Arc;

use posixrt::trace::{self, EventId, StreamFullPolicy, Trace, TraceAttr};

static HANDLER_ID: AtomicU16 = AtomicU16::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    let n = HANDLED.fetch_add(1, Relaxed);
    if let Some(id) = EventId::from_raw(HANDLER_ID.load(Relaxed)) {
        trace::event(id, &n.to_le_bytes());
    }
}

/// Installs `on_signal` for SIGRTMIN (queued, not merged), restarting interrupted calls.
fn install_handler() {
    // SAFETY: a zeroed sigaction is valid; the handler only touches atomics and
    // the recorder; the old action is not needed.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGRTMIN(), &sa, std::ptr::null_mut()),
            0
        );
    }
}

/// Sends SIGRTMIN to thread `tid` of this process.
fn tgkill(tid: libc::pid_t) {
    // SAFETY: a plain syscall; the thread exists until the sender is stopped.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid,
            libc::SIGRTMIN() as libc::c_long,
        );
    }
}

#[test]
fn events_of_a_handler_that_interrupts_its_thread_are_recorded_or_counted_lost() {
    let main_id = trace::eventid_open("ts.main").unwrap();
    let handler_id = trace::eventid_open("ts.handler").unwrap();
    HANDLER_ID.store(handler_id.raw(), Relaxed);
    let mut a = TraceAttr::new();
    a.set_stream_size(96 << 20).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::UntilFull);
    let t = Trace::create(&a).unwrap();
    t.start().unwrap();
    trace::event(main_id, &u64::MAX.to_le_bytes()); // maps this thread's sub-buffer
    install_handler();

    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // One signal at a time: the next once the last was handled, so
            // the thread still makes progress between them.
            while !stop.load(Relaxed) {
                let h = HANDLED.load(Relaxed);
                tgkill(me);
                while HANDLED.load(Relaxed) == h && !stop.load(Relaxed) {
                    std::hint::spin_loop();
                }
            }
        })
    };
    // Until enough signals came (the sender may wait for a CPU), within what
    // the stream holds.
    let mut n = 0u64;
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while HANDLED.load(Relaxed) < 2_000 && std::time::Instant::now() < give_up {
        if n < 3_000_000 {
            for _ in 0..256 {
                trace::event(main_id, &n.to_le_bytes());
                n += 1;
            }
        } else if HANDLED.load(Relaxed) >= 10 {
            break;
        }
    }
    stop.store(true, Relaxed);
    sender.join().unwrap();
    t.stop().unwrap();
    let handled = HANDLED.load(Relaxed);
    let overrun = t.status().overrun;

    let (mut mains, mut handlers, mut lost) = (Vec::new(), 0u64, 0u64);
    while let Some(e) = t.try_getnext().unwrap() {
        if e.id == main_id {
            mains.push(u64::from_le_bytes(e.data[..8].try_into().unwrap()));
        } else if e.id == handler_id {
            handlers += 1;
        } else if e.id == EventId::OVERFLOW {
            lost += u64::from_le_bytes(e.data[..8].try_into().unwrap());
        } else {
            assert!(
                [EventId::START, EventId::STOP, EventId::RESUME].contains(&e.id),
                "unexpected event {:?}",
                e.id
            );
        }
    }
    t.shutdown().unwrap();
    assert!(handled >= 10, "only {handled} signals were handled");
    let expected: Vec<u64> = std::iter::once(u64::MAX).chain(0..n).collect();
    assert!(mains == expected, "the thread's own events were damaged");
    assert_eq!(overrun, lost > 0, "the status reports the losses");
    assert_eq!(
        handlers + lost,
        handled,
        "{handlers} handler events recorded, {lost} counted lost, {handled} handled"
    );
}
