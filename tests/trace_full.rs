//! The stream and log full policies at their limits: what is recorded, lost and
//! reported when a stream or a log fills, and attribute values at their extremes.
//!
//! Streams are process-wide (every running stream records every `event()` call of
//! the process), so the tests serialise on one lock.

use std::fs::File;
use std::sync::{Mutex, MutexGuard};

use posixrt::trace::{self, Event, EventId, LogFullPolicy, Trace, TraceAttr, TraceLog};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scratch log file in the temp dir, removed when dropped.
struct TempPath(std::path::PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn open_log(name: &str) -> (TempPath, File) {
    let p = std::env::temp_dir().join(format!("posixrt-trace-full-{}-{name}", std::process::id()));
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    (TempPath(p), f)
}

fn ids(evs: &[Event]) -> Vec<EventId> {
    evs.iter().map(|e| e.id).collect()
}

/// The largest log size is accepted and works as "no practical limit" with every
/// log full policy (APPEND ignores it): flushing and shutting down must not
/// overflow on it.
#[test]
fn the_largest_log_size_flushes_and_shuts_down() {
    let _g = serial();
    let ev = trace::eventid_open("tf.huge_log").unwrap();
    for policy in [
        LogFullPolicy::Append,
        LogFullPolicy::Loop,
        LogFullPolicy::UntilFull,
    ] {
        let (p, f) = open_log("huge.trace");
        let mut a = TraceAttr::new();
        a.set_log_full_policy(policy);
        a.set_log_size(u64::MAX).unwrap();
        let t = Trace::create_with_log(&a, f).unwrap();
        t.start().unwrap();
        trace::event(ev, &7u64.to_le_bytes());
        t.flush().unwrap();
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = TraceLog::open(&p.0).unwrap();
        let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
        let user: Vec<&Event> = evs.iter().filter(|e| e.id == ev).collect();
        assert_eq!(user.len(), 1, "{policy:?}: {:?}", ids(&evs));
        assert_eq!(user[0].data, 7u64.to_le_bytes());
        let st = l.status().unwrap();
        assert!(!st.log_full && !st.log_overrun, "{policy:?}: {st:?}");
    }
}
