//! Bounded waits for the sync tests: `#[path = "common/waits.rs"] mod waits;`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Polls `cond` every millisecond for at most 5 s; returns its last value.
pub fn poll(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

/// A deadline already past (a second ago, or now on a clock that young).
pub fn past() -> Instant {
    Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now)
}
