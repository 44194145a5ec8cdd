//! Registered files: an fd the caller registers with a context is installed in
//! the file table of each of the context's io_uring rings, and its requests
//! name the table's slot (`IOSQE_FIXED_FILE`) instead of the fd number. The
//! kernel then takes no reference on the file for each request: in a process
//! with more than one thread, `fget` and `fput` are an atomic increment and
//! decrement of the file's shared count around every read and write.
//!
//! The slot is freed when the last [`RegisteredFd`] of the fd is dropped. Before
//! it is, every entry still waiting in a submission queue (which may name it) is
//! handed to the kernel; requests in the kernel keep the file they started
//! with. Requests issued again after a first attempt (see `Shard::reap`) use
//! their own fd copy or the caller's fd, never the slot.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;

use super::context::Aio;
use super::engine::{Engine, Inner};
use super::op::BorrowFd;
use crate::{Error, ErrorKind, Result};

/// The most slots of a ring's file table.
const MAX_FILES: u32 = 1024;

/// The slots of each ring's file table: [`MAX_FILES`], or the soft
/// `RLIMIT_NOFILE` when lower (the kernel refuses a larger table), as the
/// process first registers an fd.
pub(crate) fn table_size() -> u32 {
    static N: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        let l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        l.current
            .map_or(MAX_FILES, |c| c.min(u64::from(MAX_FILES)) as u32)
    })
}

/// fd numbers below this are looked up by index; larger ones by a scan.
const DENSE: usize = 1 << 16;

/// Which fds are registered, and in which slot (under the core lock).
#[derive(Default)]
pub(crate) struct FileTable {
    /// (fd, slot, live `RegisteredFd`s).
    entries: Vec<(RawFd, u32, u32)>,
    /// slot + 1 by fd number (0: not registered), for fds below `DENSE`.
    dense: Vec<u32>,
    /// Slots freed, oldest first: reused only once every slot was used once.
    free: VecDeque<u32>,
    /// Slots never used.
    next: u32,
}

impl FileTable {
    /// The slot + 1 of `fd` if it is registered, else 0. Under the core lock.
    #[inline]
    pub(crate) fn lookup(&self, fd: RawFd) -> u32 {
        if self.entries.is_empty() {
            return 0;
        }
        match self.dense.get(fd as u32 as usize) {
            Some(&s) => s,
            None => self.scan(fd).map_or(0, |i| self.entries[i].1 + 1),
        }
    }

    fn scan(&self, fd: RawFd) -> Option<usize> {
        self.entries.iter().position(|e| e.0 == fd)
    }

    /// Counts one more guard of `fd` if it is registered; its slot.
    fn add_ref(&mut self, fd: RawFd) -> Option<u32> {
        let i = self.scan(fd)?;
        self.entries[i].2 += 1;
        Some(self.entries[i].1)
    }

    /// A slot for a new registration: a never-used one first, so that a slot
    /// freed is reused as late as possible.
    fn alloc(&mut self) -> Option<u32> {
        if self.next < table_size() {
            self.next += 1;
            return Some(self.next - 1);
        }
        self.free.pop_front()
    }

    fn insert(&mut self, fd: RawFd, slot: u32) {
        self.entries.push((fd, slot, 1));
        let i = fd as u32 as usize;
        if i < DENSE {
            if self.dense.len() <= i {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] = slot + 1;
        }
    }

    /// Counts one guard of `fd` less; its slot if that was the last (the fd is
    /// then no longer looked up).
    fn drop_ref(&mut self, fd: RawFd) -> Option<u32> {
        let i = self.scan(fd)?;
        self.entries[i].2 -= 1;
        if self.entries[i].2 > 0 {
            return None;
        }
        let (_, slot, _) = self.entries.swap_remove(i);
        if let Some(d) = self.dense.get_mut(fd as u32 as usize) {
            *d = 0;
        }
        Some(slot)
    }
}

/// An fd registered with an [`Aio`] context, by [`Aio::register_fd`]: while it
/// lives, the context's reads, writes and fsyncs on the fd use the io_uring
/// rings' file tables. Dropping it unregisters the fd (once every other
/// `RegisteredFd` of the same fd is dropped too). It borrows the fd, which
/// therefore stays open while it lives.
#[must_use = "the fd is unregistered when this is dropped"]
pub struct RegisteredFd<'fd> {
    inner: Arc<Inner>,
    fd: RawFd,
    /// The file table slot (None: the thread engine, or nothing registered).
    slot: Option<u32>,
    borrow: PhantomData<BorrowedFd<'fd>>,
}

impl RegisteredFd<'_> {
    /// True if the fd is in the rings' file tables: false on the thread
    /// engine, which has none.
    pub fn is_registered(&self) -> bool {
        self.slot.is_some()
    }

    /// The fd registered.
    pub fn fd(&self) -> RawFd {
        self.fd
    }
}

impl std::fmt::Debug for RegisteredFd<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredFd")
            .field("fd", &self.fd)
            .field("slot", &self.slot)
            .finish()
    }
}

impl Drop for RegisteredFd<'_> {
    fn drop(&mut self) {
        if self.slot.is_none() {
            return;
        }
        let Engine::Uring(r) = &self.inner.engine else {
            return;
        };
        let mut core = self.inner.lock();
        if let Some(slot) = core.files.drop_ref(self.fd) {
            // Entries still in a submission queue may name the slot: the
            // kernel takes them now, while no other can be pushed (the lock is
            // held). If it could not, or a ring kept the file, the slot is
            // never used again (a later registration must not be read by
            // them).
            let flushed = r.submit().is_ok();
            if r.remove_file(slot).is_ok() && flushed {
                core.files.free.push_back(slot);
            }
        }
        self.inner.release(core);
    }
}

impl Aio {
    /// Registers `fd` with the context's io_uring rings
    /// (`IORING_REGISTER_FILES_UPDATE`): until the returned guard is dropped,
    /// reads, writes and fsyncs on `fd` name a slot of the rings' file tables
    /// (`IOSQE_FIXED_FILE`), and the kernel takes no reference on the file for
    /// each of them. That saves an atomic increment and decrement of the
    /// file's shared count per request: a few percent of a cached 4 KiB read.
    /// Worth it for an fd that carries many requests.
    ///
    /// Registering an fd already registered counts one more guard; the fd stays
    /// registered until the last is dropped. On the thread engine nothing is
    /// registered, and requests go as usual
    /// ([`RegisteredFd::is_registered`] is false).
    ///
    /// The guard borrows `fd`, so it stays open while registered. A request
    /// still in the kernel when the guard is dropped goes on with the file it
    /// started with.
    ///
    /// ```
    /// use posixrt::aio::Aio;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let f = std::fs::File::from(rustix::fs::memfd_create("reg", rustix::fs::MemfdFlags::empty())?);
    /// rustix::io::pwrite(&f, b"registered", 0)?;
    /// let aio = Aio::new()?;
    /// let reg = aio.register_fd(&f)?;
    /// let mut r = aio.read(&f, 0, vec![0u8; 10])?;
    /// aio.suspend([&r], None)?;
    /// assert_eq!(r.aio_return()?.buf.as_deref(), Some(&b"registered"[..]));
    /// drop(reg);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// - `OutOfResources` if 1024 fds (or the soft `RLIMIT_NOFILE`, if lower) are
    ///   registered with the context already;
    /// - the errno of `io_uring_register` (`Unsupported` before Linux 5.19,
    ///   whose file tables cannot start empty).
    ///
    /// # References
    /// - [`io_uring_register(2)`](https://man7.org/linux/man-pages/man2/io_uring_register.2.html)
    #[doc(alias = "IORING_REGISTER_FILES")]
    #[doc(alias = "io_uring_register_files")]
    pub fn register_fd<'fd>(&self, fd: impl BorrowFd<'fd>) -> Result<RegisteredFd<'fd>> {
        let fd = fd.borrow_fd().as_raw_fd();
        let mut guard = RegisteredFd {
            inner: Arc::clone(&self.inner),
            fd,
            slot: None,
            borrow: PhantomData,
        };
        let Engine::Uring(r) = &self.inner.engine else {
            return Ok(guard);
        };
        let mut core = self.inner.lock();
        if let Some(slot) = core.files.add_ref(fd) {
            guard.slot = Some(slot);
            drop(core);
            return Ok(guard);
        }
        let Some(slot) = core.files.alloc() else {
            drop(core);
            return Err(Error::new(
                ErrorKind::OutOfResources,
                "io_uring_register",
                format!(
                    "fd {fd}: {} fds are registered with this context already",
                    table_size()
                ),
            )
            .with_hint("drop a RegisteredFd that is no longer needed"));
        };
        if let Err(e) = r.install_file(slot, fd) {
            core.files.free.push_back(slot);
            drop(core);
            let errno = e.raw_os_error().unwrap_or(libc::EINVAL);
            let err = Error::from_errno("io_uring_register", errno)
                .with_message(format!("registering fd {fd} with the io_uring rings"));
            return Err(if errno == libc::EINVAL {
                err.with_kind(ErrorKind::Unsupported)
                    .with_hint("empty io_uring file tables need Linux 5.19 or later")
            } else {
                err
            });
        }
        core.files.insert(fd, slot);
        guard.slot = Some(slot);
        drop(core);
        Ok(guard)
    }
}
