//! Unit tests' scratch trace logs: a file per test, removed when the test ends
//! (also when it fails), the small stream the flush tests fill, and the filter
//! that keeps other tests' events out of a test's stream.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use super::{EventId, EventSet, FillWhat, FilterHow, Trace, TraceAttr};

/// A scratch log file, removed on drop.
pub(crate) struct Scratch {
    pub(crate) path: PathBuf,
}

impl Scratch {
    /// `posixrt-NAME-PID.trace` in the temp dir, created empty and opened for
    /// reading and writing.
    pub(crate) fn log(name: &str) -> (Scratch, File) {
        let path =
            std::env::temp_dir().join(format!("posixrt-{name}-{}.trace", std::process::id()));
        let f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (Scratch { path }, f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A 4096-byte stream whose log is written only when a test asks (a flush
/// interval of an hour).
pub(crate) fn small_attr() -> TraceAttr {
    let mut a = TraceAttr::new();
    a.set_stream_size(4096).unwrap();
    a.set_flush_interval(Duration::from_secs(3600)).unwrap();
    a
}

/// Filters out of `t` every event type but `ids` (other tests' threads record
/// meanwhile, and would fill a small stream).
pub(crate) fn record_only(t: &Trace, ids: &[EventId]) {
    let mut only = EventSet::empty();
    only.fill(FillWhat::All);
    for &id in ids {
        only.del(id);
    }
    t.set_filter(&only, FilterHow::Set).unwrap();
}
