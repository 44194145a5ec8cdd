//! One io_uring instance of a context ([`super::uring::Ring`] holds them):
//! its queues, the count of entries pushed and taken that tells whether it
//! must be entered, the enter and the wait, and the reaping of its completions
//! into the core (under the core lock).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use io_uring::{squeue, IoUring};

use super::sqe::sqe_again;
use super::table::{Core, OpKind};
use crate::sys::io::FdKind;
use crate::sys::ringfd::{self, RingId};

/// `user_data` of internal requests (cancels) whose completions are ignored.
pub(super) const INTERNAL: u64 = u64::MAX;

/// One io_uring instance.
pub(super) struct Shard {
    /// Names the ring for the threads that enter it by a registered index;
    /// dropped before `ring` (whose fd it needs).
    id: RingId,
    pub(super) ring: IoUring,
    /// Its place among the context's rings.
    pub(super) index: u8,
    /// Entries pushed into the submission queue (under the core lock), and
    /// entries the kernel took (the sum of what each enter reports): a ring
    /// whose every entry was taken needs no enter.
    pushed: AtomicU64,
    taken: AtomicU64,
    /// The thread whose `Ring::pick` chose this ring last (see
    /// `uring::thread_token`): the ring it goes back to. (Entries pushed
    /// otherwise, a new ring's no-op, a retry, a cancel, do not change it.)
    pub(super) owner: AtomicUsize,
    /// The ring was set up with `IORING_SETUP_COOP_TASKRUN` (see `build`).
    #[cfg_attr(not(test), allow(dead_code))]
    coop: bool,
}

impl Shard {
    pub(super) fn new(entries: u32, index: u8) -> io::Result<Shard> {
        let (ring, coop) = build(entries)?;
        Ok(Shard {
            id: RingId::new(ring.as_raw_fd()),
            ring,
            index,
            pushed: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            owner: AtomicUsize::new(0),
            coop,
        })
    }

    /// Pushes `e` into the submission queue; false if it is full.
    ///
    /// # Safety
    /// The caller holds the core lock (the only one that touches the queue),
    /// and whatever memory `e` names stays valid until its completion is
    /// reaped.
    #[inline]
    pub(super) unsafe fn push(&self, e: &squeue::Entry) -> bool {
        // SAFETY: the queue is touched under the core lock only; `e`'s memory
        // is the caller's contract.
        let ok = unsafe { self.ring.submission_shared().push(e) }.is_ok();
        if ok {
            self.count_pushed(1);
        }
        ok
    }

    /// Counts `n` entries pushed (under the core lock: one writer).
    #[inline]
    pub(super) fn count_pushed(&self, n: u64) {
        let p = self.pushed.load(Ordering::Relaxed);
        self.pushed.store(p + n, Ordering::Release);
    }

    /// True if an entry pushed may not have been taken by the kernel yet: a
    /// thread is entering the ring, or is about to.
    #[inline]
    pub(super) fn busy(&self) -> bool {
        self.taken.load(Ordering::Acquire) < self.pushed.load(Ordering::Acquire)
    }

    /// Entries waiting in the submission queue. Under the core lock.
    pub(super) fn sq_len(&self) -> usize {
        // SAFETY: under the core lock, as `push`.
        unsafe { self.ring.submission_shared().len() }
    }

    /// True if entries wait in the submission queue. Under the core lock.
    pub(super) fn sq_pending(&self) -> bool {
        // SAFETY: under the core lock, as `push`.
        unsafe { !self.ring.submission_shared().is_empty() }
    }

    /// Enters the ring if an entry pushed so far may not have been taken. An
    /// entry counted as taken is in the kernel, so when this returns Ok every
    /// entry pushed before the call is.
    #[inline]
    pub(super) fn submit(&self) -> io::Result<()> {
        if !self.busy() {
            return Ok(());
        }
        loop {
            match ringfd::enter(&self.id, self.untaken(), 0, None) {
                Ok(n) => {
                    self.took(n);
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Entries pushed and not yet counted as taken: what an enter submits
    /// (more than the queue holds if another thread's enter took some and has
    /// not counted them yet; the kernel submits what is there, and skips the
    /// wait of an enter that asked for more: the waiter then looks again).
    #[inline]
    pub(super) fn untaken(&self) -> u32 {
        let taken = self.taken.load(Ordering::Acquire);
        let pushed = self.pushed.load(Ordering::Acquire);
        pushed.saturating_sub(taken).min(u64::from(u32::MAX)) as u32
    }

    /// Counts `n` entries taken by an enter.
    #[inline]
    pub(super) fn took(&self, n: usize) {
        self.taken.fetch_add(n as u64, Ordering::AcqRel);
    }

    /// Blocks in `io_uring_enter` until a completion is posted or `timeout`
    /// passes (submitting what waits in the queue). With `sigmask`, the
    /// thread's signal mask while it sleeps, in `ppoll` on the ring's fd.
    pub(super) fn wait(
        &self,
        timeout: Option<Duration>,
        ext_arg: bool,
        sigmask: Option<&libc::sigset_t>,
    ) -> io::Result<()> {
        if timeout.is_some() && !ext_arg {
            // Old kernels: poll the ring fd instead of a timed enter.
            return poll_rings([self], timeout, sigmask);
        }
        // The count to submit may include entries a concurrent enter took and
        // has not counted yet. The kernel then submits fewer and returns
        // without waiting: wait again with nothing to submit, rather than come
        // back to a caller that would loop (spinning, at a real-time priority,
        // until the other thread runs and counts them).
        let want = self.untaken();
        if sigmask.is_some() {
            // A wait that must see every handler that runs while it sleeps
            // does not sleep in `io_uring_enter`: an enter returns 0 (or the
            // count it submitted) when completions are there at its end,
            // also after a signal woke it and its handler ran (kernel 6.18,
            // `io_cqring_wait`). `ppoll` on the ring's fd returns EINTR when
            // the handler ran, and otherwise leaves the signal pending (the
            // caller looks for it). So: submit, then poll.
            if want > 0 {
                match ringfd::enter(&self.id, want, 0, None) {
                    Ok(n) => self.took(n),
                    // (As below: the caller comes back, and submits again.)
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            return poll_rings([self], timeout, sigmask);
        }
        let mut r = ringfd::enter(&self.id, want, 1, timeout);
        if let Ok(n) = r {
            self.took(n);
            if n != want as usize {
                r = ringfd::enter(&self.id, 0, 1, timeout);
            }
        }
        match r {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Stops (`quiet`) or restarts the kernel's signal of the registered
    /// eventfd for this ring's completions (`IORING_CQ_EVENTFD_DISABLED`, a flag
    /// in the shared completion ring: no system call). Under the core lock.
    pub(super) fn set_eventfd_quiet(&self, quiet: bool) {
        // SAFETY: under the core lock, as `reap`; only the flags are touched.
        let cq = unsafe { self.ring.completion_shared() };
        if quiet {
            cq.disable_eventfd();
        } else {
            cq.enable_eventfd();
        }
        // (Nothing was read: the head stays as it is.)
        std::mem::forget(cq);
    }

    /// The result of request `ud` if its completion waits in this ring's
    /// queue. Consumes nothing. Under the core lock (only its holder drains a
    /// queue), so the view stays valid while the reaper sleeps.
    pub(super) fn peek(&self, ud: u64) -> Option<i32> {
        // SAFETY: under the core lock, as `reap`.
        let mut cq = unsafe { self.ring.completion_shared() };
        let found = cq
            .by_ref()
            .find(|c| c.user_data() == ud)
            .map(|c| c.result());
        // Dropping the view would move the queue's head past what it read.
        std::mem::forget(cq);
        found
    }

    /// Drains this ring's completion queue into the core (counting completions
    /// in `n`); true if it pushed entries (the rest of a short write) to enter.
    /// Under the core lock, by the reaper or with no reaper.
    pub(super) fn reap(&self, core: &mut Core, n: &mut usize) -> bool {
        let mut more = false;
        let shutdown = core.shutdown;
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
            let res = cqe.result() as i64;
            if res > 0 && crate::sys::valgrind::running() && s.op.kind == OpKind::Read {
                // (What the kernel wrote through the ring, unseen by memcheck.)
                crate::sys::valgrind::make_mem_defined(s.op.ptr as *const u8, res as usize);
            }
            if res >= 0
                && !s.recheck
                && (s.op.kind != OpKind::Write
                    || (s.own_fd.is_none() && !(s.op.ordered && (res as usize) < s.op.len)))
            {
                // The plain case, done: a success issues nothing again (no
                // errno below matches it), and only a short write on the
                // request's own fd copy or an ordered one (a C write to a
                // stream) or a C read sent with RWF_NOWAIT (`recheck`) goes on
                // for the rest.
                let total = s.res + res;
                core.complete(idx, total);
                *n += 1;
                continue;
            }
            more |= self.reap_rare(core, idx, ud, res, shutdown, n);
        }
        more
    }

    /// The rest of [`reap`](Self::reap) for a completion that is not a plain
    /// one (an error, a short transfer, a C read sent with `RWF_NOWAIT`):
    /// out of line, so that the common path keeps a small loop. The slot
    /// `idx` is issued under the name `ud`; `res` is its result. True if it
    /// was issued again (an entry pushed).
    #[inline(never)]
    fn reap_rare(
        &self,
        core: &mut Core,
        idx: u32,
        ud: u64,
        res: i64,
        shutdown: bool,
        n: &mut usize,
    ) -> bool {
        let mut res = res;
        let s = &mut core.slots[idx as usize];
        if res == -(libc::ESPIPE as i64) && s.skip_espipe {
            // Issued again at offset -1 by its submitter, which saw this
            // completion in the queue (see `Inner::settle_probes`).
            s.skip_espipe = false;
            return false;
        }
        // What this completion tells of its fd number, for the next reads
        // of it: recorded in the core right after the match below (which
        // holds the slot), not pushed into a list that grows (a reap may run
        // in a signal handler, where nothing may allocate: see
        // `aio/capi/release.rs`).
        let mut mark = None;
        // Issued again at once, as its slot now stands, on the request's
        // own fd copy (a read that ran on a kernel worker), or on a C
        // request's fd, which its caller keeps open: a socket read at an
        // offset refused with ESPIPE after its submitting call (or, a C
        // read that is not a probe, reaped inside it), without the
        // offset (a probe's submitter issues it again: below); a
        // transfer on an O_NONBLOCK terminal, which refuses RWF_NOWAIT
        // (EOPNOTSUPP), without it (the kernel then honours O_NONBLOCK
        // itself there);
        // a real-time request refused its I/O class, without it.
        let again = match -res as i32 {
            libc::ESPIPE
                if s.op.kind == OpKind::Read
                    && (s.own_fd.is_some() || (s.aiocb != 0 && !s.probe && !s.cancel_req)) =>
            {
                s.fd_kind = Some(FdKind::StreamSocket);
                s.espipe = false;
                // The number names a socket now: its next reads are probes
                // instead of taking this round trip again.
                mark = Some((s.op.fd, Mark::Stream));
                true
            }
            // (Asked to cancel: the refusal was only the engine's
            // question, and the request ends cancelled instead of going
            // on, as in the kernel it would have.)
            libc::EOPNOTSUPP | libc::EPERM
                if s.cancel_req && resent_unless_cancelled(s, -res as i32) =>
            {
                res = -(libc::ECANCELED as i64);
                false
            }
            libc::EOPNOTSUPP if s.nonblock && (s.own_fd.is_some() || s.aiocb != 0) => {
                s.nonblock = false;
                true
            }
            // The real-time I/O class refused (a thread without the
            // capability the process was thought to have): none from now.
            // A probe is reaped inside its submitting call, which keeps
            // the caller's fd open.
            libc::EPERM
                if s.class.is_rt()
                    && crate::sys::prio::rt_ioprio_allowed()
                    && (s.own_fd.is_some() || s.aiocb != 0 || s.probe) =>
            {
                crate::sys::prio::rt_ioprio_refused();
                true
            }
            // A C read sent with RWF_NOWAIT to a number last seen to name
            // a regular file: the number may name a pipe or socket now.
            // The caller keeps its fd open until the read is done.
            libc::EAGAIN if s.recheck && !s.cancel_req && !shutdown => {
                s.recheck = false;
                match look_again(s.op.fd) {
                    Some((kind, nonblock)) if kind.is_stream() => {
                        // As glibc's read(2): EAGAIN on an O_NONBLOCK one,
                        // else a read that waits (offset -1).
                        s.fd_kind = Some(kind);
                        s.nonblock = nonblock;
                        mark = Some((s.op.fd, Mark::Stream));
                        !nonblock
                    }
                    // Still a file (a read not in the page cache), or
                    // closed (the kernel says EBADF): issued as usual.
                    _ => true,
                }
            }
            // A file that does not take RWF_NOWAIT (procfs, sysfs, ...):
            // issued as usual, and later reads of its number are probes.
            // Or a terminal now (which refuses it too): issued without it
            // (the kernel honours its O_NONBLOCK).
            libc::EOPNOTSUPP if s.recheck && !s.cancel_req && !shutdown => {
                s.recheck = false;
                match look_again(s.op.fd) {
                    Some((kind, _)) if kind.is_stream() => {
                        s.fd_kind = Some(kind);
                        mark = Some((s.op.fd, Mark::Stream));
                    }
                    _ => mark = Some((s.op.fd, Mark::NoNowait)),
                }
                true
            }
            // Ended by the kernel, not by a cancel of ours: the thread whose
            // `io_uring_enter` submitted it (this request's submitter, or
            // another thread that entered the ring first) has exited. The
            // kernel cancels what had not started (ECANCELED: it waited for
            // its fd or a kernel worker) and finishes what had without the
            // process's memory (EFAULT: a buffered read whose page came from
            // the disk). A POSIX request belongs to the process: issue it
            // again, on its own fd copy, or on the caller's fd: a probe's,
            // which its submitting call, still running, keeps open, or a C
            // request's, which its caller keeps open until it is done (as
            // glibc's helper threads need too; it may have been entered by
            // a thread that called the library after its submission). The
            // reaping thread enters it again; a second EFAULT is the
            // caller's buffer unless that thread has exited too. (Other
            // requests without an fd copy are waited for by their thread's
            // exit instead: see `exit_wait.rs`.)
            e @ (libc::ECANCELED | libc::EFAULT)
                if !s.cancel_req
                    && !shutdown
                    && (s.own_fd.is_some() || s.probe || s.aiocb != 0)
                    && !(if e == libc::EFAULT {
                        s.refaulted && !thread_gone(s.reentered_by)
                    } else {
                        s.eagain
                    }) =>
            {
                s.refaulted |= e == libc::EFAULT;
                // Entered again by this thread (`Ring::reap`).
                s.reentered_by = crate::sys::tid::current();
                true
            }
            _ => false,
        };
        let s = match mark {
            Some((fd, m)) => {
                m.record(core, fd);
                &mut core.slots[idx as usize]
            }
            None => s,
        };
        if again {
            let entry = sqe_again(s).user_data(ud);
            // SAFETY: under the core lock, which the caller holds; the buffer
            // is owned by the runtime until this request completes.
            if unsafe { self.push(&entry) } {
                return true;
            }
        }
        if res == -(libc::ESPIPE as i64) && s.probe && s.op.kind == OpKind::Read {
            // A probe read at an offset on a socket: the submitter, still in
            // its call, issues it again at offset -1.
            s.espipe = true;
            return false;
        }
        if res == -(libc::ECANCELED as i64) && s.eagain {
            // Cancelled because it would block on an O_NONBLOCK fd, or
            // waited for data to read none (see `Inner::settle_probes`).
            res = if s.op.len == 0 {
                0
            } else {
                -(libc::EAGAIN as i64)
            };
        }
        if s.recheck && matches!(-res as i32, libc::EAGAIN | libc::EOPNOTSUPP) {
            // Cancelled before the reaper looked at it (above): what
            // RWF_NOWAIT said was only the engine's question.
            res = -(libc::ECANCELED as i64);
        }
        // `s.res` holds the bytes moved by earlier rounds of this request.
        // The rest is issued again, same request:
        // - after a short write (io_uring gives one on a pipe or socket that
        //   fills up): write(2) on a blocking fd would go on until every
        //   byte is written, and so does aio_write; on the request's own
        //   fd copy (the caller's number may be closed by now), or a C
        //   write's fd, which its caller keeps open until it is done;
        // - after a short C read sent with RWF_NOWAIT, which stops at the
        //   first page not in the page cache (so on a page boundary; one
        //   cut short by the end of the file mostly is not): the rest is
        //   read as usual (0 bytes more at the end of the file), on the
        //   caller's fd, which the caller keeps open, unless the number
        //   names a pipe or socket now (whose short read is the answer).
        let rest = res > 0
            && (res as usize) < s.op.len
            && match s.op.kind {
                // A write on its own fd copy to a pipe, socket or
                // terminal (one to a regular file or block device is cut
                // where write(2) cuts it: `MAX_RW`, past which io_uring
                // caps it too), unless a cancel asked it to stop (it
                // ends with the bytes moved, as on the thread engine). A
                // C write on the caller's fd, which it keeps open: an
                // ordered one (O_APPEND or a stream) on a blocking pipe,
                // socket or terminal (looked at on this short path only).
                OpKind::Write => {
                    (s.own_fd.is_some()
                        && s.fd_kind.is_some_and(FdKind::is_stream)
                        && !s.cancel_req
                        && !shutdown)
                        || (s.aiocb != 0
                            && s.op.ordered
                            && !s.nonblock
                            && !s.cancel_req
                            && !shutdown
                            && look_again(s.op.fd).is_some_and(|(k, nb)| k.is_stream() && !nb))
                }
                OpKind::Read => {
                    s.recheck
                        && !s.cancel_req
                        && !shutdown
                        && (s.op.offset + res) % rustix::param::page_size() as i64 == 0
                        && look_again(s.op.fd).is_some_and(|(k, _)| !k.is_stream())
                }
                _ => false,
            };
        if rest {
            s.recheck = false;
            s.res += res;
            s.op.ptr += res as usize;
            s.op.len -= res as usize;
            if !s.op.ordered {
                s.op.offset += res;
            }
            let entry = sqe_again(s).user_data(ud);
            // SAFETY: under the core lock, which the caller holds; the rest of
            // the buffer is owned by the runtime until this request completes,
            // as in `push_ready`. (If the queue is full of internal entries the
            // push fails and the request ends below with the bytes moved so
            // far.)
            if unsafe { self.push(&entry) } {
                return true;
            }
            let total = s.res;
            core.complete(idx, total);
            *n += 1;
            return false;
        }
        // An error after part of the data was written reports the part, as
        // write(2) does.
        let total = match (res, s.res) {
            (r, done) if r >= 0 => done + r,
            (_, done) if done > 0 => done,
            (r, _) => r,
        };
        core.complete(idx, total);
        *n += 1;
        false
    }
}

/// What a reap learnt about an fd number, for the next reads of it.
#[derive(Clone, Copy)]
enum Mark {
    /// It names a pipe or socket now: its next reads are probes.
    Stream,
    /// Its file refuses `RWF_NOWAIT`: its next reads go without.
    NoNowait,
}

impl Mark {
    /// Records the mark of fd number `fd` in the core.
    #[inline(never)]
    fn record(self, core: &mut Core, fd: i32) {
        match self {
            Mark::Stream => core.set_fd_not_pollable(fd, false),
            Mark::NoNowait => core.set_fd_refuses_nowait(fd, OpKind::Read),
        }
    }
}

/// The most rings one context uses.
pub(crate) const MAX_RINGS: usize = 8;

/// `poll` on the fds of `rings` (at most [`MAX_RINGS`]) until one has a
/// completion, for at most `t` (forever without). Ok on a completion or the
/// timeout; EINTR if a signal handler ran. With `sigmask`, the thread's
/// signal mask while it sleeps. Allocates nothing: a C `aio_suspend` may
/// sleep here in a signal handler (see `aio/capi/release.rs`).
pub(super) fn poll_rings<'a>(
    rings: impl IntoIterator<Item = &'a Shard>,
    t: Option<Duration>,
    sigmask: Option<&libc::sigset_t>,
) -> io::Result<()> {
    let mut pfds = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; MAX_RINGS];
    let mut n = 0;
    for (p, s) in pfds.iter_mut().zip(rings) {
        p.fd = s.ring.as_raw_fd();
        p.events = libc::POLLIN;
        n += 1;
    }
    crate::sys::poll::ppoll(&mut pfds[..n], t, sigmask).map(drop)
}

/// True if thread `tid` of this process has exited or is exiting (false for
/// 0, none). `pthread_join` returns while the thread may still be visible to
/// `tgkill`: its `PF_EXITING` flag (`/proc/self/task/TID/stat`) tells then.
fn thread_gone(tid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    if tid == 0 {
        return false;
    }
    if crate::sys::timer::signal_thread(tid as i32, 0).is_err() {
        return true;
    }
    let Ok(stat) = crate::sys::proc::read_text(&format!("/proc/self/task/{tid}/stat")) else {
        return true;
    };
    // The flags are the 9th field; the 2nd (the name, in parentheses) may
    // hold spaces, so count from the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(6))
        .and_then(|f| f.parse::<u64>().ok())
        .map_or(true, |flags| flags & PF_EXITING != 0)
}

/// A ring of `entries` submission entries and twice as many completion
/// entries, set up with `IORING_SETUP_COOP_TASKRUN` and
/// `IORING_SETUP_SUBMIT_ALL` where the kernel has them (Linux 5.19; an older
/// kernel refuses the flags with EINVAL, and gets the ring without them).
/// Returns the ring and whether it has the flags.
///
/// The kernel ends some requests with work it queues to the thread that
/// submitted them: it frees every request that one of its workers ran (a
/// buffered write to ext4, a transfer of 256 KiB or more, an fsync), and posts
/// the completion of a read that waited for readiness (pipe, socket) or for
/// pages read from the disk. Without the flag, each such piece of work
/// interrupts the submitting thread with an inter-processor interrupt if it is
/// running in user space; with it, the work runs at the thread's next entry
/// into the kernel (a system call, the next timer tick, any interrupt). A
/// sleeping submitter is woken for it in both cases. One interrupt per write
/// cut fio's 4 KiB random buffered writes at depth 32 under `LD_PRELOAD` to
/// less than half their rate (see capi/README.md).
///
/// The cost: a completion posted by such work waits for the submitter's next
/// entry into the kernel, at most a timer tick on a CPU that keeps its tick
/// (on one isolated with `nohz_full`, a submitter that spins without system
/// calls holds it until its next call).
fn build(entries: u32) -> io::Result<(IoUring, bool)> {
    // (`IORING_SETUP_SUBMIT_ALL`, Linux 5.18, with it: an entry the kernel
    // refuses as malformed ends with its error instead of stopping the
    // enter there, which would leave the entries behind it in the queue
    // after a call that must have them in the kernel, as a cancel does
    // before its fd goes.)
    let ring = IoUring::builder()
        .setup_cqsize(entries * 2)
        .setup_coop_taskrun()
        .setup_submit_all()
        .build(entries);
    match ring {
        Ok(r) => Ok((r, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::builder()
            .setup_cqsize(entries * 2)
            .build(entries)
            .map(|r| (r, false)),
        Err(e) => Err(e),
    }
}

/// True if a completion with `errno` (EOPNOTSUPP or EPERM) of request `s` is
/// the engine's own question, which `Shard::reap` answers by issuing the
/// request again: a transfer on an `O_NONBLOCK` terminal refused `RWF_NOWAIT`,
/// or a real-time request refused its I/O class.
fn resent_unless_cancelled(s: &super::slot::Slot, errno: i32) -> bool {
    match errno {
        libc::EOPNOTSUPP => s.nonblock && (s.own_fd.is_some() || s.aiocb != 0),
        libc::EPERM => {
            s.class.is_rt()
                && crate::sys::prio::rt_ioprio_allowed()
                && (s.own_fd.is_some() || s.aiocb != 0 || s.probe)
        }
        _ => false,
    }
}

/// The kind of what fd number `fd` names now, and whether it is `O_NONBLOCK`
/// (`None` if it is not open).
pub(crate) fn look_again(fd: i32) -> Option<(FdKind, bool)> {
    // SAFETY: only asked about (fstat, F_GETFL); an fd closed meanwhile gives
    // an error, and the C caller keeps a request's fd open until it is done.
    let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let kind = crate::sys::io::kind(bfd).ok()?;
    let nonblock = crate::sys::io::status_flags(bfd).is_ok_and(|f| f & libc::O_NONBLOCK != 0);
    Some((kind, nonblock))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The ring asks the kernel not to interrupt a submitter running in user
    /// space for the work that ends its requests (see `build`), on a kernel
    /// that has the flag (5.19 and later).
    #[test]
    fn the_ring_is_cooperative_where_the_kernel_allows_it() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        let s = Shard::new(8, 0).expect("io_uring_setup");
        let probe: io::Result<IoUring> = IoUring::builder().setup_coop_taskrun().build(4);
        assert_eq!(s.coop, probe.is_ok(), "a kernel that has the flag gets it");
        assert_eq!(s.ring.params().cq_entries(), 16);
    }

    /// An entry the kernel refuses as malformed (a reserved flag bit) does
    /// not stop the enter: the entry behind it goes in too.
    #[test]
    fn a_malformed_entry_does_not_hold_back_the_ones_behind_it() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        let s = Shard::new(8, 0).expect("io_uring_setup");
        if !s.coop {
            return; // (A kernel before 5.19: neither flag.)
        }
        let bad = io_uring::opcode::Nop::new()
            .build()
            .flags(squeue::Flags::from_bits_retain(1 << 7))
            .user_data(1);
        let good = io_uring::opcode::Nop::new().build().user_data(2);
        // SAFETY: this test is the ring's only user; no-ops name no memory.
        unsafe {
            assert!(s.push(&bad) && s.push(&good), "the queue has room");
        }
        s.submit().expect("enter");
        assert!(
            !s.sq_pending(),
            "the entry behind the malformed one went in"
        );
    }

    /// A wait whose count of entries to submit is too high (a concurrent
    /// enter took them and has not counted them yet) still sleeps: the kernel
    /// skips the wait of an enter that submitted fewer than asked. (A lower
    /// bound on a sleep: a busy machine only makes it longer.)
    #[test]
    fn a_wait_with_entries_counted_but_taken_still_sleeps() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        let s = Shard::new(8, 0).expect("io_uring_setup");
        // Two entries counted as pushed that no queue holds.
        s.count_pushed(2);
        assert_eq!(s.untaken(), 2);
        let t0 = Instant::now();
        s.wait(Some(Duration::from_millis(50)), true, None)
            .expect("wait");
        assert!(
            t0.elapsed() >= Duration::from_millis(40),
            "the wait returned after {:?} without a completion",
            t0.elapsed()
        );
    }
}
