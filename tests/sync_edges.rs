//! Edge cases of posixrt::sync: try variants under contention and the statistics
//! they leave behind.
//!
//! Tracking is process-wide and scheduling is changed by some tests: every test
//! takes `LOCK`. Waits are bounded polls on states; nothing asserts a duration.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use posixrt::sync::{self, RwLock, Tracking};

static LOCK: Mutex<()> = Mutex::new(());

/// How long the threads of a contention test hammer a lock.
const SPIN: Duration = Duration::from_millis(300);

fn serial(level: Tracking) -> std::sync::MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    sync::set_tracking(level);
    g
}

/// Readers only, from several threads at once: nothing holds or waits for the write
/// lock, so every `try_read` must succeed (`pthread_rwlock_tryrdlock` fails only
/// when a writer holds the lock or is waiting for it).
#[test]
fn rwlock_try_read_never_fails_among_readers_alone() {
    let _g = serial(Tracking::Off);
    let l = RwLock::new(0u32);
    let fails = AtomicU32::new(0);
    let start = Barrier::new(4);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                start.wait();
                let end = Instant::now() + SPIN;
                while Instant::now() < end {
                    match l.try_read() {
                        Some(g) => drop(g),
                        None => {
                            fails.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    assert_eq!(
        fails.load(Ordering::Relaxed),
        0,
        "try_read failed without a writer"
    );
}

/// Readers only: no read ever has to sleep, so none is counted as contended.
#[test]
fn rwlock_readers_alone_are_never_counted_contended() {
    let _g = serial(Tracking::Counts);
    let l = RwLock::new(0u32);
    unsafe { l.raw() }.set_name("readers-only");
    let reads = AtomicU32::new(0);
    let start = Barrier::new(4);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                start.wait();
                let end = Instant::now() + SPIN;
                while Instant::now() < end {
                    drop(l.read());
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let st = unsafe { l.raw() }.snapshot().expect("known").stats;
    sync::set_tracking(Tracking::Off);
    assert_eq!(st.read_locks, u64::from(reads.load(Ordering::Relaxed)));
    assert_eq!(
        st.read_contended, 0,
        "reads that never slept counted as contended"
    );
}
