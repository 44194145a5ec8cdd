//! For the sync tracking tests: tracking is process-wide, so each test holds
//! [`serial`] (which sets the level it needs), and waits are bounded polls.

use posixrt::sync::{self, Tracking};
use std::sync::Mutex;

static LOCK: Mutex<()> = Mutex::new(());

/// Takes the process-wide test lock and sets the tracking level.
pub fn serial(level: Tracking) -> std::sync::MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    sync::set_tracking(level);
    g
}

#[path = "waits.rs"]
mod waits;
#[allow(unused_imports)]
pub use waits::{past, poll};
