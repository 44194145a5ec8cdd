//! The Chrome JSON export written to a writer as it goes
//! (`export::write_chrome_json`), so a large log's JSON is never whole in
//! memory; `export::chrome_json` is the same text in a String.

#[path = "common/export_log.rs"]
mod export_log;
#[path = "common/peak_alloc.rs"]
mod peak_alloc;

use std::io::{self, Write};
use std::time::Duration;

use export_log::{big_log, make_log, scratch, Scratch};
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

/// The export's own memory does not grow with the log: writing 40,000 or
/// 160,000 events (in time order: no order of its own to keep) to a writer
/// that keeps nothing allocates less than 1 MiB at any time (its JSON is 5
/// and 20 MB), and the processes and threads named are the log's.
#[test]
fn chrome_export_memory_does_not_grow_with_the_log() {
    let d = scratch("chrome-memory");
    for n in [40_000, 160_000] {
        let (l, mut evs) = big_log(&d.join(format!("{n}.trace")), n);
        evs.sort_by_key(|e| e.timestamp);
        let mut written = 0u64;
        let peak = peak_alloc::peak_bytes(|| {
            let mut out = io::sink();
            let mut counted = CountingWriter(&mut out, &mut written);
            export::write_chrome_json(&l, &evs, &mut counted).unwrap();
        });
        assert!(written > n * 100, "{n} events: {written} bytes");
        assert!(
            peak < 1 << 20,
            "{n} events ({written} bytes): {peak} bytes at once"
        );
        let json = export::chrome_json(&l, &evs);
        let threads = json.matches("\"name\":\"thread_name\"").count();
        let processes = json.matches("\"name\":\"process_name\"").count();
        let mut tids: Vec<u32> = evs.iter().map(|e| e.tid).collect();
        tids.sort_unstable();
        tids.dedup();
        assert_eq!((processes, threads), (1, tids.len()), "{n} events");
    }
}

/// Passes writes on, counting their bytes.
struct CountingWriter<'a, W: Write>(&'a mut W, &'a mut u64);

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.0.write(b)?;
        *self.1 += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}
