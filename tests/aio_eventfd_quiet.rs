//! Once a context's completion eventfd is registered (a future that had to wait,
//! under tokio or not), a future whose read completes while its first poll
//! enters the ring does not make the kernel signal that eventfd: its poll reaps
//! the completion itself, and a signal would cost every request a wake-up of
//! the reactor or of the completion thread. Nor does a call's request without
//! notification (`aio_read`): the call reaps right after its entry.
#![cfg(feature = "tokio")]

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

// (`both!` is not used: the test is about the io_uring engine only.)
#[allow(unused_macros, unused_imports)]
mod common;
use common::{disk_temp_file, pattern, pipe, uring};

/// The counters of this process's eventfds (`eventfd-count` in fdinfo), by
/// eventfd (`eventfd-id`: an eventfd open under two numbers counts once).
fn eventfd_counts() -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let link = std::fs::read_link(e.path()).unwrap_or_default();
        if link.to_string_lossy() != "anon_inode:[eventfd]" {
            continue;
        }
        let fd = e.file_name().to_string_lossy().into_owned();
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else {
            continue;
        };
        let field = |name: &str, radix: u32| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|c| u64::from_str_radix(c.trim(), radix).ok())
        };
        let (Some(id), Some(count)) = (field("eventfd-id:", 10), field("eventfd-count:", 16))
        else {
            continue;
        };
        if !v.iter().any(|&(i, _)| i == id) {
            v.push((id, count));
        }
    }
    v
}

/// A memory file holding `content`: io_uring sends its reads to the kernel's
/// workers (they are not tried inline).
fn memfd(content: &[u8]) -> std::fs::File {
    use std::io::Write;
    let fd = rustix::fs::memfd_create("quiet", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let mut f = std::fs::File::from(fd);
    f.write_all(content).unwrap();
    f
}

/// The tests of this file one at a time: the first counts the signals of
/// every eventfd of the process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Nop;
impl Wake for Nop {
    fn wake(self: Arc<Self>) {}
}

/// How a read is made: a future submitted at its first poll, or a call
/// (`aio_read`) whose request is then polled as a future or waited for with
/// `aio_suspend`.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Future,
    CallPolled,
    CallSuspended,
}

/// 200 reads of a cached file once the context's eventfd is registered: the
/// eventfd signals they cost, and how many completed inline (done at their
/// first poll, or when the call returned). `None` where io_uring is refused,
/// or where the completion thread read the eventfd (the signals are unknown).
fn inline_signals(shape: Shape) -> Option<(u64, u64)> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if common::uring::uring_refused() {
        return None;
    }
    let aio = uring(1);
    // A cached regular file off tmpfs: its reads complete inline.
    let data = pattern(64 * 4096);
    let f = Arc::new(disk_temp_file(&data));
    // A read of an empty pipe waits: its poll registers the eventfd with this
    // runtime's reactor. The runtime is not driven after `block_on` returns,
    // so nothing reads the eventfd's counter afterwards.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (r, _w) = pipe();
    let r = Arc::new(std::fs::File::from(r));
    rt.block_on(async {
        let mut fut = aio.read_async(Arc::clone(&r), 0, vec![0u8; 8]);
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut fut).poll(cx))).await;
        assert!(first.is_pending());
    });
    // (The pipe read is cancelled; its completion may signal.)
    let before = eventfd_counts();
    assert!(!before.is_empty(), "no eventfd registered");
    // 200 reads, each polled outside any runtime until done.
    let waker = Waker::from(Arc::new(Nop));
    let mut cx = Context::from_waker(&waker);
    // Reads done at their first poll (completed inline).
    let mut inline = 0u64;
    for i in 0..200usize {
        let at = (i % 64) * 4096;
        let buf = vec![0u8; 4096];
        let (c, first) = match shape {
            Shape::Future => {
                poll_until_done(&mut cx, aio.read_async(Arc::clone(&f), at as i64, buf))
            }
            Shape::CallPolled => poll_until_done(
                &mut cx,
                aio.read(&*f, at as i64, buf).unwrap().into_future(),
            ),
            Shape::CallSuspended => {
                let mut req = aio.read(&*f, at as i64, buf).unwrap();
                let first = req.error().is_ok();
                aio.suspend([&req], None).unwrap();
                (req.aio_return().unwrap(), first)
            }
        };
        assert_eq!(*c.result.as_ref().unwrap(), 4096);
        assert_eq!(c.data(), &data[at..][..4096]);
        inline += first as u64;
    }
    let after = eventfd_counts();
    // A counter that went down was read by the completion thread (a read
    // that waited outside the runtime started it): the signals are unknown.
    let signals: Option<u64> = after
        .iter()
        .map(|(id, n)| n.checked_sub(before.iter().find(|(b, _)| b == id).map_or(0, |b| b.1)))
        .sum();
    drop(rt);
    let Some(signals) = signals else {
        eprintln!("skipped: the completion thread read the eventfd");
        return None;
    };
    Some((signals, inline))
}

/// Polls `fut` until it is ready: its output, and whether the first poll was.
fn poll_until_done<T, F: Future<Output = posixrt::Result<T>> + Unpin>(
    cx: &mut Context<'_>,
    mut fut: F,
) -> (T, bool) {
    let mut first = true;
    loop {
        match Pin::new(&mut fut).poll(cx) {
            Poll::Ready(c) => return (c.unwrap(), first),
            Poll::Pending => std::thread::yield_now(),
        }
        first = false;
    }
}

/// Checks that the inline reads of `shape` cost no eventfd signal.
fn check_quiet(shape: Shape) {
    let Some((signals, inline)) = inline_signals(shape) else {
        return;
    };
    if inline < 200 {
        // A file system whose reads go to the kernel's workers (overlayfs
        // on some kernels), or a page being read back in: each such read
        // signals, rightly, and so do the next 64 entries after its reap
        // (`QUIET_SKIP`), so the count says nothing.
        eprintln!("skipped: only {inline} of 200 reads completed inline here");
        return;
    }
    // (The cancelled pipe read's completion may signal.)
    assert!(
        signals <= 10,
        "{shape:?}: {signals} eventfd signals for 200 reads, {inline} of them completed inline"
    );
}

#[test]
fn inline_completions_do_not_signal_the_eventfd() {
    check_quiet(Shape::Future);
}

/// The same for a call's request without notification (`aio_read`): the call
/// reaps right after its entry, so neither a later poll of its request nor
/// `aio_suspend` needs the eventfd's watchers.
#[test]
fn inline_call_completions_do_not_signal_the_eventfd() {
    check_quiet(Shape::CallPolled);
    check_quiet(Shape::CallSuspended);
}

/// Reads that complete later (a pipe fed by another thread, a tmpfs file's
/// reads, which go to the kernel's workers) beside a stream of reads that
/// complete inline, each of which quiets the eventfd while it enters: every
/// one is woken, with the right bytes, on a `multi_thread` and on a
/// `current_thread` runtime.
#[test]
fn later_completions_beside_quiet_entries_are_woken() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if common::uring::uring_refused() {
        return;
    }
    for (multi, pipes) in [(true, true), (false, true), (true, false), (false, false)] {
        let aio = uring(2);
        let disk = Arc::new(disk_temp_file(&pattern(64 * 4096)));
        let shm = Arc::new(memfd(&pattern(64 * 4096)));
        let rt = if multi {
            common::multi_rt()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        // Without pipe reads waiting, the eventfd goes quiet for most entries,
        // and the tmpfs reads, still in the kernel when their entry's reap
        // looks, end quiets with requests in flight.
        let pipes: Vec<_> = (0..if pipes { 4 } else { 0 }).map(|_| pipe()).collect();
        let (readers, writers): (Vec<_>, Vec<_>) = pipes
            .into_iter()
            .map(|(r, w)| (Arc::new(std::fs::File::from(r)), std::fs::File::from(w)))
            .unzip();
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            for k in 0..writers.len() * 100 {
                let mut w = &writers[k % writers.len()];
                w.write_all(&[(k / writers.len()) as u8]).unwrap();
                if k % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        });
        let run = async {
            let mut tasks = Vec::new();
            for (p, r) in readers.iter().enumerate() {
                let (aio, r) = (aio.clone(), Arc::clone(r));
                tasks.push(tokio::spawn(async move {
                    for k in 0..100usize {
                        let c = aio
                            .read_async(Arc::clone(&r), 0, vec![0u8; 1])
                            .await
                            .unwrap();
                        assert_eq!(*c.result.as_ref().unwrap(), 1, "pipe {p}");
                        assert_eq!(c.data(), &[k as u8], "pipe {p}");
                    }
                }));
            }
            for (t, f) in [(0usize, &disk), (1, &disk), (2, &shm)] {
                let (aio, f) = (aio.clone(), Arc::clone(f));
                tasks.push(tokio::spawn(async move {
                    for k in 0..600usize {
                        common::read_pattern_block(&aio, &f, (k * 7 + t) % 64).await;
                        if k % 50 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        };
        // A lost wake-up would hang: a minute is far beyond the run's length.
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(60), run)
                .await
                .expect("a read was never woken")
        });
        feeder.join().unwrap();
    }
}

/// Polls `fut` outside any runtime until it is done.
#[cfg(target_arch = "x86_64")]
fn run<F: Future + Unpin>(mut fut: F) -> F::Output {
    let waker = Waker::from(Arc::new(Nop));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(c) = Pin::new(&mut fut).poll(&mut cx) {
            return c;
        }
        std::thread::yield_now();
    }
}

/// Holding a thread right after its `io_uring_enter` returns, with no lock
/// of its own held: a seccomp filter on that thread alone turns its
/// `io_uring_enter` into `SIGSYS`, whose handler ([`enter_then_hold`]) makes
/// the call itself (with `IORING_ENTER_SQ_WAKEUP` added, which the filter
/// lets through and which a ring without `SQPOLL` ignores), then, if armed,
/// waits for a byte on a pipe before it returns the result.
#[cfg(target_arch = "x86_64")]
mod hold {
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::atomic::{AtomicBool, AtomicI32};

    /// The thread to hold (its tid), the pipe it waits on, and the state.
    pub static TID: AtomicI32 = AtomicI32::new(0);
    pub static RELEASE: AtomicI32 = AtomicI32::new(-1);
    pub static ARMED: AtomicBool = AtomicBool::new(false);
    pub static HELD: AtomicBool = AtomicBool::new(false);

    const SYS_IO_URING_ENTER: u32 = 426;
    const IORING_ENTER_SQ_WAKEUP: u32 = 2;

    /// The `SIGSYS` handler: see the module.
    extern "C" fn enter_then_hold(_: i32, _: *mut libc::siginfo_t, uc: *mut libc::c_void) {
        // SAFETY: `errno` is this thread's, live for the thread's life.
        let errno = unsafe { *libc::__errno_location() };
        // SAFETY: an SA_SIGINFO handler's third argument is the interrupted
        // context; its registers hold the trapped call's arguments.
        let g = unsafe { &mut (*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
        let r = |i: i32| g[i as usize];
        // SAFETY: the trapped call, made as asked (plus a flag it ignores).
        let ret = unsafe {
            libc::syscall(
                i64::from(SYS_IO_URING_ENTER),
                r(libc::REG_RDI),
                r(libc::REG_RSI),
                r(libc::REG_RDX),
                r(libc::REG_R10) | i64::from(IORING_ENTER_SQ_WAKEUP),
                r(libc::REG_R8),
                r(libc::REG_R9),
            )
        };
        // SAFETY: as above.
        let err = unsafe { *libc::__errno_location() };
        g[libc::REG_RAX as usize] = if ret < 0 { -i64::from(err) } else { ret };
        // SAFETY: no arguments.
        if ARMED.load(SeqCst) && unsafe { libc::gettid() } == TID.load(SeqCst) {
            ARMED.store(false, SeqCst);
            HELD.store(true, SeqCst);
            let mut b = 0u8;
            // SAFETY: one byte into a local; the pipe is open while armed.
            while unsafe { libc::read(RELEASE.load(SeqCst), (&mut b as *mut u8).cast(), 1) } < 0 {}
            HELD.store(false, SeqCst);
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    /// Installs the handler (for the process) and the filter (for the
    /// calling thread and the threads it creates); false if the kernel
    /// refuses the filter. (A thread created by the filtered one, with
    /// `SIGSYS` blocked, would be killed by its first `io_uring_enter`: the
    /// test makes the context's helper threads first, from another thread.)
    pub fn install() -> bool {
        super::common::install_handler(libc::SIGSYS, enter_then_hold);
        let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
        // (BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JSET|BPF_K,
        // BPF_RET|BPF_K; `seccomp_data`: nr at 0, args[3]'s low half at 40.)
        let prog = [
            ins(0x20, 0, 0, 0),
            ins(0x15, 0, 3, SYS_IO_URING_ENTER),
            ins(0x20, 0, 0, 40),
            ins(0x45, 1, 0, IORING_ENTER_SQ_WAKEUP),
            ins(0x06, 0, 0, 0x0003_0000), // SECCOMP_RET_TRAP
            ins(0x06, 0, 0, 0x7fff_0000), // SECCOMP_RET_ALLOW
        ];
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `fprog` points at `prog`, both live across the calls; the
        // filter applies to this thread only (no TSYNC).
        unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog) == 0
        }
    }
}

/// A thread whose future entered the ring with the eventfd quiet is held
/// right after that `io_uring_enter`, before its reap. A request with a
/// thread notification, submitted meanwhile by another thread and completed
/// later (a pipe read), still notifies while that thread is held: its
/// submission ends the quiet, so the kernel signals the completion thread.
/// (When it did not, the notification waited for the held thread's reap,
/// however long that took.)
#[cfg(target_arch = "x86_64")]
#[test]
fn a_notification_does_not_wait_for_a_thread_held_in_its_quiet_entry() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::Duration;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let cb: posixrt::aio::Callback = Arc::new(move |v| {
        let _ = tx.lock().unwrap().send(v);
    });
    // A read of the empty pipe `r`, with a thread notification `v`.
    let notified_read = |v: usize, r: &std::os::fd::OwnedFd| {
        aio.submit(
            posixrt::aio::Op::read(r, 0, vec![0u8; 1])
                .notify(posixrt::aio::Notify::thread_shared(v, Arc::clone(&cb))),
        )
        .unwrap()
    };
    // The first notification starts the completion thread and registers the
    // eventfd.
    let (r, w) = pipe();
    let first = notified_read(100, &r);
    rustix::io::write(&w, b"x").unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap().0, 100);
    drop(first);

    // The quiet thread: for each go, 100 reads of a cached file (an entry
    // after a quiet that ended with requests in flight is not quiet for a
    // while), then one read whose enter is held; each polled outside any
    // runtime, so each entry that completes inline is quiet.
    let (rel_r, rel_w) = pipe();
    hold::RELEASE.store(std::os::fd::AsRawFd::as_raw_fd(&rel_r), SeqCst);
    let file = Arc::new(disk_temp_file(&pattern(64 * 4096)));
    let (go, gos) = std::sync::mpsc::channel::<()>();
    let (done, dones) = std::sync::mpsc::channel();
    let quiet = {
        let (aio, file) = (aio.clone(), file.clone());
        std::thread::spawn(move || {
            // SAFETY: no arguments.
            hold::TID.store(unsafe { libc::gettid() }, SeqCst);
            done.send(hold::install()).unwrap();
            let want = pattern(64 * 4096);
            let waker = Waker::from(Arc::new(Nop));
            for () in gos {
                let mut inline = false;
                for i in 0..101usize {
                    let off = (i % 64) * 4096;
                    let mut fut = aio.read_async(Arc::clone(&file), off as i64, vec![0u8; 4096]);
                    let c = if i == 100 {
                        hold::ARMED.store(true, SeqCst);
                        match Pin::new(&mut fut).poll(&mut Context::from_waker(&waker)) {
                            Poll::Ready(c) => {
                                inline = true;
                                c
                            }
                            Poll::Pending => run(&mut fut),
                        }
                    } else {
                        run(&mut fut)
                    }
                    .unwrap();
                    assert_eq!(c.data(), &want[off..][..4096]);
                }
                done.send(inline).unwrap();
            }
        })
    };
    if !dones.recv().unwrap() {
        drop(go);
        quiet.join().unwrap();
        eprintln!("skipped: the seccomp filter is refused here");
        return;
    }
    for attempt in 0..4usize {
        go.send(()).unwrap();
        let t = std::time::Instant::now();
        while !hold::HELD.load(SeqCst) {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the read never entered"
            );
            std::thread::yield_now();
        }
        let (r, w) = pipe();
        let req = notified_read(attempt, &r);
        rustix::io::write(&w, b"x").unwrap();
        // The held thread is released only after this.
        let got = rx.recv_timeout(Duration::from_secs(10));
        rustix::io::write(&rel_w, &[0]).unwrap();
        let inline = dones.recv().unwrap();
        assert_eq!(
            got.map(|v| v.0),
            Ok(attempt),
            "attempt {attempt}: the notification waited for the held thread"
        );
        if !inline {
            // Not quiet (the read went to a kernel worker): the race was not
            // set up, only the plain path checked.
            eprintln!("skipped: reads do not complete inline here");
            break;
        }
        drop(req);
    }
    drop(go);
    quiet.join().unwrap();
}
