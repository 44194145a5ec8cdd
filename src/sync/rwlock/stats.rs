//! The tracking glue of [`RawRwLock`](super::RawRwLock): what its reads and
//! waits write into its record (see [`track`](crate::sync::track)).

use std::sync::atomic::Ordering;

use super::{RawRwLock, READERS};
use crate::sync::hook;
use crate::sync::track::{self, Kind, StateWrite};

impl RawRwLock {
    /// Reports and counts a read lock taken without waiting.
    #[inline]
    pub(super) fn read_acquired(&self) {
        hook::rdlock(self.addr(), false, hook::LockResult::Acquired);
        match track::state_write() {
            StateWrite::Skip => {}
            StateWrite::Track => self.read_tracked(),
            StateWrite::Mirror => self.readers_changed_untracked(),
        }
    }

    #[inline]
    pub(super) fn read_tracked(&self) {
        let r = self.track.record(Kind::RwLock, self.addr());
        r.add(track::W_A, 1);
        self.record_readers(r);
    }

    /// A reader or writer starts waiting (see `Track::wait_start`). The wait may be
    /// what makes the lock known (tracking switched on while it was held), so the
    /// record gets the readers holding it now, and the writer (`Track::note_owner`).
    pub(super) fn wait_start(&self, tid: u32) -> Option<u64> {
        let wait = self.track.wait_start(Kind::RwLock, self.addr(), tid);
        if let (Some(_), Some(r)) = (wait, self.track.get()) {
            self.record_readers(r);
            self.track.note_owner(&|| self.writer().unwrap_or(0), tid);
        }
        wait
    }

    /// A `try_write` that found the lock held (tracking on). It may be what made
    /// the lock known (tracking switched on while it was held): the record gets
    /// the writer and the readers holding it now, as a waiter's does.
    #[cold]
    pub(super) fn try_failed_tracked(&self) {
        self.track
            .try_failed(Kind::RwLock, self.addr(), &|| self.writer().unwrap_or(0));
        if let Some(r) = self.track.get() {
            self.record_readers(r);
        }
    }

    /// A timed read (`read`) or write that blocked and timed out, whose wait
    /// began at tick `t0` (0: not timed): a timed wait, a timeout and its wait
    /// time (a read's with the reads' in `W_C`; a write's apart from the
    /// owner's words, which only the writer holding the lock writes), added
    /// by a thread that holds nothing, in one group against `reset_stats`.
    #[cold]
    pub(super) fn timed_out_tracked(&self, t0: u64, read: bool) {
        let Some(r) = self.track.get() else { return };
        r.group(None, || {
            r.add(track::W_RW_TIMED, 1);
            r.add(track::W_RW_TIMEOUTS, 1);
            if t0 != 0 && track::reset::began_since_reset(t0) {
                let w = track::ticks().saturating_sub(t0);
                if read {
                    r.add(track::W_C, w);
                } else {
                    r.add(track::W_RW_TIMEOUT_WAIT, w);
                    r.max(track::W_RW_TIMEOUT_WAIT_MAX, w);
                }
            }
        });
    }

    /// Mirrors the live reader count into the record (see `Record::mirror`).
    #[cold]
    pub(super) fn record_readers(&self, r: &track::Record) {
        r.mirror(track::W_STATE, || {
            u64::from(self.state.load(Ordering::Relaxed) & READERS)
        });
    }

    /// After a change of the reader count that tracking does not count (it is
    /// off, or was when the wait began): a known lock's record still gets the
    /// count, so inspection shows it right once tracking is back on.
    #[cold]
    pub(super) fn readers_changed_untracked(&self) {
        if let Some(r) = self.track.get() {
            self.record_readers(r);
        }
    }
}
