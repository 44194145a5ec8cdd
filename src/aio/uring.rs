//! The io_uring backend: the submission and completion queues are shared under the
//! engine mutex; a thread that waits becomes the *reaper* and blocks in
//! `io_uring_enter` itself, so a synchronous wait costs no thread hand-off.
//!
//! Ordering on `O_APPEND` and non-seekable fds is kept by per-fd serialisation in
//! the core (one ordered request in the kernel per fd at a time), not by
//! `IOSQE_IO_LINK`, because links cannot span separate submissions.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use super::table::{user_data, Core, OpKind, Slot, MAX_RW};
use crate::sys::prio::SchedClass;

/// `user_data` of internal requests (cancels) whose completions are ignored.
const INTERNAL: u64 = u64::MAX;

pub(crate) struct Ring {
    ring: IoUring,
    /// Requests the kernel may hold at once; the rest wait in the core's queue.
    pub capacity: u32,
    ext_arg: bool,
}

impl Ring {
    /// `io_uring_setup`.
    pub(crate) fn new(entries: u32) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_cqsize(entries * 2)
            .build(entries)?;
        let ext_arg = ring.params().is_feature_ext_arg();
        let capacity = ring.params().sq_entries();
        Ok(Ring {
            ring,
            capacity,
            ext_arg,
        })
    }

    /// Moves ready requests into the submission queue (up to capacity) and
    /// submits them. Call with the core lock held.
    pub(crate) fn issue(&self, core: &mut Core) -> io::Result<()> {
        if self.push_ready(core) > 0 {
            self.submit()?;
        }
        Ok(())
    }

    /// Moves ready requests into the submission queue (up to capacity) without
    /// entering the kernel; returns how many. Call with the core lock held, then
    /// [`submit`](Ring::submit) after releasing it, so the inline part of the I/O
    /// (a cached read's copy) does not run under the lock.
    pub(crate) fn push_ready(&self, core: &mut Core) -> usize {
        let mut pushed = 0;
        // SAFETY: the submission queue is only touched under the core lock, which
        // the caller holds.
        let mut sq = unsafe { self.ring.submission_shared() };
        while core.inflight < self.capacity && !sq.is_full() {
            let Some(idx) = core.pop_ready() else { break };
            let s = &core.slots[idx as usize];
            let entry = sqe(s).user_data(user_data(idx, s.gen));
            // SAFETY: the buffer (ptr, len) is owned by the runtime until this
            // request completes: its handle holds it or the slot's orphan does, and
            // neither is released before the completion is reaped.
            unsafe {
                // Cannot fail: checked `is_full` above.
                let _ = sq.push(&entry);
            }
            pushed += 1;
        }
        pushed
    }

    /// The submission fast path, when the ring has room for every request of a
    /// submission and nothing waits in the priority queue (so order cannot
    /// matter): request `(idx, gen)`, just allocated, goes straight into the
    /// submission queue unless its fd's order gate holds it back. True if it did.
    /// Call with the core lock held, then [`submit`](Ring::submit) after
    /// releasing it.
    #[inline]
    pub(crate) fn push_one(&self, core: &mut Core, idx: u32, gen: u32) -> bool {
        // SAFETY: the submission queue is only touched under the core lock, which
        // the caller holds.
        let mut sq = unsafe { self.ring.submission_shared() };
        if sq.is_full() || !core.issue_now(idx) {
            return false;
        }
        let entry = sqe(&core.slots[idx as usize]).user_data(user_data(idx, gen));
        // SAFETY: as in `push_ready`: the buffer is owned by the runtime until this
        // request's completion is reaped.
        unsafe {
            // Cannot fail: checked `is_full` above.
            let _ = sq.push(&entry);
        }
        true
    }

    /// Submits whatever is in the submission queue (any thread, lock not needed:
    /// the kernel takes only entries published under the lock).
    ///
    /// EBUSY (the completion queue overflowed) leaves entries in the SQ ring:
    /// the caller reaps and submits again, since a request must reach the
    /// kernel before the call that submitted it returns (see `BorrowFd`).
    pub(crate) fn submit(&self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// True if entries wait in the submission queue (not yet taken by the
    /// kernel). Call with the core lock held.
    pub(crate) fn sq_pending(&self) -> bool {
        // SAFETY: under the core lock (see `issue`).
        unsafe { !self.ring.submission_shared().is_empty() }
    }

    /// Pushes request `(idx, gen)` again as it now stands (a probe read retried at
    /// offset -1). Call with the core lock held; false if the queue is full.
    pub(crate) fn push_again(&self, core: &Core, idx: u32, gen: u32) -> bool {
        let entry = sqe(&core.slots[idx as usize]).user_data(user_data(idx, gen));
        // SAFETY: under the core lock; the buffer is owned by the runtime until
        // the request completes, as in `push_ready`.
        unsafe { self.ring.submission_shared().push(&entry) }.is_ok()
    }

    /// Drains the completion queue into the core. Call with the core lock held and
    /// only when no other thread is the reaper (or as the reaper).
    #[inline]
    pub(crate) fn reap(&self, core: &mut Core) -> usize {
        let mut n = 0;
        let mut more = false;
        // SAFETY: the completion queue is only touched under the core lock, by one
        // thread at a time (see the reaper rule in the engine).
        let cq = unsafe { self.ring.completion_shared() };
        for cqe in cq {
            let ud = cqe.user_data();
            if ud == INTERNAL {
                continue;
            }
            let (idx, gen) = super::table::split_user_data(ud);
            let Some(s) = core.slots.get_mut(idx as usize) else {
                continue;
            };
            if s.gen != gen || s.state != super::table::State::Issued {
                continue;
            }
            let mut res = cqe.result() as i64;
            if res == -(libc::ESPIPE as i64) && s.probe && s.op.kind == OpKind::Read {
                // A probe read at an offset on a socket: the submitter, still in
                // its call, issues it again at offset -1.
                s.espipe = true;
                continue;
            }
            if res == -(libc::ECANCELED as i64) && s.eagain {
                // Cancelled because it would block on an O_NONBLOCK fd.
                res = -(libc::EAGAIN as i64);
            }
            // `s.res` holds the bytes written by earlier rounds of this request.
            // The rest is issued again only on the request's own fd copy (the
            // caller's number may be closed by now).
            if s.op.kind == OpKind::Write
                && res > 0
                && (res as usize) < s.op.len
                && s.own_fd.is_some()
            {
                // A short write (io_uring gives one on a pipe or socket that fills
                // up): write(2) on a blocking fd would go on until every byte is
                // written, and so does aio_write: issue the rest, same request.
                s.res += res;
                s.op.ptr += res as usize;
                s.op.len -= res as usize;
                if !s.op.ordered {
                    s.op.offset += res;
                }
                let entry = sqe(s).user_data(ud);
                // SAFETY: the submission queue is only touched under the core
                // lock, which the caller holds; the rest of the buffer is owned
                // by the runtime until this request completes, as in `push_ready`.
                // (If the queue is full of internal entries the push fails and the
                // request ends below with the bytes written so far.)
                let pushed = unsafe { self.ring.submission_shared().push(&entry) }.is_ok();
                if pushed {
                    more = true;
                    continue;
                }
                let total = s.res;
                core.complete(idx, total);
                n += 1;
                continue;
            }
            // An error after part of the data was written reports the part, as
            // write(2) does.
            let total = match (res, s.res) {
                (r, done) if r >= 0 => done + r,
                (_, done) if done > 0 => done,
                (r, _) => r,
            };
            core.complete(idx, total);
            n += 1;
        }
        if more {
            let _ = self.submit();
        }
        n
    }

    /// Blocks until at least one completion is posted, or `timeout` passes.
    /// Call WITHOUT the core lock, as the reaper.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> io::Result<()> {
        let r = match timeout {
            Some(t) if self.ext_arg => {
                let ts = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            Some(t) => {
                // Old kernels: poll the ring fd instead of a timed enter.
                poll_ring(&self.ring, t)
            }
            None => self.ring.submitter().submit_and_wait(1),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => Ok(()),
            // EINTR: a signal handler ran; the caller decides (POSIX waits
            // return it, internal waits go on).
            Err(e) => Err(e),
        }
    }

    /// Synchronous cancel of one issued request (`IORING_REGISTER_SYNC_CANCEL`).
    /// A request that is running (a kernel worker is copying, or a poll wake-up is
    /// being handled) is waited for at most a few milliseconds: ETIME then means
    /// it could not be cancelled. Call WITHOUT the core lock.
    pub(crate) fn cancel_sync(&self, ud: u64) -> io::Result<()> {
        let r = self.ring.submitter().register_sync_cancel(
            Some(types::Timespec::new().nsec(20_000_000)),
            types::CancelBuilder::user_data(ud),
        );
        match r {
            // Kernels before 6.0: fall back to an async cancel.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(e),
            other => other,
        }
    }

    /// Posts a no-op completion so that a reaper sleeping in `io_uring_enter`
    /// wakes up and looks at the request table again. Call with the core lock held.
    pub(crate) fn nudge(&self) {
        {
            // SAFETY: under the core lock (see `issue`).
            let mut sq = unsafe { self.ring.submission_shared() };
            let e = opcode::Nop::new().build().user_data(INTERNAL);
            // SAFETY: a no-op refers to no user memory.
            if unsafe { sq.push(&e) }.is_err() {
                return;
            }
        }
        let _ = self.submit();
    }

    /// Queues an asynchronous cancel of `ud` without waiting for it. Call with the
    /// core lock held.
    pub(crate) fn cancel_async(&self, ud: u64) {
        {
            // SAFETY: under the core lock (see `issue`).
            let mut sq = unsafe { self.ring.submission_shared() };
            let e = opcode::AsyncCancel::new(ud).build().user_data(INTERNAL);
            // SAFETY: a cancel entry refers to no user memory.
            if unsafe { sq.push(&e) }.is_err() {
                return;
            }
        }
        let _ = self.submit();
    }

    /// Cancels every issued request and waits for their completions to be posted
    /// (bounded). Call WITHOUT the core lock.
    pub(crate) fn cancel_everything(&self, timeout: Duration) {
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let _ = self
            .ring
            .submitter()
            .register_sync_cancel(Some(ts), types::CancelBuilder::any());
    }

    /// Registers `fd` to be signalled on every completion.
    pub(crate) fn register_eventfd(&self, fd: &OwnedFd) -> io::Result<()> {
        self.ring.submitter().register_eventfd(fd.as_raw_fd())
    }

    /// [`wait`](Ring::wait) for the C ABI, which must report a signal handler run
    /// during the wait: EINTR is returned, not swallowed. Call WITHOUT the core
    /// lock, as the reaper.
    pub(crate) fn wait_interruptible(&self, timeout: Option<Duration>) -> io::Result<()> {
        let r = match timeout {
            Some(t) if self.ext_arg => {
                let ts = types::Timespec::new()
                    .sec(t.as_secs())
                    .nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            Some(t) => poll_ring(&self.ring, t),
            None => self.ring.submitter().submit_and_wait(1),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `IORING_REGISTER_IOWQ_AFF`: the CPUs the ring's kernel workers (io-wq)
    /// may run on.
    pub(crate) fn set_worker_affinity(&self, set: &libc::cpu_set_t) -> io::Result<()> {
        self.ring.submitter().register_iowq_aff(set)
    }

    /// `IORING_REGISTER_IOWQ_MAX_WORKERS`: at most `bounded` kernel workers for
    /// bounded work (regular files, block devices) and `unbounded` for unbounded
    /// work (sockets, pipes) per NUMA node (0 leaves a limit unchanged).
    pub(crate) fn set_max_workers(&self, bounded: u32, unbounded: u32) -> io::Result<()> {
        let mut v = [bounded, unbounded];
        self.ring.submitter().register_iowq_max_workers(&mut v)
    }
}

/// `poll` on the ring's fd for at most `t` (kernels without timed enter).
fn poll_ring(ring: &IoUring, t: Duration) -> io::Result<usize> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    // SAFETY: the ring's fd is open as long as `ring`, which outlives the call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(ring.as_raw_fd()) };
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let t = t.max(Duration::from_millis(1));
    let ts = Timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: t.subsec_nanos() as _,
    };
    poll(&mut fds, Some(&ts)).map_err(io::Error::from)
}

/// Reads and writes at least this large go to the kernel's workers
/// (`IOSQE_ASYNC`): io_uring would otherwise copy a cached transfer inline, in
/// the submitting thread's `io_uring_enter`, and a 10 MiB `aio_read` would
/// return only once its data is there. Smaller ones stay inline (the 4 KiB
/// round trip is the floor the engine is measured against).
const INLINE_MAX: usize = 256 * 1024;

/// The submission queue entry of a request (see [`sqe_inline`]), sent to the
/// kernel's workers when it is a large transfer from a SCHED_OTHER submitter. A
/// real-time submitter's stays inline: the kernel's io-wq workers are created
/// from the submitting thread and take its class, so a worker would run at the
/// submitter's priority, above the request's effective one.
#[inline]
fn sqe(s: &Slot) -> squeue::Entry {
    let e = sqe_inline(s);
    if punted(s.op.kind, s.op.len, s.class) {
        e.flags(squeue::Flags::ASYNC)
    } else {
        e
    }
}

/// Whether a request goes to the kernel's workers (`IOSQE_ASYNC`, see [`sqe`]).
/// The kernel then looks its fd number up only when a worker starts it, after
/// the submitting call has returned, so such a request is given its own fd copy
/// first (`Prepared::own`): the caller's number may name another file by then.
pub(super) fn punted(kind: OpKind, len: usize, class: SchedClass) -> bool {
    matches!(kind, OpKind::Read | OpKind::Write) && len >= INLINE_MAX && !class.is_rt()
}

/// The submission queue entry of a request, as its slot stands: its own fd copy
/// if it has one, offset -1 on a non-seekable fd, `RWF_NOWAIT` on an
/// `O_NONBLOCK` one, `IOPRIO_CLASS_RT` for a real-time submitter.
#[inline]
fn sqe_inline(s: &Slot) -> squeue::Entry {
    let op = &s.op;
    let fd = types::Fd(s.io_fd());
    let len = op.len.min(MAX_RW) as u32;
    let stream = s.fd_kind.is_some_and(|k| k.is_stream());
    let nowait = if s.nonblock && stream {
        libc::RWF_NOWAIT
    } else {
        0
    };
    match op.kind {
        OpKind::Read => {
            // Non-seekable: the offset means nothing (a socket refuses one).
            let off = if stream { u64::MAX } else { op.offset as u64 };
            opcode::Read::new(fd, op.ptr as *mut u8, len)
                .offset(off)
                .rw_flags(nowait)
                .ioprio(ioprio(s))
                .build()
        }
        OpKind::Write => {
            // Ordered writes (O_APPEND, streams) use the current position: -1.
            let off = if op.ordered || stream {
                u64::MAX
            } else {
                op.offset as u64
            };
            opcode::Write::new(fd, op.ptr as *const u8, len)
                .offset(off)
                .rw_flags(nowait)
                .ioprio(ioprio(s))
                .build()
        }
        OpKind::Fsync => opcode::Fsync::new(fd).build(),
        OpKind::Fdatasync => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
    }
}

/// `IOPRIO_CLASS_RT` with a level from the effective priority for a real-time
/// request; 0 (the submitter's own I/O priority) otherwise.
#[inline]
fn ioprio(s: &Slot) -> u16 {
    if s.class.is_rt() {
        crate::sys::prio::ioprio_rt(s.class.priority)
    } else {
        0
    }
}
