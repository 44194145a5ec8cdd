//! `aio_suspend`: wait until at least one of a list of requests is done.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::context::Aio;
use super::request::{AsRequestId, RequestId};
use super::table::{Core, State};
use crate::{Error, ErrorKind, Result};

/// Up to this many requests are checked without allocating.
const INLINE: usize = 16;

fn any_done(core: &Core, ids: &[(u32, u32)]) -> bool {
    ids.iter()
        .any(|&(i, g)| core.get(i, g).map_or(true, |s| s.state == State::Done))
}

impl Aio {
    /// `aio_suspend`: blocks until at least one request in `list` is done, or
    /// `timeout` passes. Empty entries (`None`, C's `NULL`) are skipped; a list
    /// with none is done at once. The waiting thread reaps completions itself.
    ///
    /// Any timeout is valid: one too large to add to the clock (up to
    /// [`Duration::MAX`]) waits without limit.
    ///
    /// # Errors
    /// [`ErrorKind::TimedOut`] (EAGAIN, as `aio_suspend` reports it) when the
    /// timeout expires; [`ErrorKind::Interrupted`] (EINTR) when a signal handler
    /// runs during the wait, with or without `SA_RESTART` (POSIX restarts
    /// `aio_suspend` after an `SA_RESTART` handler; here the caller, who knows
    /// its handlers, decides whether to call again; the requests go on);
    /// EINVAL for a request of another context.
    ///
    /// # References
    /// - [`aio_suspend(3)`](https://man7.org/linux/man-pages/man3/aio_suspend.3.html)
    #[doc(alias = "aio_suspend")]
    pub fn suspend<I>(&self, list: I, timeout: Option<Duration>) -> Result<()>
    where
        I: IntoIterator,
        I::Item: AsRequestId,
    {
        // (A handler run while the call sleeps for the lock interrupts it.)
        let _ = crate::sys::rtlock::handler_ran_in_lock();
        let ctx = Arc::as_ptr(&self.inner) as usize;
        let mut inline = [(0u32, 0u32); INLINE];
        let mut n = 0;
        let mut heap: Vec<(u32, u32)> = Vec::new();
        for item in list {
            let Some(RequestId { ctx: c, idx, gen }) = item.request_id() else {
                continue;
            };
            if c != ctx {
                return Err(Error::invalid(
                    "aio_suspend",
                    "a request in the list belongs to another AIO context",
                ));
            }
            if n < INLINE {
                inline[n] = (idx, gen);
                n += 1;
            } else {
                if heap.is_empty() {
                    heap.extend_from_slice(&inline);
                }
                heap.push((idx, gen));
            }
        }
        let ids: &[(u32, u32)] = if heap.is_empty() { &inline[..n] } else { &heap };
        if ids.is_empty() {
            return Ok(());
        }
        // A request done already: no signal mask, no clock read. Its
        // completion may wait in the ring unreaped (a read that completed
        // inline): reaped first. (Not in a forked child's copy of the
        // context: the wait refuses it.) Only if the lock is free: waiting for
        // it before signals are blocked, a handler that ran meanwhile (the
        // lock's wait reads the clock, and may sleep) went unseen, and the
        // call slept on to its timeout; the masked wait below reaps too.
        if !self.inner.inherited() {
            if let Some(mut core) = self.inner.try_lock() {
                self.inner.poll_completions(&mut core);
                let done = any_done(&core, ids);
                self.inner.release(core);
                if done {
                    return Ok(());
                }
            }
        }
        // Signals are blocked before anything else the wait does, and come
        // through only while it sleeps: a handler due at any later moment of
        // the call ends it with EINTR. (Blocked from the first sleep on only,
        // a handler that ran before it, while the call read the clock or
        // took the lock, went unseen: the call slept on.)
        let masked = crate::sys::signal::block_for_wait();
        // A deadline past the clock's range is no deadline.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        if self.inner.wait_until_masked(
            deadline,
            Some("aio_suspend"),
            |c| any_done(c, ids),
            Some(masked),
        )? {
            Ok(())
        } else {
            Err(Error::from_errno("aio_suspend", libc::EAGAIN)
                .with_kind(ErrorKind::TimedOut)
                .with_message("the timeout expired before any request finished"))
        }
    }
}
