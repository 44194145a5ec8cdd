//! Memory the kernel waits for: pages registered with userfaultfd(2), missing
//! until [`Stall::release`] supplies them. A `write(2)` from them (or a
//! `read(2)` into them) sleeps inside the kernel's copy, in its system call,
//! until then: a test holds the thread that makes it for as long as it wants,
//! and learns from the descriptor itself, without timing, that the thread is
//! there ([`Stall::fault`] names it). `common::blocker` holds a thread-engine
//! worker with it.
//!
//! userfaultfd needs CAP_SYS_PTRACE for faults the kernel takes on a user
//! address (or `vm.unprivileged_userfaultfd = 1`): without it,
//! [`Stall::new`] gives EPERM, and [`Stall::or_skip`] says so.
#![allow(dead_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

/// A page.
pub const PAGE: usize = 4096;

/// `UFFD_API` of `<linux/userfaultfd.h>`.
const UFFD_API: u64 = 0xAA;
/// `UFFD_FEATURE_THREAD_ID`: a fault's message names the thread that took it.
const UFFD_FEATURE_THREAD_ID: u64 = 1 << 8;
/// `UFFDIO_REGISTER_MODE_MISSING`.
const MODE_MISSING: u64 = 1;
/// `UFFD_EVENT_PAGEFAULT`.
const EVENT_PAGEFAULT: u8 = 0x12;
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
const UFFDIO_ZEROPAGE: libc::c_ulong = 0xc020_aa04;

/// `struct uffdio_api` (api, features, ioctls), `struct uffdio_register`
/// (range start and length, mode, ioctls) and `struct uffdio_zeropage` (range
/// start and length, mode, bytes zeroed) share this layout.
#[repr(C)]
#[derive(Default)]
struct UffdArg {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

/// A thread that waits for a page of a [`Stall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// The address it touched.
    pub addr: usize,
    /// Its thread id.
    pub tid: u32,
}

/// Pages registered with userfaultfd, missing until released.
pub struct Stall {
    uffd: OwnedFd,
    map: Arc<Mapping>,
}

/// The pages' mapping; unmapped when the [`Stall`] and every [`StallBuf`]
/// over it are gone (a request owns its buffer until it completes).
struct Mapping {
    addr: usize,
    len: usize,
}

/// The pages of a [`Stall`] as a request's buffer.
pub struct StallBuf(Arc<Mapping>);

impl Stall {
    /// `len` bytes (whole pages), missing until [`release`](Self::release);
    /// or the errno userfaultfd(2) or its set-up failed with (EPERM without
    /// the privilege).
    pub fn new(len: usize) -> Result<Stall, i32> {
        assert!(len > 0 && len % PAGE == 0, "whole pages");
        let uffd = userfaultfd()?;
        let mut api = UffdArg {
            a: UFFD_API,
            b: UFFD_FEATURE_THREAD_ID,
            ..UffdArg::default()
        };
        uffd_ioctl(&uffd, UFFDIO_API, &mut api)?;
        let map = Arc::new(Mapping {
            addr: map_anonymous(len),
            len,
        });
        let mut reg = UffdArg {
            a: map.addr as u64,
            b: len as u64,
            c: MODE_MISSING,
            d: 0,
        };
        uffd_ioctl(&uffd, UFFDIO_REGISTER, &mut reg)?;
        Ok(Stall { uffd, map })
    }

    /// [`new`](Self::new), or `None` after saying why the test is skipped:
    /// userfaultfd is refused here (EPERM, the one error allowed).
    pub fn or_skip(len: usize) -> Option<Stall> {
        match Stall::new(len) {
            Ok(s) => Some(s),
            Err(e) => {
                assert_eq!(
                    e,
                    libc::EPERM,
                    "userfaultfd: {}",
                    std::io::Error::from_raw_os_error(e)
                );
                eprintln!(
                    "skipped: userfaultfd is refused here (EPERM: it needs CAP_SYS_PTRACE \
                     or vm.unprivileged_userfaultfd = 1), and this test holds a thread \
                     with it"
                );
                None
            }
        }
    }

    /// A buffer over the pages, for a request.
    pub fn buf(&self) -> StallBuf {
        StallBuf(Arc::clone(&self.map))
    }

    /// The first thread that waits for a page, once one does (within
    /// `limit`); `None` if none came. Each fault is told once.
    pub fn fault(&self, limit: Duration) -> Option<Fault> {
        let end = std::time::Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            let mut p = libc::pollfd {
                fd: self.uffd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            match poll_one(&mut p, i32::try_from(left.as_millis()).unwrap_or(i32::MAX)) {
                Ok(0) => return None,
                Ok(_) => break,
                Err(libc::EINTR) => {}
                Err(e) => panic!("poll(userfaultfd): errno {e}"),
            }
        }
        // `struct uffd_msg`: event (u8) at 0; for a page fault, flags at 8,
        // the address at 16 and the thread id (u32) at 24.
        let mut msg = [0u8; 32];
        let n = rustix::io::read(&self.uffd, &mut msg).expect("read(userfaultfd)");
        assert_eq!(n, msg.len(), "a whole uffd_msg");
        assert_eq!(msg[0], EVENT_PAGEFAULT, "a page fault");
        let addr = u64::from_ne_bytes(msg[16..24].try_into().unwrap()) as usize;
        let tid = u32::from_ne_bytes(msg[24..28].try_into().unwrap());
        assert!(
            addr >= self.map.addr && addr < self.map.addr + self.map.len,
            "a fault on the stall's pages"
        );
        Some(Fault { addr, tid })
    }

    /// Supplies every page (zeros): whatever waited for them goes on, and
    /// nothing waits for them again.
    pub fn release(&self) {
        let mut z = UffdArg {
            a: self.map.addr as u64,
            b: self.map.len as u64,
            ..UffdArg::default()
        };
        match uffd_ioctl(&self.uffd, UFFDIO_ZEROPAGE, &mut z) {
            // (EEXIST: released before.)
            Ok(()) | Err(libc::EEXIST) => {}
            Err(e) => panic!("UFFDIO_ZEROPAGE: errno {e}"),
        }
    }
}

// (Dropping the Stall closes the userfaultfd: the kernel wakes whatever still
// waits, and supplies its page as to any fault, so a test that fails before
// its release leaves no thread held.)

impl Drop for Mapping {
    fn drop(&mut self) {
        unmap(self.addr, self.len);
    }
}

// SAFETY: the pages stay mapped, at the same address, while a `StallBuf` over
// them lives (it holds the mapping), and they read as zeros once supplied.
unsafe impl posixrt::aio::IoBuf for StallBuf {
    fn stable_ptr(&self) -> *const u8 {
        self.0.addr as *const u8
    }
    fn bytes_len(&self) -> usize {
        self.0.len
    }
}

// SAFETY: as above; the mapping is private, writable, and nothing but the
// request that owns this buffer writes to it.
unsafe impl posixrt::aio::IoBufMut for StallBuf {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.0.addr as *mut u8
    }
}

/// A new userfaultfd (close-on-exec, non-blocking), or the errno.
fn userfaultfd() -> Result<OwnedFd, i32> {
    // SAFETY: a system call without pointer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `fd` was just returned to us, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// `ioctl(uffd, req, arg)`.
fn uffd_ioctl(uffd: &OwnedFd, req: libc::c_ulong, arg: &mut UffdArg) -> Result<(), i32> {
    // SAFETY: each request used here reads and writes one struct of
    // `UffdArg`'s size and layout, which `arg` is.
    if unsafe { libc::ioctl(uffd.as_raw_fd(), req, arg as *mut UffdArg) } == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// A private anonymous read-write mapping of `len` bytes.
fn map_anonymous(len: usize) -> usize {
    // SAFETY: a new mapping at an address the kernel picks; it overlaps
    // nothing, and `Mapping` unmaps it once.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap: errno {}", errno());
    p as usize
}

/// Unmaps what [`map_anonymous`] mapped.
fn unmap(addr: usize, len: usize) {
    // SAFETY: the mapping `map_anonymous` made, unmapped once (by the last
    // owner of its `Mapping`), nothing referring to it any more.
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

/// `poll` of one descriptor: how many are ready, or the errno.
fn poll_one(p: &mut libc::pollfd, ms: i32) -> Result<i32, i32> {
    // SAFETY: one valid, writable pollfd.
    let n = unsafe { libc::poll(p, 1, ms) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n)
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
