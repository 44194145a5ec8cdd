//! Registered files: an fd the caller registers with a context is installed in
//! the file table of each of the context's io_uring rings, and its requests
//! name the table's slot (`IOSQE_FIXED_FILE`) instead of the fd number. The
//! kernel then takes no reference on the file for each request: in a process
//! with more than one thread, `fget` and `fput` are an atomic increment and
//! decrement of the file's shared count around every read and write.
//!
//! This file keeps which fds are registered; `register.rs` has the guard and
//! the call. The slot is freed when the last `RegisteredFd` of the fd is
//! dropped. Before it is, every entry still waiting in a submission queue
//! (which may name it) is handed to the kernel; requests in the kernel keep the
//! file they started with. Requests issued again after a first attempt (built
//! by `sqe::sqe_again`) use their own fd copy or the caller's fd, never the slot.

use std::collections::VecDeque;
use std::os::fd::RawFd;

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
    pub(crate) free: VecDeque<u32>,
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
    pub(crate) fn add_ref(&mut self, fd: RawFd) -> Option<u32> {
        let i = self.scan(fd)?;
        self.entries[i].2 += 1;
        Some(self.entries[i].1)
    }

    /// A slot for a new registration: a never-used one first, so that a slot
    /// freed is reused as late as possible.
    pub(crate) fn alloc(&mut self) -> Option<u32> {
        if self.next < table_size() {
            self.next += 1;
            return Some(self.next - 1);
        }
        self.free.pop_front()
    }

    pub(crate) fn insert(&mut self, fd: RawFd, slot: u32) {
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
    pub(crate) fn drop_ref(&mut self, fd: RawFd) -> Option<u32> {
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
