//! `aio_cancel`: of one request, or of every request on an fd.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine::{CoreGuard, Engine, Inner, Kicked};
use super::hook;
use super::table::{user_data, Hold, State};
use crate::{Error, Result};

/// The outcome of a cancel (`aio_cancel`'s return value).
///
/// # References
/// - [`aio_cancel(3)`](https://man7.org/linux/man-pages/man3/aio_cancel.3.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "AIO_CANCELED")]
#[doc(alias = "AIO_NOTCANCELED")]
#[doc(alias = "AIO_ALLDONE")]
pub enum CancelResult {
    /// `AIO_CANCELED`: every request named that was not done was cancelled
    /// (for [`Aio::cancel_fd`](super::Aio::cancel_fd), some may have been done
    /// already, as with `aio_cancel(fd, NULL)`); each cancelled one reports
    /// ECANCELED and sends its notification.
    Canceled,
    /// `AIO_NOTCANCELED`: at least one request was already running and could not be
    /// stopped; check each with `error`.
    NotCanceled,
    /// `AIO_ALLDONE`: every request named had already finished.
    AllDone,
}

impl CancelResult {
    /// The C value: `AIO_CANCELED`, `AIO_NOTCANCELED` or `AIO_ALLDONE`.
    pub fn as_raw(self) -> i32 {
        match self {
            CancelResult::Canceled => libc::AIO_CANCELED,
            CancelResult::NotCanceled => libc::AIO_NOTCANCELED,
            CancelResult::AllDone => libc::AIO_ALLDONE,
        }
    }

    /// Combines the outcomes of several requests the way `aio_cancel(fd, NULL)`
    /// reports them.
    pub(crate) fn merge(self, other: CancelResult) -> CancelResult {
        use CancelResult::*;
        match (self, other) {
            (NotCanceled, _) | (_, NotCanceled) => NotCanceled,
            (Canceled, _) | (_, Canceled) => Canceled,
            _ => AllDone,
        }
    }
}

const SETTLE: Duration = Duration::from_secs(5);

impl Inner {
    /// Releases the lock after requests were ended outside a submitting call
    /// or a reap (a cancel of queued ones, a let-go of held ones): that may
    /// have opened an fd's order gate and made the next request on it
    /// ready, which goes to the engine now, as a submission's would (started
    /// in the rings, or a sleeping worker woken), instead of waiting for the
    /// next submission.
    pub(crate) fn release_and_start(&self, mut core: CoreGuard<'_>) {
        let wake = if core.ready_len() > 0 {
            self.kick(&mut core)
        } else {
            Kicked::default()
        };
        self.unlock_and_enter_rings(core, wake.enter, true);
        if wake.wakes() {
            self.wake_workers(wake);
        }
    }
}

/// The result of request `(idx, gen)` once it is done (`None` while it runs).
/// Its slot may be free already: a future's request posts its result to the
/// future's mail box and frees its slot as it completes (and a handle may
/// take the result at once); the freed slot keeps the result until it is
/// taken again (its generation one past the request's). A slot taken again
/// since gives 0: not known.
fn done(inner: &Inner, idx: u32, gen: u32) -> Option<i64> {
    let core = inner.lock();
    let r = match core.slots.get(idx as usize) {
        Some(s) if s.gen == gen && s.state == State::Done => Some(s.res),
        Some(s) if s.gen == gen && s.state != State::Free => None,
        Some(s) if s.gen == gen.wrapping_add(1) && s.state == State::Free => Some(s.res),
        _ => Some(0),
    };
    drop(core);
    r
}

/// Waits, at most [`SETTLE`], for request `(idx, gen)` to be done (or its
/// slot freed).
pub(crate) fn wait_done(inner: &Inner, idx: u32, gen: u32) {
    let _ = inner.wait_until(Instant::now().checked_add(SETTLE), None, |c| {
        c.get(idx, gen).map_or(true, |s| s.state == State::Done)
    });
}

/// How long a cancel the kernel could not finish at once (no synchronous
/// cancel, or it timed out) waits for the request to end cancelled.
const BRIEF: Duration = Duration::from_millis(50);

/// [`done`] once request `(idx, gen)` is done or `d` has passed.
fn done_within(inner: &Inner, idx: u32, gen: u32, d: Duration) -> Option<i64> {
    let _ = inner.wait_until(Instant::now().checked_add(d), None, |c| {
        c.get(idx, gen).map_or(true, |s| s.state == State::Done)
    });
    done(inner, idx, gen)
}

fn settle(inner: &Inner, idx: u32, gen: u32) -> CancelResult {
    wait_done(inner, idx, gen);
    // The request was running when the cancel came: unless it ended cancelled, it
    // was not cancelled (it finished, or part of a write went through first).
    match done(inner, idx, gen) {
        Some(r) if r == -(libc::ECANCELED as i64) => CancelResult::Canceled,
        _ => CancelResult::NotCanceled,
    }
}

/// True if a write of `op` to a pipe, socket or terminal (`stream`: only those
/// go on in a second round, see `Shard::reap`; a regular file's write ends
/// short on its own, ENOSPC or RLIMIT_FSIZE) ended, after `moved` bytes of
/// earlier rounds, with `res`: fewer bytes than it was given and more than none.
pub(super) fn stopped_short(op: super::table::RawOp, stream: bool, moved: i64, res: i64) -> bool {
    stream && op.kind == super::table::OpKind::Write && res > 0 && res < moved + op.len as i64
}

/// A synchronous cancel of `ud`. An issued request may still wait in a
/// submission queue (a future's, left for the end of its runtime turn, or
/// one its submitting call pushed and has not entered yet: a `lio_listio`
/// whose entries another thread cancels as soon as they are in progress):
/// the kernel does not know it, and the cancel finds nothing (ENOENT). Then,
/// if entries wait, they are entered (only then: the entries entered may be
/// other threads' requests, which the kernel then ties to this thread, and
/// ends if it exits), and the cancel is asked again, also if none waits: the
/// submitting call may have entered its entry between the first ask and the
/// look at the queue (an entry taken is in the kernel: the second ask finds
/// it unless it is done).
pub(crate) fn cancel_entered(
    inner: &Inner,
    r: &super::uring::Ring,
    ud: u64,
) -> std::io::Result<()> {
    cancel_entered_after(inner, r, ud, || {})
}

/// [`cancel_entered`], with `missed` run right after the kernel's first
/// answer was ENOENT (tests: another thread's enter lands there).
fn cancel_entered_after(
    inner: &Inner,
    r: &super::uring::Ring,
    ud: u64,
    missed: impl FnOnce(),
) -> std::io::Result<()> {
    match r.cancel_sync(ud) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            missed();
            let core = inner.lock();
            let pending = r.sq_pending();
            inner.release(core);
            if pending {
                let _ = r.submit();
            }
            r.cancel_sync(ud)
        }
        other => other,
    }
}

/// Cancels request `(idx, gen)`.
pub(crate) fn cancel_one(inner: &Arc<Inner>, idx: u32, gen: u32) -> CancelResult {
    let mut core = inner.lock();
    inner.poll_completions(&mut core);
    let Some(s) = core.get(idx, gen) else {
        inner.release(core);
        return CancelResult::AllDone;
    };
    let op = s.op;
    // Bytes earlier rounds moved (a stream write cut short goes on); none
    // for a held request, done already, whose `res` is its result (see
    // `hold.rs`).
    let moved = (s.hold != Hold::Done).then_some(s.res);
    // (A request's own fd copy: its kind was looked at when it was issued.)
    let stream = s.fd_kind.is_some_and(crate::sys::io::FdKind::is_stream);
    let outcome = match s.state {
        State::Done | State::Free => {
            inner.release(core);
            CancelResult::AllDone
        }
        State::FdQueued | State::Ready => {
            let canceled = core.cancel_unissued(idx);
            inner.release_and_start(core);
            if canceled {
                CancelResult::Canceled
            } else {
                // Stopped part-way (see `Core::cancel_unissued`).
                CancelResult::NotCanceled
            }
        }
        State::Issued if s.issued_write_stays(|| s.fd_kind) => {
            inner.release(core);
            CancelResult::NotCanceled
        }
        State::Issued => match &inner.engine {
            Engine::Uring(r) => {
                // Asked for: an ECANCELED completion is this cancel's (see
                // `Shard::reap`).
                core.slots[idx as usize].cancel_req = true;
                inner.release(core);
                match cancel_entered(inner, r, user_data(idx, gen)) {
                    Ok(()) => settle(inner, idx, gen),
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                        wait_done(inner, idx, gen);
                        // Out of the kernel: done; or a write to a pipe or
                        // socket between two rounds (its first cut short,
                        // not reaped yet), stopped with the bytes it moved
                        // (see `Shard::reap`): in progress, not cancelled;
                        // or a read its submitting call issues again (a
                        // socket's probe refused with ESPIPE), which finds
                        // this cancel and ends ECANCELED: cancelled, as the
                        // C cancel answers. Still running after the wait:
                        // not cancelled.
                        match done(inner, idx, gen) {
                            Some(r) if r == -(libc::ECANCELED as i64) => CancelResult::Canceled,
                            Some(r) if moved.is_some_and(|m| stopped_short(op, stream, m, r)) => {
                                CancelResult::NotCanceled
                            }
                            Some(_) => CancelResult::AllDone,
                            None => CancelResult::NotCanceled,
                        }
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        // No synchronous cancel (kernel < 6.0): ask asynchronously
                        // and give it a moment.
                        let core = inner.lock();
                        r.cancel_async(user_data(idx, gen));
                        inner.release(core);
                        match done_within(inner, idx, gen, BRIEF) {
                            Some(r) if r == -(libc::ECANCELED as i64) => CancelResult::Canceled,
                            Some(_) => CancelResult::AllDone,
                            None => CancelResult::NotCanceled,
                        }
                    }
                    // ETIME (the request ran on for the cancel's 20 ms) or
                    // EINTR: the kernel's cancel is under way and may still
                    // end it ECANCELED, which is then this cancel's doing;
                    // else it runs on, not cancelled. (Not the 5 s settle: a
                    // request that runs on must not hold the caller that long.)
                    Err(_) => match done_within(inner, idx, gen, BRIEF) {
                        Some(r) if r == -(libc::ECANCELED as i64) => CancelResult::Canceled,
                        _ => CancelResult::NotCanceled,
                    },
                }
            }
            Engine::Threads(p) => {
                let s = &mut core.slots[idx as usize];
                if s.hold == Hold::Done {
                    // Done, held until its call is out (see `hold.rs`): all
                    // done once let go of, as on io_uring.
                    inner.release(core);
                    wait_done(inner, idx, gen);
                    CancelResult::AllDone
                } else if s.interruptible && super::threads::can_stop(s) {
                    s.cancel_req = true;
                    p.interrupt(s.worker);
                    inner.release(core);
                    settle(inner, idx, gen)
                } else {
                    inner.release(core);
                    CancelResult::NotCanceled
                }
            }
        },
    };
    hook::cancel(
        user_data(idx, gen),
        op.fd,
        op.offset,
        op.len,
        op.kind.hook(),
        outcome.as_raw(),
    );
    outcome
}

/// `aio_cancel(fd, NULL)`: cancels every request on `fd`.
/// The refusal of `aio_cancel` through a context a forked child inherited:
/// the requests are the parent's (on io_uring, the rings are shared with it).
pub(crate) fn inherited_cancel() -> Error {
    Error::new(
        crate::ErrorKind::InvalidState,
        "aio_cancel",
        "this AIO context was made by the parent of this forked process",
    )
    .with_hint("the parent's requests are the parent's to cancel; make a new posixrt::aio::Aio in the child for its own")
}

pub(crate) fn cancel_fd(inner: &Arc<Inner>, fd: RawFd) -> Result<CancelResult> {
    if inner.inherited() {
        return Err(inherited_cancel());
    }
    // SAFETY: the descriptor is only asked whether it is open (F_GETFD), which
    // is harmless whatever `fd` is; it is not kept.
    if fd < 0 || !crate::sys::io::is_open(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }) {
        return Err(Error::from_errno("aio_cancel", libc::EBADF)
            .with_hint(format!("fd {fd} is not an open file descriptor")));
    }
    // The requests still queued are cancelled first, in one pass under the
    // lock: cancelling a running one may end it (or wait for it), and its
    // completion would start the next one queued on the fd before its turn.
    let mut queued = Vec::new();
    let mut others = Vec::new();
    {
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        for (idx, gen) in core.on_fd(fd) {
            let op = core.slots[idx as usize].op;
            let unissued = matches!(
                core.slots[idx as usize].state,
                State::FdQueued | State::Ready
            );
            if unissued {
                // (Stopped part-way if it moved bytes: not cancelled.)
                let outcome = if core.cancel_unissued(idx) {
                    CancelResult::Canceled
                } else {
                    CancelResult::NotCanceled
                };
                queued.push((user_data(idx, gen), op, outcome));
            } else {
                others.push((idx, gen));
            }
        }
        inner.release_and_start(core);
    }
    let mut out = CancelResult::AllDone;
    for (id, op, outcome) in queued {
        hook::cancel(
            id,
            op.fd,
            op.offset,
            op.len,
            op.kind.hook(),
            outcome.as_raw(),
        );
        out = out.merge(outcome);
    }
    for (idx, gen) in others {
        out = out.merge(cancel_one(inner, idx, gen));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aio::notify::Notify;
    use crate::aio::submit::Entry;
    use crate::aio::{Aio, Backend, Op};

    /// A request its submitting call pushed into the submission queue is
    /// entered by that call just after a cancel's first ask found nothing
    /// (ENOENT), before the cancel looked at the queue (empty by then): the
    /// cancel asks again and ends it, instead of answering "not found"
    /// while it runs (a read of an empty pipe: for good).
    #[test]
    fn a_request_entered_between_the_cancel_s_ask_and_look_is_cancelled() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        let aio = Aio::builder()
            .backend(Backend::Uring)
            .build()
            .expect("io_uring context");
        let Engine::Uring(r) = &aio.inner.engine else {
            panic!("not io_uring")
        };
        let (rd, wr) = rustix::pipe::pipe().expect("pipe");
        // A full pipe: a write there waits for room (a read would be a
        // probe, which its submitting call settles: entered at once).
        let fl = rustix::fs::fcntl_getfl(&wr).expect("F_GETFL");
        rustix::fs::fcntl_setfl(&wr, fl | rustix::fs::OFlags::NONBLOCK).expect("F_SETFL");
        while rustix::io::write(&wr, &[0u8; 4096]).is_ok() {}
        rustix::fs::fcntl_setfl(&wr, fl).expect("F_SETFL");
        // (Leaked: the write owns it until it is done, also if this test fails.)
        let buf: &'static mut [u8] = Box::leak(vec![0u8; 8].into_boxed_slice());
        let mut op = Op::write(&wr, 0, &*buf);
        let mut p = op.prepare("aio_write", false).expect("prepare");
        let ((idx, gen), deferred) = aio
            .inner
            .submit_one_mailed(&mut p, &mut Notify::None, None, None, Entry::Defer)
            .expect("submit");
        assert!(deferred, "the write waits in the submission queue");
        // Asked for, as `cancel_one` does.
        let mut core = aio.inner.lock();
        core.slots[idx as usize].cancel_req = true;
        aio.inner.release(core);
        let got = cancel_entered_after(&aio.inner, r, user_data(idx, gen), || {
            // The submitting call enters its entry now.
            r.submit().expect("enter");
        });
        assert!(got.is_ok(), "the cancel found the write: {got:?}");
        wait_done(&aio.inner, idx, gen);
        let res = done(&aio.inner, idx, gen);
        if res.is_none() {
            // (Ended, so that the context can shut down.)
            let mut sink = vec![0u8; 1 << 20];
            let _ = rustix::io::read(&rd, &mut sink);
            wait_done(&aio.inner, idx, gen);
        }
        assert_eq!(
            res,
            Some(-(libc::ECANCELED as i64)),
            "the write ended cancelled"
        );
        drop(op);
    }
}
