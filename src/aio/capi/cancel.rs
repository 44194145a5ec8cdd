//! `aio_cancel` for C requests: of one aiocb, and of every request on an fd
//! (the requests still queued first, in one pass under the lock).

use std::time::{Duration, Instant};

use super::CEngine;
use crate::aio::cancel::stopped_short;
use crate::aio::engine::Engine;
use crate::aio::hook;

use crate::aio::table::{self, user_data, Core, Hold, State};
use crate::aio::threads;

impl CEngine {
    /// Waits (not interruptibly) at most `t` for slot `(idx, gen)` to be done.
    fn settle(&self, idx: u32, gen: u32, t: Duration) {
        let deadline = Instant::now() + t;
        loop {
            match self.wait_core(
                Some(deadline),
                &mut |c: &Core| c.get(idx, gen).map_or(true, |s| s.state == State::Done),
                &mut None,
            ) {
                Err(libc::EINTR) => continue,
                _ => return,
            }
        }
    }

    /// `aio_cancel` of the request named `ud` (from the aiocb's `__next_prio`):
    /// `AIO_CANCELED`, `AIO_NOTCANCELED` or `AIO_ALLDONE`. The aiocb of a
    /// cancelled request gets ECANCELED and its notification fires.
    pub fn cancel(&self, ud: u64) -> i32 {
        let (idx, gen) = table::split_user_data(ud);
        let inner = &self.inner;
        // A deferred entry is not in the kernel yet: an io_uring cancel would not
        // find it.
        self.flush();
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let Some(s) = core.get(idx, gen) else {
            inner.release(core);
            return libc::AIO_ALLDONE;
        };
        if s.aiocb == 0 {
            inner.release(core);
            return libc::AIO_ALLDONE;
        }
        let op = s.op;
        // Bytes earlier rounds moved (a stream write cut short goes on); none
        // for a held request, done already, whose `res` is its result.
        let moved = (s.hold != Hold::Done).then_some(s.res);
        let outcome = match s.state {
            State::Done | State::Free => {
                inner.release(core);
                libc::AIO_ALLDONE
            }
            State::FdQueued | State::Ready => {
                // (Not cancelled: a stream transfer back in the queue after
                // moving bytes, stopped with them, see `cancel_unissued`.)
                let cancelled = core.cancel_unissued(idx);
                inner.release_and_start(core);
                if cancelled {
                    libc::AIO_CANCELED
                } else {
                    libc::AIO_NOTCANCELED
                }
            }
            State::Issued if s.issued_write_stays(|| threads::fd_kind_of(s)) => {
                inner.release(core);
                libc::AIO_NOTCANCELED
            }
            State::Issued => {
                // Keep the slot when it completes, to read how it ended (as a
                // `lio_listio(LIO_WAIT)` of it, or another cancel, may).
                let s = &mut core.slots[idx as usize];
                s.detached = false;
                s.keepers = s.keepers.saturating_add(1);
                let mut all_done = false;
                match &inner.engine {
                    Engine::Uring(r) => {
                        core.slots[idx as usize].cancel_req = true;
                        inner.release(core);
                        match crate::aio::cancel::cancel_entered(inner, r, ud) {
                            Ok(()) => self.settle(idx, gen, Duration::from_secs(5)),
                            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                                all_done = true;
                                self.settle(idx, gen, Duration::from_secs(5));
                            }
                            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                                let core = inner.lock();
                                r.cancel_async(ud);
                                inner.release(core);
                                self.settle(idx, gen, Duration::from_millis(50));
                            }
                            // ETIME or EINTR: the kernel's cancel may still
                            // end it ECANCELED (briefly waited for: it may
                            // also run on).
                            Err(_) => self.settle(idx, gen, Duration::from_millis(50)),
                        }
                    }
                    Engine::Threads(p) => {
                        let s = &mut core.slots[idx as usize];
                        if s.hold == Hold::Done {
                            // Done, held until its call is out (see `hold.rs`):
                            // all done once let go of, as on io_uring (whose
                            // kernel no longer knows it).
                            inner.release(core);
                            all_done = true;
                            self.settle(idx, gen, Duration::from_secs(5));
                        } else if s.interruptible && threads::can_stop(s) {
                            // (`interruptible` is set while a worker learns the
                            // fd's kind: a transfer on a regular file or block
                            // device cannot be stopped.)
                            s.cancel_req = true;
                            p.interrupt(s.worker);
                            inner.release(core);
                            self.settle(idx, gen, Duration::from_secs(5));
                        } else {
                            inner.release(core);
                        }
                    }
                }
                let mut core = inner.lock();
                let out = match core.get(idx, gen).map(|s| (s.state, s.res)) {
                    Some((State::Done, res)) => {
                        core.let_go_kept(idx);
                        if res == -(libc::ECANCELED as i64) {
                            libc::AIO_CANCELED
                        } else if all_done
                            && !moved.is_some_and(|m| stopped_short(op, stream_fd(op.fd), m, res))
                        {
                            // (A stream write stopped between two rounds,
                            // short of its length, was in progress.)
                            libc::AIO_ALLDONE
                        } else {
                            libc::AIO_NOTCANCELED
                        }
                    }
                    Some(_) => {
                        // Still running: it frees itself when done (or the
                        // last other keeper frees it).
                        core.let_go_kept(idx);
                        libc::AIO_NOTCANCELED
                    }
                    // (Kept until this call let go: not reached.)
                    None => libc::AIO_ALLDONE,
                };
                inner.release(core);
                out
            }
        };
        hook::cancel(ud, op.fd, op.offset, op.len, op.kind.hook(), outcome);
        outcome
    }

    /// `aio_cancel(fd, NULL)`: cancels every C request on `fd` and combines the
    /// outcomes (`AIO_NOTCANCELED` if one could not be stopped, else
    /// `AIO_CANCELED` if one was, else `AIO_ALLDONE`).
    ///
    /// The requests still queued are cancelled first, in one pass under the
    /// lock: cancelling an issued one may wait for it (`settle`), and the thread
    /// pool would meanwhile start the queued ones, so that none was cancelled.
    pub fn cancel_fd(&self, fd: i32) -> i32 {
        self.flush();
        let inner = &self.inner;
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let mut queued = Vec::new();
        let mut issued = Vec::new();
        let mut moved_on = false;
        for i in 0..core.slots.len() {
            let s = &core.slots[i];
            if s.aiocb == 0 || s.op.fd != fd {
                continue;
            }
            let (ud, op) = (user_data(i as u32, s.gen), s.op);
            match s.state {
                State::FdQueued | State::Ready => {
                    if core.cancel_unissued(i as u32) {
                        queued.push((ud, op));
                    } else {
                        // Stopped with the bytes it moved: in progress.
                        moved_on = true;
                    }
                }
                State::Issued => issued.push(ud),
                State::Free | State::Done => {}
            }
        }
        inner.release_and_start(core);
        let mut out = if moved_on {
            libc::AIO_NOTCANCELED
        } else if queued.is_empty() {
            libc::AIO_ALLDONE
        } else {
            libc::AIO_CANCELED
        };
        for (ud, op) in queued {
            hook::cancel(
                ud,
                op.fd,
                op.offset,
                op.len,
                op.kind.hook(),
                libc::AIO_CANCELED,
            );
        }
        for ud in issued {
            let r = self.cancel(ud);
            out = match (out, r) {
                (libc::AIO_NOTCANCELED, _) | (_, libc::AIO_NOTCANCELED) => libc::AIO_NOTCANCELED,
                (libc::AIO_CANCELED, _) | (_, libc::AIO_CANCELED) => libc::AIO_CANCELED,
                _ => libc::AIO_ALLDONE,
            };
        }
        out
    }
}

/// True if `fd` (a C request's, which its caller keeps open until the request
/// is done) is a pipe, socket or terminal.
fn stream_fd(fd: i32) -> bool {
    crate::aio::shard::look_again(fd).is_some_and(|(k, _)| k.is_stream())
}
