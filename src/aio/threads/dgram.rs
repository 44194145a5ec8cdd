//! Parked datagram writes, retried by the poller.
//!
//! A write to a datagram socket with no room parks, as a pipe write does,
//! instead of holding its worker in a blocking `write(2)` (which left every
//! other request of the context waiting once as many such writes as workers
//! waited for room). But a datagram socket's `POLLOUT` does not say when the
//! next write fits: a unix datagram socket polls writable only with its send
//! queue below a quarter of `SO_SNDBUF` (a write fits once the datagram
//! does), a UDP socket below half. So the poller tries the write again
//! (`MSG_DONTWAIT`: whole or not at all) on `POLLOUT` and on a timer, every
//! [`FIRST`] at first, backing off to every [`LAST`]: a lagging readiness
//! signal cannot strand it. Where `POLLOUT` comes and the write still does
//! not fit, the descriptor is not watched again until the next timed retry:
//! a readiness that stays set cannot make the poller spin.
//!
//! The request stays issued and parked meanwhile (never back in the ready
//! queue), so a cancel leaves it in progress, as before (see
//! `Slot::issued_write_stays`), and the shutdown ends it as any parked one.

use std::time::{Duration, Instant};

use rustix::event::epoll;

use super::super::table::{split_user_data, Core, State};
use super::transfer::{borrow, retry};
use super::Pool;

/// The first delay before a timed retry.
const FIRST: Duration = Duration::from_millis(1);
/// The longest delay between two timed retries.
const LAST: Duration = Duration::from_millis(5);

/// A parked datagram write.
struct Retry {
    /// Its epoll data (`user_data(idx, gen)`).
    ud: u64,
    /// When it is tried next.
    due: Instant,
    /// The delay before the retry after that.
    delay: Duration,
    /// Its descriptor is watched for `POLLOUT` (one-shot, so not once it fired).
    armed: bool,
}

/// The parked datagram writes of a pool (changed under the engine lock only:
/// the mutex is never contended).
#[derive(Default)]
pub(super) struct Retries(std::sync::Mutex<Vec<Retry>>);

impl Retries {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Retry>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a write parked with epoll data `ud`; true if no other was: the
    /// poller, which may wait without a timeout, must then be woken.
    pub(super) fn add(&self, ud: u64) -> bool {
        let mut l = self.list();
        l.push(Retry {
            ud,
            due: Instant::now() + FIRST,
            delay: FIRST,
            armed: true,
        });
        l.len() == 1
    }

    /// True if `ud` is a parked datagram write's epoll data.
    pub(super) fn has(&self, ud: u64) -> bool {
        self.list().iter().any(|r| r.ud == ud)
    }

    /// How long the poller may wait: until the first retry is due (rounded
    /// up to a millisecond), or without end if none is parked.
    pub(super) fn timeout(&self) -> Option<rustix::event::Timespec> {
        let first = self.list().iter().map(|r| r.due).min()?;
        let left = first.saturating_duration_since(Instant::now());
        let ms = left.as_nanos().div_ceil(1_000_000) as i64;
        Some(rustix::event::Timespec {
            tv_sec: ms / 1000,
            tv_nsec: (ms % 1000) * 1_000_000,
        })
    }
}

/// Retries the parked datagram writes that are due, and those whose
/// descriptor polled writable (`fired`); completes those that went (or
/// failed), and forgets those no longer parked (ended by a shutdown). Called
/// by the poller with the table lock held (a `MSG_DONTWAIT` send copies the
/// datagram, at most `SO_SNDBUF` bytes, and does not wait).
pub(super) fn retry_due(core: &mut Core, pool: &Pool, fired: &[u64]) {
    let now = Instant::now();
    let mut list = pool.retries.list();
    list.retain_mut(|r| {
        let (idx, gen) = split_user_data(r.ud);
        let parked = core
            .slots
            .get(idx as usize)
            .is_some_and(|s| s.gen == gen && s.state == State::Issued && s.parked);
        if !parked {
            return false;
        }
        let polled = fired.contains(&r.ud);
        if polled {
            r.armed = false;
        } else if r.due > now {
            return true;
        }
        let shutdown = core.shutdown;
        let s = &mut core.slots[idx as usize];
        if s.cancel_req || shutdown {
            // Its handle was let go of (or the context is ending), the wake-up
            // not read yet: that wins over the retry, as over a readiness.
            let _ = epoll::delete(&pool.epoll, borrow(s.io_fd()));
            s.interruptible = false;
            let res = super::cancelled(s.res);
            core.complete(idx, res);
            return false;
        }
        // SAFETY: the request is parked: its buffer and descriptor copy stay
        // until it completes, which takes the table lock held here.
        match unsafe { retry(s.io_fd(), s.op.ptr, s.op.len) } {
            Some(res) => {
                let _ = epoll::delete(&pool.epoll, borrow(s.io_fd()));
                s.interruptible = false;
                core.complete(idx, res);
                false
            }
            None => {
                if !r.armed && !polled {
                    // Watched again from a timed retry only (see the module).
                    let ev = epoll::EventFlags::OUT | epoll::EventFlags::ONESHOT;
                    let data = epoll::EventData::new_u64(r.ud);
                    r.armed = epoll::modify(&pool.epoll, borrow(s.io_fd()), data, ev).is_ok();
                }
                r.delay = (r.delay * 2).min(LAST);
                r.due = now + r.delay;
                true
            }
        }
    });
}
