//! Unit tests of the pool's wake-ups and switches.

use super::*;
use std::time::Duration;

/// `Pool::boost` switches the first worker that went to sleep to the class
/// given, takes it off the idle list and leaves the class for it to read
/// when it wakes; with no sleeping worker, or without the privilege, it
/// does nothing.
#[test]
fn boost_switches_the_first_sleeping_worker() {
    let pool = Pool::new(2).expect("pool");
    let fifo = SchedClass {
        policy: libc::SCHED_FIFO,
        priority: 7,
    };
    assert_eq!(pool.boost(fifo), None, "no worker sleeps");
    // Two stand-ins for sleeping workers: threads parked until released.
    let (tx, rx) = std::sync::mpsc::channel();
    let go = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stand_ins: Vec<_> = (0..2)
        .map(|i| {
            let (tx, go) = (tx.clone(), Arc::clone(&go));
            std::thread::spawn(move || {
                tx.send((i, crate::sys::tid::current() as i32))
                    .expect("send");
                while !go.load(Ordering::Acquire) {
                    std::thread::park();
                }
                crate::sys::prio::current()
            })
        })
        .collect();
    // The tid of stand-in i at index i (they may report in either order).
    let mut tids = [0; 2];
    for _ in 0..2 {
        let (i, tid) = rx.recv().expect("tid");
        tids[i] = tid;
    }
    pool.idle().extend([(0, tids[0]), (1, tids[1])]);
    let boosted = pool.boost(fifo).is_some();
    if boosted {
        assert_eq!(
            *pool.idle(),
            vec![(1, tids[1])],
            "the first one left the list"
        );
        assert_eq!(pool.boosted[0].load(Ordering::Relaxed), encode(fifo));
        assert_eq!(decode(encode(fifo)), fifo);
        assert_eq!(pool.boosted[1].load(Ordering::Relaxed), 0);
    } else {
        // No CAP_SYS_NICE / RLIMIT_RTPRIO: nothing changed.
        assert_eq!(pool.idle().len(), 2);
        assert_eq!(pool.boosted[0].load(Ordering::Relaxed), 0);
    }
    go.store(true, Ordering::Release);
    let classes: Vec<SchedClass> = stand_ins
        .into_iter()
        .map(|h| {
            h.thread().unpark();
            h.join().expect("stand-in")
        })
        .collect();
    assert_eq!(classes[0], if boosted { fifo } else { SchedClass::OTHER });
    assert_eq!(classes[1], SchedClass::OTHER);
}

/// The count of workers to wake: ready requests less the workers awake and
/// those a wake-up is due to (decided and not back yet), at most the
/// sleepers none is due to; each worker back takes one due off.
#[test]
fn workers_due_count_as_awake() {
    let pool = Pool::new(4).expect("pool");
    // Three asleep, one awake (busy with a request).
    pool.awake(true);
    for _ in 0..3 {
        pool.asleep.fetch_add(1, Ordering::Relaxed);
    }
    // A request the awake worker will take: nobody to wake.
    assert_eq!(pool.to_wake(1), 0);
    // Two ready: one sleeper is due.
    assert_eq!(pool.to_wake(2), 1);
    // A third request before it runs: one more, not two.
    assert_eq!(pool.to_wake(3), 1);
    assert_eq!(pool.woken.load(Ordering::Relaxed), 2);
    // Ten ready: only the one sleeper left is due.
    assert_eq!(pool.to_wake(10), 1);
    assert_eq!(pool.to_wake(10), 0, "no sleeper left to wake");
    // The three come back: awake, none due.
    for _ in 0..3 {
        pool.back();
    }
    assert_eq!(pool.woken.load(Ordering::Relaxed), 0);
    assert_eq!(pool.asleep.load(Ordering::Relaxed), 0);
    assert_eq!(pool.active.load(Ordering::Relaxed), 4);
    assert_eq!(pool.to_wake(4), 0);
    // One woken by another cause (none due) takes nothing below 0.
    pool.sleep();
    pool.back();
    assert_eq!(pool.woken.load(Ordering::Relaxed), 0);
}

/// Stand-ins for `n` workers asleep on `pool`'s futex word, each with its own
/// tag, on the idle list in order (sleeper i in the futex's queue before i + 1
/// joins it), counted as workers do. Each pushes its index to the list
/// returned once it is back. None where `/proc` does not show a thread's
/// system call.
#[allow(clippy::type_complexity)]
fn stand_in_sleepers(
    pool: &Arc<Pool>,
    lock: &Arc<rtlock::RtLocked<()>>,
    n: u32,
) -> Option<(
    Vec<std::thread::JoinHandle<()>>,
    Arc<std::sync::Mutex<Vec<u32>>>,
)> {
    in_futex(crate::sys::tid::current() as i32)?;
    let back = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut sleepers = Vec::new();
    for i in 0..n {
        let (pool, lock, back) = (Arc::clone(pool), Arc::clone(lock), Arc::clone(&back));
        let (tx, rx) = std::sync::mpsc::channel();
        sleepers.push(std::thread::spawn(move || {
            let mut g = lock.lock();
            pool.awake(true);
            pool.idle().push((i, crate::sys::tid::current() as i32));
            pool.sleep();
            tx.send(crate::sys::tid::current() as i32).expect("send");
            pool.work.wait_tagged(&mut g, None, tag(i));
            pool.back();
            back.lock().expect("back").push(i);
        }));
        let tid = rx.recv().expect("tid");
        let t0 = std::time::Instant::now();
        while in_futex(tid) != Some(true) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "sleeper {i} never slept"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Some((sleepers, back))
}

/// A wake-up due to the switched worker when that worker was woken
/// already (for an earlier request) and has yet to take the lock: the
/// tagged wake reaches nobody, and the one due goes to another sleeper.
/// (It was dropped: the other worker slept on, counted as due, and a lone
/// request after that woke nobody.)
#[test]
fn a_wake_due_to_a_switched_worker_on_its_way_reaches_another() {
    let pool = Arc::new(Pool::new(2).expect("pool"));
    let lock = Arc::new(rtlock::RtLocked::new(()));
    let Some((sleepers, back)) = stand_in_sleepers(&pool, &lock, 2) else {
        eprintln!("skipped: /proc does not show a thread's system call here");
        return;
    };
    {
        let _g = lock.lock();
        // A request: one sleeper is due, and woken (the first, 0): it
        // waits for the lock held here.
        let n = pool.to_wake(1);
        assert_eq!(n, 1);
        pool.wake_for(n, None);
        // A real-time request before 0 runs: 0 is still first on the idle
        // list, so the one switched; one more is due.
        assert_eq!(pool.idle().first().map(|w| w.0), Some(0));
        let n = pool.to_wake(2);
        assert_eq!(n, 1);
        pool.wake_for(n, Some(0));
    }
    let t0 = std::time::Instant::now();
    while back.lock().expect("back").len() < 2 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let came = back.lock().expect("back").clone();
    // (Lets a sleeper left behind go, so that the threads end.)
    pool.work.notify_all();
    for s in sleepers {
        s.join().expect("sleeper");
    }
    assert_eq!(came.len(), 2, "back: {came:?}");
    assert_eq!(pool.woken.load(Ordering::Relaxed), 0);
    assert_eq!(pool.asleep.load(Ordering::Relaxed), 0);
}

/// True once thread `tid` of this process sleeps in a futex call (None
/// where `/proc` does not tell).
fn in_futex(tid: i32) -> Option<bool> {
    let path = format!("/proc/self/task/{tid}/syscall");
    let s = std::fs::read_to_string(path).ok()?;
    Some(s.split_whitespace().next() == Some(&libc::SYS_futex.to_string()))
}

/// A worker switched by `Pool::boost` is the one woken for the request:
/// each sleeps tagged with its own bit, and `wake_for` wakes the switched
/// one by its tag, whatever its place among the sleepers; a wake-up for
/// no switched worker wakes the first sleeper.
#[test]
fn the_switched_worker_is_the_one_woken() {
    const N: usize = 3;
    let pool = Arc::new(Pool::new(N).expect("pool"));
    let lock = Arc::new(rtlock::RtLocked::new(()));
    let Some((sleepers, woken)) = stand_in_sleepers(&pool, &lock, N as u32) else {
        eprintln!("skipped: /proc does not show a thread's system call here");
        return;
    };
    let wait_for = |n: usize| {
        let t0 = std::time::Instant::now();
        while woken.lock().expect("woken").len() < n {
            assert!(t0.elapsed() < Duration::from_secs(10), "nobody woke");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Time for a wrongly woken sleeper to show itself.
        std::thread::sleep(Duration::from_millis(50));
        woken.lock().expect("woken").clone()
    };
    // The last sleeper, by its tag.
    pool.wake_for(1, Some(2));
    assert_eq!(wait_for(1), vec![2]);
    // The first sleeper, switched if the process may (else by its place).
    let fifo = SchedClass {
        policy: libc::SCHED_FIFO,
        priority: 1,
    };
    let picked = pool.boost(fifo);
    assert!(picked.is_none_or(|w| w == 0), "switched {picked:?}");
    pool.wake_for(1, picked);
    assert_eq!(wait_for(2), vec![2, 0]);
    pool.work.notify_all();
    for s in sleepers {
        s.join().expect("sleeper");
    }
    let mut all = woken.lock().expect("woken").clone();
    all.sort_unstable();
    assert_eq!(all, vec![0, 1, 2]);
}

/// The state and bytes moved of request `id` of `aio` (None once freed).
fn slot_of(aio: &crate::aio::Aio, id: crate::aio::RequestId) -> Option<(State, bool, i64)> {
    let core = aio.inner.lock();
    let r = core.get(id.idx, id.gen).map(|s| (s.state, s.parked, s.res));
    drop(core);
    r
}

/// Polls `f` every millisecond for at most 10 s; true once it held.
fn soon(mut f: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f()
}

/// A pipe write that moved part of its bytes, parked until the pipe had room
/// and was put back in the ready queue (its one worker busy) is in progress,
/// not unissued: a cancel then stops it with the bytes it moved, and says
/// `AIO_NOTCANCELED`, as it does for the same write still parked. (It was
/// ended with ECANCELED and reported `AIO_CANCELED` while the reader had
/// its first bytes.) The same for `aio_cancel(fd, NULL)`.
#[test]
fn a_requeued_write_that_moved_bytes_is_not_cancelled() {
    requeued_write_cancelled(false);
    requeued_write_cancelled(true);
}

fn requeued_write_cancelled(by_fd: bool) {
    use crate::aio::{Aio, Backend, CancelResult};
    use std::os::fd::AsRawFd;
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .workers(1)
        .build()
        .expect("context");
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe");
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).expect("F_GETPIPE_SZ");
    let data: Vec<u8> = (0..2 * cap).map(|i| (i % 251) as u8).collect();
    let mut w = aio.write(&wr, 0, data.clone()).expect("write");
    let wid = w.id();
    assert!(
        soon(|| slot_of(&aio, wid)
            .is_some_and(|(st, parked, res)| { st == State::Issued && parked && res > 0 })),
        "the write parked after its first bytes: {:?}",
        slot_of(&aio, wid)
    );
    // The one worker held by a write to a regular file from a buffer whose
    // page is missing under userfaultfd (a terminal write no longer holds a
    // worker): the copy waits in the kernel until the page is supplied.
    let stall = match Stall::new() {
        Ok(s) => s,
        Err(e) => {
            // Without CAP_SYS_PTRACE (and vm.unprivileged_userfaultfd 0).
            assert_eq!(e, libc::EPERM, "userfaultfd");
            return;
        }
    };
    let file = rustix::fs::memfd_create("hold", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
    let mut hold = aio.write(&file, 0, stall.buf()).expect("held write");
    let hid = hold.id();
    assert!(
        soon(|| slot_of(&aio, hid).is_some_and(|(st, parked, _)| st == State::Issued && !parked)),
        "the worker took the held write"
    );
    // The reader takes what the pipe holds: the write is ready again, and
    // waits for the worker.
    rustix::fs::fcntl_setfl(&rd, rustix::fs::OFlags::NONBLOCK).expect("nonblocking");
    let mut got = Vec::new();
    let mut b = vec![0u8; cap];
    while let Ok(n) = rustix::io::read(&rd, &mut b) {
        got.extend_from_slice(&b[..n]);
    }
    assert!(!got.is_empty() && got.len() < data.len());
    assert!(
        soon(|| slot_of(&aio, wid).is_some_and(|(st, _, _)| st == State::Ready)),
        "the write was put back in the ready queue: {:?}",
        slot_of(&aio, wid)
    );
    let outcome = if by_fd {
        aio.cancel_fd(wr.as_raw_fd()).expect("cancel_fd")
    } else {
        w.cancel().expect("cancel")
    };
    assert_eq!(outcome, CancelResult::NotCanceled, "by fd: {by_fd}");
    let c = w.wait().expect("done");
    assert_eq!(
        c.result.expect("the bytes moved, not ECANCELED"),
        got.len(),
        "the result counts what the reader got"
    );
    assert_eq!(got, data[..got.len()]);
    // Let the held write go.
    stall.release();
    assert_eq!(hold.wait().expect("done").result.expect("written"), 4096);
}

/// One page of memory registered with userfaultfd, missing until
/// [`release`](Stall::release): a transfer from or to it waits in the kernel
/// meanwhile.
struct Stall {
    uffd: std::os::fd::OwnedFd,
    addr: usize,
}

/// One page.
const PAGE: usize = 4096;

/// `struct uffdio_api`, `uffdio_register` and `uffdio_zeropage` (the last
/// two share the layout: a range, a mode and one word out).
#[repr(C)]
struct UffdArg {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
const UFFDIO_ZEROPAGE: libc::c_ulong = 0xc020_aa04;

/// `ioctl(fd, req, arg)`: 0 or the errno.
fn uffd_ioctl(fd: &std::os::fd::OwnedFd, req: libc::c_ulong, arg: &mut UffdArg) -> i32 {
    use std::os::fd::AsRawFd;
    // SAFETY: `arg` is a writable struct of the size `req` encodes.
    if unsafe { libc::ioctl(fd.as_raw_fd(), req, arg as *mut UffdArg) } == 0 {
        0
    } else {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    }
}

impl Stall {
    /// The page, or the errno userfaultfd(2) or its set-up failed with.
    fn new() -> std::result::Result<Stall, i32> {
        use std::os::fd::FromRawFd;
        // SAFETY: a plain system call; the fd it returns is owned once.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        // SAFETY: `fd` was just returned, owned by nothing else.
        let uffd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
        let mut api = UffdArg {
            a: 0xAA,
            b: 0,
            c: 0,
            d: 0,
        };
        match uffd_ioctl(&uffd, UFFDIO_API, &mut api) {
            0 => {}
            e => return Err(e),
        }
        // SAFETY: a fresh private anonymous mapping, unmapped in `drop`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "mmap");
        let stall = Stall {
            uffd,
            addr: p as usize,
        };
        // Range, mode MISSING (1).
        let mut reg = UffdArg {
            a: stall.addr as u64,
            b: PAGE as u64,
            c: 1,
            d: 0,
        };
        match uffd_ioctl(&stall.uffd, UFFDIO_REGISTER, &mut reg) {
            0 => Ok(stall),
            e => Err(e),
        }
    }

    /// A buffer over the page, for a write.
    fn buf(&self) -> StallBuf {
        StallBuf(self.addr)
    }

    /// Supplies the page (zeros): what waited for it goes on.
    fn release(&self) {
        let mut z = UffdArg {
            a: self.addr as u64,
            b: PAGE as u64,
            c: 0,
            d: 0,
        };
        assert_eq!(
            uffd_ioctl(&self.uffd, UFFDIO_ZEROPAGE, &mut z),
            0,
            "UFFDIO_ZEROPAGE"
        );
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made; the transfers over it are done
        // (the tests wait for them first).
        unsafe { libc::munmap(self.addr as *mut libc::c_void, PAGE) };
    }
}

/// The page of a [`Stall`] as a buffer.
struct StallBuf(usize);

// SAFETY: the page stays mapped until its `Stall` drops, after the request.
unsafe impl crate::aio::IoBuf for StallBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.0 as *const u8
    }
    fn bytes_len(&self) -> usize {
        PAGE
    }
}
