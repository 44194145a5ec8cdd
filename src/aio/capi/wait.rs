//! How a C call waits: `aio_suspend`, `lio_listio(LIO_WAIT)` and the
//! library's own waits (see `Inner::wait_until` in `aio/wait.rs` for the
//! signal mask a wait sleeps with).

use std::sync::atomic::Ordering;
use std::time::Instant;

use rustix::thread::futex::{self, Flags};

use super::super::engine::Engine;
use super::super::hook;
use super::super::notify::catch_up;
use super::super::sleep::wait_fd_if_made;
use super::super::table::{split_user_data, Core, State};
use super::super::wait::due;
use super::release::release_signal_safe;
use super::{looked, wake_waiters, CEngine, SEQ, WAITERS};
use crate::sys::signal::{block_for_wait, WaitMask};

impl CEngine {
    /// Waits for every request named in `names` (submitted with `keep`), then
    /// frees their slots and returns how many failed (an error, or cancelled).
    /// A signal handler run during the wait gives `Err(EINTR)`: the unfinished
    /// requests then free their slots themselves when done.
    pub fn wait_kept(&self, names: &[u64]) -> std::result::Result<usize, i32> {
        self.wait_kept_in(names, &mut None)
    }

    /// [`wait_kept`](Self::wait_kept) for a call that blocked signals before
    /// it waits (`signals`, see [`CallSignals`]): a handler due since then
    /// ends the wait with EINTR.
    pub fn wait_kept_blocked(
        &self,
        signals: &mut CallSignals,
        names: &[u64],
    ) -> std::result::Result<usize, i32> {
        self.wait_kept_in(names, &mut signals.0)
    }

    fn wait_kept_in(
        &self,
        names: &[u64],
        masked: &mut Option<WaitMask>,
    ) -> std::result::Result<usize, i32> {
        let all_done = |c: &Core| {
            names.iter().all(|&ud| {
                let (i, g) = split_user_data(ud);
                c.get(i, g).map_or(true, |s| s.state == State::Done)
            })
        };
        let r = self.wait_core(None, &mut |c: &Core| all_done(c), masked);
        let inner = &self.inner;
        let mut core = inner.lock();
        let mut failed = 0;
        for &ud in names {
            let (i, g) = split_user_data(ud);
            if let Some((state, res)) = core.get(i, g).map(|s| (s.state, s.res)) {
                failed += (state == State::Done && res < 0) as usize;
                // (Freed now if done and no `aio_cancel` of it still reads
                // it; else by the last of them, or when done.)
                core.let_go_kept(i);
            }
        }
        inner.release(core);
        match r {
            Ok(_) => Ok(failed),
            Err(e) => Err(e),
        }
    }

    /// True if every request named in `names` is done, after a reap of the
    /// rings (no wait): a call whose requests completed inside their
    /// submission then need not block signals for a wait.
    pub fn kept_done(&self, names: &[u64]) -> bool {
        let inner = &self.inner;
        let mut core = inner.lock();
        inner.poll_completions(&mut core);
        let done = names.iter().all(|&ud| {
            let (i, g) = split_user_data(ud);
            core.get(i, g).map_or(true, |s| s.state == State::Done)
        });
        inner.release(core);
        done
    }

    /// Reaps finished requests without blocking (io_uring), so their aiocbs get
    /// their status. Async-signal-safe for a thread not inside the library
    /// (`aio_error`, `aio_return`): see `release.rs`.
    #[inline]
    pub fn poll(&self) {
        looked();
        if let Engine::Uring(_) = &self.inner.engine {
            let _no_setup = hook::signal_safe();
            self.flush();
            let mut core = self.inner.lock();
            self.inner.poll_completions(&mut core);
            release_signal_safe(&self.inner, core);
        }
    }

    /// Waits until `done()` holds (it is called with the engine lock held, after
    /// completions were reaped), or `deadline` passes (`Ok(false)`). A signal
    /// handler run during the wait gives `Err(EINTR)`; another errno is an engine
    /// failure.
    pub fn wait(
        &self,
        deadline: Option<Instant>,
        done: &mut dyn FnMut() -> bool,
    ) -> std::result::Result<bool, i32> {
        self.wait_core(deadline, &mut |_| done(), &mut None)
    }

    /// [`wait`](Self::wait) for a call that blocked signals when it started
    /// (`signals`, see [`CallSignals`]): they come through only while it
    /// sleeps, so a handler due since the call started ends the wait with
    /// EINTR, or is left due in `signals` if the wait ends otherwise.
    pub fn wait_blocked(
        &self,
        signals: &mut CallSignals,
        deadline: Option<Instant>,
        done: &mut dyn FnMut() -> bool,
    ) -> std::result::Result<bool, i32> {
        self.wait_core(deadline, &mut |_| done(), &mut signals.0)
    }

    /// `masked`: the signals blocked for the wait; None blocks them from the
    /// first sleep on. Its reaps release the lock as `release.rs` says: a
    /// wait that ends without sleeping (done, or a zero timeout) is
    /// async-signal-safe for a thread not inside the library (`aio_suspend`,
    /// `aio_error` on a done request that notifies by signal).
    pub(super) fn wait_core(
        &self,
        deadline: Option<Instant>,
        done: &mut dyn FnMut(&Core) -> bool,
        masked: &mut Option<WaitMask>,
    ) -> std::result::Result<bool, i32> {
        looked();
        // Its reaps' trace points do not set the thread up (a signal handler's
        // call may come here).
        let _no_setup = hook::signal_safe();
        let inner = &self.inner;
        let mut counted = false; // in `Core::waiters`, while sleeping on `SEQ`

        // Signals stay blocked from the first sleep on (or from when the
        // caller blocked them: `masked`), and come through only while the
        // thread sleeps (as in `Inner::wait_until`): a handler due while it
        // was awake ends the next sleep at once.
        loop {
            self.flush();
            let mut core = inner.lock();
            if counted {
                core.waiters -= 1;
                counted = false;
            }
            let (mut core, remaining) = match inner.round(core, deadline, done, release_signal_safe)
            {
                Ok(sleep) => sleep,
                Err(r) => return Ok(r),
            };
            // A handler ran while the call waited for the lock, before signals
            // were blocked for its sleeps.
            if masked.is_none() && crate::sys::rtlock::handler_ran_in_lock() {
                release_signal_safe(inner, core);
                return Err(libc::EINTR);
            }
            match &inner.engine {
                // Not while a submitter settles its probe reads: it reaps
                // (its final release wakes the sleepers on `SEQ`).
                Engine::Uring(r) if !core.reaper && core.probing == 0 => {
                    core.reaper = true;
                    release_signal_safe(inner, core);
                    let mask = masked.get_or_insert_with(block_for_wait).sleep_mask();
                    let res = r.wait(remaining, mask);
                    let mut core = inner.lock();
                    core.reaper = false;
                    core.completed = true;
                    r.reap(&mut core);
                    if core.ready_len() > 0 {
                        let _ = r.issue(&mut core);
                    }
                    let now_done = done(&core);
                    // After the signals of what was reaped: whoever sleeps on
                    // the futex may now become the reaper.
                    release_signal_safe(inner, core);
                    wake_waiters();
                    if now_done {
                        catch_up();
                        return Ok(true);
                    }
                    if let Err(e) = res {
                        return Err(e.raw_os_error().unwrap_or(libc::EIO));
                    }
                    if due(masked) {
                        return Err(libc::EINTR);
                    }
                }
                // The thread's eventfd if it has one already, and room for
                // it in the list (made ahead: see `room_for_wait_fds`): this
                // wait may run in a signal handler, where neither may be
                // made. Else the futex.
                _ => match wait_fd_if_made()
                    .filter(|_| core.wait_fds.len() < core.wait_fds.capacity())
                {
                    Some(fd) => {
                        // (Another thread reaps the ring, or the pool
                        // completes.)
                        let (core, handled) = inner.sleep_on_fd(
                            core,
                            &fd,
                            remaining,
                            masked,
                            done,
                            release_signal_safe,
                        );
                        if handled {
                            let now_done = done(&core);
                            release_signal_safe(inner, core);
                            if now_done {
                                catch_up();
                                return Ok(true);
                            }
                            return Err(libc::EINTR);
                        }
                        release_signal_safe(inner, core);
                    }
                    // (No eventfd, or no room for it: the shared futex, where a
                    // handler run while the thread is awake goes unseen.)
                    None => {
                        if let Some(m) = masked.take() {
                            // No eventfd: the futex takes no mask. Signals
                            // come through again first, outside the lock (a
                            // handler may call into the library).
                            let due = m.due();
                            release_signal_safe(inner, core);
                            drop(m);
                            if due {
                                return Err(libc::EINTR);
                            }
                            continue;
                        }
                        let seen = SEQ.load(Ordering::Acquire);
                        WAITERS.fetch_add(1, Ordering::Relaxed);
                        core.waiters += 1;
                        counted = true;
                        release_signal_safe(inner, core);
                        // Another thread reaps the ring (or the pool completes): a
                        // completion after `seen` was read (under the lock) bumps
                        // SEQ as its lock is released, and so does a reaper when it
                        // stops. No slices: a signal landing between two would lose
                        // its EINTR.
                        let ts = remaining.map(|t| futex::Timespec {
                            tv_sec: t.as_secs() as i64,
                            tv_nsec: t.subsec_nanos() as _,
                        });
                        let r = futex::wait(&SEQ, Flags::PRIVATE, seen, ts.as_ref());
                        WAITERS.fetch_sub(1, Ordering::Relaxed);
                        if r == Err(rustix::io::Errno::INTR) {
                            let mut core = inner.lock();
                            core.waiters -= 1;
                            release_signal_safe(inner, core);
                            return Err(libc::EINTR);
                        }
                    }
                },
            }
        }
    }
}

/// Every signal but those of completion notifications blocked in the calling
/// thread from the start of an interruptible C call (`aio_suspend`) until
/// dropped, so a handler due at any moment of the call, also while the
/// thread is awake before its first sleep, ends the call's wait with EINTR
/// ([`CEngine::wait_blocked`]) or shows as [`due`](Self::due). Dropping it
/// restores the program's mask: a handler due then runs.
pub struct CallSignals(Option<WaitMask>);

impl CallSignals {
    /// Blocks the signals: the first thing a call that waits interruptibly does.
    pub fn block() -> CallSignals {
        CallSignals(Some(block_for_wait()))
    }

    /// Nothing blocked (a wait then blocks signals from its first sleep on):
    /// for a call made by a signal handler that interrupted the library,
    /// whose own wait may hold the mask.
    pub fn none() -> CallSignals {
        CallSignals(None)
    }

    /// True if a signal with a handler, let through by the program's mask,
    /// is pending: its handler runs when `self` is dropped.
    pub fn due(&self) -> bool {
        due(&self.0)
    }

    /// Sleeps `d` with the program's mask (`ppoll`): false if a signal
    /// handler ran meanwhile, also one due since the signals were blocked.
    pub fn nap(&self, d: std::time::Duration) -> bool {
        let mask = self.0.as_ref().and_then(WaitMask::sleep_mask);
        match crate::sys::poll::ppoll(&mut [], Some(d), mask) {
            Err(e) => e.raw_os_error() != Some(libc::EINTR),
            Ok(_) => true,
        }
    }
}
