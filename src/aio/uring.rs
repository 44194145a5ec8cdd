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

use super::core::{user_data, Core, OpKind, RawOp};
use super::notify::Notify;

/// `user_data` of internal requests (cancels) whose completions are ignored.
const INTERNAL: u64 = u64::MAX;

/// Largest transfer one read or write asks for, as `read(2)` does (`MAX_RW_COUNT`).
pub(crate) const MAX_RW: usize = 0x7fff_f000;

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
            let entry = sqe(&s.op).user_data(user_data(idx, s.gen));
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

    /// The submission fast path, when the ring has room for every request of this
    /// submission and nothing waits in the priority queue (so order cannot
    /// matter): each request is allocated and, unless its fd's order gate holds it
    /// back, goes straight into the submission queue, skipping the ready queue.
    /// Returns how many entries were pushed. Call with the core lock held, then
    /// [`submit`](Ring::submit) after releasing it.
    pub(crate) fn push_direct(
        &self,
        core: &mut Core,
        ops: &mut dyn Iterator<Item = (RawOp, u8, Notify)>,
        list: u32,
        out: &mut Vec<(u32, u32)>,
    ) -> usize {
        let mut pushed = 0;
        // SAFETY: the submission queue is only touched under the core lock, which
        // the caller holds.
        let mut sq = unsafe { self.ring.submission_shared() };
        for (op, prio, notify) in ops {
            let (idx, gen) = core.alloc(op, prio, 0, notify, list);
            out.push((idx, gen));
            if !sq.is_full() && core.issue_now(idx) {
                let entry = sqe(&op).user_data(user_data(idx, gen));
                // SAFETY: as in `push_ready`: the buffer is owned by the runtime
                // until this request's completion is reaped.
                unsafe {
                    // Cannot fail: checked `is_full` above.
                    let _ = sq.push(&entry);
                }
                pushed += 1;
            } else {
                core.admit(idx, false);
            }
        }
        pushed
    }

    /// [`push_direct`](Ring::push_direct) for one request already allocated as
    /// `(idx, gen)`: true if it went into the submission queue.
    pub(crate) fn push_one(&self, core: &mut Core, idx: u32, gen: u32) -> bool {
        // SAFETY: the submission queue is only touched under the core lock, which
        // the caller holds.
        let mut sq = unsafe { self.ring.submission_shared() };
        if sq.is_full() || !core.issue_now(idx) {
            return false;
        }
        let entry = sqe(&core.slots[idx as usize].op).user_data(user_data(idx, gen));
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
    pub(crate) fn submit(&self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The entries stay in the SQ ring; the next enter takes them.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
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
            let (idx, gen) = super::core::split_user_data(ud);
            let Some(s) = core.slots.get_mut(idx as usize) else {
                continue;
            };
            if s.gen != gen || s.state != super::core::State::Issued {
                continue;
            }
            let res = cqe.result() as i64;
            // `s.res` holds the bytes written by earlier rounds of this request.
            if s.op.kind == OpKind::Write && res > 0 && (res as usize) < s.op.len {
                // A short write (io_uring gives one on a pipe or socket that fills
                // up): write(2) on a blocking fd would go on until every byte is
                // written, and so does aio_write: issue the rest, same request.
                s.res += res;
                s.op.ptr += res as usize;
                s.op.len -= res as usize;
                if !s.op.ordered {
                    s.op.offset += res;
                }
                let entry = sqe(&s.op).user_data(ud);
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
                let mut pfd = libc::pollfd {
                    fd: self.ring.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = t.as_millis().min(i32::MAX as u128) as i32;
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, ms.max(1)) };
                Ok(0)
            }
            None => self.ring.submitter().submit_and_wait(1),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                ) =>
            {
                Ok(())
            }
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
            Some(t) => {
                let mut pfd = libc::pollfd {
                    fd: self.ring.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = t.as_millis().min(i32::MAX as u128) as i32;
                // SAFETY: one valid pollfd.
                if unsafe { libc::poll(&mut pfd, 1, ms.max(1)) } < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(0)
                }
            }
            None => self.ring.submitter().submit_and_wait(1),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Reads and writes at least this large go to the kernel's workers
/// (`IOSQE_ASYNC`): io_uring would otherwise copy a cached transfer inline, in
/// the submitting thread's `io_uring_enter`, and a 10 MiB `aio_read` would
/// return only once its data is there. Smaller ones stay inline (the 4 KiB
/// round trip is the floor the engine is measured against).
const INLINE_MAX: usize = 256 * 1024;

fn sqe(op: &RawOp) -> squeue::Entry {
    let e = sqe_inline(op);
    if matches!(op.kind, OpKind::Read | OpKind::Write) && op.len >= INLINE_MAX {
        e.flags(squeue::Flags::ASYNC)
    } else {
        e
    }
}

fn sqe_inline(op: &RawOp) -> squeue::Entry {
    let fd = types::Fd(op.fd);
    let len = op.len.min(MAX_RW) as u32;
    match op.kind {
        OpKind::Read => opcode::Read::new(fd, op.ptr as *mut u8, len)
            .offset(op.offset as u64)
            .build(),
        OpKind::Write => {
            // Ordered writes (O_APPEND, streams) use the current position: -1.
            let off = if op.ordered {
                u64::MAX
            } else {
                op.offset as u64
            };
            opcode::Write::new(fd, op.ptr as *const u8, len)
                .offset(off)
                .build()
        }
        OpKind::Fsync => opcode::Fsync::new(fd).build(),
        OpKind::Fdatasync => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
    }
}
