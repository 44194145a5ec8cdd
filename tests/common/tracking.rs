//! For the sync tracking tests: tracking is process-wide, so each test holds
//! [`serial`] (which sets the level it needs), and waits are bounded polls.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use posixrt::sync::{self, Tracking};

static LOCK: Mutex<()> = Mutex::new(());

/// Takes the process-wide test lock and sets the tracking level.
pub fn serial(level: Tracking) -> std::sync::MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    sync::set_tracking(level);
    g
}

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
