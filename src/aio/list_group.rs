//! The notification groups of `lio_listio` lists: one per list that notifies,
//! counting its members still to complete; the last one's completion fires the
//! list's notification and frees the group.

use super::notify::Notify;

struct Group {
    remaining: u32,
    notify: Notify,
    live: bool,
}

/// The groups of one context's request table.
#[derive(Default)]
pub(crate) struct ListGroups {
    groups: Vec<Group>,
    /// Freed groups. Its capacity is at least `groups.len()`: a group is
    /// freed in a reap, which may run in a signal handler (C `aio_error` on a
    /// request in progress), where nothing may allocate.
    free: Vec<u32>,
}

impl ListGroups {
    /// Starts a group of `n` members notifying with `notify`.
    pub(crate) fn open(&mut self, n: u32, notify: Notify) -> u32 {
        let g = Group {
            remaining: n,
            notify,
            live: true,
        };
        match self.free.pop() {
            Some(i) => {
                self.groups[i as usize] = g;
                i
            }
            None => {
                self.groups.push(g);
                let n = self.groups.len();
                self.free.reserve(n - self.free.len());
                (n - 1) as u32
            }
        }
    }

    /// One member of `list` is final: the group's notification if that was
    /// its last (the group is then freed).
    #[inline]
    pub(crate) fn member_done(&mut self, list: u32) -> Option<Notify> {
        let g = &mut self.groups[list as usize];
        if !g.live {
            return None;
        }
        g.remaining -= 1;
        if g.remaining == 0 {
            return self.finish(list);
        }
        None
    }

    /// Frees the group of `list` and gives its notification, once (None if
    /// it was freed already).
    pub(crate) fn finish(&mut self, list: u32) -> Option<Notify> {
        let g = &mut self.groups[list as usize];
        if !g.live {
            return None;
        }
        g.live = false;
        let n = std::mem::take(&mut g.notify);
        // (Within the room `open` made: no allocation.)
        self.free.push(list);
        Some(n)
    }

    /// Groups still open.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.groups.iter().filter(|g| g.live).count()
    }

    /// (The free list's address, capacity and length; the groups' count.)
    #[cfg(test)]
    pub(crate) fn free_list_shape(&self) -> ((*const u32, usize, usize), usize) {
        (
            (self.free.as_ptr(), self.free.capacity(), self.free.len()),
            self.groups.len(),
        )
    }
}
