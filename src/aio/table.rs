//! The request table and state machine, independent of the Rust handle types.
//!
//! A request lives in a [`Slot`] of a slab, named by `(index, generation)`: the
//! same identity a C `struct aiocb *` will later map to. Its life is
//!
//! ```text
//! Free -> FdQueued -> Ready -> Issued -> Done -> Free
//!            \__________\________\______/ (cancel / failure)
//! ```
//!
//! - `FdQueued`: waiting behind earlier requests on the same fd, because it must be
//!   ordered (a write on an `O_APPEND` or non-seekable fd, or an fsync, which covers
//!   everything queued on the fd before it);
//! - `Ready`: admitted, waiting for the engine to have room, in priority order
//!   (highest effective priority first: the submitting thread's real-time
//!   priority minus `reqprio`, then submission order);
//! - `Issued`: owned by the kernel (io_uring) or by a pool thread;
//! - `Done`: the result is final; `aio_return` frees the slot (bumping the
//!   generation, so the stale name reads as "already taken").
//!
//! All of it is guarded by the engine mutex. Nothing here makes a system call,
//! except closing a request's own descriptor copy when it completes, and reading
//! the submitter's scheduling class for a C request queued by a real-time thread.
//!
//! # Effective priority
//!
//! A request records its submitter's policy and priority at submission. Its
//! effective priority is that priority minus `reqprio`, clamped at the policy's
//! minimum (1 for `SCHED_FIFO`/`SCHED_RR`); for `SCHED_OTHER`, `SCHED_BATCH` and
//! `SCHED_IDLE` it is 0. Queued requests are issued highest effective priority
//! first, so every real-time request goes before every non-real-time one; among
//! equal effective priorities, lower `reqprio` first, then arrival.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::os::fd::OwnedFd;
use std::task::Waker;

use super::gate::{Gate, Gates};
use super::hook;
use super::list_group::ListGroups;
pub(crate) use super::mail::{Mail, MailAddr};
use super::notify::{Fire, Notify};
pub(crate) use super::slot::{Hold, OpKind, RawOp, Slot, State, NO_LIST};
use crate::sys::prio::SchedClass;

/// Largest transfer one read or write asks for, as `read(2)` does (`MAX_RW_COUNT`).
pub(crate) const MAX_RW: usize = 0x7fff_f000;

/// The effective class of a request by a thread of class `c` with `reqprio`.
#[inline]
pub(crate) fn effective(c: SchedClass, reqprio: u8) -> SchedClass {
    if c.is_rt() {
        SchedClass {
            policy: c.policy,
            priority: (c.priority - reqprio as i32).max(1),
        }
    } else {
        SchedClass {
            policy: c.policy,
            priority: 0,
        }
    }
}

/// The issue order key (lower first): effective priority, then `reqprio`.
#[inline]
fn order_key(class: SchedClass, reqprio: u8) -> i32 {
    reqprio as i32 - class.priority * 64
}

/// The request table of one context.
pub(crate) struct Core {
    pub slots: Vec<Slot>,
    /// The free slots. Its capacity is at least `slots.len()` (see
    /// [`new_slot`](Core::new_slot)): freeing never allocates.
    free: Vec<u32>,
    /// The order gates, by fd number.
    gates: Gates,
    ready: BinaryHeap<Reverse<(i32, u64, u32)>>,
    /// Requests admitted while the engine had room for all of them: issued in
    /// submission order without going through the priority heap.
    direct: VecDeque<(u64, u32)>,
    ready_live: usize,
    /// Requests in state `Issued`.
    pub inflight: u32,
    seq: u64,
    lists: ListGroups,
    /// A thread is blocked in `io_uring_enter` waiting for completions: only it
    /// reaps the completion queue until it clears the flag.
    pub reaper: bool,
    /// The rings' eventfd is quiet (see `Ring::quiet`) until the next reap.
    pub efd_quiet: bool,
    /// Entries that go in without a quiet eventfd: after one whose request
    /// was still in the kernel at the reap (see `Inner::poll_completions`).
    pub quiet_skip: u32,
    /// Threads waiting on the completion condvar.
    pub waiters: u32,
    /// Something completed since the condvar was last signalled.
    pub completed: bool,
    /// Wakers and notifications to run once the lock is released.
    pub wakers: Vec<Waker>,
    pub fires: Vec<Fire>,
    pub shutdown: bool,
    /// A request finished without a kernel completion (cancelled before it was
    /// issued) while a reaper may sleep in `io_uring_enter`: it must be woken.
    pub nudge: bool,
    /// Submitting calls that still settle probe reads: no thread becomes the
    /// reaper meanwhile (one already asleep stays: see `Inner::settle_probes`).
    pub probing: u32,
    /// Eventfds of threads waiting interruptibly, written when something completes.
    pub wait_fds: Vec<std::sync::Arc<OwnedFd>>,
    /// The fds registered with the rings (see `files.rs`).
    pub files: super::files::FileTable,
    /// Stores a done C request's result into its `struct aiocb` (set by the C ABI).
    on_aiocb: fn(usize, i64),
}

fn no_aiocb(_: usize, _: i64) {}

/// Frees the buffer of a request whose handle was dropped in flight (rare:
/// out of the reap's common path).
#[cold]
#[inline(never)]
fn drop_orphan(b: Box<dyn Send>) {
    drop(b);
}

/// Packs a request name into io_uring `user_data`.
#[inline]
pub(crate) fn user_data(idx: u32, gen: u32) -> u64 {
    ((gen as u64) << 32) | idx as u64
}

/// Unpacks io_uring `user_data`.
#[inline]
pub(crate) fn split_user_data(ud: u64) -> (u32, u32) {
    (ud as u32, (ud >> 32) as u32)
}

impl Core {
    pub(crate) fn new() -> Core {
        Core {
            slots: Vec::with_capacity(64),
            free: Vec::with_capacity(64),
            gates: Gates::default(),
            ready: BinaryHeap::with_capacity(64),
            direct: VecDeque::with_capacity(64),
            ready_live: 0,
            inflight: 0,
            seq: 0,
            lists: ListGroups::default(),
            reaper: false,
            efd_quiet: false,
            quiet_skip: 0,
            waiters: 0,
            completed: false,
            wakers: Vec::new(),
            fires: Vec::new(),
            shutdown: false,
            nudge: false,
            probing: 0,
            files: Default::default(),
            wait_fds: Vec::new(),
            on_aiocb: no_aiocb,
        }
    }

    /// Sets the function that stores a C request's status into its aiocb.
    pub(crate) fn set_aiocb_hook(&mut self, f: fn(usize, i64)) {
        self.on_aiocb = f;
    }

    /// The live slot named `(idx, gen)`, if the name is not stale.
    #[inline]
    pub(crate) fn get(&self, idx: u32, gen: u32) -> Option<&Slot> {
        match self.slots.get(idx as usize) {
            Some(s) if s.gen == gen && s.state != State::Free => Some(s),
            _ => None,
        }
    }

    /// Takes a free slot for a new request (not yet admitted) of a submitter of
    /// scheduling class `class`;
    /// takes `notify` (leaving `Notify::None`).
    ///
    /// A free slot already holds the defaults of the fields that
    /// [`complete`](Core::complete) and [`free_slot`](Core::free_slot) reset (no
    /// waker, orphan, own fd or notification; not detached, probing, parked or
    /// interruptible): only the others are written here.
    #[inline]
    pub(crate) fn alloc_as(
        &mut self,
        op: RawOp,
        reqprio: u8,
        class: SchedClass,
        notify: &mut Notify,
        list: u32,
    ) -> (u32, u32) {
        let class = effective(class, reqprio);
        let idx = match self.free.pop() {
            Some(i) => i,
            None => self.new_slot(),
        };
        self.seq += 1;
        let seq = self.seq;
        let s = &mut self.slots[idx as usize];
        debug_assert!(s.state == State::Free);
        debug_assert!(s.own_fd.is_none() && s.waker.is_none() && s.orphan.is_none());
        debug_assert!(s.mail.is_none());
        debug_assert!(s.notify.is_none() && !s.detached && !s.probe && !s.parked);
        debug_assert!(!s.interruptible && s.hold == Hold::No && s.covered == 0);
        s.state = State::FdQueued;
        s.op = op;
        s.reqprio = reqprio;
        s.key = order_key(class, reqprio);
        s.class = class;
        s.fd_kind = None;
        s.fixed = 0;
        s.nonblock = false;
        s.espipe = false;
        s.skip_espipe = false;
        s.eagain = false;
        s.refaulted = false;
        s.reentered_by = 0;
        s.recheck = false;
        s.to_worker = false;
        s.submitter = crate::sys::tid::current();
        s.finite = false;
        s.seq = seq;
        s.res = 0;
        // (Only the tag is read for `Notify::None`, the futures' case: a copy
        // of the whole value would stall on the partial write that made it.)
        if !notify.is_none() {
            s.notify = std::mem::take(notify);
        }
        s.list = list;
        s.worker = u32::MAX;
        s.cancel_req = false;
        s.aiocb = 0;
        let gen = s.gen;
        hook::submit(
            user_data(idx, gen),
            op.fd,
            op.offset,
            op.len,
            op.kind.hook(),
            class.priority,
        );
        (idx, gen)
    }

    /// Adds a slot (none is free) and returns its index. The free list gets
    /// room for every slot here, at submission: a reap frees slots where
    /// nothing may allocate (in a C signal handler that calls `aio_error`),
    /// and its pushes must never grow the list.
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self) -> u32 {
        self.slots.push(Slot::empty());
        // (The list is empty: no slot is free.)
        self.free.reserve(self.slots.len());
        (self.slots.len() - 1) as u32
    }

    #[inline(always)]
    fn gate(&mut self, fd: i32) -> &mut Gate {
        self.gates.get(fd)
    }

    /// Admits a freshly allocated request: through its fd's ordering gate, then
    /// into the ready queue.
    ///
    /// `direct` (the engine has room for this whole submission and nothing waits)
    /// skips the priority heap: every request will be issued right away anyway.
    pub(crate) fn admit(&mut self, idx: u32, direct: bool) {
        let op = self.slots[idx as usize].op;
        let gate = self.gate(op.fd);
        let blocked = !gate.queue.is_empty() || (op.ordered && gate.issued > 0);
        if blocked {
            gate.queue.push_back(idx);
            self.slots[idx as usize].state = State::FdQueued;
        } else {
            self.pass_gate(idx, direct);
        }
    }

    /// Issues a freshly allocated request at once if its fd's order gate lets it
    /// pass (marks it `Issued`); false if it must be admitted the normal way.
    #[inline]
    pub(crate) fn issue_now(&mut self, idx: u32) -> bool {
        let op = self.slots[idx as usize].op;
        let gate = self.gate(op.fd);
        if !gate.queue.is_empty() || (op.ordered && gate.issued > 0) {
            return false;
        }
        gate.issued += 1;
        self.slots[idx as usize].state = State::Issued;
        self.inflight += 1;
        true
    }

    fn pass_gate(&mut self, idx: u32, direct: bool) {
        let fd = self.slots[idx as usize].op.fd;
        self.gate(fd).issued += 1;
        let s = &mut self.slots[idx as usize];
        s.state = State::Ready;
        if direct {
            self.direct.push_back((s.seq, idx));
        } else {
            self.ready.push(Reverse((s.key, s.seq, idx)));
        }
        self.ready_live += 1;
    }

    /// True if fd number `fd` was seen to name a file that cannot be polled.
    #[inline]
    pub(crate) fn fd_not_pollable(&mut self, fd: i32) -> bool {
        self.gate(fd).not_pollable
    }

    /// Records what fd number `fd` names (see [`fd_not_pollable`](Core::fd_not_pollable)).
    /// (A number that names something else now may take `RWF_NOWAIT` again.)
    #[inline]
    pub(crate) fn set_fd_not_pollable(&mut self, fd: i32, v: bool) {
        let g = self.gate(fd);
        g.not_pollable = v;
        if !v {
            g.no_nowait = false;
            g.no_nowait_write = false;
        }
    }

    /// True if fd number `fd` was last seen open with `O_DIRECT`.
    #[inline]
    pub(crate) fn fd_direct(&mut self, fd: i32) -> bool {
        self.gate(fd).direct
    }

    /// Records whether fd number `fd` is open with `O_DIRECT`.
    #[inline]
    pub(crate) fn set_fd_direct(&mut self, fd: i32, v: bool) {
        self.gate(fd).direct = v;
    }

    /// True if a transfer of `kind` on fd number `fd` may go with
    /// `RWF_NOWAIT`: the file was not seen to refuse it (a C read on io_uring,
    /// known not pollable: see `Slot::recheck`; any thread-engine transfer).
    #[inline]
    pub(crate) fn fd_nowait_for(&mut self, fd: i32, kind: OpKind) -> bool {
        let g = self.gate(fd);
        if kind == OpKind::Write {
            !g.no_nowait_write
        } else {
            !g.no_nowait
        }
    }

    /// Records that the file fd number `fd` names refused `RWF_NOWAIT` for a
    /// transfer of `kind`.
    pub(crate) fn set_fd_refuses_nowait(&mut self, fd: i32, kind: OpKind) {
        let g = self.gate(fd);
        if kind == OpKind::Write {
            g.no_nowait_write = true;
        } else {
            g.no_nowait = true;
        }
    }

    /// Requests waiting for the engine.
    #[inline]
    pub(crate) fn ready_len(&self) -> usize {
        self.ready_live
    }

    /// The effective class of the request that [`pop_ready`](Core::pop_ready)
    /// would give next on the thread engine, if one is queued. Stale entries
    /// on top of the queue (requests cancelled or issued since) are dropped
    /// first, as `pop_ready` would drop them: they would hide the request
    /// behind them.
    pub(crate) fn first_ready_class(&mut self) -> Option<SchedClass> {
        while let Some(&Reverse((_, seq, idx))) = self.ready.peek() {
            match self.slots.get(idx as usize) {
                Some(s) if s.state == State::Ready && s.seq == seq => return Some(s.class),
                _ => {
                    self.ready.pop();
                }
            }
        }
        None
    }

    /// The next request to issue, in priority order; marks it `Issued`.
    pub(crate) fn pop_ready(&mut self) -> Option<u32> {
        while let Some((seq, idx)) = self.direct.pop_front() {
            let s = &mut self.slots[idx as usize];
            if s.state == State::Ready && s.seq == seq {
                s.state = State::Issued;
                self.ready_live -= 1;
                self.inflight += 1;
                return Some(idx);
            }
        }
        while let Some(Reverse((_, seq, idx))) = self.ready.pop() {
            let s = &mut self.slots[idx as usize];
            if s.state == State::Ready && s.seq == seq {
                s.state = State::Issued;
                self.ready_live -= 1;
                self.inflight += 1;
                return Some(idx);
            }
        }
        None
    }

    /// Records the final result of request `idx` and releases whatever waited on it.
    ///
    /// The common case on io_uring (an issued request with no own fd, aiocb,
    /// notification or handle-less slot, and no trace stream running)
    /// is done inline; the rest in [`complete_slow`](Core::complete_slow).
    #[inline(always)]
    pub(crate) fn complete(&mut self, idx: u32, res: i64) {
        let s = &mut self.slots[idx as usize];
        let plain = s.state == State::Issued
            && s.own_fd.is_none()
            && s.aiocb == 0
            && s.notify.is_none()
            && !s.detached
            && s.hold == Hold::No
            && s.covered == 0;
        if !plain || crate::trace::system_events::enabled() {
            return self.complete_slow(idx, res);
        }
        let seq = s.seq;
        let waker = s.waker.take();
        s.res = res;
        s.interruptible = false;
        s.parked = false;
        s.probe = false;
        let fd = s.op.fd;
        let list = s.list;
        let mailed = s.post_mail(res);
        if mailed {
            // Freed at once, as `free_slot` does, while at hand: its waker is
            // taken, its box let go of, and a plain request is not detached
            // (so it keeps no orphan buffer). Its index is free after the rest.
            debug_assert!(s.orphan.is_none());
            s.state = State::Free;
            s.gen = s.gen.wrapping_add(1);
        } else {
            s.state = State::Done;
        }
        if let Some(w) = waker {
            self.push_waker(w);
        }
        self.inflight -= 1;
        self.completed = true;
        let gate = self.gate(fd);
        gate.issued -= 1;
        if !gate.queue.is_empty() {
            if res < 0 {
                self.cover_failure(fd, seq, res);
            }
            self.release_gate(fd);
        }
        if list != NO_LIST {
            self.list_member_done(list);
        }
        if mailed {
            self.free.push(idx);
        }
    }

    /// Queues `w` to be woken after the lock is released (the queue goes whole at
    /// each release: room for a batch is made at once, not doubling by doubling).
    #[inline(always)]
    fn push_waker(&mut self, w: Waker) {
        if self.wakers.len() == self.wakers.capacity() {
            self.grow_wakers();
        }
        push_within_capacity(&mut self.wakers, w);
    }

    /// Room for more wakers: 64 at first, then as `Vec` grows.
    #[cold]
    #[inline(never)]
    fn grow_wakers(&mut self) {
        self.wakers.reserve(64);
    }

    /// [`complete`](Core::complete), every case.
    #[inline(never)]
    fn complete_slow(&mut self, idx: u32, res: i64) {
        let s = &mut self.slots[idx as usize];
        if s.held(res) {
            return;
        }
        // An fsync reports the first failure of a request it covers, unless
        // it failed itself.
        let res = match std::mem::take(&mut s.covered) {
            e if e != 0 && res >= 0 => -(e as i64),
            _ => res,
        };
        match s.state {
            State::Issued => self.inflight -= 1,
            State::Ready => self.ready_live -= 1,
            State::FdQueued | State::Done | State::Free => {}
        }
        let was_queued = s.state == State::FdQueued;
        s.state = State::Done;
        s.res = res;
        s.interruptible = false;
        s.parked = false;
        s.probe = false;
        // The request's own descriptor copy is no longer needed.
        s.own_fd = None;
        if s.aiocb != 0 {
            // A C request: its status goes into the caller's aiocb before anyone
            // is woken or notified.
            (self.on_aiocb)(s.aiocb, res);
        }
        let op = s.op;
        let gen = s.gen;
        let seq = s.seq;
        let prio = s.class.priority;
        hook::complete(
            user_data(idx, gen),
            op.fd,
            op.offset,
            op.len,
            op.kind.hook(),
            res,
            prio,
        );
        if let Some(w) = s.waker.take() {
            self.wakers.push(w);
        }
        let notify = std::mem::take(&mut s.notify);
        if let Some(f) = Fire::from_notify(notify) {
            self.fires.push(f);
        }
        let list = s.list;
        let detached = s.detached;
        let mailed = s.post_mail(res);
        self.completed = true;
        let gate = self.gate(op.fd);
        if was_queued {
            if let Some(p) = gate.queue.iter().position(|&i| i == idx) {
                gate.queue.remove(p);
            }
        } else {
            gate.issued -= 1;
        }
        if !gate.queue.is_empty() {
            if res < 0 {
                self.cover_failure(op.fd, seq, res);
            }
            self.release_gate(op.fd);
        }
        if list != NO_LIST {
            self.list_member_done(list);
        }
        if detached || mailed {
            self.free_slot(idx);
        }
    }

    /// Attaches `mail` (and `waker`) to the live, unfinished request `(idx,
    /// gen)`: its completion posts the result there and frees the slot. False if
    /// the request is already done (or the name stale): nothing is attached.
    #[inline]
    pub(crate) fn attach_mail(
        &mut self,
        idx: u32,
        gen: u32,
        mail: &std::sync::Arc<Mail>,
        waker: Option<&Waker>,
    ) -> bool {
        match self.slots.get_mut(idx as usize) {
            Some(s) if s.gen == gen && !matches!(s.state, State::Free | State::Done) => {
                s.mail = MailAddr::of(mail);
                if let Some(w) = waker {
                    match &s.waker {
                        Some(old) if old.will_wake(w) => {}
                        _ => s.waker = Some(w.clone()),
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// A request on `fd` submitted as `seq` failed with `res` (< 0): every
    /// fsync waiting at the fd's gate that came after it takes the error, if
    /// it has none yet (POSIX aio_fsync: "In the event that any of the queued
    /// I/O operations fail, aio_fsync() shall return the error condition
    /// defined for read() and write()"). A cancelled request did not fail.
    #[cold]
    #[inline(never)]
    fn cover_failure(&mut self, fd: i32, seq: u64, res: i64) {
        if res == -(libc::ECANCELED as i64) {
            return;
        }
        let Some(gate) = self.gates.find(fd) else {
            return;
        };
        for &q in &gate.queue {
            let s = &mut self.slots[q as usize];
            if matches!(s.op.kind, OpKind::Fsync | OpKind::Fdatasync)
                && s.seq > seq
                && s.covered == 0
            {
                s.covered = (-res).min(i32::MAX as i64) as i32;
            }
        }
    }

    fn release_gate(&mut self, fd: i32) {
        loop {
            let gate = self.gate(fd);
            let Some(&front) = gate.queue.front() else {
                break;
            };
            let issued = gate.issued;
            if self.slots[front as usize].op.ordered && issued > 0 {
                break;
            }
            self.gate(fd).queue.pop_front();
            self.pass_gate(front, false);
        }
    }

    /// Puts an issued request back in the ready queue at its priority (a thread
    /// engine request whose fd became ready).
    pub(crate) fn requeue(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        debug_assert_eq!(s.state, State::Issued);
        s.state = State::Ready;
        s.parked = false;
        self.ready.push(Reverse((s.key, s.seq, idx)));
        self.ready_live += 1;
        self.inflight -= 1;
    }

    /// Cancels a request that has not been issued yet. Returns false if it was
    /// already issued or done.
    ///
    /// A thread-engine transfer back in the ready queue after an earlier round
    /// moved bytes (a stream write that parked part-way, see `requeue`) is
    /// in progress, not unissued: it is stopped with the bytes it moved, as a
    /// parked one is, and false is returned (not cancelled).
    pub(crate) fn cancel_unissued(&mut self, idx: u32) -> bool {
        match self.slots[idx as usize].state {
            State::FdQueued | State::Ready => {
                let moved = self.slots[idx as usize].res;
                let res = if moved > 0 {
                    moved
                } else {
                    -(libc::ECANCELED as i64)
                };
                self.complete(idx, res);
                self.nudge = true;
                moved <= 0
            }
            _ => false,
        }
    }

    /// Returns slot `idx` to the free list (its name becomes stale).
    #[inline(always)]
    pub(crate) fn free_slot(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        debug_assert_eq!(s.state, State::Done);
        s.state = State::Free;
        s.gen = s.gen.wrapping_add(1);
        if let Some(b) = s.orphan.take() {
            drop_orphan(b);
        }
        s.waker = None;
        s.mail = MailAddr::NONE;
        (s.detached, s.kept, s.keepers) = (false, false, 0);
        self.free.push(idx);
    }

    /// A C call that kept the request `idx` to read how it ended (see
    /// `Slot::keepers`) lets go of it: the last keeper frees it if done, or
    /// leaves it to free itself when done.
    pub(crate) fn let_go_kept(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        s.keepers = s.keepers.saturating_sub(1);
        if s.keepers > 0 {
            return;
        }
        if s.state == State::Done {
            self.free_slot(idx);
        } else {
            s.detached = true;
        }
    }

    /// Starts a `lio_listio` notification group of `n` members.
    pub(crate) fn new_list(&mut self, n: u32, notify: Notify) -> u32 {
        self.lists.open(n, notify)
    }

    fn list_member_done(&mut self, list: u32) {
        if let Some(n) = self.lists.member_done(list) {
            self.list_finished(list, n);
        }
    }

    /// Fires a list's notification (once) and frees the group.
    pub(crate) fn finish_list(&mut self, list: u32) {
        if let Some(n) = self.lists.finish(list) {
            self.list_finished(list, n);
        }
    }

    fn list_finished(&mut self, list: u32, n: Notify) {
        if let Some(f) = Fire::from_notify(n) {
            self.fires.push(f);
        }
        hook::list_end(list);
    }

    /// Slots of live requests on `fd`, an interrupted `LIO_WAIT` list's too
    /// (`aio_cancel(fd, NULL)` is the only way left to stop them), but not
    /// those a dropped handle gave up (the library's to end).
    pub(crate) fn on_fd(&self, fd: i32) -> Vec<(u32, u32)> {
        let given_up = |s: &Slot| s.detached && !s.kept;
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.state != State::Free && s.op.fd == fd && !given_up(s))
            .map(|(i, s)| (i as u32, s.gen))
            .collect()
    }

    /// Every request not yet done.
    pub(crate) fn unfinished(&self) -> Vec<(u32, u32)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !matches!(s.state, State::Free | State::Done))
            .map(|(i, s)| (i as u32, s.gen))
            .collect()
    }
}

/// `v.push(x)` where `v` has room for it: the reap's per-completion push in a
/// few instructions (`Vec::push`, with its growth path, is not inlined there).
#[inline(always)]
fn push_within_capacity<T>(v: &mut Vec<T>, x: T) {
    let len = v.len();
    assert!(len < v.capacity(), "push_within_capacity: no room");
    // SAFETY: `len < capacity` (checked above), so the slot at `len` is
    // allocated and unused; writing it and counting it keeps every element
    // initialised.
    unsafe {
        v.as_mut_ptr().add(len).write(x);
        v.set_len(len + 1);
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
