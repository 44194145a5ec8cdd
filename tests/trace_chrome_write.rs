//! The Chrome JSON export written to a writer as it goes
//! (`export::write_chrome_json`), so a large log's JSON is never whole in
//! memory; `export::chrome_json` is the same text in a String.

#[path = "common/export_log.rs"]
mod export_log;

use std::io::{self, Write};
use std::time::Duration;

use export_log::{make_log, scratch, Scratch};
use posixrt::trace::{export, Event, TraceLog};

/// A writer that keeps what it is given, the largest single write, and
/// fails with ENOSPC (a full disk) once it holds `room` bytes.
struct Sink {
    got: Vec<u8>,
    largest: usize,
    room: usize,
    refused: usize,
}

impl Sink {
    fn new(room: usize) -> Sink {
        Sink {
            got: Vec::new(),
            largest: 0,
            room,
            refused: 0,
        }
    }
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.got.len() >= self.room {
            self.refused += 1;
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        self.largest = self.largest.max(b.len());
        self.got.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// 20 000 more events after the test log's (about 3 MB of JSON), in the
/// scratch directory `name`.
fn big(name: &str) -> (Scratch, TraceLog, Vec<Event>) {
    let d = scratch(name);
    let (l, mut evs) = make_log(&d);
    let one = evs[1].clone();
    for i in 0..20_000u64 {
        let mut e = one.clone();
        e.timestamp += Duration::from_nanos(i);
        e.data = i.to_le_bytes().to_vec();
        evs.push(e);
    }
    (d, l, evs)
}

/// The JSON reaches the writer in pieces of at most 64 KiB (a buffer, not
/// the whole text), and is the text `chrome_json` returns.
#[test]
fn chrome_json_is_written_as_it_goes() {
    let (_d, l, evs) = big("chrome-write");
    let mut sink = Sink::new(usize::MAX);
    export::write_chrome_json(&l, &evs, &mut sink).unwrap();
    assert!(sink.got.len() > 2 << 20, "{} bytes", sink.got.len());
    assert!(
        sink.largest <= 64 << 10,
        "a write of {} bytes",
        sink.largest
    );
    assert_eq!(sink.got, export::chrome_json(&l, &evs).into_bytes());
    let j: serde_json::Value = serde_json::from_slice(&sink.got).unwrap();
    let n = j["traceEvents"].as_array().unwrap().len();
    assert!(n > evs.len(), "{n} entries for {} events", evs.len());
}

/// A write that fails (a full disk) ends the export with its error, which
/// keeps its errno: no later write is tried.
#[test]
fn chrome_json_stops_at_a_failed_write() {
    let (_d, l, evs) = big("chrome-write-fail");
    let mut sink = Sink::new(100_000);
    let e = export::write_chrome_json(&l, &evs, &mut sink).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    assert_eq!(sink.refused, 1);
    assert!(sink.got.len() < 200_000, "{} bytes", sink.got.len());
}
