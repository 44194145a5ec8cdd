//! How a thread waits for requests: [`Inner::wait_until`], behind every
//! Rust wait (`suspend`, `lio_listio(Wait)`, `Request::wait`, the internal
//! waits of cancel and shutdown).
//!
//! An interruptible wait (POSIX `aio_suspend`, `lio_listio(LIO_WAIT)`) keeps
//! signals blocked from its first sleep on (`suspend` and `lio_listio(Wait)`:
//! from the moment they find they must wait; see
//! [`Inner::wait_until_masked`]) and lets them through only while it sleeps (`sys::poll`, also on the ring's fd): another thread's
//! completion wakes it often, and a handler that ran while it was awake,
//! between two sleeps, used to go unseen.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine::{CoreGuard, Engine, Inner};
use super::inherited::inherited_context_in;
use super::notify::catch_up;
use super::sleep::{interrupted, sleep_on, wait_fd};
use super::table::Core;
use crate::sys::signal::{block_for_wait, WaitMask};
use crate::{Error, Result};

/// After a sleep that ended without EINTR (a completion there ends it before
/// a pending signal is looked at): true if a signal with a handler is due
/// (see [`WaitMask::due`]). Asked only by a wait that goes on.
pub(super) fn due(masked: &Option<WaitMask>) -> bool {
    masked.as_ref().is_some_and(WaitMask::due)
}

impl Inner {
    /// The calling thread sleeps on its wait eventfd `fd` (see `sleep.rs`),
    /// outside the lock, registered in `core.wait_fds` meanwhile: the release
    /// after a completion, or after a reaper stops, writes it. From now on
    /// signals are blocked but while it sleeps (`masked`). Returns the lock,
    /// and whether a handler ran during the sleep (EINTR) or is due (see
    /// [`due`]; asked only if the wait is not `done`). The lock is released
    /// with `release` ([`Inner::release`], or the C library's signal-safe
    /// one, whose caller made sure `core.wait_fds` has room for `fd`).
    pub(super) fn sleep_on_fd<'a, F, R>(
        &'a self,
        mut core: CoreGuard<'a>,
        fd: &Arc<OwnedFd>,
        t: Option<Duration>,
        masked: &mut Option<WaitMask>,
        done: &mut F,
        release: R,
    ) -> (CoreGuard<'a>, bool)
    where
        F: FnMut(&Core) -> bool + ?Sized,
        R: Fn(&Inner, CoreGuard<'a>),
    {
        core.wait_fds.push(Arc::clone(fd));
        release(self, core);
        let mask = masked.get_or_insert_with(block_for_wait).sleep_mask();
        let r = sleep_on(fd, t, mask);
        let mut core = self.lock();
        if let Some(p) = core.wait_fds.iter().position(|f| Arc::ptr_eq(f, fd)) {
            core.wait_fds.swap_remove(p);
        }
        let handled = match r {
            Err(libc::EINTR) => true,
            Ok(()) => !done(&core) && due(masked),
            Err(_) => false,
        };
        (core, handled)
    }

    /// A wait's round, under the lock: reaps what is there, then either the
    /// wait returns (`Err(true)`: done; `Err(false)`: `deadline` passed; the
    /// lock released with `release`: [`Inner::release`], or the C library's
    /// signal-safe one) or it sleeps, for at most the time it returns.
    pub(super) fn round<'a, F, R>(
        &self,
        mut core: CoreGuard<'a>,
        deadline: Option<Instant>,
        done: &mut F,
        release: R,
    ) -> std::result::Result<(CoreGuard<'a>, Option<Duration>), bool>
    where
        F: FnMut(&Core) -> bool + ?Sized,
        R: Fn(&Inner, CoreGuard<'a>),
    {
        self.poll_completions(&mut core);
        if done(&core) {
            release(self, core);
            catch_up();
            return Err(true);
        }
        let Some(d) = deadline else {
            return Ok((core, None));
        };
        let now = Instant::now();
        if now >= d {
            release(self, core);
            return Err(false);
        }
        Ok((core, Some(d - now)))
    }

    /// Waits until `done` holds or `deadline` passes (false). The waiting thread
    /// reaps completions itself when it can. With `intr`, a signal handler run
    /// during the wait ends it with [`ErrorKind::Interrupted`] (EINTR), with
    /// or without `SA_RESTART`: POSIX restarts `aio_suspend` and
    /// `lio_listio(LIO_WAIT)` after an `SA_RESTART` handler, but the Rust API
    /// leaves the retry to its caller (the C library restarts); the requests
    /// are unaffected.
    ///
    /// [`ErrorKind::Interrupted`]: crate::ErrorKind::Interrupted
    pub(crate) fn wait_until(
        &self,
        deadline: Option<Instant>,
        intr: Option<&'static str>,
        done: impl FnMut(&Core) -> bool,
    ) -> Result<bool> {
        self.wait_until_masked(deadline, intr, done, None)
    }

    /// [`wait_until`](Self::wait_until) for an interruptible call that blocked
    /// signals when it started (`masked`, from [`block_for_wait`]), so a
    /// handler due since then ends the wait with EINTR.
    pub(crate) fn wait_until_masked(
        &self,
        deadline: Option<Instant>,
        intr: Option<&'static str>,
        mut done: impl FnMut(&Core) -> bool,
        mut masked: Option<WaitMask>,
    ) -> Result<bool> {
        if self.inherited() {
            // (A wait that is not interruptible, `Request::wait` or a list's
            // `wait_all`, is an `aio_suspend` too.)
            return Err(inherited_context_in(intr.unwrap_or("aio_suspend")));
        }
        // An interruptible wait keeps signals blocked from its first sleep on
        // (or from when the caller blocked them: `masked`), and lets them
        // through only while it sleeps: a handler due while it is awake (a
        // completion of another thread's woke it) ends the next sleep at
        // once, with EINTR.
        // The mask is back when it returns.
        let mut core = self.lock();
        loop {
            let remaining;
            (core, remaining) = match self.round(core, deadline, &mut done, Inner::release) {
                Ok(sleep) => sleep,
                Err(r) => return Ok(r),
            };
            if let Some(call) = intr {
                // A handler ran while the call waited for the lock, before
                // signals were blocked for its sleeps.
                if masked.is_none() && crate::sys::rtlock::handler_ran_in_lock() {
                    self.release(core);
                    return Err(interrupted(call));
                }
            }
            match &self.engine {
                Engine::Uring(r) if !core.reaper && core.probing == 0 => {
                    core.reaper = true;
                    self.release(core);
                    let mask = match intr {
                        Some(_) => masked.get_or_insert_with(block_for_wait).sleep_mask(),
                        None => None,
                    };
                    let res = r.wait(remaining, mask);
                    core = self.lock();
                    core.reaper = false;
                    core.completed = true;
                    r.reap(&mut core);
                    if core.ready_len() > 0 {
                        let _ = r.issue(&mut core);
                    }
                    let handled = match &res {
                        Err(e) if e.raw_os_error() == Some(libc::EINTR) => true,
                        // (A completion there already ends the sleep before a
                        // pending signal is looked at: looked for when the
                        // wait goes on.)
                        Ok(()) => intr.is_some() && !done(&core) && due(&masked),
                        Err(e) => {
                            let errno = e.raw_os_error().unwrap_or(libc::EIO);
                            self.release(core);
                            return Err(Error::from_errno("io_uring_enter", errno));
                        }
                    };
                    if let (true, Some(call)) = (handled, intr) {
                        if done(&core) {
                            self.release(core);
                            catch_up();
                            return Ok(true);
                        }
                        self.release(core);
                        return Err(interrupted(call));
                    }
                }
                _ => match intr.and_then(|c| wait_fd().map(|fd| (c, fd))) {
                    Some((call, fd)) => {
                        let handled;
                        (core, handled) = self.sleep_on_fd(
                            core,
                            &fd,
                            remaining,
                            &mut masked,
                            &mut done,
                            Inner::release,
                        );
                        if handled && !done(&core) {
                            self.release(core);
                            return Err(interrupted(call));
                        }
                    }
                    None => {
                        if let Some(m) = masked.take() {
                            // No eventfd: this sleep takes no mask. Signals
                            // come through again first, outside the lock (a
                            // handler may call into the context).
                            let due = m.due();
                            self.release(core);
                            drop(m);
                            if let (true, Some(call)) = (due, intr) {
                                return Err(interrupted(call));
                            }
                            core = self.lock();
                            continue;
                        }
                        core.waiters += 1;
                        let until = remaining.and_then(|t| Instant::now().checked_add(t));
                        self.cond.wait_until(&mut core, until);
                        core.waiters -= 1;
                    }
                },
            }
        }
    }
}
