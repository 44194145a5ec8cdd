//! The tracking level (the run-time switch) and the clock of wait and hold times.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// How much the sync objects record (see the [module docs](crate::sync::track)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tracking {
    /// Nothing is recorded; objects are not registered.
    Off = 0,
    /// Objects used are registered; counters are kept.
    Counts = 1,
    /// Counters plus wait and hold times.
    Timing = 2,
}

/// The tracking level in the low bits ([`LEVEL_BITS`]), and [`MIRRORED`].
pub(crate) static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The bits of [`LEVEL`] that hold the tracking level.
const LEVEL_BITS: u8 = 0x03;

/// Set in [`LEVEL`] (for good) once an object whose record mirrors a state
/// that threads change without owning it (an rwlock's readers, a semaphore's
/// count) is known: their operations then keep that state current in known
/// records while tracking is off too, so that [`objects`](super::objects) and
/// `rtstat` show it right when tracking is back on (no object can be reached
/// from its record to read it then: objects move). In the same byte as the
/// level, so a process that never tracks such an object pays one load and one
/// branch per operation, as for the other kinds.
const MIRRORED: u8 = 0x80;

/// The current tracking level: one relaxed load.
#[inline(always)]
pub(crate) fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed) & LEVEL_BITS
}

/// What an operation that changes a mirrored state (see [`MIRRORED`]) writes
/// into the object's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StateWrite {
    /// Nothing: tracking is off and no such object is known.
    Skip,
    /// Statistics and the state: tracking is on.
    Track,
    /// The state only, if the object is known: tracking is off.
    Mirror,
}

/// [`StateWrite`] for an operation now: one relaxed load (and one branch
/// while it is [`StateWrite::Skip`]).
#[inline(always)]
pub(crate) fn state_write() -> StateWrite {
    match LEVEL.load(Ordering::Relaxed) {
        0 => StateWrite::Skip,
        v if v & LEVEL_BITS != 0 => StateWrite::Track,
        _ => StateWrite::Mirror,
    }
}

/// Notes that an object of a mirrored kind became known (see [`MIRRORED`]),
/// before its record is first written.
pub(crate) fn note_mirrored() {
    if LEVEL.load(Ordering::Relaxed) & MIRRORED == 0 {
        LEVEL.fetch_or(MIRRORED, Ordering::SeqCst);
    }
}

/// Switches tracking on or off for the whole process (the analogue of Solaris
/// `td_ta_sync_tracking_enable`). Objects used while it is on become known; switching
/// it off keeps the known objects and their statistics but stops updating them.
///
/// # References
/// - [td_sync_get_info(3C_DB)](https://docs.oracle.com/cd/E88353_01/html/E37843/td-sync-get-info-3c-db.html) (`td_ta_sync_tracking_enable`)
pub(crate) fn set_level_and_clock(level: Tracking) {
    if level == Tracking::Timing {
        calibrate();
    }
    let _ = LEVEL.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v & MIRRORED | level as u8)
    });
}

/// The current tracking level.
pub fn tracking() -> Tracking {
    match level() {
        0 => Tracking::Off,
        1 => Tracking::Counts,
        _ => Tracking::Timing,
    }
}

/// A cheap timestamp: a tick of the crate's one clock ([`crate::sys::clock`]: the
/// TSC when it is invariant, `CLOCK_MONOTONIC` nanoseconds otherwise).
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    crate::sys::clock::ticks()
}

/// Picoseconds per tick (1000 when ticks are nanoseconds), 0 until calibrated.
pub(crate) static PS_PER_TICK: AtomicU64 = AtomicU64::new(0);

/// Calibrates the clock (once per process, in [`crate::sys::clock`]) and keeps
/// its slope as picoseconds per tick for the conversion of wait and hold times.
pub(crate) fn calibrate() {
    if PS_PER_TICK.load(Ordering::Relaxed) != 0 {
        return;
    }
    crate::sys::clock::init();
    // The clock's tick-to-nanosecond conversion is linear: its slope over 2^32
    // ticks, in picoseconds per tick.
    const SPAN: u64 = 1 << 32;
    let t0 = ticks();
    let ns = crate::sys::clock::to_ns(t0.wrapping_add(SPAN))
        .saturating_sub(crate::sys::clock::to_ns(t0));
    let ps = (u128::from(ns) * 1000 / u128::from(SPAN)) as u64;
    PS_PER_TICK.store(ps.max(1), Ordering::Relaxed);
}

pub(crate) fn ps_per_tick() -> u64 {
    PS_PER_TICK.load(Ordering::Relaxed)
}

pub(crate) fn ticks_at(t: u64, ps: u64) -> Duration {
    Duration::from_nanos((t as u128 * ps as u128 / 1000) as u64)
}
