//! Submission: a checked request goes into the table and, on io_uring, straight
//! into the submission queue when the ring has room and nothing waits; else into
//! the priority queue. All under one lock and (io_uring) one `io_uring_enter`.
//!
//! # Probe reads (io_uring)
//!
//! A read makes no system call before it is submitted: whether its fd is a
//! socket (which refuses an offset with ESPIPE) or `O_NONBLOCK` (where a read
//! that would block must end with EAGAIN) is only asked when it matters, while
//! the submitting call still borrows the fd:
//! - the kernel refuses it with ESPIPE at once: it is issued again at offset -1;
//! - it did not complete inline (it waits for data, or went to a kernel worker):
//!   the fd's flags are read, and on an `O_NONBLOCK` pipe, socket or terminal the
//!   read is cancelled and reports EAGAIN; a read of no bytes on any of them
//!   (the kernel arms a poll for a terminal's) is cancelled and reports 0, as
//!   `read(2)` of no bytes returns at once.
//!
//! Meanwhile no other thread becomes the reaper (`Core::probing`), so the
//! submitter sees its own completions. If a reaper already sleeps in the ring,
//! the submitter looks at the completion queues without draining them (under
//! the lock, which the reaper needs to drain them): a probe's completion found
//! there is done (an ESPIPE one is skipped when reaped, and the read issued
//! again), one not found is still in the kernel.
//!
//! The first probe read on an fd number reads the fd's kind and flags once (after
//! the enter, inside the call); once the number is known to name a regular
//! file, block device or directory (which cannot become pollable while it stays
//! open), its later reads are not probes at all: no settling pass, no system
//! call besides `io_uring_enter`. The limit of that shortcut: if the program
//! closes such a descriptor and the number is reused, in the same context, by a
//! pipe or socket, a read there at a non-zero offset fails with ESPIPE instead
//! of ignoring the offset, and on an `O_NONBLOCK` one a read that would block
//! waits for data (or a cancel) instead of returning EAGAIN.

use std::sync::Arc;

use super::engine::CoreGuard;
use super::engine::{Engine, Inner, Kicked};
use super::exit_wait;
use super::notify::Notify;
use super::op::Prepared;
use super::table::{user_data, Core, OpKind, State};
use crate::sys::io::{self as sio, FdKind};
use crate::sys::prio::{self, SchedClass};
use crate::{Error, ErrorKind, Result};

/// Probe reads of one submitting call (one without allocating).
#[derive(Default)]
pub(crate) struct Probes {
    one: Option<(u32, u32, i32)>,
    more: Vec<(u32, u32, i32)>,
}

impl Probes {
    /// Adds probe `(idx, gen, fd)`.
    pub(crate) fn push(&mut self, p: (u32, u32, i32)) {
        if self.one.is_none() {
            self.one = Some(p);
        } else {
            self.more.push(p);
        }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.one.is_none()
    }
    fn iter(&self) -> impl Iterator<Item = &(u32, u32, i32)> {
        self.one.iter().chain(self.more.iter())
    }
}

/// What [`Inner::begin_submit`] decided: the locked core, the submitter's
/// class, whether the requests go straight to the engine, and whether reads
/// may be probes.
struct Begun<'a> {
    core: CoreGuard<'a>,
    class: SchedClass,
    direct: bool,
    can_probe: bool,
}

fn shutting_down() -> Error {
    Error::new(
        ErrorKind::InvalidState,
        "aio_read",
        "the AIO context is shutting down",
    )
}

/// When a submitting call enters the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Before it returns.
    Now,
    /// Before it returns, and its caller reaps right after (a future's first
    /// poll): the rings' eventfd stays quiet meanwhile (see `Ring::quiet`).
    NowThenReap,
    /// Before it returns, with the eventfd quiet, and the call reaps right
    /// after its entry (a call's request without notification: a read that
    /// completes inline then wakes no eventfd watcher, the tokio reactor or
    /// the completion thread, and its result waits in its slot).
    NowReaped,
    /// Later, where it can be left (see `Inner::submit_one_mailed`).
    Defer,
}

impl Inner {
    /// Submits checked requests (one `lio_listio` group `list`, or `NO_LIST`),
    /// appending each one's name to `out`. The fds `ops` borrow are not used
    /// after this returns (see `BorrowFd`). With `hold`, their completions are
    /// held until the caller lets go of them (see `hold.rs`).
    pub(crate) fn submit_many<'fd>(
        self: &Arc<Self>,
        ops: impl ExactSizeIterator<Item = (Prepared<'fd>, Notify)>,
        list: u32,
        hold: bool,
        out: &mut impl Extend<(u32, u32)>,
    ) -> Result<()> {
        let Begun {
            mut core,
            class,
            direct,
            can_probe,
        } = self.begin_submit(ops.len())?;
        self.end_quiet_before(&mut core, Entry::Now);
        // Room for more than one probe is made only when a second one comes
        // (most lists probe nothing: their fds are known regular files).
        let mut probes = Probes::default();
        let mut enter = false;
        for (mut p, mut notify) in ops {
            let id = self.place(
                &mut core,
                &mut p,
                &mut notify,
                list,
                class,
                direct,
                can_probe,
                &mut enter,
                &mut probes,
            );
            if hold {
                core.hold(id.0);
            }
            out.extend(Some(id));
        }
        self.finish_submit(core, enter, &probes, Entry::Now);
        exit_wait::watch(self);
        Ok(())
    }

    /// [`submit_many`](Inner::submit_many) of one request, without the list
    /// plumbing (the `aio_read`/`aio_write` path).
    #[inline]
    pub(crate) fn submit_one(
        self: &Arc<Self>,
        p: &mut Prepared<'_>,
        mut notify: Notify,
    ) -> Result<(u32, u32)> {
        let entry = if notify.is_none() {
            Entry::NowReaped
        } else {
            Entry::Now
        };
        self.submit_one_mailed(p, &mut notify, None, None, entry)
            .map(|(id, _)| id)
    }

    /// [`submit_one`](Inner::submit_one), with `mail` (and `waker`) attached to
    /// the request under the same lock (see `Core::attach_mail`). With
    /// [`Entry::Defer`], a request that went into the io_uring submission
    /// queue with no probe read to settle is left there: the kernel is not
    /// entered. True if so; the caller must then have the ring entered, and
    /// keep the fd open until it is. For futures (`.await` batching).
    /// Inlined, so that `submit_one` pays nothing for what it does not use.
    #[inline(always)]
    pub(crate) fn submit_one_mailed(
        self: &Arc<Self>,
        p: &mut Prepared<'_>,
        notify: &mut Notify,
        mail: Option<&std::sync::Arc<super::mail::Mail>>,
        waker: Option<&std::task::Waker>,
        entry: Entry,
    ) -> Result<((u32, u32), bool)> {
        let Begun {
            mut core,
            class,
            direct,
            can_probe,
        } = self.begin_submit(1)?;
        self.end_quiet_before(&mut core, entry);
        let mut probes = Probes::default();
        let mut enter = false;
        let id = self.place(
            &mut core,
            p,
            notify,
            super::table::NO_LIST,
            class,
            direct,
            can_probe,
            &mut enter,
            &mut probes,
        );
        if let Some(mail) = mail {
            core.attach_mail(id.0, id.1, mail, waker);
        }
        let deferred = self.finish_submit(core, enter, &probes, entry);
        exit_wait::watch(self);
        Ok((id, deferred))
    }

    /// Before a request that no poll of its own will reap (a notification, a
    /// call's request) goes in: ends a quiet eventfd (see `Ring::quiet`), so
    /// that its completion wakes the eventfd's watchers (the completion
    /// thread) instead of waiting for the quiet thread's reap, however long
    /// that thread is held up.
    #[inline]
    pub(crate) fn end_quiet_before(&self, core: &mut Core, entry: Entry) {
        if let (Entry::Now | Entry::NowReaped, Engine::Uring(r)) = (entry, &self.engine) {
            // As a reap ends it: the quiet thread's own request may have
            // completed unsignalled and its reap will not know to signal.
            if r.unquiet(core) && core.inflight > 0 {
                self.signal_after_quiet(core);
            }
        }
    }

    /// The start of a submitting call of `n` requests: takes the lock, refuses a
    /// context that is shutting down, and decides how they go in.
    #[inline(always)]
    fn begin_submit(&self, n: usize) -> Result<Begun<'_>> {
        let threads = matches!(self.engine, Engine::Threads(_));
        if self.inherited() {
            return Err(super::engine::inherited_context());
        }
        let core = self.lock();
        if core.shutdown {
            drop(core);
            return Err(shutting_down());
        }
        let direct = self.has_room(&core, n);
        // Order matters only when requests wait: then (and on the thread engine,
        // whose workers take the class) the submitter's class is read exactly.
        let class = if threads || !direct {
            prio::current()
        } else {
            prio::current_cached()
        };
        let can_probe = !threads;
        Ok(Begun {
            core,
            class,
            direct,
            can_probe,
        })
    }

    /// The end of a submitting call: hands queued requests to the engine,
    /// releases the lock, enters the ring (unless [`Entry::Defer`]: see
    /// `submit_one_mailed`), and settles probe reads. True if the ring was left
    /// unentered with entries for it.
    #[inline]
    fn finish_submit(
        &self,
        mut core: CoreGuard<'_>,
        mut enter: bool,
        probes: &Probes,
        entry: Entry,
    ) -> bool {
        let mut wake = Kicked::default();
        if core.ready_len() > 0 {
            wake = self.kick(&mut core);
            enter |= wake.enter;
        }
        if !probes.is_empty() {
            core.probing += 1;
        }
        let deferred = enter && probes.is_empty() && entry == Entry::Defer;
        if deferred {
            // The caller enters the ring later.
            self.release(core);
        } else {
            let mut reap = false;
            if let Engine::Uring(r) = &self.engine {
                match entry {
                    Entry::NowThenReap => {
                        let _ = r.quiet(&mut core);
                    }
                    Entry::NowReaped if enter => reap = r.quiet(&mut core),
                    _ => {}
                }
            }
            self.unlock_and_enter(core, enter);
            if reap {
                // Ends the quiet eventfd this entry opened (signalling for a
                // request it left in the kernel), and takes what completed.
                let mut core = self.lock();
                self.poll_completions(&mut core);
                self.release(core);
            }
        }
        if wake.wakes() {
            self.wake_workers(wake);
        }
        if !probes.is_empty() {
            self.settle_probes(probes);
        }
        deferred
    }

    /// Puts one request in the table and gives it to the engine or a queue.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn place(
        &self,
        core: &mut Core,
        p: &mut Prepared<'_>,
        notify: &mut Notify,
        list: u32,
        class: SchedClass,
        direct: bool,
        can_probe: bool,
        enter: &mut bool,
        probes: &mut Probes,
    ) -> (u32, u32) {
        let (idx, gen) = core.alloc_as(p.raw, p.reqprio, class, notify, list);
        let read = p.raw.kind == OpKind::Read;
        // A read on an fd number already seen, in this context, to name a regular
        // file, block device or directory needs no probe (no ESPIPE, no EAGAIN):
        // no settling pass after the enter.
        let not_pollable = fd_not_pollable(core, p);
        let probe = read && !p.checked && can_probe && direct && !not_pollable;
        if let Engine::Uring(r) = &self.engine {
            if direct && super::uring::punted(p.raw.kind, p.raw.len, class) {
                if let Err(e) = p.own() {
                    core.complete(idx, copy_failed(e));
                    core.nudge = true;
                    return (idx, gen);
                }
            }
            fill(core, idx, p, probe, not_pollable);
            if direct && r.push_one(core, idx, gen) {
                *enter = true;
                if probe {
                    probes.push((idx, gen, p.raw.fd));
                }
                return (idx, gen);
            }
        }
        hold_back(core, idx, p);
        (idx, gen)
    }

    /// Gives the requests `(idx, gen)` still in the kernel without an fd copy
    /// of their own a copy of their fd, taken with the lock released; returns
    /// the lock taken again. Call inside their submitting call, which keeps
    /// the caller's fds open. io_uring cancels a request when the thread whose
    /// `io_uring_enter` submitted it exits; the engine then issues it again on
    /// that copy (see `Shard::reap`).
    pub(crate) fn copy_fds_of_waiting<'a>(
        &'a self,
        core: CoreGuard<'a>,
        reqs: impl Iterator<Item = (u32, u32)>,
    ) -> CoreGuard<'a> {
        let pending: Vec<(u32, u32, i32)> = reqs
            .filter(|&(i, g)| waiting_without_copy(&core, i, g))
            .map(|(i, g)| (i, g, core.slots[i as usize].op.fd))
            .collect();
        if pending.is_empty() {
            return core;
        }
        self.copy_fds(core, pending)
    }

    /// The slow half of [`copy_fds_of_waiting`](Inner::copy_fds_of_waiting):
    /// gives each of `pending` (index, generation, fd) an fd copy if it is
    /// still waiting once the copies are taken.
    #[cold]
    fn copy_fds<'a>(&'a self, core: CoreGuard<'a>, pending: Vec<(u32, u32, i32)>) -> CoreGuard<'a> {
        self.release(core);
        let copies: Vec<_> = pending
            .into_iter()
            .map(|(i, g, fd)| {
                // SAFETY: the submitting call, still running, keeps `fd` open
                // (the caller's contract); it is only duplicated.
                let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                (i, g, sio::dup(bfd).ok())
            })
            .collect();
        let mut core = self.lock();
        for (i, g, copy) in copies {
            if waiting_without_copy(&core, i, g) {
                core.slots[i as usize].own_fd = copy;
            }
        }
        core
    }

    /// Settles the probe reads of one submitting call (see the module docs),
    /// after its enter; the call counted them in `Core::probing` first.
    pub(crate) fn settle_probes(&self, probes: &Probes) {
        let Engine::Uring(r) = &self.engine else {
            return;
        };
        let mut core = self.lock();
        // Probes whose completion waits in a queue the reaper has not drained.
        let mut queued: Vec<(u32, u32)> = Vec::new();
        if core.reaper {
            core = self.settle_beside_reaper(core, r, probes, &mut queued);
        } else {
            core = self.settle_by_reaping(core, r, probes);
        }
        let waiting = |core: &Core, i: u32, g: u32| {
            core.get(i, g).is_some_and(|s| s.state == State::Issued) && !queued.contains(&(i, g))
        };
        // Reads still in the kernel: on an O_NONBLOCK pipe, socket or terminal
        // they must end with EAGAIN instead of waiting (and one of no bytes,
        // on any of them, with 0). (A regular file's read
        // waits for a kernel worker: once an fd number was seen to be one, its
        // later reads skip the check, so the common path makes no system call.)
        // Reads that completed inline are looked at too, once per fd number (until
        // it is known not pollable): a regular file's later reads then skip the
        // probe altogether.
        let mut fds: Vec<i32> = Vec::new();
        for &(_, _, fd) in probes.iter() {
            let known = core.fd_not_pollable(fd) && core.fd_nowait_for(fd, OpKind::Read);
            if !known && !fds.contains(&fd) {
                fds.push(fd);
            }
        }
        if !fds.is_empty() {
            self.release(core);
            let mut seen = Vec::with_capacity(fds.len());
            for fd in fds {
                // SAFETY: `fd` is borrowed by the submitting call, which has not
                // returned yet (this runs inside it).
                let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                let nonblock = sio::status_flags(bfd).is_ok_and(|f| f & libc::O_NONBLOCK != 0);
                seen.push((fd, sio::kind(bfd).ok(), nonblock));
            }
            core = self.lock();
            for (fd, k, nonblock) in seen {
                let Some(k) = k else { continue };
                if !k.is_stream() {
                    core.set_fd_not_pollable(fd, true);
                    continue;
                }
                // (A number seen before as a file that refuses RWF_NOWAIT.)
                core.set_fd_not_pollable(fd, false);
                for &(i, g, pfd) in probes.iter() {
                    // A read of no bytes waits too where the kernel arms a
                    // poll for it (a terminal's): read(2) of no bytes returns
                    // 0 at once, and so does this one (see `Shard::reap`).
                    if pfd == fd
                        && waiting(&core, i, g)
                        && (nonblock || core.slots[i as usize].op.len == 0)
                    {
                        let s = &mut core.slots[i as usize];
                        s.eagain = true;
                        s.cancel_req = true;
                        s.nonblock = nonblock;
                        s.fd_kind = Some(k);
                        r.cancel_async(user_data(i, g));
                    }
                }
            }
        }
        // An ESPIPE the reaper saw while the lock was released (the read went
        // through another thread's enter, or to a kernel worker): issue it
        // again now, while this call keeps the fd open. Clearing `probe`
        // below, under the same lock, ends the window.
        for _ in 0..4 {
            let mut again = false;
            for &(i, g, fd) in probes.iter() {
                if core
                    .get(i, g)
                    .is_some_and(|s| s.state == State::Issued && s.espipe)
                {
                    again |= self.issue_at_no_offset(&mut core, r, i, g, fd);
                }
            }
            if !again {
                break;
            }
            self.release(core);
            let _ = r.submit_mine();
            core = self.lock();
        }
        // Reads still in the kernel get their own copy of the fd.
        let still = probes
            .iter()
            .map(|&(i, g, _)| (i, g))
            .filter(|p| !queued.contains(p));
        core = self.copy_fds_of_waiting(core, still);
        for &(i, g, _) in probes.iter() {
            if core.get(i, g).is_some() {
                core.slots[i as usize].probe = false;
            }
        }
        core.probing -= 1;
        core.completed = true;
        // The reaps above may have completed a request that released others on
        // its fd (an fsync queued behind a write): issue them now, or nobody
        // would (no completion is left to wake a reaper).
        if core.ready_len() > 0 {
            let _ = r.issue(&mut core);
        }
        self.release(core);
    }

    /// No thread is the reaper (`Core::probing` keeps it so): this thread
    /// drains the queues itself, and issues a probe the kernel refused with
    /// ESPIPE again at offset -1.
    fn settle_by_reaping<'a>(
        &'a self,
        mut core: CoreGuard<'a>,
        r: &super::uring::Ring,
        probes: &Probes,
    ) -> CoreGuard<'a> {
        for _ in 0..4 {
            r.reap(&mut core);
            let mut again = false;
            for &(i, g, fd) in probes.iter() {
                let retry = core
                    .get(i, g)
                    .is_some_and(|s| s.state == State::Issued && s.espipe);
                if retry {
                    again |= self.issue_at_no_offset(&mut core, r, i, g, fd);
                }
            }
            if !again && !r.sq_pending() {
                break;
            }
            self.release(core);
            let _ = r.submit_mine();
            core = self.lock();
        }
        core
    }

    /// Another thread is the reaper, asleep in the kernel: it drains the
    /// queues, and this thread only looks at them (under the lock, so nothing
    /// is drained meanwhile). A probe refused with ESPIPE is issued again at
    /// offset -1 (its completion still queued is then skipped when reaped); a
    /// probe whose completion is queued is done, and goes into `queued`.
    #[cold]
    fn settle_beside_reaper<'a>(
        &'a self,
        mut core: CoreGuard<'a>,
        r: &super::uring::Ring,
        probes: &Probes,
        queued: &mut Vec<(u32, u32)>,
    ) -> CoreGuard<'a> {
        let mut again = false;
        for &(i, g, fd) in probes.iter() {
            let Some(s) = core.get(i, g) else { continue };
            if s.state != State::Issued {
                continue;
            }
            // The reaper saw the ESPIPE already, or it waits in a queue.
            let seen = s.espipe;
            let res = if seen { None } else { r.peek(user_data(i, g)) };
            if seen || res == Some(-libc::ESPIPE) {
                core.slots[i as usize].skip_espipe = !seen;
                again |= self.issue_at_no_offset(&mut core, r, i, g, fd);
            } else if res.is_some_and(|r| r != -libc::ECANCELED) {
                // (ECANCELED: a thread that entered it exited; it is issued
                // again when reaped, so it still needs its fd copy.)
                queued.push((i, g));
            }
        }
        if again {
            self.release(core);
            let _ = r.submit_mine();
            core = self.lock();
        }
        core
    }

    /// Issues probe `(i, g)`, refused with ESPIPE (a socket read at an
    /// offset), again at offset -1; true if it went into a queue (to enter),
    /// else it ends with ESPIPE.
    fn issue_at_no_offset(
        &self,
        core: &mut Core,
        r: &super::uring::Ring,
        i: u32,
        g: u32,
        fd: i32,
    ) -> bool {
        core.set_fd_not_pollable(fd, false);
        let s = &mut core.slots[i as usize];
        s.espipe = false;
        s.fd_kind = Some(FdKind::StreamSocket);
        if s.cancel_req && !s.eagain {
            // A cancel came while the read was out of the kernel (its ESPIPE
            // reaped, by the cancel's own reap among others): the kernel's
            // cancel found nothing to stop, and the read, issued again, would
            // wait on for data (an `aio_cancel` answering AIO_NOTCANCELED, a
            // `lio_listio(LIO_WAIT)` of it never returning). It ends
            // cancelled instead, as it would have in the kernel.
            s.skip_espipe = false;
            core.complete(i, -(libc::ECANCELED as i64));
            return false;
        }
        if r.push_again(core, i, g) {
            return true;
        }
        core.slots[i as usize].skip_espipe = false;
        core.complete(i, -(libc::ESPIPE as i64));
        false
    }
}

/// A request held back (or any on the thread engine): it may start after the
/// submitting call returns, so it needs its own copy of the fd, and its kind and
/// flags.
#[inline(never)]
fn hold_back(core: &mut Core, idx: u32, p: &mut Prepared<'_>) {
    core.slots[idx as usize].probe = false;
    if !p.checked {
        let _ = p.check();
    }
    if core.slots[idx as usize].own_fd.is_none() {
        if let Err(e) = p.own() {
            core.complete(idx, copy_failed(e));
            core.nudge = true;
            return;
        }
    }
    if p.raw.len == 0 && p.raw.kind == OpKind::Read && p.kind.is_some_and(FdKind::is_stream) {
        zero_read_now(core, idx, p);
        return;
    }
    let not_pollable = fd_not_pollable(core, p);
    fill(core, idx, p, false, not_pollable);
    if p.checked {
        core.set_fd_direct(p.raw.fd, p.direct);
    }
    core.admit(idx, false);
}

/// Ends a read of no bytes on a pipe, socket or terminal that waited for room
/// in the rings, as `read(2)` of no bytes would: 0 at once (EBADF on a
/// descriptor not open for reading). Issued from the queue it would not be
/// a probe, and the kernel would arm a poll for a terminal's read: it would
/// wait for input (see `Inner::settle_probes`).
#[cold]
fn zero_read_now(core: &mut Core, idx: u32, p: &Prepared<'_>) {
    // SAFETY: no byte of the buffer is touched (length 0); the submitting
    // call, still running, keeps the fd open.
    let r = unsafe { sio::read(p.raw.fd, p.raw.ptr as *mut u8, 0, sio::Mode::NoWait) };
    core.complete(idx, r.map_or_else(|e| -(e as i64), |n| n as i64));
    core.nudge = true;
}

/// The result of a request whose fd could not be copied under the lock (it
/// waited for room in the rings): EAGAIN when descriptors ran out, as a
/// request not queued for want of resources (the thread engine fails the
/// call with it), not EMFILE, which no read or write gives; else the error
/// (EBADF for a bad fd).
fn copy_failed(e: i32) -> i64 {
    let e = if e == libc::EMFILE || e == libc::ENFILE {
        libc::EAGAIN
    } else {
        e
    };
    -(e as i64)
}

/// What [`Core::fd_not_pollable`] says of the fd of `p`, asked only where
/// [`fill`] and the probe decision use it: for a request whose fd was not
/// looked at (one that was, a write, knows its kind, and probes nothing).
#[inline(always)]
fn fd_not_pollable(core: &mut Core, p: &Prepared<'_>) -> bool {
    p.kind.is_none() && core.fd_not_pollable(p.raw.fd)
}

/// Copies what the engine needs from a prepared request into its slot
/// (`not_pollable`: see [`fd_not_pollable`]).
#[inline(always)]
fn fill(core: &mut Core, idx: u32, p: &mut Prepared<'_>, probe: bool, not_pollable: bool) {
    let fixed = core.files.lookup(p.raw.fd);
    let finite = p.kind.map_or(!probe && not_pollable, |k| !k.is_stream());
    let s = &mut core.slots[idx as usize];
    s.fixed = fixed;
    s.finite = finite;
    s.fd_kind = p.kind;
    s.nonblock = p.nonblock;
    s.probe = probe;
    if p.own.is_some() {
        s.own_fd = p.own.take();
    }
}

/// True if request `(i, g)` is still in the kernel without an fd copy.
fn waiting_without_copy(core: &Core, i: u32, g: u32) -> bool {
    core.get(i, g)
        .is_some_and(|s| s.state == State::Issued && s.own_fd.is_none())
}
