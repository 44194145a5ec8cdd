//! Tour section: `posixrt::sync`.

use posixrt::sync::{ceiling_mutex, current_tid, MutexExt, PiMutex};

/// The kernel's effective priority of a thread of this process (field 18 of
/// /proc/self/task/TID/stat: -1 - p for SCHED_FIFO p, 20 + nice otherwise).
fn kernel_prio(tid: u32) -> Option<i64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let after = s.get(s.rfind(')')? + 2..)?;
    after.split(' ').nth(15)?.parse().ok()
}

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let m = PiMutex::new(0u32);
    *m.lock() += 1;
    outln!(
        "   PiMutex: locked and unlocked with one CAS each way (value {})",
        *m.lock()
    );
    let g = m.lock();
    match m.lock_checked() {
        Err(e) => outln!(
            "   relock by the owner is an error, not a hang: {:?}",
            e.kind()
        ),
        Ok(_) => outln!("   unexpected: relock succeeded"),
    }
    drop(g);

    let c = ceiling_mutex(20, ())?;
    // The tour runs on the main thread: lock it from a helper so the main thread's
    // scheduling is never touched.
    let inside = std::thread::scope(|s| {
        s.spawn(|| {
            let t = current_tid();
            let b = kernel_prio(t);
            let r = c.lock_checked().map(|_g| kernel_prio(t));
            (b, r, kernel_prio(t))
        })
        .join()
    });
    match inside {
        Ok((b, Ok(i), a)) => {
            let show = |p: Option<i64>| p.map_or("unknown".to_string(), |v| v.to_string());
            outln!(
                "   CeilingMutex(ceiling 20): kernel prio {} before, {} while held (SCHED_FIFO 20 = -21), {} after",
                show(b),
                show(i),
                show(a)
            )
        }
        Ok((_, Err(e), _)) => outln!("   CeilingMutex needs privilege here: {e}"),
        Err(_) => outln!("   CeilingMutex helper thread panicked"),
    }
    // Requeue-PI: waiters notified while the mutex is held move straight onto the
    // PI mutex's kernel queue (as PI waiters) instead of waking up to block again.
    let pair = (PiMutex::new(0u32), posixrt::sync::PiCondvar::new());
    let requeued = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut g = pair.0.lock();
                while *g == 0 {
                    if pair.1.wait(&mut g).is_err() {
                        return;
                    }
                }
            });
        }
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while (pair.1.waiters() < 2 || pair.0.is_locked()) && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut g = pair.0.lock();
        *g = 1;
        let n = pair.1.notify_all();
        // SAFETY: raw() is only used to read the state.
        let queued = unsafe { pair.0.raw() }.has_waiters();
        drop(g);
        (n, queued)
    });
    outln!(
        "   PiCondvar: notify_all under the lock requeued {} waiters onto the PiMutex (kernel waiters bit set: {})",
        requeued.0, requeued.1
    );

    // Introspection: switch tracking on, use a lock, read its info and statistics.
    posixrt::sync::set_tracking(posixrt::sync::Tracking::Counts);
    let q = posixrt::sync::NormalMutex::new(0u32);
    // SAFETY: raw() is only used to read the state, never to unlock.
    let raw = unsafe { q.raw() };
    raw.set_name("tour-queue");
    for _ in 0..5 {
        *q.lock() += 1;
    }
    drop(q.try_lock());
    if let Some(s) = raw.snapshot() {
        outln!(
            "   tracked {} {:?}: locks={} trylocks={} contended={} owner={:?}",
            s.info.kind.name(),
            s.info.name.as_deref().unwrap_or("-"),
            s.stats.locks,
            s.stats.trylocks,
            s.stats.contended,
            s.info.owner
        );
    }
    posixrt::sync::set_tracking(posixrt::sync::Tracking::Off);
    outln!("   see `priority_inversion` for the protocols side by side,");
    outln!("   and `sync_inspect` + `rtstat PID` for introspection from another process");
    Ok(())
}
