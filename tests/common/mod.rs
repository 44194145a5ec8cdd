//! Helpers shared by the AIO integration tests (`tests/aio*.rs`). Each test crate
//! uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::os::fd::OwnedFd;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Request};

pub mod c_engine;
pub mod child;
pub mod stall;
pub mod uring;
pub mod workers;

/// `both!(name, f)` makes the tests `name::uring` and `name::threads`, running
/// `f(Backend)` on each engine.
macro_rules! both {
    ($name:ident, $f:ident) => {
        mod $name {
            #[test]
            fn uring() {
                if crate::common::uring::uring_refused() {
                    return;
                }
                super::$f(posixrt::aio::Backend::Uring)
            }
            #[test]
            fn threads() {
                super::$f(posixrt::aio::Backend::Threads)
            }
        }
    };
}
pub(crate) use both;

/// A `multi_thread` tokio runtime of two workers, with its I/O driver (the
/// reactor AIO futures register the ring's eventfd with).
#[cfg(feature = "tokio")]
pub fn multi_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A `current_thread` tokio runtime, with its I/O driver.
#[cfg(feature = "tokio")]
pub fn current_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// [`multi_rt`] if `multi`, else [`current_rt`].
#[cfg(feature = "tokio")]
pub fn runtime(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        multi_rt()
    } else {
        current_rt()
    }
}

/// Threads of this process whose name starts with `prefix`.
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim_end().starts_with(prefix))
        .count()
}

/// A context on engine `b`.
pub fn ctx(b: Backend) -> Aio {
    Aio::builder().backend(b).build().expect("AIO context")
}

/// A context of `b` with one engine slot (one ring entry, or one worker):
/// a request held there (see [`blocker`]) makes the next ones queue.
pub fn one_slot(b: Backend) -> Aio {
    Aio::builder()
        .backend(b)
        .entries(1)
        .workers(1)
        .build()
        .expect("AIO context")
}

/// An io_uring context that may use up to `n` rings.
pub fn uring(n: usize) -> Aio {
    Aio::builder()
        .backend(Backend::Uring)
        .rings(n)
        .build()
        .expect("io_uring context")
}

/// A regular file holding `content`, opened read-write, its name removed at once
/// (so nothing is left in the temp dir).
pub fn temp_file(content: &[u8]) -> std::fs::File {
    temp_file_in(&std::env::temp_dir(), content)
}

/// As [`temp_file`], but off tmpfs where the temp dir is on it (in cargo's
/// target tmp dir then): a test that needs cached reads to complete inline on
/// io_uring (tmpfs sends some to kernel workers).
pub fn disk_temp_file(content: &[u8]) -> std::fs::File {
    /// `TMPFS_MAGIC` of `<linux/magic.h>`.
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let tmp = std::env::temp_dir();
    // (`f_type` is an i64 on x86_64, narrower on some other targets.)
    #[allow(clippy::unnecessary_cast)]
    let on_tmpfs = rustix::fs::statfs(&tmp).is_ok_and(|s| s.f_type as i64 == TMPFS_MAGIC);
    let dir = if on_tmpfs {
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    } else {
        tmp
    };
    temp_file_in(&dir, content)
}

/// As [`temp_file`], in `dir`.
pub fn temp_file_in(dir: &std::path::Path, content: &[u8]) -> std::fs::File {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!(
        "posixrt-aio-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(content).unwrap();
    let _ = std::fs::remove_file(&path);
    f
}

/// A `SA_SIGINFO` handler.
pub type SigHandler = extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void);

/// Installs `handler` for `signo`, with `SA_SIGINFO | SA_RESTART` and an empty
/// mask. `handler` must be async-signal-safe (the tests' only touch atomics).
pub fn install_handler(signo: i32, handler: SigHandler) {
    // SAFETY: the struct is fully set before the call; the handler's safety is
    // the caller's contract.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(signo, &sa, std::ptr::null_mut()), 0);
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

/// `n` bytes of a fixed pattern.
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

/// Block `i` (4096 bytes) of [`pattern`].
pub fn pattern_block(i: usize) -> Vec<u8> {
    (i * 4096..(i + 1) * 4096)
        .map(|j| (j * 7 % 251) as u8)
        .collect()
}

/// Reads block `i` of `f`, a file holding [`pattern`], with `read_async`, and
/// checks the count and the bytes.
pub async fn read_pattern_block(aio: &Aio, f: &std::sync::Arc<std::fs::File>, i: usize) {
    let c = aio
        .read_async(std::sync::Arc::clone(f), (i * 4096) as i64, vec![0u8; 4096])
        .await
        .unwrap();
    assert_eq!(*c.result.as_ref().unwrap(), 4096);
    assert_eq!(c.data(), &pattern_block(i)[..]);
}

/// A request that holds one engine slot (an io_uring entry, or a pool worker)
/// until [`Blocker::unblock`]: on io_uring, a datagram write to a socket whose
/// peer's queue is full; on the thread engine (which parks a datagram write,
/// as a pipe read, in its epoll set, and writes to a blocking terminal on a
/// thread of their own) a write to a file from pages missing under
/// userfaultfd (see [`stall`]), longer than the engine tries without waiting
/// (`RWF_NOWAIT`, up to 256 KiB): its worker hands the queue on, then sleeps
/// in `pwrite(2)`, in the kernel's copy, until the pages are supplied.
pub struct Blocker {
    held: Held,
}

enum Held {
    Datagram {
        req: Request<Vec<u8>>,
        /// The socket's peer.
        drain: std::fs::File,
        me: OwnedFd,
    },
    Stall {
        req: Request<stall::StallBuf>,
        stall: stall::Stall,
        file: OwnedFd,
        /// The worker that sleeps in the write.
        worker: u32,
    },
}

/// How many bytes the thread engine's blocker writes: more than a transfer
/// it tries with `RWF_NOWAIT` first (256 KiB).
pub const STALL_LEN: usize = (256 << 10) + stall::PAGE;

/// Bounds the wait for the blocker's worker to reach the missing pages: long
/// enough that only a hang reaches it.
const HANG: Duration = Duration::from_secs(20);

/// A [`Blocker`] holding `aio`'s one slot; `None` on the thread engine after
/// saying why the test is skipped, where userfaultfd is refused (EPERM).
pub fn blocker(aio: &Aio) -> Option<Blocker> {
    if aio.backend().backend() == Backend::Threads {
        let stall = stall::Stall::or_skip(STALL_LEN)?;
        let file = rustix::fs::memfd_create("blocker", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let req = aio.write(&file, 0, stall.buf()).unwrap();
        let fault = stall
            .fault(HANG)
            .expect("no thread reached the blocker's missing pages");
        let comm = std::fs::read_to_string(format!("/proc/self/task/{}/comm", fault.tid))
            .unwrap_or_default();
        assert!(
            workers::pool_worker(comm.trim()),
            "the blocker's write waits on thread {} ({comm:?}), not a worker",
            fault.tid
        );
        assert!(!req.is_done(), "the blocking write completed");
        return Some(Blocker {
            held: Held::Stall {
                req,
                stall,
                file,
                worker: fault.tid,
            },
        });
    }
    let (a, peer) = std::os::unix::net::UnixDatagram::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    while a.send(&[0u8; 256]).is_ok() {}
    a.set_nonblocking(false).unwrap();
    let me = OwnedFd::from(a);
    let req = aio.write(&me, 0, vec![b'x'; 256]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert!(!req.is_done(), "the blocking write completed");
    Some(Blocker {
        held: Held::Datagram {
            req,
            drain: std::fs::File::from(OwnedFd::from(peer)),
            me,
        },
    })
}

/// A pseudo-terminal: (master, slave), both blocking.
pub fn pty() -> (std::fs::File, OwnedFd) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on the descriptors they return, each owned
    // once; `ptsname_r` fills the buffer it is given.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(m >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = std::fs::File::from_raw_fd(m);
        assert!(libc::grantpt(m) == 0 && libc::unlockpt(m) == 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(
            s >= 0,
            "open pty slave: {}",
            std::io::Error::last_os_error()
        );
        (master, OwnedFd::from_raw_fd(s))
    }
}

impl Blocker {
    /// The descriptor the held write goes to.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        match &self.held {
            Held::Datagram { me, .. } => me.as_raw_fd(),
            Held::Stall { file, .. } => file.as_raw_fd(),
        }
    }

    /// The thread-engine worker held (its tid); `None` on io_uring.
    pub fn worker(&self) -> Option<u32> {
        match &self.held {
            Held::Datagram { .. } => None,
            Held::Stall { worker, .. } => Some(*worker),
        }
    }

    pub fn is_done(&self) -> bool {
        match &self.held {
            Held::Datagram { req, .. } => req.is_done(),
            Held::Stall { req, .. } => req.is_done(),
        }
    }

    /// Lets the held write go, and checks that it wrote every byte.
    pub fn unblock(self) {
        match self.held {
            Held::Datagram { mut req, drain, .. } => {
                use std::io::Read;
                rustix::fs::fcntl_setfl(&drain, rustix::fs::OFlags::NONBLOCK).unwrap();
                let mut b = [0u8; 4096];
                let mut d = &drain;
                while !req.is_done() {
                    while d.read(&mut b).is_ok_and(|n| n > 0) {}
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert_eq!(req.wait().unwrap().result.unwrap(), 256);
            }
            Held::Stall { mut req, stall, .. } => {
                stall.release();
                assert_eq!(req.wait().unwrap().result.unwrap(), STALL_LEN);
            }
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` towards the hard one so `want` requests that
/// each hold a copy of their fd (thread engine; pipe and socket writes) fit, for
/// each of the two engines' variants of a test at once, with 256 descriptors to
/// spare for the tests beside; returns how many fit per variant (`want`, or
/// fewer under a low hard limit). Raising it needs no privilege.
pub fn fd_room(want: usize) -> usize {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: fills a properly sized struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    let need = (2 * want + 256) as libc::rlim_t;
    if l.rlim_cur < need {
        l.rlim_cur = need.min(l.rlim_max);
        // SAFETY: reads a properly sized struct; the soft limit stays within
        // the hard one.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) }, 0);
    }
    want.min((l.rlim_cur as usize).saturating_sub(256) / 2)
}

/// Puts `other`'s file at `fd`'s number (the number stays open), as a program
/// that closes a descriptor and opens another file at its number would.
pub fn replace(fd: &impl std::os::fd::AsRawFd, other: &impl std::os::fd::AsRawFd) {
    // SAFETY: dup2 on two open descriptors; the number `fd` stays open (it
    // names `other`'s file afterwards).
    assert!(unsafe { libc::dup2(other.as_raw_fd(), fd.as_raw_fd()) } >= 0);
}

/// The `aio_submit` (`s`) and `aio_complete` (`c`) events of thread `me` on
/// `fd` in the started trace `t`, in order; stops and shuts the trace down.
pub fn submit_complete_order(t: posixrt::trace::Trace, me: u32, fd: i32) -> String {
    t.stop().unwrap();
    let mut order = String::new();
    for e in t.events() {
        let Ok(name) = t.eventid_name(e.id) else {
            continue;
        };
        let d = &e.data;
        // The trace is process-wide and other tests run beside this one: keep
        // the events of this thread (the runtime's, which submits and reaps
        // here) on this file's fd.
        if e.tid != me || d.len() < 12 || i32::from_le_bytes(d[8..12].try_into().unwrap()) != fd {
            continue;
        }
        match name.as_str() {
            "aio_submit" => order.push('s'),
            "aio_complete" => order.push('c'),
            _ => {}
        }
    }
    t.shutdown().unwrap();
    order
}
