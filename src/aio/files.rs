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
//!
//! A registration keeps a copy of the fd, to tell whether the number still
//! names the same open file (`kcmp`). A guard
//! borrows its fd, so the number cannot be closed while it lives, unless the
//! guard is leaked (`mem::forget`): the registration then stays, and requests
//! by that number keep naming the registered file, until the number is
//! registered again. A registration of the number for another file is then
//! made in a new slot; the leaked one keeps its slot for good.

use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::sys::io::same_file;

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

/// One registration: an fd number, the file it named, its slot, its guards.
struct Entry {
    fd: RawFd,
    /// A copy of the fd, kept to tell whether the number still names the same
    /// open file.
    file: OwnedFd,
    slot: u32,
    refs: u32,
    /// Requests by number `fd` use this slot. False once the number was
    /// registered again for another file (the guards of this entry were
    /// leaked, and the number closed and reused).
    current: bool,
}

/// Which fds are registered, and in which slot (under the core lock).
#[derive(Default)]
pub(crate) struct FileTable {
    entries: Vec<Entry>,
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
            None => self.current(fd).map_or(0, |i| self.entries[i].slot + 1),
        }
    }

    /// The entry requests by number `fd` use.
    fn current(&self, fd: RawFd) -> Option<usize> {
        self.entries.iter().position(|e| e.fd == fd && e.current)
    }

    /// Counts one more guard of `fd` if it is registered, for the open file it
    /// names now; its slot. If the number is registered for another open file
    /// (a guard of it was leaked, and the number closed and reused), that
    /// registration stops serving the number, and `None` asks for a new one;
    /// so it does where the kernel cannot compare open files.
    pub(crate) fn add_ref(&mut self, fd: BorrowedFd<'_>) -> Option<u32> {
        let raw = fd.as_raw_fd();
        let i = self.current(raw)?;
        let e = &mut self.entries[i];
        if same_file(e.file.as_fd(), fd) != Some(true) {
            e.current = false;
            self.set_dense(raw, 0);
            return None;
        }
        e.refs += 1;
        Some(e.slot)
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

    /// Registers `fd` in `slot`; `file` is a copy of it.
    pub(crate) fn insert(&mut self, fd: RawFd, file: OwnedFd, slot: u32) {
        self.entries.push(Entry {
            fd,
            file,
            slot,
            refs: 1,
            current: true,
        });
        self.set_dense(fd, slot + 1);
    }

    fn set_dense(&mut self, fd: RawFd, v: u32) {
        let i = fd as u32 as usize;
        if i < DENSE {
            if self.dense.len() <= i {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] = v;
        }
    }

    /// Counts one guard of the registration in `slot` less; true if that was
    /// the last (the slot is then free to remove, and its number no longer
    /// looked up).
    pub(crate) fn drop_ref(&mut self, slot: u32) -> bool {
        let Some(i) = self.entries.iter().position(|e| e.slot == slot) else {
            return false;
        };
        self.entries[i].refs -= 1;
        if self.entries[i].refs > 0 {
            return false;
        }
        let e = self.entries.swap_remove(i);
        if e.current {
            self.set_dense(e.fd, 0);
        }
        true
    }
}
