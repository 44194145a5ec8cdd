//! POSIX conformance of `posixrt::aio` on both engines (issue 10): fsync checks at
//! submission, waits interrupted by signals, any timeout, SIGEV_THREAD callbacks
//! that block, O_NONBLOCK, non-seekable files, and descriptors that block never
//! starving the thread engine. `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend, ListMode, Notify, Op, SyncMode};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::{ctx, pipe};

#[allow(dead_code)]
fn set_nonblocking(fd: impl AsFd) {
    let fl = rustix::fs::fcntl_getfl(&fd).unwrap();
    rustix::fs::fcntl_setfl(&fd, fl | rustix::fs::OFlags::NONBLOCK).unwrap();
}

/// A regular file with `content`, opened read-write (removed at once).
fn file(content: &[u8]) -> File {
    common::temp_file(content)
}

/// Waits (bounded) for `req`, which must end with EAGAIN (`what` names it).
fn ends_with_eagain<B: Send + 'static>(aio: &Aio, mut req: posixrt::aio::Request<B>, what: &str) {
    assert!(
        done_within(aio, &req, Duration::from_secs(3)),
        "{what} stays in progress"
    );
    let e = req.aio_return().unwrap().result.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EAGAIN), "{what}: {e}");
}

/// Waits (bounded) until `req` is done; false if it is still in progress.
fn done_within<B: Send + 'static>(aio: &Aio, req: &posixrt::aio::Request<B>, t: Duration) -> bool {
    let _ = aio.suspend([req], Some(t));
    req.is_done()
}

// ------------------------------------------------------------ 1. aio_fsync

fn fsync_checked_at_submission(b: Backend) {
    let aio = ctx(b);
    // A descriptor that is not open: EBADF from the call itself. (Not a
    // number just closed: the tests running beside this one open files, and
    // one could take it.)
    let (_rd, wr) = pipe();
    // SAFETY: the number is only handed to aio_fsync, which must refuse it; it
    // is above any fd the kernel hands out (`fs.nr_open` is at most 2^30).
    let bad = unsafe { BorrowedFd::borrow_raw(i32::MAX - 1) };
    let e = aio.fsync(bad, SyncMode::Sync).unwrap_err();
    assert!(
        matches!(e.errno(), Some(libc::EBADF) | Some(libc::EINVAL)),
        "{e}"
    );
    // Not open for writing: EBADF.
    let f = file(b"data");
    let ro = File::open(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap();
    let e = aio.fsync(&ro, SyncMode::Sync).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
    let e = aio.fsync(&ro, SyncMode::DataSync).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EBADF), "{e}");
    // Cannot be synchronised: a pipe, a socket: EINVAL.
    let e = aio.fsync(&wr, SyncMode::Sync).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    let (s1, _s2) = UnixStream::pair().unwrap();
    let e = aio.fsync(&s1, SyncMode::DataSync).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    // reqprio (and every field but the fd and the notification) is ignored.
    let mut r = aio
        .submit(Op::<()>::fsync(&f, SyncMode::Sync).reqprio(99))
        .unwrap();
    r.wait().unwrap().result.unwrap();
}
both!(fsync_validates_at_submission, fsync_checked_at_submission);

// ---------------------------------------------------- 2. signals interrupt

extern "C" fn on_usr(_: i32) {}

fn install(signo: i32, restart: bool) {
    // SAFETY: installs a handler that does nothing; the struct is fully set.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr as *const () as usize;
        sa.sa_flags = if restart { libc::SA_RESTART } else { 0 };
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(signo, &sa, std::ptr::null_mut()), 0);
    }
}

/// Sends `signo` to the calling thread every 50 ms (from another thread), until
/// stopped: a signal that lands before the wait it is meant to interrupt (the
/// test thread was slow to get there) only runs the handler, and the next one
/// comes.
struct Kicker {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

fn kick_me(signo: i32) -> Kicker {
    use std::sync::atomic::Ordering;
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as usize;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        // Bounded: 100 kicks (5 s), beyond every wait the test makes.
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(50));
            if stop2.load(Ordering::Acquire) {
                return;
            }
            // SAFETY: the target thread waits in `Kicker::stop` until this
            // thread has returned, so it is alive.
            unsafe { libc::pthread_kill(me as libc::pthread_t, signo) };
        }
    });
    Kicker { stop, thread }
}

impl Kicker {
    /// No signal is sent once this returns.
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread.join().unwrap();
    }
}

fn signal_interrupts_waits(b: Backend) {
    for (signo, restart) in [(libc::SIGUSR1, false), (libc::SIGUSR2, true)] {
        install(signo, restart);
        let aio = ctx(b);
        let (rd, wr) = pipe();
        let r = aio.read(&rd, 0, vec![0u8; 4]).unwrap();
        let k = kick_me(signo);
        let t0 = Instant::now();
        let e = aio.suspend([&r], Some(Duration::from_secs(3))).unwrap_err();
        k.stop();
        assert_eq!(
            e.kind(),
            ErrorKind::Interrupted,
            "suspend, SA_RESTART={restart}: {e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        // The request is unaffected: it completes later.
        rustix::io::write(&wr, b"abcd").unwrap();
        aio.suspend([&r], Some(Duration::from_secs(5))).unwrap();
        let mut r = r;
        assert_eq!(r.aio_return().unwrap().data(), b"abcd");

        // lio_listio(LIO_WAIT) likewise.
        let e = interrupted_list_read(&aio, &rd, signo);
        assert_eq!(
            e.kind(),
            ErrorKind::Interrupted,
            "lio_listio, SA_RESTART={restart}: {e}"
        );
        rustix::io::write(&wr, b"xy").unwrap();
        // The interrupted list's read goes on: it takes the data.
        let deadline = Instant::now() + Duration::from_secs(5);
        while rustix::io::ioctl_fionread(&rd).unwrap() > 0 {
            assert!(Instant::now() < deadline, "the listed read never ran");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
both!(
    signals_interrupt_suspend_and_list_wait,
    signal_interrupts_waits
);

/// An `LIO_WAIT` list of one 2-byte read of the empty pipe `rd`, with `signo`
/// sent to this thread until it returns: its error.
fn interrupted_list_read(aio: &Aio, rd: &std::os::fd::OwnedFd, signo: i32) -> posixrt::Error {
    let k = kick_me(signo);
    let e = aio
        .lio_listio(
            ListMode::Wait,
            [Some(Op::read(rd, 0, vec![0u8; 2]))],
            Notify::None,
        )
        .err()
        .expect("lio_listio returned without data");
    k.stop();
    e
}

/// The requests of an interrupted `LIO_WAIT` list go on, and the program has
/// no handle of them: `cancel_fd` (`aio_cancel(fd, NULL)`) must still reach
/// them, and not say `AllDone` while a read waits on the fd.
fn cancel_fd_after_interrupted_list(b: Backend) {
    install(libc::SIGUSR1, false);
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let e = interrupted_list_read(&aio, &rd, libc::SIGUSR1);
    assert_eq!(e.kind(), ErrorKind::Interrupted, "{e}");
    assert_eq!(
        aio.cancel_fd(rd.as_raw_fd()).unwrap(),
        posixrt::aio::CancelResult::Canceled,
        "the interrupted list's read was not cancelled"
    );
    // Cancelled, it takes none of the data written next (a read that took
    // it would have done so at once: it waits in the kernel or a worker).
    rustix::io::write(&wr, b"xy").unwrap();
    let mut r = aio.read(&rd, 0, vec![0u8; 2]).unwrap();
    assert!(done_within(&aio, &r, Duration::from_secs(5)));
    assert_eq!(r.aio_return().unwrap().data(), b"xy");
}
both!(
    cancel_fd_reaches_an_interrupted_lists_requests,
    cancel_fd_after_interrupted_list
);

/// True if thread `tid` of this process sleeps in a wait's own sleep
/// (`ppoll`, `io_uring_enter`), seen before and after its state: not for a
/// lock, nor anywhere else before the call's first sleep. (A handler that
/// runs there, while the call waits for the allocator's lock, say, is not
/// seen: nor is it by glibc.)
fn asleep_in_wait(tid: i32) -> bool {
    let path = |f: &str| format!("/proc/self/task/{tid}/{f}");
    let syscall = || {
        let s = std::fs::read_to_string(path("syscall")).ok()?;
        s.split(' ').next()?.trim().parse::<i64>().ok()
    };
    let Some(nr) = syscall().filter(|&n| n == libc::SYS_ppoll || n == libc::SYS_io_uring_enter)
    else {
        return false;
    };
    let Ok(stat) = std::fs::read_to_string(path("stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|c| stat[c + 1..].trim_start().chars().next());
    state == Some('S') && syscall() == Some(nr)
}

/// A thread that reads a cached memfd through `aio` without pause (each of
/// its completions wakes the other waiters), until the flag is set.
fn busy_reader(
    aio: &Aio,
) -> (
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let file = std::fs::File::from(
        rustix::fs::memfd_create("busy", rustix::fs::MemfdFlags::empty()).unwrap(),
    );
    rustix::io::pwrite(&file, &vec![7u8; 64 * 4096], 0).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (aio, flag) = (aio.clone(), Arc::clone(&stop));
    let busy = std::thread::spawn(move || {
        let mut i = 0i64;
        while !flag.load(Ordering::Acquire) {
            let r = aio.read(&file, (i % 64) * 4096, vec![0u8; 4096]);
            assert_eq!(r.unwrap().wait().unwrap().result.unwrap(), 4096);
            i += 1;
        }
    });
    (stop, busy)
}

/// Handler runs of [`count_handled`].
static HANDLED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn count_handled(_: i32) {
    HANDLED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Every handler that runs while `suspend` or `lio_listio(Wait)` sleeps ends
/// it with EINTR, also while another thread's reads complete all the time.
/// Their completions wake the waiter, and a handler that ran while it was
/// awake, between two sleeps, used to go unseen (the wait went on). In each
/// round another thread sends one signal once it sees the waiter asleep in
/// the wait (see [`asleep_in_wait`]); a
/// round still waiting 2 s after the handler ran counts a missed signal, and
/// gets another. (Its own signal number and handler: the other signal tests
/// of this binary may run at the same time.)
fn handlers_beside_other_io(b: Backend) {
    use std::sync::atomic::{AtomicU32, Ordering};
    const ROUNDS: u32 = 30;
    let signo = libc::SIGRTMIN() + 7;
    // SAFETY: installs a handler that only counts; the struct is fully set.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = count_handled as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(signo, &sa, std::ptr::null_mut()), 0);
    }
    let aio = ctx(b);
    let (stop, busy) = busy_reader(&aio);
    // SAFETY: gettid and pthread_self have no preconditions.
    let (tid, me) = unsafe { (libc::gettid(), libc::pthread_self() as usize) };
    let started = Arc::new(AtomicU32::new(0));
    let ended = Arc::new(AtomicU32::new(0));
    let signaler = {
        let (started, ended) = (Arc::clone(&started), Arc::clone(&ended));
        std::thread::spawn(move || {
            let nap = || std::thread::sleep(Duration::from_micros(50));
            // Sends the signal, and waits until its handler ran (the waiter
            // may be slow to get the CPU) or the round ended.
            let kick = |round: u32| {
                let h = HANDLED.load(Ordering::SeqCst);
                // SAFETY: the waiter joins this thread before it returns.
                unsafe { libc::pthread_kill(me as libc::pthread_t, signo) };
                while HANDLED.load(Ordering::SeqCst) == h && ended.load(Ordering::Acquire) < round {
                    nap();
                }
            };
            let mut missed = 0;
            for round in 1..=2 * ROUNDS {
                while started.load(Ordering::Acquire) < round {
                    nap();
                }
                let t = Instant::now();
                while !asleep_in_wait(tid) && t.elapsed() < Duration::from_secs(1) {
                    nap();
                }
                kick(round);
                let mut t = Instant::now();
                while ended.load(Ordering::Acquire) < round {
                    nap();
                    if t.elapsed() > Duration::from_secs(2) {
                        missed += 1;
                        kick(round);
                        t = Instant::now();
                    }
                }
            }
            missed
        })
    };
    let (rd, wr) = pipe();
    let r = aio.read(&rd, 0, vec![0u8; 1]).unwrap();
    let mut suspend_eintr = 0;
    for round in 1..=ROUNDS {
        started.store(round, Ordering::Release);
        let e = aio.suspend([&r], Some(Duration::from_secs(5))).err();
        suspend_eintr += e.is_some_and(|e| e.kind() == ErrorKind::Interrupted) as u32;
        ended.store(round, Ordering::Release);
    }
    let mut list_eintr = 0;
    for round in ROUNDS + 1..=2 * ROUNDS {
        started.store(round, Ordering::Release);
        let e = aio
            .lio_listio(
                ListMode::Wait,
                [Some(Op::read(&rd, 0, vec![0u8; 1]))],
                Notify::None,
            )
            .err();
        list_eintr += e.is_some_and(|e| e.kind() == ErrorKind::Interrupted) as u32;
        ended.store(round, Ordering::Release);
    }
    let missed = signaler.join().unwrap();
    stop.store(true, Ordering::Release);
    busy.join().unwrap();
    assert_eq!(
        (suspend_eintr, list_eintr, missed),
        (ROUNDS, ROUNDS, 0),
        "EINTR from suspend and lio_listio, signals missed"
    );
    // Every read in flight gets its byte.
    rustix::io::write(&wr, &[b'!'; ROUNDS as usize + 1]).unwrap();
    let mut r = r;
    aio.suspend([&r], Some(Duration::from_secs(5))).unwrap();
    assert_eq!(r.aio_return().unwrap().data(), b"!");
}
both!(
    every_handler_interrupts_a_wait_beside_other_io,
    handlers_beside_other_io
);

/// An ignored signal (SIGURG, ignored by default) sent to the waiter while
/// other threads' reads keep waking it interrupts nothing: no handler runs.
/// (While the waiter is awake its signals are blocked, and a blocked signal
/// stays pending even when ignored: the wait used to count it as a handler
/// due, and returned EINTR in nearly every call.)
fn ignored_signals_beside_other_io(b: Backend) {
    use std::sync::atomic::Ordering;
    let aio = ctx(b);
    let (stop, busy) = busy_reader(&aio);
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as usize;
    let sender = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sent = 0u32;
            while !stop.load(Ordering::Acquire) {
                // SAFETY: the waiter joins this thread before it returns.
                unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGURG) };
                sent += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            sent
        })
    };
    let (rd, _wr) = pipe();
    let r = aio.read(&rd, 0, vec![0u8; 1]).unwrap();
    let (mut calls, mut interrupted) = (0, 0);
    for _ in 0..10 {
        calls += 1;
        let e = aio
            .suspend([&r], Some(Duration::from_millis(50)))
            .unwrap_err();
        interrupted += (e.kind() == ErrorKind::Interrupted) as u32;
    }
    stop.store(true, Ordering::Release);
    busy.join().unwrap();
    let sent = sender.join().unwrap();
    assert!(sent > 0);
    assert_eq!(
        interrupted, 0,
        "{interrupted} of {calls} waits interrupted, with {sent} ignored signals and no handler"
    );
    assert_eq!(r.cancel().unwrap(), posixrt::aio::CancelResult::Canceled);
}
both!(
    an_ignored_signal_interrupts_no_wait,
    ignored_signals_beside_other_io
);

// -------------------------------------------------------- 3. any timeout

fn huge_timeouts(b: Backend) {
    let aio = ctx(b);
    for t in [Duration::MAX, Duration::from_secs(i64::MAX as u64)] {
        let (rd, wr) = pipe();
        let r = aio.read(&rd, 0, vec![0u8; 1]).unwrap();
        let w = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            rustix::io::write(&wr, b"z").unwrap();
            wr
        });
        aio.suspend([&r], Some(t)).unwrap();
        drop(w.join().unwrap());
        assert!(r.is_done());
    }
}
both!(any_timeout_is_valid, huge_timeouts);

// ------------------------------------------ 4. SIGEV_THREAD as a new thread

fn blocked_callback_does_not_delay(b: Backend) {
    let aio = ctx(b);
    let f = file(b"0123456789");
    let (tx, rx) = mpsc::channel::<()>();
    let rx = Arc::new(std::sync::Mutex::new(rx));
    let (seen_tx, seen_rx) = mpsc::channel::<&'static str>();
    let s1 = seen_tx.clone();
    // The first callback blocks until the second has run.
    let first = Notify::thread(1, move |_| {
        let ok = rx
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(3))
            .is_ok();
        let _ = s1.send(if ok {
            "first-released"
        } else {
            "first-timed-out"
        });
    });
    let mut r1 = aio
        .submit(Op::read(&f, 0, vec![0u8; 2]).notify(first))
        .unwrap();
    r1.wait().unwrap().result.unwrap();
    let second = Notify::thread(2, move |_| {
        let _ = seen_tx.send("second");
        let _ = tx.send(());
    });
    let mut r2 = aio
        .submit(Op::read(&f, 2, vec![0u8; 2]).notify(second))
        .unwrap();
    r2.wait().unwrap().result.unwrap();
    let a = seen_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let c = seen_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((a, c), ("second", "first-released"));
}
both!(
    sigev_thread_callbacks_do_not_wait_for_each_other,
    blocked_callback_does_not_delay
);

// ----------------------------------------------------------- 5. O_NONBLOCK

fn nonblocking_gives_eagain(b: Backend) {
    let aio = ctx(b);
    // An empty O_NONBLOCK pipe: EAGAIN, as read(2).
    let (rd, wr) = pipe();
    set_nonblocking(&rd);
    ends_with_eagain(&aio, aio.read(&rd, 0, vec![0u8; 8]).unwrap(), "read");
    // A full O_NONBLOCK pipe: a write that would block gives EAGAIN.
    set_nonblocking(&wr);
    let mut junk = vec![0u8; 1 << 16];
    while rustix::io::write(&wr, &junk).is_ok() {}
    junk.truncate(4096);
    ends_with_eagain(&aio, aio.write(&wr, 0, junk).unwrap(), "write");
    // An O_NONBLOCK socket with nothing to read, read at an offset.
    let (s1, _s2) = UnixStream::pair().unwrap();
    s1.set_nonblocking(true).unwrap();
    ends_with_eagain(
        &aio,
        aio.read(&s1, 100, vec![0u8; 8]).unwrap(),
        "socket read",
    );
    // An O_NONBLOCK terminal, which io_uring refuses RWF_NOWAIT on: a write
    // goes through.
    let (master, slave) = nonblocking_pty();
    let mut w = aio.write(&slave, 0, b"x".to_vec()).unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 1);
    let mut got = [0u8; 1];
    std::io::Read::read_exact(&mut &master, &mut got).unwrap();
    assert_eq!(&got, b"x");
    // With data there, the O_NONBLOCK read just reads.
    rustix::io::write(&wr, b"").ok();
    let (rd2, wr2) = pipe();
    set_nonblocking(&rd2);
    rustix::io::write(&wr2, b"ready").unwrap();
    let mut r = aio.read(&rd2, 0, vec![0u8; 8]).unwrap();
    assert_eq!(r.wait().unwrap().result.unwrap(), 5);
}
both!(o_nonblock_is_honoured, nonblocking_gives_eagain);

// ------------------------------------------------ 6. non-seekable files

/// Socket reads at an offset: data written before and after the read is
/// submitted. Returns the pair.
fn socket_reads_ignore_the_offset(aio: &Aio) -> (UnixStream, UnixStream) {
    let (s1, s2) = UnixStream::pair().unwrap();
    (&s2).write_all(b"hello").unwrap();
    let mut r = aio.read(&s1, 4096, vec![0u8; 5]).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.data(), b"hello");
    assert_eq!(c.result.unwrap(), 5);
    let mut r = aio.read(&s1, 123, vec![0u8; 3]).unwrap();
    (&s2).write_all(b"abc").unwrap();
    assert_eq!(r.wait().unwrap().data(), b"abc");
    // A large read (256 KiB: io_uring runs it on a kernel worker, where the
    // offset is refused after the submitting call returned).
    (&s2).write_all(b"big").unwrap();
    let mut r = aio.read(&s1, 4096, vec![0u8; 256 * 1024]).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.data(), b"big");
    assert_eq!(c.result.unwrap(), 3);
    (s1, s2)
}

/// A pseudo-terminal: its master and its slave, opened `O_NONBLOCK`.
fn nonblocking_pty() -> (File, File) {
    // SAFETY: plain libc calls on the fds they return; `ptsname`'s static
    // buffer is copied at once (no other test calls it).
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        assert!(libc::grantpt(m) == 0 && libc::unlockpt(m) == 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(m)).to_owned();
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK,
        );
        assert!(s >= 0, "open {name:?}: {}", std::io::Error::last_os_error());
        (File::from_raw_fd(m), File::from_raw_fd(s))
    }
}

fn offsets_ignored_on_streams(b: Backend) {
    let aio = ctx(b);
    let (s1, s2) = socket_reads_ignore_the_offset(&aio);
    // A write at an offset to a socket.
    let mut w = aio.write(&s1, 777, b"xyz".to_vec()).unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 3);
    let mut got = [0u8; 3];
    std::io::Read::read_exact(&mut &s2, &mut got).unwrap();
    assert_eq!(&got, b"xyz");
    // A pipe, read and written at offsets.
    let (rd, wr) = pipe();
    let mut w = aio.write(&wr, 99, b"pipe".to_vec()).unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 4);
    let mut r = aio.read(&rd, 1 << 20, vec![0u8; 4]).unwrap();
    assert_eq!(r.wait().unwrap().data(), b"pipe");
    // A datagram socket.
    let (d1, d2) = UnixDatagram::pair().unwrap();
    d2.send(b"dgram").unwrap();
    let mut r = aio.read(&d1, 55, vec![0u8; 16]).unwrap();
    assert_eq!(r.wait().unwrap().data(), b"dgram");
}
both!(
    non_seekable_files_ignore_the_offset,
    offsets_ignored_on_streams
);

/// The same stream rules hold while another thread waits in the engine (on
/// io_uring: asleep in the ring as its reaper, the common shape of a program
/// with one thread in `aio_suspend` and others submitting), and a read whose
/// submitting thread has exited still completes.
fn streams_beside_a_waiting_thread(b: Backend) {
    let aio = Aio::builder().backend(b).rings(1).build().unwrap();
    let (wait_rd, wait_wr) = pipe();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut r = aio.read(&wait_rd, 0, vec![0u8; 4]).unwrap();
            aio.suspend([&r], Some(Duration::from_secs(20))).unwrap();
            let c = r.aio_return().unwrap();
            (c.data().to_vec(), c.result.unwrap())
        });
        // Time for the waiter to fall asleep (if it has not, these run as
        // without it: still the same results).
        std::thread::sleep(Duration::from_millis(100));
        socket_reads_ignore_the_offset(&aio);
        // O_NONBLOCK with nothing to read: EAGAIN, on a socket and a pipe.
        let (n1, _n2) = UnixStream::pair().unwrap();
        n1.set_nonblocking(true).unwrap();
        ends_with_eagain(&aio, aio.read(&n1, 7, vec![0u8; 8]).unwrap(), "socket read");
        let (nrd, _nwr) = pipe();
        set_nonblocking(&nrd);
        ends_with_eagain(&aio, aio.read(&nrd, 0, vec![0u8; 8]).unwrap(), "pipe read");
        // Reads that complete at once: a regular file, an O_NONBLOCK pipe with
        // data.
        let f = file(b"regular");
        let mut r = aio.read(&f, 2, vec![0u8; 5]).unwrap();
        assert_eq!(r.wait().unwrap().data(), b"gular");
        let (drd, dwr) = pipe();
        set_nonblocking(&drd);
        rustix::io::write(&dwr, b"ready").unwrap();
        let mut r = aio.read(&drd, 0, vec![0u8; 8]).unwrap();
        assert_eq!(r.wait().unwrap().data(), b"ready");
        // A pipe read submitted by a thread that then exits (io_uring cancels
        // a task's pending requests at its exit), its fd closed at once.
        let (xrd, xwr) = pipe();
        let r = std::thread::scope(|t| {
            t.spawn(|| {
                let r = aio.read(&xrd, 0, vec![0u8; 6]).unwrap();
                drop(xrd);
                r
            })
            .join()
            .unwrap()
        });
        rustix::io::write(&xwr, b"exited").unwrap();
        let mut r = r;
        let c = r.wait().unwrap();
        assert_eq!(c.data(), b"exited");
        assert_eq!(c.result.unwrap(), 6);
        // The waiter's own read.
        rustix::io::write(&wait_wr, b"wake").unwrap();
        assert_eq!(waiter.join().unwrap(), (b"wake".to_vec(), 4));
    });
}
both!(streams_beside_a_waiter, streams_beside_a_waiting_thread);

// ---------------------------- 7. blocked descriptors never starve the rest

fn idle_pipes_do_not_starve(b: Backend) {
    let aio = ctx(b);
    let f = file(&[7u8; 4096]);
    let mut pipes = Vec::new();
    let mut idle = Vec::new();
    for _ in 0..16 {
        let (rd, wr) = pipe();
        idle.push(aio.read(&rd, 0, vec![0u8; 1]).unwrap());
        pipes.push((rd, wr));
    }
    // And 16 on one pipe.
    let (one_rd, one_wr) = pipe();
    for _ in 0..16 {
        idle.push(aio.read(&one_rd, 0, vec![0u8; 1]).unwrap());
    }
    std::thread::sleep(Duration::from_millis(20));
    let r = aio.read(&f, 0, vec![0u8; 4096]).unwrap();
    assert!(
        done_within(&aio, &r, Duration::from_secs(3)),
        "a regular-file read waits behind idle pipe reads"
    );
    // The idle ones still work.
    for (_, wr) in &pipes {
        rustix::io::write(wr, b"p").unwrap();
    }
    rustix::io::write(&one_wr, &[b'q'; 16]).unwrap();
    for mut r in idle {
        assert_eq!(r.wait().unwrap().result.unwrap(), 1);
    }
}
both!(
    idle_pipe_reads_do_not_starve_a_file_read,
    idle_pipes_do_not_starve
);

fn datagram_write_without_pollout(b: Backend) {
    let aio = ctx(b);
    let (d1, d2) = UnixDatagram::pair().unwrap();
    let sndbuf = 208 * 1024;
    let v = sndbuf as libc::c_int;
    // SAFETY: sets an int socket option from a valid int.
    let rc = unsafe {
        libc::setsockopt(
            d1.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0);
    let n = 104 * 1024;
    // write(2) would complete both (they fit in the send buffer), although
    // POLLOUT is not signalled after the first.
    let mut w1 = aio.write(&d1, 0, vec![1u8; n]).unwrap();
    assert_eq!(w1.wait().unwrap().result.unwrap(), n);
    let w2 = aio.write(&d1, 0, vec![2u8; n]).unwrap();
    assert!(
        done_within(&aio, &w2, Duration::from_secs(3)),
        "the second datagram write waits for POLLOUT"
    );
    let mut w2 = w2;
    assert_eq!(w2.aio_return().unwrap().result.unwrap(), n);
    let mut buf = vec![0u8; n];
    assert_eq!(d2.recv(&mut buf).unwrap(), n);
    assert_eq!(d2.recv(&mut buf).unwrap(), n);
    assert!(buf.iter().all(|&x| x == 2));
}
both!(
    datagram_write_does_not_wait_for_pollout,
    datagram_write_without_pollout
);

/// A read of no bytes on a socket or pipe returns 0 at once, as `read(2)`
/// does, and takes nothing: the datagram sent next is still there to read.
/// (The thread engine waited for data, then took a whole datagram for its
/// zero bytes.)
fn zero_byte_reads(b: Backend) {
    let aio = ctx(b);
    let (d1, d2) = UnixDatagram::pair().unwrap();
    let (s1, s2) = UnixStream::pair().unwrap();
    let (rd, wr) = pipe();
    let reads = [
        aio.read(&d1, 0, Vec::<u8>::new()).unwrap(),
        aio.read(&s1, 0, Vec::<u8>::new()).unwrap(),
        aio.read(&rd, 0, Vec::<u8>::new()).unwrap(),
    ];
    for (i, r) in reads.into_iter().enumerate() {
        assert!(
            done_within(&aio, &r, Duration::from_secs(10)),
            "{b:?}: read {i} of no bytes waits for data"
        );
        let mut r = r;
        assert_eq!(r.aio_return().unwrap().result.unwrap(), 0, "{b:?}: {i}");
    }
    d2.send(b"dgram").unwrap();
    (&s2).write_all(b"stream").unwrap();
    rustix::io::write(&wr, b"pipe").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        d1.recv(&mut buf).unwrap(),
        5,
        "{b:?}: the datagram is there"
    );
    assert_eq!(&buf[..5], b"dgram");
    assert_eq!((&s1).read(&mut buf).unwrap(), 6, "{b:?}");
    assert_eq!(rustix::io::read(&rd, &mut buf).unwrap(), 4, "{b:?}");
}
both!(a_zero_byte_read_returns_at_once, zero_byte_reads);
