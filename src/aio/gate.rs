//! The order gate of each fd number a context has seen: the requests on it
//! in flight and those held back to keep order (see `table.rs`), and what the
//! number was last seen to name.

use std::collections::{HashMap, VecDeque};

/// fds below this get their order gate in a vector; larger ones in a map.
const DENSE_FDS: i32 = 4096;

#[derive(Default)]
pub(crate) struct Gate {
    /// Requests on this fd past the gate and not yet done.
    pub issued: u32,
    /// Requests held back to keep order.
    pub queue: VecDeque<u32>,
    /// A read on this fd number found a regular file, block device or directory
    /// (not pollable while it stays open): later reads skip the probe.
    pub not_pollable: bool,
    /// The file this number names refused `RWF_NOWAIT` (procfs, sysfs, ...):
    /// C reads on it are not sent with it (see `Slot::recheck`).
    pub no_nowait: bool,
    /// The number was last seen open with `O_DIRECT` (thread engine: its
    /// transfers wait for the device, so a worker hands the queue on first).
    pub direct: bool,
    /// The file this number names refused `RWF_NOWAIT` for a write (thread
    /// engine: buffered writes on most file systems).
    pub no_nowait_write: bool,
}

/// The gates of one context: those of fds below `DENSE_FDS` indexed by fd,
/// the rest in a map.
#[derive(Default)]
pub(crate) struct Gates {
    dense: Vec<Gate>,
    sparse: HashMap<i32, Gate>,
}

impl Gates {
    /// The gate of fd number `fd`, made if need be.
    #[inline(always)]
    pub(crate) fn get(&mut self, fd: i32) -> &mut Gate {
        if (fd as u32 as usize) < self.dense.len() {
            return &mut self.dense[fd as u32 as usize];
        }
        self.get_slow(fd)
    }

    /// [`get`](Gates::get) of an fd not seen yet, or a large one.
    #[cold]
    #[inline(never)]
    fn get_slow(&mut self, fd: i32) -> &mut Gate {
        if !(0..DENSE_FDS).contains(&fd) {
            return self.sparse.entry(fd).or_default();
        }
        let i = fd as usize;
        if self.dense.len() <= i {
            self.dense.resize_with(i + 1, Gate::default);
        }
        &mut self.dense[i]
    }

    /// The gate of fd number `fd`, if it has one.
    pub(crate) fn find(&self, fd: i32) -> Option<&Gate> {
        if (fd as u32 as usize) < self.dense.len() {
            return self.dense.get(fd as u32 as usize);
        }
        self.sparse.get(&fd)
    }
}
