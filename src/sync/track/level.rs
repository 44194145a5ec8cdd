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

pub(crate) static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The current tracking level: one relaxed load.
#[inline(always)]
pub(crate) fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
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
    LEVEL.store(level as u8, Ordering::Relaxed);
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
