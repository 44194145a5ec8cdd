//! A trace log read from a pipe that a second reader also reads: the bytes
//! the pipe holds when the log looks may be gone when it reads them, and a
//! read bounded in time (a timed getnext, an open whose wait for the writer
//! gives up) must still end within its bound. It used to look (`poll`) and
//! then `read(2)`, which waited for the writer, as long as it took, when the
//! other reader had taken the bytes in between.
//!
//! The race is made certain here: this binary defines `read` and `preadv2`
//! (the executable's symbols are the ones the library's calls reach), and
//! while a test is armed, a call on its pipe first lets a second reader (a
//! descriptor of the same pipe from another open) take every byte the pipe
//! holds, then makes the call.

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "common/trace_files.rs"]
mod trace_files;
use trace_files::{open_log, pipe, serial};

use posixrt::trace::{self, LogFullPolicy, LogWaiter, Trace, TraceAttr, TraceLog};
use posixrt::{Error, ErrorKind};

/// The inode of the pipe whose reads the second reader goes first on (0:
/// none, the interposers only forward).
static ARMED_PIPE: AtomicU64 = AtomicU64::new(0);
/// The second reader's descriptor (non-blocking, its own open file
/// description of the pipe).
static THIEF: AtomicI32 = AtomicI32::new(-1);

/// The inode `fd` names, if it is open.
fn inode(fd: c_int) -> Option<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable and of the size fstat writes.
    let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    // SAFETY: fstat filled `st` when it returned 0.
    (r == 0).then(|| unsafe { st.assume_init() }.st_ino)
}

/// The second reader takes every byte the armed pipe holds, if `fd` is on it.
fn steal_if_armed(fd: c_int) {
    let ino = ARMED_PIPE.load(Ordering::SeqCst);
    if ino == 0 || inode(fd) != Some(ino) {
        return;
    }
    let thief = THIEF.load(Ordering::SeqCst);
    let mut buf = [0u8; 4096];
    // SAFETY: `buf` is writable for its length; the thief's descriptor is
    // non-blocking, so this ends when the pipe is empty.
    while unsafe { libc::syscall(libc::SYS_read, thief, buf.as_mut_ptr(), buf.len()) } > 0 {}
}

/// glibc's `read`, for this binary: the system call, after the second
/// reader's turn on an armed pipe.
///
/// # Safety
/// As `read(2)`: `buf` is writable for `count` bytes.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    steal_if_armed(fd);
    // SAFETY: the caller's buffer and count, passed on as `read(2)` takes them.
    unsafe { libc::syscall(libc::SYS_read, fd, buf, count) as isize }
}

/// glibc's `preadv2`, for this binary: as [`read`].
///
/// # Safety
/// As `preadv2(2)`: `iov` holds `iovcnt` vectors of writable buffers.
#[no_mangle]
pub unsafe extern "C" fn preadv2(
    fd: c_int,
    iov: *const libc::iovec,
    iovcnt: c_int,
    offset: libc::off_t,
    flags: c_int,
) -> isize {
    steal_if_armed(fd);
    // The offset as the 64-bit kernel takes it: low word, high word.
    let (lo, hi) = (
        offset as u64 as libc::c_long,
        (offset as u64 >> 32) as libc::c_long,
    );
    // SAFETY: the caller's vector and count, passed on as `preadv2(2)` takes them.
    unsafe { libc::syscall(libc::SYS_preadv2, fd, iov, iovcnt, lo, hi, flags) as isize }
}

/// The second reader goes first on `rd`'s pipe while it lives.
struct Armed {
    _thief: File,
}

impl Armed {
    fn new(rd: &File) -> Armed {
        let thief = File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{}", rd.as_raw_fd()))
            .expect("a second open of the pipe's read end");
        THIEF.store(thief.as_raw_fd(), Ordering::SeqCst);
        ARMED_PIPE.store(inode(rd.as_raw_fd()).unwrap(), Ordering::SeqCst);
        Armed { _thief: thief }
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED_PIPE.store(0, Ordering::SeqCst);
        THIEF.store(-1, Ordering::SeqCst);
    }
}

/// A complete log of three events, as bytes.
fn log_bytes() -> Vec<u8> {
    let (path, f) = open_log("readers.trace");
    let mut a = TraceAttr::new();
    a.set_name("readers").unwrap();
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, f).unwrap();
    let ev = trace::eventid_open("readers.ev").unwrap();
    t.start().unwrap();
    for i in 0u32..3 {
        trace::event(ev, &i.to_le_bytes());
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    std::fs::read(&path).unwrap()
}

/// Runs `f` in a thread and gives its result, or `None` if it has not
/// returned after a minute (it waits for a writer that writes no more:
/// `unblock` then writes to the pipe, so that the thread ends).
fn within_a_minute<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
    unblock: impl FnOnce(),
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(r) => {
            h.join().unwrap();
            Some(r)
        }
        Err(_) => {
            unblock();
            None
        }
    }
}

/// A timed read of a log from a pipe whose bytes a second reader takes
/// between the look and the read ends at its deadline with `TimedOut`, the
/// event not there; it used to wait in `read(2)` for the writer.
#[test]
fn a_timed_read_ends_when_another_reader_took_the_bytes() {
    let _s = serial();
    let bytes = log_bytes();
    let (rd, mut wr) = pipe();
    // All but the last byte: the open and the events, not the last record.
    wr.write_all(&bytes[..bytes.len() - 1]).unwrap();
    let mut l = TraceLog::from_file(rd.try_clone().unwrap()).unwrap();
    let mut n = 0;
    while l.read_available() {
        match l.next_event().unwrap() {
            Some(e) if l.name(e.id) == Some("readers.ev") => n += 1,
            Some(_) => {}
            None => panic!("the log ended before its last record"),
        }
    }
    assert_eq!(n, 3, "every event was read before the last record");
    // The last byte comes; the second reader takes it first.
    wr.write_all(&bytes[bytes.len() - 1..]).unwrap();
    let armed = Armed::new(&rd);
    let r = within_a_minute(
        move || {
            l.timed_next_event(Instant::now() + Duration::from_millis(100))
                .map(|e| e.is_some())
        },
        || {
            ARMED_PIPE.store(0, Ordering::SeqCst);
            let _ = wr.write_all(&[0; 8]);
        },
    );
    drop(armed);
    let r = r.expect("the timed read returned (it waited for the writer)");
    let e = r.expect_err("no event: the second reader took the bytes");
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
}

/// An open of a log from a pipe whose header's bytes a second reader takes
/// between the look and the read waits with the wait it was given, which
/// ends it; it used to wait in `read(2)`, without it, for the writer.
#[test]
fn an_open_waits_with_its_wait_when_another_reader_took_the_bytes() {
    let _s = serial();
    let (rd, mut wr) = pipe();
    wr.write_all(&log_bytes()[..4]).unwrap();
    let armed = Armed::new(&rd);
    let rd2 = rd.try_clone().unwrap();
    let r = within_a_minute(
        move || {
            let mut give_up = |_: &LogWaiter| -> posixrt::Result<()> {
                Err(Error::from_errno("wait", libc::ETIMEDOUT))
            };
            TraceLog::from_file_waiting(rd2, &mut give_up).map(drop)
        },
        || {
            ARMED_PIPE.store(0, Ordering::SeqCst);
            let _ = wr.write_all(&[0; 8]);
        },
    );
    drop(armed);
    let r = r.expect("the open returned (it waited for the writer in read)");
    let e = r.expect_err("the open's wait gave up");
    assert_eq!(e.errno(), Some(libc::ETIMEDOUT), "{e}");
}
