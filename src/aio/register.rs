//! [`RegisteredFd`] and [`Aio::register_fd`]: an fd in the io_uring rings' file
//! tables while the guard lives (see `files.rs`).

use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;

use super::context::Aio;
use super::engine::{Engine, Inner};
use super::files::table_size;
use super::op::BorrowFd;
use crate::sys::io::dup;
use crate::{Error, ErrorKind, Result};

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

    /// The fd, open while the guard lives.
    #[inline]
    pub(super) fn borrowed(&self) -> BorrowedFd<'_> {
        // SAFETY: the guard was made from a `BorrowedFd<'fd>` and keeps that
        // borrow (`borrow`): the fd stays open for 'fd, which outlives `self`.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    /// The context the fd is registered with.
    #[inline]
    pub(super) fn inner(&self) -> &Arc<Inner> {
        &self.inner
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
        let Engine::Uring(r) = &self.inner.engine else {
            return;
        };
        let Some(slot) = self.slot else {
            return;
        };
        if self.inner.inherited() {
            // A forked child's copy: the rings and their file table are the
            // parent's (the kernel's instance is shared), so removing the
            // file would unregister it under the parent's requests. Nor is
            // the lock taken: a thread of the parent may have held it.
            return;
        }
        let mut core = self.inner.lock();
        if core.files.drop_ref(slot) {
            // Entries still in a submission queue may name the slot: the
            // kernel takes them now, while no other can be pushed (the lock is
            // held). If it could not take them all, or a ring kept the file,
            // the slot is never used again (a later registration must not be
            // read by them).
            let flushed = r.submit().is_ok() && !r.sq_pending();
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
    /// Leaking the guard (`mem::forget`) keeps the fd registered for good: if
    /// the fd is closed and its number reused, requests by that number still
    /// name the file registered, until the number is registered again (which
    /// asks the kernel whether the number still names the open file
    /// registered, `kcmp`, and registers the new one in a new slot if not).
    /// A registration keeps a copy of the fd while it lasts.
    ///
    /// In a child made by `fork`, dropping a guard the parent made does
    /// nothing: the registration stays the parent's.
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
    /// - the errno of `fcntl(F_DUPFD_CLOEXEC)` (`EMFILE`) if the fd cannot be
    ///   copied;
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
        let borrowed = fd.borrow_fd();
        let fd = borrowed.as_raw_fd();
        let mut guard = RegisteredFd {
            inner: Arc::clone(&self.inner),
            fd,
            slot: None,
            borrow: PhantomData,
        };
        if self.inner.inherited() {
            return Err(super::inherited::inherited_context_in("io_uring_register"));
        }
        let Engine::Uring(r) = &self.inner.engine else {
            return Ok(guard);
        };
        // A copy of the fd tells a registration of the number's open file from
        // a stale one, left by a leaked guard of a file since closed.
        let file = dup(borrowed).map_err(|e| {
            Error::from_errno("fcntl", e).with_message(format!("registering fd {fd}"))
        })?;
        let mut core = self.inner.lock();
        if let Some(slot) = core.files.add_ref(borrowed) {
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
        core.files.insert(fd, file, slot);
        guard.slot = Some(slot);
        drop(core);
        Ok(guard)
    }
}
