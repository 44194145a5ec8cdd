//! The waiting writers of an [`RwLock`](super::RwLock): their count
//! ([`WaitingCount`]), the list of those that rank against real-time readers
//! ([`WriterList`]), and the levels readers and writers compare (see the
//! [rwlock module docs](super::rwlock)).
//!
//! Both the count ([`WaitingCount`], in [`super::waiting`]) and the list are
//! stamped with the fork generation ([`fork::generation`]) that made them: in
//! a forked child, the writers the parent counted or listed do not exist, and
//! must hold no reader back.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};

pub(super) use super::waiting::WaitingCount;

use crate::sys::fork;
use crate::sys::pilock::{PiLocked, RawPiLock};
use crate::sys::prio::{self, SchedClass};

/// The level of a waiting `SCHED_DEADLINE` writer: above every real-time priority.
const DEADLINE_LEVEL: u32 = 100;

/// A waiting writer's entry in its lock's list, on the writer's stack.
pub(super) struct WaitingWriter {
    /// [`writer_level`] of the writer, read as it starts waiting.
    pub(super) level: u32,
    next: AtomicPtr<WaitingWriter>,
}

impl WaitingWriter {
    /// An unlisted entry of `level`.
    pub(super) fn new(level: u32) -> WaitingWriter {
        WaitingWriter {
            level,
            next: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

/// The waiting writers of a level above 0 of one lock, as a list of nodes on
/// their stacks, and the highest of their levels. (A lock keeps a second one
/// for its waiting real-time readers, with the same nodes and levels.)
pub(super) struct WriterList {
    /// The highest level ([`writer_level`]) among waiting writers, 0 if none
    /// (see [`Self::list`]).
    top: AtomicU32,
    /// The first node; the list is read and changed only under [`LISTS`].
    head: AtomicPtr<WaitingWriter>,
    /// The fork generation that last listed a writer: in another one (a forked
    /// child) the nodes and `top` are the parent's (see [`Self::inherited`]).
    generation: AtomicU32,
}

/// The lock of every [`WriterList`] of the process, taken only by real-time
/// writers and readers for a moment as they start and stop waiting. One for the process
/// rather than one per list so that the fork hook can forget its holder: a
/// writer of the parent listing or unlisting itself at the fork does not exist
/// in the child, which would otherwise wait for it forever.
static LISTS: PiLocked<()> = PiLocked::const_new(<RawPiLock as lock_api::RawMutex>::INIT, ());

/// Whether [`after_fork_in_child`] is registered (not a `Once`: a fork while
/// another thread registers it must not leave the child waiting for that one).
static FORK_HOOKED: AtomicBool = AtomicBool::new(false);

/// Takes [`LISTS`], after registering the fork hook that resets it (before the
/// lock is first taken; registering again is a no-op).
fn lock_lists() -> lock_api::MutexGuard<'static, RawPiLock, ()> {
    if !FORK_HOOKED.load(Ordering::Acquire) {
        crate::sys::fork::on_child(after_fork_in_child);
        FORK_HOOKED.store(true, Ordering::Release);
    }
    LISTS.lock()
}

/// In a forked child: forgets a holder of [`LISTS`] (a thread of the parent,
/// absent here). The lists the parent's writers left are dropped when the
/// child first lists a writer (see [`WriterList::inherited`]). Async-signal-safe:
/// one store.
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing; only the lock word
    // is written.
    unsafe { LISTS.raw() }.reset_in_child();
}

impl WriterList {
    /// An empty list.
    pub(super) const fn new() -> WriterList {
        WriterList {
            top: AtomicU32::new(0),
            head: AtomicPtr::new(std::ptr::null_mut()),
            generation: AtomicU32::new(0),
        }
    }

    /// The highest level among the listed writers of this process, 0 if none
    /// (`SeqCst`).
    #[inline]
    pub(super) fn top(&self) -> u32 {
        // The generation first: `inherited` resets `top` before it stamps the
        // list, so a `top` read after the stamp is never the parent's.
        if self.generation.load(Ordering::SeqCst) == fork::generation() {
            self.top.load(Ordering::SeqCst)
        } else {
            0 // the parent's writers (see `inherited`)
        }
    }

    /// Whether no writer may be listed (one relaxed load, for the write fast
    /// path); `false` may be a parent's list, which [`Self::forget_inherited`]
    /// drops.
    #[inline(always)]
    pub(super) fn is_clear(&self) -> bool {
        self.top.load(Ordering::Relaxed) == 0
    }

    /// In a forked child, drops the parent's list and level if no one of this
    /// process listed itself yet (so that [`Self::is_clear`] holds again).
    pub(super) fn forget_inherited(&self) {
        if self.generation.load(Ordering::SeqCst) != fork::generation() {
            let held = lock_lists();
            self.inherited(&held);
        }
    }

    /// Under [`LISTS`]: in a forked child whose writers have not listed
    /// themselves yet, the nodes are the parent's writers', which do not exist
    /// here (their stacks are the parent's); forgets them and their level.
    fn inherited(&self, _held: &lock_api::MutexGuard<'_, RawPiLock, ()>) {
        let generation = fork::generation();
        if self.generation.load(Ordering::Relaxed) != generation {
            self.head.store(std::ptr::null_mut(), Ordering::Relaxed);
            self.top.store(0, Ordering::SeqCst);
            self.generation.store(generation, Ordering::SeqCst);
        }
    }

    /// Runs `f` with the list lock held (a test hook).
    pub(super) fn with_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = lock_lists();
        f()
    }

    /// Lists a waiting writer and raises `top` to its level. The writer must
    /// [`unlist`](Self::unlist) the node before it goes out of scope.
    pub(super) fn list(&self, node: &WaitingWriter) {
        let held = lock_lists();
        self.inherited(&held);
        node.next
            .store(self.head.load(Ordering::Relaxed), Ordering::Relaxed);
        self.head.store(
            node as *const WaitingWriter as *mut WaitingWriter,
            Ordering::Relaxed,
        );
        self.top.fetch_max(node.level, Ordering::SeqCst);
    }

    /// Unlists a writer that stops waiting and sets `top` to the highest level of
    /// those left (0 if none).
    pub(super) fn unlist(&self, node: &WaitingWriter) {
        let held = lock_lists();
        let me: *const WaitingWriter = node;
        let mut link = &self.head;
        let mut top = 0;
        loop {
            let p = link.load(Ordering::Relaxed);
            let Some(n) = listed(&held, p) else { break };
            if std::ptr::eq(p, me) {
                link.store(n.next.load(Ordering::Relaxed), Ordering::Relaxed);
            } else {
                top = top.max(n.level);
                link = &n.next;
            }
        }
        self.top.store(top, Ordering::SeqCst);
    }
}

/// The node at `p` of a lock's waiting-writer list, whose lock `_held` is held;
/// `None` at the end of the list.
fn listed<'a>(
    _held: &'a lock_api::MutexGuard<'_, RawPiLock, ()>,
    p: *mut WaitingWriter,
) -> Option<&'a WaitingWriter> {
    // SAFETY: a node is in the list only from its writer's `list` to its
    // `unlist`, both under the list lock (held for 'a). The writer declares the
    // node before its `Waiting` guard, whose drop unlists it (also when
    // unwinding) before the node goes out of scope, so a listed node is live.
    // (In a forked child the parent's nodes, whose writers do not exist there,
    // are dropped by the child's first `list`, before any walk: `inherited`.)
    unsafe { p.as_ref() }
}

/// How a waiting writer ranks against real-time readers: its
/// `SCHED_FIFO`/`SCHED_RR` priority, [`DEADLINE_LEVEL`] for `SCHED_DEADLINE`, 0
/// for the other policies (every real-time reader passes it).
pub(super) fn writer_level(c: SchedClass) -> u32 {
    if c.is_rt() {
        c.priority.clamp(1, 99) as u32
    } else if c.policy == libc::SCHED_DEADLINE {
        DEADLINE_LEVEL
    } else {
        0
    }
}

/// A reader's level, read from the kernel on first use (only when a writer
/// waits): its `SCHED_FIFO`/`SCHED_RR` priority, 0 for the other policies (it
/// passes no waiting writer). A reader passes waiting writers of lower level.
pub(super) struct ReaderLevel(Cell<Option<u32>>);

impl ReaderLevel {
    pub(super) fn new() -> ReaderLevel {
        ReaderLevel(Cell::new(None))
    }

    pub(super) fn get(&self) -> u32 {
        if let Some(l) = self.0.get() {
            return l;
        }
        let c = prio::current();
        let l = if c.is_rt() {
            c.priority.clamp(0, 99) as u32
        } else {
            0
        };
        self.0.set(Some(l));
        l
    }
}
